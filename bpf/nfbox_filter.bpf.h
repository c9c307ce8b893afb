/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Private helpers of the classifier (bpf/nfbox_filter.bpf.c): packet header
 * layouts, bit tricks, the parsed-packet summary. Included after vmlinux.h
 * and nfbox.h; nothing here is shared with user space.
 */
#ifndef NFBOX_FILTER_BPF_H
#define NFBOX_FILTER_BPF_H

#ifndef NF_DROP
#define NF_DROP	  0
#define NF_ACCEPT 1
#endif

#define NFB_NSEC_PER_SEC 1000000000ull

/* Own header layouts rather than vmlinux.h's: no CO-RE relocations and no
 * bitfields for data that comes from the packet, not from the kernel. */
struct nfb_ip4hdr {
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off; /* flags (3 bits) | offset (13 bits, 8-byte units) */
	__u8 ttl;
	__u8 protocol;
	__be16 check;
	__u8 saddr[4];
	__u8 daddr[4];
};

struct nfb_ip6hdr {
	__u8 ver_tc;
	__u8 tc_flow[3];
	__be16 payload_len;
	__u8 nexthdr;
	__u8 hop_limit;
	__u8 saddr[16];
	__u8 daddr[16];
};

struct nfb_ip6frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset (13 bits) | res (2) | M (1) */
	__be32 id;
};

enum {
	NFB_IPPROTO_HOPOPTS = 0,
	NFB_IPPROTO_ICMP = 1,
	NFB_IPPROTO_TCP = 6,
	NFB_IPPROTO_UDP = 17,
	NFB_IPPROTO_ROUTING = 43,
	NFB_IPPROTO_FRAGMENT = 44,
	NFB_IPPROTO_AH = 51,
	NFB_IPPROTO_ICMPV6 = 58,
	NFB_IPPROTO_DSTOPTS = 60,
	NFB_IPPROTO_SCTP = 132,
	NFB_IPPROTO_UDPLITE = 136,
};

/* How the L4 field is keyed. */
enum nfb_l4kind {
	NFB_L4_PORTS = 0, /* TCP/UDP/SCTP/UDP-Lite with both ports: port map */
	NFB_L4_ICMP = 1,  /* ICMP or ICMPv6 with a type: misc map */
	NFB_L4_PROTO = 2, /* any other protocol: misc map, NFB_MC_PROTO */
	NFB_L4_FRAG = 3,  /* a fragment (defrag off): NFB_MC_FRAG */
};

/* What the classifier knows about a packet after parsing. */
struct nfb_pkt {
	__u32 len;    /* skb->len */
	__u32 l3_end; /* end of the IP datagram (total length) */
	__u32 l4_off; /* offset of the L4 header */
	__u32 ifin;
	__u32 ifout;
	__u8 hook;   /* enum nfb_hook */
	__u8 family; /* enum nfb_family */
	__u8 proto;  /* L4 protocol / last next header */
	__u8 l4kind; /* enum nfb_l4kind */
	__u8 pclass; /* enum nfb_pclass, NFB_L4_PORTS only */
	__u8 mclass; /* enum nfb_mclass, misc-map kinds */
	__u8 ct;     /* enum nfb_ct */
	__u8 icmp_type;
	__u16 sport; /* host order */
	__u16 dport; /* host order; ICMP: type << 8 | code */
	__u8 saddr[16];
	__u8 daddr[16];
};

/* Rate token buckets (log, reject), one each for all CPUs, under a spin
 * lock: tokens are counted in "event nanoseconds", one event costs its
 * period in ns (NFB_NSEC_PER_SEC for a rate per second), so the refill is
 * elapsed_ns * rate with no division. */
struct nfb_log_bucket {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 tokens;
	__u64 last_ns;
};

/* Bit tricks: the BPF backend of clang 14 has no popcount/ctz instruction
 * and may expand __builtin_ctzll through a constant table it cannot emit. */
static __always_inline __u64 nfb_popcount64(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (x * 0x0101010101010101ull) >> 56;
}

/* Index of the lowest set bit of x; x must be nonzero. */
static __always_inline __u64 nfb_ctz64(__u64 x)
{
	return nfb_popcount64((x & -x) - 1);
}

#endif /* NFBOX_FILTER_BPF_H */
