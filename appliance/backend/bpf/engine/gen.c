/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Writing a plan into the spare generation of maps, then flipping to it.
 * New inner maps are made for every reload, sized for the plan, put into
 * the spare slots of the outer maps and filled while the running
 * generation keeps enforcing, then swapped in by one write of
 * nfb_ctl.active_gen. The generation flipped away from is freed by
 * engine_settle().
 *
 * Each write to an outer map (ARRAY_OF_MAPS) waits in the kernel for an RCU
 * grace period (about 12 ms here); one after the other, ten outer maps cost
 * a tenth of a second per load. They are written from threads of their own
 * at once, so they share one grace period, and while the maps are filled.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/sort.h"
#include "backend/bpf/engine/engine_int.h"
#include "policy/schedule/schedule.h"
#include "base/cleanup.h"
#include "base/log.h"

/* u32 units between two elements of a u32-valued array map: the kernel
 * rounds array element sizes up to 8 bytes. */
#define ARRAY_STRIDE 2

static const char *const inner_names[EM_NUM_OUTER] = {
	"nfb_g_addr4",	"nfb_g_addr6", "nfb_g_iface",	 "nfb_g_port",	"nfb_g_misc",  "nfb_g_rules",
	"nfb_g_limits", "nfb_g_blob",  "nfb_g_counters", "nfb_g_meter", "nfb_g_conns", "nfb_g_conn_cnt",
};

#define GM(em) ((em) - EM_FIRST_OUTER)

struct gen_maps {
	int fd[EM_NUM_OUTER]; /* -1: none (the meter of a policy without per-source limits, the
				 connection maps of one without connection limits) */
	uint32_t size[EM_NUM_OUTER];
	bool own_counters; /* a new counters map (else the active one, shared) */
};

static int inner_create(struct engine *e, int idx, uint32_t max_entries)
{
	const struct inner_shape *s = &e->shape[idx];
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = s->flags);
	int fd = bpf_map_create(s->type, inner_names[idx], s->key_size, s->value_size,
				max_entries ? max_entries : s->max_entries, &opts);

	return fd < 0 ? -errno : fd;
}

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

static void *map_mmap(int fd, size_t bytes)
{
	void *p = mmap(NULL, page_round(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void map_munmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, page_round(bytes));
}

/* ---- outer maps, written from threads (one grace period for all) ---- */

struct outer_op {
	int outer_fd;
	uint32_t key;
	int inner_fd; /* -1: delete the entry */
	int err;
	pthread_t th;
	bool started;
};

static void *outer_op_run(void *arg)
{
	struct outer_op *op = arg;
	int r = op->inner_fd >= 0 ? bpf_map_update_elem(op->outer_fd, &op->key, &op->inner_fd, BPF_ANY)
				  : bpf_map_delete_elem(op->outer_fd, &op->key);

	op->err = r < 0 && !(op->inner_fd < 0 && errno == ENOENT) ? -errno : 0;
	return NULL;
}

static void outer_ops_start(struct outer_op *ops, int n)
{
	for (int i = 0; i < n; i++) {
		ops[i].started = pthread_create(&ops[i].th, NULL, outer_op_run, &ops[i]) == 0;
		if (!ops[i].started)
			outer_op_run(&ops[i]); /* no thread: in turn */
	}
}

/* 0, or the first error (*failed: which op). */
static int outer_ops_join(struct outer_op *ops, int n, int *failed)
{
	int r = 0;

	for (int i = 0; i < n; i++) {
		if (ops[i].started)
			pthread_join(ops[i].th, NULL);
		ops[i].started = false;
		if (ops[i].err && !r) {
			r = ops[i].err;
			if (failed)
				*failed = i;
		}
	}
	return r;
}

/* Empty every outer map's slot `gen`: the maps there are freed once no
 * program can still see them (the kernel waits for that). */
static int gen_clear(struct engine *e, uint32_t gen)
{
	struct outer_op ops[EM_NUM_OUTER];

	for (int i = 0; i < EM_NUM_OUTER; i++)
		ops[i] = (struct outer_op){ .outer_fd = e->map_fd[EM_FIRST_OUTER + i], .key = gen, .inner_fd = -1 };
	outer_ops_start(ops, EM_NUM_OUTER);
	return outer_ops_join(ops, EM_NUM_OUTER, NULL);
}

/* ---- counters (bpf/nfbox.h, "Counters") ---- */

static size_t cnt_bytes(const struct engine *e, uint32_t cap)
{
	return (size_t)NFB_CNT_ROWS((uint32_t)e->ncpus) * cap * sizeof(struct nfb_counter);
}

int cnt_map_open(struct engine *e, int fd, uint32_t cap, struct cnt_map *out)
{
	*out = (struct cnt_map){ .fd = -1 };
	if (!(out->v = map_mmap(fd, cnt_bytes(e, cap))))
		return -errno;
	out->fd = fd;
	out->cap = cap;
	return 0;
}

void cnt_map_close(struct engine *e, struct cnt_map *m)
{
	map_munmap(m->v, cnt_bytes(e, m->cap));
	if (m->fd >= 0)
		close(m->fd);
	*m = (struct cnt_map){ .fd = -1 };
}

void cnt_map_total(const struct engine *e, const struct cnt_map *m, uint32_t slot, struct nfb_counter *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t row = 0; row <= (uint32_t)e->ncpus; row++) { /* the CPU rows and the carry row */
		const struct nfb_counter *c = &m->v[nfb_cnt_index(m->cap, row, slot)];

		out->packets += c->packets;
		out->bytes += c->bytes;
		if (c->last_ns > out->last_ns)
			out->last_ns = c->last_ns;
	}
}

/* Slots per row for a slot map: a power of two, so that a policy that
 * grows or shrinks a little keeps its map (and its counts, uncopied). */
