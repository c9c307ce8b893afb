/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF backend (backend.h): the classifier in its netfilter links
 * (engine/), and table inet nfbox for what BPF cannot do (the conntrack
 * anchor, NAT), put in place by the nftables backend's table.c. It owns
 * the engine, the counter slots (kept in the state directory, so that a
 * daemon that adopts the pins gives each rule its counters back), the
 * verdict events (events.c), the reject replies (rejects.c) and the
 * dynamic sets' tries (dyn.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/bpf/bpf.h"
#include "backend/bpf/early/early.h"
#include "backend/nftables/table.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "policy/schedule/schedule.h"
#include "system/files.h"

/* ---- opening, adopting, closing ---- */

static int bpf_open(const struct backend_env *env, struct backend **out)
{
	struct bpf_backend *bb = calloc(1, sizeof(*bb));

	if (!bb)
		return -ENOMEM;
	bb->b = (struct backend){ .ops = &backend_bpf_ops, .env = env };
	if (slots_init(&bb->slots) < 0) {
		free(bb);
		return -ENOMEM;
	}
	*out = &bb->b;
	return 0;
}

static int slots_path(const struct bpf_backend *bb, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/slots", bb->b.env->state_dir);

	return bb->b.env->state_dir[0] && n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* The counter slots' names, after every load (STATE/slots). */
static void save_slots(const struct bpf_backend *bb)
{
	_cleanup_free_ char *buf = NULL;
	char path[PATH_MAX];
	size_t len = 0;
	FILE *f;
	int r = -ENOMEM;

	if (!bb->b.env->state_dir[0] || slots_path(bb, path, sizeof(path)) < 0)
		return;
	if ((f = open_memstream(&buf, &len))) {
		slots_save(&bb->slots, f);
		r = fclose(f) == 0 ? files_write_atomic(path, buf, len, 0600, FILES_SYNC) : -ENOMEM;
	}
	if (r < 0)
		log_warn("cannot save the counters' names in %s (a restart would start them from 0): %s",
			 bb->b.env->state_dir, strerror(-r));
}

/* An adopted classifier's rules get their counter slots back. */
static void load_slots(struct bpf_backend *bb)
{
	char path[PATH_MAX];
	unsigned n = 0;
	FILE *f;

	if (slots_path(bb, path, sizeof(path)) < 0 || !(f = fopen(path, "re")))
		return;
	if (slots_load(&bb->slots, f) < 0)
		log_warn("%s is not readable as counter names; the counters of the adopted policy start from 0", path);
	fclose(f);
	for (uint32_t s = 0; s < NFB_MAX_COUNTERS; s++)
		n += bb->slots.name[s] != NULL;
	if (n)
		log_info("the counters of %u rules go on from the adopted state", n);
}

/* A daemon before this one left an early drop at XDP pinned. */
static bool early_pinned(const struct bpf_backend *bb)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/early/nfb_early_cfg", bb->b.env->pin_dir);

	return bb->b.env->pin_dir[0] && n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) == 0;
}

/* The early drop at XDP detached everywhere and its pins removed. */
static void early_remove(struct bpf_backend *bb)
{
	if (!bb->early)
		return;
	early_destroy(bb->early);
	early_close(bb->early);
	bb->early = NULL;
}

/* An early drop a daemon before left, adopted; a failure is said in the
 * log, not in d (the start goes on: the hook still drops). */
static void early_adopt(struct bpf_backend *bb)
{
	struct diags ed;

	diags_init(&ed);
	if (early_open(bb->e, bb->b.env->pin_dir, &bb->early, &ed) < 0)
		log_warn("early: the XDP early drop a daemon before left cannot be adopted: %s", diags_last(&ed, ""));
	diags_free(&ed);
}

/* The early drop a daemon before left, when its classifier was not adopted
 * (set aside: another layout, --fresh): it shares that classifier's maps,
 * so it is detached and unpinned. The hooks drop the early rules' packets
 * until the policy attaches this build's (policy/README.md, "Early drop at
 * XDP": a moment without XDP is slower, not open). */
