/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the match fields shared by rules, NAT and capture. */
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

/* An address, a prefix or a range A-B (as the prefixes that cover it
 * exactly) at loc: each prefix to add(). Returns how many, or -1 after
 * reporting. */
int lx_addresses(struct lx *x, const char *text, struct loc loc,
		 bool (*add)(struct lx *, const struct prefix *, void *), void *arg)
{
	struct prefix first, last, v[256];
	const char *why;
	bool host_bits;
	size_t n;

	if (strchr(text, '-')) {
		if (parse_addr_range(text, &first, &last, &why) < 0) {
			diag_error(x->d, loc, "'%s': %s", text, why);
			return -1;
		}
		first.loc = loc;
		n = parse_range_split(&first, &last, v, sizeof(v) / sizeof(v[0]));
		for (size_t i = 0; i < n; i++)
			if (!add(x, &v[i], arg))
				return -1;
		return (int)n;
	}
	v[0].loc = loc;
	if (parse_prefix(text, &v[0], &host_bits, &why) < 0) {
		diag_error(x->d, loc, "'%s': %s", text, why);
		return -1;
	}
	if (host_bits) {
		char net[64];

		policy_prefix_format(&v[0], net, sizeof(net));
		diag_warn(x->d, loc, "'%s' has host bits set; it is read as the network %s", text, net);
	}
	return add(x, &v[0], arg) ? 1 : -1;
}

static void names_hint(char *buf, size_t len, const char *const *names)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; names[i] && used + 32 < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
}

/* Report an unknown name with the closest defined one, or the list of all. */
static void unknown_ref_name(struct lx *x, const struct ynode *n, const char *name, const char *kind,
			     const char *const *names)
{
	const char *near = diag_closest(name, names);
	char all[200];

	names_hint(all, sizeof(all), names);
	if (near)
		diag_error(x->d, n->loc, "unknown %s '%s'" DIAG_FIX "; did you mean '%s'?", kind, name, near);
	else if (all[0])
		diag_error(x->d, n->loc, "unknown %s '%s' (defined: %s)", kind, name, all);
	else
		diag_error(x->d, n->loc, "unknown %s '%s' (none is defined)", kind, name);
}

static void unknown_ref(struct lx *x, const struct ynode *n, const char *kind, const char *const *names)
{
	unknown_ref_name(x, n, n->str, kind, names);
}

static const char **collect_names(struct lx *x, int which)
{
	uint32_t n = which == 0 ? x->p->nsets : which == 1 ? x->p->nservices : x->p->ngroups;
	const char **v = calloc(n + 1, sizeof(*v));

	for (uint32_t i = 0; v && i < n; i++)
		v[i] = which == 0 ? x->p->sets[i].name : which == 1 ? x->p->services[i].name : x->p->groups[i].name;
	return v;
}

static void addr_append(struct lx *x, struct addr_match *m, const struct prefix *pf)
{
	if (!LX_APPEND(x, m->v, m->n))
		return;
	m->v[m->n - 1] = *pf;
	m->families |= pf->family;
}

/* A prefix written in a rule (an address range counts as the prefixes it
 * is cut into): these have a limit of their own, beside the sets', so that
 * the classifier's address ranges stay within its bisection (bpf/nfbox.h). */
static bool addr_add(struct lx *x, const struct prefix *pf, void *arg)
{
	if (++x->p->nprefixes_rules == POLICY_MAX_PREFIXES + 1)
		diag_error(x->d, pf->loc,
			   "the rules have more than %u prefixes written in them (the limit; an address range "
			   "counts as the prefixes it is cut into)" DIAG_FIX ": put them in a set file",
			   POLICY_MAX_PREFIXES);
	if (x->p->nprefixes_rules > POLICY_MAX_PREFIXES)
		return false;
	addr_append(x, arg, pf);
	return true;
}

/* The name an entry of an address or interface list gives, or NULL when
 * there is nothing more to do with it ('any', which sets *any, or an error).
 * A quoted leading '!' negates the entry (*neg): the name is the text after
 * it. Within one list every entry is negated or none is: "!a, !b" is
 * "neither a nor b"; a mix has no clear meaning. */
static const char *entry_name(struct lx *x, const struct ynode *n, bool *neg, int *state, bool *any)
{
	const char *s = n->str;
	bool this = s[0] == '!';

	if (this)
		s += 1 + strspn(s + 1, " \t");
	if (*state && (*state > 0) != this)
		diag_error(x->d, n->loc,
			   "a list is negated entry by entry or not at all" DIAG_FIX
			   ": every entry with a leading '!' (none of "
			   "them), or none");
	*state = this ? 1 : -1;
	*neg = this;
	if (this && (!*s || !strcmp(s, "any"))) {
		diag_error(x->d, n->loc,
			   "'%s' negates nothing" DIAG_FIX ": name a set, address, prefix or group after '!'", n->str);
		return NULL;
	}
	if (!strcmp(s, "any")) {
		*any = true;
		return NULL;
	}
	return s;
}

