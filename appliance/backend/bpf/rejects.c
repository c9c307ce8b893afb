/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rejects of the BPF backend. A netfilter BPF program can only accept or
 * drop, so a reject rule drops and hands the packet's head over to the
 * daemon through a ring buffer (nfb_rejects), within the policy's
 * reject-rate (the classifier's bucket: over it, the packet is dropped
 * unanswered and counted). The daemon builds the reply (reject/build.h) and
 * sends it on a raw socket marked NFB_REPLY_MARK, which the classifier's
 * output hook lets out whatever the policy says. The verdict itself was the
 * classifier's, in the policy's first-match order; only the reply is late,
 * by the time of a wakeup.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <linux/icmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/bpf/bpf.h"
#include "base/log.h"
#include "backend/bpf/reject/build.h"

enum {
	S_RAW4,
	S_RAW6,
	S_ICMP4,
	S_ICMP6,
	S_COUNT
};

/* The rejects' state (bpf_backend.rejecter): the raw sockets that
 * answer, the classifier's ring they come from, and the counts. */
struct rejecter {
	struct handler h;
	int fd[S_COUNT];
	struct ring_buffer *rb;
	uint64_t sent, send_failed, unanswerable;
};

/* Raw sockets that send and never queue what they would receive. */
static int raw_socket(int af, int proto)
{
	int fd = socket(af, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, proto), one = 1;
	unsigned mark = NFB_REPLY_MARK;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (proto == IPPROTO_ICMP) {
		struct icmp_filter f = { .data = ~0u };

		setsockopt(fd, SOL_RAW, ICMP_FILTER, &f, sizeof(f));
	} else if (proto == IPPROTO_ICMPV6) {
		struct icmp6_filter f;

		ICMP6_FILTER_SETBLOCKALL(&f);
		setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &f, sizeof(f));
	}
	if (af == AF_INET6 && proto == IPPROTO_RAW)
		setsockopt(fd, IPPROTO_IPV6, IPV6_HDRINCL, &one, sizeof(one));
	return fd;
}

static void send_reply(struct rejecter *rj, const struct reject_reply *rp)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	bool v4 = rp->family == AF_INET;
	int fd = rj->fd[v4 ? (rp->tcp_reset ? S_RAW4 : S_ICMP4) : (rp->tcp_reset ? S_RAW6 : S_ICMP6)];
	const struct sockaddr *to = v4 ? (const struct sockaddr *)&s4 : (const struct sockaddr *)&s6;

	memcpy(&s4.sin_addr, rp->dst, 4);
	memcpy(&s6.sin6_addr, rp->dst, 16);
	if (sendto(fd, rp->buf, rp->len, 0, to, v4 ? sizeof(s4) : sizeof(s6)) < 0) {
		if (!rj->send_failed++)
			log_warn("cannot send a reject reply: %s (counted in stats as reject_send_failed)",
				 strerror(errno));
		return;
	}
	rj->sent++;
}

static int on_reject(void *ctx, void *data, size_t size)
{
	static const enum reject_kind kinds[] = {
		[NFB_REJECT_TCP_RESET] = REJECT_TCP_RESET,
		[NFB_REJECT_PORT] = REJECT_PORT,
		[NFB_REJECT_ADMIN] = REJECT_ADMIN,
		[NFB_REJECT_HOST] = REJECT_HOST,
		[NFB_REJECT_NET] = REJECT_NET,
	};
	struct rejecter *rj = ctx;
	const struct nfb_reject *e = data;
	struct reject_reply rp;

	if (size < sizeof(*e) || e->kind >= sizeof(kinds) / sizeof(kinds[0]) || e->len > sizeof(e->data))
		return 0;
	if (reject_build(e->data, e->len, e->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6, kinds[e->kind], &rp) < 0) {
		rj->unanswerable++; /* an ICMP error, a broadcast...: never answered */
		return 0;
	}
	send_reply(rj, &rp);
	return 0;
}

static void on_rejects(struct handler *h, uint32_t events)
{
	struct rejecter *rj = h->ctx;

	(void)events;
	ring_buffer__consume(rj->rb);
}

int bpf_rejects_open(struct bpf_backend *bb, struct diags *d)
{
	static const int af[S_COUNT] = { AF_INET, AF_INET6, AF_INET, AF_INET6 };
	static const int proto[S_COUNT] = { IPPROTO_RAW, IPPROTO_RAW, IPPROTO_ICMP, IPPROTO_ICMPV6 };
	struct rejecter *rj = calloc(1, sizeof(*rj));
	int r;

	if (!rj)
		return diag_errno(d, -ENOMEM, "rejects");
	bb->rejecter = rj;
	for (int i = 0; i < S_COUNT; i++)
		rj->fd[i] = -1;
	for (int i = 0; i < S_COUNT; i++)
		if ((rj->fd[i] = raw_socket(af[i], proto[i])) < 0)
			return diag_errno(d, rj->fd[i], "cannot open a raw socket to answer rejected packets");
	rj->rb = ring_buffer__new(engine_rejects_fd(bb->e), on_reject, rj, NULL);
	if (!rj->rb)
		return diag_errno(d, -errno, "cannot open the reject ring buffer");
	rj->h = (struct handler){ .fd = ring_buffer__epoll_fd(rj->rb), .fn = on_rejects, .ctx = rj };
	if ((r = loop_watch(bb->b.env->loop, &rj->h)) < 0)
		return diag_errno(d, r, "epoll");
	return 0;
}

void bpf_rejects_counts(const struct bpf_backend *bb, uint64_t *sent, uint64_t *send_failed, uint64_t *unanswerable)
{
	const struct rejecter *rj = bb->rejecter;

	*sent = rj ? rj->sent : 0;
	*send_failed = rj ? rj->send_failed : 0;
	*unanswerable = rj ? rj->unanswerable : 0;
}

void bpf_rejects_zero(struct bpf_backend *bb)
{
	if (bb->rejecter)
		bb->rejecter->sent = bb->rejecter->send_failed = bb->rejecter->unanswerable = 0;
}

void bpf_rejects_close(struct bpf_backend *bb)
{
	struct rejecter *rj = bb->rejecter;

	if (!rj)
		return;
	ring_buffer__free(rj->rb);
	for (int i = 0; i < S_COUNT; i++)
		if (rj->fd[i] >= 0)
			close(rj->fd[i]);
	free(rj);
	bb->rejecter = NULL;
}