static void early_drop_pinned(struct bpf_backend *bb)
{
	early_adopt(bb);
	if (!bb->early)
		return;
	early_remove(bb);
	log_info("early: the XDP early drop of the state set aside is removed; the policy attaches this build's");
}

/* The engine, adopting what is pinned (or setting it aside to replace it:
 * another layout, --fresh), and its rings. */
static int bpf_start(struct backend *b, struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	const struct backend_env *env = b->env;
	struct engine_opts eo = { .pin_dir = env->pin_dir[0] ? env->pin_dir : NULL,
				  .netns_cookie = env->netns_cookie,
				  .fresh = env->fresh && !bb->fresh_done };
	struct engine_info info;
	int r;

	if (bb->e)
		return 0;
	bb->fresh_done = true; /* --fresh sets aside what the daemon before left, not what this one made */
	if ((r = engine_open(&eo, d, &bb->e)) < 0)
		return r;
	engine_get_info(bb->e, &info);
	if (info.adopted)
		log_info("adopted the enforcing state pinned in %s (map set %u in force)", env->pin_dir,
			 info.active_gen);
	if (!eo.pin_dir)
		log_warn("--no-pin: nothing is pinned; if nfbox stops or dies, enforcement ends with it");
	if ((r = bpf_events_open(bb, d)) < 0 || (r = bpf_rejects_open(bb, d)) < 0) {
		bpf_events_close(bb);
		bpf_rejects_close(bb);
		engine_close(bb->e);
		bb->e = NULL;
		return r;
	}
	bpf_trace_stop(b); /* a trace a daemon before this one left running */
	if (info.adopted) {
		load_slots(bb);
		bpf_conns_adopted(bb);
	}
	if (early_pinned(bb)) {
		if (info.adopted)
			early_adopt(bb);
		else
			early_drop_pinned(bb);
	}
	return 0;
}

static void bpf_close(struct backend *b)
{
	struct bpf_backend *bb;

	if (!b)
		return;
	bb = bpf_of(b);
	early_close(bb->early);
	bpf_conns_close(bb);
	bpf_sched_prune_close(bb);
	bpf_events_close(bb);
	bpf_rejects_close(bb);
	engine_close(bb->e);
	slots_free(&bb->slots);
	free(bb);
}

/* The pins hold the links and maps for the next daemon (keep), or go. */
static void bpf_stop(struct backend *b, bool keep)
{
	struct bpf_backend *bb = bpf_of(b);
	struct engine_info info;

	if (!keep) {
		early_remove(bb);
		engine_retire_predecessors(bb->e);
		if (bb->e)
			engine_destroy_pins(bb->e);
		return;
	}
	engine_get_info(bb->e, &info);
	log_info("stopped; the policy stays enforced (generation %llu pinned in %s, table inet %s) for the next nfbox "
		 "run to adopt",
		 (unsigned long long)info.generation, b->env->pin_dir, NFT_TABLE_NAME);
}

/* What this start made goes; a state it set aside stays, enforcing. */
static void bpf_discard(struct backend *b)
{
	struct bpf_backend *bb = bpf_of(b);

	early_remove(bb);
	if (bb->e)
		engine_destroy_pins(bb->e);
}

static bool bpf_adopted(const struct backend *b)
{
	struct engine_info info;

	engine_get_info(bpf_of_const(b)->e, &info);
	return info.adopted;
}

/* ---- a policy compiled: the plan, its encoding, its counters' slots ---- */

/* What this backend makes of a policy (struct loaded's own). */
struct bpf_own {
	struct plan *plan;
	struct plan_blob blob;
	struct engine_stage *stage; /* the maps' contents that need no engine, made in the compile's thread */
	struct slot_map slots;
};

static const struct bpf_own *own_of(const struct loaded *l)
{
	return l ? l->own : NULL;
}

static void bpf_own_free(void *own)
{
	struct bpf_own *o = own;

	if (!o)
		return;
	slot_map_free(&o->slots);
	engine_stage_free(o->stage);
	plan_blob_free(&o->blob);
	plan_free(o->plan);
	free(o);
}

