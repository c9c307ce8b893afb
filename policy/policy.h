/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The policy model: what a valid policy file means, with every element
 * keeping its place in the file for later diagnostics. Built by
 * policy_load() (loader + validator); consumed by the compiler (plan.h).
 */
#ifndef NFBOX_POLICY_H
#define NFBOX_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

/* Limits (documented in policy/README.md; exceeding one is an error). */
#define POLICY_MAX_RULES	   65536    /* per hook */
#define POLICY_MAX_PREFIXES	   2000000u /* in all sets together; and, apart, written in rules */
#define POLICY_MAX_GROUP_IFACES	   4096
#define POLICY_MAX_IFACE_WILDCARDS 63 /* in one in: or out: */
#define POLICY_MAX_SERVICE_ENTRIES 65536
#define POLICY_MAX_SCHEDULED	   1024		  /* rules with when: */
#define POLICY_MAX_WINDOWS	   16		  /* windows in one when: */
#define POLICY_MAX_HOSTS	   256		  /* host names in one set */
#define POLICY_MAX_LIMITS	   4096		  /* rules with limit: or a dynamic set, counted once per hook */
#define POLICY_MAX_CONNS	   1000000	  /* limit: { connections: N } */
#define POLICY_MAX_TIMEOUT	   (365u * 86400) /* limit: { timeout: } (DYNSET_MAX_TIMEOUT_S) */
#define POLICY_MAX_DYNSETS	   1022		  /* sets with dynamic: true */
#define POLICY_MAX_NAME		   64
#define POLICY_IFNAMSIZ		   16

enum policy_hook {
	POLICY_HOOK_INPUT = 0,
	POLICY_HOOK_FORWARD = 1,
	POLICY_HOOK_OUTPUT = 2,
	POLICY_HOOK_MAX = 3,
};

enum policy_family {
	POLICY_FAM_IPV4 = 1,
	POLICY_FAM_IPV6 = 2,
	POLICY_FAM_ANY = 3,
};

enum policy_action {
	POLICY_DROP = 0,
	POLICY_ACCEPT = 1,
	POLICY_REJECT = 2, /* drop, and tell the sender (rules only, not defaults) */
};

/* How a reject answers (reject-with:). */
enum policy_reject {
	POLICY_REJECT_TCP_RESET = 0, /* the default: TCP a reset, the rest port-unreachable */
	POLICY_REJECT_PORT,	     /* ICMP/ICMPv6 port unreachable, TCP too */
	POLICY_REJECT_ADMIN,	     /* administratively prohibited */
	POLICY_REJECT_HOST,	     /* host (IPv6: address) unreachable */
	POLICY_REJECT_NET,	     /* net unreachable (IPv6: no route) */
	POLICY_REJECT_MAX,
};

enum policy_backend {
	POLICY_BACKEND_BPF = 0,
	POLICY_BACKEND_NFTABLES = 1,
};

enum policy_ct {
	POLICY_CT_NEW = 1 << 0,
	POLICY_CT_ESTABLISHED = 1 << 1,
	POLICY_CT_RELATED = 1 << 2,
	POLICY_CT_INVALID = 1 << 3,
	POLICY_CT_UNTRACKED = 1 << 4,
	POLICY_CT_ALL = 0x1f,
};
#define POLICY_MAX_EARLY 64 /* rules with early: true (the XDP program's rule mask) */
#define POLICY_CT_STATES 5  /* bit s of a state mask is policy_ct_names[s] */

struct prefix {
	uint8_t family; /* POLICY_FAM_IPV4 or _IPV6 */
	uint8_t plen;
	uint8_t addr[16];
	struct loc loc;
};

/* A reference list as written: from/to resolve to prefixes, in/out to names. */
struct addr_match {
	bool any;	  /* no restriction */
	bool neg;	  /* "!office": every address (of either family) not in v */
	struct prefix *v; /* resolved prefixes (sets expanded) */
	uint32_t n;
	uint8_t families;
	char *what;    /* as written, for display: "office", "[a, b]" */
	int neg_state; /* loading: 0 nothing seen, 1 negated entries, -1 plain ones */
	uint32_t dyn;  /* 1 + index in policy.sets of a dynamic set, named alone (n is 0,
				    any false; neg as written); 0: none. Only in rules' from/to. */
};

