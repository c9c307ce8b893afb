/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reject replies (appliance/backend/bpf/reject/build.c): packets crafted byte by
 * byte, replies read back field by field, checksums verified by a routine
 * of this file's own (a whole message sums to 0xffff).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backend/bpf/reject/build.h"
#include "tests/lib/check.h"

#define SRC4  "192.0.2.1"
#define DST4  "198.51.100.7"
#define SRC6  "2001:db8::1"
#define DST6  "2001:db8:1::7"
#define SPORT 40000
#define DPORT 80

#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

/* ---- bytes ---- */

static void w16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void w32(uint8_t *p, uint32_t v)
{
	w16(p, v >> 16);
	w16(p + 2, v & 0xffff);
}

static unsigned r16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static uint32_t r32(const uint8_t *p)
{
	return (uint32_t)r16(p) << 16 | r16(p + 2);
}

static void addr(int family, const char *s, uint8_t *out)
{
	if (inet_pton(family, s, out) != 1)
		abort();
}

/* Byte by byte, 64-bit accumulator, carries folded once at the end: not
 * the module's word loop. */
static unsigned sum(const uint8_t *p, size_t n)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += i % 2 ? p[i] : (uint64_t)p[i] << 8;
	while (s > 0xffff)
		s = (s >> 16) + (s & 0xffff);
	return (unsigned)s;
}

static unsigned cksum(const uint8_t *p, size_t n)
{
	return ~sum(p, n) & 0xffff;
}

/* The TCP checksum holds when pseudo-header + segment, laid out in full
 * (RFC 793 3.1 / RFC 8200 8.1), sums to 0xffff. */
static int tcp_sum_ok(int family, const uint8_t *src, const uint8_t *dst, const uint8_t *seg, size_t n)
{
	uint8_t b[40 + 1500] = { 0 };
	size_t a = family == AF_INET ? 4 : 16, ph;

	memcpy(b, src, a);
	memcpy(b + a, dst, a);
	if (family == AF_INET) {
		b[9] = 6;
		w16(b + 10, (unsigned)n);
		ph = 12;
	} else {
		w32(b + 32, (uint32_t)n);
		b[39] = 6;
		ph = 40;
	}
	memcpy(b + ph, seg, n);
	return sum(b, ph + n) == 0xffff;
}

/* ---- packet builders: each writes at p and returns the bytes written ---- */

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static size_t ip4(uint8_t *p, const char *src, const char *dst, uint8_t proto, size_t l4len, unsigned frag)
{
	memset(p, 0, 20);
	p[0] = 0x45;
	w16(p + 2, (unsigned)(20 + l4len));
	w16(p + 4, 0x1234);
	w16(p + 6, frag);
	p[8] = 61;
	p[9] = proto;
	addr(AF_INET, src, p + 12);
	addr(AF_INET, dst, p + 16);
	w16(p + 10, cksum(p, 20));
	return 20;
}

static size_t ip6(uint8_t *p, const char *src, const char *dst, uint8_t nh, size_t payload)
{
	memset(p, 0, 40);
	p[0] = 0x60;
	w16(p + 4, (unsigned)payload);
	p[6] = nh;
	p[7] = 59;
	addr(AF_INET6, src, p + 8);
	addr(AF_INET6, dst, p + 24);
	return 40;
}

static size_t tcp(uint8_t *p, uint8_t flags, uint32_t seq, uint32_t ack)
{
	memset(p, 0, 20);
	w16(p, SPORT);
	w16(p + 2, DPORT);
	w32(p + 4, seq);
	w32(p + 8, ack);
	p[12] = 0x50;
	p[13] = flags;
	w16(p + 14, 64240);
	w16(p + 16, 0xbeef); /* the module need not check it */
	return 20;
}

