/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's event loop, as its sources see it: a source (struct handler)
 * is watched and unwatched here; daemon.c runs the loop. Below every other
 * part of the daemon. */
#include <errno.h>
#include <sys/epoll.h>

#include "daemon/daemon_int.h"

int daemon_watch(struct daemon *dm, struct handler *h)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = h };

	return epoll_ctl(dm->epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0 ? -errno : 0;
}

void daemon_unwatch(struct daemon *dm, struct handler *h)
{
	epoll_ctl(dm->epfd, EPOLL_CTL_DEL, h->fd, NULL);
}
