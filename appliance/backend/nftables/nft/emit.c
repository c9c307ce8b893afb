/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The table (ir.h) as one netlink transaction, built with libnftnl: the
 * table created if missing, deleted, and created again with everything in
 * it, so that it is replaced whole or not at all; or, when this process
 * made the table, replaced in place (put_in_place, retire).
 */
#include "backend/nftables/nft/emit.h"

/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_synproxy.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "backend/nftables/nft/batch.h"
#include "lib/plant.h"

/* nft's datatype numbers (its "type ..." of a set), so that `nft list`
 * shows the elements as addresses, ports and names. */
#define NFT_TYPE_NFPROTO      2
#define NFT_TYPE_INET_PROTO   12
#define NFT_TYPE_IPADDR	      7
#define NFT_TYPE_IP6ADDR      8
#define NFT_TYPE_INET_SERVICE 13
#define NFT_TYPE_IFNAME	      41
#define NFT_TYPE_BITS	      6 /* a concatenation's type: each part's, shifted in */

/* Ranges of a set put in one message. Their elements sit in one nested
 * attribute, whose length is 16 bits: a range of an IPv6 interval set with
 * timeouts is two elements of about 44 bytes (key, end flag or timeout), a
 * counter map's element carries its counter's name; 500 ranges stay under
 * 64 KiB. (1,000 overflowed the length with IPv6 /128s and timeouts: the
 * kernel refused the message with ENOENT.) */
#define ELEMS_PER_MSG 500

#define REG1 NFT_REG_1
#define REG2 NFT_REG_2

/*
 * A counter map's name in the kernel. A reload in place puts its counter
 * maps beside the last ones and deletes those only afterwards (retire):
 * the kernel marks a deleted map's elements gone in the next generation,
 * so a packet that entered the old rules just before the commit and
 * looked their map up just after it would find nothing. The maps of every
 * other such transaction are therefore named cn_* instead of the cm_*
 * that the builder (and `plan --nft`) names them.
 */
static bool maps_alt;

static const char *set_name(const struct nfr_set *s, char buf[NFR_NAME])
{
	if (!s->name[0])
		return "__set%d";
	snprintf(buf, NFR_NAME, "%s", s->name);
	if (s->objmap && maps_alt && buf[0] == 'c' && buf[1] == 'm')
		buf[1] = 'n';
	return buf;
}

/* ---- expressions ---- */

static struct nftnl_expr *expr(struct nftnl_rule *r, const char *name)
{
	struct nftnl_expr *e = nftnl_expr_alloc(name);

	if (e)
		nftnl_rule_add_expr(r, e);
	return e;
}

static void e_meta_to(struct nftnl_rule *r, uint32_t key, uint32_t reg)
{
	struct nftnl_expr *e = expr(r, "meta");

	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, reg);
}

static void e_meta(struct nftnl_rule *r, uint32_t key)
{
	e_meta_to(r, key, REG1);
}

static void e_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = expr(r, "cmp");

	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
}

static void e_cmp_u8(struct nftnl_rule *r, uint8_t v)
{
	e_cmp(r, NFT_CMP_EQ, &v, 1);
}

static void e_payload_to(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len, uint32_t reg)
{
	struct nftnl_expr *e = expr(r, "payload");

	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, reg);
}

static void e_payload(struct nftnl_rule *r, uint32_t base, uint32_t off, uint32_t len)
{
	e_payload_to(r, base, off, len, REG1);
}

/* reg1 = reg1 & mask (len bytes); then the caller compares. */
static void e_mask(struct nftnl_rule *r, const void *mask, uint32_t len)
{
	struct nftnl_expr *e = expr(r, "bitwise");
	uint8_t zero[16] = { 0 };

	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
}

static struct nftnl_expr *e_lookup(struct nftnl_rule *r, const struct nfr_set *s, bool inv)
{
	struct nftnl_expr *e = expr(r, "lookup");
	char name[NFR_NAME];

	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, REG1);
	nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set_name(s, name));
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, s->id);
	if (inv)
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
	return e;
}

static void e_imm(struct nftnl_rule *r, uint32_t reg, const void *data, uint32_t len)
{
	struct nftnl_expr *e = expr(r, "immediate");

	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, reg);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, data, len);
}

static void e_verdict(struct nftnl_rule *r, int verdict, const char *chain)
{
	struct nftnl_expr *e = expr(r, "immediate");

	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	if (chain)
		nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
}

static void e_objref(struct nftnl_rule *r, uint32_t type, const char *name)
{
	struct nftnl_expr *e = expr(r, "objref");

	nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, type);
	nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, name);
}

static void e_ct(struct nftnl_rule *r, uint32_t key)
{
	struct nftnl_expr *e = expr(r, "ct");

	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, REG1);
}

/* ct mark set ct mark & ~POLICY_CUT_MASK | id << POLICY_CUT_SHIFT (the
 * mark in a register is in host order) */
static void e_mark_cut(struct nftnl_rule *r, uint32_t id)
{
	uint32_t mask = ~POLICY_CUT_MASK, xor = id << POLICY_CUT_SHIFT;
	struct nftnl_expr *e;

	e_ct(r, NFT_CT_MARK);
	e = expr(r, "bitwise");
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, sizeof(mask));
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask));
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &xor, sizeof(xor));
	e = expr(r, "ct");
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_MARK);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_SREG, REG1);
}

static void e_frag6(struct nftnl_rule *r, uint32_t off, uint32_t len)
{
	struct nftnl_expr *e = expr(r, "exthdr");

	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_DREG, REG1);
	nftnl_expr_set_u8(e, NFTNL_EXPR_EXTHDR_TYPE, IPPROTO_FRAGMENT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_EXTHDR_OP, NFT_EXTHDR_OP_IPV6);
}

/* ---- matches ---- */

static uint32_t addr_len(uint8_t fam)
{
	return fam == POLICY_FAM_IPV4 ? 4 : 16;
}

