/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sets the daemon fills from a source that is not there at load: a country
 * set whose database cannot be read starts empty, and stays so until the
 * daemon reads it. Said at each rule that names it, in terms of what the
 * rule then does ("set 'geo' is empty: rule 'geo-block' drops nothing"),
 * since a block by country that fails open is worth more than a note on
 * the set.
 */
#include "policy/check/check.h"

static const char *verb(enum policy_action a)
{
	return a == POLICY_ACCEPT ? "accepts" : a == POLICY_REJECT ? "rejects" : "drops";
}

static void empty_feed(const struct policy *p, const struct rule *r, const struct addr_match *m, struct diags *d)
{
	const struct addr_set *s;

	if (!m->dyn || !(s = &p->sets[m->dyn - 1])->feed_unreadable)
		return;
	if (m->neg)
		diag_warn(d, r->loc,
			  "set '%s' is empty (its database cannot be read): '!%s' is every address, so rule '%s' %s "
			  "all that its other keys match until the daemon reads the database",
			  s->name, s->name, r->name, verb(r->action));
	else
		diag_warn(
			d, r->loc,
			"set '%s' is empty (its database cannot be read): rule '%s' %s nothing until the daemon reads "
			"the database",
			s->name, r->name, verb(r->action));
}

void check_empty_feeds(const struct policy *p, struct diags *d)
{
	for (uint32_t i = 0; i < p->nrules; i++) {
		empty_feed(p, &p->rules[i], &p->rules[i].from, d);
		empty_feed(p, &p->rules[i], &p->rules[i].to, d);
	}
}
