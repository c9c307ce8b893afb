/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The epoll loop (appliance/system/loop.c): a handler that unwatches and
 * frees another one whose event came in the same batch (a reload closing
 * the schedules' timer, c-ares closing a socket) must not see it called
 * (under ASan a call would be a use after free). Both orders are tried:
 * whichever runs first frees the other.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "system/loop.h"
#include "tests/lib/check.h"

struct pair {
	struct loop *l;
	struct handler *h[2];
	int calls;
};

static struct pair P;

static void fire(struct handler *h, uint32_t events)
{
	int other = h == P.h[0] ? 1 : 0;

	(void)events;
	P.calls++;
	if (P.h[other]) {
		loop_unwatch(P.l, P.h[other]);
		close(P.h[other]->fd);
		free(P.h[other]);
		P.h[other] = NULL;
	}
}

int main(void)
{
	struct loop l = { .epfd = -1 };
	bool stop = false;
	int fds[2][2];

	check_begin("loop-unwatched-in-batch-not-called");
	CHECK(loop_open(&l) == 0);
	P.l = &l;
	for (int i = 0; i < 2; i++) {
		CHECK(pipe(fds[i]) == 0);
		P.h[i] = calloc(1, sizeof(*P.h[i]));
		*P.h[i] = (struct handler){ .fd = fds[i][0], .fn = fire };
		CHECK(loop_watch(&l, P.h[i]) == 0);
		CHECK(write(fds[i][1], "x", 1) == 1); /* both readable: one batch */
	}
	CHECK(loop_run_once(&l, 1000, &stop) >= 1);
	CHECK(P.calls == 1);
	for (int i = 0; i < 2; i++) {
		close(fds[i][1]);
		if (P.h[i]) {
			loop_unwatch(&l, P.h[i]);
			close(P.h[i]->fd);
			free(P.h[i]);
		}
	}
	loop_close(&l);
	check_end();
	CHECK_EXIT();
}
