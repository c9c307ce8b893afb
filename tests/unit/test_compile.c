/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Differential test of the compiler and encoder: random policies and
 * random packets; the first matching rule found by walking the rules one by
 * one (the policy's meaning) must equal the one found through the plan's
 * lookup tables and the encoded bit vectors, using the same steps as the
 * BPF classifier (summary AND, then word AND, first set bit).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "engine/compile/plan.h"

struct pkt {
	int hook;
	uint8_t fam;
	const char *iif, *oif; /* NULL: none */
	uint8_t src[16], dst[16];
	int proto;
	uint16_t sport, dport;
	int icmp_type;
	bool frag;
	int ct; /* NFB_CT_* */
};

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
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

static bool addr_ok(const struct addr_match *m, const struct pkt *k, const uint8_t *a)
{
	if (m->any)
		return true;
	for (uint32_t i = 0; i < m->n; i++)
		if (prefix_has(&m->v[i], k->fam, a))
			return true;
	return false;
}

static bool iface_ok(const struct iface_match *m, const char *name)
{
	if (m->any)
		return true;
	for (uint32_t i = 0; name && i < m->n; i++)
		if (!strcmp(m->ifnames[i], name))
			return true;
	return false;
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

static bool has_ports(int proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP;
}

static bool l4_ok(const struct rule *r, const struct pkt *k)
{
	bool whole = r->service.any && r->sport.any && r->icmp_type < 0;
	int icmp = k->fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;

	if (r->proto < 0 && r->service.any && r->sport.any)
		return true;
	if (k->frag || (!has_ports(k->proto) && k->proto != icmp))
		return r->proto == k->proto && whole;
	if (k->proto == icmp)
		return r->proto == icmp && r->service.any && r->sport.any &&
		       (r->icmp_type < 0 || r->icmp_type == k->icmp_type);
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

/* The policy's meaning: the first rule of the hook that matches, or -1. */
static int reference(const struct plan_hook *h, const struct pkt *k)
{
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];

		if (!(r->families & k->fam) || !iface_ok(&r->in, k->iif) || !iface_ok(&r->out, k->oif) ||
		    !addr_ok(&r->from, k, k->src) || !addr_ok(&r->to, k, k->dst) || !l4_ok(r, k) ||
		    !(r->state & (1u << k->ct)))
			continue;
		return (int)b;
	}
	return -1;
}

static uint32_t lookup_iface(const struct plan_hook *h, uint8_t dir, const char *name)
{
	for (uint32_t i = 0; name && i < h->nifaces; i++)
		if (h->ifaces[i].dir == dir && !strcmp(h->ifaces[i].ifname, name))
			return h->ifaces[i].vec;
	return h->miss[dir ? NFB_F_OIF : NFB_F_IIF];
}

static uint32_t lookup_lpm(const struct plan_hook *h, const struct pkt *k, uint8_t dir)
{
	int fi = k->fam == POLICY_FAM_IPV4 ? 0 : 1;
	const uint8_t *a = dir ? k->dst : k->src;
	int best = -1;

	for (uint32_t i = 0; i < h->nlpm[fi]; i++)
		if (h->lpm[fi][i].dir == dir && prefix_has(&h->lpm[fi][i].pfx, k->fam, a) &&
		    (best < 0 || h->lpm[fi][i].pfx.plen > h->lpm[fi][best].pfx.plen))
			best = (int)i;
	return best >= 0 ? h->lpm[fi][best].vec : h->miss[dir ? NFB_F_DST : NFB_F_SRC];
}

static uint32_t lookup_seg(const struct plan_seg *s, uint32_t n, bool ports, uint8_t dir, uint8_t cls,
			   uint32_t value, uint32_t fallback)
{
	for (uint32_t i = 0; i < n; i++)
		if ((!ports || s[i].dir == dir) && s[i].cls == cls && s[i].lo <= value && value <= s[i].hi)
			return s[i].vec;
	return fallback;
}

static uint8_t pclass(int proto)
{
	return proto == IPPROTO_TCP ? NFB_PC_TCP : proto == IPPROTO_UDP ? NFB_PC_UDP : NFB_PC_SCTP;
}

/* The plan's answer, computed as the BPF program does. */
static int through_plan(const struct plan_hook *h, const struct plan_blob *blob, int hk, const struct pkt *k)
{
	int icmp = k->fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	const uint64_t *vec[NFB_F_MAX];
	uint32_t ids[NFB_F_MAX], nf = 0;

	ids[NFB_F_IIF] = lookup_iface(h, 0, k->iif);
	ids[NFB_F_OIF] = lookup_iface(h, 1, k->oif);
	ids[NFB_F_SRC] = lookup_lpm(h, k, 0);
	ids[NFB_F_DST] = lookup_lpm(h, k, 1);
	if (k->frag)
		ids[NFB_F_L4] = lookup_seg(h->misc, h->nmisc, false, 0, NFB_MC_FRAG, (uint32_t)k->proto, h->miss[NFB_F_L4]);
	else if (has_ports(k->proto))
		ids[NFB_F_L4] = lookup_seg(h->ports, h->nports, true, 1, pclass(k->proto), k->dport, h->miss[NFB_F_L4]);
	else if (k->proto == icmp)
		ids[NFB_F_L4] = lookup_seg(h->misc, h->nmisc, false, 0,
					   icmp == IPPROTO_ICMP ? NFB_MC_ICMP : NFB_MC_ICMPV6,
					   (uint32_t)k->icmp_type, h->miss[NFB_F_L4]);
	else
		ids[NFB_F_L4] = lookup_seg(h->misc, h->nmisc, false, 0, NFB_MC_PROTO, (uint32_t)k->proto, h->miss[NFB_F_L4]);
	ids[NFB_F_SPORT] = !k->frag && has_ports(k->proto)
				   ? lookup_seg(h->ports, h->nports, true, 0, pclass(k->proto), k->sport, h->sport_none)
				   : h->sport_none;
	ids[NFB_F_CT] = h->ct[k->ct];
	for (int f = 0; f < NFB_F_MAX; f++) {
		uint32_t loc;

		if (!(h->fields & (1u << f)))
			continue;
		loc = blob->loc[hk][ids[f]];
		vec[nf++] = blob->words + (size_t)(loc >> NFB_LOC_SHIFT) * NFB_CHUNK_WORDS + (loc & NFB_LOC_OFF_MASK);
	}
	if (!nf)
		return h->nrules ? 0 : -1;
	for (uint32_t s = 0; s < h->nsum; s++) {
		uint64_t a = ~UINT64_C(0);

		for (uint32_t f = 0; f < nf; f++)
			a &= vec[f][s];
		while (a) {
			uint32_t w = s * 64 + (uint32_t)__builtin_ctzll(a);
			uint64_t word = ~UINT64_C(0);

			for (uint32_t f = 0; f < nf; f++)
				word &= bitvec_encoded_word(vec[f], h->nsum, w);
			if (word)
				return (int)(w * 64 + (uint32_t)__builtin_ctzll(word));
			a &= a - 1;
		}
	}
	return -1;
}

static const char *const v4_pool[] = { "192.0.2.0/24", "192.0.2.0/25", "192.0.2.128/26", "192.0.2.7",
				       "198.51.100.0/24", "198.51.100.0/22", "203.0.113.9", "0.0.0.0/0" };
static const char *const v6_pool[] = { "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1::5", "2001:db8:2::/64",
				       "::/0" };
static const char *const port_pool[] = { "tcp/80", "tcp/1-1000", "udp/53", "udp/50-60", "sctp/9",
					 "tcp/443", "udp/1000-2000", "tcp/65535" };
static const char *const proto_pool[] = { "tcp", "udp", "icmp", "icmpv6", "sctp", "47" };
static const char *const state_pool[] = { "new", "established", "related", "invalid", "untracked" };
static const char *const iface_pool[] = { "lan", "wan", "dmz0" };

static void emit_list(FILE *f, const char *key, const char *const *pool, size_t n, uint32_t max)
{
	uint32_t k = 1 + rnd(max);

	fprintf(f, "    %s: [", key);
	for (uint32_t i = 0; i < k; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", pool[rnd((uint32_t)n)]);
	fprintf(f, "]\n");
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char *random_policy(uint32_t nrules, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	fprintf(f, "version: 1\ninterfaces:\n  lan: [lan0, lan1]\n  wan: [wan0]\n  dmz: [dmz0]\n"
		   "hooks:\n  input: { default: accept }\n  forward: { default: drop }\n  output: { default: accept }\nrules:\n");
	for (uint32_t i = 0; i < nrules; i++) {
		int hk = (int)rnd(3);
		int proto = rnd(3) ? -1 : (int)rnd((uint32_t)N(proto_pool));

		fprintf(f, "  - name: r%u\n    hook: %s\n    action: %s\n", i,
			hk == 0 ? "input" : hk == 1 ? "forward" : "[forward, output]", rnd(2) ? "accept" : "drop");
		if (!rnd(3) && hk == 1)
			emit_list(f, "in", iface_pool, N(iface_pool), 2);
		if (!rnd(3) && hk != 0)
			emit_list(f, "out", iface_pool, N(iface_pool), 2);
		if (!rnd(2)) {
			bool v4 = rnd(2);

			emit_list(f, "from", v4 ? v4_pool : v6_pool, v4 ? N(v4_pool) : N(v6_pool), 3);
		}
		if (!rnd(3)) {
			bool v4 = rnd(2);

			emit_list(f, "to", v4 ? v4_pool : v6_pool, v4 ? N(v4_pool) : N(v6_pool), 2);
		}
		if (proto >= 0)
			fprintf(f, "    proto: %s\n", proto_pool[proto]);
		if ((proto == 2 || proto == 3) && rnd(2))
			fprintf(f, "    icmp-type: %u\n", rnd(2) ? (proto == 2 ? 8 : 128) : rnd(4));
		else if ((proto < 0 || proto == 0 || proto == 1 || proto == 4) && !rnd(2)) {
			const char *const *pool = port_pool;
			const char *tcp[] = { "tcp/80", "tcp/1-1000", "tcp/443" }, *udp[] = { "udp/53", "udp/50-60", "udp/1000-2000" };
			const char *sctp[] = { "sctp/9" };

			if (proto == 0)
				emit_list(f, "service", tcp, 3, 2);
			else if (proto == 1)
				emit_list(f, "service", udp, 3, 2);
			else if (proto == 4)
				emit_list(f, "service", sctp, 1, 1);
			else
				emit_list(f, "service", pool, N(port_pool), 3);
		}
		if (!rnd(4) && proto < 0)
			emit_list(f, "source-service", port_pool, N(port_pool), 2);
		if (!rnd(3))
			emit_list(f, "state", state_pool, N(state_pool), 2);
	}
	fclose(f);
	return buf;
}

static void random_addr(uint8_t fam, uint8_t *a)
{
	static const char *const v4[] = { "192.0.2.1", "192.0.2.7", "192.0.2.130", "192.0.2.200", "198.51.100.4",
					  "198.51.101.1", "203.0.113.9", "203.0.113.10", "10.1.1.1" };
	static const char *const v6[] = { "2001:db8::1", "2001:db8:1::5", "2001:db8:1::6", "2001:db8:2::1",
					  "2001:db9::1", "fe80::1" };

	memset(a, 0, 16);
	if (fam == POLICY_FAM_IPV4)
		inet_pton(AF_INET, v4[rnd(N(v4))], a);
	else
		inet_pton(AF_INET6, v6[rnd(N(v6))], a);
}

static void random_pkt(struct pkt *k)
{
	static const char *const ifs[] = { "lan0", "lan1", "wan0", "dmz0", "other0" };
	static const int protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_ICMP, IPPROTO_ICMPV6, 47, 50 };
	static const uint16_t ports[] = { 0, 1, 9, 53, 55, 80, 443, 999, 1000, 1001, 1500, 2000, 65535 };

	memset(k, 0, sizeof(*k));
	k->hook = (int)rnd(3);
	k->fam = rnd(2) ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
	k->iif = k->hook == 2 ? NULL : ifs[rnd(N(ifs))];
	k->oif = k->hook == 0 ? NULL : ifs[rnd(N(ifs))];
	random_addr(k->fam, k->src);
	random_addr(k->fam, k->dst);
	k->proto = protos[rnd(N(protos))];
	k->sport = ports[rnd(N(ports))];
	k->dport = ports[rnd(N(ports))];
	k->icmp_type = rnd(2) ? (k->fam == POLICY_FAM_IPV4 ? 8 : 128) : (int)rnd(4);
	k->frag = !rnd(8);
	k->ct = (int)rnd(NFB_CT_MAX);
}

static void differential(uint32_t policies, uint32_t nrules, uint32_t packets)
{
	for (uint32_t it = 0; it < policies; it++) {
		size_t len;
		char *text = random_policy(nrules, &len);
		struct policy *p = NULL;
		struct plan *pl = NULL;
		struct plan_blob blob;
		struct diags d;

		diags_init(&d);
		if (policy_load_buffer("random.yaml", text, len, &d, &p) < 0) {
			diags_print(&d, stdout, false);
			check_fail_at(__FILE__, __LINE__, "random policy %u did not load", it);
			fputs(text, stdout);
			free(text);
			diags_free(&d);
			return;
		}
		CHECK_EQ_INT(plan_compile(p, &pl), 0);
		CHECK_EQ_INT(plan_encode(pl, &blob), 0);
		for (uint32_t i = 0; pl && i < packets; i++) {
			struct pkt k;
			int want, got;

			random_pkt(&k);
			want = reference(&pl->hook[k.hook], &k);
			got = through_plan(&pl->hook[k.hook], &blob, k.hook, &k);
			if (want != got) {
				check_fail_at(__FILE__, __LINE__,
					      "policy %u packet %u hook %d fam %u proto %d sport %u dport %u frag %d ct %d iif %s oif %s: rule %d expected, plan says %d",
					      it, i, k.hook, k.fam, k.proto, k.sport, k.dport, k.frag, k.ct,
					      k.iif ? k.iif : "-", k.oif ? k.oif : "-", want, got);
				fputs(text, stdout);
				it = policies;
				break;
			}
		}
		plan_blob_free(&blob);
		plan_free(pl);
		policy_free(p);
		diags_free(&d);
		free(text);
	}
}

/* 10,000 rules, one port each: the match is in the last summary word. */
static void many_rules(void)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	struct policy *p = NULL;
	struct plan *pl = NULL;
	struct plan_blob blob;
	struct diags d;
	struct pkt k = { .hook = 1, .fam = POLICY_FAM_IPV4, .proto = IPPROTO_TCP, .ct = NFB_CT_NEW };

	fprintf(f, "version: 1\nhooks: { forward: { default: drop } }\nrules:\n");
	for (int i = 0; i < 10000; i++)
		fprintf(f, "  - { name: r%d, from: 192.0.2.%d, service: tcp/%d, action: accept }\n", i, i % 256,
			1000 + i);
	fclose(f);
	diags_init(&d);
	CHECK_EQ_INT(policy_load_buffer("many.yaml", buf, len, &d, &p), 0);
	CHECK_EQ_INT(plan_compile(p, &pl), 0);
	CHECK_EQ_INT(plan_encode(pl, &blob), 0);
	if (pl) {
		CHECK_EQ_INT(pl->hook[1].nsum, 3);
		inet_pton(AF_INET, "192.0.2.15", k.src);
		k.dport = 1000 + 9999;
		CHECK_EQ_INT(through_plan(&pl->hook[1], &blob, 1, &k), 9999); /* 9999 % 256 = 15 */
		CHECK_EQ_INT(reference(&pl->hook[1], &k), 9999);
		inet_pton(AF_INET, "192.0.2.16", k.src);
		CHECK_EQ_INT(through_plan(&pl->hook[1], &blob, 1, &k), -1);
		inet_pton(AF_INET, "192.0.2.15", k.src);
		k.dport = 1000 + 9487; /* 9487 % 256 = 15 */
		CHECK_EQ_INT(through_plan(&pl->hook[1], &blob, 1, &k), 9487);
		CHECK_EQ_INT(reference(&pl->hook[1], &k), 9487);
		/* Sharing: 10,000 distinct ports, but far fewer distinct vectors. */
		CHECK(blob.unique < 10000 + 256 + 64);
	}
	plan_blob_free(&blob);
	plan_free(pl);
	policy_free(p);
	diags_free(&d);
	free(buf);
}

static void encoder_roundtrip(void)
{
	uint64_t w[200] = { 0 }, enc[2 * 4 + 200];
	int n;

	w[0] = 1;
	w[63] = 0x8000000000000000ull;
	w[64] = 5;
	w[199] = 42;
	n = bitvec_encode(w, 200, enc, sizeof(enc) / sizeof(enc[0]));
	CHECK_EQ_INT(n, 2 * 4 + 4);
	for (uint32_t i = 0; i < 200; i++)
		CHECK(bitvec_encoded_word(enc, 4, i) == w[i]);
	CHECK_EQ_INT(bitvec_encode(w, 200, enc, 5), -ENOSPC);
}

int main(void)
{
	check_begin("encoder-roundtrip");
	encoder_roundtrip();
	check_end();
	check_begin("differential-small");
	differential(300, 6, 400);
	check_end();
	check_begin("differential-large");
	differential(40, 150, 2000);
	check_end();
	check_begin("many-rules-summary");
	many_rules();
	check_end();
	CHECK_EXIT();
}
