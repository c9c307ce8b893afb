/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/sort.h"
#include "dynset/dynset.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/cleanup.h"
#include "policy/syntax/parse.h"

#define MAX_REASONS 8 /* refusals explained per change; the rest are counted */

static const uint32_t alen[2] = { 4, 16 };

int64_t dyn_now_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

void dynsets_init(struct dynsets *s)
{
	memset(s, 0, sizeof(*s));
}

static void set_free(struct dyn_set *set)
{
	free(set->name);
	free(set->v[0]);
	free(set->v[1]);
}

void dynsets_free(struct dynsets *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		set_free(&s->sets[i]);
	free(s->sets);
	for (uint32_t i = 0; i < s->norigins; i++)
		free(s->origins[i]);
	free(s->origins);
	memset(s, 0, sizeof(*s));
}

const struct dyn_set *dynsets_get(const struct dynsets *s, const char *name)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!strcmp(s->sets[i].name, name))
			return &s->sets[i];
	return NULL;
}

struct dyn_set *dynsets_find(struct dynsets *s, const char *name)
{
	return (struct dyn_set *)dynsets_get(s, name); /* s is the caller's to change */
}

static struct dyn_set *set_new(struct dynsets *s, const char *name, uint16_t id)
{
	struct dyn_set *v = realloc(s->sets, (s->n + 1) * sizeof(*v)), *set;

	if (!v)
		return NULL;
	s->sets = v;
	set = &s->sets[s->n];
	memset(set, 0, sizeof(*set));
	if (!(set->name = strdup(name)))
		return NULL;
	set->id = id;
	s->n++;
	return set;
}

static uint16_t free_id(const struct dynsets *s)
{
	for (uint16_t id = 1; id < DYNSET_MAX_IDS; id++) {
		bool used = false;

		for (uint32_t i = 0; i < s->n && !used; i++)
			used = s->sets[i].id == id;
		if (!used)
			return id;
	}
	return 0;
}

int dynsets_sync_policy(struct dynsets *s, const struct policy *p)
{
	for (uint32_t i = 0; i < s->n; i++)
		s->sets[i].in_policy = false;
	for (uint32_t i = 0; i < p->nsets; i++) {
		struct dyn_set *set;
		uint16_t id;

		if (!p->sets[i].dynamic)
			continue;
		if (!(set = dynsets_find(s, p->sets[i].name))) {
			if (!(id = free_id(s)))
				return -ENOSPC;
			if (!(set = set_new(s, p->sets[i].name, id)))
				return -ENOMEM;
		}
		set->in_policy = true;
	}
	return 0;
}

static void recount(struct dynsets *s)
{
	s->total[0] = s->total[1] = 0;
	s->next_expiry = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		for (int f = 0; f < 2; f++) {
			s->total[f] += s->sets[i].n[f];
			for (uint32_t j = 0; j < s->sets[i].n[f]; j++) {
				int64_t x = s->sets[i].v[f][j].expires;

				if (x && (!s->next_expiry || x < s->next_expiry))
					s->next_expiry = x;
			}
		}
	}
}

void dynsets_drop_gone(struct dynsets *s)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < s->n; i++) {
		if (s->sets[i].in_policy)
			s->sets[kept++] = s->sets[i];
		else
			set_free(&s->sets[i]);
	}
	s->n = kept;
	recount(s);
}

/* ---- addresses as big-endian numbers ------------------------------------ */

static void last_addr(int fam, const uint8_t *first, uint8_t plen, uint8_t *out)
{
	memcpy(out, first, 16);
	for (uint32_t b = plen; b < alen[fam] * 8; b++)
		out[b / 8] |= (uint8_t)(0x80 >> (b % 8));
}

static int addr_cmp(int fam, const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, alen[fam]);
}

