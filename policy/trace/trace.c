/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The whole path of one packet: early drop, prerouting, a filter hook,
 * postrouting (trace.h). */
#include <arpa/inet.h>
#include <limits.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "policy/schedule/schedule.h"
#include "policy/trace/trace.h"

static bool in_prefixes(const struct addr_match *m, uint8_t fam, const uint8_t *a)
{
	return m->any || trace_listed(m, fam, a) != m->neg;
}

/* The first early rule that drops k at XDP (or ingress): on its in:
 * interfaces, by its source; a dynamic set's entries only where known. */
static const struct rule *early_drop(const struct policy *p, const struct trace_packet *k,
				     const struct trace_sets *sets, bool *possible)
{
	*possible = false;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		bool listed;

		if (!r->early || !k->iif[0] || !policy_iface_in(&r->in, k->iif))
			continue;
		*possible = true;
		if (!(r->families & k->fam) || (r->when.n && !sched_open(&r->when, k->at)))
			continue;
		if (r->from.dyn) {
			char entry[80];

			listed = sets && sets->known && sets->holds &&
				 sets->holds(sets->arg, r->from.dyn - 1, k->fam, k->src, entry, sizeof(entry));
		} else {
			listed = in_prefixes(&r->from, k->fam, k->src);
		}
		if (listed)
			return r;
	}
	return NULL;
}

/* The range of m that holds proto's port, or NULL. */
static const struct port_range *port_range_of(const struct port_match *m, int proto, int port)
{
	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].proto == proto && m->v[i].lo <= port && port <= m->v[i].hi)
			return &m->v[i];
	return NULL;
}

static bool port_listed(const struct port_match *m, int proto, int port)
{
	return m->any || port_range_of(m, proto, port);
}

/* A forward-port's hairpin: k arrived elsewhere than its in:, for an
 * address of one of its in: interfaces (its destination:, where given). */
static bool hairpinned(const struct nat_rule *n, const struct trace_packet *k)
{
	if (!n->hairpin)
		return false;
	if (!n->dest.any && n->dest.n)
		return true; /* k->dst is in it: dnat() checked */
	for (uint32_t i = 0; k->dst_ifs_known && i < k->ndst_ifs; i++)
		if (policy_iface_in(&n->in, k->dst_ifs[i]))
			return true;
	return false;
}

/* A forward-port to a range of ports: the service's range that holds k's
 * port goes onto it port by port; to one port, every port goes there. */
static int port_offset(const struct nat_rule *n, const struct trace_packet *k)
{
	const struct port_range *r = port_range_of(&n->service, k->proto, k->dport);

	return n->to_port_last == n->to_port || !r ? 0 : k->dport - r->lo;
}

/* Prerouting: the first forward-port or redirect that takes k. Translation
 * is decided on a connection's first packet (state new); the rest follow
 * it through conntrack, which a single packet cannot show. */
static void dnat(const struct policy *p, const struct trace_packet *k, struct trace_nat *out)
{
	char to[INET6_ADDRSTRLEN];

	memset(out, 0, sizeof(*out));
	out->port = -1;
	if (!k->iif[0] || k->dport < 0 || k->ct != 0 /* new */)
		return;
	for (uint32_t i = 0; i < p->nnat; i++) {
		const struct nat_rule *n = &p->nat[i];

		if ((n->kind != NAT_FORWARD_PORT && n->kind != NAT_REDIRECT) || !(n->families & k->fam) ||
		    !in_prefixes(&n->from, k->fam, k->src) || !port_listed(&n->service, k->proto, k->dport))
			continue;
		if (n->kind == NAT_FORWARD_PORT && !n->dest.any && n->dest.n && !in_prefixes(&n->dest, k->fam, k->dst))
			continue; /* destination: only to these, arriving or hairpinned */
		if (!policy_iface_in(&n->in, k->iif) && !(n->kind == NAT_FORWARD_PORT && hairpinned(n, k)))
			continue;
		out->nat = n;
		if (n->kind == NAT_REDIRECT) {
			out->port = n->to_port;
			if (k->have_local) {
				memcpy(out->addr, k->local, 16);
				inet_ntop(k->fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6, k->local, to, sizeof(to));
				snprintf(out->what, sizeof(out->what), "to the appliance itself, %s port %u", to,
					 n->to_port);
			} else {
				snprintf(out->what, sizeof(out->what),
					 "to the appliance itself, port %u (an address of %s, not known here: rules "
					 "that name destinations are judged with the original)",
					 n->to_port, k->iif);
			}
			return;
		}
		memcpy(out->addr, n->to_addr.addr, 16);
		out->port = n->to_port ? n->to_port + port_offset(n, k) : k->dport;
		inet_ntop(k->fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6, n->to_addr.addr, to, sizeof(to));
		snprintf(out->what, sizeof(out->what), "destination becomes %s port %d", to, out->port);
		return;
	}
}

