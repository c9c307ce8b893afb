/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the BPF backend: its state, shared by its files. */
#ifndef NFBOX_BACKEND_BPF_BPF_H
#define NFBOX_BACKEND_BPF_BPF_H

#include <stddef.h>

#include "backend/backend.h"
#include "backend/bpf/compile/plan.h"
#include "backend/bpf/engine/engine.h"
#include "backend/bpf/engine/slots.h"

struct ring_buffer;
struct rejecter;
struct early;
struct ctev;
struct conns_walk;
struct sched_prune;

struct bpf_backend {
	struct backend b;
	struct engine *e;	 /* NULL until started (a kernel without netfilter BPF: never) */
	struct slot_table slots; /* each rule's counter slot, kept across reloads */
	bool fresh_done;	 /* --fresh is for the first start only */
	bool dyn_synced;	 /* the tries hold the store's entries (kept so while in force) */
	struct ring_buffer *rb;	 /* verdict events (events.c) */
	struct handler events_h;
	uint64_t log_dropped_seen; /* NFB_CNT_LOG_DROPPED already told to the sink */
	struct rejecter *rejecter; /* rejects.c */
	struct early *early;	   /* rules with early: true at XDP (early/), NULL until a policy has one */
	/* conns.c: connection limits' counts given back */
	struct ctev *ct; /* conntrack's events, while the policy has connection limits */
	struct handler ct_h;
	bool conns_verify_all;		    /* ask about every counted connection on the next pass */
	bool conns_walking, conns_pass_all; /* a sweep under way (over several ticks), and of all */
	uint64_t conns_pass_ns;		    /* when the last pass began (CLOCK_MONOTONIC) */
	bool conns_adopted;		    /* adopted pins: counts not followed yet (bpf_conns_follow) */
	uint64_t overload_after_ns;	    /* overload reports from before (CLOCK_MONOTONIC) not acted on */
	struct conns_walk *walk;	    /* the sweep's place and its batch of connections */
	uint64_t conns_released, conns_release_failed, conns_events_lost;
	uint64_t sched_full_told;    /* nfb_sched_full's count when last logged (conns.c) */
	uint64_t sched_full_told_ns; /* and when (CLOCK_MONOTONIC); 0: never */
	struct sched_prune *prune;   /* entries of connections that ended pruned (conns.c) */
	uint64_t sched_pruned;	     /* how many since the start */
	bool tracing;		     /* a live trace runs (events.c) */
};

static inline struct bpf_backend *bpf_of(struct backend *b)
{
	return (struct bpf_backend *)((char *)b - offsetof(struct bpf_backend, b));
}

static inline const struct bpf_backend *bpf_of_const(const struct backend *b)
{
	return (const struct bpf_backend *)((const char *)b - offsetof(struct bpf_backend, b));
}

/* events.c: verdict events from the classifier's ring buffer to the sink;
 * once a second, the events the ring had no room for. */
int bpf_events_open(struct bpf_backend *bb, struct diags *d);
void bpf_events_close(struct bpf_backend *bb);
void bpf_events_tick(struct bpf_backend *bb);
/* ... and the live trace's (NFB_ACT_TRACED), from its filter in nfb_trace. */
int bpf_trace_start(struct backend *b, const struct loaded *cur, const struct trace_filter *f, struct diags *d);
void bpf_trace_stop(struct backend *b);

/* rejects.c: the classifier hands each rejected packet's head over
 * (nfb_rejects), the backend answers it with a TCP reset or an ICMP error,
 * marked NFB_REPLY_MARK. Counts: replies sent, refused by the kernel, and
 * rejected packets no reply may answer (an ICMP error, a broadcast). */
int bpf_rejects_open(struct bpf_backend *bb, struct diags *d);
void bpf_rejects_close(struct bpf_backend *bb);
void bpf_rejects_counts(const struct bpf_backend *bb, uint64_t *sent, uint64_t *send_failed, uint64_t *unanswerable);
void bpf_rejects_zero(struct bpf_backend *bb);

/* conns.c: the connections counted by connection limits, given back when
 * conntrack forgets them or TCP closes them; follow the policy in force
 * (listening while it has connection limits; counts nobody followed are
 * unverified when it begins), sweep once a second. bpf_conns_adopted():
 * the engine adopted pinned counts, and overload reports from before they
 * are unverified are not acted on (bpf_conns_overload_ok). */
void bpf_conns_adopted(struct bpf_backend *bb);
void bpf_conns_follow(struct bpf_backend *bb, const struct policy *p);
bool bpf_conns_overload_ok(const struct bpf_backend *bb, uint64_t ts_ns);
void bpf_conns_tick(struct bpf_backend *bb);
void bpf_conns_close(struct bpf_backend *bb);
/* The connections the classifier kept for a scheduled rule's cut id
 * (nfb_sched_conns) deleted from conntrack and from the map (backend_ops
 * cut). */
int bpf_sched_cut(struct backend *b, uint16_t id, void (*fn)(const struct ct_tuple *t, void *arg), void *arg,
		  struct diags *d);
/* Once a second: a warning when scheduled rules' connections were not
 * recorded (nfb_sched_full grew), then at most once an hour. */
void bpf_sched_full_tick(struct bpf_backend *bb);
/* At every tick: nfb_sched_conns pruned of the connections conntrack no
 * longer has (or has as TCP closed), a bounded chunk at a time (conns.c). */
void bpf_sched_prune_tick(struct bpf_backend *bb);
void bpf_sched_prune_close(struct bpf_backend *bb);

/* dyn.c: the dynamic sets in the classifier's tries. */
int bpf_dyn_apply(struct backend *b, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		  struct diags *d);
void bpf_dyn_undo(struct backend *b, const struct dyn_set *set, const struct dyn_undo *u);
void bpf_dyn_resync(struct backend *b);
void bpf_dyn_expired(struct backend *b, const struct dyn_set *set, int fam, const struct dyn_entry *e);
void bpf_dyn_after_reload(struct backend *b, bool gone);
int bpf_dyn_read_back(struct backend *b, char **text, size_t *len, uint64_t *n, struct diags *d);
int bpf_dyn_walk_begin(struct backend *b, void **walker);
int bpf_dyn_walk(void *walker, void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg), void *arg);
void bpf_dyn_walk_end(void *walker);

#endif
