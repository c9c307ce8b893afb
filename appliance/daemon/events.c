/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verdict events: the classifier's ring buffer, as JSON lines to the log
 * file (--log) and to every `nfbox log` follower. */
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"
#include "lib/json.h"

/* Event times are CLOCK_MONOTONIC (bpf_ktime_get_ns); shown as wall time. */
static double wall_time_of(uint64_t mono_ns)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return (double)real.tv_sec + real.tv_nsec / 1e9 - ((double)mono.tv_sec + mono.tv_nsec / 1e9 - (double)mono_ns / 1e9);
}

static void kv_addr(struct json *j, const char *key, int af, const uint8_t *addr)
{
	char buf[INET6_ADDRSTRLEN];

	json_kv_str(j, key, inet_ntop(af, addr, buf, sizeof(buf)) ? buf : "?");
}

static void kv_ifname(struct json *j, const char *key, uint32_t ifindex)
{
	char buf[IF_NAMESIZE] = "";

	if (ifindex && !if_indextoname(ifindex, buf))
		snprintf(buf, sizeof(buf), "if%u", ifindex);
	json_kv_str(j, key, buf);
}

static void event_json(struct daemon *dm, const struct nfb_event *ev, FILE *f)
{
	int af = ev->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6, hook;
	const char *rule = ev->rule == NFB_RULE_DEFAULT ? "(default)" : slots_rule_name(&dm->slots, ev->counter, &hook);
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_key(&j, "ts");
	json_fixed(&j, wall_time_of(ev->ts_ns), 6);
	json_kv_str(&j, "hook", ev->hook < NFB_HOOK_MAX ? policy_hook_name((enum policy_hook)ev->hook) : "?");
	json_kv_str(&j, "family", policy_family_name(ev->family == NFB_FAM_IPV4 ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6));
	json_kv_str(&j, "rule", rule ? rule : "?");
	json_kv_str(&j, "action", ev->action == NFB_ACT_ACCEPT ? "accept" : "drop");
	json_kv_u64(&j, "proto", ev->proto);
	kv_addr(&j, "src", af, ev->saddr);
	kv_addr(&j, "dst", af, ev->daddr);
	json_kv_u64(&j, "sport", ev->sport);
	json_kv_u64(&j, "dport", ev->dport);
	json_kv_u64(&j, "len", ev->len);
	kv_ifname(&j, "in", ev->ifin);
	kv_ifname(&j, "out", ev->ifout);
	json_object_end(&j);
	fputc('\n', f);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct daemon *dm = ctx;
	char *line = NULL;
	size_t len = 0;
	FILE *f;

	if (size < sizeof(struct nfb_event) || !(f = open_memstream(&line, &len)))
		return 0;
	event_json(dm, data, f);
	fclose(f);
	dm->events_seen++;
	if (dm->logf) {
		fputs(line, dm->logf);
		fflush(dm->logf);
	}
	clients_broadcast(dm, line, len);
	free(line);
	return 0;
}

static void on_ring(struct daemon *dm, struct handler *h, uint32_t events)
{
	ring_buffer__consume(dm->rb);
}

int events_open(struct daemon *dm, struct diags *d)
{
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

void events_tick(struct daemon *dm)
{
	struct nfb_counter c;

	if (engine_counter_read(dm->e, NFB_CNT_LOG_DROPPED, &c) < 0 || c.packets <= dm->log_dropped_seen)
		return;
	clients_broadcast_missed(dm, c.packets - dm->log_dropped_seen, "the kernel's event ring was full");
	dm->log_dropped_seen = c.packets;
}
