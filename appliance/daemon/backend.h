/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The backend that enforces the policy in force, behind one set of
 * operations: the BPF classifier (backend_bpf.c; with table inet nfbox for
 * conntrack and NAT) or nftables alone (backend_nft.c). The daemon decides
 * which in one place, backend_of(); nothing else reads opt.backend.
 * A third backend is one more implementation of these operations.
 */
#ifndef NFBOX_DAEMON_BACKEND_H
#define NFBOX_DAEMON_BACKEND_H

#include <stdbool.h>
#include <stdio.h>

#include "dynset/dynset.h"
#include "policy/policy.h"

struct daemon;
struct loaded;
struct stats_report;
struct diags;

struct backend_ops {
	const char *name; /* "bpf", "nftables": status, metrics */
	/* Enforce nl, with the dynamic sets' entries of the store. Another
	 * backend in force stops enforcing only once this one does (no
	 * instant without a policy); on failure the policy in force stays. */
	int (*enforce)(struct daemon *dm, struct loaded *nl, struct diags *d);
	/* In force now (after a reload, also one that failed): follow its
	 * verdict events, and let the other backend's followers go. */
	void (*in_force)(struct daemon *dm);
	/* Once a round of the loop. */
	void (*tick)(struct daemon *dm);
	/* What is enforced, in one line; what a reload did. */
	void (*status_line)(const struct daemon *dm, char *buf, size_t len);
	void (*summary)(const struct daemon *dm, const char *path, FILE *f);
	/* Each rule's counters and the backend's own figures into out (its
	 * rows allocated); zero: then set them to 0. */
	int (*stats)(struct daemon *dm, struct stats_report *out, bool zero);
	/* Interfaces came or went. */
	void (*links_changed)(struct daemon *dm);
	/* The dynamic sets' entries in the kernel: n changes of set added (or
	 * deleted); a change undone (what it added goes, what it renewed or
	 * deleted comes back); the kernel made to hold the store again after
	 * the store changed by other means; an entry the store let expire; a
	 * reload's sets (gone: the reload dropped some). */
	int (*dyn_apply)(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
			 struct diags *d);
	void (*dyn_undo)(struct daemon *dm, const struct dyn_set *set, const struct dyn_undo *u);
	void (*dyn_resync)(struct daemon *dm);
	void (*dyn_expired)(struct daemon *dm, const struct dyn_set *set, int fam, const struct dyn_entry *e);
	void (*dyn_after_reload)(struct daemon *dm, bool gone);
};

extern const struct backend_ops backend_bpf, backend_nftables;

/* The backend of policy p; NULL for no policy. The one place that reads
 * opt.backend. */
static inline const struct backend_ops *backend_of(const struct policy *p)
{
	if (!p)
		return NULL;
	return p->opt.backend == POLICY_BACKEND_NFTABLES ? &backend_nftables : &backend_bpf;
}

#endif