static uint32_t cnt_cap_for(const struct plan *pl, const struct slot_map *slots)
{
	uint32_t top = slots->established_slot, cap = NFB_CNT_MIN_CAP;

	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		if (slots->default_slot[hk] > top)
			top = slots->default_slot[hk];
		for (uint32_t bit = 0; bit < pl->hook[hk].nrules; bit++)
			if (slots->rule_slot[hk][bit] > top)
				top = slots->rule_slot[hk][bit];
	}
	while (cap <= top)
		cap <<= 1;
	return cap;
}

/* A new counters map takes the active one's counts into its carry row
 * (snap keeps what it took, for engine_settle) and its limit states. */
static int cnt_fill(struct engine *e, int fd, uint32_t cap, struct cnt_map *out, struct nfb_counter **snap)
{
	const struct cnt_map *old = &e->cnt;
	uint32_t n = old->v ? (old->cap < cap ? old->cap : cap) : 0, cpus = (uint32_t)e->ncpus;
	int own = dup(fd), r = own < 0 ? -errno : cnt_map_open(e, own, cap, out);

	*snap = NULL;
	if (r < 0) {
		if (own >= 0)
			close(own);
		return r;
	}
	if (!old->v)
		return 0;
	if (!(*snap = calloc(old->cap, sizeof(**snap))))
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		cnt_map_total(e, old, s, &(*snap)[s]);
		out->v[nfb_cnt_index(cap, cpus, s)] = (*snap)[s];
		out->v[nfb_cnt_index(cap, cpus + 1, s)] = old->v[nfb_cnt_index(old->cap, cpus + 1, s)];
	}
	return 0;
}

/* What the retired counters map counted since its snapshot, into the
 * active map's carry row: the retired generation is out of every
 * program's sight by now (engine_settle). */
static void cnt_fold(struct engine *e)
{
	uint32_t n = e->old_cnt.cap < e->cnt.cap ? e->old_cnt.cap : e->cnt.cap, cpus = (uint32_t)e->ncpus;

	for (uint32_t s = 0; s < n && e->snap && e->cnt.v; s++) {
		struct nfb_counter now, *carry = &e->cnt.v[nfb_cnt_index(e->cnt.cap, cpus, s)];

		cnt_map_total(e, &e->old_cnt, s, &now);
		if (now.packets > e->snap[s].packets)
			carry->packets += now.packets - e->snap[s].packets;
		if (now.bytes > e->snap[s].bytes)
			carry->bytes += now.bytes - e->snap[s].bytes;
		if (now.last_ns > carry->last_ns)
			carry->last_ns = now.last_ns;
	}
}

void engine_settle(struct engine *e)
{
	if (!e || !e->retired)
		return;
	if (gen_clear(e, e->active_gen ^ 1) < 0)
		log_warn("cannot free the maps of the policy replaced: %s (the next reload tries again)",
			 strerror(errno));
	if (e->old_cnt.fd >= 0) {
		cnt_fold(e);
		cnt_map_close(e, &e->old_cnt);
	}
	free(e->snap);
	e->snap = NULL;
	e->retired = false;
}

