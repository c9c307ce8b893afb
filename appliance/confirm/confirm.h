/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Changes that roll back by themselves unless confirmed: a daemon part
 * (part.c). A reload asked with a confirmation time (reload_req.confirm)
 * waits for `nfbox confirm`, or for confirm_now; at its deadline, or at
 * the next start if the daemon stopped first, the last confirmed policy
 * comes back.
 */
#ifndef NFBOX_CONFIRM_CONFIRM_H
#define NFBOX_CONFIRM_CONFIRM_H

#include <stdbool.h>

struct daemon;
struct diags;

/* A change is waiting for its confirmation. */
bool confirm_pending(const struct daemon *dm);
/* Confirm it (a fleet's canary that reached etcd again): 0, or -errno in d
 * (nothing was pending; the policy could not be saved). */
int confirm_now(struct daemon *dm, struct diags *d);

#endif
