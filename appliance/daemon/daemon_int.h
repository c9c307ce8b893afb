/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the daemon's core (daemon.c, reload.c, clients.c and the files
 * they stand on: backends, links, events, state, report): struct daemon.
 * The parts never see it (part.h); each keeps its state in a struct of its
 * own, found here in parts[] in the table's order.
 */
#ifndef NFBOX_DAEMON_INT_H
#define NFBOX_DAEMON_INT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "backend/backend.h"
#include "control/proto.h"
#include "lib/fingerprint.h"
#include "daemon/daemon.h"
#include "daemon/part.h"
#include "system/loop.h"
#include "system/netns.h"
#include "system/pins.h"

struct eventlog;   /* events.c */
struct clients;	   /* clients.c */
struct reload_job; /* reload.c */
struct reaper;	   /* reload.c */
struct links;	   /* links.c */
struct livetrace;  /* livetrace.c */

/* The parts, in the table's order (parts.c). */
extern const struct part *const daemon_parts[];
extern const unsigned daemon_nparts;

struct daemon {
	const struct daemon_opts *opts;
	struct netns_id netns;
	char socket_path[PATH_MAX];
	char pin_dir[PATH_MAX];	  /* "" with --no-pin */
	char state_dir[PATH_MAX]; /* what outlives the daemon: the confirmed policy, the dynamic sets, ... */
	struct pin_place pins;
	struct loaded cur;
	/* The backends (backends.c) and what they are given: each open, the
	 * one of the policy in force chosen by backend_of(). */
	struct backend **backends; /* backend_table's order */
	struct backend_env benv;
	struct backend_table table;
	struct loop loop;
	struct handler signals;
	struct links *links;	 /* interfaces as they come and go (links.c) */
	struct eventlog *events; /* the verdict events' log and followers (events.c) */
	struct clients *clients; /* the control socket and its clients (clients.c) */
	struct livetrace *trace; /* the live trace that runs (livetrace.c), NULL if none */
	void **parts;		 /* each part's state, as daemon_parts[] */
	bool stop;		 /* leave the loop */
	bool keep;		 /* ... leaving pins and table for the next daemon (stop keep) */
	bool policy_fault;	 /* the last reload failed because of the policy file */
	time_t started, loaded_at;
	char fingerprint[65];		  /* of the policy in force (lib/fingerprint.h); "" if none */
	struct fingerprint_cache on_disk; /* ... of its files as they are on disk, while unchanged */
	unsigned long reloads_ok, reloads_failed;
	struct reload_job *reload_job; /* a reload whose thread runs (reload.c), NULL if none */
	struct reaper *reaper;	       /* the policy a reload replaced, being freed (reload.c) */
	bool reload_again;	       /* SIGHUP came while it ran: once more after it */
	/* The policy file a reload or a start reads: --policy, or the last
	 * revision a fleet's node applied. */
	char policy_path[PATH_MAX];
};

/* The table walked (parts.c), each operation where a part has it: in
 * the table's order; abort and close in the reverse. */
int parts_open(struct daemon *dm, struct diags *d);
void parts_env(struct daemon *dm, struct backend_env *env);
int parts_start(struct daemon *dm, struct diags *d);
int parts_check(struct daemon *dm, const struct change *c, struct diags *d);
int parts_prepare(struct daemon *dm, const struct change *c, struct diags *d);
void parts_commit(struct daemon *dm, const struct change *c, struct diags *d);
void parts_abort(struct daemon *dm, const struct change *c);
void parts_settle(struct daemon *dm, const struct change *c, int r);
void parts_tick(struct daemon *dm);
void parts_status(struct daemon *dm, struct rep *status);
void parts_stats(struct daemon *dm, struct stats_rows *rows, struct rep *stats, bool zero);
bool parts_answer(struct daemon *dm, const struct part_caller *who, const struct ctl_request *req, FILE *f);
void parts_stop(struct daemon *dm, bool keep);
void parts_close(struct daemon *dm);

#endif
