/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the daemon reports (`nfbox status`, `nfbox stats`, `nfbox
 * metrics`), as one typed tree: each part puts its values in once, and
 * three renderers walk the tree:
 *   - JSON (json.c): every node, in the order put in; the documented
 *     interface other programs read (docs/report.md);
 *   - Prometheus (prom.c): every value that carries a struct rep_metric;
 *   - text for people (text.c): each object that carries a text function
 *     prints its own lines, reading its values back from the tree; then
 *     its objects and lists, in order, do.
 *
 *   struct rep *root = rep_root();
 *   struct rep *ha = rep_object(root, "ha");
 *   rep_str(ha, "role", "master");
 *   rep_metric(rep_uint(ha, "transitions", n), &transitions_metric);
 *   rep_text(ha, ha_text);
 *
 * A node that cannot be made (memory) is NULL, and every function takes a
 * NULL parent as "nothing to do": the tree remembers the failure and
 * rep_failed() reports it once, before anything is written.
 */
#ifndef NFBOX_REPORT_TREE_H
#define NFBOX_REPORT_TREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum rep_kind {
	REP_OBJECT,
	REP_LIST,
	REP_STRING,
	REP_BOOL,
	REP_INT,
	REP_UINT,
	REP_MS, /* wall-clock milliseconds, written as seconds with 3 decimals */
	REP_NULL,
};

struct rep;

/* How a value is a Prometheus series. */
struct rep_metric {
	/* The family's name, then any labels of the series' own:
	 * "nfbox_reloads_total" or "nfbox_reloads_total{result=\"ok\"}". */
	const char *name;
	const char *type; /* "counter" or "gauge" */
	const char *help;
	/* Labels taken from the objects the value is in, in this order, space
	 * separated: "hook" is the string "hook" of the nearest enclosing
	 * object that has one; "daemon=." is the key of the object the value
	 * is in; "counter=key" the value's own key. Absent: "". */
	const char *labels;
};

/* A text function prints an object's own lines (rep_write_text). */
typedef void rep_text_fn(const struct rep *o, FILE *f);

/* ---- making ---- */

/* An empty object: a tree's root. NULL: no memory. */
struct rep *rep_root(void);
void rep_free(struct rep *root);
/* -ENOMEM if a node of the tree could not be made, else 0. */
int rep_failed(const struct rep *root);

/* Added to in: an object's member named key, or (key NULL) a list's next
 * element. Strings are copied; a NULL string is null. */
struct rep *rep_object(struct rep *in, const char *key);
struct rep *rep_list(struct rep *in, const char *key);
struct rep *rep_str(struct rep *in, const char *key, const char *v);
struct rep *rep_strf(struct rep *in, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct rep *rep_bool(struct rep *in, const char *key, bool v);
struct rep *rep_int(struct rep *in, const char *key, int64_t v);
struct rep *rep_uint(struct rep *in, const char *key, uint64_t v);
/* 0 is written as null (never), and as 0 in a series. */
struct rep *rep_ms(struct rep *in, const char *key, int64_t ms);
struct rep *rep_null(struct rep *in, const char *key);

/* v is (also) a series; v, for chaining. */
struct rep *rep_metric(struct rep *v, const struct rep_metric *m);
/* v is a series only: not in the JSON (a sum, a 0/1 of a state). */
struct rep *rep_hidden(struct rep *v);
/* o's lines as text. */
void rep_text(struct rep *o, rep_text_fn *fn);

/* ---- reading (text functions) ---- */

/* o's member key (NULL: none); rep_at to add to it. */
const struct rep *rep_get(const struct rep *o, const char *key);
struct rep *rep_at(struct rep *o, const char *key);
/* Its value; "" / 0 / false when absent, null or of another kind. */
const char *rep_s(const struct rep *o, const char *key);
uint64_t rep_u(const struct rep *o, const char *key);
int64_t rep_i(const struct rep *o, const char *key);
bool rep_b(const struct rep *o, const char *key);
/* Present and not null. */
bool rep_has(const struct rep *o, const char *key);

/* Walking: the first member or element, the next one, the one above. */
const struct rep *rep_first(const struct rep *o);
const struct rep *rep_next(const struct rep *v);
const struct rep *rep_parent(const struct rep *v);
const char *rep_key(const struct rep *v);
enum rep_kind rep_kind(const struct rep *v);
/* A value as it is: the string, or the number (as rep_u, rep_i). */
const char *rep_string(const struct rep *v);
uint64_t rep_value_u(const struct rep *v);
int64_t rep_value_i(const struct rep *v);
uint32_t rep_count(const struct rep *o);

/* A wall-clock time in ms as an age: "never" (0), "now", "12s ago", "5m
 * ago", "3h ago", "2d ago" (in buf). */
const char *rep_ago(long long ms, char *buf, size_t len);

/* ---- writing ---- */

/* The tree as one JSON document and a newline. */
void rep_write_json(const struct rep *root, FILE *f);
/* As text for people: o's text function, then its objects' and lists'. */
void rep_write_text(const struct rep *o, FILE *f);
/* The series of the trees, in the Prometheus text format (0.0.4): each
 * family's HELP and TYPE once, before its first series, families in the
 * order first met. */
void rep_write_metrics(const struct rep *const *roots, unsigned n, FILE *f);

#endif
