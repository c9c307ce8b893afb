/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One epoll loop and its sources. A source is a struct handler: a file
 * descriptor, the function the loop calls when it is readable, and the
 * object that owns it (ctx). Whoever owns a source watches and unwatches
 * it; the loop knows nothing else of it.
 */
#ifndef NFBOX_SYSTEM_LOOP_H
#define NFBOX_SYSTEM_LOOP_H

#include <stdbool.h>
#include <stdint.h>

struct handler {
	int fd;
	void (*fn)(struct handler *h, uint32_t events);
	void *ctx; /* the owner, for fn */
};

struct epoll_event;

struct loop {
	int epfd; /* -1: not open */
	/* The events being dispatched: a handler unwatched meanwhile (freed by
	 * an earlier handler of the same batch) is taken out of it. */
	struct epoll_event *batch;
	int nbatch;
};

/* 0 or -errno. */
int loop_open(struct loop *l);
void loop_close(struct loop *l);
/* Add h (EPOLLIN) / remove it (also from the events being dispatched: it
 * may be freed at once) / watch EPOLLOUT too or no longer. 0 or -errno. */
int loop_watch(struct loop *l, struct handler *h);
void loop_unwatch(struct loop *l, struct handler *h);
int loop_want_write(struct loop *l, struct handler *h, bool on);
/* Wait up to timeout_ms and call the handlers of what is ready, until
 * *stop. The number of handlers called, or -errno. */
int loop_run_once(struct loop *l, int timeout_ms, const bool *stop);

#endif
