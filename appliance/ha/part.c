/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The policy's ha: section in the daemon: keepalived and conntrackd,
 * configured from the policy in force and supervised from the event loop.
 *
 * A load with ha: first prepares (ha_prepare: both programs installed,
 * the configurations written beside the ones in force and keepalived's
 * checked by `keepalived -t`); a failure there fails the load, so the
 * policy in force and its pair stay as they are. Once the policy is
 * enforced, ha_commit puts the new files in place and starts the daemons,
 * tells keepalived to read its file again (SIGHUP) or restarts conntrackd
 * (then asks the peer for the whole state, -n). Every file lives in one
 * directory beside the control socket, so two appliances of one host never
 * share one. The firewall is in force before the pair starts, and
 * keepalived stops before conntrackd: a node hands its addresses over only
 * with its state synchronised up to then.
 *
 * keepalived tells each change of state through a FIFO; on becoming master
 * the node commits what the peer sent (conntrackd -c), flushes its caches,
 * takes the kernel's table as its own and sends it to the peer in bulk; on
 * becoming backup it shortens the kernel's timers of what it held and asks
 * the new master for its state. Those commands run one at a time, in order,
 * never blocking the loop; each is logged with its time. Only the commit
 * stands between a new master and the flows it takes over, and it runs
 * first: with a few connections a few milliseconds after keepalived's
 * notice, about 7 us more for each connection the peer sent (conntrackd
 * writes them to the kernel one by one). A daemon that exits is started again (1 s, then
 * doubling up to 30 s; back to 1 s once it ran a minute); its output is
 * nfbox's log, a line at a time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/part.h"
#include "ha/pair.h"
#include "ha/config.h"
#include "ha/parse.h"
#include "netlink/addr.h"
#include "system/proc.h"
#include "base/clock.h"
#include "base/log.h"
#include "lib/plant.h"
#include "system/files.h"

#define STATS_EVERY 5	 /* seconds between conntrackd -s */
#define RETRY_MAX   30	 /* seconds: the longest wait before a restart */
#define STOP_MS	    5000 /* a daemon's time to stop before SIGKILL */
#define QUEUE_MAX   16
#define JOB_MAX	    30 /* seconds a conntrackd command may take before it is killed */

#define OF(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

struct dha_proc {
	const char *name;
	struct proc p;
	struct handler exit_h, out_h;
	unsigned long restarts;
	time_t started, retry_at;
	unsigned backoff;
	char last_exit[128]; /* "exit status 1" when it last ended, "" if never */
	pid_t lingering;     /* the process group it left behind, until it is gone */
	time_t exited;
};

/* A conntrackd client command: its output collected, done() called with
 * its wait status once it exited. */
struct dha_job {
	struct proc p;
	struct handler exit_h, out_h;
	time_t started;
	int64_t started_ms; /* CLOCK_MONOTONIC */
	char text[4096];
	struct proc_text out;
	void (*done)(struct daemon *dm, int status);
};

/* conntrackd's client commands, run in order. */
enum ha_cmd {
	CMD_COMMIT,
	CMD_FLUSH,
	CMD_RESYNC_KERNEL,
	CMD_BULK,
	CMD_SHORTEN,
	CMD_REQUEST
};
static const char *const cmd_args[][2] = {
	[CMD_COMMIT] = { "-c", "commit the peer's state to the kernel" },
	[CMD_FLUSH] = { "-f", "flush the caches" },
	[CMD_RESYNC_KERNEL] = { "-R", "take the kernel's table as this node's" },
	[CMD_BULK] = { "-B", "send it to the peer" },
	[CMD_SHORTEN] = { "-t", "shorten the kernel's timers of the state it held" },
	[CMD_REQUEST] = { "-n", "ask the peer for its whole state" },
};

struct dha;
/* The part's state: the pair's, from the first policy with ha:. */
struct ha_part {
	struct daemon *dm;
	struct dha *ha;
};
#define HA(dm) (((struct ha_part *)daemon_part_state(dm, &part_ha))->ha)

struct dha {
	struct ha_paths paths;
	char keepalived_bin[PATH_MAX], conntrackd_bin[PATH_MAX];
	const struct ha_conf *conf;	    /* in force (in daemon_in_force(dm)->pol); NULL: no pair */
	char source[PATH_MAX];		    /* the policy it came from, for the files' heads */
	struct prefix sync_addr, sync_peer; /* this node's and the peer's; family 0: not found yet */
	char *kconf, *cconf;		    /* the texts in force */
	char *next_kconf;		    /* prepared by ha_prepare */
	char error[320];		    /* why the pair does not run ("" if it does) */
	struct dha_proc kd, cd;
	struct handler fifo;
	char fifo_buf[1024];
	size_t fifo_len;
	enum ha_role role, prev_role;
	time_t role_since;
	int64_t role_ms; /* CLOCK_MONOTONIC, when keepalived told the role */
	unsigned long transitions;
	enum ha_role *inst; /* per virtual address, as keepalived last told */
	uint32_t ninst;
	struct dha_job cmd; /* the conntrackd command running */
	enum ha_cmd running;
	enum ha_cmd queue[QUEUE_MAX];
	unsigned qn;
	struct dha_job st; /* conntrackd -s */
	struct ha_sync_stats stats;
	time_t stats_at, stats_next;
};

static struct dha *get(struct daemon *dm)
{
	if (!HA(dm) && (HA(dm) = calloc(1, sizeof(*HA(dm))))) {
		struct dha *h = HA(dm);

		h->kd.name = "keepalived";
		h->cd.name = "conntrackd";
		proc_init(&h->kd.p);
		proc_init(&h->cd.p);
		proc_init(&h->cmd.p);
		proc_init(&h->st.p);
		h->fifo.fd = -1;
	}
	return HA(dm);
}

/* ---- output of the daemons, into the log ---- */

/* keepalived -l: "Fri Dec  4 15:25:42 2026: TEXT"; conntrackd:
 * "[Fri Dec  4 15:25:56 2026] (pid=27541) [notice] TEXT". */
