/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the nat: section (masquerade, snat, forward-port, redirect,
 * no-nat, one-to-one, nptv6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static const char *const masq_keys[] = { "out", "from", "destination", "family", NULL };
static const char *const snat_keys[] = { "out", "to", "from", "destination", NULL };
static const char *const fwd_keys[] = { "in", "service", "to", "from", "destination", "hairpin", NULL };
static const char *const redirect_keys[] = { "in", "service", "to", "from", NULL };
static const char *const nonat_keys[] = { "out", "from", "destination", NULL };
static const char *const binat_keys[] = { "interface", "inside", "outside", NULL };
static const char *const nptv6_keys[] = { "interface", "inside", "outside", NULL };
static const char *const *const kind_keys[] = {
	[NAT_MASQUERADE] = masq_keys,	[NAT_SNAT] = snat_keys,	   [NAT_FORWARD_PORT] = fwd_keys,
	[NAT_REDIRECT] = redirect_keys, [NAT_NO_NAT] = nonat_keys, [NAT_ONE_TO_ONE] = binat_keys,
	[NAT_NPTV6] = nptv6_keys,
};
/* What iptables, nftables, pf and VyOS call them. */
static const struct lx_alias kind_aliases[] = {
	{ "dnat", "forward-port" },
	{ "port-forward", "forward-port" },
	{ "portforward", "forward-port" },
	{ "rdr", "forward-port" },
	{ "masq", "masquerade" },
	{ "source-nat", "snat" },
	{ "destination-nat", "forward-port" },
	{ "binat", "one-to-one" },
	{ "static-nat", "one-to-one" },
	{ "1to1", "one-to-one" },
	{ "npt", "nptv6" },
	{ "nat66", "nptv6" },
	{ "exclude", "no-nat" },
	{ "nonat", "no-nat" },
	{ "no-snat", "no-nat" },
	{ NULL, NULL },
};
/* Keys that belong to another kind, with what to write. */
static const struct lx_key_hint masq_hints[] = {
	{ "to", "masquerade takes the address of 'out' itself: no 'to:' (snat takes one); a limit to some "
		"destinations is 'destination:'" },
	{ NULL, NULL },
};
static const struct lx_key_hint nonat_hints[] = {
	{ "to", "no-nat translates nothing, so it has no 'to:'; a limit to some destinations is 'destination:'" },
	{ NULL, NULL },
};
static const struct lx_key_hint binat_hints[] = {
	{ "in", "a one-to-one translates both ways through one interface: 'interface:'" },
	{ "out", "a one-to-one translates both ways through one interface: 'interface:'" },
	{ "to", "a one-to-one maps 'inside:' to 'outside:' (and back)" },
	{ "from", "a one-to-one maps 'inside:' to 'outside:' (and back)" },
	{ NULL, NULL },
};
static const struct lx_key_hint *const kind_hints[] = {
	[NAT_MASQUERADE] = masq_hints,
	[NAT_NO_NAT] = nonat_hints,
	[NAT_ONE_TO_ONE] = binat_hints,
	[NAT_NPTV6] = binat_hints,
};

/* Whether the range first..last holds only addresses a packet may carry as
 * its source: not the unspecified address, not broadcast, no multicast. */
static bool snat_sources_ok(const struct prefix *first, const struct prefix *last)
{
	static const uint8_t zero[16];

	if (first->family == POLICY_FAM_IPV4) {
		static const uint8_t mc_lo[4] = { 224, 0, 0, 0 }, mc_hi[4] = { 239, 255, 255, 255 };

		return memcmp(first->addr, zero, 4) && memcmp(last->addr, "\xff\xff\xff\xff", 4) &&
		       (memcmp(last->addr, mc_lo, 4) < 0 || memcmp(first->addr, mc_hi, 4) > 0);
	}
	return memcmp(first->addr, zero, 16) && last->addr[0] != 0xff; /* ff00::/8 is the top */
}

static void nat_snat_to(struct lx *x, struct nat_rule *nr, const struct ynode *to)
{
	const char *why;

	if (parse_addr_range(to->str, &nr->to_addr, &nr->to_last, &why) < 0) {
		diag_error(x->d, to->loc, "'%s': %s (snat takes an address, a range A-B or a prefix)", to->str, why);
		return;
	}
	if (!snat_sources_ok(&nr->to_addr, &nr->to_last))
		diag_error(x->d, to->loc,
			   "snat to '%s': the unspecified, broadcast and multicast addresses are no address packets "
			   "can come from",
			   to->str);
	nr->families = nr->to_addr.family;
}

/* A forward-port's ports onto a range of ports (to: ADDRESS:LOW-HIGH) go
 * port by port: each range of the service must be as long as it. */
static void nat_port_ranges(struct lx *x, const struct nat_rule *nr, const struct ynode *to)
{
	unsigned want = (unsigned)nr->to_port_last - nr->to_port + 1;

	if (nr->service.any)
		return;
	for (uint32_t i = 0; i < nr->service.n; i++) {
		const struct port_range *pr = &nr->service.v[i];
		unsigned have = (unsigned)pr->hi - pr->lo + 1;

		if (have != want)
			diag_error(x->d, pr->loc.line ? pr->loc : to->loc,
				   "%s/%u-%u is %u port%s, the target's range %u-%u is %u: a range of ports goes to "
				   "a range of the same length, port by port (or write one target port, where every "
				   "port goes)",
				   policy_proto_name(pr->proto), pr->lo, pr->hi, have, have == 1 ? "" : "s",
				   nr->to_port, nr->to_port_last, want);
	}
}

static void nat_forward_to(struct lx *x, struct nat_rule *nr, const struct ynode *to)
{
	const char *why;

	if (parse_addr_port(to->str, &nr->to_addr, &nr->to_port, &nr->to_port_last, &why) < 0) {
		diag_error(x->d, to->loc, "'%s': %s", to->str, why);
		return;
	}
	nr->families = nr->to_addr.family;
	if (nr->to_port_last != nr->to_port)
		nat_port_ranges(x, nr, to);
}

static void nat_redirect_to(struct lx *x, struct nat_rule *nr, const struct ynode *to)
{
	uint64_t port;

	if (lx_uint(x, to, "redirect 'to' (a local port)", 1, 65535, &port))
		nr->to_port = (uint16_t)port;
}

static void family_item(struct lx *x, const struct ynode *n, void *arg)
{
	static const char *const fams[] = { "ipv4", "ipv6", NULL };
	static const struct lx_alias aliases[] = {
		{ "ip", "ipv4" },	    { "ip4", "ipv4" },		{ "inet4", "ipv4" },
		{ "v4", "ipv4" },	    { "ip6", "ipv6" },		{ "inet6", "ipv6" },
		{ "v6", "ipv6" },	    { "both", "[ipv4, ipv6]" }, { "any", "[ipv4, ipv6]" },
		{ "inet", "[ipv4, ipv6]" }, { "all", "[ipv4, ipv6]" },	{ NULL, NULL },
	};
	struct nat_rule *nr = arg;
	int f = lx_choice_aliased(x, n, "family", fams, aliases);

	if (f >= 0)
		nr->families |= f == 0 ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
}

/* masquerade's family: ipv4 (the default), ipv6 or [ipv4, ipv6]. IPv6 is
 * routed: its addresses are hidden only where the entry asks. */
static void nat_family(struct lx *x, struct nat_rule *nr, const struct ynode *v)
{
	nr->families = POLICY_FAM_IPV4;
	if (!v)
		return;
	nr->families = 0;
	nr->family_given = true;
	lx_each_scalar(x, v, "family", family_item, nr);
	if (v->type == YNODE_SEQ && !v->nkids && !v->broken)
		diag_error(x->d, v->loc, "family: [] translates nothing" DIAG_FIX "; write ipv4, ipv6 or [ipv4, ipv6]");
	if (!nr->families)
		nr->families = POLICY_FAM_IPV4; /* reported */
}

static const char *fam_name(uint8_t f)
{
	return policy_family_name((enum policy_family)f);
}

/* A limit by source or destination must leave traffic of the family the
 * entry translates; a masquerade's or no-nat's families are those it
 * leaves (both: [ipv4, ipv6] with from: office, an IPv4 set, is IPv4).
 * Said at the target where there is one (it sets the family), else at
 * the limit. */
static void nat_limit_family(struct lx *x, struct nat_rule *nr, const struct ynode *v, const struct addr_match *m,
			     const char *key, const struct ynode *to)
{
	if (!v || m->any || !m->families)
		return;
	if (m->families & nr->families) {
		if (nr->kind == NAT_MASQUERADE || nr->kind == NAT_NO_NAT)
			nr->families &= m->families;
		return;
	}
	if (nr->kind == NAT_MASQUERADE && !nr->family_given)
		diag_error(x->d, v->loc,
			   "'%s' lists only %s addresses, but a masquerade translates ipv4 unless it says "
			   "otherwise" DIAG_FIX "; add 'family: ipv6'",
			   key, fam_name(m->families));
	else if (to && nr->kind == NAT_FORWARD_PORT)
		diag_error(x->d, to->loc,
			   "the target %s is %s, but '%s' lists only %s addresses: no packet could be forwarded",
			   to->str, fam_name(nr->families), key, fam_name(m->families));
	else if (to)
		diag_error(x->d, to->loc,
			   "snat to %s is %s, but '%s' lists only %s addresses: nothing would be translated", to->str,
			   fam_name(nr->families), key, fam_name(m->families));
	else
		diag_error(x->d, v->loc, "'%s' lists only %s addresses, but this %s is for %s ones: it matches nothing",
			   key, fam_name(m->families), policy_nat_kind_names[nr->kind], fam_name(nr->families));
}

/* one-to-one, nptv6: inside: and outside:, an address or a prefix each. */
static bool nat_side(struct lx *x, const struct ynode *v, const char *key, struct prefix *out)
{
	const char *why;
	bool host_bits;

	if (!v || !lx_is(x, v, YNODE_SCALAR, key))
		return false;
	if (strchr(v->str, '-')) {
		diag_error(x->d, v->loc, "'%s': %s is an address or a prefix (a range does not map one to one)", v->str,
			   key);
		return false;
	}
	if (parse_prefix(v->str, out, &host_bits, &why) < 0) {
		diag_error(x->d, v->loc, "'%s': %s", v->str, why);
		return false;
	}
	out->loc = v->loc;
	if (host_bits) {
		char net[64];

		policy_prefix_format(out, net, sizeof(net));
		diag_warn(x->d, v->loc, "'%s' has host bits set; it is read as the network %s", v->str, net);
	}
	return true;
}

/* inside <-> outside: one family, prefixes of one length (each inside
 * address has its outside one: the host bits are kept). nptv6 is for IPv6
 * prefixes. */
static void nat_one_to_one(struct lx *x, struct nat_rule *nr, const struct ynode *v)
{
	const struct ynode *in = ynode_get(v, "inside"), *out = ynode_get(v, "outside");
	bool nptv6 = nr->kind == NAT_NPTV6;

	if (!nat_side(x, in, "inside", &nr->inside) | !nat_side(x, out, "outside", &nr->to_addr))
		return;
	nr->to_loc = out->loc;
	nr->families = nr->inside.family;
	if (nr->inside.family != nr->to_addr.family) {
		diag_error(x->d, out->loc, "outside %s is %s, inside %s is %s: a %s maps within one family", out->str,
			   fam_name(nr->to_addr.family), in->str, fam_name(nr->inside.family),
			   policy_nat_kind_names[nr->kind]);
		return;
	}
	if (nptv6 && nr->inside.family != POLICY_FAM_IPV6) {
		diag_error(x->d, in->loc, "nptv6 translates IPv6 prefixes" DIAG_FIX "; for IPv4 write one-to-one");
		return;
	}
	if (nptv6 && nr->inside.plen == 128) {
		diag_error(x->d, in->loc, "nptv6 translates prefixes" DIAG_FIX "; for one address write one-to-one");
		return;
	}
	if (nr->inside.plen != nr->to_addr.plen)
		diag_error(x->d, out->loc,
			   "outside /%u and inside /%u: a %s maps prefixes of one length, address by address (its "
			   "host bits kept)",
			   nr->to_addr.plen, nr->inside.plen, policy_nat_kind_names[nr->kind]);
}

static void nat_required(struct lx *x, const struct nat_rule *nr, const struct ynode *k, const struct ynode *v)
{
	static const char *const keys[] = { "in",     "out",	 "service", "to",	   "interface",
					    "inside", "outside", "from",    "destination", NULL };
	static const char *const need[] = {
		[NAT_MASQUERADE] = "masquerade needs 'out:' (the interface group whose address is used)",
		[NAT_SNAT] = "snat needs 'out:' and 'to: ADDRESS', 'to: A-B' or 'to: PREFIX'",
		[NAT_FORWARD_PORT] = "forward-port needs 'in:', 'service:' and 'to: ADDRESS[:PORT]'",
		[NAT_REDIRECT] = "redirect needs 'in:', 'service:' and 'to: PORT' (a local port)",
		[NAT_NO_NAT] = "no-nat needs 'out:' and 'from:' or 'destination:' (what leaves untranslated)",
		[NAT_ONE_TO_ONE] = "one-to-one needs 'interface:', 'inside:' and 'outside:'",
		[NAT_NPTV6] = "nptv6 needs 'interface:', 'inside:' and 'outside:' (IPv6 prefixes of one length)",
	};
	bool ok;

	switch (nr->kind) {
	case NAT_MASQUERADE:
		ok = !nr->out.any;
		break;
	case NAT_SNAT:
		ok = !nr->out.any && ynode_get(v, "to");
		break;
	case NAT_NO_NAT:
		ok = !nr->out.any && (!nr->from.any || !nr->dest.any);
		break;
	case NAT_ONE_TO_ONE:
	case NAT_NPTV6:
		ok = !nr->out.any && ynode_get(v, "inside") && ynode_get(v, "outside");
		break;
	default:
		ok = !nr->in.any && !nr->service.any && ynode_get(v, "to");
	}
	for (int i = 0; keys[i]; i++) /* a broken value was reported where it broke */
		if (ynode_has(v, keys[i]) && !ynode_get(v, keys[i]))
			ok = true;
	/* a key of another kind was told what to write instead: said once */
	for (const struct lx_key_hint *h = kind_hints[nr->kind]; h && h->key; h++)
		if (ynode_has(v, h->key))
			ok = true;
	if (!ok)
		diag_error(x->d, k->loc, "%s", need[nr->kind]);
}

static void nat_iface(struct lx *x, const struct ynode *v, const char *key, struct iface_match *m)
{
	const struct ynode *n = ynode_get(v, key);

	lx_iface_match(x, n, key, m);
	lx_no_negation(x, n, m->neg, "nat");
	lx_no_wildcard(x, n, m, "nat");
}

static void nat_addrs(struct lx *x, const struct ynode *v, const char *key, struct addr_match *m)
{
	const struct ynode *n = ynode_get(v, key);

	lx_addr_match(x, n, key, m);
	lx_no_negation(x, n, m->neg, "nat");
	lx_no_dynamic(x, n, m, "nat");
}

/* What the entry matches: interfaces, addresses, ports. */
static void nat_matches(struct lx *x, struct nat_rule *nr, const struct ynode *v)
{
	nat_iface(x, v, "in", &nr->in);
	nat_iface(x, v, nr->kind == NAT_ONE_TO_ONE || nr->kind == NAT_NPTV6 ? "interface" : "out", &nr->out);
	lx_port_match(x, ynode_get(v, "service"), "service", &nr->service);
	/* Port 0 is no port a connection can be made to: a rule that forwards
	 * or redirects it would never apply. */
	for (uint32_t i = 0; (nr->kind == NAT_FORWARD_PORT || nr->kind == NAT_REDIRECT) && i < nr->service.n; i++)
		if (nr->service.v[i].lo == 0)
			diag_error(x->d, nr->service.v[i].loc,
				   "port 0 cannot be %s: no connection is made to it" DIAG_FIX "; start the range at 1",
				   nr->kind == NAT_FORWARD_PORT ? "forwarded" : "redirected");
	nat_addrs(x, v, "from", &nr->from);
	nat_addrs(x, v, "destination", &nr->dest);
}

/* The translation: its target and the family it translates. */
static void nat_target(struct lx *x, struct nat_rule *nr, const struct ynode *v)
{
	const struct ynode *to = ynode_get(v, "to");

	if (nr->kind == NAT_MASQUERADE)
		nat_family(x, nr, ynode_get(v, "family"));
	if (nr->kind == NAT_ONE_TO_ONE || nr->kind == NAT_NPTV6)
		nat_one_to_one(x, nr, v);
	if (!to || !lx_is(x, to, YNODE_SCALAR, "to"))
		return;
	nr->to_loc = to->loc;
	if (nr->kind == NAT_SNAT)
		nat_snat_to(x, nr, to);
	else if (nr->kind == NAT_FORWARD_PORT)
		nat_forward_to(x, nr, to);
	else if (nr->kind == NAT_REDIRECT)
		nat_redirect_to(x, nr, to);
}

static void load_nat_one(struct lx *x, const struct ynode *item)
{
	const struct ynode *k, *v, *hp, *to;
	struct nat_rule *nr;
	int kind;

	if (!lx_is(x, item, YNODE_MAP, "a nat entry"))
		return;
	if (ynode_map_len(item) != 1) {
		diag_error(x->d, item->loc,
			   "a nat entry has exactly one of masquerade:, snat:, forward-port:, redirect:, no-nat:, "
			   "one-to-one: or nptv6:");
		return;
	}
	k = ynode_map_key(item, 0);
	v = ynode_map_val(item, 0);
	if ((kind = lx_choice_aliased(x, k, "nat kind", policy_nat_kind_names, kind_aliases)) < 0 ||
	    !lx_is(x, v, YNODE_MAP, k->str))
		return;
	lx_check_keys_hinted(x, v, kind_keys[kind], k->str, kind_hints[kind]);
	if (!(nr = LX_APPEND(x, x->p->nat, x->p->nnat)))
		return;
	nr->kind = (enum nat_kind)kind;
	nr->loc = k->loc;
	nr->families = POLICY_FAM_ANY;
	nr->hairpin = nr->kind == NAT_FORWARD_PORT;
	nat_matches(x, nr, v);
	if ((hp = ynode_get(v, "hairpin")))
		lx_bool(x, hp, "hairpin", &nr->hairpin);
	nat_required(x, nr, k, v);
	nat_target(x, nr, v);
	to = ynode_get(v, "to");
	to = to && to->type == YNODE_SCALAR && nr->to_loc.line ? to : NULL;
	nat_limit_family(x, nr, ynode_get(v, "from"), &nr->from, "from", to);
	nat_limit_family(x, nr, ynode_get(v, "destination"), &nr->dest, "destination", to);
}

void load_nat(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_SEQ, "nat"))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		load_nat_one(x, n->kids[i]);
}
