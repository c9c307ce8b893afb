/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Writing a plan into the spare generation of maps, then flipping to it.
 * New inner maps are made for every reload (sized for the plan), filled
 * while the running generation keeps enforcing, and swapped in by one
 * write of nfb_ctl.active_gen.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine_int.h"
#include "lib/log.h"

/* u32 units between two elements of a u32-valued array map: the kernel
 * rounds array element sizes up to 8 bytes. */
#define ARRAY_STRIDE 2

static const char *const inner_names[EM_NUM_OUTER] = { "nfb_g_lpm4", "nfb_g_lpm6", "nfb_g_iface", "nfb_g_port",
							 "nfb_g_misc", "nfb_g_rules", "nfb_g_limits", "nfb_g_blob" };

struct gen_maps {
	int fd[EM_NUM_OUTER];
};

static int inner_create(struct engine *e, int idx, uint32_t max_entries)
{
	const struct inner_shape *s = &e->shape[idx];
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = s->flags);
	int fd = bpf_map_create(s->type, inner_names[idx], s->key_size, s->value_size,
				max_entries ? max_entries : s->max_entries, &opts);

	return fd < 0 ? -errno : fd;
}

static void *map_mmap(int fd, size_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void map_munmap(void *p, size_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);

	munmap(p, (bytes + (size_t)page - 1) / (size_t)page * (size_t)page);
}

_Static_assert(NFB_REJECT_TCP_RESET == (int)POLICY_REJECT_TCP_RESET && NFB_REJECT_PORT == (int)POLICY_REJECT_PORT &&
		       NFB_REJECT_ADMIN == (int)POLICY_REJECT_ADMIN && NFB_REJECT_HOST == (int)POLICY_REJECT_HOST &&
		       NFB_REJECT_NET == (int)POLICY_REJECT_NET,
	       "reject kinds numbered alike");

static uint8_t nfb_action_of(enum policy_action a)
{
	return a == POLICY_ACCEPT ? NFB_ACT_ACCEPT : a == POLICY_REJECT ? NFB_ACT_REJECT : NFB_ACT_DROP;
}

/* The limits of a generation, by index (1 + index in nfb_rule.limit). */
struct limits {
	struct nfb_limit_cfg v[NFB_MAX_LIMITS];
	uint32_t n;
};

/* GCRA parameters of a limit (bpf/nfbox.h): the loader keeps rate within
 * 1..1e6 per period and burst within 1..1e6, so interval >= 1000 ns and
 * depth <= 1e6 * 3.6e12 ns fit in 64 bits. */
static uint16_t limit_index(struct limits *lim, uint32_t slot, const struct policy_limit *l)
{
	uint64_t interval = (uint64_t)l->rate.per * 1000000000ull / l->rate.n;

	if (lim->n >= NFB_MAX_LIMITS)
		return 0; /* the loader refuses more; never reached */
	lim->v[lim->n] = (struct nfb_limit_cfg){
		.interval_ns = interval,
		.depth_ns = interval * l->burst,
		.slot = slot,
		.flags = l->per_source ? NFB_LIMIT_PER_SOURCE : 0,
	};
	return (uint16_t)++lim->n;
}

/* nfb_rule.dyn of a rule's from or to. */
static uint16_t dyn_of(const struct slot_map *slots, const struct addr_match *m)
{
	uint16_t id = NFB_DYN_EMPTY; /* no id given: a set with no entries */

	if (!m->dyn)
		return 0;
	if (m->dyn <= slots->nsets && slots->set_id[m->dyn - 1])
		id = slots->set_id[m->dyn - 1];
	return (uint16_t)(id | (m->neg ? NFB_DYN_NEG : 0));
}

