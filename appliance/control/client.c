/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "control/client.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/cleanup.h"

static int connect_to(const char *path, struct diags *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return diag_fail(d, -ENAMETOOLONG, "socket path %s is too long", path);
	strcpy(sa.sun_path, path);
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

static int send_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t w = send(fd, s, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EPIPE;
		s += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The status line decides where the rest goes; it may come in pieces. */
static int copy_reply(int fd, FILE *out, FILE *err, struct diags *d)
{
	char buf[65536], head[8];
	size_t nhead = 0;
	int status = -1; /* 0 ok, 1 error, -1 not known yet */
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
				status = 1;
			else if (nhead == strlen(CTL_REPLY_ERROR) || head[nhead - 1] == '\n')
				return diag_fail(d, -EPROTO, "the daemon's reply does not start with ok or error");
		}
		fwrite(p, 1, (size_t)(n - (p - buf)), status ? err : out);
		fflush(status ? err : out);
	}
	if (status < 0)
		return diag_fail(d, -EPROTO, "the daemon closed the connection without a reply");
	return status;
}

int ctl_call(const char *socket_path, const struct ctl_request *req, FILE *out, FILE *err, struct diags *d)
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
	if ((r = send_all(fd, line, strlen(line))) < 0)
		return diag_errno(d, r, "sending the request to %s", socket_path);
	return copy_reply(fd, out, err, d);
}
