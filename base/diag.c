/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/diag.h"
#include "base/json.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIAG_DEFAULT_MAX 1000
#define SOURCE_MAX_BYTES (256u << 20)

void diags_init(struct diags *d)
{
	memset(d, 0, sizeof(*d));
}

const char *diags_last(const struct diags *d, const char *none)
{
	return d->n ? d->v[d->n - 1].msg : none;
}

static void diag_release(struct diag *g)
{
	free(g->msg);
	free(g->file);
	free(g->line);
}

void diags_free(struct diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		diag_release(&d->v[i]);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

void sources_free(struct sources *s)
{
	struct source *x, *next;

	for (x = s->head; x; x = next) {
		next = x->next;
		free(x->name);
		free(x->text);
		free(x);
	}
	s->head = NULL;
}

struct source *sources_add(struct sources *o, const char *name, const char *text, size_t len)
{
	struct source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name);
	s->text = malloc(len + 1);
	if (!s->name || !s->text) {
		free(s->name);
		free(s->text);
		free(s);
		return NULL;
	}
	memcpy(s->text, text, len);
	s->text[len] = '\0';
	s->len = len;
	s->next = o->head;
	o->head = s;
	return s;
}

static int read_all(int fd, char **out, size_t *out_len)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (len == cap) {
			char *nb;

			if (cap >= SOURCE_MAX_BYTES) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

int sources_load(struct sources *o, const char *path, struct source **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = sources_load_fd(o, path, fd, out);
	close(fd);
	return r;
}

int sources_load_fd(struct sources *o, const char *path, int fd, struct source **out)
{
	struct source *s;
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	r = read_all(fd, &text, &len);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(path))) {
		free(s);
		free(text);
		return -ENOMEM;
	}
	s->text = text;
	s->len = len;
	s->next = o->head;
	o->head = s;
	*out = s;
	return 0;
}

/* Start of line `line` (1-based) in src, and its length without newline. */
static const char *source_line(const struct source *src, unsigned line, size_t *len)
{
	const char *p = src->text, *end = src->text + src->len;

	for (unsigned l = 1; l < line && p < end; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			return NULL;
		p = nl + 1;
	}
	if (p > end)
		return NULL;
	{
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		*len = (size_t)((nl ? nl : end) - p);
	}
	if (*len && p[*len - 1] == '\r')
		(*len)--;
	return p;
}

/* What g shows of its place, copied from src: the name, and the line.
 * false when out of memory. */
static bool capture(struct diag *g, const struct source *src)
{
	const char *line;
	size_t len = 0;

	g->loc.src = NULL;
	if (!src)
		return true;
	if (!(g->file = strdup(src->name)))
		return false;
	if (g->loc.line && (line = source_line(src, g->loc.line, &len)) && !(g->line = strndup(line, len)))
		return false;
	return true;
}

void diag_place(struct diag *g, const struct source *src, unsigned line, unsigned col)
{
	free(g->file);
	free(g->line);
	g->file = g->line = NULL;
	g->loc.line = line;
	g->loc.col = col;
	if (!capture(g, src)) { /* out of memory: shown without its place */
		free(g->file);
		g->file = NULL;
	}
}

/* Where the fix begins in the message fmt makes: the length of what fmt's
 * part before DIAG_FIX makes of the same arguments (a conversion never
 * holds the mark, so the part is a format of its own); 0: no mark. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static size_t fix_offset(const char *fmt, va_list ap)
{
	const char *mark = strchr(fmt, DIAG_FIX[0]);
	char buf[512], *head = buf, *own = NULL;
	size_t len;
	va_list aq;
	int n;

	if (!mark)
		return 0;
	/* formats are short: on the stack, so that the split needs no memory
	 * (a message made without its fix apart would be a silent loss) */
	if ((len = (size_t)(mark - fmt)) >= sizeof(buf) && !(head = own = malloc(len + 1)))
		return 0;
	memcpy(head, fmt, len);
	head[len] = '\0';
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, head, aq); /* the arguments after the mark are not read */
	va_end(aq);
	free(own);
	return n > 0 ? (size_t)n : 0;
}
#pragma GCC diagnostic pop

void diag_add(struct diags *d, enum diag_level level, struct loc loc, const char *fmt, ...)
{
	size_t max = d->max ? d->max : DIAG_DEFAULT_MAX, fix_at;
	va_list ap;
	char *msg;

	if (level == DIAG_ERROR)
		d->errors++;
	else if (level == DIAG_WARNING)
		d->warnings++;
	if (d->n >= max) {
		d->dropped++;
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct diag *v = realloc(d->v, cap * sizeof(*v));

		if (!v) {
			d->dropped++;
			return;
		}
		d->v = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	fix_at = fix_offset(fmt, ap);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg) {
		d->dropped++;
		return;
	}
	if (fix_at && msg[fix_at] == DIAG_FIX[0]) /* the mark is not printed */
		memmove(msg + fix_at, msg + fix_at + 1, strlen(msg + fix_at));
	else
		fix_at = 0;
	d->v[d->n] = (struct diag){ .level = level, .loc = loc, .msg = msg, .fix_at = fix_at };
	if (!capture(&d->v[d->n], loc.src)) { /* as one that could not be written */
		diag_release(&d->v[d->n]);
		d->dropped++;
		return;
	}
	d->n++;
}

