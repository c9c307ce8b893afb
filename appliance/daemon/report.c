/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's reports: the core's values, then the parts' (report.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/backends.h"
#include "daemon/daemon_int.h"
#include "daemon/events.h"
#include "daemon/links.h"
#include "daemon/report.h"
#include "lib/fingerprint.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "system/netns.h"

#define U(x) ((unsigned long long)(x))

static const struct rep_metric m_info = { "nfbox_info", "gauge",
					  "The daemon: version, backend and the fingerprint of the policy in force.",
					  "version backend fingerprint" };
static const struct rep_metric m_rules = { "nfbox_policy_rules", "gauge", "Rules of the policy in force.", NULL };
static const struct rep_metric m_loaded = { "nfbox_policy_loaded_timestamp_seconds", "gauge",
					    "When the policy in force was loaded.", NULL };
static const struct rep_metric m_reloads_ok = { "nfbox_reloads_total{result=\"ok\"}", "counter", "Reloads, by result.",
						NULL };
static const struct rep_metric m_reloads_failed = { "nfbox_reloads_total{result=\"failed\"}", "counter",
						    "Reloads, by result.", NULL };

/* ---- status ---- */

/* What the start found pinned and did with it: "" (nothing was pinned). */
static const char *start_text(const struct rep *o, char *buf, size_t len)
{
	if (rep_b(o, "adopted"))
		snprintf(buf, len, " (adopted at start: enforcement had no gap%s)",
			 rep_b(o, "programs_replaced")
				 ? "; its programs were another build's, and this build's took their place"
				 : "");
	else if (rep_has(o, "replaced") && rep_u(o, "set_aside"))
		snprintf(buf, len,
			 " (the state found at start %s: set aside, enforcing until this version's policy is in force)",
			 rep_s(o, "replaced"));
	else if (rep_has(o, "replaced"))
		snprintf(buf, len,
			 " (the state found at start %s: replaced without a gap; its counters were not carried over)",
			 rep_s(o, "replaced"));
	else
		buf[0] = '\0';
	return buf;
}

static void status_text(const struct rep *o, FILE *f)
{
	const struct rep *fwd = rep_get(o, "forwarding"), *v;
	char start[512];

	fprintf(f, "nfbox running: pid %lld, up %llds\n", (long long)rep_i(o, "pid"), (long long)rep_i(o, "uptime"));
	if (!strcmp(rep_s(o, "backend"), "nftables"))
		fprintf(f, "policy:     %s, %llu rules (nftables backend)\n",
			rep_has(o, "policy") ? rep_s(o, "policy") : "-", U(rep_u(o, "rules")));
	else
		fprintf(f, "policy:     %s, %llu rules (generation %llu, map set %llu)\n",
			rep_has(o, "policy") ? rep_s(o, "policy") : "-", U(rep_u(o, "rules")),
			U(rep_u(o, "generation")), U(rep_u(o, "active_gen")));
	if (rep_has(o, "policy") && strcmp(rep_s(o, "policy"), rep_s(o, "configured_policy")))
		fprintf(f, "configured: %s (what a plain reload reads)\n", rep_s(o, "configured_policy"));
	if (rep_has(o, "fingerprint")) {
		const char *disk = rep_s(o, "on_disk");
		char when[32];
		time_t t = (time_t)rep_i(o, "loaded_at");
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		fprintf(f, "loaded:     %s, sha256 %s; the files on disk: %s\n", when, rep_s(o, "fingerprint"),
			!strcmp(disk, "same")	   ? "the same"
			: !strcmp(disk, "changed") ? "changed since"
						   : disk);
	}
	fprintf(f, "version:    %s\n", rep_s(o, "version"));
	if (rep_u(o, "bpf_memory_bytes"))
		fprintf(f, "bpf memory: %.1f MiB (the classifier's maps)\n",
			(double)rep_u(o, "bpf_memory_bytes") / 1048576);
	if (rep_s(o, "early_xdp")[0])
		fprintf(f, "early drop at XDP on: %s\n", rep_s(o, "early_xdp"));
	fprintf(f, "defrag:     %s\n", rep_b(o, "defrag") ? "on (verdicts on reassembled datagrams)" : "off");
	fprintf(f, "backend:    %s%s\n", rep_s(o, "backend"),
		!rep_b(o, "nft_table")	      ? ""
		: rep_b(o, "nft_table_owned") ? " (table inet nfbox, owned by this process)"
					      : " (table inet nfbox)");
	v = rep_get(o, "netns");
	if (rep_b(v, "initial"))
		fprintf(f, "netns:      initial (cookie %llu)\n", U(rep_u(v, "cookie")));
	else
		fprintf(f, "netns:      %s (cookie %llu)\n", rep_s(v, "name")[0] ? rep_s(v, "name") : "unnamed",
			U(rep_u(v, "cookie")));
	if (rep_has(o, "pin_dir"))
		fprintf(f, "pin dir:    %s%s\n", rep_s(o, "pin_dir"), start_text(o, start, sizeof(start)));
	else
		fprintf(f, "pin dir:    none (--no-pin): enforcement ends with this process\n");
	fprintf(f, "reloads:    %llu ok, %llu failed\n", U(rep_u(o, "reloads_ok")), U(rep_u(o, "reloads_failed")));
	fprintf(f, "log events: %llu\n", U(rep_u(o, "events")));
	if (rep_u(o, "sched_conns_full"))
		fprintf(f,
			"warning:    %llu connections let in by scheduled rules were not recorded (the classifier's "
			"nfb_sched_conns was full): they are not cut when their rule goes out of force\n",
			U(rep_u(o, "sched_conns_full")));
	v = rep_get(o, "missing_interfaces");
	if (rep_count(v)) {
		fputs("missing:   ", f);
		for (const struct rep *m = rep_first(v); m; m = rep_next(m))
			fprintf(f, "%s%s", m == rep_first(v) ? " " : ", ", rep_string(m));
		fputs(" (interfaces the policy names that do not exist: rules naming them match nothing until they "
		      "appear)\n",
		      f);
	}
	for (const struct rep *w = rep_first(rep_get(fwd, "warnings")); w; w = rep_next(w))
		fprintf(f, "warning:    %s; %s\n", rep_s(w, "message"), rep_s(w, "fix"));
}

