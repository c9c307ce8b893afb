/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Names shown to and read from operators: hooks, protocols, ICMP types. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

const char *const policy_hook_names[POLICY_HOOK_MAX + 1] = {
	[POLICY_HOOK_INPUT] = "input",
	[POLICY_HOOK_FORWARD] = "forward",
	[POLICY_HOOK_OUTPUT] = "output",
	[POLICY_HOOK_MAX] = NULL,
};

const char *policy_hook_name(enum policy_hook h)
{
	return (unsigned)h < POLICY_HOOK_MAX ? policy_hook_names[h] : "?";
}

const char *policy_action_name(enum policy_action a)
{
	switch (a) {
	case POLICY_ACCEPT:
		return "accept";
	case POLICY_REJECT:
		return "reject";
	default:
		return "drop";
	}
}

const char *const policy_ct_names[POLICY_CT_STATES + 1] = { "new",     "established", "related",
							    "invalid", "untracked",   NULL };

const char *const policy_reject_names[POLICY_REJECT_MAX + 1] = {
	[POLICY_REJECT_TCP_RESET] = "tcp-reset",    [POLICY_REJECT_PORT] = "port-unreachable",
	[POLICY_REJECT_ADMIN] = "admin-prohibited", [POLICY_REJECT_HOST] = "host-unreachable",
	[POLICY_REJECT_NET] = "net-unreachable",    [POLICY_REJECT_MAX] = NULL,
};

const char *const policy_nat_kind_names[] = {
	[NAT_MASQUERADE] = "masquerade",
	[NAT_SNAT] = "snat",
	[NAT_FORWARD_PORT] = "forward-port",
	[NAT_REDIRECT] = "redirect",
	[NAT_NO_NAT] = "no-nat",
	[NAT_ONE_TO_ONE] = "one-to-one",
	[NAT_NPTV6] = "nptv6",
	NULL,
};

const char *policy_family_name(enum policy_family f)
{
	switch (f) {
	case POLICY_FAM_IPV4:
		return "ipv4";
	case POLICY_FAM_IPV6:
		return "ipv6";
	default:
		return "any";
	}
}

const char *policy_rate_unit(uint32_t per)
{
	return per == 3600 ? "hour" : per == 60 ? "minute" : "second";
}

int policy_limit_format(const struct policy_limit *l, char *buf, size_t len)
{
	int n = l->conns ? snprintf(buf, len, "%u connections%s", l->conns, l->per_source ? " per source" : "")
			 : snprintf(buf, len, "%u/%s burst %u%s", l->rate.n, policy_rate_unit(l->rate.per), l->burst,
				    l->per_source ? " per source" : "");

	if (n < 0 || (size_t)n >= len || !l->overload)
		return n;
	if (l->overload_timeout)
		return n +
		       snprintf(buf + n, len - (size_t)n, " overload %s timeout %us", l->overload, l->overload_timeout);
	return n + snprintf(buf + n, len - (size_t)n, " overload %s", l->overload);
}

/* The protocols nfbox knows by name, each written once: name and number. */
#define PROTOS(X)                   \
	X("tcp", IPPROTO_TCP)       \
	X("udp", IPPROTO_UDP)       \
	X("icmp", IPPROTO_ICMP)     \
	X("icmpv6", IPPROTO_ICMPV6) \
	X("sctp", IPPROTO_SCTP)     \
	X("gre", IPPROTO_GRE)       \
	X("esp", IPPROTO_ESP)       \
	X("ah", IPPROTO_AH)         \
	X("udplite", IPPROTO_UDPLITE)

#define PROTO_NAME(n, v) n,
#define PROTO_NUM(n, v)	 v,
const char *const policy_proto_names[] = { PROTOS(PROTO_NAME) NULL };
static const int proto_nums[] = { PROTOS(PROTO_NUM) };

const char *policy_proto_name(int proto)
{
	for (size_t i = 0; i < sizeof(proto_nums) / sizeof(proto_nums[0]); i++)
		if (proto_nums[i] == proto)
			return policy_proto_names[i];
	return NULL;
}

