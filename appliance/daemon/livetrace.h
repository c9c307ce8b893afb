/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The live trace (livetrace.c). */
#ifndef NFBOX_DAEMON_LIVETRACE_H
#define NFBOX_DAEMON_LIVETRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "control/proto.h"

struct daemon;

/*
 * `nfbox trace --live`: the next count packets that match a filter, traced
 * through the backend in force (backend.h: trace_start), one at a time.
 * Each goes to the tracer as one JSON line (deliver); the trace ends after
 * count packets, at its timeout, when a reload or the daemon's stop comes
 * (a last line {"end":WHY,"traced":N}, then done), or when the tracer
 * leaves (livetrace_leave: nothing more is said). Whichever way, the
 * backend takes it out of the kernel.
 */
struct livetrace_out {
	void (*deliver)(void *arg, const char *line, size_t len);
	void (*done)(void *arg);
	void *arg;
};

#define LIVETRACE_DEFAULT_COUNT	  10
#define LIVETRACE_DEFAULT_TIMEOUT 60

/* 0, or -errno explained in d (a filter that is wrong, one running). */
int livetrace_start(struct daemon *dm, const struct ctl_request *req, const struct livetrace_out *out, struct diags *d);
/* The trace ends, and why ("count", "timeout", "reload", "stop"); none: nothing. */
void livetrace_end(struct daemon *dm, const char *why);
/* The tracer arg went away: its trace, if it runs, ends unsaid. */
void livetrace_leave(struct daemon *dm, const void *arg);
/* The timeout: checked each round; ms to it (-1: no trace). */
void livetrace_tick(struct daemon *dm);
int livetrace_next_deadline(const struct daemon *dm);
/* The backends' sink (backend_sink.traced; targ: the daemon). */
void livetrace_packet(void *targ, const struct vevent *v, const struct backend_counter *c);

#endif