static int diag_vfail(struct diags *d, int err, bool with_errno, const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0) {
		diag_add(d, DIAG_ERROR, DIAG_NOWHERE, "%s", strerror(err < 0 ? -err : err));
		return err;
	}
	if (with_errno)
		diag_add(d, DIAG_ERROR, DIAG_NOWHERE, "%s: %s", msg, strerror(err < 0 ? -err : err));
	else
		diag_add(d, DIAG_ERROR, DIAG_NOWHERE, "%s", msg);
	free(msg);
	return err;
}

int diag_errno(struct diags *d, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = diag_vfail(d, err, true, fmt, ap);
	va_end(ap);
	return err;
}

int diag_fail(struct diags *d, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = diag_vfail(d, err, false, fmt, ap);
	va_end(ap);
	return err;
}

static const char *level_name(enum diag_level l)
{
	switch (l) {
	case DIAG_ERROR:
		return "error";
	case DIAG_WARNING:
		return "warning";
	default:
		return "note";
	}
}

static const char *level_color(enum diag_level l)
{
	switch (l) {
	case DIAG_ERROR:
		return "\033[1;31m";
	case DIAG_WARNING:
		return "\033[1;35m";
	default:
		return "\033[1;36m";
	}
}

static void print_caret(FILE *f, const char *line, size_t len, unsigned col, unsigned width, bool color)
{
	/* Tabs in the source line are kept in the caret line so the caret
	 * lands under the right character whatever the tab width. */
	for (unsigned i = 1; i < col && i - 1 < len; i++)
		fputc(line[i - 1] == '\t' ? '\t' : ' ', f);
	fputs(color ? "\033[1;32m" : "", f);
	/* the whole token, as nft underlines it */
	for (unsigned i = 0; i < (width ? width : 1); i++)
		fputc('^', f);
	fprintf(f, "%s\n", color ? "\033[0m" : "");
}

static void print_one(const struct diag *g, FILE *f, bool color)
{
	const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";

	if (g->file && g->loc.line)
		fprintf(f, "%s%s:%u:%u:%s ", bold, g->file, g->loc.line, g->loc.col, reset);
	else if (g->file)
		fprintf(f, "%s%s:%s ", bold, g->file, reset);
	fprintf(f, "%s%s:%s %s\n", color ? level_color(g->level) : "", level_name(g->level), reset, g->msg);
	if (!g->file || !g->line)
		return;
	fprintf(f, "%s\n", g->line);
	print_caret(f, g->line, strlen(g->line), g->loc.col ? g->loc.col : 1, g->loc.len, color);
}

static int diag_cmp(const void *a, const void *b)
{
	const struct diag *x = a, *y = b;
	int c;

	if (!x->file != !y->file)
		return x->file ? -1 : 1; /* no place: last */
	if (x->file && (c = strcmp(x->file, y->file)))
		return c;
	if (x->loc.line != y->loc.line)
		return x->loc.line < y->loc.line ? -1 : 1;
	if (x->loc.col != y->loc.col)
		return x->loc.col < y->loc.col ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* d's diagnostics in order of place (d's own order if out of memory). */
static struct diag *sorted_copy(const struct diags *d)
{
	struct diag *sorted = malloc(d->n * sizeof(*sorted));

	if (sorted) {
		memcpy(sorted, d->v, d->n * sizeof(*sorted));
		/* Stable for equal places: tie-break on original position. */
		qsort(sorted, d->n, sizeof(*sorted), diag_cmp);
	}
	return sorted;
}

void diags_print(const struct diags *d, FILE *f, bool color)
{
	struct diag *sorted;

	if (!d->n)
		return;
	sorted = sorted_copy(d);
	for (size_t i = 0; i < d->n; i++)
		print_one(sorted ? &sorted[i] : &d->v[i], f, color);
	if (d->dropped)
		fprintf(f, "note: %zu more diagnostics not shown\n", d->dropped);
	free(sorted);
}