static int fill_arrays(struct engine *e, struct gen_maps *g, const struct plan *pl, const struct plan_blob *b,
		       const struct slot_map *slots, struct limits *lim)
{
	/* Array maps store each value in 8-byte-aligned slots: a u32 locator
	 * takes 8 bytes of the mmap()ed area (see ARRAY_STRIDE). */
	size_t port_bytes = (size_t)NFB_PORT_ENTRIES * ARRAY_STRIDE * 4, misc_bytes = (size_t)NFB_MISC_ENTRIES * ARRAY_STRIDE * 4;
	size_t rule_bytes = (size_t)NFB_RULE_ENTRIES * sizeof(struct nfb_rule);
	size_t blob_bytes = (size_t)b->nchunks * sizeof(struct nfb_chunk);
	uint32_t *port = map_mmap(g->fd[EM_PORT - EM_FIRST_OUTER], port_bytes);
	uint32_t *misc = map_mmap(g->fd[EM_MISC - EM_FIRST_OUTER], misc_bytes);
	struct nfb_rule *rules = map_mmap(g->fd[EM_RULES - EM_FIRST_OUTER], rule_bytes);
	void *blob = map_mmap(g->fd[EM_BLOB - EM_FIRST_OUTER], blob_bytes);
	int r = 0;

	if (!port || !misc || !rules || !blob) {
		r = -errno;
		goto out;
	}
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (uint32_t i = 0; i < h->nports; i++) {
			const struct plan_seg *s = &h->ports[i];

			for (uint32_t v = s->lo; v <= s->hi; v++)
				port[ARRAY_STRIDE * nfb_port_index((uint32_t)hk, s->dir, s->cls, v)] = b->loc[hk][s->vec];
		}
		for (uint32_t i = 0; i < h->nmisc; i++) {
			const struct plan_seg *s = &h->misc[i];

			for (uint32_t v = s->lo; v <= s->hi; v++)
				misc[ARRAY_STRIDE * nfb_misc_index((uint32_t)hk, s->cls, v)] = b->loc[hk][s->vec];
		}
		for (uint32_t bit = 0; bit < h->nrules; bit++) {
			const struct rule *ru = h->rules[bit];

			rules[hk * NFB_MAX_RULES + bit] = (struct nfb_rule){
				.action = nfb_action_of(ru->action),
				.flags = (uint8_t)((ru->log ? NFB_RULE_LOG : 0) | ru->reject_with << NFB_RULE_REJECT_SHIFT),
				.limit = ru->limit.rate.n ? limit_index(lim, slots->rule_slot[hk][bit], &ru->limit) : 0,
				.counter = slots->rule_slot[hk][bit],
				.dyn = { dyn_of(slots, &ru->from), dyn_of(slots, &ru->to) },
			};
		}
	}
	memcpy(blob, b->words, blob_bytes);
out:
	if (port)
		map_munmap(port, port_bytes);
	if (misc)
		map_munmap(misc, misc_bytes);
	if (rules)
		map_munmap(rules, rule_bytes);
	if (blob)
		map_munmap(blob, blob_bytes);
	return r;
}

/* Keys and values of one trie, written with one batch call where the
 * kernel supports it (one syscall per prefix otherwise). */
static int lpm_write(int fd, const void *keys, const uint32_t *vals, uint32_t n, size_t key_size)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	uint32_t count = n;

	if (!n)
		return 0;
	if (bpf_map_update_batch(fd, keys, vals, &count, &opts) == 0)
		return 0;
	if (errno != EINVAL && errno != 524 /* ENOTSUPP */ && errno != EOPNOTSUPP)
		return -errno;
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * key_size, &vals[i], BPF_ANY) < 0)
			return -errno;
	return 0;
}

static int fill_lpm(int fd4, int fd6, const struct plan *pl, const struct plan_blob *b)
{
	uint32_t n4 = 0, n6 = 0, i4 = 0, i6 = 0;
	struct nfb_lpm4_key *k4;
	struct nfb_lpm6_key *k6;
	uint32_t *v4, *v6;
	int r;

	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		n4 += pl->hook[hk].nlpm[0];
		n6 += pl->hook[hk].nlpm[1];
	}
	k4 = calloc(n4 + 1, sizeof(*k4));
	k6 = calloc(n6 + 1, sizeof(*k6));
	v4 = calloc(n4 + 1, sizeof(*v4));
	v6 = calloc(n6 + 1, sizeof(*v6));
	if (!k4 || !k6 || !v4 || !v6) {
		r = -ENOMEM;
		goto out;
	}
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (uint32_t i = 0; i < h->nlpm[0]; i++, i4++) {
			const struct plan_lpm *l = &h->lpm[0][i];

			k4[i4] = (struct nfb_lpm4_key){ .prefixlen = 16u + l->pfx.plen, .hook = (uint8_t)hk, .dir = l->dir };
			memcpy(k4[i4].addr, l->pfx.addr, 4);
			v4[i4] = b->loc[hk][l->vec];
		}
		for (uint32_t i = 0; i < h->nlpm[1]; i++, i6++) {
			const struct plan_lpm *l = &h->lpm[1][i];

			k6[i6] = (struct nfb_lpm6_key){ .prefixlen = 16u + l->pfx.plen, .hook = (uint8_t)hk, .dir = l->dir };
			memcpy(k6[i6].addr, l->pfx.addr, 16);
			v6[i6] = b->loc[hk][l->vec];
		}
	}
	r = lpm_write(fd4, k4, v4, n4, sizeof(*k4));
	if (!r)
		r = lpm_write(fd6, k6, v6, n6, sizeof(*k6));