/* ---- the plan into maps ---- */

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
static uint16_t limit_index(struct limits *lim, uint32_t slot, const struct policy_limit *l,
			    const struct slot_map *slots)
{
	uint32_t set = l->overload_set && l->overload_set <= slots->nsets ? slots->set_id[l->overload_set - 1] : 0;

	uint64_t interval = l->rate.n ? (uint64_t)l->rate.per * 1000000000ull / l->rate.n : 0;

	if (lim->n >= NFB_MAX_LIMITS)
		return 0; /* the loader refuses more; never reached */
	lim->v[lim->n] = (struct nfb_limit_cfg){
		.interval_ns = interval,
		.depth_ns = interval * l->burst,
		.slot = slot,
		.flags = (l->per_source ? NFB_LIMIT_PER_SOURCE : 0) | (l->conns ? NFB_LIMIT_CONNS : 0) |
			 (l->overload ? NFB_LIMIT_OVERLOAD : 0),
		.conns = l->conns,
		.overload = l->overload ? set : 0,
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

/* ---- address ranges (bpf/nfbox.h, "Address maps") ---- */

typedef unsigned __int128 u128;

struct pfx_span {
	u128 first, last; /* the prefix's first and last address */
	uint32_t loc;
};

static int span_cmp(const void *a, const void *b)
{
	const struct pfx_span *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->last > y->last ? -1 : x->last < y->last; /* the enclosing one first */
}

/* The host part of a prefix of length plen among bits address bits. */
static u128 host_bits(int plen, int bits)
{
	if (plen >= bits)
		return 0;
	return plen ? ((u128)1 << (bits - plen)) - 1 : bits == 128 ? ~(u128)0 : ((u128)1 << bits) - 1;
}

static u128 addr_value(const uint8_t *a, int fi)
{
	u128 v = 0;

	for (int i = 0; i < (fi ? 16 : 4); i++)
		v = v << 8 | a[i];
	return v;
}

/* Range starts of one hook, direction and family, appended to out. */
struct ranges {
	u128 *start;
	uint32_t *loc;
	uint32_t n, cap;
	uint32_t seg; /* where the hook and direction being cut began */
};

static int range_emit(struct ranges *r, u128 pos, uint32_t loc)
{
	if (r->n > r->seg && r->start[r->n - 1] == pos) { /* the range had no address: replaced */
		r->loc[r->n - 1] = loc;
		if (r->n > r->seg + 1 && r->loc[r->n - 2] == loc)
			r->n--;
		return 0;
	}
	if (r->n > r->seg && r->loc[r->n - 1] == loc)
		return 0; /* the same vector goes on */
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 64;
		u128 *s = realloc(r->start, cap * sizeof(*s));
		uint32_t *l = s ? realloc(r->loc, cap * sizeof(*l)) : NULL;

		if (s)
			r->start = s;
		if (!s || !l)
			return -ENOMEM;
		r->loc = l;
		r->cap = cap;
	}
	r->start[r->n] = pos;
	r->loc[r->n++] = loc;
	return 0;
}

/* Nested prefixes (sorted by span_cmp) to ranges: an address takes the
 * locator of the longest prefix holding it, NFB_LOC_UNSET outside all. */
static int ranges_cut(struct ranges *r, const struct pfx_span *v, uint32_t n, u128 max)
{
	struct pfx_span stack[130];
	uint32_t depth = 0;
	int rc;

	r->seg = r->n;
	rc = range_emit(r, 0, NFB_LOC_UNSET);

	for (uint32_t i = 0; !rc && i <= n; i++) {
		/* close the prefixes that end before this one starts (or all) */
		while (!rc && depth && (i == n || stack[depth - 1].last < v[i].first)) {
			u128 end = stack[--depth].last;

			if (end != max)
				rc = range_emit(r, end + 1, depth ? stack[depth - 1].loc : NFB_LOC_UNSET);
		}
		if (rc || i == n)
			break;
		if (depth == sizeof(stack) / sizeof(stack[0]))
			return -EINVAL; /* nested deeper than the address has bits: not prefixes */
		stack[depth++] = v[i];
		rc = range_emit(r, v[i].first, v[i].loc);
	}
	return rc;
}

_Static_assert(2 * (2 * (uint64_t)POLICY_MAX_PREFIXES) + 1 <= (1ull << NFB_RANGE_STEPS),
	       "the ranges of one hook, family and direction within the classifier's bisection");
_Static_assert(NFB_MAX_LIMITS == POLICY_MAX_LIMITS && NFB_MAX_RULES == POLICY_MAX_RULES,
	       "the classifier's limits are the loader's");

/* The address ranges of a plan, both families. */
struct addr_plan {
	struct ranges fam[2];
	uint32_t base[NFB_HOOK_MAX][2][2], count[NFB_HOOK_MAX][2][2]; /* [hook][family][dir] */
};

static void addr_plan_free(struct addr_plan *ap)
{
	for (int fi = 0; fi < 2; fi++) {
		free(ap->fam[fi].start);
		free(ap->fam[fi].loc);
	}
	memset(ap, 0, sizeof(*ap));
}

static int addr_plan_make(const struct plan *pl, const struct plan_blob *b, struct addr_plan *ap)
{
	struct pfx_span *v = NULL;
	uint32_t cap = 0;
	int r = 0;

	memset(ap, 0, sizeof(*ap));
	for (int hk = 0; hk < NFB_HOOK_MAX && !r; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (int fi = 0; fi < 2 && !r; fi++) {
			u128 max = fi ? ~(u128)0 : 0xffffffffu;
			int bits = fi ? 128 : 32;

			if (h->nlpm[fi] > cap) {
				struct pfx_span *nv = realloc(v, h->nlpm[fi] * sizeof(*v));

				if (!nv) {
					r = -ENOMEM;
					break;
				}
				v = nv;
				cap = h->nlpm[fi];
			}
			for (uint8_t dir = 0; dir < 2 && !r; dir++) {
				uint32_t n = 0;
				bool sorted = true;

				for (uint32_t i = 0; i < h->nlpm[fi]; i++) {
					const struct plan_lpm *l = &h->lpm[fi][i];
					u128 host = host_bits(l->pfx.plen, bits);

					if (l->dir != dir)
						continue;
					v[n].first = addr_value(l->pfx.addr, fi) & ~host & max;
					v[n].last = v[n].first | host;
					v[n].loc = b->loc[hk][l->vec];
					if (n && span_cmp(&v[n - 1], &v[n]) > 0)
						sorted = false;
					n++;
				}
				if (!n)
					continue; /* count 0: every address misses */
				if (!sorted)
					sort_n(v, n, sizeof(*v), span_cmp);
				ap->base[hk][fi][dir] = ap->fam[fi].n;
				r = ranges_cut(&ap->fam[fi], v, n, max);
				ap->count[hk][fi][dir] = ap->fam[fi].n - ap->base[hk][fi][dir];
			}
		}
	}
	free(v);
	return r;
}

static int fill_addrs(const struct gen_maps *g, const struct addr_plan *ap)
{
	size_t b4 = (size_t)g->size[GM(EM_ADDR4)] * sizeof(struct nfb_range4);
	size_t b6 = (size_t)g->size[GM(EM_ADDR6)] * sizeof(struct nfb_range6);
	struct nfb_range4 *r4 = map_mmap(g->fd[GM(EM_ADDR4)], b4);
	struct nfb_range6 *r6 = map_mmap(g->fd[GM(EM_ADDR6)], b6);
	int r = r4 && r6 ? 0 : -errno;

	for (uint32_t i = 0; !r && i < ap->fam[0].n; i++)
		r4[i] = (struct nfb_range4){ .start = (uint32_t)ap->fam[0].start[i], .loc = ap->fam[0].loc[i] };
	for (uint32_t i = 0; !r && i < ap->fam[1].n; i++)
		r6[i] = (struct nfb_range6){ .hi = (uint64_t)(ap->fam[1].start[i] >> 64),
					     .lo = (uint64_t)ap->fam[1].start[i],
					     .loc = ap->fam[1].loc[i] };
	map_munmap(r4, b4);
	map_munmap(r6, b6);
	return r;
}

/* The port map's pages (bpf/nfbox.h, "Port map"), identical ones once. */
struct port_pages {
	uint32_t top[NFB_PORT_TOP];
	uint32_t *page; /* npages x 256 locators */
	uint32_t npages;
	uint32_t *index; /* open addressing over pages: page + 1 */
	uint32_t index_cap;
};

static uint32_t page_hash(const uint32_t *p)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < 256; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return (uint32_t)(h ^ h >> 32);
}

