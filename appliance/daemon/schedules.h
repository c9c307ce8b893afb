/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Schedules in the daemon (schedules.c): the rules with when: of the policy
 * in force are put in and out of force at their windows' edges by the
 * backend in force (no reload), on a timer of the real-time clock that is
 * also woken when the clock is set.
 */
#ifndef NFBOX_DAEMON_SCHEDULES_H
#define NFBOX_DAEMON_SCHEDULES_H

#include "daemon/daemon_int.h"

/* After a reload (or a start): each scheduled rule's state now, put into
 * the backend, and the timer set for the next change. */
void sched_after_reload(struct daemon *dm);
void sched_close(struct daemon *dm);

/* A scheduled rule as `status` shows it. */
struct sched_report {
	const char *rule;
	bool open;
	int64_t next; /* UTC seconds of its next change; SCHED_NEVER: none within 8 days */
};
/* The policy in force's scheduled rules (*out malloc'd). 0 or -ENOMEM. */
int sched_report(struct daemon *dm, struct sched_report **out, uint32_t *n);

#endif
