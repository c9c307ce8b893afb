/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Changes that roll back by themselves unless confirmed (`nfbox reload
 * --confirm DURATION`, then `nfbox confirm`).
 *
 * Every confirmed policy (the one loaded at start, a plain reload, a
 * confirmed one) is saved in the state directory as it was read: the
 * policy file and each set file, text and path (STATE/confirmed.snap,
 * written to a temporary file, synced and renamed over the old one). A
 * reload with --confirm first writes STATE/pending (the deadline); `nfbox
 * confirm` saves the new policy and removes it; at the deadline the daemon
 * loads the saved policy back. A daemon that starts and finds STATE/pending
 * (the one before was killed, or the machine rebooted, during the window)
 * loads the saved policy instead of the configured file: a change nobody
 * confirmed never outlives the daemon that made it. Files edited in place
 * do not matter: the saved copy is what comes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "confirm/confirm.h"
#include "daemon/part.h"
#include "daemon/state.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"

/* A change waiting for `nfbox confirm`. */
struct confirm_pending {
	bool active;
	long long deadline, since; /* time(): rolls back at deadline; pending since */
};

/* The change waiting for its confirmation; what was pending before a
 * reload --confirm began (back if it fails). */
struct confirm {
	struct daemon *dm;
	struct confirm_pending pending, before;
	bool began; /* this reload's prepare wrote pending */
	pthread_t saver;
	const struct loaded *saving_of; /* the policy a save in its thread writes; NULL: none runs */
	int save_r;
};

#define SNAP_MAGIC     "nfbox-snapshot 1\n"
#define SNAP_MAX_BYTES (1ull << 31)

static int write_atomic(const struct confirm *cf, const char *name, const char *data, size_t len)
{
	return state_write(cf->dm, name, data, len, true);
}

static int confirm_open(struct daemon *dm, void **self, struct diags *d)
{
	struct confirm *cf = calloc(1, sizeof(*cf));
	char path[PATH_MAX];
	FILE *f;

	if (!cf)
		return diag_errno(d, -ENOMEM, "confirm");
	cf->dm = dm;
	*self = cf;
	if (!daemon_state_dir(dm)[0] || state_path(dm, "pending", path, sizeof(path)) < 0 || !(f = fopen(path, "re")))
		return 0;
	cf->pending.active = fscanf(f, "deadline %lld since %lld", &cf->pending.deadline, &cf->pending.since) == 2;
	fclose(f);
	if (!cf->pending.active)
		log_warn("%s cannot be read; it is ignored", path);
	return 0;
}

/* The policy in force as the snapshot's text, written whole (synced). */
static int save_now(struct confirm *cf, const struct loaded *cur)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!(f = open_memstream(&buf, &len)))
		return -ENOMEM;
	fprintf(f, SNAP_MAGIC "policy %zu\n%s\n", strlen(cur->path), cur->path);
	for (const struct source *s = cur->pol->sources.head; s; s = s->next) {
		fprintf(f, "file %zu %zu\n%s\n", strlen(s->name), s->len, s->name);
		fwrite(s->text, 1, s->len, f);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	return write_atomic(cf, "confirmed.snap", buf, len);
}

static void save_said(const struct confirm *cf, int r)
{
	if (r < 0)
		log_warn("cannot save the confirmed policy in %s (a change with --confirm would have nothing to roll "
			 "back to): %s",
			 daemon_state_dir(cf->dm), strerror(-r));
}

static void *save_thread(void *arg)
{
	struct confirm *cf = arg;

	cf->save_r = save_now(cf, cf->saving_of);
	return NULL;
}

/* A save in its thread is over (before anything reads the snapshot, and
 * before the policy it reads can be replaced: every reload waits here). */
static void save_wait(struct confirm *cf)
{
	if (!cf->saving_of)
		return;
	pthread_join(cf->saver, NULL);
	cf->saving_of = NULL;
	save_said(cf, cf->save_r);
}

/* The policy in force is the confirmed one: its snapshot written, now
 * (wait) or in a thread (a million prefixes take tens of milliseconds to
 * write and sync, which the loop does not wait for; a crash meanwhile
 * leaves the snapshot before, and a start without a pending change reads
 * the configured file anyway). */
static int confirm_save(struct confirm *cf, bool wait)
{
	const struct loaded *cur = daemon_in_force(cf->dm);
	int r;

	save_wait(cf);
	if (!daemon_state_dir(cf->dm)[0] || !cur->pol)
		return 0;
	if (!wait) {
		cf->saving_of = cur; /* before the thread reads it */
		if (pthread_create(&cf->saver, NULL, save_thread, cf) == 0)
			return 0;
		cf->saving_of = NULL;
	}
	save_said(cf, r = save_now(cf, cur));
	return r;
}

