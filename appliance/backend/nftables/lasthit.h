/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Last hits with the nftables backend (lasthit.c). */
#ifndef NFBOX_BACKEND_NFTABLES_LASTHIT_H
#define NFBOX_BACKEND_NFTABLES_LASTHIT_H

#include "backend/nftables/nft/ir.h"

/* Each rule's last hit with the nftables backend, from its named counter
 * (0: none seen), kept in *lhp (NULL until the first read or table).
 * lasthit_tick reads the counters when due; lasthit_zero after stats
 * --zero. */
struct lasthit;
void lasthit_tick(struct lasthit **lhp);
/* t, just applied, is the baseline: its counters as they start (carried
 * over or 0); the last hits of counters it keeps stay. */
void lasthit_start(struct lasthit **lhp, const struct nfr_table *t);
long long lasthit_of(const struct lasthit *lh, const char *counter);
void lasthit_zero(struct lasthit *lh);
void lasthit_free(struct lasthit **lhp);

#endif
