/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon: loads the policy into the engine, keeps nftables' conntrack
 * anchor, serves the control socket, follows verdict events, reloads on
 * request or SIGHUP, and on SIGTERM detaches everything.
 */
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/daemon_int.h"
#include "lib/log.h"
#include "nft/nft.h"

#define MAX_CLIENTS 64

static char *diags_to_text(const struct diags *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	diags_print(d, f, false);
	fclose(f);
	return out;
}

static void loaded_free(struct loaded *l)
{
	slot_map_free(&l->slots);
	plan_blob_free(&l->blob);
	plan_free(l->plan);
	policy_free(l->pol);
	diags_free(&l->diags);
	free(l->path);
	memset(l, 0, sizeof(*l));
}

/* Conntrack is on while table inet nfbox exists (its ct expression). It is
 * turned off for defrag: false, since conntrack reassembles fragments. */
static int conntrack_switch(struct daemon *dm, bool on, char *buf, size_t len)
{
	char err[256];
	int r = on ? nft_setup(err, sizeof(err)) : nft_teardown(err, sizeof(err));

	if (r < 0) {
		snprintf(buf, len, "%s table inet %s (conntrack %s): %s\n", on ? "cannot create" : "cannot delete",
			 NFT_TABLE_NAME, on ? "on" : "off", err);
		return r;
	}
	dm->conntrack = on;
	return 0;
}

/* Load, compile and enforce the policy at path. On any failure the running
 * policy stays in force; *text gets the diagnostics (caller frees). */
int daemon_reload(struct daemon *dm, const char *path, char **text)
{
	struct loaded nl = { 0 };
	char ebuf[4096] = "", *diag_text;
	FILE *f;
	size_t len = 0;
	int r;

	*text = NULL;
	diags_init(&nl.diags);
	nl.path = realpath(path, NULL);
	r = policy_load(path, &nl.diags, &nl.pol);
	diag_text = diags_to_text(&nl.diags);
	if (r == 0 && (r = plan_compile(nl.pol, &nl.plan)) < 0)
		snprintf(ebuf, sizeof(ebuf), "cannot compile the policy: %s\n", strerror(-r));
	if (r == 0 && (r = plan_encode(nl.plan, &nl.blob)) < 0)
		snprintf(ebuf, sizeof(ebuf), "cannot encode the policy: %s\n", strerror(-r));
	if (r == 0 && (r = slots_assign(&dm->slots, dm->e, nl.plan, &nl.slots)) < 0)
		snprintf(ebuf, sizeof(ebuf), "cannot assign counters: %s\n", strerror(-r));
	if (r == 0 && nl.pol->opt.defrag && dm->conntrack != 1 && (r = conntrack_switch(dm, true, ebuf, sizeof(ebuf))) < 0)
		strcat(ebuf, "\n");
	if (r == 0 && (r = engine_load(dm->e, nl.plan, &nl.blob, &nl.slots, ebuf, sizeof(ebuf) - 1)) < 0)
		strcat(ebuf, "\n");
	/* Off only once the policy that does not need it is in force. */
	if (r == 0 && !nl.pol->opt.defrag && dm->conntrack != 0)
		conntrack_switch(dm, false, ebuf + strlen(ebuf), sizeof(ebuf) - strlen(ebuf));
	f = open_memstream(text, &len);
	if (f) {
		if (diag_text)
			fputs(diag_text, f);
		if (r < 0)
			fprintf(f, "%s%s: not loaded; the policy in force is unchanged%s\n", ebuf, path,
				dm->cur.pol ? "" : " (none)");
		else
			fprintf(f, "%sgeneration %llu: %s: %u rules enforced\n", ebuf,
				(unsigned long long)dm->e->generation, path, nl.pol->nrules);
	}
	/* Captures follow the policy in force; while the old one is alive. */
	if (r == 0)
		daemon_captures_apply(dm, nl.pol, f);
	if (f)
		fclose(f);
	free(diag_text);
	if (r < 0) {
		if (nl.plan)
			slots_abort(&dm->slots, &dm->cur.slots, dm->cur.plan);
		loaded_free(&nl);
		dm->reloads_failed++;
		return r;
	}
	slots_commit(&dm->slots, &nl.slots, nl.plan);
	loaded_free(&dm->cur);
	dm->cur = nl;
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	return 0;
}

/* ---- verdict events ---------------------------------------------------- */

