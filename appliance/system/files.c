/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "system/files.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int judge(const struct stat *st, const char *what, const char *path, char *why, size_t len)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(why, len,
			 "%s %s belongs to uid %u, not root: chown root %s (or run nfbox with --allow-unsafe-files)",
			 what, path, (unsigned)st->st_uid, path);
		return -EPERM;
	}
	/* A directory writable by others is safe with the sticky bit (/tmp):
	 * no one else can replace root's entries in it. */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX))) {
		snprintf(why, len, "%s %s is writable by %s: chmod go-w %s (or run nfbox with --allow-unsafe-files)",
			 what, path, st->st_mode & S_IWOTH ? "everyone" : "its group", path);
		return -EPERM;
	}
	return 0;
}

int files_check_dir(const char *dir, char *why, size_t len)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		snprintf(why, len, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	return judge(&st, "directory", dir, why, len);
}

int files_private_dir(const char *dir, char *why, size_t len)
{
	char buf[PATH_MAX];
	const char *parent;
	struct stat st;
	int r;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf)) {
		snprintf(why, len, "%s: %s", dir, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	parent = dirname(buf);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(why, len, "cannot create %s: %s", parent, strerror(-r));
		return r;
	}
	if ((r = files_check_dir(parent, why, len)) < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(why, len, "cannot create %s: %s", dir, strerror(-r));
		return r;
	}
	if (lstat(dir, &st) < 0) {
		r = -errno;
		snprintf(why, len, "%s: %s", dir, strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s is not a directory%s: remove it, or choose another", dir,
			 S_ISLNK(st.st_mode) ? " but a symbolic link" : "");
		return -ENOTDIR;
	}
	if ((r = judge(&st, "directory", dir, why, len)) < 0)
		return r;
	if (!(st.st_mode & 077))
		return 0;
	if (chmod(dir, 0700) < 0) {
		r = -errno;
		snprintf(why, len, "cannot chmod 0700 %s: %s", dir, strerror(-r));
		return r;
	}
	snprintf(why, len, "%s was mode %04o; it is now 0700", dir, (unsigned)(st.st_mode & 07777));
	return 1;
}

int files_check_trusted(int fd, const char *path, char *why, size_t len)
{
	char buf[PATH_MAX];
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0) {
		snprintf(why, len, "%s", strerror(errno));
		return -errno;
	}
	if ((r = judge(&st, "file", path, why, len)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "%s", path);
	return files_check_dir(dirname(buf), why, len);
}

int files_write_all(int fd, const void *p, size_t n)
{
	for (const char *c = p; n;) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	int fd, r = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

int files_write_atomic(const char *path, const void *data, size_t len, unsigned mode, unsigned flags)
{
	char tmp[PATH_MAX + 8];
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode)) < 0)
		return -errno;
	r = files_write_all(fd, data, len);
	if (!r && (flags & FILES_SYNC) && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		return r;
	}
	/* the rename itself is on disk only once the directory is */
	return flags & FILES_SYNC ? sync_dir_of(path) : 0;
}
