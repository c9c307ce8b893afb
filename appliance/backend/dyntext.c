/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The dynamic sets' entries found in the kernel, as text (dyntext.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dyntext.h"
#include "base/cleanup.h"
#include "dynset/dynset.h"

int dyn_text_open(struct dyn_text *t)
{
	memset(t, 0, sizeof(*t));
	if (!(t->sets = open_memstream(&t->sbuf, &t->slen)) || !(t->entries = open_memstream(&t->ebuf, &t->elen))) {
		char *text = NULL;
		size_t len;

		dyn_text_close(t, &text, &len);
		free(text);
		return -ENOMEM;
	}
	return 0;
}

void dyn_text_set(struct dyn_text *t, uint16_t id, const char *name)
{
	if (!id || id >= NFB_MAX_DYNSETS)
		return;
	snprintf(t->names[id], sizeof(t->names[id]), "%s", name);
	fprintf(t->sets, "set %s %u\n", name, id);
}

uint16_t dyn_text_id(struct dyn_text *t, const char *name)
{
	uint16_t id;

	for (id = 1; id < NFB_MAX_DYNSETS && t->names[id][0] && strcmp(t->names[id], name); id++)
		;
	if (id == NFB_MAX_DYNSETS)
		return 0;
	if (!t->names[id][0])
		dyn_text_set(t, id, name);
	return id;
}

void dyn_text_entry(uint16_t id, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms, void *arg)
{
	struct dyn_text *t = arg;
	struct dyn_entry e = { .plen = plen, .expires = expires_ms };
	char a[64];

	if (id >= NFB_MAX_DYNSETS || !t->names[id][0]) {
		t->orphans++;
		return;
	}
	memcpy(e.addr, addr, fam ? 16 : 4);
	dyn_entry_format(fam, &e, a, sizeof(a));
	fprintf(t->entries, "e %s %s %" PRId64 "\n", t->names[id], a, expires_ms);
	t->n++;
}

int dyn_text_close(struct dyn_text *t, char **text, size_t *len)
{
	_cleanup_free_ char *sbuf = NULL, *ebuf = NULL;
	char *all = NULL;
	bool ok = true;

	*text = NULL;
	*len = 0;
	if (t->sets)
		ok &= fclose(t->sets) == 0;
	if (t->entries)
		ok &= fclose(t->entries) == 0;
	t->sets = t->entries = NULL;
	sbuf = TAKE_PTR(t->sbuf);
	ebuf = TAKE_PTR(t->ebuf);
	if (!ok || asprintf(&all, "nfbox-dynsets 1\n%s%s", sbuf ? sbuf : "", ebuf ? ebuf : "") < 0)
		return -ENOMEM;
	*len = strlen(all);
	*text = all;
	return 0;
}
