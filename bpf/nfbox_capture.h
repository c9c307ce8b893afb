/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfbox capture ABI: what the XDP capture program (bpf/nfbox_capture.bpf.c)
 * and the capture engine (appliance/capture/capture.c) share. Included by BPF code
 * (after vmlinux.h) and by user space.
 *
 * The filter is load-time configuration: struct nfb_cap_cfg lives in
 * .rodata (set through skel->rodata before load, so the verifier prunes
 * the tests a capture does not use); the address prefixes and ports it
 * names are in maps, sized before load to what the capture lists.
 */
#ifndef NFBOX_CAPTURE_H
#define NFBOX_CAPTURE_H

#ifndef __bpf__
#include <linux/types.h> /* user space; BPF code has them from vmlinux.h */
#endif

/* Which tests of nfb_cap_cfg are in force. A frame is captured when every
 * test in force holds; a test on a field the frame lacks (ports of a
 * non-first fragment, addresses of a non-IP frame) fails. */
enum nfb_cap_flag {
	NFB_CAP_F_PROTO = 1 << 0,     /* L4 protocol == proto (after IPv6 extension headers) */
	NFB_CAP_F_SRC = 1 << 1,	      /* source address in nfb_cap_src4/6 */
	NFB_CAP_F_DST = 1 << 2,	      /* destination address in nfb_cap_dst4/6 */
	NFB_CAP_F_PORTS = 1 << 3,     /* (protocol, destination port) in nfb_cap_ports */
	NFB_CAP_F_NON_IP = 1 << 4,    /* non-IP frames are captured (length tests only) */
	NFB_CAP_F_DROP_REST = 1 << 5, /* frames not captured are dropped, not passed: the
					 interface is a mirror port that nfbox made, and
					 copies must never reach the stack */
};

struct nfb_cap_cfg {
	__u32 flags;   /* enum nfb_cap_flag */
	__u32 proto;   /* IPPROTO_* for NFB_CAP_F_PROTO */
	__u32 min_len; /* whole frame, every fragment buffer counted; 0: none */
	__u32 max_len; /* 0: none */
};

/* Keys of the LPM tries: prefix length in bits, then the address in
 * network byte order. Values are unused (__u8). */
struct nfb_cap_lpm4_key {
	__u32 plen;
	__u8 addr[4];
};

struct nfb_cap_lpm6_key {
	__u32 plen;
	__u8 addr[16];
};

/* nfb_cap_ports: one destination-port bitmap per protocol class. */
enum nfb_cap_pclass {
	NFB_CAP_PC_TCP = 0,
	NFB_CAP_PC_UDP = 1,
	NFB_CAP_PC_SCTP = 2,
	NFB_CAP_PC_UDPLITE = 3,
	NFB_CAP_PC_MAX = 4,
};

struct nfb_cap_portset {
	__u64 bits[65536 / 64]; /* bit p: port p (host order) is captured */
};

/* nfb_cap_counters: per CPU, one slot. seen = redirected + passed (passed:
 * dropped instead on a mirror port); a
 * matched frame is passed when no socket is bound to its rx queue. */
struct nfb_cap_counters {
	__u64 seen;
	__u64 matched;
	__u64 redirected;
	__u64 passed;
};

/* nfb_mirror_counters (bpf/nfbox_mirror.bpf.c): per CPU, one slot. */
struct nfb_mirror_counters {
	__u64 mirrored; /* clones sent to the mirror veth */
	__u64 bytes;	/* their length (skb->len: at ingress, without the MAC header) */
	__u64 failed;	/* clones that could not be sent */
};

#endif
