/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The enforcement engine: the netfilter classifier, its maps and links.
 * Everything lives pinned under a pin directory, so that enforcement
 * survives the daemon (fail closed) and a new daemon adopts it.
 *
 *   PIN/prog                 the classifier program
 *   PIN/maps/NAME            every map of the program
 *   PIN/links/HOOK-FAMILY    one netfilter link per hook and family
 *   PIN/conns                the connection limits' program (BPF_PROG_TEST_RUN)
 *   PIN/build                which build's programs these are (struct engine_build)
 *   PIN/old-TAG/             a state set aside, still enforcing (below)
 *
 * Without a pin directory (nfbox run --no-pin) the same objects are held by
 * the process only.
 *
 * Upgrades (upgrade.c). A state of this layout (nfb_ctl.abi ==
 * NFB_ABI_VERSION) is adopted; if its programs are another build's (PIN/build
 * does not name them as this one's), this build's are loaded against the
 * adopted maps and attached beside the old links at spare priorities, then
 * the old links are detached: the policy, counters and dynamic sets stay.
 * A state of an older layout, one that cannot be read or adopted, or any
 * with --fresh, is set aside (moved into PIN/old-TAG, its links still
 * attached) and a fresh classifier is loaded; the backend retires what was
 * set aside (engine_retire_predecessors) once this classifier enforces the
 * policy with its dynamic sets. A state of a newer layout (a downgrade) is
 * neither adopted nor touched: engine_open fails and it goes on enforcing.
 */
#ifndef NFBOX_ENGINE_H
#define NFBOX_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/bpf/compile/plan.h"

/* One netfilter link of the classifier, as status shows it. */
struct engine_link {
	int fd; /* -1: none */
	bool defrag;
	int32_t priority;
	uint32_t id;
};

/* What the engine runs, for status and the daemon. */
struct engine_info {
	const char *pin_dir; /* NULL: nothing pinned; enforcement ends with the process */
	uint64_t netns_cookie;
	bool adopted;		/* found enforcing state pinned at start */
	bool programs_replaced; /* adopted, and its programs were another build's: this build's took their place */
	const char *replaced;	/* the state found pinned at start was set aside and replaced: why; NULL if not */
	uint32_t set_aside;	/* states set aside that still enforce (until engine_retire_predecessors) */
	uint32_t active_gen;	/* map set in force (0 or 1) */
	uint64_t generation;	/* policies loaded by this daemon */
	struct engine_link link[NFB_HOOK_MAX][NFB_FAM_MAX];
};

struct engine;

struct engine_opts {
	const char *pin_dir;   /* on a bpf filesystem that outlives the process (system/pins.h);
				  NULL: pin nothing, enforcement ends with the process */
	uint64_t netns_cookie; /* the namespace enforced: written into the pinned state, and
				  pinned state of another namespace is never adopted */
	bool fresh;	       /* set aside whatever is pinned instead of adopting it */
};

/* The classifier's planted bugs (bpf/nfbox.h, NFB_PLANT_*), for its rodata
 * nfb_plant: from NFBOX_TEST_PLANT in the test build, 0 in nfbox itself. */
uint32_t engine_plants(void);

/* Open the engine: adopt the pinned state under pin_dir if there is one
 * (enforcement continues without a gap), else load the program and pin it.
 * Returns 0 or -errno, explained in d; *out untouched on failure. */
int engine_open(const struct engine_opts *o, struct diags *d, struct engine **out);
/* Close fds; pins stay, so enforcement goes on. NULL is fine. */
void engine_close(struct engine *e);
/* Detach links and remove every pin: enforcement stops. States set aside
 * stay (engine_retire_predecessors). */
void engine_destroy_pins(struct engine *e);
/* The states set aside at open detached and removed: this engine enforces
 * in their place. NULL or none: nothing to do. */
void engine_retire_predecessors(struct engine *e);

/* Which build's programs are pinned: a pinned array of one. prog_id: the
 * programs' ids (the classifier and conns; the early drop's), hash: SHA-256
 * of the object's bytes and its load-time settings (engine_build_hash). A
 * record whose ids are not those of the pinned programs says nothing. */
