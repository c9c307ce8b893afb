/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What if: the path one packet would take through a policy (`nfbox trace`),
 * judged from the policy's model alone, rule by rule, with the reason each
 * rule before the deciding one did not match. Its own judge, written from
 * the language's definition (policy/README.md, "How a packet is matched"),
 * apart from the compiler, both engines and the tests' reference; the
 * differential test (tests/diff/) holds its answers to the engines'.
 *
 * The path: the packet arrives on an interface (--in) and meets the early
 * drop (XDP, or ingress with the nftables backend), then the destination
 * translation of prerouting (forward-port, redirect), then the filter hook:
 * input when it is addressed to the appliance, forward when it leaves
 * through another interface (--out), and the source translation of
 * postrouting (masquerade, snat). A packet of the appliance's own (no --in)
 * meets output and postrouting.
 *
 * What a file cannot say is said, never guessed: a dynamic set's entries
 * (judged empty unless given), whether a limit has room (assumed it has),
 * the addresses of the appliance's interfaces (hairpin, redirect).
 */
#ifndef NFBOX_POLICY_TRACE_H
#define NFBOX_POLICY_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/policy.h"

/* A packet as the user describes it. */
struct trace_packet {
	uint8_t fam;					 /* POLICY_FAM_IPV4 or _IPV6 */
	char iif[POLICY_IFNAMSIZ], oif[POLICY_IFNAMSIZ]; /* "" none */
	uint8_t src[16], dst[16];
	int proto;     /* 0..255 */
	int sport;     /* -1: not given */
	int dport;     /* -1: not given */
	int icmp_type; /* -1: not given */
	int ct;	       /* bit of enum policy_ct: index into policy_ct_names */
	int64_t at;    /* the instant schedules are judged at (seconds since the epoch) */
	/* Where a redirect takes the packet: the input interface's address of
	 * its family (the kernel's choice: its first; the caller looks it up
	 * where the interface is); have_local false: not known. */
	bool have_local;
	uint8_t local[16];
	/* The interfaces here that hold the destination address (a forward-
	 * port's hairpin takes what arrives elsewhere for an address of its
	 * in:); dst_ifs_known false: not known (a file judged off the box). */
	bool dst_ifs_known;
	uint32_t ndst_ifs;
	char dst_ifs[8][POLICY_IFNAMSIZ];
};

/* The entries of dynamic sets, where they are known. */
struct trace_sets {
	bool known; /* false: not known (a file): every dynamic set judged empty */
	/* Whether dynamic set `set` (index into policy.sets) holds address a of
	 * family fam; the entry that holds it written into entry (len bytes). */
	bool (*holds)(void *arg, uint32_t set, uint8_t fam, const uint8_t *a, char *entry, size_t len);
	void *arg;
};

/* One rule tried on the hook. */
struct trace_step {
	const struct rule *rule;
	bool matched;
	char why[512];	     /* not matched: each key that does not, and why; matched: notes */
	char dyn_entry[80];  /* a dynamic set's entry that matched from: or to:, "" none */
	int in_force;	     /* when: -1 none, 0 out of force, 1 in force */
	int64_t next_change; /* when: the next change (SCHED_NEVER: none within 8 days) */
};

enum trace_by {
	TRACE_BY_RULE,	      /* a rule decides */
	TRACE_BY_DEFAULT,     /* no rule matched: the hook's default */
	TRACE_BY_ESTABLISHED, /* established: accept, before the rules */
	TRACE_BY_MALFORMED,   /* dropped before the rules (an IPv4-mapped IPv6 address) */
	TRACE_BY_UNFILTERED,  /* the policy does not filter this hook: accepted */
	TRACE_BY_EARLY,	      /* dropped by an early rule before the stack */
	TRACE_BY_UNKNOWN,     /* the path cannot be followed further (an interface not given) */
};

/* What a hook makes of the packet. */
struct trace_hook {
	enum policy_hook hook;
	enum trace_by by;
	const struct rule *rule; /* TRACE_BY_RULE, TRACE_BY_EARLY */
	enum policy_action verdict;
	struct trace_step *steps; /* the rules tried, in order; the deciding one last */
	uint32_t nsteps;
};

struct trace_nat {
	const struct nat_rule *nat; /* NULL: none applies */
	char what[160];		    /* what it does, in words */
	uint8_t addr[16];	    /* forward-port: the new destination */
	int port;		    /* the new destination port; -1 kept */
};

/* Where the caller took the policy and the sets' entries from (printed as
 * given; the judge does not read it). */
struct trace_source {
	const char *file;     /* the policy file traced */
	const char *policy;   /* "file", "daemon": whence the file's name */
	const char *sets;     /* "file", "daemon", NULL not known */
	bool changed_on_disk; /* daemon: the file was changed after it was loaded */
};

struct trace_result {
	struct trace_source source;
	struct trace_packet pkt; /* as given */
	bool sets_known;
	const struct rule *early; /* the early rule that drops it, NULL none */
	bool early_possible;	  /* the policy has early rules on the packet's --in */
	struct trace_nat dnat;	  /* prerouting */
	struct trace_packet seen; /* the packet as the filter hook sees it */
	struct trace_hook filter; /* input, forward or output */
	struct trace_nat snat;	  /* postrouting (forward, output), if accepted */
	char note[256];		  /* what could not be judged, "" nothing */
};

/* Trace k through p. Returns 0 with *out (free with trace_free), -EINVAL
 * when k names no interface at all, -ENOMEM. */
int trace_run(const struct policy *p, const struct trace_packet *k, const struct trace_sets *sets,
	      struct trace_result **out);
void trace_free(struct trace_result *r);

/* One hook alone: what hook h makes of packet k as the hook sees it (after
 * prerouting's translation). 0, or -ENOMEM; free out->steps with free(). */
int trace_judge_hook(const struct policy *p, enum policy_hook h, const struct trace_packet *k,
		     const struct trace_sets *sets, struct trace_hook *out);

/* Whether one of m's prefixes holds address a (negation and dynamic
 * sets aside). */
bool trace_listed(const struct addr_match *m, uint8_t fam, const uint8_t *a);

/* The decision's name in the words of `nfbox stats --json`: the rule's
 * name, "(default)", "(established)", "(malformed)"; NULL for the rest. */
const char *trace_decided_by(const struct trace_hook *h);

void trace_print_text(FILE *f, const struct trace_result *r);
void trace_print_json(FILE *f, const struct trace_result *r);

#endif
