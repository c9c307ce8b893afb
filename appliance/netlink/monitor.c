/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/monitor.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct nl_monitor {
	struct mnl_socket *nl;
};

int nl_monitor_open(struct nl_monitor **out)
{
	struct nl_monitor *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	m->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!m->nl ||
	    mnl_socket_bind(m->nl, RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		nl_monitor_close(m);
		return r;
	}
	*out = m;
	return 0;
}

void nl_monitor_close(struct nl_monitor *m)
{
	if (!m)
		return;
	if (m->nl)
		mnl_socket_close(m->nl);
	free(m);
}

int nl_monitor_fd(const struct nl_monitor *m)
{
	return mnl_socket_get_fd(m->nl);
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	bool *changed = data;

	/* Every RTM_NEWLINK (new device, rename, state change), RTM_DELLINK
	 * and address change: names and addresses are resolved again, which
	 * is cheap. */
	if (nlh->nlmsg_type == RTM_NEWLINK || nlh->nlmsg_type == RTM_DELLINK || nlh->nlmsg_type == RTM_NEWADDR ||
	    nlh->nlmsg_type == RTM_DELADDR)
		*changed = true;
	return MNL_CB_OK;
}

bool nl_monitor_links_changed(struct nl_monitor *m)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	bool changed = false;
	ssize_t n;

	while ((n = mnl_socket_recvfrom(m->nl, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == ENOBUFS)
				changed = true; /* lost messages: assume anything changed */
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			break; /* EAGAIN: all read */
		}
		mnl_cb_run(buf, (size_t)n, 0, 0, link_cb, &changed);
	}
	return changed;
}
