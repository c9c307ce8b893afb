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
#include <sys/epoll.h>

#include "capture/capture.h"
#include "daemon/daemon_int.h"
#include "lib/log.h"

#define U(x) ((unsigned long long)(x))

struct dcap {
	char *name;
	const struct capture_conf *conf;      /* in dm->cur.pol (or the policy being loaded) */
	struct capture *c;                    /* NULL: not running */
	struct capture_info info;
	struct capture_stats last;            /* when stopped: the final counters */
	char error[256];                      /* why it is not running ("" if it is) */
	uint64_t drops_reported;              /* drops already in a log warning */
	time_t warned_at;
};

/* Sum of every way a frame can be lost on the way to the file. */
static uint64_t drops_of(const struct capture_stats *s)
{
	return s->rx_dropped + s->rx_ring_full + s->rx_invalid_descs + s->oversize + s->writer_queue_drops +
	       s->writer_write_drops + s->mirror_failed;
}

static bool prefixes_equal(const struct addr_match *a, const struct addr_match *b)
{
	if (a->any != b->any || a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->v[i].family != b->v[i].family || a->v[i].plen != b->v[i].plen ||
		    memcmp(a->v[i].addr, b->v[i].addr, 16))
			return false;
	return true;
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
	return !strcmp(a->ifname, b->ifname) && !strcmp(a->mirror_from, b->mirror_from) &&
	       !strcmp(a->file, b->file) && a->rotate_size == b->rotate_size &&
	       a->rotate_keep == b->rotate_keep && a->snaplen == b->snaplen &&
	       a->match.proto == b->match.proto && a->match.min_len == b->match.min_len &&
	       a->match.max_len == b->match.max_len && a->match.non_ip == b->match.non_ip &&
	       prefixes_equal(&a->match.from, &b->match.from) && prefixes_equal(&a->match.to, &b->match.to) &&
	       ports_equal(&a->match.service, &b->match.service);
}

static void dcap_stop(struct daemon *dm, struct dcap *d)
{
	int r;

	if (!d->c)
		return;
	epoll_ctl(dm->epfd, EPOLL_CTL_DEL, capture_done_fd(d->c), NULL);
	r = capture_stop(d->c, &d->last);
	d->c = NULL;
	if (r < 0)
		snprintf(d->error, sizeof(d->error), "stopped; closing %s: %s", d->conf->file, strerror(-r));
	else if (!d->error[0])
		snprintf(d->error, sizeof(d->error), "stopped");
}

static void dcap_free(struct daemon *dm, struct dcap *d)
{
	dcap_stop(dm, d);
	free(d->name);
}

/* A restart, or a new daemon, never throws an earlier file away. */
static const struct capture_opts start_opts = { .keep_existing = true };

static int dcap_start(struct daemon *dm, struct dcap *d, FILE *report)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	memset(&d->last, 0, sizeof(d->last));
	d->error[0] = '\0';
	r = capture_start(d->conf, &start_opts, &d->c);
	if (r < 0) {
		d->c = NULL;
		snprintf(d->error, sizeof(d->error), "cannot start: %s (see the daemon's log)", strerror(-r));
		if (report)
			fprintf(report, "warning: capture %s on %s not started: %s\n", d->name, d->conf->ifname,
				strerror(-r));
		return r;
	}
	capture_get_info(d->c, &d->info);
	ev.data.fd = capture_done_fd(d->c);
	if (dm->epfd >= 0)
		epoll_ctl(dm->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	log_info("capture %s: %s, %u queue(s), %s XDP, %s, to %s", d->name, d->info.ifname, d->info.nqueues,
		 capture_xdp_mode_name(d->info.xdp_mode), d->info.zerocopy ? "zero-copy" : "copy mode",
		 d->conf->file);
	return 0;
}

