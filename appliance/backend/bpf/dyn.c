/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The BPF backend's dynamic sets: each change goes to the classifier's
 * tries at once (no new generation), with the set names pinned beside
 * them. When the backend comes into force (a daemon's first load, adopting
 * or not, or a switch from nftables) the tries are made to hold exactly the
 * store's entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/bpf/bpf.h"
#include "backend/dyntext.h"
#include "base/log.h"

/* The store's set ids (dynset.h) key the classifier's tries. */
_Static_assert(DYNSET_MAX_IDS == NFB_MAX_DYNSETS, "the dynamic sets' ids and the BPF tries' keys differ");

static bool in_store(uint16_t id, int fam, const uint8_t *addr, uint8_t plen, void *arg)
{
	const struct dynsets *s = arg;

	for (uint32_t i = 0; i < s->n; i++)
		if (s->sets[i].id == id)
			return dynset_index(&s->sets[i], fam, addr, plen) >= 0;
	return false;
}

static int put_all(struct bpf_backend *bb)
{
	const struct dynsets *dyn = bb->b.env->dyn;
	int r;

	for (uint32_t i = 0; i < dyn->n; i++) {
		const struct dyn_set *set = &dyn->sets[i];

		for (int f = 0; f < 2; f++)
			for (uint32_t j = 0; j < set->n[f]; j++)
				if ((r = engine_dyn_put(bb->e, set->id, f, set->v[f][j].addr, set->v[f][j].plen,
							set->v[f][j].expires)) < 0)
					return r;
	}
	return 0;
}

/* The names of the dynamic sets beside the tries (bpf/nfbox.h). */
static void put_names(struct bpf_backend *bb)
{
	const struct dynsets *dyn = bb->b.env->dyn;

	for (uint16_t id = 1; id < NFB_MAX_DYNSETS; id++) {
		const char *name = "";

		for (uint32_t i = 0; i < dyn->n; i++)
			if (dyn->sets[i].id == id)
				name = dyn->sets[i].name;
		engine_dyn_name_set(bb->e, id, name); /* "" too: no stale name of an adopted state stays */
	}
}

void bpf_dyn_resync(struct backend *b)
{
	struct bpf_backend *bb = bpf_of(b);
	int r;

	if (!bb->e)
		return;
	r = engine_dyn_prune(bb->e, in_store, (void *)b->env->dyn);
	put_names(bb);
	if (r >= 0)
		r = put_all(bb);
	if (r < 0)
		log_err("dynamic sets: cannot put the entries into the classifier: %s", strerror(-r));
	else
		bb->dyn_synced = true;
}

int bpf_dyn_apply(struct backend *b, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		  struct diags *d)
{
	struct engine *e = bpf_of(b)->e;
	int r;

	for (uint32_t i = 0; e && i < n; i++) {
		int f = c[i].pfx.family == POLICY_FAM_IPV6;

		if (del) {
			if ((r = engine_dyn_del(e, set->id, f, c[i].pfx.addr, c[i].pfx.plen)) < 0 && r != -ENOENT)
				return diag_errno(d, r, "set '%s': the classifier refused a delete", set->name);
			continue;
		}
		if ((r = engine_dyn_put(e, set->id, f, c[i].pfx.addr, c[i].pfx.plen, c[i].expires)) < 0)
			return diag_errno(d, r, "set '%s': the classifier refused an entry", set->name);
	}
	return 0;
}

/* The tries are made to hold the store again once it is undone (the
 * caller's next step: dyn_resync). */
void bpf_dyn_undo(struct backend *b, const struct dyn_set *set, const struct dyn_undo *u)
{
	(void)b;
	(void)set;
	(void)u;
}

/* The classifier already treats it as gone (it reads the expiry). */
void bpf_dyn_expired(struct backend *b, const struct dyn_set *set, int fam, const struct dyn_entry *e)
{
	struct bpf_backend *bb = bpf_of(b);

	if (bb->e)
		engine_dyn_del(bb->e, set->id, fam, e->addr, e->plen);
}

void bpf_dyn_after_reload(struct backend *b, bool gone)
{
	struct bpf_backend *bb = bpf_of(b);

	if (!bb->dyn_synced || gone)
		bpf_dyn_resync(b);
	else if (bb->e)
		put_names(bb); /* a set the reload added */
	/* The classifier enforces the policy and holds the dynamic sets: a
	 * state set aside at start may go (until then it drops what it
	 * dropped, bans included, beside this one). */
	if (bb->dyn_synced)
		engine_retire_predecessors(bb->e);
}

/* The adopted classifier was enforcing: its links are in place. */
static bool was_enforcing(const struct bpf_backend *bb)
{
	struct engine_info info;

	if (!bb->e)
		return false;
	engine_get_info(bb->e, &info);
	if (!info.adopted)
		return false;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			if (info.link[h][f].fd >= 0)
				return true;
	return false;
}

/* The tries and the names kept beside them. */
int bpf_dyn_read_back(struct backend *b, char **text, size_t *len, uint64_t *n, struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	char name[NFB_DYN_NAME_LEN];
	struct dyn_text t;
	int r, c;

	if (!was_enforcing(bb))
		return 0;
	if (dyn_text_open(&t) < 0)
		return diag_errno(d, -ENOMEM, "dynamic sets");
	for (uint16_t id = 1; id < NFB_MAX_DYNSETS; id++)
		if (engine_dyn_name_get(bb->e, id, name, sizeof(name)) == 0 && name[0])
			dyn_text_set(&t, id, name);
	r = engine_dyn_walk(bb->e, dyn_text_entry, &t);
	if ((c = dyn_text_close(&t, text, len)) < 0)
		return diag_errno(d, c, "dynamic sets");
	if (r < 0) {
		free(*text);
		*text = NULL;
		return diag_errno(d, r, "cannot read the dynamic sets' entries from the pinned classifier");
	}
	if (t.orphans)
		log_warn("dynamic sets: %llu entries of the pinned classifier belong to no named set and are left out",
			 (unsigned long long)t.orphans);
	*n = t.n;
	return 1;
}

struct walk {
	void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg);
	void *arg;
};

static void walked(uint16_t id, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms, void *arg)
{
	struct walk *w = arg;
	struct dyn_kref ref = { .id = id };
	struct dyn_kentry k = { .fam = fam, .plen = plen, .expires = expires_ms };

	memcpy(k.addr, addr, fam ? 16 : 4);
	w->fn(&ref, &k, w->arg);
}

/* The walker: copies of the tries' fds. */
int bpf_dyn_walk_begin(struct backend *b, void **walker)
{
	int *fds = calloc(2, sizeof(*fds));
	int r;

	if (!fds)
		return -ENOMEM;
	if ((r = engine_dyn_fds(bpf_of(b)->e, fds)) < 0) {
		free(fds);
		return r;
	}
	*walker = fds;
	return 0;
}

int bpf_dyn_walk(void *walker, void (*fn)(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg), void *arg)
{
	struct walk w = { fn, arg };

	return engine_dyn_walk_fds(walker, walked, &w);
}

void bpf_dyn_walk_end(void *walker)
{
	int *fds = walker;

	if (!fds)
		return;
	close(fds[0]);
	close(fds[1]);
	free(fds);
}
