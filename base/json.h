/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one JSON writer of nfbox: compact output (no spaces), commas placed
 * by the writer, strings always valid JSON and valid UTF-8 whatever bytes
 * they are given (control characters escaped, bytes that are not UTF-8
 * written as U+FFFD). Used for status, stats, verdict events, captures and
 * plans.
 *
 *   struct json j;
 *   json_init(&j, f);
 *   json_object_begin(&j);
 *   json_kv_str(&j, "name", ifname);
 *   json_key(&j, "rules");
 *   json_array_begin(&j);
 *   json_u64(&j, 3);
 *   json_array_end(&j);
 *   json_object_end(&j);
 */
#ifndef NFBOX_LIB_JSON_H
#define NFBOX_LIB_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
	FILE *f;
	unsigned depth;
	bool after_key;		       /* a key was written: the value needs no comma */
	bool nonempty[JSON_MAX_DEPTH]; /* the container at each depth has members */
};

void json_init(struct json *j, FILE *f);

void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);

/* A member name inside an object; the next call writes its value. */
void json_key(struct json *j, const char *key);

/* Values: in an array, or after json_key(). NULL s is written as null. */
void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const char *s, size_t len);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null_value(struct json *j);
/* A number with a fixed count of decimals (times, rates). */
void json_fixed(struct json *j, double v, int decimals);

/* json_key() and a value in one call. */
void json_kv_str(struct json *j, const char *key, const char *s);
void json_kv_u64(struct json *j, const char *key, uint64_t v);
void json_kv_i64(struct json *j, const char *key, int64_t v);
void json_kv_bool(struct json *j, const char *key, bool v);

/* The string escaper alone: s (len bytes) as a quoted JSON string. */
void json_write_string(FILE *f, const char *s, size_t len);

#endif
