/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A blocklist's body read into prefixes (list.h). */
#include "feeds/url/list.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/syntax/parse.h"

#define LINE_MAX_LEN 256 /* longer lines are no list's */

struct reader {
	struct url_list *out;
	uint32_t cap;
	char *why;
	size_t whylen;
	unsigned line;
};

static int refuse(struct reader *r, const char *what, const char *text, size_t len)
{
	snprintf(r->why, r->whylen, "line %u: %s: '%.*s'", r->line, what, (int)(len > 60 ? 60 : len), text);
	return -EINVAL;
}

static int add(struct reader *r, const char *text, size_t len)
{
	char buf[LINE_MAX_LEN + 1];
	struct prefix pf;
	const char *why;
	bool host_bits;

	if (len > LINE_MAX_LEN)
		return refuse(r, "too long for an address or prefix", text, len);
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (parse_prefix(buf, &pf, &host_bits, &why) < 0 || strchr(buf, '-'))
		return refuse(r, "not an address or prefix", text, len);
	if (host_bits) /* a list that gets its own prefixes wrong is not trusted */
		return refuse(r, "a prefix with host bits set", text, len);
	if (r->out->n == URL_LIST_MAX_ENTRIES) {
		snprintf(r->why, r->whylen, "more than %u entries", URL_LIST_MAX_ENTRIES);
		return -EINVAL;
	}
	if (r->out->n == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 256;
		struct prefix *v = realloc(r->out->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->out->v = v;
		r->cap = cap;
	}
	memset(&pf.loc, 0, sizeof(pf.loc));
	r->out->v[r->out->n++] = pf;
	*(pf.family == POLICY_FAM_IPV4 ? &r->out->n4 : &r->out->n6) += 1;
	return 0;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* One line of a plain list: what comes before '#' or ';', one word. */
static int plain_line(struct reader *r, const char *s, size_t len)
{
	size_t end = 0, start = 0;

	while (end < len && s[end] != '#' && s[end] != ';')
		end++;
	while (start < end && blank(s[start]))
		start++;
	while (end > start && blank(s[end - 1]))
		end--;
	if (start == end)
		return 0;
	for (size_t i = start; i < end; i++)
		if (blank(s[i]))
			return refuse(r, "more than one word", s + start, end - start);
	return add(r, s + start, end - start);
}

/* One line of Spamhaus' DROP JSON: {"cidr": "...", ...} or its metadata. */
static int json_line(struct reader *r, const char *s, size_t len)
{
	json_t *o, *cidr, *type;
	json_error_t err;
	int ret;

	while (len && (blank(*s) || *s == '\n'))
		s++, len--;
	if (!len)
		return 0;
	if (!(o = json_loadb(s, len, 0, &err)) || !json_is_object(o)) {
		json_decref(o);
		return refuse(r, "not a JSON object", s, len);
	}
	cidr = json_object_get(o, "cidr");
	type = json_object_get(o, "type");
	if (json_is_string(cidr))
		ret = add(r, json_string_value(cidr), json_string_length(cidr));
	else if (json_is_string(type) && !strcmp(json_string_value(type), "metadata"))
		ret = 0;
	else
		ret = refuse(r, "an object with no \"cidr\"", s, len);
	json_decref(o);
	return ret;
}

int url_list_parse(const char *body, size_t len, struct url_list *out, char *why, size_t whylen)
{
	struct url_list l = { 0 };
	struct reader r = { .out = &l, .why = why, .whylen = whylen };
	size_t i = 0;
	bool json;
	int ret = 0;

	while (i < len && (blank(body[i]) || body[i] == '\n'))
		i++;
	json = i < len && body[i] == '{';
	if (memchr(body, '\0', len)) {
		snprintf(why, whylen, "a NUL byte: not a text list");
		return -EINVAL;
	}
	for (size_t at = 0; at < len && ret == 0;) {
		const char *nl = memchr(body + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (body + at)) : len - at;

		r.line++;
		ret = json ? json_line(&r, body + at, n) : plain_line(&r, body + at, n);
		at += n + 1;
	}
	if (ret == 0 && !l.n) {
		snprintf(why, whylen, "no entries (taken for a broken list)");
		ret = -EINVAL;
	}
	if (ret < 0) {
		url_list_free(&l);
		return ret;
	}
	*out = l;
	return 0;
}

void url_list_free(struct url_list *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = l->n4 = l->n6 = 0;
}
