/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pair's pieces outside a network (appliance/ha/): the configurations
 * written from ha: sections (and keepalived's own check of them, keepalived
 * -t, on every one), keepalived's notices and conntrackd's statistics as
 * the daemon reads them, and the child processes it runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ha/config.h"
#include "ha/parse.h"
#include "system/proc.h"
#include "tests/lib/check.h"

static const char *const base = "version: 1\n"
				"interfaces: { lan: [lan0], wan: [wan0] }\n"
				"hooks: { forward: { default: drop } }\n"
				"rules:\n  - { name: out, in: lan, out: wan, action: accept }\n";

static struct policy *load(const char *ha, struct diags *d)
{
	char text[2048];
	struct policy *p = NULL;

	snprintf(text, sizeof(text), "%s%s", base, ha);
	diags_init(d);
	if (policy_load_buffer("ha.yaml", text, strlen(text), d, &p) < 0) {
		diags_print(d, stderr, false);
		return NULL;
	}
	return p;
}

static bool has(const char *text, const char *needle)
{
	if (text && strstr(text, needle))
		return true;
	check_fail_at(__FILE__, __LINE__, "'%s' not in:\n%s", needle, text ? text : "(null)");
	return false;
}

/* keepalived's own check of a configuration, when it is installed. */
static void keepalived_accepts(const char *conf)
{
	char path[] = "/tmp/nfbox-ha-test.XXXXXX", prog[PATH_MAX], out[2048];
	char *argv[] = { prog, "-t", "-f", path, NULL };
	int fd, r;

	if (proc_find("keepalived", prog, sizeof(prog)) < 0 && access(strcpy(prog, "/usr/sbin/keepalived"), X_OK) < 0) {
		check_fail_at(__FILE__, __LINE__,
			      "keepalived is not installed (packaging/install-deps.sh installs it)");
		return;
	}
	if ((fd = mkstemp(path)) < 0 || write(fd, conf, strlen(conf)) != (ssize_t)strlen(conf)) {
		check_fail_at(__FILE__, __LINE__, "cannot write %s", path);
		return;
	}
	close(fd);
	r = proc_run(argv, 10000, out, sizeof(out));
	if (r != 0)
		check_fail_at(__FILE__, __LINE__, "keepalived -t: %d: %s\n%s", r, out, conf);
	unlink(path);
}

static void test_pair_config(void)
{
	struct ha_paths paths;
	struct diags d;
	struct policy *p;
	char *k, *c;

	check_begin("ha-config-pair");
	p = load("ha:\n  priority: 150\n  preempt-delay: 7\n  advert: 150ms\n"
		 "  sync: { interface: sync0, peer: 203.0.113.2 }\n"
		 "  virtual:\n"
		 "    - { interface: lan0, address: 192.0.2.1/24, id: 51 }\n"
		 "    - { interface: lan0, address: \"2001:db8:1::1/64\", id: 51 }\n"
		 "    - { interface: wan, address: 198.51.100.1/24, id: 52 }\n",
		 &d);
	CHECK(p != NULL);
	if (!p) {
		diags_free(&d);
		check_end();
		return;
	}
	CHECK(ha_paths_init(&paths, "/run/nfbox/nfbox-fw1.ha") == 0);
	CHECK_EQ_STR(paths.fifo, "/run/nfbox/nfbox-fw1.ha/keepalived.fifo");
	k = ha_keepalived_conf(&p->ha, &paths, "/etc/nfbox/policy.yaml");
	CHECK(has(k, "notify_fifo /run/nfbox/nfbox-fw1.ha/keepalived.fifo\n"));
	CHECK(has(k, "vrrp_sync_group nfbox {\n\tgroup {\n\t\tlan0_51\n\t\tlan0_51_v6\n\t\twan0_52\n\t}\n}"));
	CHECK(has(
		k,
		"vrrp_instance wan0_52 {\n\tstate BACKUP\n\tinterface wan0\n\tvirtual_router_id 52\n\tpriority 150\n"));
	CHECK(has(k, "\tpreempt_delay 7\n"));
	CHECK(has(k, "\tvrrp_version 3\n"));
	CHECK(has(k, "\tadvert_int 0.15\n"));
	CHECK(has(k, "\t\t192.0.2.1/24 dev lan0\n"));
	CHECK(has(k, "\t\t2001:db8:1::1/64 dev lan0\n"));
	CHECK(has(k, "from the ha: section of /etc/nfbox/policy.yaml"));
	if (k)
		keepalived_accepts(k);
	c = ha_conntrackd_conf(&p->ha,
			       &(struct prefix){ .family = POLICY_FAM_IPV4, .plen = 32, .addr = { 203, 0, 113, 1 } },
			       &p->ha.sync_peers[0], &paths, "/etc/nfbox/policy.yaml");
	CHECK(has(c, "Mode FTFW {"));
	CHECK(has(c, "\t\tIPv4_address 203.0.113.1\n\t\tIPv4_Destination_Address 203.0.113.2\n\t\tPort "
		     "3780\n\t\tInterface sync0\n"));
	CHECK(has(c, "LockFile /run/nfbox/nfbox-fw1.ha/conntrackd.lock\n"));
	CHECK(has(c, "Path /run/nfbox/nfbox-fw1.ha/conntrackd.ctl\n"));
	free(k);
	free(c);
	policy_free(p);
	diags_free(&d);
	check_end();
}

