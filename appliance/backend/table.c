/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The backends' table (backends.def). */
#include <string.h>

#include "backend/backend.h"

const struct backend_ops *const backend_table[] = {
#define BACKEND(name) &backend_##name##_ops,
#include "backend/backends.def"
#undef BACKEND
};
const unsigned backend_count = sizeof(backend_table) / sizeof(backend_table[0]);

unsigned backend_index(const struct policy *p)
{
	for (unsigned i = 0; p && i < backend_count; i++)
		if (backend_table[i]->policy_backend == p->opt.backend)
			return i;
	return 0;
}

const struct backend_ops *backend_named(const char *name)
{
	for (unsigned i = 0; i < backend_count; i++)
		if (!strcmp(backend_table[i]->name, name))
			return backend_table[i];
	return NULL;
}
