/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Conntrack messages to connection ends (appliance/netlink/ctevents.c):
 * messages built here as ctnetlink builds its events, each parsed from a
 * heap copy of exactly nlmsg_len bytes (a read past the end is an ASan
 * error). The tuple must come out as the classifier keys a connection
 * (bpf/nfbox.h, "Connection limits"): ports as their network-order bytes,
 * an ICMP id in sport and the type and code bytes in dport.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "netlink/ctevents.h"
#include "tests/lib/check.h"

static uint64_t msgbuf[512];

static struct nlmsghdr *msg_start(uint8_t type, uint8_t af)
{
	struct nlmsghdr *nlh;
	struct nfgenmsg *g;

	memset(msgbuf, 0, sizeof(msgbuf));
	nlh = mnl_nlmsg_put_header(msgbuf);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = af;
	g->version = NFNETLINK_V0;
	return nlh;
}

static void put_tuple(struct nlmsghdr *nlh, uint16_t which, uint8_t af, const void *src, const void *dst, uint8_t proto,
		      uint16_t sport, uint16_t dport)
{
	struct nlattr *t = mnl_attr_nest_start(nlh, which), *ip, *pr;
	size_t alen = af == AF_INET ? 4 : 16;

	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put(nlh, af == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, alen, src);
	mnl_attr_put(nlh, af == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST, alen, dst);
	mnl_attr_nest_end(nlh, ip);
	pr = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
	if (proto == IPPROTO_ICMP) {
		mnl_attr_put_u16(nlh, CTA_PROTO_ICMP_ID, htons(sport));
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMP_TYPE, (uint8_t)(dport >> 8));
		mnl_attr_put_u8(nlh, CTA_PROTO_ICMP_CODE, (uint8_t)dport);
	} else {
		mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
		mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(dport));
	}
	mnl_attr_nest_end(nlh, pr);
	mnl_attr_nest_end(nlh, t);
}

static void put_tcp_state(struct nlmsghdr *nlh, uint8_t st)
{
	struct nlattr *pi = mnl_attr_nest_start(nlh, CTA_PROTOINFO), *tcp = mnl_attr_nest_start(nlh, CTA_PROTOINFO_TCP);

	mnl_attr_put_u8(nlh, CTA_PROTOINFO_TCP_STATE, st);
	mnl_attr_nest_end(nlh, tcp);
	mnl_attr_nest_end(nlh, pi);
}

/* Parse a heap copy of exactly the message. */
static int parse(const struct nlmsghdr *nlh, struct ct_end *e)
{
	struct nlmsghdr *copy = malloc(nlh->nlmsg_len);
	int r;

	if (!copy)
		abort();
	memcpy(copy, nlh, nlh->nlmsg_len);
	r = ctev_parse(copy, e);
	free(copy);
	return r;
}

static const uint8_t c4[4] = { 198, 51, 100, 2 }, s4[4] = { 203, 0, 113, 10 };

/* A destroyed TCP connection: its original tuple, not the reply's. */
static void test_destroy(void)
{
	struct nlmsghdr *nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_INET);
	struct ct_end e;

	check_begin("destroy-tcp");
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, c4, s4, IPPROTO_TCP, 40000, 22);
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET, s4, c4, IPPROTO_TCP, 22, 40000);
	CHECK_EQ_INT(parse(nlh, &e), 1);
	CHECK(e.destroyed);
	CHECK_EQ_INT(e.t.af, AF_INET);
	CHECK_EQ_INT(e.t.proto, IPPROTO_TCP);
	CHECK(!memcmp(e.t.src, c4, 4) && !memcmp(e.t.dst, s4, 4));
	CHECK(e.t.sport[0] == 40000 >> 8 && e.t.sport[1] == (40000 & 0xff));
	CHECK(e.t.dport[0] == 0 && e.t.dport[1] == 22);
	CHECK(!e.t.src[4] && !e.t.dst[15]); /* IPv4 in the first 4 bytes, the rest zero */
	check_end();
}

/* Updates: TIME_WAIT and CLOSE end a connection; ESTABLISHED, or an
 * update without TCP state, does not. */
static void test_updates(void)
{
	static const struct {
		const char *name;
		int state; /* -1: no protoinfo */
		int want;
	} cases[] = {
		{ "update-time-wait-ends", 7, 1 }, { "update-close-ends", 8, 1 },    { "update-established-not", 3, 0 },
		{ "update-fin-wait-not", 4, 0 },   { "update-no-state-not", -1, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nlmsghdr *nlh = msg_start(IPCTNL_MSG_CT_NEW, AF_INET);
		struct ct_end e = { .destroyed = true };

		check_begin(cases[i].name);
		put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, c4, s4, IPPROTO_TCP, 40001, 80);
		if (cases[i].state >= 0)
			put_tcp_state(nlh, (uint8_t)cases[i].state);
		CHECK_EQ_INT(parse(nlh, &e), cases[i].want);
		if (cases[i].want)
			CHECK(!e.destroyed);
		check_end();
	}
}

/* ICMP: the id in sport, type and code bytes in dport; IPv6 addresses whole. */
static void test_icmp_v6(void)
{
	struct nlmsghdr *nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_INET);
	uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1 }, b6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 2 };
	struct ct_end e;

	check_begin("destroy-icmp");
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, c4, s4, IPPROTO_ICMP, 0x1234, 8 << 8);
	CHECK_EQ_INT(parse(nlh, &e), 1);
	CHECK(e.t.sport[0] == 0x12 && e.t.sport[1] == 0x34);
	CHECK(e.t.dport[0] == 8 && e.t.dport[1] == 0);
	check_end();

	check_begin("destroy-udp-v6");
	a6[15] = 2;
	b6[15] = 0x10;
	nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_INET6);
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET6, a6, b6, IPPROTO_UDP, 5353, 53);
	CHECK_EQ_INT(parse(nlh, &e), 1);
	CHECK_EQ_INT(e.t.af, AF_INET6);
	CHECK(!memcmp(e.t.src, a6, 16) && !memcmp(e.t.dst, b6, 16));
	check_end();
}

/* Malformed: no original tuple, an address cut short, another family;
 * other message types are passed over. */
static void test_bad(void)
{
	struct nlmsghdr *nlh;
	struct ct_end e;
	struct nlattr *t, *ip;

	check_begin("no-tuple-malformed");
	nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_INET);
	CHECK_EQ_INT(parse(nlh, &e), -EINVAL);
	check_end();

	check_begin("short-address-malformed");
	nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_INET6);
	t = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put(nlh, CTA_IP_V6_SRC, 4, c4);
	mnl_attr_put(nlh, CTA_IP_V6_DST, 4, s4);
	mnl_attr_nest_end(nlh, ip);
	mnl_attr_nest_end(nlh, t);
	CHECK_EQ_INT(parse(nlh, &e), -EINVAL);
	check_end();

	check_begin("other-family-malformed");
	nlh = msg_start(IPCTNL_MSG_CT_DELETE, AF_UNSPEC);
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, c4, s4, IPPROTO_TCP, 1, 2);
	CHECK_EQ_INT(parse(nlh, &e), -EINVAL);
	check_end();

	check_begin("other-message-passed-over");
	nlh = msg_start(IPCTNL_MSG_CT_GET_STATS, AF_INET);
	CHECK_EQ_INT(parse(nlh, &e), 0);
	check_end();
}

int main(void)
{
	test_destroy();
	test_updates();
	test_icmp_v6();
	test_bad();
	check_begin("close-null");
	ctev_close(NULL);
	check_end();
	CHECK_EXIT();
}
