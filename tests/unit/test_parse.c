/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The scalar syntaxes of the policy language (policy/syntax/parse.c), value
 * by value: sizes with and without a decimal fraction, rates with their
 * period, durations in milliseconds; a forward-port's target with a port
 * or a range of ports; the country codes a country set takes. What the loader does with them is in
 * the golden files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy/policy.h"
#include "policy/syntax/parse.h"
#include "tests/lib/check.h"

/* A scalar to a number, or refused (want 0) with a reason. */
struct u64_case {
	const char *in;
	uint64_t want; /* 0: refused */
};

static void check_u64_cases(const char *kind, const struct u64_case *cases, size_t n,
			    int (*parse)(const char *, uint64_t *, const char **))
{
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;
		uint64_t v = 0;
		int r = parse(cases[i].in, &v, &why);
		char name[64];

		snprintf(name, sizeof(name), "%s '%s'", kind, cases[i].in);
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

static void test_sizes(void)
{
	static const struct u64_case cases[] = {
		{ "4096", 4096 },
		{ "100MB", 100000000 },
		{ "256MiB", 256ull << 20 },
		{ "1.5GiB", 3ull << 29 },
		{ "1.5KB", 1500 },
		{ "0.5MiB", 512ull << 10 },
		{ "2.25GB", 2250000000ull },
		{ "1.000001MB", 1000001 },
		{ "0.1KiB", 0 }, /* 102.4 bytes */
		{ "1.5B", 0 },	 /* half a byte */
		{ "1.", 0 },
		{ ".5GiB", 0 },
		{ "1.5.5GiB", 0 },
		{ "1.1234567GB", 0 }, /* seven decimals */
		{ "1,5GiB", 0 },
		{ "12parsecs", 0 },
	};

	check_u64_cases("size", cases, sizeof(cases) / sizeof(cases[0]), parse_size);
}

static void test_rates(void)
{
	static const struct {
		const char *in;
		uint32_t n, per; /* per 0: refused */
	} cases[] = {
		{ "100/second", 100, 1 }, { "1/minute", 1, 60 },
		{ "90/minute", 90, 60 },  { "5/hour", 5, 3600 },
		{ "7/s", 7, 1 },	  { "7/sec", 7, 1 },
		{ "7/m", 7, 60 },	  { "7/min", 7, 60 },
		{ "7/h", 7, 3600 },	  { "1000000/second", 1000000, 1 },
		{ "0/second", 0, 0 },	  { "1000001/second", 0, 0 },
		{ "5/fortnight", 0, 0 },  { "5", 0, 0 },
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

static int duration_ms(const char *s, uint64_t *out, const char **why)
{
	return parse_duration_ms(s, 40950, out, why);
}

static void test_durations_ms(void)
{
	static const struct u64_case cases[] = {
		{ "100ms", 100 },     { "10ms", 10 },	{ "1s", 1000 }, { "40s", 40000 }, { "1", 1000 },
		{ "40950ms", 40950 }, { "40951ms", 0 }, { "41s", 0 },	{ "1m", 0 },	  { "0ms", 0 },
		{ "0", 0 },	      { "ms", 0 },	{ "1.5s", 0 },	{ "100 ms", 0 },  { "-1ms", 0 },
		{ "100us", 0 },	      { "", 0 },
	};

	check_u64_cases("duration-ms", cases, sizeof(cases) / sizeof(cases[0]), duration_ms);
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
		{ "tcp/ftp-data-ssh", "6 20-22" }, /* a name with '-' as the low end */
		{ "tcp/ms-sql-s", "6 1433-1433" },
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

/* A forward-port's target: ADDRESS, ADDRESS:PORT, [IPV6]:PORT and a range
 * of ports ADDRESS:LOW-HIGH. */
static void test_targets(void)
{
	static const struct {
		const char *in;
		const char *want; /* "ADDRESS PORT-LAST" or "error" */
	} cases[] = {
		{ "198.51.100.10", "198.51.100.10 0-0" },
		{ "198.51.100.10:80", "198.51.100.10 80-80" },
		{ "198.51.100.10:9000-9002", "198.51.100.10 9000-9002" },
		{ "[2001:db8::10]:8443", "2001:db8::10 8443-8443" },
		{ "[2001:db8::10]:7000-7001", "2001:db8::10 7000-7001" },
		{ "198.51.100.10:9010-9000", "error" },
		{ "198.51.100.10:0", "error" },
		{ "198.51.100.10:80-0", "error" },
		{ "198.51.100.10:80-65536", "error" },
		{ "198.51.100.10:-80", "error" },
		{ "198.51.100.10:80-", "error" },
		{ "198.51.100.10:123456789", "error" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prefix addr;
		uint16_t port = 1, last = 1;
		const char *why = NULL;
		char name[80], got[96], a[64];
		int r = parse_addr_port(cases[i].in, &addr, &port, &last, &why);

		if (r < 0) {
			snprintf(got, sizeof(got), "error");
		} else {
			policy_prefix_format(&addr, a, sizeof(a));
			snprintf(got, sizeof(got), "%s %u-%u", a, port, last);
		}
		snprintf(name, sizeof(name), "target %s", cases[i].in);
		check_begin(name);
		CHECK_EQ_STR(got, cases[i].want);
		CHECK(r == 0 || why);
		check_end();
	}
}

/* Ranges as the fewest prefixes, checked against the known splits and, on
 * random ranges, against the definition: the prefixes are aligned, in
 * order, adjacent, and cover exactly first..last. */
static void test_ranges(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "192.0.2.10-192.0.2.20", "192.0.2.10/31 192.0.2.12/30 192.0.2.16/30 192.0.2.20" },
		{ "192.0.2.0-192.0.2.255", "192.0.2.0/24" },
		{ "192.0.2.7-192.0.2.7", "192.0.2.7" },
		{ "0.0.0.0-255.255.255.255", "0.0.0.0/0" },
		{ "0.0.0.1-255.255.255.255", NULL }, /* 32 prefixes: counted below */
		{ "2001:db8::1-2001:db8::ff", "2001:db8::1 2001:db8::2/127 2001:db8::4/126 2001:db8::8/125 "
					      "2001:db8::10/124 2001:db8::20/123 2001:db8::40/122 2001:db8::80/121" },
		{ "::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::/0" },
		{ "198.51.100.255-198.51.101.0", "198.51.100.255 198.51.101.0" },
	};
	struct prefix first, last, v[256];
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[96], got[1024] = "";
		size_t n, used = 0;

		snprintf(name, sizeof(name), "range %s", cases[i].in);
		check_begin(name);
		CHECK_EQ_INT(parse_addr_range(cases[i].in, &first, &last, &why), 0);
		n = parse_range_split(&first, &last, v, 256);
		for (size_t j = 0; j < n && used < sizeof(got) - 64; j++) {
			used += (size_t)(j ? snprintf(got + used, sizeof(got) - used, " ") : 0);
			policy_prefix_format(&v[j], got + used, sizeof(got) - used);
			used = strlen(got);
		}
		if (cases[i].want)
			CHECK_EQ_STR(got, cases[i].want);
		else
			CHECK_EQ_INT(n, 32);
		check_end();
	}

	check_begin("range split covers exactly (random IPv6 ranges)");
	srand(7);
	for (int t = 0; t < 2000; t++) {
		unsigned __int128 lo = 0, hi = 0, next;
		size_t n;

		memset(&first, 0, sizeof(first));
		first.family = POLICY_FAM_IPV6;
		first.plen = 128;
		last = first;
		for (int b = 0; b < 16; b++) {
			/* shared high bytes so that the ranges are of every size */
			first.addr[b] = last.addr[b] = (uint8_t)(b < t % 16 ? 0x20 + b : rand());
		}
		if (memcmp(first.addr, last.addr, 16) > 0) {
			struct prefix tmp = first;

			first = last;
			last = tmp;
		}
		for (int b = 0; b < 16; b++) {
			lo = lo << 8 | first.addr[b];
			hi = hi << 8 | last.addr[b];
		}
		n = parse_range_split(&first, &last, v, 256);
		next = lo;
		for (size_t j = 0; j < n; j++) {
			unsigned __int128 a = 0, size;

			for (int b = 0; b < 16; b++)
				a = a << 8 | v[j].addr[b];
			size = v[j].plen ? (unsigned __int128)1 << (128 - v[j].plen) : 0;
			CHECK(a == next);
			CHECK(!size || (a & (size - 1)) == 0);
			next = a + size;
		}
		CHECK(n >= 1 && n <= 254);
		CHECK(next == hi + 1);
		if (check_case_failed)
			break;
	}
	check_end();
}

/* The country codes a set takes are exactly ISO 3166-1 alpha-2 as tzdata
 * lists it (iso3166.tab, on every Debian system), with XK and ZZ: the
 * table in policy/syntax/countries.c, checked against another's. */
static void test_countries(void)
{
	char known[26][26] = { 0 }, line[256];
	FILE *f = fopen("/usr/share/zoneinfo/iso3166.tab", "r");
	unsigned n = 0;

	check_begin("countries-iso3166");
	if (!f) {
		check_fail_at(__FILE__, __LINE__, "cannot read /usr/share/zoneinfo/iso3166.tab (tzdata)");
		check_end();
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (line[0] >= 'A' && line[0] <= 'Z' && line[1] >= 'A' && line[1] <= 'Z' && line[2] == '\t') {
			known[line[0] - 'A'][line[1] - 'A'] = 1;
			n++;
		}
	fclose(f);
	CHECK(n >= 249);
	known['X' - 'A']['K' - 'A'] = known['Z' - 'A']['Z' - 'A'] = 1;
	for (int a = 0; a < 26; a++)
		for (int b = 0; b < 26; b++) {
			char cc[3] = { (char)('A' + a), (char)('A' + b), 0 };

			if (policy_country_known(cc) != known[a][b])
				check_fail_at(__FILE__, __LINE__, "%s: %s by nfbox, %s by tzdata", cc,
					      policy_country_known(cc) ? "known" : "unknown",
					      known[a][b] ? "known" : "unknown");
		}
	check_end();
}

int main(void)
{
	test_countries();
	test_ranges();
	test_ports();
	test_targets();
	test_sizes();
	test_rates();
	test_durations_ms();
	CHECK_EXIT();
}