struct engine_build {
	uint32_t prog_id[2];
	uint8_t hash[32];
};
void engine_build_hash(const void *elf, size_t elf_len, const void *rodata, size_t rodata_len, uint8_t out[32]);
/* 0 or -errno (-ENOENT: none). */
int engine_build_read(const char *path, struct engine_build *out);
int engine_build_pin(const char *path, const struct engine_build *b);
/* The BPF object fd pinned at path in place of what is there (pinned at
 * PATH-new, then renamed over it): path never lacks an object. */
int engine_pin_over(int fd, const char *path);

/* Per-rule counter slots assigned by the daemon for a plan. */
struct slot_map {
	uint32_t *rule_slot[NFB_HOOK_MAX]; /* by rule bit */
	uint32_t default_slot[NFB_HOOK_MAX];
	uint32_t established_slot;
	uint16_t *set_id; /* by index in the policy's sets: a dynamic set's id (nfb_rule.dyn), else 0 */
	uint32_t nsets;
};

/* What engine_load makes of a plan without the engine: the address and
 * port maps' contents (a policy of a million prefixes: most of a load's
 * work). Made beforehand in any thread (the daemon's reload thread), so
 * that the loop does not wait for it. 0 or -errno. */
struct engine_stage;
int engine_stage_make(const struct plan *pl, const struct plan_blob *blob, struct engine_stage **out);
void engine_stage_free(struct engine_stage *s);

/* Write the plan into the spare generation and flip to it, then attach
 * or re-attach links so that exactly the plan's hooks are enforced with
 * its defrag setting (stage: made by engine_stage_make from the same plan,
 * or NULL: made here). On failure the running generation is untouched.
 * Errors, and warnings (an interface that does not exist), go to d. */
int engine_load(struct engine *e, const struct plan *pl, const struct plan_blob *blob, const struct slot_map *slots,
		const struct engine_stage *stage, struct diags *d);

/* Free the generation the last engine_load() flipped away from: its maps
 * leave the outer maps (the kernel waits for one RCU grace period first,
 * about 12 ms here) and what it counted during the flip is carried over.
 * engine_load() and engine_close() call it; the daemon calls it once a
 * reload is answered. Nothing to do: returns at once. */
void engine_settle(struct engine *e);
/* Bytes of kernel memory the engine's maps hold (as the kernel accounts
 * them: memlock), both generations. */
int engine_memory(struct engine *e, uint64_t *bytes);
/* Schedules (bpf/nfbox.h): which of pl's scheduled rules are in force at
 * now (UTC seconds), as nfb_sched's words of a generation; and those words
 * written for the active generation. 0 or -errno. */
void plan_sched_words(const struct plan *pl, int64_t now, uint64_t *words);
int engine_sched_set(struct engine *e, const uint64_t *words);

/* Detach every link (the nftables backend filters instead): the program and
 * maps stay, pinned. NULL is fine. */
void engine_unhook(struct engine *e);
/* Whether any link is attached. */
bool engine_hooked(const struct engine *e);

/* Resolve the plan's interface names again and update the generation in
 * force in place: an interface that appeared (or came back with another
 * ifindex, or was renamed to a name the policy uses) is matched from now on,
 * one that is gone no longer. pl and b are the plan in force. 0 or -errno;
 * -E2BIG when the interfaces there now need more than NFB_IFACE_MAX_ENTRIES
 * entries (*need: how many): those that did not fit match only the rules
 * that exclude them. */
int engine_ifaces_refresh(struct engine *e, const struct plan *pl, const struct plan_blob *b, uint32_t *need);

/* NULL (no engine: the nftables backend on a kernel without netfilter BPF
 * links) gives an empty info, every link -1. */
void engine_get_info(const struct engine *e, struct engine_info *out);
/* Delete every key of map fd (keys of key_size <= 64 bytes) for which
 * drop(key, arg) says so: keys collected first, then deleted. How many
 * went, or -ENOMEM. (gen.c) */
