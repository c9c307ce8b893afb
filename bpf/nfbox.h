/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nfbox engine ABI: the layout of the BPF maps that the fixed netfilter
 * classifier (bpf/nfbox_filter.bpf.c) reads and that user space
 * (appliance/backend/bpf/compile/ encodes, appliance/backend/bpf/engine/ loads) writes.
 * Included by BPF code (after vmlinux.h) and by user space. Change it only together with both sides.
 *
 * Classification is a linear bit-vector search: every rule of a hook has a
 * bit; each packet field (input interface, output interface, source and
 * destination prefix, L4 key, source port, conntrack state) is looked up and
 * yields a bit vector of the rules that field allows; the vectors are ANDed
 * and the lowest set bit is the first matching rule. Vectors are stored
 * compressed (see "vector format") in a blob of fixed-size chunks, and
 * identical vectors are stored once, so memory follows the number of
 * distinct vectors, not keys x rules.
 *
 * Reload is atomic: every per-policy map exists twice (two "generations",
 * reached through ARRAY_OF_MAPS outers of two slots); user space fills the
 * spare generation, then writes nfb_ctl.active_gen. The program reads the
 * generation once per packet, so a packet is judged wholly by one policy.
 */
#ifndef NFBOX_H
#define NFBOX_H

#ifndef __bpf__
#include <linux/types.h> /* user space; BPF code has them from vmlinux.h */
#endif

/*
 * The IPv6 header chain as the classifier reads it, the one definition
 * (user space walks it with appliance/lib/ip6walk.h, for events, reject
 * replies and the tests' reference):
 *   - hop-by-hop (0), routing (43), destination options (60) and AH (51,
 *     RFC 4302) are walked through; each takes at least 8 bytes;
 *   - a fragment header (44) with an offset or M set (NFB_IP6_FRAG_MASK)
 *     ends the walk: the packet is a fragment, keyed by the next header
 *     alone; one with both clear (an atomic fragment) is walked through;
 *   - any other next header ends the chain as the upper-layer protocol:
 *     mobility (135), HIP (139) and shim6 (140) too, as nftables' and the
 *     kernel's own reading of a chain do not walk them;
 *   - a header that runs past the datagram, or a chain of more than
 *     NFB_V6_MAX_EXT headers, is malformed.
 */
#define NFB_V6_MAX_EXT	    (65535 / 8)
#define NFB_IP4_FRAG_MASK   0x3fff /* IPv4: MF | offset, a fragment (keyed by its protocol alone) */
#define NFB_IP6_FRAG_MASK   0xfff9 /* offset | M */
#define NFB_IP6_FRAG_OFFSET 0xfff8 /* offset: a later fragment */
#define NFB_IP6_NH_FRAGMENT 44

static inline int nfb_v6_is_ext(__u8 nh)
{
	return nh == 0 || nh == 43 || nh == 60 || nh == 51;
}

/*
 * An IPv4-mapped IPv6 address (::ffff:0:0/96, RFC 4291 2.5.5.2) is a
 * socket's way to name an IPv4 peer, never an address on the wire (RFC
 * 6890: not forwardable). An IPv6 packet with one as its source or
 * destination is malformed: dropped before conntrack's verdict and the
 * rules, as a dual-stack server would take it for the IPv4 peer.
 */
static inline int nfb_v6_mapped(const __u8 *a)
{
	__u8 z = 0;

	for (int i = 0; i < 10; i++)
		z |= a[i];
	return !z && a[10] == 0xff && a[11] == 0xff;
}

/* Bugs planted for positive controls (appliance/lib/plant.h): the
 * classifier's rodata nfb_plant, which only the test build's loaders set
 * (NFBOX_TEST_PLANT); 0 everywhere else. */
#define NFB_PLANT_MAPPED_PASSES (1u << 0) /* "mapped-passes": IPv4-mapped addresses not dropped */
#define NFB_PLANT_KEEP_CLOSED \
	(1u << 1) /* "conns-keep-closed": a closed connection keeps its count (user space's part: netlink/ctevents.c) */
#define NFB_PLANT_SCHED_UNKEPT \
	(1u << 3) /* "schedule-unmarked": a scheduled rule's connections not kept in nfb_sched_conns */
#define NFB_PLANT_TRACE_ALL (1u << 2) /* "trace-all": the live trace's filter not heeded */
#define NFB_PLANT_SCHED_UNCOUNTED \
	(1u << 4) /* "sched-full-uncounted": a connection nfb_sched_conns had no room for not counted */

