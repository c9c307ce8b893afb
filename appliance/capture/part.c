/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The policy's `capture:` entries in the daemon. After a policy is in force
 * its captures are reconciled with the running ones: a capture whose
 * configuration is unchanged keeps running (same file, counters go on), a
 * changed one is restarted, a removed one is stopped (its file closed
 * completely), a new one started. A capture that cannot start (no such
 * interface, an XDP program already there, an unwritable file) does not
 * stop enforcement: it is reported by the reload and shown as failed in
 * `nfbox status` until a reload fixes it. A capture that ends by itself
 * (the interface went away) keeps its last counters.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "daemon/daemon_int.h"
#include "daemon/captures.h"
#include "daemon/report.h"
#include "base/log.h"

#define U(x) ((unsigned long long)(x))

struct dcap {
	struct handler done; /* the capture's end notice */
	char *name;
	const struct capture_conf *conf; /* in dm->cur.pol (or the policy being loaded) */
	struct capture *c;		 /* NULL: not running */
	struct capture_info info;
	struct capture_stats last; /* when stopped: the final counters */
	char error[256];	   /* why it is not running ("" if it is) */
	uint64_t drops_reported;   /* drops already in a log warning */
	time_t warned_at;
};

/* Sum of every way a frame can be lost on the way to the file. */
static uint64_t drops_of(const struct capture_stats *s)
{
	return s->rx_dropped + s->rx_ring_full + s->rx_invalid_descs + s->oversize + s->writer_queue_drops +
	       s->writer_write_drops + s->mirror_failed;
}

static bool ports_equal(const struct port_match *a, const struct port_match *b)
{
	if (a->any != b->any || a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->v[i].proto != b->v[i].proto || a->v[i].lo != b->v[i].lo || a->v[i].hi != b->v[i].hi)
			return false;
	return true;
}

static bool conf_equal(const struct capture_conf *a, const struct capture_conf *b)
{
	return !strcmp(a->ifname, b->ifname) && !strcmp(a->mirror_from, b->mirror_from) && !strcmp(a->file, b->file) &&
	       a->rotate_size == b->rotate_size && a->rotate_keep == b->rotate_keep && a->snaplen == b->snaplen &&
	       a->match.proto == b->match.proto && a->match.min_len == b->match.min_len &&
	       a->match.max_len == b->match.max_len && a->match.non_ip == b->match.non_ip &&
	       policy_addrs_equal(&a->match.from, &b->match.from) && policy_addrs_equal(&a->match.to, &b->match.to) &&
	       ports_equal(&a->match.service, &b->match.service);
}

static void dcap_stop(struct daemon *dm, struct dcap *d)
{
	int r;

	if (!d->c)
		return;
	loop_unwatch(&dm->loop, &d->done);
	r = capture_stop(d->c, &d->last);
	d->c = NULL;
	if (r < 0)
		snprintf(d->error, sizeof(d->error), "stopped; closing %s: %s", d->conf->file, strerror(-r));
	else if (!d->error[0])
		snprintf(d->error, sizeof(d->error), "stopped");
}

static void dcap_free(struct daemon *dm, struct dcap *d)
{
	if (!d)
		return;
	dcap_stop(dm, d);
	free(d->name);
	free(d);
}

/* The capture ended by itself (interface gone, packet limit). */
static void on_done(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dcap *d = (struct dcap *)h; /* done is the first member */
	struct capture_stats st;

	if (!d->c)
		return;
	capture_stats(d->c, &st);
	snprintf(d->error, sizeof(d->error), "ended: %s",
		 st.end_error ? strerror(-st.end_error) : "packet limit reached");
	log_warn("capture %s on %s %s; reload to start it again", d->name, d->info.ifname, d->error);
	dcap_stop(dm, d);
}

/* A restart, or a new daemon, never throws an earlier file away. */
static const struct capture_opts start_opts = { .keep_existing = true };

static int dcap_start(struct daemon *dm, struct dcap *d, struct diags *report)
{
	struct diags why;
	int r;

	memset(&d->last, 0, sizeof(d->last));
	d->error[0] = '\0';
	diags_init(&why);
	r = capture_start(d->conf, &start_opts, &why, &d->c);
	if (r < 0) {
		const char *msg = diags_last(&why, strerror(-r));

		if (!strncmp(msg, "capture: ", 9))
			msg += 9;

		d->c = NULL;
		snprintf(d->error, sizeof(d->error), "cannot start: %s", msg);
		diag_warn(report, DIAG_NOWHERE, "capture %s on %s not started: %s", d->name, d->conf->ifname, msg);
		diags_free(&why);
		return r;
	}
	diags_free(&why);
	capture_get_info(d->c, &d->info);
	d->done = (struct handler){ .fd = capture_done_fd(d->c), .fn = on_done, .ctx = dm };
	loop_watch(&dm->loop, &d->done);
	log_info("capture %s: %s, %u queue(s), %s XDP, %s, to %s", d->name, d->info.ifname, d->info.nqueues,
		 capture_xdp_mode_name(d->info.xdp_mode), d->info.zerocopy ? "zero-copy" : "copy mode", d->conf->file);
	return 0;
}

