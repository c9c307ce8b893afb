/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control socket: requests in (control/proto.h), answers out, and no
 * client can stall the daemon. Replies are written without blocking from a
 * buffer per client (bounded); a client has CLIENT_REQUEST_MS from its
 * connect to send its whole request line (however steadily its bytes come:
 * half a request holds no slot for long) and CLIENT_WRITE_SECS to take each
 * part of its reply; when every slot is taken a new client is told so at
 * once. Who may ask what comes
 * from the peer's credentials (SO_PEERCRED): root anything, members of the
 * socket group (nfbox run --socket-group) status, stats, metrics, log, set
 * list and the live trace (which shows packets' addresses as log does).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/clients.h"
#include "daemon/daemon_int.h"
#include "daemon/events.h"
#include "daemon/livetrace.h"
#include "daemon/reload.h"
#include "daemon/report.h"
#include "policy/diff/diff.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "lib/plant.h"
#include "system/files.h"

#define DAEMON_MAX_CLIENTS 64

struct client {
	struct handler h;
	bool follow;  /* `nfbox log`: receives verdict events */
	bool tracing; /* `nfbox trace --live`: receives its packets (livetrace.c) */
	bool closing; /* the reply is queued: close once it is written */
	bool dead;
	bool root;	 /* may do anything; else status, stats and log */
	bool want_write; /* EPOLLOUT is watched */
	bool waiting;	 /* its reload runs in a thread: answered when it is done */
	uint64_t serial; /* which connection this is (a freed client's memory is reused) */
	uid_t uid;
	int fd_passed;	  /* a file sent with the request (SCM_RIGHTS), or -1 */
	int64_t accepted; /* CLOCK_MONOTONIC ms: the request line is due CLIENT_REQUEST_MS after */
	time_t since;	  /* accepted, or the last progress writing */
	uint64_t missed;  /* events a follower could not take */
	size_t len;
	char buf[CTL_MAX_REQUEST + 1];
	char *out; /* queued output: out[out_off .. out_len) */
	size_t out_len, out_off, out_cap;
};

/* The control socket's state (the daemon's dm->clients). */
struct clients {
	struct handler listener;
	struct client *v[DAEMON_MAX_CLIENTS];
	int n;
	gid_t socket_gid; /* --socket-group, (gid_t)-1 if none */
};

#define CLIENT_REQUEST_MS   2000
#define CLIENT_WRITE_SECS   30
#define CLIENT_MAX_REPLY    (64u << 20) /* a reply larger than this is an error */
#define CLIENT_FOLLOW_BYTES (1u << 20)	/* events queued for one `nfbox log` */
/* Shares of the DAEMON_MAX_CLIENTS slots, so that no client class can lock
 * out another: slots only root may take (its reloads, bans and stops
 * always get in), the connections one other uid may hold, and the log
 * followers of one uid (root's too: a runaway monitoring script). */
#define CLIENT_ROOT_SLOTS     16
#define CLIENT_PER_UID	      16
#define CLIENT_FOLLOW_PER_UID 8
_Static_assert(CLIENT_ROOT_SLOTS + CLIENT_PER_UID <= DAEMON_MAX_CLIENTS && CLIENT_FOLLOW_PER_UID < CLIENT_ROOT_SLOTS,
	       "root keeps slots beyond any one other uid's share and its own followers");

/* ---- output ---- */

static void want_write(struct daemon *dm, struct client *c, bool on)
{
	if (c->want_write != on && loop_want_write(&dm->loop, &c->h, on) == 0)
		c->want_write = on;
}

static size_t pending(const struct client *c)
{
	return c->out_len - c->out_off;
}

/* Connections (or, follow_only, log followers) uid holds now. */
static int held_by(const struct daemon *dm, uid_t uid, bool follow_only)
{
	int n = 0;

	for (int i = 0; i < dm->clients->n; i++)
		n += dm->clients->v[i]->uid == uid && !dm->clients->v[i]->dead &&
		     (!follow_only || dm->clients->v[i]->follow);
	return n;
}

/* Append to the client's output; false when it does not fit its bound. */
static bool queue(struct client *c, const char *s, size_t len, size_t bound)
{
	char *nb;

	if (pending(c) + len > bound)
		return false;
	if (c->out_off && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + len > c->out_cap) {
		size_t cap = (c->out_len + len) * 2;

		if (!(nb = realloc(c->out, cap)))
			return false;
		c->out = nb;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out_len += len;
	return true;
}

static void queue_missed(struct client *c)
{
	char line[256];
	size_t n = events_missed_line(line, sizeof(line), c->missed, "this client read too slowly");

	if (n && queue(c, line, n, CLIENT_FOLLOW_BYTES * 2))
		c->missed = 0;
}

/* Write what the socket takes now. */
static void flush(struct daemon *dm, struct client *c)
{
	while (pending(c)) {
		ssize_t w = send(c->h.fd, c->out + c->out_off, pending(c), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			c->dead = true;
			return;
		}
		c->out_off += (size_t)w;
		c->since = time(NULL);
	}
	if (!pending(c) && c->missed)
		queue_missed(c);
	if (!pending(c) && c->closing)
		c->dead = true;
	want_write(dm, c, pending(c) != 0);
}

/* The whole reply, then the connection closes. */
static void reply(struct daemon *dm, struct client *c, const char *text, size_t len)
{
	static const char too_big[] = CTL_REPLY_ERROR "the reply is larger than the daemon sends to one client\n";

	c->closing = true;
	c->since = time(NULL);
	if (!queue(c, text, len, CLIENT_MAX_REPLY))
		queue(c, too_big, sizeof(too_big) - 1, CLIENT_MAX_REPLY);
	flush(dm, c);
}

static void reply_str(struct daemon *dm, struct client *c, const char *text)
{
	reply(dm, c, text, strlen(text));
}

static void clients_broadcast(void *arg, const char *line, size_t len)
{
	struct daemon *dm = arg;

	for (int i = 0; i < dm->clients->n; i++) {
		struct client *c = dm->clients->v[i];

		if (!c->follow || c->dead)
			continue;
		if (c->missed || !queue(c, line, len, CLIENT_FOLLOW_BYTES))
			c->missed++; /* told when it has caught up */
		else
			flush(dm, c);
	}
}

/* ---- the requests ---- */

/* A client whose reload runs: who it is, what it asked. */
struct reload_wait {
	struct client *c;
	uint64_t serial;
	unsigned confirm;
	uid_t uid;
	char path[];
};

static struct client *client_alive(struct daemon *dm, struct client *c, uint64_t serial)
{
	for (int i = 0; i < dm->clients->n; i++)
		if (dm->clients->v[i] == c && c->serial == serial && !c->dead)
			return c;
	return NULL; /* it went away meanwhile */
}

/* The reply to a reload of path that ended with r (its messages in d);
 * invalid: the policy file was what failed. */
static void reload_reply(struct daemon *dm, FILE *f, const struct diags *d, const char *path, int r, unsigned confirm,
			 bool invalid)
{
	fputs(r == 0 ? CTL_REPLY_OK : invalid ? CTL_REPLY_INVALID : CTL_REPLY_ERROR, f);
	diags_print(d, f, false);
	daemon_reload_summary(dm, path, r, f);
	if (r == 0 && confirm)
		fprintf(f, "unless 'nfbox confirm' comes within %u s, the last confirmed policy comes back by itself\n",
			confirm);
}

static void reload_answered(struct daemon *dm, void *arg, int r, struct diags *d)
{
	struct reload_wait *w = arg;
	struct client *c = client_alive(dm, w->c, w->serial);
	_cleanup_free_ char *text = diags_to_text(d), *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (f)
		reload_reply(dm, f, d, w->path, r, w->confirm, dm->policy_fault);
	if (c) {
		c->waiting = false;
		if (!f || fclose(f) != 0)
			reply_str(dm, c, CTL_REPLY_ERROR "out of memory\n");
		else
			reply(dm, c, out, len);
		f = NULL;
	}
	if (f)
		fclose(f);
	/* The daemon's log says what every reload did, whoever asked. */
	log_msg(r < 0 ? LOG_ERR : LOG_INFO, "reload (control socket, uid %u): %s", (unsigned)w->uid, text ? text : "");
	free(w);
}

/* Starts the reload (answered by reload_answered once it is done): true;
 * false when the answer is in f already (refused, or it could not start). */
static bool answer_reload(struct daemon *dm, struct client *c, const struct ctl_request *req, FILE *f)
{
	const char *path = req->policy ? req->policy : dm->policy_path;
	struct reload_wait *w;
	struct diags d;
	int r;

	if (dm->reload_job) {
		fputs(CTL_REPLY_ERROR "another reload is in progress; try again once it is done (nfbox status shows "
				      "the policy in force)\n",
		      f);
		return false;
	}
	if (!(w = calloc(1, sizeof(*w) + strlen(path) + 1))) {
		fputs(CTL_REPLY_ERROR "out of memory\n", f);
		return false;
	}
	*w = (struct reload_wait){ .c = c, .serial = c->serial, .confirm = req->confirm, .uid = c->uid };
	strcpy(w->path, path);
	diags_init(&d);
	if ((r = daemon_reload_start(dm,
				     &(struct reload_req){ .path = path,
							   .fd = req->policy ? c->fd_passed : -1,
							   .confirm = req->confirm,
							   .why = RELOAD_ASKED },
				     reload_answered, w)) < 0) {
		diag_errno(&d, r, "cannot start the reload");
		reload_reply(dm, f, &d, path, r, req->confirm, false);
		diags_free(&d);
		free(w);
		return false;
	}
	diags_free(&d);
	c->waiting = true;
	return true;
}

/* Rules in force on a hook that p no longer has there, and their last hit:
 * what the change would stop matching (an operator removing a rule thought
 * unused learns that it is not). A line each to f, or (f NULL) an object
 * each into j: {"hook", "rule", "last_hit" (seconds since the epoch), "text"}. */
static long long row_hit(const struct stats_rows *rows, const char *hook, const char *rule)
{
	for (uint32_t i = 0; i < rows->n; i++)
		if (!rows->v[i].is_default && !strcmp(rows->v[i].hook, hook) && !strcmp(rows->v[i].rule, rule))
			return rows->v[i].last_hit_ms;
	return 0;
}

static void removed_hits(struct daemon *dm, const struct policy *p, FILE *f, struct json *j)
{
	const struct policy *cur = dm->cur.pol;
	struct stats_rows rows = { 0 };

	daemon_rows(dm, &rows); /* the last hits as of now */
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		const char *hn = policy_hook_name((enum policy_hook)h);

		for (uint32_t i = 0; i < cur->nrules; i++) {
			const struct rule *r = &cur->rules[i];
			long long last;
			bool kept = false;
			char age[32], text[512];

			if (!(r->hooks & (1u << h)) || r->implicit)
				continue;
			for (uint32_t k = 0; k < p->nrules && !kept; k++)
				kept = (p->rules[k].hooks & (1u << h)) && !strcmp(p->rules[k].name, r->name);
			if (kept || !(last = row_hit(&rows, hn, r->name)))
				continue;
			snprintf(text, sizeof(text), "warning: rule %s %s, which this change removes, was hit %s", hn,
				 r->name, rep_ago(last, age, sizeof(age)));
			if (f) {
				fprintf(f, "%s\n", text);
				continue;
			}
			json_object_begin(j);
			json_kv_str(j, "hook", hn);
			json_kv_str(j, "rule", r->name);
			json_key(j, "last_hit"); /* seconds, as stats --json says it */
			json_fixed(j, (double)last / 1000.0, 3);
			json_kv_str(j, "text", text);
			json_object_end(j);
		}
	}
	free(rows.v);
}

struct hits_arg {
	struct daemon *dm;
	const struct policy *p;
};

static void hits_json(struct json *j, void *arg)
{
	const struct hits_arg *h = arg;

	removed_hits(h->dm, h->p, NULL, j);
}

/* What a reload of the file would change, against the policy in force:
 * "ok", then one line per difference (policy/diff/diff.h), or with json
 * the document of diff --json (also after "invalid"). */
static void answer_diff(struct daemon *dm, struct client *c, const struct ctl_request *req, FILE *f)
{
	const char *path = req->policy ? req->policy : dm->policy_path;
	struct policy *p = NULL;
	struct diags d;

	diags_init(&d);
	if (!dm->cur.pol)
		diag_fail(&d, -ENOENT, "no policy is in force to compare with");
	else
		daemon_load_only(dm, path, req->policy ? c->fd_passed : -1, &d, &p); /* warnings are validate's */
	fputs(p ? CTL_REPLY_OK : dm->cur.pol ? CTL_REPLY_INVALID : CTL_REPLY_ERROR, f);
	if (req->json && dm->cur.pol) {
		policy_diff_doc(dm->cur.pol, p, &d, hits_json, &(struct hits_arg){ dm, p }, f);
	} else if (p) {
		policy_diff(dm->cur.pol, p, f);
		removed_hits(dm, p, f, NULL);
	} else
		diags_print(&d, f, false);
	policy_free(p);
	diags_free(&d);
}

/* The loop ends after this round; shutdown_all() then keeps or detaches. */
static void answer_stop(struct daemon *dm, struct client *c, const struct ctl_request *req)
{
	bool keep = req->keep && dm->pin_dir[0];

	if (req->keep && !keep)
		reply_str(dm, c,
			  CTL_REPLY_OK "stopping; --no-pin: nothing is pinned, so enforcement ends with the daemon\n");
	else if (keep)
		reply_str(dm, c, CTL_REPLY_OK "stopping; the policy stays enforced for the next nfbox run to adopt\n");
	else
		reply_str(dm, c, CTL_REPLY_OK "stopping; detaching the policy: nothing will be enforced\n");
	log_info("stop requested (control socket, uid %u)%s", (unsigned)c->uid,
		 keep ? ": keeping the policy enforced for the next daemon" : "");
	dm->stop = true;
	dm->keep = keep;
}

static int answer_report(struct daemon *dm, const struct ctl_request *req, FILE *f)
{
	struct rep *t;
	int r;

	if (req->verb == CTL_METRICS) {
		fputs(CTL_REPLY_OK, f);
		return daemon_metrics(dm, f);
	}
	if (req->since && !req->unused) {
		fputs(CTL_REPLY_ERROR "since= goes with unused\n", f);
		return 0;
	}
	t = req->verb == CTL_STATUS ? report_status(dm) : report_stats(dm, req->zero);
	if ((r = rep_failed(t)) == 0) {
		fputs(CTL_REPLY_OK, f);
		if (req->unused)
			report_unused(t, f, req->json, req->since);
		else if (req->json)
			rep_write_json(t, f);
		else
			rep_write_text(t, f);
	}
	rep_free(t);
	return r;
}

/* status, stats, metrics, log, set-list and trace are for readers; the rest (and stats zero) needs root.
 * A trace shows what log shows (packets' addresses and the rules that
 * judged them) and changes no verdict: the readers of log may have it. */
static bool allowed(const struct client *c, const struct ctl_request *req)
{
	enum ctl_verb v = req->verb;

	return c->root || v == CTL_STATUS || (v == CTL_STATS && !req->zero) || v == CTL_LOG || v == CTL_METRICS ||
	       v == CTL_SET_LIST || v == CTL_TRACE;
}

/* ---- the live trace ---- */

static void trace_deliver(void *arg, const char *line, size_t len)
{
	struct client *c = arg;

	/* A tracer that reads too slowly misses packets; the end line says how many it was sent. */
	if (queue(c, line, len, CLIENT_FOLLOW_BYTES))
		flush(c->h.ctx, c);
}

static void trace_done(void *arg)
{
	struct client *c = arg;

	c->tracing = false;
	c->closing = true;
	flush(c->h.ctx, c);
}

static void answer_trace(struct daemon *dm, struct client *c, const struct ctl_request *req)
{
	struct livetrace_out out = { .deliver = trace_deliver, .done = trace_done, .arg = c };
	struct diags d;

	diags_init(&d);
	c->tracing = true;
	queue(c, CTL_REPLY_OK, strlen(CTL_REPLY_OK), CLIENT_FOLLOW_BYTES);
	if (livetrace_start(dm, req, &out, &d) < 0) {
		_cleanup_free_ char *text = diags_to_text(&d), *msg = NULL;
		int n = asprintf(&msg, CTL_REPLY_ERROR "%s", text ? text : "the live trace could not start\n");

		c->tracing = false;
		c->out_len = c->out_off = 0; /* not "ok" after all */
		if (n > 0)
			reply(dm, c, msg, (size_t)n);
		else
			reply_str(dm, c, CTL_REPLY_ERROR "out of memory\n");
	} else {
		c->since = time(NULL);
		flush(dm, c);
	}
	diags_free(&d);
}

static void answer(struct daemon *dm, struct client *c, const struct ctl_request *req)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *f;
	int r = 0;

	if (!allowed(c, req)) {
		reply_str(dm, c,
			  CTL_REPLY_ERROR "permission denied: only root may do that; the socket group may use status, "
					  "stats, metrics, log and set list\n");
		return;
	}
	if (req->verb == CTL_STOP) {
		answer_stop(dm, c, req);
		return;
	}
	if (req->verb == CTL_TRACE) {
		answer_trace(dm, c, req);
		return;
	}
	if (req->verb == CTL_LOG) {
		if (held_by(dm, c->uid, true) >= CLIENT_FOLLOW_PER_UID) {
			char why[160];

			snprintf(why, sizeof(why),
				 CTL_REPLY_ERROR
				 "busy: uid %u already follows the log %d times (the limit); stop one of them\n",
				 (unsigned)c->uid, CLIENT_FOLLOW_PER_UID);
			reply_str(dm, c, why);
			return;
		}
		c->follow = true;
		c->since = time(NULL);
		queue(c, CTL_REPLY_OK, strlen(CTL_REPLY_OK), CLIENT_FOLLOW_BYTES);
		flush(dm, c);
		return;
	}
	if (!(f = open_memstream(&out, &len))) {
		reply_str(dm, c, CTL_REPLY_ERROR "out of memory\n");
		return;
	}
	if (req->verb == CTL_RELOAD) {
		if (answer_reload(dm, c, req, f)) {
			fclose(f); /* answered when the reload is done */
			return;
		}
	} else if (req->verb == CTL_DIFF) {
		answer_diff(dm, c, req, f);
	} else if (!parts_answer(dm, &(struct part_caller){ .uid = c->uid, .root = c->root, .fd = c->fd_passed }, req,
				 f)) {
		r = answer_report(dm, req, f);
	}
	if (fclose(f) != 0 || r < 0)
		reply_str(dm, c, CTL_REPLY_ERROR "out of memory\n");
	else
		reply(dm, c, out, len);
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
		_cleanup_free_ char *msg = NULL;
		int n = asprintf(&msg, CTL_REPLY_ERROR "%s", text ? text : "bad request\n");

		if (n > 0)
			reply(dm, c, msg, (size_t)n);
		else
			reply_str(dm, c, CTL_REPLY_ERROR "bad request\n");
	}
	diags_free(&d);
}