/* "forwarding": {"ipv4", "ipv6": this namespace forwards it; "needed": the
 * families the policy forwards or translates; "warnings": [{"family",
 * "message", "fix"}] for each needed and not forwarded}; the switches are
 * read for every status. */
static void status_forwarding(const struct policy *p, struct rep *root)
{
	static const char *const fam[2] = { "ipv4", "ipv6" };
	struct policy_forward_why why[2];
	uint8_t host = netns_forwarding(NULL), needed = p ? policy_forwarded(p, why) : 0;
	struct rep *o = rep_object(root, "forwarding"), *l;

	for (int i = 0; i < 2; i++)
		rep_bool(o, fam[i], host & (POLICY_FAM_IPV4 << i));
	l = rep_list(o, "needed");
	for (int i = 0; i < 2; i++)
		if (needed & (POLICY_FAM_IPV4 << i))
			rep_str(l, NULL, fam[i]);
	l = rep_list(o, "warnings");
	for (int i = 0; i < 2; i++) {
		char msg[512], fix[256];
		struct rep *w;

		if (!(needed & ~host & (POLICY_FAM_IPV4 << i)))
			continue;
		policy_forwarding_text(i, &why[i], msg, sizeof(msg), fix, sizeof(fix));
		w = rep_object(l, NULL);
		rep_str(w, "family", fam[i]);
		rep_str(w, "message", msg);
		rep_str(w, "fix", fix);
	}
}

struct rep *report_status(struct daemon *dm)
{
	const struct policy *p = dm->cur.pol;
	const char *missing[64];
	uint32_t nmissing = links_missing(dm->cur.pol, missing, sizeof(missing) / sizeof(missing[0]));
	struct rep *root = rep_root(), *o;

