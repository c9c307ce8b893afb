/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/pct.h"

#include <stdlib.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool pct_escaped(unsigned char c)
{
	return c <= ' ' || c == '%' || c >= 0x7f;
}

void pct_encode(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (pct_escaped(c))
			fprintf(f, "%%%02X", c);
		else
			fputc(c, f);
	}
}

char *pct_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= n || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0 ||
		    !(hexval(s[i + 1]) | hexval(s[i + 2]))) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
		i += 2;
	}
	*o = '\0';
	return out;
}
