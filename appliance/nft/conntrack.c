/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "nft/conntrack.h"

#include <errno.h>
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include "nft/batch.h"

#define NFT_CHAIN_NAME "conntrack"

static int put_table(struct nft_batch *b, uint16_t type, uint16_t flags)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, type, NFPROTO_INET, flags);

	if (!t || !nlh) {
		nftnl_table_free(t);
		return -ENOMEM;
	}
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFT_TABLE_NAME);
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	nftnl_table_nlmsg_build_payload(nlh, t);
	nftnl_table_free(t);
	return 0;
}

static int put_chain(struct nft_batch *b)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_NEWCHAIN, NFPROTO_INET, NLM_F_CREATE);

	if (!c || !nlh) {
		nftnl_chain_free(c);
		return -ENOMEM;
	}
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NFT_TABLE_NAME);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, NFT_CHAIN_NAME);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	nftnl_chain_free(c);
	return 0;
}

/* "ct state": loading the state is enough to take the reference. */
static int put_ct_rule(struct nft_batch *b)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nftnl_expr *ct = nftnl_expr_alloc("ct");
	struct nlmsghdr *nlh = nft_batch_msg(b, NFT_MSG_NEWRULE, NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND);

	if (!r || !ct || !nlh) {
		nftnl_expr_free(ct);
		nftnl_rule_free(r);
		return -ENOMEM;
	}
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE_NAME);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, NFT_CHAIN_NAME);
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	nftnl_rule_add_expr(r, ct);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	return 0;
}

static int commit(struct nft_batch *b, int r, struct diags *d)
{
	if (r == 0)
		r = nft_batch_commit(b, d);
	else
		diag_errno(d, r, "building the nftables transaction");
	nft_batch_free(b);
	return r;
}

int nft_conntrack_on(struct diags *d)
{
	struct nft_batch *b;
	int r;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	/* add + delete + add: a table left by a killed daemon is replaced,
	 * and a missing one created, in the same transaction. */
	if ((r = put_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE)) == 0 && (r = put_table(b, NFT_MSG_DELTABLE, 0)) == 0 &&
	    (r = put_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE)) == 0 && (r = put_chain(b)) == 0)
		r = put_ct_rule(b);
	return commit(b, r, d);
}

int nft_conntrack_off(struct diags *d)
{
	struct nft_batch *b;
	int r;

	if ((r = nft_batch_new(&b)) < 0)
		return diag_errno(d, r, "building the nftables transaction");
	/* Created first, so that the delete cannot fail for a missing table. */
	if ((r = put_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE)) == 0)
		r = put_table(b, NFT_MSG_DELTABLE, 0);
	return commit(b, r, d);
}
