/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Policy compiler: struct policy -> struct plan. Pure computation; the
 * engine (appliance/) writes the result into BPF maps.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "backend/bpf/compile/plan.h"
#include "base/cleanup.h"

/* ---- vector interning ------------------------------------------------ */

struct intern {
	uint32_t *slots; /* vector id + 1, 0 = empty */
	uint32_t cap;	 /* power of two */
};

static uint64_t hash_list(uint8_t field, const uint32_t *v, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ field;

	for (uint32_t i = 0; i < n; i++) {
		h ^= v[i];
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h ^ n;
}

static bool vec_equal(const struct plan_hook *h, const struct plan_vec *a, uint8_t field, const uint32_t *v, uint32_t n)
{
	return a->field == field && a->n == n && (!n || memcmp(h->bits + a->off, v, n * sizeof(*v)) == 0);
}

static int intern_grow(struct plan_hook *h)
{
	struct intern *t = h->intern;
	uint32_t cap = t->cap ? t->cap * 2 : 1024;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 0; id < h->nvecs; id++) {
		const struct plan_vec *pv = &h->vecs[id];
		uint64_t i = hash_list(pv->field, h->bits + pv->off, pv->n) & (cap - 1);

		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = id + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/* The id of the vector (field, sorted rule list v[0..n)); a new one if unseen.
 * Returns UINT32_MAX on allocation failure. */
static uint32_t vec_intern(struct plan_hook *h, uint8_t field, const uint32_t *v, uint32_t n)
{
	struct intern *t = h->intern;
	uint64_t i;

	if (h->nvecs * 2 >= t->cap && intern_grow(h) < 0)
		return UINT32_MAX;
	for (i = hash_list(field, v, n) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
		if (vec_equal(h, &h->vecs[t->slots[i] - 1], field, v, n))
			return t->slots[i] - 1;
	if (h->nbits + n > h->capbits) {
		uint32_t cap = h->capbits ? h->capbits : 1024;
		uint32_t *bits;

		while (cap < h->nbits + n)
			cap *= 2;
		bits = realloc(h->bits, cap * sizeof(*bits));
		if (!bits)
			return UINT32_MAX;
		h->bits = bits;
		h->capbits = cap;
	}
	if ((h->nvecs & (h->nvecs - 1)) == 0) {
		struct plan_vec *vecs = realloc(h->vecs, (h->nvecs ? h->nvecs * 2 : 16) * sizeof(*vecs));

		if (!vecs)
			return UINT32_MAX;
		h->vecs = vecs;
	}
	if (n)
		memcpy(h->bits + h->nbits, v, n * sizeof(*v));
	h->vecs[h->nvecs] = (struct plan_vec){ .field = field, .off = h->nbits, .n = n };
	h->nbits += n;
	t->slots[i] = h->nvecs + 1;
	return h->nvecs++;
}

/* ---- growable arrays --------------------------------------------------- */

#define APPEND(arr, n)                                                                                             \
	({                                                                                                         \
		__typeof__(arr) _v =                                                                               \
			((n) & ((n) - 1)) ? (arr) : realloc((arr), ((n) ? 2 * (size_t)(n) : 16) * sizeof(*(arr))); \
		if (_v)                                                                                            \
			(arr) = _v;                                                                                \
		_v ? &(arr)[(n)++] : NULL;                                                                         \
	})

/* A list of rule bits under construction (kept sorted by the callers). */
struct bitlist {
	uint32_t *v;
	uint32_t n;
};

static void bitlist_free(struct bitlist *l)
{
	free(l->v);
}

static int bitlist_push(struct bitlist *l, uint32_t bit)
{
	uint32_t *slot = APPEND(l->v, l->n);

	if (!slot)
		return -ENOMEM;
	*slot = bit;
	return 0;
}

/* ---- per-field tables -------------------------------------------------- */

static bool rule_restricts_l4(const struct rule *r)
{
	return r->proto >= 0 || !r->service.any || !r->sport.any;
}

/* The conntrack states a rule matches in the classifier. A synproxy rule
 * also takes its untracked SYNs and the clients' ACKs (invalid until the
 * proxy answers them) in its place: table inet nfbox's synproxy chains
 * then hand them to the proxy (backend/nftables/nft/build.c). */
static uint8_t rule_states(const struct rule *r)
{
	if (r->synproxy && r->state != POLICY_CT_ALL)
		return (uint8_t)(r->state | POLICY_CT_INVALID | POLICY_CT_UNTRACKED);
	return r->state;
}

/* A dynamic set is matched after the search (bpf/nfbox.h, "Dynamic
 * sets"): in the vectors its rule takes every address. */
static bool addr_restricts(const struct addr_match *m)
{
	return !m->any && !m->dyn;
}

static int compile_wildcards(struct plan_hook *h)
{
	for (int f = 0; f < NFB_F_MAX; f++)
		if (bitvec_init(&h->wild[f], h->nrules) < 0)
			return -ENOMEM;
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];
		bool restricts[NFB_F_MAX] = {
			[NFB_F_IIF] = !r->in.any,
			[NFB_F_OIF] = !r->out.any,
			[NFB_F_SRC] = addr_restricts(&r->from),
			[NFB_F_DST] = addr_restricts(&r->to),
			[NFB_F_L4] = rule_restricts_l4(r),
			[NFB_F_SPORT] = !r->sport.any,
			[NFB_F_CT] = rule_states(r) != POLICY_CT_ALL,
		};

		/* Family is enforced through the address fields: a rule that
		 * can match one family only restricts both address fields. */
		if (r->families != POLICY_FAM_ANY)
			restricts[NFB_F_SRC] = true;
		for (int f = 0; f < NFB_F_MAX; f++) {
			if (restricts[f])
				h->fields |= 1u << f;
			else
				bitvec_set(&h->wild[f], b);
		}
	}
	for (int f = 0; f < NFB_F_MAX; f++)
		if ((h->miss[f] = vec_intern(h, (uint8_t)f, NULL, 0)) == UINT32_MAX)
			return -ENOMEM;
	return 0;
}

static int compile_ifaces(struct plan_hook *h, uint8_t dir)
{
	uint8_t field = dir ? NFB_F_OIF : NFB_F_IIF;
	uint32_t first = h->nifaces;

	/* Collect distinct names, then the sorted rule list of each. */
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct iface_match *m = dir ? &h->rules[b]->out : &h->rules[b]->in;

		for (uint32_t i = 0; !m->any && i < m->n; i++) {
			bool seen = false;
			struct plan_iface *e;

			for (uint32_t j = first; j < h->nifaces && !seen; j++)
				seen = strcmp(h->ifaces[j].ifname, m->ifnames[i]) == 0;
			if (seen)
				continue;
			if (!(e = APPEND(h->ifaces, h->nifaces)))
				return -ENOMEM;
			memset(e, 0, sizeof(*e));
			strcpy(e->ifname, m->ifnames[i]);
			e->dir = dir;
		}
	}
	/* A rule takes an interface it lists, or, negated ("!wan"), one it
	 * does not list. */
	for (uint32_t j = first; j < h->nifaces; j++) {
		struct bitlist l = { 0 };

		for (uint32_t b = 0; b < h->nrules; b++) {
			const struct iface_match *m = dir ? &h->rules[b]->out : &h->rules[b]->in;
			bool listed = false;

			/* a wildcard entry stands for the interfaces under it
			 * that have no entry of their own */
			for (uint32_t i = 0; !m->any && i < m->n && !listed; i++)
				listed = policy_ifname_match(m->ifnames[i], h->ifaces[j].ifname);
			if (!m->any && listed != m->neg && bitlist_push(&l, b) < 0) {
				free(l.v);
				return -ENOMEM;
			}
		}
		h->ifaces[j].vec = vec_intern(h, field, l.v, l.n);
		free(l.v);
		if (h->ifaces[j].vec == UINT32_MAX)
			return -ENOMEM;
	}
	/* An interface no rule names: the negated rules take it. */
	{
		struct bitlist l = { 0 };

		for (uint32_t b = 0; b < h->nrules; b++) {
			const struct iface_match *m = dir ? &h->rules[b]->out : &h->rules[b]->in;

			if (!m->any && m->neg && bitlist_push(&l, b) < 0) {
				free(l.v);
				return -ENOMEM;
			}
		}
		if (l.n)
			h->miss[field] = vec_intern(h, field, l.v, l.n);
		free(l.v);
		if (h->miss[field] == UINT32_MAX)
			return -ENOMEM;
	}
	return 0;
}

