/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Internals of the daemon, shared by daemon.c and daemon_ctl.c. */
#ifndef NFBOX_DAEMON_INT_H
#define NFBOX_DAEMON_INT_H

#include <stdio.h>
#include <time.h>

#include "daemon/daemon.h"
#include "engine/engine.h"
#include "engine/slots.h"

struct client {
	int fd;
	bool follow; /* `nfbox log`: receives verdict events */
	bool dead;
	size_t len;
	char buf[4096];
};

/* A policy in force, with everything it owns. */
struct loaded {
	char *path;
	struct diags diags; /* owns the policy's sources */
	struct policy *pol;
	struct plan *plan;
	struct plan_blob blob;
	struct slot_map slots;
};

struct dcap; /* daemon_capture.c */

struct daemon {
	const struct daemon_opts *opts;
	struct engine *e;
	struct loaded cur;
	struct slot_table slots;
	int lfd, sfd, epfd, rbfd;
	struct ring_buffer *rb;
	FILE *logf;
	struct client clients[64];
	int nclients;
	int conntrack; /* table inet nfbox: 1 present, 0 absent, -1 not known yet */
	time_t started, loaded_at;
	unsigned long reloads_ok, reloads_failed;
	unsigned long long events;
	struct dcap *caps; /* the policy's captures, in policy order */
	uint32_t ncaps;
};

int daemon_reload(struct daemon *dm, const char *path, char **text);
/* Answer one control request line; returns a malloc'd reply whose first
 * line is "ok" or "error". */
char *daemon_answer(struct daemon *dm, const char *req);

/* s as a JSON string, quoted and escaped (daemon_ctl.c). */
void daemon_json_str(FILE *f, const char *s);

/* Captures (daemon_capture.c). apply: reconcile with the policy now in
 * force (call before the old policy is freed); report gets one warning
 * line per capture that could not start and a summary. event: a capture's
 * done fd became readable; false if fd is not one. */
void daemon_captures_apply(struct daemon *dm, const struct policy *p, FILE *report);
void daemon_captures_stop_all(struct daemon *dm);
bool daemon_captures_event(struct daemon *dm, int fd);
void daemon_captures_status(struct daemon *dm, FILE *f, bool json);
void daemon_captures_stats(struct daemon *dm, FILE *f, bool json);
/* Once a second or so: a log warning when a capture keeps losing frames. */
void daemon_captures_tick(struct daemon *dm);

#endif
