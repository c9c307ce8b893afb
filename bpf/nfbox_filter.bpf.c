// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfbox classifier: the one fixed BPF_PROG_TYPE_NETFILTER program. It parses
 * the (reassembled) datagram, looks each packet field up in the maps of the
 * active generation, ANDs the rule bit vectors those lookups name and takes
 * the verdict of the lowest set bit. The map layout is bpf/nfbox.h; every
 * policy decision lives in map contents, never in this code.
 *
 * Verdict order: hooks nfbox does not enforce and generations without the
 * hook accept; malformed packets drop (NFB_CNT_MALFORMED: an IP header, an
 * extension-header chain or the L4 key cut short, an IPv4-mapped IPv6
 * source or destination); with defrag on, a
 * fragment the kernel did not reassemble drops (NFB_CNT_FRAGMENT); then
 * NFB_OPT_ESTABLISHED_ACCEPT; then the rules, then the hook's default.
 *
 * Verification cost (each start and upgrade loads this program): the
 * subprograms called from the field loop or the judge's rounds are global
 * (non-static __noinline). The verifier checks a global function once, for
 * any arguments its prototype allows; a static one it checks again at each
 * call, for each state of the caller that reaches the call, and the
 * caller's states multiply through the unrolled field loop and the judge's
 * rounds (all static but the search, this program took 243,120
 * instructions and ~1 s of CPU to verify; `make bench`,
 * tests/bench/bench_verifier.c). Those left static are small and end a
 * path (nfb_count(), nfb_log(), nfb_reject()) or sit inside a global one
 * (nfb_conn_key_of()). A global function takes scalars, the context, or
 * pointers to memory of its pointee's size, which it must test for NULL
 * (those tests never fire here); a kernel object crosses as a scalar
 * (skb->_nfct, not the skb); it returns a scalar, never void (refused).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "nfbox.h"
#include "nfbox_filter.bpf.h"
#include "nfbox_shared.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* NFB_PLANT_*: set by the test build's loaders only (bpf/nfbox.h). A
 * constant to the verifier, which prunes what it turns off. */
const volatile __u32 nfb_plant = 0;

/*
 * Maps. The names are the contract with user space (appliance/), as are the
 * inner-map shapes: user space creates one inner map of each kind per
 * generation and stores it in slot `gen` of the outer; the kernel accepts
 * it only if type, key size, value size and map_flags equal the template's
 * below (and, for arrays without BPF_F_INNER_MAP, max_entries).
 *
 * BPF_F_MMAPABLE on the inner arrays (address, port, misc, rules, blob,
 * counters): user space mmap()s the spare generation's arrays and fills them
 * with memcpy, far cheaper than one syscall per entry; this program never
 * sees the difference. Through mmap() each element sits in an 8-byte slot
 * (the kernel rounds array elements up to 8 bytes), so a u32 locator is
 * every other u32 there. The flag is part of the contract: inner maps
 * without it are refused. Arrays with BPF_F_INNER_MAP are sized by each
 * generation to what its policy uses (their lookups are then helper calls,
 * not inlined); the misc array keeps the template's size (24 KiB).
 *
 * Inner templates give key_size/value_size, not BTF types: clang emits the
 * key structs of a map nested in an outer only as forward declarations, and
 * libbpf cannot size those. The inner maps carry no BTF either way.
 *
 * The interface hash is BPF_F_NO_PREALLOC: memory follows the entries (but
 * for its buckets), and a hash inner map must have the template's size.
 */

struct nfb_addr4_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_RANGE_MAX_ENTRIES); /* template: sized per generation */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_range4));
};

struct nfb_addr6_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_RANGE_MAX_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_range6));
};

struct nfb_iface_inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_IFACE_MAX_ENTRIES);
	__uint(key_size, sizeof(struct nfb_iface_key));
	__uint(value_size, sizeof(__u32));
};

struct nfb_port_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_PORT_MAX_ENTRIES); /* template: sized per generation */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
};

struct nfb_misc_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_ARRAY_FLAGS);
	__uint(max_entries, NFB_MISC_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
};

struct nfb_rules_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_RULE_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_rule));
};

struct nfb_limits_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_MAX_LIMITS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_limit_cfg));
};

/* Per-source buckets (bpf/nfbox.h, "Rate limits"). */
struct nfb_meter_inner {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NFB_METER_ENTRIES);
	__uint(key_size, sizeof(struct nfb_meter_key));
	__uint(value_size, sizeof(__u64));
};

struct nfb_blob_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_BLOB_FLAGS);
	__uint(max_entries, 1); /* template only: each generation sizes its own */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_chunk));
};

NFB_OUTER(nfb_addr4, nfb_addr4_inner);
NFB_OUTER(nfb_addr6, nfb_addr6_inner);
NFB_OUTER(nfb_iface, nfb_iface_inner);
NFB_OUTER(nfb_port, nfb_port_inner);
NFB_OUTER(nfb_misc, nfb_misc_inner);
NFB_OUTER(nfb_rules, nfb_rules_inner);
NFB_OUTER(nfb_limits, nfb_limits_inner);
NFB_OUTER(nfb_blob, nfb_blob_inner);
NFB_OUTER(nfb_meter, nfb_meter_inner);

/* Connection limits (bpf/nfbox.h, "Connection limits"): like the meter, a
 * generation has them only when its policy has connection limits, and one
 * pair passes from generation to generation while they do. */
struct nfb_conns_inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_CONN_ENTRIES);
	__uint(key_size, sizeof(struct nfb_conn_key));
	__uint(value_size, sizeof(struct nfb_conn_val));
};

struct nfb_conn_count_inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_CONN_OWNERS);
	__uint(key_size, sizeof(struct nfb_meter_key));
	__uint(value_size, sizeof(struct nfb_conn_count));
};

NFB_OUTER(nfb_conns, nfb_conns_inner);
NFB_OUTER(nfb_conn_count, nfb_conn_count_inner);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_MAX_DYNSETS);
	__type(key, __u32);
	__type(value, struct nfb_dyn_name);
} nfb_dyn_names SEC(".maps");

/* When a (limit, source) was last reported over its limit with an
 * overload set (bpf/nfbox.h, struct nfb_overload_seen): a small cache by
 * hash, where a collision only costs an event more. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_OVERLOAD_SEEN);
	__type(key, __u32);
	__type(value, struct nfb_overload_seen);
} nfb_overload_seen SEC(".maps");

/* Which scheduled rules are in force (bpf/nfbox.h, "Schedules"). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_GENS *NFB_SCHED_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} nfb_sched SEC(".maps");

/* The connections of scheduled rules (bpf/nfbox.h, "Schedules that end"):
 * a hash that takes memory as it is used, not an LRU allocated whole. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_SCHED_CONN_ENTRIES);
	__type(key, struct nfb_conn_key);
	__type(value, __u32);
} nfb_sched_conns SEC(".maps");

/* The connections nfb_sched_conns had no room for (bpf/nfbox.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_counter);
} nfb_sched_full SEC(".maps");
/* The live trace (bpf/nfbox.h, struct nfb_trace). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_trace);
} nfb_trace SEC(".maps");

/* Rejected packets' heads, for user space to answer. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, NFB_REJECTS_SIZE);
} nfb_rejects SEC(".maps");

static __always_inline int nfb_hook_of(__u8 nf_hook)
{
	switch (nf_hook) {
	case NF_INET_LOCAL_IN:
		return NFB_HOOK_INPUT;
	case NF_INET_FORWARD:
		return NFB_HOOK_FORWARD;
	case NF_INET_LOCAL_OUT:
		return NFB_HOOK_OUTPUT;
	}
	return -1;
}

static __always_inline int nfb_family_of(__u8 pf)
{
	if (pf == NFPROTO_IPV4)
		return NFB_FAM_IPV4;
	if (pf == NFPROTO_IPV6)
		return NFB_FAM_IPV6;
	return -1;
}

/* ---- parsing ---------------------------------------------------------- */

