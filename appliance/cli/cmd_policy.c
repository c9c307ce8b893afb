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
	bool strict, quiet, offline;
};

static const struct cli_opt validate_opts[] = {
	CLI_OPT_FLAG("strict", 's', struct validate_args, strict, "warnings fail validation too"),
	CLI_OPT_FLAG("quiet", 'q', struct validate_args, quiet, "print nothing when valid"),
	CLI_OPT_FLAG("offline", 0, struct validate_args, offline,
		     "do not compare with this machine (its interfaces): for a policy written for another one"),
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

static bool validate_one(const char *path, const struct validate_args *a)
{
	struct plan *pl = NULL;
	struct policy *p = NULL;
	struct diags d;
	bool ok;
	int r;

	diags_init(&d);
	r = policy_load_files(
		path, &(struct policy_files){ .policy_fd = -1, .iface_exists = a->offline ? NULL : netns_has_iface },
		&d, &p);
	/* What validate accepts, run loads: the compiler and the encoder too,
	 * and what goes to nftables (NAT, the conntrack anchor, the nftables
	 * backend's filter). */
	if (r == 0 && ((r = plan_make(p, &pl, NULL, &d)) < 0 || (r = nft_check(p, &d)) < 0))
		r = -EINVAL;
	plan_free(pl);
	diags_print(&d, stderr, cli_color(stderr));
	ok = r == 0 && !(a->strict && d.warnings);
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
	bool failed = false;

	for (int i = 0; i < argc; i++)
		failed |= !validate_one(argv[i], args);
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
};

static const struct cli_opt diff_opts[] = {
	CLI_OPT_STRING(
		"socket", 's', struct diff_args, socket, "PATH",
		"with one file or none: the running daemon's control socket (default: that of this network namespace)"),
	CLI_OPT_END,
};

/* `nfbox diff [FILE]`: FILE (or the daemon's configured policy) against the
 * policy in force, compared by the daemon, which reads FILE as a reload
 * would (this command opens it and passes it). */
static int diff_running(const struct diff_args *a, const char *file)
{
	struct ctl_request req = { .verb = CTL_DIFF };
	_cleanup_free_ char *abs = NULL, *out = NULL;
	_cleanup_close_ int fd = -1;
	char sock[PATH_MAX];
	size_t len = 0;
	struct diags d;
	FILE *f;
	int r;

	if (file && (!(abs = realpath(file, NULL)) || (fd = open(abs, O_RDONLY | O_CLOEXEC)) < 0)) {
		fprintf(stderr, "nfbox diff: %s: %s\n", file, strerror(errno));
		return EXIT_INVALID; /* the policy file cannot be read */
	}
	req.policy = abs;
	diags_init(&d);
	if (!(f = open_memstream(&out, &len))) {
		r = diag_errno(&d, -ENOMEM, "nfbox diff");
	} else {
		r = cli_ctl(a->socket, &req, fd, f, &d, sock);
		fclose(f);
	}
	if (r < 0) {
		fputs("nfbox: ", stderr);
		diags_print(&d, stderr, false);
	}
	diags_free(&d);
	if (r != 0) /* the daemon's error is diff's trouble: 1 says "different" */
		return (r = cli_ctl_exit(r)) == EXIT_FAILED ? EXIT_USAGE : r;
	fwrite(out, 1, len, stdout);
	return len ? EXIT_DIFFERENT : 0;
}

/* `nfbox diff OLD NEW`: what changes in meaning, by name. Exit status as
 * diff(1): 0 the same, 1 different; an invalid policy EXIT_INVALID. */
static int run_diff(void *args, int argc, char **argv)
{
	struct policy *p[2] = { NULL, NULL };
	struct diags d;
	unsigned long n = 0;
	int r = 0;

	if (argc < 2)
		return diff_running(args, argc ? argv[0] : NULL);
	diags_init(&d);
	for (int i = 0; i < 2 && r == 0; i++)
		r = policy_load(argv[i], &d, &p[i]);
	if (r < 0) /* warnings are validate's business; errors stop the diff */
		diags_print(&d, stderr, cli_color(stderr));
	if (r == 0)
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
