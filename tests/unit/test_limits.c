/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Every limit of the policy language (policy/README.md, "Limits") at the
 * limit and one past it, through both backends: at the limit a policy
 * loads, the BPF backend compiles and encodes it (plan_make, as `nfbox run`
 * does) and the nftables backend builds its whole table (nft_build, the
 * filter included); one past it the loader refuses it with an error that
 * names the limit, at its place. Nothing on either path is cut short
 * silently (issue 25).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "backend/bpf/compile/plan.h"
#include "backend/nftables/nft/build.h"
#include "policy/policy.h"

/* A growing YAML text. */
struct text {
	char *s;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (t->n + (size_t)len + 1 > t->cap) {
		t->cap = (t->n + (size_t)len + 1) * 2;
		t->s = realloc(t->s, t->cap);
		if (!t->s)
			abort();
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
	va_end(ap);
	t->n += (size_t)len;
}

/* The policy loads with no error, and both backends take it whole. */
static void at_limit(const char *name, struct text *t)
{
	struct diags d;
	struct policy *p = NULL;
	struct plan *pl = NULL;
	struct nft_build_opts o = { .filter = true };
	struct nfr_table nt;

	check_begin(name);
	diags_init(&d);
	nfr_init(&nt);
	if (policy_load_buffer("limits.yaml", t->s, t->n, &d, &p) < 0 || d.errors) {
		check_fail_at(__FILE__, __LINE__, "refused at the limit");
		diags_print(&d, stdout, false);
	} else {
		if (plan_make(p, &pl, NULL, &d) < 0) {
			check_fail_at(__FILE__, __LINE__, "the BPF backend refused it");
			diags_print(&d, stdout, false);
		}
		if (nft_build(p, &o, &nt, &d) < 0) {
			check_fail_at(__FILE__, __LINE__, "the nftables backend refused it");
			diags_print(&d, stdout, false);
		}
	}
	nfr_free(&nt);
	plan_free(pl);
	policy_free(p);
	diags_free(&d);
	free(t->s);
	memset(t, 0, sizeof(*t));
	check_end();
}

/* The loader refuses it with an error containing why, on line `line`. */
static void past_limit(const char *name, struct text *t, const char *why, unsigned line)
{
	struct diags d;
	struct policy *p = NULL;
	bool found = false;

	check_begin(name);
	diags_init(&d);
	if (policy_load_buffer("limits.yaml", t->s, t->n, &d, &p) == 0)
		check_fail_at(__FILE__, __LINE__, "accepted one past the limit");
	for (size_t i = 0; i < d.n; i++)
		if (d.v[i].level == DIAG_ERROR && strstr(d.v[i].msg, why)) {
			found = true;
			if (line && d.v[i].loc.line != line)
				check_fail_at(__FILE__, __LINE__, "'%s' on line %u, not %u", why, d.v[i].loc.line,
					      line);
		}
	if (!found) {
		check_fail_at(__FILE__, __LINE__, "no error saying '%s'", why);
		diags_print(&d, stdout, false);
	}
	policy_free(p);
	diags_free(&d);
	free(t->s);
	memset(t, 0, sizeof(*t));
	check_end();
}

#define HEAD \
	"version: 1\nhooks: { input: { default: drop }, forward: { default: drop }, output: { default: accept } }\n"

/* n rules on the forward hook, each on its own line (rule i on line 4 + i),
 * after a rules: key on line 3. */
static void rules(struct text *t, uint32_t n)
{
	put(t, HEAD "rules:\n");
	for (uint32_t i = 0; i < n; i++)
		put(t, "  - { name: r%u, hook: input, service: tcp/%u, action: accept }\n", i, 1 + i % 65535);
}

static void rules_per_hook(void)
{
	struct text t = { 0 };

	rules(&t, POLICY_MAX_RULES);
	at_limit("limit-rules-per-hook-at", &t);
	rules(&t, POLICY_MAX_RULES + 1);
	past_limit("limit-rules-per-hook-past", &t, "more than 65536 rules on the input hook", 4 + POLICY_MAX_RULES);
}

/* ha: adds its own rules to input and output, after the operator's. */
static void rules_with_ha(void)
{
	const char *ha = "interfaces: { lan: [lan0] }\n"
			 "ha:\n  priority: 100\n  sync: { interface: sync0, peer: 203.0.113.2, address: 203.0.113.1 }\n"
			 "  virtual: [{ interface: lan0, address: 192.0.2.1/24, id: 1 }]\n";
	struct text t = { 0 };

	/* ha adds two rules to input (VRRP in, conntrackd in): 65,533 + 1 + 2 */
	put(&t, "%s", ha);
	rules(&t, POLICY_MAX_RULES - 3);
	put(&t, "  - { name: vrrp-ok, hook: input, in: lan, action: accept }\n");
	at_limit("limit-rules-with-ha-at", &t);
	put(&t, "%s", ha);
	rules(&t, POLICY_MAX_RULES - 2);
	put(&t, "  - { name: vrrp-ok, hook: input, in: lan, action: accept }\n");
	past_limit("limit-rules-with-ha-past", &t, "ha: adds 2 rules to the input hook, which then has 65537", 2);
}

static void wildcards(void)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		int n = POLICY_MAX_IFACE_WILDCARDS + pass;

