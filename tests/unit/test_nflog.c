/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * NFLOG messages to packets (appliance/netlink/nflog.c): messages built
 * here as nfnetlink_log builds them, each parsed from a heap copy of
 * exactly nlmsg_len bytes, so that a read past the end is an ASan error
 * rather than luck.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netlink/nflog.h"
#include "tests/lib/check.h"

#define PKT_TYPE ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)

/* 8-byte aligned like a receive buffer, so that attribute offsets are what
 * they would be in the kernel's datagram. */
static uint64_t msgbuf[1024];
static struct nflog_packet pkt;

static const uint8_t ip4[28] = { 0x45, 0x00, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 192,  0,
				 2,    1,    192,  0,	 2,    2,    0x30, 0x39, 0x00, 0x09, 0x00, 0x08, 0x00, 0x00 };
static const uint8_t ip6[40] = { 0x60, 0, 0, 0, 0, 0, 58, 64, 0x20, 0x01, 0x0d, 0xb8 };

static struct nlmsghdr *msg_start(uint16_t type, uint8_t family)
{
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;

	memset(msgbuf, 0, sizeof(msgbuf));
	nlh = mnl_nlmsg_put_header(msgbuf);
	nlh->nlmsg_type = type;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(5);
	return nlh;
}

static void put_hdr(struct nlmsghdr *nlh, uint16_t hw_protocol, uint8_t hook)
{
	struct nfulnl_msg_packet_hdr h = { .hw_protocol = htons(hw_protocol), .hook = hook };

	mnl_attr_put(nlh, NFULA_PACKET_HDR, sizeof(h), &h);
}

static void put_ts(struct nlmsghdr *nlh, uint64_t sec, uint64_t usec)
{
	struct nfulnl_msg_packet_timestamp ts = { .sec = htobe64(sec), .usec = htobe64(usec) };

	mnl_attr_put(nlh, NFULA_TIMESTAMP, sizeof(ts), &ts);
}

/* nflog_parse on a heap copy of exactly nlmsg_len bytes of msgbuf. */
static int parse(const struct nlmsghdr *nlh)
{
	struct nlmsghdr *copy = malloc(nlh->nlmsg_len);
	int r;

	if (!copy)
		abort();
	memcpy(copy, nlh, nlh->nlmsg_len);
	r = nflog_parse(copy, &pkt);
	free(copy);
	return r;
}

/* A parse that must fail, and leave the packet as it was. */
static int parse_fails(const struct nlmsghdr *nlh)
{
	struct nflog_packet before;
	int r;

	memset(&pkt, 0xa5, sizeof(pkt));
	before = pkt;
	r = parse(nlh);
	if (memcmp(&before, &pkt, sizeof(pkt)))
		return 1;
	return r;
}

/* The payload is checked against the copy parse() freed: compare in place. */
static int parse_keep(const struct nlmsghdr *nlh, struct nlmsghdr **copy)
{
	*copy = malloc(nlh->nlmsg_len);
	if (!*copy)
		abort();
	memcpy(*copy, nlh, nlh->nlmsg_len);
	return nflog_parse(*copy, &pkt);
}

static void test_all_fields(void)
{
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4), *copy;
	size_t ts_off;

	check_begin("nflog-parse-all-fields");
	mnl_attr_put_strz(nlh, NFULA_PREFIX, "hello");
	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_OUT);
	mnl_attr_put_u32(nlh, NFULA_IFINDEX_INDEV, htonl(2));
	mnl_attr_put_u32(nlh, NFULA_IFINDEX_OUTDEV, htonl(0x01020307));
	mnl_attr_put_u32(nlh, NFULA_MARK, htonl(42));
	ts_off = nlh->nlmsg_len + sizeof(struct nlattr);
	put_ts(nlh, 1700000000, 123456);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	/* The timestamp's be64 fields sit at a 4-byte boundary, as the kernel
	 * puts them: a parser that dereferences them trips UBSan. */
	CHECK_EQ_INT(ts_off % 8, 4);
	CHECK_EQ_INT(parse_keep(nlh, &copy), 0);
	CHECK_EQ_INT(pkt.family, NFPROTO_IPV4);
	CHECK_EQ_INT(pkt.hook, NF_INET_LOCAL_OUT);
	CHECK_EQ_INT(pkt.ifin, 2);
	CHECK_EQ_INT(pkt.ifout, 0x01020307);
	CHECK_EQ_STR(pkt.prefix, "hello");
	CHECK_EQ_INT(pkt.len, sizeof(ip4));
	CHECK_EQ_INT(pkt.orig_len, sizeof(ip4));
	CHECK(pkt.payload > (const uint8_t *)copy && pkt.payload + pkt.len <= (const uint8_t *)copy + copy->nlmsg_len);
	CHECK(pkt.payload && !memcmp(pkt.payload, ip4, sizeof(ip4)));
	CHECK_EQ_INT(pkt.ts_ns, 1700000000123456000ull);
	free(copy);
	check_end();
}

