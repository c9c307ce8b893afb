/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reloads: a policy read, checked, compiled and put in force (reload.c). */
#ifndef NFBOX_DAEMON_RELOAD_H
#define NFBOX_DAEMON_RELOAD_H

#include "daemon/daemon_int.h"

/* reload.c: load, compile and enforce the policy at path (read from fd
 * when it is not -1: a file a client opened); on failure the policy in force
 * stays. Every message for the operator goes to d. */
int daemon_reload(struct daemon *dm, const char *path, int fd, struct diags *d);
/* The same, the files read through `files` (its policy_fd is fd). */
int daemon_reload_files(struct daemon *dm, const char *path, int fd, const struct policy_files *files, struct diags *d);
/* A reload of the running daemon in a thread (reload.c): it reads, checks,
 * compiles and encodes there while the loop goes on; the loop then puts it
 * in force and calls done(dm, arg, r, d) with its result and messages
 * (systemd is told RELOADING=1 at the start, READY=1 at the end). 0 once
 * started; -EBUSY while another runs; -errno. daemon_reload_wait (at stop)
 * lets a running one finish without enforcing it (done gets -ECANCELED). */
typedef void (*reload_done_fn)(struct daemon *dm, void *arg, int r, struct diags *d);
int daemon_reload_start(struct daemon *dm, const char *path, int fd, reload_done_fn done, void *arg);
void daemon_reload_wait(struct daemon *dm);
/* SIGHUP: the policy file reloaded that way; one that comes while a reload
 * runs makes another once it is done. */
void daemon_reload_sighup(struct daemon *dm);

/* Load (not enforce) the policy at path as a reload reads it (fd as there). */
int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out);
/* systemd: READY=1 and STATUS= after a reload that returned r. */
void daemon_notify_ready(struct daemon *dm, int r);

/* What is enforced, in one line ("enforcing generation 3: 12 rules"). */
void daemon_status_line(const struct daemon *dm, char *buf, size_t len);
/* Written after d: what a reload did ("generation N: PATH: M rules
 * enforced") or that it changed nothing. */
void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f);
void loaded_free(struct loaded *l);

#endif
