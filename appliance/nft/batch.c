/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "nft/batch.h"

#include <errno.h>
#include <libnftnl/common.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/cleanup.h"

#define BATCH_BYTES 32768

struct nft_batch {
	struct mnl_nlmsg_batch *b;
	uint32_t seq, first_seq, last_seq;
	bool open;     /* a message was started and not yet moved past */
	bool overflow;
	/* libmnl: a message may run past the limit; messages are 4-byte aligned */
	char buf[2 * BATCH_BYTES] __attribute__((aligned(8)));
};

int nft_batch_new(struct nft_batch **out)
{
	struct nft_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->seq = (uint32_t)time(NULL);
	b->first_seq = b->seq;
	b->b = mnl_nlmsg_batch_start(b->buf, BATCH_BYTES);
	nftnl_batch_begin(mnl_nlmsg_batch_current(b->b), b->seq++);
	mnl_nlmsg_batch_next(b->b);
	*out = b;
	return 0;
}

void nft_batch_free(struct nft_batch *b)
{
	if (!b)
		return;
	mnl_nlmsg_batch_stop(b->b);
	free(b);
}

/* Move past the message in progress; false if it did not fit. */
static bool batch_advance(struct nft_batch *b)
{
	if (!b->open)
		return true;
	b->open = false;
	if (!mnl_nlmsg_batch_next(b->b))
		b->overflow = true;
	return !b->overflow;
}

struct nlmsghdr *nft_batch_msg(struct nft_batch *b, uint16_t type, uint16_t family, uint16_t flags)
{
	if (!batch_advance(b))
		return NULL;
	b->open = true;
	b->last_seq = b->seq;
	return nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b->b), type, family, flags, b->seq++);
}

static void mnl_closep(struct mnl_socket **nl)
{
	if (*nl)
		mnl_socket_close(*nl);
}

/* Read answers until the last message's ack; the first error wins (it
 * aborted the whole transaction in the kernel). */
static int read_acks(struct mnl_socket *nl, const struct nft_batch *b, struct diags *d)
{
	uint32_t portid = mnl_socket_get_portid(nl);
	char rbuf[16384];
	int r = 0, n;

	while ((n = (int)mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf))) > 0) {
		for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; mnl_nlmsg_ok(h, n); h = mnl_nlmsg_next(h, &n)) {
			const struct nlmsgerr *e;

			if (h->nlmsg_pid != portid || h->nlmsg_type != NLMSG_ERROR)
				continue;
			e = mnl_nlmsg_get_payload(h);
			if (e->error && !r)
				r = diag_errno(d, e->error, "nftables refused message %u of the transaction",
					       h->nlmsg_seq - b->first_seq);
			if (h->nlmsg_seq == b->last_seq)
				return r;
		}
	}
	return r ? r : diag_errno(d, n < 0 ? -errno : -ETIMEDOUT, "no answer from nftables");
}

int nft_batch_commit(struct nft_batch *b, struct diags *d)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	struct nlmsghdr *last;
	struct timeval tv = { .tv_sec = 2 };

	if (!b->open && b->last_seq == 0)
		return 0; /* nothing to do */
	/* Only the last message asks for an ack: an error in any message
	 * arrives before it. */
	last = b->open ? mnl_nlmsg_batch_current(b->b) : NULL;
	if (last)
		last->nlmsg_flags |= NLM_F_ACK;
	if (!batch_advance(b))
		return diag_fail(d, -EMSGSIZE, "the nftables transaction does not fit its buffer (%d bytes)", BATCH_BYTES);
	nftnl_batch_end(mnl_nlmsg_batch_current(b->b), b->seq++);
	mnl_nlmsg_batch_next(b->b);
	if (!(nl = mnl_socket_open(NETLINK_NETFILTER)))
		return diag_errno(d, -errno, "cannot open a netfilter netlink socket");
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return diag_errno(d, -errno, "cannot bind a netfilter netlink socket");
	setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (mnl_socket_sendto(nl, mnl_nlmsg_batch_head(b->b), mnl_nlmsg_batch_size(b->b)) < 0)
		return diag_errno(d, -errno, "cannot send the nftables transaction");
	return read_acks(nl, b, d);
}
