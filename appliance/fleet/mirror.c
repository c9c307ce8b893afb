/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A node's mirror of the shared entries (mirror.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/mirror.h"
#include "lib/plant.h"

#define SLOT_EMPTY   UINT32_MAX
#define SLOT_DELETED (UINT32_MAX - 1)

/* FNV-1a of the set's name and the prefix */
static uint32_t entry_hash(const struct mirror_entry *e)
{
	uint32_t h = 2166136261u;

	for (const char *c = e->set; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	h = (h ^ e->pfx.family) * 16777619u;
	h = (h ^ e->pfx.plen) * 16777619u;
	for (int i = 0; i < 16; i++)
		h = (h ^ e->pfx.addr[i]) * 16777619u;
	return h;
}

static bool same(const struct mirror_entry *a, const struct mirror_entry *b)
{
	return a->pfx.family == b->pfx.family && a->pfx.plen == b->pfx.plen && !memcmp(a->pfx.addr, b->pfx.addr, 16) &&
	       !strcmp(a->set, b->set);
}

/* The slot that holds e, or SLOT_EMPTY's place where it would go (the
 * first deleted slot on the way, when free_slot). */
static uint32_t find_slot(const struct mirror *m, const struct mirror_entry *e, bool free_slot)
{
	uint32_t mask = m->nslot - 1, i = entry_hash(e) & mask, first_free = SLOT_EMPTY;

	for (;; i = (i + 1) & mask) {
		uint32_t s = m->slot[i];

		if (s == SLOT_EMPTY)
			return free_slot && first_free != SLOT_EMPTY ? first_free : i;
		if (s == SLOT_DELETED) {
			if (first_free == SLOT_EMPTY)
				first_free = i;
		} else if (same(&m->v[s], e)) {
			return i;
		}
	}
}

/* The slots made again for n entries, at most half full. */
static int rehash(struct mirror *m, uint32_t n)
{
	uint32_t nslot = 64;
	uint32_t *slot;

	while (nslot < 2 * n + 2)
		nslot *= 2;
	if (!(slot = malloc(nslot * sizeof(*slot))))
		return -ENOMEM;
	memset(slot, 0xff, nslot * sizeof(*slot));
	free(m->slot);
	m->slot = slot;
	m->nslot = nslot;
	m->used = m->n;
	for (uint32_t k = 0; k < m->n; k++)
		m->slot[find_slot(m, &m->v[k], false)] = k;
	return 0;
}

const struct mirror_entry *mirror_get(const struct mirror *m, const struct mirror_entry *e)
{
	uint32_t i;

	if (!m->nslot)
		return NULL;
	i = find_slot(m, e, false);
	return m->slot[i] == SLOT_EMPTY ? NULL : &m->v[m->slot[i]];
}

int mirror_put(struct mirror *m, const struct mirror_entry *e)
{
	uint32_t i;

	if (2 * (m->used + 1) > m->nslot && rehash(m, m->n + 1) < 0)
		return -ENOMEM;
	i = find_slot(m, e, true);
	if (m->slot[i] < SLOT_DELETED) {
		m->v[m->slot[i]] = *e;
		return 0;
	}
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 256;
		struct mirror_entry *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	if (m->slot[i] == SLOT_EMPTY)
		m->used++;
	m->v[m->n] = *e;
	m->slot[i] = m->n++;
	return 0;
}

void mirror_del(struct mirror *m, const struct mirror_entry *e)
{
	uint32_t i, k, last;

	if (!m->nslot || m->slot[i = find_slot(m, e, false)] == SLOT_EMPTY)
		return;
	k = m->slot[i];
	m->slot[i] = SLOT_DELETED;
	last = --m->n;
	if (k != last) { /* the last entry takes k's place in v, and its slot says so */
		m->v[k] = m->v[last];
		if (!planted("mirror-moved-slot")) /* the positive control: the slot still says last */
			m->slot[find_slot(m, &m->v[k], false)] = k;
	}
}

void mirror_clear(struct mirror *m)
{
	m->n = 0;
	m->used = 0;
	if (m->slot)
		memset(m->slot, 0xff, m->nslot * sizeof(*m->slot));
}

void mirror_free(struct mirror *m)
{
	free(m->v);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}
