/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A shared set's records in etcd, under PREFIX/G/sets/ (fleet/part.c):
 *
 *   SET/PREFIX  one entry: {"expires": MS, "by": NODE, "origin": WHO}
 *               (as written by hand, or by nodes before packs)
 *   SET/+ID     a pack: the entries a node shared in one transaction,
 *               {"by": NODE, "origin": WHO, "entries": {"PREFIX": MS, ...}}
 *
 * MS: when the entry ends, in ms since the epoch (0: never); the key's
 * lease ends just after the last of them. A pack is one event on every
 * node's watch however many entries it holds: with one key an entry, a
 * burst of bans or a list of 10,000 was as many events for etcd to encode
 * for every node.
 */
#ifndef NFBOX_FLEET_PACK_H
#define NFBOX_FLEET_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet/mirror.h"

#define PACK_MAX_ENTRIES 512 /* a pack's entries: about 20 KB of JSON */

/* A record decoded: key is SET/PREFIX or SET/+ID (below sets/), value its
 * JSON (ignored when del). set: the set's name; by: "fleet:NODE" ("fleet:?"
 * when the record names none that is valid); *items (malloc'd, also when
 * n is 0) and *n: its entries; *bad: the pack's entries that are not one
 * (skipped). -EINVAL when key is neither, or a pack's value is not one;
 * -ENOMEM. */
int pack_decode(const char *key, const char *value, size_t vlen, bool del, char set[POLICY_MAX_NAME + 1], char *by,
		size_t blen, struct mirror_item **items, uint32_t *n, uint32_t *bad);

/* Whether key (below sets/) is a pack's. */
bool pack_key_is_pack(const char *key);

/* A pack's value (malloc'd), or NULL (no memory). */
char *pack_encode(const char *node, const char *origin, const struct mirror_item *items, uint32_t n);

/* A pack's value without the entries of del (sorted by pack_sort; one
 * named twice goes too): *out the new value (malloc'd), or NULL when none
 * is left; *changed whether any went. -EINVAL when value is not a pack's,
 * -ENOMEM. */
int pack_strip(const char *value, size_t vlen, const struct prefix *del, uint32_t ndel, char **out, bool *changed);

/* Prefixes in order: by family, length, then address. */
int pack_prefix_cmp(const struct prefix *x, const struct prefix *y);
/* Prefixes sorted for pack_strip and pack_has. */
void pack_sort(struct prefix *v, uint32_t n);
bool pack_has(const struct prefix *sorted, uint32_t n, const struct prefix *p);

#endif
