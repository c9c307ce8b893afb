/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which rules are used: each rule's last hit and the time it came into
 * force, by "HOOK:RULE", in STATE/last-hits. The backends know a last hit
 * only while their state lives (the BPF counters while pinned, the
 * nftables backend's reads from the daemon's start); this record carries
 * it over what they forget: a restart with nftables, a reboot, a change of
 * backend. A rule's record goes with the rule (a rule put back later starts
 * anew).
 *
 * The file, one line a rule: "FIRST_MS LAST_MS HOOK:RULE" (wall-clock ms;
 * LAST_MS 0 for never), after a comment line.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sort.h"
#include "daemon/part.h"
#include "daemon/state.h"
#include "base/clock.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/plant.h"

#define USAGE_STATE	"last-hits"
#define USAGE_PERIOD_MS 60000
#define USAGE_MAX_LINE	(2 * 20 + 2 * 64 + 8)

struct use {
	char *key; /* "HOOK:RULE" */
	long long first, last;
};

struct usage {
	struct daemon *dm;
	struct use *v; /* sorted by key */
	uint32_t n;
	bool dirty;	   /* changed since it was saved */
	long long next_ms; /* monotonic ms of the next read */
};

static int use_cmp(const void *a, const void *b)
{
	return strcmp(((const struct use *)a)->key, ((const struct use *)b)->key);
}

static void uses_free(struct use *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

static const struct use *find(const struct usage *u, const char *key)
{
	struct use k = { .key = (char *)key };

	return u ? search_n(&k, u->v, u->n, sizeof(*u->v), use_cmp) : NULL;
}

static void save_usage(const void *obj, FILE *f)
{
	const struct usage *u = obj;

	fputs("# nfbox last hits: FIRST_MS LAST_MS HOOK:RULE\n", f);
	for (uint32_t i = 0; i < u->n; i++)
		fprintf(f, "%lld %lld %s\n", u->v[i].first, u->v[i].last, u->v[i].key);
}

static void usage_save(struct usage *u)
{
	int r;

	if (!u->dirty)
		return;
	if ((r = state_save(u->dm, USAGE_STATE, save_usage, u, false)) < 0) {
		log_warn("cannot save the rules' last hits in %s: %s", daemon_state_dir(u->dm), strerror(-r));
		return;
	}
	u->dirty = false;
}

/* One line into u->v[u->n]: 0, or -EINVAL if it is not one. */
static int parse_line(struct usage *u, char *line)
{
	long long first, last;
	int end = 0;
	char *key;

	line[strcspn(line, "\n")] = '\0';
	if (line[0] == '#' || !line[0])
		return 0;
	if (sscanf(line, "%lld %lld %n", &first, &last, &end) != 2 || !end || first < 0 || last < 0)
		return -EINVAL;
	key = line + end;
	if (!strchr(key, ':') || strpbrk(key, " \t") || find(u, key))
		return -EINVAL;
	if (!(u->v[u->n].key = strdup(key)))
		return -ENOMEM;
	u->v[u->n].first = first;
	u->v[u->n].last = last;
	u->n++;
	/* kept sorted as read (the file is written sorted; a line out of
	 * order is sorted in) */
	if (u->n > 1 && use_cmp(&u->v[u->n - 2], &u->v[u->n - 1]) > 0)
		sort_n(u->v, u->n, sizeof(*u->v), use_cmp);
	return 0;
}

/* The record as saved; a file that cannot be read or parsed is set aside. */
static void load(struct usage *u)
{
	struct daemon *dm = u->dm;
	char path[PATH_MAX], why[512], line[USAGE_MAX_LINE];
	uint32_t cap = 0;
	int r = 0;
	FILE *f;

	if (state_path(dm, USAGE_STATE, path, sizeof(path)) < 0)
		return;
	if (state_open(dm, USAGE_STATE, &f, why, sizeof(why)) < 0) {
		log_warn("%s: %s; the rules' last hits start anew", path, why);
		return;
	}
	if (!f)
		return;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') && !feof(f)) {
			r = -EINVAL;
			break;
		}
		if (u->n == cap) {
			struct use *nv = realloc(u->v, (cap = cap ? 2 * cap : 64) * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			u->v = nv;
		}
		r = parse_line(u, line);
	}
	fclose(f);
	if (r < 0) {
		char kept[PATH_MAX + 64];

		state_set_aside(dm, USAGE_STATE, kept, sizeof(kept));
		log_warn("%s: %s; the rules' last hits start anew (the file is kept as %s)", path,
			 r == -ENOMEM ? "out of memory" : "not a record of last hits", kept);
		uses_free(u->v, u->n);
		u->v = NULL;
		u->n = 0;
	}
}

