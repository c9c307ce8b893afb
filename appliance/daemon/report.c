/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Collecting status and counters from the daemon and its engine. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "daemon/report.h"

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
		.reloads_ok = dm->reloads_ok,
		.reloads_failed = dm->reloads_failed,
		.events = dm->events_seen,
	};
	engine_get_info(dm->e, &out->engine);
	out->nmissing = links_missing(dm->cur.plan, out->missing, sizeof(out->missing) / sizeof(out->missing[0]));
	return daemon_captures_report(dm, false, &out->caps, &out->ncaps);
}

void report_status_free(struct status_report *r)
{
	free(r->caps);
	r->caps = NULL;
}

static uint32_t count_rows(const struct plan *pl)
{
	uint32_t n = 0;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++)
		if (pl->hook[h].enabled)
			n += pl->hook[h].nrules + 1; /* and the default */
	return n;
}

static void fill_rows(struct daemon *dm, struct stats_report *out)
{
	const struct plan *pl = dm->cur.plan;

	for (int h = 0; pl && h < NFB_HOOK_MAX; h++) {
		const struct plan_hook *ph = &pl->hook[h];

		if (!ph->enabled)
			continue;
		for (uint32_t b = 0; b <= ph->nrules; b++) {
			bool def = b == ph->nrules;
			struct stats_row *row = &out->rows[out->nrows++];

			row->hook = policy_hook_name((enum policy_hook)h);
			row->rule = def ? "(default)" : ph->rules[b]->name;
			row->action = (def ? ph->def : ph->rules[b]->action) == POLICY_ACCEPT ? "accept" : "drop";
			row->is_default = def;
			engine_counter_read(dm->e, def ? dm->cur.slots.default_slot[h] : dm->cur.slots.rule_slot[h][b],
					    &row->c);
		}
	}
}

static uint64_t packets_of(struct daemon *dm, uint32_t slot)
{
	struct nfb_counter c;

	engine_counter_read(dm->e, slot, &c);
	return c.packets;
}

int report_stats(struct daemon *dm, struct stats_report *out)
{
	uint32_t n = count_rows(dm->cur.plan);

	*out = (struct stats_report){ 0 };
	if (!(out->rows = calloc(n ? n : 1, sizeof(*out->rows))))
		return -ENOMEM;
	fill_rows(dm, out);
	engine_counter_read(dm->e, dm->cur.slots.established_slot, &out->established);
	out->malformed = packets_of(dm, NFB_CNT_MALFORMED);
	out->unreassembled = packets_of(dm, NFB_CNT_FRAGMENT);
	out->log_ring_full = packets_of(dm, NFB_CNT_LOG_DROPPED);
	out->log_rate_limited = packets_of(dm, NFB_CNT_LOG_LIMITED);
	return daemon_captures_report(dm, true, &out->caps, &out->ncaps);
}

void report_stats_free(struct stats_report *r)
{
	free(r->rows);
	free(r->caps);
	r->rows = NULL;
	r->caps = NULL;
}
