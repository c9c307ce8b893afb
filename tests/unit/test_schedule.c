/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Schedules (policy/schedule/): the TZif reader against the C library's
 * own (localtime_r with TZ set: another implementation of the same files)
 * for zones with and without DST, both hemispheres, negative DST, odd
 * offsets, over 1900-2100 (past 2037 only the footer's rule answers);
 * sched_open and sched_next_change against a minute-by-minute scan judged by
 * the C library's wall clock, on generated windows; the DST edges by hand.
 * A planted bug must show: a window judged on UTC instead of its zone fails
 * the comparison (test_planted_utc). The cut ids of scheduled accept rules
 * (when.cut): one each, none for a rule that keeps its connections or does
 * not accept, and each rule's the same whatever rules are added before it
 * (a reload must not hand its connections to another rule).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/diag.h"
#include "policy/schedule/schedule.h"
#include "policy/schedule/tz.h"
#include "tests/lib/check.h"

static const char *const zones[] = {
	"UTC",
	"Europe/Berlin",
	"America/New_York",
	"Australia/Sydney",
	"Asia/Kolkata",
	"Europe/Dublin",
	"Pacific/Chatham",
	"America/St_Johns",
	"America/Sao_Paulo",
	"Africa/Casablanca",
	"Asia/Kathmandu",
	"Australia/Lord_Howe",
};
#define NZONES (sizeof(zones) / sizeof(zones[0]))

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The C library's offset of zone at t (TZ switched: this test is one thread). */
static long libc_offset(const char *zone, time_t t)
{
	struct tm tm;
	char tzv[80];

	snprintf(tzv, sizeof(tzv), ":%s", zone);
	setenv("TZ", tzv, 1);
	tzset();
	localtime_r(&t, &tm);
	return tm.tm_gmtoff;
}

static void test_offsets(void)
{
	check_begin("tz-offsets-as-the-c-library");
	for (size_t i = 0; i < NZONES; i++) {
		struct tz *z;
		char why[256];
		unsigned bad = 0;

		if (tz_load(zones[i], &z, why, sizeof(why)) < 0) {
			check_fail_at(__FILE__, __LINE__, "%s: %s", zones[i], why);
			continue;
		}
		for (int k = 0; k < 4000; k++) {
			/* 1902..2100 */
			int64_t t = -2100000000ll + (int64_t)(next_rand() % 6200000000ull);
			long want = libc_offset(zones[i], (time_t)t);

			if (tz_offset(z, t) != want && bad++ < 3)
				check_fail_at(__FILE__, __LINE__, "%s at %lld: %d, the C library %ld", zones[i],
					      (long long)t, tz_offset(z, t), want);
		}
		tz_free(z);
	}
	check_end();
}

static void test_refuses(void)
{
	struct tz *z;
	char why[256];

	check_begin("tz-refuses-unknown-and-unsafe-names");
	CHECK(tz_load("Mars/Olympus_Mons", &z, why, sizeof(why)) < 0 && strstr(why, "unknown time zone"));
	CHECK(tz_load("../../etc/passwd", &z, why, sizeof(why)) < 0 && strstr(why, "not a time zone name"));
	CHECK(tz_load("/etc/localtime", &z, why, sizeof(why)) < 0);
	CHECK(tz_load("", &z, why, sizeof(why)) < 0);
	CHECK(tz_load("zone.tab", &z, why, sizeof(why)) < 0 && strstr(why, "not a time zone name"));
	CHECK(tz_load("Europe", &z, why, sizeof(why)) < 0 && strstr(why, "not a zone file"));
	CHECK(tz_load("localtime", &z, why, sizeof(why)) == 0 && z);
	tz_free(z);
	check_end();
}

/* The reference: the C library's wall clock, the rule of schedule.h. */
static bool ref_open(const struct policy_when *w, const char *zone, time_t t)
{
	struct tm tm;
	char tzv[80];

	snprintf(tzv, sizeof(tzv), ":%s", zone);
	setenv("TZ", tzv, 1);
	tzset();
	localtime_r(&t, &tm);
	for (uint32_t i = 0; i < w->n; i++) {
		const struct policy_window *x = &w->v[i];
		uint32_t s = (uint32_t)(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec);

		if ((x->days & (1u << tm.tm_wday)) && s >= x->start && s < x->end)
			return true;
		if (x->end > 86400 && (x->days & (1u << ((tm.tm_wday + 6) % 7))) && s + 86400 < x->end)
			return true;
	}
	return false;
}

static bool plant_utc; /* the positive control: windows judged on UTC */

static bool judged(const struct policy_when *w, int64_t t, struct tz *utc)
{
	struct policy_window saved[4];

	if (!plant_utc)
		return sched_open(w, t);
	for (uint32_t i = 0; i < w->n; i++) {
		saved[i] = w->v[i];
		w->v[i].zone = utc;
	}
	bool r = sched_open(w, t);
	for (uint32_t i = 0; i < w->n; i++)
		w->v[i] = saved[i];
	return r;
}

/* Generated windows (minute edges, some across midnight) in one zone,
 * against the scan: 1 if any disagreed. */
static unsigned compare_generated(unsigned cases)
{
	struct tz *utc;
	char why[256];
	unsigned bad = 0;

	tz_load("UTC", &utc, why, sizeof(why));
	for (unsigned c = 0; c < cases; c++) {
		const char *zone = zones[next_rand() % NZONES];
		struct policy_window v[3];
		struct policy_when w = { .v = v, .n = 1 + (uint32_t)(next_rand() % 3) };
		/* around the DST changes of 2026-2040 and any other time */
		int64_t t = 1774000000 + (int64_t)(next_rand() % 440000000ull);

		t -= t % 60;
		for (uint32_t i = 0; i < w.n; i++) {
			v[i] = (struct policy_window){ .days = (uint8_t)(next_rand() % 127 + 1) };
			v[i].start = (uint32_t)(next_rand() % 1440) * 60;
			v[i].end = (uint32_t)(next_rand() % 1440) * 60;
			if (v[i].end == v[i].start)
				v[i].end = v[i].start + 60;
			if (v[i].end < v[i].start)
				v[i].end += 86400;
			tz_load(zone, &v[i].zone, why, sizeof(why));
		}
		bool now = judged(&w, t, utc);
		int64_t want = SCHED_NEVER, got = sched_next_change(&w, t);

		if (now != ref_open(&w, zone, (time_t)t)) {
			if (++bad <= 3 && !plant_utc)
				check_fail_at(__FILE__, __LINE__, "%s at %lld: open %d, the scan %d", zone,
					      (long long)t, now, !now);
		} else {
			for (int64_t s = t + 60; s <= t + 8 * 86400; s += 60)
				if (ref_open(&w, zone, (time_t)s) != now) {
					want = s;
					break;
				}
			if (got != want && ++bad <= 3 && !plant_utc)
				check_fail_at(__FILE__, __LINE__, "%s from %lld: next change %lld, the scan %lld", zone,
					      (long long)t, (long long)got, (long long)want);
		}
		for (uint32_t i = 0; i < w.n; i++)
			tz_free(v[i].zone);
	}
	tz_free(utc);
	return bad;
}

static void test_generated(void)
{
	check_begin("schedule-as-a-minute-scan");
	compare_generated(300);
	check_end();
}

static void test_planted_utc(void)
{
	unsigned bad;

	check_begin("schedule-positive-control");
	plant_utc = true;
	bad = compare_generated(100);
	plant_utc = false;
	CHECK(bad > 0);
	check_end();
}

static int64_t utc_of(int y, int mo, int d, int h, int mi, int s)
{
	return tz_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
}

static void test_dst_edges(void)
{
	struct policy_window v = { .days = 0x7f };
	struct policy_when w = { .v = &v, .n = 1 };
	char why[256];

	check_begin("schedule-dst-edges");
	CHECK(tz_load("Europe/Berlin", &v.zone, why, sizeof(why)) == 0);
	/* 2027-03-28 02:00 CET becomes 03:00 CEST (01:00 UTC): a window of
	 * 02:30-03:30 opens at the jump and closes at 03:30 CEST (01:30 UTC) */
	v.start = 9000;
	v.end = 12600;
	CHECK(sched_next_change(&w, utc_of(2027, 3, 28, 0, 0, 0)) == utc_of(2027, 3, 28, 1, 0, 0));
	CHECK(sched_open(&w, utc_of(2027, 3, 28, 1, 0, 0)));
	CHECK(sched_next_change(&w, utc_of(2027, 3, 28, 1, 0, 0)) == utc_of(2027, 3, 28, 1, 30, 0));
	/* 2027-10-31 03:00 CEST becomes 02:00 CET (01:00 UTC): 02:15-02:45
	 * opens twice, at 00:15 and at 01:15 UTC */
	v.start = 8100;
	v.end = 9900;
	CHECK(sched_next_change(&w, utc_of(2027, 10, 31, 0, 0, 0)) == utc_of(2027, 10, 31, 0, 15, 0));
	CHECK(sched_next_change(&w, utc_of(2027, 10, 31, 0, 15, 0)) == utc_of(2027, 10, 31, 0, 45, 0));
	CHECK(sched_next_change(&w, utc_of(2027, 10, 31, 0, 45, 0)) == utc_of(2027, 10, 31, 1, 15, 0));
	/* mon-fri 08:00-18:00 in summer: 06:00-16:00 UTC; Friday's close is
	 * followed by Monday's open */
	v.days = 0x3e;
	v.start = 8 * 3600;
	v.end = 18 * 3600;
	CHECK(!sched_open(&w, utc_of(2027, 7, 2, 5, 59, 59))); /* a Friday */
	CHECK(sched_open(&w, utc_of(2027, 7, 2, 6, 0, 0)));
	CHECK(sched_next_change(&w, utc_of(2027, 7, 2, 12, 0, 0)) == utc_of(2027, 7, 2, 16, 0, 0));
	CHECK(sched_next_change(&w, utc_of(2027, 7, 2, 16, 0, 0)) == utc_of(2027, 7, 5, 6, 0, 0));
	/* across midnight: fri 22:00-06:00 is open on Saturday 05:00 local */
	v.days = 1u << 5;
	v.start = 22 * 3600;
	v.end = 6 * 3600 + 86400;
	CHECK(sched_open(&w, utc_of(2027, 7, 3, 3, 0, 0)));
	CHECK(!sched_open(&w, utc_of(2027, 7, 3, 4, 0, 0)));
	CHECK(!sched_open(&w, utc_of(2027, 7, 1, 21, 0, 0))); /* Thursday 23:00 local */
	/* seconds */
	v.days = 0x7f;
	v.start = 10 * 3600 + 5;
	v.end = 10 * 3600 + 7;
	CHECK(sched_next_change(&w, utc_of(2027, 1, 4, 9, 0, 5)) == utc_of(2027, 1, 4, 9, 0, 7));
	/* no windows: always; a window of every day all day: no change */
	v.start = 0;
	v.end = 86400;
	CHECK(sched_next_change(&w, utc_of(2027, 1, 4, 9, 0, 5)) == SCHED_NEVER);
	w.n = 0;
	CHECK(sched_open(&w, 0) && sched_next_change(&w, 0) == SCHED_NEVER);
	tz_free(v.zone);
	check_end();
}

static struct policy *load_text(const char *text)
{
	struct policy *p = NULL;
	struct diags d;

	diags_init(&d);
	if (policy_load_buffer("cut.yaml", text, strlen(text), &d, &p) < 0)
		p = NULL;
	diags_free(&d);
	return p;
}

static uint16_t cut_of(const struct policy *p, const char *name)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (!strcmp(p->rules[i].name, name))
			return p->rules[i].when.cut;
	return 0xffff;
}

