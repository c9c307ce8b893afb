/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/json.h"

#include <inttypes.h>
#include <string.h>

void json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Before any value or key: a comma unless it is the first member, or the
 * value of a key just written. */
static void sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth && j->nonempty[j->depth - 1])
		fputc(',', j->f);
	if (j->depth)
		j->nonempty[j->depth - 1] = true;
}

static void open_container(struct json *j, char c)
{
	sep(j);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH)
		j->nonempty[j->depth] = false;
	j->depth++;
}

static void close_container(struct json *j, char c)
{
	if (j->depth)
		j->depth--;
	fputc(c, j->f);
}

void json_object_begin(struct json *j)
{
	open_container(j, '{');
}

void json_object_end(struct json *j)
{
	close_container(j, '}');
}

void json_array_begin(struct json *j)
{
	open_container(j, '[');
}

void json_array_end(struct json *j)
{
	close_container(j, ']');
}

void json_key(struct json *j, const char *key)
{
	sep(j);
	json_write_string(j->f, key, strlen(key));
	fputc(':', j->f);
	j->after_key = true;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

void json_write_string(FILE *f, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(s + i, n - i);

		if (!len) {
			fputs("\\ufffd", f); /* not UTF-8: the replacement character */
			i++;
		} else if (len > 1) {
			fwrite(s + i, 1, len, f);
			i += len;
		} else {
			unsigned char c = s[i++];

			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", f);
			else if (c == '\t')
				fputs("\\t", f);
			else if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void json_str(struct json *j, const char *s)
{
	if (!s) {
		json_null_value(j);
		return;
	}
	json_strn(j, s, strlen(s));
}

void json_strn(struct json *j, const char *s, size_t len)
{
	sep(j);
	json_write_string(j->f, s, len);
}

void json_u64(struct json *j, uint64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, int64_t v)
{
	sep(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_bool(struct json *j, bool v)
{
	sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null_value(struct json *j)
{
	sep(j);
	fputs("null", j->f);
}

void json_fixed(struct json *j, double v, int decimals)
{
	sep(j);
	if (v != v || v - v != 0) /* NaN or infinite: not JSON */
		fputs("null", j->f);
	else
		fprintf(j->f, "%.*f", decimals, v);
}

void json_kv_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_kv_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_u64(j, v);
}

void json_kv_i64(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_i64(j, v);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}
