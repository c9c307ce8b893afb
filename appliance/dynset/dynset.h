/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Dynamic sets: the entries of the policy's `dynamic: true` sets, changed
 * at run time (`nfbox set add|del`), kept by the daemon. This is the
 * authoritative copy: the backends (BPF tries, nftables sets) are made to
 * hold what it holds, and it is what is saved in the state directory.
 *
 * A set keeps its entries of each family in an array sorted by address.
 * Entries of one set never overlap: an add that would overlap another
 * entry is refused, naming it (the nftables backend's interval sets cannot
 * hold overlaps, and so the longest match in the BPF trie is the only one);
 * an add of an entry already there renews its timeout. A set has an id
 * (1..DYNSET_MAX_IDS-1), the backends' name for it (the BPF classifier's
 * tries key their entries by it), kept as long as a set of that name is in
 * the policy.
 *
 * Times are CLOCK_REALTIME milliseconds (they are saved, and survive a
 * reboot); 0 is "never".
 */
#ifndef NFBOX_DYNSET_H
#define NFBOX_DYNSET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/policy.h"

/* Set ids are 1..DYNSET_MAX_IDS-1: the store owns the id space, and the
 * BPF backend checks that its tries' keys hold it (bpf/nfbox.h,
 * NFB_MAX_DYNSETS). */
#define DYNSET_MAX_IDS 1023

#define DYNSET_MAX_ENTRIES   (1u << 20) /* per family, all sets together (NFB_DYN_ENTRIES) */
#define DYNSET_MAX_TIMEOUT_S (365u * 86400)
#define DYN_ADDED_UNKNOWN    UINT32_MAX /* dyn_change.added: when is not known (an old saved file) */

struct dyn_entry {
	uint8_t addr[16]; /* the prefix's first address; IPv4 in the first 4 bytes */
	int64_t expires;  /* ms, CLOCK_REALTIME; 0: never */
	uint32_t added;	  /* s, CLOCK_REALTIME, when it was added (a renewal keeps it); 0: not known */
	uint16_t by;	  /* who added it: index in dynsets.origins; 0: not known */
	uint8_t plen;
};

struct dyn_set {
	char *name;
	uint16_t id;
	bool in_policy;		/* named by the policy in force (else being dropped) */
	int64_t expired_at;	/* ms: the last time one of its entries expired (0: never) */
	struct dyn_entry *v[2]; /* [0] IPv4, [1] IPv6, sorted by address */
	uint32_t n[2], cap[2];
};

struct dynsets {
	struct dyn_set *sets;
	uint32_t n;
	/* Who adds entries, each named once ("nfbox-set", "rule:ssh"): one
	 * word, as it is saved; origins[0] is unused (not known). */
	char **origins;
	uint16_t norigins;
	uint64_t total[2];   /* entries of each family, all sets */
	int64_t next_expiry; /* the earliest expires of any entry, 0: none */
};

/* One change: an entry to add (with its timeout in ms, 0 for none) or
 * delete, and where it came from for messages (src:line, "stdin:12"). */
struct dyn_change {
	struct prefix pfx;
	int64_t expires;
	uint32_t added;	 /* s; 0: now; DYN_ADDED_UNKNOWN: not known */
	const char *by;	 /* who adds it (a word, see dynsets.origins); NULL: not known */
	bool renew;	 /* set by dynset_add: the entry was there (its expiry renewed) */
	const char *src; /* "argument", "stdin", a path */
	unsigned line;
};

void dynsets_init(struct dynsets *s);
void dynsets_free(struct dynsets *s);

/* The set called name, NULL if none: to read (get), to change (find). */
const struct dyn_set *dynsets_get(const struct dynsets *s, const char *name);
struct dyn_set *dynsets_find(struct dynsets *s, const char *name);

/* Make the sets those of policy p: its dynamic sets keep their entries and
 * ids, new ones get a free id; sets p does not have are marked !in_policy
 * (dynsets_drop_gone removes them once the policy is in force). */
int dynsets_sync_policy(struct dynsets *s, const struct policy *p);
void dynsets_drop_gone(struct dynsets *s);

/* What a change did, to take it back (dynset_undo) when the kernel refuses
 * it: the entries it added, and those it renewed or deleted as they were
 * (renew set for a renewal). */
struct dyn_undo {
	struct dyn_change *added, *changed;
	uint32_t nadded, nchanged;
};
void dynset_undo(struct dynsets *s, struct dyn_set *set, const struct dyn_undo *u);
void dyn_undo_free(struct dyn_undo *u);

/* What an add did: how many entries were new to the set and how many
 * renewed; and, when undo is not NULL (it is zeroed first), what to take
 * back. */
struct dyn_added {
	uint32_t added, renewed;
	struct dyn_undo *undo;
};
/* Add the entries of c (n of them) to set: all or nothing. An entry equal
 * to one there renews its expiry; one that overlaps another entry (of the
 * set or of c) or would pass DYNSET_MAX_ENTRIES is refused: -EEXIST,
 * -ENOSPC, each explained in d at its src:line (at most a few reasons).
 * out (NULL: not wanted) says what it did. -ENOMEM changes nothing. */
int dynset_add(struct dynsets *s, struct dyn_set *set, struct dyn_change *c, uint32_t n, struct diags *d,
	       struct dyn_added *out);
/* Delete the entries of c: each must be in the set exactly (-ENOENT
 * explained otherwise; then nothing is deleted). */
int dynset_del(struct dynsets *s, struct dyn_set *set, const struct dyn_change *c, uint32_t n, struct diags *d,
	       struct dyn_undo *undo);
/* Every entry of the set. */
void dynset_flush(struct dynsets *s, struct dyn_set *set);
/* A copy of src's sets and entries (not the origins' names) in dst. 0, or
 * -ENOMEM (dst untouched). */
int dynsets_copy(struct dynsets *dst, const struct dynsets *src);

/* Remove entries expired at now (ms), calling gone for each before it
 * goes. Returns how many went. */
uint32_t dynsets_expire(struct dynsets *s, int64_t now,
			void (*gone)(const struct dyn_set *set, int fam, const struct dyn_entry *e, void *arg),
			void *arg);

/* Save every set (name, id, entries) as text; load it back (entries
 * expired at now are skipped). dynsets_load: 0, or -EINVAL for a malformed
 * file (line number in *bad_line); s is then empty. */
void dynsets_save(const struct dynsets *s, FILE *f);
int dynsets_load(struct dynsets *s, FILE *f, int64_t now, unsigned *bad_line);

/* Index in set->v[fam] of the entry addr/plen exactly, or -1. */
int64_t dynset_index(const struct dyn_set *set, int fam, const uint8_t *addr, uint8_t plen);

/* The prefix as text, "192.0.2.0/24", "2001:db8::1" (a whole address
 * without its length). */
void dyn_entry_format(int fam, const struct dyn_entry *e, char *buf, size_t len);

/* Who added an entry, "" if not known. */
const char *dyn_entry_by(const struct dynsets *s, const struct dyn_entry *e);

/* Milliseconds of CLOCK_REALTIME. */
int64_t dyn_now_ms(void);

#endif
