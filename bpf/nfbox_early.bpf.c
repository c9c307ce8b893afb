/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Early drop at XDP (bpf/nfbox_early.h): frames from sources that a rule
 * with early: true drops on their input interface are dropped here, before
 * the kernel builds an skb; every other frame goes on (XDP_PASS), to the
 * next program of the interface's dispatcher (a capture) and to the stack,
 * where the classifier judges it with every rule, early ones included.
 *
 * The frame is read as the stack would see it on that interface: an
 * untagged Ethernet frame carrying IPv4 or IPv6 (a VLAN-tagged one belongs
 * to the VLAN's interface, so it passes). Only the source address is read:
 * a fragment is judged by its source like the datagram it belongs to.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "nfbox.h"
#include "nfbox_early.h"
#include "nfbox_filter.bpf.h"
#include "nfbox_shared.bpf.h"

#define ETH_P_IP   0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_HLEN   14

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* A generation of the early rules' maps (two: the one in force and the
 * spare user space fills; nfb_early_cfg.active flips between them). */
struct nfb_early_if_inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFB_EARLY_IFACES);
	__uint(key_size, sizeof(__u32));   /* ifindex */
	__uint(value_size, sizeof(__u64)); /* rules on it */
};

struct nfb_early_src4_inner {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_EARLY_PREFIXES);
	__uint(key_size, sizeof(struct nfb_early4_key));
	__uint(value_size, sizeof(__u64));
};

struct nfb_early_src6_inner {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_EARLY_PREFIXES);
	__uint(key_size, sizeof(struct nfb_early6_key));
	__uint(value_size, sizeof(__u64));
};

struct nfb_early_rules_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_EARLY_MAX);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_early_rule));
};

NFB_OUTER_N(nfb_early_if, nfb_early_if_inner, NFB_EARLY_GENS);
NFB_OUTER_N(nfb_early_src4, nfb_early_src4_inner, NFB_EARLY_GENS);
NFB_OUTER_N(nfb_early_src6, nfb_early_src6_inner, NFB_EARLY_GENS);
NFB_OUTER_N(nfb_early_rules, nfb_early_rules_inner, NFB_EARLY_GENS);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_early_cfg);
} nfb_early_cfg SEC(".maps");

/* The programs after this one (bpf/nfbox_early.h, NFB_EARLY_CHAIN_SLOTS). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFB_EARLY_CHAIN_SLOTS);
	__type(key, __u32);   /* ifindex */
	__type(value, __u32); /* slot in nfb_early_next */
} nfb_early_chain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, NFB_EARLY_CHAIN_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} nfb_early_next SEC(".maps");

/* This host's addresses, kept up to date by user space (not per generation). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NFB_EARLY_LOCALS);
	__type(key, struct nfb_early_local_key);
	__type(value, __u8);
} nfb_early_local SEC(".maps");

/* What the frame says, as far as the early rules look. */
struct early_pkt {
	__u8 family; /* NFB_FAM_* */
	__u8 proto;
	__u8 hook; /* 0: input, 1: forward (hook_of) */
	__u32 len; /* the IP datagram's bytes (the frame less its Ethernet header) */
	__u32 ifin;
	__u8 saddr[16];
	__u8 daddr[16];
};

static __always_inline int parse(struct xdp_md *ctx, struct early_pkt *p)
{
	struct ethhdr eth;

	if (bpf_xdp_load_bytes(ctx, 0, &eth, sizeof(eth)))
		return -1;
	p->len = bpf_xdp_get_buff_len(ctx) - ETH_HLEN;
	if (eth.h_proto == bpf_htons(ETH_P_IP)) {
		struct nfb_ip4hdr ip;

		if (bpf_xdp_load_bytes(ctx, ETH_HLEN, &ip, sizeof(ip)) || (ip.ver_ihl >> 4) != 4)
			return -1;
		p->family = NFB_FAM_IPV4;
		p->proto = ip.protocol;
		__builtin_memcpy(p->saddr, ip.saddr, 4);
		__builtin_memcpy(p->daddr, ip.daddr, 4);
		return 0;
	}
	if (eth.h_proto == bpf_htons(ETH_P_IPV6)) {
		struct nfb_ip6hdr ip6;

		if (bpf_xdp_load_bytes(ctx, ETH_HLEN, &ip6, sizeof(ip6)) || (ip6.ver_tc >> 4) != 6)
			return -1;
		p->family = NFB_FAM_IPV6;
		p->proto = ip6.nexthdr;
		__builtin_memcpy(p->saddr, ip6.saddr, 16);
		__builtin_memcpy(p->daddr, ip6.daddr, 16);
		return 0;
	}
	return -1;
}

/* The rules whose static sources hold the frame's source. */
static __always_inline __u64 static_rules(__u32 gen, const struct early_pkt *p)
{
	const __u64 *m;
	void *trie;

	if (p->family == NFB_FAM_IPV4) {
		struct nfb_early4_key k = { .prefixlen = 32 };

		__builtin_memcpy(k.addr, p->saddr, 4);
		trie = bpf_map_lookup_elem(&nfb_early_src4, &gen);
		m = trie ? bpf_map_lookup_elem(trie, &k) : NULL;
	} else {
		struct nfb_early6_key k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, p->saddr, 16);
		trie = bpf_map_lookup_elem(&nfb_early_src6, &gen);
		m = trie ? bpf_map_lookup_elem(trie, &k) : NULL;
	}
	return m ? *m : 0;
}

struct dyn_walk {
	void *rules;
	const struct early_pkt *p;
	__u64 want, now, got;
};