static void m_addr(struct nftnl_rule *r, const struct nfr_match *m)
{
	bool v4 = m->family == POLICY_FAM_IPV4;
	uint32_t off = v4 ? (m->dir ? 16 : 12) : (m->dir ? 24 : 8);

	uint32_t len = addr_len(m->family), plen = m->value;
	uint8_t mask[16] = { 0 }, want[16] = { 0 };

	if (m->kind != NFR_M_ADDR_EQ) {
		e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, len);
		e_lookup(r, m->set, m->neg);
		return;
	}
	/* A prefix on a byte boundary: only its bytes loaded and compared;
	 * else the whole address masked. As nft does it. */
	if (plen && plen % 8 == 0) {
		e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, plen / 8);
		e_cmp(r, m->neg ? NFT_CMP_NEQ : NFT_CMP_EQ, m->addr, plen / 8);
		return;
	}
	for (uint32_t i = 0; i < plen; i++)
		mask[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	for (uint32_t i = 0; i < len; i++)
		want[i] = m->addr[i] & mask[i];
	e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, off, len);
	e_mask(r, mask, len);
	e_cmp(r, m->neg ? NFT_CMP_NEQ : NFT_CMP_EQ, want, len);
}

static void m_port(struct nftnl_rule *r, const struct nfr_match *m)
{
	uint16_t lo = htons(m->lo), hi = htons(m->hi);

	e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, m->dir ? 2 : 0, 2);
	if (m->set) {
		e_lookup(r, m->set, false);
	} else if (m->lo == m->hi) {
		e_cmp(r, NFT_CMP_EQ, &lo, 2);
	} else {
		e_cmp(r, NFT_CMP_GTE, &lo, 2);
		e_cmp(r, NFT_CMP_LTE, &hi, 2);
	}
}

/* meta l4proto . th port: two 4-byte registers, the first of them REG1. */
static void m_proto_port(struct nftnl_rule *r, const struct nfr_match *m)
{
	e_meta_to(r, NFT_META_L4PROTO, NFT_REG32_00);
	e_payload_to(r, NFT_PAYLOAD_TRANSPORT_HEADER, m->dir ? 2 : 0, 2, NFT_REG32_01);
	e_lookup(r, m->set, false);
}

static void m_ifname(struct nftnl_rule *r, const struct nfr_match *m)
{
	char name[16] = { 0 };

	e_meta(r, m->kind == NFR_M_IIFNAME ? NFT_META_IIFNAME : NFT_META_OIFNAME);
	if (m->set) {
		e_lookup(r, m->set, m->neg);
		return;
	}
	memcpy(name, m->ifname, strnlen(m->ifname, sizeof(name)));
	if (policy_ifname_wild(m->ifname)) { /* "eth*": its beginning, as nft compares it */
		e_cmp(r, m->neg ? NFT_CMP_NEQ : NFT_CMP_EQ, name, (uint32_t)strlen(m->ifname) - 1);
		return;
	}
	e_cmp(r, m->neg ? NFT_CMP_NEQ : NFT_CMP_EQ, name, sizeof(name));
}

static void m_bits_set(struct nftnl_rule *r, uint32_t mask)
{
	uint32_t zero = 0;

	e_mask(r, &mask, 4);
	e_cmp(r, NFT_CMP_NEQ, &zero, 4);
}

static void m_frag(struct nftnl_rule *r, const struct nfr_match *m)
{
	uint16_t off4 = htons(0x3fff), off6 = htons(0xfff8), zero = 0;
	uint8_t more = 1;

	if (m->kind == NFR_M_FRAG4) {
		e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 6, 2);
		e_mask(r, &off4, 2);
		e_cmp(r, NFT_CMP_NEQ, &zero, 2);
	} else if (m->kind == NFR_M_FRAG6_MORE) {
		e_frag6(r, 3, 1);
		e_mask(r, &more, 1);
		e_cmp(r, NFT_CMP_EQ, &more, 1);
	} else {
		e_frag6(r, 2, 2);
		e_mask(r, &off6, 2);
		e_cmp(r, NFT_CMP_NEQ, &zero, 2);
	}
}

static void emit_match(struct nftnl_rule *r, const struct nfr_match *m)
{
	switch (m->kind) {
	case NFR_M_IIFNAME:
	case NFR_M_OIFNAME:
		m_ifname(r, m);
		break;
	case NFR_M_NFPROTO:
		e_meta(r, NFT_META_NFPROTO);
		e_cmp_u8(r, (uint8_t)m->value);
		break;
	case NFR_M_SCHED:
		e_meta(r, NFT_META_NFPROTO);
		e_lookup(r, m->set, false);
		break;
	case NFR_M_ADDR:
	case NFR_M_ADDR_EQ:
		m_addr(r, m);
		break;
	case NFR_M_L4PROTO:
		e_meta(r, NFT_META_L4PROTO);
		e_cmp_u8(r, (uint8_t)m->value);
		break;
	case NFR_M_PORT:
		m_port(r, m);
		break;
	case NFR_M_PROTO_PORT:
		m_proto_port(r, m);
		break;
	case NFR_M_ICMP_TYPE:
		e_meta(r, NFT_META_L4PROTO);
		e_cmp_u8(r, m->family == POLICY_FAM_IPV4 ? IPPROTO_ICMP : IPPROTO_ICMPV6);
		e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1);
		e_cmp_u8(r, (uint8_t)m->value);
		break;
	case NFR_M_CT_STATE:
		e_ct(r, NFT_CT_STATE);
		m_bits_set(r, m->value);
		break;
	case NFR_M_CT_DNAT:
		e_ct(r, NFT_CT_STATUS);
		m_bits_set(r, 1u << 5); /* IPS_DST_NAT */
		break;
	case NFR_M_TCP_SYN: {
		uint8_t flags = 0x02 | 0x10, syn = 0x02; /* syn, ack */

		e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 13, 1);
		e_mask(r, &flags, 1);
		e_cmp(r, NFT_CMP_EQ, &syn, 1);
		break;
	}
	default:
		m_frag(r, m);
	}
}

/* ---- statements ---- */

static struct nftnl_expr *e_nat(struct nftnl_rule *r, const struct nfr_stmt *s)
{
	struct nftnl_expr *e = expr(r, "nat");

	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, s->kind == NFR_S_SNAT ? NFT_NAT_SNAT : NFT_NAT_DNAT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, s->family == POLICY_FAM_IPV4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, REG1);
	return e;
}

/* snat/dnat to an address, a range of them, or (netmap) a prefix whose
 * every address maps to the one with the same host bits; a port. */