	rep_text(root, status_text);
	rep_int(root, "pid", (int64_t)getpid());
	rep_int(root, "uptime", (int64_t)(time(NULL) - dm->started));
	rep_str(root, "policy", dm->cur.path);
	/* what a plain reload reads: --policy, or a fleet's last revision */
	rep_str(root, "configured_policy", dm->policy_path);
	rep_str(root, "version", NFBOX_VERSION);
	rep_str(root, "fingerprint", dm->fingerprint[0] ? dm->fingerprint : NULL);
	rep_metric(rep_int(root, "loaded_at", dm->loaded_at), &m_loaded);
	/* Whether the files on disk are still what runs: read and hashed again. */
	if (!p || !dm->fingerprint[0]) {
		rep_null(root, "on_disk");
	} else {
		char fp[65];
		int r = fingerprint_on_disk_cached(&dm->on_disk, p->sources.head, fp);

		rep_str(root, "on_disk", r < 0 ? strerror(-r) : !strcmp(fp, dm->fingerprint) ? "same" : "changed");
	}
	rep_metric(rep_uint(root, "rules", p ? p->nrules : 0), &m_rules);
	rep_bool(root, "defrag", p && p->opt.defrag);
	rep_str(root, "backend", p ? backend_of(dm, p)->ops->name : "bpf");
	rep_metric(rep_hidden(rep_uint(root, "info", 1)), &m_info);
	rep_metric(rep_uint(root, "reloads_ok", dm->reloads_ok), &m_reloads_ok);
	rep_metric(rep_uint(root, "reloads_failed", dm->reloads_failed), &m_reloads_failed);
	rep_str(root, "state_dir", dm->state_dir);
	rep_uint(root, "events", eventlog_seen(dm->events));
	o = rep_object(root, "netns");
	rep_str(o, "name", dm->netns.name);
	rep_bool(o, "initial", dm->netns.initial);
	rep_uint(o, "cookie", dm->netns.cookie);
	o = rep_list(root, "missing_interfaces");
	for (uint32_t i = 0; i < nmissing; i++)
		rep_str(o, NULL, missing[i]);
	status_forwarding(p, root);
	backends_status(dm, root); /* the engine's links and memory, the table */
	parts_status(dm, root);
	return root;
}

/* ---- stats ---- */

static const struct rep_metric m_rule_packets = { "nfbox_rule_packets_total", "counter", "Packets each rule matched.",
						  "hook rule action" };
static const struct rep_metric m_rule_bytes = { "nfbox_rule_bytes_total", "counter",
						"Bytes of the packets each rule matched.", "hook rule action" };
static const struct rep_metric m_default_packets = { "nfbox_default_packets_total", "counter",
						     "Packets no rule matched: the hook's default verdict.",
						     "hook action" };
static const struct rep_metric m_default_bytes = { "nfbox_default_bytes_total", "counter",
						   "Bytes of the packets that got the hook's default verdict.",
						   "hook action" };
static const struct rep_metric m_over_limit = { "nfbox_rule_over_limit_total", "counter",
						"Packets over a rule's limit, gone on to later rules.", "hook rule" };
static const struct rep_metric m_last_hit = { "nfbox_rule_last_hit_timestamp_seconds", "gauge",
					      "When each rule (and hook default) last matched a packet; 0: not yet.",
					      "hook rule" };
static const struct rep_metric m_established_packets = {
	"nfbox_established_packets_total", "counter",
	"Packets of established and related connections, accepted before the rules.", NULL
};
static const struct rep_metric m_established_bytes = { "nfbox_established_bytes_total", "counter",
						       "Bytes of those packets.", NULL };
/* nfbox stats' "drops": each counter by its name */
const struct rep_metric report_drop_metric = {
	"nfbox_drops_total", "counter",
	"Packets, events and replies lost or dropped, by reason (as nfbox stats names them).", "reason=key"
};

static uint32_t count_rows(const struct policy *p)
{
	uint32_t n = 0;

	for (int h = 0; p && h < POLICY_HOOK_MAX; h++) {
		if (!p->hooks[h].present)
			continue;
		n++; /* the default */
		for (uint32_t i = 0; i < p->nrules; i++)
			n += (p->rules[i].hooks >> h) & 1;
	}
	return n;
}

/* A row for each rule and default of p, hook by hook (a hook's rules in
 * the policy's order: b, each rule's index among them, is how a backend
 * finds its counters), each given its hook, name, action and limit; the
 * backend fills in the counts. */
static int make_rows(const struct policy *p, struct stats_rows *out)
{
	uint32_t n = count_rows(p);

	out->n = 0;
	if (!(out->v = calloc(n ? n : 1, sizeof(*out->v))))
		return -ENOMEM;
	for (int h = 0; p && h < POLICY_HOOK_MAX; h++) {
		uint32_t b = 0;

		if (!p->hooks[h].present)
			continue;
		for (uint32_t i = 0; i <= p->nrules; i++) {
			const struct rule *ru = i < p->nrules ? &p->rules[i] : NULL;
			struct stats_row *row;

			if (ru && !((ru->hooks >> h) & 1))
				continue;
			row = &out->v[out->n++];
			row->hook = policy_hook_name((enum policy_hook)h);
			row->rule = ru ? ru->name : "(default)";
			row->action = policy_action_name(ru ? ru->action : p->hooks[h].def);
			row->h = h;
			row->b = b++;
			row->is_default = !ru;
			row->limit = ru && policy_has_limit(&ru->limit) ? &ru->limit : NULL;
		}
	}
	return 0;
}

