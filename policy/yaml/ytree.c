/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "policy/yaml/ytree.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct anchor {
	char *name;
	struct ynode *node;
};

/* The keys of an open mapping, for the duplicate check in constant time
 * (50,000 sets are one mapping). */
struct keyset {
	const struct ynode **v; /* key nodes; NULL: empty slot */
	size_t cap, n;		/* cap: a power of two, or 0 */
};

struct builder {
	struct ytree *t;
	const struct source *src;
	struct diags *d;
	struct ynode *stack[YTREE_MAX_DEPTH];
	struct keyset keys[YTREE_MAX_DEPTH];
	size_t depth;
	struct anchor *anchors;
	size_t nanchors, capanchors;
	size_t expanded;
	bool failed;
};

static struct loc mark_loc(const struct builder *b, yaml_mark_t m)
{
	return (struct loc){ .src = b->src, .line = (unsigned)m.line + 1, .col = (unsigned)m.column + 1 };
}

static struct ynode *node_new(struct builder *b, enum ynode_type type, yaml_mark_t m)
{
	struct ytree *t = b->t;
	struct ynode *n;

	if (t->nall == t->capall) {
		size_t cap = t->capall ? t->capall * 2 : 64;
		struct ynode **v = realloc(t->all, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->all = v;
		t->capall = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->type = type;
	n->loc = mark_loc(b, m);
	n->weight = 1;
	t->all[t->nall++] = n;
	return n;
}

static int kid_add(struct ynode *parent, struct ynode *kid)
{
	if ((parent->nkids & (parent->nkids - 1)) == 0) {
		size_t cap = parent->nkids ? parent->nkids * 2 : 4;
		struct ynode **v = realloc(parent->kids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		parent->kids = v;
	}
	parent->kids[parent->nkids++] = kid;
	return 0;
}

static bool scalar_eq(const struct ynode *a, const struct ynode *b)
{
	return a->type == YNODE_SCALAR && b->type == YNODE_SCALAR && a->len == b->len &&
	       memcmp(a->str, b->str, a->len) == 0;
}

static uint64_t key_hash(const struct ynode *k)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < k->len; i++)
		h = (h ^ (uint8_t)k->str[i]) * 0x100000001b3ull;
	return h;
}

/* k into ks: 0 when it is new, 1 when an equal key is there already (*first
 * then), -ENOMEM (the tree cannot be built without the check). */
static int keyset_put(struct keyset *ks, const struct ynode *k, const struct ynode **first)
{
	uint64_t i;

	if (2 * (ks->n + 1) > ks->cap) {
		struct keyset bigger = { .cap = ks->cap ? 2 * ks->cap : 16 };
		const struct ynode *unused;

		if (!(bigger.v = calloc(bigger.cap, sizeof(*bigger.v))))
			return -ENOMEM;
		for (size_t j = 0; j < ks->cap; j++)
			if (ks->v[j])
				keyset_put(&bigger, ks->v[j], &unused); /* room for all: cannot fail */
		free(ks->v);
		*ks = bigger;
	}
	for (i = key_hash(k) & (ks->cap - 1); ks->v[i]; i = (i + 1) & (ks->cap - 1))
		if (scalar_eq(ks->v[i], k)) {
			*first = ks->v[i];
			return 1;
		}
	ks->v[i] = k;
	ks->n++;
	return 0;
}

static void keyset_free(struct keyset *ks)
{
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

/* Attach a finished node to the open collection (or make it the root). */
static int attach(struct builder *b, struct ynode *n)
{
	struct ynode *parent;

	if (!b->depth) {
		b->t->root = n;
		return 0;
	}
	parent = b->stack[b->depth - 1];
	if (parent->type == YNODE_MAP && parent->nkids % 2 == 0) {
		/* n is a key: reject duplicates here, where both places are known. */
		if (n->type != YNODE_SCALAR) {
			diag_error(b->d, n->loc, "mapping keys must be plain words, not a %s", ynode_type_name(n));
			b->failed = true;
			return -EINVAL;
		} else if (!n->broken) { /* an unknown alias as a key: said already */
			const struct ynode *first = NULL;
			int r = keyset_put(&b->keys[b->depth - 1], n, &first);

			if (r < 0)
				return r;
			if (r)
				diag_error(b->d, n->loc, "duplicate key '%s' (first given at line %u)", n->str,
					   first->loc.line);
		}
	}
	parent->weight += n->weight;
	return kid_add(parent, n);
}

static int anchor_add(struct builder *b, const char *name, struct ynode *n)
{
	if (b->nanchors == b->capanchors) {
		size_t cap = b->capanchors ? b->capanchors * 2 : 8;
		struct anchor *v = realloc(b->anchors, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->anchors = v;
		b->capanchors = cap;
	}
	b->anchors[b->nanchors].name = strdup(name);
	if (!b->anchors[b->nanchors].name)
		return -ENOMEM;
	b->anchors[b->nanchors++].node = n;
	return 0;
}

static struct ynode *anchor_find(struct builder *b, const char *name)
{
	/* Latest definition wins, as YAML says anchors may be redefined. */
	for (size_t i = b->nanchors; i-- > 0;)
		if (strcmp(b->anchors[i].name, name) == 0)
			return b->anchors[i].node;
	return NULL;
}

static bool count_expansion(struct builder *b, size_t weight, yaml_mark_t m, bool alias)
{
	b->expanded += weight;
	if (b->expanded > YTREE_MAX_EXPANDED) {
		if (alias)
			diag_error(b->d, mark_loc(b, m),
				   "aliases expand the document beyond %u nodes" DIAG_FIX
				   "; write the data out or use fewer "
				   "nested aliases",
				   YTREE_MAX_EXPANDED);
		else
			diag_error(b->d, mark_loc(b, m),
				   "the document has more than %u nodes" DIAG_FIX
				   "; put large address lists in a set file ({ "
				   "file: PATH })",
				   YTREE_MAX_EXPANDED);
		b->failed = true;
		return false;
	}
	return true;
}

/*
 * A policy has no use for YAML tags, and ignoring one changes meaning
 * silently: `from: ! 192.0.2.99` is a tag "!" on 192.0.2.99, not a negation.
 * Every explicit tag is an error.
 */
static void refuse_tag(struct builder *b, const yaml_char_t *tag, yaml_mark_t m)
{
	if (!tag)
		return;
	if (!strcmp((const char *)tag, "!"))
		diag_error(b->d, mark_loc(b, m),
			   "a leading '!' is a YAML tag, which nfbox does not take (it would be ignored, not "
			   "negate)" DIAG_FIX "; "
			   "quote the value if the '!' belongs to it, e.g. \"!office\"");
	else if (!strncmp((const char *)tag, "tag:yaml.org,2002:", 18))
		diag_error(b->d, mark_loc(b, m),
			   "YAML tag '!!%s': nfbox takes no tags" DIAG_FIX
			   "; remove it, or quote the value if it is part of it",
			   (const char *)tag + 18);
	else
		diag_error(b->d, mark_loc(b, m),
			   "YAML tag '%s': nfbox takes no tags" DIAG_FIX
			   "; remove it, or quote the value if it is part of it",
			   (const char *)tag);
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	struct ynode *n = node_new(b, YNODE_SCALAR, ev->start_mark);

	refuse_tag(b, ev->data.scalar.tag, ev->start_mark);
	if (!n)
		return -ENOMEM;
	/* A token on one line is underlined whole (quotes included). */
	if (ev->end_mark.line == ev->start_mark.line && ev->end_mark.column > ev->start_mark.column)
		n->loc.len = (unsigned)(ev->end_mark.column - ev->start_mark.column);
	n->len = ev->data.scalar.length;
	n->str = malloc(n->len + 1);
	if (!n->str)
		return -ENOMEM;
	memcpy(n->str, ev->data.scalar.value, n->len);
	n->str[n->len] = '\0';
	n->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
		    ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
		    ev->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
		    ev->data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
	if (ev->data.scalar.anchor && anchor_add(b, (const char *)ev->data.scalar.anchor, n))
		return -ENOMEM;
	if (!count_expansion(b, 1, ev->start_mark, false))
		return -EINVAL;
	return attach(b, n);
}

static int on_open(struct builder *b, const yaml_event_t *ev, enum ynode_type type)
{
	const yaml_char_t *anchor = type == YNODE_SEQ ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
	struct ynode *n = node_new(b, type, ev->start_mark);

	refuse_tag(b, type == YNODE_SEQ ? ev->data.sequence_start.tag : ev->data.mapping_start.tag, ev->start_mark);
	if (!n)
		return -ENOMEM;
	if (b->depth == YTREE_MAX_DEPTH) {
		diag_error(b->d, n->loc, "nesting deeper than %d levels", YTREE_MAX_DEPTH);
		b->failed = true;
		return -EINVAL;
	}
	if (anchor && anchor_add(b, (const char *)anchor, n))
		return -ENOMEM;
	if (!count_expansion(b, 1, ev->start_mark, false))
		return -EINVAL;
	b->stack[b->depth++] = n;
	return 0;
}

static int on_close(struct builder *b)
{
	struct ynode *n = b->stack[--b->depth];

	keyset_free(&b->keys[b->depth]);

	return attach(b, n);
}

static int on_alias(struct builder *b, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	struct ynode *target = anchor_find(b, name);

	if (!target) {
		struct ynode *n = node_new(b, YNODE_SCALAR, ev->start_mark);
		const char **names = calloc(b->nanchors + 1, sizeof(*names));
		const char *near = NULL;

		for (size_t i = 0; names && i < b->nanchors; i++)
			names[i] = b->anchors[i].name;
		if (names)
			near = diag_closest(name, names);
		free(names);
		if (near)
			diag_error(b->d, mark_loc(b, ev->start_mark),
				   "unknown alias '*%s'" DIAG_FIX "; did you mean '*%s'?", name, near);
		else
			diag_error(b->d, mark_loc(b, ev->start_mark),
				   "unknown alias '*%s': an alias names an anchor '&%s' given earlier in the file",
				   name, name);
		/* Keep its place, or the keys after it would shift to values. */
		if (!n || !(n->str = strdup("")))
			return -ENOMEM;
		n->broken = true;
		return attach(b, n);
	}
	/* An alias of a collection that is still open would make a cycle. */
	for (size_t i = 0; i < b->depth; i++) {
		if (b->stack[i] == target) {
			diag_error(b->d, mark_loc(b, ev->start_mark), "alias '*%s' refers to a node that contains it",
				   name);
			return 0;
		}
	}
	if (!count_expansion(b, target->weight, ev->start_mark, true))
		return -EINVAL;
	/* Shared, not copied: the tree is read-only after parsing. */
	return attach(b, target);
}

static bool has(const char *s, const char *part)
{
	return s && strstr(s, part);
}

/* libyaml's commonest complaints, in the words of what to fix; the place
 * where the unclosed thing opened is libyaml's context mark. */
static bool plain_words(struct builder *b, const yaml_parser_t *p, const char *at, const char *end, struct loc loc,
			const char *hint)
{
	unsigned open_line = (unsigned)p->context_mark.line + 1, open_col = (unsigned)p->context_mark.column + 1;

	if (has(p->problem, "cannot start any token") && at < end && *at == '\t') {
		diag_error(b->d, loc, "a tab in the indentation: YAML indents with spaces only");
	} else if (has(p->problem, "expected ',' or ']'")) {
		diag_error(b->d, loc,
			   "the '[' at line %u, column %u is not closed: a ']' (or a ',' between entries) is missing "
			   "before this%s",
			   open_line, open_col, hint);
	} else if (has(p->problem, "expected ',' or '}'")) {
		diag_error(b->d, loc,
			   "the '{' at line %u, column %u is not closed: a '}' (or a ',' between entries) is missing "
			   "before this%s",
			   open_line, open_col, hint);
	} else if (has(p->problem, "end of stream") && has(p->context, "quoted scalar")) {
		/* at the quote itself: the end of the file says nothing */
		diag_error(b->d, mark_loc(b, p->context_mark), "this quote is not closed (the file ends inside it)");
	} else if (has(p->problem, "expected '-' indicator") || has(p->problem, "did not find expected key")) {
		diag_error(b->d, loc,
			   "this line's indentation does not fit the %s that starts at line %u: its entries line up "
			   "under one another%s",
			   has(p->problem, "'-'") ? "list" : "mapping", open_line, hint);
	} else if (has(p->problem, "mapping values are not allowed")) {
		diag_error(b->d, loc,
			   "a ': ' where no key can start" DIAG_FIX
			   ": quote a value that holds ': ', or check the indentation of "
			   "this line%s",
			   hint);
	} else {
		return false;
	}
	return true;
}

/* Where a mark is in the text: libyaml counts characters, not bytes, so
 * walk to its line and then over its column in UTF-8 characters. */
static const char *mark_ptr(const struct source *src, yaml_mark_t m)
{
	const char *p = src->text, *end = src->text + src->len;

	for (size_t line = 0; line < m.line && p < end; p++)
		if (*p == '\n')
			line++;
	for (size_t col = 0; col < m.column && p < end && *p != '\n'; col++)
		do
			p++;
		while (p < end && ((unsigned char)*p & 0xc0) == 0x80);
	return p;
}

static void report_parser_error(struct builder *b, const yaml_parser_t *p)
{
	yaml_mark_t m = p->problem_mark;
	struct loc loc = mark_loc(b, m);
	const char *at = mark_ptr(b->src, m), *end = b->src->text + b->src->len;
	const char *hint = end - at >= 2 && at[0] == ':' && at[1] == ':'
				   ? "; an IPv6 address that starts with ':' must be quoted, e.g. \"::/0\""
				   : "";

	if (p->error == YAML_MEMORY_ERROR) {
		diag_error(b->d, loc, "out of memory while parsing");
	} else if (plain_words(b, p, at, end, loc, hint)) {
		/* said in plain words */
	} else if (p->context) {
		diag_error(b->d, loc, "YAML syntax: %s %s (line %u)%s", p->problem ? p->problem : "error", p->context,
			   (unsigned)p->context_mark.line + 1, hint);
	} else {
		diag_error(b->d, loc, "YAML syntax: %s%s", p->problem ? p->problem : "error", hint);
	}
}

static int handle_event(struct builder *b, const yaml_event_t *ev, int *docs)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_open(b, ev, YNODE_SEQ);
	case YAML_MAPPING_START_EVENT:
		return on_open(b, ev, YNODE_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_close(b);
	case YAML_ALIAS_EVENT:
		return on_alias(b, ev);
	case YAML_DOCUMENT_START_EVENT:
		if (++*docs > 1) {
			diag_error(b->d, mark_loc(b, ev->start_mark),
				   "a policy file holds one YAML document" DIAG_FIX
				   "; remove this '---' and what follows");
			b->failed = true;
			return -EINVAL;
		}
		return 0;
	default:
		return 0;
	}
}

int ytree_parse(struct ytree *t, const struct source *src, struct diags *d)
{
	struct builder b = { .t = t, .src = src, .d = d };
	yaml_parser_t parser;
	yaml_event_t ev;
	int docs = 0, r = 0;
	bool done = false;

	memset(t, 0, sizeof(*t));
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)src->text, src->len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			report_parser_error(&b, &parser);
			r = -EINVAL;
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		r = handle_event(&b, &ev, &docs);
		yaml_event_delete(&ev);
		if (r)
			break;
	}
	yaml_parser_delete(&parser);
	for (size_t i = 0; i < YTREE_MAX_DEPTH; i++)
		keyset_free(&b.keys[i]);
	for (size_t i = 0; i < b.nanchors; i++)
		free(b.anchors[i].name);
	free(b.anchors);
	if (r == -ENOMEM)
		diag_error(d, (struct loc){ .src = src }, "out of memory while parsing");
	/* Duplicate keys and unknown aliases are reported but leave a usable
	 * tree, so validation can go on and report the rest. Open collections
	 * of a failed parse were never attached: t->all frees them. */
	if (r || b.failed || !done)
		return -EINVAL;
	return 0;
}

