/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Counter slot bookkeeping (appliance/backend/bpf/engine/slots.c), without an engine:
 * a rule keeps its slot across reloads while it keeps its hook and name; a
 * new rule gets a slot no live rule has; slots of removed rules are given
 * back on commit and reused; a failed reload (abort) gives back what it
 * took and leaves the running assignment as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bpf/engine/slots.h"
#include "tests/lib/check.h"

struct loaded {
	struct diags d;
	struct policy *p;
	struct plan *pl;
	struct slot_map m;
};

static int load(struct loaded *l, const char *text)
{
	memset(l, 0, sizeof(*l));
	diags_init(&l->d);
	if (policy_load_buffer("slots.yaml", text, strlen(text), &l->d, &l->p) < 0) {
		diags_print(&l->d, stdout, false);
		return -1;
	}
	return plan_compile(l->p, &l->pl);
}

static void unload(struct loaded *l)
{
	slot_map_free(&l->m);
	plan_free(l->pl);
	policy_free(l->p);
	diags_free(&l->d);
}

/* The slot of rule `name` on the forward hook, or UINT32_MAX. */
static uint32_t slot_of(const struct loaded *l, const char *name)
{
	const struct plan_hook *h = &l->pl->hook[NFB_HOOK_FORWARD];

	for (uint32_t b = 0; b < h->nrules; b++)
		if (!strcmp(h->rules[b]->name, name))
			return l->m.rule_slot[NFB_HOOK_FORWARD][b];
	return UINT32_MAX;
}

#define HEAD "version: 1\nhooks: { forward: { default: drop }, input: { default: accept } }\nrules:\n"

static void test_keep_and_reuse(void)
{
	struct slot_table t;
	struct loaded a, b, c;
	uint32_t sa, sb, sc;
	int hook;

	check_begin("slots-follow-rule-names");
	CHECK(slots_init(&t) == 0);
	CHECK(load(&a, HEAD "  - { name: a, service: [tcp/1], action: accept }\n"
			    "  - { name: b, service: [tcp/2], action: accept }\n"
			    "  - { name: c, service: [tcp/3], action: accept }\n") == 0);
	CHECK(slots_assign(&t, NULL, a.pl, &a.m) == 0);
	slots_commit(&t, &a.m, a.pl);
	sa = slot_of(&a, "a");
	sb = slot_of(&a, "b");
	sc = slot_of(&a, "c");
	CHECK(sa != sb && sb != sc && sa != sc);
	CHECK(sa >= SLOT_FIRST_RULE && sb >= SLOT_FIRST_RULE && sc >= SLOT_FIRST_RULE);
	CHECK(slots_rule_name(&t, sb, &hook) && !strcmp(slots_rule_name(&t, sb, &hook), "b") &&
	      hook == NFB_HOOK_FORWARD);
	CHECK_EQ_INT(a.m.default_slot[NFB_HOOK_FORWARD], SLOT_DEFAULT(NFB_HOOK_FORWARD));

	/* Reordered, b removed, d added: a and c keep theirs, d takes b's. */
	CHECK(load(&b, HEAD "  - { name: c, service: [tcp/3], action: accept }\n"
			    "  - { name: d, service: [tcp/4], action: accept }\n"
			    "  - { name: a, service: [tcp/1], action: drop }\n") == 0);
	CHECK(slots_assign(&t, NULL, b.pl, &b.m) == 0);
	CHECK_EQ_INT(slot_of(&b, "a"), sa);
	CHECK_EQ_INT(slot_of(&b, "c"), sc);
	CHECK(slot_of(&b, "d") != sa && slot_of(&b, "d") != sb && slot_of(&b, "d") != sc); /* b is still live */
	slots_commit(&t, &b.m, b.pl);
	CHECK(slots_rule_name(&t, sb, &hook) == NULL); /* b's slot given back */

	/* A failed reload takes a slot, then gives it back. */
	CHECK(load(&c, HEAD "  - { name: e, service: [tcp/5], action: accept }\n") == 0);
	CHECK(slots_assign(&t, NULL, c.pl, &c.m) == 0);
	CHECK(slots_rule_name(&t, slot_of(&c, "e"), &hook) != NULL);
	slots_abort(&t, &b.m, b.pl);
	CHECK(slots_rule_name(&t, slot_of(&c, "e"), &hook) == NULL);
	CHECK(slots_rule_name(&t, sa, &hook) && !strcmp(slots_rule_name(&t, sa, &hook), "a"));
	CHECK(slots_rule_name(&t, sc, &hook) && !strcmp(slots_rule_name(&t, sc, &hook), "c"));
	unload(&a);
	unload(&b);
	unload(&c);
	slots_free(&t);
	check_end();
}

