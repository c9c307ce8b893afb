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

int main(void)
{
	test_sizes();
	test_rates();
	CHECK_EXIT();
}
