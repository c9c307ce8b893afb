// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfbox capture: an XDP program (frags-aware, so jumbo frames on an MTU 9000
 * veth or NIC can be attached at all) that hands matching frames to the
 * AF_XDP socket bound to the frame's rx queue and passes everything else to
 * the stack untouched, so ARP, neighbour discovery and the traffic nobody
 * asked to capture keep working.
 *
 * The filter (bpf/nfbox_capture.h) is fixed at load time: nfb_cap_cfg in
 * .rodata says which tests are in force, the tries and the port bitmaps
 * hold what they compare against. Headers are read with
 * bpf_xdp_load_bytes(), which works whether they sit in the linear part or
 * (after a tiny first buffer) in a fragment.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "nfbox_capture.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD
#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88A8
#define IP_OFFSET_MASK	0x1FFF
#define IP6_OFFSET_MASK 0xFFF8
#define MAX_VLAN_TAGS	2
#define MAX_IPV6_EXT	8

const volatile struct nfb_cap_cfg nfb_cap_cfg = {};

/* Sized by user space before load: one slot per rx queue; tries and the
 * socket map to what the capture needs (at least 1). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} nfb_cap_xsks SEC(".maps");

#define CAP_LPM(name, keytype)                        \
	struct {                                      \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);  \
		__uint(map_flags, BPF_F_NO_PREALLOC); \
		__uint(max_entries, 1);               \
		__type(key, struct keytype);          \
		__type(value, __u8);                  \
	} name SEC(".maps")

CAP_LPM(nfb_cap_src4, nfb_cap_lpm4_key);
CAP_LPM(nfb_cap_dst4, nfb_cap_lpm4_key);
CAP_LPM(nfb_cap_src6, nfb_cap_lpm6_key);
CAP_LPM(nfb_cap_dst6, nfb_cap_lpm6_key);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_CAP_PC_MAX);
	__type(key, __u32);
	__type(value, struct nfb_cap_portset);
} nfb_cap_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_cap_counters);
} nfb_cap_counters SEC(".maps");

/* What the filter looks at. family 0: not IP (or a truncated IP header). */
struct cap_pkt {
	__u8 family; /* 4, 6 or 0 */
	__u8 have_proto;
	__u8 have_port;
	__u8 proto;
	__u16 dport;
	__u8 src[16];
	__u8 dst[16];
};

/* Ethernet plus up to two VLAN tags: the EtherType and where L3 begins. */
static __always_inline int parse_l2(struct xdp_md *ctx, __u32 *off, __u16 *eth_proto)
{
	struct ethhdr eth;
	struct {
		__be16 tci;
		__be16 proto;
	} vlan;

	if (bpf_xdp_load_bytes(ctx, 0, &eth, sizeof(eth)))
		return -1;
	*eth_proto = bpf_ntohs(eth.h_proto);
	*off = sizeof(eth);
	for (int i = 0; i < MAX_VLAN_TAGS; i++) {
		if (*eth_proto != ETH_P_8021Q && *eth_proto != ETH_P_8021AD)
			break;
		if (bpf_xdp_load_bytes(ctx, *off, &vlan, sizeof(vlan)))
			return -1;
		*eth_proto = bpf_ntohs(vlan.proto);
		*off += sizeof(vlan);
	}
	return 0;
}

static __always_inline bool has_ports(__u8 proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE;
}

/* TCP, UDP, SCTP and UDP-Lite all start with the source then the destination port. */
static __always_inline void parse_ports(struct xdp_md *ctx, __u32 off, struct cap_pkt *p)
{
	__be16 ports[2];

	if (!has_ports(p->proto) || bpf_xdp_load_bytes(ctx, off, ports, sizeof(ports)))
		return;
	p->dport = bpf_ntohs(ports[1]);
	p->have_port = 1;
}

static __always_inline void parse_ipv4(struct xdp_md *ctx, __u32 off, struct cap_pkt *p)
{
	struct iphdr ip;
	__u32 ihl;

	if (bpf_xdp_load_bytes(ctx, off, &ip, sizeof(ip)) || ip.version != 4 || ip.ihl < 5)
		return;
	ihl = ip.ihl * 4;
	p->family = 4;
	p->proto = ip.protocol;
	p->have_proto = 1;
	__builtin_memcpy(p->src, &ip.saddr, 4);
	__builtin_memcpy(p->dst, &ip.daddr, 4);
	/* Only the first fragment carries the ports. */
	if (!(bpf_ntohs(ip.frag_off) & IP_OFFSET_MASK))
		parse_ports(ctx, off + ihl, p);
}

static __always_inline bool ipv6_is_ext(__u8 nh)
{
	return nh == 0 /* hop-by-hop */ || nh == 43 /* routing */ || nh == 60 /* destination */ ||
	       nh == 135 /* mobility */ || nh == 139 /* HIP */ || nh == 140 /* shim6 */;
}

/* Walk the extension headers to the upper-layer protocol. The walk stops at
 * the protocol the filter asks for, so `proto: ah` (or 43, ...) can match. */
