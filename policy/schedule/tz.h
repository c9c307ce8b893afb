/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Time zones from tzdata (tz.c): a zone's UTC offset at any instant, read
 * from its TZif file under /usr/share/zoneinfo: the transitions it lists,
 * then the POSIX TZ rule of its footer for the years after them. Thread
 * safe and independent of the process's TZ (the C library keeps one zone
 * for the whole process).
 */
#ifndef NFBOX_POLICY_TZ_H
#define NFBOX_POLICY_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TZ_DIR	    "/usr/share/zoneinfo"
#define TZ_MAX_NAME 64

struct tz;

/* The zone NAME ("Europe/Berlin", "UTC"; "localtime" for /etc/localtime):
 * 0, or -errno with the reason in why (no such zone, not a TZif file). */
int tz_load(const char *name, struct tz **out, char *why, size_t len);
void tz_free(struct tz *z);
/* Seconds east of UTC at the UTC instant t. */
int32_t tz_offset(const struct tz *z, int64_t t);

/* Broken down, as the wall clock of a zone shows it. */
struct tz_civil {
	int64_t days; /* since 1970-01-01 */
	int year, month, mday;
	int wday;     /* 0 Sunday .. 6 Saturday */
	int32_t secs; /* since midnight */
};
void tz_civil_of(int64_t local, struct tz_civil *out);
/* Days since 1970-01-01 of year-month-day (proleptic Gregorian). */
int64_t tz_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
