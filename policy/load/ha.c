/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Loader: the ha: section (one node of an active/backup pair), and the
 * rules it adds so that the pair's own traffic passes whatever the
 * operator's rules say: VRRP on the interfaces of the virtual addresses,
 * conntrackd's sync messages (and, for an IPv6 peer, neighbour discovery)
 * on the sync link. Those rules come first on the input and output hooks
 * the policy declares, are marked implicit, and `nfbox validate` lists them.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static const struct prefix vrrp_group4 = { .family = POLICY_FAM_IPV4, .plen = 32, .addr = { 224, 0, 0, 18 } };
static const struct prefix vrrp_group6 = { .family = POLICY_FAM_IPV6,
					   .plen = 128,
					   .addr = { 0xff, 0x02, [15] = 0x12 } };

/* "192.0.2.1/24": the address with all its bits, and the prefix length. */
static bool ha_address(struct lx *x, const struct ynode *v, struct prefix *out)
{
	const char *slash = strchr(v->str, '/'), *why;
	char addr[64];
	struct prefix whole;
	bool host_bits;

	if (!slash) {
		diag_error(x->d, v->loc, "'%s' needs its prefix length, as on the interface: e.g. '192.0.2.1/24'",
			   v->str);
		return false;
	}
	snprintf(addr, sizeof(addr), "%.*s", (int)(slash - v->str), v->str);
	if (parse_prefix(v->str, &whole, &host_bits, &why) < 0 || parse_prefix(addr, out, &host_bits, &why) < 0) {
		diag_error(x->d, v->loc, "'%s': %s", v->str, why);
		return false;
	}
	out->plen = whole.plen;
	out->loc = v->loc;
	/* IPv4 below /31: the host bits all clear (network) or all set (broadcast). */
	if (whole.family == POLICY_FAM_IPV4 && whole.plen < 31) {
		uint32_t a = (uint32_t)out->addr[0] << 24 | (uint32_t)out->addr[1] << 16 | (uint32_t)out->addr[2] << 8 |
			     out->addr[3];
		uint32_t host = whole.plen ? 0xffffffffu >> whole.plen : 0xffffffffu;

		if (!(a & host) || (a & host) == host) {
			diag_error(x->d, v->loc, "'%s' is the %s address of its prefix, no address for a host", v->str,
				   !(a & host) ? "network" : "broadcast");
			return false;
		}
	}
	if ((out->family == POLICY_FAM_IPV4 && out->addr[0] >= 224) ||
	    (out->family == POLICY_FAM_IPV6 && out->addr[0] == 0xff)) {
		diag_error(x->d, v->loc, "'%s' is a multicast or reserved address; a virtual address is a unicast one",
			   v->str);
		return false;
	}
	return true;
}

/* One address, no prefix length (or a full one). */
static bool ha_host(struct lx *x, const struct ynode *v, const char *what, struct prefix *out)
{
	const char *why;
	bool host_bits;

	if (parse_prefix(v->str, out, &host_bits, &why) < 0) {
		diag_error(x->d, v->loc, "%s '%s': %s", what, v->str, why);
		return false;
	}
	if (out->plen != (out->family == POLICY_FAM_IPV4 ? 32 : 128) || host_bits) {
		diag_error(x->d, v->loc, "%s '%s' is one address, without a prefix length", what, v->str);
		return false;
	}
	if ((out->family == POLICY_FAM_IPV4 && (out->addr[0] >= 224 || out->addr[0] == 0)) ||
	    (out->family == POLICY_FAM_IPV6 && out->addr[0] == 0xff)) {
		diag_error(x->d, v->loc, "%s '%s' is no unicast address", what, v->str);
		return false;
	}
	out->loc = v->loc;
	return true;
}

/* An interface: its name, or a group of exactly one interface. */
static bool ha_ifname(struct lx *x, const struct ynode *v, const char *what, char *out)
{
	struct iface_group *g;

	if (!lx_is(x, v, YNODE_SCALAR, what))
		return false;
	if ((g = lx_find_group(x, v->str))) {
		g->used = true;
		if (g->n != 1 || policy_ifname_wild(g->ifnames[0])) {
			diag_error(x->d, v->loc, "group '%s' has %u interfaces%s; %s names one interface", v->str, g->n,
				   g->n == 1 ? " (a wildcard)" : "", what);
			return false;
		}
		strcpy(out, g->ifnames[0]);
		return true;
	}
	if (!lx_check_ifname_in(x, v, false))
		return false;
	strcpy(out, v->str);
	return true;
}