static size_t udp(uint8_t *p, size_t payload)
{
	w16(p, 5353);
	w16(p + 2, 53);
	w16(p + 4, (unsigned)(8 + payload));
	w16(p + 6, 0);
	pattern(p + 8, payload, 0x11);
	return 8 + payload;
}

static size_t tcp4(uint8_t *p, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload)
{
	size_t n = ip4(p, SRC4, DST4, 6, 20 + payload, 0x4000);

	n += tcp(p + n, flags, seq, ack);
	pattern(p + n, payload, 0x33);
	return n + payload;
}

static size_t tcp6(uint8_t *p, uint8_t flags, uint32_t seq, uint32_t ack, size_t payload)
{
	size_t n = ip6(p, SRC6, DST6, 6, 20 + payload);

	n += tcp(p + n, flags, seq, ack);
	pattern(p + n, payload, 0x33);
	return n + payload;
}

static size_t udp4(uint8_t *p, size_t payload)
{
	size_t n = ip4(p, SRC4, DST4, 17, 8 + payload, 0);

	return n + udp(p + n, payload);
}

static size_t udp6(uint8_t *p, size_t payload)
{
	size_t n = ip6(p, SRC6, DST6, 17, 8 + payload);

	return n + udp(p + n, payload);
}

static size_t icmp4(uint8_t *p, uint8_t type)
{
	size_t n = ip4(p, SRC4, DST4, 1, 36, 0);

	memset(p + n, 0, 36);
	p[n] = type;
	return n + 36;
}

static size_t icmp6(uint8_t *p, uint8_t type)
{
	size_t n = ip6(p, SRC6, DST6, 58, 56);

	memset(p + n, 0, 56);
	p[n] = type;
	return n + 56;
}

/* An extension header of n bytes (a multiple of 8) with next header nh. */
static size_t ext8(uint8_t *p, uint8_t nh, size_t n)
{
	memset(p, 0, n);
	p[0] = nh;
	p[1] = (uint8_t)(n / 8 - 1);
	if (n > 2) {
		p[2] = 1; /* PadN over the rest */
		p[3] = (uint8_t)(n - 4);
	}
	return n;
}

static size_t frag6(uint8_t *p, uint8_t nh, unsigned offset8, int more)
{
	memset(p, 0, 8);
	p[0] = nh;
	w16(p + 2, offset8 << 3 | (more ? 1 : 0));
	w32(p + 4, 0xcafe);
	return 8;
}

/* ---- checks of a reply ---- */

static struct reject_reply rep;
static uint8_t pk[4096];

static int build(size_t len, int family, enum reject_kind kind)
{
	memset(&rep, 0xa5, sizeof(rep));
	return reject_build(pk, len, family, kind, &rep);
}

/* A reset from the original's destination to its source, ports swapped. */
static void check_reset(int family, const uint8_t *orig, size_t l4off, uint32_t seq, uint32_t ack, uint8_t flags)
{
	size_t a = family == AF_INET ? 4 : 16, ih = family == AF_INET ? 20 : 40;
	const uint8_t *osrc = orig + (family == AF_INET ? 12 : 8), *odst = osrc + a;
	const uint8_t *ip = rep.buf, *t = rep.buf + ih;

	CHECK_EQ_INT(rep.family, family);
	CHECK(rep.tcp_reset);
	CHECK_EQ_INT(rep.len, ih + 20);
	CHECK(!memcmp(rep.dst, osrc, a));
	CHECK(!memcmp(rep.src, odst, a));
	if (family == AF_INET) {
		CHECK_EQ_INT(ip[0], 0x45);
		CHECK_EQ_INT(r16(ip + 2), 40);
		CHECK_EQ_INT(r16(ip + 6), 0x4000);
		CHECK_EQ_INT(ip[8], 64);
		CHECK_EQ_INT(ip[9], 6);
		CHECK_EQ_INT(sum(ip, 20), 0xffff);
		CHECK(!memcmp(ip + 12, odst, 4));
		CHECK(!memcmp(ip + 16, osrc, 4));
	} else {
		CHECK_EQ_INT(ip[0], 0x60);
		CHECK_EQ_INT(r32(ip) & 0x0fffffff, 0);
		CHECK_EQ_INT(r16(ip + 4), 20);
		CHECK_EQ_INT(ip[6], 6);
		CHECK_EQ_INT(ip[7], 64);
		CHECK(!memcmp(ip + 8, odst, 16));
		CHECK(!memcmp(ip + 24, osrc, 16));
	}
	CHECK_EQ_INT(r16(t), r16(orig + l4off + 2));
	CHECK_EQ_INT(r16(t + 2), r16(orig + l4off));
	CHECK_EQ_INT(r32(t + 4), seq);
	CHECK_EQ_INT(r32(t + 8), ack);
	CHECK_EQ_INT(t[12], 0x50);
	CHECK_EQ_INT(t[13], flags);
	CHECK_EQ_INT(r16(t + 14), 0);
	CHECK_EQ_INT(r16(t + 18), 0);
	CHECK(tcp_sum_ok(family, ip + (family == AF_INET ? 12 : 8), ip + (family == AF_INET ? 16 : 24), t, 20));
}