/* ---- reading ---- */

/* One read; an fd sent with the request (SCM_RIGHTS) is kept, one only. */
static ssize_t read_some(struct client *c)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = c->buf + c->len, .iov_len = sizeof(c->buf) - 1 - c->len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(c->h.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; cm; cm = CMSG_NXTHDR(&msg, cm)) {
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
		if (c->fd_passed < 0)
			c->fd_passed = fd;
		else
			close(fd);
	}
	return n;
}

static void on_client(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct client *c = (struct client *)h; /* h is the first member */
	ssize_t n;
	char *nl;

	if (events & EPOLLOUT)
		flush(dm, c);
	if (c->dead || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	if (c->follow || c->tracing || c->closing) {
		char junk[256];

		/* Nothing more is read; EOF means the client left. */
		if (recv(c->h.fd, junk, sizeof(junk), MSG_DONTWAIT) == 0)
			c->dead = true;
		return;
	}
	n = read_some(c);
	if (n <= 0) {
		c->dead = n == 0 || (errno != EAGAIN && errno != EINTR);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if ((nl = memchr(c->buf, '\n', c->len)))
		answer_line(dm, c, (size_t)(nl - c->buf));
	else if (c->len == sizeof(c->buf) - 1)
		reply_str(dm, c, CTL_REPLY_ERROR "request too long\n");
}

/* ---- who connects ---- */

static bool in_group(int fd, gid_t group, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->gid == group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == group)
			return true;
	return false;
}

/* Root may do anything, the socket group read; anyone else nothing. */
static bool credentials(struct daemon *dm, struct client *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(c->h.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	c->uid = cred.uid;
	c->root = cred.uid == 0;
	return c->root || (dm->clients->socket_gid != (gid_t)-1 && in_group(c->h.fd, dm->clients->socket_gid, &cred));
}

static void turn_away(int fd, const char *why)
{
	send(fd, why, strlen(why), MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

/* Why a client with these credentials gets no slot now, or NULL. Root may
 * take every slot; anyone else none of the last CLIENT_ROOT_SLOTS, and no
 * more than CLIENT_PER_UID at once. */
static const char *no_slot(const struct daemon *dm, const struct client *c, char *buf, size_t len)
{
	if (dm->clients->n == DAEMON_MAX_CLIENTS)
		return CTL_REPLY_ERROR "busy: every control connection is taken; try again in a few seconds\n";
	if (c->root)
		return NULL;
	if (dm->clients->n >= DAEMON_MAX_CLIENTS - CLIENT_ROOT_SLOTS)
		return CTL_REPLY_ERROR
			"busy: the control connections left are kept for root; try again in a few seconds\n";
	if (held_by(dm, c->uid, false) >= CLIENT_PER_UID) {
		snprintf(buf, len, CTL_REPLY_ERROR "busy: uid %u holds %d control connections, its share; close one\n",
			 (unsigned)c->uid, CLIENT_PER_UID);
		return buf;
	}
	return NULL;
}

static void on_listener(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	static uint64_t serial;
	const char *why;
	char buf[160];
	struct client *c;

	(void)h;
	(void)events;
	if (fd < 0)
		return;
	if (!(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return;
	}
	*c = (struct client){
		.h = { .fd = fd, .fn = on_client, .ctx = dm },
		.fd_passed = -1,
		.accepted = clock_ms(CLOCK_MONOTONIC),
		.since = time(NULL),
		.serial = ++serial,
	};
	/* Who it is first: its share of the slots depends on it. */
	if (!credentials(dm, c))
		why = CTL_REPLY_ERROR "permission denied: only root and the socket group may use the control socket\n";
	else
		why = no_slot(dm, c, buf, sizeof(buf));
	if (why) {
		turn_away(fd, why);
		free(c);
		return;
	}
	if (loop_watch(&dm->loop, &c->h) < 0) {
		close(fd);
		free(c);
		return;
	}
	dm->clients->v[dm->clients->n++] = c;
}

/* ---- bookkeeping ---- */

static void client_drop(struct daemon *dm, int i)
{
	struct client *c = dm->clients->v[i];

	livetrace_leave(dm, c);
	loop_unwatch(&dm->loop, &c->h);
	close(c->h.fd);
	if (c->fd_passed >= 0)
		close(c->fd_passed);
	free(c->out);
	free(c);
	dm->clients->v[i] = dm->clients->v[--dm->clients->n];
}

void clients_reap(struct daemon *dm)
{
	for (int i = dm->clients->n - 1; i >= 0; i--)
		if (dm->clients->v[i]->dead)
			client_drop(dm, i);
}

/* Still reading its request line (not answered, not following). */
static bool requesting(const struct client *c)
{
	return !c->follow && !c->tracing && !c->closing && !c->waiting;
}

/* After each round of the loop, and at the next request deadline: a client
 * whose request line is not in CLIENT_REQUEST_MS after its connect, or
 * that does not take what it is sent, loses its slot. */
void clients_tick(struct daemon *dm)
{
	int64_t now_ms = clock_ms(CLOCK_MONOTONIC);
	time_t now = time(NULL);

	livetrace_tick(dm);
	for (int i = 0; i < dm->clients->n; i++) {
		struct client *c = dm->clients->v[i];

		if (requesting(c) && now_ms - c->accepted >= CLIENT_REQUEST_MS && !planted("ctl-no-request-deadline"))
			reply_str(dm, c,
				  CTL_REPLY_ERROR "request timed out: send one line within 2 seconds of the connect\n");
		else if (pending(c) && now - c->since >= CLIENT_WRITE_SECS)
			c->dead = true;
	}
	clients_reap(dm);
}

int clients_next_deadline(const struct daemon *dm)
{
	int64_t now = clock_ms(CLOCK_MONOTONIC), first = INT64_MAX;

	for (int i = 0; dm->clients && i < dm->clients->n; i++)
		if (requesting(dm->clients->v[i]) && dm->clients->v[i]->accepted + CLIENT_REQUEST_MS < first)
			first = dm->clients->v[i]->accepted + CLIENT_REQUEST_MS;
	int trace = livetrace_next_deadline(dm), next = first == INT64_MAX ? -1 : first <= now ? 0 : (int)(first - now);

	return trace >= 0 && (next < 0 || trace < next) ? trace : next;
}

void clients_close_all(struct daemon *dm)
{
	if (!dm->clients)
		return;
	while (dm->clients->n)
		client_drop(dm, dm->clients->n - 1);
	if (dm->clients->listener.fd >= 0) {
		loop_unwatch(&dm->loop, &dm->clients->listener);
		close(dm->clients->listener.fd);
		dm->clients->listener.fd = -1;
	}
	free(dm->clients);
	dm->clients = NULL;
}

bool clients_listening(const struct daemon *dm)
{
	return dm->clients && dm->clients->listener.fd >= 0;
}

/* ---- the socket ---- */

/* The socket's directory: made if missing (root, 0755), and trusted only
 * if nobody but root could put another socket there. */
static int socket_dir(const char *path, struct diags *d)
{
	char buf[PATH_MAX], why[512];
	const char *dir;

	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return diag_errno(d, -errno, "cannot create the control socket's directory %s", dir);
	if (files_check_dir(dir, why, sizeof(why)) < 0)
		return diag_fail(d, -EPERM, "the control socket's %s", why);
	return 0;
}

static int socket_group(struct daemon *dm, const char *path, struct diags *d)
{
	struct group *g;

	dm->clients->socket_gid = (gid_t)-1;
	if (!dm->opts->socket_group)
		return chmod(path, 0600) < 0 ? diag_errno(d, -errno, "chmod %s", path) : 0;
	if (!(g = getgrnam(dm->opts->socket_group)))
		return diag_fail(d, -ENOENT, "no group '%s' for --socket-group", dm->opts->socket_group);
	dm->clients->socket_gid = g->gr_gid;
	if (chown(path, 0, g->gr_gid) < 0 || chmod(path, 0660) < 0)
		return diag_errno(d, -errno, "cannot give %s to group %s", path, g->gr_name);
	return 0;
}

int clients_listen(struct daemon *dm, struct diags *d)
{
	const char *path = dm->socket_path;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	mode_t old;
	int r;

	if (!(dm->clients = calloc(1, sizeof(*dm->clients))))
		return diag_errno(d, -ENOMEM, "control socket");
	dm->clients->listener.fd = -1;
	dm->clients->socket_gid = (gid_t)-1;
	eventlog_follow(dm->events, clients_broadcast, dm);
	if (strlen(path) >= sizeof(sa.sun_path))
		return diag_fail(d, -ENAMETOOLONG, "control socket path %s is too long", path);
	strcpy(sa.sun_path, path);
	if ((r = socket_dir(path, d)) < 0)
		return r;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return diag_errno(d, -errno, "cannot create the control socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return diag_fail(d, -EADDRINUSE, "another nfbox is already running on the control socket %s", path);
	unlink(path);
	old = umask(0177); /* no moment with a socket others could connect to */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 64) < 0)
		return diag_errno(d, -errno, "cannot create the control socket %s", path);
	if ((r = socket_group(dm, path, d)) < 0)
		return r;
	dm->clients->listener = (struct handler){ .fd = TAKE_FD(fd), .fn = on_listener, .ctx = dm };
	return loop_watch(&dm->loop, &dm->clients->listener) < 0 ? diag_errno(d, -errno, "epoll") : 0;
}
