/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Policy loader and validator: YAML tree -> struct policy. Every check
 * reports through diags with the node's place and keeps going, so that one
 * run shows every mistake. This file is the entry point: it reads the
 * file, loads each section (load.h), runs the whole-policy checks
 * (policy/check/) and frees a policy.
 */
#include <errno.h>
#include <stdio.h>
#include <libgen.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "policy/check/check.h"
#include "policy/load/load.h"
#include "policy/schedule/tz.h"
#include "policy/yaml/ytree.h"

static const char *const top_keys[] = { "version", "interfaces", "sets",    "services", "hooks", "options",
					"rules",   "nat",	 "capture", "ha",	NULL };

static void load_version(struct lx *x, const struct ynode *root)
{
	const struct ynode *v = ynode_get(root, "version");
	uint64_t n;

	if (!v) {
		if (!ynode_has(root, "version"))
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

/* A section; an empty one ("rules:" with nothing after it, or ~) is as if
 * it were left out, as an operator commenting out its last entry expects. */
static const struct ynode *section(const struct ynode *root, const char *key)
{
	const struct ynode *v = ynode_get(root, key);

	return v && ynode_is_null(v) ? NULL : v;
}

/* The key of a section, for messages about the section as a whole. */
static const struct ynode *key_of(const struct ynode *root, const char *key)
{
	for (size_t i = 0; i < ynode_map_len(root); i++)
		if (!strcmp(ynode_map_key(root, i)->str, key))
			return ynode_map_key(root, i);
	return root;
}

static void load_all(struct lx *x, const struct ynode *root)
{
	if (!lx_is(x, root, YNODE_MAP, "the policy"))
		return;
	lx_check_keys(x, root, top_keys, "the policy");
	load_version(x, root);
	/* Definitions first, whatever their order in the file: rules refer to them. */
	load_interfaces(x, section(root, "interfaces"));
	load_sets(x, section(root, "sets"));
	load_services(x, section(root, "services"));
	load_hooks(x, section(root, "hooks"));
	load_options(x, section(root, "options"));
	load_rules(x, section(root, "rules"));
	load_nat(x, section(root, "nat"));
	load_captures(x, section(root, "capture"));
	load_ha(x, section(root, "ha"), key_of(root, "ha"));
	check_defrag_off(x->p, x->d);
	if (!x->p->hooks[0].present && !x->p->hooks[1].present && !x->p->hooks[2].present && x->p->nrules)
		diag_error(x->d, root->loc,
			   "the policy has rules but no hooks" DIAG_FIX
			   "; add e.g. 'hooks: { forward: { default: drop } }'");
	/* Both checks would only echo the errors above (a misspelt set is
	 * "unused", a rule with a bad field "covers" others). */
	if (x->d->errors == x->errors0) {
		check_unused(x->p, x->d);
		check_shadowed(x->p, x->d);
		check_nat(x->p, x->d);
		check_empty_feeds(x->p, x->d);
		check_early(x->p, x->d);
		check_synproxy(x->p, x->d);
		if (x->files && x->files->forwarding)
			check_forwarding(x->p, x->files->forwarding(x->files->arg), x->d);
	}
}

/* The policy in src, which own holds: on success the policy takes own
 * (its places point into it), else own is freed. */
static int load_from_source(const struct source *src, struct sources *own, const struct policy_files *files,
			    struct diags *d, struct policy **out)
{
	size_t errors = d->errors;
	struct policy *p;
	struct ytree t;
	char *dup;
	struct lx x;

	if (ytree_parse(&t, src, d) < 0) {
		ytree_free(&t);
		sources_free(own);
		return -EINVAL;
	}
	if (!t.root) {
		diag_error(d, (struct loc){ .src = src, .line = 1, .col = 1 },
			   "the policy is empty" DIAG_FIX "; it needs at least 'version: 1'");
		ytree_free(&t);
		sources_free(own);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	dup = strdup(src->name);
	if (!p || !dup) {
		free(p);
		free(dup);
		ytree_free(&t);
		sources_free(own);
		return -ENOMEM;
	}
	p->sources = *own; /* set files join them */
	own->head = NULL;
	p->src = src;
	p->opt.defrag = true;
	p->opt.established_accept = true;
	p->opt.log_rate = (struct policy_rate){ 100, 1 };
	p->opt.log_burst = 100;
	p->opt.reject_rate = (struct policy_rate){ 100, 1 };
	x = (struct lx){ .p = p, .d = d, .src = src, .dir = dirname(dup), .files = files, .errors0 = errors };
	load_all(&x, t.root);
	if (x.oom)
		diag_errno(d, -ENOMEM, "cannot load %s", src->name);
	lx_index_free(&x.groups);
	lx_index_free(&x.sets);
	lx_index_free(&x.services);
	free(dup);
	ytree_free(&t);
	if (d->errors > errors) {
		policy_free(p);
		return x.oom ? -ENOMEM : -EINVAL;
	}
	*out = p;
	return 0;
}

int policy_load_files(const char *path, const struct policy_files *files, struct diags *d, struct policy **out)
{
	struct sources own = { 0 };
	struct source *src = NULL;
	char why[256];
	int r = lx_read_file(files, path, true, &own, &src, why, sizeof(why));

	if (r < 0) {
		struct source named = { .name = (char *)path, .text = "" };

		diag_error(d, (struct loc){ .src = &named }, "cannot read the policy: %s", why);
		return r;
	}
	return load_from_source(src, &own, files, d, out);
}

int policy_load(const char *path, struct diags *d, struct policy **out)
{
	return policy_load_files(path, NULL, d, out);
}

int policy_load_buffer(const char *name, const char *text, size_t len, struct diags *d, struct policy **out)
{
	struct sources own = { 0 };
	struct source *src = sources_add(&own, name, text, len);

	if (!src)
		return -ENOMEM;
	return load_from_source(src, &own, NULL, d, out);
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
	sources_free(&p->sources);
	for (uint32_t i = 0; i < p->ngroups; i++) {
		free(p->groups[i].name);
		free(p->groups[i].ifnames);
	}
	for (uint32_t i = 0; i < p->nsets; i++) {
		free(p->sets[i].name);
		free(p->sets[i].v);
		free(p->sets[i].countries);
		free(p->sets[i].database);
		free(p->sets[i].eve);
		free(p->sets[i].url);
		free(p->sets[i].ca);
		for (uint32_t k = 0; k < p->sets[i].nhosts; k++)
			free(p->sets[i].hosts[k]);
		free(p->sets[i].hosts);
		free_addr_match(&p->sets[i].never_ban);
	}
	free_addr_match(&p->opt.never_ban);
	for (uint32_t i = 0; i < p->nservices; i++) {
		free(p->services[i].name);
		free(p->services[i].v);
	}
	for (uint32_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];

		free(r->name);
		free(r->comment);
		free(r->limit.overload);
		free(r->icmp_types);
		free_iface_match(&r->in);
		free_iface_match(&r->out);
		free_addr_match(&r->from);
		free_addr_match(&r->to);
		free_port_match(&r->service);
		free_port_match(&r->sport);
		for (uint32_t k = 0; k < r->when.n; k++)
			tz_free(r->when.v[k].zone);
		free(r->when.v);
	}
	for (uint32_t i = 0; i < p->nnat; i++) {
		free_iface_match(&p->nat[i].in);
		free_iface_match(&p->nat[i].out);
		free_port_match(&p->nat[i].service);
		free_addr_match(&p->nat[i].from);
		free_addr_match(&p->nat[i].dest);
		free(p->nat[i].vips);
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
	free(p->ha.virt);
	free(p);
}
