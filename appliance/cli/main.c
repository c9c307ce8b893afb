/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* nfbox: a thin front; each subcommand is a struct cli_cmd (cli.h). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_cmd *const commands[] = {
	&cli_cmd_validate, &cli_cmd_plan,    &cli_cmd_diff,    &cli_cmd_run,	 &cli_cmd_status,
	&cli_cmd_stats,	   &cli_cmd_metrics, &cli_cmd_reload,  &cli_cmd_confirm, &cli_cmd_log,
	&cli_cmd_stop,	   &cli_cmd_set,     &cli_cmd_capture, &cli_cmd_fleet,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: nfbox COMMAND [OPTIONS]\n\n"
		   "nfbox is a firewall appliance: a YAML policy enforced by netfilter BPF\n"
		   "programs on reassembled packets.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		fputs("  ", f);
		cli_synopsis(commands[i], f);
		fprintf(f, "\n      %s\n", commands[i]->summary);
	}
	fprintf(f, "\n  nfbox COMMAND --help   that command's options\n"
		   "  nfbox --help | --version\n\n"
		   "exit status: 0 done (diff: no change); 1 failed (diff: a change); 2 usage; 3 a policy\n"
		   "cannot be read or is invalid (run: 78); 4 no daemon answers (fleet: etcd).\n\n"
		   "See nfbox(8) and nfbox-policy(5).\n");
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
		if (!strcmp(argv[1], commands[i]->name))
			return cli_run(commands[i], argc - 1, argv + 1);
	fprintf(stderr, "nfbox: unknown command '%s'; see 'nfbox --help'\n", argv[1]);
	return EXIT_USAGE;
}
