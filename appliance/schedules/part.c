/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Schedules: a timerfd on CLOCK_REALTIME, armed for the earliest next
 * change of any scheduled rule (policy/schedule/schedule.h) with
 * TFD_TIMER_CANCEL_ON_SET, so that a clock set by hand or by NTP makes
 * every state be judged again. Each time, the states of all scheduled
 * rules are judged at once and given to the backend in force when they
 * changed; each change is said in the log. A new generation (a reload) is
 * made with the states of its own time (engine_load, the nftables build),
 * and judged again here right after.
 *
 * A scheduled accept rule out of force has the connections it let in cut
 * (unless keep-connections): the backend deletes those of its cut id from
 * conntrack (backend_ops cut), once each time the rule goes out of force.
 * What was cut is kept by cut id, which a rule's name gives: a reload that
 * keeps the rule out of force cuts nothing again, one that puts it out of
 * force cuts at once, and a start cuts what an earlier daemon left.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/part.h"
#include "base/log.h"
#include "lib/plant.h"
#include "netlink/ctevents.h"
#include "policy/schedule/schedule.h"

#define SCHED_RECHECK_S 86400 /* no change within the span: judge again in a day */
#define CUT_LOGGED	8     /* connections named in the log at one edge; the rest counted */
#define CUT_WORDS	((POLICY_CUT_IDS + 64) / 64)

struct schedules {
	struct daemon *dm;
	struct handler h;		  /* the timer; fd -1 while no rule has when: */
	uint64_t applied[SCHED_WORDS];	  /* the states the backend holds */
	const struct policy *pol;	  /* ... of this policy */
	uint64_t cut_done[CUT_WORDS];	  /* cut ids whose connections are cut (their rule out of force since) */
	uint64_t cut[POLICY_CUT_IDS + 1]; /* connections cut, by cut id, since the start */
};

struct cut_log {
	const char *rule;
	uint32_t n;
};

static bool bit_of(const uint64_t *w, uint32_t sched)
{
	return (w[(sched - 1) / 64] >> ((sched - 1) % 64)) & 1;
}

static void judge(struct schedules *s);

static void cut_one(const struct ct_tuple *t, void *arg)
{
	struct cut_log *c = arg;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	bool ports = t->proto == IPPROTO_TCP || t->proto == IPPROTO_UDP || t->proto == IPPROTO_SCTP ||
		     t->proto == IPPROTO_UDPLITE;

	if (c->n++ >= CUT_LOGGED)
		return;
	inet_ntop(t->af, t->src, src, sizeof(src));
	inet_ntop(t->af, t->dst, dst, sizeof(dst));
	if (ports)
		log_info("rule '%s' is out of force (when:): connection cut: proto %u %s port %u to %s port %u",
			 c->rule, t->proto, src, t->sport[0] << 8 | t->sport[1], dst, t->dport[0] << 8 | t->dport[1]);
	else
		log_info("rule '%s' is out of force (when:): connection cut: proto %u %s to %s", c->rule, t->proto, src,
			 dst);
}

/* The connections of a rule out of force cut, once: false if the backend
 * failed (then it is tried again). */
static bool cut_rule(struct schedules *s, struct backend *be, const struct rule *ru)
{
	uint16_t id = ru->when.cut;
	struct cut_log c = { .rule = ru->name };
	struct diags d;
	int r = 0;

	if (s->cut_done[id / 64] >> (id % 64) & 1)
		return true;
	diags_init(&d);
	if (!planted("schedule-no-cut")) /* the test build: connections go on past the edge */
		r = be->ops->cut(be, id, cut_one, &c, &d);
	if (r < 0) {
		log_err("rule '%s' is out of force (when:): %s", ru->name,
			diags_last(&d, "cannot cut the connections it let in"));
		diags_free(&d);
		return false;
	}
	diags_free(&d);
	s->cut_done[id / 64] |= 1ull << (id % 64);
	s->cut[id] += (uint64_t)r;
	if (r)
		log_info("rule '%s' is out of force (when:): %d connections it let in cut%s", ru->name, r,
			 r > CUT_LOGGED ? " (the first named above)" : "");
	return true;
}

