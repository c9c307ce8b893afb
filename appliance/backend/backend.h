/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A backend enforces a policy in the kernel: the BPF classifier (bpf/, with
 * table inet nfbox for conntrack and NAT) or nftables alone (nftables/).
 * Each keeps its own state behind struct backend and is reached only
 * through struct backend_ops; what it needs of the daemon comes in struct
 * backend_env. Each compiles a policy into its own form (compile) and
 * keeps it (struct loaded's own); nothing of one backend is seen outside
 * its folder. The daemon opens every backend of the table (backends.def)
 * at start (the BPF one adopts what a daemon before it pinned), decides
 * which one enforces a policy in one place (the policy's backend:), and
 * calls the others only to let it go. A third backend is its folder, which
 * fills in these operations, one line in backends.def, and its name in
 * the policy's backend: option (policy.h).
 */
#ifndef NFBOX_BACKEND_H
#define NFBOX_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"
#include "dynset/dynset.h"
#include "dynset/verify.h"
#include "policy/policy.h"
#include "report/tree.h"
#include "system/loop.h"

struct ct_tuple; /* netlink/ctevents.h */

/* A policy made ready for its backend (reload.c): read and checked, then
 * compiled by that backend (compile) into what it alone reads (own). */
struct loaded {
	char *path;
	struct policy *pol;
	void *own; /* the policy's backend's; NULL: it keeps nothing */
};

/* A counter: packets and bytes. */
struct backend_counter {
	uint64_t packets, bytes;
};

/* A verdict event, from either backend, as `nfbox log` shows it. */
struct vevent {
	double ts;
	const char *hook, *rule, *action;
	int af;
	uint8_t proto;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t len, ifin, ifout;
};

/* A live trace's filter (`nfbox trace --live`): what a packet must be to be
 * traced; each part not given matches any packet. */
struct trace_filter {
	int af;			  /* AF_INET, AF_INET6; 0 either */
	char ifin[16];		  /* the input interface's name; "" any */
	uint32_t ifindex;	  /* ... its index now (the BPF classifier's key) */
	uint8_t src[16], dst[16]; /* prefixes (af's) */
	uint8_t src_len, dst_len; /* 0: any */
	bool has_proto, has_port;
	uint8_t proto;
	uint16_t port;	/* destination port (has_port: packets with ports only) */
	uint32_t count; /* packets the daemon traces: the kernel may stop after as many */
};

/* Where a backend's verdict events go (the daemon's events.c). */
struct backend_sink {
	void (*verdict)(void *arg, const struct vevent *v);
	/* n events could not be delivered, and why */
	void (*missed)(void *arg, uint64_t n, const char *why);
	void *arg;
	/* A source over a limit with overload: (v->action "overload", after
	 * verdict() has logged it): the daemon adds it to the set. */
	void (*overload)(void *oarg, const struct vevent *v);
	void *oarg;
	/* A packet of the live trace (trace_start): the rule that decided it
	 * (v->rule) and that rule's counter as read after it (c, NULL when it
	 * could not be read). */
	void (*traced)(void *targ, const struct vevent *v, const struct backend_counter *c);
	void *targ;
};

/* table inet nfbox, which both backends write (the BPF one its conntrack
 * and NAT chains): 1 present, 0 absent, -1 not known yet. */
struct backend_table {
	int present;
};

/* What the daemon gives each backend; it outlives them. */
struct backend_env {
	struct loop *loop;
	const char *pin_dir;   /* "" with --no-pin */
	const char *state_dir; /* "" for none */
	uint64_t netns_cookie;
	bool fresh;		   /* --fresh: drop what was pinned instead of adopting it */
	const struct dynsets *dyn; /* the dynamic sets' store (dynset/part/): read only */
	struct backend_sink sink;
	struct backend_table *table;
};

/* One backend: its operations; its state follows in the implementation's
 * own struct (container_of). */
struct backend {
	const struct backend_ops *ops;
	const struct backend_env *env;
	bool in_force; /* the policy in force is this backend's */
};

/* The set of a dynamic-set entry the kernel holds, by the kernel's name for
 * it: the BPF tries' set id (name NULL), or the set's name (id 0). */
struct dyn_kref {
	uint16_t id;
	const char *name;
};

/* A row of `nfbox stats`: the daemon fills in which rule (hook, index and
 * names), the backend the counts. */
struct stats_row {
	const char *hook, *rule, *action;
	int h;	    /* enum policy_hook */
	uint32_t b; /* the rule's index in its hook's plan; its count there for the default */
	bool is_default;
	struct backend_counter c;
	const struct policy_limit *limit; /* the rule's limit:, NULL if none */
	uint64_t over_limit;		  /* packets over it, gone on to later rules */
	long long last_hit_ms;		  /* wall-clock ms of its last packet, 0: none yet */
	long long in_force_ms;		  /* wall-clock ms it came into force, as far as the daemon's record goes */
};

/* The backend's own counts of `nfbox stats`: the losses every backend
 * reports by these names (0 where its way of enforcing cannot lose so),
 * so that `stats --json` has the same keys whatever the backend. */
struct backend_stats {
	struct backend_counter established;
	uint64_t malformed;	/* dropped: headers or the L4 key cut short */
	uint64_t unreassembled; /* dropped: fragments the kernel did not reassemble (defrag on) */
	uint64_t log_ring_full, log_rate_limited;
	uint64_t reject_rate_limited; /* rejected, unanswered: over reject-rate */
	uint64_t reject_ring_full;    /* rejected, unanswered: the reject ring was full (bpf) */
	uint64_t reject_unanswerable; /* rejected, unanswered by the rules of ICMP (bpf) */
	uint64_t reject_send_failed;  /* rejected, the reply could not be sent (bpf) */
	uint64_t reject_replies;      /* replies sent by the daemon (bpf) */
	uint64_t conn_events_lost;    /* conntrack's event socket overran: every counted connection asked
					 about (connection limits, bpf) */
	uint64_t conn_release_failed; /* a count the kernel would not give back (bpf) */
	uint64_t sched_conns_full;    /* connections of scheduled rules not recorded, so not cut at the
					 edge: the classifier's nfb_sched_conns was full (bpf) */
};

struct backend_ops {
	const char *name;		    /* "bpf", "nftables": status, metrics */
	const char *holder;		    /* what holds its state in the kernel, in words */
	enum policy_backend policy_backend; /* the policies it enforces (backend:) */
	/* How much longer than the store's expiry the kernel keeps a dynamic
	 * set's entry (ms; the nftables backend's own timeouts). */
	int64_t dyn_margin_ms;

	/* ---- without a daemon: any thread, no state ---- */
	/* What it enforces of p, made (*own, freed by own_free; NULL: it
	 * keeps nothing): 0, or an error that says what does not fit and
	 * what to do (d). */
	int (*compile)(const struct policy *p, void **own, struct diags *d);
	void (*own_free)(void *own);
	/* What it would put in the kernel for p, made and thrown away, for any
	 * policy (`nfbox validate` runs every backend's): 0, or errors in d. */
	int (*check)(const struct policy *p, struct diags *d);
	/* Its plan of p as `nfbox plan` prints it (json: as JSON, where it has
	 * a JSON form). 0 or -errno explained in d. */
	int (*print)(const struct policy *p, bool json, FILE *f, struct diags *d);

	/* ---- every open backend ---- */
	/* Made with env (never fails but for memory); then started: attached
	 * to what the kernel holds (pins a daemon before left), which may
	 * fail (then enforce tries again). close frees; stop, at the end,
	 * leaves the kernel's state for the next daemon (keep) or removes it;
	 * discard removes what a start that failed made. */
	int (*open)(const struct backend_env *env, struct backend **out);
	int (*start)(struct backend *b, struct diags *d);
	void (*close)(struct backend *b);
	void (*stop)(struct backend *b, bool keep);
	void (*discard)(struct backend *b);
	/* The state a daemon before this one left was adopted. */
	bool (*adopted)(const struct backend *b);
	/* Before a reload puts nl in force, whichever backend it is for (the
	 * BPF one: its counters' slots, its dynamic sets' ids from the store);
	 * then commit (it is in force) or abort (cur stays). */
	int (*prepare)(struct backend *b, struct loaded *nl, struct diags *d);
	void (*commit)(struct backend *b, const struct loaded *nl);
	void (*abort)(struct backend *b, const struct loaded *cur);
	/* Once a round of the loop. */
	void (*tick)(struct backend *b);
	/* Its values into `nfbox status` (status: the tree's root; its keys
	 * are docs/report.md's, and metrics where they are series). */
	void (*status)(struct backend *b, struct rep *status);
	/* The dynamic sets' entries the kernel holds for it, when the saved
	 * file could not be read: *text in the saved file's format and *n
	 * entries; 1 found, 0 it holds none, -errno explained in d. */
	int (*dyn_read_back)(struct backend *b, char **text, size_t *len, uint64_t *n, struct diags *d);

	/* ---- the backend of the policy in force ---- */
	/* Enforce nl (cur: the policy in force, NULL if none; switching: it
	 * is another backend's, which stops enforcing only once this one
	 * does). On failure the policy in force stays. */
	int (*enforce)(struct backend *b, const struct loaded *cur, const struct loaded *nl, bool switching,
		       struct diags *d);
	/* In force now (after a reload, also one that failed) / no longer
	 * (another backend took over): its events followed / let go. */
	void (*in_force_now)(struct backend *b, const struct loaded *cur);
	void (*retire)(struct backend *b);
	/* What is enforced, in one line; what a reload did. */
	void (*status_line)(const struct backend *b, const struct loaded *cur, char *buf, size_t len);
	void (*summary)(const struct backend *b, const struct loaded *cur, const char *path, FILE *f);
	/* The counts of rows (one per rule and default of cur's plan) and the
	 * backend's own; zero: then set them to 0. */
	int (*stats)(struct backend *b, const struct loaded *cur, struct stats_row *rows, uint32_t n,
		     struct backend_stats *out, bool zero);
	/* Interfaces came or went. */
	void (*links_changed)(struct backend *b, const struct loaded *cur);
	/* The dynamic sets' entries in the kernel: n changes of set added (or
	 * deleted); a change undone (what it added goes, what it renewed or
	 * deleted comes back); the kernel made to hold the store again after
	 * the store changed by other means; an entry the store let expire; a
	 * reload's sets (gone: the reload dropped some). */
	int (*dyn_apply)(struct backend *b, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
			 struct diags *d);
	void (*dyn_undo)(struct backend *b, const struct dyn_set *set, const struct dyn_undo *u);
	void (*dyn_resync)(struct backend *b);
	void (*dyn_expired)(struct backend *b, const struct dyn_set *set, int fam, const struct dyn_entry *e);
	void (*dyn_after_reload)(struct backend *b, bool gone);
	/* The dynamic-set entries the kernel holds, as it holds them, read by
	 * a thread of the daemon's that compares them with a copy of its store
	 * (dynset/verify.h): dyn_walk_begin, in the loop, takes what a walk
	 * needs (*walker); dyn_walk, in the thread, touches nothing else and
	 * gives fn each entry (k->set NULL: fn resolves ref); dyn_walk_end, in
	 * the loop, frees it. 0 or -errno. */
	int (*dyn_walk_begin)(struct backend *b, void **walker);
	int (*dyn_walk)(void *walker, void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg),
			void *arg);
	void (*dyn_walk_end)(void *walker);
	/* The schedules (when:) of cur's rules: bit when.sched - 1 of words
	 * (SCHED_WORDS) set for each scheduled rule in force now
	 * (policy/schedule/schedule.h: sched_words). */
	int (*schedule)(struct backend *b, const struct loaded *cur, const uint64_t *words, struct diags *d);
	/* The connections a scheduled rule let in, known by its cut id
	 * (policy.h: when.cut), cut: their conntrack entries deleted (also
	 * those left by an earlier policy's rule of the same name); fn for
	 * each. How many, or -errno explained in d. */
	int (*cut)(struct backend *b, uint16_t id, void (*fn)(const struct ct_tuple *t, void *arg), void *arg,
		   struct diags *d);
	/* A live trace of the packets that match f, through what enforces cur:
	 * each goes to the sink's traced() until trace_stop, which takes the
	 * trace out of the kernel (also when none runs). One at a time; the
	 * verdicts are never changed. 0 or -errno explained in d. */
	int (*trace_start)(struct backend *b, const struct loaded *cur, const struct trace_filter *f, struct diags *d);
	void (*trace_stop)(struct backend *b);
};

/* The backends (backends.def; table.c): their ops, how many; the index
 * of a policy's (0, the first, when none fits); one by name (NULL: none). */
#define BACKEND(name) extern const struct backend_ops backend_##name##_ops;
#include "backend/backends.def"
#undef BACKEND
extern const struct backend_ops *const backend_table[];
extern const unsigned backend_count;
unsigned backend_index(const struct policy *p);
const struct backend_ops *backend_named(const char *name);

#endif
