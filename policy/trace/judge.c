/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A hook's judgement of one packet, rule by rule, with reasons (trace.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "policy/schedule/schedule.h"
#include "policy/trace/trace.h"

/* Reasons, appended "; "-separated to a step's why. */
__attribute__((format(printf, 2, 3))) static void why_add(struct trace_step *s, const char *fmt, ...)
{
	size_t used = strlen(s->why);
	va_list ap;

	if (used && used + 2 < sizeof(s->why)) {
		memcpy(s->why + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(s->why + used, sizeof(s->why) - used, fmt, ap);
	va_end(ap);
}

static void addr_text(uint8_t fam, const uint8_t *a, char *buf, size_t len)
{
	if (!inet_ntop(fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

bool trace_listed(const struct addr_match *m, uint8_t fam, const uint8_t *a)
{
	for (uint32_t i = 0; i < m->n; i++) {
		const struct prefix *p = &m->v[i];
		unsigned whole = p->plen / 8, bits = p->plen % 8;

		if (p->family == fam && !memcmp(p->addr, a, whole) &&
		    (!bits || !((p->addr[whole] ^ a[whole]) >> (8 - bits))))
			return true;
	}
	return false;
}

static const char *or_any(const char *what)
{
	return what ? what : "(the list)";
}

/* from: or to: against address a. */
static bool addr_matches(const struct policy *p, const struct addr_match *m, const char *key, uint8_t fam,
			 const uint8_t *a, const struct trace_sets *sets, struct trace_step *s)
{
	char text[INET6_ADDRSTRLEN];
	bool listed = false;

	if (m->any)
		return true;
	addr_text(fam, a, text, sizeof(text));
	if (m->dyn) {
		char entry[sizeof(s->dyn_entry)] = "";

		if (sets && sets->known && sets->holds)
			listed = sets->holds(sets->arg, m->dyn - 1, fam, a, entry, sizeof(entry));
		if (listed != m->neg)
			snprintf(s->dyn_entry, sizeof(s->dyn_entry), "%s", entry);
		if (listed == m->neg) {
			if (sets && sets->known)
				why_add(s, "%s: %s %s %s", key, or_any(m->what), listed ? "holds" : "does not hold",
					text);
			else
				why_add(s, "%s: %s is a dynamic set whose entries are not known here (judged empty)",
					key, or_any(m->what));
		}
		return listed != m->neg;
	}
	listed = trace_listed(m, fam, a);
	if (listed == m->neg)
		why_add(s, "%s: %s %s %s", key, or_any(m->what), listed ? "lists" : "does not list", text);
	return listed != m->neg;
}

static bool iface_matches(const struct iface_match *m, const char *key, const char *ifname, struct trace_step *s)
{
	if (m->any)
		return true;
	if (!ifname[0]) {
		why_add(s, "%s: %s, and the packet has no %s interface", key, or_any(m->what),
			!strcmp(key, "in") ? "input" : "output");
		return false;
	}
	if (policy_iface_in(m, ifname))
		return true;
	why_add(s, "%s: %s %s %s", key, or_any(m->what), m->neg ? "excludes" : "does not list", ifname);
	return false;
}

static bool proto_has_ports(int proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE;
}

static void proto_text(int proto, char *buf, size_t len)
{
	const char *name = policy_proto_name(proto);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "protocol %d", proto);
}

/* A port list (service: or source-service:) against the packet's port. */
static bool ports_match(const struct port_match *m, const char *key, int proto, int port, const char *opt,
			struct trace_step *s)
{
	char pt[24];

	if (m->any)
		return true;
	proto_text(proto, pt, sizeof(pt));
	if (!proto_has_ports(proto)) {
		why_add(s, "%s: %s, and %s has no ports", key, or_any(m->what), pt);
		return false;
	}
	if (port < 0) {
		why_add(s, "%s: %s, and the packet's %s port is not given (%s)", key, or_any(m->what),
			!strcmp(key, "service") ? "destination" : "source", opt);
		return false;
	}
	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].proto == proto && m->v[i].lo <= port && port <= m->v[i].hi)
			return true;
	why_add(s, "%s: %s does not list %s/%d", key, or_any(m->what), pt, port);
	return false;
}

static bool icmp_matches(const struct rule *r, const struct trace_packet *k, struct trace_step *s)
{
	bool v6 = k->fam == POLICY_FAM_IPV6;

	if (!r->nicmp)
		return true;
	if (k->icmp_type < 0) {
		why_add(s, "icmp-type: the packet's type is not given (--icmp-type)");
		return false;
	}
	for (uint16_t i = 0; i < r->nicmp; i++)
		if (r->icmp_types[i] == k->icmp_type)
			return true;
	const char *name = policy_icmp_type_name(k->icmp_type, v6);

	if (name)
		why_add(s, "icmp-type: not %s", name);
	else
		why_add(s, "icmp-type: not type %d", k->icmp_type);
	return false;
}

/* proto:, service:, source-service:, icmp-type:. A port list without
 * proto: takes only the protocols it names; a protocol without ports
 * (ICMP, GRE) matches only rules without port lists. */
static bool l4_matches(const struct rule *r, const struct trace_packet *k, struct trace_step *s)
{
	bool ok = true;
	char pt[24], rt[24];

	if (r->proto >= 0 && r->proto != k->proto) {
		proto_text(k->proto, pt, sizeof(pt));
		proto_text(r->proto, rt, sizeof(rt));
		why_add(s, "proto: %s, the packet is %s", rt, pt);
		return false;
	}
	ok &= ports_match(&r->service, "service", k->proto, k->dport, "--port", s);
	ok &= ports_match(&r->sport, "source-service", k->proto, k->sport, "--sport", s);
	return ok && icmp_matches(r, k, s);
}

static bool state_matches(const struct rule *r, const struct trace_packet *k, struct trace_step *s)
{
	char list[80] = "";
	size_t used = 0;

	if (r->state & (1u << k->ct))
		return true;
	for (int i = 0; i < POLICY_CT_STATES; i++)
		if (r->state & (1u << i))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "",
						 policy_ct_names[i]);
	why_add(s, "state: %s, the packet is %s", list, policy_ct_names[k->ct]);
	return false;
}

static bool when_matches(const struct rule *r, const struct trace_packet *k, struct trace_step *s)
{
	char text[256];

	s->in_force = -1;
	if (!r->when.n)
		return true;
	s->in_force = sched_open(&r->when, k->at);
	s->next_change = sched_next_change(&r->when, k->at);
	if (s->in_force)
		return true;
	policy_when_format(&r->when, text, sizeof(text));
	why_add(s, "when: out of force (%s)", text);
	return false;
}

static bool family_matches(const struct rule *r, const struct trace_packet *k, struct trace_step *s)
{
	if (r->families & k->fam)
		return true;
	why_add(s, "its addresses are %s only", policy_family_name((enum policy_family)r->families));
	return false;
}

/* Every key of r against k; each one that fails says why in s. */
static bool rule_matches(const struct policy *p, const struct rule *r, const struct trace_packet *k,
			 const struct trace_sets *sets, struct trace_step *s)
{
	bool ok = true;

	memset(s, 0, sizeof(*s));
	s->rule = r;
	ok &= when_matches(r, k, s);
	ok &= family_matches(r, k, s);
	ok &= iface_matches(&r->in, "in", k->iif, s);
	ok &= iface_matches(&r->out, "out", k->oif, s);
	ok &= addr_matches(p, &r->from, "from", k->fam, k->src, sets, s);
	ok &= addr_matches(p, &r->to, "to", k->fam, k->dst, sets, s);
	ok &= l4_matches(r, k, s);
	ok &= state_matches(r, k, s);
	return s->matched = ok;
}

static bool mapped(const struct trace_packet *k, const uint8_t *a)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return k->fam == POLICY_FAM_IPV6 && !memcmp(a, prefix, sizeof(prefix));
}