/* The number of a page with these locators, added if new; -ENOMEM. */
static int64_t page_find_add(struct port_pages *pp, const uint32_t *p)
{
	uint32_t i = page_hash(p) & (pp->index_cap - 1);

	for (; pp->index[i]; i = (i + 1) & (pp->index_cap - 1))
		if (!memcmp(&pp->page[(size_t)(pp->index[i] - 1) * 256], p, 256 * sizeof(*p)))
			return pp->index[i] - 1;
	if (pp->npages >= NFB_PORT_MAX_PAGES)
		return -ENOMEM; /* cannot happen: pages <= top entries + 1 */
	memcpy(&pp->page[(size_t)pp->npages * 256], p, 256 * sizeof(*p));
	pp->index[i] = ++pp->npages;
	return pp->npages - 1;
}

static void port_pages_free(struct port_pages *pp)
{
	free(pp->page);
	free(pp->index);
	pp->page = pp->index = NULL;
}

static int port_pages_build(const struct plan *pl, const struct plan_blob *b, struct port_pages *pp)
{
	_cleanup_free_ uint32_t *full = malloc(65536 * sizeof(*full));

	memset(pp->top, 0, sizeof(pp->top));
	pp->npages = 0;
	pp->index_cap = 16384; /* > 2 x NFB_PORT_MAX_PAGES */
	pp->page = malloc((size_t)NFB_PORT_MAX_PAGES * 256 * sizeof(*pp->page));
	pp->index = calloc(pp->index_cap, sizeof(*pp->index));
	if (!full || !pp->page || !pp->index)
		return -ENOMEM;
	memset(full, 0xff, 256 * sizeof(*full)); /* page 0: every port unset */
	page_find_add(pp, full);
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];
		bool used[2][NFB_PC_MAX] = { { false } };

		for (uint32_t i = 0; i < h->nports; i++)
			used[h->ports[i].dir & 1][h->ports[i].cls % NFB_PC_MAX] = true;
		for (uint32_t dir = 0; dir < 2; dir++) {
			for (uint32_t cls = 0; cls < NFB_PC_MAX; cls++) {
				if (!used[dir][cls])
					continue;
				memset(full, 0xff, 65536 * sizeof(*full));
				for (uint32_t i = 0; i < h->nports; i++) {
					const struct plan_seg *s = &h->ports[i];

					if (s->dir == dir && s->cls == cls)
						for (uint32_t v = s->lo; v <= s->hi; v++)
							full[v] = b->loc[hk][s->vec];
				}
				for (uint32_t pg = 0; pg < 256; pg++) {
					int64_t n = page_find_add(pp, &full[pg * 256]);

					if (n < 0)
						return (int)n;
					pp->top[nfb_port_top((uint32_t)hk, dir, cls, pg << 8)] = (uint32_t)n;
				}
			}
		}
	}
	return 0;
}

/* Sizes and contents worked out before any map is made. */
struct gen_plan {
	struct port_pages pp;
	struct addr_plan ap;
	bool staged; /* pp and ap are a stage's (engine_stage_make), not freed here */
	uint32_t rule_base[NFB_HOOK_MAX], nrules, nlimits, cnt_cap;
	bool meter, conns;
};

struct engine_stage {
	struct port_pages pp;
	struct addr_plan ap;
};

void engine_stage_free(struct engine_stage *s)
{
	if (!s)
		return;
	port_pages_free(&s->pp);
	addr_plan_free(&s->ap);
	free(s);
}

int engine_stage_make(const struct plan *pl, const struct plan_blob *b, struct engine_stage **out)
{
	struct engine_stage *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	if (port_pages_build(pl, b, &s->pp) < 0)
		r = -ENOMEM;
	else
		r = addr_plan_make(pl, b, &s->ap);
	if (r < 0) {
		engine_stage_free(s);
		return r;
	}
	*out = s;
	return 0;
}

static int gen_plan_make(struct engine *e, const struct plan *pl, const struct plan_blob *b,
			 const struct slot_map *slots, const struct engine_stage *stage, struct gen_plan *gp)
{
	(void)e;
	memset(gp, 0, sizeof(*gp));
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		gp->rule_base[hk] = gp->nrules;
		gp->nrules += h->nrules;
		for (uint32_t bit = 0; bit < h->nrules; bit++) {
			if (!policy_has_limit(&h->rules[bit]->limit))
				continue;
			gp->nlimits++;
			gp->meter |= h->rules[bit]->limit.per_source && !h->rules[bit]->limit.conns;
			gp->conns |= h->rules[bit]->limit.conns != 0;
		}
	}
	gp->cnt_cap = cnt_cap_for(pl, slots);
	if (stage) {
		gp->pp = stage->pp;
		gp->ap = stage->ap;
		gp->staged = true;
		return 0;
	}
	return port_pages_build(pl, b, &gp->pp) < 0 ? -ENOMEM : addr_plan_make(pl, b, &gp->ap);
}

/* The array maps' values, mmap()ed while fill_arrays() writes them. */
struct array_views {
	uint32_t *port, *misc;
	struct nfb_rule *rules;
	void *blob;
	size_t port_bytes, misc_bytes, rule_bytes, blob_bytes;
};

static void array_views_unmap(struct array_views *v)
{
	map_munmap(v->port, v->port_bytes);
	map_munmap(v->misc, v->misc_bytes);
	map_munmap(v->rules, v->rule_bytes);
	map_munmap(v->blob, v->blob_bytes);
}