static int write_pending(struct confirm *cf)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "deadline %lld since %lld\n", cf->pending.deadline, cf->pending.since);

	return write_atomic(cf, "pending", line, (size_t)n);
}

static void remove_pending(struct confirm *cf)
{
	char path[PATH_MAX];

	cf->pending.active = false;
	if (state_path(cf->dm, "pending", path, sizeof(path)) == 0 && unlink(path) < 0 && errno != ENOENT)
		log_err("cannot remove %s: %s", path, strerror(errno));
	daemon_confirmed(cf->dm); /* e.g. dynamic sets the policy now in force dropped: their entries go */
}

/* ---- the saved policy, read back ---- */

struct snap_file {
	const char *name, *text;
	size_t len;
};

struct snapshot {
	char *buf;
	const char *policy;
	struct snap_file *v;
	size_t n;
};

static void snapshot_free(struct snapshot *s)
{
	free(s->buf);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* "WORD N\n" at *p: N; the text after it (N bytes and a newline) next. */
static int take(char **p, const char *end, const char *word, size_t *n1, size_t *n2)
{
	char *nl = memchr(*p, '\n', (size_t)(end - *p));
	int k;

	if (!nl)
		return -EINVAL;
	*nl = '\0';
	k = n2 ? sscanf(*p, "file %zu %zu", n1, n2) : sscanf(*p, "policy %zu", n1);
	if (strncmp(*p, word, strlen(word)) || k != (n2 ? 2 : 1))
		return -EINVAL;
	*p = nl + 1;
	return 0;
}

/* The snapshot's text (s->buf, size bytes) taken apart in place. */
static int snapshot_parse(struct snapshot *s, size_t size)
{
	char *p = s->buf, *end = s->buf + size;
	size_t n;

	if (size < strlen(SNAP_MAGIC) || memcmp(p, SNAP_MAGIC, strlen(SNAP_MAGIC)))
		return -EINVAL;
	p += strlen(SNAP_MAGIC);
	if (take(&p, end, "policy", &n, NULL) || (size_t)(end - p) < n + 1)
		return -EINVAL;
	s->policy = p;
	p[n] = '\0';
	p += n + 1;
	while (p < end) {
		size_t nn, tn;
		struct snap_file *v;

		if (take(&p, end, "file", &nn, &tn) || (size_t)(end - p) < nn + tn + 2)
			return -EINVAL;
		if (!(v = realloc(s->v, (s->n + 1) * sizeof(*v))))
			return -EINVAL;
		s->v = v;
		v[s->n].name = p;
		p[nn] = '\0';
		p += nn + 1;
		v[s->n].text = p;
		v[s->n++].len = tn;
		p += tn + 1;
	}
	return 0;
}

static int snapshot_read(const struct confirm *cf, struct snapshot *s)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if ((r = state_path(cf->dm, "confirmed.snap", path, sizeof(path))) < 0)
		return r;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SNAP_MAX_BYTES ||
	    !(s->buf = malloc((size_t)st.st_size + 1)))
		r = -EINVAL;
	for (size_t got = 0; !r && got < (size_t)st.st_size;) {
		ssize_t n = read(fd, s->buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			r = n < 0 ? -errno : -EINVAL;
		else
			got += (size_t)n;
	}
	if (r == 0)
		r = snapshot_parse(s, (size_t)st.st_size);
	if (r < 0)
		snapshot_free(s); /* the caller gets nothing of a snapshot it cannot use */
	return r;
}

/* A file's text as an fd (memfd). */
static int text_fd(const char *text, size_t len)
{
	int fd = memfd_create("nfbox-confirmed", MFD_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if ((r = files_write_all(fd, text, len)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return r ? r : -errno;
	}
	return fd;
}

static int snap_open(const char *path, void *arg)
{
	const struct snapshot *s = arg;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].name, path))
			return text_fd(s->v[i].text, s->v[i].len);
	return -ENOENT;
}

/* Load the saved policy: 0, or -errno explained in d. */
static int load_confirmed(struct confirm *cf, struct diags *d)
{
	const char *dir = daemon_state_dir(cf->dm);
	struct snapshot s;
	struct policy_files files = { .open = snap_open };
	int r, fd = -1;

	if ((r = snapshot_read(cf, &s)) < 0)
		return diag_errno(d, r, "cannot read the last confirmed policy in %s", dir);
	files.arg = &s;
	for (size_t i = 0; i < s.n && fd < 0; i++)
		if (!strcmp(s.v[i].name, s.policy))
			fd = text_fd(s.v[i].text, s.v[i].len);
	if (fd < 0)
		r = diag_errno(d, fd == -1 ? -EINVAL : fd, "the saved policy in %s is incomplete", dir);
	else
		r = daemon_reload_now(
			cf->dm,
			&(struct reload_req){ .path = s.policy, .fd = fd, .why = RELOAD_ROLLBACK, .files = &files }, d);
	if (fd >= 0)
		close(fd);
	snapshot_free(&s);
	return r;
}

