/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The dynamic sets' store (appliance/dynset/dynset.c): entries stay sorted
 * and apart, an overlapping add is refused whole and named, a repeated add
 * renews, deletes are exact, expiry removes what is due, ids follow set
 * names across policies, and the saved form loads back. The array is
 * checked against a brute-force model on random changes. The kernel's
 * entries compared with the store (dynset/verify.h): what it lacks, holds
 * with another expiry or holds over is a repair; what settles by itself
 * (an expiry within the tolerance, the nftables backend's margin) is not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dynset/dynset.h"
#include "dynset/verify.h"
#include "dynset/protect.h"
#include "policy/syntax/parse.h"
#include "tests/lib/check.h"

static struct dyn_change ch(const char *text, int64_t expires)
{
	struct dyn_change c = { .expires = expires, .src = "t", .line = 1 };
	const char *why;
	bool host;

	if (parse_prefix(text, &c.pfx, &host, &why) < 0 || host)
		check_fail_at(__FILE__, __LINE__, "bad test prefix %s", text);
	return c;
}

static int add(struct dynsets *s, struct dyn_set *set, const char *const *texts, size_t n, int64_t exp, struct diags *d)
{
	struct dyn_change c[16];

	for (size_t i = 0; i < n; i++)
		c[i] = ch(texts[i], exp);
	return dynset_add(s, set, c, (uint32_t)n, d, NULL);
}

static struct policy *policy_with(const char *const *names, size_t n)
{
	struct policy *p = calloc(1, sizeof(*p));

	p->sets = calloc(n, sizeof(*p->sets));
	p->nsets = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		p->sets[i].name = (char *)names[i];
		p->sets[i].dynamic = true;
	}
	return p;
}

static void free_policy(struct policy *p)
{
	free(p->sets);
	free(p);
}

static bool sorted_apart(const struct dyn_set *set)
{
	for (int f = 0; f < 2; f++)
		for (uint32_t i = 1; i < set->n[f]; i++)
			if (memcmp(set->v[f][i - 1].addr, set->v[f][i].addr, f ? 16 : 4) >= 0)
				return false;
	return true;
}

