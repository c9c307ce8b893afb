/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The client side of the control protocol (proto.h), for the commands. */
#ifndef NFBOX_CONTROL_CLIENT_H
#define NFBOX_CONTROL_CLIENT_H

#include <stdio.h>

#include "control/proto.h"

/* Send req to the daemon on socket_path (with fd, if not -1, passed along:
 * the policy file of a reload) and copy its reply: the text of an "ok"
 * reply to out, of an "error" reply to err. Before connecting, the socket's
 * directory must be one only root can write to (else someone could stand
 * in for the daemon). Returns 0 for ok, CTL_ERROR for an error reply,
 * CTL_INVALID for an "invalid" one (the policy file's fault), or -errno
 * (explained in d) when no reply could be had.
 *
 * For `log` the reply is a stream of events: each goes to out as it comes,
 * a {"missed":N,...} line is also said on err; it ends at the daemon's end,
 * or at SIGINT/SIGTERM. Then 1 if events were missed, else 0.
 *
 * For `stop`, an "ok" is followed by waiting (up to a minute) until the
 * daemon's process has exited. */
#define CTL_ERROR   1
#define CTL_INVALID 2
int ctl_call(const char *socket_path, const struct ctl_request *req, int fd, FILE *out, FILE *err, struct diags *d);

/* A request whose "ok" is followed by lines (trace): each line, newline
 * and all, to fn until the daemon closes, fn returns non-zero (returned),
 * or SIGINT/SIGTERM (0). An error reply is copied to err: CTL_ERROR.
 * -errno (explained in d) when no reply could be had. */
int ctl_stream(const char *socket_path, const struct ctl_request *req, int (*fn)(const char *line, void *arg),
	       void *arg, FILE *err, struct diags *d);

#endif
