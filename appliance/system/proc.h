/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Child processes a daemon's event loop can follow: started with stdin on
 * /dev/null and stdout and stderr into one pipe, watched through a pidfd
 * (readable once the child exits) and that pipe; never waited for.
 * A child gets SIGTERM when the thread that started it dies, so that a
 * crashed nfbox takes keepalived down with it (its peer then takes over)
 * instead of leaving a master whose firewall nobody runs.
 */
#ifndef NFBOX_SYSTEM_PROC_H
#define NFBOX_SYSTEM_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc {
	pid_t pid;	    /* 0: none */
	int pidfd;	    /* readable once it exits; -1 when none */
	int out;	    /* its stdout and stderr; -1 once they are closed */
	char buf[4096 + 1]; /* output not yet a whole line (and room for a NUL) */
	size_t len;
};

void proc_init(struct proc *p);
/* Start argv (argv[0] a path). 0 or -errno. */
int proc_start(struct proc *p, char *const argv[]);
/* What there is to read, a line at a time to fn (without its newline; a
 * line longer than the buffer is cut). Returns 1 once the output is at its
 * end (and then out is closed), else 0. */
int proc_read(struct proc *p, void (*fn)(const char *line, void *arg), void *arg);
/* Once pidfd is readable: 1 and its wait status in *status if it exited
 * (out stays open for what is left to read), 0 if it has not (an event
 * that was for a process before it). */
int proc_reap(struct proc *p, int *status);
/* Read what is left of the output, up to ms (a grandchild may hold the
 * pipe open after the child exited). */
void proc_drain(struct proc *p, int ms, void (*fn)(const char *line, void *arg), void *arg);
/* SIGTERM to its process group; SIGKILL if it has not exited after ms;
 * reaped. Its last output goes to fn (may be NULL). */
void proc_stop(struct proc *p, int ms, void (*fn)(const char *line, void *arg), void *arg);
/* Close what is left (after the exit has been reaped). */
void proc_close(struct proc *p);
/* "exit status 1", "killed by signal 9": status as proc_reap gives it. */
void proc_status_text(int status, char *buf, size_t len);

/* Output collected as text: each line appended to buf (len bytes, always
 * NUL-terminated; what does not fit is cut), after sep from the last. */
struct proc_text {
	char *buf;
	size_t len, used;
	const char *sep;
};
void proc_text_line(const char *line, void *arg); /* arg: a struct proc_text */

/* Run argv to its end, up to ms; its output into out (up to len, NUL-
 * terminated). The wait status, or -errno (-ETIMEDOUT: killed). For the
 * quick checks at a load (keepalived -t). */
int proc_run(char *const argv[], int ms, char *out, size_t len);

/* The program called name on $PATH (out at least PATH_MAX), or -ENOENT. */
int proc_find(const char *name, char *out, size_t len);

#endif
