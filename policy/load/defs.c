/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: interfaces, sets (inline and from files), services, hooks, options. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static bool check_name(struct lx *x, const struct ynode *k, const char *what)
{
	if (k->broken) /* an unknown alias, reported where it stands */
		return false;
	if (parse_valid_name(k->str))
		return true;
	diag_error(x->d, k->loc,
		   "%s name '%s' is not valid" DIAG_FIX
		   ": use up to %d letters, digits, '_', '-' or '.', starting with a letter",
		   what, k->str, POLICY_MAX_NAME);
	return false;
}

static bool reserved_name(struct lx *x, const struct ynode *k, const char *what)
{
	if (strcmp(k->str, "any") != 0)
		return false;
	diag_error(x->d, k->loc, "'any' is reserved and cannot name a %s", what);
	return true;
}

static void group_add_ifname(struct lx *x, const struct ynode *n, void *arg)
{
	struct iface_group *g = arg;

	if (!lx_check_ifname(x, n))
		return;
	for (uint32_t i = 0; i < g->n; i++) {
		if (strcmp(g->ifnames[i], n->str) == 0) {
			diag_warn(x->d, n->loc, "interface '%s' is listed twice in group '%s'", n->str, g->name);
			return;
		}
	}
	if (g->n == POLICY_MAX_GROUP_IFACES) {
		diag_error(x->d, n->loc, "group '%s' has more than %d interfaces", g->name, POLICY_MAX_GROUP_IFACES);
		return;
	}
	if (!LX_APPEND(x, g->ifnames, g->n))
		return;
	strcpy(g->ifnames[g->n - 1], n->str);
}

void load_interfaces(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_MAP, "interfaces"))
		return;
	for (size_t i = 0; i < ynode_map_len(n); i++) {
		const struct ynode *k = ynode_map_key(n, i), *v = ynode_map_val(n, i);
		struct iface_group *g;

		if (!check_name(x, k, "interface group") || reserved_name(x, k, "interface group") ||
		    lx_find_group(x, k->str))
			continue; /* a duplicate key was reported by the parser */
		g = LX_APPEND(x, x->p->groups, x->p->ngroups);
		if (!g || !(g->name = strdup(k->str)) || lx_index_add(&x->groups, g->name, x->p->ngroups - 1) < 0) {
			x->oom = true;
			return;
		}
		g->loc = k->loc;
		if (!ynode_is_null(v)) /* "lan:" with nothing: an empty group, as [] */
			lx_each_scalar(x, v, "an interface group", group_add_ifname, g);
		if ((!v->nkids && v->type == YNODE_SEQ) || ynode_is_null(v))
			diag_warn(x->d, v->loc, "interface group '%s' is empty: rules using it never match", g->name);
	}
	/* 'in: NAME' means the group NAME first: a group named like an
	 * interface of another group would silently stand for that interface. */
	for (uint32_t i = 0; i < x->p->ngroups; i++) {
		struct iface_group *g = &x->p->groups[i], *other = NULL;

		for (uint32_t j = 0; j < x->p->ngroups && !other; j++)
			for (uint32_t k = 0; j != i && k < x->p->groups[j].n && !other; k++)
				if (strcmp(x->p->groups[j].ifnames[k], g->name) == 0)
					other = &x->p->groups[j];
		if (other)
			diag_error(x->d, g->loc,
				   "group '%s' is named like an interface of group '%s' (line %u): 'in: %s' would mean "
				   "this group, not the interface" DIAG_FIX "; rename the group",
				   g->name, other->name, other->loc.line, g->name);
	}
}

static bool count_prefix(struct lx *x, struct loc loc)
{
	if (++x->p->nprefixes == POLICY_MAX_PREFIXES + 1)
		diag_error(x->d, loc, "the policy has more than %u prefixes in its sets (the limit)",
			   POLICY_MAX_PREFIXES);
	return x->p->nprefixes <= POLICY_MAX_PREFIXES;
}

static void set_add_prefix(struct lx *x, struct addr_set *s, const struct prefix *pf)
{
	if (!LX_APPEND(x, s->v, s->n))
		return;
	s->v[s->n - 1] = *pf;
	s->families |= pf->family;
}

static bool set_add(struct lx *x, const struct prefix *pf, void *arg)
{
	if (!count_prefix(x, pf->loc))
		return false;
	set_add_prefix(x, arg, pf);
	return true;
}

static void set_add_node(struct lx *x, const struct ynode *n, void *arg)
{
	if (!parse_looks_like_address(n->str)) {
		diag_error(x->d, n->loc,
			   "'%s' is not an address, prefix or range (sets hold addresses like 192.0.2.0/24, "
			   "2001:db8::/32 or 192.0.2.10-192.0.2.20)",
			   n->str);
		return;
	}
	lx_addresses(x, n->str, n->loc, set_add, arg);
}

