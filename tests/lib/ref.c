/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The reference semantics, random policies and packets (ref.h). */
#include "tests/lib/ref.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/nfbox.h"
#include "lib/ip6walk.h"
#include "policy/schedule/schedule.h"

static uint64_t rng = 88172645463325252ull;

void ref_seed(uint64_t seed)
{
	rng = seed ? seed : 88172645463325252ull;
}

uint32_t ref_rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static bool prefix_has(const struct prefix *p, uint8_t fam, const uint8_t *a)
{
	unsigned full = p->plen / 8, rest = p->plen % 8;

	if (p->family != fam || memcmp(p->addr, a, full))
		return false;
	return !rest || ((p->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

bool (*ref_dyn_holds)(uint32_t set, uint8_t fam, const uint8_t *a);

/* By the definitions: listed, or (negated) not listed. */
static bool addr_ok(const struct addr_match *m, const struct ref_pkt *k, const uint8_t *a)
{
	bool listed = false;

	if (m->any)
		return true;
	if (m->dyn)
		listed = ref_dyn_holds && ref_dyn_holds(m->dyn - 1, k->fam, a);
	for (uint32_t i = 0; i < m->n && !listed; i++)
		listed = prefix_has(&m->v[i], k->fam, a);
	return listed != m->neg;
}

static bool iface_ok(const struct iface_match *m, const char *name)
{
	bool listed = false;

	if (m->any)
		return true;
	for (uint32_t i = 0; name && i < m->n && !listed; i++)
		listed = policy_ifname_match(m->ifnames[i], name);
	return listed != m->neg;
}

static bool ports_ok(const struct port_match *m, int proto, uint16_t port)
{
	if (m->any)
		return true;
	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].proto == proto && m->v[i].lo <= port && port <= m->v[i].hi)
			return true;
	return false;
}

bool ref_has_ports(int proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE;
}

static bool icmp_listed(const struct rule *r, int type)
{
	for (uint16_t i = 0; i < r->nicmp; i++)
		if (r->icmp_types[i] == type)
			return true;
	return !r->nicmp;
}

static bool l4_ok(const struct rule *r, const struct ref_pkt *k)
{
	bool whole = r->service.any && r->sport.any && !r->nicmp;
	int icmp = k->fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;

	if (r->proto < 0 && r->service.any && r->sport.any)
		return true;
	if (k->frag || (!ref_has_ports(k->proto) && k->proto != icmp))
		return r->proto == k->proto && whole;
	if (k->proto == icmp)
		return r->proto == icmp && r->service.any && r->sport.any && icmp_listed(r, k->icmp_type);
	if (r->proto >= 0 && r->proto != k->proto)
		return false;
	if (r->proto < 0) {
		/* Ports without proto: the packet's protocol must be listed. */
		bool listed = false;

		for (uint32_t i = 0; i < r->service.n; i++)
			listed |= r->service.v[i].proto == k->proto;
		for (uint32_t i = 0; i < r->sport.n; i++)
			listed |= r->sport.v[i].proto == k->proto;
		if (!listed)
			return false;
	}
	return ports_ok(&r->service, k->proto, k->dport) && ports_ok(&r->sport, k->proto, k->sport);
}

bool ref_rule_matches(const struct rule *r, const struct ref_pkt *k)
{
	return (!r->when.n || sched_open(&r->when, (int64_t)time(NULL))) && (r->families & k->fam) &&
	       iface_ok(&r->in, k->iif) && iface_ok(&r->out, k->oif) && addr_ok(&r->from, k, k->src) &&
	       addr_ok(&r->to, k, k->dst) && l4_ok(r, k) && (r->state & (1u << k->ct));
}

/* The policy's meaning: the first rule of the hook that matches, or -1. */
int ref_first_match(const struct plan_hook *h, const struct ref_pkt *k)
{
	for (uint32_t b = 0; b < h->nrules; b++)
		if (ref_rule_matches(h->rules[b], k))
			return (int)b;
	return -1;
}

/* v (n of *cap elements of size) with room for one more. */
static void *grow(void *v, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 64;
	if (!(v = realloc(v, *cap * size)))
		abort();
	return v;
}

static struct ref_bucket *bucket(struct ref_limits *lim, int hook, const struct rule *r, const struct ref_pkt *k)
{
	struct ref_bucket want = { .hook = hook, .rule = r, .left = r->limit.burst };

	if (r->limit.per_source) {
		want.fam = k->fam;
		memcpy(want.src, k->src, k->fam == POLICY_FAM_IPV4 ? 4 : 16);
	}
	for (uint32_t i = 0; i < lim->n; i++) {
		struct ref_bucket *b = &lim->v[i];

		if (b->hook == hook && b->rule == r && b->fam == want.fam && !memcmp(b->src, want.src, 16))
			return b;
	}
	lim->v = grow(lim->v, lim->n, &lim->cap, sizeof(*lim->v));
	lim->v[lim->n] = want;
	return &lim->v[lim->n++];
}

static bool same_tuple(const struct ref_conn *c, const struct ref_pkt *k)
{
	return c->fam == k->fam && c->proto == k->proto && c->sport == k->sport && c->dport == k->dport &&
	       !memcmp(c->src, k->src, 16) && !memcmp(c->dst, k->dst, 16);
}

void ref_conns_close(struct ref_limits *lim, const struct ref_pkt *k)
{
	for (uint32_t i = 0; i < lim->nconns; i++)
		if (same_tuple(&lim->conns[i], k)) {
			lim->conns[i] = lim->conns[--lim->nconns];
			return;
		}
}

/* Whether k's connection fits rule r's connection limit (counted if new). */
static bool conn_fits(struct ref_limits *lim, const struct rule *r, const struct ref_pkt *k)
{
	struct ref_conn c = { .rule = r, .fam = k->fam, .proto = k->proto, .sport = k->sport, .dport = k->dport };
	uint32_t held = 0;

	if (k->closes)
		return true;
	memcpy(c.src, k->src, 16);
	memcpy(c.dst, k->dst, 16);
	if (r->limit.per_source)
		memcpy(c.owner, k->src, 16);
	for (uint32_t i = 0; i < lim->nconns; i++) {
		const struct ref_conn *o = &lim->conns[i];

		if (same_tuple(o, k))
			return true; /* counted already */
		held += o->rule == r && (!r->limit.per_source || o->fam == k->fam) && !memcmp(o->owner, c.owner, 16);
	}
	if (held >= r->limit.conns)
		return false;
	lim->conns = grow(lim->conns, lim->nconns, &lim->conns_cap, sizeof(*lim->conns));
	lim->conns[lim->nconns++] = c;
	return true;
}

int ref_first_match_limited(const struct plan_hook *h, const struct ref_pkt *k, struct ref_limits *lim)
{
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];
		struct ref_bucket *bk;

		if (!ref_rule_matches(r, k))
			continue;
		if (r->limit.conns) {
			if (conn_fits(lim, r, k))
				return (int)b;
			if (k->hook >= 0 && k->hook < 3 && b < REF_OVER_RULES)
				lim->over[k->hook][b]++;
			continue;
		}
		if (!r->limit.rate.n)
			return (int)b;
		bk = bucket(lim, k->hook, r, k);
		if (bk->left) {
			bk->left--;
			return (int)b;
		}
		if (k->hook >= 0 && k->hook < 3 && b < REF_OVER_RULES)
			lim->over[k->hook][b]++;
	}
	return -1;
}

