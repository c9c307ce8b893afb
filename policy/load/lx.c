/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Typed reads of YAML nodes for the loader: each reports a located error
 * and returns false (or -1) when the node is not what the key needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/load/lx.h"
#include "policy/syntax/parse.h"

void *lx_grow(void *v, uint32_t n, size_t size)
{
	/* Grow by doubling whenever n reaches a power of two (n is the count
	 * before the append). */
	if (n && (n & (n - 1)))
		return v;
	return realloc(v, (n ? 2 * (size_t)n : 4) * size);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

uint32_t lx_index_find(const struct lx_index *ix, const char *name)
{
	if (!ix->cap)
		return UINT32_MAX;
	for (uint64_t i = name_hash(name) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		if (!ix->v[i].name)
			return UINT32_MAX;
		if (!strcmp(ix->v[i].name, name))
			return ix->v[i].idx;
	}
}

int lx_index_add(struct lx_index *ix, const char *name, uint32_t idx)
{
	uint64_t i;

	if (2 * (ix->n + 1) > ix->cap) {
		struct lx_index bigger = { .cap = ix->cap ? 2 * ix->cap : 64 };

		if (!(bigger.v = calloc(bigger.cap, sizeof(*bigger.v))))
			return -1;
		for (uint32_t k = 0; k < ix->cap; k++)
			if (ix->v[k].name)
				lx_index_add(&bigger, ix->v[k].name, ix->v[k].idx);
		free(ix->v);
		*ix = bigger;
	}
	for (i = name_hash(name) & (ix->cap - 1); ix->v[i].name; i = (i + 1) & (ix->cap - 1))
		;
	ix->v[i] = (struct lx_index_ent){ name, idx };
	ix->n++;
	return 0;
}

void lx_index_free(struct lx_index *ix)
{
	free(ix->v);
	memset(ix, 0, sizeof(*ix));
}

bool lx_is(struct lx *x, const struct ynode *n, enum ynode_type type, const char *what)
{
	static const char *const article[] = { "a scalar", "a list", "a mapping" };

	if (n->type == type && !n->broken)
		return true;
	if (n->broken) /* reported where it broke */
		return false;
	diag_error(x->d, n->loc, "%s must be %s, not %s", what, article[type],
		   n->type == YNODE_SCALAR ? "a scalar"
		   : n->type == YNODE_SEQ  ? "a list"
					   : "a mapping");
	return false;
}

/* Unknown keys, with the closest valid one as a suggestion. */
void lx_check_keys(struct lx *x, const struct ynode *map, const char *const *allowed, const char *where)
{
	lx_check_keys_hinted(x, map, allowed, where, NULL);
}

/* Key i of map is a port: YAML ended the value before it at a comma
 * ("{ service: tcp/80,443 }"). Said as what happened, with the quoted
 * value that was meant. */
static void comma_split(struct lx *x, const struct ynode *map, size_t i, const char *where)
{
	const struct ynode *k = ynode_map_key(map, i), *pk = i ? ynode_map_key(map, i - 1) : NULL,
			   *pv = i ? ynode_map_val(map, i - 1) : NULL;

	if (pv && pv->type == YNODE_SCALAR && !pv->quoted && strchr(pv->str, '/'))
		diag_error(x->d, k->loc,
			   "unknown key '%s' in %s: inside { } a comma ends a value, so YAML ended %s: at '%s' and "
			   "took '%s' for a key" DIAG_FIX "; quote the list: %s: \"%s,%s\"",
			   k->str, where, pk->str, pv->str, k->str, pk->str, pv->str, k->str);
	else
		diag_error(x->d, k->loc,
			   "unknown key '%s' in %s: inside { } a comma ends a value, so a list of ports there must be "
			   "quoted (\"tcp/80,%s\")",
			   k->str, where, k->str);
}

/* Other tools' words for nfbox's keys, in order: the first whose key the
 * mapping allows is suggested (dst: a NAT entry's destination:, a rule's to:). */
static const struct lx_alias key_aliases[] = {
	{ "src", "from" },
	{ "source", "from" },
	{ "saddr", "from" },
	{ "dst", "destination" },
	{ "dst", "to" },
	{ "dest", "destination" },
	{ "dest", "to" },
	{ "daddr", "destination" },
	{ "daddr", "to" },
	{ "destination", "to" },
	{ "dport", "service" },
	{ "dports", "service" },
	{ "port", "service" },
	{ "ports", "service" },
	{ "sport", "source-service" },
	{ "sports", "source-service" },
	{ "iif", "in" },
	{ "iifname", "in" },
	{ "oif", "out" },
	{ "oifname", "out" },
	{ "protocol", "proto" },
	{ NULL, NULL },
};

static bool listed(const char *word, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(word, list[i]))
			return true;
	return false;
}