/* Index of the first entry whose address is > addr (upper bound). */
static uint32_t upper(const struct dyn_set *set, int fam, const uint8_t *addr)
{
	uint32_t lo = 0, hi = set->n[fam];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr_cmp(fam, set->v[fam][mid].addr, addr) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int64_t dynset_index(const struct dyn_set *set, int fam, const uint8_t *addr, uint8_t plen)
{
	uint32_t at = upper(set, fam, addr);

	if (at > 0 && !addr_cmp(fam, set->v[fam][at - 1].addr, addr) && set->v[fam][at - 1].plen == plen)
		return at - 1;
	return -1;
}

void dyn_entry_format(int fam, const struct dyn_entry *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(fam ? AF_INET6 : AF_INET, e->addr, a, sizeof(a));
	if (e->plen == alen[fam] * 8)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s/%u", a, e->plen);
}

static int fam_of(const struct prefix *p)
{
	return p->family == POLICY_FAM_IPV6;
}

/* An entry of the set that overlaps [first, last], or NULL; *exact if it
 * is the same prefix. */
static const struct dyn_entry *overlap(const struct dyn_set *set, int fam, const uint8_t *first, const uint8_t *last,
				       uint8_t plen, bool *exact)
{
	uint32_t i = upper(set, fam, first);
	uint8_t end[16];

	*exact = false;
	if (i > 0) { /* the entry starting at or below first: covers it? */
		const struct dyn_entry *e = &set->v[fam][i - 1];

		last_addr(fam, e->addr, e->plen, end);
		if (addr_cmp(fam, end, first) >= 0) {
			*exact = !addr_cmp(fam, e->addr, first) && e->plen == plen;
			return e;
		}
	}
	if (i < set->n[fam] && addr_cmp(fam, set->v[fam][i].addr, last) <= 0)
		return &set->v[fam][i]; /* starts inside */
	return NULL;
}

struct pending {
	struct dyn_entry e;
	struct dyn_change *c;
	int64_t ri; /* index in the set of the entry it renews, -1: new */
};

static int pending_cmp(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	int c = memcmp(x->e.addr, y->e.addr, 16);

	return c ? c : (int)x->e.plen - (int)y->e.plen;
}

static int grow(struct dyn_set *set, int fam, uint32_t need)
{
	struct dyn_entry *v;
	uint32_t cap = set->cap[fam] ? set->cap[fam] : 64;

	if (need <= set->cap[fam])
		return 0;
	while (cap < need)
		cap *= 2;
	if (!(v = realloc(set->v[fam], (size_t)cap * sizeof(*v))))
		return -ENOMEM;
	set->v[fam] = v;
	set->cap[fam] = cap;
	return 0;
}

__attribute__((format(printf, 3, 4))) static void refuse(struct diags *d, unsigned *nref, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (++*nref > MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	diag_fail(d, -EINVAL, "%s", buf);
}

const char *dyn_entry_by(const struct dynsets *s, const struct dyn_entry *e)
{
	return e->by && e->by < s->norigins ? s->origins[e->by] : "";
}

/* The index of origin by in s->origins, added on first use; 0 for none (or
 * when it cannot be kept). */
static uint16_t origin_id(struct dynsets *s, const char *by)
{
	char **v;

	if (!by || !*by)
		return 0;
	for (uint16_t i = 1; i < s->norigins; i++)
		if (!strcmp(s->origins[i], by))
			return i;
	if (s->norigins == UINT16_MAX)
		return 0;
	if (!s->norigins) {
		if (!(s->origins = calloc(1, sizeof(*s->origins))))
			return 0;
		s->norigins = 1;
	}
	if (!(v = realloc(s->origins, (s->norigins + 1u) * sizeof(*v))))
		return 0;
	s->origins = v;
	if (!(v[s->norigins] = strdup(by)))
		return 0;
	return s->norigins++;
}

static struct dyn_change undo_entry(const struct dynsets *s, int fam, const struct dyn_entry *e, bool renew)
{
	struct dyn_change c = { .expires = e->expires,
				.added = e->added ? e->added : DYN_ADDED_UNKNOWN,
				.by = dyn_entry_by(s, e),
				.renew = renew,
				.src = "undo" };

	c.pfx.family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
	c.pfx.plen = e->plen;
	memcpy(c.pfx.addr, e->addr, 16);
	return c;
}

void dyn_undo_free(struct dyn_undo *u)
{
	free(u->added);
	free(u->changed);
	memset(u, 0, sizeof(*u));
}

void dynset_undo(struct dynsets *s, struct dyn_set *set, const struct dyn_undo *u)
{
	struct dyn_change *gone = calloc(u->nadded + u->nchanged + 1, sizeof(*gone));
	struct diags tmp;
	uint32_t n = 0;

	if (!gone)
		return;
	diags_init(&tmp);
	for (uint32_t i = 0; i < u->nadded; i++)
		gone[n++] = u->added[i];
	for (uint32_t i = 0; i < u->nchanged; i++)
		if (u->changed[i].renew)
			gone[n++] = u->changed[i]; /* renewed: out, then back with its expiry */
	dynset_del(s, set, gone, n, &tmp, NULL);
	dynset_add(s, set, u->changed, u->nchanged, &tmp, NULL);
	diags_free(&tmp);
	free(gone);
}

/* An add's entries by family (pv[f], pn[f] of them), sorted, and what
 * each does: ri, the index of the entry it renews, or -1 for a new one
 * (fresh[f] of those). */
struct add_plan {
	struct pending *pv[2];
	uint32_t pn[2], fresh[2];
	unsigned nref; /* entries refused */
};

static int plan_entries(struct dynsets *s, struct add_plan *ap, struct dyn_change *c, uint32_t n)
{
	uint32_t now = (uint32_t)(dyn_now_ms() / 1000);

	for (int f = 0; f < 2; f++)
		if (!(ap->pv[f] = calloc(n ? n : 1, sizeof(*ap->pv[f]))))
			return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int f = fam_of(&c[i].pfx);
		struct pending *p = &ap->pv[f][ap->pn[f]++];

		memcpy(p->e.addr, c[i].pfx.addr, 16);
		p->e.plen = c[i].pfx.plen;
		p->e.expires = c[i].expires;
		p->e.added = c[i].added == DYN_ADDED_UNKNOWN ? 0 : c[i].added ? c[i].added : now;
		p->e.by = origin_id(s, c[i].by);
		p->c = &c[i];
		p->ri = -1;
		c[i].renew = false;
	}
	for (int f = 0; f < 2; f++)
		sort_n(ap->pv[f], ap->pn[f], sizeof(ap->pv[f][0]), pending_cmp);
	return 0;
}

/* p against the entry kept before it (q; NULL: none) and the set: false
 * when it is left out (the same as q, which takes its expiry; or refused,
 * told in d). */
static bool entry_fits(const struct dyn_set *set, int f, struct pending *q, struct pending *p, struct diags *d,
		       unsigned *nref)
{
	uint8_t last[16];
	char a[64], b[64];
	const struct dyn_entry *o;
	bool exact;

	if (q) { /* against the change's own entries before it */
		last_addr(f, q->e.addr, q->e.plen, last);
		if (!pending_cmp(q, p)) {
			q->e.expires = p->e.expires; /* the same twice: the last says */
			return false;
		}
		if (addr_cmp(f, last, p->e.addr) >= 0) {
			dyn_entry_format(f, &p->e, a, sizeof(a));
			dyn_entry_format(f, &q->e, b, sizeof(b));
			refuse(d, nref, "%s:%u: %s overlaps %s, also added (set '%s' holds no overlapping entries)",
			       p->c->src, p->c->line, a, b, set->name);
			return false;
		}
	}
	last_addr(f, p->e.addr, p->e.plen, last);
	if ((o = overlap(set, f, p->e.addr, last, p->e.plen, &exact)) && !exact) {
		dyn_entry_format(f, &p->e, a, sizeof(a));
		dyn_entry_format(f, o, b, sizeof(b));
		refuse(d, nref, "%s:%u: %s overlaps %s, already in set '%s' (delete it first)", p->c->src, p->c->line,
		       a, b, set->name);
		return false;
	}
	p->ri = o ? o - set->v[f] : -1;
	return true;
}

/* Every entry checked; fresh counted; the limit of all sets together. */
static int check_entries(const struct dynsets *s, const struct dyn_set *set, struct add_plan *ap, struct diags *d)
{
	for (int f = 0; f < 2; f++) {
		uint32_t kept = 0;

		for (uint32_t i = 0; i < ap->pn[f]; i++)
			if (entry_fits(set, f, kept ? &ap->pv[f][kept - 1] : NULL, &ap->pv[f][i], d, &ap->nref))
				ap->pv[f][kept++] = ap->pv[f][i];
		ap->pn[f] = kept;
		for (uint32_t i = 0; i < kept; i++)
			ap->fresh[f] += ap->pv[f][i].ri < 0;
		if (!ap->nref && s->total[f] + ap->fresh[f] > DYNSET_MAX_ENTRIES)
			return diag_fail(
				d, -ENOSPC,
				"set '%s': %u more %s entries would pass the limit of %u for all dynamic sets together",
				set->name, ap->fresh[f], f ? "IPv6" : "IPv4", DYNSET_MAX_ENTRIES);
	}
	if (!ap->nref)
		return 0;
	if (ap->nref > MAX_REASONS)
		diag_fail(d, -EINVAL, "... and %u more refused", ap->nref - MAX_REASONS);
	return diag_fail(d, -EEXIST, "set '%s': nothing added", set->name);
}

/* Everything that can fail, before anything changes: the undo record and
 * the room for the fresh entries. */
static int make_room(struct dyn_set *set, const struct add_plan *ap, struct dyn_undo *undo)
{
	uint32_t fresh = ap->fresh[0] + ap->fresh[1];
	int r;

	if (undo) {
		memset(undo, 0, sizeof(*undo));
		if (!(undo->added = calloc(fresh + 1, sizeof(*undo->added))) ||
		    !(undo->changed = calloc(ap->pn[0] + ap->pn[1] - fresh + 1, sizeof(*undo->changed)))) {
			dyn_undo_free(undo);
			return -ENOMEM;
		}
	}
	for (int f = 0; f < 2; f++)
		if (ap->fresh[f] && (r = grow(set, f, set->n[f] + ap->fresh[f])) < 0) {
			if (undo)
				dyn_undo_free(undo);
			return r;
		}
	return 0;
}

/* Family f of the plan into the set: renewals in place, the fresh entries
 * (sorted) merged into the sorted array; what it did into undo. The
 * renewals' count. */
static uint32_t commit_family(const struct dynsets *s, struct dyn_set *set, int f, const struct add_plan *ap,
			      struct dyn_undo *undo)
{
	const struct pending *pv = ap->pv[f];
	uint32_t i, j, k, nold = set->n[f], nren = 0;
	struct dyn_entry *v = set->v[f];

	for (i = 0; undo && i < ap->pn[f]; i++) {
		if (pv[i].ri >= 0)
			undo->changed[undo->nchanged++] = undo_entry(s, f, &v[pv[i].ri], true);
		else
			undo->added[undo->nadded++] = undo_entry(s, f, &pv[i].e, false);
	}
	for (i = 0; i < ap->pn[f]; i++)
		if (pv[i].ri >= 0) {
			pv[i].c->renew = true;
			v[pv[i].ri].expires = pv[i].e.expires;
			nren++;
		}
	if (!ap->fresh[f])
		return nren;
	k = nold + ap->fresh[f];
	i = nold;
	j = ap->pn[f];
	while (j > 0) {
		if (pv[j - 1].ri >= 0) {
			j--;
			continue;
		}
		if (i > 0 && addr_cmp(f, v[i - 1].addr, pv[j - 1].e.addr) > 0)
			v[--k] = v[--i];
		else
			v[--k] = pv[--j].e;
	}
	set->n[f] = nold + ap->fresh[f];
	return nren;
}

static void add_plan_free(struct add_plan *ap)
{
	free(ap->pv[0]);
	free(ap->pv[1]);
}

int dynset_add(struct dynsets *s, struct dyn_set *set, struct dyn_change *c, uint32_t n, struct diags *d,
	       struct dyn_added *out)
{
	_cleanup_(add_plan_free) struct add_plan ap = { 0 };
	struct dyn_undo *undo = out ? out->undo : NULL;
	uint32_t nren = 0;
	int r;

	if ((r = plan_entries(s, &ap, c, n)) < 0 || (r = check_entries(s, set, &ap, d)) < 0 ||
	    (r = make_room(set, &ap, undo)) < 0)
		return r;
	for (int f = 0; f < 2; f++) {
		nren += commit_family(s, set, f, &ap, undo);
		s->total[f] += ap.fresh[f];
		for (uint32_t i = 0; i < ap.pn[f]; i++) {
			int64_t x = ap.pv[f][i].e.expires;

			if (x && (!s->next_expiry || x < s->next_expiry))
				s->next_expiry = x; /* only ever early: expiry then counts again */
		}
	}
	if (out) {
		out->added = ap.fresh[0] + ap.fresh[1];
		out->renewed = nren;
	}
	return r;
}

static int del_cmp(const void *a, const void *b)
{
	return (int)(*(const uint32_t *)a > *(const uint32_t *)b) - (int)(*(const uint32_t *)a < *(const uint32_t *)b);
}

static void idx_pair_free(uint32_t *(*idx)[2])
{
	free((*idx)[0]);
	free((*idx)[1]);
}

int dynset_del(struct dynsets *s, struct dyn_set *set, const struct dyn_change *c, uint32_t n, struct diags *d,
	       struct dyn_undo *undo)
{
	uint32_t cap = n ? n : 1, ni[2] = { 0, 0 };
	_cleanup_(idx_pair_free) uint32_t *idx[2] = { calloc(cap, sizeof(uint32_t)), calloc(cap, sizeof(uint32_t)) };
	unsigned nref = 0;

	if (!idx[0] || !idx[1])
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		int f = fam_of(&c[i].pfx);
		int64_t at = dynset_index(set, f, c[i].pfx.addr, c[i].pfx.plen);
		char a[64];

		if (at >= 0) {
			idx[f][ni[f]++] = (uint32_t)at;
			continue;
		}
		policy_prefix_format(&c[i].pfx, a, sizeof(a));
		refuse(d, &nref, "%s:%u: %s is not in set '%s'", c[i].src, c[i].line, a, set->name);
	}
	if (nref) {
		if (nref > MAX_REASONS)
			diag_fail(d, -EINVAL, "... and %u more not found", nref - MAX_REASONS);
		diag_fail(d, -ENOENT, "set '%s': nothing deleted", set->name);
		return -ENOENT;
	}
	if (undo) {
		memset(undo, 0, sizeof(*undo));
		if (!(undo->changed = calloc(n + 1, sizeof(*undo->changed))))
			return -ENOMEM;
	}
	for (int f = 0; f < 2; f++) {
		uint32_t kept = 0, k = 0;

		sort_n(idx[f], ni[f], sizeof(uint32_t), del_cmp);
		for (uint32_t i = 0; i < set->n[f]; i++) {
			if (k < ni[f] && idx[f][k] == i) {
				while (k < ni[f] && idx[f][k] == i)
					k++; /* the same entry named twice */
				if (undo)
					undo->changed[undo->nchanged++] = undo_entry(s, f, &set->v[f][i], false);
				continue;
			}
			set->v[f][kept++] = set->v[f][i];
		}
		s->total[f] -= set->n[f] - kept;
		set->n[f] = kept;
	}
	return 0;
}

