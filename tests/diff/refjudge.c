/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reference's verdicts for the three-way differential test
 * (tests/netns/test_backend_diff.sh, tests/diff/diffgen.py): what the policy language says each
 * packet gets, by walking the policy's rules one by one (tests/lib/ref.c),
 * with none of either backend's machinery; not even the compiler's order
 * of rules (the policy's own order is walked).
 *
 *   refjudge POLICY JUDGE [DYNAMIC]
 *
 * JUDGE has a line per packet as a hook sees it:
 *     PROBE HOOK IIF OIF CT HEX
 * HOOK input|forward|output, IIF and OIF an interface name or "-", CT the
 * packet's conntrack state (new, established, related, invalid,
 * untracked; or "tracked:STATE": STATE if the first packet of its
 * connection (either way) was accepted as new, else invalid, as conntrack
 * forgets a connection whose first packet was dropped), HEX the IP packet
 * from its first byte (with
 * defrag on, the reassembled datagram). DYNAMIC has a line "SET PREFIX" per entry of a
 * dynamic set. For each packet it prints what counts it, in the words of
 * `nfbox stats --json`:
 *     PROBE HOOK RULE VERDICT     (RULE a rule's name, "(default)",
 *                                  "(established)", "(unreassembled)" or
 *                                  "(malformed)")
 *     PROBE HOOK over RULE        a rule over its limit that the packet
 *                                  went past (its over_limit counter)
 * Rate limits are those ref.c models: rates of 1/hour, a bucket of burst
 * tokens per rule or per source; and connection limits, whose connections
 * count until a TCP reset (a packet of a connection accepted as new, with
 * RST set) closes them.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "bpf/nfbox.h"
#include "policy/policy.h"
#include "tests/lib/ref.h"

static const struct policy *pol;

/* The dynamic sets' entries (DYNAMIC). */
static struct dyn_entry {
	uint32_t set;
	struct prefix pfx;
} *dyn;
static size_t ndyn;

