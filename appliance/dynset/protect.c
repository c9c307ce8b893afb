/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "dynset/protect.h"

#include <stdio.h>
#include <string.h>

/* The ranges no source of an offender's lies in (RFC 6890): named. */
static const struct {
	uint8_t family, plen, addr[16];
	const char *what;
} special[] = {
	{ POLICY_FAM_IPV4, 32, { 0 }, "the unspecified address" },
	{ POLICY_FAM_IPV6, 128, { 0 }, "the unspecified address" },
	{ POLICY_FAM_IPV4, 8, { 127 }, "loopback" },
	{ POLICY_FAM_IPV6, 128, { [15] = 1 }, "loopback" },
	{ POLICY_FAM_IPV4, 32, { 255, 255, 255, 255 }, "the limited broadcast" },
	{ POLICY_FAM_IPV4, 4, { 224 }, "multicast" },
	{ POLICY_FAM_IPV6, 8, { 0xff }, "multicast" },
	{ POLICY_FAM_IPV6, 96, { [10] = 0xff, [11] = 0xff }, "IPv4-mapped" },
};

static bool overlaps(const struct prefix *a, const struct prefix *b)
{
	return a->family == b->family && (policy_prefix_holds(a, b) || policy_prefix_holds(b, a));
}

static const char *listed(const struct addr_match *m, const struct prefix *pfx)
{
	for (uint32_t i = 0; m && i < m->n; i++)
		if (overlaps(&m->v[i], pfx))
			return m->what;
	return NULL;
}

const char *dyn_protected(const struct dyn_protect *p, const struct prefix *pfx, char *why, size_t len)
{
	char a[64];
	const char *w;

	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		struct prefix s = { .family = special[i].family, .plen = special[i].plen };

		memcpy(s.addr, special[i].addr, 16);
		if (policy_prefix_holds(&s, pfx)) {
			snprintf(why, len, "%s", special[i].what);
			return why;
		}
	}
	for (uint32_t i = 0; i < p->nown; i++)
		if (policy_prefix_holds(&p->own[i], pfx)) {
			policy_prefix_format(&p->own[i], a, sizeof(a));
			snprintf(why, len, "this appliance's own address %s", a);
			return why;
		}
	for (int i = 0; i < 2; i++)
		if ((w = listed(p->lists[i], pfx))) {
			snprintf(why, len, "in %snever-ban (%s)", i ? "the set's " : "options.", w);
			return why;
		}
	return NULL;
}