/* ---- a reload ---- */

/* A reload with a confirmation time: pending from now, before it is
 * enforced (a daemon killed right after still rolls it back). */
/* Any reload: a save of the policy in force is over before it changes. */
static int confirm_check(void *self, const struct change *c, struct diags *d)
{
	(void)c;
	(void)d;
	save_wait(self);
	return 0;
}

static int confirm_prepare(void *self, const struct change *c, struct diags *d)
{
	struct confirm *cf = self;
	const char *dir = daemon_state_dir(cf->dm);
	char path[PATH_MAX];
	time_t now = time(NULL);
	int r;

	cf->began = false;
	if (!c->req->confirm)
		return 0;
	if (!dir[0])
		return diag_fail(d, -EINVAL,
				 "--confirm needs a state directory to keep the policy it rolls back to (nfbox run "
				 "--state-dir)");
	if (state_path(cf->dm, "confirmed.snap", path, sizeof(path)) < 0 || access(path, R_OK) < 0)
		return diag_fail(d, -ENOENT,
				 "no confirmed policy is saved in %s to roll back to; reload without --confirm first",
				 dir);
	cf->before = cf->pending;
	if (!cf->pending.active)
		cf->pending.since = now;
	cf->pending.active = true;
	cf->pending.deadline = now + (time_t)c->req->confirm;
	if ((r = write_pending(cf)) < 0) {
		cf->pending = cf->before;
		return diag_errno(d, r, "cannot write %s/pending", dir);
	}
	cf->began = true;
	return 0;
}

/* That reload failed: what was pending before it is again. */
static void confirm_abort(void *self, const struct change *c)
{
	struct confirm *cf = self;

	(void)c;
	if (!cf->began)
		return;
	cf->began = false;
	cf->pending = cf->before;
	if (cf->pending.active)
		write_pending(cf);
	else
		remove_pending(cf);
}

/* A policy loaded without a confirmation time is the confirmed one (a
 * change that was pending is confirmed with it); a rollback's is already. */
static void confirm_settle(void *self, const struct change *c, int r)
{
	struct confirm *cf = self;

	cf->began = false;
	if (r < 0 || c->req->confirm || c->req->why == RELOAD_ROLLBACK)
		return;
	if (cf->pending.active) {
		log_info("a reload without --confirm while a change was pending: the new policy is confirmed");
		remove_pending(cf);
	}
	confirm_save(cf, false);
}

static int rollback(struct confirm *cf, const char *why, bool running)
{
	struct diags d;
	int r;

	save_wait(cf);
	diags_init(&d);
	if (running)
		daemon_notify_reloading(cf->dm);
	r = load_confirmed(cf, &d);
	if (r < 0) {
		_cleanup_free_ char *text = diags_to_text(&d);

		log_err("%s, but the last confirmed policy could not be loaded back; the unconfirmed one stays in "
			"force: %s",
			why, text ? text : "");
	} else {
		log_warn("%s: rolled back to the last confirmed policy (%s)", why, daemon_in_force(cf->dm)->path);
	}
	remove_pending(cf);
	if (running)
		daemon_notify_ready(cf->dm, r);
	diags_free(&d);
	return r;
}

/* A change was waiting for its confirmation when the daemon before this
 * one stopped: the last confirmed policy comes back, not the configured
 * file (which may hold the unconfirmed change). 1: it is in force. */
static int confirm_start(void *self, struct diags *d)
{
	struct confirm *cf = self;

	(void)d;
	return cf->pending.active &&
	       rollback(cf, "a change was pending confirmation when the last daemon stopped", false) == 0;
}

static void confirm_tick(void *self)
{
	struct confirm *cf = self;

	if (daemon_reloading(cf->dm))
		return; /* once the reload running is done (it may be a confirm's own) */
	if (cf->pending.active && time(NULL) >= cf->pending.deadline)
		rollback(cf, "no 'nfbox confirm' before the deadline", true);
}

/* ---- what the others ask ---- */

bool confirm_pending(const struct daemon *dm)
{
	const struct confirm *cf = daemon_part_state(dm, &part_confirm);

	return cf && cf->pending.active;
}

