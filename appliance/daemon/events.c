/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verdict events: the classifier's ring buffer (or NFLOG), as JSON lines
 * to the log file (--log) and to every `nfbox log` follower, and under
 * systemd as structured journal entries (unless --no-journal-events). */
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <netinet/in.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"
#include "daemon/events.h"
#include "bpf/nfbox.h"
#include "lib/ip6walk.h"
#include "base/json.h"
#include "base/log.h"
#include "netlink/nflog.h"
#include "backend/nftables/nft/build.h"

/* Event times are CLOCK_MONOTONIC (bpf_ktime_get_ns); shown as wall time. */
static double wall_time_of(uint64_t mono_ns)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return (double)real.tv_sec + real.tv_nsec / 1e9 -
	       ((double)mono.tv_sec + mono.tv_nsec / 1e9 - (double)mono_ns / 1e9);
}

static void kv_addr(struct json *j, const char *key, int af, const uint8_t *addr)
{
	char buf[INET6_ADDRSTRLEN];

	json_kv_str(j, key, inet_ntop(af, addr, buf, sizeof(buf)) ? buf : "?");
}

/* An interface's name ("" for none, "ifN" for one gone), buf IF_NAMESIZE. */
static void ifname_of(uint32_t ifindex, char *buf)
{
	buf[0] = '\0';
	if (ifindex && !if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%u", ifindex);
}

static void kv_ifname(struct json *j, const char *key, uint32_t ifindex)
{
	char buf[IF_NAMESIZE];

	ifname_of(ifindex, buf);
	json_kv_str(j, key, buf);
}

/* A verdict event, from either backend, as `nfbox log` shows it. */
struct vevent {
	double ts;
	const char *hook, *rule, *action;
	int af;
	uint8_t proto;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t len, ifin, ifout;
};

static void vevent_json(const struct vevent *v, FILE *f)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_key(&j, "ts");
	json_fixed(&j, v->ts, 6);
	json_kv_str(&j, "hook", v->hook);
	json_kv_str(&j, "family", policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6));
	json_kv_str(&j, "rule", v->rule);
	json_kv_str(&j, "action", v->action);
	json_kv_u64(&j, "proto", v->proto);
	kv_addr(&j, "src", v->af, v->src);
	kv_addr(&j, "dst", v->af, v->dst);
	json_kv_u64(&j, "sport", v->sport);
	json_kv_u64(&j, "dport", v->dport);
	json_kv_u64(&j, "len", v->len);
	kv_ifname(&j, "in", v->ifin);
	kv_ifname(&j, "out", v->ifout);
	json_object_end(&j);
	fputc('\n', f);
}

/* The event as a journal entry with fields of its own (journalctl
 * NFBOX_EVENT=verdict RULE=ssh ACTION=drop). */