static void log_line(const char *line, void *arg)
{
	const struct dha_proc *dp = arg;
	enum log_level level = LOG_INFO;
	const char *t = line, *e;

	if (!*line)
		return;
	if (strlen(line) > 26 && line[24] == ':' && line[25] == ' ')
		t = line + 26;
	if (line[0] == '[' && (e = strstr(line, ") [")) && strchr(e + 3, ']')) {
		const char *lvl = e + 3;

		level = !strncmp(lvl, "ERROR", 5) ? LOG_ERR : !strncmp(lvl, "WARNING", 7) ? LOG_WARN : LOG_INFO;
		t = strchr(lvl, ']') + 1;
		t += *t == ' ';
	} else if (strstr(t, "rror") || strstr(t, "WARNING")) {
		level = LOG_WARN;
	}
	log_msg(level, "%s: %s", dp->name, t);
}

static void on_out(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dha_proc *dp = OF(h, struct dha_proc, out_h);

	if (proc_read(&dp->p, log_line, dp))
		loop_unwatch(daemon_loop(dm), h); /* closed by proc_read */
}

/* ---- starting and stopping ---- */

static void on_exit_proc(struct handler *h, uint32_t events);
static void queue_cmds(struct daemon *dm, const enum ha_cmd *v, unsigned n);

static int start_proc(struct daemon *dm, struct dha_proc *dp)
{
	struct dha *ha = HA(dm);
	/* Every pid file in nfbox's directory, also those of the children -P
	 * does not run: keepalived checks them all, and one of /run's locked by
	 * another keepalived of this host (two appliances starting at once)
	 * made it exit 0, "daemon is already running". */
	bool plant = planted("ha-default-pid-files");
	char *checkers = plant ? (char *)"/run/checkers.pid" : ha->paths.checkers_pid;
	char *bfd = plant ? (char *)"/run/bfd.pid" : ha->paths.bfd_pid;
	char *kd_argv[] = { ha->keepalived_bin,
			    "-n",
			    "-l",
			    "-G",
			    "-P",
			    "-f",
			    ha->paths.keepalived_conf,
			    "-p",
			    ha->paths.pid,
			    "-r",
			    ha->paths.vrrp_pid,
			    "-c",
			    checkers,
			    "-b",
			    bfd,
			    NULL };
	char *cd_argv[] = { ha->conntrackd_bin, "-C", ha->paths.conntrackd_conf, NULL };
	bool is_kd = dp == &ha->kd;
	int r;

	/* A daemon killed by SIGKILL leaves its lock or pid files behind,
	 * and a pid in them may belong to another process by now: the one
	 * nfbox ran is known to be gone. */
	if (is_kd) {
		unlink(ha->paths.pid);
		unlink(ha->paths.vrrp_pid);
		unlink(ha->paths.checkers_pid);
		unlink(ha->paths.bfd_pid);
	} else {
		unlink(ha->paths.lock);
		unlink(ha->paths.ctl);
	}
	if ((r = proc_start(&dp->p, is_kd ? kd_argv : cd_argv)) < 0) {
		log_err("ha: cannot start %s: %s; trying again in %d s", dp->name, strerror(-r), RETRY_MAX);
		dp->retry_at = time(NULL) + RETRY_MAX;
		return r;
	}
	dp->started = time(NULL);
	dp->exit_h = (struct handler){ .fd = dp->p.pidfd, .fn = on_exit_proc, .ctx = dm };
	dp->out_h = (struct handler){ .fd = dp->p.out, .fn = on_out, .ctx = dm };
	if ((r = loop_watch(daemon_loop(dm), &dp->exit_h)) < 0 || (r = loop_watch(daemon_loop(dm), &dp->out_h)) < 0)
		log_err("ha: cannot follow %s (epoll: %s): its exit goes unnoticed", dp->name, strerror(-r));
	if (is_kd) {
		ha->role = HA_ROLE_STARTING;
		for (uint32_t i = 0; i < ha->ninst; i++)
			ha->inst[i] = HA_ROLE_STARTING;
	} else {
		/* keepalived's first notice runs conntrackd commands: wait
		 * (briefly) for its control socket. */
		struct pollfd exited = { .fd = dp->p.pidfd, .events = POLLIN };

		for (int i = 0; i < 200 && access(ha->paths.ctl, F_OK) < 0 && poll(&exited, 1, 10) == 0; i++)
			;
	}
	log_info("ha: %s started, pid %d", dp->name, (int)dp->p.pid);
	return 0;
}

static void unwatch_proc(struct daemon *dm, struct dha_proc *dp)
{
	if (dp->p.pidfd >= 0)
		loop_unwatch(daemon_loop(dm), &dp->exit_h);
	if (dp->p.out >= 0)
		loop_unwatch(daemon_loop(dm), &dp->out_h);
}

static void stop_proc(struct daemon *dm, struct dha_proc *dp)
{
	if (!dp->p.pid)
		return;
	unwatch_proc(dm, dp);
	proc_stop(&dp->p, STOP_MS, log_line, dp);
	dp->started = 0; /* its next start is no restart */
	log_info("ha: %s stopped", dp->name);
}

static void set_role(struct daemon *dm, enum ha_role role, const char *why)
{
	struct dha *ha = HA(dm);
	static const enum ha_cmd to_master[] = { CMD_COMMIT, CMD_FLUSH, CMD_RESYNC_KERNEL, CMD_BULK };
	static const enum ha_cmd to_backup[] = { CMD_SHORTEN, CMD_REQUEST };

	if (role == ha->role)
		return;
	ha->prev_role = ha->role;
	ha->role = role;
	ha->role_since = time(NULL);
	ha->role_ms = clock_ms(CLOCK_MONOTONIC);
	ha->transitions++;
	log_info("ha: %s -> %s (%s)", ha_role_name(ha->prev_role), ha_role_name(role), why);
	if (role == HA_ROLE_MASTER)
		queue_cmds(dm, to_master, 4);
	else if (role == HA_ROLE_BACKUP)
		queue_cmds(dm, to_backup, 2);
	else if (role == HA_ROLE_FAULT)
		queue_cmds(dm, to_backup, 1);
}