static int bpf_compile(const struct policy *p, void **own, struct diags *d)
{
	struct bpf_own *o = calloc(1, sizeof(*o));
	int r;

	*own = NULL;
	if (!o)
		return diag_errno(d, -ENOMEM, "compile");
	if ((r = plan_make(p, &o->plan, &o->blob, d)) < 0) {
		bpf_own_free(o);
		return r;
	}
	if ((r = engine_stage_make(o->plan, &o->blob, &o->stage)) < 0) {
		bpf_own_free(o);
		return diag_errno(d, r, "the new policy's port and address maps");
	}
	*own = o;
	return 0;
}

static int bpf_check(const struct policy *p, struct diags *d)
{
	struct plan *pl = NULL;
	int r = plan_make(p, &pl, NULL, d);

	plan_free(pl);
	return r;
}

static int bpf_print(const struct policy *p, bool json, FILE *f, struct diags *d)
{
	struct plan *pl = NULL;
	int r = plan_make(p, &pl, NULL, d);

	if (r == 0 && json)
		plan_print_json(pl, f);
	else if (r == 0)
		plan_print(pl, f);
	plan_free(pl);
	return r;
}

/* ---- every reload: the counter slots, the dynamic sets' ids ---- */

static int bpf_prepare(struct backend *b, struct loaded *nl, struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	struct bpf_own *o = nl->own;
	const struct policy *p = nl->pol;
	int r;

	if (!o) /* another backend's policy */
		return 0;
	if ((r = slots_assign(&bb->slots, bb->e, o->plan, &o->slots)) < 0)
		return diag_errno(d, r, "cannot assign counters");
	/* the tries key a dynamic set's entries by the store's id for it */
	if (!p->nsets)
		return 0;
	if (!(o->slots.set_id = calloc(p->nsets, sizeof(*o->slots.set_id))))
		return diag_errno(d, -ENOMEM, "dynamic sets");
	o->slots.nsets = p->nsets;
	for (uint32_t i = 0; i < p->nsets; i++) {
		const struct dyn_set *s = p->sets[i].dynamic ? dynsets_get(b->env->dyn, p->sets[i].name) : NULL;

		o->slots.set_id[i] = s ? s->id : 0;
	}
	return 0;
}

static void bpf_commit(struct backend *b, const struct loaded *nl)
{
	struct bpf_backend *bb = bpf_of(b);
	const struct bpf_own *o = own_of(nl);

	if (!o)
		return;
	slots_commit(&bb->slots, &o->slots, o->plan);
	save_slots(bb);
}

static void bpf_abort(struct backend *b, const struct loaded *cur)
{
	const struct bpf_own *o = own_of(cur);

	slots_abort(&bpf_of(b)->slots, o ? &o->slots : NULL, o ? o->plan : NULL);
}

static void bpf_tick(struct backend *b)
{
	struct bpf_backend *bb = bpf_of(b);

	bpf_events_tick(bb);
	bpf_conns_tick(bb);
	bpf_sched_full_tick(bb);
	bpf_sched_prune_tick(bb);
	engine_settle(bb->e); /* a reload is answered: free the policy it replaced */
}

static void links_text(const struct rep *o, FILE *f)
{
	if (!rep_count(o)) {
		fprintf(f, "links:      none (no BPF classifier attached)\n");
		return;
	}
	fprintf(f, "links:\n");
	for (const struct rep *l = rep_first(o); l; l = rep_next(l))
		fprintf(f, "  %-8s %-5s link %llu, priority %lld%s\n", rep_s(l, "hook"), rep_s(l, "family"),
			(unsigned long long)rep_u(l, "id"), (long long)rep_i(l, "priority"),
			rep_b(l, "defrag") ? ", defrag" : "");
}

static const struct rep_metric m_generation = { "nfbox_generation", "gauge",
						"Policies this daemon has loaded into the BPF engine.", NULL };
static const struct rep_metric m_bpf_memory = { "nfbox_bpf_memory_bytes", "gauge",
						"Kernel memory the classifier's BPF maps hold.", NULL };

/* The engine: its generation, memory, what the start found pinned, the
 * early drop's interfaces, the connections of scheduled rules it had no
 * room to record, the links. */
