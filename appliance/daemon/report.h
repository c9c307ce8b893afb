/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What `nfbox status` and `nfbox stats` answer: first collected into these
 * structs (report.c), then formatted as text or JSON (format.c), so that
 * every output form shows the same collection.
 */
#ifndef NFBOX_DAEMON_REPORT_H
#define NFBOX_DAEMON_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture/capture.h"
#include "backend/backend.h"
#include "daemon/schedules.h"
#include "daemon/dynsets.h"
#include "daemon/feeds.h"
#include "daemon/fleet.h"
#include "daemon/httpd.h"
#include "ha/parse.h"

struct daemon;

struct report_capture {
	const char *name, *ifname, *file, *mirror_from; /* mirror_from: "" if none */
	bool running;
	struct capture_info info; /* when running */
	struct capture_stats stats;
	const char *error; /* why it is not running ("" if it is) */
};

/* The pair (ha:), when the policy in force has one. */
struct report_ha {
	bool present;
	const char *role, *prev_role; /* ha_role_name() */
	long long since;	      /* time() of the last change of role, 0: none */
	unsigned long transitions;
	int priority;
	unsigned advert_ms; /* VRRP's advertisement interval */
	const char *sync_ifname, *error, *dirname;
	char peer[128], sync_addr[64]; /* sync_addr "" until found; peer "A or B" until then */
	struct {
		const char *name, *last_exit; /* last_exit "" if it never exited */
		int pid;		      /* 0: not running */
		unsigned long restarts;
	} daemons[2]; /* keepalived, conntrackd */
	struct ha_sync_stats stats;
	long long stats_at; /* time() of the last conntrackd -s, 0: none yet */
	struct report_ha_virtual {
		char instance[64], address[64];
		const char *ifname, *state;
		unsigned id;
	} *virt; /* malloc'd */
	uint32_t nvirt;
};

struct status_report {
	const char *netns; /* name, "" for the initial namespace or an unnamed one */
	bool netns_initial;
	uint64_t netns_cookie;
	int pid;
	long uptime;
	const char *policy; /* NULL: none loaded */
	uint32_t rules;
	bool defrag;
	const char *backend;	  /* "bpf" or "nftables" */
	struct backend_status be; /* the engine's links and memory, the table */
	unsigned long reloads_ok, reloads_failed;
	bool pending;				   /* a reload --confirm waits for `nfbox confirm` */
	long long pending_deadline, pending_since; /* time(): rolls back at the deadline */
	const char *state_dir;
	const char *version;
	const char *fingerprint; /* of the policy in force, "" if none */
	long long loaded_at;	 /* time() of its load */
	const char *on_disk;	 /* "same", "changed" or why the files cannot be read */
	char disk_fp[65];
	unsigned long long events;
	const char *missing[64]; /* interfaces the policy names that do not exist */
	uint32_t nmissing;
	/* Forwarding: the families (POLICY_FAM_*) the policy forwards or
	 * translates, those this network namespace forwards (read now), and
	 * for each the policy needs and the host lacks, the warning and fix. */
	uint8_t fwd_needed, fwd_host;
	struct report_fwd {
		char msg[384], fix[256];
	} fwd[2]; /* [0] IPv4, [1] IPv6; msg "" when none */
	struct report_capture *caps;
	uint32_t ncaps;
	const struct dynsets *dyn; /* the dynamic sets (their names and sizes) */
	struct dyn_report dynr;	   /* the kernel checked against them, bans refused */
	struct report_ha ha;
	struct report_fleet fleet;
	struct sched_report *sched; /* the rules with when: (schedules.h) */
	uint32_t nsched;
	struct feed_report *feeds; /* the sets of countries and host names (feeds.h) */
	uint32_t nfeeds;
	struct httpd_report http; /* --metrics-listen (httpd.h) */
};

struct stats_report {
	struct stats_row *rows; /* rules and defaults, hook by hook */
	uint32_t nrows;
	struct backend_stats be; /* the backend's own counts */
	uint64_t dyn_repaired;	 /* dynamic-set entries the kernel had wrong, repaired (dynsets.h) */
	uint64_t ban_refused;	 /* automatic bans of addresses never banned */
	struct report_capture *caps;
	uint32_t ncaps;
};

/* Collect; the reports point into the daemon's state (valid until the next
 * reload). 0 or -ENOMEM. */
int report_status(struct daemon *dm, struct status_report *out);
/* zero: then every counter shown (but the captures') back to 0. */
int report_stats(struct daemon *dm, struct stats_report *out, bool zero);
void report_status_free(struct status_report *r);
/* The rules' last hits read into their record and saved (usage.h): when
 * due, or now. */
void report_usage(struct daemon *dm, bool now);
void report_stats_free(struct stats_report *r);

void format_status(const struct status_report *r, FILE *f, bool json);
void format_stats(const struct stats_report *r, FILE *f, bool json);
/* A wall-clock time in ms as an age: "never" (0), "now", "12s ago", "5m
 * ago", "3h ago", "2d ago" (in buf). */
const char *format_ago(long long ms, char *buf, size_t len);
/* stats --unused: the rules and defaults without a hit in the last since
 * seconds (0: ever), with when each came into force. */
void format_unused(const struct stats_report *r, FILE *f, bool json, unsigned since);
/* Both, as the Prometheus text exposition format (`nfbox metrics`). */
void format_metrics(const struct status_report *st, const struct stats_report *sr, FILE *f);

/* captures.c: one report_capture per policy capture (array malloc'd).
 * with_stats: read the counters too. */
int daemon_captures_report(struct daemon *dm, bool with_stats, struct report_capture **out, uint32_t *n);

/* ha.c: the pair's report (out->virt malloc'd). 0 or -ENOMEM. */
int ha_report(struct daemon *dm, struct report_ha *out);

#endif