static bool iface_named(const struct iface_match *m, const char *ifname)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (!strcmp(m->ifnames[i], ifname))
			return true;
	return false;
}

/* Whether the policy names ifname anywhere: a group lists it, or a rule or
 * NAT entry names it. */
static bool iface_known(struct lx *x, const char *ifname)
{
	if (lx_group_member(x, ifname))
		return true;
	for (uint32_t i = 0; i < x->p->nrules; i++)
		if (iface_named(&x->p->rules[i].in, ifname) || iface_named(&x->p->rules[i].out, ifname))
			return true;
	for (uint32_t i = 0; i < x->p->nnat; i++)
		if (iface_named(&x->p->nat[i].in, ifname) || iface_named(&x->p->nat[i].out, ifname))
			return true;
	return false;
}

/* Traffic of family fam to or through ifname can pass at all: a hook that
 * would carry it accepts by default or is not filtered, an accepting rule
 * may take it in or out of ifname, or a NAT entry names it. */
static bool vip_usable(struct lx *x, const struct ha_virtual *hv)
{
	const struct policy *p = x->p;

	if (!p->hooks[POLICY_HOOK_FORWARD].present || p->hooks[POLICY_HOOK_FORWARD].def == POLICY_ACCEPT ||
	    (p->hooks[POLICY_HOOK_INPUT].present && p->hooks[POLICY_HOOK_INPUT].def == POLICY_ACCEPT))
		return true;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		if (r->implicit || r->action != POLICY_ACCEPT || !(r->families & hv->addr.family) ||
		    !(r->hooks & (1u << POLICY_HOOK_FORWARD | 1u << POLICY_HOOK_INPUT)))
			continue;
		if (policy_iface_in(&r->in, hv->ifname) || policy_iface_in(&r->out, hv->ifname))
			return true;
	}
	for (uint32_t i = 0; i < p->nnat; i++)
		if (iface_named(&p->nat[i].in, hv->ifname) || iface_named(&p->nat[i].out, hv->ifname))
			return true;
	return false;
}

static bool is_peer(const struct ha_conf *ha, const struct prefix *a)
{
	for (uint8_t i = 0; i < ha->npeers; i++)
		if (ha->sync_peers[i].family == a->family && !memcmp(ha->sync_peers[i].addr, a->addr, 16))
			return true;
	return false;
}

