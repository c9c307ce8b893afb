/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A backend enforces a policy in the kernel: the BPF classifier (bpf/, with
 * table inet nfbox for conntrack and NAT) or nftables alone (nftables/).
 * Each keeps its own state behind struct backend and is reached only
 * through struct backend_ops; what it needs of the daemon comes in struct
 * backend_env. The daemon opens both at start (the BPF one adopts what a
 * daemon before it pinned), decides which one enforces a policy in one
 * place, and calls the other only to let it go. A third backend is one
 * more folder here that fills in these operations.
 */
#ifndef NFBOX_BACKEND_H
#define NFBOX_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/bpf/compile/plan.h"
#include "backend/bpf/engine/engine.h"
#include "backend/bpf/engine/slots.h"
#include "base/diag.h"
#include "dynset/dynset.h"
#include "dynset/verify.h"
#include "policy/policy.h"
#include "system/loop.h"

/* A policy made ready for a backend: read, compiled and encoded, its
 * counters given slots (reload.c). */
struct loaded {
	char *path;
	struct policy *pol;
	struct plan *plan;
	struct plan_blob blob;
	struct slot_map slots;
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
	const struct dynsets *dyn; /* the dynamic sets' store (dynsets.c): read only */
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

/* What `nfbox status` shows of the backends. */
struct backend_status {
	struct engine_info engine; /* the BPF engine: generation, links, adoption */
	uint64_t bpf_memory;	   /* bytes its maps hold (0: no engine) */
	char early_ifaces[256];	   /* interfaces the early drop at XDP is attached to: "wan0, wan1" */
	uint32_t early_ifaces_n;
	int nft_table;	/* as struct backend_table */
	bool nft_owned; /* owned by the daemon (NFT_TABLE_F_OWNER, PERSIST) */
};

/* A row of `nfbox stats`: the daemon fills in which rule (hook, index and
 * names), the backend the counts. */
struct stats_row {
	const char *hook, *rule, *action;
	int h;	    /* enum policy_hook */
	uint32_t b; /* the rule's index in its hook's plan; its count there for the default */
	bool is_default;
	struct nfb_counter c;
	const struct policy_limit *limit; /* the rule's limit:, NULL if none */
	uint64_t over_limit;		  /* packets over it, gone on to later rules */
	long long last_hit_ms;		  /* wall-clock ms of its last packet, 0: none yet */
	long long in_force_ms;		  /* wall-clock ms it came into force, as far as the daemon's record goes */
};

/* The backend's own counts of `nfbox stats`. */
struct backend_stats {
	struct nfb_counter established;
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
};

struct backend_ops {
	const char *name;   /* "bpf", "nftables": status, metrics */
	const char *holder; /* what holds its state in the kernel, in words */
	/* How much longer than the store's expiry the kernel keeps a dynamic
	 * set's entry (ms; the nftables backend's own timeouts). */
	int64_t dyn_margin_ms;

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
	/* Before a reload puts nl in force, whichever backend it is for: its
	 * counters' slots (nl->slots); then commit (it is in force) or abort
	 * (cur stays). */
	int (*prepare)(struct backend *b, struct loaded *nl, struct diags *d);
	void (*commit)(struct backend *b, const struct loaded *nl);
	void (*abort)(struct backend *b, const struct loaded *cur);
	/* Once a round of the loop. */
	void (*tick)(struct backend *b);
	void (*status)(struct backend *b, struct backend_status *out);
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
	 * set for each scheduled rule in force now (plan_sched_words). */
	int (*schedule)(struct backend *b, const struct loaded *cur, const uint64_t *words, struct diags *d);
};

/* The two backends (bpf/backend.c, nftables/backend.c). */
extern const struct backend_ops backend_bpf_ops, backend_nftables_ops;

#endif