/* The rows and the backend's own counts. */
static int rows_of(struct daemon *dm, struct stats_rows *rows, struct backend_stats *bs, bool zero)
{
	struct backend *be = backend_in_force(dm);
	int r;

	*bs = (struct backend_stats){ 0 };
	if ((r = make_rows(be ? dm->cur.pol : NULL, rows)) < 0 ||
	    (be && (r = be->ops->stats(be, &dm->cur, rows->v, rows->n, bs, zero)) < 0)) {
		free(rows->v);
		rows->v = NULL;
		rows->n = 0;
		return r;
	}
	parts_stats(dm, rows, NULL, false); /* the last hits */
	return 0;
}

int daemon_rows(struct daemon *dm, struct stats_rows *rows)
{
	struct backend_stats bs;

	return rows_of(dm, rows, &bs, false);
}

static void rules_text(const struct rep *o, FILE *f)
{
	const struct rep *est = rep_get(rep_parent(o), "established");
	bool limits = false;

	for (const struct rep *r = rep_first(o); r; r = rep_next(r))
		limits |= rep_get(r, "limit") != NULL;
	fprintf(f, "hook     rule                             action         packets            bytes%s  last hit\n",
		limits ? "       over-limit" : "");
	for (const struct rep *r = rep_first(o); r; r = rep_next(r)) {
		char age[32];

		fprintf(f, "%-8s %-32s %-6s %16llu %16llu", rep_s(r, "hook"), rep_s(r, "rule"), rep_s(r, "action"),
			U(rep_u(r, "packets")), U(rep_u(r, "bytes")));
		if (rep_get(r, "limit"))
			fprintf(f, " %16llu", U(rep_u(r, "over_limit")));
		else if (limits)
			fprintf(f, " %16s", "-");
		fprintf(f, "  %s\n", rep_ago(rep_i(r, "last_hit"), age, sizeof(age)));
	}
	fprintf(f, "%-8s %-32s %-6s %16llu %16llu\n\n", "all", "(established/related, skip rules)", "accept",
		U(rep_u(est, "packets")), U(rep_u(est, "bytes")));
}

static void drops_text(const struct rep *o, FILE *f)
{
	for (const struct rep *v = rep_first(o); v; v = rep_next(v))
		fprintf(f, "%-24s %llu\n", rep_key(v), U(rep_value_u(v)));
}

struct rep *report_stats(struct daemon *dm, bool zero)
{
	static const struct {
		const char *name;
		size_t off;
	} drops[] = {
		{ "malformed", offsetof(struct backend_stats, malformed) },
		{ "unreassembled", offsetof(struct backend_stats, unreassembled) },
		{ "log_ring_full", offsetof(struct backend_stats, log_ring_full) },
		{ "log_rate_limited", offsetof(struct backend_stats, log_rate_limited) },
		{ "reject_rate_limited", offsetof(struct backend_stats, reject_rate_limited) },
		{ "reject_ring_full", offsetof(struct backend_stats, reject_ring_full) },
		{ "reject_unanswerable", offsetof(struct backend_stats, reject_unanswerable) },
		{ "reject_send_failed", offsetof(struct backend_stats, reject_send_failed) },
		{ "reject_replies", offsetof(struct backend_stats, reject_replies) },
		{ "conn_events_lost", offsetof(struct backend_stats, conn_events_lost) },
		{ "conn_release_failed", offsetof(struct backend_stats, conn_release_failed) },
		{ "sched_conns_full", offsetof(struct backend_stats, sched_conns_full) },
	};
	struct rep *root = rep_root(), *l, *o;
	struct backend_stats bs;
	struct stats_rows rows;

	if (!root)
		return NULL;
	if (rows_of(dm, &rows, &bs, zero) < 0) {
		rep_free(root);
		return NULL;
	}
	l = rep_list(root, "rules");
	rep_text(l, rules_text);
	for (uint32_t i = 0; i < rows.n; i++) {
		const struct stats_row *row = &rows.v[i];
		bool def = row->is_default;

		o = rep_object(l, NULL);
		rep_str(o, "hook", row->hook);
		rep_str(o, "rule", row->rule);
		rep_str(o, "action", row->action);
		rep_bool(o, "default", def);
		rep_metric(rep_uint(o, "packets", row->c.packets), def ? &m_default_packets : &m_rule_packets);
		rep_metric(rep_uint(o, "bytes", row->c.bytes), def ? &m_default_bytes : &m_rule_bytes);
		if (row->limit) {
			char buf[160];

			policy_limit_format(row->limit, buf, sizeof(buf));
			rep_str(o, "limit", buf);
			rep_metric(rep_uint(o, "over_limit", row->over_limit), &m_over_limit);
		}
		rep_metric(rep_ms(o, "last_hit", row->last_hit_ms), &m_last_hit);
		rep_ms(o, "in_force_since", row->in_force_ms);
	}
	free(rows.v);
	o = rep_object(root, "established");
	rep_metric(rep_uint(o, "packets", bs.established.packets), &m_established_packets);
	rep_metric(rep_uint(o, "bytes", bs.established.bytes), &m_established_bytes);
	o = rep_object(root, "drops");
	rep_text(o, drops_text);
	for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
		rep_metric(rep_uint(o, drops[i].name, *(const uint64_t *)((const char *)&bs + drops[i].off)),
			   &report_drop_metric);
	parts_stats(dm, NULL, root, zero); /* their drops, the captures */
	if (zero)
		log_info("counters set to 0 (nfbox stats --zero)");
	return root;
}

