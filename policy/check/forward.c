/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the policy needs of the host: that it forward the families the
 * policy forwards or translates. The kernel forwards nothing of a family
 * while its switch is off (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding),
 * whatever the policy accepts: validate (on the machine), a load of the
 * daemon and status say so, and how to turn it on.
 */
#include <stdio.h>
#include <string.h>

#include "policy/check/check.h"

static const char *const fam_name[2] = { "IPv4", "IPv6" };
static const char *const fam_sysctl[2] = { "net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding" };

/* The first that needs forwarding of family bit fam, said in why. */
static bool forwards(const struct policy *p, uint8_t fam, struct policy_forward_why *why)
{
	const struct hook_conf *fwd = &p->hooks[POLICY_HOOK_FORWARD];

	if (fwd->present && fwd->def == POLICY_ACCEPT) {
		*why = (struct policy_forward_why){ .loc = fwd->loc };
		snprintf(why->what, sizeof(why->what), "what the forward hook accepts by default");
		return true;
	}
	for (uint32_t i = 0; fwd->present && i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];

		if (!(r->hooks & (1u << POLICY_HOOK_FORWARD)) || r->action != POLICY_ACCEPT || !(r->families & fam))
			continue;
		*why = (struct policy_forward_why){ .loc = r->loc };
		snprintf(why->what, sizeof(why->what), "what rule '%s' accepts on the forward hook", r->name);
		return true;
	}
	for (uint32_t i = 0; i < p->nnat; i++) {
		const struct nat_rule *n = &p->nat[i];

		/* a redirect goes to the appliance itself: input, not forward;
		 * a no-nat translates nothing */
		if (n->kind == NAT_REDIRECT || n->kind == NAT_NO_NAT || !(n->families & fam))
			continue;
		*why = (struct policy_forward_why){ .loc = n->loc };
		snprintf(why->what, sizeof(why->what), "what this %s translates", policy_nat_kind_names[n->kind]);
		return true;
	}
	return false;
}

uint8_t policy_forwarded(const struct policy *p, struct policy_forward_why why[2])
{
	uint8_t need = 0;

	for (int i = 0; i < 2; i++)
		if (forwards(p, (uint8_t)(POLICY_FAM_IPV4 << i), &why[i]))
			need |= (uint8_t)(POLICY_FAM_IPV4 << i);
	return need;
}

void policy_forwarding_text(int i, const struct policy_forward_why *why, char *msg, size_t mlen, char *fix, size_t flen)
{
	snprintf(msg, mlen, "%s is not forwarded here (%s is 0): %s never passes", fam_name[i], fam_sysctl[i],
		 why->what);
	snprintf(fix, flen, "turn it on: sysctl -w %s=1, and keep it: '%s = 1' in a file of /etc/sysctl.d/",
		 fam_sysctl[i], fam_sysctl[i]);
}

void check_forwarding(const struct policy *p, uint8_t host, struct diags *d)
{
	struct policy_forward_why why[2];
	uint8_t need = policy_forwarded(p, why);
	char msg[384], fix[256];

	for (int i = 0; i < 2; i++) {
		if (!(need & ~host & (POLICY_FAM_IPV4 << i)))
			continue;
		policy_forwarding_text(i, &why[i], msg, sizeof(msg), fix, sizeof(fix));
		diag_warn(d, why[i].loc, "%s" DIAG_FIX "; %s", msg, fix);
	}
}