/* The running capture that p's entry cf can keep, taken out of the old
 * list; NULL if none. */
static struct dcap *take_unchanged(struct daemon *dm, const struct capture_conf *cf)
{
	for (uint32_t j = 0; j < dm->ncaps; j++) {
		struct dcap *o = dm->caps[j];

		if (o && o->c && !strcmp(o->name, cf->name) && conf_equal(o->conf, cf)) {
			dm->caps[j] = NULL;
			return o;
		}
	}
	return NULL;
}

void daemon_captures_apply(struct daemon *dm, const struct policy *p, struct diags *report)
{
	uint32_t n = p ? p->ncaptures : 0, started = 0, kept = 0;
	struct dcap **nv = calloc(n ? n : 1, sizeof(*nv));

	if (!nv) {
		diag_warn(report, DIAG_NOWHERE, "out of memory: captures unchanged");
		return;
	}
	/* Keep what is unchanged; stop the rest first, so that a changed
	 * capture can take its interface again. */
	for (uint32_t i = 0; i < n; i++)
		if ((nv[i] = take_unchanged(dm, &p->captures[i]))) {
			nv[i]->conf = &p->captures[i];
			kept++;
		}
	daemon_captures_stop_all(dm);
	dm->caps = nv;
	dm->ncaps = n;
	for (uint32_t i = 0; i < n; i++) {
		if (nv[i])
			continue;
		if (!(nv[i] = calloc(1, sizeof(*nv[i]))) || !(nv[i]->name = strdup(p->captures[i].name))) {
			diag_warn(report, DIAG_NOWHERE, "out of memory: capture %s not started", p->captures[i].name);
			continue;
		}
		nv[i]->conf = &p->captures[i];
		if (dcap_start(dm, nv[i], report) == 0)
			started++;
	}
	if (n)
		diag_note(report, DIAG_NOWHERE, "captures: %u running (%u kept, %u started), %u failed", kept + started,
			  kept, started, n - kept - started);
}

void daemon_captures_stop_all(struct daemon *dm)
{
	for (uint32_t j = 0; j < dm->ncaps; j++)
		dcap_free(dm, dm->caps[j]);
	free(dm->caps);
	dm->caps = NULL;
	dm->ncaps = 0;
}

static void stats_of(struct dcap *d, struct capture_stats *st)
{
	if (d->c)
		capture_stats(d->c, st);
	else
		*st = d->last;
}

int daemon_captures_report(struct daemon *dm, bool with_stats, struct report_capture **out, uint32_t *n)
{
	struct report_capture *v = calloc(dm->ncaps ? dm->ncaps : 1, sizeof(*v));
	uint32_t k = 0;

	*out = v;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (uint32_t j = 0; j < dm->ncaps; j++) {
		struct dcap *d = dm->caps[j];

		if (!d)
			continue;
		v[k] = (struct report_capture){ .name = d->name,
						.ifname = d->conf->ifname,
						.file = d->conf->file,
						.mirror_from = d->conf->mirror_from,
						.running = d->c != NULL,
						.info = d->info,
						.error = d->error };
		if (with_stats)
			stats_of(d, &v[k].stats);
		k++;
	}
	*n = k;
	return 0;
}

/* Overload is reported, not only counted: at most one warning per capture
 * every DROP_WARN_SECS while drops keep growing. */
#define DROP_WARN_SECS 10

void daemon_captures_tick(struct daemon *dm)
{
	time_t now = time(NULL);

	for (uint32_t j = 0; j < dm->ncaps; j++) {
		struct dcap *d = dm->caps[j];
		struct capture_stats s;
		uint64_t drops;

		if (d && d->c) {
			capture_reseat(d->c);
			capture_get_info(d->c, &d->info);
		}
		if (!d || !d->c || now - d->warned_at < DROP_WARN_SECS)
			continue;
		capture_stats(d->c, &s);
		drops = drops_of(&s);
		if (drops <= d->drops_reported)
			continue;
		log_warn("capture %s: %llu frames lost since the last report (kernel: rx_dropped %llu, rx_ring_full "
			 "%llu, "
			 "invalid %llu; writer: queue %llu, write %llu%s%s; oversize %llu; mirror %llu); see nfbox "
			 "stats",
			 d->name, U(drops - d->drops_reported), U(s.rx_dropped), U(s.rx_ring_full),
			 U(s.rx_invalid_descs), U(s.writer_queue_drops), U(s.writer_write_drops),
			 s.writer_errno ? ": " : "", s.writer_errno ? strerror(s.writer_errno) : "", U(s.oversize),
			 U(s.mirror_failed));
		d->drops_reported = drops;
		d->warned_at = now;
	}
}
