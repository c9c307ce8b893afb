/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The nftables backend (backend.h): the whole policy as table inet nfbox.
 * Each dynamic-set change is one transaction on the sets d_NAME_4 and
 * d_NAME_6; a reload rebuilds the table with the store's entries and the
 * time each has left. Verdict events come over NFLOG, last hits from the
 * named counters (lasthit.c).
 */
#include <errno.h>
#include <string.h>

#include "daemon/backend.h"
#include "daemon/daemon_int.h"
#include "daemon/reload.h"
#include "daemon/dynsets.h"
#include "daemon/lasthit.h"
#include "daemon/events.h"
#include "daemon/report.h"
#include "base/log.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/counters.h"
#include "backend/nftables/nft/emit.h"

/* The table first; the classifier, if one was enforcing, is unhooked
 * only once the table is in force. */
static int nftables_enforce(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	int r;

	if ((r = daemon_nft_apply(dm, nl->pol, true, d)) < 0)
		return r;
	engine_unhook(dm->e);
	return 0;
}

static void nftables_in_force(struct daemon *dm)
{
	nflog_events_open(dm);
}

static void nftables_tick(struct daemon *dm)
{
	lasthit_tick(dm);
}

static void nftables_status_line(const struct daemon *dm, char *buf, size_t len)
{
	snprintf(buf, len, "enforcing %u rules (nftables backend, table inet %s)", dm->cur.pol->nrules, NFT_TABLE_NAME);
}

static void nftables_summary(const struct daemon *dm, const char *path, FILE *f)
{
	fprintf(f, "nftables: %s: %u rules enforced (table inet %s)\n", path, dm->cur.pol->nrules, NFT_TABLE_NAME);
}

/* ---- counters: the named counters, read (and reset) in one step ---- */

static void nftables_read_named(const struct nft_counters *nc, const char *name, struct nfb_counter *out)
{
	const struct nfr_counter *c = nft_counters_find(nc, name);

	out->packets = c ? c->packets : 0;
	out->bytes = c ? c->bytes : 0;
}

static void nftables_row(struct daemon *dm, int h, uint32_t b, struct stats_row *r, void *arg)
{
	const struct nft_counters *nc = arg;
	char name[NFR_NAME];

	(void)b;
	if (r->is_default)
		nft_default_counter_name(name, sizeof(name), (enum policy_hook)h);
	else
		nft_rule_counter_name(name, sizeof(name), (enum policy_hook)h, r->rule);
	nftables_read_named(nc, name, &r->c);
	r->last_hit_ms = lasthit_of(dm, name);
	if (r->limit) {
		struct nfb_counter over;

		nft_over_limit_counter_name(name, sizeof(name), (enum policy_hook)h, r->rule);
		nftables_read_named(nc, name, &over);
		r->over_limit = over.packets;
	}
}

static int nftables_stats(struct daemon *dm, struct stats_report *out, bool zero)
{
	struct nft_counters nc;
	struct nfb_counter c, wanted, logged;
	int r;

	if ((r = nft_counters_read_reset(&nc, zero)) < 0)
		return r;
	if (!zero)
		lasthit_tick(dm); /* up to date for this answer, if a read is due */
	if ((r = report_rows(dm, out, nftables_row, &nc)) < 0) {
		nft_counters_free(&nc);
		return r;
	}
	if (zero)
		lasthit_zero(dm);
	nftables_read_named(&nc, NFT_COUNTER_ESTABLISHED, &out->established);
	nftables_read_named(&nc, NFT_COUNTER_UNREASSEMBLED, &c);
	out->unreassembled = c.packets;
	nftables_read_named(&nc, NFT_COUNTER_REJECT_LIMITED, &c);
	out->reject_rate_limited = c.packets;
	nftables_read_named(&nc, NFT_COUNTER_LOG_WANTED, &wanted);
	nftables_read_named(&nc, NFT_COUNTER_LOGGED, &logged);
	out->log_rate_limited = wanted.packets > logged.packets ? wanted.packets - logged.packets : 0;
	nft_counters_free(&nc);
	return 0;
}

