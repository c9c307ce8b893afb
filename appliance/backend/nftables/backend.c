/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The nftables backend (backend.h): the whole policy as table inet nfbox.
 * Each dynamic-set change is one transaction on the sets d_NAME_4 and
 * d_NAME_6 (dyn.c); a reload rebuilds the table with the store's entries
 * and the time each has left. Verdict events come over NFLOG (events.c),
 * last hits from the named counters (lasthit.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/nftables/lasthit.h"
#include "backend/nftables/nftables.h"
#include "backend/nftables/table.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/counters.h"
#include "backend/nftables/nft/emit.h"
#include "backend/nftables/nft/print.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/plant.h"
#include "netlink/ctevents.h"

/* ---- every open backend ---- */

static int nftables_open(const struct backend_env *env, struct backend **out)
{
	struct nft_backend *nb = calloc(1, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	nb->b = (struct backend){ .ops = &backend_nftables_ops, .env = env };
	*out = &nb->b;
	return 0;
}

/* Nothing to attach to: a table a daemon before left is replaced whole by
 * the first load. */
static int nftables_start(struct backend *b, struct diags *d)
{
	(void)b;
	(void)d;
	return 0;
}

static void nftables_close(struct backend *b)
{
	struct nft_backend *nb;

	if (!b)
		return;
	nb = nft_of(b);
	nft_trace_stop(b);
	nft_events_close(nb);
	lasthit_free(&nb->lasthit);
	free(nb);
}

/* The table persists (NFT_TABLE_F_PERSIST) when its owner, this process,
 * exits: kept for the next daemon, or removed now. */
static void nftables_stop(struct backend *b, bool keep)
{
	struct diags d;

	if (keep)
		return;
	diags_init(&d);
	if (nft_table_drop(b->env->table, &d) < 0)
		log_warn("removing table inet %s: %s", NFT_TABLE_NAME, diags_last(&d, ""));
	diags_free(&d);
}

/* A start that enforced nothing leaves no table it put in place. */
static void nftables_discard(struct backend *b)
{
	if (b->env->table->present == 1)
		nftables_stop(b, false);
}

static bool nftables_adopted(const struct backend *b)
{
	(void)b;
	return false;
}

static int nftables_prepare(struct backend *b, struct loaded *nl, struct diags *d)
{
	(void)b;
	(void)nl;
	(void)d;
	return 0;
}

static void nftables_commit(struct backend *b, const struct loaded *nl)
{
	(void)b;
	(void)nl;
}

static void nftables_abort(struct backend *b, const struct loaded *cur)
{
	(void)b;
	(void)cur;
}

static void nftables_tick(struct backend *b)
{
	if (b->in_force)
		lasthit_tick(&nft_of(b)->lasthit);
}

/* Table inet nfbox: there, and owned by the daemon (NFT_TABLE_F_OWNER,
 * PERSIST). */
static void nftables_status(struct backend *b, struct rep *status)
{
	bool present = b->env->table->present == 1;

	rep_bool(status, "nft_table", present);
	rep_bool(status, "nft_table_owned", present && nft_table_owned());
}

/* ---- without a daemon ---- */

/* It builds its table when it enforces: nothing kept from the compile. */
static int nftables_compile(const struct policy *p, void **own, struct diags *d)
{
	(void)p;
	(void)d;
	*own = NULL;
	return 0;
}

/* The policy's table inet nfbox (NAT, the conntrack anchor and, with
 * backend: nftables, the filter), built and thrown away. */
static int nftables_check(const struct policy *p, struct diags *d)
{
	struct nft_build_opts o = { .filter = p->opt.backend == POLICY_BACKEND_NFTABLES };
	struct nfr_table t;
	int r;

	nfr_init(&t);
	r = nft_build(p, &o, &t, d);
	nfr_free(&t);
	return r;
}

/* What nftables gets for this policy, counters at 0, in nft's syntax (it
 * has no JSON form of its own: json is not heeded). */
static int nftables_print(const struct policy *p, bool json, FILE *f, struct diags *d)
{
	struct nft_build_opts o = { .filter = p->opt.backend == POLICY_BACKEND_NFTABLES };
	struct nfr_table t;
	int r;

	(void)json;
	nfr_init(&t);
	if ((r = nft_build(p, &o, &t, d)) < 0) {
		nfr_free(&t);
		return r;
	}
	fprintf(f, "# nfbox plan --nft of %s: the %s\n", p->src->name,
		o.filter ? "whole policy (backend: nftables)"
			 : "NAT, conntrack and SYN proxy (the filter is the BPF backend's)");
	if (t.nchains)
		nfr_print(&t, f);
	else
		fprintf(f, "# nothing: this policy needs no table in nftables\n");
	nfr_free(&t);
	return 0;
}

/* ---- in force ---- */

static void applied(const struct nfr_table *nt, void *arg)
{
	lasthit_start(arg, nt);
}

/* The table; the classifier, if one was enforcing, is unhooked by its own
 * retire once the table is in force. */
static int nftables_enforce(struct backend *b, const struct loaded *cur, const struct loaded *nl, bool switching,
			    struct diags *d)
{
	(void)cur;
	(void)switching;
	return nft_table_put(b->env->table, b->env->dyn, nl->pol, true, applied, &nft_of(b)->lasthit, d);
}

static void nftables_in_force_now(struct backend *b, const struct loaded *cur)
{
	(void)cur;
	nft_events_open(nft_of(b));
}

static void nftables_retire(struct backend *b)
{
	nft_trace_stop(b);
	nft_events_close(nft_of(b));
	lasthit_free(&nft_of(b)->lasthit);
}

static void nftables_status_line(const struct backend *b, const struct loaded *cur, char *buf, size_t len)
{
	(void)b;
	snprintf(buf, len, "enforcing %u rules (nftables backend, table inet %s)", cur->pol->nrules, NFT_TABLE_NAME);
}

static void nftables_summary(const struct backend *b, const struct loaded *cur, const char *path, FILE *f)
{
	(void)b;
	fprintf(f, "nftables: %s: %u rules enforced (table inet %s)\n", path, cur->pol->nrules, NFT_TABLE_NAME);
}

/* ---- counters: the named counters, read (and reset) in one step ---- */

static void read_named(const struct nft_counters *nc, const char *name, struct backend_counter *out)
{
	const struct nfr_counter *c = nft_counters_find(nc, name);

	out->packets = c ? c->packets : 0;
	out->bytes = c ? c->bytes : 0;
}

static void fill_row(const struct nft_backend *nb, const struct nft_counters *nc, struct stats_row *r)
{
	char name[NFR_NAME];

	if (r->is_default)
		nft_default_counter_name(name, sizeof(name), (enum policy_hook)r->h);
	else
		nft_rule_counter_name(name, sizeof(name), (enum policy_hook)r->h, r->rule);
	read_named(nc, name, &r->c);
	r->last_hit_ms = lasthit_of(nb->lasthit, name);
	if (r->limit) {
		struct backend_counter over;

		nft_over_limit_counter_name(name, sizeof(name), (enum policy_hook)r->h, r->rule);
		read_named(nc, name, &over);
		r->over_limit = over.packets;
	}
}

static int nftables_stats(struct backend *b, const struct loaded *cur, struct stats_row *rows, uint32_t n,
			  struct backend_stats *out, bool zero)
{
	struct nft_backend *nb = nft_of(b);
	struct nft_counters nc;
	struct backend_counter c, wanted, logged;
	int r;

	(void)cur;
	if ((r = nft_counters_read_reset(&nc, zero)) < 0)
		return r;
	if (!zero)
		lasthit_tick(&nb->lasthit); /* up to date for this answer, if a read is due */
	for (uint32_t i = 0; i < n; i++)
		fill_row(nb, &nc, &rows[i]);
	if (zero)
		lasthit_zero(nb->lasthit);
	read_named(&nc, NFT_COUNTER_ESTABLISHED, &out->established);
	read_named(&nc, NFT_COUNTER_UNREASSEMBLED, &c);
	out->unreassembled = c.packets;
	read_named(&nc, NFT_COUNTER_MALFORMED, &c);
	out->malformed = c.packets;
	read_named(&nc, NFT_COUNTER_REJECT_LIMITED, &c);
	out->reject_rate_limited = c.packets;
	read_named(&nc, NFT_COUNTER_LOG_WANTED, &wanted);
	read_named(&nc, NFT_COUNTER_LOGGED, &logged);
	out->log_rate_limited = wanted.packets > logged.packets ? wanted.packets - logged.packets : 0;
	nft_counters_free(&nc);
	return 0;
}

/* nftables matches interfaces by name itself (iifname); the ingress
 * chains of early: true rules count by this host's addresses, and hook
 * their devices: the table put in place again when they change (with the
 * hairpin sets); else only the hairpin sets follow the addresses. */
static void nftables_links_changed(struct backend *b, const struct loaded *cur)
{
	struct diags d;
	bool early = false;

	for (uint32_t i = 0; i < cur->pol->nrules && !early; i++)
		early = cur->pol->rules[i].early;
	diags_init(&d);
	if (!early && nft_table_hairpin_follow(cur->pol, &d) < 0)
		log_err("interfaces changed: the hairpin sets could not follow their addresses: %s",
			diags_last(&d, ""));
	if (early && nft_table_put(b->env->table, b->env->dyn, cur->pol, true, applied, &nft_of(b)->lasthit, &d) < 0)
		log_err("interfaces changed: the early drop at ingress could not follow: %s", diags_last(&d, ""));
	diags_free(&d);
}

/* A reload rebuilt the table with the store's entries. */
static void nftables_dyn_resync(struct backend *b)
{
	(void)b;
}

/* The kernel removes its own (its timeout). */
static void nftables_dyn_expired(struct backend *b, const struct dyn_set *set, int fam, const struct dyn_entry *e)
{
	(void)b;
	(void)set;
	(void)fam;
	(void)e;
}

static void nftables_dyn_after_reload(struct backend *b, bool gone)
{
	(void)b;
	(void)gone;
}

/* The connections marked with the rule's cut id (nft/build.c: mark_cut). */
static int nftables_cut(struct backend *b, uint16_t id, void (*fn)(const struct ct_tuple *t, void *arg), void *arg,
			struct diags *d)
{
	_cleanup_free_ struct ct_tuple *v = NULL;
	size_t n = 0;
	int r;
	uint32_t mark = (uint32_t)id << POLICY_CUT_SHIFT, mask = POLICY_CUT_MASK;

	(void)b;
	if (planted("schedule-cut-all")) /* the test build: every connection, whatever its mark */
		mark = mask = 0;
	if ((r = ct_list_marked(mark, mask, &v, &n)) < 0)
		return diag_errno(d, r, "cannot list the connections of conntrack mark 0x%08x", mark);
	if ((r = ct_delete_tuples(v, n, fn, arg)) < 0)
		return diag_errno(d, r, "cannot delete connections from conntrack");
	return r;
}

/* Each scheduled rule's set w_RULE: ipv4 and ipv6 while in force, else
 * empty; all in one transaction. */
static int nftables_schedule(struct backend *b, const struct loaded *cur, const uint64_t *words, struct diags *d)
{
	const struct nfr_set **v;
	struct nfr_table t;
	uint32_t n = 0;
	int r;

	(void)b;
	if (!(v = calloc(cur->pol->nrules ? cur->pol->nrules : 1, sizeof(*v))))
		return diag_errno(d, -ENOMEM, "the schedules");
	nfr_init(&t);
	for (uint32_t i = 0; i < cur->pol->nrules && !t.err; i++) {
		const struct rule *ru = &cur->pol->rules[i];
		uint32_t bit = ru->when.sched - 1;
		struct nfr_set *s;

		if (ru->when.sched && (s = nft_sched_set(&t, ru->name, (words[bit / 64] >> (bit % 64)) & 1)))
			v[n++] = s;
	}
	r = t.err ? diag_errno(d, t.err, "the schedules") : nft_sets_replace(v, n, "the schedules' sets", d);
	nfr_free(&t);
	free(v);
	return r;
}

const struct backend_ops backend_nftables_ops = {
	.name = "nftables",
	.holder = "table inet nfbox",
	.policy_backend = POLICY_BACKEND_NFTABLES,
	.dyn_margin_ms = NFT_TIMEOUT_MARGIN_MS,
	.compile = nftables_compile,
	.check = nftables_check,
	.print = nftables_print,
	.open = nftables_open,
	.start = nftables_start,
	.close = nftables_close,
	.stop = nftables_stop,
	.discard = nftables_discard,
	.adopted = nftables_adopted,
	.prepare = nftables_prepare,
	.commit = nftables_commit,
	.abort = nftables_abort,
	.tick = nftables_tick,
	.status = nftables_status,
	.dyn_read_back = nft_dyn_read_back,
	.enforce = nftables_enforce,
	.in_force_now = nftables_in_force_now,
	.retire = nftables_retire,
	.status_line = nftables_status_line,
	.summary = nftables_summary,
	.stats = nftables_stats,
	.links_changed = nftables_links_changed,
	.dyn_apply = nft_dyn_apply,
	.dyn_undo = nft_dyn_undo,
	.dyn_resync = nftables_dyn_resync,
	.dyn_expired = nftables_dyn_expired,
	.dyn_after_reload = nftables_dyn_after_reload,
	.dyn_walk_begin = nft_dyn_walk_begin,
	.dyn_walk = nft_dyn_walk,
	.dyn_walk_end = nft_dyn_walk_end,
	.schedule = nftables_schedule,
	.cut = nftables_cut,
	.trace_start = nft_trace_start,
	.trace_stop = nft_trace_stop,
};
