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
#include "base/log.h"

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

/* The event as the sink takes it; the rule named by its counter slot. */
static struct vevent vevent_of(const struct bpf_backend *bb, const struct nfb_event *ev, uint8_t action)
{
	int hook;
	const char *rule = ev->rule == NFB_RULE_DEFAULT	      ? "(default)"
			   : ev->rule == NFB_RULE_ESTABLISHED ? "(established)"
							      : slots_rule_name(&bb->slots, ev->counter, &hook);
	struct vevent v = {
		.ts = wall_time_of(ev->ts_ns),
		.hook = ev->hook < NFB_HOOK_MAX ? policy_hook_name((enum policy_hook)ev->hook) : "?",
		.rule = rule ? rule : "?",
		.action = action == NFB_ACT_OVERLOAD ? "overload" : policy_action_name((enum policy_action)action),
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
	return v;
}

/* A packet of the live trace, with its rule's counter as it is now. */
static void on_traced(struct bpf_backend *bb, const struct nfb_event *ev)
{
	const struct backend_sink *sink = &bb->b.env->sink;
	struct vevent v = vevent_of(bb, ev, ev->action & (uint8_t)~NFB_ACT_TRACED);
	struct nfb_counter c;
	struct backend_counter bc;
	bool counted = engine_counter_read(bb->e, ev->counter, &c) == 0;

	if (!bb->tracing || !sink->traced)
		return; /* a trace that ended, or one a daemon before this one began */
	bc = (struct backend_counter){ .packets = c.packets, .bytes = c.bytes };
	sink->traced(sink->targ, &v, counted ? &bc : NULL);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct bpf_backend *bb = ctx;
	const struct backend_sink *sink = &bb->b.env->sink;
	const struct nfb_event *ev = data;
	struct vevent v;

	if (size < sizeof(*ev))
		return 0;
	if (ev->action & NFB_ACT_TRACED) {
		on_traced(bb, ev);
		return 0;
	}
	v = vevent_of(bb, ev, ev->action);
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

/* ---- the live trace (backend.h: trace_start, trace_stop) ---- */

int bpf_trace_start(struct backend *b, const struct loaded *cur, const struct trace_filter *f, struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	struct nfb_trace t = {
		.left = f->count,
		.ifin = f->ifindex,
		.family = f->af == AF_INET    ? NFB_FAM_IPV4
			  : f->af == AF_INET6 ? NFB_FAM_IPV6
					      : NFB_FAM_MAX,
		.flags = (f->has_proto ? NFB_TRACE_PROTO : 0) | (f->has_port ? NFB_TRACE_PORT : 0),
		.proto = f->proto,
		.src_len = f->src_len,
		.dst_len = f->dst_len,
		.dport = f->port,
	};
	int r;

	(void)cur;
	if (f->ifin[0] && !f->ifindex)
		return diag_fail(d, -ENODEV, "interface %s does not exist now", f->ifin);
	memcpy(t.saddr, f->src, sizeof(t.saddr));
	memcpy(t.daddr, f->dst, sizeof(t.daddr));
	bb->tracing = true;
	if ((r = engine_trace_set(bb->e, &t)) < 0) {
		bb->tracing = false;
		return diag_errno(d, r, "cannot write the classifier's trace filter");
	}
	return 0;
}

void bpf_trace_stop(struct backend *b)
{
	struct bpf_backend *bb = bpf_of(b);
	int r;

	bb->tracing = false;
	if (bb->e && (r = engine_trace_set(bb->e, NULL)) < 0)
		log_err("cannot clear the classifier's trace filter: %s", strerror(-r));
}