static void s_nat(struct nftnl_rule *r, const struct nfr_stmt *s)
{
	uint32_t len = addr_len(s->family);
	uint16_t port = htons(s->port);
	struct nftnl_expr *e;
	bool range = (s->kind == NFR_S_SNAT || s->netmap) && memcmp(s->addr_lo, s->addr_hi, len);
	uint32_t port_reg = range ? NFT_REG_3 : REG2; /* after the addresses */

	e_imm(r, REG1, s->addr_lo, len);
	if (range)
		e_imm(r, REG2, s->addr_hi, len);
	if (s->port)
		e_imm(r, port_reg, &port, 2);
	e = e_nat(r, s);
	if (range)
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MAX, REG2);
	if (s->port) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, port_reg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
	}
	if (s->netmap)
		nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS, NF_NAT_RANGE_NETMAP);
}

/* dnat FAMILY to th dport map SET: the map gives address . port, in the
 * registers from REG1 on (the port in the 4-byte register after the
 * address), as nft lays them out. */
static void s_nat_map(struct nftnl_rule *r, const struct nfr_stmt *s)
{
	struct nftnl_expr *e;

	e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
	e = e_lookup(r, s->set, false);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_DREG, REG1);
	e = e_nat(r, s);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_PROTO_MIN, s->family == POLICY_FAM_IPV4 ? NFT_REG32_01 : REG2);
}

/* dynset OP @SET { ip/ip6 saddr NESTED }: the set's element for the
 * packet's source, and the nested expression (a limit, a connection count;
 * NULL: none, out of memory) evaluated on it. */
static void e_dynset_saddr(struct nftnl_rule *r, const struct nfr_stmt *s, uint32_t op, struct nftnl_expr *nested)
{
	struct nftnl_expr *e;

	e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, s->family == POLICY_FAM_IPV4 ? 12 : 8, addr_len(s->family));
	e = expr(r, "dynset");
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SREG_KEY, REG1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_OP, op);
	nftnl_expr_set_str(e, NFTNL_EXPR_DYNSET_SET_NAME, s->set->name);
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SET_ID, s->set->id);
	if (nested)
		nftnl_expr_set(e, NFTNL_EXPR_DYNSET_EXPR, nested, 0);
}

static void emit_stmt(struct nftnl_rule *r, const struct nfr_stmt *s)
{
	uint16_t port = htons(s->port);
	struct nftnl_expr *e;

	switch (s->kind) {
	case NFR_S_NOTRACK:
		expr(r, "notrack");
		break;
	case NFR_S_CT_MARK_CUT:
		e_mark_cut(r, s->value);
		break;
	case NFR_S_NFTRACE: {
		uint8_t one = 1;

		e_imm(r, REG1, &one, 1);
		e = expr(r, "meta");
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, NFT_META_NFTRACE);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_SREG, REG1);
		break;
	}
	case NFR_S_SYNPROXY:
		e = expr(r, "synproxy");
		nftnl_expr_set_u16(e, NFTNL_EXPR_SYNPROXY_MSS, s->port);
		nftnl_expr_set_u8(e, NFTNL_EXPR_SYNPROXY_WSCALE, (uint8_t)s->value);
		/* no TCP timestamps: with them a connection to a server that
		 * randomises its own stalled now and then (policy/README.md) */
		nftnl_expr_set_u32(e, NFTNL_EXPR_SYNPROXY_FLAGS,
				   NF_SYNPROXY_OPT_MSS | NF_SYNPROXY_OPT_WSCALE | NF_SYNPROXY_OPT_SACK_PERM);
		break;
	case NFR_S_COUNTER:
		if (s->name[0])
			e_objref(r, NFT_OBJECT_COUNTER, s->name);
		else
			expr(r, "counter");
		break;
	case NFR_S_LIMIT:
		e_objref(r, NFT_OBJECT_LIMIT, s->name);
		break;
	case NFR_S_LOG:
		e = expr(r, "log");
		nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, (uint16_t)s->value);
		nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, s->name);
		break;
	case NFR_S_ACCEPT:
		e_verdict(r, NF_ACCEPT, NULL);
		break;
	case NFR_S_DROP:
		e_verdict(r, NF_DROP, NULL);
		break;
	case NFR_S_REJECT_TCP:
	case NFR_S_REJECT_ICMPX:
		e = expr(r, "reject");
		nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE,
				   s->kind == NFR_S_REJECT_TCP ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMPX_UNREACH);
		nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, s->kind == NFR_S_REJECT_TCP ? 0 : (uint8_t)s->value);
		break;
	case NFR_S_JUMP:
		e_verdict(r, NFT_JUMP, s->name);
		break;
	case NFR_S_MASQ:
		expr(r, "masq");
		break;
	case NFR_S_COUNTER_MAP: {
		char name[NFR_NAME];

		e_meta_to(r, NFT_META_L4PROTO, NFT_REG32_00);
		e_payload_to(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG32_01);
		e = expr(r, "objref");
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_SET_SREG, NFT_REG32_00);
		nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_SET_NAME, set_name(s->set, name));
		nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_SET_ID, s->set->id);
		break;
	}
	case NFR_S_METER:
		e = nftnl_expr_alloc("limit");
		if (e) {
			nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_RATE, s->rate);
			nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_UNIT, s->per ? s->per : 1);
			nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_BURST, s->burst);
			nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_TYPE, NFT_LIMIT_PKTS);
			nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_FLAGS, 0);
		}
		e_dynset_saddr(r, s, NFT_DYNSET_OP_UPDATE, e);
		break;
	case NFR_S_CONNLIMIT:
		e = nftnl_expr_alloc("connlimit");
		if (e) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_CONNLIMIT_COUNT, s->value);
			nftnl_expr_set_u32(e, NFTNL_EXPR_CONNLIMIT_FLAGS, 0);
		}
		if (!s->set) {
			if (e)
				nftnl_rule_add_expr(r, e);
			break;
		}
		e_dynset_saddr(r, s, NFT_DYNSET_OP_ADD, e);
		break;
	case NFR_S_DNAT_MAP:
		s_nat_map(r, s);
		break;
	case NFR_S_REDIRECT:
		e_imm(r, REG1, &port, 2);
		e = expr(r, "redir");
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, REG1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
		break;
	default:
		s_nat(r, s);
	}
}