void ref_limits_free(struct ref_limits *lim)
{
	free(lim->v);
	free(lim->conns);
	memset(lim, 0, sizeof(*lim));
}

static const char *const v4_pool[] = { "192.0.2.0/24", "192.0.2.0/25",	  "192.0.2.128/26",
				       "192.0.2.7",    "198.51.100.0/24", "198.51.100.0/22",
				       "203.0.113.9",  "0.0.0.0/0",	  "192.0.2.5-192.0.2.130" };
static const char *const v6_pool[] = { "2001:db8::/32", "2001:db8:1::/48",
				       "2001:db8:1::5", "2001:db8:2::/64",
				       "::/0",		"2001:db8:1::3-2001:db8:1::9" };
static const char *const port_pool[] = { "tcp/80",  "tcp/1-1000",    "udp/53",	  "udp/50-60", "sctp/9",
					 "tcp/443", "udp/1000-2000", "tcp/65535", "udplite/53" };
static const char *const proto_pool[] = { "tcp", "udp", "icmp", "icmpv6", "sctp", "47", "udplite" };
static const char *const state_pool[] = { "new", "established", "related", "invalid", "untracked" };

/* A list of up to max entries of pool; addresses and interfaces one time
 * in four negated ("!a"). */
static void emit_list(FILE *f, const char *key, const char *const *pool, size_t n, uint32_t max)
{
	uint32_t k = 1 + ref_rnd(max);
	bool negatable = !strcmp(key, "in") || !strcmp(key, "out") || !strcmp(key, "from") || !strcmp(key, "to");
	const char *neg = negatable && !ref_rnd(4) ? "!" : "";

	fprintf(f, "    %s: [", key);
	for (uint32_t i = 0; i < k; i++)
		fprintf(f, "%s\"%s%s\"", i ? ", " : "", neg, pool[ref_rnd((uint32_t)n)]);
	fprintf(f, "]\n");
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const default_ifaces[] = { "lan0", "lan1", "wan0", "dmz0" };

static void policy_head(FILE *f, const struct ref_policy_opts *o)
{
	const char *const *ifs = o->ifaces ? o->ifaces : default_ifaces;

	fprintf(f, "version: 1\ninterfaces:\n  lan: [%s, %s]\n  wan: [%s]\n  dmz: [%s]\n", ifs[0], ifs[1], ifs[2],
		ifs[3]);
	if (!o->random_defaults) {
		fprintf(f, "hooks:\n  input: { default: accept }\n  forward: { default: drop }\n  output: { default: "
			   "accept }\n");
	} else {
		fprintf(f, "hooks:\n");
		for (int h = 0; h < 3; h++)
			fprintf(f, "  %s: { default: %s }\n",
				h == 0	 ? "input"
				: h == 1 ? "forward"
					 : "output",
				ref_rnd(2) ? "accept" : "drop");
		/* defrag: false turns conntrack off, and state: with it. */
		if (ref_rnd(3) == 0)
			fprintf(f, "options: { defrag: false }\n");
	}
	fprintf(f, "rules:\n");
}

char *ref_random_policy(const struct ref_policy_opts *o, size_t *len)
{
	const char *const *ifs = o->ifaces ? o->ifaces : default_ifaces;
	/* Groups by name, one interface by its own name (it is in group dmz),
	 * and a wildcard ("lan*": lan0 and lan1 of the default names). */
	const char *const iface_pool[] = { "lan", "wan", ifs[3], "lan*" };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	long state_ok;

	policy_head(f, o);
	fflush(f);
	state_ok = !strstr(buf, "defrag: false");
	for (uint32_t i = 0; i < o->nrules; i++) {
		int hk = (int)ref_rnd(3);
		int proto = ref_rnd(3) ? -1 : (int)ref_rnd((uint32_t)N(proto_pool));
		uint32_t icmp_kind = 2;

		fprintf(f, "  - name: %sr%u\n    hook: %s\n    action: %s\n", o->name_prefix ? o->name_prefix : "", i,
			hk == 0	  ? "input"
			: hk == 1 ? "forward"
				  : "[forward, output]",
			ref_rnd(2) ? "accept" : "drop");
		if (o->limits && !ref_rnd(3))
			fprintf(f, "    limit: { rate: 1/hour, burst: %u, per: %s }\n", 1 + ref_rnd(3),
				ref_rnd(2) ? "source" : "rule");
		if (!ref_rnd(3) && hk == 1)
			emit_list(f, "in", iface_pool, N(iface_pool), 2);
		if (!ref_rnd(3) && hk != 0)
			emit_list(f, "out", iface_pool, N(iface_pool), 2);
		if (!ref_rnd(2)) {
			bool v4 = ref_rnd(2);

			emit_list(f, "from", v4 ? v4_pool : v6_pool, v4 ? N(v4_pool) : N(v6_pool), 3);
		}
		if (!ref_rnd(3)) {
			bool v4 = ref_rnd(2);

			emit_list(f, "to", v4 ? v4_pool : v6_pool, v4 ? N(v4_pool) : N(v6_pool), 2);
		}
		if (proto >= 0)
			fprintf(f, "    proto: %s\n", proto_pool[proto]);
		if ((proto == 2 || proto == 3) && (icmp_kind = ref_rnd(3)) == 0)
			fprintf(f, "    icmp-type: %u\n", ref_rnd(2) ? (proto == 2 ? 8 : 128) : ref_rnd(4));
		else if ((proto == 2 || proto == 3) && icmp_kind == 1) /* a list (a repeat would warn) */
			fprintf(f, "    icmp-type: [%u, %u]\n", proto == 2 ? 8 : 128, ref_rnd(4));
		else if ((proto < 0 || proto == 0 || proto == 1 || proto == 4 || proto == 6) && !ref_rnd(2)) {
			const char *const *pool = port_pool;
			const char *tcp[] = { "tcp/80", "tcp/1-1000", "tcp/443" },
				   *udp[] = { "udp/53", "udp/50-60", "udp/1000-2000" };
			const char *sctp[] = { "sctp/9" }, *udplite[] = { "udplite/53", "udplite/1-1000" };

			if (proto == 0)
				emit_list(f, "service", tcp, 3, 2);
			else if (proto == 1)
				emit_list(f, "service", udp, 3, 2);
			else if (proto == 4)
				emit_list(f, "service", sctp, 1, 1);
			else if (proto == 6)
				emit_list(f, "service", udplite, 2, 2);
			else
				emit_list(f, "service", pool, N(port_pool), 3);
		}
		if (!ref_rnd(4) && proto < 0)
			emit_list(f, "source-service", port_pool, N(port_pool), 2);
		if (!ref_rnd(3) && state_ok)
			emit_list(f, "state", state_pool, N(state_pool), 2);
	}
	fclose(f);
	return buf;
}

void ref_random_addr_bytes(uint8_t fam, uint8_t *a)
{
	/* inside and just outside the pools' prefixes and ranges */
	static const char *const v4[] = { "192.0.2.1",	 "192.0.2.4",	 "192.0.2.7",	 "192.0.2.130",
					  "192.0.2.131", "192.0.2.200",	 "198.51.100.4", "198.51.101.1",
					  "203.0.113.9", "203.0.113.10", "10.1.1.1" };
	static const char *const v6[] = { "2001:db8::1",   "2001:db8:1::3", "2001:db8:1::5", "2001:db8:1::6",
					  "2001:db8:1::a", "2001:db8:2::1", "2001:db9::1",   "fe80::1" };

	memset(a, 0, fam == POLICY_FAM_IPV4 ? 4 : 16);
	if (fam == POLICY_FAM_IPV4)
		inet_pton(AF_INET, v4[ref_rnd(N(v4))], a);
	else
		inet_pton(AF_INET6, v6[ref_rnd(N(v6))], a);
}

void ref_random_pkt(struct ref_pkt *k)
{
	static const char *const ifs[] = { "lan0", "lan1", "wan0", "dmz0", "other0" };
	static const int protos[] = { IPPROTO_TCP,    IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_ICMP,
				      IPPROTO_ICMPV6, 47,	   50,		 IPPROTO_UDPLITE };
	static const uint16_t ports[] = { 0, 1, 9, 53, 55, 80, 443, 999, 1000, 1001, 1500, 2000, 65535 };

	memset(k, 0, sizeof(*k));
	k->hook = (int)ref_rnd(3);
	k->fam = ref_rnd(2) ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
	k->iif = k->hook == 2 ? NULL : ifs[ref_rnd(N(ifs))];
	k->oif = k->hook == 0 ? NULL : ifs[ref_rnd(N(ifs))];
	ref_random_addr_bytes(k->fam, k->src);
	ref_random_addr_bytes(k->fam, k->dst);
	k->proto = protos[ref_rnd(N(protos))];
	k->sport = ports[ref_rnd(N(ports))];
	k->dport = ports[ref_rnd(N(ports))];
	k->icmp_type = ref_rnd(2) ? (k->fam == POLICY_FAM_IPV4 ? 8 : 128) : (int)ref_rnd(4);
	k->frag = !ref_rnd(8);
	k->ct = (int)ref_rnd(NFB_CT_MAX);
}

/* ---- bytes ------------------------------------------------------------ */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The L4 key at off (datagram ends at end). */
static enum ref_verdict_kind parse_l4(const uint8_t *ip, size_t off, size_t end, struct ref_pkt *k)
{
	int icmp = k->fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;

	if (ref_has_ports(k->proto)) {
		if (off + 4 > end)
			return REF_MALFORMED;
		k->sport = get16(ip + off);
		k->dport = get16(ip + off + 2);
		if (k->proto == IPPROTO_TCP && off + 14 <= end)
			k->tcp_flags = ip[off + 13];
	} else if (k->proto == icmp) {
		if (off + 2 > end)
			return REF_MALFORMED;
		k->icmp_type = ip[off];
	}
	return REF_KEYED;
}

static enum ref_verdict_kind parse_v4(const uint8_t *ip, size_t len, struct ref_pkt *k)
{
	size_t hl, tot;

	if (len < 20 || ip[0] >> 4 != 4)
		return REF_MALFORMED;
	hl = (size_t)(ip[0] & 15) * 4;
	tot = get16(ip + 2);
	if (hl < 20 || tot < hl || tot > len)
		return REF_MALFORMED;
	memcpy(k->src, ip + 12, 4);
	memcpy(k->dst, ip + 16, 4);
	k->proto = ip[9];
	if (get16(ip + 6) & 0x3fff) { /* MF or an offset */
		k->frag = true;
		return REF_FRAGMENT;
	}
	return parse_l4(ip, hl, tot, k);
}

/* The chain as the classifier reads it (bpf/nfbox.h), with user space's one
 * walker: the classifier's fuzzer holds the two to the same key on every
 * packet it makes. */
static enum ref_verdict_kind parse_v6(const uint8_t *ip, size_t len, struct ref_pkt *k)
{
	struct ip6walk w;
	size_t end;

	if (len < 40 || ip[0] >> 4 != 6)
		return REF_MALFORMED;
	end = get16(ip + 4) ? get16(ip + 4) + 40u : len;
	if (end > len)
		return REF_MALFORMED;
	memcpy(k->src, ip + 8, 16);
	memcpy(k->dst, ip + 24, 16);
	if (nfb_v6_mapped(k->src) || nfb_v6_mapped(k->dst))
		return REF_MALFORMED; /* never on the wire (bpf/nfbox.h) */
	if (ip6_walk(ip, len, end, &w) != IP6W_OK)
		return REF_MALFORMED;
	k->proto = w.proto;
	if (w.frag) {
		k->frag = true;
		return REF_FRAGMENT;
	}
	return parse_l4(ip, w.l4off, end, k);
}

enum ref_verdict_kind ref_parse(const uint8_t *ip, size_t len, uint8_t fam, struct ref_pkt *k)
{
	k->fam = fam;
	k->frag = false;
	k->sport = k->dport = 0;
	k->icmp_type = -1;
	k->tcp_flags = 0;
	return fam == POLICY_FAM_IPV4 ? parse_v4(ip, len, k) : parse_v6(ip, len, k);
}

void ref_hexdump(FILE *f, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%02x%s", p[i], (i + 1) % 32 == 0 || i + 1 == len ? "\n" : (i + 1) % 4 == 0 ? " " : "");
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* An L4 header and a little payload at p; returns its length. */
static size_t random_l4(uint8_t *p, int proto, uint8_t fam)
{
	static const uint16_t ports[] = { 0, 1, 9, 53, 55, 80, 443, 999, 1000, 1001, 1500, 2000, 65535 };
	int icmp = fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	size_t n = proto == IPPROTO_TCP ? 20 : proto == IPPROTO_SCTP ? 12 : 8;

	if (ref_has_ports(proto)) {
		put16(p, ports[ref_rnd(N(ports))]);
		put16(p + 2, ports[ref_rnd(N(ports))]);
	} else if (proto == icmp) {
		p[0] = ref_rnd(2) ? (uint8_t)(fam == POLICY_FAM_IPV4 ? 8 : 128) : (uint8_t)ref_rnd(4);
		p[1] = (uint8_t)ref_rnd(3);
	} else {
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)ref_rnd(256);
	}
	if (proto == IPPROTO_TCP)
		p[12] = 5 << 4;
	n += ref_rnd(4) ? 0 : ref_rnd(64);
	return n;
}

static int random_proto(uint8_t fam)
{
	static const int other[] = { 47, 50, 59, 132, 0, 4, 41, 255 };
	uint32_t r = ref_rnd(100);

	if (r < 30)
		return IPPROTO_TCP;
	if (r < 60)
		return IPPROTO_UDP;
	if (r < 65)
		return IPPROTO_SCTP;
	if (r < 68)
		return IPPROTO_UDPLITE;
	if (r < 80)
		return fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	if (r < 83)
		return fam == POLICY_FAM_IPV4 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;
	return other[ref_rnd(N(other))];
}

static size_t random_v4(uint8_t *buf, size_t cap, int proto)
{
	size_t ihl = ref_rnd(4) ? 5 : 5 + ref_rnd(11), len;
	uint16_t frag = ref_rnd(2) ? 0x4000 : 0; /* DF */

	if (!ref_rnd(7))
		frag |= ref_rnd(2) ? 0x2000 | (uint16_t)ref_rnd(100) : (uint16_t)(1 + ref_rnd(8000));
	buf[0] = (uint8_t)(4 << 4 | ihl);
	put16(buf + 6, frag);
	buf[8] = 64;
	buf[9] = (uint8_t)proto;
	ref_random_addr_bytes(POLICY_FAM_IPV4, buf + 12);
	ref_random_addr_bytes(POLICY_FAM_IPV4, buf + 16);
	memset(buf + 20, 1, ihl * 4 - 20); /* NOP options */
	len = ihl * 4 + random_l4(buf + ihl * 4, proto, POLICY_FAM_IPV4);
	put16(buf + 2, (unsigned)len);
	return len < cap ? len : cap;
}

/* How many extension headers: mostly none or a few, sometimes hundreds. */
static uint32_t random_chain_length(void)
{
	uint32_t r = ref_rnd(100);

	return r < 45 ? 0 : r < 85 ? 1 + ref_rnd(12) : r < 97 ? 13 + ref_rnd(120) : 133 + ref_rnd(200);
}

/* One extension header at buf + off of type t, next header nh; its length. */
static size_t put_ext(uint8_t *buf, size_t off, uint8_t t, uint8_t nh)
{
	uint8_t len = ref_rnd(3) ? 0 : (uint8_t)ref_rnd(3);

	buf[off] = nh;
	if (t == 44) {
		put16(buf + off + 2, ref_rnd(4)	  ? 0
				     : ref_rnd(2) ? 1
						  : (uint16_t)((1 + ref_rnd(500)) << 3 | ref_rnd(2)));
		return 8;
	}
	buf[off + 1] = t == 51 ? (uint8_t)(len * 2 + 0) : len;
	return t == 51 ? ((size_t)buf[off + 1] + 2) * 4 : ((size_t)len + 1) * 8;
}

/* An IPv6 address of the pools, or now and then one of the IPv4 pool's
 * mapped (::ffff:a.b.c.d), which no packet may carry. */
static void random_v6_addr(uint8_t *a)
{
	if (ref_rnd(12)) {
		ref_random_addr_bytes(POLICY_FAM_IPV6, a);
		return;
	}
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	ref_random_addr_bytes(POLICY_FAM_IPV4, a + 12);
}

static size_t random_v6(uint8_t *buf, size_t cap, int proto)
{
	static const uint8_t types[] = { 0, 43, 60, 60, 60, 51, 44, 135, 139, 140 };
	uint32_t n = random_chain_length();
	size_t off = 40, len;
	uint8_t *nhp = buf + 6;

	buf[0] = 6 << 4;
	buf[7] = 64;
	random_v6_addr(buf + 8);
	random_v6_addr(buf + 24);
	for (uint32_t i = 0; i < n && off + 64 + 80 < cap; i++) {
		uint8_t t = types[ref_rnd(N(types))];

		*nhp = t;
		nhp = buf + off;
		off += put_ext(buf, off, t, 0);
	}
	*nhp = (uint8_t)proto;
	len = off + random_l4(buf + off, proto, POLICY_FAM_IPV6);
	if (len > cap)
		len = cap;
	put16(buf + 4, (unsigned)(len - 40));
	return len;
}

/* Truncations and length fields that lie, now and then. Never below the
 * fixed IP header: the kernel drops those before any hook (and
 * BPF_PROG_TEST_RUN refuses them). */
static size_t damage(uint8_t *buf, size_t len, uint8_t fam)
{
	size_t min = fam == POLICY_FAM_IPV4 ? 20 : 40;
	uint32_t r = ref_rnd(100);

	if (len <= min)
		return len;
	if (r < 8)
		return min + ref_rnd((uint32_t)(len - min)); /* cut short (length field unchanged) */
	if (r < 12) {
		size_t cut = min + ref_rnd((uint32_t)(len - min)); /* cut short, length field follows */

		if (fam == POLICY_FAM_IPV4 && cut >= 4)
			put16(buf + 2, (unsigned)cut);
		else if (fam == POLICY_FAM_IPV6 && cut >= 40)
			put16(buf + 4, (unsigned)(cut - 40));
		return cut;
	}
	if (r < 15) {
		int delta = (int)ref_rnd(9) - 4; /* the length field lies a little */
		size_t at = fam == POLICY_FAM_IPV4 ? 2 : 4;

		put16(buf + at, (unsigned)((int)get16(buf + at) + delta) & 0xffff);
	}
	return len;
}

size_t ref_random_bytes(uint8_t fam, uint8_t *buf, size_t cap)
{
	int proto = random_proto(fam);
	size_t len;

	memset(buf, 0, cap);
	len = fam == POLICY_FAM_IPV4 ? random_v4(buf, cap, proto) : random_v6(buf, cap, proto);
	return damage(buf, len, fam);
}
