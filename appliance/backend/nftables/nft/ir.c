/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/sort.h"
#include "backend/nftables/nft/ir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nfr_init(struct nfr_table *t)
{
	memset(t, 0, sizeof(*t));
}

/* ---- indexes by name ---- */

typedef const char *(*name_fn)(const struct nfr_table *t, uint32_t i);

static const char *counter_name(const struct nfr_table *t, uint32_t i)
{
	return t->counters[i].name;
}

static const char *set_name(const struct nfr_table *t, uint32_t i)
{
	return t->sets[i]->name;
}

static const char *limit_name(const struct nfr_table *t, uint32_t i)
{
	return t->limits[i].name;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The entry of name in ix: its object's index + 1, or the empty entry
 * where it would go. */
static uint32_t *ix_slot(const struct nfr_table *t, const struct nfr_index *ix, name_fn fn, const char *name)
{
	uint32_t i = name_hash(name) & (ix->cap - 1);

	while (ix->v[i] && strcmp(fn(t, ix->v[i] - 1), name))
		i = (i + 1) & (ix->cap - 1);
	return &ix->v[i];
}

static uint32_t ix_find(const struct nfr_table *t, const struct nfr_index *ix, name_fn fn, const char *name)
{
	uint32_t *e;

	if (!ix->cap)
		return UINT32_MAX;
	e = ix_slot(t, ix, fn, name);
	return *e ? *e - 1 : UINT32_MAX;
}

/* Object i (called name) in ix, which grows to stay at most half full. */
static void ix_add(struct nfr_table *t, struct nfr_index *ix, name_fn fn, uint32_t i)
{
	if (t->err)
		return;
	if (2 * (ix->n + 1) > ix->cap) {
		struct nfr_index big = { .cap = ix->cap ? 2 * ix->cap : 64 };

		if (!(big.v = calloc(big.cap, sizeof(*big.v)))) {
			t->err = -ENOMEM;
			return;
		}
		for (uint32_t k = 0; k < ix->cap; k++)
			if (ix->v[k])
				*ix_slot(t, &big, fn, fn(t, ix->v[k] - 1)) = ix->v[k];
		big.n = ix->n;
		free(ix->v);
		*ix = big;
	}
	*ix_slot(t, ix, fn, fn(t, i)) = i + 1;
	ix->n++;
}

static void ix_free(struct nfr_index *ix)
{
	free(ix->v);
	memset(ix, 0, sizeof(*ix));
}

/* The named sets' index anew (their indexes moved). */
static void set_ix_rebuild(struct nfr_table *t)
{
	ix_free(&t->set_ix);
	for (uint32_t i = 0; i < t->nsets; i++)
		if (t->sets[i]->name[0])
			ix_add(t, &t->set_ix, set_name, i);
}

void nfr_free(struct nfr_table *t)
{
	ix_free(&t->counter_ix);
	ix_free(&t->set_ix);
	ix_free(&t->limit_ix);
	for (uint32_t i = 0; i < t->nsets; i++) {
		free(t->sets[i]->v);
		free(t->sets[i]);
	}
	for (uint32_t i = 0; i < t->nwhats; i++)
		free(t->whats[i]);
	free(t->whats);
	free(t->sets);
	free(t->chains);
	free(t->counters);
	free(t->limits);
	free(t->rules);
	memset(t, 0, sizeof(*t));
}

/* Room for one more element of size sz in *v (n used); false on failure. */
static bool grow(struct nfr_table *t, void **v, uint32_t n, size_t sz)
{
	void *nv;

	if (t->err)
		return false;
	if (n & (n - 1) || (n && n < 8))
		return true; /* capacity is the next power of two (at least 8) */
	if (!(nv = realloc(*v, (n ? 2 * (size_t)n : 8) * sz))) {
		t->err = -ENOMEM;
		return false;
	}
	*v = nv;
	return true;
}

uint32_t nfr_chain_add(struct nfr_table *t, const struct nfr_chain *c)
{
	if (!grow(t, (void **)&t->chains, t->nchains, sizeof(*c)))
		return 0;
	t->chains[t->nchains] = *c;
	return t->nchains++;
}

struct nfr_set *nfr_set_new(struct nfr_table *t, const char *name, enum nfr_key key, bool interval)
{
	struct nfr_set *s;

	if (!grow(t, (void **)&t->sets, t->nsets, sizeof(*t->sets)))
		return NULL;
	if (!(s = calloc(1, sizeof(*s)))) {
		t->err = -ENOMEM;
		return NULL;
	}
	snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
	s->id = t->nsets + 1;
	s->key = key;
	s->interval = interval;
	t->sets[t->nsets++] = s;
	if (s->name[0])
		ix_add(t, &t->set_ix, set_name, t->nsets - 1);
	return s;
}

void nfr_set_add(struct nfr_table *t, struct nfr_set *s, const uint8_t *lo, const uint8_t *hi)
{
	uint32_t len;
	struct nfr_elem *e;

	if (!s || t->err)
		return;
	len = nfr_key_len(s->key);
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 8;
		struct nfr_elem *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv) {
			t->err = -ENOMEM;
			return;
		}
		s->v = nv;
		s->cap = cap;
	}
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->lo, lo, len);
	memcpy(e->hi, hi ? hi : lo, len);
}

