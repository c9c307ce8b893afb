/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: rules, NAT, capture, and the checks over the whole policy. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static const char *const hook_names[] = { "input", "forward", "output", NULL };

static void hook_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct rule *r = arg;
	int h = lx_choice(x, n, "hook", hook_names);

	if (h < 0)
		return;
	if (!x->p->hooks[h].present)
		diag_error(x->d, n->loc,
			   "hook '%s' is not declared; add it under hooks: with its default, e.g. '%s: { default: accept }'",
			   n->str, n->str);
	r->hooks |= (uint8_t)(1u << h);
}

static void state_item(struct lx *x, const struct ynode *n, void *arg)
{
	static const char *const states[] = { "new", "established", "related", "invalid", "untracked", NULL };
	struct rule *r = arg;
	int s = lx_choice(x, n, "state", states);

	if (s >= 0)
		r->state |= (uint8_t)(1u << s);
}

static void rule_proto(struct lx *x, struct rule *r, const struct ynode *n)
{
	const char *why;

	if (!lx_is(x, n, YNODE_SCALAR, "proto"))
		return;
	if (parse_proto(n->str, &r->proto, &why) < 0)
		diag_error(x->d, n->loc, "proto '%s': %s", n->str, why);
}

static void rule_icmp_type(struct lx *x, struct rule *r, const struct ynode *n)
{
	bool v6 = r->proto == IPPROTO_ICMPV6;
	uint64_t num;

	if (!lx_is(x, n, YNODE_SCALAR, "icmp-type"))
		return;
	if (r->proto != IPPROTO_ICMP && r->proto != IPPROTO_ICMPV6) {
		diag_error(x->d, n->loc, "icmp-type needs 'proto: icmp' or 'proto: icmpv6' in the same rule");
		return;
	}
	if (n->str[0] >= '0' && n->str[0] <= '9') {
		if (lx_uint(x, n, "icmp-type", 0, 255, &num))
			r->icmp_type = (int)num;
		return;
	}
	r->icmp_type = policy_icmp_type(n->str, v6);
	if (r->icmp_type < 0)
		diag_error(x->d, n->loc, "unknown %s type '%s' (e.g. echo-request, echo-reply, destination-unreachable%s, or a number 0..255)",
			   v6 ? "ICMPv6" : "ICMP", n->str, v6 ? ", neighbour-solicitation" : "");
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
		diag_error(x->d, n->loc, "%s '%s' has no %s ports, but the rule says 'proto: %s'", what,
			   m->what, policy_proto_name(r->proto), policy_proto_name(r->proto));
	else if (!kept && m->n)
		diag_error(x->d, n->loc, "%s '%s' has no ports of protocol %d, but the rule says 'proto: %d'",
			   what, m->what, r->proto, r->proto);

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

static const char *const rule_keys[] = { "name", "hook", "in", "out", "from", "to", "service",
					 "source-service", "proto", "icmp-type", "state", "action",
					 "log", "comment", NULL };

static void rule_hooks_and_sides(struct lx *x, struct rule *r, const struct ynode *n)
{
	const struct ynode *v;

	if ((v = ynode_get(n, "hook"))) {
		lx_each_scalar(x, v, "hook", hook_item, r);
		if (v->type == YNODE_SEQ && !v->nkids)
			diag_error(x->d, v->loc, "the hook list is empty; name at least one of input, forward, output");
	}
	else if (!x->p->hooks[POLICY_HOOK_FORWARD].present && (x->p->hooks[0].present || x->p->hooks[2].present))
		diag_error(x->d, n->loc, "rule '%s' has no 'hook:', so it is for forward, which is not declared under hooks:",
			   r->name);
	else
		r->hooks = 1u << POLICY_HOOK_FORWARD;
	lx_iface_match(x, v = ynode_get(n, "in"), "in", &r->in);
	if (v && (r->hooks & (1u << POLICY_HOOK_OUTPUT)))
		diag_error(x->d, v->loc, "'in:' cannot be used on the output hook: locally sent packets have no input interface");
	lx_iface_match(x, v = ynode_get(n, "out"), "out", &r->out);
	if (v && (r->hooks & (1u << POLICY_HOOK_INPUT)))
		diag_error(x->d, v->loc, "'out:' cannot be used on the input hook: packets to this host have no output interface");
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
		if (!common)
			diag_warn(x->d, v->loc, "service and source-service share no protocol: the rule never matches");
	}
	if (r->icmp_type >= 0 && !r->service.any)
		diag_error(x->d, ynode_get(n, "service")->loc, "a rule cannot have both icmp-type and service");
}

