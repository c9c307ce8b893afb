/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Schedules on the wall clock of a zone. The next change is found among
 * candidates that contain every instant at which the state can change: the
 * UTC instants of each window's start and end on each day of the span (under
 * the offsets in force around them), and the instants at which a zone's
 * offset changes (found by sampling every six hours and bisecting: tzdata
 * has no two changes that close). Between two candidates the state is
 * constant, so the first candidate where it differs is the change.
 */
#include <string.h>
#include "base/sort.h"
#include "policy/schedule/schedule.h"

#include <stdlib.h>

#include "policy/schedule/tz.h"

#define SPAN_DAYS 8
#define STEP	  (6 * 3600)

static bool window_open(const struct policy_window *w, int64_t t)
{
	struct tz_civil c;
	int yday;

	tz_civil_of(t + tz_offset(w->zone, t), &c);
	if ((w->days & (1u << c.wday)) && (uint32_t)c.secs >= w->start && (uint32_t)c.secs < w->end)
		return true;
	yday = (c.wday + 6) % 7; /* a window that began yesterday and crosses midnight */
	return w->end > 86400 && (w->days & (1u << yday)) && (uint32_t)c.secs + 86400 < w->end;
}

bool sched_open(const struct policy_when *w, int64_t t)
{
	if (!w->n)
		return true;
	for (uint32_t i = 0; i < w->n; i++)
		if (w->v[i].zone && window_open(&w->v[i], t))
			return true;
	return false;
}

struct cands {
	int64_t *v;
	uint32_t n, cap;
};

static void cand(struct cands *c, int64_t t, int64_t after, int64_t before)
{
	if (t <= after || t > before)
		return;
	if (c->n == c->cap) {
		int64_t *nv = realloc(c->v, (c->cap = c->cap ? 2 * c->cap : 64) * sizeof(*nv));

		if (!nv) {
			c->cap = c->n;
			return;
		}
		c->v = nv;
	}
	c->v[c->n++] = t;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The offset changes of zone z in (a, b]. */
static void offset_changes(const struct tz *z, int64_t a, int64_t b, struct cands *c)
{
	for (int64_t lo = a; lo < b; lo += STEP) {
		int64_t hi = lo + STEP < b ? lo + STEP : b;
		int32_t o = tz_offset(z, lo);

		if (tz_offset(z, hi) == o)
			continue;
		int64_t l = lo, h = hi; /* offset(l) == o, offset(h) != o */
		while (h - l > 1) {
			int64_t m = l + (h - l) / 2;

			if (tz_offset(z, m) == o)
				l = m;
			else
				h = m;
		}
		cand(c, h, a, b);
	}
}

int64_t sched_next_change(const struct policy_when *w, int64_t t)
{
	int64_t end = t + (int64_t)SPAN_DAYS * 86400, next = SCHED_NEVER;
	struct cands c = { 0 };
	bool now;

	if (!w->n)
		return SCHED_NEVER;
	now = sched_open(w, t);
	for (uint32_t i = 0; i < w->n; i++) {
		const struct policy_window *x = &w->v[i];
		struct tz_civil today;

		if (!x->zone)
			continue;
		tz_civil_of(t + tz_offset(x->zone, t), &today);
		offset_changes(x->zone, t, end, &c);
		for (int64_t d = today.days - 1; d <= today.days + SPAN_DAYS; d++) {
			int64_t edge[2] = { d * 86400 + x->start, d * 86400 + x->end };

			for (int k = 0; k < 2; k++) {
				/* the wall time edge[k] under the offsets around it */
				int64_t u1 = edge[k] - tz_offset(x->zone, edge[k] - 86400);
				int64_t u2 = edge[k] - tz_offset(x->zone, edge[k] + 86400);

				cand(&c, u1, t, end);
				cand(&c, u2, t, end);
				cand(&c, edge[k] - tz_offset(x->zone, u1), t, end);
			}
		}
	}
	sort_n(c.v, c.n, sizeof(*c.v), cmp64);
	for (uint32_t i = 0; i < c.n; i++)
		if (sched_open(w, c.v[i]) != now) {
			next = c.v[i];
			break;
		}
	free(c.v);
	return next;
}

void sched_words(const struct policy *p, int64_t t, uint64_t *words)
{
	memset(words, 0, SCHED_WORDS * sizeof(*words));
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *ru = &p->rules[i];
		uint32_t bit = ru->when.sched - 1;

		if (ru->when.sched && bit < POLICY_MAX_SCHEDULED && sched_open(&ru->when, t))
			words[bit / 64] |= 1ull << (bit % 64);
	}
}

bool sched_any_cut(const struct policy *p)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (p->rules[i].when.cut)
			return true;
	return false;
}
