/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox capture`: one ad-hoc capture to pcapng through the capture engine.
 * The --match expression is a policy capture match, read by the policy
 * loader, so its mistakes are reported as --match:LINE:COL like a file's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "cli/cli.h"
#include "lib/log.h"
#include "policy/syntax/parse.h"
#include "policy/policy.h"

#define MATCH_NAME "--match"
/* The expression starts line 2, column 1, so positions map back by one line. */
#define WRAP_HEAD "{version: 1, capture: [{name: adhoc, interface: lo, file: /adhoc.pcapng"

struct capture_args {
	const char *ifname;
	const char *file;
	const char *match;
	const char *mirror_from; /* NULL: capture IF itself */
	uint64_t count;
	double duration; /* seconds; 0: none */
	uint32_t snaplen; /* 0: the policy default */
	uint64_t rotate_size; /* 0: none */
	uint32_t rotate_keep; /* 0: the policy default */
	struct capture_opts opts;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: nfbox capture --interface IF --file FILE [--match EXPR] [--count N]\n"
		   "                     [--duration SECONDS] [--snaplen N] [--rotate-size SIZE [--rotate-keep N]]\n"
		   "                     [--mirror-from IF2] [--xdp-mode auto|native|skb] [--copy]\n"
		   "  --match EXPR   a capture match as a YAML flow mapping, e.g.\n"
		   "                 '{proto: udp, min-length: 1501, to: 203.0.113.0/24, service: [udp/9000]}'\n"
		   "                 (keys: proto, from, to, service, min-length, max-length, non-ip)\n"
		   "  --count N      stop after N packets\n"
		   "  --duration S   stop after S seconds\n"
		   "  --snaplen N    bytes kept per packet (64..262144; default 65535)\n"
		   "  --rotate-size SIZE  start a new file when one reaches SIZE (at least 64KiB;\n"
		   "                 e.g. 1048576, 100MB, 256MiB); older files are FILE.1, FILE.2, ...\n"
		   "  --rotate-keep N     files kept in all with --rotate-size (1..100000; default 8)\n"
		   "  --mirror-from IF2  capture a copy of what IF2 receives and sends (e.g. the\n"
		   "                 appliance's own forwarded traffic), which IF2 keeps forwarding:\n"
		   "                 IF is then a new veth pair nfbox creates and deletes (IF, IF-tx)\n"
		   "  --xdp-mode M   native (driver) or skb (generic) XDP; auto tries native first\n"
		   "  --copy         never use AF_XDP zero-copy\n"
		   "SIGINT or SIGTERM stop it too; the file is complete either way.\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_mode(const char *s, enum capture_xdp_mode *out)
{
	static const enum capture_xdp_mode modes[] = { CAPTURE_XDP_AUTO, CAPTURE_XDP_NATIVE, CAPTURE_XDP_SKB };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(s, capture_xdp_mode_name(modes[i]))) {
			*out = modes[i];
			return 0;
		}
	return -EINVAL;
}

static int bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "nfbox capture: %s '%s': %s\n", opt, val, want);
	return -EINVAL;
}

static int parse_opt(int c, const char *arg, struct capture_args *a)
{
	const char *why;
	uint64_t v;
	char *end;

	switch (c) {
	case 'i':
		a->ifname = arg;
		return 0;
	case 'w':
		a->file = arg;
		return 0;
	case 'm':
		a->match = arg;
		return 0;
	case 'c':
		if (parse_u64(arg, 1, UINT64_MAX, &a->count) < 0)
			return bad_arg("--count", arg, "a number of packets, at least 1");
		a->opts.max_packets = a->count;
		return 0;
	case 'd':
		a->duration = strtod(arg, &end);
		if (end == arg || *end || !(a->duration > 0) || !isfinite(a->duration))
			return bad_arg("--duration", arg, "seconds, more than 0");
		return 0;
	case 's':
		if (parse_u64(arg, 64, 262144, &v) < 0)
			return bad_arg("--snaplen", arg, "bytes, 64..262144");
		a->snaplen = (uint32_t)v;
		return 0;
	case 'r':
		if (parse_size(arg, &a->rotate_size, &why) < 0)
			return bad_arg("--rotate-size", arg, why);
		if (a->rotate_size < 65536)
			return bad_arg("--rotate-size", arg, "at least 64KiB");
		return 0;
	case 'k':
		if (parse_u64(arg, 1, 100000, &v) < 0)
			return bad_arg("--rotate-keep", arg, "a number of files, 1..100000");
		a->rotate_keep = (uint32_t)v;
		return 0;
	case 'x':
		if (parse_mode(arg, &a->opts.xdp_mode) < 0)
			return bad_arg("--xdp-mode", arg, "auto, native or skb");
		return 0;
	case 'M':
		a->mirror_from = arg;
		return 0;
	case 'C':
		a->opts.force_copy = true;
		return 0;
	default:
		return -EINVAL;
	}
}

/* 0: run, 1: --help done, negative: usage error (reported). */
static int parse_args(int argc, char **argv, struct capture_args *a)
{
	static const struct option opts[] = {
		{ "interface", required_argument, NULL, 'i' }, { "file", required_argument, NULL, 'w' },
		{ "match", required_argument, NULL, 'm' },     { "count", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },  { "snaplen", required_argument, NULL, 's' },
		{ "rotate-size", required_argument, NULL, 'r' }, { "rotate-keep", required_argument, NULL, 'k' },
		{ "xdp-mode", required_argument, NULL, 'x' },  { "copy", no_argument, NULL, 'C' },
		{ "mirror-from", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },            { 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "i:w:m:c:d:s:h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || parse_opt(c, optarg, a) < 0)
			return -EINVAL;
	}
	if (optind < argc)
		return bad_arg("argument", argv[optind], "unexpected");
	if (!a->ifname || !a->file) {
		fprintf(stderr, "nfbox capture: --interface and --file are required; see --help\n");
		return -EINVAL;
	}
	if (a->rotate_keep && !a->rotate_size) {
		fprintf(stderr, "nfbox capture: --rotate-keep needs --rotate-size\n");
		return -EINVAL;
	}
	if (strlen(a->ifname) >= POLICY_IFNAMSIZ)
		return bad_arg("--interface", a->ifname, "too long for an interface name");
	if (!a->mirror_from && !if_nametoindex(a->ifname))
		return bad_arg("--interface", a->ifname, "no such interface");
	if (a->mirror_from && (strlen(a->mirror_from) >= POLICY_IFNAMSIZ || !if_nametoindex(a->mirror_from)))
		return bad_arg("--mirror-from", a->mirror_from, "no such interface");
	if (a->mirror_from && if_nametoindex(a->ifname))
		return bad_arg("--interface", a->ifname,
			       "exists already; with --mirror-from nfbox creates it: name a free interface");
	return 0;
}

/* Point every diagnostic of the wrapped document into the expression
 * itself: line L of the document is line L-1 of the expression; whatever
 * lies outside (the wrapper's own lines) goes to the nearest end. */
static void diags_to_expr(struct diags *d, const struct source *expr, const char *text)
{
	unsigned lines = 1, last_len = 0;

	for (const char *p = text; *p; p++, last_len++)
		if (*p == '\n') {
			lines++;
			last_len = 0;
		}
	for (size_t i = 0; i < d->n; i++) {
		struct loc *l = &d->v[i].loc;

		if (!l->src || !l->line)
			continue;
		l->src = expr;
		if (l->line == 1) {
			l->col = 1;
		} else if (l->line - 1 > lines) {
			l->line = lines;
			l->col = last_len + 1;
		} else {
			l->line--;
		}
		if (l->line == 0)
			l->line = 1;
	}
}

static char *wrap_match(const char *match)
{
	const char *s = match ? match + strspn(match, " \t\n") : NULL;
	char *doc;
	int n;

	if (!match)
		n = asprintf(&doc, "%s}]}\n", WRAP_HEAD);
	else if (*s == '{')
		n = asprintf(&doc, "%s, match:\n%s\n}]}\n", WRAP_HEAD, match);
	else /* the braces may be left out */
		n = asprintf(&doc, "%s, match: {\n%s\n}}]}\n", WRAP_HEAD, match);
	return n < 0 ? NULL : doc;
}

/* Read --match through the policy loader: *out is the loaded policy whose
 * one capture carries the match. */
static int load_match(const char *match, struct policy **out)
{
	char *doc = wrap_match(match);
	struct source *expr;
	struct diags d;
	int r;

	if (!doc)
		return -ENOMEM;
	diags_init(&d);
	r = policy_load_buffer(MATCH_NAME, doc, strlen(doc), &d, out);
	if (match && d.n && (expr = diags_add_source(&d, MATCH_NAME, match, strlen(match))))
		diags_to_expr(&d, expr, match);
	diags_print(&d, stderr, cli_color(stderr));
	diags_free(&d);
	free(doc);
	return r;
}

static struct capture_conf conf_from(const struct capture_conf *adhoc, const struct capture_args *a)
{
	struct capture_conf c = *adhoc;

	snprintf(c.ifname, sizeof(c.ifname), "%s", a->ifname);
	snprintf(c.mirror_from, sizeof(c.mirror_from), "%s", a->mirror_from ? a->mirror_from : "");
	c.file = (char *)a->file;
	if (a->snaplen)
		c.snaplen = a->snaplen;
	if (a->rotate_size)
		c.rotate_size = a->rotate_size;
	if (a->rotate_keep)
		c.rotate_keep = a->rotate_keep;
	return c;
}

static int block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for a signal, the packet limit or the duration: returns the reason. */
static const char *wait_end(struct capture *c, int sigfd, double duration)
{
	struct pollfd pfd[2] = { { .fd = sigfd, .events = POLLIN },
				 { .fd = capture_done_fd(c), .events = POLLIN } };
	int64_t deadline = duration > 0 ? monotonic_ms() + (int64_t)(duration * 1000) : -1;
	struct signalfd_siginfo si;

	for (;;) {
		int64_t left = deadline < 0 ? -1 : deadline - monotonic_ms();

		if (deadline >= 0 && left <= 0)
			return "duration reached";
		if (poll(pfd, 2, left > INT32_MAX ? INT32_MAX : (int)left) < 0 && errno != EINTR)
			return "poll failed";
		if (pfd[0].revents && read(sigfd, &si, sizeof(si)) == sizeof(si))
			return si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
		if (pfd[1].revents)
			return "ended";
	}
}

static void print_mode(const struct capture *c, const char *file)
{
	struct capture_info i;

	capture_get_info(c, &i);
	if (i.mirror_from[0])
		printf("mirroring %s into %s (veth pair %s/%s)\n", i.mirror_from, i.ifname, i.ifname, i.mirror_peer);
	printf("capturing on %s: %u rx queue%s, %s XDP, %s%s%s, to %s\n", i.ifname, i.nqueues,
	       i.nqueues == 1 ? "" : "s", capture_xdp_mode_name(i.xdp_mode),
	       i.zerocopy ? "zero-copy" : "copy mode", i.copy_reason ? ": " : "",
	       i.copy_reason ? i.copy_reason : "", file);
	fflush(stdout);
}

static void print_stats(const struct capture_stats *s, const char *why)
{
	printf("stopped: %s\n", why);
	printf("  captured %llu packets, %llu bytes, %llu descriptors, %llu multi-buffer\n",
	       (unsigned long long)s->packets, (unsigned long long)s->bytes, (unsigned long long)s->descs,
	       (unsigned long long)s->multibuf);
	printf("  xdp: seen %llu, matched %llu, redirected %llu, passed %llu\n",
	       (unsigned long long)s->xdp_seen, (unsigned long long)s->xdp_matched,
	       (unsigned long long)s->xdp_redirected, (unsigned long long)s->xdp_passed);
	printf("  kernel drops: rx_dropped %llu, rx_ring_full %llu, rx_fill_ring_empty_descs %llu, "
	       "rx_invalid_descs %llu\n",
	       (unsigned long long)s->rx_dropped, (unsigned long long)s->rx_ring_full,
	       (unsigned long long)s->rx_fill_ring_empty_descs, (unsigned long long)s->rx_invalid_descs);
	printf("  writer: written %llu packets in %llu file%s, queue drops %llu, write drops %llu, "
	       "oversize %llu%s%s\n",
	       (unsigned long long)s->written, (unsigned long long)s->files, s->files == 1 ? "" : "s",
	       (unsigned long long)s->writer_queue_drops, (unsigned long long)s->writer_write_drops,
	       (unsigned long long)s->oversize, s->writer_errno ? ", error: " : "",
	       s->writer_errno ? strerror(s->writer_errno) : "");
	if (s->mirrored || s->mirror_failed)
		printf("  mirror: %llu frames copied, %llu could not be sent\n", (unsigned long long)s->mirrored,
		       (unsigned long long)s->mirror_failed);
	fflush(stdout);
}

static int run_capture(const struct capture_conf *conf, const struct capture_args *a)
{
	struct capture_stats st;
	struct capture *c;
	const char *why;
	int sigfd, r;

	if ((sigfd = block_signals()) < 0) {
		log_err("capture: cannot set up signals: %s", strerror(errno));
		return 1;
	}
	if ((r = capture_start(conf, &a->opts, &c)) < 0) {
		close(sigfd);
		return 1;
	}
	print_mode(c, conf->file);
	why = wait_end(c, sigfd, a->duration);
	if (capture_stats(c, &st) == 0 && st.done)
		why = st.end_error ? strerror(-st.end_error) : "count reached";
	r = capture_stop(c, &st);
	if (r < 0)
		log_err("capture: %s: %s", conf->file, strerror(-r));
	print_stats(&st, why);
	close(sigfd);
	return r < 0 || st.end_error ? 1 : 0;
}

int cmd_capture(int argc, char **argv)
{
	struct capture_args a = { 0 };
	struct policy *p = NULL;
	struct capture_conf conf;
	int r;

	log_init(LOG_INFO);
	if ((r = parse_args(argc, argv, &a)) != 0)
		return r > 0 ? 0 : EXIT_USAGE;
	if (load_match(a.match, &p) < 0 || !p || p->ncaptures != 1) {
		policy_free(p);
		return EXIT_USAGE;
	}
	conf = conf_from(&p->captures[0], &a);
	r = run_capture(&conf, &a);
	policy_free(p);
	return r;
}
