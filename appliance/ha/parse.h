/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the two daemons of a pair say: keepalived's notices on its FIFO
 * ('INSTANCE "lan0_51" MASTER 150', 'GROUP "nfbox" BACKUP') and
 * conntrackd's statistics (`conntrackd -s`).
 */
#ifndef NFBOX_HA_PARSE_H
#define NFBOX_HA_PARSE_H

#include <stdbool.h>
#include <stdint.h>

enum ha_role {
	HA_ROLE_STOPPED = 0, /* keepalived is not running */
	HA_ROLE_STARTING,    /* running, nothing told yet */
	HA_ROLE_BACKUP,
	HA_ROLE_MASTER,
	HA_ROLE_FAULT,
	HA_ROLE_MAX,
};

const char *ha_role_name(enum ha_role r); /* "stopped", "starting", "backup", "master", "fault" */

struct ha_notice {
	bool group; /* GROUP, else INSTANCE */
	char name[64];
	enum ha_role state; /* keepalived's STOP and DELETED are HA_ROLE_STOPPED */
};
/* 0, or -EINVAL for a line that is no notice nfbox knows. */
int ha_parse_notice(const char *line, struct ha_notice *out);

struct ha_sync_stats {
	uint64_t internal, external; /* connections in the caches */
	uint64_t bytes_sent, bytes_recv, msgs_sent, msgs_recv, send_errors, recv_errors;
	uint64_t malformed, lost; /* sync messages */
};
/* 0, or -EINVAL when text has none of the sections (a field that is
 * missing stays 0). */
int ha_parse_stats(const char *text, struct ha_sync_stats *out);

#endif
