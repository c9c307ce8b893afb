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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "daemon/reload.h"
#include "daemon/confirm.h"
#include "daemon/state.h"
#include "daemon/dynsets.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"
#include "system/sdnotify.h"

/* The change waiting for its confirmation, and what was pending before a
 * reload --confirm began (back if it fails): the daemon's dm->confirm. */
struct confirm {
	struct confirm_pending before;
};

#define SNAP_MAGIC     "nfbox-snapshot 1\n"
#define SNAP_MAX_BYTES (1ull << 31)

static int write_atomic(const struct daemon *dm, const char *name, const char *data, size_t len)
{
	return state_write(dm, name, data, len, true);
}

int confirm_init(struct daemon *dm, struct diags *d)
{
	char path[PATH_MAX], why[PATH_MAX + 256];
	FILE *f;
	int r;

	if (!(dm->confirm = calloc(1, sizeof(*dm->confirm))))
		return diag_errno(d, -ENOMEM, "confirm");
	if (!dm->state_dir[0])
		return 0;
	/* Made here as the socket's directory is: a daemon run from a build
	 * tree works as the package's does. Without it nothing acknowledged
	 * (a confirmed policy, a dynamic set's entry) could be kept, so the
	 * start fails instead. */
	if ((r = files_private_dir(dm->state_dir, why, sizeof(why))) < 0)
		return diag_fail(d, r == -EPERM ? -EPERM : -EINVAL,
				 "the state directory: %s (it keeps the confirmed policy, the dynamic sets and the "
				 "counters' names; --state-dir DIR chooses another)",
				 why);
	if (r > 0)
		log_warn("the state directory: %s", why);
	if (state_path(dm, "pending", path, sizeof(path)) < 0 || !(f = fopen(path, "re")))
		return 0;
	dm->pending.active = fscanf(f, "deadline %lld since %lld", &dm->pending.deadline, &dm->pending.since) == 2;
	fclose(f);
	if (!dm->pending.active)
		log_warn("%s cannot be read; it is ignored", path);
	return 0;
}

int confirm_save(struct daemon *dm)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!dm->state_dir[0] || !dm->cur.pol)
		return 0;
	if (!(f = open_memstream(&buf, &len)))
		return -ENOMEM;
	fprintf(f, SNAP_MAGIC "policy %zu\n%s\n", strlen(dm->cur.path), dm->cur.path);
	for (const struct source *s = dm->cur.pol->sources.head; s; s = s->next) {
		fprintf(f, "file %zu %zu\n%s\n", strlen(s->name), s->len, s->name);
		fwrite(s->text, 1, s->len, f);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	if ((r = write_atomic(dm, "confirmed.snap", buf, len)) < 0)
		log_warn("cannot save the confirmed policy in %s (a change with --confirm would have nothing to roll "
			 "back to): %s",
			 dm->state_dir, strerror(-r));
	return r;
}

static int write_pending(struct daemon *dm)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "deadline %lld since %lld\n", dm->pending.deadline, dm->pending.since);

	return write_atomic(dm, "pending", line, (size_t)n);
}

static void remove_pending(struct daemon *dm)
{
	char path[PATH_MAX];

	dm->pending.active = false;
	if (state_path(dm, "pending", path, sizeof(path)) == 0 && unlink(path) < 0 && errno != ENOENT)
		log_err("cannot remove %s: %s", path, strerror(errno));
	dyn_settle(dm); /* dynamic sets the policy now in force dropped: their entries go */
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

static int snapshot_read(const struct daemon *dm, struct snapshot *s)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r = 0;

	memset(s, 0, sizeof(*s));
	if ((r = state_path(dm, "confirmed.snap", path, sizeof(path))) < 0)
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
static int load_confirmed(struct daemon *dm, struct diags *d)
{
	struct snapshot s;
	struct policy_files files = { .open = snap_open };
	int r, fd = -1;

	if ((r = snapshot_read(dm, &s)) < 0)
		return diag_errno(d, r, "cannot read the last confirmed policy in %s", dm->state_dir);
	files.arg = &s;
	for (size_t i = 0; i < s.n && fd < 0; i++)
		if (!strcmp(s.v[i].name, s.policy))
			fd = text_fd(s.v[i].text, s.v[i].len);
	if (fd < 0)
		r = diag_errno(d, fd == -1 ? -EINVAL : fd, "the saved policy in %s is incomplete", dm->state_dir);
	else
		r = daemon_reload_files(dm, s.policy, fd, &files, d);
	if (fd >= 0)
		close(fd);
	snapshot_free(&s);
	return r;
}

/* ---- the requests ---- */

int confirm_begin(struct daemon *dm, unsigned seconds, struct diags *d)
{
	char path[PATH_MAX];
	time_t now = time(NULL);
	int r;

	if (!dm->state_dir[0])
		return diag_fail(d, -EINVAL,
				 "--confirm needs a state directory to keep the policy it rolls back to (nfbox run "
				 "--state-dir)");
	if (state_path(dm, "confirmed.snap", path, sizeof(path)) < 0 || access(path, R_OK) < 0)
		return diag_fail(d, -ENOENT,
				 "no confirmed policy is saved in %s to roll back to; reload without --confirm first",
				 dm->state_dir);
	dm->confirm->before = dm->pending;
	if (!dm->pending.active)
		dm->pending.since = now;
	dm->pending.active = true;
	dm->pending.deadline = now + (time_t)seconds;
	if ((r = write_pending(dm)) < 0) {
		dm->pending = dm->confirm->before;
		return diag_errno(d, r, "cannot write %s/pending", dm->state_dir);
	}
	return 0;
}

void confirm_begin_failed(struct daemon *dm)
{
	dm->pending = dm->confirm->before;
	if (dm->pending.active)
		write_pending(dm);
	else
		remove_pending(dm);
}

int confirm_done(struct daemon *dm, struct diags *d)
{
	int r;

	if (!dm->pending.active)
		return diag_fail(d, -ENOENT, "no change is waiting for a confirmation");
	if ((r = confirm_save(dm)) < 0)
		return diag_errno(d, r, "cannot save the policy as confirmed; it stays pending");
	remove_pending(dm);
	log_info("confirmed: %s stays in force", dm->cur.path);
	return 0;
}

void confirm_loaded(struct daemon *dm)
{
	if (dm->pending.active) {
		log_info("a reload without --confirm while a change was pending: the new policy is confirmed");
		remove_pending(dm);
	}
	confirm_save(dm);
}

int confirm_rollback(struct daemon *dm, const char *why, bool running)
{
	struct diags d;
	int r;

	diags_init(&d);
	if (running)
		sd_notify_reloading();
	r = load_confirmed(dm, &d);
	if (r < 0) {
		_cleanup_free_ char *text = diags_to_text(&d);

		log_err("%s, but the last confirmed policy could not be loaded back; the unconfirmed one stays in "
			"force: %s",
			why, text ? text : "");
	} else {
		log_warn("%s: rolled back to the last confirmed policy (%s)", why, dm->cur.path);
	}
	remove_pending(dm);
	if (running)
		daemon_notify_ready(dm, r);
	diags_free(&d);
	return r;
}

void confirm_tick(struct daemon *dm)
{
	if (dm->reload_job)
		return; /* once the reload running is done (it may be a confirm's own) */
	if (dm->pending.active && time(NULL) >= dm->pending.deadline)
		confirm_rollback(dm, "no 'nfbox confirm' before the deadline", true);
}

void confirm_free(struct daemon *dm)
{
	free(dm->confirm);
	dm->confirm = NULL;
}