/* ---- what a rule costs the kernel ---- */

_Static_assert(NFR_MAX_MATCH *NFT_MATCH_MAX_EXPRS + NFR_MAX_STMT * NFT_STMT_MAX_EXPRS <= NFT_KERNEL_MAX_EXPRS,
	       "a full rule of the IR must fit in one nftables rule");

static int count_expr(struct nftnl_expr *e, void *arg)
{
	(void)e;
	++*(uint32_t *)arg;
	return 0;
}

static uint32_t rule_exprs(struct nftnl_rule *r)
{
	uint32_t n = 0;

	nftnl_expr_foreach(r, count_expr, &n);
	return n;
}

uint32_t nft_match_exprs(const struct nfr_match *m)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	uint32_t n;

	if (!r)
		return UINT32_MAX;
	emit_match(r, m);
	n = rule_exprs(r);
	nftnl_rule_free(r);
	return n;
}

uint32_t nft_stmt_exprs(const struct nfr_stmt *s)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	uint32_t n;

	if (!r)
		return UINT32_MAX;
	emit_stmt(r, s);
	n = rule_exprs(r);
	nftnl_rule_free(r);
	return n;
}

/* ---- messages ---- */

static int put_table(struct nft_batch *b, uint16_t type, uint32_t flags)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, type, NFPROTO_INET, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0);

	if (!t || !nlh) {
		if (t)
			nftnl_table_free(t);
		return -ENOMEM;
	}
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE_NAME);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	if (flags)
		nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, flags);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nft_batch_note(b, DIAG_NOWHERE, NFT_TABLE_WHAT);
	nftnl_table_free(t);
	return 0;
}

static int put_chain(struct nft_batch *b, const struct nfr_chain *c)
{
	struct nftnl_chain *ch = nftnl_chain_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE);

	if (!ch || !nlh) {
		if (ch)
			nftnl_chain_free(ch);
		return -ENOMEM;
	}
	nftnl_chain_set_str(ch, NFTNL_CHAIN_TABLE, NFT_TABLE_NAME);
	nftnl_chain_set_str(ch, NFTNL_CHAIN_NAME, c->name);
	nftnl_chain_set_u32(ch, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	if (c->base) {
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_HOOKNUM, c->hook);
		if (c->device[0])
			nftnl_chain_set_str(ch, NFTNL_CHAIN_DEV, c->device);
		nftnl_chain_set_s32(ch, NFTNL_CHAIN_PRIO, c->prio);
		nftnl_chain_set_str(ch, NFTNL_CHAIN_TYPE, c->nat ? "nat" : "filter");
		nftnl_chain_set_u32(ch, NFTNL_CHAIN_POLICY, c->policy_drop ? NF_DROP : NF_ACCEPT);
	}
	nftnl_chain_nlmsg_build_payload(nlh, ch);
	nftnl_chain_free(ch);
	return 0;
}

static int put_obj(struct nft_batch *b, uint32_t type, const char *name, const struct nfr_counter *c,
		   const struct nfr_limit *l)
{
	struct nftnl_obj *o = nftnl_obj_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_NEWOBJ, NFPROTO_INET, NLM_F_CREATE);

	if (!o || !nlh) {
		if (o)
			nftnl_obj_free(o);
		return -ENOMEM;
	}
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NFT_TABLE_NAME);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, NFPROTO_INET);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, type);
	if (c) {
		nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_PKTS, c->packets);
		nftnl_obj_set_u64(o, NFTNL_OBJ_CTR_BYTES, c->bytes);
	} else {
		nftnl_obj_set_u64(o, NFTNL_OBJ_LIMIT_RATE, l->rate);
		nftnl_obj_set_u64(o, NFTNL_OBJ_LIMIT_UNIT, l->per ? l->per : 1);
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_BURST, l->burst);
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_TYPE, NFT_LIMIT_PKTS);
		nftnl_obj_set_u32(o, NFTNL_OBJ_LIMIT_FLAGS, 0);
	}
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nftnl_obj_free(o);
	return 0;
}

/* How nft reads the key bytes back (its set user data): without it `nft
 * list` guesses, and shows interface names as "". Strings and one-byte
 * keys are host order, addresses and ports network order. */
enum {
	BYTEORDER_HOST = 1,
	BYTEORDER_BIG = 2
};

