/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A fleet's pieces that need no etcd (appliance/fleet/): a revision's
 * bundle from a policy and back, byte for byte (NUL and bytes that are not
 * UTF-8 included); a bundle from etcd that would write outside its folder
 * (absolute names, "..", empty parts), is not base64 or not nfbox's is
 * refused; base64 and a prefix's range end as etcd wants them; the fleet
 * file's mistakes at file:line:col, a password file others may read; the
 * node's mirror of the shared entries against a plain model, through
 * records (keys of one entry and packs) written, rewritten and deleted in
 * a random order, and what it tells of each change; a pack's value from
 * entries and back, stripped, and one from a hostile node.
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
#include "fleet/pack.h"
#include "policy/syntax/parse.h"
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

/* ---- the mirror against a plain model ---- */

enum {
	PFXS = 240,
	RECS = 48,
	SETS = 2
};

static void pfx_of(unsigned k, struct prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = k % 2 ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
	p->plen = k % 2 ? 128 : 32;
	p->addr[12] = (uint8_t)(k >> 8);
	p->addr[15] = (uint8_t)k;
}

static const char *set_of(unsigned s)
{
	return s ? "other" : "blocklist";
}

/* what the model's records hold: expiry + 1 of each prefix (0: not held) */
static int64_t model[SETS][RECS][PFXS];
/* what the mirror told fn: expiry + 1 (0: gone) */
static int64_t told[SETS][PFXS];
static unsigned told_wrong;

static bool lasts_longer(int64_t a, int64_t b)
{
	return b && (!a || a > b);
}

/* the model's entry in force: expiry + 1, 0 when no record holds it */
static int64_t model_entry(unsigned s, unsigned k)
{
	int64_t best = 0;

	for (unsigned r = 0; r < RECS; r++)
		if (model[s][r][k] && (!best || lasts_longer(model[s][r][k] - 1, best - 1)))
			best = model[s][r][k];
	return best;
}

static void on_told(void *arg, const char *set, const struct prefix *pfx, bool present, int64_t expires, const char *by)
{
	unsigned s = !strcmp(set, "other"), k = (unsigned)pfx->addr[12] << 8 | pfx->addr[15];

	unsigned r = RECS;

	(void)arg;
	if (k >= PFXS || (present ? told[s][k] == expires + 1 : told[s][k] == 0))
		told_wrong++; /* told of a change that is none */
	else if (present && (sscanf(by, "fleet:r%u", &r) != 1 || r >= RECS || model[s][r][k] != expires + 1))
		told_wrong++; /* by a record that does not give it */
	else
		told[s][k] = present ? expires + 1 : 0;
}

static unsigned mirror_differs(const struct mirror *m, unsigned *n)
{
	unsigned bad = 0;

	*n = 0;
	for (unsigned s = 0; s < SETS; s++)
		for (unsigned k = 0; k < PFXS; k++) {
			struct prefix p;
			const struct mirror_entry *e;
			int64_t want = model_entry(s, k);

			pfx_of(k, &p);
			e = mirror_get(m, set_of(s), &p);
			*n += want != 0;
			bad += want ? !e || e->expires != want - 1 : e != NULL;
			bad += told[s][k] != want;
		}
	return bad;
}

