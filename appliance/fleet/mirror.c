/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A node's mirror of the shared entries (mirror.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/mirror.h"
#include "lib/plant.h"

#define SLOT_EMPTY   UINT32_MAX
#define SLOT_DELETED (UINT32_MAX - 1)

/* ---- the indexes: open addressing, at most half full ---- */

struct want {
	const char *set, *key;
	const struct prefix *pfx;
};

static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 16777619u;
	return h;
}

static uint32_t entry_hash(const char *set, const struct prefix *pfx)
{
	uint32_t h = fnv(2166136261u, set, strlen(set));

	h = fnv(h, &pfx->family, 1);
	h = fnv(h, &pfx->plen, 1);
	return fnv(h, pfx->addr, 16);
}

static uint32_t key_hash(const char *key)
{
	return fnv(2166136261u, key, strlen(key));
}

static bool same_pfx(const struct prefix *a, const struct prefix *b)
{
	return a->family == b->family && a->plen == b->plen && !memcmp(a->addr, b->addr, 16);
}

static bool matches(const struct mirror *m, bool recs, uint32_t i, const struct want *w)
{
	if (recs)
		return !strcmp(m->recs[i].key, w->key);
	return same_pfx(&m->v[i].pfx, w->pfx) && !strcmp(m->v[i].set, w->set);
}

static uint32_t hash_of(const struct mirror *m, bool recs, uint32_t i)
{
	return recs ? key_hash(m->recs[i].key) : entry_hash(m->v[i].set, &m->v[i].pfx);
}

/* The slot that holds w, or the empty one where it would go (the first
 * deleted slot on the way, when free_slot). */
static uint32_t find_slot(const struct mirror *m, bool recs, uint32_t h, const struct want *w, bool free_slot)
{
	const struct mirror_index *x = recs ? &m->keys : &m->entries;
	uint32_t mask = x->nslot - 1, i = h & mask, first_free = SLOT_EMPTY;

	for (;; i = (i + 1) & mask) {
		uint32_t s = x->slot[i];

		if (s == SLOT_EMPTY)
			return free_slot && first_free != SLOT_EMPTY ? first_free : i;
		if (s == SLOT_DELETED) {
			if (first_free == SLOT_EMPTY)
				first_free = i;
		} else if (matches(m, recs, s, w)) {
			return i;
		}
	}
}

/* The slot of an item that is there (i: its index); SLOT_EMPTY if no slot
 * says so (a bug: only the plant makes one). */
static uint32_t slot_of(const struct mirror *m, bool recs, uint32_t i)
{
	const struct mirror_index *x = recs ? &m->keys : &m->entries;
	uint32_t mask = x->nslot - 1, k = hash_of(m, recs, i) & mask;

	for (uint32_t n = 0; n < x->nslot; n++, k = (k + 1) & mask)
		if (x->slot[k] == i)
			return k;
	return SLOT_EMPTY;
}

/* The slots made again for n live items, at most half full. */
static int rehash(struct mirror *m, bool recs, uint32_t n)
{
	struct mirror_index *x = recs ? &m->keys : &m->entries;
	uint32_t nslot = 64, total = recs ? m->nrecs : m->n;
	uint32_t *slot;

	while (nslot < 2 * n + 2)
		nslot *= 2;
	if (!(slot = malloc(nslot * sizeof(*slot))))
		return -ENOMEM;
	memset(slot, 0xff, nslot * sizeof(*slot));
	free(x->slot);
	x->slot = slot;
	x->nslot = nslot;
	x->used = 0;
	for (uint32_t k = 0; k < total; k++) {
		uint32_t i;

		if (recs && !m->recs[k].key)
			continue;
		for (i = hash_of(m, recs, k) & (nslot - 1); slot[i] != SLOT_EMPTY; i = (i + 1) & (nslot - 1))
			;
		slot[i] = k;
		x->used++;
	}
	return 0;
}

