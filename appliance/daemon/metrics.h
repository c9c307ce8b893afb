/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The metrics (metrics.c). */
#ifndef NFBOX_DAEMON_METRICS_H
#define NFBOX_DAEMON_METRICS_H

#include "daemon/daemon_int.h"

/* The metrics (`nfbox metrics`, GET /metrics) to f. 0 or -errno. */
int daemon_metrics(struct daemon *dm, FILE *f);

#endif