/* Each rule out of force has its connections cut; one in force may let
 * some in again. false if a cut failed. */
static bool cut_all(struct schedules *s, struct backend *be, const struct policy *p, const uint64_t *words)
{
	bool ok = true;

	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *ru = &p->rules[i];
		uint16_t id = ru->when.cut;

		if (!id)
			continue;
		if (bit_of(words, ru->when.sched))
			s->cut_done[id / 64] &= ~(1ull << (id % 64));
		else if (!cut_rule(s, be, ru))
			ok = false;
	}
	return ok;
}

static void on_timer(struct handler *h, uint32_t events)
{
	struct schedules *s = h->ctx;
	uint64_t n;

	(void)events;
	/* ECANCELED: the clock was set; either way, judge now */
	if (read(h->fd, &n, sizeof(n)) < 0 && errno == ECANCELED)
		log_info("the clock was set: the schedules are judged again");
	judge(s);
}

static int arm(struct schedules *s, int64_t at)
{
	struct itimerspec its = { .it_value = { .tv_sec = at } };

	return timerfd_settime(s->h.fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL) < 0 ? -errno : 0;
}

static void judge(struct schedules *s)
{
	const struct loaded *cur = daemon_in_force(s->dm);
	struct backend *be = daemon_backend(s->dm);
	int64_t now = (int64_t)time(NULL), next = now + SCHED_RECHECK_S;
	uint64_t words[SCHED_WORDS];
	struct diags d;
	bool changed;

	if (s->h.fd < 0 || !cur->pol || !be)
		return;
	sched_words(cur->pol, now, words);
	for (uint32_t i = 0; i < cur->pol->nrules; i++) {
		const struct rule *ru = &cur->pol->rules[i];
		int64_t t;

		if (!ru->when.sched)
			continue;
		if ((t = sched_next_change(&ru->when, now)) != SCHED_NEVER && t < next)
			next = t;
		if (s->pol == cur->pol && bit_of(s->applied, ru->when.sched) != bit_of(words, ru->when.sched))
			log_info("rule '%s' is %s in force (when:)", ru->name,
				 bit_of(words, ru->when.sched) ? "now" : "no longer");
	}
	changed = s->pol != cur->pol || memcmp(words, s->applied, sizeof(words));
	diags_init(&d);
	if (changed && be->ops->schedule(be, cur, words, &d) < 0) {
		/* the states the backend holds are not known: try again in a second */
		log_err("%s", diags_last(&d, "cannot change the schedules' states"));
		s->pol = NULL;
		next = now + 1;
	} else {
		if (changed) {
			memcpy(s->applied, words, sizeof(words));
			s->pol = cur->pol;
		}
		if (!cut_all(s, be, cur->pol, words))
			next = now + 1; /* try the cut again in a second */
	}
	diags_free(&d);
	if (arm(s, next) < 0)
		log_err("cannot set the schedules' timer: %s", strerror(errno));
}

static bool has_schedules(const struct policy *p)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (p->rules[i].when.sched)
			return true;
	return false;
}

static void timer_close(struct schedules *s)
{
	if (s->h.fd < 0)
		return;
	loop_unwatch(daemon_loop(s->dm), &s->h);
	close(s->h.fd);
	s->h.fd = -1;
}

static int schedules_open(struct daemon *dm, void **self, struct diags *d)
{
	struct schedules *s = calloc(1, sizeof(*s));

	if (!s)
		return diag_errno(d, -ENOMEM, "schedules");
	s->dm = dm;
	s->h = (struct handler){ .fd = -1, .fn = on_timer, .ctx = s };
	*self = s;
	return 0;
}

/* After a reload: a new generation is made with the states of its own
 * time; judged again here, its states given again. */