/* A set file: one prefix per line, '#' or ';' starts a comment (';' as in
 * Spamhaus' DROP lists: "192.0.2.0/24 ; SBL123"). Errors point into the
 * file itself. */
static void set_load_file(struct lx *x, struct addr_set *s, const struct ynode *fn)
{
	struct source *src;
	char *path, err[256];
	int r;

	if (!lx_is(x, fn, YNODE_SCALAR, "a set file name"))
		return;
	if (!(path = lx_path(x, fn->str)))
		return;
	r = lx_read_file(x->files, path, false, &x->p->sources, &src, err, sizeof(err));
	if (r < 0) {
		diag_error(x->d, fn->loc, "cannot read set file '%s': %s", path, err);
		free(path);
		return;
	}
	free(path);
	for (unsigned line = 1, off = 0; off < src->len; line++) {
		char *text = src->text + off, *nl = memchr(text, '\n', src->len - off);
		size_t len = nl ? (size_t)(nl - text) : src->len - off;
		size_t start = strspn(text, " \t");
		char word[2 * INET6_ADDRSTRLEN + 8];
		size_t wlen;

		off += (unsigned)len + 1;
		if (start >= len || text[start] == '#' || text[start] == ';' || text[start] == '\r')
			continue;
		wlen = strcspn(text + start, " \t\r\n#;");
		if (wlen >= sizeof(word) || start + wlen > len) {
			diag_error(x->d, ((struct loc){ src, line, (unsigned)start + 1, 0 }),
				   "line too long for a prefix");
			continue;
		}
		memcpy(word, text + start, wlen);
		word[wlen] = '\0';
		{
			size_t rest = start + wlen + strspn(text + start + wlen, " \t\r");

			if (rest < len && text[rest] != '#' && text[rest] != ';') {
				diag_error(x->d,
					   ((struct loc){ src, line, (unsigned)rest + 1,
							  (unsigned)strcspn(text + rest, " \t\r\n") }),
					   "one prefix per line: '%.*s' follows '%s' (start a comment with '#' or ';')",
					   (int)strcspn(text + rest, " \t\r\n"), text + rest, word);
				continue;
			}
		}
		if (x->p->nprefixes > POLICY_MAX_PREFIXES)
			return; /* over the limit: said once */
		lx_addresses(x, word, (struct loc){ src, line, (unsigned)start + 1, (unsigned)wlen }, set_add, s);
	}
}

/* never-ban: addresses and sets (not dynamic ones, not negated) that the
 * daemon never bans by itself (policy.h) and `nfbox set add` bans only with
 * --force; of a dynamic set (one that bans), or of every one (options). */
static void load_never_ban(struct lx *x, const struct ynode *n, const char *what, struct addr_match *m)
{
	lx_addr_match(x, n, what, m);
	lx_no_negation(x, n, m->neg, what);
	if (m->any)
		diag_error(x->d, n->loc,
			   "%s: 'any' would leave nothing to ban" DIAG_FIX
			   "; list the addresses and sets that must never be "
			   "banned",
			   what);
	lx_no_dynamic(x, n, m, what);
}

static void load_set_never_ban(struct lx *x, struct addr_set *s, const struct ynode *n)
{
	if (!s->dynamic || policy_set_fed_by(s)) {
		diag_error(
			x->d, n->loc,
			"never-ban is for a set that bans (dynamic: true, or Suricata's eve:): set '%s' is filled %s%s",
			s->name, policy_set_fed_by(s) ? "from " : "in the policy",
			policy_set_fed_by(s) ? policy_set_fed_by(s) : "");
		return;
	}
	load_never_ban(x, n, "never-ban", &s->never_ban);
}

/* shared: true, a dynamic set whose entries every node of a fleet holds
 * (kept in etcd): of the sets filled at run time, those of `nfbox set`,
 * limits and Suricata, not those each node fills from its own database or
 * resolver. */
static void load_set_shared(struct lx *x, struct addr_set *s, const struct ynode *v)
{
	const struct ynode *sh = ynode_get(v, "shared");

	if (!sh || !lx_bool(x, sh, "shared", &s->shared) || !s->shared)
		return;
	if (policy_set_fed_by(s))
		diag_error(x->d, sh->loc,
			   "set '%s' is filled on each node from %s: it cannot be shared (drop 'shared:')", s->name,
			   policy_set_fed_by(s));
	else if (!s->dynamic)
		diag_error(x->d, sh->loc,
			   "only a dynamic set is shared by a fleet" DIAG_FIX
			   ": add 'dynamic: true' (its entries then come "
			   "from nfbox set, limits or Suricata) or drop 'shared:'");
}

