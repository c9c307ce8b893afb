/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Minimal test protocol shared by every nfbox test program: one line per
 * test case, read by tests/run.sh:
 *   "ok NAME"                  passed
 *   "FAIL NAME: why"           failed
 *   "skip NAME: kernel: why"   skipped: the kernel lacks a feature
 *   "skip NAME: machine: why"  skipped: the machine lacks hardware (a CPU)
 *   "skip NAME: build: why"    skipped: the build under test cannot tell
 *                              (tests/run.sh fails any other skip)
 * The program exits 1 if any case failed.
 */
#ifndef NFBOX_TEST_CHECK_H
#define NFBOX_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failed_cases;
static int check_case_failed;
static const char *check_case_name;

static inline void check_begin(const char *name)
{
	check_case_name = name;
	check_case_failed = 0;
}

static inline void check_end(void)
{
	if (!check_case_failed)
		printf("ok %s\n", check_case_name);
	fflush(stdout);
}

__attribute__((format(printf, 3, 4))) static inline void check_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (!check_case_failed)
		check_failed_cases++;
	check_case_failed = 1;
	printf("FAIL %s: %s:%d: ", check_case_name, file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void check_skip(const char *name, const char *why)
{
	printf("skip %s: %s\n", name, why);
	fflush(stdout);
}

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond))                                                          \
			check_fail_at(__FILE__, __LINE__, "check failed: %s", #cond); \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                                    \
	do {                                                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);                                           \
		if (_a != _b)                                                                                 \
			check_fail_at(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, _a, #b, _b); \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                                                           \
	do {                                                                                                         \
		const char *_a = (a), *_b = (b);                                                                     \
		if (!_a || !_b || strcmp(_a, _b))                                                                    \
			check_fail_at(__FILE__, __LINE__, "%s is\n  [%s]\nexpected\n  [%s]", #a, _a ? _a : "(null)", \
				      _b ? _b : "(null)");                                                           \
	} while (0)

#define CHECK_EXIT() return check_failed_cases ? 1 : 0

#endif
