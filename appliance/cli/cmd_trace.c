/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox trace`: what a policy file would do with one packet (policy/trace/). */
#include <errno.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "base/cleanup.h"
#include "control/client.h"
#include "control/proto.h"
#include "lib/plant.h"
#include "policy/policy.h"
#include "policy/syntax/parse.h"
#include "policy/trace/trace.h"
#include "system/netns.h"

struct trace_args {
	bool json, live;
	const char *policy, *socket, *in, *out, *from, *to, *proto, *icmp_type, *at, *sets;
	uint64_t port, sport, count;
	double timeout;
	int state;
};

static const char *const states[] = { "new", "established", "related", "invalid", "untracked", NULL };

#define PORT_NOT_GIVEN UINT64_MAX

static void trace_defaults(void *args)
{
	struct trace_args *a = args;

	a->port = a->sport = PORT_NOT_GIVEN;
}

static const struct cli_opt trace_opts[] = {
	CLI_OPT_STRING("policy", 'P', struct trace_args, policy, "FILE",
		       "trace through FILE (default: the policy the daemon enforces, with its dynamic sets' entries)"),
	CLI_OPT_STRING("socket", 's', struct trace_args, socket, "PATH",
		       "the daemon's control socket (default: that of this network namespace, as for nfbox run)"),
	CLI_OPT_STRING("in", 'i', struct trace_args, in, "IF",
		       "the interface it arrives on (without --out: addressed to the appliance)"),
	CLI_OPT_STRING("out", 'o', struct trace_args, out, "IF",
		       "the interface it leaves through (with --in: forwarded; alone: the appliance's own)"),
	CLI_OPT_STRING("from", 'f', struct trace_args, from, "ADDR",
		       "its source address (required but with --live; there a prefix, like --to)"),
	CLI_OPT_STRING("to", 't', struct trace_args, to, "ADDR", "its destination address (required but with --live)"),
	CLI_OPT_STRING("proto", 'p', struct trace_args, proto, "PROTO",
		       "tcp, udp, icmp, icmpv6, sctp, 0..255 (required but with --live)"),
	CLI_OPT_UINT("port", struct trace_args, port, "N", 0, 65535, "its destination port"),
	CLI_OPT_UINT("sport", struct trace_args, sport, "N", 0, 65535, "its source port"),
	CLI_OPT_STRING("icmp-type", 0, struct trace_args, icmp_type, "TYPE",
		       "its ICMP or ICMPv6 type (name or number)"),
	CLI_OPT_CHOICE("state", struct trace_args, state, "STATE", states, "its conntrack state (default: new)"),
	CLI_OPT_STRING("at", 0, struct trace_args, at, "TIME",
		       "judge schedules at TIME (YYYY-MM-DDTHH:MM:SSZ or seconds since the epoch; default now)"),
	CLI_OPT_STRING(
		"sets", 0, struct trace_args, sets, "FILE",
		"dynamic sets' entries, a line 'SET PREFIX' each (default: the daemon's; with --policy: judged empty)"),
	CLI_OPT_FLAG("live", 'L', struct trace_args, live,
		     "trace the next real packets that match --in, --from, --to, --proto and --port through the "
		     "daemon's engine"),
	CLI_OPT_UINT("count", struct trace_args, count, "N", 1, CTL_MAX_TRACE_COUNT,
		     "--live: this many packets (default 10)"),
	CLI_OPT_SECONDS("timeout", struct trace_args, timeout, "S", "--live: for at most S seconds (default 60)"),
	CLI_OPT_FLAG("json", 'j', struct trace_args, json, "one JSON document on stdout (--live: one per packet)"),
	CLI_OPT_END,
};

/* ---- the dynamic sets' entries of --sets ---- */

struct entries {
	struct entry {
		uint32_t set;
		struct prefix pfx;
		char text[80];
	} *v;
	size_t n;
};

static bool entries_hold(void *arg, uint32_t set, uint8_t fam, const uint8_t *a, char *entry, size_t len)
{
	const struct entries *e = arg;

	for (size_t i = 0; i < e->n; i++) {
		const struct prefix *p = &e->v[i].pfx;
		struct addr_match one = { .v = (struct prefix *)p, .n = 1 };

		if (e->v[i].set == set && p->family == fam && trace_listed(&one, fam, a)) {
			snprintf(entry, len, "%s", e->v[i].text);
			return true;
		}
	}
	return false;
}

static int set_index(const struct policy *p, const char *name)
{
	for (uint32_t i = 0; i < p->nsets; i++)
		if (!strcmp(p->sets[i].name, name))
			return p->sets[i].dynamic ? (int)i : -2;
	return -1;
}

/* One line "SET PREFIX" of path: 0, or EXIT_USAGE after a message. */
static int entry_line(const struct policy *p, const char *path, unsigned line, const char *text, struct entries *e)
{
	char name[POLICY_MAX_NAME + 1], pfx[64], extra[2];
	const char *why = NULL;
	bool host_bits = false;
	struct entry *v;
	int set, n = sscanf(text, "%64s %63s %1s", name, pfx, extra);

	if (n <= 0 || name[0] == '#')
		return 0;
	if (n != 2) {
		fprintf(stderr, "%s:%u: expected 'SET PREFIX'\n", path, line);
		return EXIT_USAGE;
	}
	if ((set = set_index(p, name)) < 0) {
		fprintf(stderr, "%s:%u: '%s' is %s\n", path, line, name,
			set == -1 ? "no set of the policy" : "not a dynamic set");
		return EXIT_USAGE;
	}
	if (!(v = realloc(e->v, (e->n + 1) * sizeof(*v))))
		return EXIT_FAILED;
	e->v = v;
	v += e->n;
	if (parse_prefix(pfx, &v->pfx, &host_bits, &why) < 0 || host_bits) {
		fprintf(stderr, "%s:%u: '%s': %s\n", path, line, pfx, why ? why : "host bits set");
		return EXIT_USAGE;
	}
	v->set = (uint32_t)set;
	snprintf(v->text, sizeof(v->text), "%s", pfx);
	e->n++;
	return 0;
}

static int entries_read(const struct policy *p, const char *path, struct entries *e)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char buf[256];
	unsigned line = 0;
	int r = 0;

	if (!f) {
		fprintf(stderr, "nfbox trace: %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	while (!r && fgets(buf, sizeof(buf), f))
		r = entry_line(p, path, ++line, buf, e);
	return r;
}

/* ---- the packet ---- */

static int parse_at(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	char *end;
	long long v;

	if (!s) {
		*out = (int64_t)time(NULL);
		return 0;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (!errno && *s && !*end && v >= 0) {
		*out = v;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int parse_addrs(const struct trace_args *a, struct trace_packet *k)
{
	struct prefix src, dst;
	const char *why = NULL;
	bool hb;

	if (parse_prefix(a->from, &src, &hb, &why) < 0 || src.plen != (src.family == POLICY_FAM_IPV4 ? 32 : 128)) {
		fprintf(stderr, "nfbox trace: --from %s: %s\n", a->from, why ? why : "an address, not a prefix");
		return EXIT_USAGE;
	}
	if (parse_prefix(a->to, &dst, &hb, &why) < 0 || dst.plen != (dst.family == POLICY_FAM_IPV4 ? 32 : 128)) {
		fprintf(stderr, "nfbox trace: --to %s: %s\n", a->to, why ? why : "an address, not a prefix");
		return EXIT_USAGE;
	}
	if (src.family != dst.family) {
		fprintf(stderr, "nfbox trace: --from and --to are of different families\n");
		return EXIT_USAGE;
	}
	k->fam = src.family;
	memcpy(k->src, src.addr, 16);
	memcpy(k->dst, dst.addr, 16);
	return 0;
}

static int parse_l4(const struct trace_args *a, struct trace_packet *k)
{
	const char *why = NULL;
	bool v6 = k->fam == POLICY_FAM_IPV6;

	if (parse_proto(a->proto, &k->proto, &why) < 0) {
		fprintf(stderr, "nfbox trace: --proto %s: %s\n", a->proto, why ? why : "not a protocol");
		return EXIT_USAGE;
	}
	k->dport = a->port == PORT_NOT_GIVEN ? -1 : (int)a->port;
	k->sport = a->sport == PORT_NOT_GIVEN ? -1 : (int)a->sport;
	if (planted("trace-swap-ports")) { /* the differential test must catch it */
		int t = k->dport;

		k->dport = k->sport;
		k->sport = t;
	}
	k->icmp_type = -1;
	if (a->icmp_type) {
		char *end;
		long t = strtol(a->icmp_type, &end, 10);

		k->icmp_type = *end || end == a->icmp_type ? policy_icmp_type(a->icmp_type, v6) : (int)t;
		if (k->icmp_type < 0 || k->icmp_type > 255 || k->proto != (v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP)) {
			fprintf(stderr, "nfbox trace: --icmp-type %s: %s\n", a->icmp_type,
				k->icmp_type < 0 || k->icmp_type > 255 ? "not an ICMP type"
								       : "needs --proto icmp (IPv4) or icmpv6 (IPv6)");
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* What this host's addresses say of k, in one walk: where a redirect on
 * the input interface takes it, as the kernel chooses (the interface's
 * first address of the family, a global one before a link-local one;
 * unknown where the interface is not here), and the interfaces that hold
 * its destination (a hairpin's test). */
static void host_addresses(struct trace_packet *k)
{
	struct ifaddrs *all, *a;
	int af = k->fam == POLICY_FAM_IPV4 ? AF_INET : AF_INET6;
	size_t alen = af == AF_INET ? 4 : 16;
	bool link_local = false, local_done = !k->iif[0];

	if (getifaddrs(&all) < 0)
		return;
	k->dst_ifs_known = true;
	for (a = all; a; a = a->ifa_next) {
		const uint8_t *x;

		if (!a->ifa_addr || a->ifa_addr->sa_family != af)
			continue;
		x = af == AF_INET ? (const uint8_t *)&((const struct sockaddr_in *)a->ifa_addr)->sin_addr
				  : (const uint8_t *)&((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
		if (!memcmp(x, k->dst, alen) && k->ndst_ifs < sizeof(k->dst_ifs) / sizeof(k->dst_ifs[0]))
			snprintf(k->dst_ifs[k->ndst_ifs++], sizeof(k->dst_ifs[0]), "%s", a->ifa_name);
		if (local_done || strcmp(a->ifa_name, k->iif))
			continue;
		if (af == AF_INET6 && x[0] == 0xfe && (x[1] & 0xc0) == 0x80) {
			if (!k->have_local)
				link_local = true, memcpy(k->local, x, 16), k->have_local = true;
			continue;
		}
		if (!k->have_local || link_local) {
			memset(k->local, 0, 16);
			memcpy(k->local, x, alen);
			k->have_local = true;
			local_done = true;
		}
	}
	freeifaddrs(all);
}

static int parse_packet(const struct trace_args *a, struct trace_packet *k)
{
	int r;

	memset(k, 0, sizeof(*k));
	if (!a->in && !a->out) {
		fprintf(stderr, "nfbox trace: give --in (arriving), --out (the appliance's own) or both (forwarded)\n");
		return EXIT_USAGE;
	}
	if ((a->in && strlen(a->in) >= POLICY_IFNAMSIZ) || (a->out && strlen(a->out) >= POLICY_IFNAMSIZ)) {
		fprintf(stderr, "nfbox trace: an interface name has at most %d characters\n", POLICY_IFNAMSIZ - 1);
		return EXIT_USAGE;
	}
	snprintf(k->iif, sizeof(k->iif), "%s", a->in ? a->in : "");
	snprintf(k->oif, sizeof(k->oif), "%s", a->out ? a->out : "");
	k->ct = a->state;
	if (parse_at(a->at, &k->at) < 0) {
		fprintf(stderr, "nfbox trace: --at %s: expected YYYY-MM-DDTHH:MM:SSZ or seconds since the epoch\n",
			a->at);
		return EXIT_USAGE;
	}
	if ((r = parse_addrs(a, k)) || (r = parse_l4(a, k)))
		return r;
	host_addresses(k);
	return 0;
}

/* ---- the policy in force, asked of the daemon ---- */

/* One request whose JSON answer is parsed into *out. 0, or an exit status
 * after a message. */
static int daemon_json(const char *socket, struct ctl_request *req, json_t **out)
{
	_cleanup_free_ char *text = NULL;
	char sock[PATH_MAX];
	size_t len = 0;
	struct diags d;
	json_error_t jerr;
	FILE *f;
	int r;

	diags_init(&d);
	if (!(f = open_memstream(&text, &len)))
		return EXIT_FAILED;
	r = cli_ctl(socket, req, -1, f, stderr, &d, sock);
	fclose(f);
	if (r < 0) {
		fputs("nfbox trace: ", stderr);
		diags_print(&d, stderr, false);
	}
	diags_free(&d);
	if (r)
		return cli_ctl_exit(r);
	if (!(*out = json_loadb(text ? text : "", len, 0, &jerr))) {
		fprintf(stderr, "nfbox trace: the daemon's answer to %s is not JSON: %s\n", ctl_verb_name(req->verb),
			jerr.text);
		return EXIT_FAILED;
	}
	return 0;
}

/* The policy file the daemon enforces (malloc'd into *path); *changed when
 * the file on disk is no longer what was loaded. */
static int daemon_policy(const char *socket, char **path, bool *changed)
{
	struct ctl_request req = { .verb = CTL_STATUS, .json = true };
	json_t *st = NULL, *pol, *disk;
	int r;

	if ((r = daemon_json(socket, &req, &st)))
		return r;
	pol = json_object_get(st, "policy");
	disk = json_object_get(st, "on_disk");
	if (!json_is_string(pol)) {
		fputs("nfbox trace: the daemon names no policy file; give --policy FILE\n", stderr);
		json_decref(st);
		return EXIT_FAILED;
	}
	*path = strdup(json_string_value(pol));
	*changed = json_is_string(disk) && !strcmp(json_string_value(disk), "changed");
	json_decref(st);
	return *path ? 0 : EXIT_FAILED;
}

static int entry_add(struct entries *e, uint32_t set, const struct prefix *pfx, const char *text)
{
	struct entry *v = realloc(e->v, (e->n + 1) * sizeof(*v));

	if (!v)
		return EXIT_FAILED;
	e->v = v;
	v[e->n].set = set;
	v[e->n].pfx = *pfx;
	snprintf(v[e->n].text, sizeof(v[e->n].text), "%s", text);
	e->n++;
	return 0;
}

/* One element of `set list --json`: its prefix, who added it, how long it stays. */
static int daemon_element(struct entries *e, uint32_t set, json_t *el)
{
	const char *pfx = json_string_value(json_object_get(el, "prefix")), *why = NULL;
	const char *by = json_string_value(json_object_get(el, "by"));
	json_t *left = json_object_get(el, "seconds_left");
	char text[sizeof(e->v->text)];
	struct prefix p;
	bool hb;

	if (!pfx || parse_prefix(pfx, &p, &hb, &why) < 0)
		return 0; /* not an address this judge can hold (skipped, not guessed) */
	if (json_is_integer(left))
		snprintf(text, sizeof(text), "%s%s%s, %lld s left", pfx, by ? " by " : "", by ? by : "",
			 (long long)json_integer_value(left));
	else
		snprintf(text, sizeof(text), "%s%s%s", pfx, by ? " by " : "", by ? by : "");
	return entry_add(e, set, &p, text);
}

/* The entries of every dynamic set of p, as the daemon holds them now. */
static int daemon_sets(const char *socket, const struct policy *p, struct entries *e)
{
	for (uint32_t i = 0; i < p->nsets; i++) {
		struct ctl_request req = { .verb = CTL_SET_LIST, .json = true, .set = p->sets[i].name };
		json_t *doc = NULL, *els, *el;
		size_t k;
		int r;

		if (!p->sets[i].dynamic)
			continue;
		if ((r = daemon_json(socket, &req, &doc)))
			return r;
		els = json_object_get(doc, "elements");
		json_array_foreach(els, k, el)
		{
			if ((r = daemon_element(e, i, el))) {
				json_decref(doc);
				return r;
			}
		}
		json_decref(doc);
	}
	return 0;
}

/* ---- the command ---- */

static int load(const char *path, struct policy **p)
{
	struct diags d;
	int r;

	diags_init(&d);
	if ((r = policy_load(path, &d, p)) < 0)
		diags_print(&d, stderr, cli_color(stderr));
	diags_free(&d);
	return r < 0 ? EXIT_INVALID : 0;
}

/* The policy (--policy, or the daemon's) and the dynamic sets' entries
 * (--sets, or the daemon's when its policy is traced). */
static int gather(const struct trace_args *a, char **path, struct policy **p, struct entries *e,
		  struct trace_source *src)
{
	bool changed = false;
	int r;

	if (!a->policy && (r = daemon_policy(a->socket, path, &changed)))
		return r;
	src->file = a->policy ? a->policy : *path;
	if ((r = load(src->file, p)))
		return r;
	src->policy = a->policy ? "file" : "daemon";
	src->sets = a->sets ? "file" : a->policy ? NULL : "daemon";
	src->changed_on_disk = changed;
	if (a->sets)
		return entries_read(*p, a->sets, e);
	return a->policy ? 0 : daemon_sets(a->socket, *p, e);
}

/* The what-if needs the packet's addresses and protocol; --live's options
 * are its own. */
static int what_if_given(const struct trace_args *a)
{
	const char *missing = !a->from ? "from" : !a->to ? "to" : !a->proto ? "proto" : NULL;

	if (missing) {
		fprintf(stderr, "nfbox trace: --%s is required (but with --live); see 'nfbox trace --help'\n", missing);
		return EXIT_USAGE;
	}
	if (a->count || a->timeout) {
		fprintf(stderr, "nfbox trace: --%s goes with --live\n", a->count ? "count" : "timeout");
		return EXIT_USAGE;
	}
	return 0;
}

/* ---- --live: real packets through the daemon's engine ---- */

static void live_text(json_t *o)
{
	char when[32];
	double ts = json_number_value(json_object_get(o, "ts"));
	time_t secs = (time_t)ts;
	struct tm tm;
	const char *in = json_string_value(json_object_get(o, "in")),
		   *out = json_string_value(json_object_get(o, "out"));
	int proto = (int)json_integer_value(json_object_get(o, "proto"));
	const char *pname = policy_proto_name(proto);
	json_t *c = json_object_get(o, "counter");

	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%s.%03dZ %s %s", when, (int)((ts - (double)secs) * 1000), json_string_value(json_object_get(o, "hook")),
	       json_string_value(json_object_get(o, "family")));
	if (in && in[0])
		printf(" in %s", in);
	if (out && out[0])
		printf(" out %s", out);
	if (pname)
		printf(" %s", pname);
	else
		printf(" proto %d", proto);
	printf(" %s", json_string_value(json_object_get(o, "src")));
	if (json_integer_value(json_object_get(o, "sport")))
		printf(" port %lld", (long long)json_integer_value(json_object_get(o, "sport")));
	printf(" -> %s", json_string_value(json_object_get(o, "dst")));
	if (json_integer_value(json_object_get(o, "dport")))
		printf(" port %lld", (long long)json_integer_value(json_object_get(o, "dport")));
	printf(": rule %s, %s", json_string_value(json_object_get(o, "rule")),
	       json_string_value(json_object_get(o, "action")));
	if (json_is_object(c))
		printf(" (its counter now %lld packets, %lld bytes)",
		       (long long)json_integer_value(json_object_get(c, "packets")),
		       (long long)json_integer_value(json_object_get(c, "bytes")));
	putchar('\n');
	fflush(stdout);
}

struct live_state {
	bool json;
	bool ended;
	unsigned long long traced, wanted;
	char why[32];
};

static int live_line(const char *line, void *arg)
{
	struct live_state *st = arg;
	json_t *o = json_loads(line, 0, NULL), *end;

	if (!json_is_object(o)) {
		json_decref(o);
		fprintf(stderr, "nfbox trace: the daemon sent a line that is not JSON\n");
		return EXIT_FAILED;
	}
	if (json_is_string(end = json_object_get(o, "end"))) {
		st->ended = true;
		st->traced = (unsigned long long)json_integer_value(json_object_get(o, "traced"));
		snprintf(st->why, sizeof(st->why), "%s", json_string_value(end));
	} else if (st->json) {
		fputs(line, stdout);
		fflush(stdout);
	} else {
		live_text(o);
	}
	json_decref(o);
	return 0;
}

static int trace_live(const struct trace_args *a)
{
	struct ctl_request req = { .verb = CTL_TRACE,
				   .count = a->count ? (unsigned)a->count : 0,
				   .timeout = a->timeout ? (unsigned)(a->timeout + 0.999) : 0,
				   .iif = (char *)a->in,
				   .from = (char *)a->from,
				   .to = (char *)a->to,
				   .proto = (char *)a->proto,
				   .has_port = a->port != PORT_NOT_GIVEN,
				   .port = a->port != PORT_NOT_GIVEN ? (unsigned)a->port : 0 };
	struct live_state st = { .json = a->json, .wanted = a->count ? a->count : 10 };
	char sock[PATH_MAX];
	struct diags d;
	int r = 0;

	if (a->policy || a->out || a->sport != PORT_NOT_GIVEN || a->icmp_type || a->at || a->sets) {
		fprintf(stderr, "nfbox trace: --live filters by --in, --from, --to, --proto and --port only\n");
		return EXIT_USAGE;
	}
	diags_init(&d);
	if (a->socket)
		snprintf(sock, sizeof(sock), "%s", a->socket);
	else
		r = netns_default_socket(sock, sizeof(sock), &d);
	if (r == 0)
		r = ctl_stream(sock, &req, live_line, &st, stderr, &d);
	if (r < 0) {
		fputs("nfbox trace: ", stderr);
		diags_print(&d, stderr, false);
	}
	diags_free(&d);
	if (r)
		return r < 0 ? cli_ctl_exit(r) : r == CTL_ERROR ? EXIT_FAILED : r;
	if (!st.ended) {
		fprintf(stderr, "nfbox trace: the trace ended before the daemon said why\n");
		return EXIT_FAILED;
	}
	if (strcmp(st.why, "count")) {
		fprintf(stderr, "nfbox trace: %llu of %llu packets traced; the trace ended: %s\n", st.traced, st.wanted,
			st.why);
		return EXIT_FAILED;
	}
	return 0;
}

static int run_trace(void *args, int argc, char **argv)
{
	struct trace_args *a = args;
	_cleanup_free_ char *path = NULL;
	struct entries e = { 0 };
	struct trace_source src = { 0 };
	struct trace_sets sets = { .holds = entries_hold, .arg = &e };
	struct trace_result *res = NULL;
	struct trace_packet k;
	struct policy *p = NULL;
	int r;

	if (a->live)
		return trace_live(a);
	if ((r = what_if_given(a)))
		return r;
	if ((r = parse_packet(a, &k)))
		return r;
	if (!(r = gather(a, &path, &p, &e, &src))) {
		sets.known = src.sets != NULL;
		if (trace_run(p, &k, &sets, &res) < 0)
			r = EXIT_FAILED;
	}
	if (res) {
		res->source = src;
		if (a->json)
			trace_print_json(stdout, res);
		else
			trace_print_text(stdout, res);
	}
	trace_free(res);
	free(e.v);
	policy_free(p);
	return r;
}

const struct cli_cmd cli_cmd_trace = {
	.name = "trace",
	.summary = "what the policy would do with one packet: hooks, early drop, NAT, each rule tried and why",
	.opts = trace_opts,
	.more_help = "example: nfbox trace -i wan0 -o lan0 -f 203.0.113.7 -t 198.51.100.10 -p tcp --port 22\n"
		     "A packet with --in alone is addressed to the appliance (input); with --out\n"
		     "alone it is the appliance's own (output). Without --policy the daemon is\n"
		     "asked for the policy file it enforces and its dynamic sets' entries; with\n"
		     "--policy, dynamic sets are judged empty unless --sets gives their entries.\n"
		     "A limit is assumed to have room.\n"
		     "Live: nfbox trace --live --count 5 -i wan0 -f 203.0.113.0/24 -p tcp --port 22\n"
		     "traces the next 5 such packets through the engine the daemon enforces with:\n"
		     "the rule that decided each and its counter after it (one live trace at a time).\n",
	.args_size = sizeof(struct trace_args),
	.defaults = trace_defaults,
	.run = run_trace,
};