/* An extension header's length from its type and second byte. */
static inline __u32 nfb_v6_ext_len(__u8 nh, __u8 len_byte)
{
	return nh == 51 ? ((__u32)len_byte + 2) * 4 : ((__u32)len_byte + 1) * 8;
}

/* Hooks nfbox enforces, in nfbox's own numbering (index into arrays). */
enum nfb_hook {
	NFB_HOOK_INPUT = 0,
	NFB_HOOK_FORWARD = 1,
	NFB_HOOK_OUTPUT = 2,
	NFB_HOOK_MAX = 3,
};

enum nfb_family {
	NFB_FAM_IPV4 = 0,
	NFB_FAM_IPV6 = 1,
	NFB_FAM_MAX = 2,
};

/* Bit-vector dimensions. */
enum nfb_field {
	NFB_F_IIF = 0,	 /* input interface: iface map, dir 0 */
	NFB_F_OIF = 1,	 /* output interface: iface map, dir 1 */
	NFB_F_SRC = 2,	 /* source prefix: address ranges, dir 0 */
	NFB_F_DST = 3,	 /* destination prefix: address ranges, dir 1 */
	NFB_F_L4 = 4,	 /* dport (port map dir 1) or misc key (ICMP type, proto, fragment) */
	NFB_F_SPORT = 5, /* source port (port map dir 0), or sport_none vector */
	NFB_F_CT = 6,	 /* conntrack state: gen cfg ct[] */
	NFB_F_MAX = 7,
};

/* Conntrack states as the classifier sees them. */
enum nfb_ct {
	NFB_CT_NEW = 0,
	NFB_CT_ESTABLISHED = 1,
	NFB_CT_RELATED = 2,
	NFB_CT_INVALID = 3,   /* conntrack active but no entry (skb->_nfct == 0) */
	NFB_CT_UNTRACKED = 4, /* ctinfo 7: the untracked template (notrack) */
	NFB_CT_MAX = 5,
};

/* Port map classes (protocols that have ports). */
enum nfb_pclass {
	NFB_PC_TCP = 0,
	NFB_PC_UDP = 1,
	NFB_PC_SCTP = 2,
	NFB_PC_UDPLITE = 3,
	NFB_PC_MAX = 4,
};

/* Misc map classes: L4 keys of packets that have no port, 256 values each. */
enum nfb_mclass {
	NFB_MC_ICMP = 0,   /* value: ICMP type (IPv4 packets, proto 1) */
	NFB_MC_ICMPV6 = 1, /* value: ICMPv6 type (IPv6 packets, next header 58) */
	NFB_MC_PROTO = 2,  /* value: protocol number, for every other protocol */
	NFB_MC_FRAG = 3,   /* value: protocol number of a packet that is still a
			      fragment (defrag off): never matched by port or
			      type rules */
	NFB_MC_MAX = 4,
};

#define NFB_MAX_RULES 65536		   /* per hook */
#define NFB_MAX_WORDS (NFB_MAX_RULES / 64) /* 1024 */
#define NFB_MAX_SUM   (NFB_MAX_WORDS / 64) /* 16 */

/*
 * Vector format, in u64 words, nsum = gen_cfg.hook[h].nsum (1..16):
 *   [0, nsum)          S: summary; bit j of S[k] set <=> word 64k+j nonzero
 *   [nsum, 2 nsum)     R: R[k] = number of set bits in S[0..k-1] for k >= 1;
 *                      R[0] (a rank that is always 0) holds the top summary
 *                      T: bit k of T set <=> S[k] nonzero
 *   [2 nsum, ...)      the nonzero words, in ascending word index
 * Word w of the vector: k = w / 64, b = w % 64; zero unless S[k] bit b; else
 * packed[(k ? R[k] : 0) + popcount(S[k] & ((1 << b) - 1))]. The search ANDs
 * the T words first and visits only the summary words left, so a packet
 * pays per candidate, not per 4,096 rules. Rule r is bit r % 64 of word
 * r / 64. A vector never straddles a chunk.
 *
 * A locator (u32) names a vector: chunk index << NFB_LOC_SHIFT | word offset.
 */
#define NFB_CHUNK_WORDS	  8192 /* 64 KiB chunks */
#define NFB_LOC_SHIFT	  13
#define NFB_LOC_OFF_MASK  (NFB_CHUNK_WORDS - 1)
#define NFB_MAX_CHUNKS	  4096
#define NFB_VEC_MAX_WORDS (2 * NFB_MAX_SUM + NFB_MAX_WORDS)