/* What parsing found. */
enum nfb_parse_result {
	NFB_PARSED = 0,	    /* keyed: ports, ICMP type, protocol, or (defrag off) fragment */
	NFB_MALFORMED = -1, /* a header or the L4 key cut short or inconsistent: drop */
	NFB_FRAGMENT = 1,   /* a fragment although the kernel reassembles (defrag on): drop */
};

/* IPv4: the header, and whether the datagram is a fragment. */
static __always_inline int nfb_parse_ipv4(struct bpf_dynptr *dp, struct nfb_pkt *p)
{
	struct nfb_ip4hdr buf;
	const struct nfb_ip4hdr *ip = bpf_dynptr_slice(dp, 0, &buf, sizeof(buf));
	__u32 hlen, tot;

	if (!ip || ip->ver_ihl >> 4 != 4)
		return NFB_MALFORMED;
	hlen = (ip->ver_ihl & 0xf) * 4;
	tot = bpf_ntohs(ip->tot_len);
	/* BIG TCP (IPv4 GSO packets over 64 KiB) carries tot_len 0. */
	if (tot == 0 && p->len > 0xffff)
		tot = p->len;
	if (hlen < sizeof(*ip) || tot < hlen || tot > p->len)
		return NFB_MALFORMED;
	__builtin_memcpy(p->saddr, ip->saddr, 4);
	__builtin_memcpy(p->daddr, ip->daddr, 4);
	p->proto = ip->protocol;
	p->l4_off = hlen;
	p->l3_end = tot;
	if (bpf_ntohs(ip->frag_off) & NFB_IP4_FRAG_MASK)
		p->l4kind = NFB_L4_FRAG;
	return NFB_PARSED;
}

/*
 * IPv6: the fixed header, then the whole extension-header chain, as long as
 * the datagram holds one (the kernel forwards any length): the upper-layer
 * protocol and where its header starts. A fragment header with an offset or
 * M set ends the walk (l4kind NFB_L4_FRAG, proto its next header); an
 * atomic fragment (both clear) is walked through. A chain cut short by the
 * datagram's end is malformed, never a key that rules cannot see; so is an
 * IPv4-mapped source or destination (nfb_v6_mapped).
 */
static __always_inline int nfb_parse_ipv6(struct bpf_dynptr *dp, struct nfb_pkt *p)
{
	struct nfb_ip6hdr buf;
	const struct nfb_ip6hdr *ip6 = bpf_dynptr_slice(dp, 0, &buf, sizeof(buf));
	__u32 off = sizeof(*ip6), end, plen, i;
	__u8 nh;

	if (!ip6 || ip6->ver_tc >> 4 != 6)
		return NFB_MALFORMED;
	plen = bpf_ntohs(ip6->payload_len);
	/* payload_len 0: jumbogram / BIG TCP, the skb length is the datagram. */
	end = plen ? plen + (__u32)sizeof(*ip6) : p->len;
	if (end > p->len)
		return NFB_MALFORMED;
	if ((nfb_v6_mapped(ip6->saddr) || nfb_v6_mapped(ip6->daddr)) && !(nfb_plant & NFB_PLANT_MAPPED_PASSES))
		return NFB_MALFORMED;
	__builtin_memcpy(p->saddr, ip6->saddr, 16);
	__builtin_memcpy(p->daddr, ip6->daddr, 16);
	nh = ip6->nexthdr;
	p->l3_end = end;

	bpf_for(i, 0, NFB_V6_MAX_EXT + 1)
	{
		if (nh == NFB_IPPROTO_FRAGMENT) {
			struct nfb_ip6frag fbuf;
			const struct nfb_ip6frag *fh;

			if (off + sizeof(fbuf) > end || !(fh = bpf_dynptr_slice(dp, off, &fbuf, sizeof(fbuf))))
				return NFB_MALFORMED;
			nh = fh->nexthdr;
			off += sizeof(fbuf);
			if (bpf_ntohs(fh->frag_off) & NFB_IP6_FRAG_MASK) {
				p->l4kind = NFB_L4_FRAG;
				break;
			}
			continue; /* atomic fragment */
		}
		if (!nfb_v6_is_ext(nh))
			break;
		{
			__u8 hbuf[2];
			const __u8 *h;

			if (off + 8 > end || !(h = bpf_dynptr_slice(dp, off, hbuf, sizeof(hbuf))))
				return NFB_MALFORMED;
			off += nfb_v6_ext_len(nh, h[1]);
			nh = h[0];
			if (off > end)
				return NFB_MALFORMED; /* the header runs past the datagram */
		}
	}
	/* Still in the chain after the last round: longer than any datagram. */
	if (p->l4kind != NFB_L4_FRAG && (nfb_v6_is_ext(nh) || nh == NFB_IPPROTO_FRAGMENT))
		return NFB_MALFORMED;
	p->proto = nh;
	p->l4_off = off;
	return NFB_PARSED;
}

/* Keys the L4 field: ports, ICMP type, or protocol. The key must be there:
 * 4 bytes for ports, 2 for an ICMP type and code. */
static __always_inline int nfb_parse_l4(struct bpf_dynptr *dp, struct nfb_pkt *p)
{
	__u32 off = p->l4_off, end = p->l3_end;

	if (p->l4kind == NFB_L4_FRAG) {
		p->mclass = NFB_MC_FRAG;
		return NFB_PARSED;
	}
	switch (p->proto) {
	case NFB_IPPROTO_TCP:
		p->pclass = NFB_PC_TCP;
		goto ports;
	case NFB_IPPROTO_UDP:
		p->pclass = NFB_PC_UDP;
		goto ports;
	case NFB_IPPROTO_SCTP:
		p->pclass = NFB_PC_SCTP;
		goto ports;
	case NFB_IPPROTO_UDPLITE:
		p->pclass = NFB_PC_UDPLITE;
		goto ports;
	}
	if ((p->family == NFB_FAM_IPV4 && p->proto == NFB_IPPROTO_ICMP) ||
	    (p->family == NFB_FAM_IPV6 && p->proto == NFB_IPPROTO_ICMPV6)) {
		__u8 tbuf[2];
		const __u8 *t;

		if (off + 2 > end || !(t = bpf_dynptr_slice(dp, off, tbuf, 2)))
			return NFB_MALFORMED;
		p->mclass = p->family == NFB_FAM_IPV4 ? NFB_MC_ICMP : NFB_MC_ICMPV6;
		p->icmp_type = t[0];
		p->dport = (__u16)t[0] << 8 | t[1];
		p->l4kind = NFB_L4_ICMP;
		return NFB_PARSED;
	}
	p->l4kind = NFB_L4_PROTO;
	p->mclass = NFB_MC_PROTO;
	return NFB_PARSED;

ports:
	{
		__be16 pbuf[2];
		const __be16 *pp;

		if (off + 4 > end || !(pp = bpf_dynptr_slice(dp, off, pbuf, sizeof(pbuf))))
			return NFB_MALFORMED;
		p->sport = bpf_ntohs(pp[0]);
		p->dport = bpf_ntohs(pp[1]);
		p->l4kind = NFB_L4_PORTS;
	}
	return NFB_PARSED;
}

static __always_inline __u8 nfb_ct_state(const struct sk_buff *skb)
{
	unsigned long nfct = skb->_nfct;

	if (!nfct)
		return NFB_CT_INVALID;
	switch (nfct & 7) {
	case 0: /* IP_CT_ESTABLISHED */
	case 3: /* IP_CT_ESTABLISHED_REPLY */
		return NFB_CT_ESTABLISHED;
	case 1: /* IP_CT_RELATED */
	case 4: /* IP_CT_RELATED_REPLY */
		return NFB_CT_RELATED;
	case 2: /* IP_CT_NEW */
		return NFB_CT_NEW;
	case 7: /* IP_CT_UNTRACKED */
		return NFB_CT_UNTRACKED;
	}
	return NFB_CT_INVALID;
}

