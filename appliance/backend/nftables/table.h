/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * table inet nfbox as the backends put it in place (table.c): the whole
 * filter for the nftables backend, the conntrack anchor and NAT only for
 * the BPF backend, which uses this and nothing else of nftables/.
 */
#ifndef NFBOX_BACKEND_NFTABLES_TABLE_H
#define NFBOX_BACKEND_NFTABLES_TABLE_H

#include "backend/backend.h"
#include "backend/nftables/nft/batch.h" /* NFT_TABLE_NAME */
#include "backend/nftables/nft/ir.h"

/* The table for policy p with the store's dynamic sets, in one transaction
 * (removed if p needs nothing from nftables); filter: with the whole
 * filter, its counters carried over from the table in force. t->present
 * follows; applied (if not NULL) sees the table just put in place. 0 or
 * -errno explained in d. */
int nft_table_put(struct backend_table *t, const struct dynsets *dyn, const struct policy *p, bool filter,
		  void (*applied)(const struct nfr_table *nt, void *arg), void *arg, struct diags *d);
/* The hairpin sets of p's forward-ports made to hold the addresses their
 * in: interfaces have now (nothing to do without one). 0 or -errno
 * explained in d. */
int nft_table_hairpin_follow(const struct policy *p, struct diags *d);
/* Removed if it exists (whatever t->present says). */
int nft_table_drop(struct backend_table *t, struct diags *d);

#endif
