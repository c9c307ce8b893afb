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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/backends.h"
#include "daemon/daemon_int.h"
#include "daemon/schedules.h"
#include "base/log.h"
#include "policy/schedule/schedule.h"

#define SCHED_RECHECK_S 86400 /* no change within the span: judge again in a day */

struct schedules {
	struct handler h;
	uint64_t applied[NFB_SCHED_WORDS]; /* the states the backend holds */
	const struct policy *pol;	   /* ... of this policy */
};

static bool bit_of(const uint64_t *w, uint32_t sched)
{
	return (w[(sched - 1) / 64] >> ((sched - 1) % 64)) & 1;
}

static void judge(struct daemon *dm);

static void on_timer(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	uint64_t n;

	(void)events;
	/* ECANCELED: the clock was set; either way, judge now */
	if (read(h->fd, &n, sizeof(n)) < 0 && errno == ECANCELED)
		log_info("the clock was set: the schedules are judged again");
	judge(dm);
}

static int arm(struct daemon *dm, int64_t at)
{
	struct itimerspec its = { .it_value = { .tv_sec = at } };

	return timerfd_settime(dm->sched->h.fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL) < 0 ? -errno
													     : 0;
}

static void judge(struct daemon *dm)
{
	struct schedules *s = dm->sched;
	struct backend *be = backend_in_force(dm);
	int64_t now = (int64_t)time(NULL), next = now + SCHED_RECHECK_S;
	uint64_t words[NFB_SCHED_WORDS];
	struct diags d;
	bool changed;

	if (!s || !dm->cur.plan || !be)
		return;
	plan_sched_words(dm->cur.plan, now, words);
	for (uint32_t i = 0; i < dm->cur.pol->nrules; i++) {
		const struct rule *ru = &dm->cur.pol->rules[i];
		int64_t t;

		if (!ru->when.sched)
			continue;
		if ((t = sched_next_change(&ru->when, now)) != SCHED_NEVER && t < next)
			next = t;
		if (s->pol == dm->cur.pol && bit_of(s->applied, ru->when.sched) != bit_of(words, ru->when.sched))
			log_info("rule '%s' is %s in force (when:)", ru->name,
				 bit_of(words, ru->when.sched) ? "now" : "no longer");
	}
	changed = s->pol != dm->cur.pol || memcmp(words, s->applied, sizeof(words));
	diags_init(&d);
	if (changed && be->ops->schedule(be, &dm->cur, words, &d) < 0) {
		/* the states the backend holds are not known: try again in a second */
		log_err("%s", diags_last(&d, "cannot change the schedules' states"));
		s->pol = NULL;
		next = now + 1;
	} else if (changed) {
		memcpy(s->applied, words, sizeof(words));
		s->pol = dm->cur.pol;
	}
	diags_free(&d);
	if (arm(dm, next) < 0)
		log_err("cannot set the schedules' timer: %s", strerror(errno));
}

static bool has_schedules(const struct policy *p)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (p->rules[i].when.sched)
			return true;
	return false;
}

void sched_after_reload(struct daemon *dm)
{
	if (!has_schedules(dm->cur.pol)) {
		sched_close(dm);
		return;
	}
	if (!dm->sched) {
		int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);

		if (fd < 0 || !(dm->sched = calloc(1, sizeof(*dm->sched)))) {
			log_err("schedules: cannot make their timer: %s; the scheduled rules keep the states of the "
				"reload",
				strerror(errno));
			if (fd >= 0)
				close(fd);
			return;
		}
		dm->sched->h = (struct handler){ .fd = fd, .fn = on_timer, .ctx = dm };
		if (loop_watch(&dm->loop, &dm->sched->h) < 0)
			log_err("schedules: cannot watch their timer: %s", strerror(errno));
	}
	dm->sched->pol = NULL; /* a new generation: its states are given again */
	judge(dm);
}

void sched_close(struct daemon *dm)
{
	if (!dm->sched)
		return;
	loop_unwatch(&dm->loop, &dm->sched->h);
	close(dm->sched->h.fd);
	free(dm->sched);
	dm->sched = NULL;
}

int sched_report(struct daemon *dm, struct sched_report **out, uint32_t *n)
{
	int64_t now = (int64_t)time(NULL);
	const struct policy *p = dm->cur.pol;
	struct sched_report *v;

	*out = NULL;
	*n = 0;
	if (!has_schedules(p))
		return 0;
	if (!(v = calloc(p->nrules, sizeof(*v))))
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *ru = &p->rules[i];

		if (!ru->when.sched)
			continue;
		v[*n] = (struct sched_report){
			.rule = ru->name,
			.open = dm->sched && dm->sched->pol == p ? bit_of(dm->sched->applied, ru->when.sched)
								 : sched_open(&ru->when, now),
			.next = sched_next_change(&ru->when, now),
		};
		(*n)++;
	}
	*out = v;
	return 0;
}
