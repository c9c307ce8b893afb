/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fleet's pieces that need no etcd (appliance/fleet/): a revision's
 * bundle from a policy and back, byte for byte (NUL and bytes that are not
 * UTF-8 included); a bundle from etcd that would write outside its folder
 * (absolute names, "..", empty parts), is not base64 or not nfbox's is
 * refused; base64 and a prefix's range end as etcd wants them; the fleet
 * file's mistakes at file:line:col, a password file others may read; the
 * node's mirror of the shared entries against a plain list, through puts,
 * replacements and deletes in a random order.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fleet/bundle.h"
#include "fleet/conf.h"
#include "fleet/etcd.h"
#include "fleet/mirror.h"
#include "tests/lib/check.h"

static char dir[] = "/tmp/nfbox-fleet-unit.XXXXXX";

static void write_file(const char *name, const char *text, size_t len, mode_t mode)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		perror(path);
	if (fd >= 0) {
		fchmod(fd, mode);
		close(fd);
	}
}

static void test_base64_and_range(void)
{
	static const char bytes[] = { 'a', 0, (char)0xff, (char)0x80, 'z' };

	check_begin("fleet-base64-round-trip-and-range-end");
	for (size_t n = 0; n <= sizeof(bytes); n++) {
		char *e = etcd_b64_encode(bytes, n), *d = NULL;
		size_t len = 99;

		CHECK(e && (d = etcd_b64_decode(e, &len)) && len == n && !memcmp(d, bytes, n));
		free(e);
		free(d);
	}
	size_t len;
	CHECK(!etcd_b64_decode("abc", &len)); /* not a multiple of 4 */
	char end[64];

	etcd_prefix_end("/nfbox/g/", end, sizeof(end));
	CHECK(!strcmp(end, "/nfbox/g0"));
	check_end();
}

struct got {
	int n;
	char last[32];
	bool in_order;
};

static int got_one(void *arg, struct json_t *o)
{
	struct got *g = arg;
	char want[32];
	const char *id = json_string_value(json_object_get(o, "id"));

	snprintf(want, sizeof(want), "a%d", g->n);
	g->in_order &= id && !strcmp(id, want);
	snprintf(g->last, sizeof(g->last), "%s", id ? id : "?");
	g->n++;
	return 0;
}

/* The watch's stream in pieces as the network gives them: every object
 * given once, whole, in order; two in one piece; one ended only by its
 * newline's piece; and a big answer (as etcd's for a transaction of 128
 * entries) in 512-byte pieces parsed a few times, not once a piece (a node
 * took 20 us of CPU for each shared entry so). */
static void test_stream(void)
{
	struct etcd_stream s = { 0 };
	struct got g = { .in_order = true };
	char *big, *pair;
	size_t n = 0, cap = 80000;
	int objects = 0;

	check_begin("fleet-watch-stream-parsed-once");
	big = malloc(cap);
	for (int i = 0; i < 128; i++)
		n += (size_t)snprintf(big + n, cap - n, "%s{\"x\":\"%0400d\"}", i ? "," : "{\"id\":\"a0\",\"events\":[",
				      i);
	n += (size_t)snprintf(big + n, cap - n, "]}\n");
	for (size_t off = 0; off < n; off += 512)
		CHECK(etcd_stream_feed(&s, big + off, n - off < 512 ? n - off : 512, got_one, &g) == 0);
	objects++;
	CHECK(g.n == 1);
	CHECK(s.parses <= 12);
	if (s.parses > 12)
		fprintf(stderr, "  %lu parses of one answer in %zu pieces\n", s.parses, (n + 511) / 512);
	pair = strdup("{\"id\":\"a1\"}\n{\"id\":\"a2\"}\n{\"id\":\"a");
	CHECK(etcd_stream_feed(&s, pair, strlen(pair), got_one, &g) == 0 && g.n == 3);
	CHECK(etcd_stream_feed(&s, "3\"}", 3, got_one, &g) == 0);
	CHECK(etcd_stream_feed(&s, "\n", 1, got_one, &g) == 0 && g.n == 4);
	objects += 3;
	CHECK(g.n == objects && g.in_order && !strcmp(g.last, "a3"));
	CHECK(s.used == 0 && s.n == 0); /* nothing left over */
	etcd_stream_free(&s);
	free(pair);
	free(big);
	check_end();
}

