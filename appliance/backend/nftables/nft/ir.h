/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What nfbox puts into nftables, before it is said in either language:
 * table inet nfbox as chains, sets, named counters and limits, and rules
 * made of matches and statements. build.c makes it from a policy; emit.c
 * turns it into one netlink transaction (libnftnl); print.c into nft syntax
 * (`nfbox plan --nft`). One description, two forms: what the kernel gets
 * and what the operator reads cannot drift apart.
 */
#ifndef NFBOX_NFT_IR_H
#define NFBOX_NFT_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

#define NFR_NAME    96	/* object names: "r_forward_" + a rule name, etc. */
#define NFR_COMMENT 128 /* a named set's comment, with its NUL */

enum nfr_key {
	NFR_KEY_IFNAME, /* 16 bytes, NUL-padded */
	NFR_KEY_IPV4,
	NFR_KEY_IPV6,
	NFR_KEY_PORT,	    /* 2 bytes, network order */
	NFR_KEY_PROTO_PORT, /* meta l4proto . th port: 1 + 2 bytes, each in a 4-byte register */
	NFR_KEY_NFPROTO,    /* meta nfproto: 1 byte (a schedule's set: ipv4, ipv6 while in force) */
};

/* An element: one value (lo) or, in an interval set, the range lo..hi. */
struct nfr_elem {
	uint8_t lo[16], hi[16];
	uint32_t chain;	     /* a counter map's element: this counter (index in counters) */
	uint16_t map_port;   /* a port map's element: the port its key goes to */
	uint64_t timeout_ms; /* a timeout set's element: it goes after this long; 0 never */
};

struct nfr_set {
	char name[NFR_NAME]; /* "" for an anonymous set */
	uint32_t id;	     /* unique in the transaction */
	enum nfr_key key;
	bool interval;
	bool objmap;	    /* a counter map: each element names its counter */
	bool portmap;	    /* a port map (anonymous, of ports): each element goes to
			      map_addr . its map_port (a forward-port of a range to a range) */
	uint8_t map_family; /* a port map's: POLICY_FAM_IPV4 or _IPV6 */
	uint8_t map_addr[16];
	bool bound;		   /* anonymous: used by a rule already (the kernel binds it to one) */
	bool dynamic;		   /* filled by the packet path (a meter): flags dynamic, and timeout
			       unless timeout_s is 0 (connection counts: an element goes when
			       its count is zero) */
	bool timeout;		   /* a dynamic set of the policy: flags interval,timeout, changed by
				 nfbox set (elements added and deleted at run time, each with a timeout) */
	uint64_t timeout_s;	   /* dynamic: an element not updated for this long goes */
	uint32_t size;		   /* dynamic: at most this many elements */
	char comment[NFR_COMMENT]; /* a named set's: what fills it ("" none) */
	struct nfr_elem *v;
	uint32_t n, cap;
};

enum nfr_match_kind {
	NFR_M_IIFNAME, /* iifname (set, or the one name) */
	NFR_M_OIFNAME,
	NFR_M_NFPROTO,	  /* meta nfproto ipv4|ipv6 (value: NFPROTO_*) */
	NFR_M_ADDR,	  /* ip/ip6 saddr|daddr in set (family, dir) */
	NFR_M_ADDR_EQ,	  /* ip/ip6 saddr|daddr in addr/value (family, dir; value: prefix length) */
	NFR_M_L4PROTO,	  /* meta l4proto (value) */
	NFR_M_PORT,	  /* th sport|dport: in set, or lo..hi */
	NFR_M_PROTO_PORT, /* meta l4proto . th sport|dport in set (dir) */
	NFR_M_ICMP_TYPE,  /* icmp / icmpv6 type (family, value) */
	NFR_M_CT_STATE,	  /* ct state, any of the bits in value (nft's NF_CT_STATE bits) */
	NFR_M_CT_DNAT,	  /* ct status dnat */
	NFR_M_FRAG4,	  /* ip frag-off & 0x3fff != 0: an IPv4 fragment */
	NFR_M_FRAG6_MORE, /* frag more-fragments 1 */
	NFR_M_FRAG6_OFF,  /* frag frag-off != 0 */
	NFR_M_TCP_SYN,	  /* tcp flags & (syn | ack) == syn: a connection's first segment */
	NFR_M_SCHED,	  /* meta nfproto @w_RULE: the rule's schedule is open (the daemon fills the set) */
};