int policy_proto_number(const char *name)
{
	for (size_t i = 0; i < sizeof(proto_nums) / sizeof(proto_nums[0]); i++)
		if (!strcmp(policy_proto_names[i], name))
			return proto_nums[i];
	return -1;
}

struct icmp_name {
	const char *name;
	int type;
};

static const struct icmp_name icmp4[] = {
	{ "echo-reply", 0 },	       { "destination-unreachable", 3 },
	{ "source-quench", 4 },	       { "redirect", 5 },
	{ "echo-request", 8 },	       { "router-advertisement", 9 },
	{ "router-solicitation", 10 }, { "time-exceeded", 11 },
	{ "parameter-problem", 12 },   { "timestamp-request", 13 },
	{ "timestamp-reply", 14 },     { "info-request", 15 },
	{ "info-reply", 16 },	       { "address-mask-request", 17 },
	{ "address-mask-reply", 18 },  { NULL, 0 },
};

static const struct icmp_name icmp6[] = {
	{ "destination-unreachable", 1 },
	{ "packet-too-big", 2 },
	{ "time-exceeded", 3 },
	{ "parameter-problem", 4 },
	{ "echo-request", 128 },
	{ "echo-reply", 129 },
	{ "mld-listener-query", 130 },
	{ "mld-listener-report", 131 },
	{ "mld-listener-done", 132 },
	{ "router-solicitation", 133 },
	{ "router-advertisement", 134 },
	{ "neighbour-solicitation", 135 },
	{ "neighbour-advertisement", 136 },
	{ "neighbor-solicitation", 135 },
	{ "neighbor-advertisement", 136 },
	{ "redirect", 137 },
	{ "router-renumbering", 138 },
	{ "ind-neighbor-solicit", 141 },
	{ "ind-neighbor-advert", 142 },
	{ "mld2-listener-report", 143 },
	/* nftables' names for the same types (the first name of a type is the one printed) */
	{ "mld-listener-reduction", 132 },
	{ "nd-router-solicit", 133 },
	{ "nd-router-advert", 134 },
	{ "nd-neighbor-solicit", 135 },
	{ "nd-neighbor-advert", 136 },
	{ "nd-redirect", 137 },
	{ NULL, 0 },
};

