/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The report tree as text for people: each object's text function, in
 * the tree's order. */
#include <time.h>

#include "base/clock.h"
#include "report/tree_int.h"

void rep_write_text(const struct rep *o, FILE *f)
{
	if (!o || (o->kind != REP_OBJECT && o->kind != REP_LIST))
		return;
	if (o->text)
		o->text(o, f);
	for (const struct rep *c = o->first; c; c = c->next)
		rep_write_text(c, f);
}

const char *rep_ago(long long ms, char *buf, size_t len)
{
	long long s;

	if (!ms)
		return "never";
	s = (clock_ms(CLOCK_REALTIME) - ms) / 1000;
	if (s <= 0)
		return "now";
	if (s < 120)
		snprintf(buf, len, "%llds ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%lldm ago", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lldh ago", s / 3600);
	else
		snprintf(buf, len, "%lldd ago", s / 86400);
	return buf;
}
