/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the engine (engine.c, gen.c, links.c, dyn.c): its maps and its
 * state. */
#ifndef NFBOX_ENGINE_INT_H
#define NFBOX_ENGINE_INT_H

#include <errno.h>
#include <stdio.h>

#include "backend/bpf/engine/engine.h"

/* Written in nfb_ctl.abi: pinned state of another layout is not adopted.
 * 2: nfb_ctl carries the network namespace; one log-rate bucket for all CPUs.
 * 3: reject (nfb_rejects, the reject-rate bucket, reject_rate in nfb_gen_cfg).
 * 4: log_period and reject_period in nfb_gen_cfg (rates per minute, hour).
 * 5: rule limits (nfb_rule.limit, nfb_limits, nfb_limit_state, nfb_meter).
 * 6: a fourth port class, UDP-Lite (the port map's size).
 * 7: dynamic sets (nfb_rule.dyn, nfb_dyn4, nfb_dyn6); a counter's last hit.
 * 8: maps sized to the policy: counters and limit state per generation
 *    (nfb_counters, nfb_fixed), port pages, rule_base, nfb_meter an outer.
 * 9: address ranges (nfb_addr4, nfb_addr6 arrays, nfb_hook_cfg.range)
 *    instead of LPM tries; a vector's R[0] holds its top summary.
 * 11: connection limits (nfb_conns, nfb_conn_count, nfb_overload_seen, the
 *    pinned release program; nfb_limit_cfg.conns).
 * 13: adopted connection counts unverified (nfb_conn_val.since_ns markers);
 *    the pinned program nfbox_conns ("conns") instead of "release".
 * 14: the live trace (nfb_trace; NFB_ACT_TRACED events in nfb_events).
 *    Grown since without a new number (older programs of this layout ignore
 *    what was added, and the adopting daemon makes what is missing):
 *    nfb_sched_conns and nfb_rule.cut (in its padding), schedules that end;
 *    nfb_sched_full, the connections nfb_sched_conns had no room for. */
#define NFB_ABI_VERSION 14

enum engine_map {
	EM_CTL,
	EM_GEN,
	EM_ADDR4,
	EM_ADDR6,
	EM_IFACE,
	EM_PORT,
	EM_MISC,
	EM_RULES,
	EM_LIMITS,
	EM_BLOB,
	EM_COUNTERS,
	EM_METER,
	EM_CONNS,
	EM_CONN_COUNT,
	EM_FIXED,
	EM_EVENTS,
	EM_LOG_BUCKET,
	EM_REJECTS,
	EM_DYN4,
	EM_DYN6,
	EM_DYN_NAMES,
	EM_OVERLOAD_SEEN,
	EM_SCHED,
	EM_TRACE,
	EM_SCHED_CONNS, /* made at adoption when the pinned state lacks it (layout 14's first builds) */
	EM_SCHED_FULL,	/* (also) */
	EM_COUNT,
};

/* First outer (per-generation) map and how many there are. */
#define EM_FIRST_OUTER EM_ADDR4
#define EM_NUM_OUTER   (EM_CONN_COUNT - EM_ADDR4 + 1)

struct inner_shape {
	uint32_t type, key_size, value_size, max_entries, flags;
};

/* A generation's counters map (bpf/nfbox.h, "Counters"), mmap()ed. */
struct cnt_map {
	int fd; /* -1: none */
	struct nfb_counter *v;
	uint32_t cap;
};

struct engine {
	char *pin_dir;
	int prog_fd;
	int conns_fd; /* nfbox_conns */
	int map_fd[EM_COUNT];
	struct inner_shape shape[EM_NUM_OUTER];
	struct engine_link link[NFB_HOOK_MAX][NFB_FAM_MAX];
	bool adopted;
	uint32_t active_gen;
	uint64_t generation;
	uint64_t netns_cookie;
	int ncpus;	    /* possible CPUs: the counters map's CPU rows */
	struct cnt_map cnt; /* the active generation's counters */
	/* The generation flipped away from, until engine_settle() frees it;
	 * when its counters map is another, what the active map's carry row
	 * took of it (snap, by slot): reads add what it counted since. */
	bool retired;
	struct cnt_map old_cnt;
	struct nfb_counter *snap;
	/* upgrade.c: adopted, with another build's programs replaced by this
	 * one's; the state found pinned set aside (why, "" if not), and the
	 * states set aside that still enforce (their directories) */
	bool prog_replaced;
	char replaced[160];
	char **pred;
	uint32_t npred;
};

/* "ipv4" or "ipv6": the engine's family f is the policy's bit 1 << f. */
static inline const char *engine_fam_name(int fam)
{
	return policy_family_name((enum policy_family)(1 << fam));
}

/* PIN_DIR/SUB/NAME (PIN_DIR/NAME when sub is ""), or -ENAMETOOLONG. */
static inline int engine_path(char *buf, size_t len, const struct engine *e, const char *sub, const char *name)
{
	int n = snprintf(buf, len, "%s/%s%s%s", e->pin_dir, sub, *sub ? "/" : "", name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The links (links.c): where hook/fam's link is pinned; a link's flags,
 * priority and id read back; make the links match the plan (engine_load
 * calls it). */
int engine_link_path(char *buf, size_t len, const struct engine *e, int hook, int fam);
int engine_link_read_info(struct engine_link *l);
int engine_links_sync(struct engine *e, const struct plan *pl, struct diags *d);

/* mmap() of a counters map of cap slots per row, and its undoing (gen.c). */
int cnt_map_open(struct engine *e, int fd, uint32_t cap, struct cnt_map *out);
void cnt_map_close(struct engine *e, struct cnt_map *m);
/* A slot's total in m: its CPU rows and its carry row. */
void cnt_map_total(const struct engine *e, const struct cnt_map *m, uint32_t slot, struct nfb_counter *out);

/* The inner map in slot gen of outer em, as a new fd; -1 if none. */
int engine_inner_fd(const struct engine *e, int em, uint32_t gen);

/* The name of map em (engine.c). */
const char *engine_map_name(int em);
/* Hook/fam's link replaced by one of the program in e->prog_fd, with the
 * same defrag flag, without a gap (links.c). */
int engine_link_renew(struct engine *e, int hook, int fam, struct diags *d);

/* upgrade.c (engine.h, "Upgrades"). What the pinned control map says,
 * read before anything is adopted: abi 0 if it cannot be read (why). */
struct engine_probe {
	uint32_t abi;
	bool cookie_known;
	uint64_t cookie;
	char why[64];
};
void engine_probe(const struct engine *e, struct engine_probe *p);
/* The state pinned under the pin directory moved into PIN/old-TAG, where
 * it goes on enforcing (why: for the log and status). */
int engine_set_aside(struct engine *e, const char *tag, const char *why, struct diags *d);
/* e->pred: every state set aside under the pin directory. */
int engine_find_predecessors(struct engine *e);
struct nfbox_filter_bpf;
/* After adopting: the pinned programs made this build's if they are
 * another's (loaded against the adopted maps, linked without a gap), and
 * every link made to run the pinned classifier. */
int engine_programs_follow(struct engine *e, struct nfbox_filter_bpf *skel, struct diags *d);
/* PIN/build made to name e's programs as skel's build. */
int engine_build_record(struct engine *e, struct nfbox_filter_bpf *skel);

#endif
