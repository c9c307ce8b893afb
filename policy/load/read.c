/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: reading a file it needs (the policy, a set's file), checked
 * first as the caller says (policy_files). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/load/lx.h"

/* Read path into a source: the policy file from files->policy_fd when
 * given, anything else opened here; every file checked before it is read. */
int lx_read_file(const struct policy_files *files, const char *path, bool is_policy, struct sources *into,
		 struct source **out, char *why, size_t len)
{
	bool given = is_policy && files && files->policy_fd >= 0, strict = files && files->check;
	/* A daemon reads regular files only: a FIFO there must not hang it
	 * (O_NONBLOCK). The commands read what they are given (/dev/stdin). */
	int fd = given			? files->policy_fd
		 : files && files->open ? files->open(path, files->arg)
					: open(path, O_RDONLY | O_CLOEXEC | (strict ? O_NONBLOCK : 0)),
	    r;
	struct stat st;

	if (fd < 0) {
		r = files && files->open && !given ? fd : -errno;
		snprintf(why, len, "%s", strerror(-r));
		return r;
	}
	if (strict && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s", S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	} else {
		r = files && files->check ? files->check(fd, path, why, len, files->arg) : 0;
	}
	if (r == 0 && (r = sources_load_fd(into, path, fd, out)) < 0)
		snprintf(why, len, "%s", strerror(-r));
	if (!given)
		close(fd);
	return r;
}
