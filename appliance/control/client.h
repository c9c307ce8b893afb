/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The client side of the control protocol (proto.h), for the commands. */
#ifndef NFBOX_CONTROL_CLIENT_H
#define NFBOX_CONTROL_CLIENT_H

#include <stdio.h>

#include "control/proto.h"

/* Send req to the daemon on socket_path and copy its reply: the text of an
 * "ok" reply to out, of an "error" reply to err. Returns 0 for ok, 1 for an
 * error reply, or -errno (explained in d) when no reply could be had. */
int ctl_call(const char *socket_path, const struct ctl_request *req, FILE *out, FILE *err, struct diags *d);

#endif
