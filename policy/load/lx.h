/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The loader's state and its typed reads of YAML nodes (lx.c). */
#ifndef NFBOX_POLICY_LX_H
#define NFBOX_POLICY_LX_H

#include <string.h>

#include "policy/policy.h"
#include "policy/yaml/ytree.h"

/* Names to their index in a policy array (groups, sets, services): found in
 * constant time, so 50,000 sets load as fast as 50. */
struct lx_index {
	struct lx_index_ent {
		const char *name; /* the element's own copy (stable across growth) */
		uint32_t idx;
	} *v;
	uint32_t cap, n; /* cap: a power of two, or 0 */
};
/* Index of name, or UINT32_MAX. */
uint32_t lx_index_find(const struct lx_index *ix, const char *name);
int lx_index_add(struct lx_index *ix, const char *name, uint32_t idx);
void lx_index_free(struct lx_index *ix);

struct lx {
	struct policy *p;
	struct lx_index groups, sets, services;
	struct diags *d;
	const struct source *src;
	const char *dir;		  /* directory of the policy file, for set files */
	const struct policy_files *files; /* NULL: open and read as they are */
	size_t errors0;			  /* d->errors before this policy */
	size_t rule_errors0;		  /* d->errors before the rule being loaded: its
				consequences are warned of only when it is sound */
	bool oom;			  /* an allocation failed: the policy is not loaded (-ENOMEM) */
};

/* Append helper: returns the (possibly moved) array with room for n + 1;
 * NULL (and x->oom) when out of memory. */
void *lx_grow(void *v, uint32_t n, size_t size);
#define LX_APPEND(x, arr, n)                                              \
	({                                                                \
		__typeof__(arr) _v = lx_grow((arr), (n), sizeof(*(arr))); \
		if (_v) {                                                 \
			(arr) = _v;                                       \
			memset(&(arr)[(n)], 0, sizeof(*(arr)));           \
		} else {                                                  \
			(x)->oom = true;                                  \
		}                                                         \
		_v ? &(arr)[(n)++] : NULL;                                \
	})

bool lx_is(struct lx *x, const struct ynode *n, enum ynode_type type, const char *what);
void lx_check_keys(struct lx *x, const struct ynode *map, const char *const *allowed, const char *where);
/* The same; a key of hints (NULL-terminated) is an error with its own
 * message (a key that belongs elsewhere says where). Without hints, a word
 * from iptables, nftables, pf or VyOS (src, dst, dport, sport, ...) names
 * the key nfbox has for it, if allowed has it, however far the spelling. */
struct lx_key_hint {
	const char *key, *hint;
};
void lx_check_keys_hinted(struct lx *x, const struct ynode *map, const char *const *allowed, const char *where,
			  const struct lx_key_hint *hints);
bool lx_bool(struct lx *x, const struct ynode *n, const char *what, bool *out);
bool lx_uint(struct lx *x, const struct ynode *n, const char *what, uint64_t min, uint64_t max, uint64_t *out);
int lx_choice(struct lx *x, const struct ynode *n, const char *what, const char *const *choices);
/* The same; a word of aliases ({ word, choice } pairs, NULL-terminated) is
 * not valid either, but its choice is the one suggested (dnat: forward-port). */
struct lx_alias {
	const char *word, *meant;
};
int lx_choice_aliased(struct lx *x, const struct ynode *n, const char *what, const char *const *choices,
		      const struct lx_alias *aliases);
void lx_each_scalar(struct lx *x, const struct ynode *n, const char *what,
		    void (*fn)(struct lx *, const struct ynode *, void *), void *arg);
char *lx_describe(const struct ynode *n);
/* The place of byte off inside scalar n (the start of n where that cannot be told). */
struct loc lx_loc_in(const struct ynode *n, size_t off);

/* A path as the policy names it: absolute as is, relative to the policy
 * file's directory (malloc'd; NULL and x->oom when out of memory). */
char *lx_path(struct lx *x, const char *name);

/* A file of the policy (the policy itself, or a set file) read through the
 * caller's rules (policy.h, struct policy_files) into a new source of into:
 * 0, or -errno with why. */
int lx_read_file(const struct policy_files *files, const char *path, bool is_policy, struct sources *into,
		 struct source **out, char *why, size_t len);

#endif