static void test_single_v6(void)
{
	struct ha_paths paths;
	struct diags d;
	struct policy *p;
	char *k, *c;

	check_begin("ha-config-one-address-ipv6-sync");
	p = load("ha:\n  priority: 1\n"
		 "  sync: { interface: sync0, peer: \"2001:db8:ff::2\", address: \"2001:db8:ff::1\" }\n"
		 "  virtual: [{ interface: wan0, address: \"2001:db8:2::1/64\", id: 255 }]\n",
		 &d);
	CHECK(p != NULL);
	if (p) {
		CHECK(ha_paths_init(&paths, "/tmp/x.ha") == 0);
		k = ha_keepalived_conf(&p->ha, &paths, "p.yaml");
		CHECK(k && !strstr(k, "vrrp_sync_group")); /* one instance: no group */
		CHECK(has(k, "virtual_router_id 255\n\tpriority 1\n\tadvert_int 1\n\tpreempt_delay 5\n"));
		if (k)
			keepalived_accepts(k);
		c = ha_conntrackd_conf(&p->ha, &p->ha.sync_addr, &p->ha.sync_peers[0], &paths, "p.yaml");
		CHECK(has(c, "IPv6_address 2001:db8:ff::1\n\t\tIPv6_Destination_Address 2001:db8:ff::2\n"));
		free(k);
		free(c);
		/* No input or output hook: ha: adds no rule. */
		CHECK(p->nrules == 1);
		policy_free(p);
	}
	diags_free(&d);
	check_end();
}

/* The last diagnostic of loading a pair with advert: ADVERT (and
 * preempt-delay: DELAY), "" if none; whether it loaded. */
static bool advert_load(const char *advert, unsigned delay, char *msg, size_t len, uint32_t *ms)
{
	char text[2048];
	struct policy *p = NULL;
	struct diags d;
	bool ok;

	snprintf(text, sizeof(text),
		 "%sha:\n  priority: 100\n  advert: %s\n  preempt-delay: %u\n"
		 "  sync: { interface: sync0, peer: 203.0.113.2 }\n"
		 "  virtual: [{ interface: lan0, address: 192.0.2.1/24, id: 51 }]\n",
		 base, advert, delay);
	diags_init(&d);
	ok = policy_load_buffer("ha.yaml", text, strlen(text), &d, &p) == 0;
	snprintf(msg, len, "%s", d.warnings || d.errors ? diags_last(&d, "") : "");
	if (p)
		*ms = p->ha.advert_ms;
	policy_free(p);
	diags_free(&d);
	return ok;
}

static void test_advert(void)
{
	static const struct {
		const char *advert;
		unsigned delay;
		uint32_t ms;	  /* 0: refused */
		const char *diag; /* in the last diagnostic ("": none) */
	} cases[] = {
		{ "1s", 1, 1000, "" },
		{ "100ms", 1, 100, "" },
		{ "150ms", 0, 150, "a node that returns takes over about 541ms after it starts" },
		{ "1s", 0, 1000, "" },
		{ "40950ms", 5, 40950, "" },
		{ "90ms", 1, 0, "below the floor of 100ms" },
		{ "105ms", 1, 0, "centiseconds: use 100ms or 110ms" },
		{ "41s", 1, 0, "out of range" },
		{ "100", 1, 0, "a number alone counts seconds" },
		{ "fast", 1, 0, "a number with ms, s, m, h or d" },
	};
	char name[64], msg[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t ms = 0;
		bool ok;

		snprintf(name, sizeof(name), "ha-advert %s, preempt-delay %u", cases[i].advert, cases[i].delay);
		check_begin(name);
		ok = advert_load(cases[i].advert, cases[i].delay, msg, sizeof(msg), &ms);
		CHECK(ok == (cases[i].ms != 0));
		if (ok)
			CHECK_EQ_INT(ms, cases[i].ms);
		if (*cases[i].diag)
			CHECK(has(msg, cases[i].diag));
		else
			CHECK_EQ_STR(msg, "");
		check_end();
	}
}

