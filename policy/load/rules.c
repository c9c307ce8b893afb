/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the rules: hooks, sides, addresses, L4 match, state, action. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static void hook_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct rule *r = arg;
	int h = lx_choice(x, n, "hook", policy_hook_names);

	if (h < 0)
		return;
	if (!x->p->hooks[h].present)
		diag_error(x->d, n->loc,
			   "hook '%s' is not declared" DIAG_FIX
			   "; add it under hooks: with its default, e.g. '%s: { default: "
			   "accept }'",
			   n->str, n->str);
	r->hooks |= (uint8_t)(1u << h);
}

static void state_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct rule *r = arg;
	int s = lx_choice(x, n, "state", policy_ct_names);

	if (s >= 0)
		r->state |= (uint8_t)(1u << s);
}

static void rule_proto(struct lx *x, struct rule *r, const struct ynode *n)
{
	const char *why;

	if (!lx_is(x, n, YNODE_SCALAR, "proto"))
		return;
	if (parse_proto(n->str, &r->proto, &why) < 0) {
		const char *near = diag_closest(n->str, policy_proto_names);

		if (near)
			diag_error(x->d, n->loc, "proto '%s': unknown protocol" DIAG_FIX "; did you mean '%s'?", n->str,
				   near);
		else
			diag_error(x->d, n->loc, "proto '%s': %s", n->str, why);
	}
}

static void icmp_type_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct rule *r = arg;
	bool v6 = r->proto == IPPROTO_ICMPV6;
	uint64_t num;
	int t;

	if (n->str[0] >= '0' && n->str[0] <= '9') {
		if (!lx_uint(x, n, "icmp-type", 0, 255, &num))
			return;
		t = (int)num;
	} else if ((t = policy_icmp_type(n->str, v6)) < 0) {
		const char *near = policy_icmp_type_closest(n->str, v6);

		if (near)
			diag_error(x->d, n->loc, "unknown %s type '%s'" DIAG_FIX "; did you mean '%s'?",
				   v6 ? "ICMPv6" : "ICMP", n->str, near);
		else
			diag_error(x->d, n->loc,
				   "unknown %s type '%s' (e.g. echo-request, echo-reply, destination-unreachable%s, or "
				   "a number 0..255)",
				   v6 ? "ICMPv6" : "ICMP", n->str,
				   v6 ? ", nd-neighbor-solicit, mld-listener-query" : "");
		return;
	}
	for (uint16_t i = 0; i < r->nicmp; i++) {
		if (r->icmp_types[i] == t) {
			diag_warn(x->d, n->loc, "icmp-type %s is listed twice", n->str);
			return;
		}
	}
	if (!LX_APPEND(x, r->icmp_types, r->nicmp))
		return;
	/* kept ascending: insertion */
	{
		uint16_t i = (uint16_t)(r->nicmp - 1);

		for (; i > 0 && r->icmp_types[i - 1] > t; i--)
			r->icmp_types[i] = r->icmp_types[i - 1];
		r->icmp_types[i] = (uint8_t)t;
	}
}

static void rule_icmp_type(struct lx *x, struct rule *r, const struct ynode *n)
{
	if (r->proto != IPPROTO_ICMP && r->proto != IPPROTO_ICMPV6) {
		diag_error(x->d, n->loc, "icmp-type needs 'proto: icmp' or 'proto: icmpv6' in the same rule");
		return;
	}
	lx_each_scalar(x, n, "icmp-type", icmp_type_item, r);
	if (n->type == YNODE_SEQ && !n->nkids)
		diag_error(x->d, n->loc,
			   "icmp-type is an empty list: nothing would match" DIAG_FIX
			   "; list types or leave icmp-type out");
}

/* With both proto and service, keep the service entries of that protocol. */
static void rule_narrow_service(struct lx *x, struct rule *r, struct port_match *m, const struct ynode *n,
				const char *what)
{
	uint32_t kept = 0;

	if (m->any || r->proto < 0)
		return;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].proto == r->proto)
			m->v[kept++] = m->v[i];
	if (!kept && !m->n)
		return; /* an empty list, reported where it is parsed */
	if (!kept && m->n && policy_proto_name(r->proto))
		diag_error(x->d, n->loc, "%s '%s' has no %s ports, but the rule says 'proto: %s'", what, m->what,
			   policy_proto_name(r->proto), policy_proto_name(r->proto));
	else if (!kept && m->n)
		diag_error(x->d, n->loc, "%s '%s' has no ports of protocol %d, but the rule says 'proto: %d'", what,
			   m->what, r->proto, r->proto);

	m->n = kept;
}

