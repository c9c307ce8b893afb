/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Policy loader and validator: YAML tree -> struct policy. Every check
 * reports through diags with the node's place and keeps going, so that one
 * run shows every mistake.
 */
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"
#include "policy/yaml/ytree.h"

void *lx_grow(void *v, uint32_t n, size_t size)
{
	/* Grow by doubling whenever n reaches a power of two (n is the count
	 * before the append). */
	if (n && (n & (n - 1)))
		return v;
	return realloc(v, (n ? 2 * (size_t)n : 4) * size);
}

bool lx_is(struct lx *x, const struct ynode *n, enum ynode_type type, const char *what)
{
	static const char *const article[] = { "a scalar", "a list", "a mapping" };

	if (n->type == type)
		return true;
	diag_error(x->d, n->loc, "%s must be %s, not %s", what, article[type],
		   n->type == YNODE_SCALAR ? "a scalar" : n->type == YNODE_SEQ ? "a list" : "a mapping");
	return false;
}

/* Unknown keys, with the closest valid one as a suggestion. */
void lx_check_keys(struct lx *x, const struct ynode *map, const char *const *allowed,
		   const char *where)
{
	for (size_t i = 0; i < ynode_map_len(map); i++) {
		const struct ynode *k = ynode_map_key(map, i);
		const char *near;
		bool ok = false;

		for (size_t j = 0; allowed[j]; j++)
			ok |= strcmp(k->str, allowed[j]) == 0;
		if (ok)
			continue;
		near = diag_closest(k->str, allowed);
		if (near)
			diag_error(x->d, k->loc, "unknown key '%s' in %s; did you mean '%s'?", k->str, where,
				   near);
		else
			diag_error(x->d, k->loc, "unknown key '%s' in %s", k->str, where);
	}
}

