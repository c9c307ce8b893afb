/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the nat: section (masquerade, snat, forward-port, redirect). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static const char *const masq_keys[] = { "out", NULL };
static const char *const snat_keys[] = { "out", "to", NULL };
static const char *const fwd_keys[] = { "in", "service", "to", "from", "hairpin", NULL };
static const char *const redirect_keys[] = { "in", "service", "to", "from", NULL };
static const char *const *const kind_keys[] = { masq_keys, snat_keys, fwd_keys, redirect_keys };
/* What iptables, nftables, pf and VyOS call them. */
static const struct lx_alias kind_aliases[] = {
	{ "dnat", "forward-port" },
	{ "port-forward", "forward-port" },
	{ "portforward", "forward-port" },
	{ "rdr", "forward-port" },
	{ "masq", "masquerade" },
	{ "source-nat", "snat" },
	{ "destination-nat", "forward-port" },
	{ NULL, NULL },
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

static void nat_forward_to(struct lx *x, struct nat_rule *nr, const struct ynode *to)
{
	const char *why;

	if (parse_addr_port(to->str, &nr->to_addr, &nr->to_port, &why) < 0) {
		diag_error(x->d, to->loc, "'%s': %s", to->str, why);
		return;
	}
	nr->families = nr->to_addr.family;
	if (!nr->from.any && !(nr->from.families & nr->families))
		diag_error(x->d, to->loc,
			   "the target %s is %s, but 'from' lists only %s addresses: no packet could be forwarded",
			   to->str, policy_family_name((enum policy_family)nr->families),
			   policy_family_name((enum policy_family)nr->from.families));
}

static void nat_redirect_to(struct lx *x, struct nat_rule *nr, const struct ynode *to)
{
	uint64_t port;

	if (lx_uint(x, to, "redirect 'to' (a local port)", 1, 65535, &port))
		nr->to_port = (uint16_t)port;
}

static void nat_required(struct lx *x, const struct nat_rule *nr, const struct ynode *k, const struct ynode *v)
{
	static const char *const keys[] = { "in", "out", "service", "to", NULL };
	const struct ynode *to = ynode_get(v, "to");
	static const char *const need[] = {
		[NAT_MASQUERADE] = "masquerade needs 'out:' (the interface group whose address is used)",
		[NAT_SNAT] = "snat needs 'out:' and 'to: ADDRESS', 'to: A-B' or 'to: PREFIX'",
		[NAT_FORWARD_PORT] = "forward-port needs 'in:', 'service:' and 'to: ADDRESS[:PORT]'",
		[NAT_REDIRECT] = "redirect needs 'in:', 'service:' and 'to: PORT' (a local port)",
	};
	bool out_needed = nr->kind == NAT_MASQUERADE || nr->kind == NAT_SNAT;
	bool ok = out_needed ? !nr->out.any : !nr->in.any && !nr->service.any;

	if (nr->kind != NAT_MASQUERADE && !to)
		ok = false;
	for (int i = 0; keys[i]; i++) /* a broken value was reported where it broke */
		if (ynode_has(v, keys[i]) && !ynode_get(v, keys[i]))
			ok = true;
	if (!ok)
		diag_error(x->d, k->loc, "%s", need[nr->kind]);
}

static void load_nat_one(struct lx *x, const struct ynode *item)
{
	const struct ynode *k, *v, *to, *hp;
	struct nat_rule *nr;
	int kind;

	if (!lx_is(x, item, YNODE_MAP, "a nat entry"))
		return;
	if (ynode_map_len(item) != 1) {
		diag_error(x->d, item->loc,
			   "a nat entry has exactly one of masquerade:, snat:, forward-port: or redirect:");
		return;
	}
	k = ynode_map_key(item, 0);
	v = ynode_map_val(item, 0);
	if ((kind = lx_choice_aliased(x, k, "nat kind", policy_nat_kind_names, kind_aliases)) < 0 ||
	    !lx_is(x, v, YNODE_MAP, k->str))
		return;
	lx_check_keys(x, v, kind_keys[kind], k->str);
	if (!(nr = LX_APPEND(x, x->p->nat, x->p->nnat)))
		return;
	nr->kind = (enum nat_kind)kind;
	nr->loc = k->loc;
	nr->families = POLICY_FAM_ANY;
	nr->hairpin = nr->kind == NAT_FORWARD_PORT;
	lx_iface_match(x, ynode_get(v, "in"), "in", &nr->in);
	lx_no_negation(x, ynode_get(v, "in"), nr->in.neg, "nat");
	lx_no_wildcard(x, ynode_get(v, "in"), &nr->in, "nat");
	lx_iface_match(x, ynode_get(v, "out"), "out", &nr->out);
	lx_no_negation(x, ynode_get(v, "out"), nr->out.neg, "nat");
	lx_no_wildcard(x, ynode_get(v, "out"), &nr->out, "nat");
	lx_port_match(x, ynode_get(v, "service"), "service", &nr->service);
	/* Port 0 is no port a connection can be made to: a rule that forwards
	 * or redirects it would never apply. */
	for (uint32_t i = 0; (kind == NAT_FORWARD_PORT || kind == NAT_REDIRECT) && i < nr->service.n; i++)
		if (nr->service.v[i].lo == 0)
			diag_error(x->d, nr->service.v[i].loc,
				   "port 0 cannot be %s: no connection is made to it; start the range at 1",
				   kind == NAT_FORWARD_PORT ? "forwarded" : "redirected");
	lx_addr_match(x, ynode_get(v, "from"), "from", &nr->from);
	lx_no_negation(x, ynode_get(v, "from"), nr->from.neg, "nat");
	lx_no_dynamic(x, ynode_get(v, "from"), &nr->from, "nat");
	if ((hp = ynode_get(v, "hairpin")))
		lx_bool(x, hp, "hairpin", &nr->hairpin);
	to = ynode_get(v, "to");
	nat_required(x, nr, k, v);
	if (!to || !lx_is(x, to, YNODE_SCALAR, "to"))
		return;
	nr->to_loc = to->loc;
	if (kind == NAT_SNAT)
		nat_snat_to(x, nr, to);
	else if (kind == NAT_FORWARD_PORT)
		nat_forward_to(x, nr, to);
	else if (kind == NAT_REDIRECT)
		nat_redirect_to(x, nr, to);
}

void load_nat(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_SEQ, "nat"))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		load_nat_one(x, n->kids[i]);
}