/* The set's user data: its keys' byte order, and its comment if it has one. */
static void set_udata(struct nftnl_set *ns, uint32_t order, const char *comment)
{
	struct nftnl_udata_buf *u = nftnl_udata_buf_alloc(64 + NFR_COMMENT);

	if (!u)
		return;
	if (nftnl_udata_put_u32(u, NFTNL_UDATA_SET_KEYBYTEORDER, order) &&
	    (!comment[0] || nftnl_udata_put_strz(u, NFTNL_UDATA_SET_COMMENT, comment)))
		nftnl_set_set_data(ns, NFTNL_SET_USERDATA, nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
	nftnl_udata_buf_free(u);
}

static struct nftnl_set *set_alloc(const struct nfr_set *s)
{
	static const uint32_t types[] = {
		[NFR_KEY_IFNAME] = NFT_TYPE_IFNAME,
		[NFR_KEY_IPV4] = NFT_TYPE_IPADDR,
		[NFR_KEY_IPV6] = NFT_TYPE_IP6ADDR,
		[NFR_KEY_PORT] = NFT_TYPE_INET_SERVICE,
		[NFR_KEY_PROTO_PORT] = NFT_TYPE_INET_PROTO << NFT_TYPE_BITS | NFT_TYPE_INET_SERVICE,
		[NFR_KEY_NFPROTO] = NFT_TYPE_NFPROTO,
	};
	static const uint8_t proto_port_fields[] = { 1, 2 };
	struct nftnl_set *ns = nftnl_set_alloc();
	bool concat = s->key == NFR_KEY_PROTO_PORT;
	char name[NFR_NAME];

	if (!ns)
		return NULL;
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, NFT_TABLE_NAME);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, set_name(s, name));
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, NFPROTO_INET);
	nftnl_set_set_u32(ns, NFTNL_SET_ID, s->id);
	nftnl_set_set_u32(ns, NFTNL_SET_FLAGS,
			  (s->name[0] ? 0 : NFT_SET_ANONYMOUS | NFT_SET_CONSTANT) |
				  (s->interval ? NFT_SET_INTERVAL : 0) | (concat && s->interval ? NFT_SET_CONCAT : 0) |
				  (s->objmap ? NFT_SET_OBJECT : 0));
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_TYPE, types[s->key]);
	nftnl_set_set_u32(ns, NFTNL_SET_KEY_LEN, nfr_key_len(s->key));
	if (concat && s->interval)
		nftnl_set_set_data(ns, NFTNL_SET_DESC_CONCAT, proto_port_fields, sizeof(proto_port_fields));
	if (s->objmap)
		nftnl_set_set_u32(ns, NFTNL_SET_OBJ_TYPE, NFT_OBJECT_COUNTER);
	if (s->portmap) { /* data: address . port */
		nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, NFT_SET_ANONYMOUS | NFT_SET_CONSTANT | NFT_SET_MAP);
		nftnl_set_set_u32(ns, NFTNL_SET_DATA_TYPE,
				  (s->map_family == POLICY_FAM_IPV4 ? NFT_TYPE_IPADDR : NFT_TYPE_IP6ADDR)
						  << NFT_TYPE_BITS |
					  NFT_TYPE_INET_SERVICE);
		nftnl_set_set_u32(ns, NFTNL_SET_DATA_LEN, addr_len(s->map_family) + 4);
	}
	set_udata(ns, s->key == NFR_KEY_IFNAME || s->key == NFR_KEY_NFPROTO ? BYTEORDER_HOST : BYTEORDER_BIG,
		  s->comment);
	if (s->timeout)
		nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, NFT_SET_INTERVAL | NFT_SET_TIMEOUT);
	if (s->dynamic) {
		nftnl_set_set_u32(ns, NFTNL_SET_FLAGS, (s->timeout_s ? NFT_SET_TIMEOUT : 0) | NFT_SET_EVAL);
		if (s->timeout_s)
			nftnl_set_set_u64(ns, NFTNL_SET_TIMEOUT, s->timeout_s * 1000);
		nftnl_set_set_u32(ns, NFTNL_SET_DESC_SIZE, s->size);
	}
	return ns;
}

static bool all_ones(const uint8_t *v, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (v[i] != 0xff)
			return false;
	return true;
}

static void plus_one(uint8_t *v, uint32_t len)
{
	for (int i = (int)len - 1; i >= 0 && ++v[i] == 0; i--)
		;
}

/* One element of the set's netlink form: an interval set says where each
 * range starts and where the next gap starts (the element after its last
 * address, flagged INTERVAL_END); a first range that does not start at 0
 * is preceded by an end at 0, as nft writes them. */
static struct nftnl_set_elem *add_elem(struct nftnl_set *ns, const uint8_t *key, uint32_t len, bool end,
				       uint64_t timeout_ms)
{
	struct nftnl_set_elem *e = nftnl_set_elem_alloc();

	if (!e)
		return NULL;
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, len);
	if (end)
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
	else if (timeout_ms)
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
	nftnl_set_elem_add(ns, e);
	return e;
}

/* One element (and, in an rbtree interval set, the end of its range):
 * a concatenation's range is its first and last key (KEY_END); a counter
 * map's element names its counter. */
static int put_elem(struct nftnl_set *ns, const struct nfr_table *t, const struct nfr_set *s, uint32_t i)
{
	static const uint8_t zero[16] = { 0 };
	const struct nfr_elem *v = &s->v[i];
	uint32_t len = nfr_key_len(s->key);
	struct nftnl_set_elem *e;
	uint8_t next[16];

	if (s->key == NFR_KEY_PROTO_PORT) {
		if (!(e = add_elem(ns, v->lo, len, false, v->timeout_ms)))
			return -ENOMEM;
		if (s->interval)
			nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY_END, v->hi, len);
		if (s->objmap)
			nftnl_set_elem_set_str(e, NFTNL_SET_ELEM_OBJREF, t->counters[v->chain].name);
		return 0;
	}
	if (s->interval && i == 0 && memcmp(v->lo, zero, len) && !add_elem(ns, zero, len, true, 0))
		return -ENOMEM;
	if (!(e = add_elem(ns, v->lo, len, false, v->timeout_ms)))
		return -ENOMEM;
	if (s->portmap) {
		uint8_t data[20] = { 0 };
		uint32_t alen = addr_len(s->map_family);

		memcpy(data, s->map_addr, alen);
		data[alen] = (uint8_t)(v->map_port >> 8);
		data[alen + 1] = (uint8_t)v->map_port;
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_DATA, data, alen + 4);
	}
	if (s->interval && !all_ones(v->hi, len)) {
		memcpy(next, v->hi, len);
		plus_one(next, len);
		if (!add_elem(ns, next, len, true, 0))
			return -ENOMEM;
	}
	return 0;
}

static int flush_elems_as(struct nft_batch *b, struct nftnl_set **ns, uint16_t type)
{
	struct nlmsghdr *nlh;

	if (!*ns)
		return 0;
	if (!(nlh = nft_batch_msg(b, type, NFPROTO_INET, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0)))
		return -ENOMEM;
	nftnl_set_elems_nlmsg_build_payload(nlh, *ns);
	nftnl_set_free(*ns);
	*ns = NULL;
	return 0;
}

static int flush_elems(struct nft_batch *b, struct nftnl_set **ns, const struct nfr_set *s)
{
	return flush_elems_as(b, ns, NFT_MSG_NEWSETELEM);
}

/* The elements of s (an address interval set of the table) added with
 * their timeouts, or deleted: each range's start, and the end of its
 * range unless it runs to the last address. */
static int change_elems(struct nft_batch *b, const struct nfr_set *s, uint16_t type)
{
	uint32_t len = nfr_key_len(s->key), in_msg = 0;
	struct nftnl_set *ns = NULL;
	int r = 0;

	for (uint32_t i = 0; i < s->n && !r; i++) {
		const struct nfr_elem *v = &s->v[i];
		uint8_t next[16];

		if (!ns && !(ns = set_alloc(s)))
			return -ENOMEM;
		if (!add_elem(ns, v->lo, len, false, type == NFT_MSG_NEWSETELEM ? v->timeout_ms : 0))
			r = -ENOMEM;
		if (!r && !all_ones(v->hi, len)) {
			memcpy(next, v->hi, len);
			plus_one(next, len);
			if (!add_elem(ns, next, len, true, 0))
				r = -ENOMEM;
		}
		if (!r && ++in_msg >= ELEMS_PER_MSG) {
			r = flush_elems_as(b, &ns, type);
			in_msg = 0;
		}
	}
	if (!r)
		r = flush_elems_as(b, &ns, type);
	if (ns)
		nftnl_set_free(ns);
	return r;
}