/* No vector (a field's miss; no valid locator has this value: the chunk
 * part of a valid one is below NFB_MAX_CHUNKS). */
#define NFB_LOC_UNSET 0xffffffffu

struct nfb_chunk {
	__u64 w[NFB_CHUNK_WORDS];
};

/*
 * Address maps (nfb_addr4, nfb_addr6): for each hook, direction (0 source,
 * 1 destination) and family, the address space cut into ranges, each with
 * the locator of the vector its addresses get (NFB_LOC_UNSET: the field's
 * miss vector). A sorted ARRAY of range starts, in host order, searched by
 * bisection: range k holds the addresses from its start up to the next
 * range's start; the first starts at 0. The ranges of a hook and direction
 * are entries [base, base + count) of the family's map (nfb_hook_cfg.range).
 * User space cuts nested prefixes into ranges (the longest prefix wins, as
 * in an LPM trie), so a million prefixes are written as memory rather than
 * inserted one at a time.
 */
struct nfb_range4 {
	__u32 start;
	__u32 loc;
};

struct nfb_range6 {
	__u64 hi; /* the first 8 bytes of the address, host order */
	__u64 lo;
	__u32 loc;
	__u32 pad;
};

/* A prefix makes at most two range starts, and each hook and direction one
 * more. The loader allows POLICY_MAX_PREFIXES (2,000,000) in sets and as
 * many again written in rules, so one hook, family and direction has at
 * most 2 * 4,000,000 + 1 ranges: the bisection's 24 steps reach 2^24 of
 * them (a static assertion in appliance/backend/bpf/engine/gen.c says so). The maps'
 * template size; each generation's maps are sized to what they hold. */
#define NFB_RANGE_MAX_ENTRIES (2 * 2000000 + 2 * NFB_HOOK_MAX)
#define NFB_RANGE_STEPS	      24 /* bisection steps: ranges of one hook, family and direction < 2^24 */

/* Interface map key; value: u32 locator. Interfaces not in the map use the
 * hook's miss vector for the field. A hash inner map keeps its template's
 * size: at most this many entries (an interface for each hook and direction
 * whose rules name it); a policy that needs more is refused, and interfaces
 * that come later and do not fit are said in the log. */
#define NFB_IFACE_MAX_ENTRIES 16384
struct nfb_iface_key {
	__u32 ifindex;
	__u8 hook;
	__u8 dir; /* 0 input, 1 output */
	__u8 pad[2];
};

/*
 * Port map: ARRAY of u32, sized to the policy, in two parts.
 *   [0, NFB_PORT_TOP)   the top: for each hook, dir, port class and high
 *                       byte of the port, the number of a 256-entry page
 *   [NFB_PORT_TOP, ...) the pages: page n at NFB_PORT_TOP + 256 n, entry
 *                       port & 255 the locator (NFB_LOC_UNSET: the miss)
 * Identical pages are stored once (page 0: all unset), so a range of ports
 * with one vector costs one page, and a policy without ports one page.
 */
#define NFB_PORT_TOP	     (NFB_HOOK_MAX * 2 * NFB_PC_MAX * 256)
#define NFB_PORT_MAX_PAGES   (NFB_PORT_TOP + 1)
#define NFB_PORT_MAX_ENTRIES (NFB_PORT_TOP + NFB_PORT_MAX_PAGES * 256)
static inline __u32 nfb_port_top(__u32 hook, __u32 dir, __u32 pclass, __u32 port)
{
	return ((hook * 2 + dir) * NFB_PC_MAX + pclass) * 256 + (port >> 8);
}

/* Misc map: ARRAY of u32 locators, index nfb_misc_index(). */
#define NFB_MISC_ENTRIES (NFB_HOOK_MAX * NFB_MC_MAX * 256)
static inline __u32 nfb_misc_index(__u32 hook, __u32 mclass, __u32 value)
{
	return (hook * NFB_MC_MAX + mclass) * 256 + value;
}

enum nfb_action {
	NFB_ACT_DROP = 0,     /* == NF_DROP */
	NFB_ACT_ACCEPT = 1,   /* == NF_ACCEPT */
	NFB_ACT_REJECT = 2,   /* NF_DROP, and the packet's head to nfb_rejects for user space to answer */
	NFB_ACT_OVERLOAD = 3, /* an event only: the source went over a limit with overload: */
};

