/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Collecting status and counters from the daemon and its engine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/backend.h"
#include "daemon/daemon_int.h"
#include "daemon/fingerprint.h"
#include "daemon/links.h"
#include "daemon/rejects.h"
#include "daemon/report.h"
#include "base/log.h"
#include "backend/nftables/nft/emit.h"

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
		.backend = p ? backend_of(p)->name : "bpf",
		.nft_table = dm->nft_table,
		.nft_owned = nft_table_owned(),
		.reloads_ok = dm->reloads_ok,
		.reloads_failed = dm->reloads_failed,
		.pending = dm->pending.active,
		.pending_deadline = dm->pending.deadline,
		.pending_since = dm->pending.since,
		.state_dir = dm->state_dir,
		.version = NFBOX_VERSION,
		.fingerprint = dm->fingerprint,
		.loaded_at = dm->loaded_at,
		.events = dm->events_seen,
		.dyn = &dm->dyn,
	};
	engine_get_info(dm->e, &out->engine);
	if (dm->e)
		engine_memory(dm->e, &out->bpf_memory);
	/* Whether the files on disk are still what runs: read and hashed again. */
	if (!p || !dm->fingerprint[0]) {
		out->on_disk = "";
	} else {
		int r = fingerprint_on_disk(dm->cur.pol->sources.head, out->disk_fp);

		out->on_disk = r < 0 ? strerror(-r) : !strcmp(out->disk_fp, dm->fingerprint) ? "same" : "changed";
	}
	out->nmissing = links_missing(dm->cur.plan, out->missing, sizeof(out->missing) / sizeof(out->missing[0]));
	if (ha_report(dm, &out->ha) < 0)
		return -ENOMEM;
	return daemon_captures_report(dm, false, &out->caps, &out->ncaps);
}

void report_status_free(struct status_report *r)
{
	free(r->caps);
	r->caps = NULL;
	free(r->ha.virt);
	r->ha.virt = NULL;
}

static uint32_t count_rows(const struct plan *pl)
{
	uint32_t n = 0;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++)
		if (pl->hook[h].enabled)
			n += pl->hook[h].nrules + 1; /* and the default */
	return n;
}

int report_rows(struct daemon *dm, struct stats_report *out,
		void (*fill)(struct daemon *dm, int h, uint32_t b, struct stats_row *row, void *arg), void *arg)
{
	const struct plan *pl = dm->cur.plan;
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
			row->is_default = def;
			row->limit = !def && ph->rules[b]->limit.rate.n ? &ph->rules[b]->limit : NULL;
			fill(dm, h, b, row, arg);
		}
	}
	return 0;
}

int report_stats(struct daemon *dm, struct stats_report *out, bool zero)
{
	const struct backend_ops *be = backend_of(dm->cur.pol);
	int r;

	*out = (struct stats_report){ 0 };
	if (be && (r = be->stats(dm, out, zero)) < 0) {
		report_stats_free(out);
		return r;
	}
	if (zero) {
		rejects_zero(dm);
		log_info("counters set to 0 (nfbox stats --zero)");
	}
	return daemon_captures_report(dm, true, &out->caps, &out->ncaps);
}

void report_stats_free(struct stats_report *r)
{
	free(r->rows);
	free(r->caps);
	r->rows = NULL;
	r->caps = NULL;
}
