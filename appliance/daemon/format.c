/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Status and stats reports as text (for people) and JSON (for programs). */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "daemon/report.h"
#include "policy/schedule/schedule.h"
#include "dynset/dynset.h"
#include "base/clock.h"
#include "base/json.h"

#define U(x) ((unsigned long long)(x))

static const char *fam_name(int fam)
{
	return policy_family_name((enum policy_family)(1 << fam));
}

/* ---- status ---- */

static void status_links_text(const struct engine_info *e, FILE *f)
{
	bool any = false;

	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int fam = 0; fam < NFB_FAM_MAX; fam++)
			any |= e->link[h][fam].fd >= 0;
	if (!any) {
		fprintf(f, "links:      none (no BPF classifier attached)\n");
		return;
	}
	fprintf(f, "links:\n");
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int fam = 0; fam < NFB_FAM_MAX; fam++) {
			const struct engine_link *l = &e->link[h][fam];

			if (l->fd >= 0)
				fprintf(f, "  %-8s %-5s link %u, priority %d%s\n",
					policy_hook_name((enum policy_hook)h), fam_name(fam), l->id, l->priority,
					l->defrag ? ", defrag" : "");
		}
}

static void status_dynsets_text(const struct dynsets *dyn, const struct dyn_report *dr, FILE *f)
{
	bool first = true;
	char age[32];

	for (uint32_t i = 0; dyn && i < dyn->n; i++) {
		if (!dyn->sets[i].in_policy)
			continue;
		fprintf(f, "%s%s %llu", first ? "dynamic:    " : ", ", dyn->sets[i].name,
			U((uint64_t)dyn->sets[i].n[0] + dyn->sets[i].n[1]));
		first = false;
	}
	if (first)
		return;
	fputs(" entries (nfbox set list NAME)\n", f);
	fprintf(f, "            the kernel checked against them %s (every %llus): %llu entries repaired",
		format_ago(dr->checked_at, age, sizeof(age)), U(dr->every_ms / 1000), U(dr->repaired));
	if (dr->check_failed)
		fprintf(f, ", %llu checks failed", U(dr->check_failed));
	if (dr->last_repair[0])
		fprintf(f, " (last: %s)", dr->last_repair);
	fputc('\n', f);
	if (dr->refused)
		fprintf(f, "            %llu automatic bans refused (addresses that are never banned)\n",
			U(dr->refused));
}

static void status_feeds_text(const struct status_report *r, FILE *f)
{
	for (uint32_t i = 0; i < r->nfeeds; i++) {
		const struct feed_report *x = &r->feeds[i];
		char age[32];

		fprintf(f, "%-11s %s: %s, %s; %llu entries, loaded %s\n", i ? "" : "feeds:", x->set, x->kind, x->source,
			U(x->entries), format_ago(x->loaded * 1000, age, sizeof(age)));
		if (x->problem[0])
			fprintf(f, "%-11s   warning: %s\n", "", x->problem);
	}
}

static void status_fleet_text(const struct report_fleet *x, FILE *f)
{
	char age[32];

	if (!x->present)
		return;
	fprintf(f, "fleet:      node %s of group %s; etcd %s %s (%s)\n", x->node, x->group,
		x->connected ? "reached at" : "NOT reached since",
		x->connected ? x->endpoint : format_ago(x->since * 1000, age, sizeof(age)),
		x->connected ? format_ago(x->since * 1000, age, sizeof(age)) : "the policy in force stays");
	if (x->revision)
		fprintf(f, "            revision %lld (%.12s)%s\n", x->revision, x->fingerprint,
			x->local_change ? "; what is enforced is NOT that revision (a local reload)" : "");
	else
		fprintf(f, "            no revision of the group applied yet\n");
	if (x->candidate)
		fprintf(f, "            candidate %lld: %s\n", x->candidate, x->candidate_state);
	fprintf(f, "            shared entries: %lu sent, %lu received\n", x->published, x->received);
	if (x->last_error[0])
		fprintf(f, "            last error: %s\n", x->last_error);
}

static void status_fleet_json(const struct report_fleet *x, struct json *j)
{
	json_key(j, "fleet");
	if (!x->present) {
		json_null_value(j);
		return;
	}
	json_object_begin(j);
	json_kv_str(j, "node", x->node);
	json_kv_str(j, "group", x->group);
	json_kv_bool(j, "connected", x->connected);
	json_kv_str(j, "endpoint", x->endpoint);
	json_kv_i64(j, "since", x->since);
	json_kv_i64(j, "revision", x->revision);
	json_kv_str(j, "fingerprint", x->fingerprint);
	json_kv_bool(j, "local_change", x->local_change);
	json_kv_i64(j, "candidate", x->candidate);
	json_kv_str(j, "candidate_state", x->candidate_state);
	json_kv_u64(j, "published", x->published);
	json_kv_u64(j, "received", x->received);
	json_kv_str(j, "last_error", x->last_error[0] ? x->last_error : NULL);
	json_object_end(j);
}

static void status_captures_text(const struct report_capture *c, uint32_t n, FILE *f)
{
	if (!n)
		return;
	fprintf(f, "captures:\n");
	for (uint32_t i = 0; i < n; i++, c++) {
		const struct capture_info *in = &c->info;
		bool mirror = c->mirror_from[0];

		if (!c->running) {
			fprintf(f, "  %-12s %s -> %s: not running: %s\n", c->name, c->ifname, c->file, c->error);
			continue;
		}
		fprintf(f, "  %-12s %s%s%s%s -> %s: %u rx queue%s, %s XDP, %s", c->name, c->ifname,
			mirror ? " (mirror of " : "", mirror ? c->mirror_from : "", mirror ? ")" : "", c->file,
			in->nqueues, in->nqueues == 1 ? "" : "s", capture_xdp_mode_name(in->xdp_mode),
			in->zerocopy ? "zero-copy" : "copy mode");
		if (in->copy_reason)
			fprintf(f, " (%s)", in->copy_reason);
		fputc('\n', f);
	}
}

