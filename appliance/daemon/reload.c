/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A reload: load and validate, compile, encode, assign counter slots, then
 * put the policy in force. Any failure before that leaves the policy in
 * force untouched.
 *
 * A policy is in force in two places: the BPF classifier (its spare map
 * generation written, then flipped to) and table inet nfbox in nftables
 * (NAT, the conntrack anchor and, with backend: nftables, the filter),
 * replaced whole in one transaction. The order, with the BPF backend:
 *   1. the nftables transaction: the step the kernel may refuse (its
 *      extended ack is reported at the policy element). Refused: nothing
 *      changed, the reload fails.
 *   2. the BPF flip. For the instant between the two, new NAT meets the old
 *      filter, which judges translated traffic in forward: a new
 *      forward-port is dropped by the old filter until the flip (closed,
 *      never open), and a removed one stops translating before its accept
 *      rule goes. Connections already translated keep their mapping in
 *      conntrack whatever the table says. If the flip fails the previous
 *      table is put back, in a second transaction.
 * Switching backend, the new filter is always in place before the old one
 * goes: for an instant both judge (stricter, never looser).
 *
 * A reload asked for while the daemon runs (the control socket, SIGHUP)
 * reads, checks, compiles and encodes the policy in a thread of its own
 * (reload_prepare: it touches nothing of the daemon's), while the loop
 * goes on answering status, stats, metrics and set changes; the rest, from
 * the counter slots on, runs in the loop once the thread is done
 * (reload_finish). One such reload at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/backends.h"
#include "daemon/daemon_int.h"
#include "daemon/usage.h"
#include "daemon/schedules.h"
#include "daemon/feeds.h"
#include "daemon/reload.h"
#include "lib/fingerprint.h"
#include "daemon/state.h"
#include "daemon/dynsets.h"
#include "daemon/links.h"
#include "daemon/captures.h"
#include "daemon/ha.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"
#include "system/sdnotify.h"

void loaded_free(struct loaded *l)
{
	slot_map_free(&l->slots);
	plan_blob_free(&l->blob);
	plan_free(l->plan);
	policy_free(l->pol);
	free(l->path);
	memset(l, 0, sizeof(*l));
}

/* Read, check, compile and encode: nothing of the daemon is touched, so
 * any thread may run it. */
static int reload_prepare(const char *path, int fd, const struct policy_files *via, struct loaded *nl, struct diags *d)
{
	struct policy_files files = *via;
	int r;

	files.policy_fd = fd;
	nl->path = fd >= 0 ? strdup(path) : realpath(path, NULL);
	r = policy_load_files(path, &files, d, &nl->pol);
	if (r == 0)
		r = plan_make(nl->pol, &nl->plan, &nl->blob, d);
	return r;
}

static int check_file(int fd, const char *path, char *why, size_t len, void *arg)
{
	(void)arg;
	return files_check_trusted(fd, path, why, len);
}

int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out)
{
	struct policy_files files = { .policy_fd = fd, .check = dm->opts->allow_unsafe_files ? NULL : check_file };

	return policy_load_files(path, &files, d, out);
}

int daemon_reload(struct daemon *dm, const char *path, int fd, struct diags *d)
{
	struct policy_files files = { .check = dm->opts->allow_unsafe_files ? NULL : check_file,
				      .iface_exists = netns_has_iface,
				      .forwarding = netns_forwarding };

	return daemon_reload_files(dm, path, fd, &files, d);
}

/* The rest of a reload, in the loop: r is what reload_prepare returned. */
static int reload_finish(struct daemon *dm, struct loaded *nl, int r, struct diags *d)
{
	if (r == 0)
		r = backends_prepare(dm, nl, d);
	if (r == 0)
		r = dyn_prepare(dm, nl->pol, &nl->slots, d);
	if (r == 0) {
		const char *source = nl->path ? nl->path : "the policy";

		dm->policy_fault = false; /* from here on, a failure is the system's */
		if ((r = ha_prepare(dm, nl->pol, source, d)) == 0 && (r = backends_enforce(dm, nl, d)) == 0) {
			daemon_captures_apply(dm, nl->pol, d); /* while the old policy is alive */
			ha_commit(dm, nl->pol, source);
		} else {
			ha_abort(dm);
		}
	} else {
		dm->policy_fault = true; /* the file: unreadable, invalid, beyond a limit */
	}
	if (r < 0) {
		if (nl->plan)
			backends_abort(dm);
		loaded_free(nl);
		dm->reloads_failed++;
		dyn_after_reload(dm, r);
		return r;
	}
	backends_commit(dm, nl);
	loaded_free(&dm->cur);
	dm->cur = *nl;
	memset(nl, 0, sizeof(*nl));
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	if (fingerprint_loaded(dm->cur.pol->sources.head, dm->fingerprint) < 0)
		dm->fingerprint[0] = '\0';
	links_after_reload(dm);
	backend_in_force(dm)->ops->in_force_now(backend_in_force(dm), &dm->cur);
	dyn_after_reload(dm, 0);
	sched_after_reload(dm);
	feeds_after_reload(dm);
	usage_soon(dm); /* new rules' records start with the next round */
	return 0;
}

