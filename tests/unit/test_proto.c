/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The control protocol (appliance/control/proto.c): requests are parsed
 * exactly (no prefix matching, no guessing), every formatted request parses
 * back to itself, and a hostile line is refused with a reason.
 */
#include <stdlib.h>
#include <string.h>

#include "control/proto.h"
#include "tests/lib/check.h"

static int parse(const char *line, struct ctl_request *r)
{
	struct diags d;
	int rc;

	diags_init(&d);
	memset(r, 0, sizeof(*r));
	rc = ctl_request_parse(line, strlen(line), r, &d);
	if (rc < 0 && d.errors != 1)
		check_fail_at(__FILE__, __LINE__, "'%s' refused with %zu errors, expected 1 message", line, d.errors);
	diags_free(&d);
	return rc;
}

static void test_accepts(void)
{
	struct ctl_request r;

	check_begin("proto-accepts-each-verb");
	CHECK(parse("status", &r) == 0 && r.verb == CTL_STATUS && !r.json);
	CHECK(parse("status json", &r) == 0 && r.verb == CTL_STATUS && r.json);
	CHECK(parse("stats json", &r) == 0 && r.verb == CTL_STATS && r.json);
	CHECK(parse("log", &r) == 0 && r.verb == CTL_LOG);
	CHECK(parse("reload", &r) == 0 && r.verb == CTL_RELOAD && !r.policy);
	CHECK(parse("reload policy=/etc/nfbox/p.yaml", &r) == 0 && r.policy && !strcmp(r.policy, "/etc/nfbox/p.yaml"));
	ctl_request_free(&r);
	CHECK(parse("stop", &r) == 0 && r.verb == CTL_STOP && !r.keep);
	CHECK(parse("stop keep", &r) == 0 && r.verb == CTL_STOP && r.keep);
	CHECK(parse("confirm", &r) == 0 && r.verb == CTL_CONFIRM);
	CHECK(parse("rollback", &r) == 0 && r.verb == CTL_ROLLBACK);
	CHECK(parse("metrics", &r) == 0 && r.verb == CTL_METRICS);
	CHECK(parse("stats json zero", &r) == 0 && r.verb == CTL_STATS && r.zero && r.json);
	CHECK(parse("stats unused", &r) == 0 && r.unused && !r.since);
	CHECK(parse("stats unused since=2592000 json", &r) == 0 && r.unused && r.since == 2592000 && r.json);
	CHECK(parse("reload confirm=120", &r) == 0 && r.verb == CTL_RELOAD && r.confirm == 120 && !r.policy);
	CHECK(parse("reload policy=/p.yaml confirm=604800", &r) == 0 && r.confirm == 604800 && r.policy);
	ctl_request_free(&r);
	CHECK(parse("trace", &r) == 0 && r.verb == CTL_TRACE && !r.count && !r.has_port && !r.from);
	CHECK(parse("trace count=1000 timeout=5 iif=lan0 from=192.0.2.0%2F24 to=2001:db8::1 proto=udp port=0 "
		    "family=ipv6",
		    &r) == 0 &&
	      r.count == 1000 && r.timeout == 5 && !strcmp(r.iif, "lan0") && !strcmp(r.from, "192.0.2.0/24") &&
	      !strcmp(r.to, "2001:db8::1") && !strcmp(r.proto, "udp") && r.has_port && r.port == 0 &&
	      !strcmp(r.family, "ipv6"));
	ctl_request_free(&r);
	check_end();
}

