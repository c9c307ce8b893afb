/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Table inet nfbox (ir.h) into the kernel, or out of it: one transaction. */
#ifndef NFBOX_NFT_EMIT_H
#define NFBOX_NFT_EMIT_H

#include <stdbool.h>

#include "backend/nftables/nft/ir.h"

/* Replace table inet nfbox with t, whole or not at all: 0, or -errno with
 * the kernel's refusal in d, at the policy element that made the refused
 * object. The table in force stays as it was on failure. */
int nft_table_apply(const struct nfr_table *t, struct diags *d);
/* Whether the table is owned by this process (the kernel has
 * NFT_TABLE_F_PERSIST): known after the first apply. */
bool nft_table_owned(void);
/* Delete table inet nfbox if it exists. */
int nft_table_remove(struct diags *d);

/* The chains of t, with its rules, added to table inet nfbox as it is, or
 * (del) deleted from it with their rules, in one transaction. 0 or -errno
 * explained in d. */
int nft_chains_change(const struct nfr_table *t, bool del, struct diags *d);

/* Sets of plain keys (the schedules' w_RULE, the hairpin sets h_*) made
 * to hold exactly the elements given, all in one transaction (each set
 * emptied, then filled); what names them in messages. 0 or -errno
 * explained in d. */
int nft_sets_replace(const struct nfr_set *const *sets, uint32_t n, const char *what, struct diags *d);
/* Elements of named address interval sets of table inet nfbox (dynamic
 * sets', with flags timeout): the elements of each set of del deleted, then
 * those of each of add put in place with their timeouts (replacing an
 * element there: its timeout is the new one), all in one transaction. An
 * element to delete that is not there is no error. 0 or -errno explained
 * in d. */
int nft_set_change(const struct nfr_set *const *del, uint32_t ndel, const struct nfr_set *const *add, uint32_t nadd,
		   struct diags *d);

/* The kernel takes at most NFT_RULE_MAXEXPRS (128) expressions in one
 * rule. A match of the IR is at most 4 (an ICMP type: meta, cmp, payload,
 * cmp), a statement at most 4 (a translation to an address range and a
 * port: three immediates and nat),
 * so a full rule of the IR (NFR_MAX_MATCH, NFR_MAX_STMT) always fits: a
 * static assertion in emit.c says so, and tests/unit/test_nft.c holds
 * every kind of match and statement to its bound with these two. */
#define NFT_KERNEL_MAX_EXPRS 128
#define NFT_MATCH_MAX_EXPRS  4
#define NFT_STMT_MAX_EXPRS   4
uint32_t nft_match_exprs(const struct nfr_match *m);
uint32_t nft_stmt_exprs(const struct nfr_stmt *s);

#endif