static uint8_t rule_families(const struct rule *r)
{
	uint8_t f = r->from.families & r->to.families;

	if (r->proto == IPPROTO_ICMP)
		f &= POLICY_FAM_IPV4;
	if (r->proto == IPPROTO_ICMPV6)
		f &= POLICY_FAM_IPV6;
	return f;
}

static const char *const rule_keys[] = {
	"name",	 "hook",   "in",	  "out", "from",  "to",	   "service",  "source-service", "proto", "icmp-type",
	"state", "action", "reject-with", "log", "limit", "early", "synproxy", "comment",	 "when",  NULL
};
static const struct lx_key_hint rule_key_hints[] = {
	{ "burst", "'burst' belongs inside limit:, e.g. 'limit: { rate: 10/second, burst: 20 }'" },
	{ "rate", "a rule's rate is its limit:, e.g. 'limit: 10/second' or 'limit: { rate: 10/second, burst: 20 }'" },
	{ NULL, NULL },
};

static void rule_hooks_and_sides(struct lx *x, struct rule *r, const struct ynode *n)
{
	const struct ynode *v;

	if ((v = ynode_get(n, "hook"))) {
		lx_each_scalar(x, v, "hook", hook_item, r);
		if (v->type == YNODE_SEQ && !v->nkids)
			diag_error(x->d, v->loc,
				   "the hook list is empty" DIAG_FIX "; name at least one of input, forward, output");
	} else if (!x->p->hooks[POLICY_HOOK_FORWARD].present && (x->p->hooks[0].present || x->p->hooks[2].present))
		diag_error(
			x->d, n->loc,
			"rule '%s' has no 'hook:', so it is for forward, which is not declared under hooks:", r->name);
	else
		r->hooks = 1u << POLICY_HOOK_FORWARD;
	lx_iface_match(x, v = ynode_get(n, "in"), "in", &r->in);
	if (v && (r->hooks & (1u << POLICY_HOOK_OUTPUT)))
		diag_error(x->d, v->loc,
			   "'in:' cannot be used on the output hook: locally sent packets have no input interface");
	lx_iface_match(x, v = ynode_get(n, "out"), "out", &r->out);
	if (v && (r->hooks & (1u << POLICY_HOOK_INPUT)))
		diag_error(x->d, v->loc,
			   "'out:' cannot be used on the input hook: packets to this host have no output interface");
}

static void rule_l4(struct lx *x, struct rule *r, const struct ynode *n)
{
	const struct ynode *v;

	if ((v = ynode_get(n, "proto")))
		rule_proto(x, r, v);
	if ((v = ynode_get(n, "icmp-type")))
		rule_icmp_type(x, r, v);
	lx_port_match(x, v = ynode_get(n, "service"), "service", &r->service);
	if (v)
		rule_narrow_service(x, r, &r->service, v, "service");
	lx_port_match(x, v = ynode_get(n, "source-service"), "source-service", &r->sport);
	if (v)
		rule_narrow_service(x, r, &r->sport, v, "source-service");
	if (v && !r->service.any && r->proto < 0) {
		/* Both port lists given without proto: a packet has one protocol,
		 * so a tcp source port with a udp destination port never matches. */
		bool common = false;

		for (uint32_t i = 0; i < r->service.n && !common; i++)
			for (uint32_t j = 0; j < r->sport.n && !common; j++)
				common = r->service.v[i].proto == r->sport.v[j].proto;
		if (!common && x->d->errors == x->rule_errors0)
			diag_warn(x->d, v->loc, "service and source-service share no protocol: the rule never matches");
	}
	if (r->nicmp && !r->service.any)
		diag_error(x->d, ynode_get(n, "service")->loc, "a rule cannot have both icmp-type and service");
}

/* limit: 10/second, { rate: 10/second, burst: 20, per: source }, or
 * { connections: 4, per: source, overload: banned, timeout: 1h }. */
