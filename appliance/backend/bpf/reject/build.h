/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The reply with which nfbox rejects a packet: a TCP reset, or an ICMP /
 * ICMPv6 destination unreachable quoting the packet. Pure: bytes in, bytes
 * out, no socket and no privilege; the caller sends the reply (and limits
 * its rate, RFC 1812 4.3.2.8 / RFC 4443 2.4(f)).
 *
 *   struct reject_reply r;
 *   if (reject_build(pkt, len, AF_INET6, REJECT_ADMIN, &r) == 0)
 *           send r.buf (r.len bytes) to r.dst on a raw socket (see below)
 */
#ifndef NFBOX_REJECT_BUILD_H
#define NFBOX_REJECT_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum reject_kind {
	REJECT_TCP_RESET, /* TCP gets a reset; any other protocol gets ICMP port unreachable */
	REJECT_PORT,	  /* ICMP(v4) 3/3 port unreachable, ICMPv6 1/4 port unreachable */
	REJECT_ADMIN,	  /* ICMP 3/13 communication administratively prohibited, ICMPv6 1/1 */
	REJECT_HOST,	  /* ICMP 3/1 host unreachable, ICMPv6 1/3 address unreachable */
	REJECT_NET,	  /* ICMP 3/0 net unreachable, ICMPv6 1/0 no route to destination */
};

#define REJECT_MAX_REPLY 1280

struct reject_reply {
	int family;	 /* AF_INET or AF_INET6 */
	bool tcp_reset;	 /* buf holds a whole IP packet (IP header + TCP RST), to send on a raw
			    IPPROTO_RAW socket of family; else buf holds an ICMP/ICMPv6 message
			    (type, code, checksum, ... , the quoted original), to send on a raw
			    IPPROTO_ICMP / IPPROTO_ICMPV6 socket: the kernel adds the IP header
			    and picks the source address */
	uint8_t dst[16]; /* where the reply goes: the original's source (IPv4 in the first 4 bytes) */
	uint8_t src[16]; /* tcp_reset: the original's destination, which the reset comes from */
	size_t len;
	uint8_t buf[REJECT_MAX_REPLY];
};

/* pkt: the first len bytes of the packet being rejected, from its IP header
 * (len may be less than the datagram: the classifier copies at most a few
 * hundred bytes; the length fields of the headers describe the whole
 * datagram). family: AF_INET or AF_INET6.
 * Returns 0 with *out filled, -ENOMSG when no reply may be sent for this
 * packet (RFC 1122 3.2.2 / RFC 4443 2.4(e) / RFC 793), or -EINVAL when the
 * bytes are not a valid IPv4/IPv6 packet of that family. *out is left
 * untouched on failure.
 * -EINVAL also covers: a family or kind out of range; an IPv4 header (IHL)
 * not wholly in the bytes given; an IPv6 extension header that runs past
 * the datagram's payload length (so jumbograms are refused as invalid). */
int reject_build(const uint8_t *pkt, size_t len, int family, enum reject_kind kind, struct reject_reply *out);

#endif
