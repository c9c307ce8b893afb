/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NAT entries checked against each other and against the filter: what
 * nftables would refuse or make ambiguous (two targets for one port, two
 * source translations for one interface and the same addresses, an address
 * mapped one to one twice), translations no rule lets through (the forward
 * hook sees the translated destination), and exceptions (no-nat) that
 * take nothing from any translation.
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

/* forward-port and redirect: ports translated on the way in. */
static bool is_dnat(const struct nat_rule *n)
{
	return n->kind == NAT_FORWARD_PORT || n->kind == NAT_REDIRECT;
}

/* masquerade and snat: sources translated on the way out. */
static bool is_snat(const struct nat_rule *n)
{
	return n->kind == NAT_MASQUERADE || n->kind == NAT_SNAT;
}

/* one-to-one and nptv6: an address (or prefix) mapped both ways. */
static bool is_binat(const struct nat_rule *n)
{
	return n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6;
}

/* The inside of a one-to-one as an address list, to meet others with. */
static struct addr_match one_prefix(const struct prefix *pf)
{
	return (struct addr_match){ .v = (struct prefix *)pf, .n = 1, .families = pf->family };
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
	    !addrs_meet(&a->dest, &b->dest) || !ports_meet(&a->service, &b->service, port, sizeof(port)))
		return;
	target_text(a, target, sizeof(target));
	diag_error(d, b->loc, "%s arriving on '%s' already goes to %s (%s, line %u): one port has one target", port,
		   b->in.what ? b->in.what : "any", target, policy_nat_kind_names[a->kind], a->loc.line);
}

/* Whether every interface of in is one of out's (no negation in nat:). */
static bool ifaces_within(const struct iface_match *in, const struct iface_match *out)
{
	if (out->any)
		return true;
	if (in->any)
		return false;
	for (uint32_t i = 0; i < in->n; i++) {
		bool found = false;

		for (uint32_t j = 0; j < out->n && !found; j++)
			found = policy_ifname_match(out->ifnames[j], in->ifnames[i]);
		if (!found)
			return false;
	}
	return true;
}

static bool addrs_within(const struct addr_match *in, const struct addr_match *out)
{
	return out->any || (!in->any && policy_prefixes_within(in, out));
}

/* Source translations apply in the policy's order, the first that takes a
 * connection wins: one that an earlier one takes every connection of
 * never applies. (One that meets an earlier one only in part applies to
 * the rest: a narrow snat before a masquerade of everything.) */
static bool check_snat_pair(const struct nat_rule *a, const struct nat_rule *b, struct diags *d)
{
	if ((b->families & ~a->families) || !ifaces_within(&b->out, &a->out) || !addrs_within(&b->from, &a->from) ||
	    !addrs_within(&b->dest, &a->dest))
		return false;
	diag_error(d, b->loc,
		   "connections leaving through '%s' already get their source from the %s at line %u, which takes "
		   "every connection this one would: it never applies (put the narrower one first, or limit it "
		   "with 'from:' or 'destination:')",
		   b->out.what ? b->out.what : "any", policy_nat_kind_names[a->kind], a->loc.line);
	return true;
}

/* Two one-to-ones through one interface: an inside address with two
 * outside ones, or an outside one with two inside ones, is no mapping. */
static void check_binat_pair(const struct nat_rule *a, const struct nat_rule *b, struct diags *d)
{
	char x[64], y[64];
	bool inside;

	if (!(a->families & b->families) || !ifaces_meet(&a->out, &b->out))
		return;
	inside = prefixes_meet(&a->inside, &b->inside);
	if (!inside && !prefixes_meet(&a->to_addr, &b->to_addr))
		return;
	policy_prefix_format(inside ? &b->inside : &b->to_addr, x, sizeof(x));
	policy_prefix_format(inside ? &a->inside : &a->to_addr, y, sizeof(y));
	diag_error(d, b->loc, "%s %s overlaps %s, which the %s at line %u maps through '%s': an address maps to one",
		   inside ? "inside" : "outside", x, y, policy_nat_kind_names[a->kind], a->loc.line,
		   b->out.what ? b->out.what : "any");
}