/* How a reject is answered (user space builds the reply). */
enum nfb_reject_kind {
	NFB_REJECT_TCP_RESET = 0, /* TCP: a reset; other protocols: port unreachable */
	NFB_REJECT_PORT = 1,
	NFB_REJECT_ADMIN = 2,
	NFB_REJECT_HOST = 3,
	NFB_REJECT_NET = 4,
};

#define NFB_RULE_LOG	      0x1
#define NFB_RULE_REJECT_SHIFT 4 /* flags bits 4..7: enum nfb_reject_kind */

/* Rules map: ARRAY sized to the policy, index hook_cfg.rule_base + rule bit. */
#define NFB_RULE_ENTRIES (NFB_HOOK_MAX * NFB_MAX_RULES)
struct nfb_rule {
	__u8 action;
	__u8 flags;
	__u16 limit;   /* 1 + index in the generation's limits map; 0: no limit */
	__u32 counter; /* slot in nfb_counters */
	__u16 dyn[2];  /* source, destination: a dynamic set's id, | NFB_DYN_NEG; 0: none */
	__u16 sched;   /* 1 + the rule's bit in nfb_sched (when:); 0: always in force */
	__u16 cut;     /* the rule's cut id (policy.h: when.cut): its new connections go into
			  nfb_sched_conns; 0: none. Array values are 8-byte aligned: the
			  mmap()ed stride stays 16 bytes */
};

/*
 * Schedules (when:): a rule with a schedule is in force while its bit in
 * nfb_sched is set: words [gen * NFB_SCHED_WORDS, + NFB_SCHED_WORDS), one
 * bit per scheduled rule of the generation's policy. User space sets the
 * bits of a new generation before it is flipped in, and flips a bit of the
 * active one at the window's edge; no new generation is made. A rule out of
 * force is passed like a rule over its limit (the search goes on from the
 * next rule) and counts among the NFB_MAX_LIMITS such rules of a hook.
 */
#define NFB_MAX_SCHED	1024 /* POLICY_MAX_SCHEDULED */
#define NFB_SCHED_WORDS (NFB_MAX_SCHED / 64)

/*
 * Schedules that end: the connections a scheduled accept rule lets in are
 * cut when it goes out of force (unless keep-connections). A netfilter
 * program cannot set a conntrack mark (no bpf_ct_* kfuncs for its type), so
 * the classifier keeps their conntrack original tuples itself:
 *   nfb_sched_conns  HASH (not preallocated: its memory grows with its
 *                    entries) struct nfb_conn_key -> __u32 the rule's cut id
 * written when such a rule accepts a new connection (ctinfo NEW), and the
 * tuple's entry deleted when another rule accepts a new connection of the
 * same tuple (NFB_OPT_SCHED_CUT: the policy has such rules), so that a tuple
 * used again is not cut for an earlier connection. At the rule's edge user
 * space deletes the connections of its id by tuple (ctnetlink) and their
 * entries. Outside the generations: the entries outlive reloads, and the
 * id is the rule name's; a rule's edge also takes the entries of its
 * connections that ended on their own, and the daemon prunes those
 * meanwhile (asking conntrack, backend/bpf/conns.c). Past
 * NFB_SCHED_CONN_ENTRIES new connections are not kept: those are not
 * cut. (An LRU of 65,536, allocated
 * whole, took 7 MiB for every policy; a hash's buckets are allocated
 * whole, 16 bytes each: test_memory's budget for a small policy holds.)
 * Each connection the map had no room for is counted, once, at its first
 * packet (conntrack has not confirmed it yet):
 *   nfb_sched_full   PERCPU_ARRAY of one struct nfb_counter: packets are
 *                    such connections, bytes their first packets' bytes
 * (a map of its own, not a slot of nfb_fixed, whose size fixes where the
 * rules' slots begin: layout 14's first builds did not have it, and the
 * adopting daemon makes it, as nfb_sched_conns).
 */
#define NFB_SCHED_CONN_ENTRIES 16384

/*
 * Dynamic sets (a set with `dynamic: true`): their entries change at run
 * time without a new generation. A rule naming one in from/to does not
 * restrict that field in the bit vectors; once the search finds the rule,
 * the packet's address is looked up in the set, and a rule whose set does
 * not take the packet is passed like a rule over its limit (the search goes
 * on from the next rule). Rules with a limit or a dynamic set together are
 * at most NFB_MAX_LIMITS per hook, which bounds the rounds.
 *
 * Entries of all dynamic sets live in two LPM tries outside the
 * generations (one per family), keyed by set id then prefix; the set id
 * is user space's, stable for a set name while the daemon runs and saved
 * with the entries. An entry past its expiry is no member (user space
 * deletes it soon after).
 */
