/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/nflog.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/cleanup.h"

/* The largest datagram nfnetlink_log sends one instance: its skb holds one
 * packet of up to 64 KiB (copy range and attributes), and the kernel may
 * append further packets into that skb's tailroom (a rule's queue-threshold
 * overrides ours), whose allocation rounds up to 128 KiB. */
#define NFLOG_BUF_SIZE (128u * 1024)
/* Asked of SO_RCVBUF(FORCE); the kernel doubles it for its bookkeeping. */
#define NFLOG_RCVBUF (8 * 1024 * 1024)
/* The kernel answers a config message while it is being sent; the wait only
 * guards against an answer that never comes. */
#define NFLOG_ACK_TIMEOUT_MS 5000

struct nflog {
	struct mnl_socket *nl;
	uint8_t *buf;
	size_t rcvbuf; /* bytes the socket may hold: nflog_read's budget */
	uint64_t lost;
	uint32_t seq;
	uint16_t group;
};

static struct nlmsghdr *cfg_start(void *buf, uint8_t type, uint16_t group, uint32_t seq)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(group);
	return nlh;
}

/* The kernel's answer to request seq in one datagram: 1 with *err set, or 0
 * if it is not there. Logged packets may come before it (the group is bound
 * before the answer is queued); they are passed over. */
static int find_ack(const uint8_t *buf, size_t len, uint32_t seq, int *err)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	int left = (int)len;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		if (nlh->nlmsg_type != NLMSG_ERROR || nlh->nlmsg_seq != seq)
			continue;
		if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct nlmsgerr))
			*err = -EBADMSG;
		else
			*err = ((const struct nlmsgerr *)mnl_nlmsg_get_payload(nlh))->error;
		return 1;
	}
	return 0;
}

/* Send one config message with NLM_F_ACK and wait for its answer on the
 * non-blocking socket. 0 or -errno (the kernel's error). */
static int cfg_talk(struct nflog *n, struct nlmsghdr *nlh)
{
	struct pollfd pfd = { .fd = mnl_socket_get_fd(n->nl), .events = POLLIN };
	ssize_t len;
	int err = 0, r;

	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(n->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		len = mnl_socket_recvfrom(n->nl, n->buf, NFLOG_BUF_SIZE);
		if (len >= 0) {
			if (find_ack(n->buf, (size_t)len, nlh->nlmsg_seq, &err))
				return err;
			continue;
		}
		if (errno == EINTR || errno == ENOBUFS || errno == ENOSPC)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = poll(&pfd, 1, NFLOG_ACK_TIMEOUT_MS);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* One message: bind, then copy mode and delivery. QTHRESH 1 sends each
 * packet as it is logged; TIMEOUT 1 (10 ms) bounds the wait when a rule's
 * queue-threshold asks the kernel to batch. No PF_UNBIND/PF_BIND: nft's
 * `log group` names the NFLOG logger itself, and on current kernels those
 * commands still replace the namespace's default logger of a family (used
 * by whoever logs without naming one, such as conntrack's invalid-packet
 * logging). */
static int bind_group(struct nflog *n, uint32_t copy_bytes)
{
	char buf[256] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nfulnl_msg_config_cmd cmd = { .command = NFULNL_CFG_CMD_BIND };
	struct nfulnl_msg_config_mode mode = { .copy_range = htonl(copy_bytes), .copy_mode = NFULNL_COPY_PACKET };
	struct nlmsghdr *nlh = cfg_start(buf, NFULNL_MSG_CONFIG, n->group, ++n->seq);

	mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
	mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(mode), &mode);
	mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH, htonl(1));
	mnl_attr_put_u32(nlh, NFULA_CFG_TIMEOUT, htonl(1));
	return cfg_talk(n, nlh);
}

