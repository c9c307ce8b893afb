/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `nfbox fleet push|status|diff`: an operator's view of a fleet in etcd
 * (fleet/part.c is a node's). A push validates the policy here, and
 * writes it as the group's revision with a compare-and-swap on the
 * revision it read (or the one --base names), so that two operators cannot
 * overwrite each other; with --canary N it goes to N nodes first, each of
 * which confirms by itself only once it reaches etcd after the change, and
 * to the rest only when all have.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/sort.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "fleet/bundle.h"
#include "fleet/conf.h"
#include "fleet/etcd.h"
#include "lib/plant.h"
#include "policy/diff/diff.h"
#include "policy/policy.h"
#include "policy/syntax/parse.h"

#define FLEET_DEFAULT_FILE "/etc/nfbox/fleet.yaml"
#define EXIT_REFUSED	   EXIT_FAILED /* the push was refused or halted, or a node did not take it */

struct fleet_args {
	const char *fleet, *group, *confirm, *wait;
	uint64_t canary, base;
	bool json, allow_unsafe_files;
};

static const struct cli_opt fleet_opts[] = {
	CLI_OPT_STRING(
		"fleet", 'f', struct fleet_args, fleet, "FILE",
		"the fleet file: etcd's endpoints and this operator's certificate and user (default " FLEET_DEFAULT_FILE
		")"),
	CLI_OPT_STRING("group", 'g', struct fleet_args, group, "GROUP", "the group (default: the fleet file's)"),
	CLI_OPT_UINT("canary", struct fleet_args, canary, "N", 0, FLEET_MAX_CANARIES,
		     "push: to N nodes first (by name, those reporting), each confirming by itself once it reaches "
		     "etcd after the change; then to the rest"),
	CLI_OPT_STRING("confirm-within", 0, struct fleet_args, confirm, "DURATION",
		       "push --canary: the time each canary has to confirm before it rolls back (default 30s)"),
	CLI_OPT_UINT("base", struct fleet_args, base, "REVISION", 1, INT64_MAX,
		     "push: refused unless the group's revision is still REVISION (the one fleet diff showed)"),
	CLI_OPT_STRING("wait", 'w', struct fleet_args, wait, "DURATION",
		       "push: how long to wait for the nodes to apply it (default 30s; 0: do not wait)"),
	CLI_OPT_FLAG("json", 'j', struct fleet_args, json, "status: JSON instead of text"),
	CLI_OPT_FLAG("allow-unsafe-files", 0, struct fleet_args, allow_unsafe_files,
		     "read the password file whoever owns it and whoever may read it"),
	CLI_OPT_END,
};

/* Everything a command needs: the file, etcd, the group. */
struct op {
	struct fleet_conf conf;
	struct etcd etcd;
	const char *group;
	char key_policy[512], key_cand[512], key_nodes[512];
};

/* 0, or the exit status: the fleet file cannot be read or is invalid
 * (EXIT_INVALID), no group is named (EXIT_USAGE). */
static int op_open(const struct fleet_args *a, struct op *o)
{
	struct diags d;
	int r;

	memset(o, 0, sizeof(*o));
	diags_init(&d);
	r = fleet_conf_load(a->fleet, a->allow_unsafe_files, &d, &o->conf);
	if (r < 0 || d.warnings)
		diags_print(&d, stderr, cli_color(stderr));
	diags_free(&d);
	if (r < 0)
		return EXIT_INVALID;
	o->group = a->group ? a->group : o->conf.group;
	if (!o->group || !fleet_name_ok(o->group)) {
		fprintf(stderr, "nfbox fleet: %s: name the group with --group GROUP (or group: in %s)\n",
			o->group ? "a group is 1 to 63 letters, digits, '-', '_' or '.'" : "no group", a->fleet);
		fleet_conf_free(&o->conf);
		return a->group || !o->group ? EXIT_USAGE : EXIT_INVALID;
	}
	fleet_key(&o->conf, o->group, "policy", o->key_policy, sizeof(o->key_policy));
	fleet_key(&o->conf, o->group, "candidate", o->key_cand, sizeof(o->key_cand));
	fleet_key(&o->conf, o->group, "nodes/", o->key_nodes, sizeof(o->key_nodes));
	if ((r = etcd_open(&o->etcd, &o->conf.etcd)) < 0) {
		fprintf(stderr, "nfbox fleet: cannot set up the etcd client: %s\n", strerror(-r));
		fleet_conf_free(&o->conf);
		return EXIT_FAILED;
	}
	return 0;
}

static void op_close(struct op *o)
{
	etcd_close(&o->etcd);
	fleet_conf_free(&o->conf);
}

/* etcd's refusal or silence, said so that the operator knows what to do. */
static int etcd_failed(const struct op *o, const char *what, int r)
{
	const char *hint = r == -EHOSTUNREACH ? "no endpoint answered: is etcd up, and are its endpoints right?"
			   : r == -ETIMEDOUT  ? "etcd has no quorum: a member took the request and did not answer "
						"(too few members are up); nothing was changed, and nodes keep "
						"enforcing what they have"
			   : r == -EACCES     ? "etcd refused it: this user's role may not do that (see "
						"nfbox-fleet-rbac(8))"
					      : "etcd refused it";

	fprintf(stderr, "nfbox fleet: %s: %s (%s)\n", what, hint, o->etcd.err[0] ? o->etcd.err : strerror(-r));
	return r == -EHOSTUNREACH || r == -ETIMEDOUT ? EXIT_UNREACHABLE : EXIT_REFUSED;
}

static int parse_secs(const char *s, uint64_t dflt, uint64_t *out)
{
	const char *why;

	if (!s) {
		*out = dflt;
		return 0;
	}
	if (!strcmp(s, "0")) {
		*out = 0;
		return 0;
	}
	if (parse_duration(s, 86400, out, &why) < 0) {
		fprintf(stderr, "nfbox fleet: '%s': %s (30s, 5m)\n", s, why);
		return -EINVAL;
	}
	return 0;
}

/* ---- the group's nodes ---- */

struct node {
	char *name;
	json_t *st; /* its status */
};

static void nodes_free(struct node *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		json_decref(v[i].st);
	}
	free(v);
}

