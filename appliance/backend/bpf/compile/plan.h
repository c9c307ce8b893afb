/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The compiled plan: what the BPF engine loads, per hook. Rules get bits in
 * file order; each packet field gets a lookup table whose entries name a
 * vector (the rules that field value allows). A vector is stored as the
 * field's wildcard rules (rules that do not restrict the field) plus a
 * sorted list of the specific rules; identical vectors are stored once.
 */
#ifndef NFBOX_PLAN_H
#define NFBOX_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "backend/bpf/compile/bitvec.h"
#include "bpf/nfbox.h"
#include "policy/policy.h"

struct plan_vec {
	uint8_t field;	 /* NFB_F_* */
	uint32_t off, n; /* specific rule bits: plan_hook.bits[off .. off + n) */
};

struct plan_lpm {
	struct prefix pfx;
	uint8_t dir; /* 0 source, 1 destination */
	uint32_t vec;
};

struct plan_iface {
	char ifname[POLICY_IFNAMSIZ];
	uint8_t dir; /* 0 input, 1 output */
	uint32_t vec;
};

/* A run of equal vectors over a port (or misc value) range. */
struct plan_seg {
	uint8_t dir; /* ports: 0 source, 1 destination */
	uint8_t cls; /* NFB_PC_* for ports, NFB_MC_* for misc */
	uint16_t lo, hi;
	uint32_t vec;
};

struct plan_hook {
	bool enabled;
	enum policy_action def;
	uint32_t nrules;
	const struct rule **rules; /* by bit */
	uint32_t fields;	   /* NFB_F_* bits that some rule restricts */
	uint32_t nwords, nsum;
	struct bitvec wild[NFB_F_MAX];
	uint32_t miss[NFB_F_MAX]; /* vector ids */
	uint32_t ct[NFB_CT_MAX];
	uint32_t sport_none;
	struct plan_lpm *lpm[2]; /* [0] IPv4, [1] IPv6, in preorder */
	uint32_t nlpm[2];
	struct plan_iface *ifaces;
	uint32_t nifaces;
	struct plan_seg *ports, *misc;
	uint32_t nports, nmisc;
	struct plan_vec *vecs;
	uint32_t nvecs;
	uint32_t *bits; /* arena of specific rule lists */
	uint32_t nbits, capbits;
	void *intern; /* vector de-duplication table */
};

struct plan {
	const struct policy *pol;
	struct plan_hook hook[NFB_HOOK_MAX];
};

/* The interface entry of hook h (direction dir) that interface ifname gets:
 * its own, else the longest wildcard it falls under; -1 for none (the
 * miss vector). */
int64_t plan_iface_find(const struct plan_hook *h, uint8_t dir, const char *ifname);

/* Compile p into *out. Returns 0 or -ENOMEM. */
int plan_compile(const struct policy *p, struct plan **out);
void plan_free(struct plan *pl);

/* The dense form of vector v of hook h (nwords words into out). */
void plan_vec_dense(const struct plan_hook *h, uint32_t v, uint64_t *out);

/* Blob of encoded vectors for the BPF engine (format in bpf/nfbox.h). */
struct plan_blob {
	uint64_t *words; /* nchunks * NFB_CHUNK_WORDS */
	uint32_t nchunks;
	uint32_t *loc[NFB_HOOK_MAX]; /* locator of each vector id */
	uint32_t unique;	     /* vectors stored after de-duplication */
};
int plan_encode(const struct plan *pl, struct plan_blob *out);
void plan_blob_free(struct plan_blob *b);

/* Compile and, for the BPF backend, encode, as `nfbox run` loads a policy
 * and `nfbox validate` checks it: an error says what does not fit and what
 * to do (into d, returning -errno). blob may be NULL (then it is freed
 * here); with backend nftables it stays empty. */
int plan_make(const struct policy *p, struct plan **pl, struct plan_blob *blob, struct diags *d);

/* Readable, stable text form; and the same as JSON. */
void plan_print(const struct plan *pl, FILE *f);
void plan_print_json(const struct plan *pl, FILE *f);

#endif