/* One rule of w->want, the lowest left: 1 (stop) once one holds the source. */
static long dyn_step(__u64 i, void *arg)
{
	struct dyn_walk *w = arg;
	const struct nfb_early_rule *r;
	__u32 k;

	if (!w->want)
		return 1;
	k = (__u32)nfb_ctz64(w->want);
	w->want &= w->want - 1;
	r = bpf_map_lookup_elem(w->rules, &k);
	if (r && r->dyn && nfb_dyn_has(r->dyn, w->p->family, w->p->saddr, w->now)) {
		w->got = 1ull << (k & 63);
		return 1;
	}
	return 0;
}

/* The first rule in want (those below the first static match) whose
 * dynamic set holds the frame's source, as a bit; 0 if none. */
static __noinline __u64 dynamic_rules(void *rules, __u64 want, const struct early_pkt *p)
{
	struct dyn_walk w = { .rules = rules, .p = p, .want = want, .now = bpf_ktime_get_boot_ns() };

	if (!rules)
		return 0;
	bpf_loop(NFB_EARLY_MAX, dyn_step, &w, 0);
	return w.got;
}

/* 0: for this host (input), 1: to be forwarded: addressed to one of this
 * host's addresses (or a multicast or the limited broadcast address) is
 * input. A FIB lookup would say the same for unicast, at three times the
 * cost of the rest of the program. */
static __always_inline int hook_of(const struct early_pkt *p)
{
	struct nfb_early_local_key k = { .family = p->family };

	if (p->family == NFB_FAM_IPV4) {
		if ((p->daddr[0] & 0xf0) == 0xe0 ||
		    (p->daddr[0] == 0xff && p->daddr[1] == 0xff && p->daddr[2] == 0xff && p->daddr[3] == 0xff))
			return 0;
		__builtin_memcpy(k.addr, p->daddr, 4);
	} else {
		if (p->daddr[0] == 0xff)
			return 0;
		__builtin_memcpy(k.addr, p->daddr, 16);
	}
	return bpf_map_lookup_elem(&nfb_early_local, &k) ? 0 : 1;
}

static __noinline void early_log(const struct nfb_gen_cfg *cfg, __u32 gen, const struct early_pkt *p,
				 const struct nfb_early_rule *r)
{
	__u32 h = p->hook & 1;

	__u64 now = bpf_ktime_get_ns();
	struct nfb_event *e;

	if (!cfg || !nfb_log_allowed(cfg, now)) {
		nfb_count_fixed(NFB_CNT_LOG_LIMITED, p->len);
		return;
	}
	e = bpf_ringbuf_reserve(&nfb_events, sizeof(*e), 0);
	if (!e) {
		nfb_count_fixed(NFB_CNT_LOG_DROPPED, p->len);
		return;
	}
	e->ts_ns = now;
	e->counter = r->slot[h];
	e->rule = r->bit[h];
	e->gen = gen;
	e->len = p->len;
	e->ifin = p->ifin;
	e->ifout = 0;
	e->hook = h ? NFB_HOOK_FORWARD : NFB_HOOK_INPUT;
	e->family = p->family;
	e->action = NFB_ACT_DROP;
	e->proto = p->proto;
	e->sport = 0;
	e->dport = 0;
	__builtin_memcpy(e->saddr, p->saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, p->daddr, sizeof(e->daddr));
	bpf_ringbuf_submit(e, 0);
}

/* A frame this program does not drop: to the program chained after it on
 * this interface, if there is one, else to the stack. */
static __always_inline int pass(struct xdp_md *ctx)
{
	__u32 ifindex = ctx->ingress_ifindex, *slot = bpf_map_lookup_elem(&nfb_early_chain, &ifindex);

	if (slot)
		bpf_tail_call(ctx, &nfb_early_next, *slot);
	return XDP_PASS;
}

SEC("xdp.frags")
int nfb_early(struct xdp_md *ctx)
{
	__u32 ifindex = ctx->ingress_ifindex, zero = 0, rule, egen, gen;
	const struct nfb_early_cfg *ecfg;
	const struct nfb_early_rule *r;
	const struct nfb_gen_cfg *cfg;
	const struct nfb_ctl *ctl;
	struct early_pkt p = { .ifin = ifindex };
	void *ifs, *rules;
	const __u64 *on;
	__u64 m, below;

	ecfg = bpf_map_lookup_elem(&nfb_early_cfg, &zero);
	if (!ecfg || ecfg->active >= NFB_EARLY_GENS) /* none in force: a reload is under way */
		return pass(ctx);
	egen = ecfg->active;
	ifs = bpf_map_lookup_elem(&nfb_early_if, &egen);
	on = ifs ? bpf_map_lookup_elem(ifs, &ifindex) : NULL;
	if (!on || !*on || parse(ctx, &p))
		return pass(ctx);
	m = static_rules(egen, &p) & *on;
	rules = bpf_map_lookup_elem(&nfb_early_rules, &egen);
	below = m ? (m & -m) - 1 : ~0ull; /* a dynamic rule takes the frame only before the first static one */
	if (ecfg->dyn_rules & *on & below)
		m |= dynamic_rules(rules, ecfg->dyn_rules & *on & below, &p);
	if (!m)
		return pass(ctx);
	rule = (__u32)nfb_ctz64(m & -m);
	r = rules ? bpf_map_lookup_elem(rules, &rule) : NULL;
	if (!r)
		return XDP_DROP;
	ctl = bpf_map_lookup_elem(&nfb_ctl, &zero);
	gen = ctl ? ctl->active_gen : 0;
	cfg = bpf_map_lookup_elem(&nfb_gen, &gen);
	p.hook = (__u8)hook_of(&p);
	nfb_count(cfg, gen, r->slot[p.hook & 1], p.len);
	if (r->flags & NFB_EARLY_LOG)
		early_log(cfg, gen, &p, r);
	return XDP_DROP;
}
