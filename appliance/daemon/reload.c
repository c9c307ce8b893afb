/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A reload: load and validate, compiled by the policy's backend (its
 * compile: the BPF one compiles and encodes), the dynamic sets ready, the
 * backends prepared (the BPF one's counter slots), then the policy put in
 * force. Any failure before that leaves the policy in
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
#include "daemon/links.h"
#include "daemon/livetrace.h"
#include "daemon/reload.h"
#include "lib/fingerprint.h"
#include "lib/plant.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"
#include "system/sdnotify.h"

void loaded_free(struct loaded *l)
{
	const struct backend_ops *be = l->pol ? backend_table[backend_index(l->pol)] : NULL;

	if (be && be->own_free && l->own)
		be->own_free(l->own);
	policy_free(l->pol);
	free(l->path);
	memset(l, 0, sizeof(*l));
}

static int check_file(int fd, const char *path, char *why, size_t len, void *arg)
{
	(void)arg;
	return files_check_trusted(fd, path, why, len);
}

/* How the daemon reads a policy's files: trusted ones only, unless
 * --allow-unsafe-files. */
static struct policy_files daemon_files(const struct daemon *dm)
{
	return (struct policy_files){ .check = dm->opts->allow_unsafe_files ? NULL : check_file,
				      .iface_exists = netns_has_iface,
				      .forwarding = netns_forwarding /* said in the reload's answer and log */ };
}

/* run --strict: the policy's warnings (those of its load and compile, as
 * validate gives them) refuse it. Not a rollback's: going back to the
 * policy last confirmed must not be refused (a country database gone since
 * would keep the unconfirmed change in force). */
static bool reload_strict(const struct daemon *dm, const struct reload_req *req)
{
	return dm->opts->strict && (req->why != RELOAD_ROLLBACK || planted("run-strict-rollback")) &&
	       !planted("run-strict-ignored");
}

/* Read, check, compile and encode, and the files' fingerprint (fp):
 * nothing of the daemon is touched, so any thread may run it (a policy of
 * a million prefixes takes its time, which the loop does not wait for).
 * strict: warnings are errors. */
static int reload_prepare(const char *path, int fd, const struct policy_files *via, bool strict, struct loaded *nl,
			  char fp[65], struct diags *d)
{
	struct policy_files files = *via;
	struct diags_mark m = diags_mark(d);
	size_t n;
	int r;

	files.policy_fd = fd;
	nl->path = fd >= 0 ? strdup(path) : realpath(path, NULL);
	r = policy_load_files(path, &files, d, &nl->pol);
	if (r == 0)
		r = backend_table[backend_index(nl->pol)]->compile(nl->pol, &nl->own, d);
	if (r == 0 && strict && (n = diags_strict(d, m)) > 0)
		r = diag_fail(d, -EINVAL,
			      "%s: refused: nfbox runs with --strict, and the policy has %zu warning%s (errors above)",
			      path, n, n == 1 ? "" : "s");
	if (r == 0 && fingerprint_loaded(nl->pol->sources.head, fp) < 0)
		fp[0] = '\0';
	return r;
}

int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out)
{
	struct policy_files files = daemon_files(dm);

	files.policy_fd = fd;
	files.iface_exists = NULL; /* (diff: the warnings are validate's) */
	files.forwarding = NULL;
	return policy_load_files(path, &files, d, out);
}

/* ---- the policy replaced, freed in a thread ---- */

/* A policy of a million prefixes takes milliseconds to free: the loop
 * hands it to a thread of its own (one at a time; the next waits for the
 * last, and so does the daemon's end). */
struct reaper {
	pthread_t th;
	struct loaded l;
};

static void *reap(void *arg)
{
	struct reaper *rp = arg;

	loaded_free(&rp->l);
	return NULL;
}

void daemon_reap_wait(struct daemon *dm)
{
	if (!dm->reaper)
		return;
	pthread_join(dm->reaper->th, NULL);
	free(dm->reaper);
	dm->reaper = NULL;
}

static void loaded_free_later(struct daemon *dm, struct loaded *l)
{
	struct reaper *rp;

	daemon_reap_wait(dm);
	if (!l->pol || !(rp = calloc(1, sizeof(*rp)))) {
		loaded_free(l);
		return;
	}
	rp->l = *l;
	memset(l, 0, sizeof(*l));
	if (pthread_create(&rp->th, NULL, reap, rp) != 0) {
		loaded_free(&rp->l);
		free(rp);
		return;
	}
	dm->reaper = rp;
}

/* The rest of a reload, in the loop: r is what reload_prepare returned.
 * The parts check the new policy and the backends prepare it (either
 * failing, the file is at fault); the parts get ready for it; the backends
 * enforce it; the parts commit (or abort); then it is the policy in force,
 * and every part settles. */
