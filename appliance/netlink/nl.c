/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/nl.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>

struct mnl_socket *nl_open(int bus)
{
	struct timeval tmo = { .tv_sec = 5 };
	struct mnl_socket *nl = mnl_socket_open(bus);
	int err;

	if (!nl)
		return NULL;
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) < 0 ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = errno;
		mnl_socket_close(nl);
		errno = err;
		return NULL;
	}
	return nl;
}

int nl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int r = 0;

	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		r = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, cb, data);
		if (r <= MNL_CB_STOP)
			break;
	}
	return n < 0 || r < 0 ? -errno : 0;
}
