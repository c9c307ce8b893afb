/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The command line: every subcommand is a struct cli_cmd with a table of
 * its options; cli.c parses argv against the table into the command's own
 * argument struct (by offset), and writes the usage text from the same
 * table, so an option is declared once.
 *
 * To add a subcommand: write its argument struct, an options table with
 * CLI_* entries, and `const struct cli_cmd cli_cmd_NAME`, then list it in
 * main.c and document it in packaging/man/nfbox.8 (a test checks that every
 * option is there).
 */
#ifndef NFBOX_CLI_H
#define NFBOX_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses, the same for every command (nfbox(8), EXIT STATUS). */
#define EXIT_FAILED    1 /* what was asked did not happen: refused, or failed at run time */
#define EXIT_DIFFERENT 1 /* diff, fleet diff: the policies differ (as diff(1)) */
#define EXIT_USAGE \
	2		   /* an unknown command or option, a missing or malformed argument;
			    * diff, fleet diff: also what others exit EXIT_FAILED for (diff(1)'s trouble) */
#define EXIT_INVALID	 3 /* a policy (or fleet file) cannot be read, is invalid or exceeds a limit */
#define EXIT_UNREACHABLE 4 /* no daemon answers on the control socket; etcd not reached or without quorum */
/* `nfbox run` exits DAEMON_EXIT_POLICY (78, daemon/daemon.h) where others exit EXIT_INVALID. */

enum cli_opt_type {
	CLI_FLAG,    /* bool, set to true */
	CLI_STRING,  /* const char *, the argument as given */
	CLI_UINT,    /* uint64_t, decimal, within min..max */
	CLI_SIZE,    /* uint64_t bytes: 4096, 64KiB, 1.5GiB; within min..max */
	CLI_SECONDS, /* double, more than 0 */
	CLI_CHOICE,  /* int, index into choices */
};

struct cli_opt {
	const char *name; /* --name */
	char short_name;  /* -x, or 0 */
	enum cli_opt_type type;
	size_t offset;	     /* of the value in the command's argument struct */
	const char *metavar; /* shown as --name METAVAR */
	const char *help;
	uint64_t min, max;	    /* CLI_UINT, CLI_SIZE */
	const char *const *choices; /* CLI_CHOICE: NULL-terminated */
	bool required;		    /* the command cannot run without it */
};

#define CLI_OPT_FLAG(n, s, T, field, help)	 { n, s, CLI_FLAG, offsetof(T, field), NULL, help, 0, 0, NULL, false }
#define CLI_OPT_STRING(n, s, T, field, mv, help) { n, s, CLI_STRING, offsetof(T, field), mv, help, 0, 0, NULL, false }
#define CLI_OPT_UINT(n, T, field, mv, lo, hi, help) \
	{ n, 0, CLI_UINT, offsetof(T, field), mv, help, lo, hi, NULL, false }
#define CLI_OPT_SIZE(n, T, field, mv, lo, hi, help) \
	{ n, 0, CLI_SIZE, offsetof(T, field), mv, help, lo, hi, NULL, false }
#define CLI_OPT_SECONDS(n, T, field, mv, help)	  { n, 0, CLI_SECONDS, offsetof(T, field), mv, help, 0, 0, NULL, false }
#define CLI_OPT_CHOICE(n, T, field, mv, ch, help) { n, 0, CLI_CHOICE, offsetof(T, field), mv, help, 0, 0, ch, false }
#define CLI_OPT_REQUIRED_STRING(n, s, T, field, mv, help) \
	{ n, s, CLI_STRING, offsetof(T, field), mv, help, 0, 0, NULL, true }
#define CLI_OPT_END { NULL, 0, CLI_FLAG, 0, NULL, NULL, 0, 0, NULL, false }

struct cli_cmd {
	const char *name;
	const char *summary;		     /* one line for `nfbox --help` */
	const char *operands;		     /* "FILE...", "FILE", or NULL: none */
	unsigned min_operands, max_operands; /* max 0: no limit (with operands) */
	bool options_anywhere;		     /* options may follow operands (else they end the options) */
	const struct cli_opt *opts;	     /* ends with CLI_OPT_END */
	const char *more_help;		     /* printed after the options, or NULL */
	size_t args_size;		     /* the argument struct, zeroed before parsing */
	void (*defaults)(void *args);	     /* values before parsing, or NULL */
	/* Runs with the parsed arguments and the operands; returns the exit status. */
	int (*run)(void *args, int argc, char **argv);
};

/* Parse argv (argv[0] is the command name) into args. Returns 0 with
 * *first_operand set, 1 after --help was printed, or EXIT_USAGE after a
 * message on stderr that names the option and what it takes. */
int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *args, int *first_operand);
/* Parse and run. */
int cli_run(const struct cli_cmd *cmd, int argc, char **argv);

void cli_usage(const struct cli_cmd *cmd, FILE *f);
/* "nfbox NAME [--opt ARG]... OPERANDS" */
void cli_synopsis(const struct cli_cmd *cmd, FILE *f);

struct ctl_request;
struct diags;
/* One request to the daemon on socket (NULL: this network namespace's,
 * its path in sock, PATH_MAX bytes), with fd passed if not -1; the answer
 * to out, the daemon's error text to err. What ctl_call() returns:
 * 0, CTL_ERROR, CTL_INVALID, or -errno explained in d. */
int cli_ctl(const char *socket, struct ctl_request *req, int fd, FILE *out, FILE *err, struct diags *d, char *sock);
/* The exit status for what cli_ctl returned. */
int cli_ctl_exit(int r);

/* Print diagnostics in color when f is a terminal and NO_COLOR is unset. */
bool cli_color(FILE *f);

extern const struct cli_cmd cli_cmd_validate, cli_cmd_plan, cli_cmd_diff, cli_cmd_run, cli_cmd_status, cli_cmd_stats,
	cli_cmd_reload, cli_cmd_confirm, cli_cmd_metrics, cli_cmd_log, cli_cmd_stop, cli_cmd_set, cli_cmd_capture,
	cli_cmd_fleet;

#endif
