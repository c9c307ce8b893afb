/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The epoll loop (loop.h). */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "system/loop.h"

int loop_open(struct loop *l)
{
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	return l->epfd < 0 ? -errno : 0;
}

void loop_close(struct loop *l)
{
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
}

int loop_watch(struct loop *l, struct handler *h)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = h };

	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0 ? -errno : 0;
}

void loop_unwatch(struct loop *l, struct handler *h)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, h->fd, NULL);
	for (int i = 0; i < l->nbatch; i++)
		if (l->batch[i].data.ptr == h)
			l->batch[i].data.ptr = NULL;
}

int loop_want_write(struct loop *l, struct handler *h, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = h };

	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, h->fd, &ev) < 0 ? -errno : 0;
}

int loop_run_once(struct loop *l, int timeout_ms, const bool *stop)
{
	struct epoll_event evs[16];
	int n = epoll_wait(l->epfd, evs, 16, timeout_ms), i;

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	l->batch = evs;
	l->nbatch = n;
	for (i = 0; i < n && !*stop; i++) {
		struct handler *h = evs[i].data.ptr;

		if (h) /* NULL: unwatched by a handler before it */
			h->fn(h, evs[i].events);
	}
	l->batch = NULL;
	l->nbatch = 0;
	return i;
}
