/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `nfbox run --metrics-listen ADDRESS:PORT`: the metrics of `nfbox metrics`
 * served over HTTP, for Prometheus to scrape, by libmicrohttpd. It runs in
 * the daemon's own loop (no thread): its epoll fd is one more source, and
 * each request is answered from the daemon's state as the control socket
 * answers (the text kept for a second: a client asking in a loop costs one
 * read of the counters a second). GET or HEAD /metrics only; anything else is 404 or 405. A few
 * connections at once, 4 from one address; a request's head must arrive
 * within 5 s of the connect, and a response not read is dropped after 10 s
 * idle: a client that holds connections open, idle or trickling its
 * headers, cannot starve the control socket or keep scrapers out for long.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "daemon/part.h"
#include "lib/plant.h"
#include "base/clock.h"
#include "base/log.h"

#define HTTPD_MAX_CONNECTIONS 16
#define HTTPD_IDLE_TIMEOUT_S  10
/* One client address holds at most this many: a scraper from another
 * address is not kept out by a client that holds connections idle. */
#define HTTPD_PER_ADDRESS 4
#define METRICS_TYPE	  "text/plain; version=0.0.4; charset=utf-8"
/* The idle timeout is reset by every byte: a client sending a header line
 * a second would hold its connection for ever. MHD has no deadline for a
 * request's head, so the tick closes what misses this one (a scraper
 * sends its few hundred bytes at once; this leaves room for two lost
 * segments). Each connection serves one request (Connection: close), so
 * counting from the connect bounds every request's head. */
#define HTTPD_HEAD_DEADLINE_MS 5000

/* A connection MHD holds, from its start to its end (notified). */
struct httpd_conn {
	struct MHD_Connection *c; /* NULL: a free slot */
	int fd;			  /* MHD's: shut down, never closed here */
	long long opened;	  /* CLOCK_MONOTONIC ms */
	bool head;		  /* the request's head arrived */
	bool cut;		  /* shut down at the deadline, MHD yet to reap it */
};

struct httpd {
	struct MHD_Daemon *mhd;
	struct handler h;
	struct daemon *dm;
	unsigned long served, refused;
	unsigned long head_timeouts;			/* connections cut at HTTPD_HEAD_DEADLINE_MS */
	struct httpd_conn conns[HTTPD_MAX_CONNECTIONS]; /* MHD holds no more */
	char *body;					/* the last metrics text, served again within HTTPD_CACHE_MS */
	size_t len;
	long long made; /* CLOCK_MONOTONIC ms */
};

/* Scrapes come every 15 s or so; a client asking in a loop gets the same
 * text for this long instead of a read of every counter each time. */
#define HTTPD_CACHE_MS 1000

/* One request a connection: a kept-alive one would wait for its next
 * request's head with no deadline of its own. MHD closes after an answer
 * queued at the handler's first call anyway; said here, it does not
 * depend on that. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;

	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *text, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	return queue(c, status, r);
}

/* MHD_OPTION_NOTIFY_CONNECTION: a slot for each connection, so the tick
 * can find those whose head is late. */
static void on_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode code)
{
	struct httpd *h = cls;
	struct httpd_conn *k = *ctx;
	const union MHD_ConnectionInfo *fd;

	if (code != MHD_CONNECTION_NOTIFY_STARTED) {
		if (k)
			*k = (struct httpd_conn){ 0 };
		return;
	}
	for (k = h->conns; k < h->conns + HTTPD_MAX_CONNECTIONS && k->c; k++)
		;
	fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (k == h->conns + HTTPD_MAX_CONNECTIONS) { /* MHD's limit is ours: never, but not unbounded if so */
		if (fd)
			shutdown(fd->connect_fd, SHUT_RDWR);
		return;
	}
	*k = (struct httpd_conn){ .c = c, .fd = fd ? fd->connect_fd : -1, .opened = clock_ms(CLOCK_MONOTONIC) };
	*ctx = k;
}

/* The request's head is in: the deadline no longer applies. */
static void head_arrived(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct httpd_conn *k = i ? i->socket_context : NULL;

	if (k)
		k->head = true;
}

/* Shut down, not closed: the fd is MHD's. It reads the end at its next
 * run and reaps the connection (on_connection frees the slot). */
static void cut_late(struct httpd *h)
{
	long long now = clock_ms(CLOCK_MONOTONIC);

	if (planted("httpd-no-deadline"))
		return;
	for (struct httpd_conn *k = h->conns; k < h->conns + HTTPD_MAX_CONNECTIONS; k++) {
		if (!k->c || k->head || k->cut || now - k->opened < HTTPD_HEAD_DEADLINE_MS)
			continue;
		if (k->fd >= 0)
			shutdown(k->fd, SHUT_RDWR);
		k->cut = true;
		h->head_timeouts++;
	}
}

/* The cached text, made again once older than HTTPD_CACHE_MS: NULL, or
 * what the client is told instead. */
static const char *fresh_text(struct httpd *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (h->body && clock_ms(CLOCK_MONOTONIC) - h->made < HTTPD_CACHE_MS)
		return NULL;
	if (!(f = open_memstream(&buf, &len)))
		return "out of memory\n";
	if (daemon_metrics(h->dm, f) < 0 || fclose(f) != 0) {
		free(buf);
		return "cannot read the counters\n";
	}
	free(h->body);
	h->body = buf;
	h->len = len;
	h->made = clock_ms(CLOCK_MONOTONIC);
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct httpd *h = cls;
	struct MHD_Response *r;
	const char *why;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	(void)state;
	head_arrived(c);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		h->refused++;
		*upload_size = 0; /* a body is not read */
		return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", "GET, HEAD");
	}
	if (strcmp(url, "/metrics")) {
		h->refused++;
		return respond(c, MHD_HTTP_NOT_FOUND, "nfbox serves /metrics only\n", NULL);
	}
	if ((why = fresh_text(h)))
		return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, why, NULL);
	/* copied: the cache may be replaced while MHD still sends this one */
	if (!(r = MHD_create_response_from_buffer(h->len, h->body, MHD_RESPMEM_MUST_COPY)))
		return respond(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", NULL);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_TYPE);
	ret = queue(c, MHD_HTTP_OK, r);
	h->served++;
	return ret;
}

