/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * synproxy: true puts the kernel's SYN proxy in front of a TCP accept rule:
 * the rule's SYNs pass untracked, the kernel answers each with a SYN
 * cookie and opens the connection to the server only once the client's
 * ACK proves the address is real; a flood of forged SYNs then fills no
 * conntrack table. nftables' synproxy statement does it, with either
 * backend (with BPF, after the classifier: nft/build.c); the rule must see
 * the client's ACK, which conntrack calls invalid until the proxy answers.
 */
#include <netinet/in.h>

#include "policy/check/check.h"

static bool tcp_only(const struct rule *r)
{
	if (r->proto == IPPROTO_TCP)
		return true;
	if (r->proto >= 0 || r->service.any)
		return false;
	for (uint32_t i = 0; i < r->service.n; i++)
		if (r->service.v[i].proto != IPPROTO_TCP)
			return false;
	return true;
}

/* What keeps the rule from working as a SYN proxy, or NULL. */
static const char *shape_error(const struct policy *p, const struct rule *r)
{
	if (r->action != POLICY_ACCEPT)
		return "synproxy protects an accept rule";
	if (!tcp_only(r))
		return "synproxy answers TCP handshakes: the rule needs 'proto: tcp' or TCP ports only";
	if (r->hooks & 1u << POLICY_HOOK_OUTPUT)
		return "synproxy works on the input and forward hooks, not output";
	if (!r->out.any)
		return "synproxy untracks the rule's SYNs before routing, where 'out:' is not known yet: remove 'out:'";
	if (!(r->state & POLICY_CT_NEW))
		return "synproxy answers new connections: the rule's 'state:' must include new";
	if (policy_has_limit(&r->limit))
		return "synproxy with a 'limit:' is not supported: split the rule";
	if (!p->opt.defrag)
		return "synproxy needs conntrack, which 'defrag: false' leaves off";
	return NULL;
}

/* An earlier rule on one of r's hooks that drops (or rejects) invalid
 * packets: the client's ACK to a SYN cookie is one. */
static const struct rule *invalid_dropper(const struct policy *p, const struct rule *r)
{
	for (const struct rule *a = p->rules; a < r; a++)
		if (a->action != POLICY_ACCEPT && (a->hooks & r->hooks) && (a->state & POLICY_CT_INVALID) &&
		    a->state != POLICY_CT_ALL)
			return a;
	return NULL;
}

void check_synproxy(const struct policy *p, struct diags *d)
{
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i], *a;
		const char *why;

		if (!r->synproxy)
			continue;
		if ((why = shape_error(p, r)))
			diag_error(d, r->synproxy_loc, "rule '%s': %s", r->name, why);
		else if ((a = invalid_dropper(p, r)))
			diag_error(d, r->synproxy_loc,
				   "rule '%s': rule '%s' (line %u) drops invalid packets first, and the client's ACK "
				   "to a SYN cookie is invalid to conntrack until the proxy answers it" DIAG_FIX
				   ": move rule '%s' "
				   "above rule '%s'",
				   r->name, a->name, a->loc.line, r->name, a->name);
	}
}
