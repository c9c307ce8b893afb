/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A trace as text and as JSON (trace.h). */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "policy/schedule/schedule.h"
#include "policy/trace/trace.h"

static const char *const by_names[] = {
	[TRACE_BY_RULE] = "rule",
	[TRACE_BY_DEFAULT] = "default",
	[TRACE_BY_ESTABLISHED] = "established",
	[TRACE_BY_MALFORMED] = "malformed",
	[TRACE_BY_UNFILTERED] = "unfiltered",
	[TRACE_BY_EARLY] = "early",
	[TRACE_BY_UNKNOWN] = "unknown",
};

static void addr(const struct trace_packet *k, const uint8_t *a, char *buf, size_t len)
{
	if (!inet_ntop(k->fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void utc(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%lld", (long long)t);
}

static void proto(int p, char *buf, size_t len)
{
	const char *n = policy_proto_name(p);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "protocol %d", p);
}

/* The hooks the packet meets, in order: a packet dropped early meets none
 * of netfilter's, one dropped by the filter hook never reaches postrouting. */
static int hooks_met(const struct trace_result *r, const char **v)
{
	int n = 0;

	if (r->early_possible)
		v[n++] = "early";
	if (r->early)
		return n;
	if (r->pkt.iif[0])
		v[n++] = "prerouting";
	v[n++] = policy_hook_name(r->filter.hook);
	if (r->filter.hook != POLICY_HOOK_INPUT && r->filter.verdict == POLICY_ACCEPT &&
	    r->filter.by != TRACE_BY_UNKNOWN)
		v[n++] = "postrouting";
	return n;
}

static void place(const struct loc *l, char *buf, size_t len)
{
	if (l->src && l->line)
		snprintf(buf, len, "%s:%u:%u", l->src->name, l->line, l->col);
	else
		snprintf(buf, len, "(no place)");
}

/* ---- text ---- */

static void packet_text(FILE *f, const struct trace_packet *k)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], p[24], at[32];

	addr(k, k->src, s, sizeof(s));
	addr(k, k->dst, d, sizeof(d));
	proto(k->proto, p, sizeof(p));
	fprintf(f, "packet:      %s %s", p, s);
	if (k->sport >= 0)
		fprintf(f, " port %d", k->sport);
	fprintf(f, " -> %s", d);
	if (k->dport >= 0)
		fprintf(f, " port %d", k->dport);
	if (k->icmp_type >= 0)
		fprintf(f, " type %d", k->icmp_type);
	fprintf(f, ", %s, state %s", policy_family_name((enum policy_family)k->fam), policy_ct_names[k->ct]);
	if (k->iif[0])
		fprintf(f, ", in %s", k->iif);
	if (k->oif[0])
		fprintf(f, ", out %s", k->oif);
	utc(k->at, at, sizeof(at));
	fprintf(f, "\nat:          %s (schedules judged then)\n", at);
}

static void schedule_text(FILE *f, const struct trace_step *s)
{
	char at[32];

	if (s->in_force < 0)
		return;
	fprintf(f, "%*swhen: %s", 18, "", s->in_force ? "in force" : "out of force");
	if (s->next_change != SCHED_NEVER) {
		utc(s->next_change, at, sizeof(at));
		fprintf(f, " until %s", at);
	}
	fputc('\n', f);
}

static void steps_text(FILE *f, const struct trace_hook *h)
{
	char at[PATH_MAX + 32];

	for (uint32_t i = 0; i < h->nsteps; i++) {
		const struct trace_step *s = &h->steps[i];

		place(&s->rule->loc, at, sizeof(at));
		fprintf(f, "  %-4s %s (%s)", s->matched ? "YES" : "no", s->rule->name, at);
		if (s->matched)
			fprintf(f, ": %s", policy_action_name(s->rule->action));
		if (s->why[0])
			fprintf(f, "%s%s", s->matched ? "; " : ": ", s->why);
		if (s->dyn_entry[0])
			fprintf(f, " (dynamic set entry %s)", s->dyn_entry);
		fputc('\n', f);
		schedule_text(f, s);
	}
}