static int node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct node *)a)->name, ((const struct node *)b)->name);
}

/* The nodes reporting (their keys live as long as their lease), by name. */
static int read_nodes(struct op *o, struct node **out, size_t *n)
{
	struct etcd_kvs kvs = { 0 };
	struct node *v;
	int r;

	if ((r = etcd_get(&o->etcd, o->key_nodes, true, &kvs)) < 0)
		return r;
	if (!(v = calloc(kvs.n + 1, sizeof(*v)))) {
		etcd_kvs_free(&kvs);
		return -ENOMEM;
	}
	*n = 0;
	for (size_t i = 0; i < kvs.n; i++) {
		json_error_t je;

		v[*n].name = strdup(kvs.v[i].key + strlen(o->key_nodes));
		v[*n].st = json_loadb(kvs.v[i].value, kvs.v[i].vlen, 0, &je);
		if (v[*n].name && v[*n].st)
			(*n)++;
		else {
			free(v[*n].name);
			json_decref(v[*n].st);
		}
	}
	sort_n(v, *n, sizeof(*v), node_cmp);
	etcd_kvs_free(&kvs);
	*out = v;
	return 0;
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static int64_t jint(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* ---- push ---- */

/* The policy at path, loaded and validated as `nfbox validate` would. */
static int load_policy(const char *path, struct policy **p, struct fleet_bundle *b)
{
	_cleanup_free_ char *abs = realpath(path, NULL);
	struct diags d;
	int r;

	if (!abs) {
		fprintf(stderr, "nfbox fleet: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	diags_init(&d);
	if ((r = policy_load(abs, &d, p)) == 0 && (r = fleet_bundle_from_policy(*p, abs, b, &d)) < 0)
		policy_free(*p);
	if (r < 0 || d.warnings)
		diags_print(&d, stderr, cli_color(stderr));
	diags_free(&d);
	return r;
}

/* What a node says of revision rev: 1 applied, -1 refused or rolled back
 * (why), 0 not yet. */
static int node_state(const json_t *st, int64_t rev, bool candidate, const char **why)
{
	const json_t *c = json_object_get(st, "candidate");

	*why = jstr(st, "last_error");
	if (candidate) {
		if (jint(c, "revision") != rev)
			return 0;
		if (!strcmp(jstr(c, "state"), "confirmed"))
			return 1;
		return strcmp(jstr(c, "state"), "confirming") ? -1 : 0;
	}
	if (jint(st, "revision") == rev)
		return 1;
	return jint(st, "refused") == rev ? -1 : 0;
}

/* Wait until every node of names (all reporting nodes if n is 0) has taken
 * rev, or one refused it, or timeout: the nodes that did not. */
static int wait_nodes(struct op *o, char **names, size_t n, int64_t rev, bool candidate, uint64_t timeout_s,
		      bool halt_on_refusal)
{
	long long end = clock_ms(CLOCK_MONOTONIC) + (long long)timeout_s * 1000;
	int bad = 0;

	for (;;) {
		struct node *v = NULL;
		size_t nv = 0, done = 0, want = 0;
		int r = read_nodes(o, &v, &nv);
		bool last = clock_ms(CLOCK_MONOTONIC) >= end;

		if (r < 0)
			return etcd_failed(o, "reading the nodes' status", r);
		bad = 0;
		/* The count first; then, once the round is the last one (every
		 * node answered, a refusal that halts, or the time is up), each
		 * node's line: a node is named once. */
		for (int pass = 0; pass < 2; pass++) {
			bool final = last || (done == want && (!n || want == n)) || (bad && halt_on_refusal) ||
				     planted("fleet-wait-early");

			if (pass == 1 && !final)
				break;
			for (size_t i = 0; i < nv; i++) {
				bool named = !n;
				const char *why;
				int s;

				for (size_t k = 0; k < n; k++)
					named |= !strcmp(names[k], v[i].name);
				if (!named)
					continue;
				s = node_state(v[i].st, rev, candidate, &why);
				if (pass == 0) {
					want++;
					done += s != 0;
					bad += s < 0;
				} else if (s < 0) {
					printf("  %s: %s %" PRId64 ": %s\n", v[i].name,
					       candidate ? "did not confirm" : "refused", rev, why);
				} else {
					printf("  %s: %s %" PRId64 "\n", v[i].name,
					       s > 0 ? (candidate ? "confirmed" : "applied")
						     : (candidate ? "has not confirmed" : "has not applied"),
					       rev);
				}
			}
		}
		if (n && want < n && last)
			for (size_t k = 0; k < n; k++) {
				bool seen = false;

				for (size_t i = 0; i < nv; i++)
					seen |= !strcmp(names[k], v[i].name);
				if (!seen) {
					printf("  %s: no longer reports (its lease ended)\n", names[k]);
					bad++;
				}
			}
		nodes_free(v, nv);
		if ((bad && halt_on_refusal) || (done == want && (!n || want == n)))
			return bad;
		if (last) {
			printf("  %zu of %zu nodes did not report revision %" PRId64 " within %llus\n", want - done,
			       want, rev, (unsigned long long)timeout_s);
			return bad + (int)(want - done);
		}
		usleep(200 * 1000);
	}
}

static int read_key(struct op *o, const char *key, struct etcd_kvs *kvs, int64_t *mod)
{
	int r = etcd_get(&o->etcd, key, false, kvs);

	*mod = r == 0 && kvs->n ? kvs->v[0].mod_rev : 0;
	return r;
}

/* The group's revision replaced by b if it is still base: 0, or an exit. */
static int swap_in(struct op *o, const char *key, const struct fleet_bundle *b, int64_t base, int64_t cand_base,
		   bool drop_candidate, int64_t *rev)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct etcd_cmp cmp[2] = { { o->key_policy, base }, { o->key_cand, cand_base } };
	struct etcd_op ops[2];
	size_t nops = 0;
	bool ok = false;
	int r;

	if (!(text = fleet_bundle_encode(b, &len)))
		return EXIT_FAILED;
	if (planted("push-race")) /* the test build: two pushes read the same revision */
		sleep(1);
	ops[nops++] = (struct etcd_op){ .key = key, .val = text, .len = len };
	if (drop_candidate)
		ops[nops++] = (struct etcd_op){ .del = true, .key = o->key_cand };
	if ((r = etcd_txn(&o->etcd, cmp, planted("push-no-cas") ? 0 : 2, ops, nops, &ok, rev)) < 0)
		return etcd_failed(o, "the push", r);
	if (!ok) {
		fprintf(stderr,
			"nfbox fleet: the push was refused: group %s changed since revision %" PRId64
			" (another push, or a rollout under way); see nfbox fleet status and diff, then push again\n",
			o->group, base);
		return EXIT_REFUSED;
	}
	return 0;
}

static int pick_canaries(struct op *o, uint64_t want, struct fleet_bundle *b)
{
	struct node *v = NULL;
	size_t nv = 0;
	int r = read_nodes(o, &v, &nv);

	if (r < 0)
		return etcd_failed(o, "reading the nodes", r);
	for (size_t i = 0; i < nv && b->ncanaries < want; i++)
		b->canaries[b->ncanaries++] = strdup(v[i].name);
	nodes_free(v, nv);
	if (b->ncanaries < want) {
		fprintf(stderr, "nfbox fleet: --canary %llu, but only %zu nodes of group %s report\n",
			(unsigned long long)want, b->ncanaries, o->group);
		return EXIT_REFUSED;
	}
	return 0;
}

static int push_canary(struct op *o, const struct fleet_args *a, struct fleet_bundle *b, int64_t base, uint64_t wait_s)
{
	uint64_t confirm;
	int64_t crev = 0, prev = 0;
	int r, bad;

	if (parse_secs(a->confirm, 30, &confirm) < 0 || !confirm)
		return EXIT_USAGE;
	b->confirm_s = (uint32_t)confirm;
	if ((r = pick_canaries(o, a->canary, b)) != 0 || (r = swap_in(o, o->key_cand, b, base, 0, false, &crev)))
		return r;
	printf("candidate %" PRId64 " to %zu canar%s:", crev, b->ncanaries, b->ncanaries == 1 ? "y" : "ies");
	for (size_t i = 0; i < b->ncanaries; i++)
		printf(" %s", b->canaries[i]);
	printf(" (each confirms within %us)\n", b->confirm_s);
	fflush(stdout);
	bad = wait_nodes(o, b->canaries, b->ncanaries, crev, true, confirm + 15, true);
	if (bad) {
		struct etcd_op op = { .del = true, .key = o->key_cand };
		bool ok;

		etcd_txn(&o->etcd, NULL, 0, &op, 1, &ok, NULL);
		fprintf(stderr,
			"nfbox fleet: the push halted: a canary did not confirm candidate %" PRId64
			" (it rolled back by itself); the group stays at revision %" PRId64 "\n",
			crev, base);
		return EXIT_REFUSED;
	}
	for (size_t i = 0; i < b->ncanaries; i++)
		free(b->canaries[i]);
	b->ncanaries = 0;
	if ((r = swap_in(o, o->key_policy, b, base, crev, true, &prev)))
		return r;
	printf("revision %" PRId64 " to every node of group %s\n", prev, o->group);
	fflush(stdout);
	return wait_s && wait_nodes(o, NULL, 0, prev, false, wait_s, false) ? EXIT_REFUSED : 0;
}

static int fleet_push(const struct fleet_args *a, struct op *o, const char *path)
{
	struct fleet_bundle b = { 0 };
	struct policy *p = NULL;
	struct etcd_kvs cur = { 0 }, cand = { 0 };
	int64_t base, cbase, rev = 0;
	uint64_t wait_s;
	int r;

	if (parse_secs(a->wait, 30, &wait_s) < 0)
		return EXIT_USAGE;
	if (load_policy(path, &p, &b) < 0)
		return EXIT_INVALID;
	policy_free(p);
	b.by = strdup(o->conf.etcd.user ? o->conf.etcd.user : "");
	if ((r = read_key(o, o->key_policy, &cur, &base)) < 0 || (r = read_key(o, o->key_cand, &cand, &cbase)) < 0) {
		r = etcd_failed(o, "reading the group's revision", r);
		goto out;
	}
	r = EXIT_REFUSED;
	if (a->base && (int64_t)a->base != base) {
		fprintf(stderr,
			"nfbox fleet: the push was refused: group %s is at revision %" PRId64 ", not %llu (--base): "
			"see nfbox fleet diff\n",
			o->group, base, (unsigned long long)a->base);
		goto out;
	}
	if (cbase) {
		fprintf(stderr, "nfbox fleet: the push was refused: a canary rollout of group %s is under way\n",
			o->group);
		goto out;
	}
	if (a->canary)
		r = push_canary(o, a, &b, base, wait_s);
	else if (!(r = swap_in(o, o->key_policy, &b, base, 0, false, &rev))) {
		printf("revision %" PRId64 " of group %s (%.12s)\n", rev, o->group, b.fingerprint);
		fflush(stdout);
		r = wait_s && wait_nodes(o, NULL, 0, rev, false, wait_s, false) ? EXIT_REFUSED : 0;
	}
out:
	etcd_kvs_free(&cur);
	etcd_kvs_free(&cand);
	fleet_bundle_free(&b);
	return r;
}

/* ---- status ---- */

static void revision_line(const struct op *o, const struct etcd_kvs *cur, const struct fleet_bundle *b)
{
	if (!cur->n) {
		printf("group %s: no revision pushed yet\n", o->group);
		return;
	}
	printf("group %s: revision %" PRId64 " (%.12s), pushed by %s at %lld\n", o->group, cur->v[0].mod_rev,
	       b->fingerprint, b->by && *b->by ? b->by : "?", (long long)b->at);
}

static const char *sync_word(const json_t *st, const struct etcd_kvs *cur, const struct fleet_bundle *b)
{
	if (!cur->n)
		return "-";
	if (strcmp(jstr(st, "fingerprint"), b->fingerprint))
		return "DRIFT";
	return json_is_true(json_object_get(st, "local_change")) ? "LOCAL" : "in sync";
}

static int fleet_status(const struct fleet_args *a, struct op *o)
{
	struct etcd_kvs cur = { 0 };
	struct fleet_bundle b = { 0 };
	struct node *v = NULL;
	size_t nv = 0;
	char why[128];
	int r;

	if ((r = etcd_get(&o->etcd, o->key_policy, false, &cur)) < 0 || (r = read_nodes(o, &v, &nv)) < 0) {
		etcd_kvs_free(&cur);
		return etcd_failed(o, "reading the group", r);
	}
	if (cur.n && fleet_bundle_decode(cur.v[0].value, cur.v[0].vlen, &b, why, sizeof(why)) < 0)
		fprintf(stderr, "nfbox fleet: the group's revision: %s\n", why);
	if (a->json) {
		json_t *out =
			json_pack("{s:s, s:I, s:s, s:[]}", "group", o->group, "revision",
				  (json_int_t)(cur.n ? cur.v[0].mod_rev : 0), "fingerprint", b.fingerprint, "nodes");

		for (size_t i = 0; out && i < nv; i++) {
			json_object_set_new(v[i].st, "sync", json_string(sync_word(v[i].st, &cur, &b)));
			json_array_append(json_object_get(out, "nodes"), v[i].st);
		}
		json_dumpf(out, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(out);
	} else {
		revision_line(o, &cur, &b);
		printf("%-16s %-9s %-13s %-8s %-8s %-7s %s\n", "NODE", "REVISION", "FINGERPRINT", "SYNC", "ROLE",
		       "HEALTH", "LAST ERROR");
		for (size_t i = 0; i < nv; i++)
			printf("%-16s %-9lld %-13.12s %-8s %-8s %-7s %s\n", v[i].name,
			       (long long)jint(v[i].st, "revision"), jstr(v[i].st, "fingerprint"),
			       sync_word(v[i].st, &cur, &b), jstr(v[i].st, "role"), jstr(v[i].st, "health"),
			       jstr(v[i].st, "last_error"));
		if (!nv)
			printf("(no node reports)\n");
	}
	nodes_free(v, nv);
	fleet_bundle_free(&b);
	etcd_kvs_free(&cur);
	return 0;
}

/* ---- diff ---- */

static int fleet_diff(struct op *o, const char *path)
{
	char dir[] = "/tmp/nfbox-fleet-diff.XXXXXX", file[PATH_MAX + 64], why[128];
	struct etcd_kvs cur = { 0 };
	struct fleet_bundle b = { 0 }, nb = { 0 };
	struct policy *p[2] = { NULL, NULL };
	struct diags d;
	unsigned long n;
	int r;

	if (load_policy(path, &p[1], &nb) < 0)
		return EXIT_INVALID;
	if ((r = etcd_get(&o->etcd, o->key_policy, false, &cur)) < 0) {
		policy_free(p[1]);
		fleet_bundle_free(&nb);
		r = etcd_failed(o, "reading the group's revision", r);
		return r == EXIT_FAILED ? EXIT_USAGE : r; /* diff's trouble: 1 says "different" */
	}
	diags_init(&d);
	if (!cur.n) {
		printf("group %s has no revision yet: a push makes %s its first\n", o->group, path);
		r = EXIT_DIFFERENT;
	} else if (fleet_bundle_decode(cur.v[0].value, cur.v[0].vlen, &b, why, sizeof(why)) < 0 || !mkdtemp(dir) ||
		   fleet_bundle_write(&b, dir, file, sizeof(file)) < 0 || policy_load(file, &d, &p[0]) < 0) {
		fprintf(stderr, "nfbox fleet: the group's revision %" PRId64 " cannot be read back: %s\n",
			cur.v[0].mod_rev, why);
		diags_print(&d, stderr, false);
		r = EXIT_INVALID;
	} else {
		printf("against group %s's revision %" PRId64 " (push --base %" PRId64 " to push only onto it):\n",
		       o->group, cur.v[0].mod_rev, cur.v[0].mod_rev);
		n = policy_diff(p[0], p[1], stdout);
		if (!n)
			printf("no change in meaning%s\n",
			       strcmp(b.fingerprint, nb.fingerprint) ? " (the files differ)" : "");
		r = n ? EXIT_DIFFERENT : 0;
	}
	if (dir[strlen(dir) - 1] != 'X' && fleet_remove_tree(dir) < 0)
		fprintf(stderr, "nfbox fleet: %s was left behind: %s\n", dir, strerror(errno));
	diags_free(&d);
	policy_free(p[0]);
	policy_free(p[1]);
	fleet_bundle_free(&b);
	fleet_bundle_free(&nb);
	etcd_kvs_free(&cur);
	return r;
}

static void fleet_defaults(void *args)
{
	struct fleet_args *a = args;

	a->fleet = FLEET_DEFAULT_FILE;
}

static int fleet_run(void *args, int argc, char **argv)
{
	const struct fleet_args *a = args;
	struct op o;
	int r;

	if (strcmp(argv[0], "push") && strcmp(argv[0], "diff") && strcmp(argv[0], "status")) {
		fprintf(stderr, "nfbox fleet: '%s': push, diff or status\n", argv[0]);
		return EXIT_USAGE;
	}
	if (strcmp(argv[0], "status") ? argc != 2 : argc != 1) {
		fprintf(stderr, "nfbox fleet %s: %s\n", argv[0],
			strcmp(argv[0], "status") ? "give one policy file" : "takes no policy file");
		return EXIT_USAGE;
	}
	if ((r = op_open(a, &o)) != 0)
		return r;
	if (!strcmp(argv[0], "push"))
		r = fleet_push(a, &o, argv[1]);
	else if (!strcmp(argv[0], "diff"))
		r = fleet_diff(&o, argv[1]);
	else
		r = fleet_status(a, &o);
	op_close(&o);
	return r;
}

const struct cli_cmd cli_cmd_fleet = {
	.name = "fleet",
	.summary = "a fleet in etcd: push a group's policy (with canaries), its nodes' status, what a push changes",
	.operands = "push|diff POLICY | status",
	.min_operands = 1,
	.max_operands = 2,
	.options_anywhere = true,
	.opts = fleet_opts,
	.more_help = "exit status: 0 done (diff: no change); 1 refused, halted, or a node did not take it (diff: a "
		     "change); 2 usage (diff: also any other trouble); 3 the policy or the fleet file cannot be read "
		     "or is invalid; 4 etcd not reached or without quorum. See nfbox(8) and nfbox-fleet(5).\n",
	.args_size = sizeof(struct fleet_args),
	.defaults = fleet_defaults,
	.run = fleet_run,
};