static void on_exit_proc(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dha_proc *dp = OF(h, struct dha_proc, exit_h);
	struct dha *ha = HA(dm);
	time_t now = time(NULL);
	pid_t pgid;
	int status;

	pgid = dp->p.pid;
	if (!proc_reap(&dp->p, &status))
		return; /* an event for the process before this one */
	loop_unwatch(daemon_loop(dm), h);
	/* keepalived's VRRP process outlives a parent killed by SIGKILL: it
	 * must go (its addresses with it) before another keepalived starts. */
	if (pgid > 0 && kill(-pgid, SIGTERM) == 0)
		dp->lingering = pgid;
	dp->exited = now;
	if (dp->p.out >= 0) {
		loop_unwatch(daemon_loop(dm), &dp->out_h);
		proc_drain(&dp->p, 200, log_line, dp);
	}
	proc_close(&dp->p);
	proc_status_text(status, dp->last_exit, sizeof(dp->last_exit));
	dp->backoff = now - dp->started >= 60 || !dp->backoff ? 1
		      : dp->backoff * 2 > RETRY_MAX	      ? RETRY_MAX
							      : dp->backoff * 2;
	dp->retry_at = now + dp->backoff;
	log_err("ha: %s exited (%s); starting it again in %u s", dp->name, dp->last_exit, dp->backoff);
	if (dp == &ha->kd)
		set_role(dm, HA_ROLE_STOPPED, "keepalived exited");
}

/* ---- keepalived's notices ---- */

static void notice(struct daemon *dm, const char *line)
{
	struct dha *ha = HA(dm);
	struct ha_notice n;
	char name[64];

	if (!ha->conf || ha_parse_notice(line, &n) < 0)
		return;
	if (n.group) {
		if (ha->conf->nvirt > 1)
			set_role(dm, n.state, "keepalived: sync group");
		return;
	}
	for (uint32_t i = 0; i < ha->ninst && i < ha->conf->nvirt; i++) {
		ha_instance_name(&ha->conf->virt[i], name, sizeof(name));
		if (strcmp(name, n.name))
			continue;
		ha->inst[i] = n.state;
		if (ha->conf->nvirt == 1)
			set_role(dm, n.state, "keepalived");
	}
}

static void on_fifo(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dha *ha = HA(dm);
	ssize_t n;

	while ((n = read(h->fd, ha->fifo_buf + ha->fifo_len, sizeof(ha->fifo_buf) - 1 - ha->fifo_len)) > 0) {
		char *s = ha->fifo_buf, *nl;

		ha->fifo_len += (size_t)n;
		ha->fifo_buf[ha->fifo_len] = '\0';
		while ((nl = strchr(s, '\n'))) {
			*nl = '\0';
			notice(dm, s);
			s = nl + 1;
		}
		ha->fifo_len -= (size_t)(s - ha->fifo_buf);
		memmove(ha->fifo_buf, s, ha->fifo_len);
		if (ha->fifo_len == sizeof(ha->fifo_buf) - 1)
			ha->fifo_len = 0; /* no line is that long: drop it */
	}
}

/* The FIFO is held open for reading and writing: it never reads an end
 * when keepalived restarts. */
