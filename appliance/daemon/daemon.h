/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox run`: the enforcing daemon and its control socket. */
#ifndef NFBOX_DAEMON_H
#define NFBOX_DAEMON_H

#include <stdbool.h>

#define NFBOX_DEFAULT_POLICY "/etc/nfbox/policy.yaml"

struct daemon_opts {
	const char *policy;
	const char *socket;	    /* NULL: the default of this network namespace (system/netns.h) */
	const char *pin_dir;	    /* NULL: the default of this network namespace */
	const char *state_dir;	    /* NULL: the default of this network namespace (system/netns.h) */
	const char *log;	    /* NULL: none; "-": stdout */
	bool fresh;		    /* drop pinned state instead of adopting it */
	bool no_pin;		    /* pin nothing: enforcement ends with the process */
	const char *socket_group;   /* may use status, stats and log; NULL: root only */
	bool allow_unsafe_files;    /* read policy and set files whatever their owner and mode */
	const char *metrics_listen; /* serve /metrics over HTTP on ADDRESS:PORT; NULL: not */
	bool no_journal_events;	    /* under systemd, verdict events stay out of the journal */
	const char *fleet;	    /* a fleet's node: the fleet file (etcd, node, group); NULL: not */
	bool strict;		    /* a policy with warnings is not loaded (at the start, on a reload) */
};

/* Exit status of `nfbox run` when the policy file is what failed (it cannot
 * be read, is invalid, or exceeds a limit): EX_CONFIG of sysexits.h. 1 is
 * any other failure; 0 a clean stop. */
#define DAEMON_EXIT_POLICY 78

/* Runs until stopped (SIGTERM, SIGINT, `nfbox stop`); the exit status. */
int daemon_run(const struct daemon_opts *o);

#endif