int64_t plan_iface_find(const struct plan_hook *h, uint8_t dir, const char *ifname)
{
	int64_t best = -1;
	size_t best_len = 0;

	for (uint32_t j = 0; j < h->nifaces; j++) {
		const char *e = h->ifaces[j].ifname;

		if (h->ifaces[j].dir != dir || !policy_ifname_match(e, ifname))
			continue;
		if (!policy_ifname_wild(e))
			return j; /* its own entry */
		if (best < 0 || strlen(e) > best_len) {
			best = j;
			best_len = strlen(e);
		}
	}
	return best;
}

/* Prefix entries of one family and direction, before resolution. */
struct lpm_item {
	struct prefix pfx;
	uint32_t bit;
	bool neg; /* an exclusion: the rule does not take this prefix */
};

static int prefix_cmp(const struct prefix *a, const struct prefix *b)
{
	int c = memcmp(a->addr, b->addr, 16);

	if (c)
		return c;
	return (int)a->plen - (int)b->plen;
}

static int lpm_item_cmp(const void *x, const void *y)
{
	const struct lpm_item *a = x, *b = y;
	int c = prefix_cmp(&a->pfx, &b->pfx);

	if (c)
		return c;
	if (a->bit != b->bit)
		return a->bit < b->bit ? -1 : 1;
	return (int)a->neg - (int)b->neg;
}

