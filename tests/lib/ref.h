/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reference semantics of a policy, for differential tests: what the
 * first matching rule is, by walking the rules one by one as the policy
 * language defines them (policy/README.md), with none of the compiler's or
 * the classifier's machinery. Also what the classifier must make of a
 * packet's bytes (ref_parse: headers, extension chains, fragments, keys),
 * written from the RFCs rather than from the BPF code, random policies and
 * random packets (as keys, and as bytes for BPF_PROG_TEST_RUN).
 */
#ifndef NFBOX_TEST_REF_H
#define NFBOX_TEST_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/bpf/compile/plan.h"

/* A packet as the classifier keys it. */
struct ref_pkt {
	int hook;
	uint8_t fam;	       /* POLICY_FAM_IPV4 / _IPV6 */
	const char *iif, *oif; /* NULL: none */
	uint8_t src[16], dst[16];
	int proto;
	uint16_t sport, dport;
	int icmp_type;
	bool frag;	   /* a fragment: keyed by protocol only */
	int ct;		   /* NFB_CT_* */
	uint8_t tcp_flags; /* TCP's flags byte (0 when the header is too short for it) */
	bool closes;	   /* a packet that closes its connection before the rules see it (a TCP reset) */
};

void ref_seed(uint64_t seed);
uint32_t ref_rnd(uint32_t n);

bool ref_has_ports(int proto);
void ref_random_addr_bytes(uint8_t fam, uint8_t *a);

/* A dynamic set's entries at run time: whether the set of index set (in
 * the policy's sets) holds address a of family fam. NULL: every dynamic set
 * is empty. */
extern bool (*ref_dyn_holds)(uint32_t set, uint8_t fam, const uint8_t *a);

bool ref_rule_matches(const struct rule *r, const struct ref_pkt *k);
/* The first rule of the hook that matches, or -1 (the default). */
int ref_first_match(const struct plan_hook *h, const struct ref_pkt *k);

/*
 * Rate limits as the reference models them: only rates of 1/hour, which
 * refill nothing while a test runs, so a bucket is burst tokens and each
 * packet within the limit takes one; over it, the rule does not match and
 * the walk goes on (policy/README.md, "Rate limits"). A bucket per rule and
 * hook, or per rule, hook and source address (per: source).
 */
struct ref_limits {
	struct ref_bucket {
		int hook;
		const struct rule *rule;
		uint8_t fam, src[16]; /* per source: the address; else zero */
		uint32_t left;
	} *v;
	uint32_t n, cap;
	/* Connection limits (policy/README.md, "Connection limits"): the
	 * connections counted, each by its owner (the rule, and per source the
	 * address) and its tuple. A new connection the rule matches fits while
	 * its owner holds fewer than N, and is then counted until TCP closes it
	 * (ref_conns_close); one counted already, or a packet that closes its
	 * connection, fits without a count. */
	struct ref_conn {
		const struct rule *rule;
		uint8_t owner[16]; /* per source: the address; else zero */
		uint8_t fam, src[16], dst[16];
		int proto;
		uint16_t sport, dport;
	} *conns;
	uint32_t nconns, conns_cap;
#define REF_OVER_RULES 4096
	uint64_t over[3][REF_OVER_RULES]; /* by hook and rule bit: packets over a limit */
};
/* The first rule that matches and is within its limit, or -1; takes the
 * token, or counts the connection. */
int ref_first_match_limited(const struct plan_hook *h, const struct ref_pkt *k, struct ref_limits *lim);
/* k's connection closed: its count, if counted, given back. */
void ref_conns_close(struct ref_limits *lim, const struct ref_pkt *k);
void ref_limits_free(struct ref_limits *lim);

/* A random valid policy of nrules rules (malloc'd YAML). */
struct ref_policy_opts {
	uint32_t nrules;
	const char *const *ifaces; /* interface names the groups list */
	bool random_defaults;	   /* default verdicts and options.defrag at random */
	bool limits;		   /* limit: 1/hour with a small burst on some rules */
	const char *name_prefix;   /* before each rule's name ("r0"); NULL: none */
};
char *ref_random_policy(const struct ref_policy_opts *o, size_t *len);
/* A random key (the unit test's packets). */
void ref_random_pkt(struct ref_pkt *k);

/* ---- bytes ---- */

enum ref_verdict_kind {
	REF_KEYED,     /* judged by the rules (or the default) */
	REF_MALFORMED, /* dropped: a header, the chain or the L4 key cut short */
	REF_FRAGMENT,  /* a fragment: with defrag on dropped, else keyed by protocol */
};

/* What the classifier must make of an IP packet (from its first byte). */
enum ref_verdict_kind ref_parse(const uint8_t *ip, size_t len, uint8_t fam, struct ref_pkt *k);

/* A random IP packet of at most cap bytes for fam: addresses and ports the
 * random policies use, options, extension-header chains of every length,
 * fragments, truncations and lying length fields. Returns its length. */
size_t ref_random_bytes(uint8_t fam, uint8_t *buf, size_t cap);

void ref_hexdump(FILE *f, const uint8_t *p, size_t len);

#endif
