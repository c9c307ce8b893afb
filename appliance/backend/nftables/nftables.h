/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the nftables backend: its state, shared by its files. */
#ifndef NFBOX_BACKEND_NFTABLES_NFTABLES_H
#define NFBOX_BACKEND_NFTABLES_NFTABLES_H

#include <stddef.h>

#include "backend/backend.h"

struct nflog;
struct lasthit;
struct nft_tracer;

struct nft_backend {
	struct backend b;
	struct nflog *nflog; /* the verdict events (events.c), while in force */
	struct handler nflog_h;
	uint64_t nflog_lost_seen;
	struct lasthit *lasthit;   /* each rule's last hit (lasthit.c) */
	struct nft_tracer *tracer; /* the live trace (trace.c), NULL when none runs */
};

static inline struct nft_backend *nft_of(struct backend *b)
{
	return (struct nft_backend *)((char *)b - offsetof(struct nft_backend, b));
}

static inline const struct nft_backend *nft_of_const(const struct backend *b)
{
	return (const struct nft_backend *)((const char *)b - offsetof(struct nft_backend, b));
}

/* events.c: verdict events logged by the rules (NFLOG group
 * NFT_NFLOG_GROUP), followed from open to close. */
void nft_events_open(struct nft_backend *nb);
void nft_events_close(struct nft_backend *nb);
/* An IP packet's addresses, protocol, ports (ICMP: type << 8 | code) and
 * length into v, read as the classifier reads them (nfproto: NFPROTO_IPV4
 * or _IPV6, else -EAFNOSUPPORT). */
int nft_packet_fields(int nfproto, const uint8_t *p, size_t n, struct vevent *v);

/* trace.c: the live trace (backend.h: trace_start, trace_stop). */
int nft_trace_start(struct backend *b, const struct loaded *cur, const struct trace_filter *f, struct diags *d);
void nft_trace_stop(struct backend *b);

/* dyn.c: the dynamic sets' operations. */
int nft_dyn_apply(struct backend *b, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		  struct diags *d);
void nft_dyn_undo(struct backend *b, const struct dyn_set *set, const struct dyn_undo *u);
int nft_dyn_read_back(struct backend *b, char **text, size_t *len, uint64_t *n, struct diags *d);
int nft_dyn_walk_begin(struct backend *b, void **walker);
int nft_dyn_walk(void *walker, void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg), void *arg);
void nft_dyn_walk_end(void *walker);

#endif
