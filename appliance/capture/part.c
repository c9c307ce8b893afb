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
#include <time.h>

#include "capture/capture.h"
#include "daemon/part.h"
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
	struct captures *all;
};

struct captures {
	struct daemon *dm;
	struct dcap **v;
	uint32_t n;
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

static void dcap_stop(struct dcap *d)
{
	int r;

	if (!d->c)
		return;
	loop_unwatch(daemon_loop(d->all->dm), &d->done);
	r = capture_stop(d->c, &d->last);
	d->c = NULL;
	if (r < 0)
		snprintf(d->error, sizeof(d->error), "stopped; closing %s: %s", d->conf->file, strerror(-r));
	else if (!d->error[0])
		snprintf(d->error, sizeof(d->error), "stopped");
}

static void dcap_free(struct dcap *d)
{
	if (!d)
		return;
	dcap_stop(d);
	free(d->name);
	free(d);
}

/* The capture ended by itself (interface gone, packet limit). */
static void on_done(struct handler *h, uint32_t events)
{
	struct dcap *d = (struct dcap *)h; /* done is the first member */
	struct capture_stats st;

	(void)events;
	if (!d->c)
		return;
	capture_stats(d->c, &st);
	snprintf(d->error, sizeof(d->error), "ended: %s",
		 st.end_error ? strerror(-st.end_error) : "packet limit reached");
	log_warn("capture %s on %s %s; reload to start it again", d->name, d->info.ifname, d->error);
	dcap_stop(d);
}

/* A restart, or a new daemon, never throws an earlier file away. */
static const struct capture_opts start_opts = { .keep_existing = true };

static int dcap_start(struct dcap *d, struct diags *report)
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
	d->done = (struct handler){ .fd = capture_done_fd(d->c), .fn = on_done, .ctx = d };
	loop_watch(daemon_loop(d->all->dm), &d->done);
	log_info("capture %s: %s, %u queue(s), %s XDP, %s, to %s", d->name, d->info.ifname, d->info.nqueues,
		 capture_xdp_mode_name(d->info.xdp_mode), d->info.zerocopy ? "zero-copy" : "copy mode", d->conf->file);
	return 0;
}

/* The running capture that p's entry cf can keep, taken out of the old
 * list; NULL if none. */
static struct dcap *take_unchanged(struct captures *cs, const struct capture_conf *cf)
{
	for (uint32_t j = 0; j < cs->n; j++) {
		struct dcap *o = cs->v[j];

		if (o && o->c && !strcmp(o->name, cf->name) && conf_equal(o->conf, cf)) {
			cs->v[j] = NULL;
			return o;
		}
	}
	return NULL;
}

static void stop_all(struct captures *cs)
{
	for (uint32_t j = 0; j < cs->n; j++)
		dcap_free(cs->v[j]);
	free(cs->v);
	cs->v = NULL;
	cs->n = 0;
}

/* The captures follow the policy p, once it is enforced and while the
 * policy before it is still alive; one that cannot start is a warning in
 * report, never an error. */
static void apply(struct captures *cs, const struct policy *p, struct diags *report)
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
		if ((nv[i] = take_unchanged(cs, &p->captures[i]))) {
			nv[i]->conf = &p->captures[i];
			kept++;
		}
	stop_all(cs);
	cs->v = nv;
	cs->n = n;
	for (uint32_t i = 0; i < n; i++) {
		if (nv[i])
			continue;
		if (!(nv[i] = calloc(1, sizeof(*nv[i]))) || !(nv[i]->name = strdup(p->captures[i].name))) {
			diag_warn(report, DIAG_NOWHERE, "out of memory: capture %s not started", p->captures[i].name);
			continue;
		}
		nv[i]->conf = &p->captures[i];
		nv[i]->all = cs;
		if (dcap_start(nv[i], report) == 0)
			started++;
	}
	if (n)
		diag_note(report, DIAG_NOWHERE, "captures: %u running (%u kept, %u started), %u failed", kept + started,
			  kept, started, n - kept - started);
}

static void stats_of(struct dcap *d, struct capture_stats *st)
{
	if (d->c)
		capture_stats(d->c, st);
	else
		*st = d->last;
}