void dynset_flush(struct dynsets *s, struct dyn_set *set)
{
	set->n[0] = set->n[1] = 0;
	recount(s);
}

int dynsets_copy(struct dynsets *dst, const struct dynsets *src)
{
	struct dynsets c;

	dynsets_init(&c);
	if (src->n && !(c.sets = calloc(src->n, sizeof(*c.sets))))
		return -ENOMEM;
	for (uint32_t i = 0; i < src->n; i++) {
		const struct dyn_set *from = &src->sets[i];
		struct dyn_set *to = &c.sets[c.n++];

		*to = (struct dyn_set){ .id = from->id, .in_policy = from->in_policy, .expired_at = from->expired_at };
		if (!(to->name = strdup(from->name))) {
			dynsets_free(&c);
			return -ENOMEM;
		}
		for (int f = 0; f < 2; f++) {
			if (!from->n[f])
				continue;
			if (!(to->v[f] = malloc(from->n[f] * sizeof(*to->v[f])))) {
				dynsets_free(&c);
				return -ENOMEM;
			}
			memcpy(to->v[f], from->v[f], from->n[f] * sizeof(*to->v[f]));
			to->n[f] = to->cap[f] = from->n[f];
		}
	}
	c.total[0] = src->total[0];
	c.total[1] = src->total[1];
	c.next_expiry = src->next_expiry;
	*dst = c;
	return 0;
}