/* enum nfb_parse_result. Not inlined: the header buffers live in this frame
 * only, not beside the search's (BPF stack limit of 512 bytes for the whole
 * call chain). Global: see the top. */
__noinline int nfb_parse(struct bpf_nf_ctx *ctx, struct nfb_pkt *p, bool defrag)
{
	struct bpf_dynptr dp;
	int r;

	if (!p || bpf_dynptr_from_skb((struct __sk_buff *)ctx->skb, 0, &dp))
		return NFB_MALFORMED;
	r = p->family == NFB_FAM_IPV4 ? nfb_parse_ipv4(&dp, p) : nfb_parse_ipv6(&dp, p);
	if (r != NFB_PARSED)
		return r;
	if (p->l4kind == NFB_L4_FRAG && defrag)
		return NFB_FRAGMENT;
	return nfb_parse_l4(&dp, p);
}

/* ---- field lookups ---------------------------------------------------- */

/*
 * One small lookup function per map kind, not inlined (and global: see
 * the top), and each builds its key in its own frame from values passed in
 * registers.
 *
 * Not inlined: inlined, clang sinks the lookups of two maps (port and misc,
 * addr4 and addr6) into one call instruction; the verifier then sees two maps
 * at one call site and keeps the generic bpf_map_lookup_elem, an indirect
 * call (retpolines here) that cannot be inlined.
 *
 * Keys in the callee: the verifier limits the stack of a whole call chain
 * to 512 bytes, and nfbox_filter() -> nfb_search() is the deep chain. Keys
 * built in nfbox_filter() (seven of them once the field loop is unrolled)
 * sit in its frame for the whole program unless the compiler overlaps them;
 * clang 14 did, clang 19 does not (the chain reached 528 bytes). A leaf's
 * frame only counts on its own short chain. tests/bpf/test_bpf_filter.c
 * ("stack") keeps the deep chain within budget.
 *
 * Each returns the locator, or NFB_LOC_UNSET on a miss (also when the
 * generation lacks the inner map).
 */
static __always_inline __u32 nfb_loc_in(void *outer, __u32 gen, const void *key)
{
	void *map = bpf_map_lookup_elem(outer, &gen);
	__u32 *loc = map ? bpf_map_lookup_elem(map, key) : NULL;

	return loc ? *loc : NFB_LOC_UNSET;
}

__noinline __u32 nfb_get_iface(__u32 gen, __u32 ifindex, __u32 hook, __u32 dir)
{
	struct nfb_iface_key key = { .ifindex = ifindex, .hook = hook, .dir = dir };

	return nfb_loc_in(&nfb_iface, gen, &key);
}

/* Whether range idx of an inner address map starts at or below the address
 * (ahi:alo; IPv4 in alo), its locator in *loc; -1 if idx is past the map. */
static __always_inline int nfb_range_le(void *map, bool v6, __u32 idx, __u64 ahi, __u64 alo, __u32 *loc)
{
	if (v6) {
		const struct nfb_range6 *r = bpf_map_lookup_elem(map, &idx);

		if (!r)
			return -1;
		*loc = r->loc;
		return r->hi < ahi || (r->hi == ahi && r->lo <= alo);
	} else {
		const struct nfb_range4 *r = bpf_map_lookup_elem(map, &idx);

		if (!r)
			return -1;
		*loc = r->loc;
		return r->start <= alo;
	}
}

/* The locator of the range holding an address (host order) among the n
 * ranges from base of map (bpf/nfbox.h, "Address maps"): the last range
 * that starts at or below it. v6 is a constant at each call, so each family
 * gets its own copy with its own value layout. */
static __always_inline __u32 nfb_range_find(void *map, bool v6, __u32 base, __u32 n, __u64 ahi, __u64 alo)
{
	__u32 lo = 0, hi = n, mid, i, loc = NFB_LOC_UNSET;
	int le;

	if (!map || !n)
		return NFB_LOC_UNSET;
	bpf_for(i, 0, NFB_RANGE_STEPS)
	{
		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		le = nfb_range_le(map, v6, base + mid, ahi, alo, &loc);
		if (le < 0)
			return NFB_LOC_UNSET;
		if (le)
			lo = mid;
		else
			hi = mid;
	}
	return nfb_range_le(map, v6, base + lo, ahi, alo, &loc) < 0 ? NFB_LOC_UNSET : loc;
}

/* One function per family: each looks up its own outer map at a call site
 * of its own, which keeps that lookup inlined (see above). */
__noinline __u32 nfb_get_range4(__u32 gen, __u32 base, __u32 n, __u32 addr)
{
	return nfb_range_find(bpf_map_lookup_elem(&nfb_addr4, &gen), false, base, n, 0, addr);
}

__noinline __u32 nfb_get_range6(__u32 gen, __u32 base, __u32 n, __u64 ahi, __u64 alo)
{
	return nfb_range_find(bpf_map_lookup_elem(&nfb_addr6, &gen), true, base, n, ahi, alo);
}

/* The port map's top gives the page, the page the locator. */
__noinline __u32 nfb_get_port(__u32 gen, __u32 top, __u32 port)
{
	void *map = bpf_map_lookup_elem(&nfb_port, &gen);
	__u32 *v, idx;

	if (!map)
		return NFB_LOC_UNSET;
	v = bpf_map_lookup_elem(map, &top);
	if (!v || *v >= NFB_PORT_MAX_PAGES)
		return NFB_LOC_UNSET;
	idx = NFB_PORT_TOP + *v * 256 + (port & 255);
	v = bpf_map_lookup_elem(map, &idx);
	return v ? *v : NFB_LOC_UNSET;
}

__noinline __u32 nfb_get_misc(__u32 gen, __u32 idx)
{
	return nfb_loc_in(&nfb_misc, gen, &idx);
}

static __always_inline __u32 nfb_loc_or_miss(__u32 loc, const struct nfb_hook_cfg *hc, __u32 field)
{
	return loc != NFB_LOC_UNSET ? loc : hc->miss[field];
}

static __always_inline __u32 nfb_loc_iface(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen,
					   __u32 field)
{
	__u32 in = field == NFB_F_IIF;

	return nfb_loc_or_miss(nfb_get_iface(gen, in ? p->ifin : p->ifout, p->hook, !in), hc, field);
}

static __always_inline __u32 nfb_loc_addr(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen,
					  __u32 field)
{
	__u32 dir = field == NFB_F_SRC ? 0 : 1, a4, loc;
	const __u8 *a = dir ? p->daddr : p->saddr;
	__u64 a6[2];

	if (p->family == NFB_FAM_IPV4) {
		__builtin_memcpy(&a4, a, 4);
		loc = nfb_get_range4(gen, hc->range[0][dir][0], hc->range[0][dir][1], bpf_ntohl(a4));
	} else {
		__builtin_memcpy(a6, a, 16);
		loc = nfb_get_range6(gen, hc->range[1][dir][0], hc->range[1][dir][1], bpf_be64_to_cpu(a6[0]),
				     bpf_be64_to_cpu(a6[1]));
	}
	return nfb_loc_or_miss(loc, hc, field);
}

static __always_inline __u32 nfb_loc_l4(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen)
{
	__u32 loc;

	if (p->l4kind == NFB_L4_PORTS)
		loc = nfb_get_port(gen, nfb_port_top(p->hook, 1, p->pclass, p->dport), p->dport);
	else
		loc = nfb_get_misc(
			gen, nfb_misc_index(p->hook, p->mclass, p->l4kind == NFB_L4_ICMP ? p->icmp_type : p->proto));
	return nfb_loc_or_miss(loc, hc, NFB_F_L4);
}

static __always_inline __u32 nfb_loc_sport(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen)
{
	if (p->l4kind != NFB_L4_PORTS)
		return hc->sport_none;
	return nfb_loc_or_miss(nfb_get_port(gen, nfb_port_top(p->hook, 0, p->pclass, p->sport), p->sport), hc,
			       NFB_F_SPORT);
}

