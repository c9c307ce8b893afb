/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The table of the daemon's parts (parts.def), and the core's walks of it
 * (daemon_int.h). */
#include <errno.h>
#include <stdlib.h>

#include "daemon/daemon_int.h"

#define PART(name) &part_##name,
const struct part *const daemon_parts[] = {
#include "daemon/parts.def"
};
#undef PART

const unsigned daemon_nparts = sizeof(daemon_parts) / sizeof(daemon_parts[0]);

void *daemon_part_state(const struct daemon *dm, const struct part *p)
{
	for (unsigned i = 0; dm->parts && i < daemon_nparts; i++)
		if (daemon_parts[i] == p)
			return dm->parts[i];
	return NULL;
}

int parts_open(struct daemon *dm, struct diags *d)
{
	int r;

	if (!(dm->parts = calloc(daemon_nparts, sizeof(*dm->parts))))
		return diag_errno(d, -ENOMEM, "the daemon's parts");
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->open && (r = daemon_parts[i]->open(dm, &dm->parts[i], d)) < 0)
			return r;
	return 0;
}

void parts_env(struct daemon *dm, struct backend_env *env)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->env)
			daemon_parts[i]->env(dm->parts[i], env);
}

int parts_start(struct daemon *dm, struct diags *d)
{
	int r, loaded = 0;

	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->start) {
			if ((r = daemon_parts[i]->start(dm->parts[i], d)) < 0)
				return r;
			loaded |= r > 0;
		}
	return loaded;
}

int parts_check(struct daemon *dm, const struct change *c, struct diags *d)
{
	int r;

	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->check && (r = daemon_parts[i]->check(dm->parts[i], c, d)) < 0)
			return r;
	return 0;
}

int parts_prepare(struct daemon *dm, const struct change *c, struct diags *d)
{
	int r;

	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->prepare && (r = daemon_parts[i]->prepare(dm->parts[i], c, d)) < 0)
			return r;
	return 0;
}

void parts_commit(struct daemon *dm, const struct change *c, struct diags *d)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->commit)
			daemon_parts[i]->commit(dm->parts[i], c, d);
}

void parts_abort(struct daemon *dm, const struct change *c)
{
	for (unsigned i = daemon_nparts; i-- > 0;)
		if (daemon_parts[i]->abort)
			daemon_parts[i]->abort(dm->parts[i], c);
}

void parts_settle(struct daemon *dm, const struct change *c, int r)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->settle)
			daemon_parts[i]->settle(dm->parts[i], c, r);
}

void daemon_confirmed(struct daemon *dm)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->confirmed)
			daemon_parts[i]->confirmed(dm->parts[i]);
}

void parts_tick(struct daemon *dm)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->tick)
			daemon_parts[i]->tick(dm->parts[i]);
}

void parts_status(struct daemon *dm, struct rep *status)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->status)
			daemon_parts[i]->status(dm->parts[i], status);
}

void parts_stats(struct daemon *dm, struct stats_rows *rows, struct rep *stats, bool zero)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->stats)
			daemon_parts[i]->stats(dm->parts[i], rows, stats, zero);
}

bool parts_answer(struct daemon *dm, const struct part_caller *who, const struct ctl_request *req, FILE *f)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->answer && daemon_parts[i]->answer(dm->parts[i], who, req, f))
			return true;
	return false;
}

void parts_stop(struct daemon *dm, bool keep)
{
	for (unsigned i = 0; i < daemon_nparts; i++)
		if (daemon_parts[i]->stop)
			daemon_parts[i]->stop(dm->parts[i], keep);
}

void parts_close(struct daemon *dm)
{
	for (unsigned i = daemon_nparts; dm->parts && i-- > 0;)
		if (daemon_parts[i]->close)
			daemon_parts[i]->close(dm->parts[i]);
	free(dm->parts);
	dm->parts = NULL;
}