static bool covers(const struct prefix *a, const struct prefix *b)
{
	unsigned full = a->plen / 8, rest = a->plen % 8;

	if (a->plen > b->plen || memcmp(a->addr, b->addr, full))
		return false;
	return !rest || ((a->addr[full] ^ b->addr[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Sorted union of vector `base` of h with the sorted bits own[0..n). */
static uint32_t vec_union(struct plan_hook *h, uint8_t field, uint32_t base, const uint32_t *own, uint32_t n)
{
	const struct plan_vec bv = h->vecs[base];
	uint32_t *out = malloc((bv.n + n + 1) * sizeof(*out)), k = 0, i = 0, j = 0, id;
	const uint32_t *a;

	if (!out)
		return UINT32_MAX;
	/* h->bits may be NULL while no list is stored; vec_intern may move it. */
	a = bv.n ? h->bits + bv.off : NULL;
	while (i < bv.n || j < n) {
		uint32_t x = j == n || (i < bv.n && a[i] < own[j]) ? a[i++] : own[j++];

		if (!k || out[k - 1] != x)
			out[k++] = x;
	}
	id = vec_intern(h, field, out, k);
	free(out);
	return id;
}

/* Vector a without the sorted bits excl[0..n) (a itself when none is in it). */
static uint32_t vec_minus(struct plan_hook *h, uint8_t field, uint32_t a, const uint32_t *excl, uint32_t n)
{
	const struct plan_vec av = h->vecs[a];
	uint32_t *out, k = 0, j = 0, id;
	const uint32_t *v;

	if (!n || !av.n)
		return a;
	if (!(out = malloc(av.n * sizeof(*out))))
		return UINT32_MAX;
	v = h->bits + av.off;
	for (uint32_t i = 0; i < av.n; i++) {
		while (j < n && excl[j] < v[i])
			j++;
		if (j == n || excl[j] != v[i])
			out[k++] = v[i];
	}
	id = k == av.n ? a : vec_intern(h, field, out, k);
	free(out);
	return id;
}

/* Sorted union of two sorted lists into *out (grown). */
static int bits_union(struct bitlist *out, const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
	uint32_t i = 0, j = 0;

	out->n = 0;
	while (i < na || j < nb) {
		uint32_t x = j == nb || (i < na && a[i] < b[j]) ? a[i++] : b[j++];

		if ((!out->n || out->v[out->n - 1] != x) && bitlist_push(out, x) < 0)
			return -ENOMEM;
	}
	return 0;
}

#define LPM_LEVELS 130 /* resolve_lpm()'s stack of the prefixes covering one */

/* A stored prefix P on resolve_lpm()'s walk (below). */
struct lpm_level {
	struct prefix pfx;
	uint32_t vec;	     /* the rules taking P (before exclusions) */
	struct bitlist excl; /* the rules excluding P or a prefix covering it */
};

static void lpm_stack_free(struct lpm_level (*stack)[LPM_LEVELS])
{
	for (uint32_t k = 0; k < LPM_LEVELS; k++)
		free((*stack)[k].excl.v);
}

/*
 * Longest-prefix-match resolution: the trie returns the longest stored
 * prefix P containing the address, and every rule prefix Q containing the
 * address also contains P (Q is shorter, or it would be the match). So P's
 * vector is the union of the rules of every stored prefix covering P,
 * computed here by one walk over the prefixes in preorder.
 *
 * A negated match ("!office") is the family's 0-length prefix, taken, and
 * office's prefixes, excluded: P's vector loses the rules that exclude a
 * prefix covering P. An address in office finds a stored prefix inside an
 * office prefix (that prefix is stored itself), so the rule is excluded
 * there and nowhere else.
 */
static int resolve_lpm(struct plan_hook *h, struct lpm_item *items, uint32_t n, uint8_t fam, uint8_t dir)
{
	uint8_t field = dir ? NFB_F_DST : NFB_F_SRC;
	_cleanup_(lpm_stack_free) struct lpm_level stack[LPM_LEVELS] = { 0 };
	uint32_t depth = 0, empty = h->miss[field];
	_cleanup_(bitlist_free) struct bitlist own = { 0 };
	_cleanup_(bitlist_free) struct bitlist own_excl = { 0 };
	int fi = fam == POLICY_FAM_IPV4 ? 0 : 1;

	sort_n(items, n, sizeof(*items), lpm_item_cmp);
	for (uint32_t i = 0; i < n;) {
		struct plan_lpm *e;
		uint32_t j = i, base;
		const struct bitlist *up;

		own.n = 0;
		own_excl.n = 0;
		for (; j < n && prefix_cmp(&items[j].pfx, &items[i].pfx) == 0; j++) {
			struct bitlist *l = items[j].neg ? &own_excl : &own;

			if ((!l->n || l->v[l->n - 1] != items[j].bit) && bitlist_push(l, items[j].bit) < 0)
				return -ENOMEM;
		}
		while (depth && !covers(&stack[depth - 1].pfx, &items[i].pfx))
			depth--;
		/* Nested distinct prefixes are at most 129 deep (lengths 0..128;
		 * the loader clears host bits): more is a caller's bug, refused. */
		if (depth == sizeof(stack) / sizeof(stack[0]))
			return -E2BIG;
		base = depth ? stack[depth - 1].vec : empty;
		up = depth ? &stack[depth - 1].excl : NULL;
		if (!(e = APPEND(h->lpm[fi], h->nlpm[fi])))
			return -ENOMEM;
		e->pfx = items[i].pfx;
		e->dir = dir;
		stack[depth].pfx = items[i].pfx;
		if ((stack[depth].vec = vec_union(h, field, base, own.v, own.n)) == UINT32_MAX ||
		    bits_union(&stack[depth].excl, up ? up->v : NULL, up ? up->n : 0, own_excl.v, own_excl.n) < 0)
			return -ENOMEM;
		e->vec = vec_minus(h, field, stack[depth].vec, stack[depth].excl.v, stack[depth].excl.n);
		if (e->vec == UINT32_MAX)
			return -ENOMEM;
		depth++;
		i = j;
	}
	return 0;
}

/* The rules' own prefixes of one family and direction. */
static int collect_prefixes(const struct plan_hook *h, uint8_t fam, uint8_t dir, struct lpm_item **items, uint32_t *n)
{
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct addr_match *m = dir ? &h->rules[b]->to : &h->rules[b]->from;
		struct lpm_item *it;

		if (!addr_restricts(m))
			continue;
		if (m->neg && (h->rules[b]->families & fam)) {
			/* every address of the family, less the listed ones */
			if (!(it = APPEND(*items, *n)))
				return -ENOMEM;
			memset(it, 0, sizeof(*it));
			it->pfx.family = fam;
			it->bit = b;
		}
		for (uint32_t i = 0; !m->any && i < m->n; i++) {
			if (m->v[i].family != fam || !(h->rules[b]->families & fam))
				continue;
			if (!(it = APPEND(*items, *n)))
				return -ENOMEM;
			it->pfx = m->v[i];
			it->bit = b;
			it->neg = m->neg;
		}
	}
	return 0;
}

/* Rules that match family `fam` but do not restrict the source: they were
 * removed from the SRC wildcard when single-family, and must be added back
 * through a 0-length prefix of their family. */
static int add_family_prefixes(struct plan_hook *h, struct lpm_item **items, uint32_t *n, uint8_t fam)
{
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];
		struct lpm_item *it;

		if (addr_restricts(&r->from) || r->families == POLICY_FAM_ANY || !(r->families & fam))
			continue;
		if (!(it = APPEND(*items, *n)))
			return -ENOMEM;
		memset(it, 0, sizeof(*it));
		it->pfx.family = fam;
		it->bit = b;
	}
	return 0;
}

static int compile_prefixes(struct plan_hook *h, uint8_t fam, uint8_t dir)
{
	struct lpm_item *items = NULL;
	uint32_t n = 0;
	int r = collect_prefixes(h, fam, dir, &items, &n);

	if (!r && dir == 0)
		r = add_family_prefixes(h, &items, &n, fam);
	if (!r)
		r = resolve_lpm(h, items, n, fam, dir);
	free(items);
	return r;
}

/* Sweep over [0, limit]: each rule adds ranges; equal runs become segments. */
struct range_ev {
	uint32_t at;
	uint32_t bit;
	int delta;
};

static int ev_cmp(const void *x, const void *y)
{
	const struct range_ev *a = x, *b = y;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->bit < b->bit ? -1 : a->bit > b->bit;
}

/* A sweep's input: the events (sorted by the sweep) over [0, limit]; and
 * where its segments go, with the direction and class they carry. */
struct sweep {
	struct range_ev *ev;
	uint32_t nev, limit;
	uint8_t dir, cls;
	struct plan_seg **segs;
	uint32_t *nsegs;
};

/* The rules whose count is not 0 (bits of on) into active, in order. */
static int active_rules(const uint64_t *on, uint32_t nwords, struct bitlist *active)
{
	active->n = 0;
	for (uint32_t w = 0; w < nwords; w++)
		for (uint64_t x = on[w]; x; x &= x - 1)
			if (bitlist_push(active, w * 64 + (uint32_t)__builtin_ctzll(x)) < 0)
				return -ENOMEM;
	return 0;
}

/* [lo, hi] has vector vec: it widens the last segment if that has vec too
 * (prev), else it is a new one. */
static int put_segment(const struct sweep *sw, uint32_t lo, uint32_t hi, uint32_t vec, uint32_t *prev)
{
	struct plan_seg *s;

	if (vec == *prev) {
		(*sw->segs)[*sw->nsegs - 1].hi = (uint16_t)hi;
		return 0;
	}
	if (!(s = APPEND(*sw->segs, *sw->nsegs)))
		return -ENOMEM;
	*s = (struct plan_seg){ .dir = sw->dir, .cls = sw->cls, .lo = (uint16_t)lo, .hi = (uint16_t)hi, .vec = vec };
	*prev = vec;
	return 0;
}

static int sweep(struct plan_hook *h, uint8_t field, const struct sweep *sw)
{
	_cleanup_free_ uint32_t *count = calloc(h->nrules ? h->nrules : 1, sizeof(*count));
	uint32_t nwords = (h->nrules + 63) / 64;
	_cleanup_free_ uint64_t *on = calloc(nwords ? nwords : 1, sizeof(*on)); /* rules whose count is not 0 */
	_cleanup_(bitlist_free) struct bitlist active = { 0 };
	uint32_t pos = 0, e = 0, prev_vec = UINT32_MAX;
	const struct range_ev *ev = sw->ev;

	if (!count || !on)
		return -ENOMEM;
	sort_n(sw->ev, sw->nev, sizeof(*sw->ev), ev_cmp);
	while (pos <= sw->limit) {
		uint32_t next = sw->limit + 1, vec;

		for (; e < sw->nev && ev[e].at <= pos; e++) {
			uint32_t b = ev[e].bit;

			count[b] += (uint32_t)ev[e].delta;
			if (count[b])
				on[b / 64] |= UINT64_C(1) << (b % 64);
			else
				on[b / 64] &= ~(UINT64_C(1) << (b % 64));
		}
		if (e < sw->nev && ev[e].at < next)
			next = ev[e].at;
		if (active_rules(on, nwords, &active) < 0 ||
		    (vec = vec_intern(h, field, active.v, active.n)) == UINT32_MAX ||
		    put_segment(sw, pos, next - 1, vec, &prev_vec) < 0)
			return -ENOMEM;
		pos = next;
	}
	return 0;
}

static int ev_range(struct range_ev **ev, uint32_t *n, uint32_t bit, uint32_t lo, uint32_t hi)
{
	struct range_ev *a = APPEND(*ev, *n), *b;

	if (!a)
		return -ENOMEM;
	*a = (struct range_ev){ .at = lo, .bit = bit, .delta = 1 };
	if (!(b = APPEND(*ev, *n)))
		return -ENOMEM;
	*b = (struct range_ev){ .at = hi + 1, .bit = bit, .delta = -1 };
	return 0;
}

static const uint8_t pclass_proto[NFB_PC_MAX] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_UDPLITE };

