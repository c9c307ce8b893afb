/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/ctevents.h"
#include "base/cleanup.h"
#include "lib/plant.h"
#include "netlink/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netfilter/nf_conntrack_tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define CTEV_RCVBUF	(8 * 1024 * 1024) /* asked of SO_RCVBUF(FORCE) */
#define CTEV_BUF	(64u * 1024)
#define CTEV_TIMEOUT_MS 2000

/* enum tcp_conntrack (not in the uapi headers) */
#define TCP_CT_TIME_WAIT 7
#define TCP_CT_CLOSE	 8

/* Questions about one connection: a socket bound to no group, the
 * answers' buffer (CTEV_BUF), the last sequence number. */
struct ctask {
	struct mnl_socket *nl;
	uint8_t *buf;
	uint32_t seq;
};

struct ctev {
	struct mnl_socket *ev; /* the events */
	struct ctask *ask;     /* ctev_alive's questions */
	uint8_t *buf;
	size_t rcvbuf;
};

static struct mnl_socket *ev_socket(unsigned groups)
{
	struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (!nl)
		return NULL;
	if (mnl_socket_bind(nl, groups, MNL_SOCKET_AUTOPID) < 0) {
		int e = errno;

		mnl_socket_close(nl);
		errno = e;
		return NULL;
	}
	return nl;
}

void ctev_close(struct ctev *c)
{
	if (!c)
		return;
	if (c->ev)
		mnl_socket_close(c->ev);
	ctask_close(c->ask);
	free(c->buf);
	free(c);
}

int ctev_open(struct ctev **out)
{
	struct ctev *c = calloc(1, sizeof(*c));
	int size = CTEV_RCVBUF, fd, r;
	socklen_t sl = sizeof(size);

	if (!c || !(c->buf = malloc(CTEV_BUF))) {
		ctev_close(c);
		return -ENOMEM;
	}
	if (!(c->ev = ev_socket(NF_NETLINK_CONNTRACK_UPDATE | NF_NETLINK_CONNTRACK_DESTROY))) {
		r = -errno;
		ctev_close(c);
		return r;
	}
	if ((r = ctask_open(&c->ask)) < 0) {
		ctev_close(c);
		return r;
	}
	fd = mnl_socket_get_fd(c->ev);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &sl) < 0 || size <= 0)
		size = CTEV_RCVBUF;
	c->rcvbuf = (size_t)size;
	*out = c;
	return 0;
}

int ctev_fd(const struct ctev *c)
{
	return mnl_socket_get_fd(c->ev);
}

/* ---- parsing ------------------------------------------------------------- */

struct nest {
	const struct nlattr *tb[CTA_MAX + 1 > CTA_PROTO_MAX + 1 ? CTA_MAX + 1 : CTA_PROTO_MAX + 1];
	uint16_t max;
};

static int nest_cb(const struct nlattr *a, void *arg)
{
	struct nest *n = arg;
	uint16_t type = mnl_attr_get_type(a);

	if (type <= n->max && mnl_attr_type_valid(a, n->max) > 0)
		n->tb[type] = a;
	return MNL_CB_OK;
}

static int parse_nest(const struct nlattr *a, uint16_t max, struct nest *n)
{
	memset(n, 0, sizeof(*n));
	n->max = max;
	return mnl_attr_parse_nested(a, nest_cb, n) < 0 ? -EINVAL : 0;
}

static int copy_attr(const struct nlattr *a, void *to, size_t len)
{
	if (!a || mnl_attr_get_payload_len(a) < len)
		return -EINVAL;
	memcpy(to, mnl_attr_get_payload(a), len);
	return 0;
}

static int parse_tuple(const struct nlattr *orig, uint8_t af, struct ct_tuple *t)
{
	struct nest tu, ip, pr;
	size_t alen = af == AF_INET ? 4 : 16;

	memset(t, 0, sizeof(*t));
	t->af = af;
	if (!orig || parse_nest(orig, CTA_TUPLE_MAX, &tu) < 0 || !tu.tb[CTA_TUPLE_IP] || !tu.tb[CTA_TUPLE_PROTO] ||
	    parse_nest(tu.tb[CTA_TUPLE_IP], CTA_IP_MAX, &ip) < 0 ||
	    parse_nest(tu.tb[CTA_TUPLE_PROTO], CTA_PROTO_MAX, &pr) < 0)
		return -EINVAL;
	if (copy_attr(ip.tb[af == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC], t->src, alen) < 0 ||
	    copy_attr(ip.tb[af == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST], t->dst, alen) < 0 ||
	    copy_attr(pr.tb[CTA_PROTO_NUM], &t->proto, 1) < 0)
		return -EINVAL;
	if (t->proto == IPPROTO_ICMP || t->proto == IPPROTO_ICMPV6) {
		bool v4 = t->proto == IPPROTO_ICMP;

		copy_attr(pr.tb[v4 ? CTA_PROTO_ICMP_ID : CTA_PROTO_ICMPV6_ID], t->sport, 2);
		copy_attr(pr.tb[v4 ? CTA_PROTO_ICMP_TYPE : CTA_PROTO_ICMPV6_TYPE], &t->dport[0], 1);
		copy_attr(pr.tb[v4 ? CTA_PROTO_ICMP_CODE : CTA_PROTO_ICMPV6_CODE], &t->dport[1], 1);
	} else {
		copy_attr(pr.tb[CTA_PROTO_SRC_PORT], t->sport, 2);
		copy_attr(pr.tb[CTA_PROTO_DST_PORT], t->dport, 2);
	}
	return 0;
}

