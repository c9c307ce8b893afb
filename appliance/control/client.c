/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "control/client.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "system/files.h"

static volatile sig_atomic_t stop_following;

static void on_stop(int sig)
{
	stop_following = 1;
}

static int connect_to(const char *path, struct diags *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], why[512];
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return diag_fail(d, -ENAMETOOLONG, "socket path %s is too long", path);
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	if (files_check_dir(dirname(dir), why, sizeof(why)) == -EPERM)
		return diag_fail(d, -EPERM, "not trusting the control socket %s: its %s", path, why);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return diag_errno(d, -errno, "cannot create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return diag_errno(d, r, "no daemon answers on %s (is 'nfbox run' running?)", path);
	}
	return fd;
}

/* The request; the first part carries fd_pass (SCM_RIGHTS) when given. */
static int send_request(int fd, const char *s, size_t len, int fd_pass)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)s, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd_pass >= 0) {
		struct cmsghdr *c;

		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd_pass, sizeof(int));
	}
	for (;;) {
		ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		if ((size_t)w == len)
			return 0;
		s += w;
		len -= (size_t)w;
		iov = (struct iovec){ .iov_base = (void *)s, .iov_len = len };
		msg.msg_control = NULL; /* the fd went with the first part */
		msg.msg_controllen = 0;
	}
}

/* The status line decides where the rest goes; it may come in pieces. */
static int copy_reply(int fd, FILE *out, FILE *err, struct diags *d)
{
	char buf[65536], head[8];
	size_t nhead = 0;
	int status = -1; /* 0 ok, CTL_ERROR, CTL_INVALID, -1 not known yet */
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		char *p = buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return diag_errno(d, -errno, "reading the daemon's reply");
		while (status < 0 && p < buf + n) {
			head[nhead++] = *p++;
			if (nhead == strlen(CTL_REPLY_OK) && !memcmp(head, CTL_REPLY_OK, nhead))
				status = 0;
			else if (nhead == strlen(CTL_REPLY_ERROR) && !memcmp(head, CTL_REPLY_ERROR, nhead))
				status = CTL_ERROR;
			else if (nhead == strlen(CTL_REPLY_INVALID) && !memcmp(head, CTL_REPLY_INVALID, nhead))
				status = CTL_INVALID;
			else if (nhead == strlen(CTL_REPLY_INVALID) || head[nhead - 1] == '\n')
				return diag_fail(d, -EPROTO,
						 "the daemon's reply does not start with ok, error or invalid");
		}
		fwrite(p, 1, (size_t)(n - (p - buf)), status ? err : out);
		fflush(status ? err : out);
	}
	if (status < 0)
		return diag_fail(d, -EPROTO, "the daemon closed the connection without a reply");
	return status;
}

/*
 * The process at the other end of fd, held by a pidfd (so that its number
 * cannot be reused while we wait): -1 when it cannot be had (another pid
 * namespace, an old kernel).
 */
static int peer_pidfd(int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.pid <= 0)
		return -1;
	return (int)syscall(SYS_pidfd_open, uc.pid, 0);
}

/* `stop`: after the daemon's "ok", until its process has exited (so that
 * whoever runs us, systemd's ExecStop= in particular, knows it is gone and
 * sends no signal that would change how it stops). */
static int wait_exit(int pidfd, int timeout_ms, struct diags *d)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int n;

	if (pidfd < 0)
		return 0; /* the reply's end (the daemon closing) is all we have */
	while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (n == 0)
		return diag_fail(d, -ETIMEDOUT, "the daemon said it stops but was still running after %d s",
				 timeout_ms / 1000);
	return n < 0 ? diag_errno(d, -errno, "waiting for the daemon to exit") : 0;
}

/* A line the daemon sent followers: how many events were missed (its
 * "missed"; 0 for a verdict event or anything else), and why in reason. */
static unsigned long long missed_of(const char *line, char *reason, size_t len)
{
	json_t *o, *m, *why;
	unsigned long long n = 0;

	reason[0] = '\0';
	if (!strstr(line, "\"missed\"")) /* most lines are verdict events: not parsed for nothing */
		return 0;
	o = json_loads(line, JSON_DECODE_ANY, NULL);
	if (json_is_object(o) && json_is_integer(m = json_object_get(o, "missed")) && json_integer_value(m) > 0) {
		n = (unsigned long long)json_integer_value(m);
		if (json_is_string(why = json_object_get(o, "reason")))
			snprintf(reason, len, "%s", json_string_value(why));
	}
	json_decref(o);
	return n;
}

