/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One HTTPS GET of a blocklist with libcurl: the server verified (the
 * system's CAs, or a CA file), https only (also after a redirect), a
 * bounded number of redirects, a time limit, a size bound on the body
 * (declared or not), and a conditional request (If-None-Match with the
 * last ETag, If-Modified-Since with the last Last-Modified). Blocking: a
 * caller with an event loop runs it off the loop.
 */
#ifndef NFBOX_FEEDS_URL_FETCH_H
#define NFBOX_FEEDS_URL_FETCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct url_fetch_opts {
	const char *url;	   /* https://... */
	const char *ca;		   /* a CA file; NULL: the system's CAs */
	const char *etag;	   /* of the last good answer, or NULL */
	const char *last_modified; /* of the last good answer, or NULL */
	size_t max_bytes;	   /* the body's bound */
	long max_redirects;
	long timeout_ms; /* the whole transfer */
	/* set by another thread: the transfer ends within a second (-ECANCELED,
	 * at a daemon's stop); NULL: never */
	const atomic_bool *cancel;
};

struct url_fetch_result {
	long status;	   /* the last answer's HTTP status */
	bool not_modified; /* 304: the last good list stands */
	char *body;	   /* 200: the body (NUL-terminated, len bytes) */
	size_t len;
	char *etag;	     /* the answer's, or NULL */
	char *last_modified; /* the answer's, or NULL */
};

/* 0 with *out filled (200 or 304), or a negative errno with why: -ETIMEDOUT,
 * -EFBIG (over max_bytes), -ELOOP (too many redirects), -EPROTO (an HTTP
 * status other than 200 and 304), -EACCES (TLS: the server not verified,
 * or not https), -ECANCELED (cancel set), -EIO (anything else libcurl says), -ENOMEM. */
int url_fetch(const struct url_fetch_opts *o, struct url_fetch_result *out, char *why, size_t whylen);
void url_fetch_result_free(struct url_fetch_result *r);

#endif