struct addr_set {
	char *name;
	struct loc loc;
	struct prefix *v;
	uint32_t n;
	uint8_t families; /* POLICY_FAM_* bits present */
	bool used;
	bool dynamic; /* `dynamic: true`: no entries here; they come at run time (nfbox set) */
	/* A dynamic set the daemon fills itself (a feed): from a country
	 * database or from host names over DNS (not changed by `nfbox set`),
	 * or with the sources of Suricata's alerts. */
	enum set_feed {
		SET_FEED_NONE,
		SET_FEED_COUNTRY,
		SET_FEED_HOSTS,
		SET_FEED_EVE,
		SET_FEED_URL
	} feed;
	char (*countries)[3]; /* country: ISO 3166 codes, upper case */
	uint32_t ncountries;
	char *database;	      /* country: the MMDB file (absolute) */
	bool feed_unreadable; /* country: the database could not be read at load: the set starts empty */
	char **hosts;	      /* hosts: the names */
	uint32_t nhosts;
	uint32_t min_ttl, max_ttl, grace; /* hosts: seconds */
	char *url;			  /* url: the list's https:// address */
	char *ca;			  /* url: the CA file its server is verified with; NULL: the system's */
	uint32_t refresh;		  /* url: seconds between fetches */
	char *eve;			  /* eve: Suricata's eve.json (absolute) */
	uint32_t severity;		  /* eve: alerts of severity 1..this (1 the gravest) */
	uint32_t ban;			  /* eve: seconds an offender stays; 0: until deleted */
	bool shared;			  /* shared: true: kept in etcd for every node of a fleet */
	/* never-ban: what the daemon never puts into this dynamic set by
	 * itself (Suricata, a limit's overload, a fleet's other nodes) and
	 * `nfbox set add` only with --force; any false, n 0: nothing beyond
	 * what is never banned anyway (options.never_ban, the built-in ranges,
	 * the appliance's own addresses) */
	struct addr_match never_ban;
};

/* What fills a set that the daemon feeds itself from a source it follows,
 * which `nfbox set` does not change by hand ("its country database", "DNS
 * (its host names)", "its URL"); NULL for a set changed by hand (dynamic:
 * true; Suricata's offenders may be let go by hand). */
static inline const char *policy_set_fed_by(const struct addr_set *s)
{
	switch (s->feed) {
	case SET_FEED_COUNTRY:
		return "its country database";
	case SET_FEED_HOSTS:
		return "DNS (its host names)";
	case SET_FEED_URL:
		return "its URL";
	default:
		return NULL;
	}
}

struct iface_group {
	char *name;
	struct loc loc;
	char (*ifnames)[POLICY_IFNAMSIZ];
	uint32_t n;
	bool used;
};

/* One protocol and port range; lo == hi for a single port. */
struct port_range {
	uint8_t proto; /* IPPROTO_TCP, _UDP or _SCTP */
	uint16_t lo, hi;
	struct loc loc;
};

struct service {
	char *name;
	struct loc loc;
	struct port_range *v;
	uint32_t n;
	bool used;
	bool full;	    /* over POLICY_MAX_SERVICE_ENTRIES (reported once) */
	uint8_t cont_proto; /* loading: the protocol a bare port takes (lx_port_list) */
};

struct iface_match {
	bool any;
	bool neg; /* "!wan": every interface not in ifnames */
	char (*ifnames)[POLICY_IFNAMSIZ];
	uint32_t n;
	char *what;
	int neg_state; /* loading: as in addr_match */
};

struct port_match {
	bool any;
	struct port_range *v;
	uint32_t n;
	char *what;
	uint8_t cont_proto; /* loading: the protocol a bare port takes (lx_port_list) */
};

/* N events per period: 100/second, 5/minute, 10/hour. */
struct policy_rate {
	uint32_t n;   /* 0: unlimited */
	uint32_t per; /* seconds: 1, 60 or 3600 */
};

