// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nfbox mirror: a copy of every frame received and sent on an interface
 * (tcx ingress and egress), cloned to the transmit side of a veth pair that
 * the capture engine creates; its other end is the capture interface, where
 * bpf/nfbox_capture.bpf.c picks the frames up. The original frame goes on
 * unchanged (TCX_NEXT): mirroring never alters what the appliance forwards.
 *
 * A clone that cannot be sent (the veth is gone, or out of memory) is
 * counted, not retried.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "nfbox_capture.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The veth end the copies are sent from; set before load. */
const volatile __u32 nfb_mirror_ifindex = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_mirror_counters);
} nfb_mirror_counters SEC(".maps");

static __always_inline int mirror(struct __sk_buff *skb)
{
	struct nfb_mirror_counters *cnt;
	__u32 zero = 0;

	cnt = bpf_map_lookup_elem(&nfb_mirror_counters, &zero);
	if (bpf_clone_redirect(skb, nfb_mirror_ifindex, 0) == 0) {
		if (cnt) {
			cnt->mirrored++;
			cnt->bytes += skb->len;
		}
	} else if (cnt) {
		cnt->failed++;
	}
	return TCX_NEXT;
}

SEC("tcx/ingress")
int nfb_mirror_in(struct __sk_buff *skb)
{
	return mirror(skb);
}

SEC("tcx/egress")
int nfb_mirror_out(struct __sk_buff *skb)
{
	return mirror(skb);
}
