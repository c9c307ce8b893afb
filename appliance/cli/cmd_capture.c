/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox capture`: one ad-hoc capture to pcapng through the capture engine.
 * The --match expression is a policy capture match, read by the policy
 * loader, so its mistakes are reported as --match:LINE:COL like a file's. */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "cli/cli.h"
#include "base/clock.h"
#include "base/log.h"
#include "lib/liblog.h"
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
	double duration;      /* seconds; 0: none */
	uint64_t snaplen;     /* 0: the policy default */
	uint64_t rotate_size; /* 0: none */
	uint64_t rotate_keep; /* 0: the policy default */
	uint64_t frames;      /* UMEM frames per rx queue; 0: the default */
	int xdp_mode;	      /* index of xdp_modes: enum capture_xdp_mode */
	bool copy;
};

static const char *const xdp_modes[] = { "auto", "native", "skb", NULL };
_Static_assert(CAPTURE_XDP_AUTO == 0 && CAPTURE_XDP_NATIVE == 1 && CAPTURE_XDP_SKB == 2,
	       "xdp_modes lists enum capture_xdp_mode in order");

#define A struct capture_args
static const struct cli_opt capture_opts[] = {
	CLI_OPT_REQUIRED_STRING("interface", 'i', A, ifname, "IF", "the interface to capture on"),
	CLI_OPT_REQUIRED_STRING("file", 'w', A, file, "FILE", "the pcapng file to write"),
	CLI_OPT_STRING("match", 'm', A, match, "EXPR", "a capture match as a YAML flow mapping (below)"),
	{ "count", 'c', CLI_UINT, offsetof(A, count), "N", "stop after N packets", 1, UINT64_MAX, NULL, false },
	{ "duration", 'd', CLI_SECONDS, offsetof(A, duration), "S", "stop after S seconds", 0, 0, NULL, false },
	{ "snaplen", 's', CLI_UINT, offsetof(A, snaplen), "N", "bytes kept per packet (default 65535)", 64, 262144,
	  NULL, false },
	CLI_OPT_SIZE(
		"rotate-size", A, rotate_size, "SIZE", 65536, UINT64_MAX,
		"start a new file when one reaches SIZE (e.g. 100MB, 256MiB); older files are FILE.1, FILE.2, ..."),
	CLI_OPT_UINT("rotate-keep", A, rotate_keep, "N", 1, 100000, "files kept in all with --rotate-size (default 8)"),
	CLI_OPT_STRING(
		"mirror-from", 0, A, mirror_from, "IF2",
		"capture a copy of what IF2 receives and sends; IF is then a veth pair nfbox creates and deletes"),
	CLI_OPT_CHOICE("xdp-mode", A, xdp_mode, "auto|native|skb", xdp_modes,
		       "native (driver) or skb (generic) XDP; auto tries native first"),
	CLI_OPT_FLAG("copy", 0, A, copy, "never use AF_XDP zero-copy"),
	CLI_OPT_UINT("frames", A, frames, "N", 64, 1u << 20,
		     "UMEM frames of 4096 bytes per receive queue, a power of two (default 16384)"),
	CLI_OPT_END,
};
#undef A

static int bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "nfbox capture: %s '%s': %s\n", opt, val, want);
	return -EINVAL;
}

/* What the option table cannot say alone: required options, and the
 * interfaces as they are now. */
static int check_args(const struct capture_args *a)
{
	if (a->rotate_keep && !a->rotate_size) {
		fprintf(stderr, "nfbox capture: --rotate-keep needs --rotate-size\n");
		return -EINVAL;
	}
	if (a->frames & (a->frames - 1)) {
		fprintf(stderr, "nfbox capture: --frames %llu: not a power of two (64, 128, ... 1048576)\n",
			(unsigned long long)a->frames);
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
		const struct loc *l = &d->v[i].loc;
		unsigned line = l->line, col = l->col;

		if (!d->v[i].file || !line)
			continue;
		if (line == 1) {
			col = 1;
		} else if (line - 1 > lines) {
			line = lines;
			col = last_len + 1;
		} else {
			line--;
		}
		diag_place(&d->v[i], expr, line ? line : 1, col);
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
	struct diags d;
	int r;

	if (!doc)
		return -ENOMEM;
	diags_init(&d);
	r = policy_load_buffer(MATCH_NAME, doc, strlen(doc), &d, out);
	if (match && d.n) {
		struct source expr = { .name = MATCH_NAME, .text = (char *)match, .len = strlen(match) };

		diags_to_expr(&d, &expr, match);
	}
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
		c.snaplen = (uint32_t)a->snaplen;
	if (a->rotate_size)
		c.rotate_size = a->rotate_size;
	if (a->rotate_keep)
		c.rotate_keep = (uint32_t)a->rotate_keep;
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

/* Wait for a signal, the packet limit or the duration: returns the reason. */
static const char *wait_end(struct capture *c, int sigfd, double duration)
{
	struct pollfd pfd[2] = { { .fd = sigfd, .events = POLLIN }, { .fd = capture_done_fd(c), .events = POLLIN } };
	int64_t deadline = duration > 0 ? clock_ms(CLOCK_MONOTONIC) + (int64_t)(duration * 1000) : -1;
	struct signalfd_siginfo si;

	for (;;) {
		int64_t left = deadline < 0 ? -1 : deadline - clock_ms(CLOCK_MONOTONIC);

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
	       i.nqueues == 1 ? "" : "s", capture_xdp_mode_name(i.xdp_mode), i.zerocopy ? "zero-copy" : "copy mode",
	       i.copy_reason ? ": " : "", i.copy_reason ? i.copy_reason : "", file);
	fflush(stdout);
}

static void print_stats(const struct capture_stats *s, const char *why)
{
	printf("stopped: %s\n", why);
	printf("  captured %llu packets, %llu bytes, %llu descriptors, %llu multi-buffer\n",
	       (unsigned long long)s->packets, (unsigned long long)s->bytes, (unsigned long long)s->descs,
	       (unsigned long long)s->multibuf);
	printf("  xdp: seen %llu, matched %llu, redirected %llu, passed %llu\n", (unsigned long long)s->xdp_seen,
	       (unsigned long long)s->xdp_matched, (unsigned long long)s->xdp_redirected,
	       (unsigned long long)s->xdp_passed);
	printf("  kernel drops: rx_dropped %llu, rx_ring_full %llu, rx_fill_ring_empty_descs %llu, "
	       "rx_invalid_descs %llu\n",
	       (unsigned long long)s->rx_dropped, (unsigned long long)s->rx_ring_full,
	       (unsigned long long)s->rx_fill_ring_empty_descs, (unsigned long long)s->rx_invalid_descs);
	printf("  writer: written %llu packets in %llu file%s, by reference %llu, queue drops %llu, "
	       "write drops %llu, oversize %llu%s%s\n",
	       (unsigned long long)s->written, (unsigned long long)s->files, s->files == 1 ? "" : "s",
	       (unsigned long long)s->by_ref, (unsigned long long)s->writer_queue_drops,
	       (unsigned long long)s->writer_write_drops, (unsigned long long)s->oversize,
	       s->writer_errno ? ", error: " : "", s->writer_errno ? strerror(s->writer_errno) : "");
	if (s->mirrored || s->mirror_failed)
		printf("  mirror: %llu frames copied, %llu could not be sent\n", (unsigned long long)s->mirrored,
		       (unsigned long long)s->mirror_failed);
	fflush(stdout);
}

static int run_capture(const struct capture_conf *conf, const struct capture_args *a)
{
	struct capture_opts opts = { .xdp_mode = (enum capture_xdp_mode)a->xdp_mode,
				     .force_copy = a->copy,
				     .max_packets = a->count,
				     .frames_per_queue = (uint32_t)a->frames };
	struct capture_stats st;
	struct capture *c;
	const char *why;
	struct diags d;
	int sigfd, r;

	if ((sigfd = block_signals()) < 0) {
		log_err("capture: cannot set up signals: %s", strerror(errno));
		return 1;
	}
	diags_init(&d);
	r = capture_start(conf, &opts, &d, &c);
	diags_print(&d, stderr, cli_color(stderr));
	diags_free(&d);
	if (r < 0) {
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

static int run(void *args, int argc, char **argv)
{
	struct capture_args *a = args;
	struct policy *p = NULL;
	struct capture_conf conf;
	int r;

	log_init(LOG_INFO);
	log_libraries();
	if (check_args(a) < 0)
		return EXIT_USAGE;
	if (load_match(a->match, &p) < 0 || !p || p->ncaptures != 1) {
		policy_free(p);
		return EXIT_USAGE;
	}
	conf = conf_from(&p->captures[0], a);
	r = run_capture(&conf, a);
	policy_free(p);
	return r;
}

const struct cli_cmd cli_cmd_capture = {
	.name = "capture",
	.summary = "ad-hoc AF_XDP capture (jumbo frames whole) to pcapng (root)",
	.opts = capture_opts,
	.more_help = "--match EXPR is a capture match, e.g.\n"
		     "  '{proto: udp, min-length: 1501, to: 203.0.113.0/24, service: [udp/9000]}'\n"
		     "(keys: proto, from, to, service, min-length, max-length, non-ip).\n"
		     "SIGINT or SIGTERM stop it too; the file is complete either way.\n",
	.args_size = sizeof(struct capture_args),
	.run = run,
};
