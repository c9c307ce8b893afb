/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Diagnostics that point into the user's files: every message carries a
 * source, a line and a column, and prints as nft does:
 *   FILE:LINE:COL: error: MESSAGE
 *   <the source line>
 *        ^
 * Messages are collected, not printed at once, so that validation reports
 * every mistake in one run.
 */
#ifndef NFBOX_DIAG_H
#define NFBOX_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A loaded text file. Places (struct loc) point into it; a diagnostic
 * copies what it shows of it (the file's name, the line), so that the
 * diagnostics and the sources may go in any order. */
struct source {
	char *name;
	char *text;
	size_t len;
	struct source *next;
};

/* The sources of one owner (a policy holds the files it was read from). */
struct sources {
	struct source *head;
};

/* Read a whole file into a new source of s. Returns 0 or -errno. */
int sources_load(struct sources *s, const char *path, struct source **out);
/* The same from an open file (read from its current offset, not closed);
 * path names it in messages. */
int sources_load_fd(struct sources *s, const char *path, int fd, struct source **out);
/* Adopt an in-memory buffer (copied) as a source of s. */
struct source *sources_add(struct sources *s, const char *name, const char *text, size_t len);
void sources_free(struct sources *s);

enum diag_level {
	DIAG_ERROR,
	DIAG_WARNING,
	DIAG_NOTE,
};

struct loc {
	const struct source *src; /* NULL: no place (e.g. a whole-policy limit) */
	unsigned line;		  /* 1-based; 0: no line */
	unsigned col;		  /* 1-based */
	unsigned len;		  /* characters of the token there, underlined; 0 or 1: one caret */
};

struct diag {
	enum diag_level level;
	struct loc loc; /* line, col, len; its src is NULL once added (file, line say it) */
	char *file;	/* the source's name; NULL: no place */
	char *line;	/* that line of it, as it was; NULL: none */
	char *msg;
	size_t fix_at; /* where in msg the fix begins (its joiner: "; ", ": ", " ("); 0: none */
};

struct diags {
	struct diag *v;
	size_t n, cap;
	size_t errors, warnings;
	size_t max; /* stop collecting beyond this many (0: 1000) */
	size_t dropped;
};

void diags_init(struct diags *d);
void diags_free(struct diags *d);
/* The last message added, for a one-line report; none when there is none. */
const char *diags_last(const struct diags *d, const char *none);

/* Diagnostic g placed again: at line and col of src (its line copied). */
void diag_place(struct diag *g, const struct source *src, unsigned line, unsigned col);

__attribute__((format(printf, 4, 5))) void diag_add(struct diags *d, enum diag_level level, struct loc loc,
						    const char *fmt, ...);

/*
 * What would fix the mistake, where a message knows it, is marked in the
 * format string by DIAG_FIX before its joiner:
 *   diag_error(d, loc, "unknown set '%s'" DIAG_FIX "; did you mean '%s'?", name, near);
 * The message prints as before (the mark is not printed); a reader that
 * wants them apart (validate --json) gets the message and the fix
 * ("did you mean 'office'?") each on its own. Once in a format string.
 */
#define DIAG_FIX "\x1f"

/* No place in a file: an error about the system (a map the kernel refused,
 * a socket that cannot be bound), printed as "error: MESSAGE". */
#define DIAG_NOWHERE ((struct loc){ 0 })

/*
 * The error contract of nfbox: a function that can fail returns 0 or a
 * negative errno, and when it has something to tell the operator it adds it
 * to the struct diags its caller gave it. These two do both in one line:
 *   return diag_errno(d, -errno, "cannot pin %s", path);
 * adds "cannot pin PATH: <strerror>" (diag_fail: the message as given) and
 * returns the error. Located problems use diag_error(d, loc, ...) instead.
 */
__attribute__((format(printf, 3, 4))) int diag_errno(struct diags *d, int err, const char *fmt, ...);
__attribute__((format(printf, 3, 4))) int diag_fail(struct diags *d, int err, const char *fmt, ...);

#define diag_error(d, ...) diag_add((d), DIAG_ERROR, __VA_ARGS__)
#define diag_warn(d, ...)  diag_add((d), DIAG_WARNING, __VA_ARGS__)
#define diag_note(d, ...)  diag_add((d), DIAG_NOTE, __VA_ARGS__)

/* Append every diagnostic of from to to; the sources they point into are
 * copied, so to stays valid after from is freed. */
void diags_append(struct diags *to, const struct diags *from);

/* Where d stands (diags_mark), for diags_strict. */
struct diags_mark {
	size_t n, warnings;
};
struct diags_mark diags_mark(const struct diags *d);
/* --strict: every warning added since m becomes an error, counted as one
 * (its place and text kept). How many did. */
size_t diags_strict(struct diags *d, struct diags_mark m);

/* Print every diagnostic in order of file, line, column; those without a
 * place come last, in the order they were added. color: ANSI colors. */
void diags_print(const struct diags *d, FILE *f, bool color);
/* The same into a new string (NULL when out of memory). */
char *diags_to_text(const struct diags *d);
struct json;
/* Every diagnostic, in the same order, as a JSON array of objects: file,
 * line, column, length (null where there is no place), severity ("error",
 * "warning", "note"), message and fix (null if none is known). */
void diags_json(const struct diags *d, struct json *j);
/* Each diagnostic, in the same order, as its own text (location, message,
 * source line and caret): for a log that keeps one message per entry. */
void diags_each(const struct diags *d, void (*fn)(enum diag_level level, const char *text, void *arg), void *arg);

/* The candidate (NULL-terminated list) closest to word, case aside, or NULL
 * if nothing is close enough to be a plausible typo. */
const char *diag_closest(const char *word, const char *const *candidates);

#endif