static __always_inline __u32 nfb_field_loc(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen,
					   __u32 field)
{
	switch (field) {
	case NFB_F_IIF:
	case NFB_F_OIF:
		return nfb_loc_iface(hc, p, gen, field);
	case NFB_F_SRC:
	case NFB_F_DST:
		return nfb_loc_addr(hc, p, gen, field);
	case NFB_F_L4:
		return nfb_loc_l4(hc, p, gen);
	case NFB_F_SPORT:
		return nfb_loc_sport(hc, p, gen);
	default:
		return hc->ct[p->ct < NFB_CT_MAX ? p->ct : NFB_CT_INVALID];
	}
}

/* ---- bit-vector search ------------------------------------------------ */

/*
 * Word (64 k + b) of the vector at word offset o of chunk c, where bit b of
 * the summary word S[k] is known set (the caller searches the AND of all
 * summaries) and below = (1 << b) - 1. A packed index past the chunk reads
 * as an empty word. The masks are for the verifier: o + 2 nsum <= chunk
 * words was checked when the vector was resolved.
 */
static __always_inline __u64 nfb_vec_word(const struct nfb_chunk *c, __u32 o, __u32 nsum, __u32 k, __u64 below)
{
	__u64 s = c->w[(o + k) & NFB_LOC_OFF_MASK];
	__u64 r = k ? c->w[(o + nsum + k) & NFB_LOC_OFF_MASK] : 0; /* R[0] holds T */
	__u64 idx = (__u64)o + 2 * nsum + r + nfb_popcount64(s & below);

	if (idx >= NFB_CHUNK_WORDS)
		return 0;
	return c->w[idx & NFB_LOC_OFF_MASK];
}

/* Input of nfb_search(): a struct, because a global function sees a
 * pointer argument as memory of the pointee's size. */
struct nfb_search_in {
	__u32 locs[NFB_F_MAX]; /* one per field, every entry valid, repeats allowed */
	__u32 nsum;
	__u32 gen;
	__u32 start; /* rules below it are not candidates (past an over-limit rule) */
};

/*
 * First rule, from in->start on, set in the AND of the vectors named by
 * in->locs[]. Returns the rule, or -1 if none: also when a vector cannot be resolved (missing chunk,
 * vector past the chunk), which is an empty vector. Cost: one chunk lookup
 * per distinct vector, one word per field for each of the nsum summary
 * words, then a few words per candidate the summaries leave.
 *
 * A global (not static) function on purpose: the verifier checks it once,
 * for any input, instead of once per caller state. The caller's 2^7 ways of
 * using fields (and the scalar ids its locator copies share) would otherwise
 * multiply the states of the candidate loop past the 1M-instruction limit.
 * For the same reason nothing here depends on a per-path constant: a
 * repeated slot copies the chunk pointer but recomputes its offset, and the
 * candidate loop tests for repeats on locators read from memory, never on a
 * mask built in registers (a constant per path, which would split states).
 */
__noinline int nfb_search(const struct nfb_search_in *in)
{
	const struct nfb_chunk *c[NFB_F_MAX];
	__u32 o[NFB_F_MAX], nsum, gen, k, j, t;
	__u64 top = ~0ull;
	int rule = -1, i;
	void *blob;

	if (!in)
		return -1;
	nsum = in->nsum;
	gen = in->gen;
	if (!nsum || nsum > NFB_MAX_SUM)
		return -1;
	blob = bpf_map_lookup_elem(&nfb_blob, &gen);
	if (!blob)
		return -1;

	/* Resolve each distinct vector; a field with the same locator as the
	 * one before shares its chunk. */
#pragma clang loop unroll(full)
	for (i = 0; i < NFB_F_MAX; i++) {
		__u32 loc = in->locs[i];
		__u32 chunk = loc >> NFB_LOC_SHIFT;

		o[i] = loc & NFB_LOC_OFF_MASK;
		if (i > 0 && loc == in->locs[i - 1]) {
			c[i] = c[i - 1];
			continue;
		}
		c[i] = bpf_map_lookup_elem(blob, &chunk);
		if (!c[i])
			return -1;
		if (o[i] + 2 * nsum > NFB_CHUNK_WORDS)
			return -1;
	}

	/* The AND of the top summaries names the summary words worth a look;
	 * for each, in ascending order, summary word k of the AND, then its
	 * candidate words; the first nonzero AND wins. Words and bits below
	 * start are masked off (rule start is in word start / 64, which is bit
	 * start / 64 % 64 of summary word start / 4096). in->start is read
	 * where it is used: held in a register, its spill would cost stack. */
#pragma clang loop unroll(full)
	for (i = 0; i < NFB_F_MAX; i++)
		top &= c[i]->w[(o[i] + nsum) & NFB_LOC_OFF_MASK];
	if (in->start / 4096 >= 64)
		return -1;
	top &= ~0ull << (in->start / 4096);
	bpf_for(t, 0, NFB_MAX_SUM)
	{
		__u64 a = ~0ull;

		if (!top)
			break;
		k = nfb_ctz64(top);
		top &= top - 1;
#pragma clang loop unroll(full)
		for (i = 0; i < NFB_F_MAX; i++)
			a &= c[i]->w[(o[i] + k) & NFB_LOC_OFF_MASK];
		if (k == in->start / 4096)
			a &= ~0ull << (in->start / 64 % 64);
		if (!a)
			continue; /* no candidate: spare the inner iterator's calls */
		bpf_for(j, 0, 64)
		{
			__u64 low, below, word = ~0ull;
			__u32 kk = k, ns = nsum;

			/* Keep clang from hoisting 3 addresses per slot out of
			 * this loop: their spills would blow the 512-byte stack. */
			barrier_var(kk);
			barrier_var(ns);
			if (!a)
				break;
			low = a & -a;
			a ^= low;
			below = low - 1;
			/* A slot repeating the one before is skipped. The test
			 * reads the locators again: values the verifier does not
			 * know, so its states do not split by field use. */
#pragma clang loop unroll(full)
			for (i = 0; i < NFB_F_MAX; i++) {
				if (i == 0 || in->locs[i] != in->locs[i - 1])
					word &= nfb_vec_word(c[i], o[i], ns, kk, below);
			}
			if (kk * 64 + nfb_popcount64(below) == in->start / 64)
				word &= ~0ull << (in->start % 64);
			if (word) {
				rule = (int)(((k * 64 + nfb_popcount64(below)) * 64) + nfb_ctz64(word));
				break;
			}
		}
		if (rule >= 0)
			break;
	}
	return rule;
}

/*
 * Fill in->locs[] with each field's locator: 0, or -1 for a corrupt
 * locator (an empty vector). Unused fields repeat a used field's locator
 * (AND is idempotent and the search skips repeats), so the search needs no
 * per-field test. Not inlined: the seven unrolled lookups keep many values
 * live, and their spills belong in this short-lived frame, not in
 * nfbox_filter()'s, which sits under nfb_search() (the 512-byte chain).
 */
__noinline int nfb_locate(const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen, struct nfb_search_in *in)
{
	__u32 first = NFB_LOC_UNSET, prev = NFB_LOC_UNSET, fields;
	__u32 *locs;
	int f;

	if (!hc || !p || !in)
		return -1;
	fields = hc->fields;
	locs = in->locs;

#pragma clang loop unroll(full)
	for (f = 0; f < NFB_F_MAX; f++) {
		__u32 loc;

		if (!(fields & (1u << f))) {
			locs[f] = prev;
			continue;
		}
		loc = nfb_field_loc(hc, p, gen, f);
		if (loc >> NFB_LOC_SHIFT >= NFB_MAX_CHUNKS)
			return -1;
		locs[f] = loc;
		prev = loc;
		if (first == NFB_LOC_UNSET)
			first = loc;
	}
#pragma clang loop unroll(full)
	for (f = 0; f < NFB_F_MAX; f++) {
		if (locs[f] == NFB_LOC_UNSET)
			locs[f] = first;
	}
	return 0;
}

