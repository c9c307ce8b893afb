/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Table inet nfbox (ir.h) in nft syntax, as `nfbox plan --nft` shows it:
 * what `nft -c -f` checks and what `nft list table inet nfbox` reads back. */
#ifndef NFBOX_NFT_PRINT_H
#define NFBOX_NFT_PRINT_H

#include <stdio.h>

#include "backend/nftables/nft/ir.h"

void nfr_print(const struct nfr_table *t, FILE *f);

#endif
