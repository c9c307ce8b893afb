/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* keepalived's notices and conntrackd's statistics (parse.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/parse.h"

static const char *const role_names[HA_ROLE_MAX] = { "stopped", "starting", "backup", "master", "fault" };

const char *ha_role_name(enum ha_role r)
{
	return r < HA_ROLE_MAX ? role_names[r] : "?";
}

int ha_parse_notice(const char *line, struct ha_notice *out)
{
	static const struct {
		const char *word;
		enum ha_role role;
	} states[] = { { "MASTER", HA_ROLE_MASTER },
		       { "BACKUP", HA_ROLE_BACKUP },
		       { "FAULT", HA_ROLE_FAULT },
		       { "STOP", HA_ROLE_STOPPED },
		       { "DELETED", HA_ROLE_STOPPED } };
	const char *q, *e, *w;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!strncmp(line, "GROUP \"", 7))
		out->group = true;
	else if (strncmp(line, "INSTANCE \"", 10))
		return -EINVAL;
	q = strchr(line, '"') + 1;
	if (!(e = strchr(q, '"')) || (n = (size_t)(e - q)) >= sizeof(out->name) || e[1] != ' ')
		return -EINVAL;
	memcpy(out->name, q, n);
	out->name[n] = '\0';
	w = e + 2;
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		size_t len = strlen(states[i].word);

		if (!strncmp(w, states[i].word, len) && (w[len] == '\0' || w[len] == ' ')) {
			out->state = states[i].role;
			return 0;
		}
	}
	return -EINVAL;
}

/* What follows head in text, or NULL. */
static const char *after(const char *text, const char *head)
{
	const char *p = strstr(text, head);

	return p ? p + strlen(head) : NULL;
}

/* "  16 Bytes sent   8 Bytes recv": two numbers, each with two words. */
static bool pair(const char *s, uint64_t *v1, uint64_t *v2)
{
	unsigned long long x, y;

	if (!s || sscanf(s, " %llu %*s %*s %llu", &x, &y) != 2)
		return false;
	*v1 = x;
	*v2 = y;
	return true;
}

int ha_parse_stats(const char *text, struct ha_sync_stats *out)
{
	const char *s, *traffic;
	bool any = false;

	memset(out, 0, sizeof(*out));
	if ((s = after(text, "cache internal:")) && (s = after(s, "current active connections:")))
		any |= sscanf(s, " %" SCNu64, &out->internal) == 1;
	if ((s = after(text, "cache external:")) && (s = after(s, "current active connections:")))
		any |= sscanf(s, " %" SCNu64, &out->external) == 1;
	/* "UDP traffic (active device=sync0):" then three lines of pairs. */
	if ((traffic = strstr(text, " traffic (active device=")) && (traffic = strchr(traffic, '\n'))) {
		const char *l2 = strchr(traffic + 1, '\n'), *l3 = l2 ? strchr(l2 + 1, '\n') : NULL;

		any |= pair(traffic + 1, &out->bytes_sent, &out->bytes_recv);
		pair(l2, &out->msgs_sent, &out->msgs_recv);
		pair(l3, &out->send_errors, &out->recv_errors);
	}
	if ((s = after(text, "message tracking:")))
		pair(s, &out->malformed, &out->lost);
	return any ? 0 : -EINVAL;
}
