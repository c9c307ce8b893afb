/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Conntrack on and off for the classifier. Conntrack tracks a namespace's
 * traffic only once something needs it; table inet nfbox holds a chain
 * that no hook calls with one rule that loads the conntrack state: that
 * takes conntrack's reference (IPv4 and IPv6) at no cost per packet, and
 * the classifier reads the state from skb->_nfct.
 */
#ifndef NFBOX_NFT_CONNTRACK_H
#define NFBOX_NFT_CONNTRACK_H

#include "policy/diag/diag.h"

/* Create, or recreate in one transaction, table inet nfbox. */
int nft_conntrack_on(struct diags *d);
/* Delete table inet nfbox if it exists. */
int nft_conntrack_off(struct diags *d);

#endif