#define NFB_MAX_DYNSETS 1023   /* ids 1..1022 */
#define NFB_DYN_EMPTY	1023   /* an id no entry has: the set with no entries */
#define NFB_DYN_NEG	0x8000 /* the rule takes addresses NOT in the set */
#define NFB_DYN_ID_MASK 0x3ff
#define NFB_DYN_ENTRIES (1u << 20) /* per family, all dynamic sets together */

struct nfb_dyn4_key {
	__u32 prefixlen; /* 16 + the prefix length */
	__u8 set[2];	 /* big-endian set id */
	__u8 addr[4];
};

struct nfb_dyn6_key {
	__u32 prefixlen;
	__u8 set[2];
	__u8 addr[16];
};

struct nfb_dyn_val {
	__u64 expires_ns; /* bpf_ktime_get_boot_ns() time; 0: never */
};

/* Each dynamic set's name by id, in an ARRAY of NFB_MAX_DYNSETS that the
 * classifier never reads: pinned with the tries, so that a daemon that
 * cannot read its saved copy of the entries can tell which set each entry
 * of the tries belongs to. "" for an id no set has. */
#define NFB_DYN_NAME_LEN 80
struct nfb_dyn_name {
	char name[NFB_DYN_NAME_LEN];
};

/*
 * Rate limits (a rule's limit:). A rule with a limit matches a packet only
 * while its bucket holds a token; a packet over the limit goes on to the
 * rules after it, as if the rule did not match (nftables' limit is a match
 * in the same way). The classifier searches again from the next rule, at
 * most once per limited rule.
 *
 * Buckets are GCRA ("virtual scheduling"): one u64 per bucket, the
 * theoretical arrival time `tat`, updated by compare-and-swap, so no lock
 * (and a bucket can live in an LRU hash, which cannot hold a spin lock). A
 * packet conforms if max(tat, now) + interval - now <= depth; then tat
 * becomes max(tat, now) + interval. interval = period / rate, depth =
 * burst * interval: up to burst packets at once after a quiet spell, rate
 * per period in the long run. user space computes both in ns.
 *
 * Limits map: ARRAY per generation, one entry per limit. State is keyed by
 * the rule's counter slot, so a reload keeps a rule's bucket as it keeps its
 * counters:
 *   the counters map's limit row (see "Counters"): struct nfb_limit_state
 *                    of each slot, zero for a rule that never met its limit
 *   nfb_meter        LRU_HASH struct nfb_meter_key -> u64 tat, one bucket per
 *                    (rule, source address) for `per: source`; the longest
 *                    unused are forgotten when it is full. A generation
 *                    whose policy has no per-source limit has none; one map
 *                    passes from generation to generation while they do.
 */
#define NFB_MAX_LIMITS	     4096 /* POLICY_MAX_LIMITS */
#define NFB_METER_ENTRIES    65536
#define NFB_LIMIT_PER_SOURCE 0x1
#define NFB_LIMIT_CONNS	     0x2 /* a connection limit (conns), not a rate */
#define NFB_LIMIT_OVERLOAD   0x4 /* a source over it is reported (NFB_ACT_OVERLOAD) */

struct nfb_limit_cfg {
	__u64 interval_ns; /* period / rate */
	__u64 depth_ns;	   /* burst * interval_ns */
	__u32 slot;	   /* the rule's counter slot: its state's key */
	__u32 flags;	   /* NFB_LIMIT_* */
	__u32 conns;	   /* NFB_LIMIT_CONNS: the most connections */
	__u32 overload;	   /* NFB_LIMIT_OVERLOAD: the set's dynamic-set id (0: none known) */
};

