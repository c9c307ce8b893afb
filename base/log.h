/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One logging module for nfbox and the libraries under it (libbpf and
 * libxdp through lib/liblog.h):
 * whole messages to stderr, "nfbox: error: ..." on a terminal or a file.
 * When stderr is systemd's journal ($JOURNAL_STREAM), each message is one
 * journal entry with its priority: a "<3>".."<7>" prefix on the line, and a
 * message of several lines (a verifier log, a located policy error) sent
 * whole through journald's socket, or else every line prefixed. */
#ifndef NFBOX_LOG_H
#define NFBOX_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

/* Messages up to max are written. */
void log_init(enum log_level max);
__attribute__((format(printf, 2, 3))) void log_msg(enum log_level level, const char *fmt, ...);
void log_vmsg(enum log_level level, const char *fmt, va_list ap);

/* A message that says its level itself (a diagnostic's "FILE:L:C: error:
 * ..."), at that level but without the level's word. */
void log_text(enum log_level level, const char *text);
/* Is stderr the journal (set by log_init)? */
bool log_to_journal(void);
/* One structured journal entry (journald's native protocol): fields are
 * "KEY=VALUE" strings on one line each; PRIORITY and SYSLOG_IDENTIFIER=nfbox
 * are added. 0 or -errno. */
#define LOG_JOURNAL_MAX_FIELDS 24
int log_journal_fields(int priority, const char *const *fields, size_t n);

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