static void verdict_text(FILE *f, const struct trace_result *r)
{
	const struct trace_hook *h = &r->filter;
	const char *hook = policy_hook_name(h->hook);

	switch (h->by) {
	case TRACE_BY_RULE:
		fprintf(f, "verdict:     %s, by rule %s on %s\n", policy_action_name(h->verdict), h->rule->name, hook);
		break;
	case TRACE_BY_EARLY:
		fprintf(f, "verdict:     drop, by rule %s before the stack (counted on %s)\n", h->rule->name, hook);
		break;
	case TRACE_BY_DEFAULT:
		fprintf(f, "verdict:     %s, by the default of %s (no rule matched)\n", policy_action_name(h->verdict),
			hook);
		break;
	case TRACE_BY_ESTABLISHED:
		fprintf(f, "verdict:     accept on %s, before the rules (established: accept)\n", hook);
		break;
	case TRACE_BY_MALFORMED:
		fprintf(f, "verdict:     drop on %s, before the rules: an IPv4-mapped IPv6 address (malformed)\n",
			hook);
		break;
	case TRACE_BY_UNFILTERED:
		fprintf(f, "verdict:     accept: the policy does not filter %s (not under hooks:)\n", hook);
		break;
	case TRACE_BY_UNKNOWN:
		fprintf(f, "verdict:     not known\n");
		break;
	}
}

static void nat_text(FILE *f, const char *hook, const struct trace_nat *n)
{
	char at[PATH_MAX + 32];

	if (!n->nat) {
		fprintf(f, "%s no translation\n", hook);
		return;
	}
	place(&n->nat->loc, at, sizeof(at));
	fprintf(f, "%s %s (%s): %s\n", hook, policy_nat_kind_names[n->nat->kind], at, n->what);
}

static void source_text(FILE *f, const struct trace_source *s)
{
	if (s->file)
		fprintf(f, "policy:      %s%s%s\n", s->file,
			s->policy && !strcmp(s->policy, "daemon") ? " (in force)" : "",
			s->changed_on_disk ? "; changed on disk since it was loaded: the file is traced, not what runs"
					   : "");
	fprintf(f, "sets:        %s\n",
		!s->sets		     ? "dynamic sets' entries not known here: judged empty"
		: !strcmp(s->sets, "daemon") ? "dynamic sets' entries as the daemon holds them now"
					     : "dynamic sets' entries as given (--sets)");
}

void trace_print_text(FILE *f, const struct trace_result *r)
{
	const char *met[4];
	int n = hooks_met(r, met);
	char at[PATH_MAX + 32];

	packet_text(f, &r->pkt);
	source_text(f, &r->source);
	fprintf(f, "hooks met:  ");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s %s", i ? "," : "", met[i]);
	fputc('\n', f);
	if (r->pkt.iif[0]) {
		if (r->early) {
			place(&r->early->loc, at, sizeof(at));
			fprintf(f, "early drop:  rule %s (%s) drops it on %s, before the stack\n", r->early->name, at,
				r->pkt.iif);
		} else {
			fprintf(f, "early drop:  %s\n",
				r->early_possible ? "no early rule drops it" : "no early rule on this interface");
		}
		nat_text(f, "prerouting: ", &r->dnat);
	}
	if (r->filter.by != TRACE_BY_EARLY && r->filter.by != TRACE_BY_UNKNOWN) {
		fprintf(f, "%s", policy_hook_name(r->filter.hook));
		if (r->filter.by == TRACE_BY_UNFILTERED)
			fprintf(f, " (not filtered)");
		fprintf(f, ":\n");
		steps_text(f, &r->filter);
	}
	if (r->filter.hook != POLICY_HOOK_INPUT && r->filter.verdict == POLICY_ACCEPT &&
	    r->filter.by != TRACE_BY_UNKNOWN)
		nat_text(f, "postrouting:", &r->snat);
	verdict_text(f, r);
	if (r->note[0])
		fprintf(f, "note:        %s\n", r->note);
}

/* ---- JSON ---- */

static void json_place(struct json *j, const struct loc *l)
{
	bool known = l->src && l->line;

	json_kv_str(j, "file", known ? l->src->name : NULL);
	json_key(j, "line");
	known ? json_u64(j, l->line) : json_null_value(j);
	json_key(j, "column");
	known ? json_u64(j, l->col) : json_null_value(j);
}