static uint32_t cmp_len;

static int elem_cmp(const void *a, const void *b)
{
	return memcmp(((const struct nfr_elem *)a)->lo, ((const struct nfr_elem *)b)->lo, cmp_len);
}

/* a + 1 == b, as big-endian numbers of len bytes. */
static bool adjacent(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	uint8_t n[16];
	int i;

	memcpy(n, a, len);
	for (i = (int)len - 1; i >= 0 && ++n[i] == 0; i--)
		;
	return i >= 0 && !memcmp(n, b, len);
}

/* lo..hi as a prefix if it is one: its length, else -1. */
int nfr_prefix_len(const uint8_t *lo, const uint8_t *hi, unsigned bits)
{
	unsigned n = 0;

	while (n < bits && ((lo[n / 8] ^ hi[n / 8]) & (0x80 >> (n % 8))) == 0)
		n++;
	for (unsigned i = n; i < bits; i++) {
		uint8_t m = (uint8_t)(0x80 >> (i % 8));

		if ((lo[i / 8] & m) || !(hi[i / 8] & m))
			return -1;
	}
	return (int)n;
}

void nfr_set_normalize(struct nfr_set *s)
{
	uint32_t len = nfr_key_len(s->key), out = 0;

	if (s->n < 2)
		return;
	cmp_len = len;
	sort_n(s->v, s->n, sizeof(*s->v), elem_cmp);
	if (!s->interval) { /* one element per key */
		for (uint32_t i = 1; i < s->n; i++)
			if (memcmp(s->v[i].lo, s->v[out].lo, len))
				s->v[++out] = s->v[i];
		s->n = out + 1;
		return;
	}
	/* Names and wildcards are nested or apart, so merging what overlaps
	 * leaves each element a name or a wildcard; adjacent ones ("a*",
	 * "b*") stay two, as nft could not write their union. */
	bool join_adjacent = s->key != NFR_KEY_IFNAME;

	for (uint32_t i = 1; i < s->n; i++) {
		struct nfr_elem *cur = &s->v[out];
		bool same = !s->objmap || s->v[i].chain == cur->chain;

		if (same &&
		    (memcmp(s->v[i].lo, cur->hi, len) <= 0 || (join_adjacent && adjacent(cur->hi, s->v[i].lo, len)))) {
			if (memcmp(s->v[i].hi, cur->hi, len) > 0)
				memcpy(cur->hi, s->v[i].hi, len);
			continue;
		}
		s->v[++out] = s->v[i];
	}
	s->n = out + 1;
}

void nfr_set_drop(struct nfr_table *t, struct nfr_set *s)
{
	bool named;

	if (!s || !t->nsets || t->sets[t->nsets - 1] != s)
		return;
	named = s->name[0];
	free(s->v);
	free(s);
	t->nsets--;
	if (named)
		set_ix_rebuild(t);
}

void nfr_drop_unbound(struct nfr_table *t)
{
	uint32_t out = 0;

	for (uint32_t i = 0; i < t->nsets; i++) {
		struct nfr_set *s = t->sets[i];

		if (!s->name[0] && !s->bound) {
			free(s->v);
			free(s);
			continue;
		}
		t->sets[out++] = s;
	}
	t->nsets = out;
	set_ix_rebuild(t);
}

const struct nfr_set *nfr_set_find(const struct nfr_table *t, const char *name)
{
	uint32_t i = ix_find(t, &t->set_ix, set_name, name);

	return i == UINT32_MAX ? NULL : t->sets[i];
}

