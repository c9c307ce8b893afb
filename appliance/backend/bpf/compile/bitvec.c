/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "backend/bpf/compile/bitvec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bitvec_init(struct bitvec *v, uint32_t nbits)
{
	v->nwords = bitvec_words_for(nbits);
	v->w = calloc(v->nwords, sizeof(*v->w));
	return v->w ? 0 : -ENOMEM;
}

void bitvec_free(struct bitvec *v)
{
	free(v->w);
	v->w = NULL;
	v->nwords = 0;
}

uint32_t bitvec_encoded_words(const uint64_t *w, uint32_t nwords)
{
	uint32_t n = 2 * bitvec_nsum(nwords);

	for (uint32_t i = 0; i < nwords; i++)
		n += w[i] != 0;
	return n;
}

int bitvec_encode(const uint64_t *w, uint32_t nwords, uint64_t *out, uint32_t out_cap)
{
	uint32_t nsum = bitvec_nsum(nwords);
	uint32_t need = bitvec_encoded_words(w, nwords);
	uint32_t pos = 2 * nsum;

	if (need > out_cap)
		return -ENOSPC;
	memset(out, 0, 2 * nsum * sizeof(*out));
	for (uint32_t i = 0; i < nwords; i++) {
		if (!w[i])
			continue;
		out[i / 64] |= UINT64_C(1) << (i % 64);
		out[pos++] = w[i];
	}
	for (uint32_t k = 1; k < nsum; k++)
		out[nsum + k] = out[nsum + k - 1] + (uint64_t)__builtin_popcountll(out[k - 1]);
	/* R[0] (always 0 as a rank) holds the top summary T. */
	for (uint32_t k = 0; k < nsum; k++)
		out[nsum] |= (uint64_t)(out[k] != 0) << k;
	return (int)need;
}

uint64_t bitvec_encoded_word(const uint64_t *enc, uint32_t nsum, uint32_t word)
{
	uint32_t k = word / 64, b = word % 64;
	uint64_t s;

	if (k >= nsum)
		return 0;
	s = enc[k];
	if (!(s >> b & 1))
		return 0;
	return enc[2 * nsum + (k ? enc[nsum + k] : 0) + (uint64_t)__builtin_popcountll(s & ((UINT64_C(1) << b) - 1))];
}
