/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The metrics (`nfbox metrics`, GET /metrics): the status and the counters
 * collected (report.c) and written in the Prometheus text format
 * (format.c), for the control socket and the HTTP server alike. */
#include "daemon/daemon_int.h"
#include "daemon/metrics.h"
#include "daemon/report.h"

int daemon_metrics(struct daemon *dm, FILE *f)
{
	struct status_report st;
	struct stats_report sr;
	int r;

	if ((r = report_status(dm, &st)) == 0) {
		if ((r = report_stats(dm, &sr, false)) == 0)
			format_metrics(&st, &sr, f);
		report_stats_free(&sr);
	}
	report_status_free(&st);
	return r;
}