static void addr_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct addr_match *m = arg;
	const char *name = entry_name(x, n, &m->neg, &m->neg_state, &m->any);
	struct addr_set *s;

	if (m->dyn && (name || m->any)) {
		/* 'any' too: the list would match every address */
		diag_error(x->d, n->loc,
			   "'%s' follows dynamic set '%s', which stands alone in %s" DIAG_FIX
			   ": write another rule for it",
			   n->str, x->p->sets[m->dyn - 1].name, m->what ? m->what : "the list");
		return;
	}
	if (!name)
		return;
	if (parse_looks_like_address(name)) {
		lx_addresses(x, name, n->loc, addr_add, m);
		return;
	}
	s = lx_find_set(x, name);
	if (!s) {
		const char **names = collect_names(x, 0);

		if (names)
			unknown_ref_name(x, n, name, "set", names);
		free(names);
		return;
	}
	s->used = true;
	if (s->dynamic) {
		if (m->n || m->any) {
			diag_error(x->d, n->loc,
				   "dynamic set '%s' stands alone in a from: or to: (its entries change at run "
				   "time)" DIAG_FIX ": "
				   "write another rule for the other entries",
				   name);
			return;
		}
		m->dyn = (uint32_t)(s - x->p->sets) + 1;
		m->families = POLICY_FAM_ANY;
		return;
	}
	/* An empty set adds nothing: a rule with only empty sets never matches
	 * (the rule's own check says so). Negated it would take every address,
	 * which an empty blocklist file should never do. */
	if (!s->n && m->neg) {
		diag_error(x->d, n->loc,
			   "set '%s' is empty, so '%s' would match every address" DIAG_FIX
			   ": fill the set, or write 'any' if that "
			   "is what is meant",
			   name, n->str);
		return;
	}
	for (uint32_t i = 0; i < s->n; i++)
		addr_append(x, m, &s->v[i]);
}

void lx_addr_match(struct lx *x, const struct ynode *n, const char *what, struct addr_match *m)
{
	memset(m, 0, sizeof(*m));
	if (!n) {
		m->any = true;
		m->families = POLICY_FAM_ANY;
		return;
	}
	x->oom |= !(m->what = lx_describe(n));
	lx_each_scalar(x, n, what, addr_item, m);
	if (m->any) {
		if (m->n)
			diag_warn(x->d, n->loc, "%s lists 'any' beside other entries: they add nothing", what);
		free(m->v);
		m->v = NULL;
		m->n = 0;
		m->families = POLICY_FAM_ANY;
		m->neg = false;
		m->dyn = 0;
	} else if (m->neg || m->dyn) {
		/* Every address not listed, of either family. */
		m->families = POLICY_FAM_ANY;
	}
}

static void iface_append(struct lx *x, struct iface_match *m, const char *name)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->ifnames[i], name) == 0)
			return;
	if (!LX_APPEND(x, m->ifnames, m->n))
		return;
	strcpy(m->ifnames[m->n - 1], name);
}

/* in:/out: name an interface group, or else one interface by its own name
 * (lo, a tunnel that no group lists). A name one typo away from a group's
 * is more likely the group misspelt: said, and an error under --strict. */
static void iface_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct iface_match *m = arg;
	const char *name = entry_name(x, n, &m->neg, &m->neg_state, &m->any);
	struct iface_group *g;
	struct ynode named;

	if (!name)
		return;
	/* The name without its '!', at the same place, for the checks below. */
	named = *n;
	named.str = (char *)name;
	n = &named;
	g = lx_find_group(x, n->str);
	if (g) {
		g->used = true;
		for (uint32_t i = 0; i < g->n; i++)
			iface_append(x, m, g->ifnames[i]);
		return;
	}
	if (!lx_check_ifname(x, n))
		return;
	iface_append(x, m, n->str);
	if (!policy_ifname_wild(n->str) && !lx_group_member(x, n->str)) {
		const char **names = collect_names(x, 2);
		const char *near = names ? diag_closest(n->str, names) : NULL;

		if (near)
			diag_warn(x->d, n->loc,
				  "'%s' is no interface group, so it is taken as the interface of that name" DIAG_FIX
				  "; did you "
				  "mean the group '%s'?",
				  n->str, near);
		else if (x->files && x->files->iface_exists && !x->files->iface_exists(n->str, x->files->arg))
			diag_warn(x->d, n->loc,
				  "no interface group '%s', and no interface of that name here: the rule matches only "
				  "once one appears" DIAG_FIX " (define the group, or check the name)",
				  n->str);
		free(names);
	}
}

void lx_iface_match(struct lx *x, const struct ynode *n, const char *what, struct iface_match *m)
{
	memset(m, 0, sizeof(*m));
	if (!n) {
		m->any = true;
		return;
	}
	x->oom |= !(m->what = lx_describe(n));
	lx_each_scalar(x, n, what, iface_item, m);
	{
		uint32_t wild = 0;

		for (uint32_t i = 0; i < m->n; i++)
			wild += policy_ifname_wild(m->ifnames[i]);
		if (wild > POLICY_MAX_IFACE_WILDCARDS)
			diag_error(x->d, n->loc,
				   "%s has %u interface wildcards; at most %d" DIAG_FIX " (use a group of names)", what,
				   wild, POLICY_MAX_IFACE_WILDCARDS);
	}
	if (m->any) {
		free(m->ifnames);
		m->ifnames = NULL;
		m->n = 0;
		m->neg = false;
	}
}