/* Does rule r's L4 match allow every port of protocol `proto` (no port list)? */
static bool l4_whole_proto(const struct rule *r, int proto)
{
	if (!r->service.any)
		return false;
	if (r->proto >= 0)
		return r->proto == proto;
	for (uint32_t i = 0; i < r->sport.n; i++)
		if (r->sport.v[i].proto == proto)
			return true;
	return false;
}

static int compile_ports(struct plan_hook *h, uint8_t dir, uint8_t pc)
{
	uint8_t field = dir ? NFB_F_L4 : NFB_F_SPORT;
	struct range_ev *ev = NULL;
	uint32_t nev = 0;
	int r = 0;

	for (uint32_t b = 0; b < h->nrules && !r; b++) {
		const struct rule *ru = h->rules[b];
		const struct port_match *m = dir ? &ru->service : &ru->sport;

		if (dir && !rule_restricts_l4(ru))
			continue; /* wildcard */
		if (!m->any) {
			for (uint32_t i = 0; i < m->n && !r; i++)
				if (m->v[i].proto == pclass_proto[pc])
					r = ev_range(&ev, &nev, b, m->v[i].lo, m->v[i].hi);
		} else if (dir && l4_whole_proto(ru, pclass_proto[pc])) {
			r = ev_range(&ev, &nev, b, 0, 65535);
		}
	}
	if (!r)
		r = sweep(h, field,
			  &(struct sweep){ ev, nev, 65535, .dir = dir, .cls = pc, .segs = &h->ports,
					   .nsegs = &h->nports });
	free(ev);
	return r;
}

