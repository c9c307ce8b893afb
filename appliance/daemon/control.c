/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Control requests: status, stats and reload, as text or JSON. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon_int.h"

static const char *const hook_names[] = { "input", "forward", "output" };
static const char *const fam_names[] = { "ipv4", "ipv6" };

void daemon_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void status(struct daemon *dm, FILE *f, bool json)
{
	const struct engine *e = dm->e;
	time_t now = time(NULL);

	if (json) {
		fprintf(f, "{\"pid\":%d,\"uptime\":%ld,\"policy\":", (int)getpid(), (long)(now - dm->started));
		daemon_json_str(f, dm->cur.path);
		fprintf(f, ",\"rules\":%u,\"generation\":%llu,\"active_gen\":%u,\"adopted\":%s,\"defrag\":%s,"
			   "\"reloads_ok\":%lu,\"reloads_failed\":%lu,\"events\":%llu,\"pin_dir\":",
			dm->cur.pol ? dm->cur.pol->nrules : 0, (unsigned long long)e->generation, e->active_gen,
			e->adopted ? "true" : "false", dm->cur.pol && dm->cur.pol->opt.defrag ? "true" : "false",
			dm->reloads_ok, dm->reloads_failed, dm->events);
		daemon_json_str(f, e->pin_dir);
		fputs(",\"links\":[", f);
		for (int h = 0, first = 1; h < NFB_HOOK_MAX; h++)
			for (int fam = 0; fam < NFB_FAM_MAX; fam++) {
				const struct engine_link *l = &e->link[h][fam];

				if (l->fd < 0)
					continue;
				fprintf(f, "%s{\"hook\":\"%s\",\"family\":\"%s\",\"id\":%u,\"priority\":%d,\"defrag\":%s}",
					first ? "" : ",", hook_names[h], fam_names[fam], l->id, l->priority,
					l->defrag ? "true" : "false");
				first = 0;
			}
		fputs("],\"captures\":", f);
		daemon_captures_status(dm, f, true);
		fputs("}\n", f);
		return;
	}
	fprintf(f, "nfbox running: pid %d, up %lds\n", (int)getpid(), (long)(now - dm->started));
	fprintf(f, "policy:     %s, %u rules (generation %llu, map set %u)\n", dm->cur.path ? dm->cur.path : "-",
		dm->cur.pol ? dm->cur.pol->nrules : 0, (unsigned long long)e->generation, e->active_gen);
	fprintf(f, "defrag:     %s\n", dm->cur.pol && dm->cur.pol->opt.defrag ? "on (verdicts on reassembled datagrams)" : "off");
	fprintf(f, "pin dir:    %s%s\n", e->pin_dir, e->adopted ? " (adopted at start: enforcement had no gap)" : "");
	fprintf(f, "reloads:    %lu ok, %lu failed\n", dm->reloads_ok, dm->reloads_failed);
	fprintf(f, "log events: %llu\n", dm->events);
	fprintf(f, "links:\n");
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int fam = 0; fam < NFB_FAM_MAX; fam++) {
			const struct engine_link *l = &e->link[h][fam];

			if (l->fd >= 0)
				fprintf(f, "  %-8s %-5s link %u, priority %d%s\n", hook_names[h], fam_names[fam], l->id,
					l->priority, l->defrag ? ", defrag" : "");
		}
	daemon_captures_status(dm, f, false);
}

struct stat_row {
	const char *hook, *name, *action;
	struct nfb_counter c;
};

static void stats(struct daemon *dm, FILE *f, bool json)
{
	static const struct {
		uint32_t slot;
		const char *name;
	} fixed[] = {
		{ NFB_CNT_MALFORMED, "malformed" },
		{ NFB_CNT_LOG_DROPPED, "log_ring_full" },
		{ NFB_CNT_LOG_LIMITED, "log_rate_limited" },
	};
	const struct plan *pl = dm->cur.plan;
	struct nfb_counter c;
	bool first = true;

	fputs(json ? "{\"rules\":[" : "hook     rule                             action         packets            bytes\n", f);
	for (int h = 0; pl && h < NFB_HOOK_MAX; h++) {
		const struct plan_hook *ph = &pl->hook[h];

		if (!ph->enabled)
			continue;
		for (uint32_t b = 0; b <= ph->nrules; b++) {
			bool def = b == ph->nrules;
			const char *name = def ? "(default)" : ph->rules[b]->name;
			const char *act = (def ? ph->def : ph->rules[b]->action) == POLICY_ACCEPT ? "accept" : "drop";

			engine_counter_read(dm->e, def ? dm->cur.slots.default_slot[h] : dm->cur.slots.rule_slot[h][b], &c);
			if (json) {
				fprintf(f, "%s{\"hook\":\"%s\",\"rule\":", first ? "" : ",", hook_names[h]);
				daemon_json_str(f, name);
				fprintf(f, ",\"action\":\"%s\",\"default\":%s,\"packets\":%llu,\"bytes\":%llu}", act,
					def ? "true" : "false", (unsigned long long)c.packets, (unsigned long long)c.bytes);
			} else {
				fprintf(f, "%-8s %-32s %-6s %16llu %16llu\n", hook_names[h], name, act,
					(unsigned long long)c.packets, (unsigned long long)c.bytes);
			}
			first = false;
		}
	}
	engine_counter_read(dm->e, dm->cur.slots.established_slot, &c);
	if (json)
		fprintf(f, "],\"established\":{\"packets\":%llu,\"bytes\":%llu}", (unsigned long long)c.packets,
			(unsigned long long)c.bytes);
	else
		fprintf(f, "%-8s %-32s %-6s %16llu %16llu\n", "all", "(established/related, skip rules)", "accept",
			(unsigned long long)c.packets, (unsigned long long)c.bytes);
	fputs(json ? ",\"drops\":{" : "\n", f);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		engine_counter_read(dm->e, fixed[i].slot, &c);
		if (json)
			fprintf(f, "%s\"%s\":%llu", i ? "," : "", fixed[i].name, (unsigned long long)c.packets);
		else
			fprintf(f, "%-24s %llu\n", fixed[i].name, (unsigned long long)c.packets);
	}
	if (json) {
		fputs("},\"captures\":", f);
		daemon_captures_stats(dm, f, true);
		fputs("}\n", f);
	} else {
		daemon_captures_stats(dm, f, false);
	}
}

char *daemon_answer(struct daemon *dm, const char *req)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	bool json = strstr(req, " json") != NULL;

	if (!f)
		return NULL;
	if (!strncmp(req, "status", 6)) {
		fputs("ok\n", f);
		status(dm, f, json);
	} else if (!strncmp(req, "stats", 5)) {
		fputs("ok\n", f);
		stats(dm, f, json);
	} else if (!strncmp(req, "reload", 6)) {
		const char *path = req[6] == ' ' && req[7] ? req + 7 : dm->opts->policy;
		char *text = NULL;
		int r = daemon_reload(dm, path, &text);

		fprintf(f, "%s\n%s", r < 0 ? "error" : "ok", text ? text : "");
		free(text);
	} else {
		fprintf(f, "error\nunknown request '%s' (status, stats, reload [PATH], log)\n", req);
	}
	fclose(f);
	return out;
}