void load_sets(struct lx *x, const struct ynode *n)
{
	static const char *const file_keys[] = { "file",      "dynamic", "country", "database", "hosts",   "min-ttl",
						 "max-ttl",   "grace",	 "eve",	    "severity", "timeout", "shared",
						 "never-ban", "url",	 "refresh", "ca",	NULL };
	uint32_t ndyn = 0;

	if (!n || !lx_is(x, n, YNODE_MAP, "sets"))
		return;
	for (size_t i = 0; i < ynode_map_len(n); i++) {
		const struct ynode *k = ynode_map_key(n, i), *v = ynode_map_val(n, i);
		struct addr_set *s;

		if (!check_name(x, k, "set") || reserved_name(x, k, "set") || lx_find_set(x, k->str))
			continue; /* a duplicate key was reported by the parser */
		s = LX_APPEND(x, x->p->sets, x->p->nsets);
		if (!s || !(s->name = strdup(k->str)) || lx_index_add(&x->sets, s->name, x->p->nsets - 1) < 0) {
			x->oom = true;
			return;
		}
		s->loc = k->loc;
		if (v->type == YNODE_MAP) {
			const struct ynode *fn = ynode_get(v, "file"), *dn = ynode_get(v, "dynamic");

			lx_check_keys(x, v, file_keys, "a set");
			if (load_set_feed(x, s, v)) {
				if (++ndyn == POLICY_MAX_DYNSETS + 1)
					diag_error(x->d, v->loc, "more than %d dynamic sets", POLICY_MAX_DYNSETS);
				load_set_shared(x, s, v);
				continue;
			}
			bool ok = !dn || lx_bool(x, dn, "dynamic", &s->dynamic);

			if (s->dynamic) {
				s->families = POLICY_FAM_ANY;
				if (++ndyn == POLICY_MAX_DYNSETS + 1)
					diag_error(x->d, dn->loc, "more than %d dynamic sets", POLICY_MAX_DYNSETS);
				if (fn || ynode_has(v, "file"))
					diag_error(x->d, fn ? fn->loc : v->loc,
						   "a dynamic set gets its entries at run time" DIAG_FIX
						   ": drop 'file:' and load "
						   "the file with 'nfbox set add %s --file PATH'",
						   s->name);
			} else if (ok && !fn && !ynode_has(v, "file")) {
				diag_error(x->d, v->loc,
					   "set '%s' %s: it must be a list of prefixes, { file: PATH }, { dynamic: "
					   "true }, { country: [CC], database: PATH } or { hosts: [NAME] } (an empty "
					   "set is "
					   "written '%s: []')",
					   s->name,
					   dn ? "is not dynamic and names no file" : "names neither a file nor dynamic",
					   s->name);
			} else if (fn) {
				set_load_file(x, s, fn);
			}
			load_set_shared(x, s, v);
		} else if (!ynode_is_null(v)) { /* "blocked:" with nothing: an empty set */
			lx_each_scalar(x, v, "a set", set_add_node, s);
		}
	}
	/* never-ban names other sets: once all are known */
	for (size_t i = 0; i < ynode_map_len(n); i++) {
		const struct ynode *v = ynode_map_val(n, i);
		struct addr_set *s = lx_find_set(x, ynode_map_key(n, i)->str);

		/* (a set named twice is an error of its own; its first holds) */
		if (s && s->loc.line == ynode_map_key(n, i)->loc.line && s->loc.col == ynode_map_key(n, i)->loc.col &&
		    v->type == YNODE_MAP && ynode_get(v, "never-ban"))
			load_set_never_ban(x, s, ynode_get(v, "never-ban"));
	}
}

static void service_add_range(struct lx *x, const struct port_range *pr, void *arg)
{
	struct service *s = arg;

	if (s->n == POLICY_MAX_SERVICE_ENTRIES) {
		if (!s->full)
			diag_error(x->d, pr->loc, "service '%s' has more than %d entries", s->name,
				   POLICY_MAX_SERVICE_ENTRIES);
		s->full = true;
		return;
	}
	if (!LX_APPEND(x, s->v, s->n))
		return;
	s->v[s->n - 1] = *pr;
}

static void service_add_node(struct lx *x, const struct ynode *n, void *arg)
{
	struct service *s = arg;

	if (!s->cont_proto && !strchr(n->str, '/') && n->str[0] >= '0' && n->str[0] <= '9')
		lx_bare_port(x, n);
	else
		lx_port_list(x, n, &s->cont_proto, service_add_range, arg);
}

void load_services(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_MAP, "services"))
		return;
	for (size_t i = 0; i < ynode_map_len(n); i++) {
		const struct ynode *k = ynode_map_key(n, i), *v = ynode_map_val(n, i);
		struct service *s;

		if (!check_name(x, k, "service") || reserved_name(x, k, "service") || lx_find_service(x, k->str))
			continue; /* a duplicate key was reported by the parser */
		s = LX_APPEND(x, x->p->services, x->p->nservices);
		if (!s || !(s->name = strdup(k->str)) || lx_index_add(&x->services, s->name, x->p->nservices - 1) < 0) {
			x->oom = true;
			return;
		}
		s->loc = k->loc;
		lx_each_scalar(x, v, "a service", service_add_node, s);
	}
}