static void status_ha_text(const struct report_ha *h, FILE *f)
{
	const struct ha_sync_stats *s = &h->stats;
	char when[32];

	if (!h->present)
		return;
	fprintf(f, "ha:         %s", h->role);
	if (h->since) {
		time_t t = (time_t)h->since;
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		fprintf(f, " since %s (%lld s; was %s)", when, (long long)time(NULL) - h->since, h->prev_role);
	}
	fprintf(f, ", priority %d, adverts every %u ms, %lu transition%s\n", h->priority, h->advert_ms, h->transitions,
		h->transitions == 1 ? "" : "s");
	if (h->error[0])
		fprintf(f, "            %s\n", h->error);
	fprintf(f, "            peer %s over %s%s%s\n", h->peer, h->sync_ifname, h->sync_addr[0] ? " from " : "",
		h->sync_addr);
	for (int i = 0; i < 2; i++) {
		fprintf(f, "            %-10s ", h->daemons[i].name);
		if (h->daemons[i].pid)
			fprintf(f, "pid %d", h->daemons[i].pid);
		else
			fprintf(f, "not running");
		fprintf(f, ", %lu restart%s", h->daemons[i].restarts, h->daemons[i].restarts == 1 ? "" : "s");
		if (h->daemons[i].last_exit[0])
			fprintf(f, ", last exit: %s", h->daemons[i].last_exit);
		fputc('\n', f);
	}
	if (h->stats_at)
		fprintf(f,
			"            sync: %llu connections held, %llu from the peer; messages %llu sent, %llu "
			"received; %llu send errors, %llu receive errors, %llu lost, %llu malformed (%lld s ago)\n",
			U(s->internal), U(s->external), U(s->msgs_sent), U(s->msgs_recv), U(s->send_errors),
			U(s->recv_errors), U(s->lost), U(s->malformed), (long long)time(NULL) - h->stats_at);
	for (uint32_t i = 0; i < h->nvirt; i++)
		fprintf(f, "            %-16s %s on %s, id %u: %s\n", h->virt[i].instance, h->virt[i].address,
			h->virt[i].ifname, h->virt[i].id, h->virt[i].state);
}

/* "2026-12-05T08:00:00Z (in 3h)" */
static const char *when_text(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	long long in = (long long)(t - (int64_t)time(NULL));
	struct tm tm;
	char at[32];

	if (t == SCHED_NEVER)
		return "none within 8 days";
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tt, &tm));
	if (in < 120)
		snprintf(buf, len, "%s (in %llds)", at, in < 0 ? 0 : in);
	else if (in < 7200)
		snprintf(buf, len, "%s (in %lldm)", at, in / 60);
	else
		snprintf(buf, len, "%s (in %lldh)", at, in / 3600);
	return buf;
}

static void status_sched_text(const struct status_report *r, FILE *f)
{
	char buf[80];

	for (uint32_t i = 0; i < r->nsched; i++)
		fprintf(f, "%-11s %-24s %-16s next change %s\n", i ? "" : "schedules:", r->sched[i].rule,
			r->sched[i].open ? "in force" : "out of force", when_text(r->sched[i].next, buf, sizeof(buf)));
}

static void status_http_text(const struct httpd_report *x, FILE *f)
{
	if (!x->listen)
		return;
	fprintf(f,
		"metrics:    http://%s/metrics: %lu served, %lu refused, %lu connections closed with no request's "
		"head within %u s\n",
		x->listen, x->served, x->refused, x->head_timeouts, x->head_deadline_s);
}

/* What the start found pinned and did with it: "" (nothing was pinned). */
static const char *start_text(const struct engine_info *e, char *buf, size_t len)
{
	if (e->adopted)
		snprintf(buf, len, " (adopted at start: enforcement had no gap%s)",
			 e->programs_replaced ? "; its programs were another build's, and this build's took their place"
					      : "");
	else if (e->replaced && e->set_aside)
		snprintf(buf, len,
			 " (the state found at start %s: set aside, enforcing until this version's policy is in force)",
			 e->replaced);
	else if (e->replaced)
		snprintf(buf, len,
			 " (the state found at start %s: replaced without a gap; its counters were not carried over)",
			 e->replaced);
	else
		snprintf(buf, len, "%s", "");
	return buf;
}

static void status_text(const struct status_report *r, FILE *f)
{
	const struct engine_info *e = &r->be.engine;
	char start[512];

	fprintf(f, "nfbox running: pid %d, up %lds\n", r->pid, r->uptime);
	if (!strcmp(r->backend, "nftables"))
		fprintf(f, "policy:     %s, %u rules (nftables backend)\n", r->policy ? r->policy : "-", r->rules);
	else
		fprintf(f, "policy:     %s, %u rules (generation %llu, map set %u)\n", r->policy ? r->policy : "-",
			r->rules, U(e->generation), e->active_gen);
	if (r->fingerprint[0]) {
		char when[32];
		time_t t = (time_t)r->loaded_at;
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		fprintf(f, "loaded:     %s, sha256 %s; the files on disk: %s\n", when, r->fingerprint,
			!strcmp(r->on_disk, "same")	 ? "the same"
			: !strcmp(r->on_disk, "changed") ? "changed since"
							 : r->on_disk);
	}
	fprintf(f, "version:    %s\n", r->version);
	if (r->be.bpf_memory)
		fprintf(f, "bpf memory: %.1f MiB (the classifier's maps)\n", (double)r->be.bpf_memory / 1048576);
	if (r->be.early_ifaces_n)
		fprintf(f, "early drop at XDP on: %s\n", r->be.early_ifaces);
	fprintf(f, "defrag:     %s\n", r->defrag ? "on (verdicts on reassembled datagrams)" : "off");
	fprintf(f, "backend:    %s%s\n", r->backend,
		r->be.nft_table != 1 ? ""
		: r->be.nft_owned    ? " (table inet nfbox, owned by this process)"
				     : " (table inet nfbox)");
	if (r->netns_initial)
		fprintf(f, "netns:      initial (cookie %llu)\n", U(r->netns_cookie));
	else
		fprintf(f, "netns:      %s (cookie %llu)\n", r->netns[0] ? r->netns : "unnamed", U(r->netns_cookie));
	if (e->pin_dir)
		fprintf(f, "pin dir:    %s%s\n", e->pin_dir, start_text(e, start, sizeof(start)));
	else
		fprintf(f, "pin dir:    none (--no-pin): enforcement ends with this process\n");
	fprintf(f, "reloads:    %lu ok, %lu failed\n", r->reloads_ok, r->reloads_failed);
	if (r->pending) {
		long long left = r->pending_deadline - (long long)time(NULL);

		fprintf(f,
			"pending:    this policy rolls back to the last confirmed one in %lld s unless 'nfbox confirm' "
			"(unconfirmed for %lld s)\n",
			left < 0 ? 0 : left, (long long)time(NULL) - r->pending_since);
	}
	fprintf(f, "log events: %llu\n", r->events);
	status_http_text(&r->http, f);
	if (r->nmissing) {
		fputs("missing:   ", f);
		for (uint32_t i = 0; i < r->nmissing; i++)
			fprintf(f, "%s%s", i ? ", " : " ", r->missing[i]);
		fputs(" (interfaces the policy names that do not exist: rules naming them match nothing until they "
		      "appear)\n",
		      f);
	}
	for (int i = 0; i < 2; i++)
		if (r->fwd[i].msg[0])
			fprintf(f, "warning:    %s; %s\n", r->fwd[i].msg, r->fwd[i].fix);
	status_ha_text(&r->ha, f);
	status_sched_text(r, f);
	status_dynsets_text(r->dyn, &r->dynr, f);
	status_feeds_text(r, f);
	status_fleet_text(&r->fleet, f);
	status_links_text(e, f);
	status_captures_text(r->caps, r->ncaps, f);
}