struct nfr_match {
	enum nfr_match_kind kind;
	bool neg;	/* iifname/oifname, addresses: != (not in the set) */
	uint8_t family; /* POLICY_FAM_IPV4 / _IPV6 where it matters */
	uint8_t dir;	/* 0 source, 1 destination */
	uint32_t value;
	uint16_t lo, hi;  /* NFR_M_PORT without a set */
	uint8_t addr[16]; /* NFR_M_ADDR_EQ */
	char ifname[16];  /* one interface, without a set */
	const struct nfr_set *set;
};

enum nfr_stmt_kind {
	NFR_S_COUNTER, /* counter name NAME ("": an anonymous counter of the rule's own) */
	NFR_S_LIMIT,   /* limit name NAME (a match: the rule goes on only within it) */
	NFR_S_LOG,     /* log group GROUP prefix NAME */
	NFR_S_ACCEPT,
	NFR_S_DROP,
	NFR_S_REJECT_TCP,   /* reject with tcp reset */
	NFR_S_REJECT_ICMPX, /* reject with icmpx type CODE (value: NFT_REJECT_ICMPX_*) */
	NFR_S_JUMP,	    /* jump NAME */
	NFR_S_MASQ,
	NFR_S_SNAT,	   /* snat FAMILY to addr_lo[-addr_hi]; netmap: snat FAMILY prefix to
			      addr_lo/LEN (the host bits kept) */
	NFR_S_DNAT,	   /* dnat FAMILY to addr_lo[:port]; netmap as snat's */
	NFR_S_DNAT_MAP,	   /* dnat FAMILY to th dport map SET (a port map) */
	NFR_S_REDIRECT,	   /* redirect to :port */
	NFR_S_COUNTER_MAP, /* counter name meta l4proto . th dport map SET: counts
			      and matches (a key not in the map ends the rule) */
	NFR_S_METER,	   /* update @SET { ip/ip6 saddr limit rate R/PER burst B packets }:
			    a bucket per source; over its limit the rule ends (a match) */
	NFR_S_CONNLIMIT,   /* add @SET { ip/ip6 saddr ct count N } (a set: per source), or
			      ct count N (none: the rule's): over N the rule ends (a match) */
	NFR_S_NOTRACK,	   /* notrack */
	NFR_S_SYNPROXY,	   /* synproxy mss PORT wscale VALUE sack-perm */
	NFR_S_CT_MARK_CUT, /* ct mark set ct mark & ~POLICY_CUT_MASK | VALUE << POLICY_CUT_SHIFT: a
			      scheduled rule's connection, cut at its edge (only nfbox's bits change) */
	NFR_S_NFTRACE,	   /* meta nftrace set 1: the packet is traced (a live trace) */
};

struct nfr_stmt {
	enum nfr_stmt_kind kind;
	char name[NFR_NAME];
	uint32_t value;
	uint8_t family;
	uint8_t addr_lo[16], addr_hi[16];
	uint16_t port;
	bool netmap;		   /* NFR_S_SNAT, NFR_S_DNAT: addr_lo..addr_hi is a prefix mapped address by address */
	const struct nfr_set *set; /* NFR_S_COUNTER_MAP, NFR_S_METER, NFR_S_CONNLIMIT, NFR_S_DNAT_MAP */
	uint32_t rate, per, burst; /* NFR_S_METER (family: the address's) */
};

struct nfr_chain {
	char name[32];
	bool base;
	bool nat;      /* type nat, else type filter */
	uint32_t hook; /* NF_INET_* (NF_INET_INGRESS: with device) */
	char device[16];
	int32_t prio;
	bool policy_drop;
};

/* What one nftables rule holds. The builder makes at most about ten
 * matches and four statements of a policy rule (interface lists are one
 * set each, however many names and wildcards they hold); a rule that would
 * need more is refused at its place (nfr_rule_add), never cut short. */
#define NFR_MAX_MATCH 16
#define NFR_MAX_STMT  6