/* An ICMP(v6) destination unreachable to the original's source, quoting
 * its first `quote` bytes. */
static void check_unreach(int family, uint8_t code, size_t quote)
{
	size_t a = family == AF_INET ? 4 : 16;

	CHECK_EQ_INT(rep.family, family);
	CHECK(!rep.tcp_reset);
	CHECK_EQ_INT(rep.len, 8 + quote);
	CHECK(!memcmp(rep.dst, pk + (family == AF_INET ? 12 : 8), a));
	CHECK_EQ_INT(rep.buf[0], family == AF_INET ? 3 : 1);
	CHECK_EQ_INT(rep.buf[1], code);
	if (family == AF_INET)
		CHECK_EQ_INT(sum(rep.buf, rep.len), 0xffff);
	else
		CHECK_EQ_INT(r16(rep.buf + 2), 0);
	CHECK_EQ_INT(r32(rep.buf + 4), 0);
	CHECK(!memcmp(rep.buf + 8, pk, quote));
}

/* ---- cases ---- */

static void test_reset_syn(void)
{
	size_t n;

	check_begin("reset-syn-ipv4");
	n = tcp4(pk, F_SYN, 1000, 0, 0);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 0, 1001, F_RST | F_ACK);
	check_end();

	check_begin("reset-syn-ipv6");
	n = tcp6(pk, F_SYN, 0xffffffff, 0, 0);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 40, 0, 0, F_RST | F_ACK); /* seq + 1 wraps */
	check_end();
}

