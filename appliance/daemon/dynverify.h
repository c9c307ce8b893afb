/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The dynamic sets' kernel checked against the store (dynverify.c). */
#ifndef NFBOX_DAEMON_DYNVERIFY_H
#define NFBOX_DAEMON_DYNVERIFY_H

#include "daemon/daemon_int.h"
#include "daemon/dynsets.h"

/* Once a round: a check is started when it is due (its interval, or a
 * change that asked for one). */
void dynverify_tick(struct daemon *dm);
/* The check's part of what status and stats say (dynsets.h). */
void dynverify_report(const struct daemon *dm, struct dyn_report *out);
void dynverify_zero(struct daemon *dm);
/* A check under way finishes (its repairs are not applied); then freed. */
void dynverify_close(struct daemon *dm);

#endif