struct nfr_rule {
	uint32_t chain;			       /* index into the table's chains */
	struct nfr_match m[NFR_MAX_MATCH + 1]; /* the last one: scratch of a full rule */
	uint32_t nm;
	struct nfr_stmt s[NFR_MAX_STMT + 1];
	uint32_t ns;
	bool full;	  /* a match or statement did not fit: the rule is refused */
	struct loc loc;	  /* the policy element it comes from (no place: nfbox's own) */
	const char *what; /* e.g. "rule 'web'", for messages */
};

struct nfr_counter {
	char name[NFR_NAME];
	uint64_t packets, bytes; /* the value it starts with */
};

struct nfr_limit {
	char name[NFR_NAME];
	uint32_t rate, burst; /* rate per `per` seconds */
	uint32_t per;
};

/* Objects of one kind by name (open addressing; entries are index + 1), so
 * that a table of 65,536 rules is built in linear time. */
struct nfr_index {
	uint32_t *v;
	uint32_t cap, n;
};

struct nfr_table {
	struct nfr_chain *chains;
	uint32_t nchains;
	struct nfr_set **sets; /* named and anonymous, in the order they are made */
	uint32_t nsets;
	struct nfr_counter *counters;
	uint32_t ncounters;
	struct nfr_limit *limits;
	uint32_t nlimits;
	struct nfr_rule *rules;
	uint32_t nrules;
	char **whats; /* rule descriptions, owned */
	uint32_t nwhats;
	struct nfr_index counter_ix, set_ix, limit_ix; /* named sets only */
	int err;				       /* first failure, sticky: -ENOMEM, or -E2BIG for a rule
				    that does not fit (err_loc, err_what say which) */
	struct loc err_loc;
	char err_what[2 * POLICY_MAX_NAME + 96];
};

void nfr_init(struct nfr_table *t);
void nfr_free(struct nfr_table *t);

/* Builders: each returns the new object (NULL after an allocation failure,
 * then t->err is set and later calls are no-ops). */
uint32_t nfr_chain_add(struct nfr_table *t, const struct nfr_chain *c);
struct nfr_set *nfr_set_new(struct nfr_table *t, const char *name, enum nfr_key key, bool interval);
void nfr_set_add(struct nfr_table *t, struct nfr_set *s, const uint8_t *lo, const uint8_t *hi);
/* Sort; interval sets: merge the elements (overlaps are refused by the
 * kernel; in a map only elements with the same data are merged); other
 * sets: one element per key. */
void nfr_set_normalize(struct nfr_set *s);
/* lo..hi (keys of bits bits) as a prefix if it is one: its length, else -1. */
int nfr_prefix_len(const uint8_t *lo, const uint8_t *hi, unsigned bits);
/* Forget s, which must be the last set made (one value needs no set). */
void nfr_set_drop(struct nfr_table *t, struct nfr_set *s);
/* Forget the anonymous sets no rule uses (made for a rule that turned out
 * never to match): the kernel refuses an anonymous set left unbound. */
void nfr_drop_unbound(struct nfr_table *t);
const struct nfr_set *nfr_set_find(const struct nfr_table *t, const char *name);
void nfr_counter_add(struct nfr_table *t, const char *name, uint64_t packets, uint64_t bytes);
/* The index of the counter called name, or UINT32_MAX. */
uint32_t nfr_counter_find(const struct nfr_table *t, const char *name);
void nfr_limit_add(struct nfr_table *t, const char *name, uint32_t rate, uint32_t per, uint32_t burst);
const struct nfr_limit *nfr_limit_find(const struct nfr_table *t, const char *name);
/* A new match or statement at the end of r, zeroed but for its kind. When
 * r is full it is marked so (r->full) and the one returned is a scratch
 * slot that nothing reads. */
struct nfr_match *nfr_match_add(struct nfr_rule *r, enum nfr_match_kind k);
struct nfr_stmt *nfr_stmt_add(struct nfr_rule *r, enum nfr_stmt_kind k);
/* A copy of r, appended; what (copied) names it in messages. An anonymous
 * set that an earlier rule uses already is copied for this one: the
 * kernel binds an anonymous set to one rule. A full rule is not added:
 * t->err becomes -E2BIG, with its place and what. */
void nfr_rule_add(struct nfr_table *t, const struct nfr_rule *r, const char *what);

/* Bytes of a key. */
uint32_t nfr_key_len(enum nfr_key k);

#endif
