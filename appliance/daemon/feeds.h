/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sets the daemon fills itself (feeds.c): country sets from their MMDB
 * file, loaded again when the file changes (inotify), and host-name sets
 * from DNS (c-ares), each name refreshed when its TTL runs out. Their
 * entries go into the dynamic sets (dynsets.h: dyn_feed) without a reload.
 */
#ifndef NFBOX_DAEMON_FEEDS_H
#define NFBOX_DAEMON_FEEDS_H

#include "daemon/daemon_int.h"

/* After a reload (or the start): the policy in force's feeds (re)loaded
 * where their definition or source changed, the others kept. */
void feeds_after_reload(struct daemon *dm);
/* Once a round: names whose refresh is due asked again. */
void feeds_tick(struct daemon *dm);
void feeds_close(struct daemon *dm);

/* One feed as `status` shows it. */
struct feed_report {
	const char *set;
	const char *kind;  /* "country", "hosts" */
	char source[160];  /* "DE,FR from /var/lib/GeoIP/x.mmdb", "3 names" */
	uint64_t entries;  /* the set's entries now */
	long long loaded;  /* time() of the last load or answer; 0: none yet */
	char problem[640]; /* "" or what is wrong (a warning: the set keeps what it has) */
};
/* *out malloc'd. 0 or -ENOMEM. */
int feeds_report(struct daemon *dm, struct feed_report **out, uint32_t *n);

#endif
