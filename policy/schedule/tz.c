/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Time zones from tzdata: the TZif format (RFC 8536, versions 1 to 4) and
 * the POSIX TZ string of its footer ("CET-1CEST,M3.5.0,M10.5.0/3"), which
 * gives the offset after the last listed transition (Debian's tzdata lists
 * them up to 2037; a "slim" file lists none of the rule's years at all).
 */
#include "policy/schedule/tz.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TZ_MAX_FILE (256u << 10)

/* A day of the POSIX rule: Jn (1..365, February 29 never counted), n
 * (0..365, counted), Mm.w.d (day d of week w of month m; w 5: the last). */
struct tz_rule_day {
	char kind; /* 'J', 'n', 'M' */
	int n, m, w, d;
	int32_t time; /* seconds after local midnight (may be negative or past 24 h) */
};

struct tz {
	int64_t *when; /* transitions, ascending */
	uint8_t *type; /* the type each one starts */
	uint32_t nwhen;
	int32_t *utoff; /* by type */
	uint32_t ntypes;
	/* the footer's rule; has_rule false: the last type goes on */
	bool has_rule, has_dst;
	int32_t std_off, dst_off;
	struct tz_rule_day start, end;
};

/* ---- civil dates (days since 1970-01-01, proleptic Gregorian) ---- */

int64_t tz_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void tz_civil_of(int64_t local, struct tz_civil *out)
{
	int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
	int64_t z = days + 719468, era, doe, yoe, doy, mp, y;

	out->days = days;
	out->secs = (int32_t)(local - days * 86400);
	out->wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	out->mday = (int)(doy - (153 * mp + 2) / 5 + 1);
	out->month = (int)(mp < 10 ? mp + 3 : mp - 9);
	out->year = (int)(y + (out->month <= 2));
}

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* ---- the POSIX TZ string ---- */

static const char *tz_name(const char *s)
{
	if (*s == '<') {
		const char *e = strchr(s, '>');

		return e && e - s >= 4 ? e + 1 : NULL;
	}
	const char *p = s;

	while (isalpha((unsigned char)*p))
		p++;
	return p - s >= 3 ? p : NULL;
}

/* [+-]hh[:mm[:ss]], hours up to max: seconds */
static const char *tz_hms(const char *s, int max, int32_t *out)
{
	int sign = 1, h = 0, m = 0, sec = 0, n = 0;

	if (*s == '+' || *s == '-')
		sign = *s++ == '-' ? -1 : 1;
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s) && n++ < 3)
		h = h * 10 + *s++ - '0';
	if (*s == ':') {
		s++;
		if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
			return NULL;
		m = (s[0] - '0') * 10 + s[1] - '0';
		s += 2;
		if (*s == ':') {
			s++;
			if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
				return NULL;
			sec = (s[0] - '0') * 10 + s[1] - '0';
			s += 2;
		}
	}
	if (h > max || m > 59 || sec > 59)
		return NULL;
	*out = sign * (h * 3600 + m * 60 + sec);
	return s;
}

static const char *tz_num(const char *s, int lo, int hi, int *out)
{
	int v = 0, n = 0;

	while (isdigit((unsigned char)*s) && n++ < 3)
		v = v * 10 + *s++ - '0';
	if (!n || v < lo || v > hi)
		return NULL;
	*out = v;
	return s;
}

static const char *tz_rule_day(const char *s, struct tz_rule_day *r)
{
	r->time = 7200;
	if (*s == 'J') {
		r->kind = 'J';
		s = tz_num(s + 1, 1, 365, &r->n);
	} else if (*s == 'M') {
		r->kind = 'M';
		if ((s = tz_num(s + 1, 1, 12, &r->m)) && *s == '.' && (s = tz_num(s + 1, 1, 5, &r->w)) && *s == '.')
			s = tz_num(s + 1, 0, 6, &r->d);
		else
			s = NULL;
	} else {
		r->kind = 'n';
		s = tz_num(s, 0, 365, &r->n);
	}
	if (s && *s == '/')
		s = tz_hms(s + 1, 167, &r->time);
	return s;
}