/* A rule's limit (limit:), a rate or a number of connections. A rate: the
 * rule matches a packet only while its token bucket (of the rule, or of the
 * packet's source address) holds a token. Connections: the rule matches a
 * new connection only while the rule (or the source) has fewer than conns
 * connections in the conntrack table that the rule let in. Over the limit
 * the packet goes on to the next rules, and with overload its source goes
 * into that dynamic set (pf's max-src-conn ... overload <table>). */
struct policy_limit {
	struct policy_rate rate;   /* n 0: not a rate */
	uint32_t burst;		   /* packets that may pass at once (the bucket's depth) */
	uint32_t conns;		   /* connections: N; 0: not a connection limit */
	bool per_source;	   /* one bucket, or one count, per source address */
	char *overload;		   /* the dynamic set an offender goes into; NULL: none */
	uint32_t overload_set;	   /* 1 + its index in policy.sets (0: not known) */
	uint32_t overload_timeout; /* seconds an offender stays; 0: until deleted */
	struct loc loc, overload_loc;
};

/* Whether the rule has a limit of either kind. */
static inline bool policy_has_limit(const struct policy_limit *l)
{
	return l->rate.n || l->conns;
}

struct tz;

/* A window of a schedule (when:): on the days of days (bit 0 Sunday .. 6
 * Saturday; a window that crosses midnight belongs to the day it starts),
 * from start to end seconds after local midnight in zone tz; end past
 * 86400 crosses midnight. Times are the zone's wall clock. */
struct policy_window {
	uint8_t days;
	uint32_t start, end;
	char tz[64];	 /* tzdata name ("Europe/Berlin", "UTC"), or "localtime" */
	struct tz *zone; /* loaded (policy/schedule/tz.h), owned */
	struct loc loc;
};

/* A rule's schedule: it is in force only within one of its windows. When
 * an accept rule goes out of force, the connections it let in are cut
 * (their conntrack entries deleted) unless keep-connections: true. */
struct policy_when {
	struct policy_window *v;
	uint32_t n;	/* 0: always */
	uint32_t sched; /* 1 + its index among the policy's rules with when: (0: none) */
	bool keep;	/* keep-connections: true: what it let in goes on after its windows */
	struct loc keep_loc;
	uint16_t cut; /* the id its connections are known by (1..POLICY_CUT_IDS); 0: none are cut */
	struct loc loc;
};

/* Connections a scheduled accept rule let in are known by the rule's cut
 * id, taken from its name (so that a reload keeps it): in conntrack's mark,
 * bits POLICY_CUT_SHIFT.. (nftables), or beside their tuple (BPF). */
#define POLICY_CUT_IDS	 4095
#define POLICY_CUT_SHIFT 20
#define POLICY_CUT_MASK	 0xfff00000u

struct rule {
	char *name;
	bool unnamed; /* no name: was given; name is a placeholder */
	struct loc loc;
	uint8_t hooks; /* 1 << POLICY_HOOK_* */
	struct iface_match in, out;
	struct addr_match from, to;
	struct port_match service, sport;
	int proto;	     /* -1: any */
	uint8_t *icmp_types; /* ICMP/ICMPv6 types, ascending, distinct */
	uint16_t nicmp;	     /* 0: any type */
	uint8_t state;	     /* POLICY_CT_* mask; POLICY_CT_ALL: any */
	enum policy_action action;
	enum policy_reject reject_with; /* action reject only */
	bool log;
	struct policy_limit limit;
	char *comment;
	uint8_t families; /* families the rule can match at all */
	bool implicit;	  /* added by ha: (the pair's own traffic), not written by the operator */
	bool early;	  /* early: true: dropped at XDP on its in: interfaces, before the stack */
	struct loc early_loc;
	bool synproxy; /* synproxy: true: the kernel answers the TCP handshake (SYN cookies) first */
	struct loc synproxy_loc;
	struct policy_when when; /* when: the rule is in force only within these windows */
};

struct hook_conf {
	bool present;
	enum policy_action def;
	struct loc loc;
};

enum nat_kind {
	NAT_MASQUERADE,
	NAT_SNAT,
	NAT_FORWARD_PORT,
	NAT_REDIRECT,
	NAT_NO_NAT,	/* what it matches leaves without source translation */
	NAT_ONE_TO_ONE, /* inside <-> outside, both ways (an address or a prefix) */
	NAT_NPTV6,	/* the same for IPv6 prefixes */
};

