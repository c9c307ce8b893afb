/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* nfbox: a thin front; each subcommand lives in its own module. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage;
	const char *help;
};

static const struct command commands[] = {
	{ "validate", cmd_validate, "validate [--strict] [--quiet] FILE...",
	  "check policy files; every mistake as FILE:LINE:COL" },
	{ "plan", cmd_plan, "plan [--json] FILE", "print the compiled plan of a policy" },
	{ "run", cmd_run, "run [--policy FILE] [--socket PATH] [--pin-dir DIR] [--log FILE|-]",
	  "enforce a policy (root); SIGHUP reloads, SIGTERM detaches" },
	{ "status", cmd_status, "status [--json] [--socket PATH]", "what the running daemon enforces" },
	{ "stats", cmd_stats, "stats [--json] [--socket PATH]", "per-rule packets and bytes, defaults, drops" },
	{ "reload", cmd_reload, "reload [--policy FILE] [--socket PATH]",
	  "load a new policy atomically; a bad one changes nothing" },
	{ "log", cmd_log, "log [--socket PATH]", "follow verdict events as JSON lines" },
	{ "capture", cmd_capture,
	  "capture --interface IF --file FILE [--match EXPR] [--count N] [--duration S] [--mirror-from IF2] ...",
	  "ad-hoc AF_XDP capture (jumbo frames whole) to pcapng (root)" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: nfbox COMMAND [OPTIONS]\n\n"
		   "nfbox is a firewall appliance: a YAML policy enforced by netfilter BPF\n"
		   "programs on reassembled packets.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  nfbox %s\n      %s\n", commands[i].usage, commands[i].help);
	fprintf(f, "\n  nfbox --help | --version\n\nSee nfbox(8) and nfbox-policy(5).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("nfbox %s\n", NFBOX_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "nfbox: unknown command '%s'; see 'nfbox --help'\n", argv[1]);
	return EXIT_USAGE;
}