static void rule_limit(struct lx *x, struct rule *r, const struct ynode *n)
{
	static const char *const keys[] = { "rate", "burst", "per", "connections", "overload", "timeout", NULL };
	static const char *const pers[] = { "rule", "source", NULL };
	struct policy_limit *l = &r->limit;
	const struct ynode *rate = n, *conns = NULL, *v;
	const char *why;
	uint64_t u;

	l->loc = n->loc;
	if (n->type == YNODE_MAP) {
		lx_check_keys(x, n, keys, "limit");
		rate = ynode_get(n, "rate");
		conns = ynode_get(n, "connections");
		if (rate && conns) {
			diag_error(x->d, conns->loc,
				   "a limit is a rate or a number of connections, not both" DIAG_FIX
				   ": give each its own rule");
			return;
		}
		if (!rate && !conns) {
			if (!ynode_has(n, "rate") && !ynode_has(n, "connections"))
				diag_error(x->d, n->loc,
					   "limit needs a 'rate:' or 'connections:', e.g. 'limit: { rate: 10/second, "
					   "burst: 20 }' or 'limit: { connections: 4, per: source }'");
			return;
		}
	} else if (n->type != YNODE_SCALAR) {
		diag_error(x->d, n->loc,
			   "limit is a rate (limit: 10/second) or a mapping (limit: { rate: 5/minute, per: source })");
		return;
	}
	if (conns) {
		if (lx_uint(x, conns, "limit connections", 1, POLICY_MAX_CONNS, &u))
			l->conns = (uint32_t)u;
		if ((v = ynode_get(n, "burst")))
			diag_error(x->d, v->loc, "'burst' belongs to a rate, not to a number of connections");
		if (r->state != POLICY_CT_NEW)
			diag_error(
				x->d, conns->loc,
				"a connection limit counts new connections: the rule needs 'state: new' (packets of "
				"connections it let in are accepted by 'established: accept' or a rule of their own)");
	} else if (lx_is(x, rate, YNODE_SCALAR, "limit rate") && parse_rate(rate->str, &l->rate, &why) < 0) {
		diag_error(x->d, rate->loc, "limit '%s': %s", rate->str, why);
		l->rate.n = 0;
	}
	l->burst = l->rate.n;
	if (n->type != YNODE_MAP)
		return;
	if (!conns && (v = ynode_get(n, "burst")) && lx_uint(x, v, "limit burst", 1, 1000000, &u))
		l->burst = (uint32_t)u;
	if ((v = ynode_get(n, "per")) && lx_choice(x, v, "limit per", pers) == 1)
		l->per_source = true;
	if ((v = ynode_get(n, "overload")) && lx_is(x, v, YNODE_SCALAR, "limit overload")) {
		struct addr_set *set = lx_find_set(x, v->str);

		l->overload_loc = v->loc;
		if (set) {
			set->used = true;
			l->overload_set = (uint32_t)(set - x->p->sets) + 1;
		}
		if (!set)
			diag_error(x->d, v->loc,
				   "overload: no set named '%s' (declare it under sets: with dynamic: true)", v->str);
		else if (!set->dynamic)
			diag_error(x->d, v->loc,
				   "overload: set '%s' is not dynamic" DIAG_FIX
				   ": offenders go into a set with 'dynamic: true'",
				   v->str);
		x->oom |= !(l->overload = strdup(v->str));
	}
	if ((v = ynode_get(n, "timeout"))) {
		if (!l->overload)
			diag_error(x->d, v->loc,
				   "'timeout' is how long an offender stays in the overload set" DIAG_FIX ": add "
				   "'overload: SET'");
		else if (lx_is(x, v, YNODE_SCALAR, "limit timeout")) {
			if (parse_duration(v->str, POLICY_MAX_TIMEOUT, &u, &why) < 0)
				diag_error(x->d, v->loc, "limit timeout '%s': %s (at most 365 days)", v->str, why);
			else
				l->overload_timeout = (uint32_t)u;
		}
	}
}