static int compile_misc(struct plan_hook *h, uint8_t mc)
{
	struct range_ev *ev = NULL;
	uint32_t nev = 0;
	int r = 0;

	for (uint32_t b = 0; b < h->nrules && !r; b++) {
		const struct rule *ru = h->rules[b];
		bool whole = ru->service.any && ru->sport.any && !ru->nicmp;

		if (!rule_restricts_l4(ru) || ru->proto < 0)
			continue; /* wildcard, or ports without proto: never here */
		switch (mc) {
		case NFB_MC_ICMP:
		case NFB_MC_ICMPV6:
			if (ru->proto != (mc == NFB_MC_ICMP ? IPPROTO_ICMP : IPPROTO_ICMPV6))
				break;
			for (uint16_t i = 0; i < ru->nicmp && !r; i++)
				r = ev_range(&ev, &nev, b, ru->icmp_types[i], ru->icmp_types[i]);
			if (!ru->nicmp)
				r = ev_range(&ev, &nev, b, 0, 255);
			break;
		case NFB_MC_PROTO:
			if (whole)
				r = ev_range(&ev, &nev, b, (uint32_t)ru->proto, (uint32_t)ru->proto);
			break;
		case NFB_MC_FRAG:
			if (whole)
				r = ev_range(&ev, &nev, b, (uint32_t)ru->proto, (uint32_t)ru->proto);
			break;
		}
	}
	if (!r)
		r = sweep(h, NFB_F_L4,
			  &(struct sweep){ ev, nev, 255, .dir = 0, .cls = mc, .segs = &h->misc, .nsegs = &h->nmisc });
	free(ev);
	return r;
}