static void test_refuses(void)
{
	static const char *const bad[] = {
		"",				       /* nothing */
		"statusX",			       /* no prefix matching */
		"Status",			       /* case matters */
		"status  json",			       /* one space between words */
		"status json ",			       /* no trailing space */
		" status",			       /* no leading space */
		"status json json",		       /* an argument once */
		"status verbose",		       /* unknown argument */
		"log json",			       /* not for log */
		"status policy=/x",		       /* not for status */
		"reload policy=relative.yaml",	       /* absolute only */
		"reload policy=",		       /* empty */
		"reload policy=/a%2",		       /* cut escape */
		"reload policy=/a%zz",		       /* bad escape */
		"reload policy=/a%00b",		       /* NUL */
		"reload /etc/nfbox/p.yaml",	       /* the old form */
		"stop keep keep",		       /* an argument once */
		"reload keep",			       /* keep is stop's */
		"stop json",			       /* not for stop */
		"reload confirm=0",		       /* 1 s at least */
		"reload confirm=604801",	       /* a week at most */
		"reload confirm=99999999999999999999", /* no wrap-around */
		"reload confirm=5s",		       /* seconds only: units are the command's */
		"reload confirm=-5",
		"reload confirm=",
		"reload confirm=5 confirm=6", /* an argument once */
		"stop confirm=5",	      /* confirm= is reload's */
		"confirm json",		      /* confirm takes nothing */
		"status zero",		      /* zero is stats' */
		"metrics json",		      /* metrics takes nothing */
		"stats zero zero",
		"stats unused unused",
		"stats since=0",	 /* 1 s at least */
		"stats since=315360001", /* ten years at most */
		"stats since=7d",	 /* seconds only */
		"status unused",	 /* unused is stats' */
		"stats since=5 since=6",
		"trace count=0",    /* 1 packet at least */
		"trace count=1001", /* CTL_MAX_TRACE_COUNT */
		"trace count=1 count=2",
		"trace port=65536",
		"trace port=",
		"trace from=a from=b", /* once */
		"trace iif=",
		"trace json",  /* not for trace: the command writes JSON or text */
		"log count=5", /* count= is trace's */
	};
	struct ctl_request r;

	check_begin("proto-refuses-inexact-requests");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse(bad[i], &r) == 0) {
			check_fail_at(__FILE__, __LINE__, "'%s' was accepted", bad[i]);
			ctl_request_free(&r);
		}
	check_end();
}

static void test_refuses_bytes(void)
{
	struct ctl_request r;
	struct diags d;
	char big[CTL_MAX_REQUEST + 2];

	check_begin("proto-refuses-nul-newline-and-long");
	diags_init(&d);
	CHECK(ctl_request_parse("status\0json", 11, &r, &d) < 0);
	CHECK(ctl_request_parse("status\njson", 11, &r, &d) < 0);
	memset(big, 'a', sizeof(big));
	memcpy(big, "reload policy=/", 15);
	CHECK(ctl_request_parse(big, sizeof(big), &r, &d) < 0);
	CHECK(d.errors == 3);
	diags_free(&d);
	check_end();
}