		put(&t, HEAD "interfaces:\n  many: [");
		for (int i = 0; i < n; i++)
			put(&t, "%s\"w%02d*\"", i ? ", " : "", i);
		put(&t, "]\nrules:\n  - { name: r, in: \"!many\", out: \"!many\", from: 198.51.100.0/24, state: new, "
			"service: tcp/22, action: accept }\n");
		if (!pass)
			at_limit("limit-wildcards-at", &t);
		else
			past_limit("limit-wildcards-past", &t, "has 64 interface wildcards; at most 63", 6);
	}
}

static void group_ifaces(void)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		put(&t, HEAD "interfaces:\n  big:\n");
		for (int i = 0; i < POLICY_MAX_GROUP_IFACES + pass; i++)
			put(&t, "    - if%d\n", i);
		put(&t, "rules:\n  - { name: r, in: big, out: \"!big\", action: accept }\n");
		if (!pass)
			at_limit("limit-group-interfaces-at", &t);
		else
			past_limit("limit-group-interfaces-past", &t, "group 'big' has more than 4096 interfaces",
				   5 + POLICY_MAX_GROUP_IFACES);
	}
}

static void service_entries(void)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		put(&t, HEAD "services:\n  many:\n");
		for (int i = 0; i < POLICY_MAX_SERVICE_ENTRIES + pass; i++)
			put(&t, "    - %s/%d\n", i < 65535 ? "tcp" : "udp", 1 + i % 65535);
		put(&t, "rules:\n  - { name: r, service: many, action: accept }\n");
		if (!pass)
			at_limit("limit-service-entries-at", &t);
		else
			past_limit("limit-service-entries-past", &t, "service 'many' has more than 65536 entries",
				   5 + POLICY_MAX_SERVICE_ENTRIES);
	}
}

static void limits(void)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		put(&t, HEAD "rules:\n");
		for (int i = 0; i < POLICY_MAX_LIMITS + pass; i++)
			put(&t,
			    "  - { name: l%d, service: tcp/%d, limit: { rate: 10/second, per: %s }, action: accept }\n",
			    i, 1 + i, i % 2 ? "source" : "rule");
		if (!pass)
			at_limit("limit-rate-limits-at", &t);
		else
			past_limit("limit-rate-limits-past", &t,
				   "more than 4096 rules with limit:", 4 + POLICY_MAX_LIMITS);
	}
}

static void dynsets(void)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		put(&t, HEAD "sets:\n");
		for (int i = 0; i < POLICY_MAX_DYNSETS + pass; i++)
			put(&t, "  d%d: { dynamic: true }\n", i);
		put(&t, "rules:\n");
		for (int i = 0; i < POLICY_MAX_DYNSETS + pass; i++)
			put(&t, "  - { name: r%d, hook: %s, from: d%d, action: drop }\n", i,
			    i % 2 ? "input" : "forward", i);
		if (!pass)
			at_limit("limit-dynamic-sets-at", &t);
		else
			past_limit("limit-dynamic-sets-past", &t, "more than 1022 dynamic sets",
				   4 + POLICY_MAX_DYNSETS);
	}
}

/* 2,000,000 prefixes: 142,857 copies of a range cut into 14 prefixes
 * (198.51.100.1-198.51.100.254: /32, /31, /30, ... /26, /26, ... /32) and
 * two addresses; past: one more address. */
static void prefixes(const char *at, const char *past, bool in_set)
{
	struct text t = { 0 };

	for (int pass = 0; pass < 2; pass++) {
		put(&t, HEAD "%s:\n", in_set ? "sets:\n  big" : "rules:\n  - name: r\n    action: drop\n    from");
		for (uint32_t i = 0; i < POLICY_MAX_PREFIXES / 14; i++)
			put(&t, "%s- 198.51.100.1-198.51.100.254\n", in_set ? "    " : "      ");
		for (int i = 0; i < 2 + pass; i++)
			put(&t, "%s- 192.0.2.%d\n", in_set ? "    " : "      ", i);
		if (in_set)
			put(&t, "rules:\n  - { name: r, from: big, action: drop }\n");
		if (!pass)
			at_limit(at, &t);
		else
			past_limit(past, &t,
				   in_set ? "more than 2000000 prefixes in its sets"
					  : "the rules have more than 2000000 prefixes",
				   0);
	}
}

static void names(void)
{
	struct text t = { 0 };
	char name[POLICY_MAX_NAME + 2];

	memset(name, 'n', sizeof(name));
	name[POLICY_MAX_NAME] = '\0';
	put(&t,
	    HEAD "sets: { %s: [192.0.2.0/24] }\nrules:\n  - { name: %s, from: %s, limit: { rate: 1/second, per: source "
		 "}, action: drop }\n",
	    name, name, name);
	at_limit("limit-name-length-at", &t);
	name[POLICY_MAX_NAME] = 'n';
	name[POLICY_MAX_NAME + 1] = '\0';
	put(&t, HEAD "rules:\n  - { name: %s, action: drop }\n", name);
	past_limit("limit-name-length-past", &t, "use up to 64 letters", 4);
}

int main(void)
{
	rules_per_hook();
	rules_with_ha();
	wildcards();
	group_ifaces();
	service_entries();
	limits();
	dynsets();
	prefixes("limit-set-prefixes-at", "limit-set-prefixes-past", true);
	prefixes("limit-rule-prefixes-at", "limit-rule-prefixes-past", false);
	names();
	CHECK_EXIT();
}
