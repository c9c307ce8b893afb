/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "backend/nftables/nft/batch.h"

#include <errno.h>
#include <libnftnl/common.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* Room kept free for the message being built: the largest nfbox makes is a
 * chunk of set elements (NFT_ELEMS_PER_MSG of them, well under this). */
#define MSG_ROOM (256u << 10)

struct note {
	uint32_t seq;
	struct loc loc;
	const char *what;
};

/* Errors already told: the kernel goes on checking the messages after the
 * first refusal, and often refuses them for the same reason. */
struct told {
	int first_err;
	bool table_refused; /* the table itself: the rest follows from it */
	uint32_t n, hidden;
	struct {
		uint32_t line, col;
		int err;
	} v[64];
};

struct nft_batch {
	char *buf;
	size_t len, cap; /* len: bytes of finished messages */
	size_t cur;	 /* offset of the message in progress, or SIZE_MAX */
	uint32_t seq, first_seq, last_seq;
	bool failed; /* out of memory while building */
	struct note *notes;
	uint32_t nnotes, capnotes;
	struct told told; /* the kernel's answers so far */
};

static bool reserve(struct nft_batch *b)
{
	char *nb;
	size_t cap;

	if (b->cap - b->len >= MSG_ROOM)
		return true;
	cap = (b->cap + MSG_ROOM) * 2;
	if (!(nb = realloc(b->buf, cap))) {
		b->failed = true;
		return false;
	}
	memset(nb + b->cap, 0, cap - b->cap);
	b->buf = nb;
	b->cap = cap;
	return true;
}

/* The message in progress is done: count its bytes. */
static void finish(struct nft_batch *b)
{
	struct nlmsghdr *nlh;

	if (b->cur == SIZE_MAX)
		return;
	nlh = (struct nlmsghdr *)(b->buf + b->cur);
	b->len = b->cur + NLMSG_ALIGN(nlh->nlmsg_len);
	b->cur = SIZE_MAX;
}

/* Sequence numbers go on across transactions on the one socket, so that a
 * late answer to an earlier one is never taken for this one's. */
static uint32_t next_seq;

int nft_batch_new(struct nft_batch **out)
{
	struct nft_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->cur = SIZE_MAX;
	if (!next_seq)
		next_seq = (uint32_t)time(NULL);
	b->seq = next_seq;
	b->first_seq = b->seq;
	if (!reserve(b)) {
		free(b);
		return -ENOMEM;
	}
	nftnl_batch_begin(b->buf, b->seq++);
	b->len = NLMSG_ALIGN(((struct nlmsghdr *)b->buf)->nlmsg_len);
	*out = b;
	return 0;
}

void nft_batch_free(struct nft_batch *b)
{
	if (!b)
		return;
	free(b->notes);
	free(b->buf);
	free(b);
}

struct nlmsghdr *nft_batch_msg(struct nft_batch *b, uint16_t type, uint16_t family, uint16_t flags)
{
	finish(b);
	if (b->failed || !reserve(b))
		return NULL;
	b->cur = b->len;
	b->last_seq = b->seq;
	return nftnl_nlmsg_build_hdr(b->buf + b->cur, type, family, flags, b->seq++);
}

void nft_batch_note(struct nft_batch *b, struct loc loc, const char *what)
{
	if (b->failed)
		return;
	if (b->nnotes == b->capnotes) {
		uint32_t cap = b->capnotes ? 2 * b->capnotes : 64;
		struct note *nv = realloc(b->notes, cap * sizeof(*nv));

		if (!nv)
			return; /* only the message's place is lost */
		b->notes = nv;
		b->capnotes = cap;
	}
	b->notes[b->nnotes++] = (struct note){ .seq = b->last_seq, .loc = loc, .what = what };
}