/* TCP's state in CTA_PROTOINFO, -1 if none. */
static int tcp_state(const struct nlattr *pi)
{
	struct nest p, tcp;
	uint8_t st;

	if (!pi || parse_nest(pi, CTA_PROTOINFO_MAX, &p) < 0 || !p.tb[CTA_PROTOINFO_TCP] ||
	    parse_nest(p.tb[CTA_PROTOINFO_TCP], CTA_PROTOINFO_TCP_MAX, &tcp) < 0 ||
	    copy_attr(tcp.tb[CTA_PROTOINFO_TCP_STATE], &st, 1) < 0)
		return -1;
	return st;
}

static bool closed(int st)
{
	if (planted("conns-keep-closed")) /* the test build: closed connections count until conntrack forgets them */
		return false;
	return st == TCP_CT_TIME_WAIT || st == TCP_CT_CLOSE;
}

/* The message's tuple and TCP state (-1 if none). */
static int parse_ct(const struct nlmsghdr *nlh, struct ct_tuple *t, int *st)
{
	const struct nfgenmsg *g;
	struct nest n;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return -EINVAL;
	g = mnl_nlmsg_get_payload(nlh);
	if (g->nfgen_family != AF_INET && g->nfgen_family != AF_INET6)
		return -EINVAL;
	memset(&n, 0, sizeof(n));
	n.max = CTA_MAX;
	if (mnl_attr_parse(nlh, sizeof(*g), nest_cb, &n) < 0)
		return -EINVAL;
	*st = tcp_state(n.tb[CTA_PROTOINFO]);
	return parse_tuple(n.tb[CTA_TUPLE_ORIG], g->nfgen_family, t);
}

int ctev_parse(const struct nlmsghdr *nlh, struct ct_end *out)
{
	uint16_t type = nlh->nlmsg_type;
	struct ct_tuple t;
	int st;

	if (type >> 8 != NFNL_SUBSYS_CTNETLINK)
		return 0;
	if ((type & 0xff) != IPCTNL_MSG_CT_DELETE && (type & 0xff) != IPCTNL_MSG_CT_NEW)
		return 0;
	if (parse_ct(nlh, &t, &st) < 0)
		return -EINVAL;
	if ((type & 0xff) == IPCTNL_MSG_CT_NEW && !closed(st))
		return 0;
	out->t = t;
	out->destroyed = (type & 0xff) == IPCTNL_MSG_CT_DELETE;
	return 1;
}

int ctev_read(struct ctev *c, void (*cb)(const struct ct_end *e, void *arg), void *arg)
{
	size_t budget = c->rcvbuf;
	int n = 0, lost = 0;

	while (budget) {
		ssize_t len = recv(mnl_socket_get_fd(c->ev), c->buf, CTEV_BUF, 0);
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)c->buf;
		int left;

		if (len < 0) {
			if (errno == ENOBUFS) {
				lost = 1;
				continue;
			}
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		budget = (size_t)len >= budget ? 0 : budget - (size_t)len;
		for (left = (int)len; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
			struct ct_end e;

			if (ctev_parse(nlh, &e) == 1) {
				cb(&e, arg);
				n++;
			}
		}
	}
	return lost ? -ENOBUFS : n;
}

/* ---- asking ------------------------------------------------------------- */

static void put_tuple(struct nlmsghdr *nlh, const struct ct_tuple *t)
{
	struct nlattr *orig = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG), *ip, *pr;
	size_t alen = t->af == AF_INET ? 4 : 16;
	bool icmp = t->proto == IPPROTO_ICMP || t->proto == IPPROTO_ICMPV6, v4 = t->proto == IPPROTO_ICMP;

	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put(nlh, t->af == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, alen, t->src);
	mnl_attr_put(nlh, t->af == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST, alen, t->dst);
	mnl_attr_nest_end(nlh, ip);
	pr = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, t->proto);
	if (icmp) {
		mnl_attr_put(nlh, v4 ? CTA_PROTO_ICMP_ID : CTA_PROTO_ICMPV6_ID, 2, t->sport);
		mnl_attr_put_u8(nlh, v4 ? CTA_PROTO_ICMP_TYPE : CTA_PROTO_ICMPV6_TYPE, t->dport[0]);
		mnl_attr_put_u8(nlh, v4 ? CTA_PROTO_ICMP_CODE : CTA_PROTO_ICMPV6_CODE, t->dport[1]);
	} else { /* protocols without ports (conntrack's generic one) ignore them */
		mnl_attr_put(nlh, CTA_PROTO_SRC_PORT, 2, t->sport);
		mnl_attr_put(nlh, CTA_PROTO_DST_PORT, 2, t->dport);
	}
	mnl_attr_nest_end(nlh, pr);
	mnl_attr_nest_end(nlh, orig);
}

