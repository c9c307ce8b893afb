/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfbox early-drop ABI: what the XDP program (bpf/nfbox_early.bpf.c) and
 * its loader (appliance/backend/bpf/early/) share. Included by BPF code
 * (after vmlinux.h) and by user space.
 *
 * Rules with early: true (at most NFB_EARLY_MAX, in policy order: bit i is
 * the i-th) drop by source address on named input interfaces. A frame is
 * dropped when a rule's bit is set in all of:
 * (the maps of the generation nfb_early_cfg.active names)
 *   nfb_early_if[ingress ifindex]       the rules on that interface;
 *   nfb_early_src4/6[source]            the rules whose static sources hold
 *                                       it (LPM: the longest prefix's value
 *                                       is the union of every rule prefix
 *                                       that covers it, user space says so),
 *     or the rule's dynamic set holds it (the classifier's nfb_dyn4/6);
 * the lowest such bit is the rule that counts and logs it, in its counter
 * slot of the hook the frame would have taken (input when it is addressed to
 * this host, else forward).
 */
#ifndef NFBOX_EARLY_H
#define NFBOX_EARLY_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define NFB_EARLY_MAX	   64
#define NFB_EARLY_IFACES   4096
#define NFB_EARLY_PREFIXES 2000000 /* per family, all rules together */
#define NFB_EARLY_ABI	   2	   /* 2: the chain to a capture (nfb_early_chain, nfb_early_next) */
#define NFB_EARLY_GENS	   2
#define NFB_EARLY_LOG	   0x1

struct nfb_early_rule {
	__u32 slot[2]; /* counter slots: [0] input, [1] forward */
	__u32 bit[2];  /* the rule's index in each hook's plan (its events name it) */
	__u16 dyn;     /* its dynamic set's id, 0: none */
	__u8 flags;    /* NFB_EARLY_LOG */
	__u8 pad;
};

struct nfb_early_cfg {
	__u32 active;  /* the generation in force; NFB_EARLY_GENS or more: none (everything passes) */
	__u32 abi;     /* NFB_EARLY_ABI of the pinned maps */
	__u32 prog_id; /* the program these maps belong to (an adopter finds it by id) */
	__u32 pad;
	__u64 dyn_rules; /* bit i: rule i of the generation in force has a dynamic set */
};

/* This host's addresses (and IPv4 broadcast addresses), in
 * nfb_early_local: a frame to one of them, or to a multicast or the
 * limited broadcast address, is the input hook's; any other, forward's. */
#define NFB_EARLY_LOCALS 4096

/*
 * A program after this one on an interface: a capture's, where libxdp's
 * dispatcher cannot run (a kernel that refuses extension programs). The
 * early program ends in a tail call to nfb_early_next[nfb_early_chain
 * [ifindex]] instead of XDP_PASS. Neither map is pinned: the prog array
 * empties itself when its last user-space holder (the daemon) goes, and
 * the capture that filled it went with that daemon. NFB_EARLY_RETIRED in
 * nfb_early_cfg.active: no early rule is in force any more, the program
 * stays only for the captures chained to it (the last one detaches it).
 */
#define NFB_EARLY_CHAIN_SLOTS 64
#define NFB_EARLY_RETIRED     (NFB_EARLY_GENS + 1)
#define NFB_EARLY_PROG_NAME   "nfb_early"
struct nfb_early_local_key {
	__u8 family; /* NFB_FAM_* */
	__u8 pad[3];
	__u8 addr[16];
};

struct nfb_early4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct nfb_early6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

#endif