static int fill_arrays(struct gen_maps *g, const struct gen_plan *gp, const struct plan *pl, const struct plan_blob *b,
		       const struct slot_map *slots, struct limits *lim)
{
	/* Array maps store each value in 8-byte-aligned slots: a u32 locator
	 * takes 8 bytes of the mmap()ed area (see ARRAY_STRIDE). */
	_cleanup_(array_views_unmap) struct array_views m = {
		.port_bytes = (size_t)g->size[GM(EM_PORT)] * ARRAY_STRIDE * 4,
		.misc_bytes = (size_t)NFB_MISC_ENTRIES * ARRAY_STRIDE * 4,
		.rule_bytes = (size_t)g->size[GM(EM_RULES)] * sizeof(struct nfb_rule),
		.blob_bytes = (size_t)b->nchunks * sizeof(struct nfb_chunk),
	};

	m.port = map_mmap(g->fd[GM(EM_PORT)], m.port_bytes);
	m.misc = map_mmap(g->fd[GM(EM_MISC)], m.misc_bytes);
	m.rules = map_mmap(g->fd[GM(EM_RULES)], m.rule_bytes);
	m.blob = m.blob_bytes ? map_mmap(g->fd[GM(EM_BLOB)], m.blob_bytes) : NULL;
	if (!m.port || !m.misc || !m.rules || (m.blob_bytes && !m.blob))
		return -errno;
	for (uint32_t i = 0; i < NFB_PORT_TOP; i++)
		m.port[ARRAY_STRIDE * i] = gp->pp.top[i];
	for (size_t i = 0; i < (size_t)gp->pp.npages * 256; i++)
		m.port[ARRAY_STRIDE * (NFB_PORT_TOP + i)] = gp->pp.page[i];
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (uint32_t i = 0; i < h->nmisc; i++) {
			const struct plan_seg *s = &h->misc[i];

			for (uint32_t v = s->lo; v <= s->hi; v++)
				m.misc[ARRAY_STRIDE * nfb_misc_index((uint32_t)hk, s->cls, v)] = b->loc[hk][s->vec];
		}
		for (uint32_t bit = 0; bit < h->nrules; bit++) {
			const struct rule *ru = h->rules[bit];

			m.rules[gp->rule_base[hk] + bit] = (struct nfb_rule){
				.action = nfb_action_of(ru->action),
				.flags = (uint8_t)((ru->log ? NFB_RULE_LOG : 0) | ru->reject_with
											  << NFB_RULE_REJECT_SHIFT),
				.limit = policy_has_limit(&ru->limit)
						 ? limit_index(lim, slots->rule_slot[hk][bit], &ru->limit, slots)
						 : 0,
				.counter = slots->rule_slot[hk][bit],
				.dyn = { dyn_of(slots, &ru->from), dyn_of(slots, &ru->to) },
				.sched = (uint16_t)ru->when.sched,
				.cut = ru->when.cut,
			};
		}
	}
	if (m.blob_bytes)
		memcpy(m.blob, b->words, m.blob_bytes);
	return 0;
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

static int ifindex_cmp(const void *a, const void *b)
{
	const struct if_nameindex *x = *(const struct if_nameindex *const *)a,
				  *y = *(const struct if_nameindex *const *)b;

	return (x->if_index > y->if_index) - (x->if_index < y->if_index);
}

/* The links of if_nameindex() once each, by index: a dump of the links
 * taken while links come and go may list one twice, and one counted twice
 * would count twice against the map's limit. NULL when out of memory. */
static const struct if_nameindex **unique_ifaces(const struct if_nameindex *all, uint32_t *n)
{
	uint32_t nall = 0, k = 0;
	const struct if_nameindex **u;

	while (all[nall].if_index)
		nall++;
	if (!(u = calloc(nall + 1, sizeof(*u))))
		return NULL;
	for (uint32_t i = 0; i < nall; i++)
		u[i] = &all[i];
	sort_n(u, nall, sizeof(*u), ifindex_cmp);
	for (uint32_t i = 0; i < nall; i++)
		if (!k || u[i]->if_index != u[k - 1]->if_index)
			u[k++] = u[i];
	*n = k;
	return u;
}

static bool same_links(const struct if_nameindex *a, const struct if_nameindex *b)
{
	for (; a->if_index && b->if_index; a++, b++)
		if (a->if_index != b->if_index || strcmp(a->if_name, b->if_name))
			return false;
	return !a->if_index && !b->if_index;
}

/* if_nameindex() until two dumps in a row agree (8 tries at most): a dump
 * taken while links come and go can list a link that is already gone
 * beside one that came after it, and count both against the map's limit. */
static struct if_nameindex *stable_links(void)
{
	struct if_nameindex *a = if_nameindex(), *b;

	for (int i = 0; a && i < 8; i++) {
		if (!(b = if_nameindex()))
			break;
		if (same_links(a, b)) {
			if_freenameindex(b);
			break;
		}
		if_freenameindex(a);
		a = b;
	}
	return a;
}

static int iface_wanted(const struct plan *pl, const struct plan_blob *b, struct iface_want *w, struct diags *warn)
{
	struct if_nameindex *all = stable_links();
	const struct if_nameindex **u;
	uint32_t nall = 0, cap;

	memset(w, 0, sizeof(*w));
	if (!all)
		return -errno;
	if (!(u = unique_ifaces(all, &nall))) {
		if_freenameindex(all);
		return -ENOMEM;
	}
	cap = (nall ? nall : 1) * NFB_HOOK_MAX * 2;
	w->k = calloc(cap, sizeof(*w->k));
	w->loc = calloc(cap, sizeof(*w->loc));
	if (!w->k || !w->loc) {
		free(u);
		if_freenameindex(all);
		return -ENOMEM;
	}
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		const struct plan_hook *h = &pl->hook[hk];

		for (uint8_t dir = 0; h->nifaces && dir < 2; dir++) {
			for (uint32_t x = 0; x < nall; x++) {
				const struct if_nameindex *it = u[x];
				int64_t j = plan_iface_find(h, dir, it->if_name);

				if (j < 0)
					continue;
				w->k[w->n] = (struct nfb_iface_key){ .hook = (uint8_t)hk,
								     .dir = dir,
								     .ifindex = it->if_index };
				w->loc[w->n++] = b->loc[hk][h->ifaces[j].vec];
			}
		}
		for (uint32_t i = 0; warn && i < h->nifaces; i++)
			if (!policy_ifname_wild(h->ifaces[i].ifname) && !if_nametoindex(h->ifaces[i].ifname))
				diag_warn(warn, DIAG_NOWHERE,
					  "interface %s does not exist (yet): rules naming it match nothing until it "
					  "appears",
					  h->ifaces[i].ifname);
	}
	free(u);
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

	if (!r && w.n > NFB_IFACE_MAX_ENTRIES)
		r = diag_fail(d, -E2BIG,
			      "the policy's interfaces need %u entries (an interface for each hook and direction "
			      "whose rules name it or a wildcard over it); the BPF engine holds %u" DIAG_FIX
			      ": name fewer "
			      "interfaces, or use 'backend: nftables'",
			      w.n, NFB_IFACE_MAX_ENTRIES);

	for (uint32_t i = 0; !r && i < w.n; i++)
		if (bpf_map_update_elem(fd, &w.k[i], &w.loc[i], BPF_ANY) < 0)
			r = -errno;
	iface_want_free(&w);
	return r;
}

