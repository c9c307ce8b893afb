/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The metrics over HTTP (httpd.c). */
#ifndef NFBOX_DAEMON_HTTPD_H
#define NFBOX_DAEMON_HTTPD_H

#include "daemon/daemon_int.h"

/* httpd.c: --metrics-listen. httpd_tick once a round of the loop. */
int httpd_open(struct daemon *dm, struct diags *d);
void httpd_tick(struct daemon *dm);
void httpd_close(struct daemon *dm);

#endif