static int open_fifo(struct daemon *dm)
{
	struct dha *ha = HA(dm);
	struct stat st;

	if (ha->fifo.fd >= 0)
		return 0;
	if (lstat(ha->paths.fifo, &st) == 0 && !S_ISFIFO(st.st_mode))
		unlink(ha->paths.fifo);
	if (mkfifo(ha->paths.fifo, 0600) < 0 && errno != EEXIST)
		return -errno;
	if ((ha->fifo.fd = open(ha->paths.fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		return -errno;
	ha->fifo.fn = on_fifo;
	ha->fifo.ctx = dm;
	return loop_watch(daemon_loop(dm), &ha->fifo);
}

static void close_fifo(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	if (ha->fifo.fd < 0)
		return;
	loop_unwatch(daemon_loop(dm), &ha->fifo);
	close(ha->fifo.fd);
	ha->fifo.fd = -1;
	ha->fifo_len = 0;
}

/* ---- conntrackd's client commands ---- */

static void on_job_out(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dha_job *j = OF(h, struct dha_job, out_h);

	if (proc_read(&j->p, proc_text_line, &j->out))
		loop_unwatch(daemon_loop(dm), h);
}

static void on_job_exit(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dha_job *j = OF(h, struct dha_job, exit_h);
	int status;

	if (!proc_reap(&j->p, &status))
		return;
	loop_unwatch(daemon_loop(dm), h);
	if (j->p.out >= 0) {
		loop_unwatch(daemon_loop(dm), &j->out_h);
		proc_drain(&j->p, 200, proc_text_line, &j->out);
	}
	proc_close(&j->p);
	j->done(dm, status);
}

/* conntrackd -C CONF ARG; its separator of output lines sep. */
static int job_start(struct daemon *dm, struct dha_job *j, const char *arg, const char *sep,
		     void (*done)(struct daemon *, int))
{
	struct dha *ha = HA(dm);
	char *argv[] = { ha->conntrackd_bin, "-C", ha->paths.conntrackd_conf, (char *)arg, NULL };
	int r;

	j->out = (struct proc_text){ .buf = j->text, .len = sizeof(j->text), .sep = sep };
	j->text[0] = '\0';
	j->done = done;
	if ((r = proc_start(&j->p, argv)) < 0)
		return r;
	j->started = time(NULL);
	j->started_ms = clock_ms(CLOCK_MONOTONIC);
	j->exit_h = (struct handler){ .fd = j->p.pidfd, .fn = on_job_exit, .ctx = dm };
	j->out_h = (struct handler){ .fd = j->p.out, .fn = on_job_out, .ctx = dm };
	loop_watch(daemon_loop(dm), &j->exit_h);
	loop_watch(daemon_loop(dm), &j->out_h);
	return 0;
}

static void job_stop(struct daemon *dm, struct dha_job *j)
{
	if (!j->p.pid)
		return;
	if (j->p.pidfd >= 0)
		loop_unwatch(daemon_loop(dm), &j->exit_h);
	if (j->p.out >= 0)
		loop_unwatch(daemon_loop(dm), &j->out_h);
	proc_stop(&j->p, 1000, NULL, NULL);
}

/* The commands of a change of role, one at a time, in order. */
static void run_next_cmd(struct daemon *dm);

/* Each command's time is logged: the commit's, from keepalived's notice
 * on, is how long a new master dropped the flows it had not yet got. */
static void cmd_done(struct daemon *dm, int status)
{
	struct dha *ha = HA(dm);
	int64_t now = clock_ms(CLOCK_MONOTONIC);
	char how[128];

	if (status) {
		proc_status_text(status, how, sizeof(how));
		log_warn("ha: conntrackd %s (%s) failed: %s%s%s", cmd_args[ha->running][0], cmd_args[ha->running][1],
			 how, ha->cmd.text[0] ? ": " : "", ha->cmd.text);
	} else if (ha->running == CMD_COMMIT) {
		log_info("ha: conntrackd %s: %s (%lld ms; %lld ms after keepalived's notice)", cmd_args[ha->running][0],
			 cmd_args[ha->running][1], (long long)(now - ha->cmd.started_ms),
			 (long long)(now - ha->role_ms));
	} else {
		log_info("ha: conntrackd %s: %s (%lld ms)", cmd_args[ha->running][0], cmd_args[ha->running][1],
			 (long long)(now - ha->cmd.started_ms));
	}
	run_next_cmd(dm);
}

static void run_next_cmd(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	while (ha->qn && !ha->cmd.p.pid) {
		int r;

		ha->running = ha->queue[0];
		memmove(ha->queue, ha->queue + 1, --ha->qn * sizeof(ha->queue[0]));
		if (!ha->cd.p.pid)
			log_warn("ha: conntrackd is not running: cannot %s", cmd_args[ha->running][1]);
		else if ((r = job_start(dm, &ha->cmd, cmd_args[ha->running][0], "; ", cmd_done)) < 0)
			log_err("ha: cannot run conntrackd %s: %s", cmd_args[ha->running][0], strerror(-r));
	}
}

/* A new change of role replaces what the last one still had to do. */
static void queue_cmds(struct daemon *dm, const enum ha_cmd *v, unsigned n)
{
	struct dha *ha = HA(dm);

	ha->qn = 0;
	for (unsigned i = 0; i < n && ha->qn < QUEUE_MAX; i++)
		ha->queue[ha->qn++] = v[i];
	run_next_cmd(dm);
}

static void stop_cmds(struct daemon *dm)
{
	HA(dm)->qn = 0;
	job_stop(dm, &HA(dm)->cmd);
}

/* conntrackd -s, every STATS_EVERY seconds. */
static void stats_done(struct daemon *dm, int status)
{
	struct dha *ha = HA(dm);
	struct ha_sync_stats s;

	if (status == 0 && ha_parse_stats(ha->st.text, &s) == 0) {
		ha->stats = s;
		ha->stats_at = time(NULL);
	}
}

static void stats_start(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	if (!ha->st.p.pid && ha->cd.p.pid && access(ha->paths.ctl, F_OK) == 0)
		job_start(dm, &ha->st, "-s", "\n", stats_done);
}

/* ---- preparing a load ---- */

/* Beside the control socket: /run/nfbox/nfbox-NAME.sock -> /run/nfbox/nfbox-NAME.ha */
static int ha_dir(const struct daemon *dm, char *buf, size_t len)
{
	const char *s = daemon_socket_path(dm), *dot = strrchr(s, '.'), *slash = strrchr(s, '/');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - s) : strlen(s);

	return snprintf(buf, len, "%.*s.ha", (int)stem, s) >= (int)len ? -ENAMETOOLONG : 0;
}

static bool same_prefix(const struct prefix *net, const struct prefix *a)
{
	return net->family == a->family && policy_prefix_holds(net, a);
}

static bool same_addr(const struct prefix *a, const struct prefix *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* What resolve_sync looks for among the sync interface's addresses. */
struct sync_search {
	const struct ha_conf *c;
	struct prefix *local, *peer;
	bool found;
};

static bool sync_candidate(const struct prefix *a, const struct prefix *net, void *arg)
{
	struct sync_search *s = arg;
	const struct prefix *p = s->c->sync_peers;

	if (s->c->npeers == 2) {
		if ((s->found = same_addr(a, &p[0]) || same_addr(a, &p[1]))) {
			*s->local = *a;
			*s->peer = same_addr(a, &p[0]) ? p[1] : p[0];
		}
		return !s->found;
	}
	if (!s->found || same_prefix(net, &p[0])) {
		*s->local = *a;
		s->found = true;
		if (same_prefix(net, &p[0]))
			return false;
	}
	return true;
}

/* This node's address on the sync link and the peer's. One peer: this
 * node's is ha.sync.address, or the interface's address of the peer's
 * family, one whose prefix holds the peer first. Two (both nodes'): the
 * one this node has is its own. */
static int resolve_sync(const struct ha_conf *c, struct prefix *local, struct prefix *peer, char *why, size_t len)
{
	const struct prefix *p = c->sync_peers;
	struct sync_search s = { .c = c, .local = local, .peer = peer };
	char a0[64], a1[64];
	int r;

	*peer = p[0];
	if (c->sync_addr.family) {
		*local = c->sync_addr;
		if (c->npeers == 2)
			*peer = same_addr(&p[0], local) ? p[1] : p[0];
		return 0;
	}
	r = nl_iface_addrs(c->sync_ifname, p[0].family, sync_candidate, &s);
	if (r < 0 && r != -ENODEV) {
		snprintf(why, len, "cannot list the addresses: %s", strerror(-r));
		return r;
	}
	if (s.found)
		return 0;
	policy_prefix_format(&p[0], a0, sizeof(a0));
	policy_prefix_format(&p[1], a1, sizeof(a1));
	if (r == -ENODEV)
		snprintf(why, len, "the sync interface %s is not there", c->sync_ifname);
	else if (c->npeers == 2)
		snprintf(why, len,
			 "the sync interface %s has neither %s nor %s (ha.sync.peer lists both nodes' addresses: this "
			 "node must have one)",
			 c->sync_ifname, a0, a1);
	else
		snprintf(
			why, len,
			"the sync interface %s has no %s address (the peer is %s): give it one, or set ha.sync.address",
			c->sync_ifname, policy_family_name((enum policy_family)p[0].family), a0);
	return -ENOENT;
}

static int write_file(const char *path, const char *text, char *why, size_t len)
{
	int r = files_write_atomic(path, text, strlen(text), 0666, 0);

	if (r < 0)
		snprintf(why, len, "cannot write %s: %s", path, strerror(-r));
	return r;
}

static int need_program(const char *name, char *out, struct diags *d)
{
	if (proc_find(name, out, PATH_MAX) == 0)
		return 0;
	return diag_fail(d, -ENOENT,
			 "ha: needs %s, which is not installed (not on PATH): install the Debian package %s ('apt "
			 "install %s'); the nfbox package recommends it",
			 name, name, name);
}

static int ha_prepare(struct daemon *dm, const struct policy *p, const char *source, struct diags *d)
{
	char dir[PATH_MAX], out[2048], next[PATH_MAX + 8];
	struct stat st;
	struct dha *ha;
	int r;

	if (!p->ha.present)
		return 0;
	if (!(ha = get(dm)))
		return diag_errno(d, -ENOMEM, "ha");
	if ((r = need_program("keepalived", ha->keepalived_bin, d)) < 0 ||
	    (r = need_program("conntrackd", ha->conntrackd_bin, d)) < 0)
		return r;
	if ((r = ha_dir(dm, dir, sizeof(dir))) < 0 || (r = ha_paths_init(&ha->paths, dir)) < 0)
		return diag_errno(d, r, "ha: the directory beside %s", daemon_socket_path(dm));
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return diag_errno(d, -errno, "ha: cannot make %s", dir);
	/* keepalived and conntrackd write there as root: it must be a
	 * directory of root's that no one else may write, not a link. */
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return diag_fail(d, -ENOTDIR, "ha: %s is not a directory; remove it, nfbox makes it", dir);
	if ((r = files_check_dir(dir, out, sizeof(out))) < 0)
		return diag_fail(d, r, "ha: %s", out);
	free(ha->next_kconf);
	if (!(ha->next_kconf = ha_keepalived_conf(&p->ha, &ha->paths, source)))
		return diag_errno(d, -ENOMEM, "ha");
	snprintf(next, sizeof(next), "%s.new", ha->paths.keepalived_conf);
	if ((r = write_file(next, ha->next_kconf, out, sizeof(out))) < 0)
		return diag_fail(d, r, "ha: %s", out);
	{
		char *argv[] = { ha->keepalived_bin, "-t", "-f", next, NULL };

		r = proc_run(argv, 5000, out, sizeof(out));
	}
	if (r != 0) {
		unlink(next);
		if (r < 0)
			return diag_errno(d, r, "ha: keepalived -t (the check of the configuration nfbox wrote)");
		char how[128];

		proc_status_text(r, how, sizeof(how));
		return diag_fail(d, -EINVAL,
				 "ha: keepalived refuses the configuration nfbox wrote (keepalived -t, %s): %s", how,
				 out);
	}
	return 0;
}

static void ha_abort(struct daemon *dm)
{
	char next[PATH_MAX + 8];

	if (!HA(dm) || !HA(dm)->next_kconf)
		return;
	snprintf(next, sizeof(next), "%s.new", HA(dm)->paths.keepalived_conf);
	unlink(next);
	free(HA(dm)->next_kconf);
	HA(dm)->next_kconf = NULL;
}

/* ---- the policy in force ---- */

static void stop_pair(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	if (!ha)
		return;
	stop_cmds(dm);
	job_stop(dm, &ha->st);
	stop_proc(dm, &ha->kd); /* first: the addresses go to the peer */
	set_role(dm, HA_ROLE_STOPPED, "stopped");
	stop_proc(dm, &ha->cd);
	close_fifo(dm);
}

/* Whether what dp left behind is gone (after 5 s it is killed). */
static bool gone(struct dha_proc *dp, time_t now)
{
	if (!dp->lingering)
		return true;
	if (kill(-dp->lingering, 0) < 0) {
		dp->lingering = 0;
		return true;
	}
	if (now - dp->exited >= 5)
		kill(-dp->lingering, SIGKILL);
	return false;
}

/* Start what is not running (and due): conntrackd, then keepalived. */
static void ensure_running(struct daemon *dm)
{
	struct dha *ha = HA(dm);
	time_t now = time(NULL);
	char why[256];

	if (!ha->conf)
		return;
	if (!ha->cconf) {
		if (resolve_sync(ha->conf, &ha->sync_addr, &ha->sync_peer, why, sizeof(why)) < 0) {
			if (strcmp(ha->error, why))
				log_err("ha: not started: %s; nfbox tries again every few seconds", why);
			snprintf(ha->error, sizeof(ha->error), "not started: %s", why);
			return;
		}
		if (!(ha->cconf = ha_conntrackd_conf(ha->conf, &ha->sync_addr, &ha->sync_peer, &ha->paths, ha->source)))
			return;
		if (write_file(ha->paths.conntrackd_conf, ha->cconf, why, sizeof(why)) < 0) {
			log_err("ha: %s", why);
			snprintf(ha->error, sizeof(ha->error), "%s", why);
			free(ha->cconf);
			ha->cconf = NULL;
			return;
		}
	}
	ha->error[0] = '\0';
	if (!ha->cd.p.pid && now >= ha->cd.retry_at && gone(&ha->cd, now)) {
		if (ha->cd.started)
			ha->cd.restarts++;
		/* A conntrackd started again (it exited, or its configuration
		 * changed) while keepalived runs lost its caches, and no change
		 * of role will fill them: a master takes the kernel's table and
		 * sends it, a backup asks the master for its state. */
		if (start_proc(dm, &ha->cd) == 0 && ha->kd.p.pid) {
			if (ha->role == HA_ROLE_MASTER)
				queue_cmds(dm, (const enum ha_cmd[]){ CMD_RESYNC_KERNEL, CMD_BULK }, 2);
			else
				queue_cmds(dm, (const enum ha_cmd[]){ CMD_REQUEST }, 1);
		}
	}
	if (!ha->kd.p.pid && now >= ha->kd.retry_at && ha->cd.p.pid && gone(&ha->kd, now)) {
		if (ha->kd.started)
			ha->kd.restarts++;
		start_proc(dm, &ha->kd);
	}
}

/* Each virtual address's state, carried by instance name to the new
 * section (keepalived, told to read its file again, need not say it
 * again); a new one is starting (or stopped, without keepalived). */
static void keep_instance_states(struct dha *ha, const struct ha_conf *next)
{
	enum ha_role *v = calloc(next->nvirt ? next->nvirt : 1, sizeof(*v));
	char a[64], b[64];

	for (uint32_t i = 0; v && i < next->nvirt; i++) {
		v[i] = ha->kd.p.pid ? HA_ROLE_STARTING : HA_ROLE_STOPPED;
		ha_instance_name(&next->virt[i], a, sizeof(a));
		for (uint32_t k = 0; ha->conf && k < ha->ninst && k < ha->conf->nvirt; k++) {
			ha_instance_name(&ha->conf->virt[k], b, sizeof(b));
			if (!strcmp(a, b))
				v[i] = ha->inst[k];
		}
	}
	free(ha->inst);
	ha->inst = v;
	ha->ninst = v ? next->nvirt : 0;
}

/* A configuration without its head (which names the policy file): a
 * reload from another path changes nothing the daemon reads. */
static const char *body(const char *text)
{
	while (text && *text == '#') {
		const char *nl = strchr(text, '\n');

		text = nl ? nl + 1 : text + strlen(text);
	}
	return text ? text : "";
}

static void ha_commit(struct daemon *dm, const struct policy *p, const char *source)
{
	struct dha *ha = HA(dm);
	char next[PATH_MAX + 8], why[256];
	bool k_changed, was;

	if (!p->ha.present) {
		if (ha && ha->conf) {
			log_info("ha: the policy has no ha: section any more; stopping keepalived and conntrackd");
			stop_pair(dm);
			ha->conf = NULL;
		}
		return;
	}
	if (!ha)
		return; /* ha_prepare failed, and the load with it */
	was = ha->conf != NULL;
	keep_instance_states(ha, &p->ha);
	ha->conf = &p->ha;
	snprintf(ha->source, sizeof(ha->source), "%s", source);
	snprintf(next, sizeof(next), "%s.new", ha->paths.keepalived_conf);
	k_changed = !ha->kconf || strcmp(body(ha->kconf), body(ha->next_kconf));
	if (rename(next, ha->paths.keepalived_conf) < 0)
		log_err("ha: cannot put %s in place: %s", ha->paths.keepalived_conf, strerror(errno));
	free(ha->kconf);
	ha->kconf = ha->next_kconf;
	ha->next_kconf = NULL;
	/* conntrackd's file: written again from the (new) section; a change
	 * restarts it, and it then asks the peer for the whole state. */
	if (ha->cconf) {
		struct prefix addr, peer;
		char *text = NULL;

		/* (An address that cannot be found now keeps the one running.) */
		if (resolve_sync(&p->ha, &addr, &peer, why, sizeof(why)) == 0 &&
		    (text = ha_conntrackd_conf(&p->ha, &addr, &peer, &ha->paths, source)) &&
		    strcmp(body(text), body(ha->cconf))) {
			log_info("ha: conntrackd's configuration changed: restarting it");
			stop_cmds(dm);
			job_stop(dm, &ha->st);
			stop_proc(dm, &ha->cd);
			ha->cd.retry_at = 0;
			free(ha->cconf);
			ha->cconf = NULL;
		}
		free(text);
	}
	if (open_fifo(dm) < 0)
		log_err("ha: cannot open keepalived's FIFO %s: %s", ha->paths.fifo, strerror(errno));
	if (was && ha->kd.p.pid && k_changed) {
		log_info("ha: keepalived's configuration changed: it reads it again (SIGHUP)");
		kill(ha->kd.p.pid, SIGHUP);
	}
	ensure_running(dm);
}

static void ha_tick(struct daemon *dm)
{
	struct dha *ha = HA(dm);
	time_t now = time(NULL);

	if (!ha || !ha->conf)
		return;
	ensure_running(dm);
	/* A command that hangs (conntrackd wedged) must not hold up the
	 * ones of the next change of role. */
	if (ha->cmd.p.pid && now - ha->cmd.started > JOB_MAX) {
		log_warn("ha: conntrackd %s (%s) took more than %d s: killed", cmd_args[ha->running][0],
			 cmd_args[ha->running][1], JOB_MAX);
		job_stop(dm, &ha->cmd);
		run_next_cmd(dm);
	}
	if (ha->st.p.pid && now - ha->st.started > JOB_MAX)
		job_stop(dm, &ha->st);
	if (now >= ha->stats_next) {
		ha->stats_next = now + STATS_EVERY;
		stats_start(dm);
	}
}

static void ha_stop_all(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	if (!ha)
		return;
	if (ha->conf)
		stop_pair(dm);
	ha->conf = NULL;
}

static void ha_free(struct daemon *dm)
{
	struct dha *ha = HA(dm);

	if (!ha)
		return;
	ha_stop_all(dm);
	free(ha->kconf);
	free(ha->cconf);
	free(ha->next_kconf);
	free(ha->inst);
	free(ha);
	HA(dm) = NULL;
}

/* ---- the part ---- */

static int part_open(struct daemon *dm, void **self, struct diags *d)
{
	struct ha_part *p = calloc(1, sizeof(*p));

	if (!p)
		return diag_errno(d, -ENOMEM, "ha");
	p->dm = dm;
	*self = p;
	return 0;
}

/* keepalived and conntrackd follow the policy in force: a load whose pair
 * cannot run fails (a program missing, a configuration keepalived refuses);
 * once it is enforced they are started, reconfigured or stopped. */
static int part_prepare(void *self, const struct change *c, struct diags *d)
{
	struct ha_part *p = self;

	return ha_prepare(p->dm, c->nl->pol, c->source, d);
}

static void part_commit(void *self, const struct change *c, struct diags *d)
{
	struct ha_part *p = self;

	(void)d;
	ha_commit(p->dm, c->nl->pol, c->source);
}

static void part_abort(void *self, const struct change *c)
{
	struct ha_part *p = self;

	(void)c;
	ha_abort(p->dm);
}

/* What exited is started again; conntrackd's statistics are read. */
static void part_tick(void *self)
{
	struct ha_part *p = self;

	ha_tick(p->dm);
}

/* keepalived first: the peer takes the addresses over. */
static void part_stop(void *self, bool keep)
{
	struct ha_part *p = self;

	(void)keep;
	ha_stop_all(p->dm);
}

static void part_close(void *self)
{
	struct ha_part *p = self;

	if (!p)
		return;
	ha_free(p->dm);
	free(p);
}

#define U(x) ((unsigned long long)(x))

static void ha_text(const struct rep *h, FILE *f)
{
	const struct rep *s = rep_get(h, "sync"), *since = rep_get(h, "since");
	char when[32];

	fprintf(f, "ha:         %s", rep_s(h, "role"));
	if (rep_value_i(since)) {
		time_t t = (time_t)rep_value_i(since);
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		fprintf(f, " since %s (%lld s; was %s)", when, (long long)(time(NULL) - t), rep_s(h, "previous_role"));
	}
	fprintf(f, ", priority %lld, adverts every %llu ms, %llu transition%s\n", (long long)rep_i(h, "priority"),
		U(rep_u(h, "advert_ms")), U(rep_u(h, "transitions")), rep_u(h, "transitions") == 1 ? "" : "s");
	if (rep_has(h, "error"))
		fprintf(f, "            %s\n", rep_s(h, "error"));
	fprintf(f, "            peer %s over %s%s%s\n", rep_s(h, "peer"), rep_s(h, "sync_interface"),
		rep_has(h, "sync_address") ? " from " : "", rep_s(h, "sync_address"));
	for (const char *const *n = (const char *const[]){ "keepalived", "conntrackd", NULL }; *n; n++) {
		const struct rep *d = rep_get(h, *n);

		fprintf(f, "            %-10s ", *n);
		if (rep_i(d, "pid"))
			fprintf(f, "pid %lld", (long long)rep_i(d, "pid"));
		else
			fprintf(f, "not running");
		fprintf(f, ", %llu restart%s", U(rep_u(d, "restarts")), rep_u(d, "restarts") == 1 ? "" : "s");
		if (rep_has(d, "last_exit"))
			fprintf(f, ", last exit: %s", rep_s(d, "last_exit"));
		fputc('\n', f);
	}
	if (rep_i(s, "at"))
		fprintf(f,
			"            sync: %llu connections held, %llu from the peer; messages %llu sent, %llu "
			"received; %llu send errors, %llu receive errors, %llu lost, %llu malformed (%lld s ago)\n",
			U(rep_u(s, "connections")), U(rep_u(s, "from_peer")), U(rep_u(s, "messages_sent")),
			U(rep_u(s, "messages_received")), U(rep_u(s, "send_errors")), U(rep_u(s, "receive_errors")),
			U(rep_u(s, "lost")), U(rep_u(s, "malformed")), (long long)(time(NULL) - rep_i(s, "at")));
	for (const struct rep *v = rep_first(rep_get(h, "virtual")); v; v = rep_next(v))
		fprintf(f, "            %-16s %s on %s, id %llu: %s\n", rep_s(v, "instance"), rep_s(v, "address"),
			rep_s(v, "interface"), U(rep_u(v, "id")), rep_s(v, "state"));
}

#define ROLE_HELP "The node's role in its pair: 1 for the role it has."
static const struct rep_metric m_role[] = {
	{ "nfbox_ha_role{role=\"master\"}", "gauge", ROLE_HELP, NULL },
	{ "nfbox_ha_role{role=\"backup\"}", "gauge", ROLE_HELP, NULL },
	{ "nfbox_ha_role{role=\"fault\"}", "gauge", ROLE_HELP, NULL },
	{ "nfbox_ha_role{role=\"starting\"}", "gauge", ROLE_HELP, NULL },
	{ "nfbox_ha_role{role=\"stopped\"}", "gauge", ROLE_HELP, NULL },
};
static const char *const role_keys[] = { "master", "backup", "fault", "starting", "stopped" };
static const struct rep_metric m_transitions = { "nfbox_ha_transitions_total", "counter",
						 "Changes of role since the daemon started.", NULL };
static const struct rep_metric m_last = { "nfbox_ha_last_transition_timestamp_seconds", "gauge",
					  "When the role last changed; 0: never.", NULL };
static const struct rep_metric m_up = { "nfbox_ha_daemon_up", "gauge", "1 while keepalived or conntrackd runs.",
					"daemon=." };
static const struct rep_metric m_restarts = { "nfbox_ha_daemon_restarts_total", "counter",
					      "Times nfbox started keepalived or conntrackd again after it exited.",
					      "daemon=." };
#define CONN_HELP "Connections in conntrackd's caches: this node's (internal) and the peer's (external)."
static const struct rep_metric m_internal = { "nfbox_ha_sync_connections{cache=\"internal\"}", "gauge", CONN_HELP,
					      NULL };
static const struct rep_metric m_external = { "nfbox_ha_sync_connections{cache=\"external\"}", "gauge", CONN_HELP,
					      NULL };
#define MSG_HELP "conntrackd's sync messages, by direction."
static const struct rep_metric m_msent = { "nfbox_ha_sync_messages_total{direction=\"sent\"}", "counter", MSG_HELP,
					   NULL };
static const struct rep_metric m_mrecv = { "nfbox_ha_sync_messages_total{direction=\"received\"}", "counter", MSG_HELP,
					   NULL };
#define BYTES_HELP "Bytes of conntrackd's sync messages, by direction."
static const struct rep_metric m_bsent = { "nfbox_ha_sync_bytes_total{direction=\"sent\"}", "counter", BYTES_HELP,
					   NULL };
static const struct rep_metric m_brecv = { "nfbox_ha_sync_bytes_total{direction=\"received\"}", "counter", BYTES_HELP,
					   NULL };
#define ERR_HELP "Sync messages conntrackd could not send or receive, lost on the way, or malformed."
static const struct rep_metric m_esend = { "nfbox_ha_sync_errors_total{error=\"send\"}", "counter", ERR_HELP, NULL };
static const struct rep_metric m_erecv = { "nfbox_ha_sync_errors_total{error=\"receive\"}", "counter", ERR_HELP, NULL };
static const struct rep_metric m_elost = { "nfbox_ha_sync_errors_total{error=\"lost\"}", "counter", ERR_HELP, NULL };
static const struct rep_metric m_emal = { "nfbox_ha_sync_errors_total{error=\"malformed\"}", "counter", ERR_HELP,
					  NULL };

static void part_status(void *self, struct rep *status)
{
	struct ha_part *p = self;
	struct dha *ha = p->ha;
	const struct ha_sync_stats *st;
	const char *role;
	struct rep *o, *s, *l;
	char buf[128];

	if (!ha || !ha->conf) {
		rep_null(status, "ha");
		return;
	}
	st = &ha->stats;
	role = ha_role_name(ha->role);
	o = rep_object(status, "ha");
	rep_text(o, ha_text);
	rep_str(o, "role", role);
	for (size_t i = 0; i < sizeof(role_keys) / sizeof(role_keys[0]); i++)
		rep_metric(rep_hidden(rep_bool(o, role_keys[i], !strcmp(role, role_keys[i]))), &m_role[i]);
	rep_str(o, "previous_role", ha_role_name(ha->prev_role));
	rep_metric(rep_int(o, "since", ha->role_since), &m_last);
	rep_metric(rep_uint(o, "transitions", ha->transitions), &m_transitions);
	rep_int(o, "priority", ha->conf->priority);
	rep_uint(o, "advert_ms", ha->conf->advert_ms);
	if (ha->sync_peer.family)
		policy_prefix_format(&ha->sync_peer, buf, sizeof(buf));
	else
		policy_ha_peers_format(ha->conf, buf, sizeof(buf));
	rep_str(o, "peer", buf);
	rep_str(o, "sync_interface", ha->conf->sync_ifname);
	if (ha->sync_addr.family) {
		policy_prefix_format(&ha->sync_addr, buf, sizeof(buf));
		rep_str(o, "sync_address", buf);
	} else {
		rep_null(o, "sync_address");
	}
	rep_str(o, "error", ha->error[0] ? ha->error : NULL);
	rep_str(o, "directory", ha->paths.dir);
	for (const struct dha_proc *const *pp = (const struct dha_proc *const[]){ &ha->kd, &ha->cd, NULL }; *pp; pp++) {
		struct rep *d = rep_object(o, (*pp)->name);

		rep_metric(rep_hidden(rep_bool(d, "up", (*pp)->p.pid != 0)), &m_up);
		rep_int(d, "pid", (*pp)->p.pid);
		rep_metric(rep_uint(d, "restarts", (*pp)->restarts), &m_restarts);
		rep_str(d, "last_exit", (*pp)->last_exit[0] ? (*pp)->last_exit : NULL);
	}
	s = rep_object(o, "sync");
	rep_int(s, "at", ha->stats_at);
	rep_metric(rep_uint(s, "connections", st->internal), &m_internal);
	rep_metric(rep_uint(s, "from_peer", st->external), &m_external);
	rep_metric(rep_uint(s, "messages_sent", st->msgs_sent), &m_msent);
	rep_metric(rep_uint(s, "messages_received", st->msgs_recv), &m_mrecv);
	rep_metric(rep_uint(s, "bytes_sent", st->bytes_sent), &m_bsent);
	rep_metric(rep_uint(s, "bytes_received", st->bytes_recv), &m_brecv);
	rep_metric(rep_uint(s, "send_errors", st->send_errors), &m_esend);
	rep_metric(rep_uint(s, "receive_errors", st->recv_errors), &m_erecv);
	rep_metric(rep_uint(s, "lost", st->lost), &m_elost);
	rep_metric(rep_uint(s, "malformed", st->malformed), &m_emal);
	l = rep_list(o, "virtual");
	for (uint32_t i = 0; i < ha->conf->nvirt; i++) {
		const struct ha_virtual *v = &ha->conf->virt[i];
		struct rep *x = rep_object(l, NULL);

		ha_instance_name(v, buf, sizeof(buf));
		rep_str(x, "instance", buf);
		rep_str(x, "interface", v->ifname);
		policy_prefix_format(&v->addr, buf, sizeof(buf));
		rep_str(x, "address", buf);
		rep_uint(x, "id", v->id);
		rep_str(x, "state", ha_role_name(i < ha->ninst && ha->kd.p.pid ? ha->inst[i] : HA_ROLE_STOPPED));
	}
}

const char *ha_pair_role(const struct daemon *dm)
{
	const struct ha_part *p = daemon_part_state(dm, &part_ha);

	return p && p->ha && p->ha->conf ? ha_role_name(p->ha->role) : NULL;
}

const struct part part_ha = {
	.name = "ha",
	.open = part_open,
	.prepare = part_prepare,
	.commit = part_commit,
	.abort = part_abort,
	.tick = part_tick,
	.status = part_status,
	.stop = part_stop,
	.close = part_close,
};