/* Whether source translation s could take what no-nat n matches. */
static bool exempts(const struct nat_rule *n, const struct nat_rule *s)
{
	struct addr_match inside = one_prefix(&s->inside);

	if (!(n->families & s->families) || !ifaces_meet(&n->out, &s->out))
		return false;
	if (is_binat(s))
		return addrs_meet(&n->from, &inside);
	return addrs_meet(&n->from, &s->from) && addrs_meet(&n->dest, &s->dest);
}

/* A no-nat beside no source translation it could take anything from. */
static void check_no_nat(const struct policy *p, const struct nat_rule *n, struct diags *d)
{
	for (uint32_t i = 0; i < p->nnat; i++)
		if (nat_is_source(&p->nat[i]) && exempts(n, &p->nat[i]))
			return;
	diag_warn(d, n->loc,
		  "this no-nat leaves nothing untranslated: no masquerade, snat, one-to-one or nptv6 takes %s "
		  "connections "
		  "through '%s' with these addresses",
		  policy_family_name((enum policy_family)n->families), n->out.what ? n->out.what : "any");
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

/* A one-to-one's inbound half: the forward hook sees the inside address. */
static void check_binat_admitted(const struct policy *p, const struct nat_rule *n, struct diags *d)
{
	struct addr_match inside = one_prefix(&n->inside);
	char addr[64];

	if (!p->hooks[POLICY_HOOK_FORWARD].present || p->hooks[POLICY_HOOK_FORWARD].def == POLICY_ACCEPT)
		return;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		if ((r->hooks & (1u << POLICY_HOOK_FORWARD)) && r->action == POLICY_ACCEPT &&
		    (r->families & n->families) && ifaces_meet(&r->in, &n->out) && addrs_meet(&r->to, &inside))
			return;
	}
	policy_prefix_format(&n->inside, addr, sizeof(addr));
	diag_warn(d, n->loc,
		  "no forward rule accepts connections to %s arriving on '%s': the forward hook sees the translated "
		  "destination, and its default drops what this %s lets in (for the outbound half alone, write snat)",
		  addr, n->out.what ? n->out.what : "any", policy_nat_kind_names[n->kind]);
}

/* A masquerade that names no family translates IPv4 only (IPv6 is routed);
 * earlier builds translated both. Where a forward rule lets IPv6 out of
 * its interfaces, a note says what changed for that policy. */
static void note_masquerade_v4(const struct policy *p, const struct nat_rule *n, struct diags *d)
{
	if (n->kind != NAT_MASQUERADE || n->family_given)
		return;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		if (!(r->hooks & (1u << POLICY_HOOK_FORWARD)) || r->action != POLICY_ACCEPT ||
		    !(r->families & POLICY_FAM_IPV6) || !ifaces_meet(&r->out, &n->out))
			continue;
		diag_note(d, n->loc,
			  "this masquerade translates IPv4 only, and rule '%s' forwards IPv6 out of '%s': IPv6 leaves "
			  "with its own addresses (earlier builds of nfbox masqueraded it)" DIAG_FIX
			  "; write 'family: [ipv4, ipv6]' to masquerade IPv6 too, or 'family: ipv4' to say it is meant",
			  r->name, n->out.what ? n->out.what : "any");
		return;
	}
}

void check_nat(const struct policy *p, struct diags *d)
{
	for (uint32_t j = 0; j < p->nnat; j++) {
		const struct nat_rule *b = &p->nat[j];

		for (uint32_t i = 0; i < j; i++) {
			const struct nat_rule *a = &p->nat[i];

			if (is_dnat(a) && is_dnat(b))
				check_dnat_pair(a, b, d);
			else if (is_binat(a) && is_binat(b))
				check_binat_pair(a, b, d);
			else if (is_snat(a) && is_snat(b) && check_snat_pair(a, b, d))
				break; /* the first conflict says it */
		}
		if (is_dnat(b))
			check_admitted(p, b, d);
		if (is_binat(b))
			check_binat_admitted(p, b, d);
		if (b->kind == NAT_NO_NAT)
			check_no_nat(p, b, d);
		note_masquerade_v4(p, b, d);
	}
}
