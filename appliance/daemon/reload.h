/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reloads (reload.c): a policy read, checked, compiled and put in force,
 * or, on any failure, the policy in force left as it is. The parts start
 * one with daemon_reload_start() or daemon_reload_now() (part.h); every
 * message for the operator goes to the reload's diagnostics.
 */
#ifndef NFBOX_DAEMON_RELOAD_H
#define NFBOX_DAEMON_RELOAD_H

#include "daemon/daemon_int.h"

/* A reload of the running daemon runs in a thread: it reads, checks,
 * compiles and encodes there while the loop goes on; the loop then puts it
 * in force and calls done(dm, arg, r, d) with its result and messages
 * (systemd is told RELOADING=1 at the start, READY=1 at the end).
 * daemon_reload_wait (at stop) lets a running one finish without
 * enforcing it (done gets -ECANCELED). */
void daemon_reload_wait(struct daemon *dm);
/* The policy the last reload replaced is freed in a thread: wait for it. */
void daemon_reap_wait(struct daemon *dm);
/* SIGHUP: the policy file reloaded that way; one that comes while a reload
 * runs makes another once it is done. */
void daemon_reload_sighup(struct daemon *dm);

/* Load (not enforce) the policy at path as a reload reads it (fd: a file a
 * client opened, or -1). */
int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out);
/* Written after d: what a reload did ("generation N: PATH: M rules
 * enforced") or that it changed nothing. */
void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f);
void loaded_free(struct loaded *l);

#endif
