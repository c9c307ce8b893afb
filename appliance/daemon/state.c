/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's state directory (--state-dir): files written whole (a
 * crash leaves the old or the new one). Below every part that keeps state (confirm, dynamic sets,
 * reloads). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/daemon_int.h"
#include "daemon/state.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "system/files.h"

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