uint32_t dynsets_expire(struct dynsets *s, int64_t now,
			void (*gone)(const struct dyn_set *set, int fam, const struct dyn_entry *e, void *arg),
			void *arg)
{
	uint32_t went = 0;

	if (!s->next_expiry || s->next_expiry > now)
		return 0;
	for (uint32_t i = 0; i < s->n; i++) {
		struct dyn_set *set = &s->sets[i];

		for (int f = 0; f < 2; f++) {
			uint32_t kept = 0;

			for (uint32_t j = 0; j < set->n[f]; j++) {
				const struct dyn_entry *e = &set->v[f][j];

				if (e->expires && e->expires <= now) {
					if (gone)
						gone(set, f, e, arg);
					set->expired_at = now;
					went++;
					continue;
				}
				set->v[f][kept++] = *e;
			}
			set->n[f] = kept;
		}
	}
	recount(s);
	return went;
}

/* ---- saved form ----------------------------------------------------------
 *   nfbox-dynsets 1
 *   set NAME ID
 *   e NAME PREFIX EXPIRES [ADDED BY]   (EXPIRES ms since the epoch, 0: never;
 *                            ADDED s since the epoch; BY a word, "-": not known)
 */
void dynsets_save(const struct dynsets *s, FILE *f)
{
	char a[64];

	fputs("nfbox-dynsets 1\n", f);
	for (uint32_t i = 0; i < s->n; i++)
		fprintf(f, "set %s %u\n", s->sets[i].name, s->sets[i].id);
	for (uint32_t i = 0; i < s->n; i++)
		for (int fam = 0; fam < 2; fam++)
			for (uint32_t j = 0; j < s->sets[i].n[fam]; j++) {
				const struct dyn_entry *e = &s->sets[i].v[fam][j];
				const char *by = dyn_entry_by(s, e);

				dyn_entry_format(fam, e, a, sizeof(a));
				fprintf(f, "e %s %s %" PRId64 " %" PRIu32 " %s\n", s->sets[i].name, a, e->expires,
					e->added, *by ? by : "-");
			}
}