static void test_overlap_and_renew(void)
{
	static const char *const names[] = { "b" };
	struct policy *p = policy_with(names, 1);
	struct dynsets s;
	struct dyn_set *b;
	struct diags d;
	struct dyn_added did = { .added = 9, .renewed = 9 };
	struct dyn_change c;

	check_begin("dynset-overlap-refused-whole-renew-counted");
	dynsets_init(&s);
	CHECK(dynsets_sync_policy(&s, p) == 0);
	b = dynsets_find(&s, "b");
	CHECK(b && b->id == 1);
	diags_init(&d);
	CHECK(add(&s, b, (const char *const[]){ "192.0.2.0/25", "2001:db8::/48", "198.51.100.7" }, 3, 0, &d) == 0);
	CHECK(b->n[0] == 2 && b->n[1] == 1 && s.total[0] == 2 && s.total[1] == 1 && sorted_apart(b));
	/* inside an entry, around one, and within the change itself: all refused, nothing added */
	CHECK(add(&s, b, (const char *const[]){ "203.0.113.1", "192.0.2.64/26" }, 2, 0, &d) == -EEXIST);
	CHECK(add(&s, b, (const char *const[]){ "192.0.2.0/24" }, 1, 0, &d) == -EEXIST);
	CHECK(add(&s, b, (const char *const[]){ "203.0.113.0/24", "203.0.113.9" }, 2, 0, &d) == -EEXIST);
	CHECK(b->n[0] == 2 && b->n[1] == 1);
	CHECK(d.n >= 3 && strstr(d.v[0].msg, "192.0.2.64/26 overlaps 192.0.2.0/25, already in set 'b'"));
	diags_free(&d);
	/* adjacent is not overlapping; the same again renews */
	diags_init(&d);
	c = ch("192.0.2.128/25", 0);
	CHECK(dynset_add(&s, b, &c, 1, &d, &did) == 0 && did.added == 1 && did.renewed == 0);
	c = ch("192.0.2.128/25", 5000);
	CHECK(dynset_add(&s, b, &c, 1, &d, &did) == 0 && did.added == 0 && did.renewed == 1 && c.renew);
	CHECK(b->n[0] == 3 && b->v[0][1].expires == 5000 && s.next_expiry == 5000 && sorted_apart(b));
	/* expiry */
	CHECK(dynsets_expire(&s, 4999, NULL, NULL) == 0);
	CHECK(dynsets_expire(&s, 5000, NULL, NULL) == 1 && b->n[0] == 2 && s.total[0] == 2 && !s.next_expiry);
	/* delete: exact only, all or nothing */
	CHECK(add(&s, b, (const char *const[]){ "10.0.0.0/8" }, 1, 0, &d) == 0);
	{
		struct dyn_change del[2] = { ch("10.0.0.0/8", 0), ch("192.0.2.0/26", 0) };

		CHECK(dynset_del(&s, b, del, 2, &d, NULL) == -ENOENT && b->n[0] == 3);
		del[1] = ch("198.51.100.7", 0);
		CHECK(dynset_del(&s, b, del, 2, &d, NULL) == 0 && b->n[0] == 1 && s.total[0] == 1);
	}
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

static void test_ids_follow_names(void)
{
	static const char *const one[] = { "a", "b" }, *const two[] = { "b", "c" };
	struct policy *p1 = policy_with(one, 2), *p2 = policy_with(two, 2);
	struct dynsets s;
	struct diags d;

	check_begin("dynset-ids-follow-names");
	dynsets_init(&s);
	diags_init(&d);
	CHECK(dynsets_sync_policy(&s, p1) == 0);
	CHECK(add(&s, dynsets_find(&s, "b"), (const char *const[]){ "192.0.2.1" }, 1, 0, &d) == 0);
	CHECK(dynsets_sync_policy(&s, p2) == 0);
	CHECK(dynsets_find(&s, "b")->id == 2 && dynsets_find(&s, "c")->id == 3 && !dynsets_find(&s, "a")->in_policy);
	dynsets_drop_gone(&s);
	CHECK(!dynsets_find(&s, "a") && dynsets_find(&s, "b")->n[0] == 1);
	CHECK(dynsets_sync_policy(&s, p1) == 0 && dynsets_find(&s, "a")->id == 1); /* the free id again */
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p1);
	free_policy(p2);
	check_end();
}

