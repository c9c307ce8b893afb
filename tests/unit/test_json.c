/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The JSON writer (base/json.c): commas and nesting placed by the
 * writer, and strings that stay valid JSON and valid UTF-8 whatever bytes
 * they carry (interface names, paths, rule names).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "tests/lib/check.h"

struct buf {
	char *text;
	size_t len;
	FILE *f;
	struct json j;
};

static void buf_open(struct buf *b)
{
	b->text = NULL;
	b->f = open_memstream(&b->text, &b->len);
	json_init(&b->j, b->f);
}

static const char *buf_done(struct buf *b)
{
	fclose(b->f);
	return b->text;
}

static const char *str_of(const char *s, size_t len)
{
	static char *last;
	struct buf b;

	free(last);
	buf_open(&b);
	json_strn(&b.j, s, len);
	last = (char *)buf_done(&b);
	return last;
}

#define STR(lit) str_of(lit, sizeof(lit) - 1)

static void test_nesting(void)
{
	struct buf b;

	check_begin("json-nesting-and-commas");
	buf_open(&b);
	json_object_begin(&b.j);
	json_kv_str(&b.j, "a", "x");
	json_kv_u64(&b.j, "b", 18446744073709551615ull);
	json_kv_i64(&b.j, "c", -5);
	json_key(&b.j, "d");
	json_array_begin(&b.j);
	json_array_end(&b.j);
	json_key(&b.j, "e");
	json_array_begin(&b.j);
	json_u64(&b.j, 1);
	json_object_begin(&b.j);
	json_object_end(&b.j);
	json_bool(&b.j, false);
	json_null_value(&b.j);
	json_array_begin(&b.j);
	json_str(&b.j, NULL);
	json_array_end(&b.j);
	json_array_end(&b.j);
	json_kv_bool(&b.j, "f", true);
	json_key(&b.j, "g");
	json_fixed(&b.j, 1.5, 3);
	json_object_end(&b.j);
	CHECK_EQ_STR(buf_done(&b), "{\"a\":\"x\",\"b\":18446744073709551615,\"c\":-5,\"d\":[],"
				   "\"e\":[1,{},false,null,[null]],\"f\":true,\"g\":1.500}");
	free(b.text);
	check_end();
}

static void test_escapes(void)
{
	check_begin("json-escapes-quotes-and-controls");
	CHECK_EQ_STR(STR("a\"b\\c"), "\"a\\\"b\\\\c\"");
	CHECK_EQ_STR(STR("t\tn\nr\r\x01\x7f"), "\"t\\tn\\nr\\u000d\\u0001\\u007f\"");
	CHECK_EQ_STR(STR("a\0b"), "\"a\\u0000b\"");
	check_end();
}

static void test_utf8(void)
{
	check_begin("json-utf8-kept");
	CHECK_EQ_STR(STR("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	check_end();
	check_begin("json-non-utf8-replaced");
	CHECK_EQ_STR(STR("\x80"), "\"\\ufffd\"");
	CHECK_EQ_STR(STR("a\xffz"), "\"a\\ufffdz\"");
	CHECK_EQ_STR(STR("\xc0\x80"), "\"\\ufffd\\ufffd\"");			   /* overlong NUL */
	CHECK_EQ_STR(STR("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");		   /* surrogate */
	CHECK_EQ_STR(STR("x\xe2\x82"), "\"x\\ufffd\\ufffd\"");			   /* cut short */
	CHECK_EQ_STR(STR("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
	check_end();
}

static void test_non_finite(void)
{
	struct buf b;

	check_begin("json-non-finite-is-null");
	buf_open(&b);
	json_array_begin(&b.j);
	json_fixed(&b.j, 1.0 / 0.0, 2);
	json_fixed(&b.j, 0.0 / 0.0, 2);
	json_array_end(&b.j);
	CHECK_EQ_STR(buf_done(&b), "[null,null]");
	free(b.text);
	check_end();
}

int main(void)
{
	test_nesting();
	test_escapes();
	test_utf8();
	test_non_finite();
	STR("");
	CHECK_EXIT();
}