static __always_inline void parse_ipv6(struct xdp_md *ctx, __u32 off, struct cap_pkt *p)
{
	struct ipv6hdr ip6;
	struct {
		__u8 nexthdr;
		__u8 hdrlen;
		__be16 frag_off; /* fragment header only */
	} ext;
	bool later_fragment = false;
	__u8 nh;

	if (bpf_xdp_load_bytes(ctx, off, &ip6, sizeof(ip6)) || ip6.version != 6)
		return;
	p->family = 6;
	__builtin_memcpy(p->src, &ip6.saddr, 16);
	__builtin_memcpy(p->dst, &ip6.daddr, 16);
	nh = ip6.nexthdr;
	off += sizeof(ip6);
	for (int i = 0; i < MAX_IPV6_EXT; i++) {
		if ((nfb_cap_cfg.flags & NFB_CAP_F_PROTO) && nh == nfb_cap_cfg.proto)
			break;
		if (!ipv6_is_ext(nh) && nh != 44 /* fragment */ && nh != 51 /* AH */)
			break;
		if (bpf_xdp_load_bytes(ctx, off, &ext, sizeof(ext)))
			return; /* truncated: protocol unknown */
		if (nh == 44) {
			later_fragment = bpf_ntohs(ext.frag_off) & IP6_OFFSET_MASK;
			off += 8;
		} else if (nh == 51) {
			off += ((__u32)ext.hdrlen + 2) * 4;
		} else {
			off += ((__u32)ext.hdrlen + 1) * 8;
		}
		nh = ext.nexthdr;
		if (later_fragment)
			break; /* what follows is the middle of a datagram */
	}
	p->proto = nh;
	p->have_proto = 1;
	if (!later_fragment)
		parse_ports(ctx, off, p);
}

static __always_inline bool addr_in(struct cap_pkt *p, const __u8 *addr, void *trie4, void *trie6)
{
	struct nfb_cap_lpm4_key k4 = { .plen = 32 };
	struct nfb_cap_lpm6_key k6 = { .plen = 128 };

	if (p->family == 4) {
		__builtin_memcpy(k4.addr, addr, 4);
		return bpf_map_lookup_elem(trie4, &k4) != NULL;
	}
	if (p->family == 6) {
		__builtin_memcpy(k6.addr, addr, 16);
		return bpf_map_lookup_elem(trie6, &k6) != NULL;
	}
	return false;
}

static __always_inline bool port_in(struct cap_pkt *p)
{
	struct nfb_cap_portset *set;
	__u32 class;

	if (!p->have_port)
		return false;
	switch (p->proto) {
	case IPPROTO_TCP:
		class = NFB_CAP_PC_TCP;
		break;
	case IPPROTO_UDP:
		class = NFB_CAP_PC_UDP;
		break;
	case IPPROTO_SCTP:
		class = NFB_CAP_PC_SCTP;
		break;
	default:
		class = NFB_CAP_PC_UDPLITE;
	}
	set = bpf_map_lookup_elem(&nfb_cap_ports, &class);
	if (!set)
		return false;
	return (set->bits[(p->dport >> 6) & 1023] >> (p->dport & 63)) & 1;
}

static __always_inline bool frame_matches(struct xdp_md *ctx)
{
	__u32 flags = nfb_cap_cfg.flags, len = bpf_xdp_get_buff_len(ctx), off = 0;
	struct cap_pkt p = {};
	__u16 eth_proto = 0;

	if (len < nfb_cap_cfg.min_len || (nfb_cap_cfg.max_len && len > nfb_cap_cfg.max_len))
		return false;
	if (parse_l2(ctx, &off, &eth_proto))
		return false; /* shorter than an Ethernet header */
	if (eth_proto == ETH_P_IP)
		parse_ipv4(ctx, off, &p);
	else if (eth_proto == ETH_P_IPV6)
		parse_ipv6(ctx, off, &p);
	else
		return flags & NFB_CAP_F_NON_IP;
	if ((flags & NFB_CAP_F_PROTO) && (!p.have_proto || p.proto != nfb_cap_cfg.proto))
		return false;
	if ((flags & NFB_CAP_F_SRC) && !addr_in(&p, p.src, &nfb_cap_src4, &nfb_cap_src6))
		return false;
	if ((flags & NFB_CAP_F_DST) && !addr_in(&p, p.dst, &nfb_cap_dst4, &nfb_cap_dst6))
		return false;
	if ((flags & NFB_CAP_F_PORTS) && !port_in(&p))
		return false;
	return true;
}

SEC("xdp.frags")
int nfb_capture(struct xdp_md *ctx)
{
	struct nfb_cap_counters *cnt;
	__u32 zero = 0;
	long act;

	cnt = bpf_map_lookup_elem(&nfb_cap_counters, &zero);
	if (!cnt)
		return XDP_PASS;
	cnt->seen++;
	if (!frame_matches(ctx)) {
		cnt->passed++;
		return nfb_cap_cfg.flags & NFB_CAP_F_DROP_REST ? XDP_DROP : XDP_PASS;
	}
	cnt->matched++;
	/* No socket on this queue (yet, or any more): the frame goes on to the
	 * stack rather than being lost (a mirror port drops it). */
	act = bpf_redirect_map(&nfb_cap_xsks, ctx->rx_queue_index,
			       nfb_cap_cfg.flags & NFB_CAP_F_DROP_REST ? XDP_DROP : XDP_PASS);
	if (act == XDP_REDIRECT)
		cnt->redirected++;
	else
		cnt->passed++;
	return (int)act;
}