static void test_notices(void)
{
	struct ha_notice n;

	check_begin("ha-notices");
	CHECK(ha_parse_notice("INSTANCE \"lan0_51\" MASTER 150", &n) == 0 && !n.group && !strcmp(n.name, "lan0_51") &&
	      n.state == HA_ROLE_MASTER);
	CHECK(ha_parse_notice("GROUP \"nfbox\" BACKUP", &n) == 0 && n.group && !strcmp(n.name, "nfbox") &&
	      n.state == HA_ROLE_BACKUP);
	CHECK(ha_parse_notice("INSTANCE \"x\" FAULT 0", &n) == 0 && n.state == HA_ROLE_FAULT);
	CHECK(ha_parse_notice("INSTANCE \"x\" STOP 150", &n) == 0 && n.state == HA_ROLE_STOPPED);
	CHECK(ha_parse_notice("INSTANCE \"x\" MASTERFUL 150", &n) < 0);
	CHECK(ha_parse_notice("INSTANCE \"x MASTER 150", &n) < 0);
	CHECK(ha_parse_notice("VS \"x\" UP", &n) < 0);
	CHECK(ha_parse_notice("", &n) < 0);
	CHECK_EQ_STR(ha_role_name(HA_ROLE_MASTER), "master");
	check_end();
}

static void test_stats(void)
{
	static const char sample[] =
		"cache internal:\n"
		"current active connections:\t           3\n"
		"connections created:\t\t           9\tfailed:\t           0\n"
		"\ncache external:\n"
		"current active connections:\t          12\n"
		"connections created:\t\t          40\tfailed:\t           0\n"
		"\ntraffic processed:\n                   0 Bytes                         0 Pckts\n"
		"\nUDP traffic (active device=sync0):\n"
		"                1616 Bytes sent                  1808 Bytes recv\n"
		"                  41 Pckts sent                    44 Pckts recv\n"
		"                   2 Error send                     1 Error recv\n"
		"\nmessage tracking:\n"
		"                   5 Malformed msgs                    7 Lost msgs\n";
	struct ha_sync_stats s;

	check_begin("ha-conntrackd-stats");
	CHECK(ha_parse_stats(sample, &s) == 0);
	CHECK(s.internal == 3 && s.external == 12);
	CHECK(s.bytes_sent == 1616 && s.bytes_recv == 1808 && s.msgs_sent == 41 && s.msgs_recv == 44);
	CHECK(s.send_errors == 2 && s.recv_errors == 1 && s.malformed == 5 && s.lost == 7);
	CHECK(ha_parse_stats("connect: No such file or directory\n", &s) == -EINVAL);
	check_end();
}

static void test_proc(void)
{
	char sh[PATH_MAX], out[64];
	char *argv[] = { sh, "-c", "echo one; echo two >&2; exit 3", NULL };
	char *slow[] = { sh, "-c", "sleep 5", NULL };

	check_begin("ha-child-processes");
	CHECK(proc_find("sh", sh, sizeof(sh)) == 0);
	CHECK(proc_find("nfbox-no-such-program", out, sizeof(out)) == -ENOENT);
	CHECK(proc_run(argv, 5000, out, sizeof(out)) == 3 << 8);
	CHECK_EQ_STR(out, "one\ntwo");
	CHECK(proc_run(slow, 100, out, sizeof(out)) == -ETIMEDOUT);
	{
		/* Lines are whole however the reads fall; one longer than the
		 * buffer (4096) comes in pieces of its size. */
		char *lines[] = { sh, "-c", "printf '%04000d\\n%0300d\\ntail\\n%05000d\\nend' 0 0 0", NULL };
		char *big = malloc(16384), *l, *save = NULL;
		size_t want[] = { 4000, 300, 4, 4096, 904, 3 }, i = 0;

		CHECK(big && proc_run(lines, 5000, big, 16384) == 0);
		for (l = big ? strtok_r(big, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save), i++)
			CHECK(i < 6 && strlen(l) == want[i]);
		CHECK(i == 6);
		free(big);
	}
	{
		char buf[64];

		proc_status_text(9, buf, sizeof(buf));
		CHECK(!strncmp(buf, "killed by signal 9", 18));
		proc_status_text(1 << 8, buf, sizeof(buf));
		CHECK_EQ_STR(buf, "exit status 1");
	}
	check_end();
}

int main(void)
{
	test_pair_config();
	test_single_v6();
	test_advert();
	test_notices();
	test_stats();
	test_proc();
	CHECK_EXIT();
}