void nfr_counter_add(struct nfr_table *t, const char *name, uint64_t packets, uint64_t bytes)
{
	if (!grow(t, (void **)&t->counters, t->ncounters, sizeof(*t->counters)))
		return;
	snprintf(t->counters[t->ncounters].name, NFR_NAME, "%s", name);
	t->counters[t->ncounters].packets = packets;
	t->counters[t->ncounters++].bytes = bytes;
	ix_add(t, &t->counter_ix, counter_name, t->ncounters - 1);
}

uint32_t nfr_counter_find(const struct nfr_table *t, const char *name)
{
	return ix_find(t, &t->counter_ix, counter_name, name);
}

void nfr_limit_add(struct nfr_table *t, const char *name, uint32_t rate, uint32_t per, uint32_t burst)
{
	if (!grow(t, (void **)&t->limits, t->nlimits, sizeof(*t->limits)))
		return;
	snprintf(t->limits[t->nlimits].name, NFR_NAME, "%s", name);
	t->limits[t->nlimits].rate = rate;
	t->limits[t->nlimits].per = per;
	t->limits[t->nlimits++].burst = burst;
	ix_add(t, &t->limit_ix, limit_name, t->nlimits - 1);
}

const struct nfr_limit *nfr_limit_find(const struct nfr_table *t, const char *name)
{
	uint32_t i = ix_find(t, &t->limit_ix, limit_name, name);

	return i == UINT32_MAX ? NULL : &t->limits[i];
}

static const struct nfr_set *bind_anon(struct nfr_table *t, const struct nfr_set *s)
{
	struct nfr_set *copy;

	if (!s || s->name[0])
		return s;
	if (!s->bound) {
		((struct nfr_set *)s)->bound = true; /* the table owns its sets */
		return s;
	}
	if (!(copy = nfr_set_new(t, NULL, s->key, s->interval)))
		return s;
	copy->objmap = s->objmap;
	copy->portmap = s->portmap;
	copy->map_family = s->map_family;
	memcpy(copy->map_addr, s->map_addr, sizeof(copy->map_addr));
	copy->bound = true;
	for (uint32_t i = 0; i < s->n && !t->err; i++) {
		nfr_set_add(t, copy, s->v[i].lo, s->v[i].hi);
		if (!t->err) {
			copy->v[copy->n - 1].chain = s->v[i].chain;
			copy->v[copy->n - 1].map_port = s->v[i].map_port;
		}
	}
	return copy;
}

struct nfr_match *nfr_match_add(struct nfr_rule *r, enum nfr_match_kind k)
{
	struct nfr_match *m = &r->m[r->nm < NFR_MAX_MATCH ? r->nm++ : NFR_MAX_MATCH];

	r->full |= m == &r->m[NFR_MAX_MATCH];
	memset(m, 0, sizeof(*m));
	m->kind = k;
	return m;
}

struct nfr_stmt *nfr_stmt_add(struct nfr_rule *r, enum nfr_stmt_kind k)
{
	struct nfr_stmt *s = &r->s[r->ns < NFR_MAX_STMT ? r->ns++ : NFR_MAX_STMT];

	r->full |= s == &r->s[NFR_MAX_STMT];
	memset(s, 0, sizeof(*s));
	s->kind = k;
	return s;
}

void nfr_rule_add(struct nfr_table *t, const struct nfr_rule *in, const char *what)
{
	struct nfr_rule r = *in;
	char *w = NULL;

	if (in->full && !t->err) {
		t->err = -E2BIG;
		t->err_loc = in->loc;
		snprintf(t->err_what, sizeof(t->err_what), "%s", what ? what : "a rule");
	}
	if (!grow(t, (void **)&t->rules, t->nrules, sizeof(r)) ||
	    !grow(t, (void **)&t->whats, t->nwhats, sizeof(*t->whats)))
		return;
	if (what && !(w = strdup(what))) {
		t->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < r.nm; i++)
		r.m[i].set = bind_anon(t, r.m[i].set);
	for (uint32_t i = 0; i < r.ns; i++)
		r.s[i].set = bind_anon(t, r.s[i].set);
	t->rules[t->nrules] = r;
	t->rules[t->nrules++].what = w;
	t->whats[t->nwhats++] = w;
}

uint32_t nfr_key_len(enum nfr_key k)
{
	switch (k) {
	case NFR_KEY_IFNAME:
		return 16;
	case NFR_KEY_IPV4:
		return 4;
	case NFR_KEY_IPV6:
		return 16;
	case NFR_KEY_PROTO_PORT:
		return 8;
	case NFR_KEY_NFPROTO:
		return 1;
	default:
		return 2;
	}
}
