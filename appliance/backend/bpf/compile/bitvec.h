/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Rule bit vectors and their compressed encoding (format in bpf/nfbox.h). */
#ifndef NFBOX_BITVEC_H
#define NFBOX_BITVEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A dense bit vector over the rules of one hook. */
struct bitvec {
	uint32_t nwords;
	uint64_t *w;
};

static inline uint32_t bitvec_words_for(uint32_t nbits)
{
	return nbits ? (nbits + 63) / 64 : 1;
}

/* Summary words needed for nwords vector words. */
static inline uint32_t bitvec_nsum(uint32_t nwords)
{
	return (nwords + 63) / 64;
}

int bitvec_init(struct bitvec *v, uint32_t nbits);
void bitvec_free(struct bitvec *v);
static inline void bitvec_set(struct bitvec *v, uint32_t bit)
{
	v->w[bit / 64] |= UINT64_C(1) << (bit % 64);
}
static inline bool bitvec_test(const struct bitvec *v, uint32_t bit)
{
	return v->w[bit / 64] >> (bit % 64) & 1;
}

/* Words the encoded form of v takes. */
uint32_t bitvec_encoded_words(const uint64_t *w, uint32_t nwords);

/* Encode nwords words into out (capacity out_cap words): summary, ranks,
 * packed nonzero words. Returns the words written, or -ENOSPC. */
int bitvec_encode(const uint64_t *w, uint32_t nwords, uint64_t *out, uint32_t out_cap);

/* Word `word` of an encoded vector (reference decoder, mirrors the BPF side). */
uint64_t bitvec_encoded_word(const uint64_t *enc, uint32_t nsum, uint32_t word);

#endif