/* The index's room for one more (a slot found after this stays good). */
static int room(struct mirror *m, bool recs)
{
	struct mirror_index *x = recs ? &m->keys : &m->entries;

	return 2 * (x->used + 1) > x->nslot ? rehash(m, recs, (recs ? m->live : m->n) + 1) : 0;
}

/* ---- entries ---- */

static uint32_t entry_index(const struct mirror *m, const char *set, const struct prefix *pfx)
{
	struct want w = { .set = set, .pfx = pfx };
	uint32_t s;

	if (!m->entries.nslot)
		return SLOT_EMPTY;
	s = m->entries.slot[find_slot(m, false, entry_hash(set, pfx), &w, false)];
	return s < SLOT_DELETED ? s : SLOT_EMPTY;
}

const struct mirror_entry *mirror_get(const struct mirror *m, const char *set, const struct prefix *pfx)
{
	uint32_t i = entry_index(m, set, pfx);

	return i == SLOT_EMPTY ? NULL : &m->v[i];
}

static int entry_new(struct mirror *m, const char *set, const struct prefix *pfx, uint32_t *out)
{
	struct want w = { .set = set, .pfx = pfx };
	struct mirror_entry *e;
	uint32_t i;

	if (room(m, false) < 0)
		return -ENOMEM;
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 256;
		struct mirror_entry *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	i = find_slot(m, false, entry_hash(set, pfx), &w, true);
	if (m->entries.slot[i] == SLOT_EMPTY)
		m->entries.used++;
	e = &m->v[m->n];
	memset(e, 0, sizeof(*e));
	snprintf(e->set, sizeof(e->set), "%s", set);
	e->pfx = *pfx;
	m->entries.slot[i] = m->n;
	*out = m->n++;
	return 0;
}

/* Entry k gone: the last takes its place in v, and its slot says so. */
static void entry_drop(struct mirror *m, uint32_t k)
{
	uint32_t last = m->n - 1;

	uint32_t s = slot_of(m, false, k);

	if (s != SLOT_EMPTY)
		m->entries.slot[s] = SLOT_DELETED;
	free(m->v[k].src);
	if (k != last) {
		s = slot_of(m, false, last);
		m->v[k] = m->v[last];
		/* the positive control: the slot still says last */
		if (s != SLOT_EMPTY && !planted("mirror-moved-slot"))
			m->entries.slot[s] = k;
	}
	m->n--;
}

/* Whether a lasts longer than b (0: no end). */
static bool longer(int64_t a, int64_t b)
{
	return b && (!a || a > b);
}

/* The entry's longest source in force (nsrc > 0). */
static void entry_settle(struct mirror_entry *e)
{
	e->expires = e->src[0].expires;
	e->rec = e->src[0].rec;
	for (uint32_t i = 1; i < e->nsrc; i++)
		if (longer(e->src[i].expires, e->expires)) {
			e->expires = e->src[i].expires;
			e->rec = e->src[i].rec;
		}
}

bool mirror_outlives(const struct mirror *m, const char *set, const struct prefix *pfx, int64_t expires)
{
	const struct mirror_entry *e = mirror_get(m, set, pfx);

	return e && longer(e->expires, expires);
}

/* ---- records ---- */

static uint32_t rec_index(const struct mirror *m, const char *key)
{
	struct want w = { .key = key };
	uint32_t s;

	if (!m->keys.nslot)
		return SLOT_EMPTY;
	s = m->keys.slot[find_slot(m, true, key_hash(key), &w, false)];
	return s < SLOT_DELETED ? s : SLOT_EMPTY;
}

const struct mirror_rec *mirror_rec_get(const struct mirror *m, const char *key)
{
	uint32_t i = rec_index(m, key);

	return i == SLOT_EMPTY ? NULL : &m->recs[i];
}