static void test_bundle_round_trip(void)
{
	static const char set_text[] = "192.0.2.0/24\n# \xff\x80 not UTF-8\n";
	struct fleet_bundle b = { 0 }, back = { 0 };
	struct policy *p = NULL;
	char path[512], why[128], out[512];
	struct diags d;
	size_t len = 0;
	char *text;

	check_begin("fleet-bundle-from-policy-and-back");
	mkdir(strcat(strcpy(path, dir), "/sets"), 0700);
	write_file("sets/x.txt", set_text, sizeof(set_text) - 1, 0644);
	write_file("policy.yaml",
		   "version: 1\nsets:\n  x: { file: sets/x.txt }\nhooks:\n  input: { default: accept }\nrules:\n"
		   "  - { name: r, hook: input, from: x, action: drop }\n",
		   strlen("version: 1\nsets:\n  x: { file: sets/x.txt }\nhooks:\n  input: { default: accept }\nrules:\n"
			  "  - { name: r, hook: input, from: x, action: drop }\n"),
		   0644);
	snprintf(path, sizeof(path), "%s/policy.yaml", dir);
	diags_init(&d);
	CHECK(policy_load(path, &d, &p) == 0);
	CHECK(p && fleet_bundle_from_policy(p, path, &b, &d) == 0);
	CHECK(b.n == 2 && !strcmp(b.files[0].name, "policy.yaml") && !strcmp(b.files[1].name, "sets/x.txt"));
	CHECK(strlen(b.fingerprint) == 64);
	text = fleet_bundle_encode(&b, &len);
	CHECK(text && fleet_bundle_decode(text, len, &back, why, sizeof(why)) == 0);
	CHECK(back.n == 2 && back.files[1].len == sizeof(set_text) - 1 &&
	      !memcmp(back.files[1].data, set_text, sizeof(set_text) - 1));
	CHECK(!strcmp(back.fingerprint, b.fingerprint));
	/* written elsewhere, read back: the same fingerprint (names relative) */
	snprintf(path, sizeof(path), "%s/node/r7", dir);
	mkdir(strcat(strcpy(out, dir), "/node"), 0700);
	CHECK(fleet_bundle_write(&back, path, out, sizeof(out)) == 0);
	struct policy *q = NULL;
	struct fleet_bundle again = { 0 };

	CHECK(policy_load(out, &d, &q) == 0 && fleet_bundle_from_policy(q, out, &again, &d) == 0);
	CHECK(!strcmp(again.fingerprint, b.fingerprint));
	policy_free(q);
	fleet_bundle_free(&again);
	free(text);
	fleet_bundle_free(&b);
	fleet_bundle_free(&back);
	policy_free(p);
	diags_free(&d);
	check_end();
}

/* A bundle whose one file is named name: refused (why says so) or not. */
static int decode_named(const char *name, char *why, size_t wlen)
{
	struct fleet_bundle b = { 0 };
	char text[512];
	int r;

	snprintf(text, sizeof(text),
		 "{\"format\":1,\"fingerprint\":\"%064d\",\"by\":\"x\",\"at\":0,\"files\":[{\"name\":\"%s\","
		 "\"data\":\"dmVyc2lvbjogMQo=\"}],\"canaries\":[]}",
		 0, name);
	r = fleet_bundle_decode(text, strlen(text), &b, why, wlen);
	fleet_bundle_free(&b);
	return r;
}