static void nft_batch_freep(struct nft_batch **b)
{
	nft_batch_free(*b);
}

int nft_set_change(const struct nfr_set *const *del, uint32_t ndel, const struct nfr_set *const *add, uint32_t nadd,
		   struct diags *d)
{
	_cleanup_(nft_batch_freep) struct nft_batch *b = NULL;
	int r = 0;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	/* Destroyed, not deleted: an element the kernel no longer holds (its
	 * own timeout ran out) is no error. An element added is destroyed
	 * first: a NEWSETELEM of an element the kernel still holds changes
	 * nothing, its old timeout stays (the kernel keeps an element
	 * NFT_TIMEOUT_MARGIN_MS past the store's expiry, so a renewal that
	 * comes just after the store let the entry go met it and was lost). */
	for (uint32_t i = 0; i < ndel && !r; i++)
		r = change_elems(b, del[i], NFT_MSG_DESTROYSETELEM);
	for (uint32_t i = 0; i < nadd && !r && !planted("nft-renewal-keeps-timeout"); i++)
		r = change_elems(b, add[i], NFT_MSG_DESTROYSETELEM);
	for (uint32_t i = 0; i < nadd && !r; i++)
		r = change_elems(b, add[i], NFT_MSG_NEWSETELEM);
	if (r < 0)
		return diag_errno(d, r, "building the nftables transaction");
	nft_batch_note(b, (struct loc){ 0 }, "a dynamic set's elements");
	return nft_batch_commit(b, d);
}

/* Every element of the set removed (a DELSETELEM without elements). */
static int flush_set(struct nft_batch *b, const struct nfr_set *s)
{
	struct nftnl_set *ns = set_alloc(s);
	struct nlmsghdr *nlh;

	if (!ns)
		return -ENOMEM;
	if ((nlh = nft_batch_msg(b, NFT_MSG_DELSETELEM, NFPROTO_INET, 0)))
		nftnl_set_elems_nlmsg_build_payload(nlh, ns);
	nftnl_set_free(ns);
	return nlh ? 0 : -ENOMEM;
}

int nft_sets_replace(const struct nfr_set *const *sets, uint32_t n, const char *what, struct diags *d)
{
	_cleanup_(nft_batch_freep) struct nft_batch *b = NULL;
	int r = 0;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	for (uint32_t i = 0; i < n && !r; i++) {
		struct nftnl_set *ns = NULL;

		r = flush_set(b, sets[i]);
		for (uint32_t k = 0; k < sets[i]->n && !r; k++)
			if ((!ns && !(ns = set_alloc(sets[i]))) ||
			    !add_elem(ns, sets[i]->v[k].lo, nfr_key_len(sets[i]->key), false, 0))
				r = -ENOMEM;
		if (!r)
			r = flush_elems(b, &ns, sets[i]);
		if (ns)
			nftnl_set_free(ns);
	}
	if (r < 0)
		return diag_errno(d, r, "building the nftables transaction");
	nft_batch_note(b, (struct loc){ 0 }, what);
	return nft_batch_commit(b, d);
}

static int put_elems(struct nft_batch *b, const struct nfr_table *t, const struct nfr_set *s)
{
	struct nftnl_set *ns = NULL;
	uint32_t in_msg = 0;
	int r = 0;

	for (uint32_t i = 0; i < s->n && !r; i++) {
		if (!ns && !(ns = set_alloc(s)))
			return -ENOMEM;
		r = put_elem(ns, t, s, i);
		if (!r && ++in_msg >= ELEMS_PER_MSG) {
			r = flush_elems(b, &ns, s);
			in_msg = 0;
		}
	}
	if (!r)
		r = flush_elems(b, &ns, s);
	if (ns)
		nftnl_set_free(ns);
	return r;
}

static int put_set(struct nft_batch *b, const struct nfr_table *t, const struct nfr_set *s)
{
	struct nftnl_set *ns = set_alloc(s);
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_NEWSET, NFPROTO_INET, NLM_F_CREATE);

	if (!ns || !nlh) {
		if (ns)
			nftnl_set_free(ns);
		return -ENOMEM;
	}
	nftnl_set_nlmsg_build_payload(nlh, ns);
	nftnl_set_free(ns);
	return put_elems(b, t, s);
}

static int put_rule(struct nft_batch *b, const struct nfr_table *t, const struct nfr_rule *ru)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nlmsghdr *nlh;

	if (!r)
		return -ENOMEM;
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE_NAME);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, t->chains[ru->chain].name);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	for (uint32_t i = 0; i < ru->nm; i++)
		emit_match(r, &ru->m[i]);
	for (uint32_t i = 0; i < ru->ns; i++)
		emit_stmt(r, &ru->s[i]);
	if (!(nlh = nft_batch_msg(b, NFT_MSG_NEWRULE, NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND))) {
		nftnl_rule_free(r);
		return -ENOMEM;
	}
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nft_batch_note(b, ru->loc, ru->what);
	nftnl_rule_free(r);
	return 0;
}

/* What this process's last transaction put in the table, by name: the
 * next one replaces it in place. */
static struct applied {
	bool valid;
	bool maps_alt; /* its counter maps are named cn_* (set_name) */
	struct nfr_chain *chains;
	uint32_t nchains;
	char (*names)[NFR_NAME]; /* named sets, counter maps, counters, limits */
	uint32_t nsets, nmaps, ncounters, nlimits;
} last;

static void applied_forget(void)
{
	free(last.chains);
	free(last.names);
	memset(&last, 0, sizeof(last));
}

