/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/sort.h"
#include "backend/nftables/nft/counters.h"

#include <errno.h>
#include <libnftnl/object.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "netlink/nl.h"
#include "backend/nftables/nft/batch.h"

struct acc {
	struct nft_counters *c;
	uint32_t cap;
	int err;
};

static void nftnl_obj_freep(struct nftnl_obj **o)
{
	if (*o)
		nftnl_obj_free(*o);
}

static int on_obj(const struct nlmsghdr *nlh, void *arg)
{
	struct acc *a = arg;
	_cleanup_(nftnl_obj_freep) struct nftnl_obj *o = nftnl_obj_alloc();
	struct nfr_counter *slot;
	const char *name;

	if (!o || nftnl_obj_nlmsg_parse(nlh, o) < 0)
		return MNL_CB_OK;
	name = nftnl_obj_get_str(o, NFTNL_OBJ_NAME);
	if (nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) != NFT_OBJECT_COUNTER || !name ||
	    strcmp(nftnl_obj_get_str(o, NFTNL_OBJ_TABLE), NFT_TABLE_NAME))
		return MNL_CB_OK;
	if (a->c->n == a->cap) {
		uint32_t cap = a->cap ? 2 * a->cap : 64;
		struct nfr_counter *v = realloc(a->c->v, cap * sizeof(*v));

		if (!v) {
			a->err = -ENOMEM;
			return MNL_CB_OK;
		}
		a->c->v = v;
		a->cap = cap;
	}
	slot = &a->c->v[a->c->n++];
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	slot->packets = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS);
	slot->bytes = nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_BYTES);
	return MNL_CB_OK;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct nfr_counter *)a)->name, ((const struct nfr_counter *)b)->name);
}

int nft_counters_read(struct nft_counters *out)
{
	return nft_counters_read_reset(out, false);
}

/* The counters of the table (name NULL: all of them) into out. */
static int read_objs(struct nft_counters *out, bool reset, const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct acc a = { .c = out };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct nftnl_obj *o;
	int r;

	memset(out, 0, sizeof(*out));
	if (!(o = nftnl_obj_alloc()))
		return -ENOMEM;
	nlh = nftnl_nlmsg_build_hdr(buf, reset ? NFT_MSG_GETOBJ_RESET : NFT_MSG_GETOBJ, NFPROTO_INET,
				    name ? 0 : NLM_F_DUMP, (uint32_t)time(NULL));
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NFT_TABLE_NAME);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	if (name)
		nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nftnl_obj_free(o);
	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	r = nl_talk(nl, nlh, on_obj, &a);
	mnl_socket_close(nl);
	if (r == -ENOENT && !name)
		r = 0; /* no table: no counters */
	if (!r)
		r = a.err;
	if (r < 0) {
		nft_counters_free(out);
		return r;
	}
	sort_n(out->v, out->n, sizeof(*out->v), by_name);
	return 0;
}

int nft_counters_read_reset(struct nft_counters *out, bool reset)
{
	return read_objs(out, reset, NULL);
}

int nft_counter_read(const char *name, struct nfr_counter *out)
{
	struct nft_counters one;
	int r = read_objs(&one, false, name);

	if (r == 0 && !one.n)
		r = -ENOENT;
	if (r == 0)
		*out = one.v[0];
	nft_counters_free(&one);
	return r;
}

void nft_counters_free(struct nft_counters *c)
{
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

const struct nfr_counter *nft_counters_find(const struct nft_counters *c, const char *name)
{
	struct nfr_counter key;

	snprintf(key.name, sizeof(key.name), "%s", name);
	return search_n(&key, c->v, c->n, sizeof(*c->v), by_name);
}
