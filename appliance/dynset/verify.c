/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/sort.h"
#include "dynset/verify.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static int kentry_cmp(const void *a, const void *b)
{
	const struct dyn_kentry *x = a, *y = b;
	int c;

	if (x->set != y->set)
		return (uintptr_t)x->set < (uintptr_t)y->set ? -1 : 1;
	if ((c = x->fam - y->fam))
		return c;
	if ((c = memcmp(x->addr, y->addr, x->fam ? 16 : 4)))
		return c;
	return (int)x->plen - (int)y->plen;
}

struct verify {
	const struct dyn_kentry *k;
	bool *seen; /* k[i] matched a store entry */
	size_t nk;
	int64_t now, margin;
	struct dyn_verdict *out;
	size_t cap;
};

static int add(struct verify *w, const struct dyn_set *set, enum dyn_repair_kind kind, int fam, const uint8_t *addr,
	       uint8_t plen, int64_t expires, int64_t kernel_expires)
{
	struct dyn_repair *r;

	if (w->out->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct dyn_repair *v = realloc(w->out->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->out->v = v;
		w->cap = cap;
	}
	r = &w->out->v[w->out->n++];
	memset(r, 0, sizeof(*r));
	r->set = set;
	r->kind = kind;
	r->c.pfx.family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
	r->c.pfx.plen = plen;
	memcpy(r->c.pfx.addr, addr, 16);
	r->c.expires = expires;
	r->c.src = "verify";
	r->kernel_expires = kernel_expires;
	return 0;
}

/* The kernel's expiry is the store's (plus the margin), within the tolerance. */
static bool expiry_agrees(int64_t store, int64_t kernel, int64_t margin)
{
	int64_t want = store ? store + margin : 0, diff = kernel - want;

	if (!want || !kernel)
		return !want && !kernel;
	return diff <= DYN_VERIFY_TOLERANCE_MS && diff >= -DYN_VERIFY_TOLERANCE_MS;
}

static int check_entry(struct verify *w, const struct dyn_set *set, int fam, const struct dyn_entry *e)
{
	struct dyn_kentry key = { .set = set, .fam = fam, .plen = e->plen };
	const struct dyn_kentry *hit = NULL;

	memcpy(key.addr, e->addr, 16);
	/* (an empty kernel set comes as NULL: search_n takes it) */
	if ((hit = search_n(&key, w->k, w->nk, sizeof(*w->k), kentry_cmp)))
		w->seen[hit - w->k] = true;
	if (e->expires && e->expires <= w->now + DYN_VERIFY_TOLERANCE_MS)
		return 0; /* the store lets it go within the tolerance */
	w->out->checked++;
	if (!hit)
		return add(w, set, DYN_REPAIR_MISSING, fam, e->addr, e->plen, e->expires, 0);
	if (!expiry_agrees(e->expires, hit->expires, w->margin))
		return add(w, set, DYN_REPAIR_EXPIRY, fam, e->addr, e->plen, e->expires, hit->expires);
	return 0;
}

/* A kernel entry no store entry matched. */
static int check_extra(struct verify *w, const struct dyn_kentry *k)
{
	if (!k->set) {
		w->out->orphans++;
		return 0;
	}
	if (w->margin && k->expires && k->expires <= w->now + w->margin + DYN_VERIFY_TOLERANCE_MS)
		return 0; /* the store let it go; the kernel does within its margin */
	return add(w, k->set, DYN_REPAIR_EXTRA, k->fam, k->addr, k->plen, 0, k->expires);
}

int dynset_verify(const struct dynsets *s, struct dyn_kentry *k, size_t n, int64_t now, int64_t margin,
		  struct dyn_verdict *out)
{
	_cleanup_free_ bool *seen = calloc(n ? n : 1, sizeof(*seen));
	struct dyn_verdict v = { 0 };
	struct verify w = { .k = k, .seen = seen, .nk = n, .now = now, .margin = margin, .out = &v };
	int r = 0;

	if (!seen)
		return -ENOMEM;
	sort_n(k, n, sizeof(*k), kentry_cmp);
	for (uint32_t i = 0; i < s->n && !r; i++)
		for (int fam = 0; fam < 2 && !r; fam++)
			for (uint32_t j = 0; j < s->sets[i].n[fam] && !r; j++)
				r = check_entry(&w, &s->sets[i], fam, &s->sets[i].v[fam][j]);
	for (size_t i = 0; i < n && !r; i++)
		if (!seen[i])
			r = check_extra(&w, &k[i]);
	if (r < 0) {
		dyn_verdict_free(&v);
		return r;
	}
	*out = v;
	return 0;
}

void dyn_verdict_free(struct dyn_verdict *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

const char *dyn_repair_why(enum dyn_repair_kind k)
{
	switch (k) {
	case DYN_REPAIR_MISSING:
		return "the kernel lacked it";
	case DYN_REPAIR_EXPIRY:
		return "the kernel held it with another expiry";
	case DYN_REPAIR_EXTRA:
		return "the kernel held it, the store does not";
	}
	return "?";
}