void diags_each(const struct diags *d, void (*fn)(enum diag_level level, const char *text, void *arg), void *arg)
{
	struct diag *sorted;

	if (!d->n)
		return;
	sorted = sorted_copy(d);
	for (size_t i = 0; i < d->n; i++) {
		const struct diag *g = sorted ? &sorted[i] : &d->v[i];
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f)
			break;
		print_one(g, f, false);
		if (fclose(f) == 0)
			fn(g->level, text, arg);
		free(text);
	}
	free(sorted);
	if (d->dropped) {
		char more[64];

		snprintf(more, sizeof(more), "note: %zu more diagnostics not shown", d->dropped);
		fn(DIAG_NOTE, more, arg);
	}
}

void diags_append(struct diags *to, const struct diags *from)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct diag *g = &from->v[i];
		size_t n = to->n;

		diag_add(to, g->level, g->loc, "%s", g->msg);
		if (to->n > n)
			to->v[n].fix_at = g->fix_at;
		if (to->n > n && g->file &&
		    (!(to->v[n].file = strdup(g->file)) || (g->line && !(to->v[n].line = strdup(g->line))))) {
			diag_release(&to->v[--to->n]); /* its place could not be kept: as one dropped */
			to->dropped++;
		}
	}
	to->dropped += from->dropped;
}

struct diags_mark diags_mark(const struct diags *d)
{
	return (struct diags_mark){ .n = d->n, .warnings = d->warnings };
}

size_t diags_strict(struct diags *d, struct diags_mark m)
{
	size_t n = d->warnings - m.warnings; /* those dropped beyond the cap too */

	for (size_t i = m.n; i < d->n; i++)
		if (d->v[i].level == DIAG_WARNING)
			d->v[i].level = DIAG_ERROR;
	d->warnings = m.warnings;
	d->errors += n;
	return n;
}

/* The fix of g without its joiner ("; did you mean 'x'?" -> "did you
 * mean 'x'?", " (use a group)" -> "use a group"). */
static void write_fix(struct json *j, const struct diag *g)
{
	const char *s = g->msg + g->fix_at, *end;
	bool paren;

	s += strspn(s, " ");
	paren = *s == '(';
	s += strspn(s, ";:,( ");
	end = s + strlen(s);
	if (paren && end > s && end[-1] == ')')
		end--;
	json_strn(j, s, (size_t)(end - s));
}

static void json_one(struct json *j, const struct diag *g)
{
	size_t len = g->fix_at ? g->fix_at : strlen(g->msg);

	while (len && g->msg[len - 1] == ' ')
		len--;
	json_object_begin(j);
	json_kv_str(j, "file", g->file);
	json_key(j, "line");
	if (g->file && g->loc.line)
		json_u64(j, g->loc.line);
	else
		json_null_value(j);
	json_key(j, "column");
	if (g->file && g->loc.line && g->loc.col)
		json_u64(j, g->loc.col);
	else
		json_null_value(j);
	json_key(j, "length");
	if (g->file && g->loc.line && g->loc.col)
		json_u64(j, g->loc.len ? g->loc.len : 1);
	else
		json_null_value(j);
	json_kv_str(j, "severity", level_name(g->level));
	json_key(j, "message");
	json_strn(j, g->msg, len);
	json_key(j, "fix");
	if (g->fix_at)
		write_fix(j, g);
	else
		json_null_value(j);
	json_object_end(j);
}

void diags_json(const struct diags *d, struct json *j)
{
	struct diag *sorted = d->n ? sorted_copy(d) : NULL;

	json_array_begin(j);
	for (size_t i = 0; i < d->n; i++)
		json_one(j, sorted ? &sorted[i] : &d->v[i]);
	json_array_end(j);
	free(sorted);
}

char *diags_to_text(const struct diags *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	diags_print(d, f, false);
	fclose(f);
	return out;
}

/* Edits between a and b, letters compared without case: insertions,
 * deletions, substitutions and swaps of two neighbours ("actoin") each
 * count one (the optimal string alignment distance). */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned rows[3][64];

	if (la >= 63 || lb >= 63)
		return 1000;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned *cur = rows[i % 3], *up = rows[(i - 1) % 3], *up2 = rows[(i + 1) % 3];

		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
			unsigned best = up[j - 1] + (ca != cb);

			if (up[j] + 1 < best)
				best = up[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && up2[j - 2] + 1 < best)
				best = up2[j - 2] + 1;
			cur[j] = best;
		}
	}
	return rows[la % 3][lb];
}

/* The candidate nearest to word, if near enough to be what was meant: one
 * edit in a word of up to five letters, one per three letters beyond. */
const char *diag_closest(const char *word, const char *const *candidates)
{
	const char *best = NULL;
	unsigned best_d = 1000, limit = (unsigned)strlen(word) / 3;

	if (limit < 1)
		limit = 1;

	for (size_t i = 0; candidates[i]; i++) {
		unsigned dist = edit_distance(word, candidates[i]);

		if (dist < best_d) {
			best_d = dist;
			best = candidates[i];
		}
	}
	return best_d <= limit ? best : NULL;
}
