/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verdict events (events.c). */
#ifndef NFBOX_DAEMON_EVENTS_H
#define NFBOX_DAEMON_EVENTS_H

#include "daemon/daemon_int.h"

/* events.c: verdict events from the classifier's ring buffer, written to
 * the log and handed to dm->publish (the followers: clients.c). The notice
 * that n events were missed, and why, as one JSON line in line: its
 * length, 0 if it did not fit. */
int events_open(struct daemon *dm, struct diags *d);
size_t events_missed_line(char *line, size_t len, uint64_t n, const char *why);
void events_close(struct daemon *dm);
/* Once a second: events the kernel's ring had no room for. */
void events_tick(struct daemon *dm);

/* events.c, with the nftables backend: verdict events logged by its rules
 * (NFLOG group NFT_NFLOG_GROUP) in the same JSON form, followed from open
 * (when that backend comes into force) to close (when it leaves). */
void nflog_events_open(struct daemon *dm);
void nflog_events_close(struct daemon *dm);

#endif
