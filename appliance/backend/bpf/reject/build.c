/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "backend/bpf/reject/build.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/ip6walk.h"

#define IP4_HDR_LEN  20
#define IP6_HDR_LEN  40
#define TCP_HDR_LEN  20
#define ICMP_HDR_LEN 8 /* type, code, checksum, 4 unused bytes */
#define REPLY_TTL    64

/* RFC 1812 4.3.2.3: the error's IPv4 datagram (our 20-byte header, no
 * options) stays within 576 bytes. */
#define ICMP4_MAX_MSG (576 - IP4_HDR_LEN)
/* RFC 4443 2.4(c): the error's IPv6 packet stays within the minimum MTU. */
#define ICMP6_MAX_MSG (1280 - IP6_HDR_LEN)

#define ICMP4_DEST_UNREACH 3
#define ICMP6_DEST_UNREACH 1

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

#define IP4_DF	   0x4000
#define IP4_MF	   0x2000
#define IP4_OFFSET 0x1fff

_Static_assert(ICMP4_MAX_MSG <= REJECT_MAX_REPLY && ICMP6_MAX_MSG <= REJECT_MAX_REPLY &&
		       IP6_HDR_LEN + TCP_HDR_LEN <= REJECT_MAX_REPLY,
	       "every reply fits in reject_reply.buf");

/* What reject_build learns of the packet being rejected. */
struct orig {
	const uint8_t *pkt;
	int family;
	const uint8_t *saddr, *daddr;
	size_t alen;	  /* 4 or 16 */
	size_t dgram_len; /* the whole datagram, from the IP length fields */
	size_t avail;	  /* the bytes given that belong to the datagram */
	bool l4_known;	  /* the header chain ended within the bytes given: proto and l4off hold */
	uint8_t proto;
	size_t l4off;
	bool later_frag; /* not the first fragment */
	bool more_frags; /* the first fragment of several */
};

/* RFC 792 / RFC 1812 5.2.7.1 (13) for IPv4; RFC 4443 3.1 for IPv6. */
static const uint8_t icmp4_code[] = {
	[REJECT_TCP_RESET] = 3, [REJECT_PORT] = 3, [REJECT_ADMIN] = 13, [REJECT_HOST] = 1, [REJECT_NET] = 0,
};
static const uint8_t icmp6_code[] = {
	[REJECT_TCP_RESET] = 4, [REJECT_PORT] = 4, [REJECT_ADMIN] = 1, [REJECT_HOST] = 3, [REJECT_NET] = 0,
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* RFC 1071: the one's complement sum of big-endian 16-bit words, an odd
 * last byte padded with zero. At most a few kilobytes: no overflow. */
static uint32_t csum_add(uint32_t acc, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		acc += get16(p + i);
	if (n & 1)
		acc += (uint32_t)p[n - 1] << 8;
	return acc;
}

static uint16_t csum_finish(uint32_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

static int parse4(const uint8_t *p, size_t len, struct orig *o)
{
	size_t ihl, tot;
	uint16_t frag;

	if (len < IP4_HDR_LEN || p[0] >> 4 != 4)
		return -EINVAL;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	tot = get16(p + 2);
	/* The whole header is needed: an ICMP error quotes it (RFC 792), and
	 * the classifier copies more than its 60 bytes at most. */
	if (ihl < IP4_HDR_LEN || tot < ihl || len < ihl)
		return -EINVAL;
	frag = get16(p + 6);
	o->saddr = p + 12;
	o->daddr = p + 16;
	o->alen = 4;
	o->dgram_len = tot;
	o->avail = min_size(len, tot);
	o->l4_known = true;
	o->proto = p[9];
	o->l4off = ihl;
	o->later_frag = (frag & IP4_OFFSET) != 0;
	o->more_frags = (frag & IP4_MF) != 0;
	return 0;
}

/* To the upper-layer header, as the classifier reads the chain
 * (lib/ip6walk.h). A chain that leaves the bytes given ends the walk with
 * l4_known false, and so does a later fragment (what follows its header is
 * data); one that leaves the datagram is invalid. */
static int walk6(const uint8_t *p, struct orig *o)
{
	struct ip6walk w;

	switch (ip6_walk(p, o->avail, o->dgram_len, &w)) {
	case IP6W_MALFORMED:
		return -EINVAL;
	case IP6W_CUT:
		return 0;
	case IP6W_OK:
		break;
	}
	o->more_frags = w.more;
	o->later_frag = w.later;
	if (w.later)
		return 0;
	o->l4_known = true;
	o->proto = w.proto;
	o->l4off = w.l4off;
	return 0;
}

static int parse6(const uint8_t *p, size_t len, struct orig *o)
{
	if (len < IP6_HDR_LEN || p[0] >> 4 != 6)
		return -EINVAL;
	o->saddr = p + 8;
	o->daddr = p + 24;
	o->alen = 16;
	/* A payload length of 0 (a jumbogram, RFC 2675) leaves no room for the
	 * hop-by-hop header that would say its length: invalid in walk6(). */
	o->dgram_len = IP6_HDR_LEN + (size_t)get16(p + 4);
	o->avail = min_size(len, o->dgram_len);
	return walk6(p, o);
}

static bool addr_all(const uint8_t *a, size_t n, uint8_t byte)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != byte)
			return false;
	return true;
}