static void applied_record(const struct nfr_table *t)
{
	uint32_t nsets = 0, nmaps = 0, k = 0;

	applied_forget();
	for (uint32_t i = 0; i < t->nsets; i++)
		if (t->sets[i]->name[0])
			t->sets[i]->objmap ? nmaps++ : nsets++;
	last.chains = malloc((t->nchains ? t->nchains : 1) * sizeof(*last.chains));
	last.names = malloc((nsets + nmaps + t->ncounters + t->nlimits + 1) * sizeof(*last.names));
	if (!last.chains || !last.names) {
		applied_forget(); /* the next transaction replaces the table whole */
		return;
	}
	memcpy(last.chains, t->chains, t->nchains * sizeof(*last.chains));
	last.nchains = t->nchains;
	for (int maps = 0; maps < 2; maps++)
		for (uint32_t i = 0; i < t->nsets; i++)
			if (t->sets[i]->name[0] && t->sets[i]->objmap == maps)
				set_name(t->sets[i], last.names[k++]);
	for (uint32_t i = 0; i < t->ncounters; i++)
		memcpy(last.names[k++], t->counters[i].name, NFR_NAME);
	for (uint32_t i = 0; i < t->nlimits; i++)
		memcpy(last.names[k++], t->limits[i].name, NFR_NAME);
	last.nsets = nsets;
	last.nmaps = nmaps;
	last.ncounters = t->ncounters;
	last.nlimits = t->nlimits;
	last.maps_alt = maps_alt;
	last.valid = true;
}

/* A delete of one of the table's things by name (type: NFT_MSG_DELSET,
 * DELCHAIN, DELOBJ with its object type). */
static int put_del(struct nft_batch *b, uint16_t type, const char *name, uint32_t objtype)
{
	struct nlmsghdr *nlh = nft_batch_msg(b, type, NFPROTO_INET, 0);

	if (!nlh)
		return -ENOMEM;
	if (type == NFT_MSG_DELSET) {
		struct nftnl_set *s = nftnl_set_alloc();

		if (!s)
			return -ENOMEM;
		nftnl_set_set_str(s, NFTNL_SET_TABLE, NFT_TABLE_NAME);
		nftnl_set_set_str(s, NFTNL_SET_NAME, name);
		nftnl_set_nlmsg_build_payload(nlh, s);
		nftnl_set_free(s);
	} else if (type == NFT_MSG_DELCHAIN) {
		struct nftnl_chain *c = nftnl_chain_alloc();

		if (!c)
			return -ENOMEM;
		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NFT_TABLE_NAME);
		nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
		nftnl_chain_nlmsg_build_payload(nlh, c);
		nftnl_chain_free(c);
	} else {
		struct nftnl_obj *o = nftnl_obj_alloc();

		if (!o)
			return -ENOMEM;
		nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NFT_TABLE_NAME);
		nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
		nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, objtype);
		nftnl_obj_nlmsg_build_payload(nlh, o);
		nftnl_obj_free(o);
	}
	nft_batch_note(b, DIAG_NOWHERE, NFT_TABLE_WHAT);
	return 0;
}

/* A base chain of the last table that the new one has alike (name, hook,
 * priority, type) stays registered: only its policy and rules change. */
static bool chain_kept(const struct nfr_table *t, const struct nfr_chain *old)
{
	if (!old->base)
		return false;
	for (uint32_t i = 0; i < t->nchains; i++) {
		const struct nfr_chain *c = &t->chains[i];

		if (c->base && !strcmp(c->name, old->name) && c->hook == old->hook && c->prio == old->prio &&
		    c->nat == old->nat)
			return true;
	}
	return false;
}

/* A set of connection counts (a connection limit's, per source) that the
 * new table has too: it stays, and with it the counts (a NEWSET of the
 * same set changes nothing). */
static bool counts_kept(const struct nfr_table *t, const char *name)
{
	const struct nfr_set *s = nfr_set_find(t, name);

	return s && s->dynamic && !s->timeout_s;
}

/*
 * In place: every rule deleted (one message for the table), the last
 * table's sets, limits and chains deleted, except the base chains the new
 * table has alike and the connection counts it has too, and then the new
 * table's put in. A base chain that
 * stays is never unregistered from its hook: replacing the table whole
 * (below) did that, and packets of established flows that crossed the
 * hooks during the commit were lost (TCP retransmissions with
 * `established: rules`; test_reload).
 *
 * The last counter maps stay until retire() (set_name says why), and so
 * do the last counters, which those maps hold: a counter the new table
 * has too is kept as it is (a NEWOBJ of an existing counter changes
 * nothing), so it goes on counting through the reload.
 */
static int put_in_place(struct nft_batch *b, const struct nfr_table *t)
{
	struct nftnl_rule *all = nftnl_rule_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_DELRULE, NFPROTO_INET, 0);
	uint32_t k = 0;
	int r = 0;

	if (!all || !nlh) {
		if (all)
			nftnl_rule_free(all);
		return -ENOMEM;
	}
	nftnl_rule_set_str(all, NFTNL_RULE_TABLE, NFT_TABLE_NAME);
	nftnl_rule_set_u32(all, NFTNL_RULE_FAMILY, NFPROTO_INET);
	nftnl_rule_nlmsg_build_payload(nlh, all);
	nftnl_rule_free(all);
	nft_batch_note(b, DIAG_NOWHERE, NFT_TABLE_WHAT);
	for (uint32_t i = 0; i < last.nsets && !r; i++, k++)
		if (!counts_kept(t, last.names[k]))
			r = put_del(b, NFT_MSG_DELSET, last.names[k], 0);
	k += last.nmaps + last.ncounters;
	for (uint32_t i = 0; i < last.nlimits && !r; i++)
		r = put_del(b, NFT_MSG_DELOBJ, last.names[k++], NFT_OBJECT_LIMIT);
	for (uint32_t i = 0; i < last.nchains && !r; i++)
		if (!chain_kept(t, &last.chains[i]))
			r = put_del(b, NFT_MSG_DELCHAIN, last.chains[i].name, 0);
	return r;
}

/* Until every packet that was in the rules during the last commit has
 * left them: an RCU grace period, which membarrier's GLOBAL command waits
 * for (unless the kernel runs nohz_full, where a pause stands in). */
static void grace_period(void)
{
	struct timespec pause = { 0, 50 * 1000 * 1000 };

	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	nanosleep(&pause, NULL);
}

/* After an in-place commit: the last counter maps, which no rule uses any
 * more, and then the last counters the new table does not have, deleted
 * once no packet can be looking into them (the deletes are built first;
 * the kernel sees them only at the commit, after the grace period). */
