/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Scope-bound cleanup, so that early returns cannot leak: a variable
 * declared _cleanup_free_ is freed, _cleanup_close_ closed, _cleanup_fclose_
 * closed when it goes out of scope. Ownership leaves the scope with
 * TAKE_PTR() / TAKE_FD(), which return the value and reset the variable:
 *
 *	_cleanup_free_ char *buf = malloc(n);
 *	_cleanup_close_ int fd = open(path, O_RDONLY);
 *	if (fd < 0)
 *		return -errno;          // buf is freed
 *	*out = TAKE_PTR(buf);           // kept: the caller owns it now
 *	return TAKE_FD(fd);
 */
#ifndef NFBOX_LIB_CLEANUP_H
#define NFBOX_LIB_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(fn) __attribute__((cleanup(fn)))

static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}

static inline void cleanup_closep(const int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void cleanup_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_	 _cleanup_(cleanup_freep)
#define _cleanup_close_	 _cleanup_(cleanup_closep)
#define _cleanup_fclose_ _cleanup_(cleanup_fclosep)

#define TAKE_PTR(p)                         \
	({                                  \
		__typeof__(p) _taken = (p); \
		(p) = NULL;                 \
		_taken;                     \
	})

#define TAKE_FD(fd)                \
	({                         \
		int _taken = (fd); \
		(fd) = -1;         \
		_taken;            \
	})

#endif
