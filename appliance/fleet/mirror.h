/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fleet node's mirror of the shared entries etcd holds (fleet/part.c):
 * by set and prefix, found by hash, so that a group of 10,000 entries
 * costs a node 10,000 steps to read whole, not 50 million.
 */
#ifndef NFBOX_FLEET_MIRROR_H
#define NFBOX_FLEET_MIRROR_H

#include <stdint.h>

#include "policy/policy.h"

struct mirror_entry {
	char set[POLICY_MAX_NAME + 1];
	struct prefix pfx;
	int64_t expires;
};

struct mirror {
	struct mirror_entry *v; /* the entries, in no order */
	uint32_t n, cap;
	uint32_t *slot;	      /* open addressing: an index into v, or empty, or a deleted one */
	uint32_t nslot, used; /* used: slots not empty (entries and deleted ones) */
};

/* An entry added, or the one of its set and prefix replaced: 0 or -ENOMEM. */
int mirror_put(struct mirror *m, const struct mirror_entry *e);
/* The entry of e's set and prefix gone, if there is one. */
void mirror_del(struct mirror *m, const struct mirror_entry *e);
/* The entry of e's set and prefix, or NULL. */
const struct mirror_entry *mirror_get(const struct mirror *m, const struct mirror_entry *e);
void mirror_clear(struct mirror *m);
void mirror_free(struct mirror *m);

#endif
