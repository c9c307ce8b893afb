/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox validate` and `nfbox plan`: the policy tools that need no privileges. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/compile/plan.h"
#include "policy/policy.h"

bool cli_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fileno(f)) && (!nc || !*nc);
}

static uint32_t count_hooks(const struct policy *p, char *buf, size_t len)
{
	uint32_t n = 0;
	size_t used = 0;

	buf[0] = '\0';
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		if (!p->hooks[h].present)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", n ? ", " : "",
					 policy_hook_name((enum policy_hook)h));
		n++;
	}
	return n;
}

static void summary(const char *path, const struct policy *p, size_t warnings)
{
	char hooks[64];

	count_hooks(p, hooks, sizeof(hooks));
	printf("%s: valid: %u rules on %s, %u sets (%llu prefixes), %u services, %u nat, %u capture",
	       path, p->nrules, hooks[0] ? hooks : "no hooks", p->nsets, (unsigned long long)p->nprefixes,
	       p->nservices, p->nnat, p->ncaptures);
	if (warnings)
		printf(", %zu warning%s", warnings, warnings == 1 ? "" : "s");
	putchar('\n');
}

int cmd_validate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "strict", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool strict = false, quiet = false, failed = false;
	int c;

	while ((c = getopt_long(argc, argv, "sqh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			strict = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			printf("usage: nfbox validate [--strict] [--quiet] FILE...\n"
			       "  --strict  warnings fail validation too\n"
			       "  --quiet   print nothing when valid\n");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "nfbox validate: no policy file given\n");
		return EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		struct policy *p = NULL;
		struct diags d;
		int r;

		diags_init(&d);
		r = policy_load(argv[i], &d, &p);
		diags_print(&d, stderr, cli_color(stderr));
		if (r < 0 || (strict && d.warnings)) {
			fprintf(stderr, "%s: invalid: %zu error%s, %zu warning%s%s\n", argv[i], d.errors,
				d.errors == 1 ? "" : "s", d.warnings, d.warnings == 1 ? "" : "s",
				r == 0 ? " (--strict)" : "");
			failed = true;
		} else if (!quiet) {
			summary(argv[i], p, d.warnings);
		}
		policy_free(p);
		diags_free(&d);
	}
	return failed ? 1 : 0;
}

int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct policy *p = NULL;
	struct plan *pl = NULL;
	bool json = false;
	struct diags d;
	int c, r;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			printf("usage: nfbox plan [--json] FILE\n");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "nfbox plan: give exactly one policy file\n");
		return EXIT_USAGE;
	}
	diags_init(&d);
	r = policy_load(argv[optind], &d, &p);
	diags_print(&d, stderr, cli_color(stderr));
	if (r < 0) {
		diags_free(&d);
		return 1;
	}
	r = plan_compile(p, &pl);
	if (r < 0) {
		fprintf(stderr, "nfbox plan: %s: cannot compile: %s\n", argv[optind], strerror(-r));
		policy_free(p);
		diags_free(&d);
		return 1;
	}
	if (json)
		plan_print_json(pl, stdout);
	else
		plan_print(pl, stdout);
	plan_free(pl);
	policy_free(p);
	diags_free(&d); /* last: the policy points into its sources */
	return 0;
}