static void test_absent_optional(void)
{
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV6);

	check_begin("nflog-parse-absent-optional-attributes");
	put_hdr(nlh, ETH_P_IPV6, NF_INET_FORWARD);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip6), ip6);
	memset(&pkt, 0xa5, sizeof(pkt));
	CHECK_EQ_INT(parse(nlh), 0);
	CHECK_EQ_INT(pkt.family, NFPROTO_IPV6);
	CHECK_EQ_INT(pkt.hook, NF_INET_FORWARD);
	CHECK_EQ_INT(pkt.ifin, 0);
	CHECK_EQ_INT(pkt.ifout, 0);
	CHECK_EQ_STR(pkt.prefix, "");
	CHECK_EQ_INT(pkt.len, sizeof(ip6));
	CHECK_EQ_INT(pkt.orig_len, sizeof(ip6));
	CHECK_EQ_INT(pkt.ts_ns, 0);
	check_end();
}

static void test_unknown_skipped(void)
{
	struct nfulnl_msg_packet_hw hw = { .hw_addrlen = htons(6), .hw_addr = { 2, 0, 0, 0, 0, 1 } };
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);

	check_begin("nflog-parse-skips-other-attributes");
	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_IN);
	mnl_attr_put(nlh, NFULA_HWADDR, sizeof(hw), &hw);
	mnl_attr_put_u32(nlh, NFULA_UID, htonl(1000));
	mnl_attr_put(nlh, 60, 3, "xyz"); /* a type this kernel does not have yet */
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	mnl_attr_put_u32(nlh, NFULA_SEQ, htonl(7));
	CHECK_EQ_INT(parse(nlh), 0);
	CHECK_EQ_INT(pkt.hook, NF_INET_LOCAL_IN);
	CHECK_EQ_INT(pkt.len, sizeof(ip4));
	check_end();
}

static void test_prefix_bounds(void)
{
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);
	char longp[201];

	check_begin("nflog-parse-prefix-cut-to-127");
	memset(longp, 'a', 200);
	longp[200] = '\0';
	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_IN);
	mnl_attr_put_strz(nlh, NFULA_PREFIX, longp);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	CHECK_EQ_INT(parse(nlh), 0);
	CHECK_EQ_INT(strlen(pkt.prefix), 127);
	check_end();

	/* Last in the message, 3 bytes, no NUL and no padding after it: read
	 * within its bytes only. */
	check_begin("nflog-parse-prefix-without-nul");
	nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);
	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_IN);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	mnl_attr_put(nlh, NFULA_PREFIX, 3, "abc");
	nlh->nlmsg_len -= 1;
	CHECK_EQ_INT(parse(nlh), 0);
	CHECK_EQ_STR(pkt.prefix, "abc");
	check_end();
}

static void test_other_types(void)
{
	static const uint16_t types[] = { (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG, (NFNL_SUBSYS_QUEUE << 8) | 0,
					  NLMSG_DONE, NLMSG_ERROR };
	struct nlmsghdr *nlh;

	check_begin("nflog-parse-other-message-types-einval");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		nlh = msg_start(types[i], NFPROTO_IPV4);
		put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_OUT);
		mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
		CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	}
	check_end();
}