static int lasthits_open(struct daemon *dm, void **self, struct diags *d)
{
	struct usage *u = calloc(1, sizeof(*u));

	if (!u)
		return diag_errno(d, -ENOMEM, "the rules' last hits");
	u->dm = dm;
	load(u);
	*self = u;
	return 0;
}

static void lasthits_close(void *self)
{
	struct usage *u = self;

	if (!u)
		return;
	usage_save(u);
	uses_free(u->v, u->n);
	free(u);
}

static char *key_of(const struct stats_row *r)
{
	char *k;

	return asprintf(&k, "%s:%s", r->hook, r->rule) < 0 ? NULL : k;
}

/* The rows of the policy in force: each row's last hit becomes the later of
 * the backend's and the record's, and its in_force_ms is filled in; rules
 * not yet recorded start now, and those no longer in force leave the
 * record. */
static void merge(struct usage *u, struct stats_row *rows, uint32_t n)
{
	long long now = clock_ms(CLOCK_REALTIME);
	bool changed;
	struct use *nv;

	if (!(nv = calloc(n ? n : 1, sizeof(*nv))))
		return;
	for (uint32_t i = 0; i < n; i++) {
		const struct use *old;

		if (!(nv[i].key = key_of(&rows[i]))) {
			uses_free(nv, i);
			return;
		}
		old = find(u, nv[i].key);
		nv[i].first = old ? old->first : now;
		nv[i].last = old && old->last > rows[i].last_hit_ms ? old->last : rows[i].last_hit_ms;
		if (planted("usage-forget"))
			nv[i].last = rows[i].last_hit_ms;
		rows[i].last_hit_ms = nv[i].last;
		rows[i].in_force_ms = nv[i].first;
	}
	sort_n(nv, n, sizeof(*nv), use_cmp);
	changed = n != u->n;
	for (uint32_t i = 0; !changed && i < n; i++)
		changed = strcmp(nv[i].key, u->v[i].key) || nv[i].first != u->v[i].first || nv[i].last != u->v[i].last;
	uses_free(u->v, u->n);
	u->v = nv;
	u->n = n;
	u->dirty |= changed;
}

/* stats --zero: every last hit forgotten. */
static void zero_all(struct usage *u)
{
	for (uint32_t i = 0; i < u->n; i++) {
		u->dirty |= u->v[i].last != 0;
		u->v[i].last = 0;
	}
	usage_save(u);
}

static void lasthits_stats(void *self, struct stats_rows *rows, struct rep *stats, bool zero)
{
	struct usage *u = self;

	(void)stats;
	if (rows && daemon_backend(u->dm))
		merge(u, rows->v, rows->n);
	if (zero)
		zero_all(u);
}

/* The backend's last hits read into the record (daemon_rows() merges them)
 * and saved: once a minute, or now. */
static void read_now(struct usage *u, bool now)
{
	long long t = clock_ms(CLOCK_MONOTONIC);
	struct stats_rows rows = { 0 };

	if (!daemon_in_force(u->dm)->pol || (!now && t < u->next_ms))
		return;
	u->next_ms = t + USAGE_PERIOD_MS;
	if (daemon_rows(u->dm, &rows) == 0)
		usage_save(u);
	free(rows.v);
}

static void lasthits_tick(void *self)
{
	read_now(self, false);
}

/* After a reload: read at the next round of the loop (new rules' records
 * start then). */
static void lasthits_settle(void *self, const struct change *c, int r)
{
	struct usage *u = self;

	(void)c;
	if (r == 0)
		u->next_ms = 0;
}

/* At the end: the last hits as the backends last saw them. */
static void lasthits_stop(void *self, bool keep)
{
	(void)keep;
	read_now(self, true);
}

const struct part part_lasthits = {
	.name = "lasthits",
	.open = lasthits_open,
	.settle = lasthits_settle,
	.tick = lasthits_tick,
	.stats = lasthits_stats,
	.stop = lasthits_stop,
	.close = lasthits_close,
};
