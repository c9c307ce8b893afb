/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the daemon: struct daemon holds the handles of its parts, each of
 * which keeps its state behind a header of its own and is reached through
 * it: the backends (backends.h), the control socket and its clients
 * (clients.h), reloads (reload.h) and confirm (confirm.h), the dynamic sets
 * (dynsets.h), the verdict events' log and followers (events.h), captures
 * (captures.h), the HA pair (ha.h), metrics over HTTP (httpd.h) and links
 * (links.h). One epoll loop (system/loop.h, run by daemon.c) waits for
 * every source; each part watches its own and is ticked once a round.
 */
#ifndef NFBOX_DAEMON_INT_H
#define NFBOX_DAEMON_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <time.h>

#include "backend/backend.h"
#include "control/proto.h"
#include "daemon/daemon.h"
#include "dynset/dynset.h"
#include "system/loop.h"
#include "system/netns.h"
#include "system/pins.h"

struct daemon;

struct dcap;	   /* captures.c */
struct eventlog;   /* events.c */
struct clients;	   /* clients.c */
struct confirm;	   /* confirm.c */
struct dynstore;   /* dynsets.c */
struct dha;	   /* ha.c */
struct reload_job; /* reload.c */
struct links;	   /* links.c */
struct usage;	   /* usage.c */
struct schedules;  /* schedules.c */
struct fleet;	   /* fleet.c */
struct dynverify;  /* dynverify.c */

/* A change waiting for `nfbox confirm` (written by confirm.c alone). */
struct confirm_pending {
	bool active;
	long long deadline, since; /* time(): rolls back at deadline; pending since */
};

struct daemon {
	const struct daemon_opts *opts;
	struct netns_id netns;
	char socket_path[PATH_MAX];
	char pin_dir[PATH_MAX];		/* "" with --no-pin */
	char state_dir[PATH_MAX];	/* the confirmed policy's copy, the pending change */
	struct confirm *confirm;	/* reload --confirm (confirm.c) */
	struct confirm_pending pending; /* a change waiting for `nfbox confirm` */
	struct pin_place pins;
	struct loaded cur;
	/* The backends (backends.c) and what they are given: both open, the
	 * one of the policy in force chosen by backend_of(). */
	struct backend *backends[2];
	struct backend_env benv;
	struct backend_table table;
	struct loop loop;
	struct handler signals;
	struct links *links;	 /* interfaces as they come and go (links.c) */
	struct eventlog *events; /* the verdict events' log and followers (events.c) */
	struct clients *clients; /* the control socket and its clients (clients.c) */
	bool stop;		 /* leave the loop */
	bool keep;		 /* ... leaving pins and table for the next daemon (stop keep) */
	bool policy_fault;	 /* the last reload failed because of the policy file */
	time_t started, loaded_at;
	char fingerprint[65]; /* of the policy in force (fingerprint.c); "" if none */
	unsigned long reloads_ok, reloads_failed;
	struct dynstore *dyn;	       /* the dynamic sets (dynsets.c) */
	struct dynverify *dynverify;   /* their kernel checked against them (dynverify.c) */
	struct httpd *httpd;	       /* --metrics-listen (httpd.c), NULL if not */
	struct reload_job *reload_job; /* a reload whose thread runs (reload.c), NULL if none */
	bool reload_again;	       /* SIGHUP came while it ran: once more after it */
	struct dcap **caps;	       /* the policy's captures, in policy order */
	uint32_t ncaps;
	struct dha *ha;		 /* the pair's daemons (ha.c), NULL until a policy has ha: */
	struct usage *usage;	 /* the rules' last hits, kept (usage.c) */
	struct schedules *sched; /* rules with when: (schedules.c), NULL if none */
	struct feeds *feeds;	 /* sets of countries and host names (feeds.c), NULL if none */
	struct fleet *fleet;	 /* a fleet's node (fleet.c), NULL without --fleet */
	/* The policy file a reload or a start reads: --policy, or the last
	 * revision a fleet's node applied. */
	char policy_path[PATH_MAX];
};

#endif