static void gen_cfg(struct engine *e, struct nfb_gen_cfg *c, const struct gen_plan *gp, const struct plan *pl,
		    const struct plan_blob *b, const struct slot_map *slots)
{
	const struct policy_options *o = &pl->pol->opt;

	memset(c, 0, sizeof(*c));
	c->options = (o->established_accept ? NFB_OPT_ESTABLISHED_ACCEPT : 0) | (o->defrag ? NFB_OPT_DEFRAG : 0) |
		     (gp->conns ? NFB_OPT_CONN_LIMITS : 0) | (sched_any_cut(pl->pol) ? NFB_OPT_SCHED_CUT : 0);
	c->log_rate = o->log_rate.n;
	c->log_period = o->log_rate.per;
	c->log_burst = o->log_burst;
	c->reject_rate = o->reject_rate.n;
	c->reject_period = o->reject_rate.per;
	c->reject_burst = o->reject_rate.n; /* a period's worth */
	c->established_counter = slots->established_slot;
	c->cnt_cap = gp->cnt_cap;
	c->cnt_cpus = (uint32_t)e->ncpus;
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
		hc->rule_base = gp->rule_base[hk];
		for (int fi = 0; fi < 2; fi++)
			for (int dir = 0; dir < 2; dir++) {
				hc->range[fi][dir][0] = gp->ap.base[hk][fi][dir];
				hc->range[fi][dir][1] = gp->ap.count[hk][fi][dir];
			}
	}
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

static bool meter_unused(const void *key, void *arg)
{
	const uint8_t *keep = arg;
	struct nfb_meter_key k;

	memcpy(&k, key, sizeof(k));
	return k.slot >= NFB_MAX_COUNTERS || !keep[k.slot];
}

/* After a flip: per-source buckets of rules that no longer have a
 * per-source limit go (the meter passes from generation to generation). */
/* A flag for each counter slot whose rule's limit has (has), of pl; NULL
 * when out of memory. */
static uint8_t *slots_whose_limit(const struct plan *pl, const struct slot_map *slots,
				  bool (*has)(const struct policy_limit *l))
{
	uint8_t *keep = calloc(NFB_MAX_COUNTERS, 1);

	for (int hk = 0; keep && hk < NFB_HOOK_MAX; hk++)
		for (uint32_t bit = 0; bit < pl->hook[hk].nrules; bit++)
			if (has(&pl->hook[hk].rules[bit]->limit))
				keep[slots->rule_slot[hk][bit]] = 1;
	return keep;
}

static bool per_source(const struct policy_limit *l)
{
	return l->per_source;
}

static bool counts_conns(const struct policy_limit *l)
{
	return l->conns != 0;
}

static void prune_meter(int meter_fd, const struct plan *pl, const struct slot_map *slots)
{
	uint8_t *keep = slots_whose_limit(pl, slots, per_source);

	if (!keep)
		return;
	engine_delete_keys(meter_fd, sizeof(struct nfb_meter_key), meter_unused, keep);
	free(keep);
}

/* After a flip: the connections counted for slots that no longer have a
 * connection limit go, with their counts (a slot given to another rule
 * later starts from none). */
struct conn_prune {
	int fd;
	const uint8_t *keep;
};

static bool conn_unused(const void *key, void *arg)
{
	const struct conn_prune *cp = arg;
	struct nfb_conn_val v;

	return bpf_map_lookup_elem(cp->fd, key, &v) == 0 &&
	       (v.owner.slot >= NFB_MAX_COUNTERS || !cp->keep[v.owner.slot]);
}

static void prune_conns(int conns_fd, int counts_fd, const struct plan *pl, const struct slot_map *slots)
{
	uint8_t *keep = slots_whose_limit(pl, slots, counts_conns);
	struct conn_prune cp = { .fd = conns_fd, .keep = keep };

	if (!keep)
		return;
	engine_delete_keys(conns_fd, sizeof(struct nfb_conn_key), conn_unused, &cp);
	engine_delete_keys(counts_fd, sizeof(struct nfb_meter_key), meter_unused, keep);
	free(keep);
}

