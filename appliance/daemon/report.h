/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What `nfbox status`, `nfbox stats` and `nfbox metrics` answer
 * (report.c): one tree each (report/tree.h), the core's values and the
 * backends', then each part's (part.h: status, stats); written as text,
 * JSON or Prometheus series by the tree's writers. docs/report.md
 * documents the JSON.
 */
#ifndef NFBOX_DAEMON_REPORT_H
#define NFBOX_DAEMON_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "report/tree.h"

struct daemon;

/* The trees (rep_failed(): -ENOMEM if one could not be made whole).
 * zero: every counter shown (but the captures') back to 0 after. */
struct rep *report_status(struct daemon *dm);
struct rep *report_stats(struct daemon *dm, bool zero);
/* stats --unused: the rules and defaults of a stats tree without a hit in
 * the last since seconds (0: ever), with when each came into force. */
void report_unused(const struct rep *stats, FILE *f, bool json, unsigned since);

#endif