static void test_save_load(void)
{
	static const char *const names[] = { "x", "set" };
	struct policy *p = policy_with(names, 2);
	struct dynsets s, t;
	char *buf = NULL;
	size_t len = 0;
	unsigned bad = 0;
	struct diags d;
	FILE *f;

	check_begin("dynset-save-load");
	dynsets_init(&s);
	diags_init(&d);
	CHECK(dynsets_sync_policy(&s, p) == 0);
	CHECK(add(&s, dynsets_find(&s, "x"), (const char *const[]){ "192.0.2.1", "2001:db8::/32" }, 2, 0, &d) == 0);
	CHECK(add(&s, dynsets_find(&s, "set"), (const char *const[]){ "198.51.100.0/24" }, 1, 100, &d) == 0);
	CHECK(add(&s, dynsets_find(&s, "set"), (const char *const[]){ "203.0.113.0/24" }, 1, 10000, &d) == 0);
	f = open_memstream(&buf, &len);
	dynsets_save(&s, f);
	fclose(f);
	f = fmemopen(buf, len, "r");
	CHECK(dynsets_load(&t, f, 200, &bad) == 0); /* the one that expired at 100 is not read */
	fclose(f);
	CHECK(t.n == 2 && dynsets_find(&t, "x")->n[0] == 1 && dynsets_find(&t, "x")->n[1] == 1);
	CHECK(dynsets_find(&t, "set")->n[0] == 1 && dynsets_find(&t, "set")->v[0][0].expires == 10000);
	CHECK(dynsets_find(&t, "set")->id == dynsets_find(&s, "set")->id);
	dynsets_free(&t);
	/* a damaged file: refused, with the line */
	{
		static const char broken[] = "nfbox-dynsets 1\nset x 1\ne x 192.0.2.5/24 0\n";

		f = fmemopen((char *)broken, sizeof(broken) - 1, "r");
	}
	CHECK(dynsets_load(&t, f, 0, &bad) == -EINVAL && bad == 3 && t.n == 0);
	fclose(f);
	f = fmemopen((char *)"nfbox-dynsets 1\nset x 1\nset y 1\n", 32, "r");
	CHECK(dynsets_load(&t, f, 0, &bad) == -EINVAL && bad == 3);
	fclose(f);
	free(buf);
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

/* Who added an entry and when: kept by a renewal, saved and read back
 * (the old three-field lines still read, with neither known); an undo
 * puts an entry back with both. */
static void test_origin(void)
{
	static const char *const names[] = { "o" };
	struct policy *p = policy_with(names, 1);
	struct dynsets s, t;
	struct dyn_change c[2];
	struct dyn_undo u = { 0 };
	struct dyn_added did = { .undo = &u };
	struct dyn_set *set;
	char *buf = NULL;
	size_t len = 0;
	unsigned bad = 0;
	struct diags d;
	FILE *f;

	check_begin("dynset-origin");
	dynsets_init(&s);
	diags_init(&d);
	CHECK(dynsets_sync_policy(&s, p) == 0);
	set = dynsets_find(&s, "o");
	c[0] = ch("192.0.2.7", 0);
	c[0].by = "rule:ssh";
	c[0].added = 1700000000;
	c[1] = ch("2001:db8::7", 0);
	c[1].by = "nfbox-set";
	CHECK(dynset_add(&s, set, c, 2, &d, NULL) == 0);
	CHECK_EQ_STR(dyn_entry_by(&s, &set->v[0][0]), "rule:ssh");
	CHECK(set->v[0][0].added == 1700000000);
	CHECK_EQ_STR(dyn_entry_by(&s, &set->v[1][0]), "nfbox-set");
	CHECK(set->v[1][0].added >= 1700000000); /* now */
	/* a renewal by someone else keeps who added it first, and when */
	c[0].by = "nfbox-set";
	c[0].added = 0;
	CHECK(dynset_add(&s, set, c, 1, &d, &did) == 0 && did.renewed == 1);
	CHECK_EQ_STR(dyn_entry_by(&s, &set->v[0][0]), "rule:ssh");
	CHECK(set->v[0][0].added == 1700000000);
	/* undone: the renewal taken back, the entry as it was */
	dynset_undo(&s, set, &u);
	dyn_undo_free(&u);
	CHECK(set->n[0] == 1 && set->v[0][0].added == 1700000000);
	CHECK_EQ_STR(dyn_entry_by(&s, &set->v[0][0]), "rule:ssh");
	f = open_memstream(&buf, &len);
	dynsets_save(&s, f);
	fclose(f);
	f = fmemopen(buf, len, "r");
	CHECK(dynsets_load(&t, f, 0, &bad) == 0);
	fclose(f);
	set = dynsets_find(&t, "o");
	CHECK(set && set->n[0] == 1 && set->v[0][0].added == 1700000000);
	CHECK(set && !strcmp(dyn_entry_by(&t, &set->v[0][0]), "rule:ssh"));
	dynsets_free(&t);
	{
		static const char old[] = "nfbox-dynsets 1\nset o 1\ne o 192.0.2.9 0\n";

		f = fmemopen((char *)old, sizeof(old) - 1, "r");
	}
	CHECK(dynsets_load(&t, f, 0, &bad) == 0);
	fclose(f);
	set = dynsets_find(&t, "o");
	CHECK(set && set->n[0] == 1 && !set->v[0][0].added && !*dyn_entry_by(&t, &set->v[0][0]));
	dynsets_free(&t);
	free(buf);
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

/* Random adds and deletes of small IPv4 prefixes against a bitmap model of
 * 192.0.2.0/24: the store accepts an add exactly when no address of it is
 * taken by another entry, and stays sorted. */
static void test_model(void)
{
	static const char *const names[] = { "m" };
	struct policy *p = policy_with(names, 1);
	struct dynsets s;
	struct dyn_set *m;
	uint8_t owner[256]; /* plen + 1 of the entry holding the address, 0 free; start in start[] */
	uint8_t start[256];
	struct diags d;
	unsigned seed = 7;

	check_begin("dynset-model");
	memset(owner, 0, sizeof(owner));
	dynsets_init(&s);
	dynsets_sync_policy(&s, p);
	m = dynsets_find(&s, "m");
	for (int i = 0; i < 20000; i++) {
		uint8_t plen = (uint8_t)(26 + rand_r(&seed) % 7), base;
		unsigned size = 1u << (32 - plen);
		char text[32];
		bool free_all = true, exact;
		struct dyn_change c;
		int r;

		base = (uint8_t)((rand_r(&seed) % 256) & ~(size - 1));
		snprintf(text, sizeof(text), "192.0.2.%u/%u", base, plen);
		c = ch(text, 0);
		exact = owner[base] == plen + 1 && start[base] == base;
		for (unsigned a = base; a < base + size; a++)
			free_all &= !owner[a];
		diags_init(&d);
		if (rand_r(&seed) % 3 == 0) {
			r = dynset_del(&s, m, &c, 1, &d, NULL);
			CHECK((r == 0) == exact);
			if (r == 0)
				memset(owner + base, 0, size);
		} else {
			r = dynset_add(&s, m, &c, 1, &d, NULL);
			CHECK((r == 0) == (free_all || exact));
			if (r == 0 && free_all) {
				memset(owner + base, plen + 1, size);
				memset(start + base, base, size);
			}
		}
		diags_free(&d);
		if (!sorted_apart(m))
			check_fail_at(__FILE__, __LINE__, "not sorted after step %d", i);
	}
	{
		unsigned held = 0, n = 0;

		for (unsigned a = 0; a < 256; a++)
			held += owner[a] != 0;
		for (uint32_t i = 0; i < m->n[0]; i++)
			n += 1u << (32 - m->v[0][i].plen);
		CHECK(held == n && s.total[0] == m->n[0]);
	}
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

/* A change taken back (the kernel refused it) leaves the set as it was:
 * added entries gone, renewed ones with their old expiry, deleted ones back
 * with theirs, the same prefix twice in one change included. */
static void test_undo(void)
{
	static const char *const names[] = { "u" };
	struct policy *p = policy_with(names, 1);
	struct dyn_change c[3];
	struct dyn_undo undo;
	struct dynsets s;
	struct dyn_set *u;
	struct diags d;

	check_begin("dynset-undo");
	dynsets_init(&s);
	diags_init(&d);
	dynsets_sync_policy(&s, p);
	u = dynsets_find(&s, "u");
	CHECK(add(&s, u, (const char *const[]){ "192.0.2.1", "192.0.2.9" }, 2, 600000, &d) == 0);
	c[0] = ch("192.0.2.1", 0);
	c[1] = ch("192.0.2.1", 0);
	c[2] = ch("198.51.100.0/24", 0);
	CHECK(dynset_add(&s, u, c, 3, &d, &(struct dyn_added){ .undo = &undo }) == 0 && u->n[0] == 3 &&
	      !u->v[0][0].expires);
	dynset_undo(&s, u, &undo);
	dyn_undo_free(&undo);
	CHECK(u->n[0] == 2 && u->v[0][0].expires == 600000 && u->v[0][1].expires == 600000 && s.total[0] == 2);
	c[0] = ch("192.0.2.9", 0);
	CHECK(dynset_del(&s, u, c, 1, &d, &undo) == 0 && u->n[0] == 1);
	dynset_undo(&s, u, &undo);
	dyn_undo_free(&undo);
	CHECK(u->n[0] == 2 && u->v[0][1].expires == 600000); /* back with its timeout, not forever */
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

static struct dyn_kentry kent(const struct dyn_set *set, const char *text, int64_t expires)
{
	struct dyn_change c = ch(text, 0);
	struct dyn_kentry k = {
		.set = set, .fam = c.pfx.family == POLICY_FAM_IPV6, .plen = c.pfx.plen, .expires = expires
	};

	memcpy(k.addr, c.pfx.addr, 16);
	return k;
}

static const struct dyn_repair *repair_of(const struct dyn_verdict *v, enum dyn_repair_kind kind, const char *text)
{
	struct dyn_change c = ch(text, 0);

	for (size_t i = 0; i < v->n; i++)
		if (v->v[i].kind == kind && v->v[i].c.pfx.plen == c.pfx.plen &&
		    !memcmp(v->v[i].c.pfx.addr, c.pfx.addr, 16))
			return &v->v[i];
	return NULL;
}

static void test_verify(void)
{
	static const char *const names[] = { "a", "b" };
	const int64_t now = 1000000000000, M = 1000, T = DYN_VERIFY_TOLERANCE_MS;
	struct policy *p = policy_with(names, 2);
	struct dyn_set *a, *b;
	struct dyn_verdict v;
	struct dynsets s;
	struct diags d;

	check_begin("dynset-verify");
	dynsets_init(&s);
	diags_init(&d);
	CHECK(dynsets_sync_policy(&s, p) == 0);
	a = dynsets_find(&s, "a");
	b = dynsets_find(&s, "b");
	CHECK(add(&s, a, (const char *const[]){ "192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::/64" }, 4,
		  now + 60000, &d) == 0);
	CHECK(add(&s, a, (const char *const[]){ "192.0.2.4" }, 1, 0, &d) == 0);
	CHECK(add(&s, a, (const char *const[]){ "192.0.2.5" }, 1, now + T / 2, &d) == 0); /* about to go */
	CHECK(add(&s, b, (const char *const[]){ "192.0.2.1" }, 1, 0, &d) == 0);
	{
		/* nftables: each expiry M later than the store's */
		struct dyn_kentry k[] = {
			kent(a, "192.0.2.1", now + 60000 + M),	   /* agrees */
			kent(a, "192.0.2.2", now + 3000),	   /* goes 57 s early: put again */
			kent(a, "2001:db8::/64", now + 60000 + M), /* agrees */
			kent(a, "192.0.2.4", now + 5000),	   /* for good in the store: put again */
			kent(a, "192.0.2.9", now + M / 2),	   /* the store let it go: the kernel does soon */
			kent(a, "192.0.2.10", now + 60000),	   /* the store never had it: deleted */
			kent(a, "192.0.2.11", 0),		   /* ... for good: deleted */
			kent(b, "192.0.2.2", 0),		   /* another set's: deleted from b */
			kent(NULL, "198.51.100.1", 0),		   /* of no set: an orphan */
		}; /* a's 192.0.2.3 is missing, b's 192.0.2.1 too; a's .5 goes within the tolerance */

		CHECK(dynset_verify(&s, k, sizeof(k) / sizeof(k[0]), now, M, &v) == 0);
		CHECK(v.n == 7 && v.orphans == 1);
		CHECK(repair_of(&v, DYN_REPAIR_EXPIRY, "192.0.2.2") &&
		      repair_of(&v, DYN_REPAIR_EXPIRY, "192.0.2.2")->c.expires == now + 60000);
		CHECK(repair_of(&v, DYN_REPAIR_EXPIRY, "192.0.2.4") &&
		      repair_of(&v, DYN_REPAIR_EXPIRY, "192.0.2.4")->c.expires == 0);
		CHECK(repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.3") &&
		      repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.3")->set == a);
		CHECK(repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.1") &&
		      repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.1")->set == b);
		CHECK(repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.10") && repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.11"));
		CHECK(repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.2") &&
		      repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.2")->set == b);
		CHECK(!repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.9") && !repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.5"));
		dyn_verdict_free(&v);
	}
	{
		/* the BPF backend (no margin): the same kernel's expiries are
		 * all off by M, beyond the tolerance only where M > T */
		struct dyn_kentry k[] = { kent(a, "192.0.2.1", now + 60000 + T + 1), kent(a, "192.0.2.9", now + 500) };

		CHECK(dynset_verify(&s, k, 2, now, 0, &v) == 0);
		CHECK(repair_of(&v, DYN_REPAIR_EXPIRY, "192.0.2.1") && repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.9"));
		dyn_verdict_free(&v);
	}
	/* The kernel's sets all empty (read as NULL, 0): every store entry is
	 * missing. UBSan once stopped the verify thread here (bsearch given
	 * NULL), and with it a fleet node under test_fleet. */
	CHECK(dynset_verify(&s, NULL, 0, now, M, &v) == 0);
	CHECK(repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.1") && repair_of(&v, DYN_REPAIR_MISSING, "192.0.2.3") &&
	      !repair_of(&v, DYN_REPAIR_EXTRA, "192.0.2.1"));
	dyn_verdict_free(&v);
	diags_free(&d);
	dynsets_free(&s);
	free_policy(p);
	check_end();
}

/* What is never banned: the special ranges, the appliance's own addresses
 * and the never-ban lists, a prefix that overlaps one of them too. */
static void test_protect(void)
{
	struct prefix own[2] = { ch("198.51.100.1", 0).pfx, ch("2001:db8:2::1", 0).pfx };
	struct addr_match global = { .v = (struct prefix[]){ ch("192.0.2.53", 0).pfx }, .n = 1, .what = "192.0.2.53" };
	struct addr_match set = { .v = (struct prefix[]){ ch("203.0.113.0/28", 0).pfx }, .n = 1, .what = "trusted" };
	struct dyn_protect p = { .own = own, .nown = 2, .lists = { &global, &set } };
	static const char *const never[] = {
		"0.0.0.0",    "::",	      "127.0.0.1",   "127.255.0.0/16",	 "::1",		 "255.255.255.255",
		"224.0.0.1",  "239.1.2.0/24", "ff02::1",     "::ffff:192.0.2.9", "198.51.100.1", "2001:db8:2::1",
		"192.0.2.53", "192.0.2.0/24", "203.0.113.7", "203.0.113.0/24"
	};
	/* a network that holds the appliance's address (its LAN) may be banned */
	static const char *const fine[] = { "198.51.100.2",    "192.0.2.52",	  "203.0.113.16/28",
					    "2001:db8:3::1",   "126.255.255.255", "::2",
					    "198.51.100.0/24", "2001:db8:2::/64", "::/0" };
	char why[160];

	check_begin("dynset-protect");
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		struct dyn_change c = ch(never[i], 0);

		if (!dyn_protected(&p, &c.pfx, why, sizeof(why)))
			check_fail_at(__FILE__, __LINE__, "%s may be banned", never[i]);
	}
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		struct dyn_change c = ch(fine[i], 0);

		if (dyn_protected(&p, &c.pfx, why, sizeof(why)))
			check_fail_at(__FILE__, __LINE__, "%s may not be banned: %s", fine[i], why);
	}
	{
		struct dyn_change c = ch("127.0.0.1", 0);

		CHECK(dyn_protected(&p, &c.pfx, why, sizeof(why)) && !strcmp(why, "loopback"));
		c = ch("198.51.100.1", 0);
		CHECK(dyn_protected(&p, &c.pfx, why, sizeof(why)) &&
		      !strcmp(why, "this appliance's own address 198.51.100.1"));
		c = ch("203.0.113.8", 0);
		CHECK(dyn_protected(&p, &c.pfx, why, sizeof(why)) && !strcmp(why, "in the set's never-ban (trusted)"));
		c = ch("192.0.2.53", 0);
		CHECK(dyn_protected(&p, &c.pfx, why, sizeof(why)) && !strcmp(why, "in options.never-ban (192.0.2.53)"));
	}
	check_end();
}

int main(void)
{
	test_protect();
	test_verify();
	test_origin();
	test_undo();
	test_overlap_and_renew();
	test_ids_follow_names();
	test_save_load();
	test_model();
	CHECK_EXIT();
}
