/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The report tree as JSON: every node but the hidden ones, in order. */
#include "base/json.h"
#include "report/tree_int.h"

static void value(struct json *j, const struct rep *v)
{
	switch (v->kind) {
	case REP_OBJECT:
	case REP_LIST:
		v->kind == REP_OBJECT ? json_object_begin(j) : json_array_begin(j);
		for (const struct rep *c = v->first; c; c = c->next) {
			if (c->hidden)
				continue;
			if (v->kind == REP_OBJECT)
				json_key(j, c->key);
			value(j, c);
		}
		v->kind == REP_OBJECT ? json_object_end(j) : json_array_end(j);
		break;
	case REP_STRING:
		json_str(j, v->s);
		break;
	case REP_BOOL:
		json_bool(j, v->u != 0);
		break;
	case REP_INT:
		json_i64(j, v->i);
		break;
	case REP_UINT:
		json_u64(j, v->u);
		break;
	case REP_MS:
		if (v->i)
			json_fixed(j, (double)v->i / 1000.0, 3);
		else
			json_null_value(j);
		break;
	case REP_NULL:
		json_null_value(j);
		break;
	}
}

void rep_write_json(const struct rep *root, FILE *f)
{
	struct json j;

	json_init(&j, f);
	value(&j, root);
	fputc('\n', f);
}