static void load_rule(struct lx *x, const struct ynode *n)
{
	static const char *const actions[] = { "drop", "accept", NULL };
	const struct ynode *v;
	struct rule *r;
	int a;

	if (!lx_is(x, n, YNODE_MAP, "a rule"))
		return;
	lx_check_keys(x, n, rule_keys, "a rule");
	r = LX_APPEND(x, x->p->rules, x->p->nrules);
	if (!r)
		return;
	r->loc = n->loc;
	r->proto = -1;
	r->icmp_type = -1;
	r->state = POLICY_CT_ALL;
	v = ynode_get(n, "name");
	if (!v) {
		diag_error(x->d, n->loc, "a rule needs a 'name:' (it names the rule's counters and log events)");
	} else if (lx_is(x, v, YNODE_SCALAR, "a rule name")) {
		if (!parse_valid_name(v->str))
			diag_error(x->d, v->loc, "rule name '%s' is not valid: use up to %d letters, digits, '_', '-' or '.', starting with a letter",
				   v->str, POLICY_MAX_NAME);
		r->name = strdup(v->str);
		r->loc = v->loc;
	}
	if (!r->name) {
		r->unnamed = true;
		if (asprintf(&r->name, "rule-%u", x->p->nrules) < 0)
			r->name = NULL;
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
	if (!v)
		diag_error(x->d, n->loc, "rule '%s' needs an 'action:' (accept or drop)", r->name ? r->name : "?");
	else if ((a = lx_choice(x, v, "action", actions)) >= 0)
		r->action = (enum policy_action)a;
	if ((v = ynode_get(n, "log")))
		lx_bool(x, v, "log", &r->log);
	if ((v = ynode_get(n, "comment")) && lx_is(x, v, YNODE_SCALAR, "comment"))
		r->comment = strdup(v->str);
	r->families = rule_families(r);
	if (!r->families && x->d->errors == x->errors0)
		diag_warn(x->d, r->loc, "rule '%s' can never match: its addresses and protocol share no address family (or a set is empty)",
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
static void check_duplicate_names(struct lx *x)
{
	const struct rule **v = calloc(x->p->nrules ? x->p->nrules : 1, sizeof(*v));
	uint32_t n = 0;

	if (!v)
		return;
	for (uint32_t i = 0; i < x->p->nrules; i++)
		if (x->p->rules[i].name && !x->p->rules[i].unnamed)
			v[n++] = &x->p->rules[i];
	qsort(v, n, sizeof(*v), by_name);
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
	uint32_t per_hook[POLICY_HOOK_MAX] = { 0 };

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
					   POLICY_MAX_RULES, hook_names[h]);
		}
	}
	check_duplicate_names(x);
}

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

static void load_capture_match(struct lx *x, struct capture_conf *c, const struct ynode *m)
{
	static const char *const keys[] = { "proto", "from", "to", "service", "min-length",
					    "max-length", "non-ip", NULL };
	const struct ynode *v;
	uint64_t num;
	const char *why;

	c->match.proto = -1;
	lx_addr_match(x, m ? ynode_get(m, "from") : NULL, "from", &c->match.from);
	lx_addr_match(x, m ? ynode_get(m, "to") : NULL, "to", &c->match.to);
	lx_port_match(x, m ? ynode_get(m, "service") : NULL, "service", &c->match.service);
	if (!m || !lx_is(x, m, YNODE_MAP, "capture match"))
		return;
	lx_check_keys(x, m, keys, "a capture match");
	if ((v = ynode_get(m, "proto")) && lx_is(x, v, YNODE_SCALAR, "proto") &&
	    parse_proto(v->str, &c->match.proto, &why) < 0)
		diag_error(x->d, v->loc, "proto '%s': %s", v->str, why);
	if ((v = ynode_get(m, "min-length")) && lx_uint(x, v, "min-length", 0, 65535 + 14, &num))
		c->match.min_len = (uint32_t)num;
	if ((v = ynode_get(m, "max-length")) && lx_uint(x, v, "max-length", 1, 65535 + 14, &num))
		c->match.max_len = (uint32_t)num;
	if (c->match.max_len && c->match.min_len > c->match.max_len)
		diag_error(x->d, v->loc, "max-length is below min-length");
	if ((v = ynode_get(m, "non-ip")))
		lx_bool(x, v, "non-ip", &c->match.non_ip);
}

