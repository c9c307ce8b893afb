/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Netlink request/reply over libmnl, for the capture engine's rtnetlink and
 * generic netlink (netdev family) requests. */
#ifndef NFBOX_APPLIANCE_NL_H
#define NFBOX_APPLIANCE_NL_H

#include <libmnl/libmnl.h>

/* A socket on bus (NETLINK_ROUTE, NETLINK_GENERIC, NETLINK_NETFILTER), bound, whose receives
 * time out after 5 s (the daemon's loop calls these: never wait for ever on
 * the kernel). NULL with errno set on failure. */
struct mnl_socket *nl_open(int bus);
/* For _cleanup_(nl_closep): closes a socket nl_open made, if any. */
static inline void nl_closep(struct mnl_socket **nl)
{
	if (*nl)
		mnl_socket_close(*nl);
}

/* Send nlh (NLM_F_ACK set, so the kernel ends the reply) and run cb over
 * what comes back (cb may be NULL). 0 or -errno (the kernel's error). */
int nl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

#endif
