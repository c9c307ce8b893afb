/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A clock's time in milliseconds or nanoseconds (CLOCK_MONOTONIC for
 * intervals and deadlines, CLOCK_REALTIME for wall-clock stamps). */
#ifndef NFBOX_BASE_CLOCK_H
#define NFBOX_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