static int compile_ct(struct plan_hook *h)
{
	for (uint32_t s = 0; s < NFB_CT_MAX; s++) {
		struct bitlist l = { 0 };

		for (uint32_t b = 0; b < h->nrules; b++) {
			uint8_t st = rule_states(h->rules[b]);

			if (st != POLICY_CT_ALL && (st & (1u << s)) && bitlist_push(&l, b) < 0) {
				free(l.v);
				return -ENOMEM;
			}
		}
		h->ct[s] = vec_intern(h, NFB_F_CT, l.v, l.n);
		free(l.v);
		if (h->ct[s] == UINT32_MAX)
			return -ENOMEM;
	}
	h->sport_none = h->miss[NFB_F_SPORT];
	return 0;
}

static int compile_hook(const struct policy *p, enum policy_hook hk, struct plan_hook *h)
{
	int r;

	h->enabled = p->hooks[hk].present;
	h->def = p->hooks[hk].def;
	h->intern = calloc(1, sizeof(struct intern));
	if (!h->intern)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule **slot;

		if (!(p->rules[i].hooks & (1u << hk)))
			continue;
		if (!(slot = APPEND(h->rules, h->nrules)))
			return -ENOMEM;
		*slot = &p->rules[i];
	}
	h->nwords = bitvec_words_for(h->nrules);
	h->nsum = bitvec_nsum(h->nwords);
	if ((r = compile_wildcards(h)) || (r = compile_ifaces(h, 0)) || (r = compile_ifaces(h, 1)))
		return r;
	for (uint8_t dir = 0; dir < 2; dir++)
		if ((r = compile_prefixes(h, POLICY_FAM_IPV4, dir)) || (r = compile_prefixes(h, POLICY_FAM_IPV6, dir)))
			return r;
	for (uint8_t pc = 0; pc < NFB_PC_MAX; pc++)
		if ((r = compile_ports(h, 1, pc)) || (r = compile_ports(h, 0, pc)))
			return r;
	for (uint8_t mc = 0; mc < NFB_MC_MAX; mc++)
		if ((r = compile_misc(h, mc)))
			return r;
	return compile_ct(h);
}

