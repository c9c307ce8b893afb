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
#include "engine/engine.h"
#include "dynset/dynset.h"
#include "engine/slots.h"
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
	struct handler rejects, nflog;
	struct ring_buffer *rejects_rb;
	struct rejecter *rejecter; /* rejects.c */
	struct nflog *nflog_sock;  /* the nftables backend's verdict events */
	uint64_t nflog_lost_seen;
	uint64_t rejects_sent, reject_send_failed, rejects_unanswerable;
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

/* reload.c: load, compile and enforce the policy at path (read from fd
 * when it is not -1: a file a client opened); on failure the policy in force
 * stays. Every message for the operator goes to d. */
int daemon_reload(struct daemon *dm, const char *path, int fd, struct diags *d);
/* The same, the files read through `files` (its policy_fd is fd). */
int daemon_reload_files(struct daemon *dm, const char *path, int fd, const struct policy_files *files, struct diags *d);
/* A reload of the running daemon in a thread (reload.c): it reads, checks,
 * compiles and encodes there while the loop goes on; the loop then puts it
 * in force and calls done(dm, arg, r, d) with its result and messages
 * (systemd is told RELOADING=1 at the start, READY=1 at the end). 0 once
 * started; -EBUSY while another runs; -errno. daemon_reload_wait (at stop)
 * lets a running one finish without enforcing it (done gets -ECANCELED). */
typedef void (*reload_done_fn)(struct daemon *dm, void *arg, int r, struct diags *d);
int daemon_reload_start(struct daemon *dm, const char *path, int fd, reload_done_fn done, void *arg);
void daemon_reload_wait(struct daemon *dm);
/* SIGHUP: the policy file reloaded that way; one that comes while a reload
 * runs makes another once it is done. */
void daemon_reload_sighup(struct daemon *dm);

/* Load (not enforce) the policy at path as a reload reads it (fd as there). */
int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out);
/* systemd: READY=1 and STATUS= after a reload that returned r. */
void daemon_notify_ready(struct daemon *dm, int r);

/* fingerprint.c: SHA-256 of a policy's files as the loader read them
 * (sources: the loader's, newest first), or as they are on disk now. 0 or
 * -errno; out gets 64 hex digits. */
int fingerprint_loaded(const struct source *sources, char out[65]);
int fingerprint_on_disk(const struct source *sources, char out[65]);

/* confirm.c: changes that roll back unless confirmed. confirm_init reads
 * the state directory (a pending change found there is rolled back by
 * start); confirm_save keeps the policy in force as the confirmed one;
 * confirm_loaded after a plain reload (it is confirmed); confirm_begin
 * before a reload --confirm (confirm_begin_failed if that reload fails);
 * confirm_done for `nfbox confirm`; confirm_tick rolls back at the
 * deadline. */
int confirm_init(struct daemon *dm, struct diags *d);
/* A file of the state directory: its path; written whole or not at all (a
 * temporary file, synced to disk when sync, renamed). 0 or -errno. */
int state_path(const struct daemon *dm, const char *name, char *buf, size_t len);
int state_write(const struct daemon *dm, const char *name, const char *data, size_t len, bool sync);
/* The same, the data what save() writes of obj. 0 (also with no state
 * directory) or -errno. */
int state_save(const struct daemon *dm, const char *name, void (*save)(const void *obj, FILE *f), const void *obj,
	       bool sync);
/* The counter slots' names in the state directory: saved after every load,
 * loaded by a daemon that adopted pinned state. */
void state_save_slots(struct daemon *dm);
void state_load_slots(struct daemon *dm);
int confirm_save(struct daemon *dm);
void confirm_loaded(struct daemon *dm);
int confirm_begin(struct daemon *dm, unsigned seconds, struct diags *d);
void confirm_begin_failed(struct daemon *dm);
int confirm_done(struct daemon *dm, struct diags *d);
/* running: a reload of the running daemon (systemd is told), not its start. */
int confirm_rollback(struct daemon *dm, const char *why, bool running);
void confirm_tick(struct daemon *dm);
/* What is enforced, in one line ("enforcing generation 3: 12 rules"). */
void daemon_status_line(const struct daemon *dm, char *buf, size_t len);
/* Written after d: what a reload did ("generation N: PATH: M rules
 * enforced") or that it changed nothing. */
void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f);
void loaded_free(struct loaded *l);

/* daemon.c: open the BPF engine (adopting pinned state) and its rings. */
int daemon_engine_open(struct daemon *dm, struct diags *d);
/* reload.c: table inet nfbox for policy p, in one transaction (removed if
 * p needs nothing from nftables); filter: with the whole filter (the
 * nftables backend), else conntrack and NAT only (the BPF backend's).
 * 0 or -errno explained in d. */
int daemon_nft_apply(struct daemon *dm, const struct policy *p, bool filter, struct diags *d);

/* dynsets.c: dynamic sets (`nfbox set`). dyn_state_load at start reads
 * the saved entries; dyn_prepare gives a new policy's dynamic sets their
 * ids (in m); dyn_after_reload after every load (r: its result); dyn_answer
 * the set-* requests; dyn_tick expires entries. */
