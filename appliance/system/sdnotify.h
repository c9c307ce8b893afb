/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sd_notify protocol, spoken directly (no libsystemd): one datagram of
 * "KEY=VALUE" lines to the socket in $NOTIFY_SOCKET, which systemd sets for
 * a Type=notify service. Without $NOTIFY_SOCKET (not under systemd) every
 * call does nothing.
 */
#ifndef NFBOX_SYSTEM_SDNOTIFY_H
#define NFBOX_SYSTEM_SDNOTIFY_H

/* Send the formatted state ("READY=1\nSTATUS=..."). 0, or -errno; a failure
 * is also logged once (systemd then times the start out, which says more). */
__attribute__((format(printf, 1, 2))) int sd_notifyf(const char *fmt, ...);

/* RELOADING=1 with the MONOTONIC_USEC= that systemd wants beside it. */
int sd_notify_reloading(void);

#endif
