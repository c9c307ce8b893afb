/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A node of a fleet (`nfbox run --fleet FILE`, fleet.c): its group's policy
 * comes from etcd and is applied through the same path as a local reload;
 * its status is kept in etcd under a lease; the entries of its shared sets
 * are kept in etcd for every node of the group.
 *
 * The talk with etcd runs in a thread of its own (etcd answers in its own
 * time, and the loop must not wait for it); what it hears reaches the loop
 * through a queue and an eventfd, and what the loop has to say (the status,
 * the shared sets' changes, a check that etcd is still reached) goes the
 * other way. The node never needs etcd to enforce: the last revision it
 * applied is on disk (STATE/fleet/), and is what a start enforces.
 */
#ifndef NFBOX_DAEMON_FLEET_H
#define NFBOX_DAEMON_FLEET_H

#include "daemon/daemon_int.h"

/* At start, before the policy is loaded: the fleet file read, the thread
 * started; dm->policy_path becomes the last revision applied, if any.
 * 0 or -errno (said in d). */
int fleet_open(struct daemon *dm, struct diags *d);
void fleet_close(struct daemon *dm);
void fleet_tick(struct daemon *dm);
/* Once a round: a revision to apply, a canary's confirmation, the status;
 * after a load, the shared sets made to hold what etcd holds. A shared
 * set's change here (dyn_listen) goes to etcd. */

/* What `status` shows of it. */
struct report_fleet {
	bool present;
	char node[64], group[64];
	bool connected;
	char endpoint[160];
	long long since; /* time() of the last change of connected */
	long long revision;
	char fingerprint[65]; /* of the revision applied; "" none */
	bool local_change;    /* what is enforced is not that revision (a local reload) */
	long long candidate;  /* a canary's revision, 0: none */
	const char *candidate_state;
	char last_error[512];
	unsigned long published, received; /* shared sets' changes */
};
void fleet_report(struct daemon *dm, struct report_fleet *out);

#endif
