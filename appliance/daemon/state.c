/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's state directory (--state-dir): files written whole (a
 * crash leaves the old or the new one), and the counter slots' names kept
 * there. Below every part that keeps state (confirm, dynamic sets,
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

/* The counter slots' names (engine/slots.h), after every load: a daemon
 * that adopts the pinned state gives each rule its counters back. */
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

static void save_slots(const void *obj, FILE *f)
{
	slots_save(obj, f);
}

void state_save_slots(struct daemon *dm)
{
	int r = state_save(dm, "slots", save_slots, &dm->slots, true);

	if (r < 0)
		log_warn("cannot save the counters' names in %s (a restart would start them from 0): %s", dm->state_dir,
			 strerror(-r));
}

void state_load_slots(struct daemon *dm)
{
	char path[PATH_MAX];
	unsigned n = 0;
	FILE *f;

	if (!dm->state_dir[0] || state_path(dm, "slots", path, sizeof(path)) < 0 || !(f = fopen(path, "re")))
		return;
	if (slots_load(&dm->slots, f) < 0)
		log_warn("%s is not readable as counter names; the counters of the adopted policy start from 0", path);
	fclose(f);
	for (uint32_t s = 0; s < NFB_MAX_COUNTERS; s++)
		n += dm->slots.name[s] != NULL;
	if (n)
		log_info("the counters of %u rules go on from the adopted state", n);
}