static void test_no_payload(void)
{
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);

	check_begin("nflog-parse-without-payload-einval");
	mnl_attr_put_strz(nlh, NFULA_PREFIX, "hello");
	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_OUT);
	CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	mnl_attr_put(nlh, NFULA_PAYLOAD, 0, NULL);
	CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	check_end();

	check_begin("nflog-parse-without-packet-hdr-einval");
	nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	check_end();
}

/* A whole message whose length is then cut to len. */
static struct nlmsghdr *cut(uint32_t len)
{
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);

	put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_OUT);
	mnl_attr_put_strz(nlh, NFULA_PREFIX, "hello");
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	if (len)
		nlh->nlmsg_len = len;
	return nlh;
}

/* An attribute of type `type` with `len` bytes of payload, then a payload. */
static struct nlmsghdr *sized(uint16_t type, size_t len)
{
	static const uint8_t zeros[32];
	struct nlmsghdr *nlh = msg_start(PKT_TYPE, NFPROTO_IPV4);

	if (type != NFULA_PACKET_HDR)
		put_hdr(nlh, ETH_P_IP, NF_INET_LOCAL_OUT);
	mnl_attr_put(nlh, type, len, zeros);
	mnl_attr_put(nlh, NFULA_PAYLOAD, sizeof(ip4), ip4);
	return nlh;
}

static void test_truncated(void)
{
	const uint32_t whole = cut(0)->nlmsg_len;
	struct nlmsghdr *nlh;
	struct nlattr *a;

	check_begin("nflog-parse-cut-short-rejected");
	CHECK_EQ_INT(parse(cut(0)), 0);
	/* hdr 20..28, prefix 28..38 (+2 padding), payload 40..72 */
	CHECK_EQ_INT(whole, 72);
	CHECK_EQ_INT(parse_fails(cut(whole - 10)), -EINVAL);	   /* inside the payload */
	CHECK_EQ_INT(parse_fails(cut(42)), -EINVAL);		   /* 2 bytes of the payload's header */
	CHECK_EQ_INT(parse_fails(cut(36)), -EINVAL);		   /* inside the prefix */
	CHECK_EQ_INT(parse_fails(cut(NLMSG_HDRLEN + 2)), -EINVAL); /* inside nfgenmsg */
	CHECK_EQ_INT(parse_fails(cut(NLMSG_HDRLEN + 4)), -EINVAL); /* no attributes */
	check_end();

	check_begin("nflog-parse-wrong-attribute-sizes-rejected");
	CHECK_EQ_INT(parse(sized(NFULA_IFINDEX_INDEV, 4)), 0);
	CHECK_EQ_INT(parse_fails(sized(NFULA_IFINDEX_INDEV, 2)), -EINVAL);
	CHECK_EQ_INT(parse_fails(sized(NFULA_IFINDEX_OUTDEV, 3)), -EINVAL);
	CHECK_EQ_INT(parse_fails(sized(NFULA_PACKET_HDR, 2)), -EINVAL);
	CHECK_EQ_INT(parse_fails(sized(NFULA_TIMESTAMP, 8)), -EINVAL);
	CHECK_EQ_INT(parse_fails(sized(NFULA_TIMESTAMP, 24)), -EINVAL);
	check_end();

	/* nla_len below the attribute header (0 would loop for ever) or past
	 * the end of the message. */
	check_begin("nflog-parse-bad-attribute-length-rejected");
	for (unsigned bad = 0; bad < 4; bad++) {
		nlh = cut(0);
		a = mnl_nlmsg_get_payload_offset(nlh, sizeof(struct nfgenmsg));
		a->nla_len = (uint16_t)bad;
		CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	}
	nlh = cut(0);
	a = mnl_nlmsg_get_payload_offset(nlh, sizeof(struct nfgenmsg));
	a->nla_len = (uint16_t)(whole - NLMSG_HDRLEN - 4 + 1);
	CHECK_EQ_INT(parse_fails(nlh), -EINVAL);
	check_end();
}

int main(void)
{
	test_all_fields();
	test_absent_optional();
	test_unknown_skipped();
	test_prefix_bounds();
	test_other_types();
	test_no_payload();
	test_truncated();
	check_begin("nflog-close-null");
	nflog_close(NULL);
	check_end();
	CHECK_EXIT();
}