int confirm_now(struct daemon *dm, struct diags *d)
{
	struct confirm *cf = daemon_part_state(dm, &part_confirm);
	int r;

	if (!cf || !cf->pending.active)
		return diag_fail(d, -ENOENT, "no change is waiting for a confirmation");
	if ((r = confirm_save(cf, true)) < 0)
		return diag_errno(d, r, "cannot save the policy as confirmed; it stays pending");
	remove_pending(cf);
	log_info("confirmed: %s stays in force", daemon_in_force(dm)->path);
	return 0;
}

/* `nfbox rollback`: the change waiting for its confirmation undone now. */
static void answer_rollback(struct confirm *cf, const struct part_caller *who, FILE *f)
{
	char why[96];
	int r;

	if (!cf->pending.active) {
		fputs(CTL_REPLY_ERROR "no change is waiting for a confirmation: nothing to roll back\n", f);
		return;
	}
	snprintf(why, sizeof(why), "nfbox rollback (control socket, uid %u)", (unsigned)who->uid);
	r = rollback(cf, why, true);
	if (r < 0)
		fputs(CTL_REPLY_ERROR "the last confirmed policy could not be loaded back; the unconfirmed one stays "
				      "in force (see the log)\n",
		      f);
	else
		fprintf(f, CTL_REPLY_OK "rolled back: %s (the last confirmed policy) is in force\n",
			daemon_in_force(cf->dm)->path);
}

static bool confirm_answer(void *self, const struct part_caller *who, const struct ctl_request *req, FILE *f)
{
	struct confirm *cf = self;
	struct diags d;
	int r;

	if (req->verb != CTL_CONFIRM && req->verb != CTL_ROLLBACK)
		return false;
	if (req->verb == CTL_ROLLBACK && daemon_reloading(cf->dm)) {
		fputs(CTL_REPLY_ERROR "a reload is in progress; roll back once it is done\n", f);
		return true;
	}
	if (req->verb == CTL_ROLLBACK) {
		answer_rollback(cf, who, f);
		return true;
	}
	if (daemon_reloading(cf->dm)) {
		fputs(CTL_REPLY_ERROR "a reload is in progress; confirm once it is done\n", f);
		return true;
	}
	diags_init(&d);
	r = confirm_now(cf->dm, &d);
	fputs(r < 0 ? CTL_REPLY_ERROR : CTL_REPLY_OK, f);
	diags_print(&d, f, false);
	if (r == 0)
		fprintf(f, "confirmed: %s stays in force\n", daemon_in_force(cf->dm)->path);
	log_msg(r < 0 ? LOG_WARN : LOG_INFO, "confirm (control socket, uid %u): %s", (unsigned)who->uid,
		r < 0 ? "nothing was pending" : "done");
	diags_free(&d);
	return true;
}

/* ---- its report ---- */

static void pending_text(const struct rep *o, FILE *f)
{
	fprintf(f,
		"pending:    this policy rolls back to the last confirmed one in %lld s unless 'nfbox confirm' "
		"(unconfirmed for %lld s)\n",
		(long long)(rep_i(o, "seconds_left") < 0 ? 0 : rep_i(o, "seconds_left")),
		(long long)(time(NULL) - rep_i(o, "since")));
}

static const struct rep_metric m_pending = { "nfbox_pending_confirm", "gauge",
					     "1 while a reload --confirm waits for nfbox confirm.", NULL };
static const struct rep_metric m_deadline = { "nfbox_pending_confirm_deadline_timestamp_seconds", "gauge",
					      "When the pending change rolls back.", NULL };

static void confirm_status(void *self, struct rep *status)
{
	struct confirm *cf = self;
	long long left = cf->pending.deadline - (long long)time(NULL);
	struct rep *o;

	rep_metric(rep_hidden(rep_bool(status, "pending_confirm", cf->pending.active)), &m_pending);
	if (!cf->pending.active) {
		rep_null(status, "pending");
		return;
	}
	o = rep_object(status, "pending");
	rep_text(o, pending_text);
	rep_metric(rep_int(o, "deadline", cf->pending.deadline), &m_deadline);
	rep_int(o, "since", cf->pending.since);
	rep_int(o, "seconds_left", left);
}

static void confirm_stop(void *self, bool keep)
{
	(void)keep;
	save_wait(self);
}

static void confirm_close(void *self)
{
	if (self)
		save_wait(self);
	free(self);
}

const struct part part_confirm = {
	.name = "confirm",
	.open = confirm_open,
	.start = confirm_start,
	.check = confirm_check,
	.prepare = confirm_prepare,
	.abort = confirm_abort,
	.settle = confirm_settle,
	.tick = confirm_tick,
	.answer = confirm_answer,
	.status = confirm_status,
	.stop = confirm_stop,
	.close = confirm_close,
};