void daemon_captures_apply(struct daemon *dm, const struct policy *p, FILE *report)
{
	uint32_t n = p ? p->ncaptures : 0, started = 0, kept = 0;
	struct dcap *nv = calloc(n ? n : 1, sizeof(*nv));

	if (!nv) {
		if (report)
			fprintf(report, "warning: out of memory: captures unchanged\n");
		return;
	}
	/* Keep what is unchanged; stop the rest first, so that a changed
	 * capture can take its interface again. */
	for (uint32_t i = 0; i < n; i++) {
		const struct capture_conf *cf = &p->captures[i];

		for (uint32_t j = 0; j < dm->ncaps; j++) {
			struct dcap *o = &dm->caps[j];

			if (o->name && !strcmp(o->name, cf->name) && o->c && conf_equal(o->conf, cf)) {
				nv[i] = *o;
				memset(o, 0, sizeof(*o));
				kept++;
				break;
			}
		}
		nv[i].conf = cf;
	}
	for (uint32_t j = 0; j < dm->ncaps; j++)
		dcap_free(dm, &dm->caps[j]);
	free(dm->caps);
	dm->caps = nv;
	dm->ncaps = n;
	for (uint32_t i = 0; i < n; i++) {
		if (nv[i].c)
			continue;
		nv[i].name = strdup(p->captures[i].name);
		if (dcap_start(dm, &nv[i], report) == 0)
			started++;
	}
	if (report && n)
		fprintf(report, "captures: %u running (%u kept, %u started), %u failed\n", kept + started, kept,
			started, n - kept - started);
}

void daemon_captures_stop_all(struct daemon *dm)
{
	for (uint32_t j = 0; j < dm->ncaps; j++)
		dcap_free(dm, &dm->caps[j]);
	free(dm->caps);
	dm->caps = NULL;
	dm->ncaps = 0;
}

bool daemon_captures_event(struct daemon *dm, int fd)
{
	for (uint32_t j = 0; j < dm->ncaps; j++) {
		struct dcap *d = &dm->caps[j];
		struct capture_stats st;

		if (!d->c || capture_done_fd(d->c) != fd)
			continue;
		capture_stats(d->c, &st);
		snprintf(d->error, sizeof(d->error), "ended: %s",
			 st.end_error ? strerror(-st.end_error) : "packet limit reached");
		log_warn("capture %s on %s %s; reload to start it again", d->name, d->info.ifname, d->error);
		dcap_stop(dm, d);
		return true;
	}
	return false;
}

static void json_s(FILE *f, const char *k, const char *v, bool comma)
{
	fprintf(f, "%s\"%s\":", comma ? "," : "", k);
	daemon_json_str(f, v);
}

void daemon_captures_status(struct daemon *dm, FILE *f, bool json)
{
	if (json) {
		fputs("[", f);
		for (uint32_t j = 0; j < dm->ncaps; j++) {
			const struct dcap *d = &dm->caps[j];

			fputs(j ? ",{" : "{", f);
			json_s(f, "name", d->name, false);
			json_s(f, "interface", d->conf->ifname, true);
			json_s(f, "file", d->conf->file, true);
			fprintf(f, ",\"running\":%s", d->c ? "true" : "false");
			if (d->c) {
				json_s(f, "xdp_mode", capture_xdp_mode_name(d->info.xdp_mode), true);
				fprintf(f, ",\"zerocopy\":%s,\"queues\":%u,\"frames_per_queue\":%u",
					d->info.zerocopy ? "true" : "false", d->info.nqueues, d->info.frames_per_queue);
				json_s(f, "copy_reason", d->info.copy_reason ? d->info.copy_reason : "", true);
				/* What the driver said over the netdev genl family (0: unknown). */
				fprintf(f, ",\"xdp_features\":%llu,\"zc_max_segs\":%u", U(d->info.xdp_features),
					d->info.zc_max_segs);
			}
			if (d->conf->mirror_from[0]) {
				json_s(f, "mirror_from", d->conf->mirror_from, true);
				json_s(f, "mirror_peer", d->info.mirror_peer, true);
			}
			json_s(f, "error", d->error, true);
			fputs("}", f);
		}
		fputs("]", f);
		return;
	}
	if (!dm->ncaps)
		return;
	fprintf(f, "captures:\n");
	for (uint32_t j = 0; j < dm->ncaps; j++) {
		const struct dcap *d = &dm->caps[j];

		if (!d->c) {
			fprintf(f, "  %-12s %s -> %s: not running: %s\n", d->name, d->conf->ifname, d->conf->file,
				d->error);
			continue;
		}
		fprintf(f, "  %-12s %s%s%s%s -> %s: %u rx queue%s, %s XDP, %s%s%s", d->name, d->conf->ifname,
			d->conf->mirror_from[0] ? " (mirror of " : "", d->conf->mirror_from[0] ? d->conf->mirror_from : "",
			d->conf->mirror_from[0] ? ")" : "",
			d->conf->file, d->info.nqueues, d->info.nqueues == 1 ? "" : "s",
			capture_xdp_mode_name(d->info.xdp_mode), d->info.zerocopy ? "zero-copy" : "copy mode",
			d->info.copy_reason ? " (" : "", d->info.copy_reason ? d->info.copy_reason : "");
		fprintf(f, "%s\n", d->info.copy_reason ? ")" : "");
	}
}