static void port_append(struct lx *x, struct port_match *m, const struct port_range *pr)
{
	if (!LX_APPEND(x, m->v, m->n))
		return;
	m->v[m->n - 1] = *pr;
}

static void port_add(struct lx *x, const struct port_range *pr, void *arg)
{
	(void)x;
	port_append(x, arg, pr);
}

void lx_port_list(struct lx *x, const struct ynode *n, uint8_t *cont,
		  void (*add)(struct lx *, const struct port_range *, void *), void *arg)
{
	struct port_range v[64];
	size_t nv, bad, shift = 0;
	const char *why, *text = n->str;
	char buf[128];

	if (cont && *cont && !strchr(text, '/') && text[0] >= '0' && text[0] <= '9') {
		int k = snprintf(buf, sizeof(buf), "%s/%s", policy_proto_name(*cont), text);

		if (k > 0 && (size_t)k < sizeof(buf)) {
			shift = strlen(policy_proto_name(*cont)) + 1;
			text = buf;
		}
	}
	if (cont)
		*cont = 0;
	if (parse_ports(text, v, sizeof(v) / sizeof(v[0]), &nv, &bad, &why) < 0) {
		diag_error(x->d, lx_loc_in(n, bad >= shift ? bad - shift : 0), "'%s': %s", n->str, why);
		return;
	}
	for (size_t i = 0; i < nv; i++) {
		v[i].loc = n->loc;
		add(x, &v[i], arg);
	}
	if (cont && nv)
		*cont = v[0].proto;
}

void lx_bare_port(struct lx *x, const struct ynode *n)
{
	diag_error(x->d, n->loc,
		   "'%s' is a port without its protocol" DIAG_FIX
		   ": write tcp/%s or udp/%s, or put it after a PROTO/PORT item of "
		   "the same list, whose protocol it then takes ([tcp/80, %s])",
		   n->str, n->str, n->str, n->str);
}

static void port_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct port_match *m = arg;
	struct service *s;

	if (strcmp(n->str, "any") == 0) {
		m->any = true;
		m->cont_proto = 0;
		return;
	}
	if (n->str[0] == '!') {
		diag_error(x->d, n->loc,
			   "negating a service or port ('%s') is not supported yet: negation takes addresses, sets and "
			   "interfaces" DIAG_FIX "; list the ports to match",
			   n->str);
		return;
	}
	if (strchr(n->str, '/') || (m->cont_proto && n->str[0] >= '0' && n->str[0] <= '9')) {
		lx_port_list(x, n, &m->cont_proto, port_add, m);
		return;
	}
	m->cont_proto = 0;
	s = lx_find_service(x, n->str);
	if (!s && n->str[0] >= '0' && n->str[0] <= '9') {
		lx_bare_port(x, n);
		return;
	}
	if (!s) {
		const char **names = collect_names(x, 1);

		if (names)
			unknown_ref(x, n, "service", names);
		free(names);
		return;
	}
	s->used = true;
	for (uint32_t i = 0; i < s->n; i++)
		port_append(x, m, &s->v[i]);
}

void lx_port_match(struct lx *x, const struct ynode *n, const char *what, struct port_match *m)
{
	memset(m, 0, sizeof(*m));
	if (!n) {
		m->any = true;
		return;
	}
	x->oom |= !(m->what = lx_describe(n));
	lx_each_scalar(x, n, what, port_item, m);
	if (n->type == YNODE_SEQ && !n->nkids)
		diag_error(x->d, n->loc,
			   "%s is an empty list: nothing would match" DIAG_FIX "; list ports or leave %s out", what,
			   what);
	if (m->any) {
		free(m->v);
		m->v = NULL;
		m->n = 0;
	}
}

void lx_no_negation(struct lx *x, const struct ynode *n, bool neg, const char *where)
{
	if (n && neg)
		diag_error(x->d, n->loc,
			   "negation ('!') is taken in rules only, not in %s yet" DIAG_FIX
			   "; list what to match instead",
			   where);
}

void lx_no_dynamic(struct lx *x, const struct ynode *n, struct addr_match *m, const char *where)
{
	if (n && m->dyn) {
		diag_error(x->d, n->loc,
			   "dynamic set '%s' is taken in rules' from: and to: only, not in %s" DIAG_FIX
			   "; use a set without "
			   "dynamic: here",
			   x->p->sets[m->dyn - 1].name, where);
		m->dyn = 0;
		m->any = true; /* no further errors from it */
	}
}

void lx_no_wildcard(struct lx *x, const struct ynode *n, const struct iface_match *m, const char *where)
{
	for (uint32_t i = 0; n && i < m->n; i++) {
		if (policy_ifname_wild(m->ifnames[i])) {
			diag_error(x->d, n->loc,
				   "interface wildcard '%s' is taken in rules only, not in %s yet" DIAG_FIX
				   "; name the interfaces",
				   m->ifnames[i], where);
			return;
		}
	}
}