struct nat_rule {
	enum nat_kind kind;
	struct loc loc;
	/* in: forward-port, redirect; out: masquerade, snat, no-nat, and for
	 * one-to-one and nptv6 their interface (both ways) */
	struct iface_match in, out;
	struct addr_match from;	   /* all but one-to-one, nptv6: only sources in it */
	struct addr_match dest;	   /* masquerade, snat, no-nat, forward-port: only to these (destination:) */
	struct prefix to_addr;	   /* snat: first address of the range; forward-port: the target;
				   one-to-one, nptv6: the outside address or prefix */
	struct prefix to_last;	   /* snat: last address of the range (to_addr for one) */
	struct prefix inside;	   /* one-to-one, nptv6: the inside address or prefix */
	uint16_t to_port;	   /* forward-port: 0 keeps the port; redirect: the local port */
	uint16_t to_port_last;	   /* forward-port to a range of ports: its last (to_port for one):
				   the service's ranges map onto it port by port */
	struct port_match service; /* forward-port, redirect: what is translated */
	bool hairpin;		   /* forward-port: inside clients reaching the outside address too */
	uint8_t families;	   /* the traffic it translates (POLICY_FAM_*) */
	bool family_given;	   /* masquerade: family: written (else IPv4 only) */
	struct loc to_loc;
	/* masquerade out of an interface with a virtual address (ha:): that
	 * interface's flows of that family take the virtual address (snat),
	 * as the kernel's masquerade forgets its flows when an address or a
	 * link goes away, and conntrackd then makes the peer forget them too */
	struct nat_vip {
		char ifname[POLICY_IFNAMSIZ];
		struct prefix addr; /* the address alone (full length) */
	} *vips;
	uint32_t nvips;
};

/* Whether a NAT entry translates the source of connections on their way
 * out (a no-nat takes that away), or their destination on the way in;
 * one-to-one and nptv6 do both. */
static inline bool nat_is_source(const struct nat_rule *n)
{
	return n->kind == NAT_MASQUERADE || n->kind == NAT_SNAT || n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6;
}
static inline bool nat_is_dest(const struct nat_rule *n)
{
	return n->kind == NAT_FORWARD_PORT || n->kind == NAT_REDIRECT || n->kind == NAT_ONE_TO_ONE ||
	       n->kind == NAT_NPTV6;
}
/* The interfaces a NAT entry's translation of destinations takes packets from. */
static inline const struct iface_match *nat_in(const struct nat_rule *n)
{
	return n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6 ? &n->out : &n->in;
}

struct capture_match {
	int proto; /* -1 any */
	struct addr_match from, to;
	struct port_match service;
	uint32_t min_len, max_len; /* max_len 0: no limit */
	bool non_ip;		   /* capture non-IP frames too */
};

struct capture_conf {
	char *name;
	struct loc loc;
	char ifname[POLICY_IFNAMSIZ];
	char mirror_from[POLICY_IFNAMSIZ]; /* "" if none */
	struct capture_match match;
	char *file;
	uint64_t rotate_size; /* bytes, 0: no rotation */
	uint32_t rotate_keep;
	uint32_t snaplen;
};

/* ha: one node of an active/backup pair. keepalived moves the virtual
 * addresses (VRRP, all in one sync group), conntrackd copies the connection
 * state over the sync link (FTFW). */
#define HA_SYNC_PORT  3780 /* conntrackd's UDP port, both ways */
#define HA_VRRP_PROTO 112
/* VRRP's advertisement interval, ms: VRRPv3 counts it in centiseconds, in
 * 12 bits. The floor is nfbox's own (policy/README.md says why). */
#define HA_ADVERT_DEFAULT_MS 1000
#define HA_ADVERT_MIN_MS     100
#define HA_ADVERT_MAX_MS     40950
#define HA_ADVERT_STEP_MS    10

struct ha_virtual {
	char ifname[POLICY_IFNAMSIZ];
	struct prefix addr; /* the address (all its bits) and, in plen, its prefix length */
	uint8_t id;	    /* VRRP virtual router id, 1..255 */
	struct loc loc;
};

