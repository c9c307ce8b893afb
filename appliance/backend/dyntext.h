/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The dynamic sets' entries as a backend finds them in the kernel, written
 * in the saved file's format (dynset/dynset.h: dynsets_load reads it), for
 * a start whose saved file cannot be read (backend_ops.dyn_read_back).
 */
#ifndef NFBOX_BACKEND_DYNTEXT_H
#define NFBOX_BACKEND_DYNTEXT_H

#include <stdint.h>
#include <stdio.h>

#include "bpf/nfbox.h"

struct dyn_text {
	FILE *sets, *entries; /* the set lines, the entry lines */
	char *sbuf, *ebuf;
	size_t slen, elen;
	uint64_t n, orphans; /* entries written; left out (of no named set) */
	char names[NFB_MAX_DYNSETS][NFB_DYN_NAME_LEN];
};

/* 0 or -ENOMEM. */
int dyn_text_open(struct dyn_text *t);
/* Set id is named name. */
void dyn_text_set(struct dyn_text *t, uint16_t id, const char *name);
/* The id of set name, given the next free one if it has none yet; 0 if
 * every id is taken. */
uint16_t dyn_text_id(struct dyn_text *t, const char *name);
/* An entry of set id (the shape of engine_dyn_walk's callback; arg is t). */
void dyn_text_entry(uint16_t id, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms, void *arg);
/* The whole text (malloc'd) in *text. 0 or -ENOMEM; t is closed either way. */
int dyn_text_close(struct dyn_text *t, char **text, size_t *len);

#endif
