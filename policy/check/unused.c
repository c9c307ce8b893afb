/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Whole-policy warnings: names defined but not used, rules that never match
 * because of an option, captures that would take forwarded frames. */
#include <string.h>

#include "policy/check/check.h"

/* AF_XDP takes a captured frame away from the stack: capturing on an
 * interface the policy filters would stop the appliance forwarding what it
 * captures. */
static void check_capture_ifaces(const struct policy *p, struct diags *d)
{
	for (uint32_t i = 0; i < p->ncaptures; i++) {
		const struct capture_conf *c = &p->captures[i];

		for (uint32_t g = 0; !c->mirror_from[0] && g < p->ngroups; g++)
			for (uint32_t k = 0; k < p->groups[g].n; k++)
				if (!strcmp(p->groups[g].ifnames[k], c->ifname)) {
					diag_warn(d, c->loc,
						  "capture '%s' on '%s' (group '%s') takes the frames it matches away "
						  "from the stack: the appliance would not forward them" DIAG_FIX
						  "; to record "
						  "that traffic, capture a copy with 'mirror-from: %s' and a new "
						  "interface name",
						  c->name ? c->name : "", c->ifname, p->groups[g].name, c->ifname);
					g = p->ngroups - 1;
					break;
				}
	}
}

void check_unused(struct policy *p, struct diags *d)
{
	check_capture_ifaces(p, d);
	for (uint32_t i = 0; i < p->ngroups; i++)
		if (!p->groups[i].used)
			diag_warn(d, p->groups[i].loc, "interface group '%s' is defined but not used",
				  p->groups[i].name);
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		if (p->opt.established_accept && r->state != POLICY_CT_ALL &&
		    !(r->state & ~(POLICY_CT_ESTABLISHED | POLICY_CT_RELATED)))
			diag_warn(d, r->loc,
				  "rule '%s' never matches: established and related packets skip the rules "
				  "(options.established: accept)" DIAG_FIX "; set 'established: rules' to filter them",
				  r->name);
	}
	for (uint32_t i = 0; i < p->nsets; i++)
		if (!p->sets[i].used)
			diag_warn(d, p->sets[i].loc, "set '%s' is defined but not used", p->sets[i].name);
	for (uint32_t i = 0; i < p->nservices; i++)
		if (!p->services[i].used)
			diag_warn(d, p->services[i].loc, "service '%s' is defined but not used", p->services[i].name);
}