/* "7d", "5h", "90m", "45s": a window as given, in its largest whole unit */
static void window_text(unsigned s, char *buf, size_t len)
{
	if (s % 86400 == 0)
		snprintf(buf, len, "%ud", s / 86400);
	else if (s % 3600 == 0)
		snprintf(buf, len, "%uh", s / 3600);
	else if (s % 60 == 0)
		snprintf(buf, len, "%um", s / 60);
	else
		snprintf(buf, len, "%us", s);
}

/* "last_hit" (s, null for never) and "in_force_since" (s, null if not known) */
static void last_hit_json(struct json *j, const struct rep *row)
{
	long long hit = rep_i(row, "last_hit"), since = rep_i(row, "in_force_since");

	json_key(j, "last_hit");
	if (hit)
		json_fixed(j, (double)hit / 1000.0, 3);
	else
		json_null_value(j);
	json_key(j, "in_force_since");
	if (since)
		json_fixed(j, (double)since / 1000.0, 3);
	else
		json_null_value(j);
}

void report_unused(const struct rep *stats, FILE *f, bool json, unsigned since)
{
	const struct rep *rules = rep_get(stats, "rules");
	long long now = clock_ms(CLOCK_REALTIME), cut = since ? now - (long long)since * 1000 : 0;
	uint32_t n = 0;
	struct json j;
	char win[32];

	window_text(since, win, sizeof(win));
	if (json) {
		json_init(&j, f);
		json_object_begin(&j);
		json_key(&j, "since");
		if (since)
			json_u64(&j, since);
		else
			json_null_value(&j);
		json_kv_u64(&j, "rules_in_force", rep_count(rules));
		json_key(&j, "unused");
		json_array_begin(&j);
	} else {
		fprintf(f, "%-8s %-32s %-6s  %-16s %s\n", "hook", "rule", "action", "in force since", "last hit");
	}
	for (const struct rep *row = rep_first(rules); row; row = rep_next(row)) {
		long long hit = rep_i(row, "last_hit"), in_force = rep_i(row, "in_force_since");
		bool younger = since && in_force > cut;
		char a[32], b[32];

		if (hit && hit >= cut)
			continue;
		n++;
		if (json) {
			json_object_begin(&j);
			json_kv_str(&j, "hook", rep_s(row, "hook"));
			json_kv_str(&j, "rule", rep_s(row, "rule"));
			json_kv_str(&j, "action", rep_s(row, "action"));
			json_kv_bool(&j, "default", rep_b(row, "default"));
			last_hit_json(&j, row);
			json_kv_bool(&j, "in_force_shorter", younger);
			json_object_end(&j);
			continue;
		}
		fprintf(f, "%-8s %-32s %-6s  %-16s %s%s\n", rep_s(row, "hook"), rep_s(row, "rule"),
			rep_s(row, "action"), in_force ? rep_ago(in_force, a, sizeof(a)) : "?",
			rep_ago(hit, b, sizeof(b)), younger ? "  (in force for less than the window)" : "");
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
		fputc('\n', f);
		return;
	}
	if (since)
		fprintf(f, "%u of %u rules and defaults without a hit in the last %s\n", n, rep_count(rules), win);
	else
		fprintf(f, "%u of %u rules and defaults never hit since they came into force\n", n, rep_count(rules));
}

/* ---- metrics (nfbox metrics, GET /metrics) ---- */

int daemon_metrics(struct daemon *dm, FILE *f)
{
	struct rep *t[2] = { report_status(dm), report_stats(dm, false) };
	int r = rep_failed(t[0]) ?: rep_failed(t[1]);

	if (r == 0)
		rep_write_metrics((const struct rep *const *)t, 2, f);
	rep_free(t[0]);
	rep_free(t[1]);
	return r;
}
