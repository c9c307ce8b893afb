/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfbox trace's judge (policy/trace/): on random policies and packets its
 * deciding rule is the reference's (tests/lib/ref.c, written apart from it),
 * hook by hook; and by hand, the path of a packet through a policy with
 * interface groups, sets, services, NAT, an early rule, a schedule and a
 * dynamic set: the hooks, the translations, each rule's reason for not
 * matching, the schedule's state and the dynamic entry that matched.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/nfbox.h"
#include "policy/policy.h"
#include "policy/syntax/parse.h"
#include "policy/trace/trace.h"
#include "tests/lib/check.h"
#include "tests/lib/ref.h"

_Static_assert(NFB_CT_NEW == 0 && NFB_CT_UNTRACKED == 4, "ref_pkt.ct is the bit index of policy_ct_names");

static void from_ref(const struct ref_pkt *k, struct trace_packet *t)
{
	memset(t, 0, sizeof(*t));
	t->fam = k->fam;
	snprintf(t->iif, sizeof(t->iif), "%s", k->iif ? k->iif : "");
	snprintf(t->oif, sizeof(t->oif), "%s", k->oif ? k->oif : "");
	memcpy(t->src, k->src, 16);
	memcpy(t->dst, k->dst, 16);
	t->proto = k->proto;
	t->sport = ref_has_ports(k->proto) ? k->sport : -1;
	t->dport = ref_has_ports(k->proto) ? k->dport : -1;
	t->icmp_type = k->proto == IPPROTO_ICMP || k->proto == IPPROTO_ICMPV6 ? k->icmp_type : -1;
	t->ct = k->ct;
	t->at = 1796554481;
}

/* The rule trace decides by, as an index into the reference's hook list. */
static int trace_index(const struct plan_hook *h, const struct trace_hook *th)
{
	if (th->by != TRACE_BY_RULE)
		return -1;
	for (uint32_t i = 0; i < h->nrules; i++)
		if (h->rules[i] == th->rule)
			return (int)i;
	return -2;
}

static void random_policies(uint32_t policies, uint32_t packets)
{
	uint32_t compared = 0;

	for (uint32_t it = 0; it < policies; it++) {
		size_t len;
		char *text = ref_random_policy(&(struct ref_policy_opts){ .nrules = 1 + it % 40 }, &len);
		struct plan_hook hooks[POLICY_HOOK_MAX] = { 0 };
		struct policy *p = NULL;
		struct diags d;

		diags_init(&d);
		if (policy_load_buffer("random.yaml", text, len, &d, &p) < 0) {
			check_fail_at(__FILE__, __LINE__, "random policy %u did not load", it);
			diags_print(&d, stdout, false);
			free(text);
			diags_free(&d);
			return;
		}
		for (int h = 0; h < POLICY_HOOK_MAX; h++) {
			hooks[h].rules = calloc(p->nrules + 1, sizeof(*hooks[h].rules));
			for (uint32_t i = 0; i < p->nrules; i++)
				if (p->rules[i].hooks & (1u << h))
					hooks[h].rules[hooks[h].nrules++] = &p->rules[i];
		}
		for (uint32_t i = 0; i < packets; i++) {
			struct ref_pkt k;
			struct trace_packet t;
			struct trace_hook th;
			int want, got;

			ref_random_pkt(&k);
			if (k.frag) /* a fragment is keyed by protocol only: not a packet one describes */
				continue;
			from_ref(&k, &t);
			CHECK_EQ_INT(trace_judge_hook(p, (enum policy_hook)k.hook, &t, NULL, &th), 0);
			if (th.by != TRACE_BY_RULE && th.by != TRACE_BY_DEFAULT) {
				free(th.steps);
				continue;
			}
			want = ref_first_match(&hooks[k.hook], &k);
			got = trace_index(&hooks[k.hook], &th);
			compared++;
			if (want != got) {
				check_fail_at(
					__FILE__, __LINE__,
					"policy %u packet %u hook %d fam %u proto %d sport %u dport %u ct %d iif %s "
					"oif %s: rule %d expected, trace says %d",
					it, i, k.hook, k.fam, k.proto, k.sport, k.dport, k.ct, k.iif ? k.iif : "-",
					k.oif ? k.oif : "-", want, got);
				fputs(text, stdout);
				it = policies;
				free(th.steps);
				break;
			}
			free(th.steps);
		}
		for (int h = 0; h < POLICY_HOOK_MAX; h++)
			free(hooks[h].rules);
		policy_free(p);
		diags_free(&d);
		free(text);
	}
	/* a run that compared nothing would pass on anything */
	CHECK(compared > policies * packets / 2);
}