/* Notes on the rule that decides: what it does beside its verdict. */
static void decided_notes(const struct rule *r, struct trace_step *s)
{
	char text[128];

	if (r->limit.rate.n || r->limit.conns) {
		policy_limit_format(&r->limit, text, sizeof(text));
		why_add(s, "limit %s: assumed to have room (over it, the packet would go on to the next rules)", text);
	}
	if (r->action == POLICY_REJECT)
		why_add(s, "rejected: answered with %s", policy_reject_names[r->reject_with]);
	if (r->log)
		why_add(s, "logged (log: true)");
	if (r->synproxy)
		why_add(s, "synproxy: the kernel answers the handshake first");
}

int trace_judge_hook(const struct policy *p, enum policy_hook h, const struct trace_packet *k,
		     const struct trace_sets *sets, struct trace_hook *out)
{
	memset(out, 0, sizeof(*out));
	out->hook = h;
	out->verdict = POLICY_ACCEPT;
	if (mapped(k, k->src) || mapped(k, k->dst)) {
		out->by = TRACE_BY_MALFORMED;
		out->verdict = POLICY_DROP;
		return 0;
	}
	if (!p->hooks[h].present) {
		out->by = TRACE_BY_UNFILTERED;
		return 0;
	}
	if (p->opt.established_accept && ((1u << k->ct) & (POLICY_CT_ESTABLISHED | POLICY_CT_RELATED))) {
		out->by = TRACE_BY_ESTABLISHED;
		return 0;
	}
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *r = &p->rules[i];
		struct trace_step *s;

		if (!(r->hooks & (1u << h)))
			continue;
		if (!(s = realloc(out->steps, (out->nsteps + 1) * sizeof(*s)))) {
			free(out->steps);
			out->steps = NULL;
			return -ENOMEM;
		}
		out->steps = s;
		s += out->nsteps++;
		if (rule_matches(p, r, k, sets, s)) {
			decided_notes(r, s);
			out->by = TRACE_BY_RULE;
			out->rule = r;
			out->verdict = r->action;
			return 0;
		}
	}
	out->by = TRACE_BY_DEFAULT;
	out->verdict = p->hooks[h].def;
	return 0;
}

const char *trace_decided_by(const struct trace_hook *h)
{
	switch (h->by) {
	case TRACE_BY_RULE:
	case TRACE_BY_EARLY:
		return h->rule->name;
	case TRACE_BY_DEFAULT:
		return "(default)";
	case TRACE_BY_ESTABLISHED:
		return "(established)";
	case TRACE_BY_MALFORMED:
		return "(malformed)";
	default:
		return NULL;
	}
}
