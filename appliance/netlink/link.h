/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Network interfaces over rtnetlink: the requests nfbox makes (a veth pair
 * for mirror ports; up, delete, what a link is). Each is one request on a
 * socket of its own; 0 or the kernel's -errno. */
#ifndef NFBOX_NETLINK_LINK_H
#define NFBOX_NETLINK_LINK_H

#include <stdbool.h>
#include <stdint.h>

struct nl_link {
	bool veth;
	int peer_ifindex; /* IFLA_LINK: a veth's peer (0 if none) */
};

int nl_link_get(int ifindex, struct nl_link *out);
/* A veth pair name/peer, both with this MTU, down. */
int nl_link_veth_create(const char *name, const char *peer, uint32_t mtu);
/* addrgenmode none: no IPv6 link-local address (before the link is up). */
int nl_link_no_ipv6_addr(int ifindex);
int nl_link_set_up(int ifindex);
int nl_link_del(int ifindex);

#endif