static void bpf_status(struct backend *b, struct rep *status)
{
	struct bpf_backend *bb = bpf_of(b);
	struct nfb_counter full;
	struct engine_info e;
	uint64_t memory = 0;
	char early[256];
	struct rep *l;

	engine_get_info(bb->e, &e);
	if (bb->e)
		engine_memory(bb->e, &memory);
	early_ifaces(bb->early, early, sizeof(early));
	rep_metric(rep_uint(status, "generation", e.generation), &m_generation);
	rep_uint(status, "active_gen", e.active_gen);
	rep_metric(rep_uint(status, "bpf_memory_bytes", memory), &m_bpf_memory);
	rep_str(status, "early_xdp", early);
	rep_bool(status, "adopted", e.adopted);
	rep_bool(status, "programs_replaced", e.programs_replaced);
	rep_str(status, "replaced", e.replaced);
	rep_uint(status, "set_aside", e.set_aside);
	rep_str(status, "pin_dir", e.pin_dir); /* null: nothing pinned */
	engine_sched_full_read(bb->e, &full, NULL);
	rep_uint(status, "sched_conns_full", full.packets);
	rep_uint(status, "sched_conns_pruned", bb->sched_pruned);
	l = rep_list(status, "links");
	rep_text(l, links_text);
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int fam = 0; fam < NFB_FAM_MAX; fam++) {
			const struct engine_link *k = &e.link[h][fam];
			struct rep *o;

			if (k->fd < 0)
				continue;
			o = rep_object(l, NULL);
			rep_str(o, "hook", policy_hook_name((enum policy_hook)h));
			rep_str(o, "family", policy_family_name((enum policy_family)(1 << fam)));
			rep_uint(o, "id", k->id);
			rep_int(o, "priority", k->priority);
			rep_bool(o, "defrag", k->defrag);
		}
}

/* ---- enforcing ---- */

/* The table of the BPF policy in force before (its conntrack and NAT). */
static void restore_table(struct backend *b, const struct loaded *cur)
{
	struct diags tmp;

	diags_init(&tmp);
	if (cur && nft_table_put(b->env->table, b->env->dyn, cur->pol, false, NULL, NULL, &tmp) < 0)
		log_err("cannot put the previous table inet %s back: %s", NFT_TABLE_NAME, diags_last(&tmp, ""));
	diags_free(&tmp);
}

/* The table first (the step the kernel may refuse: then nothing changes),
 * then the generation; if that fails, the previous table goes back. From
 * the nftables backend: the classifier first, then the table without the
 * filter (if that fails, the classifier is unhooked and the nftables
 * filter in force stays alone). */
static int bpf_enforce(struct backend *b, const struct loaded *cur, const struct loaded *nl, bool switching,
		       struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	const struct backend_env *env = b->env;
	const struct bpf_own *o = own_of(nl);
	int r;

	if (!bb->e && (r = bpf_start(b, d)) < 0)
		return r;
	if (!bb->early && early_count(o->plan) && (r = early_open(bb->e, env->pin_dir, &bb->early, d)) < 0)
		return r;
	if (bb->early && (r = early_prepare(bb->early, o->plan, d)) < 0)
		return r;
	if (switching) {
		if ((r = engine_load(bb->e, o->plan, &o->blob, &o->slots, o->stage, d)) < 0)
			return r;
		if ((r = nft_table_put(env->table, env->dyn, nl->pol, false, NULL, NULL, d)) < 0)
			engine_unhook(bb->e);
		return r;
	}
	if ((r = nft_table_put(env->table, env->dyn, nl->pol, false, NULL, NULL, d)) < 0)
		return r;
	if ((r = engine_load(bb->e, o->plan, &o->blob, &o->slots, o->stage, d)) < 0)
		restore_table(b, cur);
	return r;
}

/* The early rules at XDP follow the classifier's generation. */
static void bpf_in_force_now(struct backend *b, const struct loaded *cur)
{
	struct bpf_backend *bb = bpf_of(b);
	struct diags d;

	bpf_conns_follow(bb, cur->pol);
	if (!bb->early || !own_of(cur))
		return;
	diags_init(&d);
	if (early_apply(bb->early, own_of(cur)->plan, &own_of(cur)->slots, &d) < 0)
		log_err("%s; the hook still drops what they drop", diags_last(&d, "early: not in force"));
	diags_free(&d);
}