static void test_reset_ack(void)
{
	size_t n;

	check_begin("reset-ack-with-payload-takes-their-ack");
	n = tcp4(pk, F_ACK | F_PSH, 5000, 0xdeadbeef, 100);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 0xdeadbeef, 0, F_RST);
	n = tcp6(pk, F_ACK | F_PSH, 5000, 0x01020304, 100);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 40, 0x01020304, 0, F_RST);
	check_end();

	check_begin("reset-fin");
	n = tcp4(pk, F_FIN | F_ACK, 7, 77, 0);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 77, 0, F_RST);
	/* without ACK, the FIN counts one and the payload its length */
	n = tcp4(pk, F_FIN, 7, 0, 10);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 0, 7 + 10 + 1, F_RST | F_ACK);
	check_end();

	check_begin("reset-segment-length-from-ip-length-not-bytes-given");
	n = tcp4(pk, F_SYN, 1000, 0, 500);
	CHECK_EQ_INT(build(60, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 0, 1000 + 500 + 1, F_RST | F_ACK);
	/* TCP options count in the header, not the segment */
	n = ip6(pk, SRC6, DST6, 6, 32 + 5);
	n += tcp(pk + n, F_SYN, 1, 0);
	pk[n - 20 + 12] = 0x80;
	memset(pk + n, 1, 12 + 5);
	CHECK_EQ_INT(build(n + 17, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 40, 0, 1 + 5 + 1, F_RST | F_ACK);
	/* bytes beyond the datagram (link padding) change nothing */
	n = tcp4(pk, F_SYN, 1000, 0, 0);
	memset(pk + n, 0xee, 6);
	CHECK_EQ_INT(build(n + 6, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 0, 1001, F_RST | F_ACK);
	check_end();
}

static void test_reset_ext_headers(void)
{
	size_t n;

	check_begin("reset-ipv6-behind-hop-by-hop-and-destination-options");
	n = ip6(pk, SRC6, DST6, 0, 8 + 16 + 20 + 10);
	n += ext8(pk + n, 60, 8);
	n += ext8(pk + n, 6, 16);
	n += tcp(pk + n, F_SYN, 300, 0);
	pattern(pk + n, 10, 1);
	CHECK_EQ_INT(build(n + 10, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 64, 0, 300 + 10 + 1, F_RST | F_ACK);
	check_end();

	check_begin("reset-ipv6-behind-ah-and-first-fragment");
	n = ip6(pk, SRC6, DST6, 51, 24 + 8 + 20);
	memset(pk + n, 0, 24);
	pk[n] = 44;
	pk[n + 1] = 4; /* (4 + 2) * 4 = 24 bytes */
	n += 24;
	n += frag6(pk + n, 6, 0, 0);
	n += tcp(pk + n, F_SYN, 9, 0);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 72, 0, 10, F_RST | F_ACK);
	check_end();
}

static void test_unreach_udp(void)
{
	size_t n;

	check_begin("unreachable-udp-ipv4-capped-at-556");
	n = udp4(pk, 1000);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, 548);
	CHECK_EQ_INT(rep.len, 556);
	check_end();

	check_begin("unreachable-udp-ipv4-short-quotes-the-datagram");
	n = udp4(pk, 12);
	memset(pk + n, 0xee, 10); /* link padding, not the datagram's */
	CHECK_EQ_INT(build(n + 10, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, 40);
	/* and a datagram longer than the bytes given quotes those */
	n = udp4(pk, 1000);
	CHECK_EQ_INT(build(300, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, 300);
	check_end();

	check_begin("unreachable-udp-ipv6-capped-at-1240");
	n = udp6(pk, 1400);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, 1232);
	CHECK_EQ_INT(rep.len, 1240);
	CHECK_EQ_INT(build(300, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, 300);
	n = udp6(pk, 4);
	CHECK_EQ_INT(build(n + 3, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, 52);
	check_end();
}

static void test_codes(void)
{
	static const struct {
		enum reject_kind kind;
		uint8_t code4, code6;
	} map[] = {
		{ REJECT_TCP_RESET, 3, 4 }, { REJECT_PORT, 3, 4 }, { REJECT_ADMIN, 13, 1 },
		{ REJECT_HOST, 1, 3 },	    { REJECT_NET, 0, 0 },
	};
	size_t i, n;

	check_begin("codes-ipv4");
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		n = udp4(pk, 20);
		CHECK_EQ_INT(build(n, AF_INET, map[i].kind), 0);
		check_unreach(AF_INET, map[i].code4, n);
	}
	check_end();

	check_begin("codes-ipv6");
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		n = udp6(pk, 20);
		CHECK_EQ_INT(build(n, AF_INET6, map[i].kind), 0);
		check_unreach(AF_INET6, map[i].code6, n);
	}
	check_end();

	check_begin("codes-for-tcp-with-icmp-kinds");
	n = tcp4(pk, F_SYN, 1, 0, 0);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_ADMIN), 0);
	check_unreach(AF_INET, 13, n);
	n = tcp6(pk, F_SYN, 1, 0, 0);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_HOST), 0);
	check_unreach(AF_INET6, 3, n);
	check_end();

	check_begin("reset-asked-for-udp-is-port-unreachable");
	n = udp4(pk, 20);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_unreach(AF_INET, 3, n);
	n = udp6(pk, 20);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), 0);
	check_unreach(AF_INET6, 4, n);
	check_end();
}

