/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/sort.h"
#include "backend/nftables/nft/dynread.h"

#include <errno.h>
#include <libnftnl/set.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "netlink/nl.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/ir.h"

/* ---- the dynamic sets' names: d_NAME_4, d_NAME_6 ---- */

struct names {
	char (*v)[NFT_DYN_NAME];
	uint32_t n, cap;
	int err;
};

static void nftnl_set_freep(struct nftnl_set **s)
{
	if (*s)
		nftnl_set_free(*s);
}

static void nftnl_set_elems_iter_destroyp(struct nftnl_set_elems_iter **it)
{
	if (*it)
		nftnl_set_elems_iter_destroy(*it);
}

static int on_set(const struct nlmsghdr *nlh, void *arg)
{
	struct names *ns = arg;
	_cleanup_(nftnl_set_freep) struct nftnl_set *s = nftnl_set_alloc();
	const char *name;
	size_t len;

	if (!s || nftnl_set_nlmsg_parse(nlh, s) < 0)
		return MNL_CB_OK;
	name = nftnl_set_get_str(s, NFTNL_SET_NAME);
	len = name ? strlen(name) : 0;
	if (len < 5 || strncmp(name, "d_", 2) || name[len - 2] != '_' ||
	    (name[len - 1] != '4' && name[len - 1] != '6') || len >= NFT_DYN_NAME)
		return MNL_CB_OK;
	if (ns->n == ns->cap) {
		uint32_t cap = ns->cap ? 2 * ns->cap : 16;
		void *v = realloc(ns->v, cap * sizeof(*ns->v));

		if (!v) {
			ns->err = -ENOMEM;
			return MNL_CB_OK;
		}
		ns->v = v;
		ns->cap = cap;
	}
	snprintf(ns->v[ns->n++], NFT_DYN_NAME, "%s", name);
	return MNL_CB_OK;
}

static int set_names(struct mnl_socket *nl, struct names *ns)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *nlh;
	int r;

	if (!s)
		return -ENOMEM;
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, NFPROTO_INET, NLM_F_DUMP, (uint32_t)time(NULL));
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFT_TABLE_NAME);
	nftnl_set_nlmsg_build_payload(nlh, s);
	nftnl_set_free(s);
	r = nl_talk(nl, nlh, on_set, ns);
	return r < 0 ? r : ns->err;
}

/* ---- one set's elements ---- */

struct elem {
	uint8_t key[16];
	bool end;	 /* an interval's end: the first key past it */
	int64_t expires; /* ms from at; 0: never */
	int64_t at;	 /* CLOCK_MONOTONIC ms when its message was read: a dump of many takes seconds */
};

struct elems {
	struct elem *v;
	uint32_t n, cap, klen;
	int err;
};

static int on_elems(const struct nlmsghdr *nlh, void *arg)
{
	struct elems *es = arg;
	_cleanup_(nftnl_set_freep) struct nftnl_set *s = nftnl_set_alloc();
	_cleanup_(nftnl_set_elems_iter_destroyp) struct nftnl_set_elems_iter *it = NULL;
	struct nftnl_set_elem *e;

	int64_t at = clock_ms(CLOCK_MONOTONIC);

	if (!s || nftnl_set_elems_nlmsg_parse(nlh, s) < 0 || !(it = nftnl_set_elems_iter_create(s)))
		return MNL_CB_OK;
	while ((e = nftnl_set_elems_iter_next(it))) {
		uint32_t len = 0;
		const void *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
		struct elem *x;

		if (!key || len != es->klen)
			continue;
		if (es->n == es->cap) {
			uint32_t cap = es->cap ? 2 * es->cap : 1024;
			void *v = realloc(es->v, cap * sizeof(*es->v));

			if (!v) {
				es->err = -ENOMEM;
				break;
			}
			es->v = v;
			es->cap = cap;
		}
		x = &es->v[es->n++];
		memset(x, 0, sizeof(*x));
		memcpy(x->key, key, len);
		x->at = at;
		x->end = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS) &&
			 (nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS) & NFT_SET_ELEM_INTERVAL_END);
		if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_EXPIRATION))
			x->expires = (int64_t)nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_EXPIRATION);
		if (!x->expires && nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_TIMEOUT))
			x->expires = (int64_t)nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_TIMEOUT);
	}
	return MNL_CB_OK;
}

static uint32_t g_klen; /* for by_key (qsort has no argument) */

static int by_key(const void *a, const void *b)
{
	int c = memcmp(((const struct elem *)a)->key, ((const struct elem *)b)->key, g_klen);

	/* an end at the same key as a start ends the range before it */
	return c ? c : (int)((const struct elem *)b)->end - (int)((const struct elem *)a)->end;
}

/* key - 1, in place (big-endian). */
static void dec(uint8_t *k, uint32_t klen)
{
	for (uint32_t i = klen; i-- > 0;)
		if (k[i]--)
			break;
}

/* The ms an element has left now (at least 1; 0: never). */
static int64_t left_now(const struct elem *e)
{
	int64_t left = e->expires - (clock_ms(CLOCK_MONOTONIC) - e->at);

	return !e->expires ? 0 : left > 0 ? left : 1;
}

static int read_set(struct mnl_socket *nl, const char *set, int fam, struct nft_dyn_read *rd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct elems es = { .klen = fam ? 16 : 4 };
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *nlh;
	int r;

	if (!s)
		return -ENOMEM;
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP, (uint32_t)time(NULL));
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFT_TABLE_NAME);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	nftnl_set_free(s);
	r = nl_talk(nl, nlh, on_elems, &es);
	if (!r)
		r = es.err;
	if (r < 0) {
		free(es.v);
		return r;
	}
	g_klen = es.klen;
	sort_n(es.v, es.n, sizeof(*es.v), by_key);
	/* each start, then the end after it (the first key past the range;
	 * none for a range that reaches the last address) */
	for (uint32_t i = 0; i < es.n; i++) {
		uint8_t hi[16];
		int plen;

		if (es.v[i].end)
			continue;
		if (i + 1 < es.n && es.v[i + 1].end) {
			memcpy(hi, es.v[i + 1].key, es.klen);
			dec(hi, es.klen);
		} else {
			memset(hi, 0xff, es.klen);
		}
		if ((plen = nfr_prefix_len(es.v[i].key, hi, es.klen * 8)) < 0) {
			rd->odd++;
			continue;
		}
		rd->fn(set, fam, es.v[i].key, (uint8_t)plen, left_now(&es.v[i]), rd->arg);
		rd->n++;
	}
	free(es.v);
	return 0;
}

int nft_dyn_read(struct nft_dyn_read *rd)
{
	struct names ns = { 0 };
	struct mnl_socket *nl;
	int r;

	rd->n = rd->odd = 0;
	rd->sets = 0;
	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	r = set_names(nl, &ns);
	rd->sets = ns.n;
	for (uint32_t i = 0; r == 0 && i < ns.n; i++) {
		size_t len = strlen(ns.v[i]);

		r = read_set(nl, ns.v[i], ns.v[i][len - 1] == '6', rd);
	}
	mnl_socket_close(nl);
	free(ns.v);
	return r;
}