/* Make (or, for the counters and the meter, share) the generation's maps. */
static int gen_create(struct engine *e, struct gen_maps *g, const struct gen_plan *gp, const struct plan *pl,
		      const struct plan_blob *b, struct diags *d)
{
	g->size[GM(EM_ADDR4)] = gp->ap.fam[0].n ? gp->ap.fam[0].n : 1;
	g->size[GM(EM_ADDR6)] = gp->ap.fam[1].n ? gp->ap.fam[1].n : 1;
	g->size[GM(EM_PORT)] = NFB_PORT_TOP + gp->pp.npages * 256;
	g->size[GM(EM_RULES)] = gp->nrules ? gp->nrules : 1;
	g->size[GM(EM_LIMITS)] = gp->nlimits ? gp->nlimits : 1;
	g->size[GM(EM_BLOB)] = b->nchunks ? b->nchunks : 1;
	g->size[GM(EM_COUNTERS)] = NFB_CNT_ROWS((uint32_t)e->ncpus) * gp->cnt_cap;
	for (int i = 0; i < EM_NUM_OUTER; i++) {
		if (i == GM(EM_COUNTERS) && e->cnt.fd >= 0 && e->cnt.cap == gp->cnt_cap) {
			g->fd[i] = dup(e->cnt.fd);
			continue;
		}
		if (i == GM(EM_METER) || i == GM(EM_CONNS) || i == GM(EM_CONN_COUNT)) {
			bool want = i == GM(EM_METER) ? gp->meter : gp->conns;

			if (!want || (g->fd[i] = engine_inner_fd(e, EM_FIRST_OUTER + i, e->active_gen)) >= 0)
				continue; /* none, or the one in force passes on */
		}
		g->fd[i] = inner_create(e, i, g->size[i]);
		if (g->fd[i] < 0)
			return diag_errno(d, g->fd[i], "cannot create map %s for the new policy", inner_names[i]);
		if (i == GM(EM_COUNTERS))
			g->own_counters = true;
	}
	return 0;
}

static int gen_fill(struct engine *e, struct gen_maps *g, const struct gen_plan *gp, const struct plan *pl,
		    const struct plan_blob *b, const struct slot_map *slots, struct diags *d)
{
	struct limits *lim = calloc(1, sizeof(*lim));
	int r;

	if (!lim)
		return diag_errno(d, -ENOMEM, "the new policy's limits");
	r = fill_arrays(g, gp, pl, b, slots, lim);
	for (uint32_t i = 0; r >= 0 && i < lim->n; i++)
		if (bpf_map_update_elem(g->fd[GM(EM_LIMITS)], &i, &lim->v[i], BPF_ANY) < 0)
			r = -errno;
	free(lim);
	if (r < 0)
		return diag_errno(d, r, "cannot fill the new policy's arrays");
	if ((r = fill_addrs(g, &gp->ap)) < 0)
		return diag_errno(d, r, "cannot fill the new policy's address maps");
	if ((r = fill_ifaces(g->fd[GM(EM_IFACE)], pl, b, d)) < 0)
		return diag_errno(d, r, "cannot fill the new policy's interface map");
	return 0;
}

static int ctl_write(struct engine *e, uint32_t gen)
{
	struct nfb_ctl ctl = { .active_gen = gen, .abi = NFB_ABI_VERSION, .netns_cookie = e->netns_cookie };
	uint32_t zero = 0;

	return bpf_map_update_elem(e->map_fd[EM_CTL], &zero, &ctl, BPF_ANY) < 0 ? -errno : 0;
}

static void gen_plan_freep(struct gen_plan **gp)
{
	if (!*gp)
		return;
	if (!(*gp)->staged) {
		port_pages_free(&(*gp)->pp);
		addr_plan_free(&(*gp)->ap);
	}
	free(*gp);
}

static void gen_maps_close(struct gen_maps *g)
{
	for (int i = 0; i < EM_NUM_OUTER; i++)
		if (g->fd[i] >= 0)
			close(g->fd[i]); /* the outer maps hold them now */
}

/* The new policy's own counters and their snapshot, until the engine
 * takes them. */
struct new_counters {
	struct engine *e;
	struct cnt_map cnt;
	struct nfb_counter *snap;
};

static void new_counters_drop(struct new_counters *nc)
{
	if (nc->cnt.v || nc->cnt.fd >= 0)
		cnt_map_close(nc->e, &nc->cnt);
	free(nc->snap);
}

int engine_inner_fd(const struct engine *e, int em, uint32_t gen)
{
	uint32_t id;

	if (bpf_map_lookup_elem(e->map_fd[em], &gen, &id) < 0)
		return -1;
	return bpf_map_get_fd_by_id(id);
}

/* The words of generation gen in nfb_sched. */
static int sched_write(struct engine *e, uint32_t gen, const uint64_t *words)
{
	for (uint32_t i = 0; i < NFB_SCHED_WORDS; i++) {
		uint32_t k = gen * NFB_SCHED_WORDS + i;

		if (bpf_map_update_elem(e->map_fd[EM_SCHED], &k, &words[i], BPF_ANY) < 0)
			return -errno;
	}
	return 0;
}

int engine_sched_set(struct engine *e, const uint64_t *words)
{
	return sched_write(e, e->active_gen, words);
}

void plan_sched_words(const struct plan *pl, int64_t now, uint64_t *words)
{
	memset(words, 0, NFB_SCHED_WORDS * sizeof(*words));
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (uint32_t i = 0; i < pl->hook[h].nrules; i++) {
			const struct rule *ru = pl->hook[h].rules[i];
			uint32_t bit = ru->when.sched - 1;

			if (ru->when.sched && bit < NFB_MAX_SCHED && sched_open(&ru->when, now))
				words[bit / 64] |= 1ull << (bit % 64);
		}
}

