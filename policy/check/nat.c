/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NAT entries checked against each other and against the filter: what
 * nftables would refuse or make ambiguous (two targets for one port, two
 * source translations for one interface), and translations no rule lets
 * through (the forward hook sees the translated destination).
 */
#include <netinet/in.h>
#include <string.h>

#include "policy/check/check.h"

/* Whether two interface lists have an interface in common: names and
 * wildcards ("eth*") either way; a negated list ("!wan") meets a plain one
 * that names something outside it, and any other negated list. */
static bool ifaces_meet(const struct iface_match *a, const struct iface_match *b)
{
	if (a->any || b->any || (a->neg && b->neg))
		return true;
	if (a->neg || b->neg) {
		const struct iface_match *pos = a->neg ? b : a, *neg = a->neg ? a : b;

		for (uint32_t i = 0; i < pos->n; i++) {
			bool inside = false;

			for (uint32_t j = 0; j < neg->n && !inside; j++)
				inside = policy_ifname_match(neg->ifnames[j], pos->ifnames[i]);
			if (!inside)
				return true;
		}
		return false;
	}
	for (uint32_t i = 0; i < a->n; i++)
		for (uint32_t j = 0; j < b->n; j++)
			if (policy_ifname_match(a->ifnames[i], b->ifnames[j]) ||
			    policy_ifname_match(b->ifnames[j], a->ifnames[i]))
				return true;
	return false;
}

static bool prefixes_meet(const struct prefix *a, const struct prefix *b)
{
	unsigned plen = a->plen < b->plen ? a->plen : b->plen, full = plen / 8, rest = plen % 8;

	if (a->family != b->family || memcmp(a->addr, b->addr, full))
		return false;
	return !rest || ((a->addr[full] ^ b->addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Whether two address lists have an address in common; a negated list
 * (every address not listed, of either family) meets a plain one with a
 * prefix not wholly inside it, and any other negated list. */
static bool addrs_meet(const struct addr_match *a, const struct addr_match *b)
{
	if (a->any || b->any || (a->neg && b->neg))
		return true;
	if (a->neg || b->neg) {
		const struct addr_match *pos = a->neg ? b : a, *neg = a->neg ? a : b;

		return !policy_prefixes_within(pos, neg);
	}
	for (uint32_t i = 0; i < a->n; i++)
		for (uint32_t j = 0; j < b->n; j++)
			if (prefixes_meet(&a->v[i], &b->v[j]))
				return true;
	return false;
}

/* A port both services translate, as "tcp/80"; false if none. */
static bool ports_meet(const struct port_match *a, const struct port_match *b, char *buf, size_t len)
{
	for (uint32_t i = 0; i < a->n; i++)
		for (uint32_t j = 0; j < b->n; j++) {
			const struct port_range *x = &a->v[i], *y = &b->v[j];

			if (x->proto != y->proto || x->hi < y->lo || y->hi < x->lo)
				continue;
			snprintf(buf, len, "%s/%u", policy_proto_name(x->proto), x->lo > y->lo ? x->lo : y->lo);
			return true;
		}
	return false;
}

static bool is_dnat(const struct nat_rule *n)
{
	return n->kind == NAT_FORWARD_PORT || n->kind == NAT_REDIRECT;
}

static void target_text(const struct nat_rule *n, char *buf, size_t len)
{
	char addr[64];

	if (n->kind == NAT_REDIRECT) {
		snprintf(buf, len, "local port %u", n->to_port);
		return;
	}
	policy_prefix_format(&n->to_addr, addr, sizeof(addr));
	if (n->to_port)
		snprintf(buf, len, n->to_addr.family == POLICY_FAM_IPV6 ? "[%s]:%u" : "%s:%u", addr, n->to_port);
	else
		snprintf(buf, len, "%s", addr);
}

static void check_dnat_pair(const struct nat_rule *a, const struct nat_rule *b, struct diags *d)
{
	char port[32], target[80];

	if (!(a->families & b->families) || !ifaces_meet(&a->in, &b->in) || !addrs_meet(&a->from, &b->from) ||
	    !ports_meet(&a->service, &b->service, port, sizeof(port)))
		return;
	target_text(a, target, sizeof(target));
	diag_error(d, b->loc, "%s arriving on '%s' already goes to %s (%s, line %u): one port has one target", port,
		   b->in.what ? b->in.what : "any", target, policy_nat_kind_names[a->kind], a->loc.line);
}

static bool check_snat_pair(const struct nat_rule *a, const struct nat_rule *b, struct diags *d)
{
	if (!(a->families & b->families) || !ifaces_meet(&a->out, &b->out))
		return false;
	diag_error(d, b->loc,
		   "connections leaving through '%s' already get their source from the %s at line %u: one source "
		   "translation per interface and family",
		   b->out.what ? b->out.what : "any", policy_nat_kind_names[a->kind], a->loc.line);
	return true;
}

/* Could rule r accept packets to addr:port (proto) arriving on in? */
static bool rule_admits(const struct rule *r, const struct nat_rule *n, const struct port_range *pr, uint16_t port)
{
	struct addr_match target = { .v = (struct prefix *)&n->to_addr, .n = 1 };
	struct port_match svc = { .v = &(struct port_range){ .proto = pr->proto, .lo = port, .hi = port }, .n = 1 };
	char buf[32];

	if (r->action != POLICY_ACCEPT || !(r->families & n->families) || !ifaces_meet(&r->in, &n->in))
		return false;
	if (n->kind == NAT_FORWARD_PORT && !addrs_meet(&r->to, &target))
		return false;
	if (r->proto >= 0 && r->proto != pr->proto)
		return false;
	return r->service.any || ports_meet(&r->service, &svc, buf, sizeof(buf));
}

/* The hook that sees the translated traffic: forward for a forward-port,
 * input for a redirect (it is for the appliance). */
static void check_admitted(const struct policy *p, const struct nat_rule *n, struct diags *d)
{
	enum policy_hook h = n->kind == NAT_REDIRECT ? POLICY_HOOK_INPUT : POLICY_HOOK_FORWARD;
	const struct port_range *pr = n->service.n ? &n->service.v[0] : NULL;
	uint16_t port;
	char target[80];

	if (!pr || !p->hooks[h].present || p->hooks[h].def == POLICY_ACCEPT)
		return;
	port = n->to_port ? n->to_port : pr->lo;
	for (uint32_t i = 0; i < p->nrules; i++)
		if ((p->rules[i].hooks & (1u << h)) && rule_admits(&p->rules[i], n, pr, port))
			return;
	target_text(n, target, sizeof(target));
	diag_warn(d, n->loc,
		  "no %s rule accepts what this %s lets in (%s/%u to %s): the %s hook sees the translated destination, "
		  "and its default drops it",
		  policy_hook_name(h), policy_nat_kind_names[n->kind], policy_proto_name(pr->proto), port, target,
		  policy_hook_name(h));
}

void check_nat(const struct policy *p, struct diags *d)
{
	for (uint32_t j = 0; j < p->nnat; j++) {
		const struct nat_rule *b = &p->nat[j];

		for (uint32_t i = 0; i < j; i++) {
			const struct nat_rule *a = &p->nat[i];

			if (is_dnat(a) && is_dnat(b))
				check_dnat_pair(a, b, d);
			else if (!is_dnat(a) && !is_dnat(b) && check_snat_pair(a, b, d))
				break; /* the first conflict says it */
		}
		if (is_dnat(b))
			check_admitted(p, b, d);
	}
}