int engine_delete_keys(int fd, size_t key_size, bool (*drop)(const void *key, void *arg), void *arg);

/* The fd of the engine's map called name (nfb_ctl, nfb_counters, ...: the
 * ones the early-drop program shares, bpf/nfbox_shared.bpf.h), or
 * -ENOENT. The engine keeps it open. */
int engine_map_fd(const struct engine *e, const char *name);
/* The verdict-event ring buffer map; the classifier program (tests, bench). */
int engine_events_fd(const struct engine *e);
/* The ring buffer of rejected packets' heads (struct nfb_reject). */
int engine_rejects_fd(const struct engine *e);
int engine_prog_fd(const struct engine *e);
/* The connections counted by connection limits (nfb_conns of the active
 * generation), as a new fd (the caller closes it); -1 if it has none. */
int engine_conns_fd(const struct engine *e);
/* A request about the counts of connection limits (bpf/nfbox.h,
 * "Connection limits", enum nfb_conns_verb) about connection k (NULL for
 * NFB_CONNS_DISTRUST): the verb's answer, or -errno. */
int engine_conns_op(const struct engine *e, uint32_t verb, const struct nfb_conn_key *k);

/* The live trace (bpf/nfbox.h, struct nfb_trace); NULL: none. 0 or -errno. */
int engine_trace_set(struct engine *e, const struct nfb_trace *t);
/* -ENODEV for a NULL engine (*out zeroed). */
int engine_counter_read(struct engine *e, uint32_t slot, struct nfb_counter *out);
/* The connections of scheduled rules that nfb_sched_conns had no room for
 * (bpf/nfbox.h, nfb_sched_full: packets are connections), and with entries
 * the map's size; _reset: back to 0 (`nfbox stats --zero`). 0 or -errno. */
int engine_sched_full_read(struct engine *e, struct nfb_counter *out, uint32_t *entries);
int engine_sched_full_reset(struct engine *e);
/* A slot for a new rule: its counters and any limit state a rule before
 * left there. (engine_counter_zero and _reset first engine_settle().) */
int engine_counter_zero(struct engine *e, uint32_t slot);
/* `nfbox stats --zero`: the slot's counters and over-limit count to 0; a
 * limit's bucket stays as it is. */
int engine_counter_reset(struct engine *e, uint32_t slot);
/* Packets over the limit of the rule with counter slot `slot` (a rule with
 * limit:), that went on to later rules. */
int engine_limit_over(struct engine *e, uint32_t slot, uint64_t *over);

/* Dynamic sets' entries (bpf/nfbox.h, "Dynamic sets"): fam 0 IPv4, 1 IPv6;
 * expires: CLOCK_REALTIME ms, 0 never. 0 or -errno (delete: -ENOENT if it
 * was not there). */
int engine_dyn_put(struct engine *e, uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires);
int engine_dyn_del(struct engine *e, uint16_t set, int fam, const uint8_t *addr, uint8_t plen);
/* The name of dynamic set id ("" or NULL: no set has the id), kept with
 * the tries; engine_dyn_name_get reads it back ("" if none). */
int engine_dyn_name_set(struct engine *e, uint16_t id, const char *name);
int engine_dyn_name_get(struct engine *e, uint16_t id, char *buf, size_t len);
/* Every entry of the tries not expired yet, with its expiry as
 * CLOCK_REALTIME milliseconds (0: never). 0, or -errno. */
int engine_dyn_walk(struct engine *e,
		    void (*fn)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms, void *arg),
		    void *arg);
/* The same over the tries' fds fds[0] (IPv4) and fds[1] (IPv6), from
 * engine_dyn_fds (their own copies: a walk in another thread). */
int engine_dyn_walk_fds(const int fds[2],
			void (*fn)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms,
				   void *arg),
			void *arg);
int engine_dyn_fds(struct engine *e, int fds[2]);
/* Delete every entry for which keep() says false (pinned entries a new
 * daemon does not know). Returns how many went, or -errno. */
int engine_dyn_prune(struct engine *e,
		     bool (*keep)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, void *arg), void *arg);

#endif
