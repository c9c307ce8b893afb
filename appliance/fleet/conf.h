/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fleet file (nfbox-fleet(5)): where etcd is, how to prove who this is,
 * and which node of which group:
 *
 *   etcd:
 *     endpoints: [https://192.0.2.1:2379, https://192.0.2.2:2379]
 *     cert: node.crt          # client certificate (no common name)
 *     key: node.key
 *     ca: ca.crt
 *     user: node-berlin       # etcd's user (RBAC); default: the node's name
 *     password-file: password
 *   node: berlin
 *   group: branches
 *   prefix: /nfbox            # default
 *   share-window: 200ms       # default; 0: each shared change at once
 *
 * Paths are relative to the fleet file's directory. An operator's fleet
 * file names no node.
 */
#ifndef NFBOX_FLEET_CONF_H
#define NFBOX_FLEET_CONF_H

#include "base/diag.h"
#include "fleet/etcd.h"

#define FLEET_MAX_NAME		  63
#define FLEET_SHARE_WINDOW_MS	  200 /* share-window's default */
#define FLEET_SHARE_WINDOW_MAX_MS 5000

struct fleet_conf {
	struct etcd_conf etcd;
	char *node;   /* NULL: an operator's file */
	char *group;  /* NULL: none given (the operator names it) */
	char *prefix; /* "/nfbox" */
	/* a shared change made within this long of the last transaction of
	 * them waits for its end, and goes with the others made meanwhile */
	uint32_t share_window_ms;
	char *path; /* of the file */
};

/* Read and check the file at path (errors at file:line:col into d);
 * trust_files: whatever the owner and mode of the password file. */
int fleet_conf_load(const char *path, bool trust_files, struct diags *d, struct fleet_conf *out);
void fleet_conf_free(struct fleet_conf *c);

/* A group's keys: PREFIX/GROUP/WHAT ("policy", "candidate", "nodes/",
 * "sets/"). */
void fleet_key(const struct fleet_conf *c, const char *group, const char *what, char *buf, size_t len);

/* A node or group name: letters, digits, '-', '_', '.'; 1..63. */
bool fleet_name_ok(const char *s);

#endif
