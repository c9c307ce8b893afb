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

#include "daemon/backend.h"
#include "daemon/daemon_int.h"
#include "daemon/reload.h"
#include "daemon/confirm.h"
#include "daemon/state.h"
#include "daemon/dynsets.h"
#include "daemon/httpd.h"
#include "daemon/lasthit.h"
#include "daemon/clients.h"
#include "daemon/links.h"
#include "daemon/events.h"
#include "daemon/rejects.h"
#include "daemon/captures.h"
#include "daemon/ha.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/emit.h"
#include "system/sdnotify.h"

/* ---- signals ---- */

static void sighup_done(struct daemon *dm, void *arg, int r, struct diags *d)
{
	_cleanup_free_ char *text = diags_to_text(d);

	(void)arg;
	if (r == 0)
		confirm_loaded(dm);
	log_msg(r < 0 ? LOG_ERR : LOG_INFO, "reload on SIGHUP: %s", text ? text : "");
}

void daemon_reload_sighup(struct daemon *dm)
{
	int r;

	if (dm->reload_job) {
		dm->reload_again = true; /* after the one running */
		return;
	}
	if ((r = daemon_reload_start(dm, dm->opts->policy, -1, sighup_done, NULL)) < 0)
		log_err("reload on SIGHUP: cannot start it: %s", strerror(-r));
}

/* SIGUSR1: the --log file opened again by its name (after logrotate moved
 * it). The new file is opened before the old is closed: no event is
 * written to nowhere, and a failure keeps the old one. */
static void reopen_log(struct daemon *dm)
{
	const char *path = dm->opts->log;
	FILE *f;

	if (!path || !strcmp(path, "-") || !dm->logf)
		return;
	if (!(f = fopen(path, "ae"))) {
		log_err("SIGUSR1: cannot open the log file %s again (%s); writing on to the one open", path,
			strerror(errno));
		return;
	}
	fclose(dm->logf);
	dm->logf = f;
	log_info("SIGUSR1: the log file %s opened again", path);
}

