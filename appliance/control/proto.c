/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "control/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/pct.h"

enum ctl_arg {
	ARG_JSON = 1u << 0,
	ARG_POLICY = 1u << 1,
	ARG_KEEP = 1u << 2,
	ARG_CONFIRM = 1u << 3,
	ARG_ZERO = 1u << 4,
	ARG_SET = 1u << 5,
	ARG_TIMEOUT = 1u << 6,
	ARG_SOURCE = 1u << 7,
	ARG_UNUSED = 1u << 8,
	ARG_SINCE = 1u << 9,
	ARG_FORCE = 1u << 10,
	ARG_TRACE = 1u << 11, /* count= iif= from= to= proto= port= family= */
};

static const struct {
	const char *name;
	unsigned args; /* enum ctl_arg bits the verb takes */
} verbs[CTL_NVERBS] = {
	[CTL_STATUS] = { "status", ARG_JSON },
	[CTL_STATS] = { "stats", ARG_JSON | ARG_ZERO | ARG_UNUSED | ARG_SINCE },
	[CTL_RELOAD] = { "reload", ARG_POLICY | ARG_CONFIRM },
	[CTL_LOG] = { "log", 0 },
	[CTL_STOP] = { "stop", ARG_KEEP },
	[CTL_CONFIRM] = { "confirm", 0 },
	[CTL_DIFF] = { "diff", ARG_POLICY | ARG_JSON },
	[CTL_METRICS] = { "metrics", 0 },
	[CTL_SET_ADD] = { "set-add", ARG_SET | ARG_TIMEOUT | ARG_SOURCE | ARG_FORCE },
	[CTL_SET_DEL] = { "set-del", ARG_SET | ARG_SOURCE },
	[CTL_SET_LIST] = { "set-list", ARG_SET | ARG_JSON },
	[CTL_SET_FLUSH] = { "set-flush", ARG_SET },
	[CTL_ROLLBACK] = { "rollback", 0 },
	[CTL_TRACE] = { "trace", ARG_TIMEOUT | ARG_TRACE },
};

const char *ctl_verb_name(enum ctl_verb v)
{
	return (unsigned)v < CTL_NVERBS ? verbs[v].name : "?";
}

static int find_verb(const char *w, size_t n)
{
	for (int v = 0; v < CTL_NVERBS; v++)
		if (strlen(verbs[v].name) == n && !memcmp(verbs[v].name, w, n))
			return v;
	return -1;
}

/* 1..max decimal seconds. */
static int parse_seconds(const char *w, size_t n, unsigned max, const char *what, unsigned *out, struct diags *d)
{
	unsigned long v = 0;
	size_t i = 0;

	for (; i < n && w[i] >= '0' && w[i] <= '9' && v <= max; i++)
		v = v * 10 + (unsigned long)(w[i] - '0');
	if (i != n || !v || v > max)
		return diag_fail(d, -EINVAL, "request: %s takes 1..%u seconds", what, max);
	*out = (unsigned)v;
	return 0;
}

/* min..max decimal. */
static int parse_uint(const char *w, size_t n, unsigned min, unsigned max, const char *what, unsigned *out,
		      struct diags *d)
{
	unsigned long v = 0;
	size_t i = 0;

	for (; i < n && w[i] >= '0' && w[i] <= '9' && v <= max; i++)
		v = v * 10 + (unsigned long)(w[i] - '0');
	if (!n || i != n || v < min || v > max)
		return diag_fail(d, -EINVAL, "request: %s takes %u..%u", what, min, max);
	*out = (unsigned)v;
	return 0;
}

/* A trace's word "name=value" with a text value (at most 64 bytes). */
static int trace_text(const char *w, size_t n, const char *name, char **out, struct diags *d)
{
	size_t k = strlen(name);

	if (*out)
		return diag_fail(d, -EINVAL, "request: %s given twice", name);
	if (!(*out = pct_decode(w + k, n - k)) || !(*out)[0] || strlen(*out) > 64)
		return diag_fail(d, -EINVAL, "request: bad %s", name);
	return 0;
}

/* The words of a live trace (ARG_TRACE); 1: w is none of them. */
static int parse_trace_arg(struct ctl_request *r, const char *w, size_t n, struct diags *d)
{
	static const char *const texts[] = { "iif=", "from=", "to=", "proto=", "family=" };
	char **fields[] = { &r->iif, &r->from, &r->to, &r->proto, &r->family };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (n > strlen(texts[i]) && !memcmp(w, texts[i], strlen(texts[i])))
			return trace_text(w, n, texts[i], fields[i], d);
	if (n > 6 && !memcmp(w, "count=", 6) && !r->count)
		return parse_uint(w + 6, n - 6, 1, CTL_MAX_TRACE_COUNT, "count=", &r->count, d);
	if (n > 5 && !memcmp(w, "port=", 5) && !r->has_port) {
		r->has_port = true;
		return parse_uint(w + 5, n - 5, 0, 65535, "port=", &r->port, d);
	}
	return 1;
}