int engine_load(struct engine *e, const struct plan *pl, const struct plan_blob *b, const struct slot_map *slots,
		const struct engine_stage *stage, struct diags *d)
{
	uint32_t spare = e->active_gen ^ 1, old = e->active_gen;
	struct outer_op ops[EM_NUM_OUTER];
	int op_map[EM_NUM_OUTER], failed = 0;
	_cleanup_(gen_plan_freep) struct gen_plan *gp = NULL;
	_cleanup_(new_counters_drop) struct new_counters nc = { .e = e, .cnt = { .fd = -1 } };
	_cleanup_(gen_maps_close) struct gen_maps g = { .fd = { [0 ... EM_NUM_OUTER - 1] = -1 } };
	struct nfb_gen_cfg cfg;
	int r, nops = 0, meter_fd;

	engine_settle(e); /* the slots of the spare generation are empty */
	if (!(gp = calloc(1, sizeof(*gp))))
		return diag_errno(d, -ENOMEM, "the new policy's maps");
	if ((r = gen_plan_make(e, pl, b, slots, stage, gp)) < 0)
		return diag_errno(d, r, "the new policy's port and address maps");
	if ((r = gen_create(e, &g, gp, pl, b, d)) < 0)
		return r;
	/* Into the spare slots now (threads: one grace period for all), filled
	 * meanwhile: no program reads the spare generation. */
	for (int i = 0; i < EM_NUM_OUTER; i++) {
		if (g.fd[i] < 0)
			continue;
		op_map[nops] = i;
		ops[nops++] = (struct outer_op){ .outer_fd = e->map_fd[EM_FIRST_OUTER + i],
						 .key = spare,
						 .inner_fd = g.fd[i] };
	}
	outer_ops_start(ops, nops);
	r = gen_fill(e, &g, gp, pl, b, slots, d);
	if (r >= 0 && g.own_counters && (r = cnt_fill(e, g.fd[GM(EM_COUNTERS)], gp->cnt_cap, &nc.cnt, &nc.snap)) < 0)
		r = diag_errno(d, r, "cannot fill the new policy's counters");
	gen_cfg(e, &cfg, gp, pl, b, slots);
	if (r >= 0) {
		uint64_t words[NFB_SCHED_WORDS];

		plan_sched_words(pl, time(NULL), words);
		if ((r = sched_write(e, spare, words)) < 0)
			r = diag_errno(d, r, "cannot write the new policy's schedules");
	}
	if (r >= 0 && bpf_map_update_elem(e->map_fd[EM_GEN], &spare, &cfg, BPF_ANY) < 0)
		r = diag_errno(d, -errno, "cannot write the new policy's configuration");
	{
		int j = outer_ops_join(ops, nops, &failed);

		if (r >= 0 && j < 0)
			r = diag_errno(d, j, "cannot install the new policy's map %s", inner_names[op_map[failed]]);
	}
	if (r < 0) {
		gen_clear(e, spare); /* the running generation was not touched */
		return r;
	}
	/* The flip: one write; each packet reads the generation once. */
	if ((r = ctl_write(e, spare)) < 0) {
		r = diag_errno(d, r, "cannot switch to the new policy");
		gen_clear(e, spare);
		return r;
	}
	e->active_gen = spare;
	e->retired = true;
	if (g.own_counters) {
		e->old_cnt = e->cnt;
		e->cnt = nc.cnt;
		e->snap = TAKE_PTR(nc.snap);
		nc.cnt = (struct cnt_map){ .fd = -1 };
	}
	r = engine_links_sync(e, pl, d);
	if (r < 0 && (e->generation || e->adopted)) {
		/* Back to the policy that was in force; the new one is retired. */
		ctl_write(e, old);
		e->active_gen = old;
		if (e->old_cnt.fd >= 0) {
			struct cnt_map t = e->cnt;

			e->cnt = e->old_cnt;
			e->old_cnt = t;
		}
		return r;
	}
	meter_fd = g.fd[GM(EM_METER)];
	if (meter_fd >= 0)
		prune_meter(meter_fd, pl, slots);
	if (g.fd[GM(EM_CONNS)] >= 0 && g.fd[GM(EM_CONN_COUNT)] >= 0)
		prune_conns(g.fd[GM(EM_CONNS)], g.fd[GM(EM_CONN_COUNT)], pl, slots);
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

static int iface_key_cmp(const void *a, const void *b)
{
	const struct nfb_iface_key *x = a, *y = b;

	if (x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	if (x->hook != y->hook)
		return x->hook < y->hook ? -1 : 1;
	return (int)x->dir - (int)y->dir;
}

/* w->v sorted (iface_key_cmp): a map of 16,384 entries is checked in
 * 16,384 bisections, not 16,384^2 compares. */
static bool iface_unwanted(const void *key, void *arg)
{
	const struct wanted *w = arg;
	struct nfb_iface_key k = { 0 };

	memcpy(&k, key, sizeof(k));
	return !search_n(&k, w->v, w->n, sizeof(*w->v), iface_key_cmp);
}

/* Interfaces that went first (their entries would otherwise take the room
 * of those that came), then those that came. When the ones there now need
 * more entries than the map holds, those that do not fit match only rules
 * that exclude them: said as -E2BIG and the entries needed (*need). */
int engine_ifaces_refresh(struct engine *e, const struct plan *pl, const struct plan_blob *b, uint32_t *need)
{
	struct iface_want w;
	int fd, r;

	*need = 0;
	if ((fd = active_iface_map(e)) < 0)
		return fd;
	r = iface_wanted(pl, b, &w, NULL);
	if (!r) {
		struct nfb_iface_key *sorted = malloc((w.n ? w.n : 1) * sizeof(*sorted));
		struct wanted keep = { sorted, w.n };

		if (!sorted) {
			r = -ENOMEM;
		} else {
			memcpy(sorted, w.k, w.n * sizeof(*sorted));
			sort_n(sorted, w.n, sizeof(*sorted), iface_key_cmp);
			r = engine_delete_keys(fd, sizeof(struct nfb_iface_key), iface_unwanted, &keep);
			r = r < 0 ? r : 0;
		}
		free(sorted);
	}
	for (uint32_t i = 0; !r && i < w.n; i++)
		if (bpf_map_update_elem(fd, &w.k[i], &w.loc[i], BPF_ANY) < 0)
			r = -errno;
	*need = w.n;
	iface_want_free(&w);
	close(fd);
	return r;
}
