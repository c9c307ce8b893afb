/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Dynamic sets in the daemon (dynsets.c). */
#ifndef NFBOX_DAEMON_DYNSETS_H
#define NFBOX_DAEMON_DYNSETS_H

#include "daemon/daemon_int.h"

/* dynsets.c: dynamic sets (`nfbox set`). dyn_state_load at start reads
 * the saved entries; dyn_prepare gives a new policy's dynamic sets their
 * ids (in m); dyn_after_reload after every load (r: its result); dyn_answer
 * the set-* requests; dyn_tick expires entries. */
int dyn_state_load(struct daemon *dm); /* 0 or -ENOMEM */
/* After the engine is open: when STATE/dynsets could not be read, the
 * entries come from the pinned classifier that was enforcing them; where
 * nothing holds them the start fails (-EIO, explained in d) unless
 * --fresh, which starts the sets empty. */
int dyn_recover(struct daemon *dm, struct diags *d);
int dyn_prepare(struct daemon *dm, const struct policy *p, struct slot_map *m, struct diags *d);
void dyn_after_reload(struct daemon *dm, int r);
/* Once no change waits for `nfbox confirm`: the entries of sets the policy
 * in force dropped go (kept until then, for a rollback). */
void dyn_settle(struct daemon *dm);
/* Who asked: uid, and a file of prefixes sent with the request (-1: none). */
struct dyn_caller {
	uid_t uid;
	int fd;
};
void dyn_answer(struct daemon *dm, const struct dyn_caller *who, const struct ctl_request *req, FILE *f);
void dyn_tick(struct daemon *dm);
/* An automatic ban of pfx into set, asked by who ("rule:ssh", "fleet:n2",
 * a Suricata alert): false, counted and logged, when the address is never
 * banned (dynset/protect.h: the appliance's own, a special range, the
 * policy's never-ban). Automatic entries that became such are deleted at
 * each load. */
bool dyn_ban_allowed(struct daemon *dm, const char *set, const struct prefix *pfx, const char *who);
/* A source over a limit with an overload set (backend_sink.overload, arg
 * the daemon): into that set, for the limit's timeout, by that rule. */
void dyn_overload(void *arg, const struct vevent *v);
/* A feed's entries (feeds.c) into the dynamic set name, store and kernel,
 * then saved: with replace, the set becomes exactly c (c is sorted);
 * else each of c is added or renewed (its expiry). *added, *deleted: how
 * many. 0 or -errno (d). */
int dyn_feed(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool replace, uint32_t *added,
	     uint32_t *deleted, struct diags *d);
/* A listener told of every change to a set's entries (not those of
 * dyn_from_fleet): a fleet's node (fleet.c), which shares them. NULL: none;
 * then a policy's shared: true sets are warned of at each load. */
typedef void (*dyn_listener_fn)(struct daemon *dm, const char *set, const struct dyn_change *c, uint32_t n, bool del);
void dyn_listen(struct daemon *dm, dyn_listener_fn fn);
/* Entries of a fleet's shared set from etcd (fleet.c), not sent back
 * there: each added (renewed), or deleted (one not here is no error); with
 * replace, the set becomes exactly c. 0 or -errno (logged). */
int dyn_from_fleet(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool del, bool replace);
/* What status and stats say of the dynamic sets beyond their entries:
 * the kernel checked against the store (daemon/dynverify.c fills those),
 * and the automatic bans refused (dyn_report). */
struct dyn_report {
	uint64_t checks, check_failed;
	uint64_t repaired;  /* kernel entries put again or deleted to match the store */
	uint64_t refused;   /* automatic bans of addresses never banned */
	int64_t checked_at; /* ms, CLOCK_REALTIME, of the last check; 0: none yet */
	uint64_t check_ms, every_ms;
	char last_repair[192]; /* "" if none */
};
void dyn_report(const struct daemon *dm, struct dyn_report *out);
/* stats --zero: the counts back to 0. */
void dyn_report_zero(struct daemon *dm);
/* For the check of the kernel against the store (daemon/dynverify.c): when
 * a change asked for one soon (a change the kernel refused, or one that
 * met an expiry; CLOCK_MONOTONIC ms, 0: none), taken once; a repair into
 * the backend in force; the kernel made to hold the store whole again. */
long long dyn_verify_take(struct daemon *dm);
int dyn_kernel_apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		     struct diags *d);
void dyn_kernel_resync(struct daemon *dm);
/* The store (read only: dyn_answer changes it). */
const struct dynsets *dyn_store(const struct daemon *dm);
void dyn_free(struct daemon *dm);

#endif