/* The key of allowed that another tool's word stands for, or NULL. */
static const char *key_alias(const char *word, const char *const *allowed)
{
	for (size_t i = 0; key_aliases[i].word; i++)
		if (!strcmp(word, key_aliases[i].word) && listed(key_aliases[i].meant, allowed))
			return key_aliases[i].meant;
	return NULL;
}

void lx_check_keys_hinted(struct lx *x, const struct ynode *map, const char *const *allowed, const char *where,
			  const struct lx_key_hint *hints)
{
	for (size_t i = 0; i < ynode_map_len(map); i++) {
		const struct ynode *k = ynode_map_key(map, i);
		const char *near;
		bool ok = k->broken || listed(k->str, allowed); /* broken: an unknown alias, reported where it stands */

		for (size_t j = 0; !ok && hints && hints[j].key; j++) {
			if (strcmp(k->str, hints[j].key))
				continue;
			diag_error(x->d, k->loc, "%s", hints[j].hint);
			ok = true;
		}
		if (ok)
			continue;
		if (!(near = key_alias(k->str, allowed)))
			near = diag_closest(k->str, allowed);
		if (k->str[0] && strspn(k->str, "0123456789-") == strlen(k->str))
			comma_split(x, map, i, where);
		else if (near)
			diag_error(x->d, k->loc, "unknown key '%s' in %s" DIAG_FIX "; did you mean '%s'?", k->str,
				   where, near);
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

bool lx_uint(struct lx *x, const struct ynode *n, const char *what, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *why = NULL;

	if (!lx_is(x, n, YNODE_SCALAR, what))
		return false;
	if (parse_uint(n->str, max, out, &why) < 0 || *out < min) {
		diag_error(x->d, n->loc, "%s must be a number %llu..%llu, not '%s'", what, (unsigned long long)min,
			   (unsigned long long)max, n->str);
		return false;
	}
	return true;
}

/* One of the words in choices; returns its index or -1 after reporting. */
int lx_choice(struct lx *x, const struct ynode *n, const char *what, const char *const *choices)
{
	return lx_choice_aliased(x, n, what, choices, NULL);
}

int lx_choice_aliased(struct lx *x, const struct ynode *n, const char *what, const char *const *choices,
		      const struct lx_alias *aliases)
{
	const char *near = NULL;
	size_t len = 0;
	char list[256] = "";

	if (!lx_is(x, n, YNODE_SCALAR, what))
		return -1;
	for (int i = 0; choices[i]; i++)
		if (strcmp(n->str, choices[i]) == 0)
			return i;
	for (int i = 0; choices[i] && len < sizeof(list) - 32; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", choices[i]);
	for (size_t i = 0; aliases && aliases[i].word && !near; i++)
		if (!strcmp(n->str, aliases[i].word))
			near = aliases[i].meant;
	if (!near)
		near = diag_closest(n->str, choices);
	if (near)
		diag_error(x->d, n->loc, "%s '%s' is not valid" DIAG_FIX "; did you mean '%s'? (one of: %s)", what,
			   n->str, near, list);
	else
		diag_error(x->d, n->loc, "%s '%s' is not valid" DIAG_FIX "; use one of: %s", what, n->str, list);
	return -1;
}

/* Walk a scalar-or-list node: fn is called for each scalar. */
void lx_each_scalar(struct lx *x, const struct ynode *n, const char *what,
		    void (*fn)(struct lx *, const struct ynode *, void *), void *arg)
{
	if (n->type == YNODE_SCALAR) {
		if (!n->broken)
			fn(x, n, arg);
		return;
	}
	if (!lx_is(x, n, YNODE_SEQ, what))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		if (lx_is(x, n->kids[i], YNODE_SCALAR, what))
			fn(x, n->kids[i], arg);
}

struct loc lx_loc_in(const struct ynode *n, size_t off)
{
	struct loc l = n->loc;

	/* Only where the text stands as written on one line: a plain scalar,
	 * or a quoted one without escapes ("\x", or '' in single quotes; its
	 * quote comes first). */
	l.len = 0; /* one caret, at the character */
	if (n->type != YNODE_SCALAR || off > n->len || strchr(n->str, '\\') || strchr(n->str, '\n') ||
	    (n->quoted && strchr(n->str, '\'')))
		return l;
	l.col += (unsigned)off + (n->quoted ? 1 : 0);
	return l;
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

char *lx_path(struct lx *x, const char *name)
{
	char *path;

	if (name[0] == '/')
		path = strdup(name);
	else if (asprintf(&path, "%s/%s", x->dir, name) < 0)
		path = NULL;
	x->oom |= !path;
	return path;
}
