/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The daemon's backends (backends.h). */
#include <errno.h>
#include <stdlib.h>

#include "daemon/backends.h"
#include "base/cleanup.h"
#include "base/log.h"

#define NBACKENDS backend_count

struct backend *backend_of(const struct daemon *dm, const struct policy *p)
{
	if (!p || !dm->backends)
		return NULL;
	return dm->backends[backend_index(p)];
}

struct backend *backend_in_force(const struct daemon *dm)
{
	return backend_of(dm, dm->cur.pol);
}

int backends_open(struct daemon *dm, struct diags *d)
{
	const struct backend_ops *const *ops = backend_table;
	int r;

	if (!(dm->backends = calloc(backend_count, sizeof(*dm->backends))))
		return diag_errno(d, -ENOMEM, "backends");
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++) {
		struct diags sd;

		if ((r = ops[i]->open(&dm->benv, &dm->backends[i])) < 0)
			return diag_errno(d, r, "backend %s", ops[i]->name);
		diags_init(&sd);
		/* Without netfilter BPF (a kernel before 6.4) only the nftables
		 * backend can enforce; a BPF policy then fails to load, saying why. */
		if (ops[i]->start(dm->backends[i], &sd) < 0) {
			_cleanup_free_ char *why = diags_to_text(&sd);

			log_warn("the %s backend is not available, its policies cannot be enforced: %s", ops[i]->name,
				 why ? why : "");
		}
		diags_free(&sd);
	}
	return 0;
}

void backends_close(struct daemon *dm)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		if (dm->backends[i])
			dm->backends[i]->ops->close(dm->backends[i]);
	free(dm->backends);
	dm->backends = NULL;
}

int backends_prepare(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	int r;

	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		if ((r = dm->backends[i]->ops->prepare(dm->backends[i], nl, d)) < 0)
			return r;
	return 0;
}

int backends_enforce(struct daemon *dm, const struct loaded *nl, struct diags *d)
{
	struct backend *b = backend_of(dm, nl->pol), *was = backend_in_force(dm);

	return b->ops->enforce(b, dm->cur.pol ? &dm->cur : NULL, nl, was && was != b, d);
}

void backends_commit(struct daemon *dm, const struct loaded *nl)
{
	struct backend *in = backend_of(dm, nl->pol);

	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++) {
		struct backend *b = dm->backends[i];

		b->ops->commit(b, nl);
		b->in_force = b == in;
		if (b != in)
			b->ops->retire(b);
	}
}

void backends_abort(struct daemon *dm)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		dm->backends[i]->ops->abort(dm->backends[i], &dm->cur);
}

void backends_tick(struct daemon *dm)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		dm->backends[i]->ops->tick(dm->backends[i]);
}

void backends_status(struct daemon *dm, struct rep *status)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		dm->backends[i]->ops->status(dm->backends[i], status);
}

bool backends_adopted(const struct daemon *dm)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		if (dm->backends[i] && dm->backends[i]->ops->adopted(dm->backends[i]))
			return true;
	return false;
}

void backends_stop(struct daemon *dm, bool keep)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		dm->backends[i]->ops->stop(dm->backends[i], keep);
}

void backends_discard(struct daemon *dm)
{
	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		if (dm->backends[i])
			dm->backends[i]->ops->discard(dm->backends[i]);
}

int daemon_dyn_read_back(struct daemon *dm, char **text, size_t *len, uint64_t *n, const char **from, struct diags *d)
{
	int r;

	for (unsigned i = 0; dm->backends && i < NBACKENDS; i++)
		if ((r = dm->backends[i]->ops->dyn_read_back(dm->backends[i], text, len, n, d)) != 0) {
			*from = dm->backends[i]->ops->holder;
			return r;
		}
	return 0;
}
