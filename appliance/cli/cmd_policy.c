/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox validate` and `nfbox plan`: the policy tools that need no privileges. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "control/client.h"
#include "base/cleanup.h"
#include "base/json.h"

#include <jansson.h>
#include "backend/bpf/compile/plan.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/print.h"
#include "policy/diff/diff.h"
#include "policy/policy.h"
#include "system/netns.h"

static void hooks_text(const struct policy *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		if (p->hooks[h].present)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 policy_hook_name((enum policy_hook)h));
}

static void summary(const char *path, const struct policy *p, size_t warnings)
{
	char hooks[64];

	hooks_text(p, hooks, sizeof(hooks));
	printf("%s: valid: %u rules on %s, %u sets (%llu prefixes), %u services, %u nat, %u capture", path, p->nrules,
	       hooks[0] ? hooks : "no hooks", p->nsets, (unsigned long long)p->nprefixes, p->nservices, p->nnat,
	       p->ncaptures);
	if (warnings)
		printf(", %zu warning%s", warnings, warnings == 1 ? "" : "s");
	putchar('\n');
}

struct validate_args {
	bool strict, quiet, offline, json;
	struct json j; /* --json: the document being written */
};

static const struct cli_opt validate_opts[] = {
	CLI_OPT_FLAG("strict", 's', struct validate_args, strict, "warnings fail validation too"),
	CLI_OPT_FLAG("quiet", 'q', struct validate_args, quiet, "print nothing when valid"),
	CLI_OPT_FLAG("offline", 0, struct validate_args, offline,
		     "do not compare with this machine (its interfaces): for a policy written for another one"),
	CLI_OPT_FLAG("json", 'j', struct validate_args, json,
		     "one JSON document on stdout: each file's validity, counts and diagnostics (place, severity, "
		     "message, fix)"),
	CLI_OPT_END,
};

/* The policy's table inet nfbox, built and thrown away: 0 or its errors in d. */
static int nft_check(const struct policy *p, struct diags *d)
{
	struct nft_build_opts o = { .filter = p->opt.backend == POLICY_BACKEND_NFTABLES };
	struct nfr_table t;
	int r;

	nfr_init(&t);
	r = nft_build(p, &o, &t, d);
	nfr_free(&t);
	return r;
}

/* What the summary line says, for --json. */
static void summary_json(struct json *j, const struct policy *p)
{
	json_key(j, "summary");
	json_object_begin(j);
	json_kv_u64(j, "rules", p->nrules);
	json_key(j, "hooks");
	json_array_begin(j);
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		if (p->hooks[h].present)
			json_str(j, policy_hook_name((enum policy_hook)h));
	json_array_end(j);
	json_kv_u64(j, "sets", p->nsets);
	json_kv_u64(j, "prefixes", p->nprefixes);
	json_kv_u64(j, "services", p->nservices);
	json_kv_u64(j, "nat", p->nnat);
	json_kv_u64(j, "captures", p->ncaptures);
	json_object_end(j);
}

/* One file of validate --json: {"file", "valid", "errors", "warnings",
 * "diagnostics": [...], "dropped", "summary"} */
static void file_json(struct json *j, const char *path, bool ok, const struct policy *p, const struct diags *d)
{
	json_object_begin(j);
	json_kv_str(j, "file", path);
	json_kv_bool(j, "valid", ok);
	json_kv_u64(j, "errors", d->errors);
	json_kv_u64(j, "warnings", d->warnings);
	json_key(j, "diagnostics");
	diags_json(d, j);
	json_kv_u64(j, "dropped", d->dropped);
	if (ok)
		summary_json(j, p);
	json_object_end(j);
}

_Static_assert(NETNS_FORWARDS_IPV4 == POLICY_FAM_IPV4 && NETNS_FORWARDS_IPV6 == POLICY_FAM_IPV6,
	       "netns_forwarding() answers in the policy's families");

static bool validate_one(const char *path, struct validate_args *a)
{
	struct plan *pl = NULL;
	struct policy *p = NULL;
	struct diags d;
	bool ok;
	int r;

	diags_init(&d);
	r = policy_load_files(path,
			      &(struct policy_files){ .policy_fd = -1,
						      .iface_exists = a->offline ? NULL : netns_has_iface,
						      .forwarding = a->offline ? NULL : netns_forwarding },
			      &d, &p);
	/* What validate accepts, run loads: the compiler and the encoder too,
	 * and what goes to nftables (NAT, the conntrack anchor, the nftables
	 * backend's filter). */
	if (r == 0 && ((r = plan_make(p, &pl, NULL, &d)) < 0 || (r = nft_check(p, &d)) < 0))
		r = -EINVAL;
	plan_free(pl);
	ok = r == 0 && !(a->strict && d.warnings);
	if (a->json) {
		file_json(&a->j, path, ok, p, &d);
		policy_free(p);
		diags_free(&d);
		return ok;
	}
	diags_print(&d, stderr, cli_color(stderr));
	if (!ok)
		fprintf(stderr, "%s: invalid: %zu error%s, %zu warning%s%s\n", path, d.errors, d.errors == 1 ? "" : "s",
			d.warnings, d.warnings == 1 ? "" : "s", r == 0 ? " (--strict)" : "");
	else if (!a->quiet)
		summary(path, p, d.warnings);
	policy_free(p);
	diags_free(&d);
	return ok;
}

static int run_validate(void *args, int argc, char **argv)
{
	struct validate_args *a = args;
	bool failed = false;

	json_init(&a->j, stdout);
	if (a->json) {
		json_object_begin(&a->j);
		json_key(&a->j, "files");
		json_array_begin(&a->j);
	}
	for (int i = 0; i < argc; i++)
		failed |= !validate_one(argv[i], a);
	if (a->json) {
		json_array_end(&a->j);
		json_kv_bool(&a->j, "valid", !failed);
		json_object_end(&a->j);
		putchar('\n');
	}
	return failed ? EXIT_INVALID : 0;
}

const struct cli_cmd cli_cmd_validate = {
	.name = "validate",
	.summary = "check policy files; every mistake as FILE:LINE:COL",
	.operands = "FILE...",
	.min_operands = 1,
	.opts = validate_opts,
	.args_size = sizeof(struct validate_args),
	.run = run_validate,
};

struct plan_args {
	bool json, nft;
};

static const struct cli_opt plan_opts[] = {
	CLI_OPT_FLAG("json", 'j', struct plan_args, json, "the plan as JSON"),
	CLI_OPT_FLAG("nft", 'n', struct plan_args, nft,
		     "table inet nfbox as it would be loaded, in nft syntax (check it with nft -c -f)"),
	CLI_OPT_END,
};

/* What nftables gets for this policy (NAT, the conntrack anchor and, with
 * backend: nftables, the filter), counters at 0. */
static int print_nft(const struct policy *p, struct diags *d)
{
	struct nft_build_opts o = { .filter = p->opt.backend == POLICY_BACKEND_NFTABLES };
	struct nfr_table t;
	int r;

	nfr_init(&t);
	if ((r = nft_build(p, &o, &t, d)) < 0) {
		nfr_free(&t);
		return r;
	}
	printf("# nfbox plan --nft of %s: the %s\n", p->src->name,
	       o.filter ? "whole policy (backend: nftables)"
			: "NAT, conntrack and SYN proxy (the filter is the BPF backend's)");
	if (t.nchains)
		nfr_print(&t, stdout);
	else
		printf("# nothing: this policy needs no table in nftables\n");
	nfr_free(&t);
	return 0;
}

static int run_plan(void *args, int argc, char **argv)
{
	const struct plan_args *a = args;
	struct policy *p = NULL;
	struct plan *pl = NULL;
	struct diags d;
	int r;

	diags_init(&d);
	r = policy_load(argv[0], &d, &p);
	if (r == 0)
		r = plan_make(p, &pl, NULL, &d);
	if (r == 0 && a->nft)
		r = print_nft(p, &d);
	diags_print(&d, stderr, cli_color(stderr));
	if (r < 0 || a->nft)
		;
	else if (a->json)
		plan_print_json(pl, stdout);
	else
		plan_print(pl, stdout);
	plan_free(pl);
	policy_free(p);
	diags_free(&d);
	return r < 0 ? EXIT_INVALID : 0;
}

const struct cli_cmd cli_cmd_plan = {
	.name = "plan",
	.summary = "print the compiled plan of a policy",
	.operands = "FILE",
	.min_operands = 1,
	.max_operands = 1,
	.opts = plan_opts,
	.args_size = sizeof(struct plan_args),
	.run = run_plan,
};

struct diff_args {
	const char *socket;
	bool json;
};

static const struct cli_opt diff_opts[] = {
	CLI_OPT_FLAG("json", 'j', struct diff_args, json,
		     "one JSON document on stdout: the changes by name, the warnings, the policies' diagnostics"),
	CLI_OPT_STRING(
		"socket", 's', struct diff_args, socket, "PATH",
		"with one file or none: the running daemon's control socket (default: that of this network namespace)"),
	CLI_OPT_END,
};

/* The changes a diff --json document lists; -1 if it is not one. */
static long json_changes(const char *text)
{
	json_t *doc = json_loads(text, 0, NULL), *v = json_object_get(doc, "changes");
	long n = json_is_array(v) ? (long)json_array_size(v) : -1;

	json_decref(doc);
	return n;
}

/* `nfbox diff [FILE]`: FILE (or the daemon's configured policy) against the
 * policy in force, compared by the daemon, which reads FILE as a reload
 * would (this command opens it and passes it). */
static int diff_running(const struct diff_args *a, const char *file)
{
	struct ctl_request req = { .verb = CTL_DIFF, .json = a->json };
	_cleanup_free_ char *abs = NULL, *out = NULL, *err = NULL;
	_cleanup_close_ int fd = -1;
	char sock[PATH_MAX];
	size_t len = 0, elen = 0;
	struct diags d;
	FILE *f, *ef = NULL;
	long n = 0;
	int r;

	if (file && (!(abs = realpath(file, NULL)) || (fd = open(abs, O_RDONLY | O_CLOEXEC)) < 0)) {
		fprintf(stderr, "nfbox diff: %s: %s\n", file, strerror(errno));
		return EXIT_INVALID; /* the policy file cannot be read */
	}
	req.policy = abs;
	diags_init(&d);
	if (!(f = open_memstream(&out, &len)) || !(ef = open_memstream(&err, &elen))) {
		r = diag_errno(&d, -ENOMEM, "nfbox diff");
	} else {
		r = cli_ctl(a->socket, &req, fd, f, ef, &d, sock);
	}
	if (f)
		fclose(f);
	if (ef)
		fclose(ef);
	if (r < 0) {
		fputs("nfbox: ", stderr);
		diags_print(&d, stderr, false);
	}
	diags_free(&d);
	/* --json: the document, also of an invalid policy, on stdout */
	fwrite(a->json && r == CTL_INVALID ? err : out, 1, a->json && r == CTL_INVALID ? elen : len, stdout);
	if (!(a->json && r == CTL_INVALID) && err)
		fwrite(err, 1, elen, stderr);
	if (r != 0) /* the daemon's error is diff's trouble: 1 says "different" */
		return (r = cli_ctl_exit(r)) == EXIT_FAILED ? EXIT_USAGE : r;
	if (a->json && (n = json_changes(out)) < 0) {
		fputs("nfbox diff: the daemon's answer is not a diff --json document\n", stderr);
		return EXIT_USAGE;
	}
	return (a->json ? n : (long)len) ? EXIT_DIFFERENT : 0;
}

/* `nfbox diff OLD NEW`: what changes in meaning, by name. Exit status as
 * diff(1): 0 the same, 1 different; an invalid policy EXIT_INVALID. */
static int run_diff(void *args, int argc, char **argv)
{
	const struct diff_args *a = args;
	struct policy *p[2] = { NULL, NULL };
	struct diags d;
	unsigned long n = 0;
	int r = 0;

	if (argc < 2)
		return diff_running(args, argc ? argv[0] : NULL);
	diags_init(&d);
	for (int i = 0; i < 2 && r == 0; i++)
		r = policy_load(argv[i], &d, &p[i]);
	if (a->json) /* the policies' warnings too: a reader may pick */
		n = policy_diff_doc(r == 0 ? p[0] : NULL, r == 0 ? p[1] : NULL, &d, NULL, NULL, stdout);
	else if (r < 0) /* warnings are validate's business; errors stop the diff */
		diags_print(&d, stderr, cli_color(stderr));
	else
		n = policy_diff(p[0], p[1], stdout);
	policy_free(p[0]);
	policy_free(p[1]);
	diags_free(&d);
	if (r < 0)
		return EXIT_INVALID;
	return n ? EXIT_DIFFERENT : 0;
}

const struct cli_cmd cli_cmd_diff = {
	.name = "diff",
	.summary = "what changes in meaning from one policy to another (or to the one in force), by name",
	.operands = "[[OLD] NEW]",
	.min_operands = 0,
	.max_operands = 2,
	.opts = diff_opts,
	.args_size = sizeof(struct diff_args),
	.run = run_diff,
};