static bool multicast(const struct orig *o, const uint8_t *a)
{
	return o->alen == 4 ? (a[0] & 0xf0) == 0xe0 : a[0] == 0xff;
}

/* RFC 1122 3.2.2, RFC 4443 2.4(e): the source must name a single host
 * (loopback does, here), and the packet must not have gone to a group. */
static bool bad_addresses(const struct orig *o)
{
	bool bcast_src = o->alen == 4 && addr_all(o->saddr, 4, 0xff);
	bool bcast_dst = o->alen == 4 && addr_all(o->daddr, 4, 0xff);

	return addr_all(o->saddr, o->alen, 0) || multicast(o, o->saddr) || bcast_src || multicast(o, o->daddr) ||
	       bcast_dst;
}

/* RFC 1122 3.2.2, RFC 4443 2.4(e): no error about an error. An ICMP
 * message whose type is past the bytes given might be one. */
static bool icmp_error(const struct orig *o)
{
	uint8_t t;

	if (!o->l4_known || o->proto != (o->alen == 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6))
		return false;
	if (o->l4off >= o->avail)
		return true;
	t = o->pkt[o->l4off];
	if (o->alen == 16)
		return t < 128;
	return t == 3 || t == 4 || t == 5 || t == 11 || t == 12;
}

/* RFC 793: a reset is never answered, by a reset or otherwise. */
static bool tcp_rst(const struct orig *o)
{
	return o->l4_known && o->proto == IPPROTO_TCP && o->l4off + 14 <= o->avail && (o->pkt[o->l4off + 13] & TCP_RST);
}

static int may_reply(const struct orig *o)
{
	/* RFC 1122 3.2.2, RFC 4443 2.4(e): only the first fragment. */
	if (o->later_frag || bad_addresses(o) || icmp_error(o) || tcp_rst(o))
		return -ENOMSG;
	return 0;
}

static void build_icmp(const struct orig *o, enum reject_kind kind, struct reject_reply *out)
{
	bool v4 = o->family == AF_INET;
	size_t quote = min_size(o->avail, (v4 ? ICMP4_MAX_MSG : ICMP6_MAX_MSG) - ICMP_HDR_LEN);

	memset(out, 0, sizeof(*out));
	out->family = o->family;
	memcpy(out->dst, o->saddr, o->alen);
	out->buf[0] = v4 ? ICMP4_DEST_UNREACH : ICMP6_DEST_UNREACH;
	out->buf[1] = v4 ? icmp4_code[kind] : icmp6_code[kind];
	memcpy(out->buf + ICMP_HDR_LEN, o->pkt, quote);
	out->len = ICMP_HDR_LEN + quote;
	/* ICMPv6's checksum covers the source address the kernel picks: the
	 * kernel fills it on raw ICMPv6 sockets (RFC 3542 3.1). */
	if (v4)
		put16(out->buf + 2, csum_finish(csum_add(0, out->buf, out->len)));
}