static void test_roundtrip(void)
{
	static const char *const paths[] = { "/etc/nfbox/policy.yaml", "/tmp/with space/p.yaml", "/tmp/100%.yaml",
					     "/tmp/caf\xc3\xa9\t\x01.yaml", "/" };
	check_begin("proto-format-parses-back");
	for (int v = 0; v < CTL_NVERBS; v++)
		for (int json = 0; json < 2; json++)
			for (size_t p = 0; p <= sizeof(paths) / sizeof(paths[0]); p++) {
				struct ctl_request in = { .verb = (enum ctl_verb)v,
							  .json = json,
							  .policy = p < 5 ? (char *)paths[p] : NULL };
				struct ctl_request out;
				char *line;
				bool valid =
					(!json || v == CTL_STATUS || v == CTL_STATS) && (!in.policy || v == CTL_RELOAD);

				if (!valid)
					continue;
				line = ctl_request_format(&in);
				CHECK(line && line[strlen(line) - 1] == '\n');
				line[strlen(line) - 1] = '\0';
				CHECK(!strchr(line, '\n') && !strstr(line, "  "));
				if (parse(line, &out) < 0) {
					check_fail_at(__FILE__, __LINE__, "'%s' did not parse back", line);
				} else {
					CHECK(out.verb == in.verb && out.json == in.json);
					CHECK(!in.policy == !out.policy &&
					      (!in.policy || !strcmp(in.policy, out.policy)));
					ctl_request_free(&out);
				}
				free(line);
			}
	{
		struct ctl_request in = { .verb = CTL_RELOAD, .policy = (char *)"/a b", .confirm = 90 }, out;
		char *line = ctl_request_format(&in);

		CHECK(line && !strcmp(line, "reload policy=/a%20b confirm=90\n"));
		if (line) {
			line[strlen(line) - 1] = '\0';
			CHECK(parse(line, &out) == 0 && out.confirm == 90 && out.policy && !strcmp(out.policy, "/a b"));
			ctl_request_free(&out);
		}
		free(line);
	}
	{
		struct ctl_request in = { .verb = CTL_SET_ADD,
					  .set = (char *)"block-list.v2",
					  .timeout = 600,
					  .source = (char *)"/tmp/a b.txt" },
				   out;
		char *line = ctl_request_format(&in);

		CHECK(line && !strcmp(line, "set-add set=block-list.v2 timeout=600 source=/tmp/a%20b.txt\n"));
		if (line) {
			line[strlen(line) - 1] = '\0';
			CHECK(parse(line, &out) == 0 && out.verb == CTL_SET_ADD && out.timeout == 600 && out.set &&
			      !strcmp(out.set, "block-list.v2") && out.source && !strcmp(out.source, "/tmp/a b.txt"));
			ctl_request_free(&out);
		}
		free(line);
	}
	{
		struct ctl_request out;

		CHECK(parse("set-list", &out) == 0 && out.verb == CTL_SET_LIST && !out.set);
		CHECK(parse("set-list set=x json", &out) == 0 && out.json && out.set);
		ctl_request_free(&out);
		CHECK(parse("set-add set=x timeout=0", &out) < 0);
		CHECK(parse("set-add set=x timeout=31536001", &out) < 0); /* over a year */
		CHECK(parse("set-del set=x timeout=5", &out) < 0);	  /* del takes no timeout */
		CHECK(parse("set-flush source=x", &out) < 0);
		CHECK(parse("set-add set=", &out) < 0);
	}
	{
		struct ctl_request in = { .verb = CTL_STATS, .unused = true, .since = 600 }, out;
		char *line = ctl_request_format(&in);

		CHECK(line && !strcmp(line, "stats unused since=600\n"));
		if (line) {
			line[strlen(line) - 1] = '\0';
			CHECK(parse(line, &out) == 0 && out.unused && out.since == 600);
		}
		free(line);
	}
	{
		struct ctl_request in = { .verb = CTL_TRACE,
					  .count = 3,
					  .from = "192.0.2.0/24",
					  .has_port = true,
					  .port = 53,
					  .proto = "udp" },
				   out;
		char *line = ctl_request_format(&in);

		CHECK(line && !strcmp(line, "trace count=3 from=192.0.2.0/24 proto=udp port=53\n"));
		if (line) {
			line[strlen(line) - 1] = '\0';
			CHECK(parse(line, &out) == 0 && out.count == 3 && out.has_port && out.port == 53 &&
			      !strcmp(out.from, "192.0.2.0/24"));
			ctl_request_free(&out);
		}
		free(line);
	}
	{
		struct ctl_request in = { .verb = CTL_STOP, .keep = true }, out;
		char *line = ctl_request_format(&in);

		CHECK(line && !strcmp(line, "stop keep\n"));
		if (line) {
			line[strlen(line) - 1] = '\0';
			CHECK(parse(line, &out) == 0 && out.verb == CTL_STOP && out.keep);
		}
		free(line);
	}
	check_end();
}

int main(void)
{
	test_accepts();
	test_refuses();
	test_refuses_bytes();
	test_roundtrip();
	CHECK_EXIT();
}