struct ha_conf {
	bool present;
	struct loc loc;
	uint8_t priority;	/* 1..254: the higher node is master */
	uint32_t preempt_delay; /* seconds a node that returns waits before taking over */
	uint32_t advert_ms;	/* VRRP advertisement interval */
	char sync_ifname[POLICY_IFNAMSIZ];
	/* The other node's address on the sync link; or both nodes' (two),
	 * the one this node has being its own, so that the two nodes'
	 * policies differ only in priority. */
	struct prefix sync_peers[2];
	uint8_t npeers;
	struct prefix sync_addr; /* this node's; family 0: found on the interface at start */
	struct ha_virtual *virt;
	uint32_t nvirt;
};

struct policy_options {
	bool defrag;
	bool established_accept;
	struct loc established_loc; /* where established: was given (line 0: default) */
	struct loc defrag_loc;
	struct policy_rate log_rate;
	uint32_t log_burst;
	struct policy_rate reject_rate; /* rejects answered (all rules together) */
	enum policy_backend backend;
	struct loc backend_loc;
	struct addr_match never_ban; /* never-ban: of every dynamic set (addr_set.never_ban) */
};

struct policy {
	const struct source *src;
	struct sources sources; /* the files it was read from (src, set files): its places point into them */
	int version;
	struct iface_group *groups;
	uint32_t ngroups;
	struct addr_set *sets;
	uint32_t nsets;
	struct service *services;
	uint32_t nservices;
	struct hook_conf hooks[POLICY_HOOK_MAX];
	struct policy_options opt;
	struct rule *rules;
	uint32_t nrules;
	struct nat_rule *nat;
	uint32_t nnat;
	struct capture_conf *captures;
	uint32_t ncaptures;
	struct ha_conf ha;
	uint64_t nprefixes;	  /* in sets, for the limit */
	uint64_t nprefixes_rules; /* written in rules, nat and captures: a limit of its own */
};

/* Load, parse and validate the policy at path. Diagnostics (errors and
 * warnings) go to d; on success *out is a new policy (even with warnings).
 * Returns 0, -EINVAL for an invalid policy, or -errno when the file cannot
 * be read (also reported in d). */
int policy_load(const char *path, struct diags *d, struct policy **out);

/* How the loader reaches the files of a policy (the policy and its set
 * files), for a caller with rules about what it may read. */
struct policy_files {
	int policy_fd; /* the policy file, opened by someone else (path names it), or -1 */
	/* Called with every file open, before it is read: 0, or -errno and a
	 * reason in why (len bytes) to refuse it. NULL: every file is read. */
	int (*check)(int fd, const char *path, char *why, size_t len, void *arg);
	/* Opens every file but the policy (set files) instead of open(2): an
	 * fd, or -errno. NULL: open(2). (A saved copy of a policy, read back.) */
	int (*open)(const char *path, void *arg);
	/* Whether an interface of that name exists where the policy is to
	 * run: a name in in:/out: that is neither a group, nor a group's
	 * member, nor such an interface is warned of. NULL: not asked. */
	bool (*iface_exists)(const char *name, void *arg);
	/* The families (POLICY_FAM_*) the host forwards where the policy is to
	 * run (a family it cannot tell counts as forwarded): each the policy
	 * forwards or translates and the host does not is warned of. NULL:
	 * not asked. */
	uint8_t (*forwarding)(void *arg);
	void *arg;
};
int policy_load_files(const char *path, const struct policy_files *files, struct diags *d, struct policy **out);
/* The same from a buffer (name is used in messages and to find set files). */
int policy_load_buffer(const char *name, const char *text, size_t len, struct diags *d, struct policy **out);
void policy_free(struct policy *p);

/* What needs the host to forward a family: the forward hook's default
 * accept, the first rule that accepts the family on the forward hook, or
 * the first NAT entry that translates it (a redirect goes to the host
 * itself: not one); its place, and what it is in words. */
struct policy_forward_why {
	struct loc loc;
	char what[160];
};
/* The families (POLICY_FAM_*) p forwards or translates; why[0] says why
 * for IPv4, why[1] for IPv6. */