/*
 * Connection limits (limit: { connections: N }). A rule with one matches a
 * new connection only while its owner, the rule or (per source) the rule's
 * slot and the source address, holds fewer than N connections the rule let
 * in. Both maps pass from generation to generation (like the dynamic sets),
 * so a reload keeps the counts; keyed by the counter slot, as a rule keeps
 * its counters:
 * The two maps are outers like the meter (a generation without connection
 * limits has none, one pair passes from generation to generation):
 *   nfb_conns       HASH struct nfb_conn_key -> struct nfb_conn_val: each
 *                   connection counted, by its conntrack original tuple,
 *                   read from the nf_conn (so a DNATed connection has the
 *                   key ctnetlink reports for it)
 *   nfb_conn_count  HASH struct nfb_meter_key -> struct nfb_conn_count: the
 *                   owner's connections; per rule the key's family is
 *                   NFB_FAM_MAX and its address zero
 * The classifier takes a count (compare-and-swap below N) and adds the
 * connection. A connection TCP has closed (conntrack's TIME_WAIT or CLOSE,
 * ct count's "already closed") no longer counts: the classifier gives its
 * count back as soon as it sees one of its packets after the close (with
 * NFB_OPT_CONN_LIMITS, before established: accept), and a packet of a
 * closed connection fits without a count. User space gives the others back
 * when conntrack forgets the connection or TCP closes it with no packet
 * through the hooks after, through the nfbox_conns program. A count that
 * reaches zero is marked NFB_CONN_DEAD before its entry is deleted, so no
 * CPU adds to an entry on its way out: it makes a new one.
 *
 * Counts nobody followed (a daemon that adopts pinned state: connections
 * may have ended while none listened to conntrack) are not trusted: user
 * space marks each such connection NFB_CONN_UNVERIFIED (since_ns) and
 * takes it out of its owner's count (NFB_CONNS_DISTRUST), so the limits
 * judge only connections counted since, and counts each back when
 * conntrack says it is still open (NFB_CONNS_CONFIRM); one that ended goes
 * without touching the count (NFB_CONNS_RELEASE).
 */
#define NFB_CONN_ENTRIES    262144
#define NFB_CONN_OWNERS	    65536
#define NFB_CONN_DEAD	    (~0ull)
#define NFB_CONN_UNVERIFIED (~0ull)	/* nfb_conn_val.since_ns: adopted, not in its owner's count */
#define NFB_CONN_GONE	    (~0ull - 1) /* nfb_conn_val.since_ns: being forgotten (its entry goes next) */
#define NFB_OVERLOAD_SEEN   1024
#define NFB_OVERLOAD_GAP_NS 100000000ull /* at most one overload event per source and limit per 100 ms */

struct nfb_conn_key {
	__u8 src[16]; /* the original tuple's addresses; IPv4 in the first 4 bytes */
	__u8 dst[16];
	__u16 sport; /* the tuple's src.u.all (ports, ICMP id), network order */
	__u16 dport; /* dst.u.all (ports; ICMP: type, code bytes) */
	__u8 proto;
	__u8 family; /* enum nfb_family */
	__u16 pad;
};

struct nfb_conn_count {
	__u64 n; /* connections; NFB_CONN_DEAD: being deleted */
	__u64 pad;
};

/* nfb_overload_seen, an ARRAY by hash of (slot, family, source). */
struct nfb_overload_seen {
	__u64 hash;
	__u64 last_ns;
};

struct nfb_limit_state {
	__u64 tat;  /* the rule's bucket (not used by per-source limits) */
	__u64 over; /* packets over the limit, that went on to later rules */
};

struct nfb_meter_key {
	__u32 slot;
	__u8 family; /* enum nfb_family */
	__u8 pad[3];
	__u8 addr[16]; /* the source address; IPv4 in the first 4 bytes */
};

struct nfb_conn_val {
	struct nfb_meter_key owner;
	__u64 since_ns; /* bpf_ktime_get_ns() when it was counted; 0 once conntrack confirmed it;
			   NFB_CONN_UNVERIFIED: not counted (see above) */
};

/* What user space asks of the counts (BPF_PROG_RUN of nfbox_conns, its
 * context a struct nfb_conns_op; the return value says). */
enum nfb_conns_verb {
	NFB_CONNS_RELEASE = 0,	/* key's connection ended: 1 if it was there (its count given back if counted) */
	NFB_CONNS_CONFIRM = 1,	/* key's connection is open: 1 if it was there (counted again if unverified) */
	NFB_CONNS_DISTRUST = 2, /* every connection counted before now: unverified; how many were marked */
};

struct nfb_conns_op {
	struct nfb_conn_key key; /* RELEASE, CONFIRM */
	__u32 verb;		 /* enum nfb_conns_verb */
	__u32 pad;
};

