/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Child processes followed by an event loop (proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "system/proc.h"
#include "base/clock.h"

void proc_init(struct proc *p)
{
	memset(p, 0, sizeof(*p));
	p->pidfd = p->out = -1;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child(char *const argv[], int out, pid_t parent)
{
	sigset_t none;
	int null = open("/dev/null", O_RDONLY);

	/* Started with 0..2 closed, the pipe may be one of them: move it. */
	if (out < 3 && (out = fcntl(out, F_DUPFD, 3)) < 0)
		_exit(127);
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
		_exit(127);
	/* The daemon blocks the signals it reads through a signalfd and
	 * ignores SIGPIPE: both would be inherited through exec. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(127);
	syscall(SYS_close_range, 3u, ~0u, 0u);
	setpgid(0, 0);
	execv(argv[0], argv);
	_exit(127);
}

int proc_start(struct proc *p, char *const argv[])
{
	pid_t parent = getpid(), pid;
	int fds[2], pidfd;

	proc_init(p);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(fds[0]);
		close(fds[1]);
		return r;
	}
	if (pid == 0)
		child(argv, fds[1], parent);
	setpgid(pid, pid); /* as the child does: whichever runs first */
	close(fds[1]);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		int r = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(fds[0]);
		return r;
	}
	fcntl(pidfd, F_SETFD, FD_CLOEXEC);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	p->pid = pid;
	p->pidfd = pidfd;
	p->out = fds[0];
	return 0;
}

#define LINE_MAX_READ (sizeof(((struct proc *)0)->buf) - 1)

/* Whole lines to fn; at the end (all) the rest too, and a line longer than
 * the buffer in pieces of the buffer's size. */
static void emit_lines(struct proc *p, bool all, void (*fn)(const char *, void *), void *arg)
{
	size_t start = 0;

	for (size_t i = 0; i < p->len; i++) {
		if (p->buf[i] != '\n')
			continue;
		p->buf[i] = '\0';
		if (fn)
			fn(p->buf + start, arg);
		start = i + 1;
	}
	if (start < p->len && (all || (start == 0 && p->len == LINE_MAX_READ))) {
		p->buf[p->len] = '\0';
		if (fn)
			fn(p->buf + start, arg);
		start = p->len;
	}
	memmove(p->buf, p->buf + start, p->len - start);
	p->len -= start;
}

int proc_read(struct proc *p, void (*fn)(const char *, void *), void *arg)
{
	for (;;) {
		ssize_t n;

		if (p->out < 0)
			return 1;
		n = read(p->out, p->buf + p->len, LINE_MAX_READ - p->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			emit_lines(p, true, fn, arg);
			close(p->out);
			p->out = -1;
			return 1;
		}
		p->len += (size_t)n;
		emit_lines(p, false, fn, arg);
	}
}

int proc_reap(struct proc *p, int *status)
{
	*status = 0;
	if (p->pid <= 0 || waitpid(p->pid, status, WNOHANG) != p->pid)
		return 0;
	p->pid = 0;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	return 1;
}

/* Wait for the pidfd up to ms; true if it exited. */
static bool wait_exit(struct proc *p, int ms)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
	long long end = clock_ms(CLOCK_MONOTONIC) + ms;

	for (;;) {
		long long left = end - clock_ms(CLOCK_MONOTONIC);
		int n = poll(&pfd, 1, left > 0 ? (int)left : 0);

		if (n > 0)
			return true;
		if (n == 0 || (n < 0 && errno != EINTR))
			return false;
	}
}

/* A signal to the child's process group (it leads one), which holds what
 * it started too: a grandchild must not keep the pipe open. */
static void signal_group(pid_t pid, int sig)
{
	if (kill(-pid, sig) < 0)
		kill(pid, sig);
}

void proc_drain(struct proc *p, int ms, void (*fn)(const char *, void *), void *arg)
{
	long long end = clock_ms(CLOCK_MONOTONIC) + ms;

	while (p->out >= 0) {
		struct pollfd pfd = { .fd = p->out, .events = POLLIN };
		long long left = end - clock_ms(CLOCK_MONOTONIC);

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		proc_read(p, fn, arg);
	}
}

void proc_stop(struct proc *p, int ms, void (*fn)(const char *, void *), void *arg)
{
	if (p->pid > 0) {
		signal_group(p->pid, SIGTERM);
		if (!wait_exit(p, ms)) {
			signal_group(p->pid, SIGKILL);
			wait_exit(p, 1000);
		}
		/* Not waiting for ever: a child stuck in the kernel stays a
		 * zombie rather than hang the loop. */
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid)
			p->pid = 0;
		proc_drain(p, 200, fn, arg); /* what it said last */
	}
	proc_close(p);
}

void proc_close(struct proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->out >= 0)
		close(p->out);
	p->pidfd = p->out = -1;
	p->pid = 0;
	p->len = 0;
}

void proc_status_text(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
}

void proc_text_line(const char *line, void *arg)
{
	struct proc_text *t = arg;
	int n;

	if (!t->len || t->used + 1 >= t->len)
		return;
	n = snprintf(t->buf + t->used, t->len - t->used, "%s%s", t->used ? t->sep : "", line);
	if (n > 0)
		t->used = t->used + (size_t)n < t->len ? t->used + (size_t)n : t->len - 1;
}

int proc_run(char *const argv[], int ms, char *out, size_t len)
{
	struct proc_text c = { .buf = out, .len = len, .sep = "\n" };
	long long end = clock_ms(CLOCK_MONOTONIC) + ms;
	struct proc p;
	int r, status;

	if (len)
		out[0] = '\0';
	if ((r = proc_start(&p, argv)) < 0)
		return r;
	while (p.out >= 0) {
		struct pollfd pfd = { .fd = p.out, .events = POLLIN };
		long long left = end - clock_ms(CLOCK_MONOTONIC);

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) > 0)
			proc_read(&p, proc_text_line, &c);
	}
	if (p.out >= 0 ||
	    !wait_exit(&p, (int)(end - clock_ms(CLOCK_MONOTONIC) > 0 ? end - clock_ms(CLOCK_MONOTONIC) : 0))) {
		proc_stop(&p, 0, NULL, NULL);
		return -ETIMEDOUT;
	}
	proc_reap(&p, &status);
	proc_close(&p);
	return status;
}

int proc_find(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	const char *s = path && *path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";

	while (*s) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (n && (size_t)snprintf(out, len, "%.*s/%s", (int)n, s, name) < len && access(out, X_OK) == 0)
			return 0;
		s += n + (e ? 1 : 0);
	}
	return -ENOENT;
}