static void test_bundle_hostile(void)
{
	struct fleet_bundle b = { 0 };
	char why[128];

	check_begin("fleet-bundle-refuses-what-leaves-its-folder");
	CHECK(decode_named("policy.yaml", why, sizeof(why)) == 0);
	CHECK(decode_named("sets/a.txt", why, sizeof(why)) == 0);
	CHECK(decode_named("/etc/passwd", why, sizeof(why)) == -EINVAL && strstr(why, "outside"));
	CHECK(decode_named("../x", why, sizeof(why)) == -EINVAL);
	CHECK(decode_named("sets/../../x", why, sizeof(why)) == -EINVAL);
	CHECK(decode_named("sets//x", why, sizeof(why)) == -EINVAL);
	CHECK(decode_named("./x", why, sizeof(why)) == -EINVAL);
	CHECK(fleet_bundle_decode("{\"format\":2}", 12, &b, why, sizeof(why)) == -EINVAL && strstr(why, "format"));
	CHECK(fleet_bundle_decode("not json", 8, &b, why, sizeof(why)) == -EINVAL);
	const char *no64 = "{\"format\":1,\"fingerprint\":\"00000000000000000000000000000000000000000000000000000000"
			   "00000000\",\"files\":[{\"name\":\"p\",\"data\":\"!!!\"}]}";

	CHECK(fleet_bundle_decode(no64, strlen(no64), &b, why, sizeof(why)) == -EINVAL && strstr(why, "base64"));
	check_end();
}

/* The fleet file's diagnostics as text ("" none). */
static char *conf_errors(const char *name, const char *text)
{
	struct fleet_conf c = { 0 };
	struct diags d;
	char path[512];
	char *out;

	write_file(name, text, strlen(text), 0600);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	diags_init(&d);
	if (fleet_conf_load(path, false, &d, &c) == 0)
		fleet_conf_free(&c);
	out = diags_to_text(&d);
	diags_free(&d);
	return out;
}

static void test_conf(void)
{
	char *t;

	check_begin("fleet-file-mistakes-at-their-place");
	write_file("pw", "secret\n", 7, 0600);
	write_file("pw-open", "secret\n", 7, 0644);
	write_file("c.pem", "x", 1, 0600);
	t = conf_errors("ok.yaml", "etcd:\n  endpoints: [https://192.0.2.1:2379]\n  cert: c.pem\n  key: c.pem\n"
				   "  ca: c.pem\n  password-file: pw\nnode: n1\ngroup: g\n");
	CHECK(t && !strcmp(t, ""));
	free(t);
	t = conf_errors("http.yaml", "etcd:\n  endpoints: [http://192.0.2.1:2379]\n  cert: c.pem\n  key: c.pem\n"
				     "  ca: c.pem\n  password-file: pw\nnode: n1\n");
	CHECK(t && strstr(t, "http.yaml:2:15:") && strstr(t, "https://"));
	free(t);
	t = conf_errors("name.yaml", "etcd:\n  endpoints: [https://192.0.2.1:2379]\n  cert: c.pem\n  key: c.pem\n"
				     "  ca: c.pem\n  password-file: pw\nnode: ../n1\n");
	CHECK(t && strstr(t, "name.yaml:7:7:") && strstr(t, "node '../n1'"));
	free(t);
	t = conf_errors("open.yaml", "etcd:\n  endpoints: [https://192.0.2.1:2379]\n  cert: c.pem\n  key: c.pem\n"
				     "  ca: c.pem\n  password-file: pw-open\nnode: n1\n");
	CHECK(t && strstr(t, "open.yaml:6:18:") && strstr(t, "may be read by others") && strstr(t, "chmod 600"));
	free(t);
	t = conf_errors("typo.yaml", "etcd:\n  endpoint: [https://192.0.2.1:2379]\n  cert: missing.pem\nnodes: n1\n");
	CHECK(t && strstr(t, "typo.yaml:2:3: error: unknown key 'endpoint'") && strstr(t, "missing.pem") &&
	      strstr(t, "typo.yaml:4:1: error: unknown key 'nodes'"));
	free(t);
	check_end();
}

