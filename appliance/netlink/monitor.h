/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interfaces and their addresses as they come and go: a netlink socket on
 * the rtnetlink link and address groups. The daemon polls its fd; each
 * readable round is read whole, and the caller learns that links changed
 * (added, deleted, renamed, an address added or removed, or, after an
 * overrun, possibly anything): interfaces are then resolved again by name.
 */
#ifndef NFBOX_NETLINK_MONITOR_H
#define NFBOX_NETLINK_MONITOR_H

#include <stdbool.h>

struct nl_monitor;

/* 0 or -errno. */
int nl_monitor_open(struct nl_monitor **out);
void nl_monitor_close(struct nl_monitor *m);
int nl_monitor_fd(const struct nl_monitor *m);
/* Read what is there without blocking: true if a link was added, deleted
 * or renamed, or an address came or went (or messages were lost and
 * anything may have changed). */
bool nl_monitor_links_changed(struct nl_monitor *m);

#endif