static void vevent_journal(struct daemon *dm, const struct vevent *v)
{
	char msg[320], rule[96], action[32], hook[32], fam[16], proto[16], src[64], dst[64], sport[16], dport[16],
		len[24], in[IF_NAMESIZE + 8], out[IF_NAMESIZE + 8], a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN],
		ifi[IF_NAMESIZE], ifo[IF_NAMESIZE];
	const char *fields[] = {
		msg, "NFBOX_EVENT=verdict", rule, action, hook, fam, proto, src, dst, sport, dport, len, in, out
	};
	int r;

	inet_ntop(v->af, v->src, a, sizeof(a));
	inet_ntop(v->af, v->dst, b, sizeof(b));
	ifname_of(v->ifin, ifi);
	ifname_of(v->ifout, ifo);
	snprintf(msg, sizeof(msg), "MESSAGE=%s %s: rule %s, %s %s -> %s proto %u sport %u dport %u len %u%s%s%s%s",
		 v->hook, v->action, v->rule, policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6),
		 a, b, v->proto, v->sport, v->dport, v->len, ifi[0] ? " in " : "", ifi, ifo[0] ? " out " : "", ifo);
	snprintf(rule, sizeof(rule), "RULE=%s", v->rule);
	snprintf(action, sizeof(action), "ACTION=%s", v->action);
	snprintf(hook, sizeof(hook), "HOOK=%s", v->hook);
	snprintf(fam, sizeof(fam), "FAMILY=%s",
		 policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6));
	snprintf(proto, sizeof(proto), "PROTO=%u", v->proto);
	snprintf(src, sizeof(src), "SRC=%s", a);
	snprintf(dst, sizeof(dst), "DST=%s", b);
	snprintf(sport, sizeof(sport), "SPORT=%u", v->sport);
	snprintf(dport, sizeof(dport), "DPORT=%u", v->dport);
	snprintf(len, sizeof(len), "LEN=%u", v->len);
	snprintf(in, sizeof(in), "IN=%s", ifi);
	snprintf(out, sizeof(out), "OUT=%s", ifo);
	if ((r = log_journal_fields(6, fields, sizeof(fields) / sizeof(fields[0]))) == 0)
		return;
	/* journald gone or its socket full: counted, said now and then */
	if (dm->journal_failed++ % 1000 == 0)
		log_warn("verdict events: %llu could not be sent to the journal (%s)",
			 (unsigned long long)dm->journal_failed, strerror(-r));
}

/* One line to the log file and to every follower, and an entry to the
 * journal under systemd. */
static void vevent_emit(struct daemon *dm, const struct vevent *v)
{
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);

	if (!f)
		return;
	vevent_json(v, f);
	fclose(f);
	dm->events_seen++;
	if (dm->logf) {
		fputs(line, dm->logf);
		fflush(dm->logf);
	}
	if (dm->publish)
		dm->publish(dm, line, len);
	free(line);
	if (dm->journal_events)
		vevent_journal(dm, v);
}

/* The classifier's action codes are the policy's (bpf/nfbox.h). */
_Static_assert(NFB_ACT_DROP == (int)POLICY_DROP && NFB_ACT_ACCEPT == (int)POLICY_ACCEPT &&
		       NFB_ACT_REJECT == (int)POLICY_REJECT,
	       "NFB_ACT_* and POLICY_* differ");

static const char *action_name(uint8_t a)
{
	return policy_action_name((enum policy_action)a);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct daemon *dm = ctx;
	const struct nfb_event *ev = data;
	const char *rule;
	struct vevent v;
	int hook;

	if (size < sizeof(*ev))
		return 0;
	rule = ev->rule == NFB_RULE_DEFAULT ? "(default)" : slots_rule_name(&dm->slots, ev->counter, &hook);
	v = (struct vevent){
		.ts = wall_time_of(ev->ts_ns),
		.hook = ev->hook < NFB_HOOK_MAX ? policy_hook_name((enum policy_hook)ev->hook) : "?",
		.rule = rule ? rule : "?",
		.action = action_name(ev->action),
		.af = ev->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6,
		.proto = ev->proto,
		.sport = ev->sport,
		.dport = ev->dport,
		.len = ev->len,
		.ifin = ev->ifin,
		.ifout = ev->ifout,
	};
	memcpy(v.src, ev->saddr, 16);
	memcpy(v.dst, ev->daddr, 16);
	vevent_emit(dm, &v);
	return 0;
}

static void on_ring(struct daemon *dm, struct handler *h, uint32_t events)
{
	ring_buffer__consume(dm->rb);
}

int events_open(struct daemon *dm, struct diags *d)
{
	if (dm->rb)
		return 0;
	dm->rb = ring_buffer__new(engine_events_fd(dm->e), on_event, dm, NULL);
	if (!dm->rb)
		return diag_errno(d, -errno, "cannot open the verdict event ring buffer");
	dm->events = (struct handler){ .fd = ring_buffer__epoll_fd(dm->rb), .fn = on_ring };
	{
		struct nfb_counter c; /* drops before this daemon are not news */

		if (engine_counter_read(dm->e, NFB_CNT_LOG_DROPPED, &c) == 0)
			dm->log_dropped_seen = c.packets;
	}
	return daemon_watch(dm, &dm->events) < 0 ? diag_errno(d, -errno, "epoll") : 0;
}