/* Overload is reported, not only counted: at most one warning per capture
 * every DROP_WARN_SECS while drops keep growing. */
#define DROP_WARN_SECS 10

static void captures_tick(void *self)
{
	struct captures *cs = self;
	time_t now = time(NULL);

	for (uint32_t j = 0; j < cs->n; j++) {
		struct dcap *d = cs->v[j];
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

/* ---- the part ---- */

static int captures_open(struct daemon *dm, void **self, struct diags *d)
{
	struct captures *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return diag_errno(d, -ENOMEM, "captures");
	cs->dm = dm;
	*self = cs;
	return 0;
}

static void captures_commit(void *self, const struct change *c, struct diags *d)
{
	apply(self, c->nl->pol, d);
}

static void captures_stop(void *self, bool keep)
{
	(void)keep;
	stop_all(self);
}

static void captures_close(void *self)
{
	if (self)
		stop_all(self);
	free(self);
}

static void status_text(const struct rep *o, FILE *f)
{
	const struct rep *c = rep_first(o);

	if (c)
		fprintf(f, "captures:\n");
	for (; c; c = rep_next(c)) {
		const char *mirror = rep_s(c, "mirror_from");

		if (!rep_b(c, "running")) {
			fprintf(f, "  %-12s %s -> %s: not running: %s\n", rep_s(c, "name"), rep_s(c, "interface"),
				rep_s(c, "file"), rep_s(c, "error"));
			continue;
		}
		fprintf(f, "  %-12s %s%s%s%s -> %s: %llu rx queue%s, %s XDP, %s", rep_s(c, "name"),
			rep_s(c, "interface"), *mirror ? " (mirror of " : "", mirror, *mirror ? ")" : "",
			rep_s(c, "file"), U(rep_u(c, "queues")), rep_u(c, "queues") == 1 ? "" : "s",
			rep_s(c, "xdp_mode"), rep_b(c, "zerocopy") ? "zero-copy" : "copy mode");
		if (*rep_s(c, "copy_reason"))
			fprintf(f, " (%s)", rep_s(c, "copy_reason"));
		fputc('\n', f);
	}
}

static void captures_status(void *self, struct rep *status)
{
	struct captures *cs = self;
	struct rep *l = rep_list(status, "captures");

	rep_text(l, status_text);
	for (uint32_t j = 0; j < cs->n; j++) {
		const struct dcap *d = cs->v[j];
		const struct capture_info *in;
		struct rep *o;

		if (!d)
			continue;
		in = &d->info;
		o = rep_object(l, NULL);
		rep_str(o, "name", d->name);
		rep_str(o, "interface", d->conf->ifname);
		rep_str(o, "file", d->conf->file);
		rep_bool(o, "running", d->c != NULL);
		if (d->c) {
			rep_str(o, "xdp_mode", capture_xdp_mode_name(in->xdp_mode));
			rep_bool(o, "zerocopy", in->zerocopy);
			rep_uint(o, "queues", in->nqueues);
			rep_uint(o, "frames_per_queue", in->frames_per_queue);
			rep_str(o, "copy_reason", in->copy_reason ? in->copy_reason : "");
			/* what the driver said over the netdev genl family (0: unknown) */
			rep_uint(o, "xdp_features", in->xdp_features);
			rep_uint(o, "zc_max_segs", in->zc_max_segs);
		}
		if (d->conf->mirror_from[0]) {
			rep_str(o, "mirror_from", d->conf->mirror_from);
			rep_str(o, "mirror_peer", in->mirror_peer);
		}
		rep_str(o, "error", d->error);
	}
}

static void stats_text(const struct rep *o, FILE *f)
{
	const struct rep *c = rep_first(o);

	if (c)
		fprintf(f, "\ncapture      %12s %14s %8s %10s %10s %10s %10s %10s\n", "packets", "bytes", "multibuf",
			"written", "kern-drop", "ring-full", "fill-empty", "wr-drops");
	for (; c; c = rep_next(c)) {
		fprintf(f, "%-12s %12llu %14llu %8llu %10llu %10llu %10llu %10llu %10llu", rep_s(c, "name"),
			U(rep_u(c, "packets")), U(rep_u(c, "bytes")), U(rep_u(c, "multibuf")), U(rep_u(c, "written")),
			U(rep_u(c, "kernel_dropped")), U(rep_u(c, "rx_ring_full")),
			U(rep_u(c, "rx_fill_ring_empty_descs")), U(rep_u(c, "writer_dropped")));
		if (*rep_s(c, "writer_error"))
			fprintf(f, "  error: %s", rep_s(c, "writer_error"));
		fputc('\n', f);
		if (*rep_s(c, "mirror_from"))
			fprintf(f, "%-12s mirrored from %s: %llu frames, %llu not sent\n", "", rep_s(c, "mirror_from"),
				U(rep_u(c, "mirrored")), U(rep_u(c, "mirror_failed")));
	}
}

#define CAPTURE_HELP "Capture counters, by capture and what they count."
static const struct rep_metric m_capture = { "nfbox_capture_total", "counter", CAPTURE_HELP,
					     "capture=name counter=key" };
static const struct rep_metric m_ring_full = { "nfbox_capture_total{counter=\"ring_full\"}", "counter", CAPTURE_HELP,
					       "capture=name" };

static void captures_stats(void *self, struct stats_rows *rows, struct rep *stats, bool zero)
{
	struct captures *cs = self;
	struct rep *l;

	(void)zero;
	if (rows || !stats)
		return;
	l = rep_list(stats, "captures");
	rep_text(l, stats_text);
	for (uint32_t j = 0; j < cs->n; j++) {
		struct dcap *d = cs->v[j];
		struct capture_stats s;
		struct rep *o;

		if (!d)
			continue;
		stats_of(d, &s);
		o = rep_object(l, NULL);
		rep_str(o, "name", d->name);
		rep_bool(o, "running", d->c != NULL);
		rep_metric(rep_uint(o, "packets", s.packets), &m_capture);
		rep_metric(rep_uint(o, "bytes", s.bytes), &m_capture);
		rep_uint(o, "descriptors", s.descs);
		rep_uint(o, "multibuf", s.multibuf);
		rep_uint(o, "oversize", s.oversize);
		rep_uint(o, "xdp_seen", s.xdp_seen);
		rep_uint(o, "xdp_matched", s.xdp_matched);
		rep_uint(o, "xdp_redirected", s.xdp_redirected);
		rep_uint(o, "rx_dropped", s.rx_dropped);
		rep_metric(rep_uint(o, "rx_ring_full", s.rx_ring_full), &m_ring_full);
		rep_uint(o, "rx_fill_ring_empty_descs", s.rx_fill_ring_empty_descs);
		rep_uint(o, "rx_invalid_descs", s.rx_invalid_descs);
		rep_metric(rep_uint(o, "written", s.written), &m_capture);
		rep_uint(o, "written_by_ref", s.by_ref);
		rep_uint(o, "writer_queue_drops", s.writer_queue_drops);
		rep_uint(o, "writer_write_drops", s.writer_write_drops);
		rep_uint(o, "files", s.files);
		rep_metric(rep_uint(o, "mirrored", s.mirrored), &m_capture);
		rep_metric(rep_uint(o, "mirror_failed", s.mirror_failed), &m_capture);
		rep_str(o, "writer_error", s.writer_errno ? strerror(s.writer_errno) : "");
		if (d->conf->mirror_from[0])
			rep_hidden(rep_str(o, "mirror_from", d->conf->mirror_from));
		/* the sums the text and the series show */
		rep_metric(rep_hidden(rep_uint(o, "kernel_dropped", s.rx_dropped + s.rx_invalid_descs)), &m_capture);
		rep_metric(rep_hidden(rep_uint(o, "writer_dropped",
					       s.writer_queue_drops + s.writer_write_drops + s.oversize)),
			   &m_capture);
	}
}

const struct part part_captures = {
	.name = "captures",
	.open = captures_open,
	.commit = captures_commit,
	.tick = captures_tick,
	.status = captures_status,
	.stats = captures_stats,
	.stop = captures_stop,
	.close = captures_close,
};