/* share-window: the default, 0, a time; out of range or not a time at
 * its place. */
static void test_window(void)
{
	static const char head[] = "etcd:\n  endpoints: [https://192.0.2.1:2379]\n  cert: c.pem\n  key: c.pem\n"
				   "  ca: c.pem\n  password-file: pw\nnode: n1\n";
	static const struct {
		const char *line;
		long ms; /* -1: refused */
	} cases[] = { { "", FLEET_SHARE_WINDOW_MS },  { "share-window: 0\n", 0 },    { "share-window: 2s\n", 2000 },
		      { "share-window: 50ms\n", 50 }, { "share-window: 10s\n", -1 }, { "share-window: fast\n", -1 },
		      { "share-window: -1\n", -1 } };
	char text[512], path[512];

	check_begin("fleet-file-share-window");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fleet_conf c = { 0 };
		struct diags d;
		int r;

		snprintf(text, sizeof(text), "%s%s", head, cases[i].line);
		write_file("w.yaml", text, strlen(text), 0600);
		snprintf(path, sizeof(path), "%s/w.yaml", dir);
		diags_init(&d);
		r = fleet_conf_load(path, false, &d, &c);
		if (cases[i].ms < 0) {
			char *t = diags_to_text(&d);

			CHECK(r < 0 && t && strstr(t, "w.yaml:8:15: error: share-window") && strstr(t, "up to 5000ms"));
			free(t);
		} else {
			CHECK(r == 0 && c.share_window_ms == (uint32_t)cases[i].ms);
			if (r == 0)
				fleet_conf_free(&c);
		}
		diags_free(&d);
	}
	check_end();
}

static void entry_of(unsigned k, struct mirror_entry *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->set, sizeof(e->set), "%s", k % 3 ? "blocklist" : "other");
	e->pfx.family = k % 2 ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
	e->pfx.plen = k % 2 ? 128 : 32;
	e->pfx.addr[12] = (uint8_t)(k >> 8);
	e->pfx.addr[15] = (uint8_t)k;
}

static void test_mirror(void)
{
	enum {
		KEYS = 3000
	};
	static int64_t want[KEYS]; /* the expiry a key holds; -1: none */
	struct mirror m = { 0 };
	struct mirror_entry e;
	unsigned seed = 44, bad = 0, n = 0;

	check_begin("fleet-mirror-as-a-plain-list");
	memset(want, 0xff, sizeof(want));
	for (int step = 0; step < 60000; step++) {
		unsigned k = (unsigned)rand_r(&seed) % KEYS;

		entry_of(k, &e);
		if (rand_r(&seed) % 3) {
			e.expires = step;
			CHECK(mirror_put(&m, &e) == 0);
			want[k] = step;
		} else {
			mirror_del(&m, &e);
			want[k] = -1;
		}
		if (step == 30000) {
			mirror_clear(&m);
			memset(want, 0xff, sizeof(want));
		}
	}
	for (unsigned k = 0; k < KEYS; k++) {
		const struct mirror_entry *g;

		entry_of(k, &e);
		g = mirror_get(&m, &e);
		n += want[k] >= 0;
		bad += want[k] >= 0 ? !g || g->expires != want[k] : g != NULL;
	}
	if (bad)
		check_fail_at(__FILE__, __LINE__, "the mirror differs from the plain list at %u of %u keys", bad, KEYS);
	CHECK_EQ_INT(m.n, n);
	mirror_free(&m);
	check_end();
}

int main(void)
{
	char cmd[64];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_base64_and_range();
	test_stream();
	test_bundle_round_trip();
	test_bundle_hostile();
	test_conf();
	test_window();
	test_mirror();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	CHECK_EXIT();
}