static void test_icmp_in(void)
{
	static const uint8_t errors4[] = { 3, 4, 5, 11, 12 };
	static const uint8_t errors6[] = { 1, 2, 3, 4, 127 };
	size_t i, n;

	check_begin("no-error-about-an-icmp-error");
	for (i = 0; i < sizeof(errors4); i++) {
		n = icmp4(pk, errors4[i]);
		CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -ENOMSG);
		CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	}
	for (i = 0; i < sizeof(errors6); i++) {
		n = icmp6(pk, errors6[i]);
		CHECK_EQ_INT(build(n, AF_INET6, REJECT_ADMIN), -ENOMSG);
	}
	/* behind an extension header too */
	n = ip6(pk, SRC6, DST6, 0, 8 + 8);
	n += ext8(pk + n, 58, 8);
	memset(pk + n, 0, 8);
	pk[n] = 1;
	CHECK_EQ_INT(build(n + 8, AF_INET6, REJECT_PORT), -ENOMSG);
	/* a type past the bytes given might be an error */
	n = icmp4(pk, 8);
	CHECK_EQ_INT(build(20, AF_INET, REJECT_PORT), -ENOMSG);
	check_end();

	check_begin("icmp-queries-get-an-error");
	n = icmp4(pk, 8);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, n);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_unreach(AF_INET, 3, n);
	n = icmp4(pk, 13);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_ADMIN), 0);
	check_unreach(AF_INET, 13, n);
	n = icmp6(pk, 128);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, n);
	n = icmp6(pk, 135);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_NET), 0);
	check_unreach(AF_INET6, 0, n);
	check_end();
}

static void test_rst_in(void)
{
	size_t n;

	check_begin("no-reply-to-a-reset");
	n = tcp4(pk, F_RST, 1, 0, 0);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -ENOMSG);
	n = tcp6(pk, F_RST | F_ACK, 1, 2, 0);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), -ENOMSG);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_ADMIN), -ENOMSG);
	check_end();
}

static void test_fragments(void)
{
	size_t n;

	check_begin("no-reply-to-later-fragments-ipv4");
	n = udp4(pk, 40);
	w16(pk + 6, 185); /* offset 1480 */
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -ENOMSG);
	n = tcp4(pk, F_SYN, 1, 0, 40);
	w16(pk + 6, 0x2000 | 3);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	/* the first one gets its error */
	n = udp4(pk, 40);
	w16(pk + 6, 0x2000);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, n);
	check_end();

	check_begin("no-reply-to-later-fragments-ipv6");
	n = ip6(pk, SRC6, DST6, 44, 8 + 48);
	n += frag6(pk + n, 17, 100, 1);
	n += udp(pk + n, 40);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), -ENOMSG);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), -ENOMSG);
	/* what follows a later fragment is data, even if it looks like a header */
	n = ip6(pk, SRC6, DST6, 0, 8 + 8 + 8);
	n += ext8(pk + n, 44, 8);
	n += frag6(pk + n, 60, 1, 0);
	memset(pk + n, 0xff, 8);
	CHECK_EQ_INT(build(n + 8, AF_INET6, REJECT_PORT), -ENOMSG);
	n = ip6(pk, SRC6, DST6, 44, 8 + 48);
	n += frag6(pk + n, 17, 0, 1);
	n += udp(pk + n, 40);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, n);
	check_end();

	check_begin("first-fragment-reset-needs-ack");
	/* without ACK the segment's length is not known from one fragment */
	n = tcp4(pk, F_SYN, 1, 0, 40);
	w16(pk + 6, 0x2000);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	n = tcp4(pk, F_ACK, 1, 2, 40);
	w16(pk + 6, 0x2000);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), 0);
	check_reset(AF_INET, pk, 20, 2, 0, F_RST);
	check_end();
}

