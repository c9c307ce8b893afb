/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * table inet nfbox as build.c makes it and print.c says it, without a
 * kernel: the shape of the ruleset (one rule per policy rule and family,
 * ports of several protocols in one concatenated set, a family dispatch
 * by verdict map), the kernel's rules about anonymous sets (each bound to
 * exactly one rule: a rule that never matches leaves none behind, a set
 * shared by the log and verdict rules is copied), runs of rules that
 * differ only in ports as one rule with a counter map, NAT (hairpin), and
 * the printed form.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <stdio.h>
#include <string.h>

#include "../lib/check.h"
#include "dynset/dynset.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/emit.h"
#include "backend/nftables/nft/print.h"
#include "policy/policy.h"
#include "policy/syntax/parse.h"

struct built {
	struct diags d;
	struct policy *p;
	struct nfr_table t;
	char *text;
};

/* The counter maps are named (cm_CHAIN_N, declared before the chains); the
 * checks below read each rule with its map's elements in place of
 * "@cm_CHAIN_N", as the map holds them. */
static void inline_maps(struct built *b)
{
	char *out = NULL, *p = b->text;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	while (*p) {
		char *at = strstr(p, "map @cm_");
		char name[96], decl[128], *d, *el, *end;
		size_t n;

		if (!at) {
			fputs(p, f);
			break;
		}
		n = strcspn(at + 5, " \n");
		snprintf(name, sizeof(name), "%.*s", (int)n, at + 5);
		snprintf(decl, sizeof(decl), "\tmap %s {\n", name);
		d = strstr(b->text, decl);
		el = d ? strstr(d, "elements = { ") : NULL;
		end = el ? strstr(el, " }\n") : NULL;
		fwrite(p, 1, (size_t)(at - p) + 4, f);
		if (end)
			fwrite(el + 11, 1, (size_t)(end + 2 - (el + 11)), f);
		else
			fprintf(f, "@%s", name);
		p = at + 5 + n;
	}
	fclose(f);
	free(b->text);
	b->text = out;
}

static int build(struct built *b, const char *yaml)
{
	struct nft_build_opts o = { 0 };
	size_t len = 0;
	FILE *f;

	memset(b, 0, sizeof(*b));
	diags_init(&b->d);
	nfr_init(&b->t);
	if (policy_load_buffer("t.yaml", yaml, strlen(yaml), &b->d, &b->p) < 0) {
		diags_print(&b->d, stdout, false);
		return -1;
	}
	o.filter = b->p->opt.backend == POLICY_BACKEND_NFTABLES;
	if (nft_build(b->p, &o, &b->t, &b->d) < 0)
		return -1;
	f = open_memstream(&b->text, &len);
	nfr_print(&b->t, f);
	fclose(f);
	inline_maps(b);
	return 0;
}

static void built_free(struct built *b)
{
	nfr_free(&b->t);
	policy_free(b->p);
	diags_free(&b->d);
	free(b->text);
}

/* Rules of the chain called name. */
static uint32_t rules_in(const struct nfr_table *t, const char *name)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nrules; i++)
		n += !strcmp(t->chains[t->rules[i].chain].name, name);
	return n;
}

/* Every anonymous set is used by exactly one rule. */
static void anon_sets_bound_once(const struct nfr_table *t)
{
	for (uint32_t s = 0; s < t->nsets; s++) {
		uint32_t uses = 0;

		if (t->sets[s]->name[0])
			continue;
		for (uint32_t i = 0; i < t->nrules; i++) {
			for (uint32_t m = 0; m < t->rules[i].nm; m++)
				uses += t->rules[i].m[m].set == t->sets[s];
			for (uint32_t k = 0; k < t->rules[i].ns; k++)
				uses += t->rules[i].s[k].set == t->sets[s];
		}
		if (uses != 1)
			check_fail_at(__FILE__, __LINE__, "anonymous set %u used by %u rules", t->sets[s]->id, uses);
	}
}

#define HEAD                                                                                                          \
	"version: 1\ninterfaces: { lan: [lan0, lan1], wan: [wan0], up2: [wan2] }\nhooks: { forward: { default: drop " \
	"} }\n"

