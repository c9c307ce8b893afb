/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* qsort and bsearch for arrays that may be empty: an empty array is often
 * NULL, and the C library declares both functions' base never NULL (UBSan
 * stops a daemon that passes one: dynset verify once did). */
#ifndef NFBOX_BASE_SORT_H
#define NFBOX_BASE_SORT_H

#include <stdlib.h>

static inline void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static inline void *search_n(const void *key, const void *base, size_t n, size_t size,
			     int (*cmp)(const void *, const void *))
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

#endif