static void status_links_json(const struct engine_info *e, struct json *j)
{
	json_key(j, "links");
	json_array_begin(j);
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int fam = 0; fam < NFB_FAM_MAX; fam++) {
			const struct engine_link *l = &e->link[h][fam];

			if (l->fd < 0)
				continue;
			json_object_begin(j);
			json_kv_str(j, "hook", policy_hook_name((enum policy_hook)h));
			json_kv_str(j, "family", fam_name(fam));
			json_kv_u64(j, "id", l->id);
			json_kv_i64(j, "priority", l->priority);
			json_kv_bool(j, "defrag", l->defrag);
			json_object_end(j);
		}
	json_array_end(j);
}

static void capture_info_json(const struct report_capture *c, struct json *j)
{
	json_kv_str(j, "xdp_mode", capture_xdp_mode_name(c->info.xdp_mode));
	json_kv_bool(j, "zerocopy", c->info.zerocopy);
	json_kv_u64(j, "queues", c->info.nqueues);
	json_kv_u64(j, "frames_per_queue", c->info.frames_per_queue);
	json_kv_str(j, "copy_reason", c->info.copy_reason ? c->info.copy_reason : "");
	/* What the driver said over the netdev genl family (0: unknown). */
	json_kv_u64(j, "xdp_features", c->info.xdp_features);
	json_kv_u64(j, "zc_max_segs", c->info.zc_max_segs);
}

static void status_captures_json(const struct report_capture *c, uint32_t n, struct json *j)
{
	json_key(j, "captures");
	json_array_begin(j);
	for (uint32_t i = 0; i < n; i++, c++) {
		json_object_begin(j);
		json_kv_str(j, "name", c->name);
		json_kv_str(j, "interface", c->ifname);
		json_kv_str(j, "file", c->file);
		json_kv_bool(j, "running", c->running);
		if (c->running)
			capture_info_json(c, j);
		if (c->mirror_from[0]) {
			json_kv_str(j, "mirror_from", c->mirror_from);
			json_kv_str(j, "mirror_peer", c->info.mirror_peer);
		}
		json_kv_str(j, "error", c->error);
		json_object_end(j);
	}
	json_array_end(j);
}

