/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Unreachable rules: rule B is never reached on a hook when an earlier rule
 * A on that hook matches every packet B matches (first match wins). The
 * test is conservative: it only warns when coverage is certain.
 */
#include <string.h>

#include "policy/check/check.h"

/* Pairwise work is bounded so that huge policies still validate quickly. */
#define SHADOW_MAX_RULES     3000 /* pairwise: ~50 ms at the limit */
#define SHADOW_MAX_PAIR_WORK 100000u

static bool addr_covers(const struct addr_match *a, const struct addr_match *b)
{
	if (a->any)
		return true;
	if (a->dyn || b->dyn) /* entries known at run time only: the same set, the same way */
		return a->dyn == b->dyn && a->neg == b->neg;
	if (b->any || (uint64_t)a->n * b->n > SHADOW_MAX_PAIR_WORK)
		return false;
	if (a->neg && b->neg) /* not in A covers not in B when A is inside B */
		return policy_prefixes_within(a, b);
	if (a->neg) { /* not in A covers B when no prefix of B meets A */
		for (uint32_t i = 0; i < b->n; i++)
			for (uint32_t j = 0; j < a->n; j++)
				if (policy_prefix_holds(&a->v[j], &b->v[i]) || policy_prefix_holds(&b->v[i], &a->v[j]))
					return false;
		return true;
	}
	if (b->neg)
		return false; /* a list does not cover a complement (conservative) */
	return policy_prefixes_within(b, a);
}

/* name (an interface or a wildcard) is wholly inside m's entries. */
static bool iface_listed(const struct iface_match *m, const char *name)
{
	for (uint32_t j = 0; j < m->n; j++)
		if (policy_ifname_match(m->ifnames[j], name))
			return true;
	return false;
}

/* name and m's entries have an interface in common. */
static bool iface_meets(const struct iface_match *m, const char *name)
{
	for (uint32_t j = 0; j < m->n; j++)
		if (policy_ifname_match(m->ifnames[j], name) || policy_ifname_match(name, m->ifnames[j]))
			return true;
	return false;
}

static bool iface_covers(const struct iface_match *a, const struct iface_match *b)
{
	if (a->any)
		return true;
	if (b->any || (b->neg && !a->neg))
		return false;
	if (a->neg && b->neg) { /* not in A covers not in B when A is inside B */
		for (uint32_t i = 0; i < a->n; i++)
			if (!iface_listed(b, a->ifnames[i]))
				return false;
		return true;
	}
	for (uint32_t i = 0; i < b->n; i++) /* each of B in A (outside A, when negated) */
		if (a->neg ? iface_meets(a, b->ifnames[i]) : !iface_listed(a, b->ifnames[i]))
			return false;
	return true;
}

/* a's port list contains every range of b. */
static bool ports_cover(const struct port_match *a, const struct port_match *b)
{
	if (a->any)
		return true;
	if (b->any)
		return false;
	for (uint32_t i = 0; i < b->n; i++) {
		bool found = false;

		for (uint32_t j = 0; j < a->n && !found; j++)
			found = a->v[j].proto == b->v[i].proto && a->v[j].lo <= b->v[i].lo && a->v[j].hi >= b->v[i].hi;
		if (!found)
			return false;
	}
	return true;
}

static bool l4_covers(const struct rule *a, const struct rule *b)
{
	if (a->proto >= 0) {
		if (b->proto >= 0 && b->proto != a->proto)
			return false;
		if (b->proto < 0) {
			/* b may still be confined to a's protocol by its ports. */
			if (b->service.any && b->sport.any)
				return false;
			for (uint32_t i = 0; i < b->service.n; i++)
				if (b->service.v[i].proto != a->proto)
					return false;
			for (uint32_t i = 0; i < b->sport.n; i++)
				if (b->sport.v[i].proto != a->proto)
					return false;
		}
	}
	if (a->nicmp) { /* b's types must all be a's */
		uint16_t j = 0;

		if (!b->nicmp)
			return false;
		for (uint16_t i = 0; i < b->nicmp; i++) {
			while (j < a->nicmp && a->icmp_types[j] < b->icmp_types[i])
				j++;
			if (j == a->nicmp || a->icmp_types[j] != b->icmp_types[i])
				return false;
		}
	}
	return ports_cover(&a->service, &b->service) && ports_cover(&a->sport, &b->sport);
}

/* A rule with limit: lets what is over its limit go on to later rules, and
 * one with when: what comes outside its windows, so they cover nothing
 * (unless the later rule has the same windows: not told apart here). */
static bool rule_covers(const struct rule *a, const struct rule *b)
{
	return !policy_has_limit(&a->limit) && !a->when.n && (b->families & ~a->families) == 0 &&
	       (b->state & ~a->state) == 0 && iface_covers(&a->in, &b->in) && iface_covers(&a->out, &b->out) &&
	       addr_covers(&a->from, &b->from) && addr_covers(&a->to, &b->to) && l4_covers(a, b);
}

void check_shadowed(const struct policy *p, struct diags *d)
{
	if (p->nrules > SHADOW_MAX_RULES) {
		/* Said, so that no warning is not read as no shadowed rule. */
		diag_note(d, DIAG_NOWHERE,
			  "the shadowed-rule check was skipped: %u rules, more than %u (it compares rules pairwise)",
			  p->nrules, SHADOW_MAX_RULES);
		return;
	}
	for (uint32_t bi = 1; bi < p->nrules; bi++) {
		const struct rule *b = &p->rules[bi];

		if (!b->families)
			continue;
		for (int h = 0; h < POLICY_HOOK_MAX; h++) {
			if (!(b->hooks & (1u << h)))
				continue;
			for (uint32_t ai = 0; ai < bi; ai++) {
				const struct rule *a = &p->rules[ai];

				if (!(a->hooks & (1u << h)) || !rule_covers(a, b))
					continue;
				diag_warn(d, b->loc,
					  "rule '%s' is never reached on the %s hook: rule '%s' (line %u) matches "
					  "every packet it matches",
					  b->name, policy_hook_names[h], a->name, a->loc.line);
				break;
			}
		}
	}
}