static int reload_finish(struct daemon *dm, const struct reload_req *req, struct loaded *nl, const char *fp, int r,
			 struct diags *d)
{
	struct change c = { .nl = nl, .req = req, .source = nl->path ? nl->path : "the policy" };
	bool prepared = false;

	if (r == 0) /* before the backends: the dynamic sets' ids they key entries by */
		r = parts_check(dm, &c, d);
	if (r == 0) {
		prepared = true;
		r = backends_prepare(dm, nl, d);
	}
	if (r == 0) {
		dm->policy_fault = false;    /* from here on, a failure is the system's */
		livetrace_end(dm, "reload"); /* its filter is no longer in the table or classifier it was put in */
		if ((r = parts_prepare(dm, &c, d)) == 0 && (r = backends_enforce(dm, nl, d)) == 0)
			parts_commit(dm, &c, d); /* while the old policy is alive */
		else
			parts_abort(dm, &c);
	} else {
		dm->policy_fault = true; /* the file: unreadable, invalid, beyond a limit */
	}
	if (r < 0) {
		if (prepared)
			backends_abort(dm);
		dm->reloads_failed++;
		parts_settle(dm, &c, r);
		loaded_free(nl);
		return r;
	}
	backends_commit(dm, nl);
	loaded_free_later(dm, &dm->cur);
	dm->cur = *nl;
	memset(nl, 0, sizeof(*nl));
	c.nl = &dm->cur;
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	snprintf(dm->fingerprint, sizeof(dm->fingerprint), "%s", fp);
	links_after_reload(dm);
	backend_in_force(dm)->ops->in_force_now(backend_in_force(dm), &dm->cur);
	parts_settle(dm, &c, 0);
	return 0;
}

int daemon_reload_now(struct daemon *dm, const struct reload_req *req, struct diags *d)
{
	struct policy_files files = req->files ? *req->files : daemon_files(dm);
	struct loaded nl = { 0 };
	char fp[65] = "";
	int r = reload_prepare(req->path, req->fd, &files, reload_strict(dm, req), &nl, fp, d);

	return reload_finish(dm, req, &nl, fp, r, d);
}

/* ---- a reload in a thread ---- */

struct reload_job {
	struct handler h; /* an eventfd: the thread is done */
	pthread_t th;
	struct reload_req req; /* its path and fd the job's own */
	struct policy_files files;
	bool strict; /* run --strict */
	struct loaded nl;
	char fp[65]; /* the files' fingerprint */
	struct diags d;
	int r;
	reload_done_fn done;
	void *arg;
};

static void *reload_thread(void *arg)
{
	struct reload_job *j = arg;
	uint64_t one = 1;

	j->r = reload_prepare(j->req.path, j->req.fd, &j->files, j->strict, &j->nl, j->fp, &j->d);
	if (write(j->h.fd, &one, sizeof(one)) < 0) {
		/* cannot happen (an eventfd takes 2^64 - 2); the loop would wait */
	}
	return NULL;
}

static void job_free(struct reload_job *j)
{
	if (j->h.fd >= 0)
		close(j->h.fd);
	if (j->req.fd >= 0)
		close(j->req.fd);
	loaded_free(&j->nl);
	diags_free(&j->d);
	free((char *)j->req.path);
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
	r = reload_finish(dm, &j->req, &j->nl, j->fp, j->r, &j->d);
	daemon_notify_ready(dm, r);
	j->done(dm, j->arg, r, &j->d);
	job_free(j);
}

int daemon_reload_start(struct daemon *dm, const struct reload_req *req, reload_done_fn done, void *arg)
{
	_cleanup_(job_freep) struct reload_job *j = NULL;
	int r;

	if (dm->reload_job)
		return -EBUSY;
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	j->req = *req;
	j->req.fd = -1;
	j->req.files = NULL;
	j->h.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	j->h.fn = reload_thread_done;
	j->h.ctx = dm;
	j->req.path = strdup(req->path);
	j->files = req->files ? *req->files : daemon_files(dm);
	j->strict = reload_strict(dm, req);
	j->done = done;
	j->arg = arg;
	diags_init(&j->d);
	if (req->fd >= 0 && (j->req.fd = fcntl(req->fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	if (j->h.fd < 0 || !j->req.path)
		return j->req.path ? -errno : -ENOMEM;
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

bool daemon_reloading(const struct daemon *dm)
{
	return dm->reload_job != NULL;
}

void daemon_notify_reloading(struct daemon *dm)
{
	(void)dm;
	sd_notify_reloading();
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
