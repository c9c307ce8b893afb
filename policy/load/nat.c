/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the nat: section (masquerade, snat, forward-port). */
#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static void load_nat_one(struct lx *x, const struct ynode *item)
{
	static const char *const kinds[] = { "masquerade", "snat", "forward-port", NULL };
	static const char *const masq_keys[] = { "out", NULL };
	static const char *const snat_keys[] = { "out", "to", NULL };
	static const char *const fwd_keys[] = { "in", "service", "to", NULL };
	static const char *const *const keys[] = { masq_keys, snat_keys, fwd_keys };
	const struct ynode *k, *v, *to;
	struct nat_rule *nr;
	const char *why;
	int kind;

	if (!lx_is(x, item, YNODE_MAP, "a nat entry"))
		return;
	if (ynode_map_len(item) != 1) {
		diag_error(x->d, item->loc, "a nat entry has exactly one of masquerade:, snat: or forward-port:");
		return;
	}
	k = ynode_map_key(item, 0);
	v = ynode_map_val(item, 0);
	if ((kind = lx_choice(x, k, "nat kind", kinds)) < 0 || !lx_is(x, v, YNODE_MAP, k->str))
		return;
	lx_check_keys(x, v, keys[kind], k->str);
	nr = LX_APPEND(x, x->p->nat, x->p->nnat);
	if (!nr)
		return;
	nr->kind = (enum nat_kind)kind;
	nr->loc = k->loc;
	lx_iface_match(x, ynode_get(v, "in"), "in", &nr->in);
	lx_iface_match(x, ynode_get(v, "out"), "out", &nr->out);
	lx_port_match(x, ynode_get(v, "service"), "service", &nr->service);
	to = ynode_get(v, "to");
	if (kind == NAT_MASQUERADE && nr->out.any)
		diag_error(x->d, k->loc, "masquerade needs 'out:' (the interface group whose address is used)");
	if (kind == NAT_SNAT && (nr->out.any || !to))
		diag_error(x->d, k->loc, "snat needs 'out:' and 'to: ADDRESS'");
	if (kind == NAT_FORWARD_PORT && (nr->in.any || nr->service.any || !to))
		diag_error(x->d, k->loc, "forward-port needs 'in:', 'service:' and 'to: ADDRESS[:PORT]'");
	if (to && lx_is(x, to, YNODE_SCALAR, "to")) {
		nr->to_addr.loc = to->loc;
		if (parse_addr_port(to->str, &nr->to_addr, &nr->to_port, &why) < 0)
			diag_error(x->d, to->loc, "'%s': %s", to->str, why);
		else if (kind == NAT_SNAT && nr->to_port)
			diag_error(x->d, to->loc, "snat takes an address without a port");
	}
}

void load_nat(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_SEQ, "nat"))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		load_nat_one(x, n->kids[i]);
}