int plan_compile(const struct policy *p, struct plan **out)
{
	struct plan *pl = calloc(1, sizeof(*pl));
	int r = 0;

	if (!pl)
		return -ENOMEM;
	pl->pol = p;
	for (int hk = 0; hk < NFB_HOOK_MAX && !r; hk++)
		r = compile_hook(p, (enum policy_hook)hk, &pl->hook[hk]);
	if (r) {
		plan_free(pl);
		return r;
	}
	*out = pl;
	return 0;
}

void plan_free(struct plan *pl)
{
	if (!pl)
		return;
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		struct plan_hook *h = &pl->hook[hk];
		struct intern *t = h->intern;

		for (int f = 0; f < NFB_F_MAX; f++)
			bitvec_free(&h->wild[f]);
		free(h->rules);
		free(h->lpm[0]);
		free(h->lpm[1]);
		free(h->ifaces);
		free(h->ports);
		free(h->misc);
		free(h->vecs);
		free(h->bits);
		if (t)
			free(t->slots);
		free(t);
	}
	free(pl);
}

void plan_vec_dense(const struct plan_hook *h, uint32_t v, uint64_t *out)
{
	const struct plan_vec *pv = &h->vecs[v];

	memcpy(out, h->wild[pv->field].w, h->nwords * sizeof(*out));
	for (uint32_t i = 0; i < pv->n; i++) {
		uint32_t b = h->bits[pv->off + i];

		out[b / 64] |= UINT64_C(1) << (b % 64);
	}
}
