/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The named counters of table inet nfbox, read back from the kernel: the
 * nftables backend's rule counters for `nfbox stats`, and the values a
 * reload carries over into the table that replaces them. */
#ifndef NFBOX_NFT_COUNTERS_H
#define NFBOX_NFT_COUNTERS_H

#include <stdint.h>

#include "backend/nftables/nft/ir.h"

struct nft_counters {
	struct nfr_counter *v; /* sorted by name */
	uint32_t n;
};

/* Every counter object of the table (none if it does not exist). 0 or -errno. */
int nft_counters_read(struct nft_counters *out);
/* The same, and with reset each counter set to 0 as it is read (one
 * atomic read-and-zero per counter, by the kernel). */
int nft_counters_read_reset(struct nft_counters *out, bool reset);
void nft_counters_free(struct nft_counters *c);
/* The one counter called name. 0 or -errno (-ENOENT: none). */
int nft_counter_read(const char *name, struct nfr_counter *out);
/* The counter called name, or NULL. */
const struct nfr_counter *nft_counters_find(const struct nft_counters *c, const char *name);

#endif
