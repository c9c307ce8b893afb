/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF backend (backend.h): the classifier in its netfilter links, and
 * table inet nfbox for what BPF cannot do (the conntrack anchor, NAT).
 * Each dynamic-set change goes to the classifier's tries at once (no new
 * generation); when the backend comes into force (a daemon's first load,
 * adopting or not, or a switch from nftables) the tries are made to hold
 * exactly the store's entries.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "daemon/backend.h"
#include "daemon/daemon_int.h"
#include "daemon/rejects.h"
#include "daemon/reload.h"
#include "daemon/dynsets.h"
#include "daemon/lasthit.h"
#include "daemon/events.h"
#include "daemon/report.h"
#include "base/log.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/emit.h"

/* ---- enforcing ---- */

/* The table of the BPF policy in force before (its conntrack and NAT). */
static void bpf_restore_table(struct daemon *dm, const struct policy *old)
{
	struct diags tmp;

	diags_init(&tmp);
	if (old && daemon_nft_apply(dm, old, false, &tmp) < 0)
		log_err("cannot put the previous table inet %s back: %s", NFT_TABLE_NAME, diags_last(&tmp, ""));
	diags_free(&tmp);
}

/* The table first (the step the kernel may refuse: then nothing changes),
 * then the generation; if that fails, the previous table goes back. From
 * the nftables backend: the classifier first, then the table without the
 * filter (if that fails, the classifier is unhooked and the nftables
 * filter in force stays alone). */
static int bpf_enforce(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	const struct policy *old = dm->cur.pol;
	int r;

	if (!dm->e && (r = daemon_engine_open(dm, d)) < 0)
		return r;
	if (backend_of(old) == &backend_nftables) {
		if ((r = engine_load(dm->e, nl->plan, &nl->blob, &nl->slots, d)) < 0)
			return r;
		if ((r = daemon_nft_apply(dm, nl->pol, false, d)) < 0)
			engine_unhook(dm->e);
		return r;
	}
	if ((r = daemon_nft_apply(dm, nl->pol, false, d)) < 0)
		return r;
	if ((r = engine_load(dm->e, nl->plan, &nl->blob, &nl->slots, d)) < 0)
		bpf_restore_table(dm, old);
	return r;
}

static void bpf_in_force(struct daemon *dm)
{
	nflog_events_close(dm);
	lasthit_free(dm);
}

static void bpf_tick(struct daemon *dm)
{
	(void)dm;
}

static void bpf_status_line(const struct daemon *dm, char *buf, size_t len)
{
	struct engine_info e;

	engine_get_info(dm->e, &e);
	snprintf(buf, len, "enforcing generation %llu: %u rules", (unsigned long long)e.generation,
		 dm->cur.pol->nrules);
}

static void bpf_summary(const struct daemon *dm, const char *path, FILE *f)
{
	struct engine_info e;

	engine_get_info(dm->e, &e);
	fprintf(f, "generation %llu: %s: %u rules enforced\n", (unsigned long long)e.generation, path,
		dm->cur.pol->nrules);
}

/* ---- counters ---- */

/* A CLOCK_MONOTONIC time in ns (bpf_ktime_get_ns) as wall-clock ms; 0 stays 0. */
static long long bpf_wall_ms_of(uint64_t mono_ns)
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

static void bpf_row(struct daemon *dm, int h, uint32_t b, struct stats_row *r, void *arg)
{
	uint32_t slot = r->is_default ? dm->cur.slots.default_slot[h] : dm->cur.slots.rule_slot[h][b];

	(void)arg;
	engine_counter_read(dm->e, slot, &r->c);
	r->last_hit_ms = bpf_wall_ms_of(r->c.last_ns);
	if (r->limit)
		engine_limit_over(dm->e, slot, &r->over_limit);
}

static uint64_t bpf_packets_of(struct daemon *dm, uint32_t slot)
{
	struct nfb_counter c;

	engine_counter_read(dm->e, slot, &c);
	return c.packets;
}

/* After the report: every counter it showed back to 0 (read, then zeroed,
 * so what is counted in between is lost). */
static void bpf_zero_all(struct daemon *dm)
{
	const struct plan *pl = dm->cur.plan;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++) {
		for (uint32_t b = 0; b < pl->hook[h].nrules; b++)
			engine_counter_reset(dm->e, dm->cur.slots.rule_slot[h][b]);
		engine_counter_reset(dm->e, dm->cur.slots.default_slot[h]);
	}
	engine_counter_reset(dm->e, dm->cur.slots.established_slot);
	for (uint32_t s = 0; s < NFB_CNT_FIRST_RULE; s++)
		engine_counter_reset(dm->e, s);
}

static int bpf_stats(struct daemon *dm, struct stats_report *out, bool zero)
{
	int r;

	if ((r = report_rows(dm, out, bpf_row, NULL)) < 0)
		return r;
	engine_counter_read(dm->e, dm->cur.slots.established_slot, &out->established);
	out->malformed = bpf_packets_of(dm, NFB_CNT_MALFORMED);
	out->unreassembled = bpf_packets_of(dm, NFB_CNT_FRAGMENT);
	out->log_ring_full = bpf_packets_of(dm, NFB_CNT_LOG_DROPPED);
	out->log_rate_limited = bpf_packets_of(dm, NFB_CNT_LOG_LIMITED);
	out->reject_rate_limited = bpf_packets_of(dm, NFB_CNT_REJECT_LIMITED);
	out->reject_ring_full = bpf_packets_of(dm, NFB_CNT_REJECT_LOST);
	rejects_counts(dm, &out->reject_replies, &out->reject_send_failed, &out->reject_unanswerable);
	if (zero && dm->e)
		bpf_zero_all(dm);
	return 0;
}