static void capture_ifname(struct lx *x, const struct ynode *v, char *out, const char *what)
{
	if (!lx_is(x, v, YNODE_SCALAR, what))
		return;
	if (!parse_valid_ifname(v->str)) {
		diag_error(x->d, v->loc, "'%s' is not a valid interface name", v->str);
		return;
	}
	strcpy(out, v->str);
}

static void load_capture_one(struct lx *x, const struct ynode *n)
{
	static const char *const keys[] = { "name", "interface", "match", "file", "rotate", "snaplen",
					    "mirror-from", NULL };
	static const char *const rkeys[] = { "size", "keep", NULL };
	const struct ynode *v, *rot;
	struct capture_conf *c;
	const char *why;
	uint64_t num;

	if (!lx_is(x, n, YNODE_MAP, "a capture"))
		return;
	lx_check_keys(x, n, keys, "a capture");
	c = LX_APPEND(x, x->p->captures, x->p->ncaptures);
	if (!c)
		return;
	c->loc = n->loc;
	c->snaplen = 65535;
	c->rotate_keep = 8;
	if ((v = ynode_get(n, "name")) && lx_is(x, v, YNODE_SCALAR, "capture name")) {
		if (!parse_valid_name(v->str))
			diag_error(x->d, v->loc, "capture name '%s' is not valid", v->str);
		for (uint32_t i = 0; i + 1 < x->p->ncaptures; i++)
			if (x->p->captures[i].name && strcmp(x->p->captures[i].name, v->str) == 0)
				diag_error(x->d, v->loc, "duplicate capture name '%s'", v->str);
		c->name = strdup(v->str);
	} else if (!v) {
		diag_error(x->d, n->loc, "a capture needs a 'name:'");
	}
	if ((v = ynode_get(n, "interface")))
		capture_ifname(x, v, c->ifname, "interface");
	else
		diag_error(x->d, n->loc, "a capture needs 'interface:' (the interface to capture on)");
	if ((v = ynode_get(n, "mirror-from"))) {
		capture_ifname(x, v, c->mirror_from, "mirror-from");
		if (c->mirror_from[0] && !strcmp(c->mirror_from, c->ifname))
			diag_error(x->d, v->loc,
				   "mirror-from '%s' is the capture interface itself; name the interface whose traffic is copied, and a new interface for 'interface:' (nfbox creates it)",
				   c->mirror_from);
	}
	load_capture_match(x, c, ynode_get(n, "match"));
	if (!(v = ynode_get(n, "file")))
		diag_error(x->d, n->loc, "a capture needs 'file:' (an absolute path ending in .pcapng)");
	else if (lx_is(x, v, YNODE_SCALAR, "file")) {
		if (v->str[0] != '/')
			diag_error(x->d, v->loc, "capture file '%s' must be an absolute path", v->str);
		c->file = strdup(v->str);
	}
	if ((rot = ynode_get(n, "rotate")) && lx_is(x, rot, YNODE_MAP, "rotate")) {
		lx_check_keys(x, rot, rkeys, "rotate");
		if ((v = ynode_get(rot, "size")) && lx_is(x, v, YNODE_SCALAR, "rotate.size")) {
			if (parse_size(v->str, &c->rotate_size, &why) < 0)
				diag_error(x->d, v->loc, "rotate.size '%s': %s", v->str, why);
			else if (c->rotate_size < 65536)
				diag_error(x->d, v->loc, "rotate.size must be at least 64KiB");
		}
		if ((v = ynode_get(rot, "keep")) && lx_uint(x, v, "rotate.keep", 1, 100000, &num))
			c->rotate_keep = (uint32_t)num;
	}
	if ((v = ynode_get(n, "snaplen")) && lx_uint(x, v, "snaplen", 64, 262144, &num))
		c->snaplen = (uint32_t)num;
}