static int tz_parse_rule(struct tz *z, const char *s)
{
	int32_t off;

	if (!(s = tz_name(s)) || !(s = tz_hms(s, 24, &off)))
		return -EINVAL;
	z->std_off = -off; /* POSIX counts west of Greenwich */
	z->has_rule = true;
	if (!*s)
		return 0;
	if (!(s = tz_name(s)))
		return -EINVAL;
	z->has_dst = true;
	z->dst_off = z->std_off + 3600;
	if (*s && *s != ',') {
		if (!(s = tz_hms(s, 24, &off)))
			return -EINVAL;
		z->dst_off = -off;
	}
	if (!*s) /* POSIX leaves the rules to the implementation: the US's */
		s = ",M3.2.0,M11.1.0";
	if (*s != ',' || !(s = tz_rule_day(s + 1, &z->start)) || *s != ',' || !(s = tz_rule_day(s + 1, &z->end)) || *s)
		return -EINVAL;
	return 0;
}

/* The local time (seconds since the epoch, as if UTC) a rule's day and
 * time fall on in year y. */
static int64_t tz_rule_local(const struct tz_rule_day *r, int64_t y)
{
	int64_t day;

	if (r->kind == 'J') {
		day = tz_days_from_civil(y, 1, 1) + r->n - 1;
		if (leap(y) && r->n >= 60)
			day++;
	} else if (r->kind == 'n') {
		day = tz_days_from_civil(y, 1, 1) + r->n;
	} else {
		static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
		int64_t first = tz_days_from_civil(y, (unsigned)r->m, 1);
		int wd0 = (int)(((first % 7) + 11) % 7), len = mdays[r->m - 1] + (r->m == 2 && leap(y));
		int mday = 1 + (r->d - wd0 + 7) % 7 + (r->w - 1) * 7;

		while (mday > len)
			mday -= 7;
		day = first + mday - 1;
	}
	return day * 86400 + r->time;
}

static int32_t tz_rule_offset(const struct tz *z, int64_t t)
{
	struct tz_civil c;
	int64_t s, e;

	if (!z->has_dst)
		return z->std_off;
	tz_civil_of(t + z->std_off, &c);
	s = tz_rule_local(&z->start, c.year) - z->std_off; /* DST starts on standard time */
	e = tz_rule_local(&z->end, c.year) - z->dst_off;   /* and ends on its own */
	if (s < e)
		return s <= t && t < e ? z->dst_off : z->std_off;
	return e <= t && t < s ? z->std_off : z->dst_off; /* the southern hemisphere */
}

