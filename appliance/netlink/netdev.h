/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a device can do for XDP, from the "netdev" generic netlink family. */
#ifndef NFBOX_NETLINK_NETDEV_H
#define NFBOX_NETLINK_NETDEV_H

#include <stdint.h>

struct nl_netdev_xdp {
	uint64_t xdp_features; /* NETDEV_XDP_ACT_* */
	uint32_t zc_max_segs;  /* zero-copy multi-buffer limit (0: unknown) */
};

/* 0 or -errno; *out zeroed when the kernel has no netdev family. */
int nl_netdev_xdp_probe(int ifindex, struct nl_netdev_xdp *out);

#endif