static void shape(void)
{
	struct built b;

	if (build(&b, HEAD "options: { backend: nftables }\nsets: { office: [198.51.100.0/24, \"2001:db8:1::/64\"] }\n"
			   "rules:\n"
			   "  - { name: web, in: lan, from: office, service: [tcp/80, tcp/443, tcp/8000-8100], action: "
			   "accept }\n"
			   "  - { name: dns, service: [udp/53, tcp/53], action: accept }\n"
			   "  - { name: v4, from: 192.0.2.0/24, action: drop }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	/* web: v4 and v6; dns: both families; v4: IPv4 only. */
	CHECK_EQ_INT(rules_in(&b.t, "forward_ip"), 3);
	CHECK_EQ_INT(rules_in(&b.t, "forward_ip6"), 2);
	/* the family dispatch: jump rules, never a map (build.c, filter_hook) */
	CHECK(strstr(b.text, "\t\tmeta nfproto ipv4 jump forward_ip\n\t\tmeta nfproto ipv6 jump forward_ip6\n") !=
	      NULL);
	CHECK(strstr(b.text, "vmap") == NULL);
	CHECK(strstr(b.text, "iifname { \"lan0\", \"lan1\" } meta nfproto ipv4 ip saddr @s_office_4 meta l4proto tcp "
			     "th dport { 80, 443, 8000-8100 } counter name \"r_forward_web\" accept") != NULL);
	CHECK(strstr(b.text, "meta l4proto . th dport { tcp . 53, udp . 53 } counter name \"r_forward_dns\" accept") !=
	      NULL);
	CHECK(strstr(b.text,
		     "set s_office_6 {\n\t\ttype ipv6_addr\n\t\tflags interval\n\t\telements = { 2001:db8:1::/64 }") !=
	      NULL);
	CHECK(strstr(b.text, "counter name \"x_forward_default\" drop") != NULL);
	anon_sets_bound_once(&b.t);
	built_free(&b);
}

static void anon_sets(void)
{
	struct built b;

	/* Regression (found by the backend differential test): a rule whose
	 * service and source-service share no protocol never matches, but its
	 * interface set was made and left unbound, and the kernel refused the
	 * whole table. And the log rule and the reject rules of one policy
	 * rule each need their own copy of its anonymous sets. */
	if (build(&b, HEAD "options: { backend: nftables }\nrules:\n"
			   "  - { name: never, in: lan, from: [192.0.2.1, 192.0.2.9], service: tcp/80, source-service: "
			   "udp/53, action: accept }\n"
			   "  - { name: rej, in: lan, to: [203.0.113.1, 203.0.113.7], service: [tcp/81, udp/81], "
			   "action: reject, log: true }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	anon_sets_bound_once(&b.t);
	CHECK(strstr(b.text, "r_forward_never\" accept") == NULL);
	/* rej: log, then tcp reset within the rate, over it, then icmpx, over it. */
	CHECK_EQ_INT(rules_in(&b.t, "forward_ip"), 5);
	CHECK(strstr(b.text,
		     "meta l4proto tcp limit name \"x_reject\" counter name \"r_forward_rej\" reject with tcp reset") !=
	      NULL);
	CHECK(strstr(b.text, "counter name \"r_forward_rej\" counter name \"x_reject_limited\" drop") != NULL);
	CHECK(strstr(b.text,
		     "limit name \"x_log\" counter name \"x_logged\" log prefix \"forward reject rej\" group 6770") !=
	      NULL);
	built_free(&b);
}

static void counter_map(void)
{
	struct built b;

	/* a, b, c differ only in their ports: one rule with a map from
	 * protocol and port to each one's counter. d overlaps c: a new run
	 * (first match), alone. e has another verdict. */
	if (build(&b, HEAD "options: { backend: nftables }\nrules:\n"
			   "  - { name: a, in: lan, service: tcp/80, action: accept }\n"
			   "  - { name: b, in: lan, service: [udp/53, tcp/53], action: accept }\n"
			   "  - { name: c, in: lan, service: tcp/8000-8100, action: accept }\n"
			   "  - { name: d, in: lan, service: tcp/8050-8200, action: accept }\n"
			   "  - { name: e, in: lan, service: tcp/9, action: drop }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK_EQ_INT(rules_in(&b.t, "forward_ip"), 3);
	CHECK(strstr(b.text, "iifname { \"lan0\", \"lan1\" } counter name meta l4proto . th dport map { tcp . 53 : "
			     "\"r_forward_b\", tcp . 80 : \"r_forward_a\", tcp . 8000-8100 : \"r_forward_c\", udp . 53 "
			     ": \"r_forward_b\" } accept") != NULL);
	CHECK(strstr(b.text, "th dport 8050-8200 counter name \"r_forward_d\" accept") != NULL);
	anon_sets_bound_once(&b.t);
	built_free(&b);
}

static void nat(void)
{
	struct built b;

	if (build(&b,
		  HEAD "nat:\n  - masquerade: { out: wan }\n"
		       "  - forward-port: { in: wan, service: [tcp/8080], to: 198.51.100.10:80 }\n"
		       "  - snat: { out: up2, to: 192.0.2.8/30 }\n"
		       "rules:\n  - { name: in, in: wan, to: 198.51.100.10, service: tcp/80, action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	/* The BPF backend: no filter chains, the anchor and NAT only. */
	CHECK(strstr(b.text, "chain forward") == NULL);
	CHECK(strstr(b.text, "chain conntrack {\n\t\tct state established,related accept") != NULL);
	CHECK(strstr(b.text, "type nat hook prerouting priority -100; policy accept;") != NULL);
	CHECK(strstr(b.text,
		     "iifname \"wan0\" meta nfproto ipv4 meta l4proto tcp th dport 8080 dnat ip to 198.51.100.10:80") !=
	      NULL);
	/* Hairpin: from inside to an address of wan (never another of the
	 * appliance's), and back out masqueraded. */
	CHECK(strstr(b.text, "iifname != \"wan0\" meta nfproto ipv4 ip daddr @h_wan_4 meta l4proto tcp th dport "
			     "8080 dnat ip to 198.51.100.10:80") != NULL);
	CHECK(strstr(b.text, "fib") == NULL);
	CHECK(strstr(b.text,
		     "set h_wan_4 {\n\t\ttype ipv4_addr\n\t\tcomment \"hairpin: the IPv4 addresses of in: wan") !=
	      NULL);
	CHECK(strstr(b.text, "iifname != \"wan0\" ct status dnat meta nfproto ipv4 ip daddr 198.51.100.10 meta l4proto "
			     "tcp masquerade") != NULL);
	CHECK(strstr(b.text, "oifname \"wan2\" meta nfproto ipv4 snat ip to 192.0.2.8-192.0.2.11") != NULL);
	anon_sets_bound_once(&b.t);
	built_free(&b);
}

/* The host's addresses, as nl_iface_addrs_all gives them. */
static void fake_addrs(void (*add)(const char *ifname, uint8_t fam, const uint8_t *addr, void *l), void *l, void *arg)
{
	static const struct {
		const char *ifname;
		uint8_t fam, addr[16];
	} v[] = {
		{ "wan0", POLICY_FAM_IPV4, { 203, 0, 113, 1 } },
		{ "wan0", POLICY_FAM_IPV4, { 203, 0, 113, 5 } },
		{ "wan0", POLICY_FAM_IPV6, { 0x20, 0x01, 0x0d, 0xb8, 0, 2, [15] = 1 } },
		{ "wan1", POLICY_FAM_IPV4, { 198, 18, 0, 1 } },
		{ "lan0", POLICY_FAM_IPV4, { 198, 51, 100, 1 } },
		{ "lo", POLICY_FAM_IPV4, { 127, 0, 0, 1 } },
	};

	(void)arg;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		add(v[i].ifname, v[i].fam, v[i].addr, l);
}

/* A hairpin set holds the addresses of its forward-port's in: interfaces
 * and nothing else of the host's (a group, a list); the
 * daemon's refresh (nft_hairpin_sets) makes the same sets as the build. */
static void hairpin_sets(void)
{
	static const char yaml[] =
		"version: 1\ninterfaces: { lan: [lan0], wan: [wan0, wan1] }\n"
		"hooks: { forward: { default: drop } }\nnat:\n"
		"  - forward-port: { in: wan, service: tcp/22, to: 198.51.100.20 }\n"
		"  - forward-port: { in: [wan1, lo], service: tcp/23, to: 198.51.100.20 }\n"
		"  - forward-port: { in: wan, service: tcp/24, to: \"[2001:db8:1::20]\" }\n"
		"  - forward-port: { in: lan, service: tcp/25, to: 198.51.100.20, hairpin: false }\n";
	struct nft_build_opts o = { .iface_addrs = fake_addrs };
	struct policy *p = NULL;
	struct nfr_table t, u;
	const struct nfr_set *s;
	struct diags d;

	diags_init(&d);
	nfr_init(&t);
	nfr_init(&u);
	if (policy_load_buffer("t.yaml", yaml, sizeof(yaml) - 1, &d, &p) < 0 || nft_build(p, &o, &t, &d) < 0) {
		diags_print(&d, stdout, false);
		CHECK(0);
		goto out;
	}
	CHECK((s = nfr_set_find(&t, "h_wan_4")) && s->n == 3); /* wan0's two, wan1's */
	CHECK(s && !s->interval && s->v[0].lo[0] == 198 && s->v[1].lo[3] == 1 && s->v[2].lo[3] == 5);
	CHECK((s = nfr_set_find(&t, "h_wan_6")) && s->n == 1 && s->v[0].lo[15] == 1);
	/* a list, named by its place: wan1's and lo's, never lan0's or wan0's */
	CHECK((s = nfr_set_find(&t, "h-6.5_4")) && s->n == 2 && s->v[0].lo[0] == 127 && s->v[1].lo[0] == 198);
	CHECK(nfr_set_find(&t, "h_lan_4") == NULL); /* hairpin: false */
	CHECK(nft_hairpin_sets(p, &o, &u) == 3);
	for (uint32_t i = 0; i < u.nsets; i++) {
		CHECK((s = nfr_set_find(&t, u.sets[i]->name)) && s->n == u.sets[i]->n);
		for (uint32_t k = 0; s && k < s->n && k < u.sets[i]->n; k++)
			CHECK(!memcmp(s->v[k].lo, u.sets[i]->v[k].lo, 16));
	}
out:
	nfr_free(&t);
	nfr_free(&u);
	policy_free(p);
	diags_free(&d);
}

/* An NLMSG_ERROR answer to seq, with the kernel's explanation. */
static size_t put_answer(char *buf, uint32_t seq, uint32_t portid, int error, const char *why)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nlmsgerr *e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));

	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED | (why ? NLM_F_ACK_TLVS : 0);
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_pid = portid;
	e->error = error;
	e->msg.nlmsg_seq = seq;
	if (why)
		mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, why);
	return nlh->nlmsg_len;
}

/* The kernel's refusals reach the operator at the policy element that made
 * the object, with the kernel's words; the same refusal again is folded. */
static void refusal_located(void)
{
	struct built b;
	struct nft_batch *nb = NULL;
	struct nlmsghdr *m[4];
	char buf[4096];
	size_t len = 0;
	int err = 0;

	if (build(&b, HEAD "rules:\n  - { name: web, service: tcp/80, action: accept }\n") < 0 ||
	    nft_batch_new(&nb) < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	for (int i = 0; i < 4; i++) {
		bool rule = i == 1 || i == 2;

		m[i] = nft_batch_msg(nb, rule ? NFT_MSG_NEWRULE : NFT_MSG_NEWTABLE, NFPROTO_INET, NLM_F_CREATE);
		nft_batch_note(nb, rule ? b.p->rules[0].loc : DIAG_NOWHERE,
			       rule ? "rule 'web' (forward)" : NFT_TABLE_WHAT);
	}
	len += put_answer(buf + len, m[1]->nlmsg_seq, 77, -EINVAL, "Could not process rule");
	len += put_answer(buf + len, m[2]->nlmsg_seq, 77, -EINVAL, "Could not process rule");
	len += put_answer(buf + len, m[3]->nlmsg_seq + 1, 77, -EPERM, NULL); /* not this transaction's */
	len += put_answer(buf + len, m[3]->nlmsg_seq, 78, -EPERM, NULL);     /* not this socket's */
	CHECK_EQ_INT(nft_batch_answers(nb, 77, buf, len, &err, &b.d), 0);
	len = put_answer(buf, m[3]->nlmsg_seq, 77, 0, NULL); /* the last one's ack */
	CHECK_EQ_INT(nft_batch_answers(nb, 77, buf, len, &err, &b.d), 1);
	CHECK_EQ_INT(err, -EINVAL);
	CHECK_EQ_INT(b.d.errors, 1);
	for (size_t i = 0; i < b.d.n; i++) {
		const struct diag *g = &b.d.v[i];

		if (g->level == DIAG_ERROR) {
			CHECK_EQ_INT(g->loc.line, b.p->rules[0].loc.line);
			CHECK_EQ_STR(
				g->msg,
				"nftables refused rule 'web' (forward): Invalid argument (Could not process rule)");
		}
		if (g->level == DIAG_NOTE)
			CHECK_EQ_STR(g->msg, "1 more messages refused for the reasons above");
	}
	nft_batch_free(nb);
	built_free(&b);
}

/* Regression (issue 25): a negated group of wildcards was one match per
 * wildcard, and past the rule's last match slot each new match overwrote
 * the last: the source, destination, state and protocol of the rule were
 * lost, and it accepted far more than it said. A list of names is one
 * match now, however long, and every condition stays. */
static void negated_wildcards(void)
{
	char yaml[8192], group[4096] = "";
	size_t used = 0;
	struct built b;
	const char *rule;

	for (int i = 0; i < POLICY_MAX_IFACE_WILDCARDS; i++) /* at the limit */
		used += (size_t)snprintf(group + used, sizeof(group) - used, "%s\"w%02d*\"", i ? ", " : "", i);
	snprintf(yaml, sizeof(yaml),
		 "version: 1\noptions: { backend: nftables }\n"
		 "interfaces: { vpn: [\"a*\", \"b*\", \"c*\", \"d*\", \"e*\", \"f*\", \"g*\", \"h*\", \"i*\", \"j*\"], "
		 "many: [%s] }\n"
		 "hooks: { forward: { default: drop } }\nrules:\n"
		 "  - { name: r1, in: \"!vpn\", from: [198.51.100.0/24], to: [203.0.113.10], state: new, service: "
		 "[tcp/22], action: accept }\n"
		 "  - { name: r2, in: \"!many\", out: \"!many\", from: [198.51.100.0/24], to: [203.0.113.10], state: "
		 "new, service: [tcp/22, udp/53], action: accept }\n",
		 group);
	if (build(&b, yaml) < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	rule = strstr(b.text, "r_forward_r1\" accept");
	CHECK(strstr(b.text, "iifname != @g_vpn meta nfproto ipv4 ip saddr 198.51.100.0/24 ip daddr 203.0.113.10 ct "
			     "state new meta l4proto tcp th dport 22 counter name \"r_forward_r1\" accept") != NULL);
	CHECK(rule != NULL);
	CHECK(strstr(b.text, "iifname != @g_many oifname != @g_many meta nfproto ipv4 ip saddr 198.51.100.0/24 ip "
			     "daddr 203.0.113.10 ct state new meta l4proto . th dport { tcp . 22, udp . 53 } counter "
			     "name \"r_forward_r2\" accept") != NULL);
	for (uint32_t i = 0; i < b.t.nsets; i++)
		if (!strcmp(b.t.sets[i]->name, "g_many")) {
			CHECK(b.t.sets[i]->interval);
			CHECK_EQ_INT(b.t.sets[i]->n, POLICY_MAX_IFACE_WILDCARDS);
		}
	for (uint32_t i = 0; i < b.t.nrules; i++)
		CHECK(!b.t.rules[i].full);
	built_free(&b);
}

/* A wildcard is the range of the names it begins; the set merges what
 * overlaps (a name under a wildcard, a narrower wildcard) and keeps apart
 * wildcards that only meet (nft could not list their union). */
static void wildcard_ranges(void)
{
	struct built b;

	if (build(&b,
		  "version: 1\noptions: { backend: nftables }\nhooks: { forward: { default: drop } }\nrules:\n"
		  "  - { name: r, in: [\"vlan1*\", \"vlan2*\", vlan15, \"vlan1x*\", eth0], action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "elements = { \"eth0\", \"vlan1*\", \"vlan2*\" }") != NULL);
	CHECK(strstr(b.text, "iifname @i_r_in") != NULL);
	built_free(&b);
}

/* A rule of the IR that would not fit is refused at its place with what
 * it is, never cut short: at the limit it is added, one past it refused. */
static void full_rule_refused(void)
{
	struct nfr_table t;
	struct nfr_rule r = { .loc = { .line = 7, .col = 5 } };

	nfr_init(&t);
	for (int i = 0; i < NFR_MAX_MATCH; i++)
		nfr_match_add(&r, NFR_M_L4PROTO)->value = 6;
	for (int i = 0; i < NFR_MAX_STMT; i++)
		nfr_stmt_add(&r, NFR_S_ACCEPT);
	CHECK(!r.full);
	nfr_rule_add(&t, &r, "rule 'at-limit'");
	CHECK_EQ_INT(t.err, 0);
	CHECK_EQ_INT(t.nrules, 1);
	nfr_match_add(&r, NFR_M_CT_STATE);
	CHECK(r.full);
	CHECK_EQ_INT(r.nm, NFR_MAX_MATCH);
	CHECK_EQ_INT(r.m[NFR_MAX_MATCH - 1].kind, NFR_M_L4PROTO); /* the last real one untouched */
	nfr_rule_add(&t, &r, "rule 'past-limit'");
	CHECK_EQ_INT(t.err, -E2BIG);
	CHECK_EQ_INT(t.err_loc.line, 7);
	CHECK_EQ_STR(t.err_what, "rule 'past-limit'");
	nfr_free(&t);

	nfr_init(&t);
	memset(&r, 0, sizeof(r));
	for (int i = 0; i <= NFR_MAX_STMT; i++)
		nfr_stmt_add(&r, NFR_S_COUNTER);
	CHECK(r.full);
	nfr_rule_add(&t, &r, "rule 'statements'");
	CHECK_EQ_INT(t.err, -E2BIG);
	nfr_free(&t);
}

/* Every kind of match and statement, in each of its forms, within the
 * bound that keeps a full rule under the kernel's 128 expressions. */
static void exprs_bounded(void)
{
	struct nfr_table t;
	struct nfr_set *set;
	uint32_t worst_m = 0, worst_s = 0;

	nfr_init(&t);
	set = nfr_set_new(&t, "s", NFR_KEY_PROTO_PORT, true);
	for (int k = NFR_M_IIFNAME; k <= NFR_M_FRAG6_OFF; k++)
		for (int form = 0; form < 4; form++) {
			struct nfr_match m = { .kind = (enum nfr_match_kind)k,
					       .neg = form & 1,
					       .family = form & 2 ? 2 : 1,
					       .lo = 1,
					       .hi = form & 2 ? 9 : 1,
					       .value = 24 };
			uint32_t n;

			snprintf(m.ifname, sizeof(m.ifname), "%s", form & 2 ? "eth*" : "eth0");
			m.set = form & 1 ? set : NULL;
			if (k == NFR_M_ADDR || k == NFR_M_PROTO_PORT)
				m.set = set;
			n = nft_match_exprs(&m);
			if (n > NFT_MATCH_MAX_EXPRS)
				check_fail_at(__FILE__, __LINE__, "match kind %d form %d: %u expressions", k, form, n);
			worst_m = n > worst_m ? n : worst_m;
		}
	for (int k = NFR_S_COUNTER; k <= NFR_S_METER; k++)
		for (int form = 0; form < 4; form++) {
			struct nfr_stmt st = { .kind = (enum nfr_stmt_kind)k,
					       .family = form & 2 ? 2 : 1,
					       .port = form & 1 ? 80 : 0,
					       .rate = 1,
					       .per = 1,
					       .burst = 1 };
			uint32_t n;

			snprintf(st.name, sizeof(st.name), "x");
			st.addr_hi[15] = form & 1; /* a range or one address */
			st.set = set;
			n = nft_stmt_exprs(&st);
			if (n > NFT_STMT_MAX_EXPRS)
				check_fail_at(__FILE__, __LINE__, "statement kind %d form %d: %u expressions", k, form,
					      n);
			worst_s = n > worst_s ? n : worst_s;
		}
	/* the bounds are the worst cases, not loose guesses */
	CHECK_EQ_INT(worst_m, NFT_MATCH_MAX_EXPRS);
	CHECK_EQ_INT(worst_s, NFT_STMT_MAX_EXPRS);
	nfr_free(&t);
}

/* Runs of rules that differ only in their ports (mutants of the run's
 * bookkeeping survived every suite until these): the ports of all four
 * protocols apart, so one run; a rule whose own protocol's ports overlap an
 * earlier one's ends the run (first match); a rule whose out: is an empty
 * group matches nothing and joins no run. */
static void port_runs(void)
{
	struct built b;

	if (build(&b, "version: 1\ninterfaces: { lan: [lan0, lan1], wan: [wan0], none: [] }\n"
		      "hooks: { forward: { default: drop } }\noptions: { backend: nftables }\nrules:\n"
		      "  - { name: t, in: lan, service: tcp/80, action: accept }\n"
		      "  - { name: u, in: lan, service: udp/80, action: accept }\n"
		      "  - { name: s, in: lan, service: sctp/80, action: accept }\n"
		      "  - { name: l, in: lan, service: udplite/80, action: accept }\n"
		      "  - { name: p1, in: wan, proto: tcp, service: [tcp/80, udp/9], action: drop }\n"
		      "  - { name: p2, in: wan, proto: tcp, service: [tcp/70-90], action: drop }\n"
		      "  - { name: e1, in: lan, out: none, service: tcp/1, action: accept }\n"
		      "  - { name: e2, in: lan, out: none, service: tcp/2, action: accept }\n"
		      "  - { name: e3, in: none, service: tcp/3, action: accept }\n"
		      "  - { name: e4, in: none, service: tcp/4, action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "\t\tiifname { \"lan0\", \"lan1\" } counter name meta l4proto . th dport map { tcp . 80 : "
			     "\"r_forward_t\", udp . 80 : \"r_forward_u\", sctp . 80 : \"r_forward_s\", udplite . 80 : "
			     "\"r_forward_l\" } accept\n"
			     "\t\tiifname \"wan0\" meta l4proto tcp th dport 80 counter name \"r_forward_p1\" drop\n"
			     "\t\tiifname \"wan0\" meta l4proto tcp th dport 70-90 counter name \"r_forward_p2\" drop\n"
			     "\t}") != NULL);
	anon_sets_bound_once(&b.t);
	built_free(&b);

	/* A range first, then a port inside it: two rules (the range's bits are
	 * all taken); ports of one 64-port word on either side of a range, and
	 * the last word of the port space (cleared for the next run, not past
	 * it): one run each. */
	if (build(&b, "version: 1\ninterfaces: { lan: [lan0], wan: [wan0] }\n"
		      "hooks: { forward: { default: drop } }\noptions: { backend: nftables }\nrules:\n"
		      "  - { name: r1, in: lan, service: tcp/70-90, action: accept }\n"
		      "  - { name: r2, in: lan, service: tcp/80, action: accept }\n"
		      "  - { name: w1, in: wan, service: udplite/100-110, action: accept }\n"
		      "  - { name: w2, in: wan, service: udplite/96, action: accept }\n"
		      "  - { name: w3, in: wan, service: udplite/120, action: accept }\n"
		      "  - { name: w4, in: wan, service: udplite/65500-65535, action: accept }\n"
		      "  - { name: w5, in: wan, service: udplite/65400, action: drop }\n"
		      "  - { name: w6, in: wan, service: udplite/1, action: drop }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text,
		     "\t\tiifname \"lan0\" meta l4proto tcp th dport 70-90 counter name \"r_forward_r1\" accept\n"
		     "\t\tiifname \"lan0\" meta l4proto tcp th dport 80 counter name \"r_forward_r2\" accept\n") !=
	      NULL);
	CHECK(strstr(b.text,
		     "map { udplite . 96 : \"r_forward_w2\", udplite . 100-110 : \"r_forward_w1\", "
		     "udplite . 120 : \"r_forward_w3\", udplite . 65500-65535 : \"r_forward_w4\" } accept") != NULL);
	CHECK(strstr(b.text, "map { udplite . 1 : \"r_forward_w6\", udplite . 65400 : \"r_forward_w5\" } drop") !=
	      NULL);
	anon_sets_bound_once(&b.t);
	built_free(&b);

	/* A range over several 64-port words that starts inside its first:
	 * every later word is taken whole, so a port in one of them (150, in
	 * the word 128-191) ends the run. */
	if (build(&b, "version: 1\ninterfaces: { lan: [lan0] }\n"
		      "hooks: { forward: { default: drop } }\noptions: { backend: nftables }\nrules:\n"
		      "  - { name: wide, in: lan, service: tcp/100-300, action: accept }\n"
		      "  - { name: inside, in: lan, service: tcp/150, action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text,
		     "\t\tiifname \"lan0\" meta l4proto tcp th dport 100-300 counter name \"r_forward_wide\" accept\n"
		     "\t\tiifname \"lan0\" meta l4proto tcp th dport 150 counter name \"r_forward_inside\" accept\n") !=
	      NULL);
	built_free(&b);

	/* Destination and source ports of two protocols: one rule per
	 * protocol, each with only that protocol's ports. */
	if (build(&b, "version: 1\ninterfaces: { lan: [lan0] }\n"
		      "hooks: { forward: { default: drop } }\noptions: { backend: nftables }\nrules:\n"
		      "  - { name: both, in: lan, service: [tcp/80, udp/53], source-service: [tcp/1000, udp/2000], "
		      "action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "\t\tiifname \"lan0\" meta l4proto tcp th dport 80 th sport 1000 counter name "
			     "\"r_forward_both\" accept\n"
			     "\t\tiifname \"lan0\" meta l4proto udp th dport 53 th sport 2000 counter name "
			     "\"r_forward_both\" accept\n") != NULL);
	built_free(&b);

	/* A port listed twice in a run of single ports (a map of single
	 * keys, not intervals): one element, as the kernel takes no
	 * duplicate. */
	if (build(&b, "version: 1\ninterfaces: { lan: [lan0] }\n"
		      "hooks: { forward: { default: drop } }\noptions: { backend: nftables }\nrules:\n"
		      "  - { name: twice, in: lan, service: [tcp/80, tcp/80], action: accept }\n"
		      "  - { name: other, in: lan, service: udp/53, action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "map { tcp . 80 : \"r_forward_twice\", udp . 53 : \"r_forward_other\" } accept") != NULL);
	built_free(&b);
}

/* A set of nested prefixes keeps the outer one, whatever their order; a
 * redirect with from: matches the source, per family; the copy of an
 * anonymous set that a log rule and a verdict rule share keeps its ranges. */
static void sets_and_nat(void)
{
	struct built b;

	if (build(&b, HEAD
		  "options: { backend: nftables }\n"
		  "sets: { nest: [198.51.100.128/25, 198.51.100.0/24, 203.0.113.0/25, 203.0.113.64/26] }\n"
		  "nat:\n  - redirect: { in: lan, from: [192.0.2.0/24, \"2001:db8:9::/48\"], service: tcp/80, to: 3128 "
		  "}\n"
		  "rules:\n"
		  "  - { name: n, from: nest, action: drop }\n"
		  "  - { name: lg, in: lan, service: [tcp/8000-8010, tcp/9000-9005], action: accept, log: true }\n"
		  "  - { name: ov, in: wan, service: [udp/10-20, udp/15-30, udp/25-26, udp/30-35, udp/40], action: "
		  "accept }\n"
		  "  - { name: a1, in: up2, service: tcp/90, action: accept }\n"
		  "  - { name: a2, in: up2, service: tcp/91-95, action: accept }\n"
		  "  - { name: cy, in: wan, proto: tcp, service: [tcp/200-255, tcp/256-300], action: drop }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "elements = { 198.51.100.0/24, 203.0.113.0/25 }") != NULL);
	CHECK(strstr(b.text, "ip saddr 192.0.2.0/24 meta l4proto tcp th dport 80 redirect to :3128") != NULL);
	CHECK(strstr(b.text, "ip6 saddr 2001:db8:9::/48 meta l4proto tcp th dport 80 redirect to :3128") != NULL);
	CHECK(strstr(b.text, "th dport { 8000-8010, 9000-9005 } counter name \"x_log_wanted\" limit name \"x_log\"") !=
	      NULL);
	CHECK(strstr(b.text, "th dport { 8000-8010, 9000-9005 } counter name \"r_forward_lg\" accept") != NULL);
	/* overlapping ranges (also by one port) merge into their union */
	CHECK(strstr(b.text, "th dport { 10-35, 40 } counter name \"r_forward_ov\" accept") != NULL);
	/* ports next to each other of two rules keep their own counters */
	CHECK(strstr(b.text, "map { tcp . 90 : \"r_forward_a1\", tcp . 91-95 : \"r_forward_a2\" } accept") != NULL);
	/* ranges that meet, the carry running into the port's first byte */
	CHECK(strstr(b.text, "th dport 200-300 counter name \"r_forward_cy\" drop") != NULL);
	/* every nftables rule says which policy element it comes from (what
	 * a refusal by the kernel is reported with) */
	for (uint32_t i = 0; i < b.t.nrules; i++)
		CHECK(b.t.rules[i].what && b.t.rules[i].what[0]);
	anon_sets_bound_once(&b.t);
	built_free(&b);
}

/* defrag: false: each fragment goes to a chain of its family's rules that
 * need no ports, which ends in the hook's default. */
static void defrag_off(void)
{
	struct built b;

	if (build(&b, HEAD "options: { backend: nftables, defrag: false }\nrules:\n"
			   "  - { name: gre, proto: gre, action: accept }\n"
			   "  - { name: web, service: tcp/80, action: accept }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "meta nfproto ipv4 ip frag-off & 0x3fff != 0 jump forward_ip_fragments") != NULL);
	CHECK(strstr(b.text, "meta nfproto ipv6 frag more-fragments 1 jump forward_ip6_fragments") != NULL);
	CHECK(strstr(b.text,
		     "chain forward_ip_fragments {\n\t\tmeta l4proto gre counter name \"r_forward_gre\" accept\n"
		     "\t\tcounter name \"x_forward_default\" drop\n\t}") != NULL);
	CHECK(strstr(b.text, "counter name \"x_unreassembled\" drop") == NULL); /* that is defrag on's */
	built_free(&b);
}

/* A dynamic set's entries with the time each has left: a permanent one has
 * none (a timeout made of 'no expiry' would be one of centuries, or the
 * kernel's refusal). */
static void dynamic_timeouts(void)
{
	struct nft_build_opts o = { .filter = true };
	struct dyn_change c[2] = { { .expires = 0, .src = "t", .line = 1 }, { .src = "t", .line = 2 } };
	struct dynsets ds;
	struct built b = { 0 };
	const struct nfr_set *s;
	const char *why;
	bool host;
	static const char yaml[] =
		HEAD "sets: { ban: { dynamic: true } }\nrules:\n  - { name: b, from: ban, action: drop }\n";

	dynsets_init(&ds);
	diags_init(&b.d);
	nfr_init(&b.t);
	c[1].expires = dyn_now_ms() + 60000;
	parse_prefix("192.0.2.7", &c[0].pfx, &host, &why);
	parse_prefix("198.51.100.0/24", &c[1].pfx, &host, &why);
	if (policy_load_buffer("t.yaml", yaml, strlen(yaml), &b.d, &b.p) < 0 || dynsets_sync_policy(&ds, b.p) < 0 ||
	    dynset_add(&ds, dynsets_find(&ds, "ban"), c, 2, &b.d, NULL) < 0) {
		diags_print(&b.d, stdout, false);
		CHECK(0);
	} else {
		o.dyn = &ds;
		CHECK_EQ_INT(nft_build(b.p, &o, &b.t, &b.d), 0);
		s = nfr_set_find(&b.t, "d_ban_4");
		CHECK(s && s->n == 2);
		for (uint32_t i = 0; s && i < s->n; i++) {
			if (s->v[i].lo[0] == 192)
				CHECK_EQ_INT(s->v[i].timeout_ms, 0);
			else
				CHECK(s->v[i].timeout_ms > 60000 && s->v[i].timeout_ms <= 61000 + 1000);
		}
	}
	dynsets_free(&ds);
	built_free(&b);
}

/* Shapes that differ only in negation, or in how many names, are not one
 * run; a run of rules with proto: counts only that protocol's ports; a
 * redirect with an IPv4 from: has no IPv6 rule. */
static void shapes(void)
{
	static const char mapped_drop[] = "ip6 saddr ::ffff:0.0.0.0/96 counter name \"x_malformed\" drop";
	struct built b;

	if (build(&b, HEAD "options: { backend: nftables }\n"
			   "nat:\n  - redirect: { in: lan, from: 192.0.2.0/24, service: tcp/81, to: 3129 }\n"
			   "rules:\n"
			   "  - { name: a, in: lan, service: tcp/1, action: accept }\n"
			   "  - { name: b, in: \"!lan\", service: tcp/2, action: accept }\n"
			   "  - { name: c, in: wan, service: tcp/3, action: accept }\n"
			   "  - { name: d, in: [wan0, lan0], service: tcp/4, action: accept }\n"
			   "  - { name: p, in: up2, proto: tcp, service: [tcp/80, udp/53], action: drop }\n"
			   "  - { name: q, in: up2, proto: tcp, service: [tcp/81, udp/54], action: drop }\n") < 0) {
		CHECK(0);
		built_free(&b);
		return;
	}
	CHECK(strstr(b.text, "iifname { \"lan0\", \"lan1\" } meta l4proto tcp th dport 1 counter name \"r_forward_a\" "
			     "accept") != NULL);
	CHECK(strstr(b.text, "iifname != { \"lan0\", \"lan1\" } meta l4proto tcp th dport 2 counter name "
			     "\"r_forward_b\" accept") != NULL);
	CHECK(strstr(b.text, "iifname \"wan0\" meta l4proto tcp th dport 3 counter name \"r_forward_c\" accept") !=
	      NULL);
	CHECK(strstr(b.text, "iifname { \"lan0\", \"wan0\" } meta l4proto tcp th dport 4 counter name \"r_forward_d\" "
			     "accept") != NULL);
	CHECK(strstr(b.text, "iifname \"wan2\" counter name meta l4proto . th dport map { tcp . 80 : \"r_forward_p\", "
			     "tcp . 81 : \"r_forward_q\" } drop") != NULL);
	CHECK(strstr(b.text, "ip saddr 192.0.2.0/24 meta l4proto tcp th dport 81 redirect to :3129") != NULL);
	/* The redirect's IPv4 from: takes nothing of IPv6: the one ip6 saddr in
	 * the table is each filter chain's drop of IPv4-mapped sources. */
	for (const char *at = b.text; (at = strstr(at, "ip6 saddr")); at++)
		CHECK(!strncmp(at, mapped_drop, sizeof(mapped_drop) - 1));
	built_free(&b);
}

int main(void)
{
	check_begin("nft-dynamic-timeouts");
	dynamic_timeouts();
	check_end();
	check_begin("nft-shapes");
	shapes();
	check_end();
	check_begin("nft-defrag-off");
	defrag_off();
	check_end();
	check_begin("nft-port-runs");
	port_runs();
	check_end();
	check_begin("nft-sets-and-nat");
	sets_and_nat();
	check_end();
	check_begin("nft-hairpin-sets");
	hairpin_sets();
	check_end();
	check_begin("nft-negated-wildcards-keep-conditions");
	negated_wildcards();
	check_end();
	check_begin("nft-wildcard-ranges");
	wildcard_ranges();
	check_end();
	check_begin("nft-full-rule-refused");
	full_rule_refused();
	check_end();
	check_begin("nft-exprs-bounded");
	exprs_bounded();
	check_end();
	check_begin("nft-refusal-located");
	refusal_located();
	check_end();
	check_begin("nft-shape");
	shape();
	check_end();
	check_begin("nft-anonymous-sets-bound-once");
	anon_sets();
	check_end();
	check_begin("nft-counter-map");
	counter_map();
	check_end();
	check_begin("nft-nat");
	nat();
	check_end();
	CHECK_EXIT();
}