int32_t tz_offset(const struct tz *z, int64_t t)
{
	uint32_t lo = 0, hi = z->nwhen;

	if (!z->nwhen || t < z->when[0])
		return z->has_rule && !z->nwhen ? tz_rule_offset(z, t) : z->utoff[0];
	if (t >= z->when[z->nwhen - 1] && z->has_rule)
		return tz_rule_offset(z, t);
	while (hi - lo > 1) { /* the last transition at or before t */
		uint32_t mid = lo + (hi - lo) / 2;

		if (z->when[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return z->utoff[z->type[lo]];
}

/* ---- the TZif file ---- */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_counts {
	uint32_t isut, isstd, leap, time, type, chars;
};

static bool tzif_header(const uint8_t *p, size_t len, struct tzif_counts *c)
{
	if (len < 44 || memcmp(p, "TZif", 4))
		return false;
	c->isut = be32(p + 20);
	c->isstd = be32(p + 24);
	c->leap = be32(p + 28);
	c->time = be32(p + 32);
	c->type = be32(p + 36);
	c->chars = be32(p + 40);
	return c->type >= 1 && c->type <= 256 && c->time <= 100000 && c->chars <= 65536 && c->leap <= 10000 &&
	       c->isut <= c->type && c->isstd <= c->type;
}

static size_t tzif_body(const struct tzif_counts *c, size_t tsize)
{
	return c->time * tsize + c->time + c->type * 6 + c->chars + c->leap * (tsize + 4) + c->isstd + c->isut;
}

static int tz_parse(struct tz *z, const uint8_t *p, size_t len)
{
	struct tzif_counts c;
	size_t tsize = 4, body;
	const uint8_t *d;

	if (!tzif_header(p, len, &c) || (body = tzif_body(&c, 4)) > len - 44)
		return -EINVAL;
	if (p[4] >= '2') { /* the 64-bit block after the 32-bit one */
		p += 44 + body;
		len -= 44 + body;
		if (!tzif_header(p, len, &c) || (body = tzif_body(&c, 8)) > len - 44)
			return -EINVAL;
		tsize = 8;
	}
	d = p + 44;
	z->nwhen = c.time;
	z->ntypes = c.type;
	z->when = calloc(c.time ? c.time : 1, sizeof(*z->when));
	z->type = calloc(c.time ? c.time : 1, 1);
	z->utoff = calloc(c.type, sizeof(*z->utoff));
	if (!z->when || !z->type || !z->utoff)
		return -ENOMEM;
	for (uint32_t i = 0; i < c.time; i++) {
		z->when[i] = tsize == 8 ? be64(d + i * 8) : (int32_t)be32(d + i * 4);
		if (i && z->when[i] <= z->when[i - 1])
			return -EINVAL;
	}
	d += c.time * tsize;
	for (uint32_t i = 0; i < c.time; i++)
		if ((z->type[i] = d[i]) >= c.type)
			return -EINVAL;
	d += c.time;
	for (uint32_t i = 0; i < c.type; i++) {
		z->utoff[i] = (int32_t)be32(d + i * 6);
		if (z->utoff[i] < -25 * 3600 || z->utoff[i] > 26 * 3600)
			return -EINVAL;
	}
	if (tsize == 8) { /* the footer: "\nTZ\n" */
		const uint8_t *f = p + 44 + body, *end = p + len, *nl;
		char rule[128];

		if (f < end && *f == '\n' && (nl = memchr(f + 1, '\n', (size_t)(end - f - 1))) && nl > f + 1) {
			if ((size_t)(nl - f - 1) >= sizeof(rule))
				return -EINVAL;
			memcpy(rule, f + 1, (size_t)(nl - f - 1));
			rule[nl - f - 1] = '\0';
			if (tz_parse_rule(z, rule) < 0)
				return -EINVAL;
		}
	}
	return 0;
}

static bool tz_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n >= TZ_MAX_NAME || name[0] == '/' || name[0] == '.' || strstr(name, "..") || strstr(name, "//"))
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/_-+", *p))
			return false;
	return true;
}

void tz_free(struct tz *z)
{
	if (!z)
		return;
	free(z->when);
	free(z->type);
	free(z->utoff);
	free(z);
}

int tz_load(const char *name, struct tz **out, char *why, size_t len)
{
	char path[sizeof(TZ_DIR) + TZ_MAX_NAME + 1];
	uint8_t *buf = NULL;
	struct stat st;
	struct tz *z;
	ssize_t got;
	int fd, r;

	*out = NULL;
	if (!strcmp(name, "localtime"))
		snprintf(path, sizeof(path), "/etc/localtime");
	else if (!tz_name_ok(name))
		return snprintf(why, len, "'%s' is not a time zone name (like Europe/Berlin or UTC)", name), -EINVAL;
	else
		snprintf(path, sizeof(path), "%s/%s", TZ_DIR, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		r = -errno;
		if (r == -ENOENT)
			snprintf(why, len, "unknown time zone '%s' (no %s; tzdata names zones like Europe/Berlin)",
				 name, path);
		else
			snprintf(why, len, "cannot read time zone '%s' (%s): %s", name, path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TZ_MAX_FILE || st.st_size < 44 ||
	    !(buf = malloc((size_t)st.st_size)) || (got = read(fd, buf, (size_t)st.st_size)) != st.st_size) {
		close(fd);
		free(buf);
		snprintf(why, len, "time zone '%s': %s is not a zone file", name, path);
		return -EINVAL;
	}
	close(fd);
	if (!(z = calloc(1, sizeof(*z)))) {
		free(buf);
		return -ENOMEM;
	}
	r = tz_parse(z, buf, (size_t)st.st_size);
	free(buf);
	if (r < 0) {
		tz_free(z);
		snprintf(why, len, "time zone '%s': %s is not a valid TZif zone file", name, path);
		return r;
	}
	*out = z;
	return 0;
}