/* ---- verdict ---------------------------------------------------------- */

/* A rejected packet: its head to user space, which answers it (a TCP reset
 * or an ICMP error), at most reject_rate per second for the appliance. */
static __noinline void nfb_reject(struct bpf_nf_ctx *ctx, const struct nfb_gen_cfg *cfg, const struct nfb_pkt *p,
				  __u32 kind)
{
	__u32 n = p->len < NFB_REJECT_BYTES ? p->len : NFB_REJECT_BYTES;
	struct bpf_dynptr dp;
	struct nfb_reject *e;

	if (!nfb_bucket_take(NFB_BUCKET_REJECT, cfg->reject_rate, cfg->reject_period, cfg->reject_burst,
			     bpf_ktime_get_ns())) {
		nfb_count_fixed(NFB_CNT_REJECT_LIMITED, p->len);
		return;
	}
	e = bpf_ringbuf_reserve(&nfb_rejects, sizeof(*e), 0);
	if (!e) {
		nfb_count_fixed(NFB_CNT_REJECT_LOST, p->len);
		return;
	}
	if (bpf_dynptr_from_skb((struct __sk_buff *)ctx->skb, 0, &dp) || bpf_dynptr_read(e->data, n, &dp, 0, 0)) {
		bpf_ringbuf_discard(e, 0);
		nfb_count_fixed(NFB_CNT_REJECT_LOST, p->len);
		return;
	}
	e->len = n;
	e->ifin = p->ifin;
	e->family = p->family;
	e->hook = p->hook;
	e->kind = kind;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void nfb_event_fill(struct nfb_event *e, const struct nfb_pkt *p, __u32 gen, __u32 rule,
					   __u32 counter, __u32 action)
{
	e->ts_ns = bpf_ktime_get_ns();
	e->counter = counter;
	e->rule = rule;
	e->gen = gen;
	e->len = p->len;
	e->ifin = p->ifin;
	e->ifout = p->ifout;
	e->hook = p->hook;
	e->family = p->family;
	e->action = (__u8)action;
	e->proto = p->proto;
	e->sport = p->sport;
	e->dport = p->dport;
	__builtin_memcpy(e->saddr, p->saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, p->daddr, sizeof(e->daddr));
}

static __noinline void nfb_log(const struct nfb_gen_cfg *cfg, const struct nfb_pkt *p, __u32 gen, __u32 rule,
			       const struct nfb_rule *r)
{
	struct nfb_event *e;

	if (!nfb_log_allowed(cfg, bpf_ktime_get_ns())) {
		nfb_count_fixed(NFB_CNT_LOG_LIMITED, p->len);
		return;
	}
	e = bpf_ringbuf_reserve(&nfb_events, sizeof(*e), 0);
	if (!e) {
		nfb_count_fixed(NFB_CNT_LOG_DROPPED, p->len);
		return;
	}
	nfb_event_fill(e, p, gen, rule, r->counter, r->action);
	bpf_ringbuf_submit(e, 0);
}

static __noinline int nfb_conn_key_of(struct nf_conn *ct, __u8 family, struct nfb_conn_key *k);

/* A new connection accepted: kept with the rule's cut id (a scheduled rule
 * whose connections are cut at its edge), else any entry its tuple left
 * from an earlier connection goes (bpf/nfbox.h, "Schedules that end"). One
 * the map has no room for is counted in nfb_sched_full at its first packet
 * (not yet confirmed: a retransmitted first packet is not counted again). */
static __noinline void nfb_sched_conn(const struct sk_buff *skb, __u8 family, __u32 cut, __u32 len)
{
	struct nf_conn *ct = (struct nf_conn *)(skb->_nfct & ~7ul);
	struct nfb_conn_key k;
	unsigned long status;
	__u32 zero = 0;

	if (!ct || (nfb_plant & NFB_PLANT_SCHED_UNKEPT) || nfb_conn_key_of(ct, family, &k))
		return;
	if (!cut) {
		bpf_map_delete_elem(&nfb_sched_conns, &k);
		return;
	}
	if (bpf_map_update_elem(&nfb_sched_conns, &k, &cut, BPF_ANY) == 0 ||
	    bpf_core_read(&status, sizeof(status), &ct->status) || (status & IPS_CONFIRMED) ||
	    (nfb_plant & NFB_PLANT_SCHED_UNCOUNTED))
		return;
	nfb_count_add(bpf_map_lookup_elem(&nfb_sched_full, &zero), len);
}

/* a and b agree in their first len bits (len <= 128). */
static __always_inline bool nfb_prefix_eq(const __u8 *a, const __u8 *b, __u32 len)
{
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < 16; i++) {
		__u32 bits = len > (__u32)i * 8 ? len - (__u32)i * 8 : 0;
		__u8 mask = bits >= 8 ? 0xff : (__u8)(0xff00 >> bits);

		if ((a[i] ^ b[i]) & mask)
			return false;
	}
	return true;
}

/* The packet matches the live trace, and one of its packets left was
 * taken (a few tries under contention, then not traced). */
static __always_inline bool nfb_traced(struct nfb_trace *t, const struct nfb_pkt *p)
{
	__u32 left;
	int i;

	if (!(nfb_plant & NFB_PLANT_TRACE_ALL) &&
	    ((t->family < NFB_FAM_MAX && t->family != p->family) || (t->ifin && t->ifin != p->ifin) ||
	     ((t->flags & NFB_TRACE_PROTO) && t->proto != p->proto) ||
	     ((t->flags & NFB_TRACE_PORT) && (p->l4kind != NFB_L4_PORTS || t->dport != p->dport)) ||
	     !nfb_prefix_eq(t->saddr, p->saddr, t->src_len) || !nfb_prefix_eq(t->daddr, p->daddr, t->dst_len)))
		return false;
#pragma clang loop unroll(full)
	for (i = 0; i < 4; i++) {
		left = *(volatile __u32 *)&t->left;
		if (!left)
			return false;
		if (__sync_val_compare_and_swap(&t->left, left, left - 1) == left)
			return true;
	}
	return false;
}

/* The traced packet's event: the rule (counter slot, action) that decided.
 * A global function, verified once (not at each of its callers). */
__noinline int nfb_trace_event(const struct nfb_pkt *p, __u32 gen, __u32 rule, __u32 counter, __u32 action)
{
	struct nfb_event *e;
	__u32 zero = 0;
	struct nfb_trace *t = bpf_map_lookup_elem(&nfb_trace, &zero);

	if (!p || !t || !*(volatile __u32 *)&t->left || !nfb_traced(t, p))
		return 0;
	e = bpf_ringbuf_reserve(&nfb_events, sizeof(*e), 0);
	if (!e)
		return 0; /* the tracer is told it saw fewer than it asked when the trace times out */
	nfb_event_fill(e, p, gen, rule, counter, action | NFB_ACT_TRACED);
	bpf_ringbuf_submit(e, 0);
	return 1;
}

static __always_inline int nfb_default(struct bpf_nf_ctx *ctx, const struct nfb_gen_cfg *cfg, __u32 gen,
				       const struct nfb_hook_cfg *hc, const struct nfb_pkt *p)
{
	nfb_count(cfg, gen, hc->default_counter, p->len);
	if ((cfg->options & NFB_OPT_SCHED_CUT) && p->ct == NFB_CT_NEW && hc->default_action == NFB_ACT_ACCEPT)
		nfb_sched_conn(ctx->skb, p->family, 0, p->len);
	nfb_trace_event(p, gen, NFB_RULE_DEFAULT, hc->default_counter, hc->default_action);
	return hc->default_action == NFB_ACT_ACCEPT ? NF_ACCEPT : NF_DROP;
}

