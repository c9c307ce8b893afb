/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The dynamic sets in the daemon: two parts (daemon/part.h). part_dynsets
 * (part.c) keeps the store, the authority: `nfbox set add|del|list|flush`,
 * the entries put into the backend in force, saved in the state directory
 * after every change, read back at start, expired once a second.
 * part_dynsets_check (check.c) checks the kernel against the store and
 * repairs it. What the other parts use of them follows.
 */
#ifndef NFBOX_DYNSET_PART_PART_H
#define NFBOX_DYNSET_PART_PART_H

#include "daemon/part.h"
#include "dynset/dynset.h"

/* Who asked: uid, and a file of prefixes sent with the request (-1: none). */
struct dyn_caller {
	uid_t uid;
	int fd;
};

/* An automatic ban of pfx into set, asked by who ("rule:ssh", "fleet:n2",
 * a Suricata alert): false, counted and logged, when the address is never
 * banned (dynset/protect.h: the appliance's own, a special range, the
 * policy's never-ban). Automatic entries that became such are deleted at
 * each load. */
bool dyn_ban_allowed(struct daemon *dm, const char *set, const struct prefix *pfx, const char *who);
/* A source over a limit with an overload set (backend_sink.overload, arg
 * the daemon): into that set, for the limit's timeout, by that rule. */
void dyn_overload(void *arg, const struct vevent *v);
/* A feed's entries (feeds) into the dynamic set name, store and kernel,
 * then saved: with replace, the set becomes exactly c (c is sorted);
 * else each of c is added or renewed (its expiry). *added, *deleted: how
 * many. 0 or -errno (d). */
int dyn_feed(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool replace, uint32_t *added,
	     uint32_t *deleted, struct diags *d);
/* A listener told of every change to a set's entries (not those of
 * dyn_from_fleet): a fleet's node, which shares them. NULL: none; then a
 * policy's shared: true sets are warned of at each load. */
typedef void (*dyn_listener_fn)(struct daemon *dm, const char *set, const struct dyn_change *c, uint32_t n, bool del);
void dyn_listen(struct daemon *dm, dyn_listener_fn fn);
/* Entries of a fleet's shared set from etcd, not sent back there: each
 * added (renewed), or deleted (one not here is no error); with replace,
 * the set becomes exactly c (c[] may be reordered or filtered: an entry
 * never banned here, one to delete that is not here). The number of
 * entries taken (the first of c), or -errno (logged). */
int dyn_from_fleet(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool del, bool replace);
/* The store (read only). */
const struct dynsets *dyn_store(const struct daemon *dm);

/* Between the two parts: when a change asked for a check soon (a change
 * the kernel refused, or one that met an expiry; CLOCK_MONOTONIC ms, 0:
 * none), taken once; a repair into the backend in force; the kernel made
 * to hold the store whole again. */
long long dyn_verify_take(struct daemon *dm);
int dyn_kernel_apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		     struct diags *d);
void dyn_kernel_resync(struct daemon *dm);
/* The check's values into status' "dynamic_sets_check"; the entries it
 * repaired (zero: counted from 0 again). */
void dyn_check_report(const struct daemon *dm, struct rep *o);
uint64_t dyn_check_repaired(const struct daemon *dm, bool zero);

#endif