static void json_int_or_null(struct json *j, const char *key, int64_t v, bool known)
{
	json_key(j, key);
	known ? json_i64(j, v) : json_null_value(j);
}

static void packet_json(struct json *j, const char *key, const struct trace_packet *k)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], p[24];

	addr(k, k->src, s, sizeof(s));
	addr(k, k->dst, d, sizeof(d));
	proto(k->proto, p, sizeof(p));
	json_key(j, key);
	json_object_begin(j);
	json_kv_str(j, "family", policy_family_name((enum policy_family)k->fam));
	json_kv_str(j, "proto", p);
	json_kv_str(j, "src", s);
	json_kv_str(j, "dst", d);
	json_int_or_null(j, "sport", k->sport, k->sport >= 0);
	json_int_or_null(j, "dport", k->dport, k->dport >= 0);
	json_int_or_null(j, "icmp_type", k->icmp_type, k->icmp_type >= 0);
	json_kv_str(j, "state", policy_ct_names[k->ct]);
	json_kv_str(j, "in", k->iif[0] ? k->iif : NULL);
	json_kv_str(j, "out", k->oif[0] ? k->oif : NULL);
	json_object_end(j);
}

static void nat_json(struct json *j, const char *key, const struct trace_nat *n)
{
	json_key(j, key);
	if (!n->nat) {
		json_null_value(j);
		return;
	}
	json_object_begin(j);
	json_kv_str(j, "kind", policy_nat_kind_names[n->nat->kind]);
	json_place(j, &n->nat->loc);
	json_kv_str(j, "text", n->what);
	json_object_end(j);
}

static void step_json(struct json *j, const struct trace_step *s)
{
	json_object_begin(j);
	json_kv_str(j, "name", s->rule->name);
	json_place(j, &s->rule->loc);
	json_kv_bool(j, "matched", s->matched);
	json_kv_str(j, "action", policy_action_name(s->rule->action));
	json_kv_str(j, "why", s->why[0] ? s->why : NULL);
	json_kv_str(j, "dynamic_entry", s->dyn_entry[0] ? s->dyn_entry : NULL);
	json_key(j, "when");
	if (s->in_force < 0) {
		json_null_value(j);
	} else {
		json_object_begin(j);
		json_kv_bool(j, "in_force", s->in_force);
		json_int_or_null(j, "next_change", s->next_change, s->next_change != SCHED_NEVER);
		json_object_end(j);
	}
	json_object_end(j);
}

void trace_print_json(FILE *f, const struct trace_result *r)
{
	const struct trace_hook *h = &r->filter;
	const char *met[4];
	int n = hooks_met(r, met);
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	packet_json(&j, "packet", &r->pkt);
	json_kv_i64(&j, "at", r->pkt.at);
	json_kv_str(&j, "policy", r->source.file);
	json_kv_str(&j, "policy_from", r->source.policy);
	json_kv_bool(&j, "changed_on_disk", r->source.changed_on_disk);
	json_kv_str(&j, "sets_from", r->source.sets);
	json_key(&j, "hooks_met");
	json_array_begin(&j);
	for (int i = 0; i < n; i++)
		json_str(&j, met[i]);
	json_array_end(&j);
	json_key(&j, "early");
	json_object_begin(&j);
	json_kv_bool(&j, "possible", r->early_possible);
	json_kv_str(&j, "rule", r->early ? r->early->name : NULL);
	json_object_end(&j);
	nat_json(&j, "dnat", &r->dnat);
	packet_json(&j, "seen", &r->seen);
	json_kv_str(&j, "hook", policy_hook_name(h->hook));
	json_key(&j, "rules");
	json_array_begin(&j);
	for (uint32_t i = 0; i < h->nsteps; i++)
		step_json(&j, &h->steps[i]);
	json_array_end(&j);
	json_kv_str(&j, "decision", by_names[h->by]);
	json_kv_str(&j, "decided_by", trace_decided_by(h));
	json_kv_str(&j, "verdict", h->by == TRACE_BY_UNKNOWN ? NULL : policy_action_name(h->verdict));
	nat_json(&j, "snat", &r->snat);
	json_kv_str(&j, "note", r->note[0] ? r->note : NULL);
	json_object_end(&j);
	fputc('\n', f);
}
