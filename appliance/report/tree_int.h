/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the report tree: a node (tree.c makes them, the writers walk them). */
#ifndef NFBOX_REPORT_TREE_INT_H
#define NFBOX_REPORT_TREE_INT_H

#include "report/tree.h"

struct rep {
	enum rep_kind kind;
	char *key; /* NULL in a list */
	union {
		char *s;    /* REP_STRING */
		uint64_t u; /* REP_UINT, REP_BOOL */
		int64_t i;  /* REP_INT, REP_MS */
	};
	const struct rep_metric *metric;
	rep_text_fn *text;
	bool hidden; /* a series only */
	bool oom;    /* the root: a node could not be made */
	struct rep *parent, *first, *last, *next;
	uint32_t n;
};

#endif