int ctask_alive(struct ctask *a, const struct ct_tuple *t)
{
	char req[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
	struct pollfd pfd = { .fd = mnl_socket_get_fd(a->nl), .events = POLLIN };
	struct nfgenmsg *g;
	uint32_t seq = ++a->seq;
	int alive = -ETIMEDOUT;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = t->af;
	g->version = NFNETLINK_V0;
	g->res_id = 0;
	put_tuple(nlh, t);
	if (mnl_socket_sendto(a->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	/* The answer: the connection (then an ack), or an error. */
	while (poll(&pfd, 1, CTEV_TIMEOUT_MS) > 0) {
		ssize_t len = recv(pfd.fd, a->buf, CTEV_BUF, 0);
		const struct nlmsghdr *m = (const struct nlmsghdr *)a->buf;
		int left;

		if (len < 0)
			return errno == EAGAIN || errno == EINTR ? alive : -errno;
		for (left = (int)len; mnl_nlmsg_ok(m, left); m = mnl_nlmsg_next(m, &left)) {
			struct ct_tuple got;
			int st;

			if (m->nlmsg_seq != seq)
				continue;
			if (m->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);

				if (mnl_nlmsg_get_payload_len(m) < sizeof(*e))
					return -EBADMSG;
				if (e->error == -ENOENT)
					return 0;
				return e->error ? e->error : (alive == -ETIMEDOUT ? -EBADMSG : alive);
			}
			if (m->nlmsg_type >> 8 == NFNL_SUBSYS_CTNETLINK && parse_ct(m, &got, &st) == 0)
				alive = !closed(st);
		}
	}
	return alive;
}

int ctev_alive(struct ctev *c, const struct ct_tuple *t)
{
	return ctask_alive(c->ask, t);
}

void ctask_close(struct ctask *a)
{
	if (!a)
		return;
	if (a->nl)
		mnl_socket_close(a->nl);
	free(a->buf);
	free(a);
}

int ctask_open(struct ctask **out)
{
	struct ctask *a = calloc(1, sizeof(*a));
	int r;

	if (!a || !(a->buf = malloc(CTEV_BUF))) {
		ctask_close(a);
		return -ENOMEM;
	}
	if (!(a->nl = ev_socket(0))) {
		r = -errno;
		ctask_close(a);
		return r;
	}
	*out = a;
	return 0;
}

/* ---- cutting ------------------------------------------------------------ */

static struct nlmsghdr *ct_msg(char *buf, uint8_t type, uint16_t flags, uint8_t af)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *g;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = af;
	g->version = NFNETLINK_V0;
	g->res_id = 0;
	return nlh;
}

int ct_delete_tuples(const struct ct_tuple *t, size_t n, void (*cb)(const struct ct_tuple *t, void *arg), void *arg)
{
	_cleanup_(nl_closep) struct mnl_socket *nl = NULL;
	char req[MNL_SOCKET_BUFFER_SIZE];
	int cut = 0;

	if (!n)
		return 0;
	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	for (size_t i = 0; i < n; i++) {
		struct nlmsghdr *nlh = ct_msg(req, IPCTNL_MSG_CT_DELETE, 0, t[i].af);
		int r;

		put_tuple(nlh, &t[i]);
		if ((r = nl_talk(nl, nlh, NULL, NULL)) == -ENOENT)
			continue; /* it ended meanwhile */
		if (r < 0)
			return r;
		cut++;
		if (cb)
			cb(&t[i], arg);
	}
	return cut;
}

struct marked {
	struct ct_tuple *v;
	size_t n, cap;
};

static int marked_cb(const struct nlmsghdr *nlh, void *data)
{
	struct marked *m = data;
	struct ct_tuple t;
	int st;

	if (parse_ct(nlh, &t, &st) < 0)
		return MNL_CB_OK;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct ct_tuple *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return MNL_CB_ERROR;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = t;
	return MNL_CB_OK;
}

int ct_list_marked(uint32_t mark, uint32_t mask, struct ct_tuple **out, size_t *n)
{
	_cleanup_(nl_closep) struct mnl_socket *nl = NULL;
	char req[MNL_SOCKET_BUFFER_SIZE];
	struct marked m = { 0 };
	struct nlmsghdr *nlh;
	int r;

	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	nlh = ct_msg(req, IPCTNL_MSG_CT_GET, NLM_F_DUMP, AF_UNSPEC);
	mnl_attr_put_u32(nlh, CTA_MARK, htonl(mark));
	mnl_attr_put_u32(nlh, CTA_MARK_MASK, htonl(mask));
	if ((r = nl_talk(nl, nlh, marked_cb, &m)) < 0) {
		free(m.v);
		return r;
	}
	*out = m.v;
	*n = m.n;
	return 0;
}
