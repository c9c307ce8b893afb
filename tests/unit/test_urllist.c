/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Blocklists fetched from a URL, read into prefixes (feeds/url/list.c):
 * Spamhaus drop.txt (";" comments after each prefix), a FireHOL netset
 * ("#" comments, addresses and prefixes of both families), Spamhaus' DROP
 * JSON (an object a line and its metadata); and what is refused as a
 * whole, so that it never replaces a good list: HTML, a word beside a
 * prefix, a prefix with host bits, JSON without "cidr", a NUL byte, an
 * empty list.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../lib/check.h"
#include "feeds/url/list.h"

/* The entries as text, space-separated, or "error: WHY". */
static void parsed(const char *body, char *out, size_t len)
{
	struct url_list l;
	char why[160];
	size_t used = 0;

	if (url_list_parse(body, strlen(body), &l, why, sizeof(why)) < 0) {
		snprintf(out, len, "error: %s", why);
		return;
	}
	out[0] = '\0';
	for (uint32_t i = 0; i < l.n && used < len; i++) {
		char buf[64];

		policy_prefix_format(&l.v[i], buf, sizeof(buf));
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", buf);
	}
	url_list_free(&l);
}

static void one(const char *name, const char *body, const char *want)
{
	char got[512];

	parsed(body, got, sizeof(got));
	check_begin(name);
	CHECK_EQ_STR(got, want);
	check_end();
}

int main(void)
{
	one("spamhaus-drop-txt",
	    "; Spamhaus DROP List 2026/12/06 - (c) 2026 The Spamhaus Project SLU\n"
	    "; Last-Modified: Sun, 06 Dec 2026 08:00:00 GMT\n"
	    "192.0.2.0/24 ; SBL000001\r\n"
	    "198.51.100.128/25 ; SBL000002\n",
	    "192.0.2.0/24 198.51.100.128/25");
	one("firehol-netset",
	    "#\n# firehol_level1\n#\n# Maintainer      : FireHOL\n\n"
	    "203.0.113.7\n203.0.113.64/26\n2001:db8:bad::/48\n   \n",
	    "203.0.113.7 203.0.113.64/26 2001:db8:bad::/48");
	one("spamhaus-drop-json",
	    "{\"cidr\":\"192.0.2.0/24\",\"sblid\":\"SBL000001\",\"rir\":\"ripencc\"}\n"
	    "{\"cidr\":\"2001:db8:dead::/48\",\"sblid\":\"SBL000003\",\"rir\":\"arin\"}\n"
	    "{\"type\":\"metadata\",\"timestamp\":1796544000,\"size\":123,\"records\":2,\"copyright\":\"x\"}\n",
	    "192.0.2.0/24 2001:db8:dead::/48");
	one("html-refused", "<html><body>503 Service Unavailable</body></html>\n",
	    "error: line 1: more than one word: '<html><body>503 Service Unavailable</body></html>'");
	one("html-word-refused", "<html>\n", "error: line 1: not an address or prefix: '<html>'");
	one("two-words-refused", "192.0.2.0/24 198.51.100.0/24\n",
	    "error: line 1: more than one word: '192.0.2.0/24 198.51.100.0/24'");
	one("range-refused", "192.0.2.1-192.0.2.9\n", "error: line 1: not an address or prefix: '192.0.2.1-192.0.2.9'");
	one("host-bits-refused", "# x\n192.0.2.1/24\n", "error: line 2: a prefix with host bits set: '192.0.2.1/24'");
	one("json-without-cidr-refused", "{\"cidr\":\"192.0.2.0/24\"}\n{\"net\":\"198.51.100.0/24\"}\n",
	    "error: line 2: an object with no \"cidr\": '{\"net\":\"198.51.100.0/24\"}'");
	one("json-broken-refused", "{\"cidr\":\"192.0.2.0/24\"}\n{\"cidr\":\n",
	    "error: line 2: not a JSON object: '{\"cidr\":'");
	one("empty-refused", "# nothing today\n\n", "error: no entries (taken for a broken list)");
	{
		struct url_list l;
		char why[160];

		check_begin("nul-refused");
		CHECK(url_list_parse("192.0.2.0/24\n\0\n", 15, &l, why, sizeof(why)) == -EINVAL);
		check_end();
	}
	CHECK_EXIT();
}
