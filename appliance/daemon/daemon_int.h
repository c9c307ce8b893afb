/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside the daemon. One epoll loop (daemon.c) waits for every source; each
 * source is a struct handler whose fn the loop calls with the epoll events:
 * the control socket and its clients (clients.c), signals (daemon.c), the
 * verdict-event ring buffer (events.c) and the captures' end notices
 * (captures.c). A new source is one more handler.
 */
#ifndef NFBOX_DAEMON_INT_H
#define NFBOX_DAEMON_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <time.h>

#include "control/proto.h"
#include "daemon/daemon.h"
#include "backend/bpf/engine/engine.h"
#include "dynset/dynset.h"
#include "backend/bpf/engine/slots.h"
#include "system/netns.h"
#include "system/pins.h"

struct daemon;

struct handler {
	int fd;
	void (*fn)(struct daemon *dm, struct handler *h, uint32_t events);
};

/* Add h to the loop (EPOLLIN) / remove it. 0 or -errno. */
int daemon_watch(struct daemon *dm, struct handler *h);
void daemon_unwatch(struct daemon *dm, struct handler *h);

#define DAEMON_MAX_CLIENTS 64

struct client {
	struct handler h;
	bool follow;  /* `nfbox log`: receives verdict events */
	bool closing; /* the reply is queued: close once it is written */
	bool dead;
	bool root;	 /* may do anything; else status, stats and log */
	bool want_write; /* EPOLLOUT is watched */
	bool waiting;	 /* its reload runs in a thread: answered when it is done */
	uint64_t serial; /* which connection this is (a freed client's memory is reused) */
	uid_t uid;
	int fd_passed;	 /* a file sent with the request (SCM_RIGHTS), or -1 */
	time_t since;	 /* accepted, or the last progress writing */
	uint64_t missed; /* events a follower could not take */
	size_t len;
	char buf[CTL_MAX_REQUEST + 1];
	char *out; /* queued output: out[out_off .. out_len) */
	size_t out_len, out_off, out_cap;
};

/* A policy in force, with everything it owns. */
struct loaded {
	char *path;
	struct policy *pol;
	struct plan *plan;
	struct plan_blob blob;
	struct slot_map slots;
};

struct dcap;	   /* captures.c */
struct dha;	   /* ha.c */
struct reload_job; /* reload.c */
struct ring_buffer;
struct nl_monitor;
struct nfr_table;

/* A change waiting for `nfbox confirm` (confirm.c). */
struct confirm_pending {
	bool active;
	long long deadline, since; /* time(): rolls back at deadline; pending since */
};

struct daemon {
	/* A verdict event line for every `nfbox log` follower (set by
	 * clients_listen); a follower it does not reach is told later how many
	 * it missed. NULL: no followers. */
	void (*publish)(struct daemon *dm, const char *line, size_t len);
	const struct daemon_opts *opts;
	struct netns_id netns;
	char socket_path[PATH_MAX];
	char pin_dir[PATH_MAX];	  /* "" with --no-pin */
	char state_dir[PATH_MAX]; /* the confirmed policy's copy, the pending change */
	struct confirm_pending pending, pending_before;
	struct pin_place pins;
	struct engine *e;
	struct loaded cur;
	struct slot_table slots;
	int epfd;
	struct handler listener, signals, events, links;
	struct nl_monitor *monitor;
	char *missing_ifaces; /* as last logged: "wg0, ppp0", "" if none */
	struct ring_buffer *rb;
	FILE *logf;
	struct client *clients[DAEMON_MAX_CLIENTS];
	int nclients;
	gid_t socket_gid;	   /* --socket-group, (gid_t)-1 if none */
	uint64_t log_dropped_seen; /* NFB_CNT_LOG_DROPPED already told to followers */
	int nft_table;		   /* table inet nfbox: 1 present, 0 absent, -1 not known yet */
	bool dropped_pins;	   /* --fresh done */
	struct handler nflog;
	struct rejecter *rejecter; /* rejects.c */
	struct nflog *nflog_sock;  /* the nftables backend's verdict events */
	uint64_t nflog_lost_seen;
	bool stop;	   /* leave the loop */
	bool keep;	   /* ... leaving pins and table for the next daemon (stop keep) */
	bool policy_fault; /* the last reload failed because of the policy file */
	time_t started, loaded_at;
	char fingerprint[65]; /* of the policy in force (fingerprint.c); "" if none */
	unsigned long reloads_ok, reloads_failed;
	unsigned long long events_seen;
	struct dynsets dyn;	 /* the dynamic sets' entries (dynsets.c) */
	bool dyn_bpf_synced;	 /* the classifier's tries hold them (BPF backend in force) */
	char dyn_unread[512];	 /* why STATE/dynsets could not be read at start ("": it could, or there is none) */
	struct httpd *httpd;	 /* --metrics-listen (httpd.c), NULL if not */
	bool journal_events;	 /* verdict events to the journal (under systemd) */
	struct lasthit *lasthit; /* the nftables backend's last hits (lasthit.c) */
	unsigned long long journal_failed; /* ... that could not be sent */
	struct reload_job *reload_job;	   /* a reload whose thread runs (reload.c), NULL if none */
	bool reload_again;		   /* SIGHUP came while it ran: once more after it */
	struct dcap **caps;		   /* the policy's captures, in policy order */
	uint32_t ncaps;
	struct dha *ha; /* the pair's daemons (ha.c), NULL until a policy has ha: */
};

/* daemon.c: open the BPF engine (adopting pinned state) and its rings. */
int daemon_engine_open(struct daemon *dm, struct diags *d);

#endif
