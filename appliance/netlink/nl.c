/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/nl.h"

#include "base/cleanup.h"

#include <errno.h>
#include <stdlib.h>
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

/* A dump's messages are as large as the reader's buffer lets them be (the
 * kernel's largest, 32 KiB): fewer of them, and a set walked again from its
 * start for each message (nftables' interval sets) far fewer times than
 * with a page. */
#define NL_RECV_SIZE 32768

int nl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	_cleanup_free_ char *buf = malloc(NL_RECV_SIZE);
	unsigned portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, NL_RECV_SIZE)) > 0) {
		r = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, cb, data);
		if (r <= MNL_CB_STOP)
			break;
	}
	return n < 0 || r < 0 ? -errno : 0;
}