static void status_ha_json(const struct report_ha *h, struct json *j)
{
	const struct ha_sync_stats *s = &h->stats;

	json_key(j, "ha");
	if (!h->present) {
		json_null_value(j);
		return;
	}
	json_object_begin(j);
	json_kv_str(j, "role", h->role);
	json_kv_str(j, "previous_role", h->prev_role);
	json_kv_i64(j, "since", h->since);
	json_kv_u64(j, "transitions", h->transitions);
	json_kv_i64(j, "priority", h->priority);
	json_kv_u64(j, "advert_ms", h->advert_ms);
	json_kv_str(j, "peer", h->peer);
	json_kv_str(j, "sync_interface", h->sync_ifname);
	json_kv_str(j, "sync_address", h->sync_addr[0] ? h->sync_addr : NULL);
	json_kv_str(j, "error", h->error[0] ? h->error : NULL);
	json_kv_str(j, "directory", h->dirname);
	for (int i = 0; i < 2; i++) {
		json_key(j, h->daemons[i].name);
		json_object_begin(j);
		json_kv_i64(j, "pid", h->daemons[i].pid);
		json_kv_u64(j, "restarts", h->daemons[i].restarts);
		json_kv_str(j, "last_exit", h->daemons[i].last_exit[0] ? h->daemons[i].last_exit : NULL);
		json_object_end(j);
	}
	json_key(j, "sync");
	json_object_begin(j);
	json_kv_i64(j, "at", h->stats_at);
	json_kv_u64(j, "connections", s->internal);
	json_kv_u64(j, "from_peer", s->external);
	json_kv_u64(j, "messages_sent", s->msgs_sent);
	json_kv_u64(j, "messages_received", s->msgs_recv);
	json_kv_u64(j, "bytes_sent", s->bytes_sent);
	json_kv_u64(j, "bytes_received", s->bytes_recv);
	json_kv_u64(j, "send_errors", s->send_errors);
	json_kv_u64(j, "receive_errors", s->recv_errors);
	json_kv_u64(j, "lost", s->lost);
	json_kv_u64(j, "malformed", s->malformed);
	json_object_end(j);
	json_key(j, "virtual");
	json_array_begin(j);
	for (uint32_t i = 0; i < h->nvirt; i++) {
		json_object_begin(j);
		json_kv_str(j, "instance", h->virt[i].instance);
		json_kv_str(j, "interface", h->virt[i].ifname);
		json_kv_str(j, "address", h->virt[i].address);
		json_kv_u64(j, "id", h->virt[i].id);
		json_kv_str(j, "state", h->virt[i].state);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static void status_http_json(const struct httpd_report *x, struct json *j)
{
	json_key(j, "metrics_http");
	if (!x->listen) {
		json_null_value(j);
		return;
	}
	json_object_begin(j);
	json_kv_str(j, "listen", x->listen);
	json_kv_u64(j, "served", x->served);
	json_kv_u64(j, "refused", x->refused);
	json_kv_u64(j, "head_timeouts", x->head_timeouts);
	json_kv_u64(j, "head_deadline_s", x->head_deadline_s);
	json_object_end(j);
}

/* "forwarding": {"ipv4", "ipv6": this namespace forwards it; "needed": the
 * families the policy forwards or translates; "warnings": [{"family",
 * "message", "fix"}] for each needed and not forwarded} */
static void status_forwarding_json(const struct status_report *r, struct json *j)
{
	static const char *const fam[2] = { "ipv4", "ipv6" };

	json_key(j, "forwarding");
	json_object_begin(j);
	for (int i = 0; i < 2; i++)
		json_kv_bool(j, fam[i], r->fwd_host & (POLICY_FAM_IPV4 << i));
	json_key(j, "needed");
	json_array_begin(j);
	for (int i = 0; i < 2; i++)
		if (r->fwd_needed & (POLICY_FAM_IPV4 << i))
			json_str(j, fam[i]);
	json_array_end(j);
	json_key(j, "warnings");
	json_array_begin(j);
	for (int i = 0; i < 2; i++) {
		if (!r->fwd[i].msg[0])
			continue;
		json_object_begin(j);
		json_kv_str(j, "family", fam[i]);
		json_kv_str(j, "message", r->fwd[i].msg);
		json_kv_str(j, "fix", r->fwd[i].fix);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static void status_json(const struct status_report *r, FILE *f)
{
	const struct engine_info *e = &r->be.engine;
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_kv_i64(&j, "pid", r->pid);
	json_kv_i64(&j, "uptime", r->uptime);
	json_kv_str(&j, "policy", r->policy);
	json_kv_str(&j, "version", r->version);
	json_kv_str(&j, "fingerprint", r->fingerprint[0] ? r->fingerprint : NULL);
	json_kv_i64(&j, "loaded_at", r->loaded_at);
	json_kv_str(&j, "on_disk", r->on_disk[0] ? r->on_disk : NULL);
	json_kv_u64(&j, "rules", r->rules);
	json_kv_u64(&j, "generation", e->generation);
	json_kv_u64(&j, "active_gen", e->active_gen);
	json_kv_u64(&j, "bpf_memory_bytes", r->be.bpf_memory);
	json_kv_str(&j, "early_xdp", r->be.early_ifaces);
	json_kv_bool(&j, "adopted", e->adopted);
	json_kv_bool(&j, "programs_replaced", e->programs_replaced);
	json_kv_str(&j, "replaced", e->replaced);
	json_kv_u64(&j, "set_aside", e->set_aside);
	json_kv_bool(&j, "defrag", r->defrag);
	json_kv_str(&j, "backend", r->backend);
	json_kv_bool(&j, "nft_table", r->be.nft_table == 1);
	json_kv_bool(&j, "nft_table_owned", r->be.nft_table == 1 && r->be.nft_owned);
	json_kv_u64(&j, "reloads_ok", r->reloads_ok);
	json_key(&j, "pending");
	if (r->pending) {
		json_object_begin(&j);
		json_kv_i64(&j, "deadline", r->pending_deadline);
		json_kv_i64(&j, "since", r->pending_since);
		json_kv_i64(&j, "seconds_left", r->pending_deadline - (long long)time(NULL));
		json_object_end(&j);
	} else {
		json_null_value(&j);
	}
	json_kv_str(&j, "state_dir", r->state_dir);
	json_kv_u64(&j, "reloads_failed", r->reloads_failed);
	json_kv_u64(&j, "events", r->events);
	status_http_json(&r->http, &j);
	json_kv_str(&j, "pin_dir", e->pin_dir); /* null: nothing pinned */
	json_key(&j, "netns");
	json_object_begin(&j);
	json_kv_str(&j, "name", r->netns);
	json_kv_bool(&j, "initial", r->netns_initial);
	json_kv_u64(&j, "cookie", r->netns_cookie);
	json_object_end(&j);
	json_key(&j, "missing_interfaces");
	json_array_begin(&j);
	for (uint32_t i = 0; i < r->nmissing; i++)
		json_str(&j, r->missing[i]);
	json_array_end(&j);
	status_forwarding_json(r, &j);
	status_fleet_json(&r->fleet, &j);
	json_key(&j, "feeds");
	json_array_begin(&j);
	for (uint32_t i = 0; i < r->nfeeds; i++) {
		json_object_begin(&j);
		json_kv_str(&j, "set", r->feeds[i].set);
		json_kv_str(&j, "kind", r->feeds[i].kind);
		json_kv_str(&j, "source", r->feeds[i].source);
		json_kv_u64(&j, "entries", r->feeds[i].entries);
		json_key(&j, "loaded");
		if (r->feeds[i].loaded)
			json_i64(&j, r->feeds[i].loaded);
		else
			json_null_value(&j);
		json_kv_str(&j, "warning", r->feeds[i].problem[0] ? r->feeds[i].problem : NULL);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "schedules");
	json_array_begin(&j);
	for (uint32_t i = 0; i < r->nsched; i++) {
		json_object_begin(&j);
		json_kv_str(&j, "rule", r->sched[i].rule);
		json_kv_bool(&j, "in_force", r->sched[i].open);
		json_key(&j, "next_change");
		if (r->sched[i].next == SCHED_NEVER)
			json_null_value(&j);
		else
			json_i64(&j, r->sched[i].next);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "dynamic_sets_check");
	json_object_begin(&j);
	json_key(&j, "checked_at");
	if (r->dynr.checked_at)
		json_fixed(&j, (double)r->dynr.checked_at / 1000.0, 3);
	else
		json_null_value(&j);
	json_kv_u64(&j, "every_ms", r->dynr.every_ms);
	json_kv_u64(&j, "took_ms", r->dynr.check_ms);
	json_kv_u64(&j, "checks", r->dynr.checks);
	json_kv_u64(&j, "failed", r->dynr.check_failed);
	json_kv_u64(&j, "repaired", r->dynr.repaired);
	json_kv_str(&j, "last_repair", r->dynr.last_repair);
	json_kv_u64(&j, "bans_refused", r->dynr.refused);
	json_object_end(&j);
	json_key(&j, "dynamic_sets");
	json_array_begin(&j);
	for (uint32_t i = 0; r->dyn && i < r->dyn->n; i++) {
		if (!r->dyn->sets[i].in_policy)
			continue;
		json_object_begin(&j);
		json_kv_str(&j, "set", r->dyn->sets[i].name);
		json_kv_u64(&j, "entries", (uint64_t)r->dyn->sets[i].n[0] + r->dyn->sets[i].n[1]);
		json_object_end(&j);
	}
	json_array_end(&j);
	status_ha_json(&r->ha, &j);
	status_links_json(e, &j);
	status_captures_json(r->caps, r->ncaps, &j);
	json_object_end(&j);
	fputc('\n', f);
}

void format_status(const struct status_report *r, FILE *f, bool json)
{
	if (json)
		status_json(r, f);
	else
		status_text(r, f);
}

/* ---- stats ---- */

static const struct {
	const char *name;
	size_t off;
} drop_counters[] = {
	{ "malformed", offsetof(struct stats_report, be.malformed) },
	{ "unreassembled", offsetof(struct stats_report, be.unreassembled) },
	{ "log_ring_full", offsetof(struct stats_report, be.log_ring_full) },
	{ "log_rate_limited", offsetof(struct stats_report, be.log_rate_limited) },
	{ "reject_rate_limited", offsetof(struct stats_report, be.reject_rate_limited) },
	{ "reject_ring_full", offsetof(struct stats_report, be.reject_ring_full) },
	{ "reject_unanswerable", offsetof(struct stats_report, be.reject_unanswerable) },
	{ "reject_send_failed", offsetof(struct stats_report, be.reject_send_failed) },
	{ "reject_replies", offsetof(struct stats_report, be.reject_replies) },
	{ "conn_events_lost", offsetof(struct stats_report, be.conn_events_lost) },
	{ "conn_release_failed", offsetof(struct stats_report, be.conn_release_failed) },
	{ "dynset_repaired", offsetof(struct stats_report, dyn_repaired) },
	{ "ban_refused", offsetof(struct stats_report, ban_refused) },
};

#define NDROPS (sizeof(drop_counters) / sizeof(drop_counters[0]))

static uint64_t drop_value(const struct stats_report *r, size_t i)
{
	return *(const uint64_t *)((const char *)r + drop_counters[i].off);
}

static void captures_stats_text(const struct report_capture *c, uint32_t n, FILE *f)
{
	if (!n)
		return;
	fprintf(f, "\ncapture      %12s %14s %8s %10s %10s %10s %10s %10s\n", "packets", "bytes", "multibuf", "written",
		"kern-drop", "ring-full", "fill-empty", "wr-drops");
	for (uint32_t i = 0; i < n; i++, c++) {
		const struct capture_stats *s = &c->stats;

		fprintf(f, "%-12s %12llu %14llu %8llu %10llu %10llu %10llu %10llu %10llu", c->name, U(s->packets),
			U(s->bytes), U(s->multibuf), U(s->written), U(s->rx_dropped + s->rx_invalid_descs),
			U(s->rx_ring_full), U(s->rx_fill_ring_empty_descs),
			U(s->writer_queue_drops + s->writer_write_drops + s->oversize));
		if (s->writer_errno)
			fprintf(f, "  error: %s", strerror(s->writer_errno));
		fputc('\n', f);
		if (c->mirror_from[0])
			fprintf(f, "%-12s mirrored from %s: %llu frames, %llu not sent\n", "", c->mirror_from,
				U(s->mirrored), U(s->mirror_failed));
	}
}

/* "never", "now", "12s ago", "5m ago", "3h ago", "2d ago" */
const char *format_ago(long long ms, char *buf, size_t len)
{
	long long s;

	if (!ms)
		return "never";
	s = (clock_ms(CLOCK_REALTIME) - ms) / 1000;
	if (s <= 0)
		return "now";
	if (s < 120)
		snprintf(buf, len, "%llds ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm ago", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lldh ago", s / 3600);
	else
		snprintf(buf, len, "%lldd ago", s / 86400);
	return buf;
}

static void stats_text(const struct stats_report *r, FILE *f)
{
	bool limits = false;

	for (uint32_t i = 0; i < r->nrows; i++)
		limits |= r->rows[i].limit != NULL;
	fprintf(f, "hook     rule                             action         packets            bytes%s  last hit\n",
		limits ? "       over-limit" : "");
	for (uint32_t i = 0; i < r->nrows; i++) {
		fprintf(f, "%-8s %-32s %-6s %16llu %16llu", r->rows[i].hook, r->rows[i].rule, r->rows[i].action,
			U(r->rows[i].c.packets), U(r->rows[i].c.bytes));
		if (r->rows[i].limit)
			fprintf(f, " %16llu", U(r->rows[i].over_limit));
		else if (limits)
			fprintf(f, " %16s", "-");
		{
			char age[32];

			fprintf(f, "  %s", format_ago(r->rows[i].last_hit_ms, age, sizeof(age)));
		}
		fputc('\n', f);
	}
	fprintf(f, "%-8s %-32s %-6s %16llu %16llu\n", "all", "(established/related, skip rules)", "accept",
		U(r->be.established.packets), U(r->be.established.bytes));
	fputc('\n', f);
	for (size_t i = 0; i < NDROPS; i++)
		fprintf(f, "%-24s %llu\n", drop_counters[i].name, U(drop_value(r, i)));
	captures_stats_text(r->caps, r->ncaps, f);
}

static void counter_json(struct json *j, const char *key, const struct nfb_counter *c)
{
	json_key(j, key);
	json_object_begin(j);
	json_kv_u64(j, "packets", c->packets);
	json_kv_u64(j, "bytes", c->bytes);
	json_object_end(j);
}

static void capture_stats_json(const struct report_capture *c, struct json *j)
{
	const struct capture_stats *s = &c->stats;

	json_object_begin(j);
	json_kv_str(j, "name", c->name);
	json_kv_bool(j, "running", c->running);
	json_kv_u64(j, "packets", s->packets);
	json_kv_u64(j, "bytes", s->bytes);
	json_kv_u64(j, "descriptors", s->descs);
	json_kv_u64(j, "multibuf", s->multibuf);
	json_kv_u64(j, "oversize", s->oversize);
	json_kv_u64(j, "xdp_seen", s->xdp_seen);
	json_kv_u64(j, "xdp_matched", s->xdp_matched);
	json_kv_u64(j, "xdp_redirected", s->xdp_redirected);
	json_kv_u64(j, "rx_dropped", s->rx_dropped);
	json_kv_u64(j, "rx_ring_full", s->rx_ring_full);
	json_kv_u64(j, "rx_fill_ring_empty_descs", s->rx_fill_ring_empty_descs);
	json_kv_u64(j, "rx_invalid_descs", s->rx_invalid_descs);
	json_kv_u64(j, "written", s->written);
	json_kv_u64(j, "written_by_ref", s->by_ref);
	json_kv_u64(j, "writer_queue_drops", s->writer_queue_drops);
	json_kv_u64(j, "writer_write_drops", s->writer_write_drops);
	json_kv_u64(j, "files", s->files);
	json_kv_u64(j, "mirrored", s->mirrored);
	json_kv_u64(j, "mirror_failed", s->mirror_failed);
	json_kv_str(j, "writer_error", s->writer_errno ? strerror(s->writer_errno) : "");
	json_object_end(j);
}

/* "last_hit" (s, null for never) and "in_force_since" (s, null if not known) */
static void last_hit_json(struct json *j, const struct stats_row *row)
{
	json_key(j, "last_hit");
	if (row->last_hit_ms)
		json_fixed(j, (double)row->last_hit_ms / 1000.0, 3);
	else
		json_null_value(j);
	json_key(j, "in_force_since");
	if (row->in_force_ms)
		json_fixed(j, (double)row->in_force_ms / 1000.0, 3);
	else
		json_null_value(j);
}

static void stats_json(const struct stats_report *r, FILE *f)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_key(&j, "rules");
	json_array_begin(&j);
	for (uint32_t i = 0; i < r->nrows; i++) {
		json_object_begin(&j);
		json_kv_str(&j, "hook", r->rows[i].hook);
		json_kv_str(&j, "rule", r->rows[i].rule);
		json_kv_str(&j, "action", r->rows[i].action);
		json_kv_bool(&j, "default", r->rows[i].is_default);
		json_kv_u64(&j, "packets", r->rows[i].c.packets);
		json_kv_u64(&j, "bytes", r->rows[i].c.bytes);
		if (r->rows[i].limit) {
			char buf[160];

			policy_limit_format(r->rows[i].limit, buf, sizeof(buf));
			json_kv_str(&j, "limit", buf);
			json_kv_u64(&j, "over_limit", r->rows[i].over_limit);
		}
		last_hit_json(&j, &r->rows[i]);
		json_object_end(&j);
	}
	json_array_end(&j);
	counter_json(&j, "established", &r->be.established);
	json_key(&j, "drops");
	json_object_begin(&j);
	for (size_t i = 0; i < NDROPS; i++)
		json_kv_u64(&j, drop_counters[i].name, drop_value(r, i));
	json_object_end(&j);
	json_key(&j, "captures");
	json_array_begin(&j);
	for (uint32_t i = 0; i < r->ncaps; i++)
		capture_stats_json(&r->caps[i], &j);
	json_array_end(&j);
	json_object_end(&j);
	fputc('\n', f);
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

void format_unused(const struct stats_report *r, FILE *f, bool json, unsigned since)
{
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
		json_kv_u64(&j, "rules_in_force", r->nrows);
		json_key(&j, "unused");
		json_array_begin(&j);
	} else {
		fprintf(f, "%-8s %-32s %-6s  %-16s %s\n", "hook", "rule", "action", "in force since", "last hit");
	}
	for (uint32_t i = 0; i < r->nrows; i++) {
		const struct stats_row *row = &r->rows[i];
		bool younger = since && row->in_force_ms > cut;
		char a[32], b[32];

		if (row->last_hit_ms && row->last_hit_ms >= cut)
			continue;
		n++;
		if (json) {
			json_object_begin(&j);
			json_kv_str(&j, "hook", row->hook);
			json_kv_str(&j, "rule", row->rule);
			json_kv_str(&j, "action", row->action);
			json_kv_bool(&j, "default", row->is_default);
			last_hit_json(&j, row);
			json_kv_bool(&j, "in_force_shorter", younger);
			json_object_end(&j);
			continue;
		}
		fprintf(f, "%-8s %-32s %-6s  %-16s %s%s\n", row->hook, row->rule, row->action,
			row->in_force_ms ? format_ago(row->in_force_ms, a, sizeof(a)) : "?",
			format_ago(row->last_hit_ms, b, sizeof(b)),
			younger ? "  (in force for less than the window)" : "");
	}
	if (json) {
		json_array_end(&j);
		json_object_end(&j);
		fputc('\n', f);
		return;
	}
	if (since)
		fprintf(f, "%u of %u rules and defaults without a hit in the last %s\n", n, r->nrows, win);
	else
		fprintf(f, "%u of %u rules and defaults never hit since they came into force\n", n, r->nrows);
}

void format_stats(const struct stats_report *r, FILE *f, bool json)
{
	if (json)
		stats_json(r, f);
	else
		stats_text(r, f);
}

/* ---- metrics (Prometheus text exposition format 0.0.4) ---- */

/* A label value: backslash, double quote and newline escaped. */
static void label(FILE *f, const char *name, const char *v, bool more)
{
	fprintf(f, "%s=\"", name);
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputs(more ? "\"," : "\"", f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void rule_series(FILE *f, const struct stats_report *sr, const char *name, bool bytes, bool deflt)
{
	for (uint32_t i = 0; i < sr->nrows; i++) {
		const struct stats_row *r = &sr->rows[i];

		if (r->is_default != deflt)
			continue;
		fprintf(f, "%s{", name);
		label(f, "hook", r->hook, true);
		if (!deflt)
			label(f, "rule", r->rule, true);
		label(f, "action", r->action, false);
		fprintf(f, "} %llu\n", U(bytes ? r->c.bytes : r->c.packets));
	}
}

static void ha_metrics(const struct report_ha *h, FILE *f)
{
	static const char *const roles[] = { "master", "backup", "fault", "starting", "stopped" };
	const struct ha_sync_stats *s = &h->stats;

	family(f, "nfbox_ha_role", "gauge", "The node's role in its pair: 1 for the role it has.");
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		fprintf(f, "nfbox_ha_role{role=\"%s\"} %d\n", roles[i], !strcmp(h->role, roles[i]));
	family(f, "nfbox_ha_transitions_total", "counter", "Changes of role since the daemon started.");
	fprintf(f, "nfbox_ha_transitions_total %lu\n", h->transitions);
	family(f, "nfbox_ha_last_transition_timestamp_seconds", "gauge", "When the role last changed; 0: never.");
	fprintf(f, "nfbox_ha_last_transition_timestamp_seconds %lld\n", h->since);
	family(f, "nfbox_ha_daemon_up", "gauge", "1 while keepalived or conntrackd runs.");
	for (int i = 0; i < 2; i++)
		fprintf(f, "nfbox_ha_daemon_up{daemon=\"%s\"} %d\n", h->daemons[i].name, h->daemons[i].pid != 0);
	family(f, "nfbox_ha_daemon_restarts_total", "counter",
	       "Times nfbox started keepalived or conntrackd again after it exited.");
	for (int i = 0; i < 2; i++)
		fprintf(f, "nfbox_ha_daemon_restarts_total{daemon=\"%s\"} %lu\n", h->daemons[i].name,
			h->daemons[i].restarts);
	family(f, "nfbox_ha_sync_connections", "gauge",
	       "Connections in conntrackd's caches: this node's (internal) and the peer's (external).");
	fprintf(f,
		"nfbox_ha_sync_connections{cache=\"internal\"} %llu\nnfbox_ha_sync_connections{cache=\"external\"} "
		"%llu\n",
		U(s->internal), U(s->external));
	family(f, "nfbox_ha_sync_messages_total", "counter", "conntrackd's sync messages, by direction.");
	fprintf(f,
		"nfbox_ha_sync_messages_total{direction=\"sent\"} "
		"%llu\nnfbox_ha_sync_messages_total{direction=\"received\"} %llu\n",
		U(s->msgs_sent), U(s->msgs_recv));
	family(f, "nfbox_ha_sync_bytes_total", "counter", "Bytes of conntrackd's sync messages, by direction.");
	fprintf(f,
		"nfbox_ha_sync_bytes_total{direction=\"sent\"} %llu\nnfbox_ha_sync_bytes_total{direction=\"received\"} "
		"%llu\n",
		U(s->bytes_sent), U(s->bytes_recv));
	family(f, "nfbox_ha_sync_errors_total", "counter",
	       "Sync messages conntrackd could not send or receive, lost on the way, or malformed.");
	fprintf(f,
		"nfbox_ha_sync_errors_total{error=\"send\"} %llu\nnfbox_ha_sync_errors_total{error=\"receive\"} %llu\n"
		"nfbox_ha_sync_errors_total{error=\"lost\"} %llu\nnfbox_ha_sync_errors_total{error=\"malformed\"} "
		"%llu\n",
		U(s->send_errors), U(s->recv_errors), U(s->lost), U(s->malformed));
}

static void fleet_metrics(const struct report_fleet *x, FILE *f)
{
	family(f, "nfbox_fleet_etcd_connected", "gauge", "1 while the node reaches etcd (run --fleet).");
	fprintf(f, "nfbox_fleet_etcd_connected %d\n", x->connected);
	family(f, "nfbox_fleet_revision", "gauge", "The group's revision this node applied last; 0: none yet.");
	fprintf(f, "nfbox_fleet_revision %lld\n", x->revision);
	family(f, "nfbox_fleet_local_change", "gauge",
	       "1 while what is enforced is not that revision (a local reload).");
	fprintf(f, "nfbox_fleet_local_change %d\n", x->local_change);
	family(f, "nfbox_fleet_error", "gauge", "1 while the node reports an error (a revision refused, etcd lost).");
	fprintf(f, "nfbox_fleet_error %d\n", x->last_error[0] != '\0');
	family(f, "nfbox_fleet_shared_changes_total", "counter",
	       "Shared sets' changes sent to etcd and received from it.");
	fprintf(f, "nfbox_fleet_shared_changes_total{direction=\"sent\"} %lu\n", x->published);
	fprintf(f, "nfbox_fleet_shared_changes_total{direction=\"received\"} %lu\n", x->received);
}

static void http_metrics(const struct httpd_report *x, FILE *f)
{
	family(f, "nfbox_http_requests_total", "counter",
	       "Requests to --metrics-listen: served (GET or HEAD /metrics) or refused (404, 405).");
	fprintf(f, "nfbox_http_requests_total{result=\"served\"} %lu\n", x->served);
	fprintf(f, "nfbox_http_requests_total{result=\"refused\"} %lu\n", x->refused);
	family(f, "nfbox_http_head_timeouts_total", "counter",
	       "Connections to --metrics-listen closed because no request's head (request line and headers) "
	       "arrived within the deadline after the connect.");
	fprintf(f, "nfbox_http_head_timeouts_total %lu\n", x->head_timeouts);
}

void format_metrics(const struct status_report *st, const struct stats_report *sr, FILE *f)
{
	static const char *const capture_keys[] = { "packets",	 "bytes",	   "written",  "kernel_dropped",
						    "ring_full", "writer_dropped", "mirrored", "mirror_failed" };

	family(f, "nfbox_info", "gauge", "The daemon: version, backend and the fingerprint of the policy in force.");
	fputs("nfbox_info{", f);
	label(f, "version", st->version, true);
	label(f, "backend", st->backend, true);
	label(f, "fingerprint", st->fingerprint, false);
	fputs("} 1\n", f);
	family(f, "nfbox_policy_rules", "gauge", "Rules of the policy in force.");
	fprintf(f, "nfbox_policy_rules %u\n", st->rules);
	family(f, "nfbox_policy_loaded_timestamp_seconds", "gauge", "When the policy in force was loaded.");
	fprintf(f, "nfbox_policy_loaded_timestamp_seconds %lld\n", st->loaded_at);
	family(f, "nfbox_generation", "gauge", "Policies this daemon has loaded into the BPF engine.");
	fprintf(f, "nfbox_generation %llu\n", U(st->be.engine.generation));
	family(f, "nfbox_bpf_memory_bytes", "gauge", "Kernel memory the classifier's BPF maps hold.");
	fprintf(f, "nfbox_bpf_memory_bytes %llu\n", U(st->be.bpf_memory));
	family(f, "nfbox_reloads_total", "counter", "Reloads, by result.");
	fprintf(f, "nfbox_reloads_total{result=\"ok\"} %lu\nnfbox_reloads_total{result=\"failed\"} %lu\n",
		st->reloads_ok, st->reloads_failed);
	family(f, "nfbox_pending_confirm", "gauge", "1 while a reload --confirm waits for nfbox confirm.");
	fprintf(f, "nfbox_pending_confirm %d\n", st->pending ? 1 : 0);
	if (st->pending) {
		family(f, "nfbox_pending_confirm_deadline_timestamp_seconds", "gauge",
		       "When the pending change rolls back.");
		fprintf(f, "nfbox_pending_confirm_deadline_timestamp_seconds %lld\n", st->pending_deadline);
	}
	family(f, "nfbox_rule_packets_total", "counter", "Packets each rule matched.");
	rule_series(f, sr, "nfbox_rule_packets_total", false, false);
	family(f, "nfbox_rule_bytes_total", "counter", "Bytes of the packets each rule matched.");
	rule_series(f, sr, "nfbox_rule_bytes_total", true, false);
	family(f, "nfbox_rule_over_limit_total", "counter", "Packets over a rule's limit, gone on to later rules.");
	for (uint32_t i = 0; i < sr->nrows; i++) {
		if (!sr->rows[i].limit)
			continue;
		fputs("nfbox_rule_over_limit_total{", f);
		label(f, "hook", sr->rows[i].hook, true);
		label(f, "rule", sr->rows[i].rule, false);
		fprintf(f, "} %llu\n", U(sr->rows[i].over_limit));
	}
	family(f, "nfbox_rule_last_hit_timestamp_seconds", "gauge",
	       "When each rule (and hook default) last matched a packet; 0: not yet.");
	for (uint32_t i = 0; i < sr->nrows; i++) {
		fputs("nfbox_rule_last_hit_timestamp_seconds{", f);
		label(f, "hook", sr->rows[i].hook, true);
		label(f, "rule", sr->rows[i].rule, false);
		fprintf(f, "} %lld.%03lld\n", sr->rows[i].last_hit_ms / 1000, sr->rows[i].last_hit_ms % 1000);
	}
	family(f, "nfbox_dynamic_set_entries", "gauge", "Entries of each dynamic set.");
	for (uint32_t i = 0; st->dyn && i < st->dyn->n; i++) {
		if (!st->dyn->sets[i].in_policy)
			continue;
		fputs("nfbox_dynamic_set_entries{", f);
		label(f, "set", st->dyn->sets[i].name, false);
		fprintf(f, "} %llu\n", U((uint64_t)st->dyn->sets[i].n[0] + st->dyn->sets[i].n[1]));
	}
	family(f, "nfbox_default_packets_total", "counter", "Packets no rule matched: the hook's default verdict.");
	rule_series(f, sr, "nfbox_default_packets_total", false, true);
	family(f, "nfbox_default_bytes_total", "counter", "Bytes of the packets that got the hook's default verdict.");
	rule_series(f, sr, "nfbox_default_bytes_total", true, true);
	family(f, "nfbox_established_packets_total", "counter",
	       "Packets of established and related connections, accepted before the rules.");
	fprintf(f, "nfbox_established_packets_total %llu\n", U(sr->be.established.packets));
	family(f, "nfbox_established_bytes_total", "counter", "Bytes of those packets.");
	fprintf(f, "nfbox_established_bytes_total %llu\n", U(sr->be.established.bytes));
	family(f, "nfbox_drops_total", "counter",
	       "Packets, events and replies lost or dropped, by reason (as nfbox stats names them).");
	for (size_t i = 0; i < NDROPS; i++) {
		fputs("nfbox_drops_total{", f);
		label(f, "reason", drop_counters[i].name, false);
		fprintf(f, "} %llu\n", U(drop_value(sr, i)));
	}
	if (st->ha.present)
		ha_metrics(&st->ha, f);
	if (st->fleet.present)
		fleet_metrics(&st->fleet, f);
	if (st->http.listen)
		http_metrics(&st->http, f);
	family(f, "nfbox_capture_total", "counter", "Capture counters, by capture and what they count.");
	for (uint32_t i = 0; i < sr->ncaps; i++) {
		const struct capture_stats *s = &sr->caps[i].stats;
		const uint64_t v[] = { s->packets,	s->bytes,
				       s->written,	s->rx_dropped + s->rx_invalid_descs,
				       s->rx_ring_full, s->writer_queue_drops + s->writer_write_drops + s->oversize,
				       s->mirrored,	s->mirror_failed };

		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			fputs("nfbox_capture_total{", f);
			label(f, "capture", sr->caps[i].name, true);
			label(f, "counter", capture_keys[k], false);
			fprintf(f, "} %llu\n", U(v[k]));
		}
	}
}