static int rec_new(struct mirror *m, const char *key, uint32_t *out)
{
	struct want w = { .key = key };
	uint32_t i, k;

	if (room(m, true) < 0)
		return -ENOMEM;
	if (m->nfree) {
		k = m->free[--m->nfree];
	} else {
		k = m->nrecs;
		if (m->nrecs == m->caprecs) {
			uint32_t cap = m->caprecs ? 2 * m->caprecs : 64;
			struct mirror_rec *v = realloc(m->recs, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			m->recs = v;
			m->caprecs = cap;
		}
		m->nrecs++;
	}
	memset(&m->recs[k], 0, sizeof(m->recs[k]));
	if (!(m->recs[k].key = strdup(key)))
		return -ENOMEM;
	i = find_slot(m, true, key_hash(key), &w, true);
	if (m->keys.slot[i] == SLOT_EMPTY)
		m->keys.used++;
	m->keys.slot[i] = k;
	m->live++;
	*out = k;
	return 0;
}

static void rec_drop(struct mirror *m, uint32_t k)
{
	m->keys.slot[slot_of(m, true, k)] = SLOT_DELETED;
	free(m->recs[k].key);
	free(m->recs[k].items);
	memset(&m->recs[k], 0, sizeof(m->recs[k]));
	m->live--;
	if (m->nfree == m->capfree) {
		uint32_t cap = m->capfree ? 2 * m->capfree : 64;
		uint32_t *v = realloc(m->free, cap * sizeof(*v));

		if (!v)
			return; /* the place is not used again */
		m->free = v;
		m->capfree = cap;
	}
	m->free[m->nfree++] = k;
}

/* ---- a record's change ---- */

/* An entry a change touched, as it was before. */
struct touched {
	struct prefix pfx;
	bool present;
	int64_t expires;
	uint32_t rec;
};

struct change {
	struct touched *v;
	uint32_t n, cap;
};

/* The entry's state before this change, once (m->step marks it seen). */
static int touch(struct mirror *m, struct change *c, const char *set, const struct prefix *pfx)
{
	uint32_t i = entry_index(m, set, pfx);

	/* (one absent is made by source_add next, seen then) */
	if (i != SLOT_EMPTY && m->v[i].seen == m->step)
		return 0;
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 16;
		struct touched *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct touched){ .pfx = *pfx,
					 .present = i != SLOT_EMPTY,
					 .expires = i != SLOT_EMPTY ? m->v[i].expires : 0,
					 .rec = i != SLOT_EMPTY ? m->v[i].rec : 0 };
	if (i != SLOT_EMPTY)
		m->v[i].seen = m->step;
	return 0;
}

/* Record r's part in the entry taken out (every time it holds it). */
static void source_del(struct mirror *m, const char *set, const struct prefix *pfx, uint32_t r)
{
	uint32_t i = entry_index(m, set, pfx), k = 0;
	struct mirror_entry *e;

	if (i == SLOT_EMPTY)
		return;
	e = &m->v[i];
	for (uint32_t j = 0; j < e->nsrc; j++)
		if (e->src[j].rec != r)
			e->src[k++] = e->src[j];
	e->nsrc = k;
}

static int source_add(struct mirror *m, const char *set, const struct mirror_item *it, uint32_t r)
{
	uint32_t i = entry_index(m, set, &it->pfx);
	struct mirror_entry *e;
	struct mirror_src *s;
	int err;

	if (i == SLOT_EMPTY) {
		if ((err = entry_new(m, set, &it->pfx, &i)) < 0)
			return err;
		m->v[i].seen = m->step;
	}
	e = &m->v[i];
	for (uint32_t j = 0; j < e->nsrc; j++)
		if (e->src[j].rec == r) { /* the record names it twice: the longer */
			if (longer(it->expires, e->src[j].expires))
				e->src[j].expires = it->expires;
			return 0;
		}
	if (!(s = realloc(e->src, (e->nsrc + 1) * sizeof(*s))))
		return -ENOMEM;
	e->src = s;
	e->src[e->nsrc++] = (struct mirror_src){ .rec = r, .expires = it->expires };
	return 0;
}