static void event_json(struct daemon *dm, const struct nfb_event *ev, FILE *f)
{
	static const char *const hooks[] = { "input", "forward", "output" };
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], in[IF_NAMESIZE] = "", out[IF_NAMESIZE] = "";
	int af = ev->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6, hook;
	const char *rule = ev->rule == NFB_RULE_DEFAULT ? "(default)" : slots_rule_name(&dm->slots, ev->counter, &hook);
	struct timespec mono, real;
	double ts;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	ts = (double)real.tv_sec + real.tv_nsec / 1e9 -
	     ((double)mono.tv_sec + mono.tv_nsec / 1e9 - (double)ev->ts_ns / 1e9);
	inet_ntop(af, ev->saddr, src, sizeof(src));
	inet_ntop(af, ev->daddr, dst, sizeof(dst));
	if (ev->ifin)
		if_indextoname(ev->ifin, in);
	if (ev->ifout)
		if_indextoname(ev->ifout, out);
	fprintf(f,
		"{\"ts\":%.6f,\"hook\":\"%s\",\"family\":\"%s\",\"rule\":\"%s\",\"action\":\"%s\",\"proto\":%u,"
		"\"src\":\"%s\",\"dst\":\"%s\",\"sport\":%u,\"dport\":%u,\"len\":%u,\"in\":\"%s\",\"out\":\"%s\"}\n",
		ts, ev->hook < 3 ? hooks[ev->hook] : "?", ev->family == NFB_FAM_IPV4 ? "ipv4" : "ipv6",
		rule ? rule : "?", ev->action == NFB_ACT_ACCEPT ? "accept" : "drop", ev->proto, src, dst, ev->sport,
		ev->dport, ev->len, in, out);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct daemon *dm = ctx;
	char *line = NULL;
	size_t len = 0;
	FILE *f;

	if (size < sizeof(struct nfb_event))
		return 0;
	f = open_memstream(&line, &len);
	if (!f)
		return 0;
	event_json(dm, data, f);
	fclose(f);
	dm->events++;
	if (dm->logf) {
		fputs(line, dm->logf);
		fflush(dm->logf);
	}
	for (int i = 0; i < dm->nclients; i++)
		if (dm->clients[i].follow && write(dm->clients[i].fd, line, len) != (ssize_t)len)
			dm->clients[i].dead = true;
	free(line);
	return 0;
}

/* ---- control socket ----------------------------------------------------- */

static int listen_socket(const char *path, const char **why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		*why = "socket path too long";
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	strcpy(dir, path);
	mkdir(dirname(dir), 0700);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		*why = "another nfbox is already running on this control socket";
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 || listen(fd, 16) < 0) {
		int r = -errno;

		*why = "cannot create the control socket";
		close(fd);
		return r;
	}
	return fd;
}

static void client_drop(struct daemon *dm, int i)
{
	epoll_ctl(dm->epfd, EPOLL_CTL_DEL, dm->clients[i].fd, NULL);
	close(dm->clients[i].fd);
	dm->clients[i] = dm->clients[--dm->nclients];
}

static void client_accept(struct daemon *dm)
{
	int fd = accept4(dm->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN };

	if (fd < 0)
		return;
	if (dm->nclients == MAX_CLIENTS) {
		close(fd);
		return;
	}
	ev.data.fd = fd;
	epoll_ctl(dm->epfd, EPOLL_CTL_ADD, fd, &ev);
	dm->clients[dm->nclients++] = (struct client){ .fd = fd };
}

