/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The scalar syntaxes of the policy language (policy/syntax/parse.c), value
 * by value: sizes with and without a decimal fraction, rates with their
 * period. What the loader does with them is in the golden files.
 */
#include <errno.h>
#include <stdint.h>

#include "policy/syntax/parse.h"
#include "tests/lib/check.h"

static void test_sizes(void)
{
	static const struct {
		const char *in;
		uint64_t want; /* 0: refused */
	} cases[] = {
		{ "4096", 4096 },
		{ "100MB", 100000000 },
		{ "256MiB", 256ull << 20 },
		{ "1.5GiB", 3ull << 29 },
		{ "1.5KB", 1500 },
		{ "0.5MiB", 512ull << 10 },
		{ "2.25GB", 2250000000ull },
		{ "1.000001MB", 1000001 },
		{ "0.1KiB", 0 },    /* 102.4 bytes */
		{ "1.5B", 0 },      /* half a byte */
		{ "1.", 0 },
		{ ".5GiB", 0 },
		{ "1.5.5GiB", 0 },
		{ "1.1234567GB", 0 }, /* seven decimals */
		{ "1,5GiB", 0 },
		{ "12parsecs", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = NULL;
		uint64_t v = 0;
		int r = parse_size(cases[i].in, &v, &why);
		char name[64];

		snprintf(name, sizeof(name), "size %s", cases[i].in);
		check_begin(name);
		if (cases[i].want) {
			CHECK_EQ_INT(r, 0);
			CHECK_EQ_INT(v, cases[i].want);
		} else {
			CHECK(r < 0);
			CHECK(why != NULL);
		}
		check_end();
	}
}

static void test_rates(void)
{
	static const struct {
		const char *in;
		uint32_t n, per; /* per 0: refused */
	} cases[] = {
		{ "100/second", 100, 1 },
		{ "1/minute", 1, 60 },
		{ "90/minute", 90, 60 },
		{ "5/hour", 5, 3600 },
		{ "7/s", 7, 1 },
		{ "7/sec", 7, 1 },
		{ "7/m", 7, 60 },
		{ "7/min", 7, 60 },
		{ "7/h", 7, 3600 },
		{ "1000000/second", 1000000, 1 },
		{ "0/second", 0, 0 },
		{ "1000001/second", 0, 0 },
		{ "5/fortnight", 0, 0 },
		{ "5", 0, 0 },
		{ "/second", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_rate r = { 0, 0 };
		const char *why = NULL;
		int rc = parse_rate(cases[i].in, &r, &why);
		char name[64];

		snprintf(name, sizeof(name), "rate %s", cases[i].in);
		check_begin(name);
		if (cases[i].per) {
			CHECK_EQ_INT(rc, 0);
			CHECK_EQ_INT(r.n, cases[i].n);
			CHECK_EQ_INT(r.per, cases[i].per);
		} else {
			CHECK(rc < 0);
			CHECK(why != NULL);
		}
		check_end();
	}
}

static void test_ports(void)
{
	static const struct {
		const char *in;
		const char *want; /* "proto lo-hi ..." or "error@OFFSET" */
	} cases[] = {
		{ "tcp/443", "6 443-443" },
		{ "udp/10000-20000", "17 10000-20000" },
		{ "tcp/80,443", "6 80-80 443-443" },
		{ "tcp/80,443,8000-8010", "6 80-80 443-443 8000-8010" },
		{ "tcp/ssh", "6 22-22" },
		{ "udp/domain", "17 53-53" },
		{ "tcp/ssh-telnet", "6 22-23" },
		{ "sctp/0", "132 0-0" },
		{ "tcp/80,99999", "error@7" },
		{ "tcp/80,,443", "error@7" },
		{ "tcp/2000-1000", "error@4" },
		{ "tcp/80-", "error@7" },
		{ "tcp/nosuchport", "error@4" },
		{ "icmp/8", "error@0" },
		{ "80", "error@0" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct port_range v[8];
		size_t n = 0, bad = 0, used = 0;
		const char *why = NULL;
		char name[64], got[128];
		int r = parse_ports(cases[i].in, v, 8, &n, &bad, &why);

		if (r < 0)
			snprintf(got, sizeof(got), "error@%zu", bad);
		for (size_t j = 0; r == 0 && j < n; j++)
			used += (size_t)snprintf(got + used, sizeof(got) - used, j ? " %u-%u" : "%u %u-%u",
						 j ? v[j].lo : v[j].proto, j ? v[j].hi : v[j].lo, v[j].hi);
		snprintf(name, sizeof(name), "ports %s", cases[i].in);
		check_begin(name);
		CHECK_EQ_STR(got, cases[i].want);
		CHECK(r == 0 || why);
		check_end();
	}
}

int main(void)
{
	test_ports();
	test_sizes();
	test_rates();
	CHECK_EXIT();
}