static void load_rule(struct lx *x, const struct ynode *n)
{
	static const char *const actions[] = { "drop", "accept", "reject", NULL };
	const struct ynode *v;
	struct rule *r;
	int a;

	if (!lx_is(x, n, YNODE_MAP, "a rule"))
		return;
	x->rule_errors0 = x->d->errors;
	lx_check_keys_hinted(x, n, rule_keys, "a rule", rule_key_hints);
	r = LX_APPEND(x, x->p->rules, x->p->nrules);
	if (!r)
		return;
	r->loc = n->loc;
	r->proto = -1;
	r->state = POLICY_CT_ALL;
	v = ynode_get(n, "name");
	if (!v && !ynode_has(n, "name")) {
		diag_error(x->d, n->loc, "a rule needs a 'name:' (it names the rule's counters and log events)");
	} else if (v && lx_is(x, v, YNODE_SCALAR, "a rule name")) {
		if (!parse_valid_name(v->str))
			diag_error(x->d, v->loc,
				   "rule name '%s' is not valid" DIAG_FIX
				   ": use up to %d letters, digits, '_', '-' or '.', "
				   "starting with a letter",
				   v->str, POLICY_MAX_NAME);
		x->oom |= !(r->name = strdup(v->str));
		r->loc = v->loc;
	}
	if (!r->name) {
		r->unnamed = true;
		if (asprintf(&r->name, "rule-%u", x->p->nrules) < 0) {
			r->name = NULL;
			x->oom = true;
		}
	}
	rule_hooks_and_sides(x, r, n);
	lx_addr_match(x, ynode_get(n, "from"), "from", &r->from);
	lx_addr_match(x, ynode_get(n, "to"), "to", &r->to);
	rule_l4(x, r, n);
	if ((v = ynode_get(n, "state"))) {
		r->state = 0;
		lx_each_scalar(x, v, "state", state_item, r);
		if (!r->state)
			r->state = POLICY_CT_ALL;
	}
	v = ynode_get(n, "action");
	if (!v && !ynode_has(n, "action"))
		diag_error(x->d, n->loc, "rule '%s' needs an 'action:' (accept, drop or reject)",
			   r->name ? r->name : "?");
	else if (v && (a = lx_choice(x, v, "action", actions)) >= 0)
		r->action = (enum policy_action)a;
	if ((v = ynode_get(n, "reject-with"))) {
		int w = lx_choice(x, v, "reject-with", policy_reject_names);

		if (w >= 0)
			r->reject_with = (enum policy_reject)w;
		if (r->action != POLICY_REJECT)
			diag_error(x->d, v->loc, "'reject-with' needs 'action: reject'");
	}
	if ((v = ynode_get(n, "log")))
		lx_bool(x, v, "log", &r->log);
	if ((v = ynode_get(n, "limit")))
		rule_limit(x, r, v); /* after state: */
	if ((v = ynode_get(n, "early"))) {
		lx_bool(x, v, "early", &r->early);
		r->early_loc = v->loc;
	}
	if ((v = ynode_get(n, "synproxy"))) {
		lx_bool(x, v, "synproxy", &r->synproxy);
		r->synproxy_loc = v->loc;
	}
	if ((v = ynode_get(n, "when"))) {
		load_when(x, r, v);
		if (r->early)
			diag_error(x->d, v->loc,
				   "when: cannot go with early: true (the drop at XDP is not scheduled)" DIAG_FIX
				   ": give the "
				   "scheduled drop a rule of its own without early:");
		if (r->synproxy)
			diag_error(x->d, v->loc,
				   "when: cannot go with synproxy: true (the SYN proxy is not scheduled)" DIAG_FIX
				   ": remove one "
				   "of them");
	}
	if ((v = ynode_get(n, "comment")) && lx_is(x, v, YNODE_SCALAR, "comment"))
		x->oom |= !(r->comment = strdup(v->str));
	r->families = rule_families(r);
	if (!r->families && x->d->errors == x->errors0)
		diag_warn(x->d, r->loc,
			  "rule '%s' can never match: its addresses and protocol share no address family (or a set is "
			  "empty)",
			  r->name);
}

static int by_name(const void *a, const void *b)
{
	const struct rule *const *x = a, *const *y = b;
	int c = strcmp((*x)->name, (*y)->name);

	return c ? c : (*x < *y ? -1 : *x > *y);
}

/* Duplicate names, found by sorting: quadratic scans are too slow for
 * 65,536 rules. Each later use points at the first. */
/* The cut id of each scheduled accept rule that does not keep its
 * connections: a hash of its name (FNV-1a), the next free one on a
 * collision, so that a rule keeps its id across reloads that add or remove
 * others. */
