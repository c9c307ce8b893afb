/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One logging module for nfbox and the libraries under it (libbpf, libxdp):
 * whole messages, one line each, to stderr. */
#ifndef NFBOX_LOG_H
#define NFBOX_LOG_H

enum log_level {
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

/* Messages up to max are written; libbpf's and libxdp's output is routed
 * here too (their warnings as warnings, the rest as debug). */
void log_init(enum log_level max);
__attribute__((format(printf, 2, 3))) void log_msg(enum log_level level, const char *fmt, ...);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