static void test_hooks_apart(void)
{
	struct slot_table t;
	struct loaded a;
	uint32_t in, fwd;

	check_begin("slots-same-name-two-hooks");
	CHECK(slots_init(&t) == 0);
	CHECK(load(&a, HEAD "  - { name: x, hook: [input, forward], service: [tcp/1], action: accept }\n") == 0);
	CHECK(slots_assign(&t, NULL, a.pl, &a.m) == 0);
	in = a.m.rule_slot[NFB_HOOK_INPUT][0];
	fwd = a.m.rule_slot[NFB_HOOK_FORWARD][0];
	CHECK(in != fwd);
	unload(&a);
	slots_free(&t);
	check_end();
}

/* Saved by one daemon, loaded by the next (which adopted the pinned state):
 * every rule gets its slot back; a malformed or clashing file gives nothing. */
static void test_save_load(void)
{
	static const char *const bad[] = {
		"7 1:a\n",	      /* below the rule slots */
		"100 9:a\n",	      /* no such hook */
		"100 1a\n",	      /* no colon */
		"100 1:\n",	      /* no name */
		"100 1:a\n100 1:b\n", /* a slot twice */
		"100 1:a\n101 1:a\n", /* a name twice */
		"x 1:a\n",
		"100 1:a", /* cut */
	};
	struct slot_table t, u;
	struct loaded a, b;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	check_begin("slots-saved-and-loaded");
	CHECK(slots_init(&t) == 0 && slots_init(&u) == 0);
	CHECK(load(&a, HEAD "  - { name: a, service: [tcp/1], action: accept }\n"
			    "  - { name: b, service: [tcp/2], action: accept }\n") == 0);
	CHECK(slots_assign(&t, NULL, a.pl, &a.m) == 0);
	slots_commit(&t, &a.m, a.pl);
	f = open_memstream(&buf, &len);
	slots_save(&t, f);
	fclose(f);
	f = fmemopen(buf, len, "r");
	CHECK(f && slots_load(&u, f) == 0);
	if (f)
		fclose(f);
	/* The same policy in the new table: the same slots. */
	CHECK(load(&b, HEAD "  - { name: b, service: [tcp/2], action: accept }\n"
			    "  - { name: a, service: [tcp/1], action: accept }\n") == 0);
	CHECK(slots_assign(&u, NULL, b.pl, &b.m) == 0);
	CHECK_EQ_INT(slot_of(&b, "a"), slot_of(&a, "a"));
	CHECK_EQ_INT(slot_of(&b, "b"), slot_of(&a, "b"));
	free(buf);
	unload(&a);
	unload(&b);
	slots_free(&t);
	slots_free(&u);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int hook;

		CHECK(slots_init(&u) == 0);
		f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
		CHECK(f && slots_load(&u, f) == -EINVAL);
		if (f)
			fclose(f);
		CHECK(!slots_rule_name(&u, 100, &hook)); /* nothing kept */
		slots_free(&u);
	}
	check_end();
}

/* Regression (issue 25): released names left tombstones that were never
 * reused, so every name a daemon ever saw used up a hash entry for good;
 * after about a million of them (rules renamed on each reload) a lookup
 * never ended. 1,200 reloads of 1,000 renamed rules: 1,200,000 names
 * through a table of 2^20 entries. */
static void test_renamed_forever(void)
{
	enum {
		RULES = 1000,
		RELOADS = 1200
	};
	static struct rule rules[2][RULES];
	static const struct rule *ptrs[2][RULES];
	static char names[2][RULES][32];
	struct slot_map m[2] = { 0 };
	struct plan pl[2] = { 0 };
	struct slot_table t;
	int ok = 1;

	check_begin("slots-renamed-rules-forever");
	CHECK(slots_init(&t) == 0);
	for (int g = 0; g < 2; g++) {
		pl[g].hook[NFB_HOOK_FORWARD].nrules = RULES;
		pl[g].hook[NFB_HOOK_FORWARD].rules = ptrs[g];
		for (int i = 0; i < RULES; i++) {
			rules[g][i].name = names[g][i];
			ptrs[g][i] = &rules[g][i];
		}
	}
	for (int n = 0; n < RELOADS && ok; n++) {
		int g = n & 1;

		for (int i = 0; i < RULES; i++)
			snprintf(names[g][i], sizeof(names[g][i]), "v%d-r%d", n, i);
		ok = slots_assign(&t, NULL, &pl[g], &m[g]) == 0;
		if (ok)
			slots_commit(&t, &m[g], &pl[g]);
		slot_map_free(&m[g ^ 1]);
		ok = ok && t.tombs <= t.hcap / 4;
	}
	CHECK(ok);
	slot_map_free(&m[0]);
	slot_map_free(&m[1]);
	slots_free(&t);
	check_end();
}

int main(void)
{
	test_renamed_forever();
	test_keep_and_reuse();
	test_hooks_apart();
	test_save_load();
	CHECK_EXIT();
}