/* The kernel says -EPERM both to a sender without CAP_NET_ADMIN and to a
 * bind of a group another socket holds. A message type nfnetlink_log does
 * not have tells the two apart: without the capability it is refused with
 * -EPERM before its type is looked at, with it -EINVAL. */
static int eperm_cause(struct nflog *n)
{
	char buf[64] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nlh = cfg_start(buf, NFULNL_MSG_MAX, n->group, ++n->seq);

	return cfg_talk(n, nlh) == -EINVAL ? -EBUSY : -EPERM;
}

/* Bursts of logged packets must fit while the loop is busy elsewhere:
 * SO_RCVBUFFORCE passes net.core.rmem_max (it needs CAP_NET_ADMIN in the
 * initial user namespace), SO_RCVBUF is capped by it. */
static int set_rcvbuf(struct nflog *n)
{
	int fd = mnl_socket_get_fd(n->nl), size = NFLOG_RCVBUF;
	socklen_t sl = sizeof(size);

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &sl) < 0)
		return -errno;
	n->rcvbuf = size > 0 ? (size_t)size : NFLOG_BUF_SIZE;
	return 0;
}

/* One that nflog_open() did not finish: closing its socket frees the group
 * it may have bound (no unbind, unlike nflog_close()). */
static void nflog_freep(struct nflog **p)
{
	struct nflog *n = *p;

	if (!n)
		return;
	if (n->nl)
		mnl_socket_close(n->nl);
	free(n->buf);
	free(n);
}

int nflog_open(uint16_t group, uint32_t copy_bytes, struct nflog **out)
{
	_cleanup_(nflog_freep) struct nflog *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	n->group = group;
	n->seq = (uint32_t)time(NULL);
	n->buf = malloc(NFLOG_BUF_SIZE);
	n->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!n->buf || !n->nl || mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return n->buf ? -errno : -ENOMEM;
	if ((r = set_rcvbuf(n)) < 0)
		return r;
	r = bind_group(n, copy_bytes);
	if (r == -EPERM)
		r = eperm_cause(n);
	if (r < 0)
		return r;
	*out = TAKE_PTR(n);
	return 0;
}

void nflog_close(struct nflog *n)
{
	char buf[64] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nfulnl_msg_config_cmd cmd = { .command = NFULNL_CFG_CMD_UNBIND };
	struct nlmsghdr *nlh;

	if (!n)
		return;
	/* Closing the socket would free the group as well; unbinding first
	 * frees it before close() returns. No ack: nobody to tell. */
	nlh = cfg_start(buf, NFULNL_MSG_CONFIG, n->group, ++n->seq);
	mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
	mnl_socket_sendto(n->nl, nlh, nlh->nlmsg_len);
	mnl_socket_close(n->nl);
	free(n->buf);
	free(n);
}

int nflog_fd(const struct nflog *n)
{
	return mnl_socket_get_fd(n->nl);
}

uint64_t nflog_lost(const struct nflog *n)
{
	return n->lost;
}

/* The packets of one datagram: one message, or several ended by NLMSG_DONE
 * when the kernel batched them. Messages that are not packets we can read
 * are passed over. */
static int deliver(const uint8_t *buf, size_t len, void (*cb)(const struct nflog_packet *p, void *arg), void *arg)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)buf;
	struct nflog_packet p;
	int left = (int)len, count = 0;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		if (nlh->nlmsg_type == NLMSG_DONE)
			break;
		if (nflog_parse(nlh, &p) < 0)
			continue;
		if (cb)
			cb(&p, arg);
		count++;
	}
	return count;
}

