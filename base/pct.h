/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Percent-encoding of text as one word (pct.c): the control protocol's
 * arguments, a dynamic entry's origin as it is saved.
 */
#ifndef NFBOX_BASE_PCT_H
#define NFBOX_BASE_PCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether c is written %XX: controls, space, '%', DEL and above. */
bool pct_escaped(unsigned char c);
/* s to f, each byte pct_escaped() as %XX. */
void pct_encode(FILE *f, const char *s);
/* s (n bytes) decoded (malloc'd); NULL if an escape is broken, decodes to
 * NUL, or memory runs out. */
char *pct_decode(const char *s, size_t n);

#endif