out:
	free(k4);
	free(k6);
	free(v4);
	free(v6);
	return r;
}

/* The map entries the plan wants for the interfaces there are now, in this
 * namespace: each gets the entry of its own name, else of the longest
 * wildcard it falls under ("eth*"); interfaces of no entry are left out (the
 * classifier's miss vector). A named interface that does not exist is
 * reported (warn != NULL) and matches nothing until it appears: the link
 * monitor calls engine_ifaces_refresh() then. */
struct iface_want {
	struct nfb_iface_key *k;
	uint32_t *loc;
	uint32_t n;
};

static int iface_wanted(const struct plan *pl, const struct plan_blob *b, struct iface_want *w, struct diags *warn)
{
	struct if_nameindex *all = if_nameindex(), *it;
	uint32_t nall = 0, cap;

	memset(w, 0, sizeof(*w));
	if (!all)
		return -errno;
	for (it = all; it->if_index; it++)
		nall++;
	cap = (nall ? nall : 1) * NFB_HOOK_MAX * 2;
	w->k = calloc(cap, sizeof(*w->k));
	w->loc = calloc(cap, sizeof(*w->loc));
	if (!w->k || !w->loc) {
		if_freenameindex(all);
		return -ENOMEM;
	}
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (uint8_t dir = 0; h->nifaces && dir < 2; dir++) {
			for (it = all; it->if_index; it++) {
				int64_t j = plan_iface_find(h, dir, it->if_name);

				if (j < 0)
					continue;
				w->k[w->n] = (struct nfb_iface_key){ .hook = (uint8_t)hk, .dir = dir, .ifindex = it->if_index };
				w->loc[w->n++] = b->loc[hk][h->ifaces[j].vec];
			}
		}
		for (uint32_t i = 0; warn && i < h->nifaces; i++)
			if (!policy_ifname_wild(h->ifaces[i].ifname) && !if_nametoindex(h->ifaces[i].ifname))
				diag_warn(warn, DIAG_NOWHERE,
					  "interface %s does not exist (yet): rules naming it match nothing until it appears",
					  h->ifaces[i].ifname);
	}
	if_freenameindex(all);
	return 0;
}

static void iface_want_free(struct iface_want *w)
{
	free(w->k);
	free(w->loc);
}

static int fill_ifaces(int fd, const struct plan *pl, const struct plan_blob *b, struct diags *d)
{
	struct iface_want w;
	int r = iface_wanted(pl, b, &w, d);

	for (uint32_t i = 0; !r && i < w.n; i++)
		if (bpf_map_update_elem(fd, &w.k[i], &w.loc[i], BPF_ANY) < 0)
			r = -errno;
	iface_want_free(&w);
	return r;
}

static void gen_cfg(struct nfb_gen_cfg *c, const struct plan *pl, const struct plan_blob *b,
		    const struct slot_map *slots)
{
	const struct policy_options *o = &pl->pol->opt;

	memset(c, 0, sizeof(*c));
	c->options = (o->established_accept ? NFB_OPT_ESTABLISHED_ACCEPT : 0) | (o->defrag ? NFB_OPT_DEFRAG : 0);
	c->log_rate = o->log_rate.n;
	c->log_period = o->log_rate.per;
	c->log_burst = o->log_burst;
	c->reject_rate = o->reject_rate.n;
	c->reject_period = o->reject_rate.per;
	c->reject_burst = o->reject_rate.n; /* a period's worth */
	c->established_counter = slots->established_slot;
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];
		struct nfb_hook_cfg *hc = &c->hook[hk];

		hc->enabled = h->enabled;
		hc->nrules = h->nrules;
		hc->nsum = h->nsum;
		hc->fields = h->fields;
		hc->default_action = h->def == POLICY_ACCEPT ? NFB_ACT_ACCEPT : NFB_ACT_DROP;
		hc->default_counter = slots->default_slot[hk];
		for (int f = 0; f < NFB_F_MAX; f++)
			hc->miss[f] = b->loc[hk][h->miss[f]];
		for (int s = 0; s < NFB_CT_MAX; s++)
			hc->ct[s] = b->loc[hk][h->ct[s]];
		hc->sport_none = b->loc[hk][h->sport_none];
	}
}

/* The generation's limits, and a state for each limited rule that has none
 * yet (the classifier treats a rule without state as over its limit). */