static __always_inline int nfb_rule_verdict(struct bpf_nf_ctx *ctx, const struct nfb_gen_cfg *cfg,
					    const struct nfb_pkt *p, __u32 gen, __u32 rule, const struct nfb_rule *r)
{
	nfb_count(cfg, gen, r->counter, p->len);
	if ((cfg->options & NFB_OPT_SCHED_CUT) && p->ct == NFB_CT_NEW && r->action == NFB_ACT_ACCEPT)
		nfb_sched_conn(ctx->skb, p->family, r->cut, p->len);
	if (r->flags & NFB_RULE_LOG)
		nfb_log(cfg, p, gen, rule, r);
	nfb_trace_event(p, gen, rule, r->counter, r->action);
	if (r->action == NFB_ACT_REJECT)
		nfb_reject(ctx, cfg, p, (r->flags >> NFB_RULE_REJECT_SHIFT) & 0xf);
	return r->action == NFB_ACT_ACCEPT ? NF_ACCEPT : NF_DROP;
}

/* ---- rate limits (bpf/nfbox.h, "Rate limits") -------------------------- */

/* A token from the GCRA bucket at *tat: true if the packet conforms. A tat
 * further ahead than depth (left by a slower limit before a reload) counts
 * as an empty bucket now: it is pulled back to now + depth, so a raised
 * limit applies at once rather than after the old one's wait. */
static __always_inline bool nfb_gcra(__u64 *tat, __u64 now, __u64 interval, __u64 depth)
{
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)tat, next;

		if (old > now + depth) {
			__sync_val_compare_and_swap(tat, old, now + depth);
			return false;
		}
		next = (old > now ? old : now) + interval;
		if (next - now > depth)
			return false;
		if (__sync_val_compare_and_swap(tat, old, next) == old)
			return true;
		/* another CPU took a token meanwhile: look again */
	}
	return false; /* contended past all tries: over, the safe side */
}

/* ---- connection limits (bpf/nfbox.h, "Connection limits") -------------- */

/* One connection of owner given back: the count goes down, and an entry
 * that reaches zero is marked dead, then deleted. */
static __always_inline void nfb_conn_put(void *counts, const struct nfb_meter_key *owner)
{
	struct nfb_conn_count *c = bpf_map_lookup_elem(counts, owner);

	if (!c)
		return;
	if (__sync_fetch_and_add(&c->n, -1) == 1 && __sync_val_compare_and_swap(&c->n, 0, NFB_CONN_DEAD) == 0)
		bpf_map_delete_elem(counts, owner);
}

/* One connection more for owner while it holds fewer than max (a
 * compare-and-swap: exact under any number of CPUs): whether it was added.
 * Not when over, nor when contended past all tries (the safe side). */
static __always_inline bool nfb_conn_inc(void *counts, const struct nfb_meter_key *owner, __u64 max)
{
	struct nfb_conn_count one = { .n = 1 }, *c;
	__u64 n;
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < 4; i++) {
		c = bpf_map_lookup_elem(counts, owner);
		if (!c) {
			if (bpf_map_update_elem(counts, owner, &one, BPF_NOEXIST) == 0)
				return true;
			continue; /* another CPU made it, or the map is full */
		}
		n = *(volatile __u64 *)&c->n;
		if (n == NFB_CONN_DEAD)
			continue; /* on its way out: make a new one */
		if (n >= max)
			return false;
		if (__sync_val_compare_and_swap(&c->n, n, n + 1) == n)
			return true;
	}
	return false;
}

/* A counted connection that ended: its entry goes, and its count unless it
 * was unverified (not in its owner's count). since_ns goes to
 * NFB_CONN_GONE first, in one exchange: of two CPUs forgetting it, or one
 * forgetting it while user space confirms it, exactly one decides. 1 if it
 * was there. */
static __always_inline int nfb_conn_forget(void *conns, void *counts, const struct nfb_conn_key *k)
{
	struct nfb_conn_val *v = bpf_map_lookup_elem(conns, k);
	struct nfb_meter_key owner;
	__u64 was;

	if (!v)
		return 0;
	__builtin_memcpy(&owner, &v->owner, sizeof(owner));
	was = __sync_lock_test_and_set(&v->since_ns, NFB_CONN_GONE);
	if (was == NFB_CONN_GONE)
		return 0; /* another CPU is forgetting it */
	bpf_map_delete_elem(conns, k);
	if (was != NFB_CONN_UNVERIFIED)
		nfb_conn_put(counts, &owner);
	return 1;
}

/* The conntrack entry of a packet's skb->_nfct: NULL for none. */
static __always_inline struct nf_conn *nfb_ct_of(__u64 nfct)
{
	return (struct nf_conn *)(nfct & ~7ul);
}

/* Whether TCP closed the connection (conntrack's TIME_WAIT or CLOSE: ct
 * count's already_closed()). */
static __always_inline bool nfb_ct_closed(struct nf_conn *ct)
{
	__u8 st = 0;

	if ((nfb_plant & NFB_PLANT_KEEP_CLOSED) || bpf_core_read(&st, sizeof(st), &ct->proto.tcp.state))
		return false;
	return st == TCP_CONNTRACK_TIME_WAIT || st == TCP_CONNTRACK_CLOSE;
}

/* The connection's conntrack original tuple. */
static __noinline int nfb_conn_key_of(struct nf_conn *ct, __u8 family, struct nfb_conn_key *k)
{
	struct nf_conntrack_tuple t;

	if (!ct || bpf_core_read(&t, sizeof(t), &ct->tuplehash[0].tuple))
		return -1;
	__builtin_memset(k, 0, sizeof(*k));
	__builtin_memcpy(k->src, &t.src.u3, 16);
	__builtin_memcpy(k->dst, &t.dst.u3, 16);
	k->sport = t.src.u.all;
	k->dport = t.dst.u.all;
	k->proto = t.dst.protonum;
	k->family = family;
	return 0;
}

/* A TCP packet of a connection TCP has closed (with NFB_OPT_CONN_LIMITS,
 * before established: accept): its count given back now, not when user
 * space hears of it, so that a source that opens and resets connections
 * one after another holds one at a time whatever its pace. */
__noinline int nfb_conn_closed(__u64 nfct, __u8 family, __u32 gen)
{
	struct nf_conn *ct = nfb_ct_of(nfct);
	struct nfb_conn_key k;
	void *conns, *counts;

	if (!ct || !nfb_ct_closed(ct) || nfb_conn_key_of(ct, family, &k))
		return 0;
	conns = bpf_map_lookup_elem(&nfb_conns, &gen);
	counts = bpf_map_lookup_elem(&nfb_conn_count, &gen);
	if (conns && counts)
		nfb_conn_forget(conns, counts, &k);
	return 0;
}

/*
 * Whether the new connection fits the owner's count: taken (true), or over
 * (false). A connection counted already (its SYN sent again) fits without
 * a second count, and so does one TCP has closed (its count given back, if
 * it had one). Over also when the connection cannot be read or kept
 * (nfb_conns full): the rule does not match, the safe side.
 */
__noinline bool nfb_conn_take(__u64 nfct, const struct nfb_meter_key *owner, __u64 max, __u8 family, __u32 gen)
{
	struct nf_conn *ct = nfb_ct_of(nfct);
	struct nfb_conn_key k;
	struct nfb_conn_val v;
	void *conns = bpf_map_lookup_elem(&nfb_conns, &gen), *counts = bpf_map_lookup_elem(&nfb_conn_count, &gen);
	int r;

	if (!owner || !conns || !counts || nfb_conn_key_of(ct, family, &k))
		return false;
	if (k.proto == NFB_IPPROTO_TCP && nfb_ct_closed(ct)) {
		nfb_conn_forget(conns, counts, &k);
		return true;
	}
	if (bpf_map_lookup_elem(conns, &k))
		return true;
	if (!nfb_conn_inc(counts, owner, max))
		return false;
	__builtin_memcpy(&v.owner, owner, sizeof(v.owner));
	v.since_ns = bpf_ktime_get_ns();
	r = bpf_map_update_elem(conns, &k, &v, BPF_NOEXIST);
	if (r == 0)
		return true;
	nfb_conn_put(counts, owner);
	return r == -17; /* -EEXIST: another CPU counted it meanwhile; else full */
}