uint8_t policy_forwarded(const struct policy *p, struct policy_forward_why why[2]);
/* The warning for family i (0 IPv4, 1 IPv6) that the host does not
 * forward: the message, and the fix (sysctl -w, and /etc/sysctl.d/). */
void policy_forwarding_text(int i, const struct policy_forward_why *why, char *msg, size_t mlen, char *fix,
			    size_t flen);

/* The vocabularies, written once. Hook names are indexed by enum
 * policy_hook and NULL-terminated (a list of choices for the loader). */
extern const char *const policy_hook_names[POLICY_HOOK_MAX + 1];
const char *policy_hook_name(enum policy_hook h);     /* "?" if out of range */
const char *policy_family_name(enum policy_family f); /* "ipv4", "ipv6", "any" */
const char *policy_action_name(enum policy_action a); /* "accept", "drop", "reject" */
extern const char *const policy_reject_names[POLICY_REJECT_MAX + 1];
extern const char *const policy_ct_names[POLICY_CT_STATES + 1]; /* by bit of enum policy_ct */
extern const char *const policy_nat_kind_names[];		/* by enum nat_kind, NULL-terminated */
const char *policy_proto_name(int proto);			/* "tcp", ..., or NULL */
int policy_proto_number(const char *name);			/* IPPROTO_TCP, ..., or -1 */
const char *policy_rate_unit(uint32_t per);			/* "second", "minute", "hour" */
/* "10/second burst 10", "5/minute burst 5 per source"; as snprintf. */
int policy_limit_format(const struct policy_limit *l, char *buf, size_t len);
/* "mon-fri 08:00-18:00 Europe/Berlin", windows joined by " or "; days
 * omitted for every day, hours for the whole day; as snprintf. */
int policy_when_format(const struct policy_when *w, char *buf, size_t len);
int policy_prefix_format(const struct prefix *p, char *buf, size_t len);
/* ha.sync.peer as written: "203.0.113.2", or both nodes' "203.0.113.1 or 203.0.113.2". */
void policy_ha_peers_format(const struct ha_conf *h, char *buf, size_t len);
/* Interface names: "eth0", or a wildcard "eth*" (every name that starts
 * with "eth", as nftables writes it). */
static inline bool policy_ifname_wild(const char *pat)
{
	size_t n = strlen(pat);

	return n && pat[n - 1] == '*';
}
/* Whether interface name (itself a name or a wildcard) falls under pat. */
bool policy_ifname_match(const char *pat, const char *name);
/* Whether interface ifname is one of m's (any, listed, or not listed when negated). */
bool policy_iface_in(const struct iface_match *m, const char *ifname);
/* Prefix a holds every address of b (same family). */
bool policy_prefix_holds(const struct prefix *a, const struct prefix *b);
/* Every prefix of x is inside one of y's (as listed; negation aside). */
bool policy_prefixes_within(const struct addr_match *x, const struct addr_match *y);
/* " in X out Y from Z to W" as written, for those that are not any (NULL: none). */
void policy_print_sides(FILE *f, const struct iface_match *in, const struct iface_match *out,
			const struct addr_match *from, const struct addr_match *to);
/* The same addresses, prefix by prefix in order, negated alike (any equals only any). */
bool policy_addrs_equal(const struct addr_match *a, const struct addr_match *b);
/* ICMP/ICMPv6 type names (nfbox's, and nftables' such as nd-neighbor-solicit
 * and mld2-listener-report): returns the type or -1. */
int policy_icmp_type(const char *name, bool v6);
const char *policy_icmp_type_name(int type, bool v6);
const char *policy_icmp_type_closest(const char *name, bool v6); /* a typo's fix, or NULL */
extern const char *const policy_proto_names[];			 /* the names nfbox knows itself, NULL-terminated */
/* Country codes (countries.c): whether code (two capital letters) is one a
 * country set takes: ISO 3166-1 alpha-2, XK (Kosovo) or ZZ (DB-IP: no
 * location). */
bool policy_country_known(const char *code);
/* What to write instead of word, which is not such a code: "did you mean GB?"
 * for UK, DE for DEU or Germany, why GeoIP Legacy's EU does not do; as
 * snprintf, or -1 when there is nothing to say. */
int policy_country_fix(const char *word, char *buf, size_t len);

#endif
