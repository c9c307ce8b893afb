/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A set fed from a URL: the last good list kept, fetched again (feed.h). */
#include "feeds/url/feed.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/json.h"
#include "feeds/url/fetch.h"
#include "lib/plant.h"
#include "system/files.h"

static void cache_path(const struct url_feed *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s/url-%s.cache", f->state_dir, f->name);
}

static void set_error(struct url_feed_state *s, int e, const char *why, int64_t now)
{
	s->last_errno = e;
	s->failed = now;
	snprintf(s->last_error, sizeof(s->last_error), "%s", why);
}

/* The cache's first line: what the body after it is. */
static int write_meta(FILE *m, const struct url_feed *f, const struct url_fetch_result *r, int64_t now)
{
	struct json j;

	json_init(&j, m);
	json_object_begin(&j);
	json_kv_str(&j, "url", f->url);
	if (r->etag)
		json_kv_str(&j, "etag", r->etag);
	if (r->last_modified)
		json_kv_str(&j, "last_modified", r->last_modified);
	json_kv_i64(&j, "fetched", now);
	json_object_end(&j);
	return fputc('\n', m) == EOF ? -EIO : 0;
}

static int cache_save(const struct url_feed *f, const struct url_fetch_result *r, int64_t now)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	char path[4096];
	FILE *m = open_memstream(&buf, &len);
	int e;

	if (!m)
		return -ENOMEM;
	e = write_meta(m, f, r, now);
	if (fwrite(r->body, 1, r->len, m) != r->len)
		e = -EIO;
	if (fclose(m) || e)
		return e ? e : -ENOMEM;
	cache_path(f, path, sizeof(path));
	return files_write_atomic(path, buf, len, 0600, FILES_SYNC);
}

/* The cache's meta line into s, if it is this URL's: 1, 0 (another URL's),
 * -EINVAL. */
static int read_meta(const struct url_feed *f, const char *line, size_t len, struct url_feed_state *s)
{
	json_t *o = json_loadb(line, len, 0, NULL), *v;
	int r = -EINVAL;

	if (json_is_object(o) && json_is_string(json_object_get(o, "url")) &&
	    json_is_integer(json_object_get(o, "fetched"))) {
		r = !strcmp(json_string_value(json_object_get(o, "url")), f->url);
		s->fetched = json_integer_value(json_object_get(o, "fetched"));
		if (r && (v = json_object_get(o, "etag")) && json_is_string(v))
			s->etag = strdup(json_string_value(v));
		if (r && (v = json_object_get(o, "last_modified")) && json_is_string(v))
			s->last_modified = strdup(json_string_value(v));
	}
	json_decref(o);
	return r;
}

static int read_file(const char *path, char **out, size_t *len, size_t max)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *buf = NULL;
	size_t n;

	if (!f)
		return -errno;
	if (!(buf = malloc(max + 1)))
		return -ENOMEM;
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		return -EIO;
	if (n > max)
		return -EFBIG;
	buf[n] = '\0';
	*len = n;
	*out = TAKE_PTR(buf);
	return 0;
}

static size_t max_bytes(const struct url_feed *f)
{
	return f->max_bytes ? f->max_bytes : URL_FEED_MAX_BYTES;
}

/* The cache file's meta line and list into n: 1, 0 (another URL's), -errno. */
static int cache_read(const struct url_feed *f, const char *path, struct url_feed_state *n)
{
	_cleanup_free_ char *buf = NULL;
	const char *nl;
	size_t len = 0;
	char why[200];
	int r;

	if ((r = read_file(path, &buf, &len, max_bytes(f) + 4096)) < 0)
		return r;
	if (!(nl = memchr(buf, '\n', len)))
		return -EINVAL;
	if ((r = read_meta(f, buf, (size_t)(nl - buf), n)) <= 0)
		return r;
	r = url_list_parse(nl + 1, len - (size_t)(nl + 1 - buf), &n->list, why, sizeof(why));
	return r < 0 ? r : 1;
}

int url_feed_load(const struct url_feed *f, struct url_feed_state *s)
{
	struct url_feed_state n = { 0 };
	char path[4096];
	int r;

	cache_path(f, path, sizeof(path));
	if ((r = cache_read(f, path, &n)) == -ENOENT)
		r = 0;
	if (r <= 0) {
		url_feed_state_free(&n);
		if (r < 0)
			snprintf(s->last_error, sizeof(s->last_error), "the kept list %.160s: %s", path,
				 r == -EINVAL ? "not a list kept by nfbox" : strerror(-r));
		return r;
	}
	url_feed_state_free(s);
	*s = n;
	return 1;
}

static bool same_list(const struct url_list *a, const struct url_list *b)
{
	return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof(*a->v)));
}

/* A 200's body, a list: kept on disk, then in s. */
static int take_list(const struct url_feed *f, struct url_feed_state *s, struct url_fetch_result *r, int64_t now)
{
	struct url_list l;
	char why[200];
	bool same;
	int e;

	if ((e = url_list_parse(r->body, r->len, &l, why, sizeof(why))) < 0) {
		char msg[240];

		snprintf(msg, sizeof(msg), "not a list: %s", why);
		set_error(s, e, msg, now);
		if (planted("urlfeed-garbage-empties")) /* test_urlfeed's positive control */
			url_list_free(&s->list);
		return e;
	}
	if ((e = cache_save(f, r, now)) < 0) /* enforced all the same; said */
		set_error(s, e, "the list could not be kept in the state directory", now);
	same = same_list(&l, &s->list);
	url_list_free(&s->list);
	s->list = l;
	free(s->etag);
	free(s->last_modified);
	s->etag = TAKE_PTR(r->etag);
	s->last_modified = TAKE_PTR(r->last_modified);
	s->fetched = now;
	return same ? 0 : 1;
}

int url_feed_refresh(const struct url_feed *f, struct url_feed_state *s, int64_t now)
{
	struct url_fetch_opts o = {
		.url = f->url,
		.ca = f->ca,
		.etag = s->fetched ? s->etag : NULL,
		.last_modified = s->fetched ? s->last_modified : NULL,
		.max_bytes = max_bytes(f),
		.max_redirects = f->max_redirects < 0 ? URL_FEED_MAX_REDIRECTS : f->max_redirects,
		.timeout_ms = f->timeout_ms ? f->timeout_ms : URL_FEED_TIMEOUT_MS,
		.cancel = f->cancel,
	};
	struct url_fetch_result r;
	char why[256];
	int e;

	if ((e = url_fetch(&o, &r, why, sizeof(why))) < 0) {
		set_error(s, e, why, now);
		return e;
	}
	s->checked = now;
	s->last_errno = 0;
	s->failed = 0;
	s->last_error[0] = '\0';
	e = r.not_modified ? 0 : take_list(f, s, &r, now);
	url_fetch_result_free(&r);
	return e;
}

void url_feed_state_free(struct url_feed_state *s)
{
	if (!s)
		return;
	url_list_free(&s->list);
	free(s->etag);
	free(s->last_modified);
	s->etag = s->last_modified = NULL;
}
