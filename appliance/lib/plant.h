/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Bugs planted on purpose, for the positive controls of tests that must be
 * seen to catch them (NFBOX_TEST_PLANT=NAME): only in the test build (the
 * Makefile defines NFBOX_TEST_PLANT for the sanitizer build), never in
 * nfbox itself, where planted() is constant false.
 */
#ifndef NFBOX_LIB_PLANT_H
#define NFBOX_LIB_PLANT_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef NFBOX_TEST_PLANT
/* NFBOX_TEST_PLANT is one name or several, comma-separated. */
static inline bool planted(const char *bug)
{
	const char *e = getenv("NFBOX_TEST_PLANT");
	size_t n = strlen(bug);

	for (; e && *e; e += strcspn(e, ",") + (e[strcspn(e, ",")] == ',')) {
		if (!strncmp(e, bug, n) && (e[n] == ',' || !e[n]))
			return true;
	}
	return false;
}
#else
#define planted(bug) false
#endif

#endif