static int fill_limits(struct engine *e, struct gen_maps *g, const struct limits *lim)
{
	const struct nfb_limit_state fresh = { 0 };

	for (uint32_t i = 0; i < lim->n; i++) {
		if (bpf_map_update_elem(g->fd[EM_LIMITS - EM_FIRST_OUTER], &i, &lim->v[i], BPF_ANY) < 0)
			return -errno;
		if (bpf_map_update_elem(e->map_fd[EM_LIMIT_STATE], &lim->v[i].slot, &fresh, BPF_NOEXIST) < 0 &&
		    errno != EEXIST)
			return -errno;
	}
	return 0;
}

/* Every key of a hash map for which drop() says so is deleted: keys are
 * collected in one walk, then deleted (deleting during a walk restarts it). */
int engine_delete_keys(int fd, size_t key_size, bool (*drop)(const void *key, void *arg), void *arg)
{
	size_t cap = 1024, n = 0;
	uint8_t *keys = malloc(cap * key_size), cur[64], next[64];
	bool first = true;
	int went = 0;

	if (!keys || key_size > sizeof(cur)) {
		free(keys);
		return -ENOMEM;
	}
	/* collect first, then delete: the walk is not disturbed */
	while (bpf_map_get_next_key(fd, first ? NULL : cur, next) == 0) {
		first = false;
		memcpy(cur, next, key_size);
		if (!drop(cur, arg))
			continue;
		if (n == cap) {
			uint8_t *k = realloc(keys, 2 * cap * key_size);

			if (!k) {
				free(keys);
				return -ENOMEM;
			}
			keys = k;
			cap *= 2;
		}
		memcpy(keys + n++ * key_size, cur, key_size);
	}
	for (size_t i = 0; i < n; i++)
		went += bpf_map_delete_elem(fd, keys + i * key_size) == 0;
	free(keys);
	return went;
}

static bool state_unused(const void *key, void *arg)
{
	const uint8_t *keep = arg;
	uint32_t slot;

	memcpy(&slot, key, sizeof(slot));
	return slot >= NFB_MAX_COUNTERS || !keep[slot];
}

static bool meter_unused(const void *key, void *arg)
{
	const uint8_t *keep = arg;
	struct nfb_meter_key k;

	memcpy(&k, key, sizeof(k));
	return k.slot >= NFB_MAX_COUNTERS || keep[k.slot] != 2;
}

/* After a flip: the state of rules that no longer have a limit (or a
 * per-source one) goes, so the maps hold what the policy in force uses. */
static void prune_limits(struct engine *e, const struct plan *pl, const struct slot_map *slots)
{
	uint8_t *keep = calloc(NFB_MAX_COUNTERS, 1); /* 1: limited, 2: per source */

	if (!keep)
		return;
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		for (uint32_t bit = 0; bit < pl->hook[hk].nrules; bit++)
			if (pl->hook[hk].rules[bit]->limit.rate.n)
				keep[slots->rule_slot[hk][bit]] = pl->hook[hk].rules[bit]->limit.per_source ? 2 : 1;
	engine_delete_keys(e->map_fd[EM_LIMIT_STATE], sizeof(uint32_t), state_unused, keep);
	engine_delete_keys(e->map_fd[EM_METER], sizeof(struct nfb_meter_key), meter_unused, keep);
	free(keep);
}

static uint32_t total_lpm(const struct plan *pl, int fi)
{
	uint32_t n = 0;

	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		n += pl->hook[hk].nlpm[fi];
	return n;
}

static int gen_build(struct engine *e, struct gen_maps *g, const struct plan *pl, const struct plan_blob *b,
		     const struct slot_map *slots, struct diags *d)
{
	uint32_t sizes[EM_NUM_OUTER] = { 0 };
	struct limits *lim;
	int r;

	sizes[EM_LPM4 - EM_FIRST_OUTER] = total_lpm(pl, 0) + 1;
	sizes[EM_LPM6 - EM_FIRST_OUTER] = total_lpm(pl, 1) + 1;
	sizes[EM_BLOB - EM_FIRST_OUTER] = b->nchunks ? b->nchunks : 1;
	for (int i = 0; i < EM_NUM_OUTER; i++) {
		g->fd[i] = inner_create(e, i, sizes[i]);
		if (g->fd[i] < 0)
			return diag_errno(d, g->fd[i], "cannot create map %s for the new policy", inner_names[i]);
	}
	if (!(lim = calloc(1, sizeof(*lim))))
		return diag_errno(d, -ENOMEM, "the new policy's limits");
	if ((r = fill_arrays(e, g, pl, b, slots, lim)) < 0 || (r = fill_limits(e, g, lim)) < 0) {
		free(lim);
		return diag_errno(d, r, "cannot fill the new policy's arrays");
	}
	free(lim);
	if ((r = fill_lpm(g->fd[EM_LPM4 - EM_FIRST_OUTER], g->fd[EM_LPM6 - EM_FIRST_OUTER], pl, b)) < 0)
		return diag_errno(d, r, "cannot fill the new policy's prefix tries");
	if ((r = fill_ifaces(g->fd[EM_IFACE - EM_FIRST_OUTER], pl, b, d)) < 0)
		return diag_errno(d, r, "cannot fill the new policy's interface map");
	return 0;
}

