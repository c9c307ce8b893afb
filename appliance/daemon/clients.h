/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The control socket and its clients (clients.c). */
#ifndef NFBOX_DAEMON_CLIENTS_H
#define NFBOX_DAEMON_CLIENTS_H

#include "daemon/daemon_int.h"

/* clients.c: the control socket. */
int clients_listen(struct daemon *dm, struct diags *d);
void clients_close_all(struct daemon *dm);
/* The control socket is open (a start that fails removes it). */
bool clients_listening(const struct daemon *dm);
/* Drop the clients marked dead (after each round of the loop). */
void clients_reap(struct daemon *dm);
/* After each round of the loop (at least once a second): timeouts. */
void clients_tick(struct daemon *dm);
/* Milliseconds until the next request line is due, or -1: none is
 * awaited (the loop wakes for it, so that the slot is free on time). */
int clients_next_deadline(const struct daemon *dm);

#endif