void load_captures(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_SEQ, "capture"))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		load_capture_one(x, n->kids[i]);
}

/* AF_XDP takes a captured frame away from the stack: capturing on an
 * interface the policy filters would stop the appliance forwarding what it
 * captures. */
static void check_capture_ifaces(struct lx *x)
{
	for (uint32_t i = 0; i < x->p->ncaptures; i++) {
		const struct capture_conf *c = &x->p->captures[i];

		for (uint32_t g = 0; !c->mirror_from[0] && g < x->p->ngroups; g++)
			for (uint32_t k = 0; k < x->p->groups[g].n; k++)
				if (!strcmp(x->p->groups[g].ifnames[k], c->ifname)) {
					diag_warn(x->d, c->loc,
						  "capture '%s' on '%s' (group '%s') takes the frames it matches away from the stack: the appliance would not forward them; to record that traffic, capture a copy with 'mirror-from: %s' and a new interface name",
						  c->name ? c->name : "", c->ifname, x->p->groups[g].name, c->ifname);
					g = x->p->ngroups - 1;
					break;
				}
	}
}

void check_unused(struct lx *x)
{
	check_capture_ifaces(x);
	for (uint32_t i = 0; i < x->p->ngroups; i++)
		if (!x->p->groups[i].used)
			diag_warn(x->d, x->p->groups[i].loc, "interface group '%s' is defined but not used",
				  x->p->groups[i].name);
	for (uint32_t i = 0; i < x->p->nrules; i++) {
		const struct rule *r = &x->p->rules[i];

		if (x->p->opt.established_accept && r->state != POLICY_CT_ALL &&
		    !(r->state & ~(POLICY_CT_ESTABLISHED | POLICY_CT_RELATED)))
			diag_warn(x->d, r->loc,
				  "rule '%s' never matches: established and related packets skip the rules (options.established: accept); set 'established: rules' to filter them",
				  r->name);
	}
	for (uint32_t i = 0; i < x->p->nsets; i++)
		if (!x->p->sets[i].used)
			diag_warn(x->d, x->p->sets[i].loc, "set '%s' is defined but not used", x->p->sets[i].name);
	for (uint32_t i = 0; i < x->p->nservices; i++)
		if (!x->p->services[i].used)
			diag_warn(x->d, x->p->services[i].loc, "service '%s' is defined but not used",
				  x->p->services[i].name);
}

/*
 * defrag: false means no reassembly before the verdict. Conntrack would
 * reassemble anyway (its nf_defrag runs first), so nfbox then leaves
 * conntrack off, and what needs it cannot be asked for.
 */
void check_defrag_off(struct lx *x)
{
	struct policy *p = x->p;

	if (p->opt.defrag)
		return;
	if (p->opt.established_loc.line && p->opt.established_accept)
		diag_error(x->d, p->opt.established_loc,
			   "'established: accept' needs conntrack, and conntrack reassembles fragments: it cannot be combined with 'defrag: false'");
	p->opt.established_accept = false;
	for (uint32_t i = 0; i < p->nrules; i++)
		if (p->rules[i].state != POLICY_CT_ALL)
			diag_error(x->d, p->rules[i].loc,
				   "rule '%s' matches on conntrack state, which 'defrag: false' turns off (conntrack reassembles fragments); remove 'state:' or the defrag option",
				   p->rules[i].name);
	if (p->nnat)
		diag_error(x->d, p->nat[0].loc, "NAT needs conntrack, which reassembles fragments: it cannot be combined with 'defrag: false'");
}
