/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Last hits with the nftables backend (lasthit.c). */
#ifndef NFBOX_DAEMON_LASTHIT_H
#define NFBOX_DAEMON_LASTHIT_H

#include "daemon/daemon_int.h"

/* lasthit.c: each rule's last hit with the nftables backend, from its
 * named counter (0: none seen). lasthit_tick reads the counters when due;
 * lasthit_zero after stats --zero. */
void lasthit_tick(struct daemon *dm);
/* t, just applied, is the baseline: its counters as they start (carried
 * over or 0); the last hits of counters it keeps stay. */
void lasthit_start(struct daemon *dm, const struct nfr_table *t);
long long lasthit_of(const struct daemon *dm, const char *counter);
void lasthit_zero(struct daemon *dm);
void lasthit_free(struct daemon *dm);

#endif
