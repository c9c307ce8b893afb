/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Verdict events, as the backends hand them over (their sink), as JSON lines
 * to the log file (--log) and to every `nfbox log` follower, and under
 * systemd as structured journal entries (unless --no-journal-events). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/events.h"
#include "base/json.h"
#include "base/log.h"

/* The events' state (the daemon's dm->events). */
struct eventlog {
	char *path; /* --log: NULL none, "-" stdout */
	FILE *f;
	bool journal;			   /* verdict events to the journal (under systemd) */
	unsigned long long journal_failed; /* ... that could not be sent */
	unsigned long long seen;
	void (*publish)(void *arg, const char *line, size_t len); /* to the followers; NULL: none */
	void *publish_arg;
};

static void kv_addr(struct json *j, const char *key, int af, const uint8_t *addr)
{
	char buf[INET6_ADDRSTRLEN];

	json_kv_str(j, key, inet_ntop(af, addr, buf, sizeof(buf)) ? buf : "?");
}

/* An interface's name ("" for none, "ifN" for one gone), buf IF_NAMESIZE. */
static void ifname_of(uint32_t ifindex, char *buf)
{
	buf[0] = '\0';
	if (ifindex && !if_indextoname(ifindex, buf))
		snprintf(buf, IF_NAMESIZE, "if%u", ifindex);
}

static void kv_ifname(struct json *j, const char *key, uint32_t ifindex)
{
	char buf[IF_NAMESIZE];

	ifname_of(ifindex, buf);
	json_kv_str(j, key, buf);
}

void events_vevent_fields(struct json *j, const struct vevent *v)
{
	json_key(j, "ts");
	json_fixed(j, v->ts, 6);
	json_kv_str(j, "hook", v->hook);
	json_kv_str(j, "family", policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6));
	json_kv_str(j, "rule", v->rule);
	json_kv_str(j, "action", v->action);
	json_kv_u64(j, "proto", v->proto);
	kv_addr(j, "src", v->af, v->src);
	kv_addr(j, "dst", v->af, v->dst);
	json_kv_u64(j, "sport", v->sport);
	json_kv_u64(j, "dport", v->dport);
	json_kv_u64(j, "len", v->len);
	kv_ifname(j, "in", v->ifin);
	kv_ifname(j, "out", v->ifout);
}

static void vevent_json(const struct vevent *v, FILE *f)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	events_vevent_fields(&j, v);
	json_object_end(&j);
	fputc('\n', f);
}

/* The event as a journal entry with fields of its own (journalctl
 * NFBOX_EVENT=verdict RULE=ssh ACTION=drop). */
static void vevent_journal(struct eventlog *el, const struct vevent *v)
{
	char msg[320], rule[96], action[32], hook[32], fam[16], proto[16], src[64], dst[64], sport[16], dport[16],
		len[24], in[IF_NAMESIZE + 8], out[IF_NAMESIZE + 8], a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN],
		ifi[IF_NAMESIZE], ifo[IF_NAMESIZE];
	const char *fields[] = {
		msg, "NFBOX_EVENT=verdict", rule, action, hook, fam, proto, src, dst, sport, dport, len, in, out
	};
	int r;

	inet_ntop(v->af, v->src, a, sizeof(a));
	inet_ntop(v->af, v->dst, b, sizeof(b));
	ifname_of(v->ifin, ifi);
	ifname_of(v->ifout, ifo);
	snprintf(msg, sizeof(msg), "MESSAGE=%s %s: rule %s, %s %s -> %s proto %u sport %u dport %u len %u%s%s%s%s",
		 v->hook, v->action, v->rule, policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6),
		 a, b, v->proto, v->sport, v->dport, v->len, ifi[0] ? " in " : "", ifi, ifo[0] ? " out " : "", ifo);
	snprintf(rule, sizeof(rule), "RULE=%s", v->rule);
	snprintf(action, sizeof(action), "ACTION=%s", v->action);
	snprintf(hook, sizeof(hook), "HOOK=%s", v->hook);
	snprintf(fam, sizeof(fam), "FAMILY=%s",
		 policy_family_name(v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6));
	snprintf(proto, sizeof(proto), "PROTO=%u", v->proto);
	snprintf(src, sizeof(src), "SRC=%s", a);
	snprintf(dst, sizeof(dst), "DST=%s", b);
	snprintf(sport, sizeof(sport), "SPORT=%u", v->sport);
	snprintf(dport, sizeof(dport), "DPORT=%u", v->dport);
	snprintf(len, sizeof(len), "LEN=%u", v->len);
	snprintf(in, sizeof(in), "IN=%s", ifi);
	snprintf(out, sizeof(out), "OUT=%s", ifo);
	if ((r = log_journal_fields(6, fields, sizeof(fields) / sizeof(fields[0]))) == 0)
		return;
	/* journald gone or its socket full: counted, said now and then */
	if (el->journal_failed++ % 1000 == 0)
		log_warn("verdict events: %llu could not be sent to the journal (%s)", el->journal_failed,
			 strerror(-r));
}

