/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Plan -> blob of compressed vectors (format in bpf/nfbox.h), packed into
 * fixed-size chunks; equal encodings are stored once across all hooks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bpf/compile/plan.h"
#include "base/cleanup.h"
#include "base/diag.h"

struct stored {
	uint64_t hash;
	uint32_t loc;
	uint32_t len;
	uint32_t nsum;
};

struct packer {
	struct plan_blob *b;
	uint32_t used; /* words used in the last chunk */
	uint32_t cap_chunks;
	struct stored *tab; /* open addressing; len == 0 marks empty */
	uint32_t cap, n;
};

static uint64_t hash_words(const uint64_t *w, uint32_t n, uint32_t nsum)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ nsum;

	for (uint32_t i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static uint64_t *loc_words(const struct plan_blob *b, uint32_t loc)
{
	return b->words + (size_t)(loc >> NFB_LOC_SHIFT) * NFB_CHUNK_WORDS + (loc & NFB_LOC_OFF_MASK);
}

static int packer_new_chunk(struct packer *pk)
{
	struct plan_blob *b = pk->b;

	if (b->nchunks == NFB_MAX_CHUNKS)
		return -E2BIG;
	if (b->nchunks == pk->cap_chunks) {
		uint32_t cap = pk->cap_chunks ? pk->cap_chunks * 2 : 4;
		uint64_t *w = realloc(b->words, (size_t)cap * NFB_CHUNK_WORDS * sizeof(*w));

		if (!w)
			return -ENOMEM;
		b->words = w;
		pk->cap_chunks = cap;
	}
	memset(b->words + (size_t)b->nchunks * NFB_CHUNK_WORDS, 0, NFB_CHUNK_WORDS * sizeof(uint64_t));
	b->nchunks++;
	pk->used = 0;
	return 0;
}

static int table_grow(struct packer *pk)
{
	uint32_t cap = pk->cap ? pk->cap * 2 : 1024;
	struct stored *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (uint32_t j = 0; j < pk->cap; j++) {
		uint64_t i;

		if (!pk->tab[j].len)
			continue;
		for (i = pk->tab[j].hash & (cap - 1); tab[i].len; i = (i + 1) & (cap - 1))
			;
		tab[i] = pk->tab[j];
	}
	free(pk->tab);
	pk->tab = tab;
	pk->cap = cap;
	return 0;
}

/* Store the n-word encoding enc of a hook with nsum summary words. */
static int packer_put(struct packer *pk, const uint64_t *enc, uint32_t n, uint32_t nsum, uint32_t *loc)
{
	uint64_t h = hash_words(enc, n, nsum), i;
	int r;

	if (pk->n * 2 >= pk->cap && (r = table_grow(pk)) < 0)
		return r;
	for (i = h & (pk->cap - 1); pk->tab[i].len; i = (i + 1) & (pk->cap - 1)) {
		const struct stored *s = &pk->tab[i];

		if (s->hash == h && s->len == n && s->nsum == nsum &&
		    memcmp(loc_words(pk->b, s->loc), enc, n * sizeof(*enc)) == 0) {
			*loc = s->loc;
			return 0;
		}
	}
	if (!pk->b->nchunks || pk->used + n > NFB_CHUNK_WORDS) {
		if ((r = packer_new_chunk(pk)) < 0)
			return r;
	}
	*loc = (pk->b->nchunks - 1) << NFB_LOC_SHIFT | pk->used;
	memcpy(loc_words(pk->b, *loc), enc, n * sizeof(*enc));
	pk->used += n;
	pk->tab[i] = (struct stored){ .hash = h, .loc = *loc, .len = n, .nsum = nsum };
	pk->n++;
	pk->b->unique++;
	return 0;
}

static int encode_hook(struct packer *pk, const struct plan_hook *h, uint32_t *locs)
{
	_cleanup_free_ uint64_t *dense = calloc(h->nwords, sizeof(*dense));
	_cleanup_free_ uint64_t *enc = calloc(NFB_VEC_MAX_WORDS, sizeof(*enc));
	int r = 0;

	if (!dense || !enc)
		return -ENOMEM;
	for (uint32_t v = 0; v < h->nvecs && !r; v++) {
		int n;

		plan_vec_dense(h, v, dense);
		n = bitvec_encode(dense, h->nwords, enc, NFB_VEC_MAX_WORDS);
		r = n < 0 ? n : packer_put(pk, enc, (uint32_t)n, h->nsum, &locs[v]);
	}
	return r;
}

int plan_encode(const struct plan *pl, struct plan_blob *out)
{
	struct packer pk = { .b = out };
	int r = 0;

	memset(out, 0, sizeof(*out));
	for (int hk = 0; hk < NFB_HOOK_MAX && !r; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		out->loc[hk] = calloc(h->nvecs ? h->nvecs : 1, sizeof(uint32_t));
		r = out->loc[hk] ? encode_hook(&pk, h, out->loc[hk]) : -ENOMEM;
	}
	free(pk.tab);
	if (r)
		plan_blob_free(out);
	return r;
}

void plan_blob_free(struct plan_blob *b)
{
	free(b->words);
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		free(b->loc[hk]);
	memset(b, 0, sizeof(*b));
}

int plan_make(const struct policy *p, struct plan **pl, struct plan_blob *blob, struct diags *d)
{
	struct plan_blob tmp = { 0 };
	int r;

	*pl = NULL;
	if ((r = plan_compile(p, pl)) < 0)
		return diag_errno(d, r, "cannot compile the policy");
	if (p->opt.backend != POLICY_BACKEND_BPF)
		return 0; /* nftables enforces: the plan only names the counters */
	r = plan_encode(*pl, blob ? blob : &tmp);
	plan_blob_free(&tmp);
	if (r == -E2BIG)
		return diag_fail(d, r,
				 "the policy does not fit the BPF engine: its match vectors need more than %u MiB "
				 "(%u chunks of 64 KiB); rules that alternate between kinds of match (a port, then an "
				 "address, ...) cost the most" DIAG_FIX
				 ": put rules of one kind together, merge them through sets "
				 "and services, or use 'backend: nftables'",
				 NFB_MAX_CHUNKS * NFB_CHUNK_WORDS * 8u >> 20, NFB_MAX_CHUNKS);
	if (r < 0)
		return diag_errno(d, r, "cannot encode the policy");
	return 0;
}
