/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A YAML document as a tree whose every node keeps its place in the file.
 * Built from libyaml's event API so that duplicate keys, alias expansion
 * (billion laughs) and size limits are caught while parsing.
 */
#ifndef NFBOX_YTREE_H
#define NFBOX_YTREE_H

#include "base/diag.h"

enum ynode_type {
	YNODE_SCALAR,
	YNODE_SEQ,
	YNODE_MAP,
};

struct ynode {
	enum ynode_type type;
	struct loc loc;
	bool quoted; /* scalar was quoted: never a number or boolean */
	bool broken; /* stands for a value already reported (an unknown alias):
			       ynode_get() does not see it, so nothing is said twice */
	char *str;   /* scalar text (NUL-terminated) */
	size_t len;
	struct ynode **kids; /* SEQ: items; MAP: key0, value0, key1, value1, ... */
	size_t nkids;
	size_t weight; /* nodes in this subtree, aliases expanded */
};

#define YTREE_MAX_EXPANDED 4000000u /* nodes, aliases expanded */
#define YTREE_MAX_DEPTH	   64

struct ytree {
	struct ynode *root; /* NULL for an empty document */
	struct ynode **all; /* every node allocated, for freeing */
	size_t nall, capall;
};

/* Parse src into *t. Errors go to d; returns 0, or -EINVAL after reporting. */
int ytree_parse(struct ytree *t, const struct source *src, struct diags *d);
void ytree_free(struct ytree *t);

static inline size_t ynode_map_len(const struct ynode *n)
{
	return n->nkids / 2;
}
static inline const struct ynode *ynode_map_key(const struct ynode *n, size_t i)
{
	return n->kids[2 * i];
}
static inline const struct ynode *ynode_map_val(const struct ynode *n, size_t i)
{
	return n->kids[2 * i + 1];
}
/* Value for key in a map, or NULL (also when the value is broken). */
const struct ynode *ynode_get(const struct ynode *map, const char *key);
/* A plain (unquoted) empty, ~ or null scalar: YAML's null. */
bool ynode_is_null(const struct ynode *n);
/* The key is in the map, its value good or broken. */
bool ynode_has(const struct ynode *map, const char *key);

const char *ynode_type_name(const struct ynode *n);

#endif
