/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Country sets' reader (appliance/feeds/mmdb.c) on databases written by
 * tests/lib/mmdbwrite.py (no MMDB ships in Debian): an IPv6 tree with IPv4
 * under ::/96 and its aliases (each IPv4 network found once, not three
 * times), an IPv4 tree, registered_country when country is missing,
 * several countries, none; a file that is not a database and one cut
 * short are refused with a reason.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feeds/mmdb.h"
#include "tests/lib/check.h"

static char dir[] = "/tmp/nfbox-mmdb.XXXXXX";

/* Write DB with the writer; 0 on success. */
static int write_db(const char *name, const char *args)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 tests/lib/mmdbwrite.py %s/%s %s", dir, name, args);
	return system(cmd);
}

/* The prefixes of cc as "a/n" strings joined by spaces, sorted as read. */
static char *prefixes(const char *name, const char *ccs, char *why, size_t wlen)
{
	char path[256], cc[8][3];
	uint32_t ncc = 0, n;
	struct prefix *v;
	static char out[4096];
	size_t len = 0;

	for (const char *p = ccs; *p && ncc < 8; p += p[2] ? 3 : 2) {
		memcpy(cc[ncc], p, 2);
		cc[ncc++][2] = '\0';
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (mmdb_country_prefixes(path, (const char (*)[3])cc, ncc, &v, &n, why, wlen) < 0)
		return NULL;
	out[0] = '\0';
	for (uint32_t i = 0; i < n; i++) {
		char a[64];

		inet_ntop(v[i].family == POLICY_FAM_IPV4 ? AF_INET : AF_INET6, v[i].addr, a, sizeof(a));
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s/%u", i ? " " : "", a, v[i].plen);
	}
	free(v);
	return out;
}

static void test_v6_tree(void)
{
	char why[256];
	const char *got;

	check_begin("mmdb-v6-tree-ipv4-once");
	CHECK(write_db("a.mmdb", "198.51.100.0/26=DE 198.51.100.64/26=FR 2001:db8:1::/48=DE 203.0.113.0/24=US "
				 "2001:db8:2::/48=FR") == 0);
	got = prefixes("a.mmdb", "DE", why, sizeof(why));
	CHECK(got && !strcmp(got, "198.51.100.0/26 2001:db8:1::/48"));
	if (got && strcmp(got, "198.51.100.0/26 2001:db8:1::/48"))
		check_fail_at(__FILE__, __LINE__, "DE: %s", got);
	got = prefixes("a.mmdb", "FR,US", why, sizeof(why));
	CHECK(got && !strcmp(got, "198.51.100.64/26 203.0.113.0/24 2001:db8:2::/48"));
	got = prefixes("a.mmdb", "JP", why, sizeof(why));
	CHECK(got && !strcmp(got, ""));
	check_end();
}

static void test_v4_tree_registered(void)
{
	char why[256];
	const char *got;

	check_begin("mmdb-v4-tree-and-registered-country");
	CHECK(write_db("b.mmdb", "--v4 192.0.2.0/24=DE 198.51.100.128/25=IT --registered 203.0.113.0/25=DE") == 0);
	got = prefixes("b.mmdb", "DE", why, sizeof(why));
	CHECK(got && !strcmp(got, "192.0.2.0/24 203.0.113.0/25"));
	if (got && strcmp(got, "192.0.2.0/24 203.0.113.0/25"))
		check_fail_at(__FILE__, __LINE__, "DE: %s", got);
	check_end();
}

/* The whole of IPv4 as one record (0.0.0.0/0 in an IPv6 tree: the
 * differential test's generator makes it): the aliases point at that
 * record, and IPv4 is read once. */
static void test_whole_ipv4(void)
{
	char why[256];
	const char *got;

	check_begin("mmdb-whole-ipv4-one-record");
	CHECK(write_db("w.mmdb", "0.0.0.0/0=XA 2001:db8:ffff::/48=XB") == 0);
	got = prefixes("w.mmdb", "XA", why, sizeof(why));
	CHECK(got && !strcmp(got, "0.0.0.0/0"));
	if (got && strcmp(got, "0.0.0.0/0"))
		check_fail_at(__FILE__, __LINE__, "XA: %s", got);
	got = prefixes("w.mmdb", "XB", why, sizeof(why));
	CHECK(got && !strcmp(got, "2001:db8:ffff::/48"));
	check_end();
}

static void test_refuses(void)
{
	char why[256], path[256];
	FILE *f;

	check_begin("mmdb-refuses-what-is-not-a-database");
	snprintf(path, sizeof(path), "%s/bad.mmdb", dir);
	if ((f = fopen(path, "w"))) {
		fputs("this is not a database\n", f);
		fclose(f);
	}
	CHECK(!prefixes("bad.mmdb", "DE", why, sizeof(why)) && strstr(why, "bad.mmdb"));
	CHECK(!prefixes("missing.mmdb", "DE", why, sizeof(why)) && strstr(why, "No such file"));
	/* cut short: the tree is there, the metadata is not */
	CHECK(write_db("c.mmdb", "192.0.2.0/24=DE") == 0);
	snprintf(path, sizeof(path), "%s/c.mmdb", dir);
	CHECK(truncate(path, 40) == 0);
	CHECK(!prefixes("c.mmdb", "DE", why, sizeof(why)));
	check_end();
}

int main(void)
{
	char cmd[64];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_v6_tree();
	test_v4_tree_registered();
	test_whole_ipv4();
	test_refuses();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	CHECK_EXIT();
}
