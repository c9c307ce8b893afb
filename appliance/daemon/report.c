/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Collecting status and counters from the daemon and its engine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/backends.h"
#include "daemon/daemon_int.h"
#include "daemon/confirm.h"
#include "daemon/dynsets.h"
#include "daemon/dynverify.h"
#include "daemon/events.h"
#include "lib/fingerprint.h"
#include "daemon/links.h"
#include "daemon/report.h"
#include "daemon/usage.h"
#include "base/log.h"
#include "system/netns.h"

/* What the policy forwards that this network namespace does not, as of
 * now (the switches are read for every status). */
static void report_forwarding(const struct policy *p, struct status_report *out)
{
	struct policy_forward_why why[2];

	out->fwd_host = netns_forwarding(NULL);
	out->fwd_needed = p ? policy_forwarded(p, why) : 0;
	for (int i = 0; i < 2; i++)
		if (out->fwd_needed & ~out->fwd_host & (POLICY_FAM_IPV4 << i))
			policy_forwarding_text(i, &why[i], out->fwd[i].msg, sizeof(out->fwd[i].msg), out->fwd[i].fix,
					       sizeof(out->fwd[i].fix));
}

int report_status(struct daemon *dm, struct status_report *out)
{
	const struct policy *p = dm->cur.pol;

	*out = (struct status_report){
		.netns = dm->netns.name,
		.netns_initial = dm->netns.initial,
		.netns_cookie = dm->netns.cookie,
		.pid = (int)getpid(),
		.uptime = (long)(time(NULL) - dm->started),
		.policy = dm->cur.path,
		.rules = p ? p->nrules : 0,
		.defrag = p && p->opt.defrag,
		.backend = p ? backend_of(dm, p)->ops->name : "bpf",
		.reloads_ok = dm->reloads_ok,
		.reloads_failed = dm->reloads_failed,
		.pending = dm->pending.active,
		.pending_deadline = dm->pending.deadline,
		.pending_since = dm->pending.since,
		.state_dir = dm->state_dir,
		.version = NFBOX_VERSION,
		.fingerprint = dm->fingerprint,
		.loaded_at = dm->loaded_at,
		.events = eventlog_seen(dm->events),
		.dyn = dyn_store(dm),
	};
	backends_status(dm, &out->be);
	dyn_report(dm, &out->dynr);
	dynverify_report(dm, &out->dynr);
	/* Whether the files on disk are still what runs: read and hashed again. */
	if (!p || !dm->fingerprint[0]) {
		out->on_disk = "";
	} else {
		int r = fingerprint_on_disk(dm->cur.pol->sources.head, out->disk_fp);

		out->on_disk = r < 0 ? strerror(-r) : !strcmp(out->disk_fp, dm->fingerprint) ? "same" : "changed";
	}
	fleet_report(dm, &out->fleet);
	httpd_report(dm, &out->http);
	out->nmissing = links_missing(dm->cur.plan, out->missing, sizeof(out->missing) / sizeof(out->missing[0]));
	report_forwarding(p, out);
	if (ha_report(dm, &out->ha) < 0 || sched_report(dm, &out->sched, &out->nsched) < 0 ||
	    feeds_report(dm, &out->feeds, &out->nfeeds) < 0)
		return -ENOMEM;
	return daemon_captures_report(dm, false, &out->caps, &out->ncaps);
}

void report_status_free(struct status_report *r)
{
	free(r->caps);
	r->caps = NULL;
	free(r->ha.virt);
	r->ha.virt = NULL;
	free(r->sched);
	r->sched = NULL;
	free(r->feeds);
	r->feeds = NULL;
}

static uint32_t count_rows(const struct plan *pl)
{
	uint32_t n = 0;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++)
		if (pl->hook[h].enabled)
			n += pl->hook[h].nrules + 1; /* and the default */
	return n;
}

/* A row for each rule and default of pl, hook by hook, each given its
 * hook, name, action and limit; the backend fills in the counts. */
static int report_rows(const struct plan *pl, struct stats_report *out)
{
	uint32_t n = count_rows(pl);

	if (!(out->rows = calloc(n ? n : 1, sizeof(*out->rows))))
		return -ENOMEM;
	for (int h = 0; pl && h < NFB_HOOK_MAX; h++) {
		const struct plan_hook *ph = &pl->hook[h];

		if (!ph->enabled)
			continue;
		for (uint32_t b = 0; b <= ph->nrules; b++) {
			bool def = b == ph->nrules;
			struct stats_row *row = &out->rows[out->nrows++];

			row->hook = policy_hook_name((enum policy_hook)h);
			row->rule = def ? "(default)" : ph->rules[b]->name;
			row->action = policy_action_name(def ? ph->def : ph->rules[b]->action);
			row->h = h;
			row->b = b;
			row->is_default = def;
			row->limit = !def && policy_has_limit(&ph->rules[b]->limit) ? &ph->rules[b]->limit : NULL;
		}
	}
	return 0;
}

int report_stats(struct daemon *dm, struct stats_report *out, bool zero)
{
	struct backend *be = backend_in_force(dm);
	int r;

	*out = (struct stats_report){ 0 };
	if (be && ((r = report_rows(dm->cur.plan, out)) < 0 ||
		   (r = be->ops->stats(be, &dm->cur, out->rows, out->nrows, &out->be, zero)) < 0)) {
		report_stats_free(out);
		return r;
	}
	if (be)
		usage_merge(dm, out->rows, out->nrows);
	{
		struct dyn_report dr = { 0 };

		dyn_report(dm, &dr);
		dynverify_report(dm, &dr);
		out->dyn_repaired = dr.repaired;
		out->ban_refused = dr.refused;
	}
	if (zero) {
		usage_zero(dm);
		dyn_report_zero(dm);
		dynverify_zero(dm);
		log_info("counters set to 0 (nfbox stats --zero)");
	}
	return daemon_captures_report(dm, true, &out->caps, &out->ncaps);
}

void report_usage(struct daemon *dm, bool now)
{
	struct stats_report sr;

	if (!usage_due(dm, now))
		return;
	if (report_stats(dm, &sr, false) == 0) /* merged into the record */
		usage_save(dm);
	report_stats_free(&sr);
}

void report_stats_free(struct stats_report *r)
{
	free(r->rows);
	free(r->caps);
	r->rows = NULL;
	r->caps = NULL;
}
