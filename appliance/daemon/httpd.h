/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The metrics over HTTP (httpd.c). */
#ifndef NFBOX_DAEMON_HTTPD_H
#define NFBOX_DAEMON_HTTPD_H

#include "daemon/daemon_int.h"

/* What is served: the metrics text to f, 0 or -errno. Handed down by the
 * loop (daemon_metrics), so that the report may read this part's counts
 * without a call circle. */
typedef int httpd_text_fn(struct daemon *dm, FILE *f);

/* httpd.c: --metrics-listen. httpd_tick once a round of the loop. */
int httpd_open(struct daemon *dm, httpd_text_fn *text, struct diags *d);
void httpd_tick(struct daemon *dm);
void httpd_close(struct daemon *dm);

/* What the server counts, as status and metrics show it. */
struct httpd_report {
	const char *listen; /* --metrics-listen; NULL: not serving */
	unsigned head_deadline_s;
	unsigned long served;	     /* GET or HEAD /metrics answered */
	unsigned long refused;	     /* answered 404 or 405 */
	unsigned long head_timeouts; /* closed: no request's head within the deadline */
};
void httpd_report(struct daemon *dm, struct httpd_report *out);

#endif