int daemon_reload_files(struct daemon *dm, const char *path, int fd, const struct policy_files *via, struct diags *d)
{
	struct loaded nl = { 0 };

	return reload_finish(dm, &nl, reload_prepare(path, fd, via, &nl, d), d);
}

/* ---- a reload in a thread ---- */

struct reload_job {
	struct handler h; /* an eventfd: the thread is done */
	pthread_t th;
	char *path;
	int fd; /* the policy file a client sent, or -1 */
	struct policy_files files;
	struct loaded nl;
	struct diags d;
	int r;
	reload_done_fn done;
	void *arg;
};

static void *reload_thread(void *arg)
{
	struct reload_job *j = arg;
	uint64_t one = 1;

	j->r = reload_prepare(j->path, j->fd, &j->files, &j->nl, &j->d);
	if (write(j->h.fd, &one, sizeof(one)) < 0) {
		/* cannot happen (an eventfd takes 2^64 - 2); the loop would wait */
	}
	return NULL;
}

static void job_free(struct reload_job *j)
{
	if (j->h.fd >= 0)
		close(j->h.fd);
	if (j->fd >= 0)
		close(j->fd);
	loaded_free(&j->nl);
	diags_free(&j->d);
	free(j->path);
	free(j);
}

static void job_freep(struct reload_job **j)
{
	if (*j)
		job_free(*j);
}

static void reload_thread_done(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct reload_job *j = (struct reload_job *)h;
	int r;

	(void)events;
	loop_unwatch(&dm->loop, &j->h);
	pthread_join(j->th, NULL);
	dm->reload_job = NULL;
	r = reload_finish(dm, &j->nl, j->r, &j->d);
	daemon_notify_ready(dm, r);
	j->done(dm, j->arg, r, &j->d);
	job_free(j);
}

static int check_file(int fd, const char *path, char *why, size_t len, void *arg);

int daemon_reload_start(struct daemon *dm, const char *path, int fd, reload_done_fn done, void *arg)
{
	_cleanup_(job_freep) struct reload_job *j = NULL;
	int r;

	if (dm->reload_job)
		return -EBUSY;
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	j->fd = -1;
	j->h.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	j->h.fn = reload_thread_done;
	j->h.ctx = dm;
	j->path = strdup(path);
	j->files.check = dm->opts->allow_unsafe_files ? NULL : check_file;
	j->files.forwarding = netns_forwarding; /* said in the reload's answer and log */
	j->done = done;
	j->arg = arg;
	diags_init(&j->d);
	if (fd >= 0 && (j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	if (j->h.fd < 0 || !j->path)
		return j->path ? -errno : -ENOMEM;
	if ((r = loop_watch(&dm->loop, &j->h)) < 0)
		return r;
	if ((r = -pthread_create(&j->th, NULL, reload_thread, j)) < 0) {
		loop_unwatch(&dm->loop, &j->h);
		return r;
	}
	sd_notify_reloading();
	dm->reload_job = TAKE_PTR(j);
	return 0;
}

void daemon_reload_wait(struct daemon *dm)
{
	struct reload_job *j = dm->reload_job;

	if (!j)
		return;
	/* a stop while the thread reads: it finishes, nothing is enforced */
	loop_unwatch(&dm->loop, &j->h);
	pthread_join(j->th, NULL);
	dm->reload_job = NULL;
	diag_fail(&j->d, -ECANCELED, "nfbox stopped before the policy was loaded");
	dm->policy_fault = false; /* the file was not judged: not its fault */
	j->done(dm, j->arg, -ECANCELED, &j->d);
	job_free(j);
}

void daemon_notify_ready(struct daemon *dm, int r)
{
	char status[256];

	daemon_status_line(dm, status, sizeof(status));
	sd_notifyf("READY=1\nSTATUS=%s%s", r < 0 ? "reload failed, unchanged: " : "", status);
}

void daemon_status_line(const struct daemon *dm, char *buf, size_t len)
{
	if (!dm->cur.pol) {
		snprintf(buf, len, "no policy loaded");
		return;
	}
	backend_in_force(dm)->ops->status_line(backend_in_force(dm), &dm->cur, buf, len);
}

void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f)
{
	if (r < 0) {
		fprintf(f, "%s: not loaded; the policy in force is unchanged%s\n", path, dm->cur.pol ? "" : " (none)");
		return;
	}
	backend_in_force(dm)->ops->summary(backend_in_force(dm), &dm->cur, path, f);
}