static void on_signal(struct daemon *dm, struct handler *h, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(h->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			daemon_reload_sighup(dm);
			continue;
		}
		if (si.ssi_signo == SIGUSR1) {
			reopen_log(dm);
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
	struct epoll_event evs[16];

	while (!dm->stop) {
		int n = epoll_wait(dm->epfd, evs, 16, 1000);

		for (int i = 0; i < n && !dm->stop; i++) {
			struct handler *h = evs[i].data.ptr;

			h->fn(dm, h, evs[i].events);
		}
		if (dm->reload_again && !dm->reload_job && !dm->stop) {
			dm->reload_again = false;
			daemon_reload_sighup(dm); /* the file may have changed since the last one began */
		}
		clients_reap(dm);
		clients_tick(dm);
		events_tick(dm);
		daemon_captures_tick(dm);
		confirm_tick(dm);
		dyn_tick(dm);
		httpd_tick(dm);
		if (dm->cur.pol)
			backend_of(dm->cur.pol)->tick(dm);
		ha_tick(dm);
		engine_settle(dm->e); /* a reload is answered: free the policy it replaced */
	}
}

/* ---- start and stop ---- */

static void shutdown_all(struct daemon *dm)
{
	struct engine_info info;
	struct diags d;

	diags_init(&d);
	daemon_reload_wait(dm);	      /* a reload still reading: it ends, unenforced */
	ha_stop_all(dm);	      /* keepalived first: the peer takes the addresses while this node still filters */
	daemon_captures_stop_all(dm); /* files closed complete */
	if (dm->keep) {
		/* The pins hold the links and maps; table inet nfbox persists
		 * (NFT_TABLE_F_PERSIST) when its owner, this process, exits. */
		engine_get_info(dm->e, &info);
		log_info("stopped; the policy stays enforced (generation %llu pinned in %s, table inet %s) for the "
			 "next nfbox run to adopt",
			 (unsigned long long)info.generation, dm->pin_dir, NFT_TABLE_NAME);
		unlink(dm->socket_path);
		diags_free(&d);
		return;
	}
	if (dm->e)
		engine_destroy_pins(dm->e);
	if (nft_table_remove(&d) < 0)
		log_warn("removing table inet %s: %s", NFT_TABLE_NAME, diags_last(&d, ""));
	diags_free(&d);
	unlink(dm->socket_path);
}

static void drop_pinned(const struct engine_opts *eo)
{
	struct engine *old;
	struct diags d;

	diags_init(&d);
	if (engine_open(eo, &d, &old) == 0) {
		engine_destroy_pins(old);
		engine_close(old);
	}
	diags_free(&d);
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

int daemon_engine_open(struct daemon *dm, struct diags *d)
{
	struct engine_opts eo = { .pin_dir = dm->pin_dir[0] ? dm->pin_dir : NULL, .netns_cookie = dm->netns.cookie };
	struct engine_info info;
	int r;

	if (dm->opts->fresh && eo.pin_dir && !dm->dropped_pins) {
		drop_pinned(&eo);
		dm->dropped_pins = true;
	}
	if ((r = engine_open(&eo, d, &dm->e)) < 0)
		return r;
	engine_get_info(dm->e, &info);
	if (info.adopted)
		log_info("adopted the enforcing state pinned in %s (map set %u in force)", dm->pin_dir,
			 info.active_gen);
	if (!eo.pin_dir)
		log_warn("--no-pin: nothing is pinned; if nfbox stops or dies, enforcement ends with it");
	if ((r = events_open(dm, d)) < 0 || (r = rejects_open(dm, d)) < 0) {
		events_close(dm);
		rejects_close(dm);
		engine_close(dm->e);
		dm->e = NULL;
	}
	return r;
}

static int start(struct daemon *dm, struct diags *d)
{
	struct engine_info info;
	struct diags ed;
	int r;

	if ((r = resolve_paths(dm, d)) < 0)
		return r;
	if ((dm->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return diag_errno(d, -errno, "epoll");
	dm->signals.fn = on_signal;
	if ((dm->signals.fd = setup_signals()) < 0 || daemon_watch(dm, &dm->signals) < 0)
		return diag_errno(d, -errno, "cannot set up signals");
	if ((r = clients_listen(dm, d)) < 0 || (r = confirm_init(dm, d)) < 0)
		return r;
	dyn_state_load(dm);
	if (!dm->opts->no_pin && (r = pins_make_lasting(dm->pin_dir, &dm->pins, d)) < 0)
		return r;
	/* Without netfilter BPF (a kernel before 6.4) only the nftables
	 * backend can enforce; a BPF policy then fails to load, saying why. */
	diags_init(&ed);
	if (daemon_engine_open(dm, &ed) < 0) {
		_cleanup_free_ char *why = diags_to_text(&ed);

		log_warn("the BPF engine is not available, only 'backend: nftables' can be enforced: %s",
			 why ? why : "");
	}
	diags_free(&ed);
	if ((r = links_open(dm, d)) < 0 || (r = httpd_open(dm, d)) < 0)
		return r;
	dm->journal_events = log_to_journal() && !dm->opts->no_journal_events;
	if (dm->journal_events)
		log_info("verdict events go to the journal too (journalctl NFBOX_EVENT=verdict; --no-journal-events: "
			 "not)");
	engine_get_info(dm->e, &info);
	if (info.adopted)
		state_load_slots(dm);
	if ((r = dyn_recover(dm, d)) < 0)
		return r;
	/* A change was waiting for its confirmation when the daemon before
	 * this one stopped: the last confirmed policy comes back, not the
	 * configured file (which may hold the unconfirmed change). */
	if (dm->pending.active &&
	    confirm_rollback(dm, "a change was pending confirmation when the last daemon stopped", false) == 0)
		return 0;
	if ((r = daemon_reload(dm, dm->opts->policy, -1, d)) < 0)
		return diag_fail(d, r, "%s: not loaded; %s", dm->opts->policy,
				 info.adopted ? "the adopted policy stays in force" : "nothing is enforced");
	confirm_loaded(dm);
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
	struct engine_info info = { 0 };
	struct diags tmp;

	print_diags(d);
	if (dm->e)
		engine_get_info(dm->e, &info);
	if (!info.adopted && !dm->cur.pol) {
		/* Nothing was enforced: leave nothing, not even the table this
		 * start put in place before the engine failed (it persists). */
		if (dm->e)
			engine_destroy_pins(dm->e);
		diags_init(&tmp);
		if (dm->nft_table == 1 && nft_table_remove(&tmp) < 0)
			log_warn("removing table inet %s: %s", NFT_TABLE_NAME, diags_last(&tmp, ""));
		diags_free(&tmp);
	}
	if (dm->listener.fd >= 0)
		unlink(dm->socket_path);
}

static int open_log(struct daemon *dm, const char *path)
{
	if (!path)
		return 0;
	dm->logf = strcmp(path, "-") ? fopen(path, "ae") : stdout;
	if (!dm->logf) {
		log_err("cannot open log file %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static void daemon_free(struct daemon *dm)
{
	ha_free(dm);
	daemon_captures_stop_all(dm);
	clients_close_all(dm);
	events_close(dm);
	rejects_close(dm);
	nflog_events_close(dm);
	links_close(dm);
	httpd_close(dm);
	lasthit_free(dm);
	if (dm->signals.fd >= 0)
		close(dm->signals.fd);
	if (dm->epfd >= 0)
		close(dm->epfd);
	engine_close(dm->e);
	loaded_free(&dm->cur);
	slots_free(&dm->slots);
	dynsets_free(&dm->dyn);
	if (dm->logf && dm->logf != stdout)
		fclose(dm->logf);
}

int daemon_run(const struct daemon_opts *o)
{
	struct daemon dm = { .opts = o, .epfd = -1, .nft_table = -1, .listener.fd = -1, .signals.fd = -1 };
	char status[256];
	struct diags d;
	int r;

	dm.started = time(NULL);
	if (open_log(&dm, o->log) < 0)
		return 1;
	if (slots_init(&dm.slots) < 0) {
		log_err("out of memory");
		return 1;
	}
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