static bool prefix_holds(const struct prefix *p, uint8_t fam, const uint8_t *a)
{
	unsigned full = p->plen / 8, rest = p->plen % 8;

	if (p->family != fam || memcmp(p->addr, a, full))
		return false;
	return !rest || ((p->addr[full] ^ a[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

static bool dyn_holds(uint32_t set, uint8_t fam, const uint8_t *a)
{
	for (size_t i = 0; i < ndyn; i++)
		if (dyn[i].set == set && prefix_holds(&dyn[i].pfx, fam, a))
			return true;
	return false;
}

static int load_dynamic(const char *path)
{
	char line[256], name[128], text[128];
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct diags d;
		struct policy *one = NULL;
		char yaml[512];
		uint32_t set = UINT32_MAX;

		if (sscanf(line, "%127s %127s", name, text) != 2)
			continue;
		for (uint32_t i = 0; i < pol->nsets; i++)
			if (!strcmp(pol->sets[i].name, name))
				set = i;
		if (set == UINT32_MAX) {
			fprintf(stderr, "refjudge: no set '%s'\n", name);
			fclose(f);
			return -EINVAL;
		}
		/* The prefix as the policy language reads it (the loader's parser). */
		snprintf(yaml, sizeof(yaml), "version: 1\nsets: { s: [\"%s\"] }\n", text);
		diags_init(&d);
		if (policy_load_buffer("dyn.yaml", yaml, strlen(yaml), &d, &one) < 0 || one->sets[0].n != 1) {
			diags_print(&d, stderr, false);
			fclose(f);
			return -EINVAL;
		}
		dyn = realloc(dyn, (ndyn + 1) * sizeof(*dyn));
		if (!dyn)
			abort();
		dyn[ndyn].set = set;
		dyn[ndyn++].pfx = one->sets[0].v[0];
		policy_free(one);
		diags_free(&d);
	}
	fclose(f);
	return 0;
}

/* The connections whose first packet was accepted as new: what conntrack
 * holds for the probes, until a reset ends one. */
static struct ref_pkt *tracked;
static size_t ntracked, tracked_cap;

/* The same connection, b either way. */
static bool same_conn(const struct ref_pkt *a, const struct ref_pkt *b)
{
	if (a->fam != b->fam || a->proto != b->proto)
		return false;
	return (a->sport == b->sport && a->dport == b->dport && !memcmp(a->src, b->src, 16) &&
		!memcmp(a->dst, b->dst, 16)) ||
	       (a->sport == b->dport && a->dport == b->sport && !memcmp(a->src, b->dst, 16) &&
		!memcmp(a->dst, b->src, 16));
}

static ssize_t tracked_find(const struct ref_pkt *k)
{
	for (size_t i = 0; i < ntracked; i++)
		if (same_conn(&tracked[i], k))
			return (ssize_t)i;
	return -1;
}

static void tracked_add(const struct ref_pkt *k)
{
	if (tracked_find(k) >= 0)
		return;
	if (ntracked == tracked_cap) {
		tracked_cap = tracked_cap ? 2 * tracked_cap : 64;
		if (!(tracked = realloc(tracked, tracked_cap * sizeof(*tracked))))
			abort();
	}
	tracked[ntracked++] = *k;
}

static void tracked_forget(const struct ref_pkt *k)
{
	ssize_t i = tracked_find(k);

	if (i >= 0)
		tracked[i] = tracked[--ntracked];
}

static int hook_of(const char *s)
{
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		if (!strcmp(policy_hook_names[h], s))
			return h;
	return -1;
}

static int ct_of(const char *s)
{
	for (int c = 0; c < POLICY_CT_STATES; c++)
		if (!strcmp(policy_ct_names[c], s))
			return c;
	return -1;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	while (n < cap && sscanf(s + 2 * n, "%2x", &v) == 1)
		out[n++] = (uint8_t)v;
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t pkt[70000];
	static char line[200000];
	struct plan_hook hooks[POLICY_HOOK_MAX] = { 0 };
	struct ref_limits lim = { 0 };
	struct policy *p = NULL;
	struct diags d;
	FILE *in;

	if (argc < 3) {
		fprintf(stderr, "usage: refjudge POLICY JUDGE [DYNAMIC]\n");
		return 2;
	}
	diags_init(&d);
	if (policy_load(argv[1], &d, &p) < 0) {
		diags_print(&d, stderr, false);
		return 1;
	}
	pol = p;
	ref_dyn_holds = dyn_holds;
	if (argc > 3 && load_dynamic(argv[3]) < 0)
		return 1;
	/* Each hook's rules in the policy's order. */
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		hooks[h].rules = calloc(p->nrules + 1, sizeof(*hooks[h].rules));
		if (!hooks[h].rules)
			abort();
		for (uint32_t i = 0; i < p->nrules; i++)
			if (p->rules[i].hooks & (1u << h))
				hooks[h].rules[hooks[h].nrules++] = &p->rules[i];
	}
	if (!(in = fopen(argv[2], "r"))) {
		perror(argv[2]);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		char probe[32], hook[16], iif[32], oif[32], ct[32], *hex;
		struct ref_pkt k = { 0 };
		enum ref_verdict_kind kind;
		int n = 0, h, rule;
		size_t len;

		if (sscanf(line, "%31s %15s %31s %31s %31s %n", probe, hook, iif, oif, ct, &n) != 5 || !n)
			continue;
		hex = line + n;
		h = hook_of(hook);
		k.hook = h;
		k.ct = ct_of(strncmp(ct, "tracked:", 8) ? ct : ct + 8);
		k.iif = strcmp(iif, "-") ? iif : NULL;
		k.oif = strcmp(oif, "-") ? oif : NULL;
		if (h < 0 || k.ct < 0) {
			fprintf(stderr, "refjudge: bad line: %s", line);
			return 1;
		}
		len = unhex(hex, pkt, sizeof(pkt));
		kind = ref_parse(pkt, len, (pkt[0] >> 4) == 6 ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4, &k);
		if (kind == REF_MALFORMED) {
			printf("%s %s (malformed) drop\n", probe, hook);
			continue;
		}
		if (kind == REF_FRAGMENT && p->opt.defrag) {
			printf("%s %s (unreassembled) drop\n", probe, hook);
			continue;
		}
		if (!strncmp(ct, "tracked:", 8) && tracked_find(&k) < 0)
			k.ct = NFB_CT_INVALID;
		/* A reset ends its connection before any rule sees it (conntrack's
		 * CLOSE): its count goes, whatever judges the reset. */
		k.closes = k.proto == IPPROTO_TCP && (k.tcp_flags & 0x04) &&
			   (k.ct == NFB_CT_NEW || k.ct == NFB_CT_ESTABLISHED);
		if (k.closes) {
			ref_conns_close(&lim, &k);
			tracked_forget(&k);
		}
		if (p->opt.established_accept && (k.ct == NFB_CT_ESTABLISHED || k.ct == NFB_CT_RELATED)) {
			printf("%s %s (established) accept\n", probe, hook);
			continue;
		}
		memset(lim.over, 0, sizeof(lim.over));
		rule = ref_first_match_limited(&hooks[h], &k, &lim);
		for (uint32_t b = 0; b < hooks[h].nrules && b < REF_OVER_RULES; b++)
			for (uint64_t o = 0; o < lim.over[h][b]; o++)
				printf("%s %s over %s\n", probe, hook, hooks[h].rules[b]->name);
		if (rule < 0)
			printf("%s %s (default) %s\n", probe, hook, policy_action_name(p->hooks[h].def));
		else
			printf("%s %s %s %s\n", probe, hook, hooks[h].rules[rule]->name,
			       policy_action_name(hooks[h].rules[rule]->action));
		if (k.ct == NFB_CT_NEW && !k.closes &&
		    (rule < 0 ? p->hooks[h].def : hooks[h].rules[rule]->action) == POLICY_ACCEPT)
			tracked_add(&k);
	}
	fclose(in);
	ref_limits_free(&lim);
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		free(hooks[h].rules);
	free(dyn);
	free(tracked);
	policy_free(p);
	diags_free(&d);
	return 0;
}