static const struct note *note_of(const struct nft_batch *b, uint32_t seq)
{
	/* Notes are in sequence order: a binary search. */
	uint32_t lo = 0, hi = b->nnotes;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b->notes[mid].seq == seq)
			return &b->notes[mid];
		if (b->notes[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The kernel's own words (extended ack, NLMSGERR_ATTR_MSG), if any. */
static const char *extack_msg(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
	const struct nlattr *attr;
	size_t off = sizeof(*e);

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += mnl_nlmsg_get_payload_len(&e->msg);
	mnl_attr_for_each_payload((const struct nlattr *)((const char *)e + off), mnl_nlmsg_get_payload_len(h) - off)
	{
		if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
			return mnl_attr_get_str(attr);
	}
	return NULL;
}

static bool already_told(struct told *t, const struct note *n, int err)
{
	uint32_t line = n && n->loc.src ? n->loc.line : 0, col = n && n->loc.src ? n->loc.col : 0;

	if (t->table_refused)
		return true;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->v[i].line == line && t->v[i].col == col && t->v[i].err == err)
			return true;
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = (typeof(t->v[0])){ .line = line, .col = col, .err = err };
	return false;
}

static int refused(const struct nft_batch *b, const struct nlmsghdr *h, int err, struct told *t, struct diags *d)
{
	const struct note *n = note_of(b, h->nlmsg_seq);
	const char *ext = extack_msg(h);
	bool table = n && n->what && !strcmp(n->what, NFT_TABLE_WHAT);

	if (!t->first_err)
		t->first_err = err;
	if (already_told(t, n, err)) {
		t->hidden++;
		return err;
	}
	if (table && (err == -EPERM || err == -EBUSY)) {
		t->table_refused = true;
		diag_error(
			d, DIAG_NOWHERE,
			"nftables refused %s: %s: another program owns it (another nfbox in this network namespace?)",
			NFT_TABLE_WHAT, strerror(-err));
		return err;
	}
	if (n && n->loc.src)
		diag_error(d, n->loc, "nftables refused %s: %s%s%s%s", n->what ? n->what : "this", strerror(-err),
			   ext ? " (" : "", ext ? ext : "", ext ? ")" : "");
	else
		diag_error(d, DIAG_NOWHERE, "nftables refused %s (message %u of the transaction): %s%s%s%s",
			   n && n->what ? n->what : "the table", h->nlmsg_seq - b->first_seq, strerror(-err),
			   ext ? " (" : "", ext ? ext : "", ext ? ")" : "");
	return err;
}

int nft_batch_answers(struct nft_batch *b, uint32_t portid, const void *buf, size_t len, int *err, struct diags *d)
{
	int n = len > INT32_MAX ? INT32_MAX : (int)len;

	for (const struct nlmsghdr *h = buf; mnl_nlmsg_ok(h, n); h = mnl_nlmsg_next(h, &n)) {
		const struct nlmsgerr *e;

		if (h->nlmsg_pid != portid || h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq < b->first_seq ||
		    h->nlmsg_seq > b->last_seq)
			continue;
		e = mnl_nlmsg_get_payload(h);
		if (e->error) {
			int er = refused(b, h, e->error, &b->told, d);

			if (!*err)
				*err = er;
		}
		if (h->nlmsg_seq == b->last_seq) {
			if (b->told.hidden && !b->told.table_refused)
				diag_note(d, DIAG_NOWHERE, "%u more messages refused for the reasons above",
					  b->told.hidden);
			return 1;
		}
	}
	return 0;
}

/* Read answers until the last message's ack; the first error wins (it
 * aborted the whole transaction in the kernel). */
static int read_acks(struct mnl_socket *nl, struct nft_batch *b, struct diags *d)
{
	uint32_t portid = mnl_socket_get_portid(nl);
	char rbuf[MNL_SOCKET_BUFFER_SIZE * 2];
	int r = 0, n;

	while ((n = (int)mnl_socket_recvfrom(nl, rbuf, sizeof(rbuf))) > 0)
		if (nft_batch_answers(b, portid, rbuf, (size_t)n, &r, d))
			return r;
	return r ? r : diag_errno(d, n < 0 ? -errno : -ETIMEDOUT, "no answer from nftables");
}

/*
 * The process's one nftables socket, kept open: table inet nfbox is owned
 * by it (NFT_TABLE_F_OWNER), so no other program can change the table
 * while nfbox runs, and with NFT_TABLE_F_PERSIST the table outlives a
 * crash, unowned, for the next nfbox to take over.
 */
static struct mnl_socket *sock;

static int open_socket(size_t len, struct diags *d)
{
	struct timeval tv = { .tv_sec = 2 };
	int one = 1, fd, sz = len > INT32_MAX ? INT32_MAX : (int)len;

	if (!sock) {
		if (!(sock = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC)))
			return diag_errno(d, -errno, "cannot open a netfilter netlink socket");
		if (mnl_socket_bind(sock, 0, MNL_SOCKET_AUTOPID) < 0) {
			int r = -errno;

			nft_socket_close();
			return diag_errno(d, r, "cannot bind a netfilter netlink socket");
		}
		fd = mnl_socket_get_fd(sock);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
		/* The kernel's explanations come back without the (possibly
		 * large) message they are about. */
		setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	}
	/* The whole transaction goes in one send. */
	fd = mnl_socket_get_fd(sock);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	return 0;
}

void nft_socket_close(void)
{
	if (sock)
		mnl_socket_close(sock);
	sock = NULL;
}

/* What is left in the socket from an earlier transaction that timed out. */
static void drain(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	while (recv(mnl_socket_get_fd(sock), buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

int nft_batch_commit(struct nft_batch *b, struct diags *d)
{
	struct nlmsghdr *last;
	int r;

	if (b->failed)
		return diag_errno(d, -ENOMEM, "building the nftables transaction");
	if (b->cur == SIZE_MAX && b->last_seq == 0)
		return 0; /* nothing to do */
	/* Only the last message asks for an ack: an error in any message
	 * arrives before it. */
	last = b->cur != SIZE_MAX ? (struct nlmsghdr *)(b->buf + b->cur) : NULL;
	if (last)
		last->nlmsg_flags |= NLM_F_ACK;
	finish(b);
	if (!reserve(b))
		return diag_errno(d, -ENOMEM, "building the nftables transaction");
	nftnl_batch_end(b->buf + b->len, b->seq++);
	b->len += NLMSG_ALIGN(((struct nlmsghdr *)(b->buf + b->len))->nlmsg_len);
	next_seq = b->seq;
	if ((r = open_socket(b->len, d)) < 0)
		return r;
	drain();
	if (mnl_socket_sendto(sock, b->buf, b->len) < 0)
		return diag_errno(d, -errno, "cannot send the nftables transaction (%zu bytes)", b->len);
	return read_acks(sock, b, d);
}