/* peer: one address, or both nodes' (a list of two). */
static void ha_peers(struct lx *x, struct ha_conf *ha, const struct ynode *v)
{
	const struct ynode *one = v;
	size_t n = v->type == YNODE_SEQ ? v->nkids : 1;

	if (v->type == YNODE_SEQ && n != 2) {
		diag_error(x->d, v->loc,
			   "ha.sync.peer lists %zu addresses" DIAG_FIX
			   ": give the other node's address, or both nodes' (two), of "
			   "which this node has one",
			   n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (v->type == YNODE_SEQ)
			one = v->kids[i];
		if (!lx_is(x, one, YNODE_SCALAR, "ha.sync.peer") ||
		    !ha_host(x, one, "ha.sync.peer", &ha->sync_peers[i]))
			return;
	}
	if (n == 2 && ha->sync_peers[0].family != ha->sync_peers[1].family) {
		diag_error(x->d, v->kids[1]->loc,
			   "the two sync addresses are of two families; both ends of the sync link are of one");
		return;
	}
	if (n == 2 && !memcmp(ha->sync_peers[0].addr, ha->sync_peers[1].addr, 16)) {
		diag_error(x->d, v->kids[1]->loc,
			   "the same address twice" DIAG_FIX ": give both nodes' sync addresses");
		return;
	}
	ha->npeers = (uint8_t)n;
}

static void ha_sync(struct lx *x, struct ha_conf *ha, const struct ynode *n)
{
	static const char *const keys[] = { "interface", "peer", "address", NULL };
	const struct ynode *v, *peer;

	if (!lx_is(x, n, YNODE_MAP, "ha.sync"))
		return;
	lx_check_keys(x, n, keys, "ha.sync");
	if ((v = ynode_get(n, "interface")))
		ha_ifname(x, v, "ha.sync.interface", ha->sync_ifname);
	else if (!ynode_has(n, "interface"))
		diag_error(x->d, n->loc, "ha.sync needs 'interface:' (the link to the other node, e.g. sync0)");
	if ((peer = ynode_get(n, "peer")))
		ha_peers(x, ha, peer);
	else if (!ynode_has(n, "peer"))
		diag_error(x->d, n->loc,
			   "ha.sync needs 'peer:' (the other node's address on the sync link, or both nodes')");
	if ((v = ynode_get(n, "address")) && lx_is(x, v, YNODE_SCALAR, "ha.sync.address") &&
	    ha_host(x, v, "ha.sync.address", &ha->sync_addr) && ha->npeers) {
		if (ha->sync_addr.family != ha->sync_peers[0].family)
			diag_error(
				x->d, v->loc,
				"ha.sync.address '%s' is %s, the peer %s: both ends of the sync link are of one family",
				v->str, policy_family_name((enum policy_family)ha->sync_addr.family),
				policy_family_name((enum policy_family)ha->sync_peers[0].family));
		else if (ha->npeers == 1 && is_peer(ha, &ha->sync_addr))
			diag_error(x->d, v->loc,
				   "ha.sync.address is the peer's address" DIAG_FIX "; give this node's own");
		else if (ha->npeers == 2 && !is_peer(ha, &ha->sync_addr))
			diag_error(x->d, v->loc,
				   "ha.sync.address '%s' is neither of the two in 'peer:' (this node's must be one of "
				   "them)",
				   v->str);
	}
}

static void ha_virtual_one(struct lx *x, struct ha_conf *ha, const struct ynode *n)
{
	static const char *const keys[] = { "interface", "address", "id", NULL };
	const struct ynode *iface = ynode_get(n, "interface"), *addr = ynode_get(n, "address"),
			   *id = ynode_get(n, "id");
	struct ha_virtual *hv;
	uint64_t num;
	bool ok = true;

	if (!lx_is(x, n, YNODE_MAP, "a virtual address"))
		return;
	lx_check_keys(x, n, keys, "a virtual address");
	for (int i = 0; keys[i]; i++)
		if (!ynode_has(n, keys[i])) {
			diag_error(x->d, n->loc,
				   "a virtual address needs 'interface:', 'address:' and 'id:', e.g. { interface: "
				   "lan0, address: 192.0.2.1/24, id: 51 }");
			return;
		}
	if (!(hv = LX_APPEND(x, ha->virt, ha->nvirt)))
		return;
	hv->loc = n->loc;
	ok &= iface && ha_ifname(x, iface, "a virtual address", hv->ifname);
	ok &= addr && lx_is(x, addr, YNODE_SCALAR, "address") && ha_address(x, addr, &hv->addr);
	if (id && lx_uint(x, id, "a VRRP id", 1, 255, &num))
		hv->id = (uint8_t)num;
	else
		ok = false;
	if (!ok)
		return;
	if (!strcmp(hv->ifname, ha->sync_ifname))
		diag_error(x->d, iface->loc,
			   "'%s' is the sync interface; the sync link is its own, with no virtual address", hv->ifname);
	else if (!iface_known(x, hv->ifname))
		diag_error(x->d, iface->loc,
			   "unknown interface '%s': no group lists it and no rule or NAT names it" DIAG_FIX
			   "; list it in "
			   "interfaces: (e.g. 'lan: [%s]')",
			   hv->ifname, hv->ifname);
	for (uint32_t i = 0; i + 1 < ha->nvirt; i++) {
		const struct ha_virtual *o = &ha->virt[i];

		if (o->id == hv->id && o->addr.family == hv->addr.family)
			diag_error(x->d, id->loc,
				   "VRRP id %u is also used on %s (line %u) for %s: each virtual address of a family "
				   "needs its own id",
				   hv->id, o->ifname, o->loc.line,
				   policy_family_name((enum policy_family)o->addr.family));
		if (o->addr.family == hv->addr.family && !memcmp(o->addr.addr, hv->addr.addr, 16))
			diag_error(x->d, addr->loc, "virtual address '%s' is listed twice (line %u)", addr->str,
				   o->loc.line);
	}
	if (is_peer(ha, &hv->addr))
		diag_error(x->d, addr->loc, "'%s' is a sync address; a virtual address belongs to neither node",
			   addr->str);
}

/* advert: 100ms. keepalived -t refuses an interval VRRPv3 cannot carry
 * (it would round it), and so the load; these errors come first, at the
 * place. */
static void ha_advert(struct lx *x, struct ha_conf *ha, const struct ynode *v)
{
	const char *why;
	uint64_t ms;

	if (!lx_is(x, v, YNODE_SCALAR, "ha.advert"))
		return;
	if (parse_duration_ms(v->str, HA_ADVERT_MAX_MS, &ms, &why) < 0) {
		diag_error(x->d, v->loc, "ha.advert '%s': %s (%ums..%ums; a number alone counts seconds)", v->str, why,
			   HA_ADVERT_MIN_MS, HA_ADVERT_MAX_MS);
		return;
	}
	if (ms < HA_ADVERT_MIN_MS) {
		diag_error(x->d, v->loc,
			   "ha.advert %s is below the floor of %ums: the backup takes over after three adverts "
			   "missed, and a loaded node sends its adverts tens of milliseconds late: the pair would "
			   "fail over by itself",
			   v->str, HA_ADVERT_MIN_MS);
		return;
	}
	if (ms % HA_ADVERT_STEP_MS) {
		diag_error(x->d, v->loc,
			   "ha.advert %s: VRRPv3 counts the interval in centiseconds" DIAG_FIX ": use %llums or %llums",
			   v->str, (unsigned long long)(ms - ms % HA_ADVERT_STEP_MS),
			   (unsigned long long)(ms - ms % HA_ADVERT_STEP_MS + HA_ADVERT_STEP_MS));
		return;
	}
	ha->advert_ms = (uint32_t)ms;
}

/*
 * A node that returns (or starts) takes the addresses back once both its
 * preempt-delay and the master-down interval (three adverts and a bit)
 * have run out; until then its conntrackd fetches the master's state over
 * the sync link. With 1 s adverts that leaves 3 s and more; with shorter
 * ones and no preempt-delay, a third of a second or so: a large table
 * cannot come over the sync link in that time, and the flows it holds
 * break at the failback.
 */
static void ha_check_failback(struct lx *x, const struct ha_conf *ha, const struct ynode *advert)
{
	if (!advert || ha->advert_ms >= 1000 || ha->preempt_delay)
		return;
	diag_warn(x->d, advert->loc,
		  "ha.advert %s with preempt-delay 0: a node that returns takes over about %ums after it starts, "
		  "too soon for its conntrackd to have the master's state over the sync link (with 1s adverts it "
		  "had 3s)" DIAG_FIX "; give 'preempt-delay: 1' or more",
		  advert->str, 3 * ha->advert_ms + (256 - ha->priority) * ha->advert_ms / 256);
}

/* A masquerade out of interfaces with virtual addresses takes them. */
static void masquerade_vips(struct lx *x, struct nat_rule *nr)
{
	const struct ha_conf *ha = &x->p->ha;

	for (uint32_t k = 0; nr->kind == NAT_MASQUERADE && k < ha->nvirt; k++) {
		const struct ha_virtual *v = &ha->virt[k];
		struct nat_vip *nv;
		bool have = false;
		char buf[64];

		if (!iface_named(&nr->out, v->ifname) || !(nr->families & v->addr.family))
			continue;
		for (uint32_t i = 0; i < nr->nvips; i++)
			have |= !strcmp(nr->vips[i].ifname, v->ifname) && nr->vips[i].addr.family == v->addr.family;
		if (have || !(nv = LX_APPEND(x, nr->vips, nr->nvips)))
			continue;
		strcpy(nv->ifname, v->ifname);
		nv->addr = v->addr;
		nv->addr.plen = v->addr.family == POLICY_FAM_IPV4 ? 32 : 128;
		policy_prefix_format(&nv->addr, buf, sizeof(buf));
		diag_note(
			x->d, nr->loc,
			"masquerade out of %s takes its virtual address %s (snat to it): the kernel's masquerade "
			"forgets its flows when an address or a link goes away, and the peer would forget them with it",
			v->ifname, buf);
	}
}

/* ---- the rules ha: adds ---- */

/* Out of memory here must fail the load: a match left 'any' would let
 * everything through. */
static void no_memory(struct lx *x)
{
	diag_error(x->d, x->p->ha.loc, "out of memory adding the rules of ha:");
}

static struct rule *implicit_rule(struct lx *x, struct rule **v, uint32_t *n, const char *name, enum policy_hook h,
				  int proto)
{
	struct rule *r = LX_APPEND(x, *v, *n);

	if (!r) {
		no_memory(x);
		return NULL;
	}
	r->name = strdup(name);
	r->loc = x->p->ha.loc;
	r->hooks = (uint8_t)(1u << h);
	r->in.any = r->out.any = r->from.any = r->to.any = r->service.any = r->sport.any = true;
	r->from.families = r->to.families = POLICY_FAM_ANY;
	r->proto = proto;
	r->state = POLICY_CT_ALL;
	r->action = POLICY_ACCEPT;
	r->implicit = true;
	r->comment = strdup("added by ha:");
	return r;
}

static void iface_add(struct lx *x, struct iface_match *m, const char *ifname)
{
	char (*v)[POLICY_IFNAMSIZ];

	if (iface_named(m, ifname))
		return;
	if (!(v = realloc(m->ifnames, (m->n + 1) * sizeof(*v)))) {
		no_memory(x);
		return;
	}
	m->ifnames = v;
	strcpy(v[m->n++], ifname);
	m->any = false;
}

static void addr_add(struct lx *x, struct addr_match *m, const struct prefix *p)
{
	struct prefix *v = realloc(m->v, (m->n + 1) * sizeof(*v));

	if (!v) {
		no_memory(x);
		return;
	}
	m->v = v;
	v[m->n++] = *p;
	m->families = (uint8_t)((m->any ? 0 : m->families) | p->family);
	m->any = false;
}

/* "what" as the operator would have written it, for plans and diffs. */
static void describe_ifaces(struct iface_match *m)
{
	size_t len = 3;

	for (uint32_t i = 0; i < m->n; i++)
		len += strlen(m->ifnames[i]) + 2;
	if (!(m->what = malloc(len)))
		return;
	strcpy(m->what, m->n == 1 ? "" : "[");
	for (uint32_t i = 0; i < m->n; i++) {
		if (i)
			strcat(m->what, ", ");
		strcat(m->what, m->ifnames[i]);
	}
	if (m->n != 1)
		strcat(m->what, "]");
}

static void describe_addrs(struct addr_match *m)
{
	char buf[64];
	size_t len = 3;

	for (uint32_t i = 0; i < m->n; i++)
		len += sizeof(buf) + 2;
	if (!(m->what = malloc(len)))
		return;
	strcpy(m->what, m->n == 1 ? "" : "[");
	for (uint32_t i = 0; i < m->n; i++) {
		policy_prefix_format(&m->v[i], buf, sizeof(buf));
		if (i)
			strcat(m->what, ", ");
		strcat(m->what, buf);
	}
	if (m->n != 1)
		strcat(m->what, "]");
}

static void finish_rule(struct rule *r)
{
	if (!r->in.any)
		describe_ifaces(&r->in);
	if (!r->out.any)
		describe_ifaces(&r->out);
	if (!r->from.any)
		describe_addrs(&r->from);
	if (!r->to.any)
		describe_addrs(&r->to);
	r->families = r->from.families & r->to.families;
	if (r->proto == IPPROTO_ICMPV6)
		r->families &= POLICY_FAM_IPV6;
}

/* The rules of one hook (input: in, from the peer; output: out, to it). */
static void implicit_hook(struct lx *x, struct rule **v, uint32_t *n, enum policy_hook h)
{
	const struct ha_conf *ha = &x->p->ha;
	bool in = h == POLICY_HOOK_INPUT;
	const char *dir = in ? "in" : "out";
	char name[32];
	struct rule *r;

	snprintf(name, sizeof(name), "ha/vrrp-%s", dir);
	if ((r = implicit_rule(x, v, n, name, h, HA_VRRP_PROTO))) {
		for (uint32_t i = 0; i < ha->nvirt; i++) {
			iface_add(x, in ? &r->in : &r->out, ha->virt[i].ifname);
			if (!(r->to.families & ha->virt[i].addr.family) || r->to.any)
				addr_add(x, &r->to,
					 ha->virt[i].addr.family == POLICY_FAM_IPV4 ? &vrrp_group4 : &vrrp_group6);
		}
		finish_rule(r);
	}
	snprintf(name, sizeof(name), "ha/sync-%s", dir);
	if ((r = implicit_rule(x, v, n, name, h, IPPROTO_UDP))) {
		iface_add(x, in ? &r->in : &r->out, ha->sync_ifname);
		for (uint8_t i = 0; i < ha->npeers; i++)
			addr_add(x, in ? &r->from : &r->to, &ha->sync_peers[i]);
		if (!(r->service.v = calloc(1, sizeof(*r->service.v)))) {
			no_memory(x);
		} else {
			r->service.v[0] =
				(struct port_range){ .proto = IPPROTO_UDP, .lo = HA_SYNC_PORT, .hi = HA_SYNC_PORT };
			r->service.n = 1;
			r->service.any = false;
			r->service.what = strdup("udp/3780");
		}
		finish_rule(r);
	}
	if (ha->sync_peers[0].family != POLICY_FAM_IPV6)
		return;
	/* Neighbour discovery: without it an IPv6 sync link carries nothing. */
	snprintf(name, sizeof(name), "ha/sync-nd-%s", dir);
	if ((r = implicit_rule(x, v, n, name, h, IPPROTO_ICMPV6))) {
		iface_add(x, in ? &r->in : &r->out, ha->sync_ifname);
		if (!(r->icmp_types = malloc(2))) {
			no_memory(x);
		} else {
			r->icmp_types[0] = 135; /* neighbour solicitation */
			r->icmp_types[1] = 136; /* neighbour advertisement */
			r->nicmp = 2;
		}
		finish_rule(r);
	}
}

/* Put the implicit rules before the operator's, and tell what they are.
 * Their names have a '/', which no rule the operator writes can have. */
static void reverse(struct rule *v, uint32_t lo, uint32_t hi) /* [lo, hi) */
{
	while (hi > lo + 1) {
		struct rule t = v[lo];

		v[lo++] = v[--hi];
		v[hi] = t;
	}
}

static void add_implicit_rules(struct lx *x)
{
	struct policy *p = x->p;
	uint32_t first = p->nrules, n;

	/* Appended to the policy's own array (which then owns them, whatever
	 * fails), then rotated to its front. */
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		if (h != POLICY_HOOK_FORWARD && p->hooks[h].present)
			implicit_hook(x, &p->rules, &p->nrules, (enum policy_hook)h);
	n = p->nrules - first;
	reverse(p->rules, 0, p->nrules);
	reverse(p->rules, 0, n);
	reverse(p->rules, n, p->nrules);
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		uint32_t on = 0, added = 0;

		for (uint32_t i = 0; i < p->nrules; i++)
			if (p->rules[i].hooks & (1u << h)) {
				on++;
				added += i < n;
			}
		if (added && on > POLICY_MAX_RULES)
			diag_error(
				x->d, p->ha.loc,
				"ha: adds %u rules to the %s hook, which then has %u, more than %d (the limit)" DIAG_FIX
				": "
				"take %u rules out of it",
				added, policy_hook_names[h], on, POLICY_MAX_RULES, on - POLICY_MAX_RULES);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct rule *r = &p->rules[i];
		bool in = r->hooks & (1u << POLICY_HOOK_INPUT);

		diag_note(x->d, p->ha.loc, "ha: adds rule %s first on the %s hook: accept %s %s %s%s", r->name,
			  policy_hook_names[in ? POLICY_HOOK_INPUT : POLICY_HOOK_OUTPUT],
			  r->proto == HA_VRRP_PROTO ? "VRRP"
			  : r->proto == IPPROTO_UDP ? "conntrackd's udp/3780"
						    : "neighbour discovery",
			  in ? "in" : "out", (in ? r->in.what : r->out.what) ? (in ? r->in.what : r->out.what) : "?",
			  r->proto == IPPROTO_UDP ? (in ? " from the peer" : " to the peer") : "");
	}
}

