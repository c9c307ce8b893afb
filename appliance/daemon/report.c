/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Collecting status and counters from the daemon and its engine. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "daemon/report.h"
#include "lib/log.h"
#include "nft/build.h"
#include "nft/counters.h"
#include "nft/emit.h"

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
		.backend = p && p->opt.backend == POLICY_BACKEND_NFTABLES ? "nftables" : "bpf",
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
		int r = fingerprint_on_disk(dm->cur.diags.sources, out->disk_fp);

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

/* A row's counter: the BPF classifier's slot, or the nftables backend's
 * named counter. */
struct counter_source {
	struct daemon *dm;
	bool nft;
	struct nft_counters nc;
};

/* A CLOCK_MONOTONIC time in ns (bpf_ktime_get_ns) as wall-clock ms; 0 stays 0. */
static long long wall_ms_of(uint64_t mono_ns)
{
	struct timespec m, w;

	if (!mono_ns)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &w);
	return ((long long)w.tv_sec * 1000000000 + w.tv_nsec - ((long long)m.tv_sec * 1000000000 + m.tv_nsec) +
		(long long)mono_ns) / 1000000;
}

static void read_named(const struct counter_source *s, const char *name, struct nfb_counter *out)
{
	const struct nfr_counter *c = nft_counters_find(&s->nc, name);

	out->packets = c ? c->packets : 0;
	out->bytes = c ? c->bytes : 0;
}

static void fill_rows(const struct counter_source *s, struct stats_report *out)
{
	struct daemon *dm = s->dm;
	const struct plan *pl = dm->cur.plan;
	char name[NFR_NAME];

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
			if (!s->nft) {
				engine_counter_read(dm->e, def ? dm->cur.slots.default_slot[h] : dm->cur.slots.rule_slot[h][b],
						    &row->c);
				row->last_hit_ms = wall_ms_of(row->c.last_ns);
				if (row->limit)
					engine_limit_over(dm->e, dm->cur.slots.rule_slot[h][b], &row->over_limit);
				continue;
			}
			if (def)
				nft_default_counter_name(name, sizeof(name), (enum policy_hook)h);
			else
				nft_rule_counter_name(name, sizeof(name), (enum policy_hook)h, row->rule);
			read_named(s, name, &row->c);
			row->last_hit_ms = lasthit_of(s->dm, name);
			if (row->limit) {
				struct nfb_counter over;

				nft_over_limit_counter_name(name, sizeof(name), (enum policy_hook)h, row->rule);
				read_named(s, name, &over);
				row->over_limit = over.packets;
			}
		}
	}
}

static uint64_t packets_of(struct daemon *dm, uint32_t slot)
{
	struct nfb_counter c;

	engine_counter_read(dm->e, slot, &c);
	return c.packets;
}

/* After the report: every counter it showed back to 0 (BPF: read, then
 * zeroed, so what is counted in between is lost; nftables: read and reset
 * by the kernel in one step, in report_stats). */
static void zero_bpf(struct daemon *dm)
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

int report_stats(struct daemon *dm, struct stats_report *out, bool zero)
{
	uint32_t n = count_rows(dm->cur.plan);
	struct counter_source s = { .dm = dm, .nft = dm->cur.pol && dm->cur.pol->opt.backend == POLICY_BACKEND_NFTABLES };
	struct nfb_counter c;
	int r;

	*out = (struct stats_report){ 0 };
	if (s.nft && (r = nft_counters_read_reset(&s.nc, zero)) < 0)
		return r;
	if (!(out->rows = calloc(n ? n : 1, sizeof(*out->rows)))) {
		nft_counters_free(&s.nc);
		return -ENOMEM;
	}
	if (s.nft && !zero)
		lasthit_tick(dm); /* up to date for this answer, if a read is due */
	fill_rows(&s, out);
	if (s.nft && zero)
		lasthit_zero(dm);
	if (s.nft) {
		read_named(&s, NFT_COUNTER_ESTABLISHED, &out->established);
		read_named(&s, NFT_COUNTER_UNREASSEMBLED, &c);
		out->unreassembled = c.packets;
		read_named(&s, NFT_COUNTER_REJECT_LIMITED, &c);
		out->reject_rate_limited = c.packets;
		{
			struct nfb_counter wanted, logged;

			read_named(&s, NFT_COUNTER_LOG_WANTED, &wanted);
			read_named(&s, NFT_COUNTER_LOGGED, &logged);
			out->log_rate_limited = wanted.packets > logged.packets ? wanted.packets - logged.packets : 0;
		}
		nft_counters_free(&s.nc);
	} else {
		engine_counter_read(dm->e, dm->cur.slots.established_slot, &out->established);
		out->malformed = packets_of(dm, NFB_CNT_MALFORMED);
		out->unreassembled = packets_of(dm, NFB_CNT_FRAGMENT);
		out->log_ring_full = packets_of(dm, NFB_CNT_LOG_DROPPED);
		out->log_rate_limited = packets_of(dm, NFB_CNT_LOG_LIMITED);
		out->reject_rate_limited = packets_of(dm, NFB_CNT_REJECT_LIMITED);
		out->reject_ring_full = packets_of(dm, NFB_CNT_REJECT_LOST);
		out->reject_unanswerable = dm->rejects_unanswerable;
		out->reject_send_failed = dm->reject_send_failed;
		out->reject_replies = dm->rejects_sent;
		if (zero && dm->e)
			zero_bpf(dm);
	}
	if (zero) {
		dm->rejects_unanswerable = dm->reject_send_failed = dm->rejects_sent = 0;
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
