/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Changes that roll back unless confirmed (confirm.c). */
#ifndef NFBOX_DAEMON_CONFIRM_H
#define NFBOX_DAEMON_CONFIRM_H

#include "daemon/daemon_int.h"

/* confirm.c: changes that roll back unless confirmed. confirm_init reads
 * the state directory (a pending change found there is rolled back by
 * start); confirm_save keeps the policy in force as the confirmed one;
 * confirm_loaded after a plain reload (it is confirmed); confirm_begin
 * before a reload --confirm (confirm_begin_failed if that reload fails);
 * confirm_done for `nfbox confirm`; confirm_tick rolls back at the
 * deadline. */
int confirm_init(struct daemon *dm, struct diags *d);
int confirm_save(struct daemon *dm);
void confirm_loaded(struct daemon *dm);
int confirm_begin(struct daemon *dm, unsigned seconds, struct diags *d);
void confirm_begin_failed(struct daemon *dm);
int confirm_done(struct daemon *dm, struct diags *d);
/* running: a reload of the running daemon (systemd is told), not its start. */
int confirm_rollback(struct daemon *dm, const char *why, bool running);
void confirm_tick(struct daemon *dm);
void confirm_free(struct daemon *dm);

/* A change waiting for `nfbox confirm` is dm->pending (daemon_int.h),
 * which this part alone writes. */

#endif