void load_ha(struct lx *x, const struct ynode *n, const struct ynode *key)
{
	static const char *const keys[] = { "priority", "sync", "virtual", "preempt-delay", "advert", NULL };
	struct ha_conf *ha = &x->p->ha;
	const struct ynode *v, *advert;
	size_t errors = x->d->errors;
	uint64_t num;

	if (!n || !lx_is(x, n, YNODE_MAP, "ha"))
		return;
	lx_check_keys(x, n, keys, "ha");
	ha->present = true;
	ha->loc = key->loc;
	ha->preempt_delay = 5;
	ha->advert_ms = HA_ADVERT_DEFAULT_MS;
	if ((v = ynode_get(n, "priority"))) {
		if (v->type == YNODE_SCALAR && !strcmp(v->str, "255"))
			diag_error(
				x->d, v->loc,
				"priority 255 is VRRP's address owner, and neither node owns a virtual address" DIAG_FIX
				": use "
				"1..254 (the higher node is master)");
		else if (lx_uint(x, v, "ha.priority", 1, 254, &num))
			ha->priority = (uint8_t)num;
	} else if (!ynode_has(n, "priority")) {
		diag_error(x->d, n->loc,
			   "ha needs 'priority:' (1..254; the node with the higher one is master, so the two differ)");
	}
	if ((v = ynode_get(n, "preempt-delay")) && lx_uint(x, v, "ha.preempt-delay (seconds)", 0, 1000, &num))
		ha->preempt_delay = (uint32_t)num;
	if ((advert = ynode_get(n, "advert")))
		ha_advert(x, ha, advert);
	ha_check_failback(x, ha, advert);
	if ((v = ynode_get(n, "sync")))
		ha_sync(x, ha, v);
	else if (!ynode_has(n, "sync"))
		diag_error(x->d, n->loc,
			   "ha needs 'sync: { interface: IFNAME, peer: ADDRESS }' (the link conntrackd copies the "
			   "state over)");
	if (!(v = ynode_get(n, "virtual"))) {
		if (!ynode_has(n, "virtual"))
			diag_error(x->d, n->loc,
				   "ha needs 'virtual:' (the addresses that move to the master, e.g. '- { interface: "
				   "lan0, address: 192.0.2.1/24, id: 51 }')");
	} else if (lx_is(x, v, YNODE_SEQ, "ha.virtual")) {
		if (!v->nkids)
			diag_error(x->d, v->loc, "ha.virtual is empty: a pair needs at least one virtual address");
		for (size_t i = 0; i < v->nkids; i++)
			ha_virtual_one(x, ha, v->kids[i]);
	}
	if (x->d->errors != errors || x->d->errors != x->errors0)
		return;
	for (uint32_t i = 0; i < ha->nvirt; i++) {
		char buf[64];

		if (vip_usable(x, &ha->virt[i]))
			continue;
		policy_prefix_format(&ha->virt[i].addr, buf, sizeof(buf));
		diag_error(x->d, ha->virt[i].loc,
			   "virtual address %s on %s would carry nothing: the forward hook drops by default and no "
			   "rule accepts %s traffic in or out of %s, nor does NAT name it" DIAG_FIX
			   "; add a rule with '%s' in "
			   "'in:' or 'out:'",
			   buf, ha->virt[i].ifname, policy_family_name((enum policy_family)ha->virt[i].addr.family),
			   ha->virt[i].ifname, ha->virt[i].ifname);
	}
	for (uint32_t i = 0; i < x->p->nnat; i++)
		masquerade_vips(x, &x->p->nat[i]);
	add_implicit_rules(x);
}