static void cut_ids(struct policy *p)
{
	uint64_t used[(POLICY_CUT_IDS + 64) / 64] = { 0 };
	uint32_t given = 0;

	for (uint32_t i = 0; i < p->nrules && given < POLICY_CUT_IDS; i++) {
		struct rule *r = &p->rules[i];
		uint32_t h = 2166136261u;

		if (!r->when.n || r->when.keep || r->action != POLICY_ACCEPT)
			continue;
		for (const char *c = r->name; *c; c++)
			h = (h ^ (uint8_t)*c) * 16777619u;
		h %= POLICY_CUT_IDS;
		while (used[(h + 1) / 64] >> ((h + 1) % 64) & 1)
			h = (h + 1) % POLICY_CUT_IDS;
		used[(h + 1) / 64] |= 1ull << ((h + 1) % 64);
		r->when.cut = (uint16_t)(h + 1);
		given++;
	}
}

static void check_duplicate_names(struct lx *x)
{
	const struct rule **v = calloc(x->p->nrules ? x->p->nrules : 1, sizeof(*v));
	uint32_t n = 0;

	if (!v) {
		x->oom = true;
		return;
	}
	for (uint32_t i = 0; i < x->p->nrules; i++)
		if (x->p->rules[i].name && !x->p->rules[i].unnamed)
			v[n++] = &x->p->rules[i];
	sort_n(v, n, sizeof(*v), by_name);
	for (uint32_t i = 1, first = 0; i < n; i++) {
		if (strcmp(v[i]->name, v[first]->name)) {
			first = i;
			continue;
		}
		diag_error(x->d, v[i]->loc, "duplicate rule name '%s' (first used at line %u)", v[i]->name,
			   v[first]->loc.line);
	}
	free(v);
}

void load_rules(struct lx *x, const struct ynode *n)
{
	uint32_t per_hook[POLICY_HOOK_MAX] = { 0 }, limits = 0, rounds[POLICY_HOOK_MAX] = { 0 }, scheduled = 0;

	if (!n)
		return;
	if (!lx_is(x, n, YNODE_SEQ, "rules"))
		return;
	for (size_t i = 0; i < n->nkids; i++) {
		load_rule(x, n->kids[i]);
		for (int h = 0; h < POLICY_HOOK_MAX && x->p->nrules; h++) {
			if (!(x->p->rules[x->p->nrules - 1].hooks & (1u << h)))
				continue;
			if (++per_hook[h] == POLICY_MAX_RULES + 1)
				diag_error(x->d, n->kids[i]->loc, "more than %d rules on the %s hook (the limit)",
					   POLICY_MAX_RULES, policy_hook_names[h]);
			if (policy_has_limit(&x->p->rules[x->p->nrules - 1].limit) && ++limits == POLICY_MAX_LIMITS + 1)
				diag_error(
					x->d, x->p->rules[x->p->nrules - 1].limit.loc,
					"more than %d rules with limit: (a rule on several hooks counts once per hook)",
					POLICY_MAX_LIMITS);
			if ((policy_has_limit(&x->p->rules[x->p->nrules - 1].limit) ||
			     x->p->rules[x->p->nrules - 1].from.dyn || x->p->rules[x->p->nrules - 1].to.dyn ||
			     x->p->rules[x->p->nrules - 1].when.n) &&
			    ++rounds[h] == POLICY_MAX_LIMITS + 1)
				diag_error(x->d, n->kids[i]->loc,
					   "more than %d rules with limit:, when: or a dynamic set on the %s hook (the "
					   "limit)",
					   POLICY_MAX_LIMITS, policy_hook_names[h]);
		}
		if (x->p->nrules && x->p->rules[x->p->nrules - 1].when.n && ++scheduled == POLICY_MAX_SCHEDULED + 1)
			diag_error(x->d, x->p->rules[x->p->nrules - 1].when.loc,
				   "more than %d rules with when: (the limit)", POLICY_MAX_SCHEDULED);
	}
	for (uint32_t i = 0, k = 0; i < x->p->nrules; i++)
		if (x->p->rules[i].when.n)
			x->p->rules[i].when.sched = ++k;
	check_duplicate_names(x);
	cut_ids(x->p);
}