/* The nftables backend enforces now, its table in place: the classifier
 * unhooked, its tries no longer kept up to date. */
static void bpf_retire(struct backend *b)
{
	struct bpf_backend *bb = bpf_of(b);

	engine_unhook(bb->e);
	engine_retire_predecessors(bb->e); /* the nftables backend enforces in their place too */
	bpf_conns_close(bb);
	bb->dyn_synced = false;
	early_remove(bb); /* the nftables backend drops them at ingress */
}

static void bpf_status_line(const struct backend *b, const struct loaded *cur, char *buf, size_t len)
{
	struct engine_info e;

	engine_get_info(bpf_of_const(b)->e, &e);
	snprintf(buf, len, "enforcing generation %llu: %u rules", (unsigned long long)e.generation, cur->pol->nrules);
}

static void bpf_summary(const struct backend *b, const struct loaded *cur, const char *path, FILE *f)
{
	struct engine_info e;

	engine_get_info(bpf_of_const(b)->e, &e);
	fprintf(f, "generation %llu: %s: %u rules enforced\n", (unsigned long long)e.generation, path,
		cur->pol->nrules);
}

/* ---- counters ---- */

/* A CLOCK_MONOTONIC time in ns (bpf_ktime_get_ns) as wall-clock ms; 0 stays 0. */
static long long wall_ms_of(uint64_t mono_ns)
{
	struct timespec m, w;

	if (!mono_ns)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &w);
	return ((long long)w.tv_sec * 1000000000 + w.tv_nsec - ((long long)m.tv_sec * 1000000000 + m.tv_nsec) +
		(long long)mono_ns) /
	       1000000;
}

static void fill_row(struct engine *e, const struct bpf_own *o, struct stats_row *r)
{
	uint32_t slot = r->is_default ? o->slots.default_slot[r->h] : o->slots.rule_slot[r->h][r->b];
	struct nfb_counter c;

	engine_counter_read(e, slot, &c);
	r->c = (struct backend_counter){ .packets = c.packets, .bytes = c.bytes };
	r->last_hit_ms = wall_ms_of(c.last_ns);
	if (r->limit)
		engine_limit_over(e, slot, &r->over_limit);
}

static uint64_t packets_of(struct engine *e, uint32_t slot)
{
	struct nfb_counter c;

	engine_counter_read(e, slot, &c);
	return c.packets;
}

/* After the report: every counter it showed back to 0 (read, then zeroed,
 * so what is counted in between is lost). */
static void zero_all(struct engine *e, const struct bpf_own *o)
{
	const struct plan *pl = o->plan;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++) {
		for (uint32_t b = 0; b < pl->hook[h].nrules; b++)
			engine_counter_reset(e, o->slots.rule_slot[h][b]);
		engine_counter_reset(e, o->slots.default_slot[h]);
	}
	engine_counter_reset(e, o->slots.established_slot);
	for (uint32_t s = 0; s < NFB_CNT_FIRST_RULE; s++)
		engine_counter_reset(e, s);
	engine_sched_full_reset(e);
}

static int bpf_stats(struct backend *b, const struct loaded *cur, struct stats_row *rows, uint32_t n,
		     struct backend_stats *out, bool zero)
{
	struct bpf_backend *bb = bpf_of(b);
	const struct bpf_own *o = own_of(cur);
	struct engine *e = bb->e;
	struct nfb_counter est, full;