static int retire(const struct nfr_table *t)
{
	struct nft_batch *b;
	uint32_t k = last.nsets, n = 0;
	int r;

	if ((r = nft_batch_new(&b)) < 0)
		return r;
	for (uint32_t i = 0; i < last.nmaps && !r; i++, n++)
		r = put_del(b, NFT_MSG_DELSET, last.names[k++], 0);
	for (uint32_t i = 0; i < last.ncounters && !r; i++, k++)
		if (nfr_counter_find(t, last.names[k]) == UINT32_MAX &&
		    (r = put_del(b, NFT_MSG_DELOBJ, last.names[k], NFT_OBJECT_COUNTER)) == 0)
			n++;
	if (!r && n) {
		struct diags d;

		grace_period();
		diags_init(&d);
		r = nft_batch_commit(b, &d);
		diags_free(&d);
	}
	nft_batch_free(b);
	return r;
}

/* add + delete + add: a table left by a killed daemon (or by an earlier
 * process) is replaced, and a missing one created, in the same
 * transaction; one this process made is replaced in place. */
static int put_all(struct nft_batch *b, const struct nfr_table *t, uint32_t flags, bool in_place)
{
	int r;

	if (in_place)
		r = put_in_place(b, t);
	else if ((r = put_table(b, NFT_MSG_NEWTABLE, 0)) || (r = put_table(b, NFT_MSG_DELTABLE, 0)) ||
		 (r = put_table(b, NFT_MSG_NEWTABLE, flags)))
		return r;
	for (uint32_t i = 0; i < t->ncounters && !r; i++)
		r = put_obj(b, NFT_OBJECT_COUNTER, t->counters[i].name, &t->counters[i], NULL);
	for (uint32_t i = 0; i < t->nlimits && !r; i++)
		r = put_obj(b, NFT_OBJECT_LIMIT, t->limits[i].name, NULL, &t->limits[i]);
	for (uint32_t i = 0; i < t->nchains && !r; i++)
		r = put_chain(b, &t->chains[i]);
	for (uint32_t i = 0; i < t->nsets && !r; i++)
		r = put_set(b, t, t->sets[i]);
	for (uint32_t i = 0; i < t->nrules && !r; i++)
		r = put_rule(b, t, &t->rules[i]);
	return r;
}

/* Owned and persisting where the kernel has NFT_TABLE_F_PERSIST (6.9):
 * nothing else changes the table while nfbox runs, and it outlives a
 * crash. Before, a plain table: an owned one would die with the daemon. */
static int persist = -1; /* -1 not known yet, 0 no, 1 yes */

static int commit(const struct nfr_table *t, uint32_t flags, bool in_place, struct diags *d)
{
	struct nft_batch *b;
	int r;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	r = put_all(b, t, flags, in_place);
	r = r ? diag_errno(d, r, "building the nftables transaction") : nft_batch_commit(b, d);
	nft_batch_free(b);
	return r;
}

/* In place when this process made the table; should the kernel refuse
 * that (which would be nfbox's mistake, not the policy's), whole, with a
 * warning, so that the reload still happens. */
static int transaction(const struct nfr_table *t, uint32_t flags, struct diags *d)
{
	struct diags tmp;
	int r;

	if (last.valid) {
		diags_init(&tmp);
		maps_alt = !last.maps_alt;
		r = commit(t, flags, true, &tmp);
		if (r == 0) {
			diags_free(&tmp);
			if ((r = retire(t)) < 0) {
				log_warn("the last counter maps of table inet %s could not be deleted (%s); "
					 "the next reload replaces the table whole",
					 NFT_TABLE_NAME, strerror(-r));
				applied_forget();
				return 0;
			}
			applied_record(t);
			return 0;
		}
		log_warn("table inet %s could not be replaced in place (%s); it is replaced whole", NFT_TABLE_NAME,
			 diags_last(&tmp, strerror(-r)));
		diags_free(&tmp);
	}
	maps_alt = false;
	r = commit(t, flags, false, d);
	if (r == 0)
		applied_record(t);
	else
		applied_forget();
	return r;
}

int nft_table_apply(const struct nfr_table *t, struct diags *d)
{
	struct diags first;
	int r;

	if (t->err)
		return diag_errno(d, t->err, "building table inet %s", NFT_TABLE_NAME);
	if (persist == 0)
		return transaction(t, 0, d);
	diags_init(&first);
	r = transaction(t, NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST, &first);
	if (r == -EOPNOTSUPP && persist < 0) {
		persist = 0; /* an older kernel: the flags are what it refused */
		diags_free(&first);
		return transaction(t, 0, d);
	}
	if (r == 0)
		persist = 1;
	diags_append(d, &first);
	diags_free(&first);
	return r;
}

bool nft_table_owned(void)
{
	return persist == 1;
}

int nft_table_remove(struct diags *d)
{
	struct nft_batch *b;
	int r;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	/* Created first, so that the delete cannot fail for a missing table. */
	if ((r = put_table(b, NFT_MSG_NEWTABLE, 0)) == 0)
		r = put_table(b, NFT_MSG_DELTABLE, 0);
	r = r ? diag_errno(d, r, "building the nftables transaction") : nft_batch_commit(b, d);
	nft_batch_free(b);
	applied_forget();
	return r;
}

/* Chains of t (and their rules) added to table inet nfbox as it is, or
 * (del) deleted from it with their rules, in one transaction: what a live
 * trace adds for its time. The table's own transactions know nothing of
 * them: a reload ends the trace first. */
int nft_chains_change(const struct nfr_table *t, bool del, struct diags *d)
{
	_cleanup_(nft_batch_freep) struct nft_batch *b = NULL;
	int r;

	if (t->err)
		return diag_errno(d, t->err, "building the trace's chains");
	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	for (uint32_t i = 0; i < t->nchains && !r; i++)
		r = del ? put_del(b, NFT_MSG_DELCHAIN, t->chains[i].name, 0) : put_chain(b, &t->chains[i]);
	for (uint32_t i = 0; i < t->nrules && !r && !del; i++)
		r = put_rule(b, t, &t->rules[i]);
	return r ? diag_errno(d, r, "building the nftables transaction") : nft_batch_commit(b, d);
}