static void schedules_settle(void *self, const struct change *c, int r)
{
	struct schedules *s = self;

	(void)c;
	if (r < 0)
		return;
	if (!has_schedules(daemon_in_force(s->dm)->pol)) {
		timer_close(s);
		return;
	}
	if (s->h.fd < 0) {
		if ((s->h.fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC)) < 0) {
			log_err("schedules: cannot make their timer: %s; the scheduled rules keep the states of the "
				"reload",
				strerror(errno));
			return;
		}
		if (loop_watch(daemon_loop(s->dm), &s->h) < 0)
			log_err("schedules: cannot watch their timer: %s", strerror(errno));
	}
	s->pol = NULL;
	judge(s);
}

/* "2026-12-05T08:00:00Z (in 3h)" */
static const char *when_text(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	long long in = (long long)(t - (int64_t)time(NULL));
	struct tm tm;
	char at[32];

	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tt, &tm));
	if (in < 120)
		snprintf(buf, len, "%s (in %llds)", at, in < 0 ? 0 : in);
	else if (in < 7200)
		snprintf(buf, len, "%s (in %lldm)", at, in / 60);
	else
		snprintf(buf, len, "%s (in %lldh)", at, in / 3600);
	return buf;
}

/* ", 3 connections cut", ", keeps its connections" (a rule that keeps
 * them) or "" (one that lets none in) */
static const char *cut_text(const struct rep *x, char *buf, size_t len)
{
	if (!rep_has(x, "connections_cut"))
		return rep_b(x, "keep_connections") ? ", keeps its connections" : "";
	uint64_t n = rep_u(x, "connections_cut");

	snprintf(buf, len, ", %llu connection%s cut", (unsigned long long)n, n == 1 ? "" : "s");
	return buf;
}

static void schedules_text(const struct rep *o, FILE *f)
{
	char buf[80], cut[48];

	for (const struct rep *x = rep_first(o); x; x = rep_next(x))
		fprintf(f, "%-11s %-24s %-16s next change %s%s\n", x == rep_first(o) ? "schedules:" : "",
			rep_s(x, "rule"), rep_b(x, "in_force") ? "in force" : "out of force",
			rep_has(x, "next_change") ? when_text(rep_i(x, "next_change"), buf, sizeof(buf))
						  : "none within 8 days",
			cut_text(x, cut, sizeof(cut)));
}

static const struct rep_metric m_cut = { "nfbox_schedule_connections_cut_total", "counter",
					 "Connections a scheduled rule let in, cut when it went out of force.",
					 "rule" };

/* "schedules": [{"rule", "in_force", "next_change" (UTC seconds; null:
 * none within 8 days), "keep_connections", "connections_cut" (an accept
 * rule's that does not keep them: since the start)}], the policy in force's
 * scheduled rules. */
static void schedules_status(void *self, struct rep *status)
{
	struct schedules *s = self;
	const struct policy *p = daemon_in_force(s->dm)->pol;
	int64_t now = (int64_t)time(NULL);
	struct rep *l = rep_list(status, "schedules");

	rep_text(l, schedules_text);
	for (uint32_t i = 0; p && i < p->nrules; i++) {
		const struct rule *ru = &p->rules[i];
		int64_t next;
		struct rep *o;

		if (!ru->when.sched)
			continue;
		o = rep_object(l, NULL);
		rep_str(o, "rule", ru->name);
		rep_bool(o, "in_force", s->pol == p ? bit_of(s->applied, ru->when.sched) : sched_open(&ru->when, now));
		if ((next = sched_next_change(&ru->when, now)) == SCHED_NEVER)
			rep_null(o, "next_change");
		else
			rep_int(o, "next_change", next);
		rep_bool(o, "keep_connections", ru->when.keep);
		if (ru->when.cut)
			rep_metric(rep_uint(o, "connections_cut", s->cut[ru->when.cut]), &m_cut);
	}
}

static void schedules_close(void *self)
{
	struct schedules *s = self;

	if (!s)
		return;
	timer_close(s);
	free(s);
}

const struct part part_schedules = {
	.name = "schedules",
	.open = schedules_open,
	.settle = schedules_settle,
	.status = schedules_status,
	.close = schedules_close,
};
