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

#include "daemon/backend.h"
#include "daemon/daemon_int.h"
#include "daemon/reload.h"
#include "daemon/fingerprint.h"
#include "daemon/state.h"
#include "daemon/dynsets.h"
#include "daemon/lasthit.h"
#include "daemon/links.h"
#include "daemon/captures.h"
#include "daemon/ha.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/counters.h"
#include "backend/nftables/nft/emit.h"
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

static bool carried(const char *name, uint64_t *packets, uint64_t *bytes, void *arg)
{
	const struct nfr_counter *c = nft_counters_find(arg, name);

	if (!c)
		return false;
	*packets = c->packets;
	*bytes = c->bytes;
	return true;
}

int daemon_nft_apply(struct daemon *dm, const struct policy *p, bool filter, struct diags *d)
{
	struct nft_counters old = { 0 };
	struct nft_build_opts o = { .filter = filter, .counter_value = carried, .arg = &old, .dyn = &dm->dyn };
	struct nfr_table t;
	int r;

	if (o.filter && nft_counters_read(&old) < 0)
		log_warn("cannot read the counters of table inet %s: they start again from 0", NFT_TABLE_NAME);
	nfr_init(&t);
	if ((r = nft_build(p, &o, &t, d)) == 0)
		r = t.nchains ? nft_table_apply(&t, d) : nft_table_remove(d); /* none: nothing to do in nftables */
	if (r == 0)
		dm->nft_table = t.nchains ? 1 : 0;
	if (r == 0 && o.filter)
		lasthit_start(dm, &t);
	nfr_free(&t);
	nft_counters_free(&old);
	return r;
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

/* The backend of the new policy enforces it (backend.h). */
static int enforce(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	return backend_of(nl->pol)->enforce(dm, nl, d);
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
				      .iface_exists = netns_has_iface };

	return daemon_reload_files(dm, path, fd, &files, d);
}

/* The rest of a reload, in the loop: r is what reload_prepare returned. */
static int reload_finish(struct daemon *dm, struct loaded *nl, int r, struct diags *d)
{
	if (r == 0 && (r = slots_assign(&dm->slots, dm->e, nl->plan, &nl->slots)) < 0)
		r = diag_errno(d, r, "cannot assign counters");
	if (r == 0)
		r = dyn_prepare(dm, nl->pol, &nl->slots, d);
	if (r == 0) {
		const char *source = nl->path ? nl->path : "the policy";

		dm->policy_fault = false; /* from here on, a failure is the system's */
		if ((r = ha_prepare(dm, nl->pol, source, d)) == 0 && (r = enforce(dm, nl, d)) == 0) {
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
			slots_abort(&dm->slots, &dm->cur.slots, dm->cur.plan);
		loaded_free(nl);
		dm->reloads_failed++;
		dyn_after_reload(dm, r);
		return r;
	}
	slots_commit(&dm->slots, &nl->slots, nl->plan);
	state_save_slots(dm);
	loaded_free(&dm->cur);
	dm->cur = *nl;
	memset(nl, 0, sizeof(*nl));
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	if (fingerprint_loaded(dm->cur.pol->sources.head, dm->fingerprint) < 0)
		dm->fingerprint[0] = '\0';
	links_after_reload(dm);
	backend_of(dm->cur.pol)->in_force(dm);
	dyn_after_reload(dm, 0);
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

static void reload_thread_done(struct daemon *dm, struct handler *h, uint32_t events)
{
	struct reload_job *j = (struct reload_job *)h;
	int r;

	(void)events;
	daemon_unwatch(dm, &j->h);
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
	struct reload_job *j;
	int r;

	if (dm->reload_job)
		return -EBUSY;
	if (!(j = calloc(1, sizeof(*j))))
		return -ENOMEM;
	j->fd = -1;
	j->h.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	j->h.fn = reload_thread_done;
	j->path = strdup(path);
	j->files.check = dm->opts->allow_unsafe_files ? NULL : check_file;
	j->done = done;
	j->arg = arg;
	diags_init(&j->d);
	if (fd >= 0 && (j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		r = -errno;
		goto fail;
	}
	if (j->h.fd < 0 || !j->path) {
		r = j->path ? -errno : -ENOMEM;
		goto fail;
	}
	if ((r = daemon_watch(dm, &j->h)) < 0)
		goto fail;
	if ((r = -pthread_create(&j->th, NULL, reload_thread, j)) < 0) {
		daemon_unwatch(dm, &j->h);
		goto fail;
	}
	sd_notify_reloading();
	dm->reload_job = j;
	return 0;
fail:
	job_free(j);
	return r;
}

void daemon_reload_wait(struct daemon *dm)
{
	struct reload_job *j = dm->reload_job;

	if (!j)
		return;
	/* a stop while the thread reads: it finishes, nothing is enforced */
	daemon_unwatch(dm, &j->h);
	pthread_join(j->th, NULL);
	dm->reload_job = NULL;
	diag_fail(&j->d, -ECANCELED, "nfbox stopped before the policy was loaded");
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
	backend_of(dm->cur.pol)->status_line(dm, buf, len);
}

void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f)
{
	if (r < 0) {
		fprintf(f, "%s: not loaded; the policy in force is unchanged%s\n", path, dm->cur.pol ? "" : " (none)");
		return;
	}
	backend_of(dm->cur.pol)->summary(dm, path, f);
}
