/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The report tree: made, read back, freed (tree.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/tree_int.h"

struct rep *rep_root(void)
{
	struct rep *r = calloc(1, sizeof(*r));

	if (r)
		r->kind = REP_OBJECT;
	return r;
}

static struct rep *root_of(struct rep *v)
{
	while (v->parent)
		v = v->parent;
	return v;
}

void rep_free(struct rep *v)
{
	struct rep *c, *next;

	if (!v)
		return;
	for (c = v->first; c; c = next) {
		next = c->next;
		rep_free(c);
	}
	free(v->key);
	if (v->kind == REP_STRING)
		free(v->s);
	free(v);
}

int rep_failed(const struct rep *root)
{
	return !root || root->oom ? -ENOMEM : 0;
}

static struct rep *add(struct rep *in, const char *key, enum rep_kind kind)
{
	struct rep *v;

	if (!in)
		return NULL;
	if (!(v = calloc(1, sizeof(*v))) || (key && in->kind == REP_OBJECT && !(v->key = strdup(key)))) {
		free(v);
		root_of(in)->oom = true;
		return NULL;
	}
	v->kind = kind;
	v->parent = in;
	if (in->last)
		in->last->next = v;
	else
		in->first = v;
	in->last = v;
	in->n++;
	return v;
}

struct rep *rep_object(struct rep *in, const char *key)
{
	return add(in, key, REP_OBJECT);
}

struct rep *rep_list(struct rep *in, const char *key)
{
	return add(in, key, REP_LIST);
}

struct rep *rep_str(struct rep *in, const char *key, const char *s)
{
	struct rep *v = add(in, key, s ? REP_STRING : REP_NULL);

	if (v && s && !(v->s = strdup(s))) {
		v->kind = REP_NULL;
		root_of(in)->oom = true;
	}
	return v;
}

struct rep *rep_strf(struct rep *in, const char *key, const char *fmt, ...)
{
	struct rep *v;
	char *s = NULL;
	va_list ap;
	int n;

	if (!in)
		return NULL;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		root_of(in)->oom = true;
		return NULL;
	}
	if ((v = add(in, key, REP_STRING)))
		v->s = s;
	else
		free(s);
	return v;
}

struct rep *rep_bool(struct rep *in, const char *key, bool b)
{
	struct rep *v = add(in, key, REP_BOOL);

	if (v)
		v->u = b;
	return v;
}

struct rep *rep_int(struct rep *in, const char *key, int64_t i)
{
	struct rep *v = add(in, key, REP_INT);

	if (v)
		v->i = i;
	return v;
}

struct rep *rep_uint(struct rep *in, const char *key, uint64_t u)
{
	struct rep *v = add(in, key, REP_UINT);

	if (v)
		v->u = u;
	return v;
}

struct rep *rep_ms(struct rep *in, const char *key, int64_t ms)
{
	struct rep *v = add(in, key, REP_MS);

	if (v)
		v->i = ms;
	return v;
}

struct rep *rep_null(struct rep *in, const char *key)
{
	return add(in, key, REP_NULL);
}

struct rep *rep_metric(struct rep *v, const struct rep_metric *m)
{
	if (v)
		v->metric = m;
	return v;
}

struct rep *rep_hidden(struct rep *v)
{
	if (v)
		v->hidden = true;
	return v;
}

void rep_text(struct rep *o, rep_text_fn *fn)
{
	if (o)
		o->text = fn;
}

/* ---- reading ---- */

const struct rep *rep_get(const struct rep *o, const char *key)
{
	for (const struct rep *c = o ? o->first : NULL; c; c = c->next)
		if (c->key && !strcmp(c->key, key))
			return c;
	return NULL;
}

struct rep *rep_at(struct rep *o, const char *key)
{
	for (struct rep *c = o ? o->first : NULL; c; c = c->next)
		if (c->key && !strcmp(c->key, key))
			return c;
	return NULL;
}

const char *rep_string(const struct rep *v)
{
	return v && v->kind == REP_STRING ? v->s : "";
}

uint64_t rep_value_u(const struct rep *v)
{
	if (!v)
		return 0;
	switch (v->kind) {
	case REP_UINT:
	case REP_BOOL:
		return v->u;
	case REP_INT:
	case REP_MS:
		return v->i < 0 ? 0 : (uint64_t)v->i;
	default:
		return 0;
	}
}

int64_t rep_value_i(const struct rep *v)
{
	if (!v)
		return 0;
	switch (v->kind) {
	case REP_INT:
	case REP_MS:
		return v->i;
	case REP_UINT:
	case REP_BOOL:
		return (int64_t)v->u;
	default:
		return 0;
	}
}

const char *rep_s(const struct rep *o, const char *key)
{
	return rep_string(rep_get(o, key));
}

uint64_t rep_u(const struct rep *o, const char *key)
{
	return rep_value_u(rep_get(o, key));
}

int64_t rep_i(const struct rep *o, const char *key)
{
	return rep_value_i(rep_get(o, key));
}

bool rep_b(const struct rep *o, const char *key)
{
	return rep_value_u(rep_get(o, key)) != 0;
}

bool rep_has(const struct rep *o, const char *key)
{
	const struct rep *v = rep_get(o, key);

	return v && v->kind != REP_NULL;
}

const struct rep *rep_first(const struct rep *o)
{
	return o ? o->first : NULL;
}

const struct rep *rep_next(const struct rep *v)
{
	return v ? v->next : NULL;
}

const struct rep *rep_parent(const struct rep *v)
{
	return v ? v->parent : NULL;
}

const char *rep_key(const struct rep *v)
{
	return v && v->key ? v->key : "";
}

enum rep_kind rep_kind(const struct rep *v)
{
	return v ? v->kind : REP_NULL;
}

uint32_t rep_count(const struct rep *o)
{
	return o ? o->n : 0;
}