static const char hand_policy[] =
	"version: 1\n"
	"interfaces:\n"
	"  lan: [lan0]\n"
	"  wan: [wan0]\n"
	"sets:\n"
	"  office: [198.51.100.0/25]\n"
	"  banned: { dynamic: true }\n"
	"services:\n"
	"  web: [tcp/80, tcp/443]\n"
	"hooks:\n"
	"  input: { default: drop }\n"
	"  forward: { default: drop }\n"
	"rules:\n"
	"  - { name: early-bogon, early: true, hook: [input, forward], in: wan, from: 192.0.2.0/24, action: drop }\n"
	"  - { name: ban, hook: forward, from: banned, action: drop }\n"
	"  - { name: office-ssh, hook: input, in: lan, from: office, service: tcp/22, action: accept }\n"
	"  - name: night\n"
	"    hook: forward\n"
	"    when: { days: [mon], hours: \"01:00-02:00\", tz: UTC }\n"
	"    action: accept\n"
	"  - { name: to-web, hook: forward, to: 198.51.100.10, service: web, action: accept }\n"
	"nat:\n"
	"  - forward-port: { in: wan, service: tcp/8080, to: \"198.51.100.10:80\" }\n"
	"  - masquerade: { out: wan }\n";

static struct policy *hand(void)
{
	struct policy *p = NULL;
	struct diags d;

	diags_init(&d);
	if (policy_load_buffer("hand.yaml", hand_policy, strlen(hand_policy), &d, &p) < 0)
		diags_print(&d, stdout, false);
	diags_free(&d);
	return p;
}

static void pkt(struct trace_packet *t, const char *iif, const char *oif, const char *src, const char *dst, int dport)
{
	struct prefix a, b;
	const char *why;
	bool hb;

	memset(t, 0, sizeof(*t));
	snprintf(t->iif, sizeof(t->iif), "%s", iif);
	snprintf(t->oif, sizeof(t->oif), "%s", oif);
	parse_prefix(src, &a, &hb, &why);
	parse_prefix(dst, &b, &hb, &why);
	t->fam = a.family;
	memcpy(t->src, a.addr, 16);
	memcpy(t->dst, b.addr, 16);
	t->proto = IPPROTO_TCP;
	t->sport = 40000;
	t->dport = dport;
	t->icmp_type = -1;
	t->at = 1796554481; /* Sunday 2026-12-06 10:54:41 UTC: "night" out of force */
}

static bool holds_banned(void *arg, uint32_t set, uint8_t fam, const uint8_t *a, char *entry, size_t len)
{
	if (fam != POLICY_FAM_IPV4 || a[0] != 203 || a[3] != 9)
		return false;
	snprintf(entry, len, "203.0.113.9 by test");
	return true;
}

