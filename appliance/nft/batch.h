/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The nftables transport: one transaction (a netlink batch) built message
 * by message with libnftnl, sent with libmnl in one go, and every answer
 * read back. The kernel applies all of it or none of it. What the messages
 * say (tables, chains, rules) is for the callers: nft/conntrack.c today.
 *
 *	struct nft_batch *b;
 *	nft_batch_new(&b);
 *	nlh = nft_batch_msg(b, NFT_MSG_NEWTABLE, NFPROTO_INET, NLM_F_CREATE);
 *	nftnl_table_nlmsg_build_payload(nlh, t);
 *	r = nft_batch_commit(b, d);     // 0, or the kernel's -errno explained in d
 *	nft_batch_free(b);
 */
#ifndef NFBOX_NFT_BATCH_H
#define NFBOX_NFT_BATCH_H

#include <libmnl/libmnl.h>
#include <stdint.h>

#include "policy/diag/diag.h"

/* The one table nfbox owns; it never touches any other. */
#define NFT_TABLE_NAME "nfbox"

struct nft_batch;

int nft_batch_new(struct nft_batch **out);
void nft_batch_free(struct nft_batch *b);

/* Start the next message of the transaction: its header is written, the
 * caller adds the payload (nftnl_*_nlmsg_build_payload). NULL when the
 * batch is full (nft_batch_commit then fails with -EMSGSIZE). */
struct nlmsghdr *nft_batch_msg(struct nft_batch *b, uint16_t type, uint16_t family, uint16_t flags);

/* Close the transaction, send it and wait for the kernel's answer to each
 * message (2 s at most). */
int nft_batch_commit(struct nft_batch *b, struct diags *d);

#endif
