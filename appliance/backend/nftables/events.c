/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The nftables backend's verdict events: the packets its rules log to
 * NFLOG group NFT_NFLOG_GROUP, read as the classifier reads a packet, to
 * the daemon's sink (backend_env.sink). */
#include <errno.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "backend/nftables/nftables.h"
#include "backend/nftables/nft/build.h"
#include "base/log.h"
#include "bpf/nfbox.h"
#include "lib/ip6walk.h"
#include "netlink/nflog.h"

/* Protocol, ports (ICMP: type << 8 | code) and length of the logged packet,
 * read as the classifier reads them: the whole IPv6 header chain walked, no
 * ports in a fragment after the first. */
static void l4_of(const uint8_t *p, size_t n, uint8_t proto, size_t off, bool first, struct vevent *v)
{
	v->proto = proto;
	if (!first || off + 4 > n)
		return;
	if (proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE) {
		v->sport = (uint16_t)(p[off] << 8 | p[off + 1]);
		v->dport = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		v->dport = (uint16_t)(p[off] << 8 | p[off + 1]);
	}
}

static void parse_v4(const uint8_t *p, size_t n, struct vevent *v)
{
	size_t ihl;

	if (n < 20 || (ihl = (size_t)(p[0] & 15) * 4) < 20)
		return;
	memcpy(v->src, p + 12, 4);
	memcpy(v->dst, p + 16, 4);
	v->len = (uint32_t)(p[2] << 8 | p[3]);
	l4_of(p, n, p[9], ihl, ((p[6] << 8 | p[7]) & NFB_IP4_FRAG_MASK) == 0, v);
}

/* The chain as the classifier reads it (lib/ip6walk.h): a fragment is
 * keyed by its protocol alone, so it shows no ports. */
static void parse_v6(const uint8_t *p, size_t n, struct vevent *v)
{
	struct ip6walk w;

	if (n < 40)
		return;
	memcpy(v->src, p + 8, 16);
	memcpy(v->dst, p + 24, 16);
	v->len = 40u + (uint32_t)(p[4] << 8 | p[5]);
	if (ip6_walk(p, n, p[4] << 8 | p[5] ? v->len : n, &w) != IP6W_OK)
		return;
	l4_of(p, n, w.proto, w.l4off, !w.frag, v);
}

int nft_packet_fields(int nfproto, const uint8_t *p, size_t n, struct vevent *v)
{
	if (nfproto == NFPROTO_IPV4) {
		v->af = AF_INET;
		parse_v4(p, n, v);
	} else if (nfproto == NFPROTO_IPV6) {
		v->af = AF_INET6;
		parse_v6(p, n, v);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

static void on_nflog_packet(const struct nflog_packet *pk, void *arg)
{
	const struct backend_sink *sink = arg;
	char hook[16] = "?", action[16] = "?";
	struct vevent v = { .ifin = pk->ifin, .ifout = pk->ifout };
	struct timespec now;
	int used = 0;

	/* The prefix is "HOOK ACTION RULE" (nft/build.c). */
	if (sscanf(pk->prefix, "%15s %15s %n", hook, action, &used) < 2 || !used)
		return;
	v.hook = hook;
	v.action = action;
	v.rule = pk->prefix + used;
	if (pk->ts_ns) {
		v.ts = (double)pk->ts_ns / 1e9;
	} else {
		clock_gettime(CLOCK_REALTIME, &now);
		v.ts = (double)now.tv_sec + now.tv_nsec / 1e9;
	}
	v.len = (uint32_t)pk->len;
	if (nft_packet_fields(pk->family, pk->payload, pk->len, &v) < 0)
		return;
	sink->verdict(sink->arg, &v);
	if (!strcmp(action, "overload") && sink->overload)
		sink->overload(sink->oarg, &v);
}

static void on_nflog(struct handler *h, uint32_t events)
{
	struct nft_backend *nb = h->ctx;
	const struct backend_sink *sink = &nb->b.env->sink;
	uint64_t lost;

	(void)events;
	nflog_read(nb->nflog, on_nflog_packet, (void *)sink);
	lost = nflog_lost(nb->nflog);
	if (lost > nb->nflog_lost_seen) {
		sink->missed(sink->arg, lost - nb->nflog_lost_seen, "the NFLOG socket overran");
		nb->nflog_lost_seen = lost;
	}
}

void nft_events_close(struct nft_backend *nb)
{
	if (!nb->nflog)
		return;
	loop_unwatch(nb->b.env->loop, &nb->nflog_h);
	nflog_close(nb->nflog);
	nb->nflog = NULL;
}

void nft_events_open(struct nft_backend *nb)
{
	int r;

	if (nb->nflog)
		return;
	/* The head of each packet is enough for the event. */
	if ((r = nflog_open(NFT_NFLOG_GROUP, 128, &nb->nflog)) < 0) {
		log_warn("cannot receive the nftables backend's verdict events (NFLOG group %d): %s%s", NFT_NFLOG_GROUP,
			 strerror(-r),
			 r == -EBUSY ? " (another program, or another nfbox in this network namespace, has it)" : "");
		return;
	}
	nb->nflog_h = (struct handler){ .fd = nflog_fd(nb->nflog), .fn = on_nflog, .ctx = nb };
	nb->nflog_lost_seen = 0;
	if (loop_watch(nb->b.env->loop, &nb->nflog_h) < 0) {
		nflog_close(nb->nflog);
		nb->nflog = NULL;
	}
}