/* An unverified connection conntrack says is open: counted again (whatever
 * its owner's limit: it is open), then marked so; one counted already is
 * marked confirmed (since_ns 0: not asked about again). 1 if it is there. */
static __always_inline int nfb_conn_confirm(void *conns, void *counts, const struct nfb_conn_key *k)
{
	struct nfb_conn_val *v = bpf_map_lookup_elem(conns, k);
	struct nfb_meter_key owner;
	__u64 s;

	if (!v)
		return 0;
	s = v->since_ns;
	if (s == NFB_CONN_GONE)
		return 0;
	if (s != NFB_CONN_UNVERIFIED) {
		if (s)
			__sync_val_compare_and_swap(&v->since_ns, s, 0);
		return 1;
	}
	__builtin_memcpy(&owner, &v->owner, sizeof(owner));
	if (!nfb_conn_inc(counts, &owner, NFB_CONN_DEAD)) /* whatever its limit: it is open */
		return 0;				  /* asked again next time */
	if (__sync_val_compare_and_swap(&v->since_ns, NFB_CONN_UNVERIFIED, 0) != NFB_CONN_UNVERIFIED) {
		nfb_conn_put(counts, &owner); /* forgotten meanwhile, as unverified */
		return 0;
	}
	return 1;
}

struct nfb_distrust {
	__u32 gen;
	__u32 n;
	__u64 before;
};

/* One connection counted before the distrust began: unverified, and out of
 * its owner's count. */
static long nfb_distrust_one(void *map, const struct nfb_conn_key *k, struct nfb_conn_val *v, struct nfb_distrust *d)
{
	struct nfb_meter_key owner;
	void *counts;
	__u64 s = v->since_ns;

	(void)map;
	(void)k;
	if (s == NFB_CONN_UNVERIFIED || s == NFB_CONN_GONE || s >= d->before)
		return 0; /* counted since: trusted */
	__builtin_memcpy(&owner, &v->owner, sizeof(owner));
	if (__sync_val_compare_and_swap(&v->since_ns, s, NFB_CONN_UNVERIFIED) != s)
		return 0;
	counts = bpf_map_lookup_elem(&nfb_conn_count, &d->gen);
	if (counts)
		nfb_conn_put(counts, &owner);
	d->n++;
	return 0;
}

/* User space's requests about the counts (struct nfb_conns_op), run with
 * BPF_PROG_RUN; the return value is the verb's (bpf/nfbox.h). */
SEC("syscall")
int nfbox_conns(struct nfb_conns_op *arg)
{
	struct nfb_distrust d = { .before = bpf_ktime_get_ns() };
	struct nfb_conn_key k;
	const struct nfb_ctl *ctl;
	void *conns, *counts;
	__u32 zero = 0, verb;

	ctl = bpf_map_lookup_elem(&nfb_ctl, &zero);
	d.gen = ctl ? ctl->active_gen : 0;
	conns = bpf_map_lookup_elem(&nfb_conns, &d.gen);
	counts = bpf_map_lookup_elem(&nfb_conn_count, &d.gen);
	if (!conns || !counts)
		return 0;
	verb = arg->verb;
	if (verb == NFB_CONNS_DISTRUST) {
		bpf_for_each_map_elem(conns, nfb_distrust_one, &d, 0);
		return (int)d.n;
	}
	__builtin_memcpy(&k, &arg->key, sizeof(k));
	if (verb == NFB_CONNS_RELEASE)
		return nfb_conn_forget(conns, counts, &k);
	if (verb == NFB_CONNS_CONFIRM)
		return nfb_conn_confirm(conns, counts, &k);
	return 0;
}

/* A source over a limit with an overload set: an event for user space,
 * which adds it to the set. None while the source is in the set already;
 * until it is, at most one each NFB_OVERLOAD_GAP_NS for each limit and
 * source (user space adds it within milliseconds). */