static void on_ready(struct handler *h, uint32_t events)
{
	struct httpd *x = h->ctx;
	(void)h;
	(void)events;
	MHD_run(x->mhd);
}

/* "192.0.2.1:9470", "[2001:db8::1]:9470", ":9470" (every IPv4 and IPv6 address). */
static int parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
	const char *colon = strrchr(s, ':');
	char host[INET6_ADDRSTRLEN + 2];
	unsigned long port;
	char *end;
	size_t n;

	if (!colon)
		return -EINVAL;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || !port || port > 65535)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (!n || (host[0] == '[' && host[n - 1] == ']')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		if (n) {
			host[n - 1] = '\0';
			if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
				return -EINVAL;
		} else {
			a->sin6_addr = in6addr_any;
		}
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*v6 = true;
		return 0;
	}
	{
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		*v6 = false;
	}
	return 0;
}

static void httpd_close(void *self);

static int httpd_open(struct daemon *dm, void **self, struct diags *d)
{
	const char *listen = daemon_opts(dm)->metrics_listen;
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage ss;
	struct httpd *h;
	bool v6 = false;

	*self = NULL;
	if (!listen)
		return 0;
	if (parse_listen(listen, &ss, &v6) < 0)
		return diag_fail(d, -EINVAL,
				 "--metrics-listen %s: give ADDRESS:PORT (127.0.0.1:9470, [::1]:9470, or :9470 for "
				 "every address)",
				 listen);
	if (!(h = calloc(1, sizeof(*h))))
		return diag_errno(d, -ENOMEM, "--metrics-listen");
	h->dm = dm;
	h->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | (v6 ? MHD_USE_IPv6 | MHD_USE_DUAL_STACK : 0), 0, NULL, NULL, on_request, h,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)HTTPD_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_IDLE_TIMEOUT_S,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTPD_PER_ADDRESS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)(32 * 1024), MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->mhd || !(info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD))) {
		int e = errno ? errno : EADDRINUSE;

		if (h->mhd)
			MHD_stop_daemon(h->mhd);
		free(h);
		return diag_errno(d, -e, "--metrics-listen %s: cannot listen", listen);
	}
	h->h = (struct handler){ .fd = info->epoll_fd, .fn = on_ready, .ctx = h };
	if (loop_watch(daemon_loop(dm), &h->h) < 0) {
		int e = -errno;

		MHD_stop_daemon(h->mhd);
		free(h);
		return diag_errno(d, e, "--metrics-listen");
	}
	*self = h;
	log_info("serving metrics on http://%s/metrics", listen);
	return 0;
}

static void httpd_tick(void *self)
{
	struct httpd *h = self;

	if (!h)
		return;
	cut_late(h);
	MHD_run(h->mhd); /* idle connections time out, cut ones are reaped */
}

static void http_text(const struct rep *o, FILE *f)
{
	fprintf(f,
		"metrics:    http://%s/metrics: %llu served, %llu refused, %llu connections closed with no request's "
		"head within %llu s\n",
		rep_s(o, "listen"), (unsigned long long)rep_u(o, "served"), (unsigned long long)rep_u(o, "refused"),
		(unsigned long long)rep_u(o, "head_timeouts"), (unsigned long long)rep_u(o, "head_deadline_s"));
}

#define REQUESTS_HELP "Requests to --metrics-listen: served (GET or HEAD /metrics) or refused (404, 405)."
static const struct rep_metric m_served = { "nfbox_http_requests_total{result=\"served\"}", "counter", REQUESTS_HELP,
					    NULL };
static const struct rep_metric m_refused = { "nfbox_http_requests_total{result=\"refused\"}", "counter", REQUESTS_HELP,
					     NULL };
static const struct rep_metric m_head = { "nfbox_http_head_timeouts_total", "counter",
					  "Connections to --metrics-listen closed because no request's head (request "
					  "line and headers) arrived within the deadline after the connect.",
					  NULL };

static void httpd_status(void *self, struct rep *status)
{
	struct httpd *h = self;
	struct rep *o;

	if (!h) {
		rep_null(status, "metrics_http");
		return;
	}
	o = rep_object(status, "metrics_http");
	rep_text(o, http_text);
	rep_str(o, "listen", daemon_opts(h->dm)->metrics_listen);
	rep_metric(rep_uint(o, "served", h->served), &m_served);
	rep_metric(rep_uint(o, "refused", h->refused), &m_refused);
	rep_metric(rep_uint(o, "head_timeouts", h->head_timeouts), &m_head);
	rep_uint(o, "head_deadline_s", HTTPD_HEAD_DEADLINE_MS / 1000);
}

static void httpd_close(void *self)
{
	struct httpd *h = self;

	if (!h)
		return;
	loop_unwatch(daemon_loop(h->dm), &h->h);
	MHD_stop_daemon(h->mhd);
	free(h->body);
	free(h);
}

const struct part part_metrics = {
	.name = "metrics over HTTP",
	.open = httpd_open,
	.tick = httpd_tick,
	.status = httpd_status,
	.close = httpd_close,
};
