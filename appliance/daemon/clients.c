/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The control socket: requests in (control/proto.h), answers out. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/daemon_int.h"
#include "daemon/report.h"
#include "lib/cleanup.h"
#include "lib/log.h"

static void client_drop(struct daemon *dm, int i)
{
	struct client *c = dm->clients[i];

	daemon_unwatch(dm, &c->h);
	close(c->h.fd);
	free(c);
	dm->clients[i] = dm->clients[--dm->nclients];
}

void clients_reap(struct daemon *dm)
{
	for (int i = dm->nclients - 1; i >= 0; i--)
		if (dm->clients[i]->dead)
			client_drop(dm, i);
}

void clients_close_all(struct daemon *dm)
{
	while (dm->nclients)
		client_drop(dm, dm->nclients - 1);
	if (dm->listener.fd >= 0) {
		daemon_unwatch(dm, &dm->listener);
		close(dm->listener.fd);
		dm->listener.fd = -1;
	}
}

static bool send_all(struct client *c, const char *s, size_t len)
{
	while (len) {
		ssize_t w = send(c->h.fd, s, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		s += w;
		len -= (size_t)w;
	}
	return true;
}

void clients_broadcast(struct daemon *dm, const char *line, size_t len)
{
	for (int i = 0; i < dm->nclients; i++) {
		struct client *c = dm->clients[i];

		if (c->follow && !c->dead && send(c->h.fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len)
			c->dead = true;
	}
}

/* Replies are written whole, then the connection is closed: the client
 * reads until EOF. */
static void client_reply(struct client *c, const char *text, size_t len)
{
	int fl = fcntl(c->h.fd, F_GETFL);

	fcntl(c->h.fd, F_SETFL, fl & ~O_NONBLOCK);
	send_all(c, text, len);
	c->dead = true;
}

static void answer_reload(struct daemon *dm, const struct ctl_request *req, FILE *f)
{
	const char *path = req->policy ? req->policy : dm->opts->policy;
	_cleanup_free_ char *text = NULL;
	struct diags d;
	int r;

	diags_init(&d);
	r = daemon_reload(dm, path, &d);
	fputs(r < 0 ? CTL_REPLY_ERROR : CTL_REPLY_OK, f);
	diags_print(&d, f, false);
	daemon_reload_summary(dm, path, r, f);
	/* The daemon's log says what every reload did, whoever asked. */
	text = diags_to_text(&d);
	log_msg(r < 0 ? LOG_ERR : LOG_INFO, "reload (control socket): %s", text ? text : "");
	diags_free(&d);
}

static void answer_report(struct daemon *dm, const struct ctl_request *req, FILE *f)
{
	struct status_report st;
	struct stats_report sr;

	if (req->verb == CTL_STATUS) {
		if (report_status(dm, &st) == 0) {
			fputs(CTL_REPLY_OK, f);
			format_status(&st, f, req->json);
		} else {
			fputs(CTL_REPLY_ERROR "out of memory\n", f);
		}
		report_status_free(&st);
		return;
	}
	if (report_stats(dm, &sr) == 0) {
		fputs(CTL_REPLY_OK, f);
		format_stats(&sr, f, req->json);
	} else {
		fputs(CTL_REPLY_ERROR "out of memory\n", f);
	}
	report_stats_free(&sr);
}

static void answer(struct daemon *dm, struct client *c, const struct ctl_request *req)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *f;

	if (req->verb == CTL_LOG) {
		c->follow = send_all(c, CTL_REPLY_OK, strlen(CTL_REPLY_OK));
		c->dead = !c->follow;
		return;
	}
	if (!(f = open_memstream(&out, &len))) {
		client_reply(c, CTL_REPLY_ERROR "out of memory\n", strlen(CTL_REPLY_ERROR "out of memory\n"));
		return;
	}
	if (req->verb == CTL_RELOAD)
		answer_reload(dm, req, f);
	else
		answer_report(dm, req, f);
	fclose(f);
	client_reply(c, out, len);
}

static void answer_line(struct daemon *dm, struct client *c, size_t len)
{
	struct ctl_request req;
	struct diags d;

	diags_init(&d);
	if (ctl_request_parse(c->buf, len, &req, &d) == 0) {
		answer(dm, c, &req);
		ctl_request_free(&req);
	} else {
		_cleanup_free_ char *text = diags_to_text(&d);
		_cleanup_free_ char *reply = NULL;
		int n = asprintf(&reply, CTL_REPLY_ERROR "%s", text ? text : "bad request\n");

		if (n > 0)
			client_reply(c, reply, (size_t)n);
		c->dead = true;
	}
	diags_free(&d);
}

static void on_client(struct daemon *dm, struct handler *h, uint32_t events)
{
	struct client *c = (struct client *)h; /* h is the first member */
	ssize_t n;
	char *nl;

	if (c->follow) {
		c->dead = true; /* a follower has nothing more to say: it left */
		return;
	}
	n = read(c->h.fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	if (n <= 0) {
		c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if ((nl = memchr(c->buf, '\n', c->len))) {
		answer_line(dm, c, (size_t)(nl - c->buf));
		return;
	}
	if (c->len == sizeof(c->buf) - 1)
		client_reply(c, CTL_REPLY_ERROR "request too long\n", strlen(CTL_REPLY_ERROR "request too long\n"));
}

static void on_listener(struct daemon *dm, struct handler *h, uint32_t events)
{
	int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct client *c;

	if (fd < 0)
		return;
	if (dm->nclients == DAEMON_MAX_CLIENTS || !(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return;
	}
	c->h = (struct handler){ .fd = fd, .fn = on_client };
	if (daemon_watch(dm, &c->h) < 0) {
		close(fd);
		free(c);
		return;
	}
	dm->clients[dm->nclients++] = c;
}

int clients_listen(struct daemon *dm, struct diags *d)
{
	const char *path = dm->socket_path;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return diag_fail(d, -ENAMETOOLONG, "control socket path %s is too long", path);
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	mkdir(dirname(dir), 0700);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return diag_errno(d, -errno, "cannot create the control socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return diag_fail(d, -EADDRINUSE, "another nfbox is already running on the control socket %s", path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 || listen(fd, 16) < 0)
		return diag_errno(d, -errno, "cannot create the control socket %s", path);
	dm->listener = (struct handler){ .fd = TAKE_FD(fd), .fn = on_listener };
	return daemon_watch(dm, &dm->listener) < 0 ? diag_errno(d, -errno, "epoll") : 0;
}