	if (!o)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		fill_row(e, o, &rows[i]);
	engine_counter_read(e, o->slots.established_slot, &est);
	out->established = (struct backend_counter){ .packets = est.packets, .bytes = est.bytes };
	out->malformed = packets_of(e, NFB_CNT_MALFORMED);
	out->unreassembled = packets_of(e, NFB_CNT_FRAGMENT);
	out->log_ring_full = packets_of(e, NFB_CNT_LOG_DROPPED);
	out->log_rate_limited = packets_of(e, NFB_CNT_LOG_LIMITED);
	out->reject_rate_limited = packets_of(e, NFB_CNT_REJECT_LIMITED);
	out->reject_ring_full = packets_of(e, NFB_CNT_REJECT_LOST);
	bpf_rejects_counts(bb, &out->reject_replies, &out->reject_send_failed, &out->reject_unanswerable);
	out->conn_events_lost = bb->conns_events_lost;
	out->conn_release_failed = bb->conns_release_failed;
	engine_sched_full_read(e, &full, NULL);
	out->sched_conns_full = full.packets;
	if (zero && e)
		zero_all(e, o);
	if (zero) {
		bpf_rejects_zero(bb);
		bb->conns_events_lost = bb->conns_release_failed = 0;
	}
	return 0;
}

static void bpf_links_changed(struct backend *b, const struct loaded *cur)
{
	struct bpf_backend *bb = bpf_of(b);
	const struct bpf_own *o = own_of(cur);
	uint32_t need = 0;
	struct diags d;
	int r;

	if (!o)
		return;
	if ((r = engine_ifaces_refresh(bb->e, o->plan, &o->blob, &need)) == -E2BIG)
		log_err("interfaces changed: the policy's interfaces now need %u entries and the BPF engine holds %u; "
			"those that did not fit match only the rules that exclude them (name fewer interfaces, or use "
			"'backend: nftables')",
			need, NFB_IFACE_MAX_ENTRIES);
	else if (r < 0)
		log_err("interfaces changed, but the interface map could not be updated: %s", strerror(-r));
	diags_init(&d);
	if (bb->early && early_links_changed(bb->early, o->plan, &o->slots, &d) < 0)
		log_err("interfaces changed: %s", diags_last(&d, "early: not followed"));
	diags_free(&d);
	diags_init(&d);
	if (nft_table_hairpin_follow(cur->pol, &d) < 0)
		log_err("interfaces changed: the hairpin sets could not follow their addresses: %s",
			diags_last(&d, ""));
	diags_free(&d);
}

_Static_assert(SCHED_WORDS == NFB_SCHED_WORDS, "the schedules' states and the classifier's differ in size");

static int bpf_schedule(struct backend *b, const struct loaded *cur, const uint64_t *words, struct diags *d)
{
	int r;

	(void)cur;
	if ((r = engine_sched_set(bpf_of(b)->e, words)) < 0)
		return diag_errno(d, r, "the classifier's schedules");
	return 0;
}

const struct backend_ops backend_bpf_ops = {
	.name = "bpf",
	.holder = "the pinned classifier",
	.policy_backend = POLICY_BACKEND_BPF,
	.compile = bpf_compile,
	.own_free = bpf_own_free,
	.check = bpf_check,
	.print = bpf_print,
	.open = bpf_open,
	.start = bpf_start,
	.close = bpf_close,
	.stop = bpf_stop,
	.discard = bpf_discard,
	.adopted = bpf_adopted,
	.prepare = bpf_prepare,
	.commit = bpf_commit,
	.abort = bpf_abort,
	.tick = bpf_tick,
	.status = bpf_status,
	.dyn_read_back = bpf_dyn_read_back,
	.enforce = bpf_enforce,
	.in_force_now = bpf_in_force_now,
	.retire = bpf_retire,
	.status_line = bpf_status_line,
	.summary = bpf_summary,
	.stats = bpf_stats,
	.links_changed = bpf_links_changed,
	.dyn_apply = bpf_dyn_apply,
	.dyn_undo = bpf_dyn_undo,
	.dyn_resync = bpf_dyn_resync,
	.dyn_expired = bpf_dyn_expired,
	.dyn_after_reload = bpf_dyn_after_reload,
	.dyn_walk_begin = bpf_dyn_walk_begin,
	.dyn_walk = bpf_dyn_walk,
	.dyn_walk_end = bpf_dyn_walk_end,
	.schedule = bpf_schedule,
	.cut = bpf_sched_cut,
	.trace_start = bpf_trace_start,
	.trace_stop = bpf_trace_stop,
};