static void test_mirror(void)
{
	static struct mirror_item items[PFXS];
	struct mirror m = { 0 };
	unsigned seed = 44, bad = 0, n = 0;
	char key[64], by[32];

	check_begin("fleet-mirror-as-a-plain-model");
	for (int step = 0; step < 12000; step++) {
		unsigned s = (unsigned)rand_r(&seed) % SETS, r = (unsigned)rand_r(&seed) % RECS, ni = 0;
		bool single = r < RECS / 4; /* a key of one entry: SET/PREFIX */

		if (rand_r(&seed) % 4) {
			unsigned want = single ? 1 : 1 + (unsigned)rand_r(&seed) % 40;

			for (unsigned i = 0; i < want; i++) {
				unsigned k = single ? r * 7 % PFXS : (unsigned)rand_r(&seed) % PFXS;

				pfx_of(k, &items[ni].pfx);
				/* few distinct expiries, 0 among them: ties and "never" */
				items[ni++].expires = (int64_t)(rand_r(&seed) % 5) * 1000;
			}
		}
		memset(model[s][r], 0, sizeof(model[s][r]));
		for (unsigned i = 0; i < ni; i++) { /* one named twice: the longer */
			unsigned k = (unsigned)items[i].pfx.addr[12] << 8 | items[i].pfx.addr[15];

			if (!model[s][r][k] || lasts_longer(items[i].expires, model[s][r][k] - 1))
				model[s][r][k] = items[i].expires + 1;
		}
		snprintf(key, sizeof(key), "%s/%s%u", set_of(s), single ? "" : "+n1.0.", r);
		snprintf(by, sizeof(by), "fleet:r%u", r);
		CHECK(mirror_record(&m, key, set_of(s), by, items, ni, on_told, NULL) == 0);
		if (step == 6000) {
			mirror_clear(&m);
			memset(model, 0, sizeof(model));
			memset(told, 0, sizeof(told));
		}
		if (step % 1000 == 999)
			bad += mirror_differs(&m, &n);
	}
	if (bad || told_wrong)
		check_fail_at(__FILE__, __LINE__,
			      "the mirror differs from the plain model %u times; %u changes told that were none", bad,
			      told_wrong);
	CHECK_EQ_INT(m.n, n);
	CHECK(m.n > PFXS / 2); /* the steps left many entries held */
	mirror_free(&m);
	check_end();

	/* a renewal in a later pack outlives the first; a shorter one does not */
	check_begin("fleet-mirror-outlives");
	{
		struct mirror mm = { 0 };
		struct mirror_item it = { .expires = 5000 };

		pfx_of(3, &it.pfx);
		CHECK(mirror_record(&mm, "blocklist/+a", "blocklist", "fleet:a", &it, 1, NULL, NULL) == 0);
		CHECK(mirror_outlives(&mm, "blocklist", &it.pfx, 4000));
		CHECK(!mirror_outlives(&mm, "blocklist", &it.pfx, 6000));
		CHECK(mirror_outlives(&mm, "blocklist", &it.pfx, 0) == false);
		it.expires = 0;
		CHECK(mirror_record(&mm, "blocklist/+b", "blocklist", "fleet:b", &it, 1, NULL, NULL) == 0);
		CHECK(mirror_outlives(&mm, "blocklist", &it.pfx, 9000));
		CHECK(!mirror_outlives(&mm, "other", &it.pfx, 9000));
		CHECK(mirror_get(&mm, "blocklist", &it.pfx) && mirror_get(&mm, "blocklist", &it.pfx)->expires == 0);
		CHECK(!strcmp(mm.recs[mirror_get(&mm, "blocklist", &it.pfx)->rec].by, "fleet:b"));
		CHECK(mirror_record(&mm, "blocklist/+b", "blocklist", "", NULL, 0, NULL, NULL) == 0);
		CHECK(mirror_get(&mm, "blocklist", &it.pfx)->expires == 5000);
		CHECK(mirror_rec_get(&mm, "blocklist/+b") == NULL && mirror_rec_get(&mm, "blocklist/+a") != NULL);
		mirror_free(&mm);
	}
	check_end();
}

/* ---- a shared set's records ---- */

