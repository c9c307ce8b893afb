/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What 'defrag: false' rules out. */
#include "policy/check/check.h"

/*
 * defrag: false means no reassembly before the verdict. Conntrack would
 * reassemble anyway (its nf_defrag runs first), so nfbox then leaves
 * conntrack off, and what needs it cannot be asked for.
 */
void check_defrag_off(struct policy *p, struct diags *d)
{
	if (p->opt.defrag)
		return;
	if (p->opt.established_loc.line && p->opt.established_accept)
		diag_error(d, p->opt.established_loc,
			   "'established: accept' needs conntrack, and conntrack reassembles fragments: it cannot be combined with 'defrag: false'");
	p->opt.established_accept = false;
	for (uint32_t i = 0; i < p->nrules; i++)
		if (p->rules[i].state != POLICY_CT_ALL)
			diag_error(d, p->rules[i].loc,
				   "rule '%s' matches on conntrack state, which 'defrag: false' turns off (conntrack reassembles fragments); remove 'state:' or the defrag option",
				   p->rules[i].name);
	if (p->nnat)
		diag_error(d, p->nat[0].loc, "NAT needs conntrack, which reassembles fragments: it cannot be combined with 'defrag: false'");
}
