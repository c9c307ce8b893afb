/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A rule's schedule, `when:`: one window or a list of them,
 *     when: { days: [mon-fri], hours: "08:00-18:00", tz: Europe/Berlin }
 * days: names (mon, monday, ...) and ranges (mon-fri, fri-mon), default
 * every day; hours: "HH:MM[:SS]-HH:MM[:SS]", an end before the start
 * crossing midnight, 24:00 the end of the day, default the whole day; tz: a
 * tzdata zone, default the appliance's own (/etc/localtime);
 * keep-connections: true, the connections the rule let in go on after its
 * windows close (by default they are cut), said in any window for the
 * whole rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/load/load.h"
#include "policy/load/lx.h"
#include "policy/schedule/tz.h"

static const char *const day_names[7][2] = {
	{ "sun", "sunday" },   { "mon", "monday" }, { "tue", "tuesday" },  { "wed", "wednesday" },
	{ "thu", "thursday" }, { "fri", "friday" }, { "sat", "saturday" },
};

static int day_of(const char *s, size_t n)
{
	for (int d = 0; d < 7; d++)
		for (int k = 0; k < 2; k++)
			if (strlen(day_names[d][k]) == n && !strncasecmp(s, day_names[d][k], n))
				return d;
	return -1;
}

/* "mon", "mon-fri", "fri-mon" into *days */
static void day_item(struct lx *x, const struct ynode *n, void *arg)
{
	uint8_t *days = arg;
	const char *dash = strchr(n->str, '-');
	int a, b;

	a = day_of(n->str, dash ? (size_t)(dash - n->str) : strlen(n->str));
	b = dash ? day_of(dash + 1, strlen(dash + 1)) : a;
	if (a < 0 || b < 0) {
		diag_error(x->d, n->loc,
			   "when days: '%s' is not a day or a range of days" DIAG_FIX ": use mon..sun or mon-fri",
			   n->str);
		return;
	}
	for (int d = a;; d = (d + 1) % 7) {
		*days |= (uint8_t)(1u << d);
		if (d == b)
			break;
	}
}

/* "HH:MM[:SS]" of s (n bytes) into seconds, up to 24:00:00 */
static int clock_of(const char *s, size_t n, uint32_t *out)
{
	unsigned h, m, sec = 0;
	char buf[16];
	int end = 0;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!(sscanf(buf, "%2u:%2u:%2u%n", &h, &m, &sec, &end) == 3 && (size_t)end == n) &&
	    !(sscanf(buf, "%2u:%2u%n", &h, &m, &end) == 2 && (size_t)end == n && (sec = 0, true)))
		return -EINVAL;
	if (m > 59 || sec > 59 || h > 24 || (h == 24 && (m || sec)))
		return -EINVAL;
	*out = h * 3600 + m * 60 + sec;
	return 0;
}

static void window_hours(struct lx *x, struct policy_window *w, const struct ynode *v)
{
	const char *dash;

	if (!lx_is(x, v, YNODE_SCALAR, "when hours"))
		return;
	dash = strchr(v->str, '-');
	if (!dash || clock_of(v->str, (size_t)(dash - v->str), &w->start) < 0 ||
	    clock_of(dash + 1, strlen(dash + 1), &w->end) < 0 || w->start == 86400) {
		diag_error(x->d, v->loc,
			   "when hours '%s'" DIAG_FIX
			   ": give a start and an end, HH:MM or HH:MM:SS, e.g. \"08:00-18:00\" or "
			   "\"22:00-06:00\" (across midnight)",
			   v->str);
		return;
	}
	if (w->start == w->end)
		diag_error(x->d, v->loc, "when hours '%s': the window is empty (its start is its end)", v->str);
	if (w->end < w->start)
		w->end += 86400; /* across midnight: into the next day */
}

/* keep-connections: holds for the rule; windows that say it must agree */
static void window_keep(struct lx *x, struct rule *r, const struct ynode *v)
{
	bool keep;

	if (!lx_bool(x, v, "when keep-connections", &keep))
		return;
	if (r->when.keep_loc.line && keep != r->when.keep)
		diag_error(
			x->d, v->loc,
			"when keep-connections: %s here, %s in an earlier window: it holds for the whole rule" DIAG_FIX
			": say it once, or alike in every window",
			keep ? "true" : "false", r->when.keep ? "true" : "false");
	else if (keep && r->action != POLICY_ACCEPT)
		diag_error(
			x->d, v->loc,
			"when keep-connections: the rule does not accept, so it lets in no connection to keep" DIAG_FIX
			": remove keep-connections");
	r->when.keep = keep;
	r->when.keep_loc = v->loc;
}

static void load_window(struct lx *x, struct rule *r, const struct ynode *n)
{
	static const char *const keys[] = { "days", "hours", "tz", "keep-connections", NULL };
	struct policy_window *w;
	const struct ynode *v;
	char why[256];

	if (!lx_is(x, n, YNODE_MAP, "a when window (e.g. { days: [mon-fri], hours: \"08:00-18:00\" })"))
		return;
	lx_check_keys(x, n, keys, "when");
	if (r->when.n == POLICY_MAX_WINDOWS) {
		diag_error(x->d, n->loc, "more than %d windows in one when:", POLICY_MAX_WINDOWS);
		return;
	}
	if (!(w = LX_APPEND(x, r->when.v, r->when.n)))
		return;
	w->loc = n->loc;
	w->days = 0x7f;
	w->start = 0;
	w->end = 86400;
	snprintf(w->tz, sizeof(w->tz), "localtime");
	if ((v = ynode_get(n, "days"))) {
		w->days = 0;
		if (v->type == YNODE_SCALAR)
			day_item(x, v, &w->days);
		else
			lx_each_scalar(x, v, "when days", day_item, &w->days);
		if (!w->days && (v->type != YNODE_SEQ || !v->nkids))
			diag_error(x->d, v->loc, "when days: no day: the window would never open");
	}
	if ((v = ynode_get(n, "hours")))
		window_hours(x, w, v);
	if ((v = ynode_get(n, "keep-connections")))
		window_keep(x, r, v);
	if ((v = ynode_get(n, "tz")) && lx_is(x, v, YNODE_SCALAR, "when tz")) {
		if (strlen(v->str) >= sizeof(w->tz))
			diag_error(x->d, v->loc, "when tz: '%s' is too long for a time zone name", v->str);
		else
			snprintf(w->tz, sizeof(w->tz), "%s", v->str);
	}
	if (tz_load(w->tz, &w->zone, why, sizeof(why)) == -ENOMEM)
		x->oom = true;
	else if (!w->zone)
		diag_error(x->d, (v = ynode_get(n, "tz")) ? v->loc : n->loc, "when tz: %s", why);
}

void load_when(struct lx *x, struct rule *r, const struct ynode *n)
{
	r->when.loc = n->loc;
	if (n->type == YNODE_MAP) {
		load_window(x, r, n);
		return;
	}
	if (n->type != YNODE_SEQ) {
		diag_error(
			x->d, n->loc,
			"when is a window, e.g. { days: [mon-fri], hours: \"08:00-18:00\", tz: Europe/Berlin }, or a "
			"list of them");
		return;
	}
	if (!n->nkids)
		diag_error(x->d, n->loc,
			   "when: an empty list would never let the rule match" DIAG_FIX ": give a window, or "
			   "remove when: to keep the rule in force at all times");
	for (size_t i = 0; i < n->nkids; i++)
		load_window(x, r, n->kids[i]);
}
