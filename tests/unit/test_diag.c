/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one error channel (base/diag.c): diag_errno/diag_fail return
 * the error they report; diagnostics without a place print after located
 * ones; diags_append keeps the source lines after the original is freed
 * (a reload reports a policy's mistakes after freeing the policy);
 * suggestions are for typos only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "tests/lib/check.h"

static void test_errno(void)
{
	struct diags d;
	char *text;

	check_begin("diag-errno-returns-and-says");
	diags_init(&d);
	CHECK_EQ_INT(diag_errno(&d, -ENOENT, "cannot open %s", "/x"), -ENOENT);
	CHECK_EQ_INT(diag_fail(&d, -EINVAL, "plain %d", 7), -EINVAL);
	CHECK_EQ_INT(d.errors, 2);
	text = diags_to_text(&d);
	CHECK_EQ_STR(text, "error: cannot open /x: No such file or directory\nerror: plain 7\n");
	free(text);
	diags_free(&d);
	check_end();
}

static void test_append(void)
{
	struct sources own = { 0 };
	struct diags from, to;
	struct source *src;
	char *text;

	/* The diagnostics and the sources go in any order: here the source
	 * goes first (under ASan, a diagnostic that still read it fails). */
	check_begin("diag-append-outlives-source");
	diags_init(&from);
	diags_init(&to);
	src = sources_add(&own, "p.yaml", "a: 1\nbad: 2\n", 12);
	diag_warn(&to, DIAG_NOWHERE, "system warning");
	diag_error(&from, (struct loc){ .src = src, .line = 2, .col = 1 }, "unknown key");
	sources_free(&own);
	diags_append(&to, &from);
	diags_free(&from);
	text = diags_to_text(&to);
	CHECK_EQ_STR(text, "p.yaml:2:1: error: unknown key\nbad: 2\n^\nwarning: system warning\n");
	CHECK_EQ_INT(to.errors, 1);
	CHECK_EQ_INT(to.warnings, 1);
	free(text);
	diags_free(&to);
	check_end();
}

/* Suggestions: case aside, swaps count one, and none when the word is far. */
static void test_closest(void)
{
	static const char *const actions[] = { "drop", "accept", "reject", NULL };
	static const char *const keys[] = { "name", "hook", "action", "comment", NULL };
	static const char *const anchors[] = { "w", "web-ports", NULL };
	const char *s;

	check_begin("diag-closest");
	CHECK_EQ_STR((s = diag_closest("ACCEPT", actions)) ? s : "(none)", "accept");
	CHECK_EQ_STR((s = diag_closest("Drop", actions)) ? s : "(none)", "drop");
	CHECK_EQ_STR((s = diag_closest("actoin", keys)) ? s : "(none)", "action");
	CHECK_EQ_STR((s = diag_closest("hok", keys)) ? s : "(none)", "hook");
	CHECK_EQ_STR((s = diag_closest("time", keys)) ? s : "(none)", "(none)");
	CHECK_EQ_STR((s = diag_closest("web", anchors)) ? s : "(none)", "(none)");
	CHECK_EQ_STR((s = diag_closest("webports", anchors)) ? s : "(none)", "web-ports");
	check_end();
}

int main(void)
{
	test_closest();
	test_errno();
	test_append();
	CHECK_EXIT();
}
