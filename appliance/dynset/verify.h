/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The store against the kernel: what a backend's kernel holds of the
 * dynamic sets (each entry and when the kernel lets it go), compared with
 * the store, the authority. What differs is a repair: an entry the kernel
 * lacks, or holds with another expiry, is put again; one it holds that the
 * store does not is deleted. Pure: the daemon reads the kernel and applies
 * the repairs (dynset/part/check.c).
 */
#ifndef NFBOX_DYNSET_VERIFY_H
#define NFBOX_DYNSET_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "dynset/dynset.h"

/* How far the kernel's expiry may stray from the store's (ms): clocks
 * read at different moments, the kernel's timer granularity. */
#define DYN_VERIFY_TOLERANCE_MS 1000

/* An entry as the kernel holds it. */
struct dyn_kentry {
	const struct dyn_set *set; /* the store's set it belongs to; NULL: none (a set the store lacks) */
	int fam;		   /* 0 IPv4, 1 IPv6 */
	uint8_t addr[16];
	uint8_t plen;
	int64_t expires; /* ms, CLOCK_REALTIME, when the kernel stops matching it; 0: never */
};

enum dyn_repair_kind {
	DYN_REPAIR_MISSING, /* in the store, not in the kernel: put */
	DYN_REPAIR_EXPIRY,  /* in both, the kernel's expiry is not the store's: put */
	DYN_REPAIR_EXTRA,   /* in the kernel, not in the store: deleted */
};

struct dyn_repair {
	const struct dyn_set *set;
	enum dyn_repair_kind kind;
	struct dyn_change c;	/* what to put (with the store's expiry) or delete */
	int64_t kernel_expires; /* as the kernel had it (DYN_REPAIR_EXPIRY, _EXTRA) */
};

struct dyn_verdict {
	struct dyn_repair *v; /* malloc'd */
	size_t n;
	uint64_t orphans; /* kernel entries of no set of the store */
	uint64_t checked; /* store entries compared */
};

/*
 * Compare the store with the kernel's entries k (n of them; sorted here)
 * at now (ms). margin: how much longer than the store's expiry the kernel
 * keeps an entry (the nftables backend's NFT_TIMEOUT_MARGIN_MS, else 0).
 * Left alone, as they settle by themselves: store entries that expire
 * within the tolerance (the next expiry round takes them) and, with a
 * margin, kernel entries the store has let go that the kernel lets go
 * within margin + tolerance. 0, or -ENOMEM (out untouched).
 */
int dynset_verify(const struct dynsets *s, struct dyn_kentry *k, size_t n, int64_t now, int64_t margin,
		  struct dyn_verdict *out);
void dyn_verdict_free(struct dyn_verdict *v);

/* "the kernel lacked it", ... for the log. */
const char *dyn_repair_why(enum dyn_repair_kind k);

#endif