/* `log`: events line by line; a missed-events line is said on err too. */
static int follow(int fd, FILE *out, FILE *err, struct diags *d)
{
	_cleanup_fclose_ FILE *in = fdopen(dup(fd), "r");
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: the read ends */
	char *line = NULL;
	size_t cap = 0;
	unsigned long long missed = 0, n;
	char reason[256];
	bool first = true;

	if (!in)
		return diag_errno(d, -errno, "reading the daemon's events");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop_following && getline(&line, &cap, in) > 0) {
		if (first) {
			first = false;
			if (!strcmp(line, CTL_REPLY_OK))
				continue;
			fputs(strncmp(line, CTL_REPLY_ERROR, strlen(CTL_REPLY_ERROR)) ? line : "", err);
			while (getline(&line, &cap, in) > 0)
				fputs(line, err);
			free(line);
			return 1;
		}
		fputs(line, out);
		fflush(out);
		if ((n = missed_of(line, reason, sizeof(reason)))) {
			missed += n;
			fprintf(err, "nfbox log: %llu event%s missed: %s\n", n, n == 1 ? "" : "s",
				reason[0] ? reason : "the daemon gave no reason");
		}
	}
	free(line);
	if (missed)
		fprintf(err, "nfbox log: %llu event%s missed in all\n", missed, missed == 1 ? "" : "s");
	return missed ? 1 : 0;
}

/* Connected to the daemon, the request sent: the socket, or -errno. */
static int request(const char *socket_path, const struct ctl_request *req, int fd_pass, int *pidfd, struct diags *d)
{
	_cleanup_free_ char *line = ctl_request_format(req);
	_cleanup_close_ int fd = -1;
	int r;

	if (!line)
		return diag_errno(d, -ENOMEM, "building the request");
	if (strlen(line) > CTL_MAX_REQUEST)
		return diag_fail(d, -E2BIG, "the request is longer than %d bytes", CTL_MAX_REQUEST);
	if ((fd = connect_to(socket_path, d)) < 0)
		return fd;
	if (pidfd)
		*pidfd = peer_pidfd(fd);
	/* A daemon that turns a client away (busy, permission) answers and
	 * closes at once: read that answer even when sending failed. */
	if ((r = send_request(fd, line, strlen(line), fd_pass)) < 0 && r != -EPIPE && r != -ECONNRESET)
		return diag_errno(d, r, "sending the request to %s", socket_path);
	return TAKE_FD(fd);
}

int ctl_stream(const char *socket_path, const struct ctl_request *req, int (*fn)(const char *line, void *arg),
	       void *arg, FILE *err, struct diags *d)
{
	_cleanup_close_ int fd = request(socket_path, req, -1, NULL, d);
	_cleanup_fclose_ FILE *in = NULL;
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: the read ends */
	char *line = NULL;
	size_t cap = 0;
	int r = 0;

	if (fd < 0)
		return fd;
	if (!(in = fdopen(dup(fd), "r")))
		return diag_errno(d, -errno, "reading the daemon's reply");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (getline(&line, &cap, in) <= 0 || strcmp(line, CTL_REPLY_OK)) {
		if (line && strncmp(line, CTL_REPLY_ERROR, strlen(CTL_REPLY_ERROR)))
			fputs(line, err);
		while (getline(&line, &cap, in) > 0)
			fputs(line, err);
		free(line);
		return CTL_ERROR;
	}
	while (!r && !stop_following && getline(&line, &cap, in) > 0)
		r = fn(line, arg);
	free(line);
	return r;
}

int ctl_call(const char *socket_path, const struct ctl_request *req, int fd_pass, FILE *out, FILE *err, struct diags *d)
{
	_cleanup_close_ int pidfd = -1;
	_cleanup_close_ int fd = request(socket_path, req, fd_pass, req->verb == CTL_STOP ? &pidfd : NULL, d);
	int r;

	if (fd < 0)
		return fd;
	if (req->verb == CTL_LOG)
		return follow(fd, out, err, d);
	r = copy_reply(fd, out, err, d);
	if (r == 0 && req->verb == CTL_STOP)
		r = wait_exit(pidfd, 60000, d);
	return r;
}