static void client_reply(struct client *c, const char *text)
{
	size_t len = strlen(text), off = 0;
	int fl = fcntl(c->fd, F_GETFL);

	/* Replies are written whole; the client reads until EOF. */
	fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
	while (off < len) {
		ssize_t w = write(c->fd, text + off, len - off);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	c->dead = true;
}

static void client_request(struct daemon *dm, struct client *c)
{
	char *text = NULL, *nl;
	ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);

	if (n <= 0) {
		c->dead = true;
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	nl = strchr(c->buf, '\n');
	if (!nl) {
		if (c->len == sizeof(c->buf) - 1)
			client_reply(c, "error\nrequest too long\n");
		return;
	}
	*nl = '\0';
	if (!strcmp(c->buf, "log")) {
		c->follow = true;
		return;
	}
	text = daemon_answer(dm, c->buf);
	client_reply(c, text ? text : "error\nout of memory\n");
	free(text);
}

/* ---- main loop ----------------------------------------------------------- */

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static bool on_signal(struct daemon *dm)
{
	struct signalfd_siginfo si;
	char *text = NULL;

	while (read(dm->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			int r = daemon_reload(dm, dm->opts->policy, &text);

			log_msg(r < 0 ? LOG_ERR : LOG_INFO, "reload on SIGHUP: %s", text ? text : "");
			free(text);
			continue;
		}
		log_info("signal %d: detaching and stopping", si.ssi_signo);
		return false;
	}
	return true;
}

static void loop(struct daemon *dm)
{
	struct epoll_event evs[16];

	for (;;) {
		int n = epoll_wait(dm->epfd, evs, 16, 1000);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == dm->sfd) {
				if (!on_signal(dm))
					return;
			} else if (fd == dm->lfd) {
				client_accept(dm);
			} else if (fd == dm->rbfd) {
				ring_buffer__consume(dm->rb);
			} else if (!daemon_captures_event(dm, fd)) {
				for (int c = 0; c < dm->nclients; c++)
					if (dm->clients[c].fd == fd)
						client_request(dm, &dm->clients[c]);
			}
		}
		for (int c = dm->nclients - 1; c >= 0; c--)
			if (dm->clients[c].dead)
				client_drop(dm, c);
		daemon_captures_tick(dm);
	}
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void shutdown_all(struct daemon *dm)
{
	char err[256];

	daemon_captures_stop_all(dm); /* files closed complete */
	engine_destroy_pins(dm->e);
	if (nft_teardown(err, sizeof(err)) < 0)
		log_warn("removing table inet %s: %s", NFT_TABLE_NAME, err);
	unlink(dm->opts->socket);
}

static int start(struct daemon *dm, const char **why)
{
	char *text = NULL;
	int r;

	if ((dm->lfd = listen_socket(dm->opts->socket, why)) < 0)
		return dm->lfd;
	if (dm->opts->fresh) {
		struct engine *old;

		if (engine_open(dm->opts->pin_dir, &old, why) == 0) {
			engine_destroy_pins(old);
			engine_close(old);
		}
	}
	if ((r = engine_open(dm->opts->pin_dir, &dm->e, why)) < 0)
		return r;
	dm->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dm->epfd < 0) {
		*why = "epoll";
		return -errno;
	}
	if (dm->e->adopted)
		log_info("adopted the enforcing state pinned in %s (generation %u)", dm->opts->pin_dir, dm->e->active_gen);
	r = daemon_reload(dm, dm->opts->policy, &text);
	if (text)
		fputs(text, stderr);
	free(text);
	if (r < 0) {
		*why = "the policy was not loaded";
		return r;
	}
	dm->rb = ring_buffer__new(dm->e->map_fd[EM_EVENTS], on_event, dm, NULL);
	if (!dm->rb) {
		*why = "cannot open the verdict event ring buffer";
		return -errno;
	}
	dm->rbfd = ring_buffer__epoll_fd(dm->rb);
	if (epoll_add(dm->epfd, dm->sfd) < 0 || epoll_add(dm->epfd, dm->lfd) < 0 ||
	    epoll_add(dm->epfd, dm->rbfd) < 0) {
		*why = "epoll";
		return -errno;
	}
	return 0;
}

int daemon_run(const struct daemon_opts *o)
{
	struct daemon dm = { .opts = o, .lfd = -1, .sfd = -1, .epfd = -1, .conntrack = -1 };
	const char *why = "";
	int r;

	dm.started = time(NULL);
	if (o->log)
		dm.logf = strcmp(o->log, "-") ? fopen(o->log, "ae") : stdout;
	if (o->log && !dm.logf) {
		log_err("cannot open log file %s: %s", o->log, strerror(errno));
		return 1;
	}
	if (slots_init(&dm.slots) < 0 || (dm.sfd = setup_signals()) < 0) {
		log_err("out of memory");
		return 1;
	}
	r = start(&dm, &why);
	if (r < 0) {
		log_err("%s: %s", why, strerror(-r));
		if (dm.e && !dm.e->adopted && !dm.cur.pol)
			engine_destroy_pins(dm.e); /* nothing was enforced: leave nothing behind */
		if (dm.lfd >= 0)
			unlink(o->socket);
	} else {
		printf("ready\n");
		fflush(stdout);
		loop(&dm);
		shutdown_all(&dm);
	}
	daemon_captures_stop_all(&dm);
	if (dm.epfd >= 0)
		close(dm.epfd);
	if (dm.rb)
		ring_buffer__free(dm.rb);
	for (int i = 0; i < dm.nclients; i++)
		close(dm.clients[i].fd);
	engine_close(dm.e);
	loaded_free(&dm.cur);
	slots_free(&dm.slots);
	if (dm.logf && dm.logf != stdout)
		fclose(dm.logf);
	return r < 0 ? 1 : 0;
}
