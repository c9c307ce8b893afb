/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The HA pair's daemons (ha.c). */
#ifndef NFBOX_DAEMON_HA_H
#define NFBOX_DAEMON_HA_H

#include "daemon/daemon_int.h"

/* ha.c: keepalived and conntrackd follow the policy in force. prepare
 * (before a policy is enforced; source names it in the files written)
 * fails a load whose pair cannot run (a program missing, a configuration
 * keepalived refuses); commit (once enforced) starts, reconfigures or
 * stops them; abort forgets what prepare wrote. tick restarts what
 * exited and reads conntrackd's statistics; stop_all at a stop (keepalived
 * first: the peer takes the addresses over). */
int ha_prepare(struct daemon *dm, const struct policy *p, const char *source, struct diags *d);
void ha_commit(struct daemon *dm, const struct policy *p, const char *source);
void ha_abort(struct daemon *dm);
void ha_tick(struct daemon *dm);
void ha_stop_all(struct daemon *dm);
void ha_free(struct daemon *dm);

#endif
