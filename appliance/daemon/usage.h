/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which rules are used (usage.c): each rule's last hit and the time it came
 * into force, by hook and name, kept in the state directory (STATE/last-hits)
 * so that they outlive restarts, reboots and a change of backend. What a
 * backend reports is merged in (the later last hit wins); the file is
 * written once a minute when something changed, after a reload and at the
 * end.
 */
#ifndef NFBOX_DAEMON_USAGE_H
#define NFBOX_DAEMON_USAGE_H

#include "daemon/daemon_int.h"

/* Read STATE/last-hits (a missing file is an empty record; an unreadable
 * or malformed one is set aside as last-hits.bad-TIME and said in the log).
 * 0 or -ENOMEM. */
int usage_open(struct daemon *dm);
/* Saved when changed, then freed. */
void usage_close(struct daemon *dm);
/* The rows of the policy in force (report_stats): each row's last hit
 * becomes the later of the backend's and the record's, and its in_force_ms
 * is filled in; rules not yet recorded start now, and those no longer in
 * force leave the record. */
void usage_merge(struct daemon *dm, struct stats_row *rows, uint32_t n);
/* stats --zero: every last hit forgotten. */
void usage_zero(struct daemon *dm);
/* Time to read the backend's last hits (report_usage): once a minute, or
 * now (after a reload, at the end) if a policy is in force. */
bool usage_due(struct daemon *dm, bool now);
/* After a reload: read at the next round of the loop (new rules' records
 * start then). */
void usage_soon(struct daemon *dm);
/* Written to the state directory if it changed. */
void usage_save(struct daemon *dm);
/* The last hit (wall ms, 0: none) of a rule of the policy in force. */
long long usage_last_hit(const struct daemon *dm, const char *hook, const char *rule);

#endif