struct nfb_hook_cfg {
	__u32 enabled; /* the policy has this hook */
	__u32 nrules;
	__u32 nsum;   /* summary words per vector: ceil(ceil(nrules/64)/64) */
	__u32 fields; /* bit mask of NFB_F_* that any rule restricts; others skipped */
	__u32 default_action;
	__u32 default_counter;
	__u32 miss[NFB_F_MAX]; /* locator used when a field's lookup misses */
	__u32 ct[NFB_CT_MAX];  /* locator per conntrack state */
	__u32 sport_none;      /* SPORT vector for packets without ports */
	__u32 rule_base;       /* index of the hook's rule 0 in the rules map */
	__u32 pad;
	__u32 range[NFB_FAM_MAX][2][2]; /* [family][dir]: base and count in the address map */
};

/* Options of a generation. */
#define NFB_OPT_ESTABLISHED_ACCEPT 0x1 /* established/related skip the rules */
#define NFB_OPT_DEFRAG \
	0x2			/* links have the defrag flag: the kernel reassembles, so a
					  fragment that still arrives was refused and is dropped */
#define NFB_OPT_CONN_LIMITS 0x4 /* the policy has connection limits: TCP packets of closed connections give back */
#define NFB_OPT_SCHED_CUT   0x8 /* the policy has rules whose connections are cut (nfb_sched_conns) */

struct nfb_gen_cfg {
	__u32 options;
	__u32 log_rate; /* events per log_period, 0 = unlimited */
	__u32 log_burst;
	__u32 reject_rate; /* rejects answered per reject_period, 0 = unlimited */
	__u32 reject_burst;
	__u32 established_counter;
	__u32 log_period; /* seconds (1, 60, 3600); 0 counts as 1 */
	__u32 reject_period;
	__u32 cnt_cap;	/* slots per row of the counters map */
	__u32 cnt_cpus; /* CPU rows of the counters map (possible CPUs) */
	struct nfb_hook_cfg hook[NFB_HOOK_MAX];
};

/* Global control (not per generation): ARRAY of one. */
struct nfb_ctl {
	__u32 active_gen;   /* 0 or 1 */
	__u32 abi;	    /* layout version of the pinned state (user space's NFB_ABI_VERSION) */
	__u64 netns_cookie; /* the network namespace the state enforces (SO_NETNS_COOKIE) */
};

/*
 * Counters. Slots below NFB_CNT_FIRST_RULE are fixed and live in nfb_fixed
 * (PERCPU_ARRAY); rule and default slots are assigned by user space, kept
 * for a rule (hook + name) across reloads, and live in the generation's
 * counters map: an ARRAY of struct nfb_counter (mmap()able, sized to the
 * policy: a per-CPU array cannot be an inner map of another size) in rows
 * of gen_cfg.cnt_cap slots:
 *   row c < cnt_cpus   CPU c's counts (written only on CPU c, no atomics)
 *   row cnt_cpus       carried counts (user space only: counts of an
 *                      earlier, smaller or larger, map)
 *   row cnt_cpus + 1   limit state (struct nfb_limit_state in the value)
 * index = row * cnt_cap + slot. A slot's count is the sum of rows 0 ..
 * cnt_cpus. Generations of the same capacity share one map, so counts go
 * on across a reload without a copy.
 */
struct nfb_counter {
	__u64 packets;
	__u64 bytes;
	__u64 last_ns; /* bpf_ktime_get_ns() of the last packet counted (CLOCK_MONOTONIC); 0: never */
};
_Static_assert(sizeof(struct nfb_limit_state) <= sizeof(struct nfb_counter), "a limit state fits a counter's value");
#define NFB_CNT_ROWS(cpus) ((cpus) + 2)
static inline __u32 nfb_cnt_index(__u32 cap, __u32 row, __u32 slot)
{
	return row * cap + slot;
}

enum nfb_cnt_fixed {
	NFB_CNT_MALFORMED = 0,	    /* dropped: IP header, extension-header chain or L4 key
				    truncated or inconsistent; an IPv4-mapped IPv6 address */
	NFB_CNT_NO_GEN = 1,	    /* accepted: no policy loaded (cannot happen once ready) */
	NFB_CNT_LOG_DROPPED = 2,    /* verdict events lost: ring buffer full */
	NFB_CNT_LOG_LIMITED = 3,    /* verdict events suppressed by log-rate */
	NFB_CNT_FRAGMENT = 4,	    /* dropped: a fragment the kernel did not reassemble (defrag on) */
	NFB_CNT_REJECT_LIMITED = 5, /* rejected, not answered: over reject-rate */
	NFB_CNT_REJECT_LOST = 6,    /* rejected, not answered: nfb_rejects was full */
	NFB_CNT_REPLIES = 7,	    /* accepted on output: nfbox's own reject replies (NFB_REPLY_MARK) */
	NFB_CNT_FIRST_RULE = 8,
};
#define NFB_MAX_COUNTERS (NFB_CNT_FIRST_RULE + 2 * (NFB_HOOK_MAX * (NFB_MAX_RULES + 1) + 1))
#define NFB_CNT_MIN_CAP	 64

