/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What 'defrag: false' rules out. */
#include "policy/check/check.h"

/* A drop rule that needs an L4 header (ports, an ICMP type) cannot see the
 * fragments of what it drops: with defrag off every fragment is keyed by its
 * protocol alone. On a hook whose default accepts, they pass. */
static void warn_fragments_pass(const struct policy *p, const struct rule *r, struct diags *d)
{
	if (r->action != POLICY_DROP || (r->service.any && r->sport.any && !r->nicmp))
		return;
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		if (!(r->hooks & (1u << h)) || !p->hooks[h].present || p->hooks[h].def != POLICY_ACCEPT)
			continue;
		diag_warn(d, r->loc,
			  "with 'defrag: false', fragments of the datagrams rule '%s' drops carry no ports (every "
			  "fragment is keyed by its protocol alone), so the %s hook's 'default: accept' lets them "
			  "through" DIAG_FIX "; keep defrag on (the default)",
			  r->name, policy_hook_name((enum policy_hook)h));
		return;
	}
}

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
			   "'established: accept' needs conntrack, and conntrack reassembles fragments: it cannot be "
			   "combined with 'defrag: false'");
	p->opt.established_accept = false;
	for (uint32_t i = 0; i < p->nrules; i++)
		if (p->rules[i].state != POLICY_CT_ALL)
			diag_error(d, p->rules[i].loc,
				   "rule '%s' matches on conntrack state, which 'defrag: false' turns off (conntrack "
				   "reassembles fragments)" DIAG_FIX "; remove 'state:' or the defrag option",
				   p->rules[i].name);
	if (p->nnat)
		diag_error(
			d, p->nat[0].loc,
			"NAT needs conntrack, which reassembles fragments: it cannot be combined with 'defrag: false'");
	if (p->ha.present)
		diag_error(d, p->ha.loc,
			   "ha: keeps flows going through a failover by syncing conntrack, which 'defrag: false' (line "
			   "%u) turns off: the pair would have nothing to sync" DIAG_FIX
			   "; keep defrag on (the default)",
			   p->opt.defrag_loc.line);
	for (uint32_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];

		/* no conntrack, no connection to cut: every packet is judged, so
		 * a rule's flows stop at its edge */
		r->when.cut = 0;
		if (r->when.keep)
			diag_error(d, r->when.keep_loc,
				   "keep-connections needs conntrack, which 'defrag: false' turns off: every packet is "
				   "judged by the rules, so rule '%s' lets nothing through past its windows" DIAG_FIX
				   "; remove keep-connections or the defrag option",
				   r->name);
	}
	for (uint32_t i = 0; i < p->nrules; i++)
		warn_fragments_pass(p, &p->rules[i], d);
}
