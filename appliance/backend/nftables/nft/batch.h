/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The nftables transport: one transaction (a netlink batch) built message
 * by message with libnftnl, sent with libmnl in one go, and every answer
 * read back. The kernel applies all of it or none of it. Each message can
 * be noted with the policy element it comes from, so that a message the
 * kernel refuses is reported at that element's place in the policy file,
 * with the kernel's own explanation (extended ack) when it gives one.
 *
 *	struct nft_batch *b;
 *	nft_batch_new(&b);
 *	nlh = nft_batch_msg(b, NFT_MSG_NEWTABLE, NFPROTO_INET, NLM_F_CREATE);
 *	nftnl_table_nlmsg_build_payload(nlh, t);
 *	nft_batch_note(b, rule->loc, "rule 'web'");
 *	r = nft_batch_commit(b, d);     // 0, or the kernel's -errno explained in d
 *	nft_batch_free(b);
 */
#ifndef NFBOX_NFT_BATCH_H
#define NFBOX_NFT_BATCH_H

#include <libmnl/libmnl.h>
#include <stdint.h>

#include "base/diag.h"

/* The one table nfbox owns; it never touches any other. */
#define NFT_TABLE_NAME "nfbox"
/* What the table's own messages are noted as. */
#define NFT_TABLE_WHAT "table inet nfbox"

struct nft_batch;

int nft_batch_new(struct nft_batch **out);
void nft_batch_free(struct nft_batch *b);

/* Start the next message of the transaction: its header is written, the
 * caller adds the payload (nftnl_*_nlmsg_build_payload) at once: the pointer
 * is good until the next call. NULL when out of memory (nft_batch_commit
 * then fails with -ENOMEM). */
struct nlmsghdr *nft_batch_msg(struct nft_batch *b, uint16_t type, uint16_t family, uint16_t flags);
/* Where the message just started comes from (what: static or owned by the
 * caller until the commit). */
void nft_batch_note(struct nft_batch *b, struct loc loc, const char *what);

/* Close the transaction, send it and wait for the kernel's answer to each
 * message (2 s at most after the last is sent). Every transaction goes
 * through the process's one netfilter socket, opened at the first: the
 * owner of table inet nfbox. */
int nft_batch_commit(struct nft_batch *b, struct diags *d);
/* The kernel's answers in buf (len bytes, as read from the socket of
 * portid) to the transaction b: every refusal explained in d at the policy
 * element its message was noted with, with the kernel's extended-ack text,
 * a refusal repeated for the same reason folded. *err keeps the first
 * error. Returns 1 once the last message's answer was seen, else 0. Used
 * by nft_batch_commit; exposed for tests. */
int nft_batch_answers(struct nft_batch *b, uint32_t portid, const void *buf, size_t len, int *err, struct diags *d);

/* Close that socket: the table, if this process owned it, is released
 * (kept if it persists, else deleted by the kernel). */
void nft_socket_close(void);

#endif
