/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's state directory (--state-dir): files written whole (a
 * crash leaves the old or the new one), for every part that keeps state. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "daemon/state.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"

int state_dir_make(const struct daemon *dm, struct diags *d)
{
	char why[PATH_MAX + 256];
	int r;

	if (!dm->state_dir[0])
		return 0;
	/* Made here as the socket's directory is: a daemon run from a build
	 * tree works as the package's does. */
	if ((r = files_private_dir(dm->state_dir, why, sizeof(why))) < 0)
		return diag_fail(d, r == -EPERM ? -EPERM : -EINVAL,
				 "the state directory: %s (it keeps the confirmed policy, the dynamic sets and the "
				 "counters' names; --state-dir DIR chooses another)",
				 why);
	if (r > 0)
		log_warn("the state directory: %s", why);
	return 0;
}

const char *daemon_state_dir(const struct daemon *dm)
{
	return dm->state_dir;
}

int state_path(const struct daemon *dm, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", dm->state_dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int state_write(const struct daemon *dm, const char *name, const char *data, size_t len, bool sync)
{
	char path[PATH_MAX];
	int r;

	if ((r = state_path(dm, name, path, sizeof(path))) < 0)
		return r;
	return files_write_atomic(path, data, len, 0600, sync ? FILES_SYNC : 0);
}

/* The data what save() writes of obj. */
int state_save(const struct daemon *dm, const char *name, void (*save)(const void *obj, FILE *f), const void *obj,
	       bool sync)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!dm->state_dir[0])
		return 0;
	if (!(f = open_memstream(&buf, &len)))
		return -ENOMEM;
	save(obj, f);
	if (fclose(f) != 0)
		return -ENOMEM;
	return state_write(dm, name, buf, len, sync);
}

int state_open(const struct daemon *dm, const char *name, FILE **out, char *why, size_t len)
{
	char path[PATH_MAX];
	int fd, r;

	*out = NULL;
	why[0] = '\0';
	if (!dm->state_dir[0] || state_path(dm, name, path, sizeof(path)) < 0)
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(why, len, "%s", strerror(-r));
		return r;
	}
	if ((r = files_check_trusted(fd, path, why, len)) < 0) {
		close(fd);
		return r;
	}
	if (!(*out = fdopen(fd, "re"))) {
		r = -errno;
		snprintf(why, len, "%s", strerror(-r));
		close(fd);
		return r;
	}
	return 0;
}

void state_set_aside(const struct daemon *dm, const char *name, char *kept, size_t len)
{
	char path[PATH_MAX];

	kept[0] = '\0';
	if (state_path(dm, name, path, sizeof(path)) < 0)
		return;
	snprintf(kept, len, "%s.bad-%lld", path, (long long)time(NULL));
	if (rename(path, kept) < 0)
		snprintf(kept, len, "%s (not renamed: %s)", path, strerror(errno));
}