void events_close(struct daemon *dm)
{
	ring_buffer__free(dm->rb);
	dm->rb = NULL;
}

/* The notice to followers that n events were missed, and why: one JSON
 * line in line (len bytes); its length, 0 if it did not fit. */
size_t events_missed_line(char *line, size_t len, uint64_t n, const char *reason)
{
	FILE *f = fmemopen(line, len, "w");
	struct json j;
	long end;

	if (!f)
		return 0;
	json_init(&j, f);
	json_object_begin(&j);
	json_kv_u64(&j, "missed", n);
	json_kv_str(&j, "reason", reason);
	json_object_end(&j);
	fputc('\n', f);
	end = ftell(f);
	return fclose(f) == 0 && end > 0 && (size_t)end < len ? (size_t)end : 0;
}

/* To every follower: n events were missed, and why. */
static void publish_missed(struct daemon *dm, uint64_t n, const char *reason)
{
	char line[512];
	size_t len = events_missed_line(line, sizeof(line), n, reason);

	if (len && dm->publish)
		dm->publish(dm, line, len);
}

void events_tick(struct daemon *dm)
{
	struct nfb_counter c;

	if (engine_counter_read(dm->e, NFB_CNT_LOG_DROPPED, &c) < 0 || c.packets <= dm->log_dropped_seen)
		return;
	publish_missed(dm, c.packets - dm->log_dropped_seen, "the kernel's event ring was full");
	dm->log_dropped_seen = c.packets;
}

/* ---- the nftables backend: NFLOG ---- */

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

static void on_nflog_packet(const struct nflog_packet *pk, void *arg)
{
	struct daemon *dm = arg;
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
	if (pk->family == NFPROTO_IPV4) {
		v.af = AF_INET;
		parse_v4(pk->payload, pk->len, &v);
	} else if (pk->family == NFPROTO_IPV6) {
		v.af = AF_INET6;
		parse_v6(pk->payload, pk->len, &v);
	} else {
		return;
	}
	vevent_emit(dm, &v);
}

static void on_nflog(struct daemon *dm, struct handler *h, uint32_t events)
{
	uint64_t lost;

	nflog_read(dm->nflog_sock, on_nflog_packet, dm);
	lost = nflog_lost(dm->nflog_sock);
	if (lost > dm->nflog_lost_seen) {
		publish_missed(dm, lost - dm->nflog_lost_seen, "the NFLOG socket overran");
		dm->nflog_lost_seen = lost;
	}
}

void nflog_events_close(struct daemon *dm)
{
	if (!dm->nflog_sock)
		return;
	daemon_unwatch(dm, &dm->nflog);
	nflog_close(dm->nflog_sock);
	dm->nflog_sock = NULL;
}

void nflog_events_open(struct daemon *dm)
{
	int r;

	if (dm->nflog_sock)
		return;
	/* The head of each packet is enough for the event. */
	if ((r = nflog_open(NFT_NFLOG_GROUP, 128, &dm->nflog_sock)) < 0) {
		log_warn("cannot receive the nftables backend's verdict events (NFLOG group %d): %s%s", NFT_NFLOG_GROUP,
			 strerror(-r),
			 r == -EBUSY ? " (another program, or another nfbox in this network namespace, has it)" : "");
		return;
	}
	dm->nflog = (struct handler){ .fd = nflog_fd(dm->nflog_sock), .fn = on_nflog };
	dm->nflog_lost_seen = 0;
	if (daemon_watch(dm, &dm->nflog) < 0) {
		nflog_close(dm->nflog_sock);
		dm->nflog_sock = NULL;
	}
}