/* One line to the log file and to every follower, and an entry to the
 * journal under systemd. */
static void vevent_emit(void *arg, const struct vevent *v)
{
	struct eventlog *el = arg;
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);

	if (!f)
		return;
	vevent_json(v, f);
	fclose(f);
	el->seen++;
	if (el->f) {
		fputs(line, el->f);
		fflush(el->f);
	}
	if (el->publish)
		el->publish(el->publish_arg, line, len);
	free(line);
	if (el->journal)
		vevent_journal(el, v);
}

/* The notice to followers that n events were missed, and why: one JSON
 * line in line (len bytes); its length, 0 if it did not fit. */
size_t events_missed_line(char *line, size_t len, uint64_t n, const char *reason)
{
	FILE *f = fmemopen(line, len, "w");
	struct json j;
	long end;

	if (!f)
		return 0;
	json_init(&j, f);
	json_object_begin(&j);
	json_kv_u64(&j, "missed", n);
	json_kv_str(&j, "reason", reason);
	json_object_end(&j);
	fputc('\n', f);
	end = ftell(f);
	return fclose(f) == 0 && end > 0 && (size_t)end < len ? (size_t)end : 0;
}

/* To every follower: n events were missed, and why. */
static void publish_missed(void *arg, uint64_t n, const char *reason)
{
	struct eventlog *el = arg;
	char line[512];
	size_t len = events_missed_line(line, sizeof(line), n, reason);

	if (len && el->publish)
		el->publish(el->publish_arg, line, len);
}

struct backend_sink eventlog_sink(struct eventlog *el)
{
	return (struct backend_sink){ .verdict = vevent_emit, .missed = publish_missed, .arg = el };
}

int eventlog_open(const char *path, struct eventlog **out)
{
	struct eventlog *el = calloc(1, sizeof(*el));

	if (!el || (path && !(el->path = strdup(path)))) {
		free(el);
		log_err("out of memory");
		return -ENOMEM;
	}
	if (path) {
		el->f = strcmp(path, "-") ? fopen(path, "ae") : stdout;
		if (!el->f) {
			int r = -errno;

			log_err("cannot open log file %s: %s", path, strerror(errno));
			eventlog_close(el);
			return r;
		}
	}
	*out = el;
	return 0;
}

void eventlog_close(struct eventlog *el)
{
	if (!el)
		return;
	if (el->f && el->f != stdout)
		fclose(el->f);
	free(el->path);
	free(el);
}

/* The new file is opened before the old is closed: no event is written to
 * nowhere, and a failure keeps the old one. */
void eventlog_reopen(struct eventlog *el)
{
	FILE *f;

	if (!el->path || !strcmp(el->path, "-") || !el->f)
		return;
	if (!(f = fopen(el->path, "ae"))) {
		log_err("SIGUSR1: cannot open the log file %s again (%s); writing on to the one open", el->path,
			strerror(errno));
		return;
	}
	fclose(el->f);
	el->f = f;
	log_info("SIGUSR1: the log file %s opened again", el->path);
}

void eventlog_journal(struct eventlog *el, bool on)
{
	el->journal = on;
	if (on)
		log_info("verdict events go to the journal too (journalctl NFBOX_EVENT=verdict; --no-journal-events: "
			 "not)");
}

void eventlog_follow(struct eventlog *el, void (*publish)(void *arg, const char *line, size_t len), void *arg)
{
	el->publish = publish;
	el->publish_arg = arg;
}

unsigned long long eventlog_seen(const struct eventlog *el)
{
	return el->seen;
}