/* nftables matches interfaces by name itself (iifname). */
static void nftables_links_changed(struct daemon *dm)
{
	(void)dm;
}

/* ---- dynamic sets ---- */

static int nftables_dyn_apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n,
			      bool del, struct diags *d)
{
	int64_t now = dyn_now_ms();
	struct nfr_set *ds[2] = { NULL, NULL }, *as[2] = { NULL, NULL };
	const struct nfr_set *dl[2], *al[2];
	uint32_t nd = 0, na = 0;
	struct nfr_table t;
	int r;

	(void)dm;
	nfr_init(&t);
	for (int f = 0; f < 2; f++) {
		char name[NFR_NAME];

		nft_dyn_set_name(name, sizeof(name), set->name, f ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4);
		ds[f] = nfr_set_new(&t, name, f ? NFR_KEY_IPV6 : NFR_KEY_IPV4, true);
		as[f] = nfr_set_new(&t, name, f ? NFR_KEY_IPV6 : NFR_KEY_IPV4, true);
	}
	for (uint32_t i = 0; !t.err && i < n; i++) {
		int f = c[i].pfx.family == POLICY_FAM_IPV6;
		uint8_t lo[16], hi[16];

		nft_prefix_range(&c[i].pfx, lo, hi);
		/* an add of an entry there deletes it first: a renewal's new timeout, on any kernel */
		if (del || c[i].renew)
			nfr_set_add(&t, ds[f], lo, hi);
		if (!del) {
			nfr_set_add(&t, as[f], lo, hi);
			if (!t.err && c[i].expires)
				as[f]->v[as[f]->n - 1].timeout_ms =
					(uint64_t)(c[i].expires > now ? c[i].expires - now : 1) + NFT_TIMEOUT_MARGIN_MS;
		}
	}
	for (int f = 0; f < 2 && !t.err; f++) {
		if (ds[f]->n)
			dl[nd++] = ds[f];
		if (as[f]->n)
			al[na++] = as[f];
	}
	r = t.err ? diag_errno(d, t.err, "set '%s'", set->name) : nft_set_change(dl, nd, al, na, d);
	nfr_free(&t);
	return r;
}

static void nftables_dyn_undo(struct daemon *dm, const struct dyn_set *set, const struct dyn_undo *u)
{
	struct diags tmp;
	int r = 0;

	diags_init(&tmp);
	if (u->nadded)
		r = nftables_dyn_apply(dm, set, u->added, u->nadded, true, &tmp);
	if (r == 0 && u->nchanged)
		r = nftables_dyn_apply(dm, set, u->changed, u->nchanged, false, &tmp);
	if (r < 0)
		log_err("set '%s': a change that could not be saved could not be taken back in table inet %s: %s",
			set->name, NFT_TABLE_NAME, diags_last(&tmp, ""));
	diags_free(&tmp);
}

/* A reload rebuilt the table with the store's entries. */
static void nftables_dyn_resync(struct daemon *dm)
{
	(void)dm;
}

/* The kernel removes its own (its timeout). */
static void nftables_dyn_expired(struct daemon *dm, const struct dyn_set *set, int fam, const struct dyn_entry *e)
{
	(void)dm;
	(void)set;
	(void)fam;
	(void)e;
}

static void nftables_dyn_after_reload(struct daemon *dm, bool gone)
{
	(void)gone;
	dm->dyn_bpf_synced = false; /* the tries are not kept up to date meanwhile */
}

const struct backend_ops backend_nftables = {
	.name = "nftables",
	.enforce = nftables_enforce,
	.in_force = nftables_in_force,
	.tick = nftables_tick,
	.status_line = nftables_status_line,
	.summary = nftables_summary,
	.stats = nftables_stats,
	.links_changed = nftables_links_changed,
	.dyn_apply = nftables_dyn_apply,
	.dyn_undo = nftables_dyn_undo,
	.dyn_resync = nftables_dyn_resync,
	.dyn_expired = nftables_dyn_expired,
	.dyn_after_reload = nftables_dyn_after_reload,
};
