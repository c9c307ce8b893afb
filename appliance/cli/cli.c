/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Options by table: parsing argv and writing the usage text. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "policy/syntax/parse.h"

bool cli_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");

	return isatty(fileno(f)) && (!nc || !*nc);
}

static size_t count_opts(const struct cli_opt *o)
{
	size_t n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

static int bad_value(const struct cli_cmd *cmd, const struct cli_opt *o, const char *val, const char *want)
{
	fprintf(stderr, "nfbox %s: --%s '%s': %s\n", cmd->name, o->name, val, want);
	return EXIT_USAGE;
}

static void choices_text(const struct cli_opt *o, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; o->choices[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "one of ", o->choices[i]);
}

static int set_number(const struct cli_cmd *cmd, const struct cli_opt *o, const char *val, void *field)
{
	const char *why = NULL;
	uint64_t v;
	char want[96];
	int r;

	r = o->type == CLI_SIZE ? parse_size(val, &v, &why) : parse_uint(val, UINT64_MAX, &v, &why);
	if (r == 0 && (v < o->min || v > o->max)) {
		r = -ERANGE;
		why = NULL;
	}
	if (r < 0) {
		if (why && o->type == CLI_SIZE)
			return bad_value(cmd, o, val, why);
		if (o->max == UINT64_MAX)
			snprintf(want, sizeof(want), "%s, at least %llu",
				 o->type == CLI_SIZE ? "a size in bytes" : "a number", (unsigned long long)o->min);
		else
			snprintf(want, sizeof(want), "%s %llu..%llu",
				 o->type == CLI_SIZE ? "a size in bytes," : "a number", (unsigned long long)o->min,
				 (unsigned long long)o->max);
		return bad_value(cmd, o, val, want);
	}
	*(uint64_t *)field = v;
	return 0;
}

static int set_value(const struct cli_cmd *cmd, const struct cli_opt *o, const char *val, void *args)
{
	void *field = (char *)args + o->offset;
	char want[256], *end;
	double secs;

	switch (o->type) {
	case CLI_FLAG:
		*(bool *)field = true;
		return 0;
	case CLI_STRING:
		*(const char **)field = val;
		return 0;
	case CLI_UINT:
	case CLI_SIZE:
		return set_number(cmd, o, val, field);
	case CLI_SECONDS:
		errno = 0;
		secs = strtod(val, &end);
		if (errno || end == val || *end || !(secs > 0) || !isfinite(secs))
			return bad_value(cmd, o, val, "seconds, more than 0");
		*(double *)field = secs;
		return 0;
	case CLI_CHOICE:
		for (int i = 0; o->choices[i]; i++)
			if (!strcmp(val, o->choices[i])) {
				*(int *)field = i;
				return 0;
			}
		choices_text(o, want, sizeof(want));
		return bad_value(cmd, o, val, want);
	}
	return EXIT_USAGE;
}

/* getopt_long's tables from ours: long options return their index + 256,
 * so short and long forms map to the same entry. */
static int build_getopt(const struct cli_opt *opts, size_t n, struct option *lo, char *shorts, bool anywhere)
{
	size_t s = 0;

	if (!anywhere)
		shorts[s++] = '+'; /* stop at the first operand */
	shorts[s++] = ':';	   /* a missing argument is ':' */
	shorts[s++] = 'h';
	for (size_t i = 0; i < n; i++) {
		bool arg = opts[i].type != CLI_FLAG;

		lo[i] = (struct option){ opts[i].name, arg ? required_argument : no_argument, NULL, (int)(256 + i) };
		if (opts[i].short_name) {
			shorts[s++] = opts[i].short_name;
			if (arg)
				shorts[s++] = ':';
		}
	}
	lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n + 1] = (struct option){ 0 };
	shorts[s] = '\0';
	return 0;
}

static int opt_index(const struct cli_opt *opts, size_t n, int c)
{
	if (c >= 256 && (size_t)(c - 256) < n)
		return c - 256;
	for (size_t i = 0; i < n; i++)
		if (opts[i].short_name && opts[i].short_name == c)
			return (int)i;
	return -1;
}

