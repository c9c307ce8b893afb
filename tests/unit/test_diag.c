/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one error channel (base/diag.c): diag_errno/diag_fail return
 * the error they report; diagnostics without a place print after located
 * ones; diags_append keeps the source lines after the original is freed
 * (a reload reports a policy's mistakes after freeing the policy);
 * suggestions are for typos only; a fix marked with DIAG_FIX prints as
 * before and comes apart in JSON exactly where it was marked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/json.h"
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

/* diags_json() of d, as a string (the caller frees it). */
static char *as_json(const struct diags *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct json j;

	json_init(&j, f);
	diags_json(d, &j);
	fclose(f);
	return out;
}

static void test_fix(void)
{
	struct sources own = { 0 };
	struct source *src = sources_add(&own, "p.yaml", "from: offce\n", 12);
	struct diags d, copy;
	char *text, *json;

	check_begin("diag-fix-apart-and-printed-as-before");
	diags_init(&d);
	diags_init(&copy);
	diag_error(&d, (struct loc){ .src = src, .line = 1, .col = 7, .len = 5 },
		   "unknown set '%s'" DIAG_FIX "; did you mean '%s'?", "offce", "office");
	/* the mark's byte in an argument before it does not move the split */
	diag_warn(&d, DIAG_NOWHERE, "name '%s' odd" DIAG_FIX " (use %s)",
		  "a\x1f"
		  "b",
		  "ab");
	diag_note(&d, DIAG_NOWHERE, "no fix here; %s", "none");
	text = diags_to_text(&d);
	CHECK_EQ_STR(text, "p.yaml:1:7: error: unknown set 'offce'; did you mean 'office'?\nfrom: offce\n      ^^^^^\n"
			   "warning: name 'a\x1f"
			   "b' odd (use ab)\nnote: no fix here; none\n");
	free(text);
	diags_append(&copy, &d);
	sources_free(&own);
	json = as_json(&copy);
	CHECK_EQ_STR(json, "[{\"file\":\"p.yaml\",\"line\":1,\"column\":7,\"length\":5,\"severity\":\"error\","
			   "\"message\":\"unknown set 'offce'\",\"fix\":\"did you mean 'office'?\"},"
			   "{\"file\":null,\"line\":null,\"column\":null,\"length\":null,\"severity\":\"warning\","
			   "\"message\":\"name 'a\\u001fb' odd\",\"fix\":\"use ab\"},"
			   "{\"file\":null,\"line\":null,\"column\":null,\"length\":null,\"severity\":\"note\","
			   "\"message\":\"no fix here; none\",\"fix\":null}]");
	free(json);
	diags_free(&d);
	diags_free(&copy);
	check_end();
}

int main(void)
{
	test_fix();
	test_closest();
	test_errno();
	test_append();
	CHECK_EXIT();
}