static void bpf_links_changed(struct daemon *dm)
{
	uint32_t need = 0;
	int r;

	if ((r = engine_ifaces_refresh(dm->e, dm->cur.plan, &dm->cur.blob, &need)) == -E2BIG)
		log_err("interfaces changed: the policy's interfaces now need %u entries and the BPF engine holds %u; "
			"those that did not fit match only the rules that exclude them (name fewer interfaces, or use "
			"'backend: nftables')",
			need, NFB_IFACE_MAX_ENTRIES);
	else if (r < 0)
		log_err("interfaces changed, but the interface map could not be updated: %s", strerror(-r));
}

/* ---- dynamic sets: the tries made to hold the store ---- */

static bool bpf_in_store(uint16_t id, int fam, const uint8_t *addr, uint8_t plen, void *arg)
{
	const struct dynsets *s = arg;

	for (uint32_t i = 0; i < s->n; i++)
		if (s->sets[i].id == id)
			return dynset_index(&s->sets[i], fam, addr, plen) >= 0;
	return false;
}

static int bpf_put_all(struct daemon *dm)
{
	int r;

	for (uint32_t i = 0; i < dm->dyn.n; i++) {
		const struct dyn_set *set = &dm->dyn.sets[i];

		for (int f = 0; f < 2; f++)
			for (uint32_t j = 0; j < set->n[f]; j++)
				if ((r = engine_dyn_put(dm->e, set->id, f, set->v[f][j].addr, set->v[f][j].plen,
							set->v[f][j].expires)) < 0)
					return r;
	}
	return 0;
}

/* The names of the dynamic sets beside the tries (bpf/nfbox.h). */
static void bpf_put_names(struct daemon *dm)
{
	for (uint16_t id = 1; id < NFB_MAX_DYNSETS; id++) {
		const char *name = "";

		for (uint32_t i = 0; i < dm->dyn.n; i++)
			if (dm->dyn.sets[i].id == id)
				name = dm->dyn.sets[i].name;
		engine_dyn_name_set(dm->e, id, name); /* "" too: no stale name of an adopted state stays */
	}
}

static void bpf_dyn_resync(struct daemon *dm)
{
	int r;

	if (!dm->e)
		return;
	r = engine_dyn_prune(dm->e, bpf_in_store, &dm->dyn);
	bpf_put_names(dm);
	if (r >= 0)
		r = bpf_put_all(dm);
	if (r < 0)
		log_err("dynamic sets: cannot put the entries into the classifier: %s", strerror(-r));
	else
		dm->dyn_bpf_synced = true;
}

static int bpf_dyn_apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
			 struct diags *d)
{
	int r;

	for (uint32_t i = 0; dm->e && i < n; i++) {
		int f = c[i].pfx.family == POLICY_FAM_IPV6;

		if (del) {
			if ((r = engine_dyn_del(dm->e, set->id, f, c[i].pfx.addr, c[i].pfx.plen)) < 0 && r != -ENOENT)
				return diag_errno(d, r, "set '%s': the classifier refused a delete", set->name);
			continue;
		}
		if ((r = engine_dyn_put(dm->e, set->id, f, c[i].pfx.addr, c[i].pfx.plen, c[i].expires)) < 0)
			return diag_errno(d, r, "set '%s': the classifier refused an entry", set->name);
	}
	return 0;
}

/* The tries are made to hold the store again once it is undone (the
 * caller's next step: dyn_resync). */
static void bpf_dyn_undo(struct daemon *dm, const struct dyn_set *set, const struct dyn_undo *u)
{
	(void)dm;
	(void)set;
	(void)u;
}

/* The classifier already treats it as gone (it reads the expiry). */
static void bpf_dyn_expired(struct daemon *dm, const struct dyn_set *set, int fam, const struct dyn_entry *e)
{
	if (dm->e)
		engine_dyn_del(dm->e, set->id, fam, e->addr, e->plen);
}

static void bpf_dyn_after_reload(struct daemon *dm, bool gone)
{
	if (!dm->dyn_bpf_synced || gone)
		bpf_dyn_resync(dm);
	else if (dm->e)
		bpf_put_names(dm); /* a set the reload added */
}

const struct backend_ops backend_bpf = {
	.name = "bpf",
	.enforce = bpf_enforce,
	.in_force = bpf_in_force,
	.tick = bpf_tick,
	.status_line = bpf_status_line,
	.summary = bpf_summary,
	.stats = bpf_stats,
	.links_changed = bpf_links_changed,
	.dyn_apply = bpf_dyn_apply,
	.dyn_undo = bpf_dyn_undo,
	.dyn_resync = bpf_dyn_resync,
	.dyn_expired = bpf_dyn_expired,
	.dyn_after_reload = bpf_dyn_after_reload,
};
