/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internals of the policy loader, shared by its translation units. */
#ifndef NFBOX_LOAD_H
#define NFBOX_LOAD_H

#include "policy/policy.h"
#include "policy/yaml/ytree.h"

struct lx {
	struct policy *p;
	struct diags *d;
	const struct source *src;
	const char *dir; /* directory of the policy file, for set files */
	size_t errors0;  /* d->errors before this policy */
};

/* Append helper: returns the (possibly moved) array with room for n + 1. */
void *lx_grow(void *v, uint32_t n, size_t size);
#define LX_APPEND(x, arr, n)                                                      \
	({                                                                        \
		__typeof__(arr) _v = lx_grow((arr), (n), sizeof(*(arr)));         \
		if (_v) {                                                         \
			(arr) = _v;                                               \
			memset(&(arr)[(n)], 0, sizeof(*(arr)));                   \
		}                                                                 \
		_v ? &(arr)[(n)++] : NULL;                                        \
	})

bool lx_is(struct lx *x, const struct ynode *n, enum ynode_type type, const char *what);
void lx_check_keys(struct lx *x, const struct ynode *map, const char *const *allowed,
		   const char *where);
bool lx_bool(struct lx *x, const struct ynode *n, const char *what, bool *out);
bool lx_uint(struct lx *x, const struct ynode *n, const char *what, uint64_t min, uint64_t max,
	     uint64_t *out);
int lx_choice(struct lx *x, const struct ynode *n, const char *what, const char *const *choices);
void lx_each_scalar(struct lx *x, const struct ynode *n, const char *what,
		    void (*fn)(struct lx *, const struct ynode *, void *), void *arg);
char *lx_describe(const struct ynode *n);

/* Definitions (load_defs.c). */
void load_interfaces(struct lx *x, const struct ynode *n);
void load_sets(struct lx *x, const struct ynode *n);
void load_services(struct lx *x, const struct ynode *n);
void load_hooks(struct lx *x, const struct ynode *n);
void load_options(struct lx *x, const struct ynode *n);
struct addr_set *lx_find_set(struct lx *x, const char *name);
struct service *lx_find_service(struct lx *x, const char *name);
struct iface_group *lx_find_group(struct lx *x, const char *name);

/* Matches used by rules, NAT and capture (load_match.c). */
void lx_addr_match(struct lx *x, const struct ynode *n, const char *what, struct addr_match *m);
void lx_iface_match(struct lx *x, const struct ynode *n, const char *what, struct iface_match *m);
void lx_port_match(struct lx *x, const struct ynode *n, const char *what, struct port_match *m);
int lx_prefix(struct lx *x, const struct ynode *n, struct prefix *out);

/* Rules, NAT, capture and whole-policy checks (load_rules.c). */
void load_rules(struct lx *x, const struct ynode *n);
void load_nat(struct lx *x, const struct ynode *n);
void load_captures(struct lx *x, const struct ynode *n);
void check_unused(struct lx *x);
void check_shadowed(struct lx *x);
void check_defrag_off(struct lx *x);

#endif