void dyn_state_load(struct daemon *dm);
/* After the engine is open: when STATE/dynsets could not be read, the
 * entries come from the pinned classifier that was enforcing them; where
 * nothing holds them the start fails (-EIO, explained in d) unless
 * --fresh, which starts the sets empty. */
int dyn_recover(struct daemon *dm, struct diags *d);
int dyn_prepare(struct daemon *dm, const struct policy *p, struct slot_map *m, struct diags *d);
void dyn_after_reload(struct daemon *dm, int r);
/* Once no change waits for `nfbox confirm`: the entries of sets the policy
 * in force dropped go (kept until then, for a rollback). */
void dyn_settle(struct daemon *dm);
struct client;
void dyn_answer(struct daemon *dm, struct client *c, const struct ctl_request *req, FILE *f);
void dyn_tick(struct daemon *dm);

/* httpd.c: --metrics-listen. httpd_tick once a round of the loop. */
int httpd_open(struct daemon *dm, struct diags *d);
void httpd_tick(struct daemon *dm);
void httpd_close(struct daemon *dm);
/* The metrics (`nfbox metrics`, GET /metrics) to f. 0 or -errno. */
int daemon_metrics(struct daemon *dm, FILE *f);

/* lasthit.c: each rule's last hit with the nftables backend, from its
 * named counter (0: none seen). lasthit_tick reads the counters when due;
 * lasthit_zero after stats --zero. */
void lasthit_tick(struct daemon *dm);
/* t, just applied, is the baseline: its counters as they start (carried
 * over or 0); the last hits of counters it keeps stay. */
void lasthit_start(struct daemon *dm, const struct nfr_table *t);
long long lasthit_of(const struct daemon *dm, const char *counter);
void lasthit_zero(struct daemon *dm);
void lasthit_free(struct daemon *dm);

/* clients.c: the control socket. */
int clients_listen(struct daemon *dm, struct diags *d);
void clients_close_all(struct daemon *dm);
/* Drop the clients marked dead (after each round of the loop). */
void clients_reap(struct daemon *dm);
/* Once a second: timeouts. */
void clients_tick(struct daemon *dm);

/* links.c: interfaces follow the link monitor; the policy's interfaces
 * that are not there (names into the plan, *n of them, at most max). */
int links_open(struct daemon *dm, struct diags *d);
void links_close(struct daemon *dm);
void links_after_reload(struct daemon *dm);
uint32_t links_missing(const struct plan *pl, const char **out, uint32_t max);

/* events.c: verdict events from the classifier's ring buffer, written to
 * the log and handed to dm->publish (the followers: clients.c). The notice
 * that n events were missed, and why, as one JSON line in line: its
 * length, 0 if it did not fit. */
int events_open(struct daemon *dm, struct diags *d);
size_t events_missed_line(char *line, size_t len, uint64_t n, const char *why);
void events_close(struct daemon *dm);
/* Once a second: events the kernel's ring had no room for. */
void events_tick(struct daemon *dm);

/* events.c, with the nftables backend: verdict events logged by its rules
 * (NFLOG group NFT_NFLOG_GROUP) in the same JSON form, followed from open
 * (when that backend comes into force) to close (when it leaves). */
void nflog_events_open(struct daemon *dm);
void nflog_events_close(struct daemon *dm);

/* rejects.c: the BPF backend's rejects: the classifier hands each rejected
 * packet's head over (nfb_rejects), the daemon answers it with a TCP reset
 * or an ICMP error, marked NFB_REPLY_MARK. */
int rejects_open(struct daemon *dm, struct diags *d);
void rejects_close(struct daemon *dm);

/* captures.c: the policy's captures follow the policy in force. apply:
 * reconcile with p (call before the old policy is freed); a capture that
 * cannot start is a warning in d, never an error. */
void daemon_captures_apply(struct daemon *dm, const struct policy *p, struct diags *d);
void daemon_captures_stop_all(struct daemon *dm);
/* Once a second or so: a log warning when a capture keeps losing frames. */
void daemon_captures_tick(struct daemon *dm);

/* ha.c: keepalived and conntrackd follow the policy in force. prepare
 * (before a policy is enforced; source names it in the files written)
 * fails a load whose pair cannot run (a program missing, a configuration
 * keepalived refuses); commit (once enforced) starts, reconfigures or
 * stops them; abort forgets what prepare wrote. tick restarts what
 * exited and reads conntrackd's statistics; stop_all at a stop (keepalived
 * first: the peer takes the addresses over). */
int ha_prepare(struct daemon *dm, const struct policy *p, const char *source, struct diags *d);
void ha_commit(struct daemon *dm, const struct policy *p, const char *source);
void ha_abort(struct daemon *dm);
void ha_tick(struct daemon *dm);
void ha_stop_all(struct daemon *dm);
void ha_free(struct daemon *dm);

#endif
