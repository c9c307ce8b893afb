/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon: loads the policy into the engine, serves the control socket,
 * follows verdict events, reloads on request or SIGHUP, and on SIGTERM
 * detaches everything. One epoll loop dispatches to handlers
 * (daemon_int.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "daemon/backends.h"
#include "daemon/clients.h"
#include "daemon/daemon_int.h"
#include "daemon/events.h"
#include "daemon/links.h"
#include "daemon/livetrace.h"
#include "daemon/reload.h"
#include "daemon/state.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/sdnotify.h"

/* ---- signals ---- */

static void sighup_done(struct daemon *dm, void *arg, int r, struct diags *d)
{
	_cleanup_free_ char *text = diags_to_text(d);

	(void)dm;
	(void)arg;
	log_msg(r < 0 ? LOG_ERR : LOG_INFO, "reload on SIGHUP: %s", text ? text : "");
}

void daemon_reload_sighup(struct daemon *dm)
{
	int r;

	if (dm->reload_job) {
		dm->reload_again = true; /* after the one running */
		return;
	}
	if ((r = daemon_reload_start(dm,
				     &(struct reload_req){ .path = dm->policy_path, .fd = -1, .why = RELOAD_SIGHUP },
				     sighup_done, NULL)) < 0)
		log_err("reload on SIGHUP: cannot start it: %s", strerror(-r));
}

static void on_signal(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct signalfd_siginfo si;

	while (read(h->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			daemon_reload_sighup(dm);
			continue;
		}
		if (si.ssi_signo == SIGUSR1) {
			eventlog_reopen(dm->events);
			continue;
		}
		log_info("signal %d: detaching and stopping", si.ssi_signo);
		dm->stop = true;
		return;
	}
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* ---- the loop ---- */

static void loop(struct daemon *dm)
{
	while (!dm->stop) {
		int due = clients_next_deadline(dm);

		loop_run_once(&dm->loop, due >= 0 && due < 1000 ? due + 1 : 1000, &dm->stop);
		if (dm->reload_again && !dm->reload_job && !dm->stop) {
			dm->reload_again = false;
			daemon_reload_sighup(dm); /* the file may have changed since the last one began */
		}
		clients_reap(dm);
		clients_tick(dm);
		backends_tick(dm);
		parts_tick(dm);
	}
}

/* ---- start and stop ---- */

static void shutdown_all(struct daemon *dm)
{
	livetrace_end(dm, "stop");
	daemon_reload_wait(dm);	     /* a reload still reading: it ends, unenforced */
	parts_stop(dm, dm->keep);    /* each while the policy is still enforced */
	backends_stop(dm, dm->keep); /* kept: pins and table for the next daemon to adopt */
	unlink(dm->socket_path);
}

/* The socket and pin directory: given, or this network namespace's. */
static int resolve_paths(struct daemon *dm, struct diags *d)
{
	const struct daemon_opts *o = dm->opts;
	int r;

	if ((r = netns_identify(&dm->netns, d)) < 0)
		return r;
	if (o->socket)
		snprintf(dm->socket_path, sizeof(dm->socket_path), "%s", o->socket);
	else if ((r = netns_default_socket(dm->socket_path, sizeof(dm->socket_path), d)) < 0)
		return r;
	if (o->no_pin)
		dm->pin_dir[0] = '\0';
	else if (o->pin_dir)
		snprintf(dm->pin_dir, sizeof(dm->pin_dir), "%s", o->pin_dir);
	else if ((r = netns_default_pin_dir(dm->pin_dir, sizeof(dm->pin_dir), d)) < 0)
		return r;
	if (o->state_dir)
		snprintf(dm->state_dir, sizeof(dm->state_dir), "%s", o->state_dir);
	else if ((r = netns_default_state_dir(dm->state_dir, sizeof(dm->state_dir), d)) < 0)
		return r;
	return 0;
}

/* What the backends are given (backend.h). */
static void backend_env_init(struct daemon *dm)
{
	dm->table.present = -1;
	dm->benv = (struct backend_env){
		.loop = &dm->loop,
		.pin_dir = dm->pin_dir,
		.state_dir = dm->state_dir,
		.netns_cookie = dm->netns.cookie,
		.fresh = dm->opts->fresh,
		.sink = eventlog_sink(dm->events),
		.table = &dm->table,
	};
	dm->benv.sink.traced = livetrace_packet;
	dm->benv.sink.targ = dm;
	parts_env(dm, &dm->benv); /* the dynamic sets' store, what an overload does */
}

static int start(struct daemon *dm, struct diags *d)
{
	bool adopted;
	int r;

	if ((r = resolve_paths(dm, d)) < 0)
		return r;
	if ((r = loop_open(&dm->loop)) < 0)
		return diag_errno(d, r, "epoll");
	dm->signals.fn = on_signal;
	dm->signals.ctx = dm;
	if ((dm->signals.fd = setup_signals()) < 0 || loop_watch(&dm->loop, &dm->signals) < 0)
		return diag_errno(d, -errno, "cannot set up signals");
	if ((r = clients_listen(dm, d)) < 0 || (r = state_dir_make(dm, d)) < 0 || (r = parts_open(dm, d)) < 0)
		return r;
	if (!dm->opts->no_pin && (r = pins_make_lasting(dm->pin_dir, &dm->pins, d)) < 0)
		return r;
	backend_env_init(dm);
	if ((r = backends_open(dm, d)) < 0 || (r = links_open(dm, d)) < 0)
		return r;
	eventlog_journal(dm->events, log_to_journal() && !dm->opts->no_journal_events);
	adopted = backends_adopted(dm);
	/* A part may load the first policy itself: confirm, when a change
	 * was waiting for its confirmation as the daemon before this one
	 * stopped (the last confirmed policy comes back, not the configured
	 * file, which may hold the unconfirmed change). */
	if ((r = parts_start(dm, d)) != 0)
		return r < 0 ? r : 0;
	if ((r = daemon_reload_now(dm, &(struct reload_req){ .path = dm->policy_path, .fd = -1, .why = RELOAD_START },
				   d)) < 0)
		return diag_fail(d, r, "%s: not loaded; %s", dm->policy_path,
				 adopted ? "the adopted policy stays in force" : "nothing is enforced");
	return 0;
}

static void log_one_diag(enum diag_level level, const char *text, void *arg)
{
	log_text(level == DIAG_ERROR ? LOG_ERR : level == DIAG_WARNING ? LOG_WARN : LOG_INFO, text);
}

/* The diagnostics of a start: to the journal one entry each, with its
 * priority; elsewhere as `nfbox validate` prints them. */
static void print_diags(const struct diags *d)
{
	if (log_to_journal())
		diags_each(d, log_one_diag, NULL);
	else
		diags_print(d, stderr, false);
}

/* A start that failed leaves nothing behind it made, and keeps what it
 * adopted enforcing. */
static void start_failed(struct daemon *dm, struct diags *d)
{
	print_diags(d);
	/* Nothing was enforced: leave nothing, not even the table this start
	 * put in place before the engine failed (it persists). */
	if (!backends_adopted(dm) && !dm->cur.pol)
		backends_discard(dm);
	if (clients_listening(dm))
		unlink(dm->socket_path);
}

static void daemon_free(struct daemon *dm)
{
	clients_close_all(dm);
	links_close(dm);
	parts_close(dm);
	if (dm->signals.fd >= 0)
		close(dm->signals.fd);
	loop_close(&dm->loop);
	backends_close(dm);
	daemon_reap_wait(dm);
	loaded_free(&dm->cur);
	eventlog_close(dm->events);
}

/* ---- what the core gives the parts (part.h) ---- */

const struct daemon_opts *daemon_opts(const struct daemon *dm)
{
	return dm->opts;
}

struct loop *daemon_loop(struct daemon *dm)
{
	return &dm->loop;
}

const struct loaded *daemon_in_force(const struct daemon *dm)
{
	return &dm->cur;
}

struct backend *daemon_backend(const struct daemon *dm)
{
	return backend_in_force(dm);
}

unsigned long daemon_loads(const struct daemon *dm)
{
	return dm->reloads_ok;
}

const char *daemon_socket_path(const struct daemon *dm)
{
	return dm->socket_path;
}

const char *daemon_policy_path(const struct daemon *dm)
{
	return dm->policy_path;
}

void daemon_set_policy_path(struct daemon *dm, const char *path)
{
	snprintf(dm->policy_path, sizeof(dm->policy_path), "%s", path);
}

void daemon_verdict(struct daemon *dm, const struct vevent *v)
{
	if (dm->benv.sink.verdict)
		dm->benv.sink.verdict(dm->benv.sink.arg, v);
}

int daemon_run(const struct daemon_opts *o)
{
	struct daemon dm = { .opts = o, .loop.epfd = -1, .signals.fd = -1 };
	char status[256];
	struct diags d;
	int r;

	dm.started = time(NULL);
	snprintf(dm.policy_path, sizeof(dm.policy_path), "%s", o->policy);
	if (eventlog_open(o->log, &dm.events) < 0)
		return 1;
	diags_init(&d);
	r = start(&dm, &d);
	if (r < 0) {
		start_failed(&dm, &d);
	} else {
		print_diags(&d);
		daemon_reload_summary(&dm, o->policy, 0, stderr);
		printf("ready\n");
		fflush(stdout);
		daemon_status_line(&dm, status, sizeof(status));
		sd_notifyf("READY=1\nSTATUS=%s", status);
		loop(&dm);
		sd_notifyf("STOPPING=1\nSTATUS=stopping: %s",
			   dm.keep ? "the policy stays enforced for the next daemon" : "detaching the policy");
		shutdown_all(&dm);
	}
	diags_free(&d);
	daemon_free(&dm);
	/* A bad policy file is not fixed by trying again: its own status, so
	 * that a service manager does not restart (RestartPreventExitStatus=). */
	return r < 0 ? (dm.policy_fault ? DAEMON_EXIT_POLICY : 1) : 0;
}
