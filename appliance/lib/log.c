/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "lib/log.h"

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum log_level log_max = LOG_INFO;

static void log_line(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
	char buf[2048];
	size_t n;

	if (level > log_max)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	fprintf(stderr, "nfbox: %s%s\n", prefix[level], buf);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(level, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings are what a failed load explains itself with
	 * (including the verifier log); its info and debug lines are noise. */
	enum log_level l = level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG;

	log_line(l, fmt, ap);
	return 0;
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	log_line(level == LIBXDP_WARN ? LOG_WARN : LOG_DEBUG, fmt, ap);
	return 0;
}

void log_init(enum log_level max)
{
	log_max = max;
	libbpf_set_print(libbpf_print);
	libxdp_set_print(libxdp_print);
}