void load_hooks(struct lx *x, const struct ynode *n)
{
	static const char *const keys[] = { "default", NULL };
	static const char *const actions[] = { "drop", "accept", NULL };

	if (!n || !lx_is(x, n, YNODE_MAP, "hooks"))
		return;
	for (size_t i = 0; i < ynode_map_len(n); i++) {
		const struct ynode *k = ynode_map_key(n, i), *v = ynode_map_val(n, i), *def;
		int h = lx_choice(x, k, "hook", policy_hook_names), a;

		if (h >= 0 && (v->broken || (!ynode_get(v, "default") && ynode_has(v, "default")))) {
			/* Reported where it broke; declared, so that rules naming
			 * the hook say nothing more about it. */
			x->p->hooks[h] = (struct hook_conf){ .present = true, .def = POLICY_DROP, .loc = k->loc };
			continue;
		}
		if (h < 0 || !lx_is(x, v, YNODE_MAP, "a hook"))
			continue;
		lx_check_keys(x, v, keys, "a hook");
		def = ynode_get(v, "default");
		if (!def) {
			diag_error(x->d, v->loc,
				   "hook '%s' needs a default verdict" DIAG_FIX
				   ": { default: drop } or { default: accept }",
				   k->str);
			x->p->hooks[h] = (struct hook_conf){ .present = true, .def = POLICY_DROP, .loc = k->loc };
			continue;
		}
		if (def->type == YNODE_SCALAR && !strcmp(def->str, "reject")) {
			diag_error(
				x->d, def->loc,
				"a hook's default is drop or accept, not reject; write 'default: drop' and, to answer "
				"what no rule accepts, end the rules with '- { name: refuse, hook: %s, action: "
				"reject }'",
				k->str);
			a = POLICY_DROP;
		} else if ((a = lx_choice(x, def, "a default verdict", actions)) < 0) {
			a = POLICY_DROP;
		}
		/* declared even when its default is wrong: the rules that name
		 * the hook say nothing more about it */
		x->p->hooks[h] = (struct hook_conf){ .present = true, .def = (enum policy_action)a, .loc = k->loc };
	}
}

void load_options(struct lx *x, const struct ynode *n)
{
	static const char *const keys[] = { "defrag",	   "established", "log-rate",  "log-burst",
					    "reject-rate", "backend",	  "never-ban", NULL };
	static const char *const est[] = { "accept", "rules", NULL };
	static const char *const backends[] = { "bpf", "nftables", NULL };
	const struct ynode *v;
	uint64_t burst;

	if (!n || !lx_is(x, n, YNODE_MAP, "options"))
		return;
	lx_check_keys(x, n, keys, "options");
	if ((v = ynode_get(n, "defrag")) && lx_bool(x, v, "options.defrag", &x->p->opt.defrag))
		x->p->opt.defrag_loc = v->loc;
	if ((v = ynode_get(n, "established"))) {
		int e = lx_choice(x, v, "options.established", est);

		if (e >= 0) {
			x->p->opt.established_accept = e == 0;
			x->p->opt.established_loc = v->loc;
		}
	}
	if ((v = ynode_get(n, "log-rate")) && lx_is(x, v, YNODE_SCALAR, "options.log-rate")) {
		const char *why;

		if (parse_rate(v->str, &x->p->opt.log_rate, &why) < 0)
			diag_error(x->d, v->loc, "options.log-rate '%s': %s", v->str, why);
		x->p->opt.log_burst = x->p->opt.log_rate.n;
	}
	if ((v = ynode_get(n, "log-burst")) && lx_uint(x, v, "options.log-burst", 1, 1000000, &burst))
		x->p->opt.log_burst = (uint32_t)burst;
	if ((v = ynode_get(n, "reject-rate")) && lx_is(x, v, YNODE_SCALAR, "options.reject-rate")) {
		const char *why;

		if (parse_rate(v->str, &x->p->opt.reject_rate, &why) < 0)
			diag_error(x->d, v->loc, "options.reject-rate '%s': %s", v->str, why);
	}
	if ((v = ynode_get(n, "never-ban")))
		load_never_ban(x, v, "options.never-ban", &x->p->opt.never_ban);
	if ((v = ynode_get(n, "backend"))) {
		int b = lx_choice(x, v, "options.backend", backends);

		if (b >= 0) {
			x->p->opt.backend = (enum policy_backend)b;
			x->p->opt.backend_loc = v->loc;
		}
	}
}
