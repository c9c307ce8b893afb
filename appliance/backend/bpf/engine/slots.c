/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "backend/bpf/engine/slots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

int slots_init(struct slot_table *t)
{
	memset(t, 0, sizeof(*t));
	t->name = calloc(NFB_MAX_COUNTERS, sizeof(*t->name));
	t->hcap = 1u << 18; /* > 2 generations of 3 hooks x 65,536 rules */
	while (t->hcap < 2 * (NFB_MAX_COUNTERS))
		t->hcap <<= 1;
	t->hash = calloc(t->hcap, sizeof(*t->hash));
	t->next_free = SLOT_FIRST_RULE;
	if (!t->name || !t->hash) {
		slots_free(t);
		return -ENOMEM;
	}
	return 0;
}

void slots_free(struct slot_table *t)
{
	if (t->name)
		for (uint32_t i = 0; i < NFB_MAX_COUNTERS; i++)
			free(t->name[i]);
	free(t->name);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

static uint32_t *find(struct slot_table *t, const char *key)
{
	uint32_t i = str_hash(key) & (t->hcap - 1);

	for (; t->hash[i]; i = (i + 1) & (t->hcap - 1))
		if (t->hash[i] != UINT32_MAX && !strcmp(t->name[t->hash[i] - 1], key))
			return &t->hash[i];
	return &t->hash[i];
}

static int take_free(struct slot_table *t, const char *key, uint32_t *slot)
{
	uint32_t *h;

	while (t->next_free < NFB_MAX_COUNTERS && t->name[t->next_free])
		t->next_free++;
	if (t->next_free >= NFB_MAX_COUNTERS)
		return -ENOSPC;
	*slot = t->next_free++;
	if (!(t->name[*slot] = strdup(key)))
		return -ENOMEM;
	h = find(t, key);
	*h = *slot + 1;
	return 0;
}

/* The hash without its tombstones. A lookup stops only at an empty
 * entry, and a new name takes the first empty one, so tombstones are never
 * reused: without this, every name a daemon ever saw (rules renamed on each
 * reload) would use up an entry for good, until lookups never ended. */
static void rehash(struct slot_table *t)
{
	memset(t->hash, 0, t->hcap * sizeof(*t->hash));
	for (uint32_t s = 0; s < NFB_MAX_COUNTERS; s++)
		if (t->name[s])
			*find(t, t->name[s]) = s + 1;
	t->tombs = 0;
}

static void release(struct slot_table *t, uint32_t slot)
{
	uint32_t *h;

	if (!t->name[slot])
		return;
	h = find(t, t->name[slot]);
	if (*h) {
		*h = UINT32_MAX; /* tombstone */
		t->tombs++;
	}
	free(t->name[slot]);
	t->name[slot] = NULL;
	if (slot < t->next_free)
		t->next_free = slot;
	if (t->tombs > t->hcap / 4)
		rehash(t);
}

void slot_map_free(struct slot_map *m)
{
	free(m->set_id);
	m->set_id = NULL;
	m->nsets = 0;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		free(m->rule_slot[h]);
	memset(m, 0, sizeof(*m));
}

int slots_assign(struct slot_table *t, struct engine *e, const struct plan *pl, struct slot_map *m)
{
	char key[POLICY_MAX_NAME + 16];

	memset(m, 0, sizeof(*m));
	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		m->default_slot[h] = SLOT_DEFAULT(h);
		m->rule_slot[h] = calloc(pl->hook[h].nrules ? pl->hook[h].nrules : 1, sizeof(uint32_t));
		if (!m->rule_slot[h])
			return -ENOMEM;
	}
	m->established_slot = SLOT_ESTABLISHED;
	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (uint32_t b = 0; b < pl->hook[h].nrules; b++) {
			uint32_t *found;
			int r;

			snprintf(key, sizeof(key), "%d:%s", h, pl->hook[h].rules[b]->name);
			found = find(t, key);
			if (*found && *found != UINT32_MAX) {
				m->rule_slot[h][b] = *found - 1;
				continue;
			}
			if ((r = take_free(t, key, &m->rule_slot[h][b])) < 0)
				return r;
			if (e && (r = engine_counter_zero(e, m->rule_slot[h][b])) < 0)
				return r;
		}
	}
	return 0;
}

/* Release every named slot that `keep` does not use. */
void slots_commit(struct slot_table *t, const struct slot_map *keep, const struct plan *pl)
{
	char *used = calloc(NFB_MAX_COUNTERS, 1);

	if (!used)
		return;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (uint32_t b = 0; b < pl->hook[h].nrules; b++)
			used[keep->rule_slot[h][b]] = 1;
	for (uint32_t s = SLOT_FIRST_RULE; s < NFB_MAX_COUNTERS; s++)
		if (t->name[s] && !used[s])
			release(t, s);
	free(used);
}

void slots_abort(struct slot_table *t, const struct slot_map *prev, const struct plan *prev_pl)
{
	if (prev_pl)
		slots_commit(t, prev, prev_pl);
	else
		for (uint32_t s = SLOT_FIRST_RULE; s < NFB_MAX_COUNTERS; s++)
			release(t, s);
}

void slots_save(const struct slot_table *t, FILE *f)
{
	for (uint32_t s = SLOT_FIRST_RULE; s < NFB_MAX_COUNTERS; s++)
		if (t->name[s])
			fprintf(f, "%u %s\n", s, t->name[s]);
}

int slots_load(struct slot_table *t, FILE *f)
{
	char line[POLICY_MAX_NAME + 32];

	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' '), *nl = strchr(line, '\n'), *end;
		unsigned long s = strtoul(line, &end, 10);
		uint32_t *h;

		if (!sp || !nl || end != sp || s < SLOT_FIRST_RULE || s >= NFB_MAX_COUNTERS || t->name[s])
			goto bad;
		*nl = '\0';
		if (sp[1] < '0' || sp[1] >= '0' + NFB_HOOK_MAX || sp[2] != ':' || !sp[3])
			goto bad;
		h = find(t, sp + 1);
		if (*h && *h != UINT32_MAX)
			goto bad; /* a name twice */
		if (!(t->name[s] = strdup(sp + 1)))
			goto bad;
		*h = (uint32_t)s + 1;
	}
	t->next_free = SLOT_FIRST_RULE;
	return 0;
bad: /* the names already put into the table come out again */
	slots_abort(t, NULL, NULL);
	t->next_free = SLOT_FIRST_RULE;
	return -EINVAL;
}

const char *slots_rule_name(const struct slot_table *t, uint32_t slot, int *hook)
{
	const char *n;

	if (slot >= NFB_MAX_COUNTERS || !t->name[slot])
		return NULL;
	n = t->name[slot];
	*hook = n[0] - '0';
	return n + 2;
}
