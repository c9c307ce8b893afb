/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The report trees' series in the Prometheus text exposition format 0.0.4
 * (tree.h: struct rep_metric says which values are series, and how). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/tree_int.h"

/* The values that are series, in the trees' order. */
struct series {
	const struct rep **v;
	size_t n, cap;
};

static void collect(const struct rep *v, struct series *s)
{
	if (v->metric && v->kind != REP_OBJECT && v->kind != REP_LIST && v->kind != REP_STRING) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			const struct rep **nv = realloc(s->v, cap * sizeof(*nv));

			if (!nv)
				return; /* (the series that fit are written) */
			s->v = nv;
			s->cap = cap;
		}
		s->v[s->n++] = v;
	}
	for (const struct rep *c = v->first; c; c = c->next)
		collect(c, s);
}

static size_t family_len(const struct rep_metric *m)
{
	return strcspn(m->name, "{");
}

static bool same_family(const struct rep_metric *a, const struct rep_metric *b)
{
	size_t n = family_len(a);

	return n == family_len(b) && !strncmp(a->name, b->name, n);
}

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (; v && *v; v++) {
		if (*v == '\n') {
			fputs("\\n", f);
			continue;
		}
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		fputc(*v, f);
	}
	fputc('"', f);
}

/* The string named key in the nearest object around v that has one. */
static const char *around(const struct rep *v, const char *key)
{
	for (const struct rep *o = v->parent; o; o = o->parent) {
		const struct rep *c = rep_get(o, key);

		if (c && c->kind == REP_STRING)
			return c->s;
	}
	return "";
}

/* One label token of m->labels ("hook", "daemon=.", "counter=key",
 * "name=other") for the value v. */
static void label(FILE *f, const struct rep *v, const char *tok, size_t len, bool *first)
{
	char name[64], from[64];
	const char *eq = memchr(tok, '=', len), *val;
	size_t nl = eq ? (size_t)(eq - tok) : len;

	if (nl >= sizeof(name) || (eq && len - nl - 1 >= sizeof(from)))
		return;
	memcpy(name, tok, nl);
	name[nl] = '\0';
	if (eq) {
		memcpy(from, eq + 1, len - nl - 1);
		from[len - nl - 1] = '\0';
	} else {
		strcpy(from, name);
	}
	if (!strcmp(from, "."))
		val = v->parent && v->parent->key ? v->parent->key : "";
	else if (!strcmp(from, "key"))
		val = v->key ? v->key : "";
	else
		val = around(v, from);
	fprintf(f, "%s%s=", *first ? "" : ",", name);
	label_value(f, val);
	*first = false;
}

static void series(FILE *f, const struct rep *v)
{
	const struct rep_metric *m = v->metric;
	size_t fl = family_len(m);
	const char *fixed = m->name[fl] == '{' ? m->name + fl + 1 : NULL;
	bool first = true;

	fwrite(m->name, 1, fl, f);
	if (m->labels && *m->labels) {
		fputc('{', f);
		for (const char *p = m->labels; *p;) {
			size_t len = strcspn(p, " ");

			if (len)
				label(f, v, p, len, &first);
			p += len;
			p += strspn(p, " ");
		}
	}
	if (fixed) /* "direction=\"sent\"}" */
		fprintf(f, "%s%s", first ? "{" : ",", fixed);
	else if (!first)
		fputc('}', f);
	switch (v->kind) {
	case REP_INT:
		fprintf(f, " %lld\n", (long long)v->i);
		break;
	case REP_MS:
		fprintf(f, " %lld.%03lld\n", (long long)(v->i / 1000), (long long)(v->i % 1000));
		break;
	default: /* REP_UINT, REP_BOOL; null: 0 */
		fprintf(f, " %llu\n", v->kind == REP_NULL ? 0ULL : (unsigned long long)v->u);
		break;
	}
}

void rep_write_metrics(const struct rep *const *roots, unsigned n, FILE *f)
{
	const struct rep_metric **fam = NULL;
	struct series s = { 0 };
	size_t nfam = 0;
	uint16_t *of = NULL; /* each series' family */

	for (unsigned i = 0; i < n; i++)
		if (roots[i])
			collect(roots[i], &s);
	if (s.n && (!(of = calloc(s.n, sizeof(*of))) || !(fam = calloc(s.n, sizeof(*fam)))))
		s.n = 0;
	for (size_t i = 0; i < s.n; i++) {
		size_t k = 0;

		while (k < nfam && !same_family(fam[k], s.v[i]->metric))
			k++;
		if (k == nfam)
			fam[nfam++] = s.v[i]->metric;
		of[i] = (uint16_t)k;
	}
	for (size_t k = 0; k < nfam; k++) {
		int len = (int)family_len(fam[k]);

		fprintf(f, "# HELP %.*s %s\n# TYPE %.*s %s\n", len, fam[k]->name, fam[k]->help, len, fam[k]->name,
			fam[k]->type);
		for (size_t i = 0; i < s.n; i++)
			if (of[i] == k)
				series(f, s.v[i]);
	}
	free(fam);
	free(of);
	free(s.v);
}