void ytree_free(struct ytree *t)
{
	for (size_t i = 0; i < t->nall; i++) {
		free(t->all[i]->str);
		free(t->all[i]->kids);
		free(t->all[i]);
	}
	free(t->all);
	memset(t, 0, sizeof(*t));
}

static const struct ynode *map_find(const struct ynode *map, const char *key)
{
	if (!map || map->type != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < ynode_map_len(map); i++)
		if (strcmp(ynode_map_key(map, i)->str, key) == 0)
			return ynode_map_val(map, i);
	return NULL;
}

const struct ynode *ynode_get(const struct ynode *map, const char *key)
{
	const struct ynode *v = map_find(map, key);

	return v && !v->broken ? v : NULL;
}

bool ynode_is_null(const struct ynode *n)
{
	return n->type == YNODE_SCALAR && !n->quoted && !n->broken &&
	       (!n->str[0] || !strcmp(n->str, "~") || !strcmp(n->str, "null") || !strcmp(n->str, "Null") ||
		!strcmp(n->str, "NULL"));
}

bool ynode_has(const struct ynode *map, const char *key)
{
	return map_find(map, key) != NULL;
}

const char *ynode_type_name(const struct ynode *n)
{
	switch (n->type) {
	case YNODE_SCALAR:
		return "scalar";
	case YNODE_SEQ:
		return "list";
	default:
		return "mapping";
	}
}