/* The entries read for one set, added in one go. */
static int flush_batch(struct dynsets *s, struct dyn_set *set, struct dyn_change **batch, uint32_t *nb, struct diags *d)
{
	int r = set && *nb ? dynset_add(s, set, *batch, *nb, d, NULL) : 0;

	*nb = 0;
	return r;
}

/* dynsets_load()'s reading: the set whose entries are being read, and
 * those read so far (added in one go). */
struct loader {
	struct dynsets *s;
	int64_t now;
	unsigned lineno;
	struct dyn_set *cur;
	struct dyn_change *batch;
	uint32_t nb, cap;
	struct diags tmp;
};

static void loader_free(struct loader *ld)
{
	free(ld->batch);
	diags_free(&ld->tmp);
}

/* "set NAME ID": 0, -EINVAL (a bad line) or -ENOMEM. */
static int load_set(struct loader *ld, const char *name, unsigned id)
{
	struct dynsets *s = ld->s;

	if (!parse_valid_name(name) || !id || id >= DYNSET_MAX_IDS || dynsets_find(s, name))
		return -EINVAL;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->sets[i].id == id)
			return -EINVAL;
	if (flush_batch(s, ld->cur, &ld->batch, &ld->nb, &ld->tmp) < 0) /* before set_new moves the sets */
		return -EINVAL;
	ld->cur = NULL;
	return set_new(s, name, (uint16_t)id) ? 0 : -ENOMEM;
}

