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
#include "backend/bpf/compile/plan.h"
#include "tests/lib/ref.h"

/* As the engine resolves an interface (gen.c): its entry, else the miss vector. */
static uint32_t lookup_iface(const struct plan_hook *h, uint8_t dir, const char *name)
{
	int64_t j = name ? plan_iface_find(h, dir, name) : -1;

	return j >= 0 ? h->ifaces[j].vec : h->miss[dir ? NFB_F_OIF : NFB_F_IIF];
}

static bool prefix_has(const struct prefix *p, uint8_t fam, const uint8_t *a)
{
	unsigned full = p->plen / 8, rest = p->plen % 8;

	if (p->family != fam || memcmp(p->addr, a, full))
		return false;
	return !rest || ((p->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static uint32_t lookup_lpm(const struct plan_hook *h, const struct ref_pkt *k, uint8_t dir)
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

static uint32_t lookup_seg(const struct plan_seg *s, uint32_t n, bool ports, uint8_t dir, uint8_t cls, uint32_t value,
			   uint32_t fallback)
{
	for (uint32_t i = 0; i < n; i++)
		if ((!ports || s[i].dir == dir) && s[i].cls == cls && s[i].lo <= value && value <= s[i].hi)
			return s[i].vec;
	return fallback;
}

static uint8_t pclass(int proto)
{
	return proto == IPPROTO_TCP    ? NFB_PC_TCP
	       : proto == IPPROTO_UDP  ? NFB_PC_UDP
	       : proto == IPPROTO_SCTP ? NFB_PC_SCTP
				       : NFB_PC_UDPLITE;
}

/* The plan's answer, computed as the BPF program does. */
static int through_plan(const struct plan_hook *h, const struct plan_blob *blob, int hk, const struct ref_pkt *k)
{
	int icmp = k->fam == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	const uint64_t *vec[NFB_F_MAX];
	uint32_t ids[NFB_F_MAX], nf = 0;

	ids[NFB_F_IIF] = lookup_iface(h, 0, k->iif);
	ids[NFB_F_OIF] = lookup_iface(h, 1, k->oif);
	ids[NFB_F_SRC] = lookup_lpm(h, k, 0);
	ids[NFB_F_DST] = lookup_lpm(h, k, 1);
	if (k->frag)
		ids[NFB_F_L4] =
			lookup_seg(h->misc, h->nmisc, false, 0, NFB_MC_FRAG, (uint32_t)k->proto, h->miss[NFB_F_L4]);
	else if (ref_has_ports(k->proto))
		ids[NFB_F_L4] = lookup_seg(h->ports, h->nports, true, 1, pclass(k->proto), k->dport, h->miss[NFB_F_L4]);
	else if (k->proto == icmp)
		ids[NFB_F_L4] =
			lookup_seg(h->misc, h->nmisc, false, 0, icmp == IPPROTO_ICMP ? NFB_MC_ICMP : NFB_MC_ICMPV6,
				   (uint32_t)k->icmp_type, h->miss[NFB_F_L4]);
	else
		ids[NFB_F_L4] =
			lookup_seg(h->misc, h->nmisc, false, 0, NFB_MC_PROTO, (uint32_t)k->proto, h->miss[NFB_F_L4]);
	ids[NFB_F_SPORT] = !k->frag && ref_has_ports(k->proto)
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

static void differential(uint32_t policies, uint32_t nrules, uint32_t packets)
{
	for (uint32_t it = 0; it < policies; it++) {
		size_t len;
		/* limits (every other policy) do not change what a rule matches:
		 * the vectors are the same, the classifier takes the limit after */
		char *text = ref_random_policy(&(struct ref_policy_opts){ .nrules = nrules, .limits = it % 2 }, &len);
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
			struct ref_pkt k;
			int want, got;

			ref_random_pkt(&k);
			want = ref_first_match(&pl->hook[k.hook], &k);
			got = through_plan(&pl->hook[k.hook], &blob, k.hook, &k);
			if (want != got) {
				check_fail_at(__FILE__, __LINE__,
					      "policy %u packet %u hook %d fam %u proto %d sport %u dport %u frag %d "
					      "ct %d iif %s oif %s: rule %d expected, plan says %d",
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
	struct ref_pkt k = { .hook = 1, .fam = POLICY_FAM_IPV4, .proto = IPPROTO_TCP, .ct = NFB_CT_NEW };

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
		CHECK_EQ_INT(ref_first_match(&pl->hook[1], &k), 9999);
		inet_pton(AF_INET, "192.0.2.16", k.src);
		CHECK_EQ_INT(through_plan(&pl->hook[1], &blob, 1, &k), -1);
		inet_pton(AF_INET, "192.0.2.15", k.src);
		k.dport = 1000 + 9487; /* 9487 % 256 = 15 */
		CHECK_EQ_INT(through_plan(&pl->hook[1], &blob, 1, &k), 9487);
		CHECK_EQ_INT(ref_first_match(&pl->hook[1], &k), 9487);
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
	/* past the summary's words (4 x 64): nothing, not what lies after it */
	enc[4] = ~0ull;
	CHECK(bitvec_encoded_word(enc, 4, 4 * 64) == 0);
	CHECK(bitvec_encoded_word(enc, 4, 4 * 64 + 63) == 0);
	CHECK_EQ_INT(bitvec_encode(w, 200, enc, 5), -ENOSPC);
}

/* An interface takes the entry of its own name, else of the longest
 * wildcard it falls under, whichever order the rules name them in. */
static void longest_wildcard(void)
{
	static const char *const orders[] = { "[\"wg1*\", \"wg*\"]", "[\"wg*\", \"wg1*\"]" };

	for (int o = 0; o < 2; o++) {
		char yaml[512];
		struct diags d;
		struct policy *p = NULL;
		struct plan *pl = NULL;
		const struct plan_hook *h;
		int64_t j;

		snprintf(yaml, sizeof(yaml),
			 "version: 1\nhooks: { forward: { default: drop } }\nrules:\n"
			 "  - { name: a, in: %s, service: tcp/1, action: accept }\n"
			 "  - { name: b, in: wg7, service: tcp/2, action: accept }\n",
			 orders[o]);
		diags_init(&d);
		if (policy_load_buffer("wild.yaml", yaml, strlen(yaml), &d, &p) < 0 || plan_compile(p, &pl) < 0) {
			CHECK(0);
		} else {
			h = &pl->hook[NFB_HOOK_FORWARD];
			j = plan_iface_find(h, 0, "wg10");
			CHECK(j >= 0 && !strcmp(h->ifaces[j].ifname, "wg1*"));
			j = plan_iface_find(h, 0, "wg20");
			CHECK(j >= 0 && !strcmp(h->ifaces[j].ifname, "wg*"));
			j = plan_iface_find(h, 0, "wg7");
			CHECK(j >= 0 && !strcmp(h->ifaces[j].ifname, "wg7"));
			CHECK_EQ_INT(plan_iface_find(h, 0, "eth0"), -1);
		}
		plan_free(pl);
		policy_free(p);
		diags_free(&d);
	}
}

int main(void)
{
	check_begin("iface-longest-wildcard");
	longest_wildcard();
	check_end();
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
