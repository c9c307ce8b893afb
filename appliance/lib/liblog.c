/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "lib/liblog.h"

#include <bpf/libbpf.h>
#include <stdarg.h>
#include <xdp/libxdp.h>

#include "base/log.h"

static bool quiet;

void log_libraries_quiet(bool q)
{
	quiet = q;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings are what a failed load explains itself with
	 * (including the verifier log); its info and debug lines are noise. */
	enum log_level l = level == LIBBPF_WARN && !quiet ? LOG_WARN : LOG_DEBUG;

	log_vmsg(l, fmt, ap);
	return 0;
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	log_vmsg(level == LIBXDP_WARN && !quiet ? LOG_WARN : LOG_DEBUG, fmt, ap);
	return 0;
}

void log_libraries(void)
{
	libbpf_set_print(libbpf_print);
	libxdp_set_print(libxdp_print);
}
