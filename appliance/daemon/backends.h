/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's backends (backends.c): each of the table opened at start, the one of the
 * policy in force chosen in one place (backend_of, the only reader of
 * opt.backend), the others told to let go when it takes over.
 */
#ifndef NFBOX_DAEMON_BACKENDS_H
#define NFBOX_DAEMON_BACKENDS_H

#include "backend/backend.h"
#include "daemon/daemon_int.h"

/* Open both and start them (a backend that cannot start is warned of: its
 * policies fail to load, saying why). 0 or -errno in d. */
int backends_open(struct daemon *dm, struct diags *d);
void backends_close(struct daemon *dm);
/* The backend of policy p; NULL for no policy. */
struct backend *backend_of(const struct daemon *dm, const struct policy *p);
/* The one of the policy in force; NULL for none. */
struct backend *backend_in_force(const struct daemon *dm);

/* A reload, step by step: every backend prepares (counter slots); nl's
 * backend enforces it; then commit (every backend; nl's is in force and
 * the others let go) or abort. */
int backends_prepare(struct daemon *dm, struct loaded *nl, struct diags *d);
int backends_enforce(struct daemon *dm, const struct loaded *nl, struct diags *d);
void backends_commit(struct daemon *dm, const struct loaded *nl);
void backends_abort(struct daemon *dm);

void backends_tick(struct daemon *dm);
/* Each backend's values into `nfbox status` (the tree's root). */
void backends_status(struct daemon *dm, struct rep *status);
/* Whether a backend adopted the state a daemon before left. */
bool backends_adopted(const struct daemon *dm);
/* At the end: the kernel's state kept for the next daemon or removed; or,
 * after a failed start that enforced nothing, what it made removed. */
void backends_stop(struct daemon *dm, bool keep);
void backends_discard(struct daemon *dm);
#endif
