/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Interfaces as they come and go. The policy names interfaces; the
 * classifier needs ifindexes. When a link appears, goes, is renamed or comes
 * back with a new ifindex (wg0, ppp0, a VLAN created after start), the
 * generation in force is updated in place at once, without a reload, and
 * the change is logged.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/backends.h"
#include "daemon/daemon_int.h"
#include "daemon/links.h"
#include "base/log.h"
#include "netlink/monitor.h"

#define MAX_LISTED 64

/* The links' state (the daemon's dm->links). */
struct links {
	struct handler h;
	struct nl_monitor *monitor;
	char *missing; /* as last logged: "wg0, ppp0", "" if none */
};

static bool listed(const char **v, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

uint32_t links_missing(const struct policy *p, const char **out, uint32_t max)
{
	uint32_t n = 0;

	for (int hk = 0; p && hk < POLICY_HOOK_MAX; hk++)
		for (int dir = 0; dir < 2; dir++)
			for (uint32_t r = 0; r < p->nrules; r++) {
				const struct iface_match *m = dir ? &p->rules[r].out : &p->rules[r].in;

				if (!(p->rules[r].hooks & (1u << hk)) || m->any)
					continue;
				for (uint32_t i = 0; i < m->n && n < max; i++) {
					const char *name = m->ifnames[i];

					if (!policy_ifname_wild(name) && !listed(out, n, name) && !if_nametoindex(name))
						out[n++] = name;
				}
			}
	return n;
}

static char *missing_text(const struct policy *p)
{
	const char *names[MAX_LISTED];
	uint32_t n = links_missing(p, names, MAX_LISTED);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", names[i]);
	fclose(f);
	return out;
}

/* Log when the set of missing interfaces changed since the last time. */
static void note_missing(struct daemon *dm)
{
	char *now = missing_text(dm->cur.pol);

	if (!now)
		return;
	if (dm->links->missing && !strcmp(now, dm->links->missing)) {
		free(now);
		return;
	}
	if (dm->links->missing) /* not the first time: a change */
		log_info("interfaces: %s%s",
			 now[0] ? "missing now (rules naming them match nothing): "
				: "every interface the policy names is present",
			 now);
	free(dm->links->missing);
	dm->links->missing = now;
}

static void on_links(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	(void)h;
	(void)events;
	if (!nl_monitor_links_changed(dm->links->monitor) || !dm->cur.pol)
		return;
	backend_in_force(dm)->ops->links_changed(backend_in_force(dm), &dm->cur);
	note_missing(dm);
}

void links_after_reload(struct daemon *dm)
{
	free(dm->links->missing);
	dm->links->missing = NULL;
	note_missing(dm);
}

int links_open(struct daemon *dm, struct diags *d)
{
	int r;

	if (!(dm->links = calloc(1, sizeof(*dm->links))))
		return diag_errno(d, -ENOMEM, "links");
	if ((r = nl_monitor_open(&dm->links->monitor)) < 0)
		return diag_errno(d, r, "cannot follow interfaces over rtnetlink");
	dm->links->h = (struct handler){ .fd = nl_monitor_fd(dm->links->monitor), .fn = on_links, .ctx = dm };
	/* Open before the first load: a link that changes after the load
	 * resolved its names is in the monitor's queue. */
	if ((r = loop_watch(&dm->loop, &dm->links->h)) < 0)
		return diag_errno(d, r, "epoll");
	return 0;
}

void links_close(struct daemon *dm)
{
	if (!dm->links)
		return;
	nl_monitor_close(dm->links->monitor);
	free(dm->links->missing);
	free(dm->links);
	dm->links = NULL;
}
