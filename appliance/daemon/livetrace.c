/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The live trace (livetrace.h): its filter read from the request, its
 * packets written as JSON lines, its end however it comes. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"
#include "daemon/backends.h"
#include "daemon/events.h"
#include "daemon/livetrace.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "policy/syntax/parse.h"

struct livetrace {
	struct livetrace_out out;
	struct backend *b;
	uint32_t left, traced;
	int64_t deadline_ms; /* CLOCK_MONOTONIC */
};

/* ---- the filter ---- */

static int filter_prefix(const char *text, const char *what, struct trace_filter *f, bool dst, struct diags *d)
{
	struct prefix p;
	bool host_bits = false;
	const char *why = NULL;
	int af;

	if (parse_prefix(text, &p, &host_bits, &why) < 0)
		return diag_fail(d, -EINVAL, "%s %s: %s", what, text, why ? why : "not an address or prefix");
	af = p.family == POLICY_FAM_IPV4 ? AF_INET : AF_INET6;
	if (f->af && f->af != af)
		return diag_fail(d, -EINVAL, "%s %s: not of the family of the rest of the filter", what, text);
	f->af = af;
	memcpy(dst ? f->dst : f->src, p.addr, 16);
	*(dst ? &f->dst_len : &f->src_len) = p.plen ? p.plen : 0;
	if (!p.plen) /* ::/0, 0.0.0.0/0: the family alone */
		memset(dst ? f->dst : f->src, 0, 16);
	return 0;
}

static int filter_l4(const struct ctl_request *req, struct trace_filter *f, struct diags *d)
{
	const char *why = NULL;
	int proto;

	if (req->proto) {
		if (parse_proto(req->proto, &proto, &why) < 0)
			return diag_fail(d, -EINVAL, "proto %s: %s", req->proto, why ? why : "not a protocol");
		f->has_proto = true;
		f->proto = (uint8_t)proto;
	}
	if (!req->has_port)
		return 0;
	if (!f->has_proto || (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP && f->proto != IPPROTO_SCTP &&
			      f->proto != IPPROTO_UDPLITE))
		return diag_fail(d, -EINVAL, "a port needs proto tcp, udp, sctp or udplite");
	f->has_port = true;
	f->port = (uint16_t)req->port;
	return 0;
}

static int filter_of(const struct ctl_request *req, struct trace_filter *f, struct diags *d)
{
	int r;

	memset(f, 0, sizeof(*f));
	if (req->family) {
		if (strcmp(req->family, "ipv4") && strcmp(req->family, "ipv6"))
			return diag_fail(d, -EINVAL, "family %s: ipv4 or ipv6", req->family);
		f->af = req->family[3] == '4' ? AF_INET : AF_INET6;
	}
	if (req->iif) {
		if (strlen(req->iif) >= sizeof(f->ifin))
			return diag_fail(d, -EINVAL, "interface %s: the name is too long", req->iif);
		snprintf(f->ifin, sizeof(f->ifin), "%s", req->iif);
		f->ifindex = if_nametoindex(req->iif);
	}
	if ((req->from && (r = filter_prefix(req->from, "from", f, false, d)) < 0) ||
	    (req->to && (r = filter_prefix(req->to, "to", f, true, d)) < 0) || (r = filter_l4(req, f, d)) < 0)
		return r;
	f->count = req->count ? req->count : LIVETRACE_DEFAULT_COUNT;
	return 0;
}

/* ---- start and end ---- */

