/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The BPF backend's verdict events: the classifier's ring buffer
 * (nfb_events), each event named by its counter slot's rule, to the
 * daemon's sink (backend_env.sink). */
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "backend/bpf/bpf.h"

/* Event times are CLOCK_MONOTONIC (bpf_ktime_get_ns); shown as wall time. */
static double wall_time_of(uint64_t mono_ns)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return (double)real.tv_sec + real.tv_nsec / 1e9 -
	       ((double)mono.tv_sec + mono.tv_nsec / 1e9 - (double)mono_ns / 1e9);
}

/* The classifier's action codes are the policy's (bpf/nfbox.h). */
_Static_assert(NFB_ACT_DROP == (int)POLICY_DROP && NFB_ACT_ACCEPT == (int)POLICY_ACCEPT &&
		       NFB_ACT_REJECT == (int)POLICY_REJECT,
	       "NFB_ACT_* and POLICY_* differ");

static int on_event(void *ctx, void *data, size_t size)
{
	struct bpf_backend *bb = ctx;
	const struct backend_sink *sink = &bb->b.env->sink;
	const struct nfb_event *ev = data;
	const char *rule;
	struct vevent v;
	int hook;

	if (size < sizeof(*ev))
		return 0;
	rule = ev->rule == NFB_RULE_DEFAULT ? "(default)" : slots_rule_name(&bb->slots, ev->counter, &hook);
	v = (struct vevent){
		.ts = wall_time_of(ev->ts_ns),
		.hook = ev->hook < NFB_HOOK_MAX ? policy_hook_name((enum policy_hook)ev->hook) : "?",
		.rule = rule ? rule : "?",
		.action = ev->action == NFB_ACT_OVERLOAD ? "overload"
							 : policy_action_name((enum policy_action)ev->action),
		.af = ev->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6,
		.proto = ev->proto,
		.sport = ev->sport,
		.dport = ev->dport,
		.len = ev->len,
		.ifin = ev->ifin,
		.ifout = ev->ifout,
	};
	memcpy(v.src, ev->saddr, 16);
	memcpy(v.dst, ev->daddr, 16);
	sink->verdict(sink->arg, &v);
	/* One judged on adopted counts before they were set aside (while no
	 * daemon listened to conntrack, they may hold connections that ended)
	 * bans nobody: a source really over its limit is told again at its next
	 * attempt. */
	if (ev->action == NFB_ACT_OVERLOAD && sink->overload && bpf_conns_overload_ok(bb, ev->ts_ns))
		sink->overload(sink->oarg, &v);
	return 0;
}

static void on_ring(struct handler *h, uint32_t events)
{
	struct bpf_backend *bb = h->ctx;

	(void)events;
	ring_buffer__consume(bb->rb);
}

int bpf_events_open(struct bpf_backend *bb, struct diags *d)
{
	struct nfb_counter c;
	int r;

	if (bb->rb)
		return 0;
	bb->rb = ring_buffer__new(engine_events_fd(bb->e), on_event, bb, NULL);
	if (!bb->rb)
		return diag_errno(d, -errno, "cannot open the verdict event ring buffer");
	bb->events_h = (struct handler){ .fd = ring_buffer__epoll_fd(bb->rb), .fn = on_ring, .ctx = bb };
	if (engine_counter_read(bb->e, NFB_CNT_LOG_DROPPED, &c) == 0)
		bb->log_dropped_seen = c.packets; /* drops before this daemon are not news */
	if ((r = loop_watch(bb->b.env->loop, &bb->events_h)) < 0)
		return diag_errno(d, r, "epoll");
	return 0;
}

void bpf_events_close(struct bpf_backend *bb)
{
	ring_buffer__free(bb->rb);
	bb->rb = NULL;
}

void bpf_events_tick(struct bpf_backend *bb)
{
	const struct backend_sink *sink = &bb->b.env->sink;
	struct nfb_counter c;

	if (!bb->e || engine_counter_read(bb->e, NFB_CNT_LOG_DROPPED, &c) < 0 || c.packets <= bb->log_dropped_seen)
		return;
	sink->missed(sink->arg, c.packets - bb->log_dropped_seen, "the kernel's event ring was full");
	bb->log_dropped_seen = c.packets;
}