/* Each touched entry settled, or dropped without a record. */
static void settle(struct mirror *m, const struct change *c, const char *set)
{
	for (uint32_t k = 0; k < c->n; k++) {
		const struct touched *t = &c->v[k];
		uint32_t i = entry_index(m, set, &t->pfx);
		struct mirror_entry *e = i == SLOT_EMPTY ? NULL : &m->v[i];

		if (e && !e->nsrc) {
			entry_drop(m, i);
			e = NULL;
		}
		if (e)
			entry_settle(e);
	}
}

int mirror_record(struct mirror *m, const char *key, const char *set, const char *by, const struct mirror_item *items,
		  uint32_t n, mirror_fn fn, void *arg)
{
	struct change c = { 0 };
	uint32_t r = rec_index(m, key);
	struct mirror_item *copy = NULL;
	char was[MIRROR_BY_MAX];
	int err = 0;

	m->step++;
	if (n && !(copy = malloc(n * sizeof(*copy))))
		return -ENOMEM;
	if (n)
		memcpy(copy, items, n * sizeof(*copy));
	if (r == SLOT_EMPTY && !n)
		return 0;
	if (r == SLOT_EMPTY && (err = rec_new(m, key, &r)) < 0) {
		free(copy);
		return err;
	}
	snprintf(m->recs[r].set, sizeof(m->recs[r].set), "%s", set);
	memcpy(was, m->recs[r].by, sizeof(was));
	snprintf(m->recs[r].by, sizeof(m->recs[r].by), "%s", by ? by : "");
	for (uint32_t k = 0; k < m->recs[r].n; k++) {
		if (touch(m, &c, set, &m->recs[r].items[k].pfx) < 0)
			err = -ENOMEM;
		source_del(m, set, &m->recs[r].items[k].pfx, r);
	}
	for (uint32_t k = 0; k < n; k++)
		if (touch(m, &c, set, &items[k].pfx) < 0 || source_add(m, set, &items[k], r) < 0)
			err = -ENOMEM;
	settle(m, &c, set);
	if (fn) { /* told after every entry settled; one gone, with who had it */
		for (uint32_t k = 0; k < c.n; k++) {
			const struct touched *t = &c.v[k];
			const struct mirror_entry *e = mirror_get(m, set, &t->pfx);

			if ((!e && !t->present) || (e && t->present && e->expires == t->expires))
				continue;
			fn(arg, set, &t->pfx, e != NULL, e ? e->expires : 0,
			   e		 ? m->recs[e->rec].by
			   : t->rec == r ? was
					 : m->recs[t->rec].by);
		}
	}
	free(c.v);
	free(m->recs[r].items);
	m->recs[r].items = copy;
	m->recs[r].n = n;
	if (!n)
		rec_drop(m, r);
	return err;
}

void mirror_clear(struct mirror *m)
{
	for (uint32_t k = 0; k < m->n; k++)
		free(m->v[k].src);
	for (uint32_t k = 0; k < m->nrecs; k++) {
		free(m->recs[k].key);
		free(m->recs[k].items);
	}
	m->n = 0;
	m->nrecs = 0;
	m->nfree = 0;
	m->live = 0;
	m->entries.used = 0;
	m->keys.used = 0;
	if (m->entries.slot)
		memset(m->entries.slot, 0xff, m->entries.nslot * sizeof(*m->entries.slot));
	if (m->keys.slot)
		memset(m->keys.slot, 0xff, m->keys.nslot * sizeof(*m->keys.slot));
}

void mirror_free(struct mirror *m)
{
	mirror_clear(m);
	free(m->v);
	free(m->recs);
	free(m->free);
	free(m->entries.slot);
	free(m->keys.slot);
	memset(m, 0, sizeof(*m));
}