int nflog_read(struct nflog *n, void (*cb)(const struct nflog_packet *p, void *arg), void *arg)
{
	size_t taken = 0;
	ssize_t len;
	int count = 0;

	while (taken < n->rcvbuf) {
		len = mnl_socket_recvfrom(n->nl, n->buf, NFLOG_BUF_SIZE);
		if (len < 0) {
			if (errno == EAGAIN)
				break;
			/* ENOSPC: a datagram larger than the buffer, cut and
			 * gone; the buffer is sized so that it does not happen,
			 * but if it did its packets would be lost like those of
			 * an overrun. */
			if (errno == ENOBUFS || errno == ENOSPC)
				n->lost++;
			else if (errno != EINTR)
				return -errno;
			continue;
		}
		taken += len > 0 ? (size_t)len : 1;
		count += deliver(n->buf, (size_t)len, cb, arg);
	}
	return count;
}

/* An attribute that lies within the left bytes of the message. */
static bool attr_fits(const struct nlattr *a, size_t left)
{
	return left >= sizeof(*a) && a->nla_len >= sizeof(*a) && a->nla_len <= left;
}

static int take_attr(const struct nlattr *a, struct nflog_packet *p, bool *have_hdr)
{
	const void *data = mnl_attr_get_payload(a);
	uint16_t dlen = mnl_attr_get_payload_len(a);
	struct nfulnl_msg_packet_timestamp ts;
	struct nfulnl_msg_packet_hdr hdr;

	switch (mnl_attr_get_type(a)) {
	case NFULA_PACKET_HDR:
		if (mnl_attr_validate2(a, MNL_TYPE_BINARY, sizeof(hdr)) < 0)
			return -EINVAL;
		memcpy(&hdr, data, sizeof(hdr));
		p->hook = hdr.hook;
		*have_hdr = true;
		break;
	case NFULA_IFINDEX_INDEV:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return -EINVAL;
		p->ifin = ntohl(mnl_attr_get_u32(a));
		break;
	case NFULA_IFINDEX_OUTDEV:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return -EINVAL;
		p->ifout = ntohl(mnl_attr_get_u32(a));
		break;
	case NFULA_PREFIX:
		/* NUL-terminated from the kernel; read within the attribute
		 * whatever it holds. */
		dlen = (uint16_t)strnlen(data, dlen);
		if (dlen >= sizeof(p->prefix))
			dlen = sizeof(p->prefix) - 1;
		memcpy(p->prefix, data, dlen);
		p->prefix[dlen] = '\0';
		break;
	case NFULA_PAYLOAD:
		p->payload = data;
		p->len = dlen;
		break;
	case NFULA_TIMESTAMP:
		/* Two be64 at a 4-byte boundary: copied, not dereferenced. */
		if (mnl_attr_validate2(a, MNL_TYPE_BINARY, sizeof(ts)) < 0)
			return -EINVAL;
		memcpy(&ts, data, sizeof(ts));
		p->ts_ns = be64toh(ts.sec) * 1000000000ull + be64toh(ts.usec) * 1000ull;
		break;
	}
	return 0;
}

int nflog_parse(const struct nlmsghdr *nlh, struct nflog_packet *out)
{
	const size_t head = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct nfgenmsg));
	struct nflog_packet p = { 0 };
	const struct nlattr *a;
	bool have_hdr = false;
	size_t left, step;

	if (nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET) || nlh->nlmsg_len < head)
		return -EINVAL;
	p.family = ((const struct nfgenmsg *)mnl_nlmsg_get_payload(nlh))->nfgen_family;
	a = mnl_nlmsg_get_payload_offset(nlh, sizeof(struct nfgenmsg));
	/* Every attribute must lie within the message, and nothing but
	 * padding may follow the last: a message cut short is refused, not
	 * read past its end. */
	for (left = nlh->nlmsg_len - head; left > 0; left -= step) {
		if (!attr_fits(a, left) || take_attr(a, &p, &have_hdr) < 0)
			return -EINVAL;
		step = MNL_ALIGN(a->nla_len);
		if (step >= left)
			break;
		a = (const struct nlattr *)((const char *)a + step);
	}
	if (!have_hdr || !p.payload || !p.len)
		return -EINVAL;
	p.orig_len = (uint32_t)p.len;
	*out = p;
	return 0;
}
