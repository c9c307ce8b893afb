/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The configurations nfbox writes for the two daemons of a pair, from the
 * policy's ha: section: keepalived (VRRP version 3, one instance per
 * virtual address, all of them in one sync group so that they move
 * together, every change told through a FIFO) and conntrackd (FTFW over
 * UDP on the sync link, an external cache committed when the node becomes
 * master). Pure text: the daemon writes and checks it (ha/part.c).
 */
#ifndef NFBOX_HA_CONFIG_H
#define NFBOX_HA_CONFIG_H

#include <limits.h>

#include "policy/policy.h"

/* The files of one daemon's pair, all in one directory of its own. */
struct ha_paths {
	char dir[PATH_MAX];
	char keepalived_conf[PATH_MAX], conntrackd_conf[PATH_MAX];
	char fifo[PATH_MAX]; /* keepalived's notify_fifo, read by nfbox */
	char ctl[PATH_MAX];  /* conntrackd's control socket */
	char lock[PATH_MAX]; /* conntrackd's lock file */
	/* keepalived's pid files, every one it may take: a default one (in
	 * /run) is another keepalived's, or another appliance's, on this host,
	 * and finding it locked keepalived exits as "already running". */
	char pid[PATH_MAX], vrrp_pid[PATH_MAX], checkers_pid[PATH_MAX], bfd_pid[PATH_MAX];
};

/* dir is the directory; every other path is set inside it. */
int ha_paths_init(struct ha_paths *p, const char *dir);

#define HA_SYNC_GROUP "nfbox"

/* The instance name of virtual address i ("lan0_51", "lan0_51_v6"). */
void ha_instance_name(const struct ha_virtual *v, char *buf, size_t len);

/* The texts (malloc'd, NULL when out of memory). sync_addr, sync_peer:
 * this node's and the other's address on the sync link, as found when the
 * pair starts (ha.sync.address or the interface's; the peer among two). */
char *ha_keepalived_conf(const struct ha_conf *ha, const struct ha_paths *paths, const char *source);
char *ha_conntrackd_conf(const struct ha_conf *ha, const struct prefix *sync_addr, const struct prefix *sync_peer,
			 const struct ha_paths *paths, const char *source);

#endif