static size_t put_ip_header(const struct orig *o, uint8_t *p)
{
	if (o->family == AF_INET) {
		p[0] = 0x45;
		put16(p + 2, IP4_HDR_LEN + TCP_HDR_LEN);
		/* id 0: the datagram is atomic (DF, RFC 6864); a raw socket
		 * chooses one anyway when it is 0. */
		put16(p + 6, IP4_DF);
		p[8] = REPLY_TTL;
		p[9] = IPPROTO_TCP;
		memcpy(p + 12, o->daddr, 4);
		memcpy(p + 16, o->saddr, 4);
		put16(p + 10, csum_finish(csum_add(0, p, IP4_HDR_LEN)));
		return IP4_HDR_LEN;
	}
	p[0] = 0x60;
	put16(p + 4, TCP_HDR_LEN);
	p[6] = IPPROTO_TCP;
	p[7] = REPLY_TTL;
	memcpy(p + 8, o->daddr, 16);
	memcpy(p + 24, o->saddr, 16);
	return IP6_HDR_LEN;
}

/* Both pseudo-headers (RFC 793 3.1, RFC 8200 8.1) add the same two words
 * beyond the addresses: the protocol and the TCP length. */
static uint16_t tcp_csum(const struct reject_reply *out, size_t alen, const uint8_t *t)
{
	uint32_t acc = IPPROTO_TCP + TCP_HDR_LEN;

	acc = csum_add(acc, out->src, alen);
	acc = csum_add(acc, out->dst, alen);
	return csum_finish(csum_add(acc, t, TCP_HDR_LEN));
}

struct reset {
	uint32_t seq, ack;
	uint8_t flags;
};

/* RFC 793 "Reset Generation": a reset the other end accepts takes its
 * sequence number from their ACK, or else acknowledges their segment. */
static int reset_numbers(const struct orig *o, struct reset *rst)
{
	const uint8_t *th = o->pkt + o->l4off;
	size_t seg_len = o->dgram_len - o->l4off, doff;

	if (o->l4off + TCP_HDR_LEN > o->avail)
		return -ENOMSG;
	doff = (size_t)(th[12] >> 4) * 4;
	if (doff < TCP_HDR_LEN || doff > seg_len)
		return -ENOMSG; /* no segment to reset */
	if (th[13] & TCP_ACK) {
		*rst = (struct reset){ .seq = get32(th + 8), .flags = TCP_RST };
		return 0;
	}
	/* The segment's length spans fragments that this one does not count. */
	if (o->more_frags)
		return -ENOMSG;
	rst->seq = 0;
	rst->ack = get32(th + 4) + (uint32_t)(seg_len - doff) + !!(th[13] & TCP_SYN) + !!(th[13] & TCP_FIN);
	rst->flags = TCP_RST | TCP_ACK;
	return 0;
}

static int build_reset(const struct orig *o, struct reject_reply *out)
{
	const uint8_t *th = o->pkt + o->l4off;
	struct reset rst;
	uint8_t *t;
	int r;

	r = reset_numbers(o, &rst);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	out->family = o->family;
	out->tcp_reset = true;
	memcpy(out->dst, o->saddr, o->alen);
	memcpy(out->src, o->daddr, o->alen);
	t = out->buf + put_ip_header(o, out->buf);
	memcpy(t, th + 2, 2);
	memcpy(t + 2, th, 2);
	put32(t + 4, rst.seq);
	put32(t + 8, rst.ack);
	t[12] = (TCP_HDR_LEN / 4) << 4;
	t[13] = rst.flags;
	put16(t + 16, tcp_csum(out, o->alen, t));
	out->len = (size_t)(t - out->buf) + TCP_HDR_LEN;
	return 0;
}

int reject_build(const uint8_t *pkt, size_t len, int family, enum reject_kind kind, struct reject_reply *out)
{
	struct orig o = { .pkt = pkt, .family = family };
	int r;

	if ((unsigned)kind > REJECT_NET)
		return -EINVAL;
	if (family == AF_INET)
		r = parse4(pkt, len, &o);
	else if (family == AF_INET6)
		r = parse6(pkt, len, &o);
	else
		r = -EINVAL;
	if (r < 0)
		return r;
	r = may_reply(&o);
	if (r < 0)
		return r;
	if (kind == REJECT_TCP_RESET) {
		/* Past the bytes given it may be TCP, and a reset needs the header. */
		if (!o.l4_known)
			return -ENOMSG;
		if (o.proto == IPPROTO_TCP)
			return build_reset(&o, out);
	}
	build_icmp(&o, kind, out);
	return 0;
}