static int check_required(const struct cli_cmd *cmd, const void *args)
{
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		if (o->required && !*(const char *const *)((const char *)args + o->offset)) {
			fprintf(stderr, "nfbox %s: --%s is required; see 'nfbox %s --help'\n", cmd->name, o->name,
				cmd->name);
			return EXIT_USAGE;
		}
	return 0;
}

static int check_operands(const struct cli_cmd *cmd, int argc, int first)
{
	unsigned have = (unsigned)(argc - first);

	if (!cmd->operands && have) {
		fprintf(stderr, "nfbox %s: unexpected argument; see 'nfbox %s --help'\n", cmd->name, cmd->name);
		return EXIT_USAGE;
	}
	if (cmd->operands && (have < cmd->min_operands || (cmd->max_operands && have > cmd->max_operands))) {
		fprintf(stderr, "nfbox %s: expects %s; see 'nfbox %s --help'\n", cmd->name, cmd->operands, cmd->name);
		return EXIT_USAGE;
	}
	return 0;
}

int cli_parse(const struct cli_cmd *cmd, int argc, char **argv, void *args, int *first_operand)
{
	size_t n = count_opts(cmd->opts);
	_cleanup_free_ struct option *lo = calloc(n + 2, sizeof(*lo));
	_cleanup_free_ char *shorts = calloc(2 * n + 4, 1);
	int c, r;

	if (!lo || !shorts)
		return EXIT_USAGE;
	build_getopt(cmd->opts, n, lo, shorts, cmd->options_anywhere);
	optind = 0; /* glibc: start afresh (cli_parse may run more than once) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		int i = opt_index(cmd->opts, n, c);

		if (c == 'h') {
			cli_usage(cmd, stdout);
			return 1;
		}
		if (c == ':' || c == '?' || i < 0) {
			fprintf(stderr, "nfbox %s: %s '%s'; see 'nfbox %s --help'\n", cmd->name,
				c == ':' ? "missing argument for" : "unknown option", argv[optind - 1], cmd->name);
			return EXIT_USAGE;
		}
		if ((r = set_value(cmd, &cmd->opts[i], optarg, args)) != 0)
			return r;
	}
	if ((r = check_required(cmd, args)) != 0 || (r = check_operands(cmd, argc, optind)) != 0)
		return r;
	*first_operand = optind;
	return 0;
}

int cli_run(const struct cli_cmd *cmd, int argc, char **argv)
{
	_cleanup_free_ void *args = calloc(1, cmd->args_size ? cmd->args_size : 1);
	int first, r;

	if (!args)
		return 1;
	if (cmd->defaults)
		cmd->defaults(args);
	r = cli_parse(cmd, argc, argv, args, &first);
	if (r)
		return r == 1 ? 0 : r;
	return cmd->run(args, argc - first, argv + first);
}

static void opt_synopsis(const struct cli_opt *o, FILE *f)
{
	fprintf(f, " %s--%s%s%s%s", o->required ? "" : "[", o->name, o->metavar ? " " : "",
		o->metavar ? o->metavar : "", o->required ? "" : "]");
}

void cli_synopsis(const struct cli_cmd *cmd, FILE *f)
{
	fprintf(f, "nfbox %s", cmd->name);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		opt_synopsis(o, f);
	if (cmd->operands)
		fprintf(f, " %s", cmd->operands);
}

void cli_usage(const struct cli_cmd *cmd, FILE *f)
{
	fputs("usage: ", f);
	cli_synopsis(cmd, f);
	fprintf(f, "\n%s\n", cmd->summary);
	if (cmd->opts && cmd->opts->name)
		fputs("\noptions:\n", f);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		char head[64], shortform[8] = "    ", choices[256] = "";

		if (o->short_name)
			snprintf(shortform, sizeof(shortform), "-%c, ", o->short_name);
		snprintf(head, sizeof(head), "%s--%s%s%s", shortform, o->name, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		if (o->type == CLI_CHOICE)
			choices_text(o, choices, sizeof(choices));
		fprintf(f, "  %-28s %s%s%s%s\n", head, o->help, *choices ? " (" : "", choices, *choices ? ")" : "");
	}
	if (cmd->more_help)
		fprintf(f, "\n%s", cmd->more_help);
}
