/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Interfaces as they come and go (links.c). */
#ifndef NFBOX_DAEMON_LINKS_H
#define NFBOX_DAEMON_LINKS_H

#include "daemon/daemon_int.h"

/* links.c: interfaces follow the link monitor; the policy's interfaces
 * that are not there (names into the policy, *n of them, at most max). */
int links_open(struct daemon *dm, struct diags *d);
void links_close(struct daemon *dm);
void links_after_reload(struct daemon *dm);
uint32_t links_missing(const struct policy *p, const char **out, uint32_t max);

#endif
