/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox run` and the control-socket clients: status, stats, reload, log. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "lib/log.h"

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' }, { "socket", required_argument, NULL, 's' },
		{ "pin-dir", required_argument, NULL, 'd' }, { "log", required_argument, NULL, 'l' },
		{ "fresh", no_argument, NULL, 'f' },         { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },          { 0 },
	};
	struct daemon_opts o = { .policy = NFBOX_DEFAULT_POLICY, .socket = NFBOX_DEFAULT_SOCKET,
				 .pin_dir = NFBOX_DEFAULT_PIN_DIR };
	enum log_level level = LOG_INFO;
	int c;

	while ((c = getopt_long(argc, argv, "p:s:d:l:fvh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.policy = optarg;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'd':
			o.pin_dir = optarg;
			break;
		case 'l':
			o.log = optarg;
			break;
		case 'f':
			o.fresh = true;
			break;
		case 'v':
			level = LOG_DEBUG;
			break;
		case 'h':
			printf("usage: nfbox run [--policy FILE] [--socket PATH] [--pin-dir DIR] [--log FILE|-] [--fresh] [--verbose]\n"
			       "  --policy FILE   policy to enforce (default %s)\n"
			       "  --socket PATH   control socket (default %s, mode 0600)\n"
			       "  --pin-dir DIR   where program, maps and links are pinned (default %s)\n"
			       "  --log FILE|-    append verdict events as JSON lines to FILE (- for stdout)\n"
			       "  --fresh         replace pinned state instead of adopting it\n"
			       "  --verbose       show libbpf's debug output\n",
			       NFBOX_DEFAULT_POLICY, NFBOX_DEFAULT_SOCKET, NFBOX_DEFAULT_PIN_DIR);
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "nfbox run: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	log_init(level);
	return daemon_run(&o);
}

/* Send one request line; copy the reply (after its ok/error line) to out.
 * Returns 0 for "ok", 1 for "error" or no daemon. */
static int ctl_request(const char *socket_path, const char *req, FILE *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[65536];
	bool first = true, ok = false;
	ssize_t n;
	int fd;

	if (strlen(socket_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "nfbox: socket path too long\n");
		return 1;
	}
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "nfbox: no daemon answers on %s: %s (is 'nfbox run' running?)\n", socket_path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1) {
		close(fd);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		char *p = buf;

		if (first) {
			/* Replies start with a status line; `log` streams events
			 * right away. */
			first = false;
			if (!strncmp(buf, "ok\n", (size_t)(n < 3 ? n : 3)) && n >= 3) {
				ok = true;
				p = buf + 3;
			} else if (n >= 6 && !strncmp(buf, "error\n", 6)) {
				p = buf + 6;
			} else {
				ok = true;
			}
		}
		fwrite(p, 1, (size_t)(n - (p - buf)), ok ? out : stderr);
		fflush(out);
	}
	close(fd);
	return ok ? 0 : 1;
}

static int ctl_command(int argc, char **argv, const char *verb, bool has_json, bool has_policy)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
		{ "policy", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *sock = NFBOX_DEFAULT_SOCKET, *policy = NULL;
	char req[PATH_MAX + 32], *abs = NULL;
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "s:jp:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'j':
			if (!has_json)
				return EXIT_USAGE;
			json = true;
			break;
		case 'p':
			if (!has_policy)
				return EXIT_USAGE;
			policy = optarg;
			break;
		case 'h':
			printf("usage: nfbox %s%s%s [--socket PATH]\n", verb, has_json ? " [--json]" : "",
			       has_policy ? " [--policy FILE]" : "");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (policy && !(abs = realpath(policy, NULL))) {
		fprintf(stderr, "nfbox reload: %s: %s\n", policy, strerror(errno));
		return 1;
	}
	snprintf(req, sizeof(req), "%s%s%s%s", verb, json ? " json" : "", abs ? " " : "", abs ? abs : "");
	free(abs);
	if (!strcmp(verb, "reload") && policy) {
		/* The daemon reads "reload PATH". */
		snprintf(req, sizeof(req), "reload %s", policy[0] == '/' ? policy : req + 7);
	}
	r = ctl_request(sock, req, stdout);
	return r;
}

int cmd_status(int argc, char **argv)
{
	return ctl_command(argc, argv, "status", true, false);
}

int cmd_stats(int argc, char **argv)
{
	return ctl_command(argc, argv, "stats", true, false);
}

int cmd_reload(int argc, char **argv)
{
	return ctl_command(argc, argv, "reload", false, true);
}

int cmd_log(int argc, char **argv)
{
	return ctl_command(argc, argv, "log", false, false);
}