static void stats_of(struct dcap *d, struct capture_stats *st)
{
	if (d->c)
		capture_stats(d->c, st);
	else
		*st = d->last;
}

void daemon_captures_stats(struct daemon *dm, FILE *f, bool json)
{
	struct capture_stats s;

	if (json) {
		fputs("[", f);
		for (uint32_t j = 0; j < dm->ncaps; j++) {
			stats_of(&dm->caps[j], &s);
			fputs(j ? ",{" : "{", f);
			json_s(f, "name", dm->caps[j].name, false);
			fprintf(f,
				",\"running\":%s,\"packets\":%llu,\"bytes\":%llu,\"descriptors\":%llu,\"multibuf\":%llu,"
				"\"oversize\":%llu,\"xdp_seen\":%llu,\"xdp_matched\":%llu,\"xdp_redirected\":%llu,"
				"\"rx_dropped\":%llu,\"rx_ring_full\":%llu,\"rx_fill_ring_empty_descs\":%llu,"
				"\"rx_invalid_descs\":%llu,\"written\":%llu,\"writer_queue_drops\":%llu,"
				"\"writer_write_drops\":%llu,\"files\":%llu,\"mirrored\":%llu,\"mirror_failed\":%llu",
				dm->caps[j].c ? "true" : "false", U(s.packets), U(s.bytes), U(s.descs), U(s.multibuf),
				U(s.oversize), U(s.xdp_seen), U(s.xdp_matched), U(s.xdp_redirected), U(s.rx_dropped),
				U(s.rx_ring_full), U(s.rx_fill_ring_empty_descs), U(s.rx_invalid_descs), U(s.written),
				U(s.writer_queue_drops), U(s.writer_write_drops), U(s.files), U(s.mirrored),
				U(s.mirror_failed));
			json_s(f, "writer_error", s.writer_errno ? strerror(s.writer_errno) : "", true);
			fputs("}", f);
		}
		fputs("]", f);
		return;
	}
	if (!dm->ncaps)
		return;
	fprintf(f, "\ncapture      %12s %14s %8s %10s %10s %10s %10s %10s\n", "packets", "bytes", "multibuf",
		"written", "kern-drop", "ring-full", "fill-empty", "wr-drops");
	for (uint32_t j = 0; j < dm->ncaps; j++) {
		stats_of(&dm->caps[j], &s);
		fprintf(f, "%-12s %12llu %14llu %8llu %10llu %10llu %10llu %10llu %10llu%s%s\n", dm->caps[j].name,
			U(s.packets), U(s.bytes), U(s.multibuf), U(s.written), U(s.rx_dropped + s.rx_invalid_descs),
			U(s.rx_ring_full), U(s.rx_fill_ring_empty_descs),
			U(s.writer_queue_drops + s.writer_write_drops + s.oversize),
			s.writer_errno ? "  error: " : "", s.writer_errno ? strerror(s.writer_errno) : "");
		if (dm->caps[j].conf->mirror_from[0])
			fprintf(f, "%-12s mirrored from %s: %llu frames, %llu not sent\n", "", dm->caps[j].conf->mirror_from,
				U(s.mirrored), U(s.mirror_failed));
	}
}

/* Overload is reported, not only counted: at most one warning per capture
 * every DROP_WARN_SECS while drops keep growing. */
#define DROP_WARN_SECS 10

void daemon_captures_tick(struct daemon *dm)
{
	time_t now = time(NULL);

	for (uint32_t j = 0; j < dm->ncaps; j++) {
		struct dcap *d = &dm->caps[j];
		struct capture_stats s;
		uint64_t drops;

		if (!d->c || now - d->warned_at < DROP_WARN_SECS)
			continue;
		capture_stats(d->c, &s);
		drops = drops_of(&s);
		if (drops <= d->drops_reported)
			continue;
		log_warn("capture %s: %llu frames lost since the last report (kernel: rx_dropped %llu, rx_ring_full %llu, "
			 "invalid %llu; writer: queue %llu, write %llu%s%s; oversize %llu; mirror %llu); see nfbox stats",
			 d->name, U(drops - d->drops_reported), U(s.rx_dropped), U(s.rx_ring_full), U(s.rx_invalid_descs),
			 U(s.writer_queue_drops), U(s.writer_write_drops), s.writer_errno ? ": " : "",
			 s.writer_errno ? strerror(s.writer_errno) : "", U(s.oversize), U(s.mirror_failed));
		d->drops_reported = drops;
		d->warned_at = now;
	}
}