/* Postrouting: the first masquerade or snat of k's output interface. */
static void snat(const struct policy *p, const struct trace_packet *k, struct trace_nat *out)
{
	char first[INET6_ADDRSTRLEN], last[INET6_ADDRSTRLEN];
	int af = k->fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6;

	memset(out, 0, sizeof(*out));
	out->port = -1;
	if (!k->oif[0] || k->ct != 0 /* new: as in dnat() */)
		return;
	for (uint32_t i = 0; i < p->nnat; i++) {
		const struct nat_rule *n = &p->nat[i];

		if ((n->kind != NAT_MASQUERADE && n->kind != NAT_SNAT) || !(n->families & k->fam) ||
		    !policy_iface_in(&n->out, k->oif))
			continue;
		out->nat = n;
		if (n->kind == NAT_MASQUERADE) {
			snprintf(out->what, sizeof(out->what), "source becomes an address of %s", k->oif);
			return;
		}
		inet_ntop(af, n->to_addr.addr, first, sizeof(first));
		inet_ntop(af, n->to_last.addr, last, sizeof(last));
		if (!memcmp(n->to_addr.addr, n->to_last.addr, 16))
			snprintf(out->what, sizeof(out->what), "source becomes %s", first);
		else
			snprintf(out->what, sizeof(out->what), "source becomes one of %s-%s", first, last);
		return;
	}
}

/* Which filter hook the packet meets, after prerouting. */
static enum policy_hook route(struct trace_result *r)
{
	if (!r->pkt.iif[0])
		return POLICY_HOOK_OUTPUT;
	if (r->dnat.nat && r->dnat.nat->kind == NAT_REDIRECT) {
		r->seen.oif[0] = '\0';
		return POLICY_HOOK_INPUT;
	}
	return r->seen.oif[0] ? POLICY_HOOK_FORWARD : POLICY_HOOK_INPUT;
}

int trace_run(const struct policy *p, const struct trace_packet *k, const struct trace_sets *sets,
	      struct trace_result **out)
{
	struct trace_result *r;
	enum policy_hook h;
	int e;

	if (!k->iif[0] && !k->oif[0])
		return -EINVAL;
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->pkt = r->seen = *k;
	r->sets_known = sets && sets->known;
	r->snat.port = -1;
	r->early = early_drop(p, k, sets, &r->early_possible);
	dnat(p, k, &r->dnat);
	if (r->dnat.nat &&
	    (r->dnat.nat->kind == NAT_FORWARD_PORT || (r->dnat.nat->kind == NAT_REDIRECT && k->have_local)))
		memcpy(r->seen.dst, r->dnat.addr, 16);
	if (r->dnat.nat)
		r->seen.dport = r->dnat.port;
	h = route(r);
	if (r->early) {
		r->filter = (struct trace_hook){
			.hook = h, .by = TRACE_BY_EARLY, .rule = r->early, .verdict = POLICY_DROP
		};
	} else if (r->dnat.nat && r->dnat.nat->kind == NAT_FORWARD_PORT && !k->oif[0]) {
		r->filter = (struct trace_hook){ .hook = POLICY_HOOK_FORWARD, .by = TRACE_BY_UNKNOWN };
		snprintf(r->note, sizeof(r->note),
			 "it is forwarded after the translation: give --out, the interface towards the new "
			 "destination, to follow it through the forward hook");
	} else if ((e = trace_judge_hook(p, h, &r->seen, sets, &r->filter)) < 0) {
		free(r);
		return e;
	}
	if (r->filter.verdict == POLICY_ACCEPT && r->filter.by != TRACE_BY_UNKNOWN && h != POLICY_HOOK_INPUT)
		snat(p, &r->seen, &r->snat);
	*out = r;
	return 0;
}

void trace_free(struct trace_result *r)
{
	if (!r)
		return;
	free(r->filter.steps);
	free(r);
}
