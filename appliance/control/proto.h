/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control protocol between the nfbox commands and `nfbox run`, over a
 * unix stream socket. Both sides use this one definition.
 *
 * A request is one line:
 *     request = verb *(" " arg) "\n"        at most CTL_MAX_REQUEST bytes
 *     arg     = name | name "=" value       value percent-encoded (%XX)
 * with the verbs and arguments of the table in proto.c (status [json],
 * stats [json] [zero] [unused [since=SECONDS]], reload [policy=PATH] [confirm=SECONDS], log, stop [keep],
 * confirm, diff [policy=PATH] [json], metrics, set-add set=NAME [timeout=SECONDS]
 * [source=NAME] [force], set-del set=NAME [source=NAME], set-list [set=NAME] [json],
 * set-flush set=NAME, trace [count=N] [timeout=SECONDS] [iif=NAME] [from=PREFIX] [to=PREFIX]
 * [proto=PROTO] [port=N] [family=ipv4|ipv6]). set-add and set-del read their prefixes, one per
 * line, from a file sent with the request (SCM_RIGHTS); source names it
 * in messages. Anything else is
 * refused with a message; nothing is guessed.
 *
 * The reply is a first line "ok", "error" or "invalid" (an error: the policy
 * file of a reload or diff cannot be read, is invalid or exceeds a limit),
 * then text (or JSON), until the daemon closes the connection. `log` replies "ok" and then streams one
 * verdict event per line; `trace` replies "ok", then one JSON object per traced packet, and last
 * {"end":WHY,"traced":N} (docs/report.md).
 */
#ifndef NFBOX_CONTROL_PROTO_H
#define NFBOX_CONTROL_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "base/diag.h"

#define CTL_MAX_REQUEST 4096

#define CTL_REPLY_OK	  "ok\n"
#define CTL_REPLY_ERROR	  "error\n"
#define CTL_REPLY_INVALID "invalid\n"

enum ctl_verb {
	CTL_STATUS,
	CTL_STATS,
	CTL_RELOAD,
	CTL_LOG,
	CTL_STOP,
	CTL_CONFIRM,
	CTL_DIFF,
	CTL_METRICS,
	CTL_SET_ADD,
	CTL_SET_DEL,
	CTL_SET_LIST,
	CTL_SET_FLUSH,
	CTL_ROLLBACK,
	CTL_TRACE,
	CTL_NVERBS,
};

struct ctl_request {
	enum ctl_verb verb;
	bool json;	  /* status, stats: JSON instead of text */
	char *policy;	  /* reload: the policy file (absolute), NULL for the configured one */
	bool keep;	  /* stop: leave the policy pinned and enforced for the next daemon */
	unsigned confirm; /* reload: roll back after this many seconds unless confirmed; 0: no */
	bool zero;	  /* stats: the counters as they were, then set to 0 */
	bool unused;	  /* stats: only the rules without a hit (since) */
	unsigned since;	  /* stats unused: ... in the last this many seconds; 0: ever */
	char *set;	  /* set-*: the dynamic set */
	unsigned timeout; /* set-add: seconds the entries stay; 0: until deleted */
	char *source;	  /* set-add, set-del: what the prefixes were read from ("stdin", a path) */
	bool force;	  /* set-add: addresses never banned (never-ban) too */
	/* trace (live): the next count packets (timeout: for at most so many
	 * seconds) that arrive on iif, from and to the prefixes, of family,
	 * proto and to port (has_port); each NULL: any */
	unsigned count;
	char *iif, *from, *to, *proto, *family;
	unsigned port;
	bool has_port;
};

#define CTL_MAX_CONFIRM	      (7u * 86400)    /* a week */
#define CTL_MAX_TIMEOUT	      (365u * 86400)  /* a year (DYNSET_MAX_TIMEOUT_S) */
#define CTL_MAX_SINCE	      (3650u * 86400) /* ten years */
#define CTL_MAX_TRACE_COUNT   1000	      /* trace: packets */
#define CTL_MAX_TRACE_TIMEOUT 3600	      /* trace: seconds */

const char *ctl_verb_name(enum ctl_verb v);

/* Parse one request line (len bytes, without its newline) into *out.
 * 0, or -EINVAL with the reason in d; *out is untouched on failure. */
int ctl_request_parse(const char *line, size_t len, struct ctl_request *out, struct diags *d);

/* The request as a line, newline included (malloc'd; NULL: no memory). */
char *ctl_request_format(const struct ctl_request *r);

void ctl_request_free(struct ctl_request *r);

#endif