static void test_cut_ids(void)
{
	static const char head[] = "version: 1\nhooks: { forward: { default: drop } }\nrules:\n";
	static const char tail[] = "  - { name: a, service: tcp/1, action: accept, when: { days: [sat], tz: UTC } }\n"
				   "  - { name: b, service: tcp/2, action: accept, when: { days: [sun], tz: UTC } }\n"
				   "  - { name: k, service: tcp/3, action: accept, when: { days: [sun], tz: UTC, "
				   "keep-connections: true } }\n"
				   "  - { name: d, service: tcp/4, action: drop, when: { days: [sun], tz: UTC } }\n"
				   "  - { name: u, service: tcp/5, action: accept }\n";
	char buf[8192];
	struct policy *p, *q;
	size_t n;

	check_begin("cut-ids");
	snprintf(buf, sizeof(buf), "%s%s", head, tail);
	p = load_text(buf);
	CHECK(p != NULL);
	CHECK(cut_of(p, "a") >= 1 && cut_of(p, "a") <= POLICY_CUT_IDS && cut_of(p, "b") >= 1 &&
	      cut_of(p, "a") != cut_of(p, "b"));
	CHECK(cut_of(p, "k") == 0 && cut_of(p, "d") == 0 && cut_of(p, "u") == 0);
	CHECK(sched_any_cut(p));
	/* sixty scheduled rules more, before them: a and b keep their ids */
	n = (size_t)snprintf(buf, sizeof(buf), "%s", head);
	for (int i = 0; i < 60; i++)
		n += (size_t)snprintf(
			buf + n, sizeof(buf) - n,
			"  - { name: x%d, service: udp/%d, action: accept, when: { days: [mon], tz: UTC } }\n", i,
			i + 1);
	snprintf(buf + n, sizeof(buf) - n, "%s", tail);
	q = load_text(buf);
	CHECK(q != NULL);
	CHECK(cut_of(q, "a") == cut_of(p, "a") && cut_of(q, "b") == cut_of(p, "b"));
	for (uint32_t i = 0; q && i < q->nrules; i++)
		for (uint32_t j = i + 1; j < q->nrules; j++)
			CHECK(!q->rules[i].when.cut || q->rules[i].when.cut != q->rules[j].when.cut);
	policy_free(p);
	policy_free(q);
	check_end();
}

int main(void)
{
	test_offsets();
	test_refuses();
	test_generated();
	test_planted_utc();
	test_dst_edges();
	test_cut_ids();
	CHECK_EXIT();
}