bool lx_bool(struct lx *x, const struct ynode *n, const char *what, bool *out)
{
	static const char *const t[] = { "true", "yes", "on", NULL };
	static const char *const f[] = { "false", "no", "off", NULL };

	if (!lx_is(x, n, YNODE_SCALAR, what))
		return false;
	for (size_t i = 0; !n->quoted && t[i]; i++) {
		if (strcmp(n->str, t[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcmp(n->str, f[i]) == 0) {
			*out = false;
			return true;
		}
	}
	diag_error(x->d, n->loc, "%s must be true or false, not '%s'", what, n->str);
	return false;
}

bool lx_uint(struct lx *x, const struct ynode *n, const char *what, uint64_t min, uint64_t max,
	     uint64_t *out)
{
	const char *why = NULL;

	if (!lx_is(x, n, YNODE_SCALAR, what))
		return false;
	if (parse_uint(n->str, max, out, &why) < 0 || *out < min) {
		diag_error(x->d, n->loc, "%s must be a number %llu..%llu, not '%s'", what,
			   (unsigned long long)min, (unsigned long long)max, n->str);
		return false;
	}
	return true;
}

/* One of the words in choices; returns its index or -1 after reporting. */
int lx_choice(struct lx *x, const struct ynode *n, const char *what, const char *const *choices)
{
	const char *near;
	size_t len = 0;
	char list[256] = "";

	if (!lx_is(x, n, YNODE_SCALAR, what))
		return -1;
	for (int i = 0; choices[i]; i++)
		if (strcmp(n->str, choices[i]) == 0)
			return i;
	for (int i = 0; choices[i] && len < sizeof(list) - 32; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", choices[i]);
	near = diag_closest(n->str, choices);
	if (near)
		diag_error(x->d, n->loc, "%s '%s' is not valid; did you mean '%s'? (one of: %s)", what,
			   n->str, near, list);
	else
		diag_error(x->d, n->loc, "%s '%s' is not valid; use one of: %s", what, n->str, list);
	return -1;
}

/* Walk a scalar-or-list node: fn is called for each scalar. */
void lx_each_scalar(struct lx *x, const struct ynode *n, const char *what,
		    void (*fn)(struct lx *, const struct ynode *, void *), void *arg)
{
	if (n->type == YNODE_SCALAR) {
		fn(x, n, arg);
		return;
	}
	if (!lx_is(x, n, YNODE_SEQ, what))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		if (lx_is(x, n->kids[i], YNODE_SCALAR, what))
			fn(x, n->kids[i], arg);
}

char *lx_describe(const struct ynode *n)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (n->type == YNODE_SCALAR)
		return strdup(n->str);
	f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	fputc('[', f);
	for (size_t i = 0; i < n->nkids; i++)
		fprintf(f, "%s%s", i ? ", " : "", n->kids[i]->type == YNODE_SCALAR ? n->kids[i]->str : "...");
	fputc(']', f);
	fclose(f);
	return out;
}

static const char *const top_keys[] = { "version", "interfaces", "sets", "services", "hooks",
					"options", "rules", "nat", "capture", NULL };

static void load_version(struct lx *x, const struct ynode *root)
{
	const struct ynode *v = ynode_get(root, "version");
	uint64_t n;

	if (!v) {
		diag_error(x->d, root->loc, "missing 'version: 1' at the top of the policy");
		return;
	}
	if (!lx_uint(x, v, "version", 0, 1000, &n))
		return;
	if (n != 1) {
		diag_error(x->d, v->loc, "unsupported policy version %llu; this nfbox reads version 1",
			   (unsigned long long)n);
		return;
	}
	x->p->version = 1;
}

static void load_all(struct lx *x, const struct ynode *root)
{
	if (!lx_is(x, root, YNODE_MAP, "the policy"))
		return;
	lx_check_keys(x, root, top_keys, "the policy");
	load_version(x, root);
	/* Definitions first, whatever their order in the file: rules refer to them. */
	load_interfaces(x, ynode_get(root, "interfaces"));
	load_sets(x, ynode_get(root, "sets"));
	load_services(x, ynode_get(root, "services"));
	load_hooks(x, ynode_get(root, "hooks"));
	load_options(x, ynode_get(root, "options"));
	load_rules(x, ynode_get(root, "rules"));
	load_nat(x, ynode_get(root, "nat"));
	load_captures(x, ynode_get(root, "capture"));
	check_defrag_off(x);
	if (!x->p->hooks[0].present && !x->p->hooks[1].present && !x->p->hooks[2].present &&
	    x->p->nrules)
		diag_error(x->d, root->loc, "the policy has rules but no hooks; add e.g. 'hooks: { forward: { default: drop } }'");
	/* Both checks would only echo the errors above (a misspelt set is
	 * "unused", a rule with a bad field "covers" others). */
	if (x->d->errors == x->errors0) {
		check_unused(x);
		check_shadowed(x);
	}
}

static int load_from_source(const struct source *src, struct diags *d, struct policy **out)
{
	size_t errors = d->errors;
	struct policy *p;
	struct ytree t;
	char *dup;
	struct lx x;

	if (ytree_parse(&t, src, d) < 0) {
		ytree_free(&t);
		return -EINVAL;
	}
	if (!t.root) {
		diag_error(d, (struct loc){ .src = src, .line = 1, .col = 1 },
			   "the policy is empty; it needs at least 'version: 1'");
		ytree_free(&t);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	dup = strdup(src->name);
	if (!p || !dup) {
		free(p);
		free(dup);
		ytree_free(&t);
		return -ENOMEM;
	}
	p->src = src;
	p->opt.defrag = true;
	p->opt.established_accept = true;
	p->opt.log_rate = 100;
	p->opt.log_burst = 100;
	x = (struct lx){ .p = p, .d = d, .src = src, .dir = dirname(dup), .errors0 = errors };
	load_all(&x, t.root);
	free(dup);
	ytree_free(&t);
	if (d->errors > errors) {
		policy_free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int policy_load(const char *path, struct diags *d, struct policy **out)
{
	struct source *src;
	int r = diags_load_source(d, path, &src);

	if (r < 0) {
		struct source *named = diags_add_source(d, path, "", 0);

		diag_error(d, (struct loc){ .src = named }, "cannot read the policy: %s", strerror(-r));
		return r;
	}
	return load_from_source(src, d, out);
}

int policy_load_buffer(const char *name, const char *text, size_t len, struct diags *d,
		       struct policy **out)
{
	struct source *src = diags_add_source(d, name, text, len);

	if (!src)
		return -ENOMEM;
	return load_from_source(src, d, out);
}

static void free_addr_match(struct addr_match *m)
{
	free(m->v);
	free(m->what);
}

static void free_iface_match(struct iface_match *m)
{
	free(m->ifnames);
	free(m->what);
}

static void free_port_match(struct port_match *m)
{
	free(m->v);
	free(m->what);
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->ngroups; i++) {
		free(p->groups[i].name);
		free(p->groups[i].ifnames);
	}
	for (uint32_t i = 0; i < p->nsets; i++) {
		free(p->sets[i].name);
		free(p->sets[i].v);
	}
	for (uint32_t i = 0; i < p->nservices; i++) {
		free(p->services[i].name);
		free(p->services[i].v);
	}
	for (uint32_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];

		free(r->name);
		free(r->comment);
		free_iface_match(&r->in);
		free_iface_match(&r->out);
		free_addr_match(&r->from);
		free_addr_match(&r->to);
		free_port_match(&r->service);
		free_port_match(&r->sport);
	}
	for (uint32_t i = 0; i < p->nnat; i++) {
		free_iface_match(&p->nat[i].in);
		free_iface_match(&p->nat[i].out);
		free_port_match(&p->nat[i].service);
	}
	for (uint32_t i = 0; i < p->ncaptures; i++) {
		struct capture_conf *c = &p->captures[i];

		free(c->name);
		free(c->file);
		free_addr_match(&c->match.from);
		free_addr_match(&c->match.to);
		free_port_match(&c->match.service);
	}
	free(p->groups);
	free(p->sets);
	free(p->services);
	free(p->rules);
	free(p->nat);
	free(p->captures);
	free(p);
}
