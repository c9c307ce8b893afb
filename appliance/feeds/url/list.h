/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A blocklist fetched from a URL, read into prefixes: plain lists (one
 * address or prefix a line, '#' and ';' comments: Spamhaus drop.txt,
 * FireHOL netsets) and Spamhaus' DROP JSON (one object a line, each with
 * "cidr", and a "metadata" line). A body that is not wholly one of these
 * is refused as a whole, so that garbage never replaces a good list.
 * Pure: no I/O, for the feed that fetches (feed.h, run by feeds/part.c).
 */
#ifndef NFBOX_FEEDS_URL_LIST_H
#define NFBOX_FEEDS_URL_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define URL_LIST_MAX_ENTRIES 1000000u /* a list longer than this is refused */

struct url_list {
	struct prefix *v;
	uint32_t n;
	uint32_t n4, n6; /* of each family */
};

/* The body's entries into *out (which it owns, url_list_free); 0, or
 * -EINVAL with why (line and reason) when the body is not a list, or
 * -ENOMEM. An empty list (no entry) is refused too: a feed that returns
 * nothing is taken for a broken one. */
int url_list_parse(const char *body, size_t len, struct url_list *out, char *why, size_t whylen);
void url_list_free(struct url_list *l);

#endif