int livetrace_start(struct daemon *dm, const struct ctl_request *req, const struct livetrace_out *out, struct diags *d)
{
	struct backend *b = dm->cur.pol ? backend_in_force(dm) : NULL;
	unsigned timeout = req->timeout ? req->timeout : LIVETRACE_DEFAULT_TIMEOUT;
	struct trace_filter f;
	struct livetrace *lt;
	int r;

	if (dm->trace)
		return diag_fail(d, -EBUSY, "busy: a live trace runs already (one at a time); try again when it ends");
	if (!b)
		return diag_fail(d, -ENOENT, "no policy is in force to trace");
	if (!b->ops->trace_start)
		return diag_fail(d, -EOPNOTSUPP, "the %s backend cannot trace", b->ops->name);
	if (timeout > CTL_MAX_TRACE_TIMEOUT)
		return diag_fail(d, -EINVAL, "timeout: at most %u seconds", CTL_MAX_TRACE_TIMEOUT);
	if ((r = filter_of(req, &f, d)) < 0)
		return r;
	if (!(lt = calloc(1, sizeof(*lt))))
		return diag_errno(d, -ENOMEM, "the live trace");
	*lt = (struct livetrace){
		.out = *out, .b = b, .left = f.count, .deadline_ms = clock_ms(CLOCK_MONOTONIC) + (int64_t)timeout * 1000
	};
	dm->trace = lt; /* before the start: a packet may come at once */
	if ((r = b->ops->trace_start(b, &dm->cur, &f, d)) < 0) {
		dm->trace = NULL;
		free(lt);
		return r;
	}
	log_info("live trace: started (%u packets, %u s)", f.count, timeout);
	return 0;
}

static void trace_free(struct daemon *dm)
{
	struct livetrace *lt = dm->trace;

	dm->trace = NULL;
	lt->b->ops->trace_stop(lt->b);
	free(lt);
}

void livetrace_end(struct daemon *dm, const char *why)
{
	struct livetrace *lt = dm->trace;
	char *line = NULL;
	size_t len = 0;
	FILE *f;
	struct json j;

	if (!lt)
		return;
	if ((f = open_memstream(&line, &len))) {
		json_init(&j, f);
		json_object_begin(&j);
		json_kv_str(&j, "end", why);
		json_kv_u64(&j, "traced", lt->traced);
		json_object_end(&j);
		fputc('\n', f);
		if (fclose(f) == 0)
			lt->out.deliver(lt->out.arg, line, len);
		free(line);
	}
	lt->out.done(lt->out.arg);
	log_info("live trace: ended (%s) after %u packets", why, lt->traced);
	trace_free(dm);
}

void livetrace_leave(struct daemon *dm, const void *arg)
{
	if (dm->trace && dm->trace->out.arg == arg) {
		log_info("live trace: the client left after %u packets", dm->trace->traced);
		trace_free(dm);
	}
}

void livetrace_tick(struct daemon *dm)
{
	if (dm->trace && clock_ms(CLOCK_MONOTONIC) >= dm->trace->deadline_ms)
		livetrace_end(dm, "timeout");
}

int livetrace_next_deadline(const struct daemon *dm)
{
	int64_t left;

	if (!dm->trace)
		return -1;
	left = dm->trace->deadline_ms - clock_ms(CLOCK_MONOTONIC);
	return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* ---- the packets ---- */

void livetrace_packet(void *targ, const struct vevent *v, const struct backend_counter *c)
{
	struct daemon *dm = targ;
	struct livetrace *lt = dm->trace;
	char *line = NULL;
	size_t len = 0;
	FILE *f;
	struct json j;

	if (!lt || !lt->left)
		return;
	if (!(f = open_memstream(&line, &len)))
		return;
	json_init(&j, f);
	json_object_begin(&j);
	events_vevent_fields(&j, v);
	if (c) {
		json_key(&j, "counter");
		json_object_begin(&j);
		json_kv_u64(&j, "packets", c->packets);
		json_kv_u64(&j, "bytes", c->bytes);
		json_object_end(&j);
	}
	json_object_end(&j);
	fputc('\n', f);
	if (fclose(f) == 0)
		lt->out.deliver(lt->out.arg, line, len);
	free(line);
	lt->traced++;
	if (!--lt->left)
		livetrace_end(dm, "count");
}
