/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counter slots: a rule keeps its slot (hook + name) across reloads, so its
 * counters go on; a new rule gets a zeroed free slot. */
#ifndef NFBOX_SLOTS_H
#define NFBOX_SLOTS_H

#include <stdio.h>

#include "backend/bpf/engine/engine.h"

struct slot_table {
	char **name;	/* by slot: "HOOK:RULE", NULL if free */
	uint32_t *hash; /* open addressing over slots, slot + 1 */
	uint32_t hcap;
	uint32_t tombs;	    /* released entries still in hash: past hcap / 4 it is built anew */
	uint32_t next_free; /* lowest slot that may be free */
};

#define SLOT_DEFAULT(h)	 (NFB_CNT_FIRST_RULE + (h))
#define SLOT_ESTABLISHED (NFB_CNT_FIRST_RULE + NFB_HOOK_MAX)
#define SLOT_FIRST_RULE	 (NFB_CNT_FIRST_RULE + NFB_HOOK_MAX + 1)

int slots_init(struct slot_table *t);
void slots_free(struct slot_table *t);

/* Fill m with slots for every rule of pl, reusing those of rules that keep
 * their hook and name; new slots are zeroed in the engine. Slots of rules
 * gone from pl are released by slots_commit(); slots_abort() undoes a
 * failed assignment. */
int slots_assign(struct slot_table *t, struct engine *e, const struct plan *pl, struct slot_map *m);
void slots_commit(struct slot_table *t, const struct slot_map *keep, const struct plan *pl);
void slots_abort(struct slot_table *t, const struct slot_map *prev, const struct plan *prev_pl);
void slot_map_free(struct slot_map *m);
/* The table as text ("SLOT HOOK:RULE" lines) to f, and back: a daemon that
 * adopts pinned state gives each rule the slot (and so the counters) it had.
 * slots_load: 0, or -EINVAL for a malformed or clashing line (t is then as
 * empty as after slots_init). */
void slots_save(const struct slot_table *t, FILE *f);
int slots_load(struct slot_table *t, FILE *f);
/* "RULE" part of a slot's name, and its hook; NULL if the slot is unused. */
const char *slots_rule_name(const struct slot_table *t, uint32_t slot, int *hook);

#endif
