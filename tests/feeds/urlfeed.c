/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The URL feed library (appliance/feeds/url/) driven as the daemon is to
 * drive it, for tests/netns/test_urlfeed.sh: at the start the last good
 * list from the state directory, then one fetch.
 *
 *   urlfeed STATE_DIR NAME URL [CA|-] [MAX_BYTES] [TIMEOUT_MS]
 *
 * prints "start: N entries" (or "start: none"), then one of
 * "fetch: changed N entries", "fetch: unchanged N entries" or
 * "fetch: error ERRNAME (REASON); kept N entries", and "entries: ..."
 * (the first few). Exit status 0 unless the arguments are wrong.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "feeds/url/feed.h"

static const char *errname(int e)
{
	switch (-e) {
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EFBIG:
		return "EFBIG";
	case ELOOP:
		return "ELOOP";
	case EPROTO:
		return "EPROTO";
	case EACCES:
		return "EACCES";
	case EINVAL:
		return "EINVAL";
	case ENOMEM:
		return "ENOMEM";
	default:
		return "EIO";
	}
}

static void print_entries(const struct url_list *l)
{
	fputs("entries:", stdout);
	for (uint32_t i = 0; i < l->n && i < 8; i++) {
		char buf[64];

		policy_prefix_format(&l->v[i], buf, sizeof(buf));
		printf(" %s", buf);
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	struct url_feed f = { .max_redirects = -1 };
	struct url_feed_state s = { 0 };
	int r;

	if (argc < 4 || argc > 7) {
		fprintf(stderr, "usage: urlfeed STATE_DIR NAME URL [CA|-] [MAX_BYTES] [TIMEOUT_MS]\n");
		return 2;
	}
	f.state_dir = argv[1];
	f.name = argv[2];
	f.url = argv[3];
	f.ca = argc > 4 && strcmp(argv[4], "-") ? argv[4] : NULL;
	f.max_bytes = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
	f.timeout_ms = argc > 6 ? strtol(argv[6], NULL, 10) : 0;
	r = url_feed_load(&f, &s);
	if (r < 0)
		printf("start: error %s (%s)\n", errname(r), s.last_error);
	else if (r == 0)
		printf("start: none\n");
	else
		printf("start: %u entries\n", s.list.n);
	r = url_feed_refresh(&f, &s, (int64_t)time(NULL));
	if (r < 0)
		printf("fetch: error %s (%s); kept %u entries\n", errname(r), s.last_error, s.list.n);
	else
		printf("fetch: %s %u entries\n", r ? "changed" : "unchanged", s.list.n);
	print_entries(&s.list);
	url_feed_state_free(&s);
	return 0;
}
