/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The option tables (appliance/cli/cli.c): every option type parses into
 * its field, short and long forms agree, bad values and unknown options
 * are usage errors (exit 2) that name the option, required options and
 * operand counts are enforced, and the usage text lists every option.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tests/lib/check.h"

struct t_args {
	bool flag;
	const char *str, *need;
	uint64_t num, size;
	double secs;
	int mode;
};

static const char *const modes[] = { "auto", "native", "skb", NULL };

static const struct cli_opt t_opts[] = {
	CLI_OPT_FLAG("flag", 'f', struct t_args, flag, "a flag"),
	CLI_OPT_STRING("str", 's', struct t_args, str, "S", "a string"),
	CLI_OPT_REQUIRED_STRING("need", 0, struct t_args, need, "N", "needed"),
	CLI_OPT_UINT("num", struct t_args, num, "N", 1, 100, "a number"),
	CLI_OPT_SIZE("size", struct t_args, size, "SIZE", 65536, UINT64_MAX, "a size"),
	CLI_OPT_SECONDS("secs", struct t_args, secs, "S", "seconds"),
	CLI_OPT_CHOICE("mode", struct t_args, mode, "M", modes, "a mode"),
	CLI_OPT_END,
};

static int t_run(void *args, int argc, char **argv)
{
	return 0;
}

static const struct cli_cmd t_cmd = {
	.name = "t",
	.summary = "test command",
	.operands = "FILE...",
	.min_operands = 1,
	.max_operands = 2,
	.opts = t_opts,
	.args_size = sizeof(struct t_args),
	.run = t_run,
};

/* Parse a NULL-terminated argv with stderr silenced; returns cli_parse's
 * result and the first operand's index. */
static int parse(struct t_args *a, int *first, char **argv)
{
	int argc = 0, saved = dup(2), devnull = open("/dev/null", 1), r;

	while (argv[argc])
		argc++;
	memset(a, 0, sizeof(*a));
	fflush(stderr);
	dup2(devnull, 2);
	r = cli_parse(&t_cmd, argc, argv, a, first);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	return r;
}

#define ARGV(...) ((char *[]){ "t", __VA_ARGS__, NULL })

static void test_types(void)
{
	struct t_args a;
	int first = 0;

	check_begin("cli-every-type");
	CHECK_EQ_INT(parse(&a, &first,
			   ARGV("--flag", "--str", "x", "--need", "y", "--num", "42", "--size", "2MiB", "--secs",
				"0.25", "--mode", "skb", "f1")),
		     0);
	CHECK(a.flag && !strcmp(a.str, "x") && !strcmp(a.need, "y"));
	CHECK_EQ_INT(a.num, 42);
	CHECK_EQ_INT(a.size, 2097152);
	CHECK(a.secs == 0.25);
	CHECK_EQ_INT(a.mode, 2);
	CHECK_EQ_INT(first, 14);
	check_end();

	check_begin("cli-short-forms");
	CHECK_EQ_INT(parse(&a, &first, ARGV("-f", "-s", "z", "--need=w", "f1", "f2")), 0);
	CHECK(a.flag && !strcmp(a.str, "z") && !strcmp(a.need, "w"));
	CHECK_EQ_INT(first, 5);
	check_end();
}

static void test_errors(void)
{
	struct t_args a;
	int first;

	check_begin("cli-usage-errors");
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--num", "0", "f")), EXIT_USAGE);	 /* below min */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--num", "101", "f")), EXIT_USAGE);	 /* above max */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--num", "4x", "f")), EXIT_USAGE);	 /* not a number */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--num", "-1", "f")), EXIT_USAGE);	 /* negative */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--size", "1KiB", "f")), EXIT_USAGE); /* too small */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--secs", "0", "f")), EXIT_USAGE);
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--secs", "nan", "f")), EXIT_USAGE);
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--mode", "Native", "f")), EXIT_USAGE);
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--bogus", "f")), EXIT_USAGE);
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "-x", "f")), EXIT_USAGE);
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "--str")), EXIT_USAGE);	 /* no argument */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--num", "5", "f")), EXIT_USAGE);		 /* required */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y")), EXIT_USAGE);		 /* no operand */
	CHECK_EQ_INT(parse(&a, &first, ARGV("--need", "y", "a", "b", "c")), EXIT_USAGE); /* too many */
	check_end();
}

static void test_help(void)
{
	struct t_args a;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int first;

	check_begin("cli-help-lists-every-option");
	cli_usage(&t_cmd, f);
	fclose(f);
	for (const struct cli_opt *o = t_opts; o->name; o++) {
		char want[64];

		snprintf(want, sizeof(want), "--%s", o->name);
		if (!strstr(text, want) || !strstr(text, o->help))
			check_fail_at(__FILE__, __LINE__, "usage lacks %s", want);
	}
	CHECK(strstr(text, "usage: nfbox t [--flag] [--str S] --need N ") != NULL);
	CHECK(strstr(text, "one of auto, native, skb") != NULL);
	free(text);
	fflush(stdout);
	{
		int saved = dup(1), devnull = open("/dev/null", 1);

		dup2(devnull, 1);
		CHECK_EQ_INT(parse(&a, &first, ARGV("--num", "0", "--help")), EXIT_USAGE); /* the error comes first */
		CHECK_EQ_INT(parse(&a, &first, ARGV("--help")), 1);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		close(devnull);
	}
	check_end();
}

int main(void)
{
	test_types();
	test_errors();
	test_help();
	CHECK_EXIT();
}
