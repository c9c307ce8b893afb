/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* nftables through libnftnl/libmnl, for what a netfilter BPF program cannot
 * do. nfbox owns one table, inet nfbox, and never touches any other. */
#ifndef NFBOX_NFT_H
#define NFBOX_NFT_H

#include <stddef.h>

#define NFT_TABLE_NAME "nfbox"

/* Create (or recreate, in one transaction) table inet nfbox with a rule
 * that uses conntrack state: that makes conntrack track this namespace's
 * traffic, which the classifier reads from skb->_nfct. The rule sits in a
 * chain that no hook calls, so it costs nothing per packet. */
int nft_setup(char *err, size_t len);
/* Delete table inet nfbox if it exists. */
int nft_teardown(char *err, size_t len);

#endif