int policy_icmp_type(const char *name, bool v6)
{
	for (const struct icmp_name *t = v6 ? icmp6 : icmp4; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t->type;
	return -1;
}

const char *policy_icmp_type_closest(const char *name, bool v6)
{
	const struct icmp_name *t = v6 ? icmp6 : icmp4;
	const char *names[64];
	size_t n = 0;

	for (; t->name && n < 63; t++)
		names[n++] = t->name;
	names[n] = NULL;
	return diag_closest(name, names);
}

const char *policy_icmp_type_name(int type, bool v6)
{
	for (const struct icmp_name *t = v6 ? icmp6 : icmp4; t->name; t++)
		if (t->type == type)
			return t->name;
	return NULL;
}

bool policy_ifname_match(const char *pat, const char *name)
{
	size_t n = strlen(pat);

	if (!policy_ifname_wild(pat))
		return !strcmp(pat, name);
	/* "eth*" takes "eth0" and the narrower wildcard "eth1*", not "et*" */
	return strlen(name) >= n - 1 && !strncmp(pat, name, n - 1);
}

bool policy_iface_in(const struct iface_match *m, const char *ifname)
{
	bool listed = false;

	if (m->any)
		return true;
	for (uint32_t i = 0; i < m->n && !listed; i++)
		listed = policy_ifname_match(m->ifnames[i], ifname);
	return listed != m->neg;
}

void policy_print_sides(FILE *f, const struct iface_match *in, const struct iface_match *out,
			const struct addr_match *from, const struct addr_match *to)
{
	if (in && !in->any)
		fprintf(f, " in %s", in->what);
	if (out && !out->any)
		fprintf(f, " out %s", out->what);
	if (from && !from->any)
		fprintf(f, " from %s%s", from->what, from->dyn ? " (dynamic)" : "");
	if (to && !to->any)
		fprintf(f, " to %s%s", to->what, to->dyn ? " (dynamic)" : "");
}

bool policy_prefix_holds(const struct prefix *a, const struct prefix *b)
{
	unsigned full, rest;

	if (a->family != b->family || a->plen > b->plen)
		return false;
	full = a->plen / 8;
	rest = a->plen % 8;
	if (memcmp(a->addr, b->addr, full))
		return false;
	return !rest || ((a->addr[full] ^ b->addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

bool policy_prefixes_within(const struct addr_match *x, const struct addr_match *y)
{
	for (uint32_t i = 0; i < x->n; i++) {
		bool found = false;

		for (uint32_t j = 0; j < y->n && !found; j++)
			found = policy_prefix_holds(&y->v[j], &x->v[i]);
		if (!found)
			return false;
	}
	return true;
}

bool policy_addrs_equal(const struct addr_match *a, const struct addr_match *b)
{
	if (a->any || b->any)
		return a->any == b->any;
	if (a->n != b->n || a->neg != b->neg || a->dyn != b->dyn)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->v[i].family != b->v[i].family || a->v[i].plen != b->v[i].plen ||
		    memcmp(a->v[i].addr, b->v[i].addr, 16))
			return false;
	return true;
}

int policy_prefix_format(const struct prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	bool v4 = p->family == POLICY_FAM_IPV4;

	inet_ntop(v4 ? AF_INET : AF_INET6, p->addr, a, sizeof(a));
	if (p->plen == (v4 ? 32 : 128))
		return snprintf(buf, len, "%s", a);
	return snprintf(buf, len, "%s/%u", a, p->plen);
}

void policy_ha_peers_format(const struct ha_conf *h, char *buf, size_t len)
{
	size_t n;

	policy_prefix_format(&h->sync_peers[0], buf, len);
	n = strlen(buf);
	if (h->npeers == 2 && n + 4 < len) {
		memcpy(buf + n, " or ", 5);
		policy_prefix_format(&h->sync_peers[1], buf + n + 4, len - n - 4);
	}
}

static const char *const short_days[7] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat" };

/* "mon-fri", "sat,sun", "fri-mon": runs of days (a week wraps), from the
 * first day of a run */
static void days_format(uint8_t days, FILE *f)
{
	int start = 0, first = 1;

	for (int d = 0; d < 7; d++)
		if ((days >> d & 1) && !(days >> ((d + 6) % 7) & 1)) {
			start = d;
			break;
		}
	for (int i = 0; i < 7;) {
		int d = (start + i) % 7, n = 0;

		if (!(days >> d & 1)) {
			i++;
			continue;
		}
		while (i + n < 7 && (days >> ((start + i + n) % 7) & 1))
			n++;
		fprintf(f, "%s%s", first ? "" : ",", short_days[d]);
		if (n > 1)
			fprintf(f, "%s%s", n > 2 ? "-" : ",", short_days[(d + n - 1) % 7]);
		first = 0;
		i += n;
	}
}

static void clock_format(uint32_t s, FILE *f)
{
	s %= 86400 * 2;
	if (s > 86400)
		s -= 86400;
	fprintf(f, "%02u:%02u", s / 3600, s % 3600 / 60);
	if (s % 60)
		fprintf(f, ":%02u", s % 60);
}

int policy_when_format(const struct policy_when *w, char *buf, size_t len)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	int r;

	if (!f)
		return snprintf(buf, len, "?");
	for (uint32_t i = 0; i < w->n; i++) {
		const struct policy_window *x = &w->v[i];
		bool sp = false;

		if (i)
			fputs(" or ", f);
		if (x->days != 0x7f) {
			days_format(x->days, f);
			sp = true;
		}
		if (x->start != 0 || x->end != 86400) {
			fputs(sp ? " " : "", f);
			clock_format(x->start, f);
			fputc('-', f);
			clock_format(x->end, f);
			sp = true;
		}
		fprintf(f, "%s%s", sp ? " " : "", x->tz);
	}
	if (w->keep)
		fputs(", keep-connections", f);
	fclose(f);
	r = snprintf(buf, len, "%s", out ? out : "?");
	free(out);
	return r;
}
