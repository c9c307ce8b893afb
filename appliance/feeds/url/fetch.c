/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One HTTPS GET of a blocklist (fetch.h). */
#include "feeds/url/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "lib/plant.h"

struct transfer {
	struct url_fetch_result *res;
	size_t cap, max;
	bool too_big;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct transfer *t = arg;
	struct url_fetch_result *r = t->res;
	size_t len = size * n;

	if (r->len + len > t->max) {
		t->too_big = true;
		return 0; /* aborts the transfer */
	}
	if (r->len + len + 1 > t->cap) {
		size_t cap = (r->len + len + 1) * 2;
		char *b = realloc(r->body, cap < t->max + 1 ? cap : t->max + 1);

		if (!b)
			return 0;
		r->body = b;
		t->cap = cap < t->max + 1 ? cap : t->max + 1;
	}
	memcpy(r->body + r->len, p, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

/* A header's value, trimmed, as a new string; NULL if it is not name. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nlen = strlen(name), end = len;
	const char *v;

	if (len <= nlen || strncasecmp(line, name, nlen) || line[nlen] != ':')
		return NULL;
	v = line + nlen + 1;
	while (v < line + end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > (size_t)(v - line) && (line[end - 1] == '\r' || line[end - 1] == '\n' || line[end - 1] == ' '))
		end--;
	return strndup(v, end - (size_t)(v - line));
}

/* Headers of every answer come here (a redirect's too): each status line
 * starts an answer, whose ETag and Last-Modified are the ones kept. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct url_fetch_result *r = ((struct transfer *)arg)->res;
	size_t len = size * n;
	char *v;

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		free(r->etag);
		free(r->last_modified);
		r->etag = r->last_modified = NULL;
	} else if ((v = header_value(p, len, "ETag"))) {
		free(r->etag);
		r->etag = v;
	} else if ((v = header_value(p, len, "Last-Modified"))) {
		free(r->last_modified);
		r->last_modified = v;
	}
	return len;
}

/* "NAME: VALUE" appended to *l; on failure the whole list goes (NULL). */
static bool append(struct curl_slist **l, const char *name, const char *v)
{
	struct curl_slist *t;
	char buf[512];

	snprintf(buf, sizeof(buf), "%s: %s", name, v);
	if (!(t = curl_slist_append(*l, buf))) {
		curl_slist_free_all(*l);
		*l = NULL;
		return false;
	}
	*l = t;
	return true;
}

/* If-None-Match and If-Modified-Since from the last good answer (none
 * for a value too long to be one): 0, or -ENOMEM with *l NULL. */
static int conditions(const struct url_fetch_opts *o, struct curl_slist **l)
{
	if (o->etag && strlen(o->etag) < 400 && !append(l, "If-None-Match", o->etag))
		return -ENOMEM;
	if (o->last_modified && strlen(o->last_modified) < 400 && !append(l, "If-Modified-Since", o->last_modified))
		return -ENOMEM;
	return 0;
}

static int on_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return atomic_load((const atomic_bool *)p) ? 1 : 0; /* libcurl calls it at least once a second */
}

static void set_options(CURL *c, const struct url_fetch_opts *o, struct transfer *t, struct curl_slist *h, char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, o->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
	/* test_urlfeed's positive control: a server no CA vouches for accepted */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, planted("urlfeed-no-verify") ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (o->ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, o->max_redirects);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "nfbox");
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); /* what libcurl decodes; the bound is on the decoded body */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (o->cancel) {
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)o->cancel);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	}
}

/* libcurl's outcome as a negative errno and a reason. */
static int curl_failure(CURLcode rc, const struct transfer *t, const struct url_fetch_opts *o, const char *errbuf,
			char *why, size_t whylen)
{
	const char *detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);

	if (t->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(why, whylen, "the list is larger than %zu bytes", o->max_bytes);
		return -EFBIG;
	}
	snprintf(why, whylen, "%s", detail);
	switch (rc) {
	case CURLE_ABORTED_BY_CALLBACK:
		snprintf(why, whylen, "canceled");
		return -ECANCELED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_TOO_MANY_REDIRECTS:
		return -ELOOP;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EACCES;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static void cleanup_curl(CURL **c)
{
	if (*c)
		curl_easy_cleanup(*c);
}

static void cleanup_slist(struct curl_slist **l)
{
	curl_slist_free_all(*l);
}

int url_fetch(const struct url_fetch_opts *o, struct url_fetch_result *out, char *why, size_t whylen)
{
	struct url_fetch_result r = { 0 };
	struct transfer t = { .res = &r, .max = o->max_bytes };
	_cleanup_(cleanup_slist) struct curl_slist *h = NULL;
	_cleanup_(cleanup_curl) CURL *c = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURLcode rc;

	pthread_once(&curl_once, curl_init_once);
	if (!(c = curl_easy_init()) || conditions(o, &h) < 0) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	set_options(c, o, &t, h, errbuf);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	if (rc != CURLE_OK) {
		int e = curl_failure(rc, &t, o, errbuf, why, whylen);

		url_fetch_result_free(&r);
		return e;
	}
	if (r.status != 200 && r.status != 304) {
		snprintf(why, whylen, "HTTP status %ld", r.status);
		url_fetch_result_free(&r);
		return -EPROTO;
	}
	r.not_modified = r.status == 304;
	if (!r.body && !r.not_modified && !(r.body = calloc(1, 1))) {
		url_fetch_result_free(&r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void url_fetch_result_free(struct url_fetch_result *r)
{
	if (!r)
		return;
	free(r->body);
	free(r->etag);
	free(r->last_modified);
	memset(r, 0, sizeof(*r));
}