/* Verdict event, in the ring buffer, for rules with log: true. */
struct nfb_event {
	__u64 ts_ns;   /* bpf_ktime_get_ns() */
	__u32 counter; /* rule's counter slot: names the rule in user space */
	__u32 rule;    /* rule bit in its hook, or NFB_RULE_DEFAULT */
	__u32 gen;
	__u32 len; /* skb->len: the whole (reassembled) datagram */
	__u32 ifin;
	__u32 ifout;
	__u8 hook;   /* enum nfb_hook */
	__u8 family; /* enum nfb_family */
	__u8 action;
	__u8 proto;
	__u16 sport;	/* host order; 0 if none */
	__u16 dport;	/* host order; ICMP: type << 8 | code */
	__u8 saddr[16]; /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
};
#define NFB_RULE_DEFAULT     0xffffffffu
#define NFB_RULE_ESTABLISHED 0xfffffffeu /* accepted as established or related, before the rules */
/* In nfb_event.action: the event of a live trace (struct nfb_trace), not of
 * a rule's log: true. */
#define NFB_ACT_TRACED 0x80

/*
 * A live trace (`nfbox trace --live`): nfb_trace, an ARRAY of one. A packet
 * that matches it gets an event (action | NFB_ACT_TRACED) naming the rule
 * that decided, the default or the established accept; its verdict is
 * not touched. left is taken one per traced packet (compare-and-swap), so
 * a flood fills the ring with no more than left events; 0 (user space's
 * "no trace") costs each packet one lookup and one load.
 */
#define NFB_TRACE_PROTO 0x1 /* proto must match */
#define NFB_TRACE_PORT	0x2 /* dport must match (a packet with ports) */
struct nfb_trace {
	__u32 left;  /* packets still to trace; 0: none */
	__u32 ifin;  /* the input interface; 0: any */
	__u8 family; /* enum nfb_family; NFB_FAM_MAX: any */
	__u8 flags;  /* NFB_TRACE_* */
	__u8 proto;
	__u8 src_len; /* prefix lengths of saddr, daddr: 0 any */
	__u8 dst_len;
	__u8 pad;
	__u16 dport;
	__u8 saddr[16]; /* IPv4 in the first 4 bytes */
	__u8 daddr[16];
};

/* A rejected packet's head, in nfb_rejects, for user space to answer. */
#define NFB_REJECT_BYTES 512
struct nfb_reject {
	__u32 len; /* bytes in data */
	__u32 ifin;
	__u8 family; /* enum nfb_family */
	__u8 hook;   /* enum nfb_hook */
	__u8 kind;   /* enum nfb_reject_kind */
	__u8 pad;
	__u8 data[NFB_REJECT_BYTES]; /* the packet from its IP header */
};
#define NFB_REJECTS_SIZE (1 << 18)
/* The mark (SO_MARK) on the replies the daemon sends for rejected packets:
 * the output hook lets them out whatever the policy says, as the kernel's
 * own nf_reject replies would be. Setting a mark needs CAP_NET_ADMIN. */
#define NFB_REPLY_MARK 0x6e666278u /* "nfbx" */

#define NFB_RINGBUF_SIZE (1 << 20)
/* Netfilter priority of the classifier: after defrag (-400) and conntrack
 * (-200), so datagrams are whole and their state is known, and after NAT's
 * destination hooks (-100, where nftables and iptables put dstnat; the
 * kernel refuses a BPF hook at a priority another hook of that point has),
 * as iptables' filter table runs after its nat table. A link is replaced at
 * another priority (the next free one up to NFB_PRIORITY + NFB_PRIORITY_SPAN
 * - 1) and the old one detached after, so one is always attached. */
#define NFB_PRIORITY	  (-99)
#define NFB_PRIORITY_SPAN 8

#endif /* NFBOX_H */
