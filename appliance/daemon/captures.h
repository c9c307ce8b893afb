/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The policy's captures (captures.c). */
#ifndef NFBOX_DAEMON_CAPTURES_H
#define NFBOX_DAEMON_CAPTURES_H

#include "daemon/daemon_int.h"

/* captures.c: the policy's captures follow the policy in force. apply:
 * reconcile with p (call before the old policy is freed); a capture that
 * cannot start is a warning in d, never an error. */
void daemon_captures_apply(struct daemon *dm, const struct policy *p, struct diags *d);
void daemon_captures_stop_all(struct daemon *dm);
/* Once a second or so: a log warning when a capture keeps losing frames. */
void daemon_captures_tick(struct daemon *dm);

#endif