static int udp4_from_to(const char *src, const char *dst)
{
	size_t n = ip4(pk, src, dst, 17, 8 + 8, 0);

	n += udp(pk + n, 8);
	return build(n, AF_INET, REJECT_PORT);
}

static int udp6_from_to(const char *src, const char *dst)
{
	size_t n = ip6(pk, src, dst, 17, 8 + 8);

	n += udp(pk + n, 8);
	return build(n, AF_INET6, REJECT_PORT);
}

static void test_addresses(void)
{
	size_t n;

	check_begin("no-reply-to-multicast-or-broadcast-source");
	CHECK_EQ_INT(udp4_from_to("224.0.0.1", DST4), -ENOMSG);
	CHECK_EQ_INT(udp4_from_to("239.255.255.250", DST4), -ENOMSG);
	CHECK_EQ_INT(udp4_from_to("255.255.255.255", DST4), -ENOMSG);
	CHECK_EQ_INT(udp6_from_to("ff02::1", DST6), -ENOMSG);
	check_end();

	check_begin("no-reply-to-multicast-or-broadcast-destination");
	CHECK_EQ_INT(udp4_from_to(SRC4, "224.0.0.251"), -ENOMSG);
	CHECK_EQ_INT(udp4_from_to(SRC4, "255.255.255.255"), -ENOMSG);
	CHECK_EQ_INT(udp6_from_to(SRC6, "ff02::fb"), -ENOMSG);
	CHECK_EQ_INT(udp6_from_to(SRC6, "ff05::1:3"), -ENOMSG);
	n = ip4(pk, SRC4, "224.0.0.9", 6, 20, 0);
	tcp(pk + n, F_SYN, 1, 0);
	CHECK_EQ_INT(build(n + 20, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	check_end();

	check_begin("no-reply-to-unspecified-source");
	CHECK_EQ_INT(udp4_from_to("0.0.0.0", DST4), -ENOMSG);
	CHECK_EQ_INT(udp6_from_to("::", DST6), -ENOMSG);
	check_end();

	check_begin("loopback-and-unicast-get-a-reply");
	CHECK_EQ_INT(udp4_from_to("127.0.0.1", "127.0.0.1"), 0);
	CHECK_EQ_INT(udp6_from_to("::1", "::1"), 0);
	CHECK_EQ_INT(udp4_from_to("223.255.255.255", "223.0.0.1"), 0);
	CHECK_EQ_INT(udp6_from_to("fe80::1", "fe80::2"), 0);
	check_end();
}

static void test_truncated(void)
{
	size_t n;

	check_begin("truncated-tcp-header");
	n = tcp4(pk, F_SYN, 1, 0, 0);
	CHECK_EQ_INT(build(n - 1, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	CHECK_EQ_INT(build(n - 1, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, n - 1);
	/* a data offset beyond the segment: nothing to reset */
	pk[32] = 0xf0;
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	pk[32] = 0x40;
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	check_end();

	check_begin("ipv6-chain-past-bytes-given");
	n = ip6(pk, SRC6, DST6, 0, 8 + 200 + 20);
	n += ext8(pk + n, 60, 8);
	n += ext8(pk + n, 6, 200);
	n += tcp(pk + n, F_SYN, 1, 0);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_TCP_RESET), 0);
	check_reset(AF_INET6, pk, 248, 0, 2, F_RST | F_ACK);
	CHECK_EQ_INT(build(128, AF_INET6, REJECT_TCP_RESET), -ENOMSG);
	CHECK_EQ_INT(build(128, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, 128);
	/* the destination options' length is past 45 bytes: TCP or not? */
	CHECK_EQ_INT(build(45, AF_INET6, REJECT_TCP_RESET), -ENOMSG);
	CHECK_EQ_INT(build(45, AF_INET6, REJECT_PORT), 0);
	check_unreach(AF_INET6, 4, 45);
	CHECK_EQ_INT(build(41, AF_INET6, REJECT_HOST), 0);
	check_unreach(AF_INET6, 3, 41);
	check_end();
}

static void test_invalid(void)
{
	struct reject_reply before;
	size_t n;

	check_begin("invalid-wrong-version");
	n = udp4(pk, 20);
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), -EINVAL);
	n = udp6(pk, 20);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -EINVAL);
	pk[0] = 0x45;
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), -EINVAL);
	check_end();

	check_begin("invalid-ipv4-header-lengths");
	n = udp4(pk, 20);
	pk[0] = 0x44;
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -EINVAL);
	pk[0] = 0x46; /* 24 bytes of header, 20 given */
	CHECK_EQ_INT(build(20, AF_INET, REJECT_PORT), -EINVAL);
	pk[0] = 0x45;
	w16(pk + 2, 19);
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), -EINVAL);
	w16(pk + 2, 20); /* an empty datagram is valid */
	CHECK_EQ_INT(build(n, AF_INET, REJECT_PORT), 0);
	check_unreach(AF_INET, 3, 20);
	check_end();

	check_begin("invalid-too-short");
	n = udp4(pk, 20);
	CHECK_EQ_INT(build(19, AF_INET, REJECT_PORT), -EINVAL);
	CHECK_EQ_INT(build(0, AF_INET, REJECT_PORT), -EINVAL);
	n = udp6(pk, 20);
	CHECK_EQ_INT(build(39, AF_INET6, REJECT_PORT), -EINVAL);
	check_end();

	check_begin("invalid-ipv6-chain-past-datagram");
	n = ip6(pk, SRC6, DST6, 0, 12);
	n += ext8(pk + n, 6, 16); /* 16 bytes where the payload length has 12 */
	CHECK_EQ_INT(build(n, AF_INET6, REJECT_PORT), -EINVAL);
	n = ip6(pk, SRC6, DST6, 44, 3); /* a fragment header cut before its offset */
	frag6(pk + n, 17, 0, 0);
	CHECK_EQ_INT(build(n + 8, AF_INET6, REJECT_PORT), -EINVAL);
	n = ip6(pk, SRC6, DST6, 0, 0); /* a jumbogram */
	n += ext8(pk + n, 6, 8);
	CHECK_EQ_INT(build(n + 20, AF_INET6, REJECT_TCP_RESET), -EINVAL);
	check_end();

	check_begin("invalid-family-or-kind");
	n = udp4(pk, 20);
	CHECK_EQ_INT(build(n, AF_UNIX, REJECT_PORT), -EINVAL);
	CHECK_EQ_INT(build(n, AF_INET, (enum reject_kind)(REJECT_NET + 1)), -EINVAL);
	CHECK_EQ_INT(build(n, AF_INET, (enum reject_kind) ~0u), -EINVAL);
	check_end();

	check_begin("reply-untouched-on-failure");
	n = tcp4(pk, F_RST, 1, 0, 0);
	memset(&before, 0xa5, sizeof(before));
	CHECK_EQ_INT(build(n, AF_INET, REJECT_TCP_RESET), -ENOMSG);
	CHECK(!memcmp(&rep, &before, sizeof(rep)));
	CHECK_EQ_INT(build(10, AF_INET, REJECT_TCP_RESET), -EINVAL);
	CHECK(!memcmp(&rep, &before, sizeof(rep)));
	check_end();
}

int main(void)
{
	test_reset_syn();
	test_reset_ack();
	test_reset_ext_headers();
	test_unreach_udp();
	test_codes();
	test_icmp_in();
	test_rst_in();
	test_fragments();
	test_addresses();
	test_truncated();
	test_invalid();
	CHECK_EXIT();
}
