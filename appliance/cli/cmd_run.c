/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox run` and the control-socket clients: status, stats, reload, log. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/client.h"
#include "daemon/daemon.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/liblog.h"
#include "policy/syntax/parse.h"
#include "system/netns.h"

struct run_args {
	struct daemon_opts o;
	bool verbose;
};

static const struct cli_opt run_opts[] = {
	CLI_OPT_STRING("policy", 'p', struct run_args, o.policy, "FILE",
		       "policy to enforce (default " NFBOX_DEFAULT_POLICY ")"),
	CLI_OPT_STRING("socket", 's', struct run_args, o.socket, "PATH",
		       "control socket (default " NFBOX_RUN_DIR
		       "/nfbox.sock; nfbox-NETNS.sock in network namespace NETNS)"),
	CLI_OPT_STRING("pin-dir", 'd', struct run_args, o.pin_dir, "DIR",
		       "where program, maps and links are pinned (default " NFBOX_BPFFS
		       "/nfbox; nfbox-NETNS in NETNS)"),
	CLI_OPT_FLAG("no-pin", 0, struct run_args, o.no_pin, "pin nothing: enforcement ends when nfbox does"),
	CLI_OPT_STRING("state-dir", 0, struct run_args, o.state_dir, "DIR",
		       "where the confirmed policy, a pending change, the counters' names and the dynamic sets are "
		       "kept (default " NFBOX_STATE_DIR "/state; state-NETNS in NETNS)"),
	CLI_OPT_STRING("socket-group", 'g', struct run_args, o.socket_group, "GROUP",
		       "members of GROUP may use status, stats and log (socket mode 0660)"),
	CLI_OPT_FLAG("allow-unsafe-files", 0, struct run_args, o.allow_unsafe_files,
		     "read policy and set files whoever owns them and whoever may write them"),
	CLI_OPT_STRING("log", 'l', struct run_args, o.log, "FILE|-",
		       "append verdict events as JSON lines to FILE (- for stdout)"),
	CLI_OPT_STRING("metrics-listen", 0, struct run_args, o.metrics_listen, "ADDR:PORT",
		       "serve the metrics over HTTP at http://ADDR:PORT/metrics (127.0.0.1:9470, [::1]:9470)"),
	CLI_OPT_FLAG("no-journal-events", 0, struct run_args, o.no_journal_events,
		     "under systemd, keep verdict events out of the journal (they go there by default)"),
	CLI_OPT_STRING("fleet", 0, struct run_args, o.fleet, "FILE",
		       "a node of a fleet: its group's policy from etcd, as FILE says (nfbox-fleet(5)); --policy is "
		       "enforced until the first revision comes"),
	CLI_OPT_FLAG("strict", 0, struct run_args, o.strict,
		     "a policy with warnings is not loaded, as validate --strict: the start fails, a reload changes "
		     "nothing"),
	CLI_OPT_FLAG("fresh", 'f', struct run_args, o.fresh, "replace pinned state instead of adopting it"),
	CLI_OPT_FLAG("verbose", 'v', struct run_args, verbose, "show libbpf's debug output"),
	CLI_OPT_END,
};

static void run_defaults(void *args)
{
	struct run_args *a = args;

	a->o.policy = NFBOX_DEFAULT_POLICY;
}

static int run_run(void *args, int argc, char **argv)
{
	struct run_args *a = args;

	log_init(a->verbose ? LOG_DEBUG : LOG_INFO);
	log_libraries();
	return daemon_run(&a->o);
}

const struct cli_cmd cli_cmd_run = {
	.name = "run",
	.summary = "enforce a policy (root); SIGHUP reloads, SIGTERM detaches",
	.opts = run_opts,
	.args_size = sizeof(struct run_args),
	.defaults = run_defaults,
	.run = run_run,
};

/* ---- clients ---- */

struct ctl_args {
	const char *socket;
	const char *policy;
	const char *confirm;
	bool json;
	bool keep;
	bool zero;
	bool unused;
	const char *since;
};

#define SOCKET_OPT                                                     \
	CLI_OPT_STRING("socket", 's', struct ctl_args, socket, "PATH", \
		       "the daemon's control socket (default: that of this network namespace, as for nfbox run)")
#define JSON_OPT CLI_OPT_FLAG("json", 'j', struct ctl_args, json, "JSON instead of text")

static const struct cli_opt report_opts[] = { JSON_OPT, SOCKET_OPT, CLI_OPT_END };
static const struct cli_opt stats_opts[] = {
	JSON_OPT,
	CLI_OPT_FLAG("zero", 'z', struct ctl_args, zero, "then set every counter to 0 (root)"),
	CLI_OPT_FLAG("unused", 'u', struct ctl_args, unused,
		     "only the rules (and defaults) without a hit, with when each came into force"),
	CLI_OPT_STRING("since", 'S', struct ctl_args, since, "DURATION",
		       "with --unused: without a hit in the last DURATION (30m, 12h, 7d; up to 3650d)"),
	SOCKET_OPT,
	CLI_OPT_END,
};
static const struct cli_opt reload_opts[] = {
	CLI_OPT_STRING("policy", 'p', struct ctl_args, policy, "FILE", "load FILE instead of the daemon's policy"),
	CLI_OPT_STRING("confirm", 'c', struct ctl_args, confirm, "DURATION",
		       "roll back by itself after DURATION (90s, 5m, 1h) unless 'nfbox confirm' comes first"),
	SOCKET_OPT,
	CLI_OPT_END,
};
static const struct cli_opt confirm_opts[] = { SOCKET_OPT, CLI_OPT_END };
static const struct cli_opt log_opts[] = { SOCKET_OPT, CLI_OPT_END };
static const struct cli_opt stop_opts[] = {
	CLI_OPT_FLAG("keep", 'k', struct ctl_args, keep,
		     "leave the policy pinned and enforced for the next nfbox run to adopt (a restart, an upgrade)"),
	SOCKET_OPT,
	CLI_OPT_END,
};

int cli_ctl(const char *socket, struct ctl_request *req, int fd, FILE *out, FILE *err, struct diags *d, char *sock)
{
	int r = 0;

	if (socket)
		snprintf(sock, PATH_MAX, "%s", socket);
	else
		r = netns_default_socket(sock, PATH_MAX, d);
	return r < 0 ? r : ctl_call(sock, req, fd, out, err, d);
}

int cli_ctl_exit(int r)
{
	if (r == -ENOENT || r == -ECONNREFUSED) /* no daemon: nothing listens on the socket */
		return EXIT_UNREACHABLE;
	return r == 0 ? 0 : r == CTL_INVALID ? EXIT_INVALID : EXIT_FAILED;
}

static int call(const struct ctl_args *a, struct ctl_request *req, int fd)
{
	char sock[PATH_MAX];
	struct diags d;
	int r;

	diags_init(&d);
	r = cli_ctl(a->socket, req, fd, stdout, stderr, &d, sock);
	if (req->verb == CTL_STOP && (r == -ECONNREFUSED || r == -ENOENT)) {
		/* Nothing to stop; what a dead daemon left pinned stays enforced. */
		fprintf(stderr, "nfbox stop: no daemon answers on %s; nothing to stop\n", sock);
		r = 0;
	}
	if (r < 0) {
		fputs("nfbox: ", stderr);
		diags_print(&d, stderr, false);
	}
	diags_free(&d);
	return cli_ctl_exit(r);
}

/* reload --policy: this command opens the file and passes it, so the daemon
 * reads what the caller could open, not whatever a path names. */
/* "90", "90s", "5m", "1h": seconds within the protocol's bound; 0 if not. */
static unsigned parse_duration_max(const char *s, unsigned max)
{
	const char *why;
	uint64_t v;

	return s[0] != '-' && parse_duration(s, max, &v, &why) == 0 ? (unsigned)v : 0;
}

static unsigned parse_confirm(const char *s)
{
	return parse_duration_max(s, CTL_MAX_CONFIRM);
}

static int run_ctl(enum ctl_verb verb, const struct ctl_args *a)
{
	struct ctl_request req = { .verb = verb, .json = a->json, .zero = a->zero };
	_cleanup_free_ char *abs = NULL;
	_cleanup_close_ int fd = -1;

	if (a->confirm && !(req.confirm = parse_confirm(a->confirm))) {
		fprintf(stderr, "nfbox reload: --confirm %s: give a duration of 1 s to 7 days, e.g. 90s, 5m or 1h\n",
			a->confirm);
		return EXIT_USAGE;
	}
	if (a->policy && (!(abs = realpath(a->policy, NULL)) || (fd = open(abs, O_RDONLY | O_CLOEXEC)) < 0)) {
		fprintf(stderr, "nfbox reload: %s: %s\n", a->policy, strerror(errno));
		return EXIT_INVALID; /* the policy file cannot be read */
	}
	req.policy = abs;
	return call(a, &req, fd);
}

static int run_status(void *args, int argc, char **argv)
{
	return run_ctl(CTL_STATUS, args);
}

static int run_stats(void *args, int argc, char **argv)
{
	const struct ctl_args *a = args;
	struct ctl_request req = { .verb = CTL_STATS, .json = a->json, .zero = a->zero, .unused = a->unused };

	if (a->since && !a->unused) {
		fputs("nfbox stats: --since goes with --unused: nfbox stats --unused --since 7d\n", stderr);
		return EXIT_USAGE;
	}
	if (a->since && !(req.since = parse_duration_max(a->since, CTL_MAX_SINCE))) {
		fprintf(stderr, "nfbox stats: --since %s: give a duration of 1 s to 3650 days, e.g. 12h or 30d\n",
			a->since);
		return EXIT_USAGE;
	}
	return call(a, &req, -1);
}

static int run_reload(void *args, int argc, char **argv)
{
	return run_ctl(CTL_RELOAD, args);
}

static int run_metrics(void *args, int argc, char **argv)
{
	return run_ctl(CTL_METRICS, args);
}

static int run_confirm(void *args, int argc, char **argv)
{
	return run_ctl(CTL_CONFIRM, args);
}

static int run_rollback(void *args, int argc, char **argv)
{
	return run_ctl(CTL_ROLLBACK, args);
}

static int run_log(void *args, int argc, char **argv)
{
	return run_ctl(CTL_LOG, args);
}

static int run_stop(void *args, int argc, char **argv)
{
	const struct ctl_args *a = args;
	struct ctl_request req = { .verb = CTL_STOP, .keep = a->keep };

	return call(a, &req, -1);
}

#define CTL_CMD(n, fn, opt, sum) \
	{ .name = n, .summary = sum, .opts = opt, .args_size = sizeof(struct ctl_args), .run = fn }

const struct cli_cmd cli_cmd_status = CTL_CMD("status", run_status, report_opts, "what the running daemon enforces");
const struct cli_cmd cli_cmd_stats =
	CTL_CMD("stats", run_stats, stats_opts,
		"per-rule packets, bytes and last hits, defaults, drops; --unused: rules not hit; --zero resets them");
const struct cli_cmd cli_cmd_reload =
	CTL_CMD("reload", run_reload, reload_opts, "load a new policy atomically; a bad one changes nothing");
const struct cli_cmd cli_cmd_metrics =
	CTL_CMD("metrics", run_metrics, confirm_opts, "the counters and state in the Prometheus text format");
const struct cli_cmd cli_cmd_confirm =
	CTL_CMD("confirm", run_confirm, confirm_opts, "keep the change a reload --confirm made (else it rolls back)");
const struct cli_cmd cli_cmd_rollback =
	CTL_CMD("rollback", run_rollback, confirm_opts,
		"undo the change a reload --confirm made now: the last confirmed policy comes back");
const struct cli_cmd cli_cmd_log = CTL_CMD("log", run_log, log_opts, "follow verdict events as JSON lines");
const struct cli_cmd cli_cmd_stop =
	CTL_CMD("stop", run_stop, stop_opts, "stop the daemon: detach everything, or --keep the policy enforced");

/* ---- nfbox set: dynamic sets ---- */

struct set_args {
	const char *socket;
	const char *timeout;
	const char *file;
	bool json;
	bool force;
};

static const struct cli_opt set_opts[] = {
	CLI_OPT_STRING("timeout", 't', struct set_args, timeout, "DURATION",
		       "add: the entries go by themselves after DURATION (90s, 10m, 2h, 7d; at most 365d)"),
	CLI_OPT_STRING("file", 'f', struct set_args, file, "FILE",
		       "add, del: read the prefixes from FILE (- for standard input), one per line, '#' comments"),
	CLI_OPT_FLAG("json", 'j', struct set_args, json, "list: JSON instead of text"),
	CLI_OPT_FLAG("force", 'F', struct set_args, force,
		     "add: even an address never banned otherwise (the appliance's own, a special range, never-ban)"),
	CLI_OPT_STRING("socket", 's', struct set_args, socket, "PATH",
		       "the daemon's control socket (default: that of this network namespace, as for nfbox run)"),
	CLI_OPT_END,
};

/* The operands, one per line, into fd. */
static int write_operands(int fd, int argc, char **argv)
{
	FILE *f = fdopen(dup(fd), "w");

	for (int i = 0; f && i < argc; i++)
		fprintf(f, "%s\n", argv[i]);
	if (!f || fclose(f) != 0) {
		fprintf(stderr, "nfbox set: cannot pass the prefixes\n");
		return -1;
	}
	return 0;
}

/* The stream in, copied into fd. */
static int copy_stream(int in, int fd, const char *source)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(fd, buf, (size_t)n) != n) {
			fprintf(stderr, "nfbox set: %s: %s\n", source, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The prefixes as the daemon reads them: a regular file given as is, or a
 * memfd with the operands (one per line) or a copy of a stream. */
static int prefixes_fd(const char *file, int argc, char **argv, const char **source)
{
	_cleanup_close_ int opened = -1;
	_cleanup_close_ int fd = -1;
	int in = -1;
	struct stat st;

	if (file && strcmp(file, "-")) {
		if ((opened = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
			fprintf(stderr, "nfbox set: %s: %s\n", file, strerror(errno));
			return -1;
		}
		*source = file;
		if (fstat(opened, &st) == 0 && S_ISREG(st.st_mode))
			return TAKE_FD(opened);
		in = opened;
	} else if (file) {
		in = STDIN_FILENO;
		*source = "stdin";
	}
	if ((fd = memfd_create("nfbox-set", MFD_CLOEXEC)) < 0) {
		fprintf(stderr, "nfbox set: memfd: %s\n", strerror(errno));
		return -1;
	}
	if ((in < 0 ? write_operands(fd, argc, argv) : copy_stream(in, fd, *source)) < 0)
		return -1;
	return TAKE_FD(fd);
}

static int run_set(void *args, int argc, char **argv)
{
	static const char *const ops[] = { "add", "del", "list", "flush" };
	static const enum ctl_verb verbs[] = { CTL_SET_ADD, CTL_SET_DEL, CTL_SET_LIST, CTL_SET_FLUSH };
	const struct set_args *a = args;
	struct ctl_args ca = { .socket = a->socket };
	struct ctl_request req = { .json = a->json };
	const char *source = NULL;
	int op = -1, r;
	_cleanup_close_ int fd = -1;

	for (int i = 0; i < 4; i++)
		if (!strcmp(argv[0], ops[i]))
			op = i;
	if (op < 0) {
		fprintf(stderr, "nfbox set: '%s' is not add, del, list or flush\n", argv[0]);
		return EXIT_USAGE;
	}
	req.verb = verbs[op];
	if (op != 2 && argc < 2) {
		fprintf(stderr, "nfbox set %s: name the set\n", ops[op]);
		return EXIT_USAGE;
	}
	if (((op >= 2 && argc > 2) || (op < 2 && a->file && argc > 2)) || (op < 2 && !a->file && argc < 3)) {
		fprintf(stderr, "nfbox set %s: %s\n", ops[op],
			op >= 2	  ? "takes one set name, no prefixes"
			: a->file ? "prefixes come from --file or the command line, not both"
				  : "give the prefixes, or --file FILE (- for standard input)");
		return EXIT_USAGE;
	}
	if ((a->timeout && op != 0) || (a->file && op >= 2) || (a->json && op != 2) || (a->force && op != 0)) {
		fprintf(stderr, "nfbox set %s: %s is not taken here\n", ops[op],
			a->timeout && op != 0 ? "--timeout"
			: a->file && op >= 2  ? "--file"
			: a->force && op != 0 ? "--force"
					      : "--json");
		return EXIT_USAGE;
	}
	req.force = a->force;
	if (a->timeout && !(req.timeout = parse_duration_max(a->timeout, CTL_MAX_TIMEOUT))) {
		fprintf(stderr,
			"nfbox set add: --timeout %s: give a duration of 1 s to 365 days, e.g. 90s, 10m, 2h or 7d\n",
			a->timeout);
		return EXIT_USAGE;
	}
	req.set = argc > 1 ? argv[1] : NULL;
	if (op < 2) {
		if ((fd = prefixes_fd(a->file, argc - 2, argv + 2, &source)) < 0)
			return EXIT_FAILED;
		req.source = (char *)source;
	}
	r = call(&ca, &req, fd);
	return r;
}

const struct cli_cmd cli_cmd_set = {
	.name = "set",
	.summary = "change a dynamic set at run time: add, del, list, flush",
	.operands = "add|del|list|flush [NAME [PREFIX...]]",
	.min_operands = 1,
	.max_operands = 0,
	.options_anywhere = true,
	.opts = set_opts,
	.more_help = "  nfbox set add NAME PREFIX... [--timeout DURATION] [--force]   (root)\n"
		     "  nfbox set add NAME --file FILE|-  [--timeout DURATION] [--force]\n"
		     "  nfbox set del NAME PREFIX...  |  --file FILE|-        (root)\n"
		     "  nfbox set list [NAME] [--json]\n"
		     "  nfbox set flush NAME                                  (root)\n"
		     "Only sets marked 'dynamic: true' in the policy change this way; a change\n"
		     "is enforced at once, without a reload, and kept across reloads and restarts.\n"
		     "An address that is never banned (this appliance's own, loopback, multicast,\n"
		     "broadcast, unspecified, IPv4-mapped, or in the policy's never-ban) is refused\n"
		     "unless --force.\n",
	.args_size = sizeof(struct set_args),
	.run = run_set,
};
