/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fleet node's mirror of the shared entries etcd holds (fleet/part.c).
 * etcd holds them as records (fleet/pack.h): a key of one entry, or a pack
 * of a transaction's entries; an entry may be in more than one (a renewal
 * packed later than the entry it renews). The entry in force is the one
 * that lasts longest (no expiry: the longest); a writer that shortens an
 * entry, or deletes it, takes it out of the other records itself.
 *
 * Entries by set and prefix and records by key are found by hash, so that a
 * group of 10,000 entries costs a node 10,000 steps to read whole, not 50
 * million.
 */
#ifndef NFBOX_FLEET_MIRROR_H
#define NFBOX_FLEET_MIRROR_H

#include <stdbool.h>
#include <stdint.h>

#include "fleet/conf.h"
#include "policy/policy.h"

#define MIRROR_BY_MAX (FLEET_MAX_NAME + 8) /* "fleet:NODE" */

/* An entry as a record holds it. */
struct mirror_item {
	struct prefix pfx;
	int64_t expires; /* ms; 0: none */
};

/* A record that holds an entry, and the expiry it gives it. */
struct mirror_src {
	uint32_t rec;
	int64_t expires;
};

struct mirror_entry {
	char set[POLICY_MAX_NAME + 1];
	struct prefix pfx;
	int64_t expires; /* in force: the longest of its records' (0: none) */
	uint32_t rec;	 /* the record that gives it */
	struct mirror_src *src;
	uint32_t nsrc;
	uint32_t seen; /* the mirror's step that last touched it */
};

struct mirror_rec {
	char *key; /* NULL: a free place */
	char set[POLICY_MAX_NAME + 1];
	char by[MIRROR_BY_MAX];
	struct mirror_item *items;
	uint32_t n;
};

struct mirror_index {
	uint32_t *slot;	      /* open addressing: an index, or empty, or a deleted one */
	uint32_t nslot, used; /* used: slots not empty (live and deleted ones) */
};

struct mirror {
	struct mirror_entry *v; /* the entries in force, in no order */
	uint32_t n, cap;
	struct mirror_index entries;
	struct mirror_rec *recs;       /* the records, each at a place that does not move */
	uint32_t nrecs, caprecs, live; /* nrecs: places used so far; live: records */
	uint32_t *free;		       /* places free again */
	uint32_t nfree, capfree;
	struct mirror_index keys;
	uint32_t step;
};

/* Told of an entry whose presence or expiry changed (present false: gone). */
typedef void (*mirror_fn)(void *arg, const char *set, const struct prefix *pfx, bool present, int64_t expires,
			  const char *by);

/* The record key (of set, written by by) now holds items (n 0: it is gone);
 * fn (NULL: none) is told of each entry that changed. 0 or -ENOMEM (the
 * mirror then lacks some of it). */
int mirror_record(struct mirror *m, const char *key, const char *set, const char *by, const struct mirror_item *items,
		  uint32_t n, mirror_fn fn, void *arg);
/* The entry in force of set and prefix, or NULL. */
const struct mirror_entry *mirror_get(const struct mirror *m, const char *set, const struct prefix *pfx);
/* Whether a record other than what a writer puts now would keep the entry
 * past expires (0: none): then the writer takes it out of them. */
bool mirror_outlives(const struct mirror *m, const char *set, const struct prefix *pfx, int64_t expires);
/* The record of key, or NULL. */
const struct mirror_rec *mirror_rec_get(const struct mirror *m, const char *key);
void mirror_clear(struct mirror *m);
void mirror_free(struct mirror *m);

#endif
