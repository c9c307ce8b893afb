/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verdict events (events.c). */
#ifndef NFBOX_DAEMON_EVENTS_H
#define NFBOX_DAEMON_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* events.c: the verdict events the backends hand over (their sink), each
 * written to the log file (--log), to the journal under systemd, and to
 * the followers (`nfbox log`, clients.c); the notice of events missed to
 * the followers. */
struct eventlog;
/* path: NULL none, "-" stdout. 0 or -errno (logged). */
int eventlog_open(const char *path, struct eventlog **out);
void eventlog_close(struct eventlog *el);
/* SIGUSR1: the log file opened again by its name (after logrotate moved it). */
void eventlog_reopen(struct eventlog *el);
/* Events to the journal too (said in the log when on). */
void eventlog_journal(struct eventlog *el, bool on);
/* Each event line to publish (the followers); NULL: none. */
void eventlog_follow(struct eventlog *el, void (*publish)(void *arg, const char *line, size_t len), void *arg);
/* Events seen since the start. */
unsigned long long eventlog_seen(const struct eventlog *el);
struct backend_sink eventlog_sink(struct eventlog *el);
/* An event's keys (those of `nfbox log --json`), into an object of j. */
struct json;
void events_vevent_fields(struct json *j, const struct vevent *v);
/* The notice that n events were missed, and why, as one JSON line in line:
 * its length, 0 if it did not fit. */
size_t events_missed_line(char *line, size_t len, uint64_t n, const char *why);

#endif
