/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A part of the daemon: one job (the HA pair, a fleet's node, the feeds,
 * the schedules, captures, last hits, confirm, the dynamic sets, metrics
 * over HTTP) that lives in its own folder and keeps its own state. The
 * daemon's core (daemon.c: the loop, start and stop; reload.c: the reload
 * transaction; clients.c: the control socket) knows the parts only through
 * the table (parts.def): it calls each part's operations in the table's
 * order, and a part reaches the core only through the functions below,
 * never through struct daemon.
 *
 * Adding a part: its folder, a `const struct part part_NAME` there, and one
 * line PART(NAME) in daemon/parts.def, where its place in the order is.
 */
#ifndef NFBOX_DAEMON_PART_H
#define NFBOX_DAEMON_PART_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "base/diag.h"
#include "control/proto.h"
#include "daemon/daemon.h"
#include "report/tree.h"
#include "system/loop.h"

struct daemon;

/* Why a policy is loaded. */
enum reload_why {
	RELOAD_START,	 /* the daemon's first */
	RELOAD_ASKED,	 /* nfbox reload (the control socket) */
	RELOAD_SIGHUP,	 /* SIGHUP, or systemctl reload */
	RELOAD_ROLLBACK, /* a change not confirmed in time, or left pending by the last daemon */
	RELOAD_FLEET,	 /* a fleet's revision */
};

/* A reload as asked. */
struct reload_req {
	const char *path;
	int fd;		  /* the policy file as a client sent it; -1: read path */
	unsigned confirm; /* rolls back unless confirmed within this many seconds; 0: confirmed as it loads */
	enum reload_why why;
	/* How the files are read (policy/policy.h); NULL: as the daemon reads
	 * them (trusted files only, unless --allow-unsafe-files). */
	const struct policy_files *files;
};

/* A reload as the parts see it: the new policy (compiled; once in force
 * it stays where it is) and what was asked. */
struct change {
	struct loaded *nl;
	const struct reload_req *req;
	const char *source; /* the policy file, for messages */
};

/* Who sent a control request. */
struct part_caller {
	uid_t uid;
	bool root;
	int fd; /* a file it passed with the request, or -1 */
};

/*
 * A part's operations, each optional. self is what open made.
 *   open     at start, before the backends: make the state, read what was
 *            saved.
 *   env      what the part gives the backends (before they open).
 *   start    after the backends opened, before the first load; > 0: it
 *            loaded the first policy itself (confirm: a change the last
 *            daemon left pending rolls back).
 * A reload, each step in the table's order:
 *   check    the new policy against the part's state; a failure is the
 *            policy file's (exit 78 at start).
 *   prepare  ready for it; may fail for the system's causes.
 *            Then the backends enforce it.
 *   commit   it is enforced; the policy before it is still alive.
 *   abort    it failed after this part's prepare succeeded (reverse order).
 *   settle   after every reload, r its result; the policy in force (the
 *            new one if r is 0) is daemon_in_force()'s.
 * And:
 *   confirmed the policy in force is no longer a change waiting for its
 *            confirmation (confirmed, rolled back, or replaced).
 *   tick     once a round of the loop (at least once a second).
 *   status   its values into `nfbox status` (its own object or values).
 *   stats    its values into `nfbox stats`; the rows (rules and
 *            defaults) may be amended; zero: its counters back to 0.
 *   answer   a control request: true if it answered it (into f).
 *   stop     the orderly end, before the backends stop (keep: the policy
 *            stays enforced for the next daemon).
 *   close    free (reverse order; also after a start that failed).
 */
struct stats_rows {
	struct stats_row *v;
	uint32_t n;
};

struct part {
	const char *name;
	int (*open)(struct daemon *dm, void **self, struct diags *d);
	void (*env)(void *self, struct backend_env *env);
	int (*start)(void *self, struct diags *d);
	int (*check)(void *self, const struct change *c, struct diags *d);
	int (*prepare)(void *self, const struct change *c, struct diags *d);
	void (*commit)(void *self, const struct change *c, struct diags *d);
	void (*abort)(void *self, const struct change *c);
	void (*settle)(void *self, const struct change *c, int r);
	void (*confirmed)(void *self);
	void (*tick)(void *self);
	void (*status)(void *self, struct rep *status);
	void (*stats)(void *self, struct stats_rows *rows, struct rep *stats, bool zero);
	bool (*answer)(void *self, const struct part_caller *who, const struct ctl_request *req, FILE *f);
	void (*stop)(void *self, bool keep);
	void (*close)(void *self);
};

#define PART(name) extern const struct part part_##name;
#include "daemon/parts.def"
#undef PART

/* ---- what the core gives the parts ---- */

const struct daemon_opts *daemon_opts(const struct daemon *dm);
struct loop *daemon_loop(struct daemon *dm);
/* Another part's state (its open's self); NULL if it has none. */
void *daemon_part_state(const struct daemon *dm, const struct part *p);

/* The policy in force (pol NULL: none) and the backend that enforces it
 * (NULL: none). */
const struct loaded *daemon_in_force(const struct daemon *dm);
struct backend *daemon_backend(const struct daemon *dm);
/* Policies loaded so far: changes when one more is in force. */
unsigned long daemon_loads(const struct daemon *dm);

const char *daemon_socket_path(const struct daemon *dm);
/* The policy file a reload or a start reads: --policy, or what a fleet's
 * node last applied. */
const char *daemon_policy_path(const struct daemon *dm);
void daemon_set_policy_path(struct daemon *dm, const char *path);

/* A reload in a thread (reload.c): done is called from the loop once it
 * is over. -EBUSY while another runs. */
typedef void (*reload_done_fn)(struct daemon *dm, void *arg, int r, struct diags *d);
int daemon_reload_start(struct daemon *dm, const struct reload_req *req, reload_done_fn done, void *arg);
bool daemon_reloading(const struct daemon *dm);
/* A reload now, in the loop: 0 or -errno explained in d. */
int daemon_reload_now(struct daemon *dm, const struct reload_req *req, struct diags *d);
/* sd_notify: reloading, then ready again with the status line (r: how the
 * reload ended). */
void daemon_notify_reloading(struct daemon *dm);
void daemon_notify_ready(struct daemon *dm, int r);
/* What is enforced, in one line ("enforcing generation 3: 12 rules"). */
void daemon_status_line(const struct daemon *dm, char *buf, size_t len);
/* The metrics (Prometheus' text format) to f: 0 or -errno. */
int daemon_metrics(struct daemon *dm, FILE *f);

/* The policy in force is confirmed (confirm): every part's confirmed(). */
void daemon_confirmed(struct daemon *dm);
/* A verdict event into the events' log and its followers (events.c). */
void daemon_verdict(struct daemon *dm, const struct vevent *v);
/* A value of `nfbox stats`' "drops" (stats: rep_at(stats, "drops")): its
 * series, by its name. */
extern const struct rep_metric report_drop_metric;
/* The rules' and defaults' counts as the backend in force has them, each
 * part's stats() given the rows (last hits); rows->v malloc'd. */
int daemon_rows(struct daemon *dm, struct stats_rows *rows);

/* At start, when the dynamic sets' saved file cannot be read: their
 * entries as a backend's kernel state holds them (the saved file's
 * format, malloc'd into *text), *n of them, from that holder (*from). 1:
 * found; 0: no backend holds any; -errno (d). */
int daemon_dyn_read_back(struct daemon *dm, char **text, size_t *len, uint64_t *n, const char **from, struct diags *d);

#endif