static void test_path(void)
{
	struct policy *p = hand();
	struct trace_sets sets = { .known = true, .holds = holds_banned };
	struct trace_result *r = NULL;
	struct trace_packet t;

	CHECK(p != NULL);
	if (!p)
		return;
	/* to the appliance, from outside the office: every rule says why not */
	pkt(&t, "lan0", "", "198.51.100.200", "198.51.100.1", 22);
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK_EQ_INT(r->filter.hook, POLICY_HOOK_INPUT);
	CHECK_EQ_INT(r->filter.by, TRACE_BY_DEFAULT);
	CHECK_EQ_INT(r->filter.verdict, POLICY_DROP);
	CHECK_EQ_INT(r->filter.nsteps, 2); /* early-bogon (on input and forward), office-ssh */
	CHECK_EQ_STR(r->filter.steps[0].why,
		     "in: wan does not list lan0; from: 192.0.2.0/24 does not list 198.51.100.200");
	CHECK_EQ_STR(r->filter.steps[1].why, "from: office does not list 198.51.100.200");
	trace_free(r);
	/* the same from the office: the rule decides */
	pkt(&t, "lan0", "", "198.51.100.20", "198.51.100.1", 22);
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK(r->filter.rule && !strcmp(r->filter.rule->name, "office-ssh"));
	CHECK_EQ_STR(trace_decided_by(&r->filter), "office-ssh");
	trace_free(r);
	/* forward-port: prerouting translates, forward sees the inside server */
	pkt(&t, "wan0", "lan0", "203.0.113.7", "203.0.113.1", 8080);
	CHECK_EQ_INT(trace_run(p, &t, &sets, &r), 0);
	CHECK(r->dnat.nat && r->dnat.nat->kind == NAT_FORWARD_PORT);
	CHECK_EQ_INT(r->seen.dport, 80);
	CHECK(r->seen.dst[0] == 198 && r->seen.dst[3] == 10);
	CHECK_EQ_INT(r->filter.hook, POLICY_HOOK_FORWARD);
	CHECK(r->filter.rule && !strcmp(r->filter.rule->name, "to-web"));
	CHECK_EQ_INT(r->filter.nsteps, 4);	      /* early-bogon, ban, night, to-web */
	CHECK_EQ_INT(r->filter.steps[2].in_force, 0); /* night: Monday 01:00-02:00 */
	CHECK(strstr(r->filter.steps[2].why, "when: out of force") != NULL);
	CHECK(r->snat.nat == NULL); /* out lan0: no masquerade */
	trace_free(r);
	/* ...the schedule judged in its window */
	pkt(&t, "wan0", "lan0", "203.0.113.7", "203.0.113.1", 8080);
	t.at = 1796607000; /* Monday 2026-12-07 01:30 UTC */
	CHECK_EQ_INT(trace_run(p, &t, &sets, &r), 0);
	CHECK(r->filter.rule && !strcmp(r->filter.rule->name, "night"));
	CHECK_EQ_INT(r->filter.steps[2].in_force, 1);
	trace_free(r);
	/* a banned address: the dynamic entry that matched */
	pkt(&t, "lan0", "wan0", "203.0.113.9", "203.0.113.70", 443);
	CHECK_EQ_INT(trace_run(p, &t, &sets, &r), 0);
	CHECK(r->filter.rule && !strcmp(r->filter.rule->name, "ban"));
	CHECK_EQ_STR(r->filter.steps[1].dyn_entry, "203.0.113.9 by test");
	trace_free(r);
	/* the same without the daemon's entries: judged empty, and said so */
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK_EQ_INT(r->filter.by, TRACE_BY_DEFAULT);
	CHECK(strstr(r->filter.steps[1].why, "not known here") != NULL);
	trace_free(r);
	/* masquerade on the way out, for an accepted new connection only */
	pkt(&t, "lan0", "wan0", "198.51.100.20", "198.51.100.10", 80);
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK(r->snat.nat && r->snat.nat->kind == NAT_MASQUERADE);
	trace_free(r);
	t.ct = 1; /* established: conntrack's mapping, none decided here */
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK(r->snat.nat == NULL);
	trace_free(r);
	/* early: dropped on wan0 before the stack, nothing else met */
	pkt(&t, "wan0", "", "192.0.2.5", "203.0.113.1", 22);
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), 0);
	CHECK(r->early && !strcmp(r->early->name, "early-bogon"));
	CHECK_EQ_INT(r->filter.by, TRACE_BY_EARLY);
	trace_free(r);
	/* neither interface: nothing to follow */
	pkt(&t, "", "", "192.0.2.5", "203.0.113.1", 22);
	CHECK_EQ_INT(trace_run(p, &t, NULL, &r), -EINVAL);
	policy_free(p);
}

int main(void)
{
	ref_seed(43);
	check_begin("random-policies-against-the-reference");
	random_policies(300, 300);
	check_end();
	check_begin("path-by-hand");
	test_path();
	check_end();
	CHECK_EXIT();
}
