/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A shared set's records in etcd (pack.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/conf.h"
#include "fleet/pack.h"
#include "policy/syntax/parse.h"

bool pack_key_is_pack(const char *key)
{
	const char *slash = strchr(key, '/');

	return slash && slash[1] == '+';
}

/* A pack's id: letters, digits, '.', '-', '_' (it is nfbox's: node.run.seq). */
static bool id_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
		      *s == '-' || *s == '_'))
			return false;
	return true;
}

static int prefix_of(const char *s, struct prefix *p)
{
	const char *why;
	bool host_bits;

	memset(p, 0, sizeof(*p));
	return parse_prefix(s, p, &host_bits, &why) < 0 || host_bits ? -EINVAL : 0;
}

static void by_of(json_t *o, char *by, size_t blen)
{
	const char *b = json_string_value(json_object_get(o, "by"));

	snprintf(by, blen, "fleet:%s", b && fleet_name_ok(b) ? b : "?");
}

int pack_decode(const char *key, const char *value, size_t vlen, bool del, char set[POLICY_MAX_NAME + 1], char *by,
		size_t blen, struct mirror_item **items, uint32_t *n, uint32_t *bad)
{
	const char *slash = strchr(key, '/'), *k;
	json_t *o = NULL, *entries, *v;
	json_error_t je;
	uint32_t cap;

	*items = NULL;
	*n = *bad = 0;
	snprintf(by, blen, "fleet:?");
	if (!slash || slash == key || (size_t)(slash - key) > POLICY_MAX_NAME)
		return -EINVAL;
	memcpy(set, key, (size_t)(slash - key));
	set[slash - key] = '\0';
	if (slash[1] != '+') { /* one entry */
		if (!(*items = calloc(1, sizeof(**items))))
			return -ENOMEM;
		if (prefix_of(slash + 1, &(*items)[0].pfx) < 0) {
			free(*items);
			*items = NULL;
			return -EINVAL;
		}
		if (!del) {
			o = json_loadb(value, vlen, 0, &je);
			(*items)[0].expires = json_integer_value(json_object_get(o, "expires"));
			by_of(o, by, blen);
			json_decref(o);
		}
		*n = 1;
		return 0;
	}
	if (!id_ok(slash + 2))
		return -EINVAL;
	if (del) {
		*items = calloc(1, sizeof(**items));
		return *items ? 0 : -ENOMEM;
	}
	o = json_loadb(value, vlen, 0, &je);
	entries = json_object_get(o, "entries");
	if (!json_is_object(entries)) {
		json_decref(o);
		return -EINVAL;
	}
	by_of(o, by, blen);
	cap = (uint32_t)json_object_size(entries);
	if (!(*items = calloc(cap + 1, sizeof(**items)))) {
		json_decref(o);
		return -ENOMEM;
	}
	json_object_foreach(entries, k, v)
	{
		struct mirror_item *it = &(*items)[*n];

		if (!json_is_integer(v) || json_integer_value(v) < 0 || prefix_of(k, &it->pfx) < 0) {
			(*bad)++;
			continue;
		}
		it->expires = json_integer_value(v);
		(*n)++;
	}
	json_decref(o);
	return 0;
}

char *pack_encode(const char *node, const char *origin, const struct mirror_item *items, uint32_t n)
{
	json_t *o = json_object(), *entries = json_object();
	char *out = NULL, pfx[64];

	if (!o || !entries || json_object_set_new(o, "by", json_string(node)) < 0 ||
	    json_object_set_new(o, "origin", json_string(origin ? origin : "")) < 0 ||
	    json_object_set(o, "entries", entries) < 0)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		policy_prefix_format(&items[i].pfx, pfx, sizeof(pfx));
		if (json_object_set_new(entries, pfx, json_integer(items[i].expires)) < 0)
			goto out;
	}
	out = json_dumps(o, JSON_COMPACT);
out:
	json_decref(entries);
	json_decref(o);
	return out;
}

int pack_prefix_cmp(const struct prefix *x, const struct prefix *y)
{
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return memcmp(x->addr, y->addr, 16);
}

static int cmp_pfx(const void *a, const void *b)
{
	return pack_prefix_cmp(a, b);
}

void pack_sort(struct prefix *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_pfx);
}

bool pack_has(const struct prefix *sorted, uint32_t n, const struct prefix *p)
{
	return n && bsearch(p, sorted, n, sizeof(*sorted), cmp_pfx) != NULL;
}

int pack_strip(const char *value, size_t vlen, const struct prefix *del, uint32_t ndel, char **out, bool *changed)
{
	json_t *o, *entries, *v;
	json_error_t je;
	const char *k;
	void *tmp;
	int r = 0;

	*out = NULL;
	*changed = false;
	o = json_loadb(value, vlen, 0, &je);
	entries = json_object_get(o, "entries");
	if (!json_is_object(entries)) {
		json_decref(o);
		return -EINVAL;
	}
	json_object_foreach_safe(entries, tmp, k, v)
	{
		struct prefix p;

		if (prefix_of(k, &p) == 0 && pack_has(del, ndel, &p)) {
			json_object_del(entries, k);
			*changed = true;
		}
	}
	if (json_object_size(entries) && !(*out = json_dumps(o, JSON_COMPACT)))
		r = -ENOMEM;
	json_decref(o);
	return r;
}
