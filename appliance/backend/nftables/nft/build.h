/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A policy as table inet nfbox (ir.h): what nftables does for nfbox.
 *  - With defrag on, a chain no hook calls whose rule uses the conntrack
 *    state: that turns conntrack (and its reassembly) on, at no cost per
 *    packet.
 *  - The nat: section, with either backend: chains prerouting (dstnat:
 *    forward-port, redirect, hairpin) and postrouting (srcnat: masquerade,
 *    snat, hairpin's masquerade).
 *  - With options.backend: nftables, the whole filter: one base chain per
 *    hook, rules in policy order with a named counter each (r_HOOK_RULE),
 *    the defaults as a last counted rule (x_HOOK_default), established and
 *    fragment handling first, as the BPF classifier does. A rule with
 *    limit: has a named limit l_HOOK_RULE (per source: a dynamic set of
 *    buckets m4_/m6_HOOK_RULE), and a rule after it with the same matches
 *    counts what was over the limit (o_HOOK_RULE); with log or reject the
 *    verdict is in a chain of its own, so the limit is taken once.
 */
#ifndef NFBOX_NFT_BUILD_H
#define NFBOX_NFT_BUILD_H

#include "backend/nftables/nft/ir.h"

struct dynsets;

/* Buckets of one per-source limit, as the BPF classifier's nfb_meter. */
#define NFT_METER_SIZE 65536
/* Counts of one per-source connection limit, as the classifier's
 * nfb_conn_count. */
#define NFT_CONN_OWNERS 65536
/* Overload events (limit: { overload: }) to the daemon, a second. */
#define NFT_OVERLOAD_RATE 100

/* The NFLOG group the nftables backend logs verdict events to. */
#define NFT_NFLOG_GROUP 6770

struct nft_build_opts {
	bool filter; /* the nftables backend: the filter chains too */
	/* The value a counter starts with (carried over a reload); NULL: 0. */
	bool (*counter_value)(const char *name, uint64_t *packets, uint64_t *bytes, void *arg);
	void *arg;
	/* The dynamic sets' entries at run time (dynset/dynset.h); NULL: none
	 * (`nfbox plan`). */
	const struct dynsets *dyn;
	/* This host's addresses, for early: true rules' ingress chains: each
	 * given to add (family, address); NULL: none (`nfbox plan`). */
	void (*local)(void (*add)(uint8_t fam, const uint8_t *addr, void *l), void *l, void *arg);
	/* Every address of every interface, with the interface's name, for
	 * the hairpin sets (h_*); NULL: none (`nfbox plan`: the sets print
	 * empty, the daemon fills them). */
	void (*iface_addrs)(void (*add)(const char *ifname, uint8_t fam, const uint8_t *addr, void *l), void *l,
			    void *arg);
};

/* The kernel's timeout of a dynamic set's element is this much longer than
 * the daemon's store's expiry: the store lets an entry go first (the
 * kernel then removes its own). So the kernel may still hold an element
 * the store has let go: an add replaces it (nft_set_change), and a check
 * of the kernel against the store (verify) lets it expire by itself. */
#define NFT_TIMEOUT_MARGIN_MS 1000

/* A scheduled rule's set, w_RULE, new in t: ipv4 and ipv6 while the rule
 * is in force (open), else empty. NULL after an allocation failure (t->err). */
struct nfr_set *nft_sched_set(struct nfr_table *t, const char *rule, bool open);
/* The nftables set that holds dynamic set NAME's entries of a family
 * (POLICY_FAM_IPV4 or _IPV6); buf at least NFR_NAME. */
void nft_dyn_set_name(char *buf, size_t len, const char *set, uint8_t fam);
/* A prefix as an interval set's range: its first and last address. */
void nft_prefix_range(const struct prefix *pf, uint8_t *lo, uint8_t *hi);

/* The hairpin sets of p alone (h_IN_4, h_IN_6: the addresses of each
 * forward-port's in: interfaces, from o->iface_addrs), as nft_build makes
 * them, new in t: what the daemon puts in place again when addresses come
 * or go. How many there are. */
uint32_t nft_hairpin_sets(const struct policy *p, const struct nft_build_opts *o, struct nfr_table *t);

/* 0, or a negative errno said in d: -ENOMEM, or -E2BIG at the policy
 * element whose nftables rule would not fit in one (ir.h). t must be
 * initialised (nfr_init) and is filled. */
int nft_build(const struct policy *p, const struct nft_build_opts *o, struct nfr_table *t, struct diags *d);

/* Counter names, as build uses them (buf at least NFR_NAME). */
void nft_rule_counter_name(char *buf, size_t len, enum policy_hook h, const char *rule);
void nft_default_counter_name(char *buf, size_t len, enum policy_hook h);
/* The packets over a limited rule's limit (that went on to later rules). */
void nft_over_limit_counter_name(char *buf, size_t len, enum policy_hook h, const char *rule);
#define NFT_COUNTER_ESTABLISHED	   "x_established"
#define NFT_COUNTER_UNREASSEMBLED  "x_unreassembled"
#define NFT_COUNTER_MALFORMED	   "x_malformed" /* IPv4-mapped IPv6 addresses */
#define NFT_COUNTER_REJECT_LIMITED "x_reject_limited"
/* Events a log: rule asked for, and those the log-rate let through: the
 * difference is log_rate_limited. */
#define NFT_COUNTER_LOG_WANTED "x_log_wanted"
#define NFT_COUNTER_LOGGED     "x_logged"

#endif