/* One argument word w (n bytes) of verb v into r. */
static int parse_arg(struct ctl_request *r, const char *w, size_t n, struct diags *d)
{
	unsigned takes = verbs[r->verb].args;
	int e;

	if (n == 4 && !memcmp(w, "json", 4) && (takes & ARG_JSON) && !r->json) {
		r->json = true;
		return 0;
	}
	if (n == 4 && !memcmp(w, "zero", 4) && (takes & ARG_ZERO) && !r->zero) {
		r->zero = true;
		return 0;
	}
	if (n == 6 && !memcmp(w, "unused", 6) && (takes & ARG_UNUSED) && !r->unused) {
		r->unused = true;
		return 0;
	}
	if (n > 6 && !memcmp(w, "since=", 6) && (takes & ARG_SINCE) && !r->since)
		return parse_seconds(w + 6, n - 6, CTL_MAX_SINCE, "since=", &r->since, d);
	if (n == 5 && !memcmp(w, "force", 5) && (takes & ARG_FORCE) && !r->force) {
		r->force = true;
		return 0;
	}
	if (n == 4 && !memcmp(w, "keep", 4) && (takes & ARG_KEEP) && !r->keep) {
		r->keep = true;
		return 0;
	}
	if (n > 8 && !memcmp(w, "confirm=", 8) && (takes & ARG_CONFIRM) && !r->confirm)
		return parse_seconds(w + 8, n - 8, CTL_MAX_CONFIRM, "confirm=", &r->confirm, d);
	if (n > 8 && !memcmp(w, "timeout=", 8) && (takes & ARG_TIMEOUT) && !r->timeout)
		return parse_seconds(w + 8, n - 8, CTL_MAX_TIMEOUT, "timeout=", &r->timeout, d);
	if (n > 4 && !memcmp(w, "set=", 4) && (takes & ARG_SET) && !r->set) {
		if (!(r->set = pct_decode(w + 4, n - 4)) || !r->set[0] || strlen(r->set) > 64)
			return diag_fail(d, -EINVAL, "request: set= takes a set name");
		return 0;
	}
	if (n > 7 && !memcmp(w, "source=", 7) && (takes & ARG_SOURCE) && !r->source) {
		if (!(r->source = pct_decode(w + 7, n - 7)) || strlen(r->source) > 1024)
			return diag_fail(d, -EINVAL, "request: bad source=");
		return 0;
	}
	if ((takes & ARG_TRACE) && (e = parse_trace_arg(r, w, n, d)) <= 0)
		return e;
	if (n > 7 && !memcmp(w, "policy=", 7) && (takes & ARG_POLICY) && !r->policy) {
		if (!(r->policy = pct_decode(w + 7, n - 7)))
			return diag_fail(d, -EINVAL, "request: bad %%-escape in the policy path");
		if (r->policy[0] != '/')
			return diag_fail(d, -EINVAL, "request: the policy path must be absolute");
		return 0;
	}
	return diag_fail(d, -EINVAL, "request: '%s' does not take '%.*s'", verbs[r->verb].name, (int)(n > 64 ? 64 : n),
			 w);
}

int ctl_request_parse(const char *line, size_t len, struct ctl_request *out, struct diags *d)
{
	struct ctl_request r = { 0 };
	const char *p = line, *end = line + len;
	int v;

	if (len > CTL_MAX_REQUEST || memchr(line, '\0', len) || memchr(line, '\n', len))
		return diag_fail(d, -EINVAL, "request: not one line of text");
	for (const char *w = p; w <= end; w++) {
		size_t n;
		int e;

		if (w != end && *w != ' ')
			continue;
		n = (size_t)(w - p);
		if (!n) {
			ctl_request_free(&r);
			return diag_fail(d, -EINVAL, "request: empty word (words are separated by one space)");
		}
		if (p == line) {
			if ((v = find_verb(p, n)) < 0)
				return diag_fail(
					d, -EINVAL,
					"request: unknown '%.*s' (status, stats, reload, log, stop, confirm, "
					"rollback, diff, metrics, set-add, set-del, set-list, set-flush, trace)",
					(int)(n > 64 ? 64 : n), p);
			r.verb = (enum ctl_verb)v;
		} else if ((e = parse_arg(&r, p, n, d)) < 0) {
			ctl_request_free(&r);
			return e;
		}
		p = w + 1;
	}
	*out = r;
	return 0;
}

static void format_trace(FILE *f, const struct ctl_request *r)
{
	const char *const names[] = { "iif", "from", "to", "proto", "family" };
	const char *const values[] = { r->iif, r->from, r->to, r->proto, r->family };

	if (r->count)
		fprintf(f, " count=%u", r->count);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!values[i])
			continue;
		fprintf(f, " %s=", names[i]);
		pct_encode(f, values[i]);
	}
	if (r->has_port)
		fprintf(f, " port=%u", r->port);
}

char *ctl_request_format(const struct ctl_request *r)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	fputs(ctl_verb_name(r->verb), f);
	if (r->json)
		fputs(" json", f);
	if (r->keep)
		fputs(" keep", f);
	if (r->zero)
		fputs(" zero", f);
	if (r->unused)
		fputs(" unused", f);
	if (r->since)
		fprintf(f, " since=%u", r->since);
	if (r->policy) {
		fputs(" policy=", f);
		pct_encode(f, r->policy);
	}
	if (r->confirm)
		fprintf(f, " confirm=%u", r->confirm);
	if (r->set) {
		fputs(" set=", f);
		pct_encode(f, r->set);
	}
	if (r->timeout)
		fprintf(f, " timeout=%u", r->timeout);
	if (r->force)
		fputs(" force", f);
	if (r->source) {
		fputs(" source=", f);
		pct_encode(f, r->source);
	}
	format_trace(f, r);
	fputc('\n', f);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

void ctl_request_free(struct ctl_request *r)
{
	free(r->policy);
	free(r->set);
	free(r->source);
	free(r->iif);
	free(r->from);
	free(r->to);
	free(r->proto);
	free(r->family);
	r->policy = r->set = r->source = r->iif = r->from = r->to = r->proto = r->family = NULL;
}
