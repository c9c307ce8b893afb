/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The nftables backend's dynamic sets: each change one transaction on the
 * sets d_NAME_4 and d_NAME_6, with the kernel's own timeouts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dyntext.h"
#include "backend/nftables/nftables.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/dynread.h"
#include "backend/nftables/nft/emit.h"
#include "base/log.h"

int nft_dyn_apply(struct backend *b, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		  struct diags *d)
{
	int64_t now = dyn_now_ms();
	struct nfr_set *ds[2] = { NULL, NULL }, *as[2] = { NULL, NULL };
	const struct nfr_set *dl[2], *al[2];
	uint32_t nd = 0, na = 0;
	struct nfr_table t;
	int r;

	(void)b;
	nfr_init(&t);
	for (int f = 0; f < 2; f++) {
		char name[NFR_NAME];

		nft_dyn_set_name(name, sizeof(name), set->name, f ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4);
		ds[f] = nfr_set_new(&t, name, f ? NFR_KEY_IPV6 : NFR_KEY_IPV4, true);
		as[f] = nfr_set_new(&t, name, f ? NFR_KEY_IPV6 : NFR_KEY_IPV4, true);
	}
	for (uint32_t i = 0; !t.err && i < n; i++) {
		int f = c[i].pfx.family == POLICY_FAM_IPV6;
		uint8_t lo[16], hi[16];

		nft_prefix_range(&c[i].pfx, lo, hi);
		/* an add replaces what the kernel holds (nft_set_change) */
		if (del)
			nfr_set_add(&t, ds[f], lo, hi);
		if (!del) {
			nfr_set_add(&t, as[f], lo, hi);
			if (!t.err && c[i].expires)
				as[f]->v[as[f]->n - 1].timeout_ms =
					(uint64_t)(c[i].expires > now ? c[i].expires - now : 1) + NFT_TIMEOUT_MARGIN_MS;
		}
	}
	for (int f = 0; f < 2 && !t.err; f++) {
		if (ds[f]->n)
			dl[nd++] = ds[f];
		if (as[f]->n)
			al[na++] = as[f];
	}
	r = t.err ? diag_errno(d, t.err, "set '%s'", set->name) : nft_set_change(dl, nd, al, na, d);
	nfr_free(&t);
	return r;
}
void nft_dyn_undo(struct backend *b, const struct dyn_set *set, const struct dyn_undo *u)
{
	struct diags tmp;
	int r = 0;

	diags_init(&tmp);
	if (u->nadded)
		r = nft_dyn_apply(b, set, u->added, u->nadded, true, &tmp);
	if (r == 0 && u->nchanged)
		r = nft_dyn_apply(b, set, u->changed, u->nchanged, false, &tmp);
	if (r < 0)
		log_err("set '%s': a change that could not be saved could not be taken back in table inet %s: %s",
			set->name, NFT_TABLE_NAME, diags_last(&tmp, ""));
	diags_free(&tmp);
}

/* The sets d_NAME_4 and d_NAME_6, as the table that outlived the daemon
 * holds them: each set gets an id here (ids matter to the BPF backend
 * only). */
static void recover_one(const char *set, int fam, const uint8_t *addr, uint8_t plen, int64_t left_ms, void *arg)
{
	struct dyn_text *t = arg;
	size_t len = strlen(set);
	char name[NFB_DYN_NAME_LEN];
	uint16_t id;

	if (len < 5 || len - 4 >= sizeof(name)) {
		t->orphans++;
		return;
	}
	memcpy(name, set + 2, len - 4); /* d_NAME_4 */
	name[len - 4] = '\0';
	if (!(id = dyn_text_id(t, name))) {
		t->orphans++;
		return;
	}
	/* the kernel's timeout runs NFT_TIMEOUT_MARGIN_MS past the store's */
	dyn_text_entry(id, fam, addr, plen,
		       left_ms ? dyn_now_ms() + (left_ms > NFT_TIMEOUT_MARGIN_MS ? left_ms - NFT_TIMEOUT_MARGIN_MS : 1)
			       : 0,
		       t);
}

int nft_dyn_read_back(struct backend *b, char **text, size_t *len, uint64_t *n, struct diags *d)
{
	struct dyn_text t;
	struct nft_dyn_read rd = { .fn = recover_one, .arg = &t };
	int r, c;

	(void)b;
	if (dyn_text_open(&t) < 0)
		return diag_errno(d, -ENOMEM, "dynamic sets");
	r = nft_dyn_read(&rd);
	if ((c = dyn_text_close(&t, text, len)) < 0)
		return diag_errno(d, c, "dynamic sets");
	if (r == 0 && rd.sets) {
		if (t.orphans || rd.odd)
			log_warn(
				"dynamic sets: %llu elements of table inet %s are no entry nfbox made and are left out",
				(unsigned long long)(t.orphans + rd.odd), NFT_TABLE_NAME);
		*n = t.n;
		return 1;
	}
	free(*text);
	*text = NULL;
	if (r == 0 || r == -ENOENT)
		return 0; /* no table, or one without dynamic sets: not the nftables backend's */
	return diag_errno(d, r, "cannot read the dynamic sets' entries from table inet %s", NFT_TABLE_NAME);
}

struct walk {
	void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg);
	void *arg;
};

/* An element of d_NAME_4 or d_NAME_6: its set is NAME. */
static void walked(const char *set, int fam, const uint8_t *addr, uint8_t plen, int64_t left_ms, void *arg)
{
	struct walk *w = arg;
	struct dyn_kentry k = { .fam = fam, .plen = plen, .expires = left_ms ? dyn_now_ms() + left_ms : 0 };
	char name[NFT_DYN_NAME];
	size_t len = strlen(set);
	struct dyn_kref ref = { .name = name };

	snprintf(name, sizeof(name), "%.*s", len > 4 ? (int)len - 4 : 0, set + 2);
	memcpy(k.addr, addr, fam ? 16 : 4);
	w->fn(&ref, &k, w->arg);
}

/* Nothing to take: a walk opens a netlink socket of its own. */
int nft_dyn_walk_begin(struct backend *b, void **walker)
{
	(void)b;
	*walker = NULL;
	return 0;
}

int nft_dyn_walk(void *walker, void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg), void *arg)
{
	struct walk w = { fn, arg };
	struct nft_dyn_read rd = { .fn = walked, .arg = &w };
	int r;

	(void)walker;
	r = nft_dyn_read(&rd);
	return r == -ENOENT ? 0 : r; /* no table: it holds nothing */
}

void nft_dyn_walk_end(void *walker)
{
	(void)walker;
}
