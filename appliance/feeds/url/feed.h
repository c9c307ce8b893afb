/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A set fed from a URL, as the daemon is to keep it: the last good list
 * in the state directory (one file written whole: a JSON line of what the
 * list is, the URL, its ETag and Last-Modified and when it was fetched,
 * then the body as fetched), read at the start so that it is enforced
 * before the first fetch; then fetched again and again, a conditional
 * request each time. A fetch that fails, or brings what is not a list,
 * changes nothing but the last error: the set is never emptied by it.
 */
#ifndef NFBOX_FEEDS_URL_FEED_H
#define NFBOX_FEEDS_URL_FEED_H

#include <stdatomic.h>
#include <stdint.h>

#include "feeds/url/list.h"

#define URL_FEED_MAX_BYTES     (64u << 20) /* a list's body */
#define URL_FEED_MAX_REDIRECTS 5
#define URL_FEED_TIMEOUT_MS    30000

struct url_feed {
	const char *name;	   /* the set's: the cache is STATE_DIR/url-NAME.cache */
	const char *url;	   /* https://... */
	const char *ca;		   /* a CA file, or NULL: the system's CAs */
	const char *state_dir;	   /* where the last good list is kept */
	size_t max_bytes;	   /* 0: URL_FEED_MAX_BYTES */
	long max_redirects;	   /* <0: URL_FEED_MAX_REDIRECTS */
	long timeout_ms;	   /* 0: URL_FEED_TIMEOUT_MS */
	const atomic_bool *cancel; /* set by another thread: the fetch ends (fetch.h); NULL: never */
};

struct url_feed_state {
	struct url_list list; /* the last good list: what the set holds */
	char *etag, *last_modified;
	int64_t fetched;      /* when the list was fetched (Unix time); 0: no list */
	int64_t checked;      /* the last fetch that answered (200 or 304) */
	int64_t failed;	      /* the last fetch that failed; 0: none since a good one */
	int last_errno;	      /* of that failure (negative), 0 */
	char last_error[256]; /* its reason, "" */
};

/* At the start: the last good list of this URL from the state directory
 * (1), none (0: no file, or one of another URL), or a file that cannot be
 * read (-errno, said in last_error; the state is left empty). */
int url_feed_load(const struct url_feed *f, struct url_feed_state *s);
/* On the timer: fetch (conditional), and on a new good list keep it in
 * the state directory and in s->list. 1: the list changed (replace the
 * set's contents with s->list), 0: unchanged (304, or the same entries),
 * -errno: the fetch failed or brought garbage (s->list as it was, the
 * reason in last_error). now: the time of this fetch (Unix time). */
int url_feed_refresh(const struct url_feed *f, struct url_feed_state *s, int64_t now);
void url_feed_state_free(struct url_feed_state *s);

#endif
