/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The dynamic sets' entries read back from table inet nfbox (its sets
 * d_NAME_4 and d_NAME_6, nft/build.h): where the daemon takes them from
 * when its saved copy cannot be read. */
#ifndef NFBOX_NFT_DYNREAD_H
#define NFBOX_NFT_DYNREAD_H

#include <stdbool.h>
#include <stdint.h>

#define NFT_DYN_NAME 256

struct nft_dyn_read {
	/* each entry: the nftables set's name (d_NAME_4), the family (0 IPv4,
	 * 1 IPv6), the prefix, and the milliseconds it has left (0: no
	 * timeout) */
	void (*fn)(const char *set, int fam, const uint8_t *addr, uint8_t plen, int64_t left_ms, void *arg);
	void *arg;
	uint32_t sets; /* d_* sets found (an nftables backend was enforcing: they are the entries) */
	uint64_t n;    /* entries given to fn */
	uint64_t odd;  /* ranges that are not one prefix (none that nfbox made) */
};

/* Every element of every d_*_4 and d_*_6 set of the table. 0, or -errno
 * (-ENOENT: no table). */
int nft_dyn_read(struct nft_dyn_read *rd);

#endif
