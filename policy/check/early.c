/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * early: true drops a rule's packets at XDP, on its input interfaces,
 * before the stack: before defrag, conntrack and every earlier rule. That
 * keeps the rule's meaning only for a drop by source address on named
 * input interfaces, on both hooks a packet from them can take (input and
 * forward), with no earlier rule that could accept some of those packets.
 * Anything else is an error here, at the place that makes it so. One
 * difference stays, and is the point of a ban: XDP also drops packets of
 * connections established before (the hooks accept those before any rule
 * with established: accept).
 */
#include <string.h>

#include "policy/check/check.h"

#define EARLY_MAX_PAIR_WORK 1000000u

/* What the rule matches beyond source and input interface: XDP sees
 * neither a reassembled datagram's ports nor conntrack state. The key, or
 * NULL. */
static const char *other_match(const struct rule *r)
{
	if (!r->to.any)
		return "to";
	if (!r->out.any)
		return "out";
	if (!r->service.any)
		return "service";
	if (!r->sport.any)
		return "source-service";
	if (r->nicmp)
		return "icmp-type";
	if (r->proto >= 0)
		return "proto";
	if (r->state != POLICY_CT_ALL)
		return "state";
	if (policy_has_limit(&r->limit))
		return "limit";
	return NULL;
}

/* The rule's own shape: a drop by source on named input interfaces of both
 * hooks. 0, or -1 with the error said. */
static int check_shape(const struct rule *r, struct diags *d)
{
	const uint8_t both = 1u << POLICY_HOOK_INPUT | 1u << POLICY_HOOK_FORWARD;
	const char *key = other_match(r);

	if (r->action != POLICY_DROP) {
		diag_error(d, r->early_loc, "early: only a drop can run at XDP, and rule '%s' is '%s'", r->name,
			   policy_action_name(r->action));
		return -1;
	}
	if ((r->hooks & both) != both || (r->hooks & 1u << POLICY_HOOK_OUTPUT)) {
		diag_error(d, r->early_loc,
			   "early: XDP drops every packet from these sources on the input interfaces, whether "
			   "for this host or forwarded, so rule '%s' must be on exactly 'hook: [input, forward]'",
			   r->name);
		return -1;
	}
	if (key) {
		diag_error(d, r->early_loc,
			   "early: XDP judges a packet by its source and input interface only (before "
			   "reassembly and conntrack), and rule '%s' also matches '%s:'" DIAG_FIX
			   "; split it, or remove "
			   "'early'",
			   r->name, key);
		return -1;
	}
	if (r->from.any || r->from.neg) {
		diag_error(d, r->early_loc,
			   "early: rule '%s' needs 'from:' with the addresses to drop (a set, a set file or a "
			   "dynamic set; not negated)",
			   r->name);
		return -1;
	}
	if (r->in.any || r->in.neg) {
		diag_error(d, r->early_loc,
			   "early: rule '%s' needs 'in:' naming the interfaces XDP drops on (not negated)", r->name);
		return -1;
	}
	for (uint32_t i = 0; i < r->in.n; i++)
		if (policy_ifname_wild(r->in.ifnames[i])) {
			diag_error(d, r->early_loc,
				   "early: '%s' is a wildcard; XDP attaches to named interfaces" DIAG_FIX
				   " (list them)",
				   r->in.ifnames[i]);
			return -1;
		}
	return 0;
}

/* Earlier rule a may see packets on one of r's input interfaces. */
static bool iface_meets(const struct rule *a, const struct rule *r)
{
	if (a->in.any)
		return true;
	for (uint32_t i = 0; i < r->in.n; i++) {
		bool listed = false;

		for (uint32_t j = 0; j < a->in.n && !listed; j++)
			listed = policy_ifname_match(a->in.ifnames[j], r->in.ifnames[i]);
		if (listed != a->in.neg)
			return true;
	}
	return false;
}

/* Earlier rule a may match a source r drops (conservative: unknown is yes). */
static bool source_meets(const struct rule *a, const struct rule *r)
{
	const struct addr_match *x = &a->from, *y = &r->from;

	if (x->any || x->neg || x->dyn || y->dyn || (uint64_t)x->n * y->n > EARLY_MAX_PAIR_WORK)
		return true;
	for (uint32_t i = 0; i < x->n; i++)
		for (uint32_t j = 0; j < y->n; j++)
			if (x->v[i].family == y->v[j].family &&
			    (policy_prefix_holds(&x->v[i], &y->v[j]) || policy_prefix_holds(&y->v[j], &x->v[i])))
				return true;
	return false;
}

/* The first earlier rule that could accept (or reject: answer) a packet r
 * drops; NULL if none. */
static const struct rule *earlier_taker(const struct policy *p, const struct rule *r)
{
	const uint8_t both = 1u << POLICY_HOOK_INPUT | 1u << POLICY_HOOK_FORWARD;

	for (const struct rule *a = p->rules; a < r; a++)
		if (a->action != POLICY_DROP && (a->hooks & both) && (a->families & r->families) && iface_meets(a, r) &&
		    source_meets(a, r))
			return a;
	return NULL;
}

void check_early(const struct policy *p, struct diags *d)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i], *a;

		if (!r->early)
			continue;
		if (++n == POLICY_MAX_EARLY + 1)
			diag_error(d, r->early_loc, "more than %d rules with early: true (the limit)",
				   POLICY_MAX_EARLY);
		if (check_shape(r, d) < 0)
			continue;
		if ((a = earlier_taker(p, r))) {
			if (a->implicit)
				diag_error(d, r->early_loc,
					   "early: the HA pair's own traffic is accepted before rule '%s' on these "
					   "interfaces; at XDP it would be dropped first" DIAG_FIX
					   " (remove 'early', or keep the "
					   "pair's addresses out of 'from:')",
					   r->name);
			else
				diag_error(
					d, r->early_loc,
					"early: rule '%s' (line %u) comes first and may %s some of these packets; at "
					"XDP they would be dropped before it is asked" DIAG_FIX
					" (move rule '%s' above it, or "
					"remove 'early')",
					a->name, a->loc.line, policy_action_name(a->action), r->name);
			continue;
		}
	}
}
