/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "nft/nft.h"

#include <errno.h>
#include <stdbool.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NFT_CHAIN_NAME "conntrack"

struct batch {
	char buf[32768];
	struct mnl_nlmsg_batch *b;
	uint32_t seq, first_seq, ack_seq;
};

static struct nlmsghdr *put_header(struct batch *bt, uint16_t type, uint16_t flags)
{
	return nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(bt->b), type, NFPROTO_INET, flags, bt->seq++);
}

static void put_table(struct batch *bt, uint16_t type, uint16_t flags)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;

	nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE_NAME);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	nlh = put_header(bt, type, flags);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	mnl_nlmsg_batch_next(bt->b);
}

static void put_chain_and_rule(struct batch *bt)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *ct = nftnl_expr_alloc("ct");
	struct nlmsghdr *nlh;

	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NFT_TABLE_NAME);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, NFT_CHAIN_NAME);
	nlh = put_header(bt, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	mnl_nlmsg_batch_next(bt->b);

	/* "ct state": loading the state is enough to take the conntrack
	 * reference for the inet family (IPv4 and IPv6). */
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE_NAME);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, NFT_CHAIN_NAME);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	nftnl_rule_add_expr(r, ct);
	bt->ack_seq = bt->seq;
	nlh = put_header(bt, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	mnl_nlmsg_batch_next(bt->b);
	nftnl_rule_free(r);
	nftnl_chain_free(c);
}

/* Send the batch and read one answer per message; any error aborts the
 * whole transaction in the kernel, and its text is reported. */
static int batch_send(struct batch *bt, char *err, size_t len)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_NETFILTER);
	char rbuf[16384];
	uint32_t portid;
	bool done = false;
	int r = 0, n;

	if (!nl) {
		snprintf(err, len, "cannot open a netfilter netlink socket: %s", strerror(errno));
		return -errno;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(bt->b), mnl_nlmsg_batch_size(bt->b)) < 0) {
		r = -errno;
		snprintf(err, len, "cannot send the nftables batch: %s", strerror(errno));
		goto out;
	}
	/* Acks come for the messages with NLM_F_ACK and for errors. */
	{
		int fd = mnl_socket_get_fd(nl);
		struct timeval tv = { .tv_sec = 2 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	/* Only the last message asks for an ack; an error in any message
	 * arrives before it (and aborts the whole batch). */
	while (!done && (n = (int)mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf))) > 0) {
		for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; mnl_nlmsg_ok(h, n); h = mnl_nlmsg_next(h, &n)) {
			const struct nlmsgerr *e;

			if (h->nlmsg_pid != portid || h->nlmsg_type != NLMSG_ERROR)
				continue;
			e = mnl_nlmsg_get_payload(h);
			if (e->error && !r) {
				r = e->error;
				snprintf(err, len, "nftables refused message %u of the batch: %s",
					 h->nlmsg_seq - bt->first_seq, strerror(-e->error));
			}
			if (h->nlmsg_seq == bt->ack_seq)
				done = true;
		}
	}
	if (!done && !r) {
		r = -ETIMEDOUT;
		snprintf(err, len, "no answer from nftables");
	}
out:
	mnl_socket_close(nl);
	return r;
}

static void batch_init(struct batch *bt)
{
	bt->seq = (uint32_t)time(NULL);
	bt->first_seq = bt->seq;
	bt->b = mnl_nlmsg_batch_start(bt->buf, sizeof(bt->buf));
	nftnl_batch_begin(mnl_nlmsg_batch_current(bt->b), bt->seq++);
	mnl_nlmsg_batch_next(bt->b);
}

static void batch_finish(struct batch *bt)
{
	nftnl_batch_end(mnl_nlmsg_batch_current(bt->b), bt->seq++);
	mnl_nlmsg_batch_next(bt->b);
}

int nft_setup(char *err, size_t len)
{
	struct batch *bt = calloc(1, sizeof(*bt));
	int r;

	if (!bt)
		return -ENOMEM;
	err[0] = '\0';
	batch_init(bt);
	/* add + delete + add: a table left by a killed daemon is replaced,
	 * and a missing one created, in the same transaction. */
	put_table(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	put_table(bt, NFT_MSG_DELTABLE, 0);
	put_table(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	put_chain_and_rule(bt);
	batch_finish(bt);
	r = batch_send(bt, err, len);
	mnl_nlmsg_batch_stop(bt->b);
	free(bt);
	return r;
}

int nft_teardown(char *err, size_t len)
{
	struct batch *bt = calloc(1, sizeof(*bt));
	int r;

	if (!bt)
		return -ENOMEM;
	err[0] = '\0';
	batch_init(bt);
	put_table(bt, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	bt->ack_seq = bt->seq;
	put_table(bt, NFT_MSG_DELTABLE, NLM_F_ACK);
	batch_finish(bt);
	r = batch_send(bt, err, len);
	mnl_nlmsg_batch_stop(bt->b);
	free(bt);
	return r;
}
