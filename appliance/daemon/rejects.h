/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The BPF backend's rejects (rejects.c). */
#ifndef NFBOX_DAEMON_REJECTS_H
#define NFBOX_DAEMON_REJECTS_H

#include "daemon/daemon_int.h"

/* rejects.c: the BPF backend's rejects: the classifier hands each rejected
 * packet's head over (nfb_rejects), the daemon answers it with a TCP reset
 * or an ICMP error, marked NFB_REPLY_MARK. */
int rejects_open(struct daemon *dm, struct diags *d);
void rejects_close(struct daemon *dm);
/* Replies sent, replies the kernel refused, rejected packets no reply may
 * answer (an ICMP error, a broadcast); since the start or rejects_zero. */
void rejects_counts(const struct daemon *dm, uint64_t *sent, uint64_t *send_failed, uint64_t *unanswerable);
void rejects_zero(struct daemon *dm);

#endif