__noinline int nfb_overload(const struct nfb_pkt *p, __u32 gen, __u32 rule, __u32 counter, __u32 set)
{
	struct nfb_overload_seen *seen;
	struct nfb_event *e;
	__u64 now = bpf_ktime_get_ns(), h = counter, a[2];
	__u32 idx;

	if (!p)
		return 0;
	if (set && nfb_dyn_has(set, p->family, p->saddr, bpf_ktime_get_boot_ns()))
		return 0;
	__builtin_memcpy(a, p->saddr, sizeof(a));
	h = (h ^ a[0] ^ (a[1] << 1) ^ p->family) * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing */
	idx = (__u32)(h >> 32) % NFB_OVERLOAD_SEEN;
	seen = bpf_map_lookup_elem(&nfb_overload_seen, &idx);
	if (!seen)
		return 0;
	if (seen->hash == h && now - seen->last_ns < NFB_OVERLOAD_GAP_NS)
		return 0;
	e = bpf_ringbuf_reserve(&nfb_events, sizeof(*e), 0);
	if (!e) {
		nfb_count_fixed(NFB_CNT_LOG_DROPPED, p->len); /* the next packet tries again */
		return 0;
	}
	seen->hash = h;
	seen->last_ns = now;
	e->ts_ns = now;
	e->counter = counter;
	e->rule = rule;
	e->gen = gen;
	e->len = p->len;
	e->ifin = p->ifin;
	e->ifout = p->ifout;
	e->hook = p->hook;
	e->family = p->family;
	e->action = NFB_ACT_OVERLOAD;
	e->proto = p->proto;
	e->sport = p->sport;
	e->dport = p->dport;
	__builtin_memcpy(e->saddr, p->saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, p->daddr, sizeof(e->daddr));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Whether the packet is within the rule's limit (the low half of
 * rule_limit: 1 + index in the generation's limits; the high half is the
 * rule's bit, for the overload event: five arguments at most). Over the limit is counted in the rule's state, and
 * reported when the limit has an overload set. A limit whose configuration
 * or state is missing is over: the rule does not match (user space creates
 * the state of every limited rule first). */
__noinline bool nfb_limit_pass(__u64 nfct, const struct nfb_gen_cfg *cfg, __u32 gen, __u64 rule_limit,
			       const struct nfb_pkt *p)
{
	__u32 idx = (__u32)rule_limit - 1, rule = (__u32)(rule_limit >> 32), slot;
	const struct nfb_limit_cfg *lc;
	struct nfb_limit_state *st;
	void *limits, *cnt, *meter;
	__u64 now, *tat;

	if (!cfg || !p)
		return false;
	limits = bpf_map_lookup_elem(&nfb_limits, &gen);
	if (!limits)
		return false;
	lc = bpf_map_lookup_elem(limits, &idx);
	if (!lc || lc->slot >= cfg->cnt_cap)
		return false;
	slot = lc->slot;
	cnt = bpf_map_lookup_elem(&nfb_counters, &gen);
	if (!cnt)
		return false;
	idx = nfb_cnt_index(cfg->cnt_cap, cfg->cnt_cpus + 1, slot);
	st = bpf_map_lookup_elem(cnt, &idx); /* struct nfb_counter: the limit row holds a state */
	if (!st)
		return false;
	now = bpf_ktime_get_ns();
	tat = &st->tat;
	if (lc->flags & NFB_LIMIT_CONNS) {
		struct nfb_meter_key owner;

		__builtin_memset(&owner, 0, sizeof(owner));
		owner.slot = slot;
		owner.family = NFB_FAM_MAX;
		if (lc->flags & NFB_LIMIT_PER_SOURCE) {
			owner.family = p->family;
			__builtin_memcpy(owner.addr, p->saddr, sizeof(owner.addr));
		}
		if (nfb_conn_take(nfct, &owner, lc->conns, p->family, gen))
			return true;
		goto over;
	}
	if (lc->flags & NFB_LIMIT_PER_SOURCE) {
		struct nfb_meter_key key;
		__u64 first = now + lc->interval_ns;

		__builtin_memset(&key, 0, sizeof(key));
		key.slot = slot;
		key.family = p->family;
		__builtin_memcpy(key.addr, p->saddr, sizeof(key.addr));
		meter = bpf_map_lookup_elem(&nfb_meter, &gen);
		if (!meter)
			goto over;
		tat = bpf_map_lookup_elem(meter, &key);
		if (!tat) {
			/* A new source: its first packet conforms (depth >= interval). */
			if (bpf_map_update_elem(meter, &key, &first, BPF_NOEXIST) == 0)
				return true;
			tat = bpf_map_lookup_elem(meter, &key); /* another CPU added it */
			if (!tat)
				goto over;
		}
	}
	if (nfb_gcra(tat, now, lc->interval_ns, lc->depth_ns))
		return true;
over:
	__sync_fetch_and_add(&st->over, 1);
	if (lc->flags & NFB_LIMIT_OVERLOAD)
		nfb_overload(p, gen, rule, slot, lc->overload);
	return false;
}

/* Whether the packet passes the rule's dynamic sets (nfb_rule.dyn). */
__noinline bool nfb_dyn_pass(__u16 dsrc, __u16 ddst, const struct nfb_pkt *p)
{
	__u64 now = bpf_ktime_get_boot_ns();

	if (!p)
		return false;
	if (dsrc && nfb_dyn_has(dsrc & NFB_DYN_ID_MASK, p->family, p->saddr, now) == !!(dsrc & NFB_DYN_NEG))
		return false;
	if (ddst && nfb_dyn_has(ddst & NFB_DYN_ID_MASK, p->family, p->daddr, now) == !!(ddst & NFB_DYN_NEG))
		return false;
	return true;
}

/* Whether the rule with schedule bit sched (1-based) is in force now. */
__noinline bool nfb_sched_on(__u32 gen, __u32 sched)
{
	__u32 bit = sched - 1, idx = gen * NFB_SCHED_WORDS + bit / 64;
	const __u64 *w;

	if (bit >= NFB_MAX_SCHED)
		return false;
	w = bpf_map_lookup_elem(&nfb_sched, &idx);
	return w && (*w >> (bit % 64)) & 1;
}

/* start, or -1 past the last rule: the search when no field is restricted
 * (every rule matches). A global function, so the verifier sees an unknown
 * value: a rule number it could follow as a constant would have it walk
 * every round of nfb_judge()'s loop one by one. */
__noinline int nfb_next_rule(__u32 start, __u32 nrules)
{
	return start < nrules ? (int)start : -1;
}

/*
 * The verdict of the hook's rules: the first rule that matches (its dynamic
 * sets too) and is within its limit, else the default. A rule over its
 * limit, or whose dynamic set does not take the packet, sends the search on
 * from the rule after it; each round passes one such rule, so the rounds
 * are bounded by the NFB_MAX_LIMITS of them a hook can hold.
 */
static __always_inline int nfb_judge(struct bpf_nf_ctx *ctx, const struct nfb_gen_cfg *cfg,
				     const struct nfb_hook_cfg *hc, const struct nfb_pkt *p, __u32 gen)
{
	__u32 nrules = hc->nrules, nsum = hc->nsum, start = 0, idx, n;
	struct nfb_search_in in = { .nsum = nsum, .gen = gen };
	bool all = !(hc->fields & ((1u << NFB_F_MAX) - 1)); /* no field restricted: every rule matches */
	const struct nfb_rule *r;
	void *rules;
	int rule;

	if (!nrules || nrules > NFB_MAX_RULES)
		return nfb_default(ctx, cfg, gen, hc, p);
	if (!all && (!nsum || nsum > NFB_MAX_SUM || nfb_locate(hc, p, gen, &in)))
		return nfb_default(ctx, cfg, gen, hc, p); /* corrupt: an empty vector */
	rules = bpf_map_lookup_elem(&nfb_rules, &gen);
	if (!rules)
		return nfb_default(ctx, cfg, gen, hc, p);
	bpf_for(n, 0, NFB_MAX_LIMITS + 1)
	{
		if (all) {
			rule = nfb_next_rule(start, nrules);
		} else {
			in.start = start;
			rule = nfb_search(&in);
		}
		if (rule < 0 || rule >= (int)nrules)
			break; /* none (or a bit past the rules: corrupt) */
		idx = hc->rule_base + rule;
		r = bpf_map_lookup_elem(rules, &idx);
		if (!r)
			break;
		if ((!r->sched || nfb_sched_on(gen, r->sched)) &&
		    (!(r->dyn[0] | r->dyn[1]) || nfb_dyn_pass(r->dyn[0], r->dyn[1], p)) &&
		    (!r->limit || nfb_limit_pass(ctx->skb->_nfct, cfg, gen, (__u64)rule << 32 | r->limit, p)))
			return nfb_rule_verdict(ctx, cfg, p, gen, (__u32)rule, r);
		start = (__u32)rule + 1;
	}
	return nfb_default(ctx, cfg, gen, hc, p);
}

static __always_inline bool nfb_any_hook(const struct nfb_gen_cfg *cfg)
{
	return cfg->hook[0].enabled || cfg->hook[1].enabled || cfg->hook[2].enabled;
}

SEC("netfilter")
int nfbox_filter(struct bpf_nf_ctx *ctx)
{
	const struct nf_hook_state *state = ctx->state;
	const struct nfb_gen_cfg *cfg;
	const struct nfb_hook_cfg *hc;
	struct nfb_pkt pkt = {};
	struct nfb_ctl *ctl;
	__u32 zero = 0, gen;
	int hook, family;

	hook = nfb_hook_of(state->hook);
	family = nfb_family_of(state->pf);
	if (hook < 0 || family < 0)
		return NF_ACCEPT;
	pkt.len = ctx->skb->len;

	ctl = bpf_map_lookup_elem(&nfb_ctl, &zero);
	gen = ctl ? ctl->active_gen : NFB_GENS;
	cfg = gen < NFB_GENS ? bpf_map_lookup_elem(&nfb_gen, &gen) : NULL;
	if (!cfg || !nfb_any_hook(cfg)) {
		nfb_count_fixed(NFB_CNT_NO_GEN, pkt.len);
		return NF_ACCEPT;
	}
	hc = &cfg->hook[hook];
	if (!hc->enabled)
		return NF_ACCEPT;
	if (hook == NFB_HOOK_OUTPUT && ctx->skb->mark == NFB_REPLY_MARK) {
		nfb_count_fixed(NFB_CNT_REPLIES, pkt.len);
		return NF_ACCEPT;
	}

	pkt.hook = hook;
	pkt.family = family;
	if (state->in)
		pkt.ifin = state->in->ifindex;
	if (state->out)
		pkt.ifout = state->out->ifindex;
	switch (nfb_parse(ctx, &pkt, cfg->options & NFB_OPT_DEFRAG)) {
	case NFB_PARSED:
		break;
	case NFB_FRAGMENT:
		nfb_count_fixed(NFB_CNT_FRAGMENT, pkt.len);
		return NF_DROP;
	default:
		nfb_count_fixed(NFB_CNT_MALFORMED, pkt.len);
		return NF_DROP;
	}

	pkt.ct = nfb_ct_state(ctx->skb);
	if ((cfg->options & NFB_OPT_CONN_LIMITS) && pkt.proto == NFB_IPPROTO_TCP && pkt.l4kind == NFB_L4_PORTS)
		nfb_conn_closed(ctx->skb->_nfct, pkt.family, gen);
	if ((cfg->options & NFB_OPT_ESTABLISHED_ACCEPT) && (pkt.ct == NFB_CT_ESTABLISHED || pkt.ct == NFB_CT_RELATED)) {
		nfb_count(cfg, gen, cfg->established_counter, pkt.len);
		nfb_trace_event(&pkt, gen, NFB_RULE_ESTABLISHED, cfg->established_counter, NFB_ACT_ACCEPT);
		return NF_ACCEPT;
	}

	return nfb_judge(ctx, cfg, hc, &pkt, gen);
}