static void test_pack(void)
{
	struct mirror_item in[3] = { { .expires = 1765000000123 }, { .expires = 0 }, { .expires = 7 } }, *out = NULL;
	char set[POLICY_MAX_NAME + 1], by[MIRROR_BY_MAX], *v, *w = NULL;
	const char *why;
	bool hb, changed;
	uint32_t n, bad;
	struct prefix del[2];

	check_begin("fleet-pack-round-trip");
	CHECK(parse_prefix("198.51.100.7", &in[0].pfx, &hb, &why) == 0);
	CHECK(parse_prefix("2001:db8::/48", &in[1].pfx, &hb, &why) == 0);
	CHECK(parse_prefix("203.0.113.0/24", &in[2].pfx, &hb, &why) == 0);
	v = pack_encode("n1", "fail2ban", in, 3);
	CHECK(v != NULL);
	CHECK(pack_decode("blocklist/+n1.0a0b0c0d.7", v, strlen(v), false, set, by, sizeof(by), &out, &n, &bad) == 0);
	CHECK(!strcmp(set, "blocklist") && !strcmp(by, "fleet:n1") && bad == 0);
	CHECK_EQ_INT(n, 3);
	for (uint32_t i = 0; i < 3 && n == 3; i++) {
		uint32_t k = 0;

		while (k < 3 && memcmp(out[k].pfx.addr, in[i].pfx.addr, 16))
			k++;
		CHECK(k < 3 && out[k].pfx.plen == in[i].pfx.plen && out[k].expires == in[i].expires);
	}
	free(out);
	CHECK(pack_key_is_pack("blocklist/+n1.1.1") && !pack_key_is_pack("blocklist/198.51.100.7"));
	check_end();

	check_begin("fleet-pack-strip");
	del[0] = in[0].pfx;
	del[1] = in[2].pfx;
	pack_sort(del, 2);
	CHECK(pack_strip(v, strlen(v), del, 2, &w, &changed) == 0 && changed && w);
	CHECK(w && pack_decode("blocklist/+x", w, strlen(w), false, set, by, sizeof(by), &out, &n, &bad) == 0);
	CHECK(n == 1 && out && out[0].pfx.family == POLICY_FAM_IPV6 && out[0].expires == 0);
	CHECK(w && strstr(w, "\"origin\":\"fail2ban\""));
	free(out);
	free(v);
	v = w;
	w = NULL;
	CHECK(pack_strip(v, strlen(v), del, 2, &w, &changed) == 0 && !changed && w);
	free(w);
	del[0] = in[1].pfx;
	CHECK(pack_strip(v, strlen(v), del, 1, &w, &changed) == 0 && changed && !w);
	free(v);
	check_end();

	check_begin("fleet-pack-one-entry-key");
	v = "{\"expires\":42,\"by\":\"n9\"}";
	CHECK(pack_decode("shared-bans/198.51.100.0/24", v, strlen(v), false, set, by, sizeof(by), &out, &n, &bad) ==
	      0);
	CHECK(!strcmp(set, "shared-bans") && !strcmp(by, "fleet:n9") && n == 1 && out && out[0].expires == 42 &&
	      out[0].pfx.plen == 24);
	free(out);
	CHECK(pack_decode("shared-bans/198.51.100.0/24", NULL, 0, true, set, by, sizeof(by), &out, &n, &bad) == 0 &&
	      n == 1);
	free(out);
	check_end();

	check_begin("fleet-pack-hostile");
	{
		static const struct {
			const char *key, *val;
			int r;
			uint32_t n, bad;
		} cases[] = {
			{ "no-slash", "{}", -EINVAL, 0, 0 },
			{ "/198.51.100.7", "{}", -EINVAL, 0, 0 },
			{ "s/not-an-address", "{}", -EINVAL, 0, 0 },
			{ "s/198.51.100.5/24", "{}", -EINVAL, 0, 0 }, /* host bits */
			{ "s/+", "{\"entries\":{}}", -EINVAL, 0, 0 },
			{ "s/+a/b", "{\"entries\":{}}", -EINVAL, 0, 0 },
			{ "s/+a", "not json", -EINVAL, 0, 0 },
			{ "s/+a", "{\"entries\":[1]}", -EINVAL, 0, 0 },
			{ "s/+a",
			  "{\"by\":\"../x\",\"entries\":{\"198.51.100.7\":1,\"x\":1,\"198.51.100.8\":-1,"
			  "\"198.51.100.9\":\"1\",\"198.51.100.0/24\":5}}",
			  0, 2, 3 },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			int r = pack_decode(cases[i].key, cases[i].val, strlen(cases[i].val), false, set, by,
					    sizeof(by), &out, &n, &bad);

			if (r != cases[i].r || (r == 0 && (n != cases[i].n || bad != cases[i].bad)))
				check_fail_at(__FILE__, __LINE__, "%s %s: %d, %u entries, %u bad", cases[i].key,
					      cases[i].val, r, n, bad);
			if (r == 0 && strcmp(by, "fleet:?"))
				check_fail_at(__FILE__, __LINE__, "a node's name that is not one taken: %s", by);
			free(out);
		}
	}
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
	test_pack();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	CHECK_EXIT();
}