static int ctl_write(struct engine *e, uint32_t gen)
{
	struct nfb_ctl ctl = { .active_gen = gen, .abi = NFB_ABI_VERSION, .netns_cookie = e->netns_cookie };
	uint32_t zero = 0;

	return bpf_map_update_elem(e->map_fd[EM_CTL], &zero, &ctl, BPF_ANY) < 0 ? -errno : 0;
}

int engine_load(struct engine *e, const struct plan *pl, const struct plan_blob *b, const struct slot_map *slots,
		struct diags *d)
{
	uint32_t spare = e->active_gen ^ 1, old = e->active_gen;
	struct gen_maps g;
	struct nfb_gen_cfg cfg;
	int r;

	for (int i = 0; i < EM_NUM_OUTER; i++)
		g.fd[i] = -1;
	r = gen_build(e, &g, pl, b, slots, d);
	for (int i = 0; i < EM_NUM_OUTER && r >= 0; i++)
		if (bpf_map_update_elem(e->map_fd[EM_FIRST_OUTER + i], &spare, &g.fd[i], BPF_ANY) < 0)
			r = diag_errno(d, -errno, "cannot install the new policy's maps");
	gen_cfg(&cfg, pl, b, slots);
	if (r >= 0 && bpf_map_update_elem(e->map_fd[EM_GEN], &spare, &cfg, BPF_ANY) < 0)
		r = diag_errno(d, -errno, "cannot write the new policy's configuration");
	for (int i = 0; i < EM_NUM_OUTER; i++)
		if (g.fd[i] >= 0)
			close(g.fd[i]); /* the outer maps hold them now */
	if (r < 0)
		return r; /* the running generation was not touched */
	/* The flip: one write; each packet reads the generation once. */
	if ((r = ctl_write(e, spare)) < 0)
		return diag_errno(d, r, "cannot switch to the new policy");
	e->active_gen = spare;
	r = engine_links_sync(e, pl, d);
	if (r < 0 && (e->generation || e->adopted)) {
		/* Back to the policy that was in force. */
		ctl_write(e, old);
		e->active_gen = old;
		return r;
	}
	prune_limits(e, pl, slots);
	e->generation++;
	return r;
}

/* ---- interfaces as they come and go ---- */

/* The active generation's interface map, as our own fd. */
static int active_iface_map(struct engine *e)
{
	uint32_t id;
	int fd;

	if (bpf_map_lookup_elem(e->map_fd[EM_IFACE], &e->active_gen, &id) < 0)
		return -errno;
	fd = bpf_map_get_fd_by_id(id);
	return fd < 0 ? -errno : fd;
}

struct wanted {
	const struct nfb_iface_key *v;
	uint32_t n;
};

static bool iface_unwanted(const void *key, void *arg)
{
	const struct wanted *w = arg;
	struct nfb_iface_key k;

	memcpy(&k, key, sizeof(k));
	for (uint32_t i = 0; i < w->n; i++)
		if (w->v[i].ifindex == k.ifindex && w->v[i].hook == k.hook && w->v[i].dir == k.dir)
			return false;
	return true;
}

int engine_ifaces_refresh(struct engine *e, const struct plan *pl, const struct plan_blob *b)
{
	struct iface_want w;
	int fd, r;

	if ((fd = active_iface_map(e)) < 0)
		return fd;
	r = iface_wanted(pl, b, &w, NULL);
	for (uint32_t i = 0; !r && i < w.n; i++)
		if (bpf_map_update_elem(fd, &w.k[i], &w.loc[i], BPF_ANY) < 0)
			r = -errno;
	if (!r) {
		struct wanted keep = { w.k, w.n };

		r = engine_delete_keys(fd, sizeof(struct nfb_iface_key), iface_unwanted, &keep);
		r = r < 0 ? r : 0;
	}
	iface_want_free(&w);
	close(fd);
	return r;
}