/* "e NAME PREFIX EXPIRES [ADDED BY]": 0, -EINVAL (a bad line) or -ENOMEM. */
static int load_entry(struct loader *ld, const char *name, const char *what, long long exp, unsigned added,
		      const char *by)
{
	struct dyn_change c = { 0 };
	struct dyn_set *set;
	const char *why;
	bool host_bits;

	if (exp < 0 || !(set = dynsets_find(ld->s, name)) || parse_prefix(what, &c.pfx, &host_bits, &why) < 0 ||
	    host_bits)
		return -EINVAL;
	if (exp && exp <= ld->now)
		return 0;
	c.expires = exp;
	c.added = added ? added : DYN_ADDED_UNKNOWN;
	if (strcmp(by, "-")) { /* kept in the origins now: the batch is added later */
		uint16_t o = origin_id(ld->s, by);

		c.by = o ? ld->s->origins[o] : NULL;
	}
	c.src = "saved";
	c.line = ld->lineno;
	if (set != ld->cur && flush_batch(ld->s, ld->cur, &ld->batch, &ld->nb, &ld->tmp) < 0)
		return -EINVAL;
	ld->cur = set;
	if (ld->nb == ld->cap) {
		struct dyn_change *v = realloc(ld->batch, (ld->cap = ld->cap ? 2 * ld->cap : 1024) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ld->batch = v;
	}
	ld->batch[ld->nb++] = c;
	return 0;
}

static int load_line(struct loader *ld, const char *line)
{
	char name[POLICY_MAX_NAME + 2], what[80], by[80] = "-";
	unsigned id, added = 0;
	long long exp;
	int n;

	if (ld->lineno == 1)
		return strcmp(line, "nfbox-dynsets 1\n") ? -EINVAL : 0;
	if (sscanf(line, "set %65s %u", name, &id) == 2)
		return load_set(ld, name, id);
	n = sscanf(line, "e %65s %79s %lld %u %79s", name, what, &exp, &added, by);
	if (n != 3 && n != 5)
		return -EINVAL;
	return load_entry(ld, name, what, exp, added, by);
}

int dynsets_load(struct dynsets *s, FILE *f, int64_t now, unsigned *bad_line)
{
	_cleanup_(loader_free) struct loader ld = { .s = s, .now = now };
	char line[512];
	int r;

	dynsets_init(s);
	diags_init(&ld.tmp);
	while (fgets(line, sizeof(line), f)) {
		ld.lineno++;
		if ((r = load_line(&ld, line)) < 0)
			goto undo;
	}
	if ((r = flush_batch(s, ld.cur, &ld.batch, &ld.nb, &ld.tmp)) < 0) {
		r = -EINVAL;
		goto undo;
	}
	return r;
undo: /* the sets already read into s come out again: s is empty on failure */
	if (r == -EINVAL)
		*bad_line = ld.lineno;
	dynsets_free(s);
	return r;
}
