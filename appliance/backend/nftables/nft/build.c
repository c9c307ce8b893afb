/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A policy as table inet nfbox (build.h). */
#include "backend/nftables/nft/build.h"
#include "policy/schedule/schedule.h"
#include "policy/syntax/parse.h"

#include "dynset/dynset.h"
#include "lib/nfhook.h"
#include "lib/plant.h"
#include "backend/nftables/nft/batch.h"

/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* nft's conntrack state bits (NF_CT_STATE_*_BIT in the kernel). */
#define CT_INVALID     1u
#define CT_ESTABLISHED 2u
#define CT_RELATED     4u
#define CT_NEW	       8u
#define CT_UNTRACKED   64u

#define FILTER_PRIO 0
#define DSTNAT_PRIO (-100)
#define SRCNAT_PRIO 100

struct ctx {
	const struct policy *p;
	const struct nft_build_opts *o;
	struct nfr_table *t;
	uint32_t nmaps;		/* counter maps so far: cm_CHAIN_N */
	bool vrrp_untranslated; /* the rule that keeps VRRP out of source NAT is in */
};

void nft_rule_counter_name(char *buf, size_t len, enum policy_hook h, const char *rule)
{
	snprintf(buf, len, "r_%s_%s", policy_hook_name(h), rule);
}

void nft_over_limit_counter_name(char *buf, size_t len, enum policy_hook h, const char *rule)
{
	snprintf(buf, len, "o_%s_%s", policy_hook_name(h), rule);
}

void nft_default_counter_name(char *buf, size_t len, enum policy_hook h)
{
	snprintf(buf, len, "x_%s_default", policy_hook_name(h));
}

#define m_add nfr_match_add

static struct nfr_stmt *s_add(struct nfr_rule *r, enum nfr_stmt_kind k, const char *name)
{
	struct nfr_stmt *s = nfr_stmt_add(r, k);

	if (name)
		snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static void counter(struct ctx *c, const char *name)
{
	uint64_t packets = 0, bytes = 0;

	if (nfr_counter_find(c->t, name) != UINT32_MAX)
		return;
	if (c->o->counter_value)
		c->o->counter_value(name, &packets, &bytes, c->o->arg);
	nfr_counter_add(c->t, name, packets, bytes);
}

/* Chain i's name; "" once an allocation failed (the table is then not
 * used: t->err). */
static const char *chain_name(const struct nfr_table *t, uint32_t i)
{
	return t->chains && i < t->nchains ? t->chains[i].name : "";
}

static uint32_t nfproto_of(uint8_t fam)
{
	return fam == POLICY_FAM_IPV4 ? NFPROTO_IPV4 : NFPROTO_IPV6;
}

static bool has_match(const struct nfr_rule *r, enum nfr_match_kind k)
{
	for (uint32_t i = 0; i < r->nm; i++)
		if (r->m[i].kind == k)
			return true;
	return false;
}

static void match_nfproto(struct nfr_rule *r, uint8_t fam)
{
	m_add(r, NFR_M_NFPROTO)->value = nfproto_of(fam);
}

/* ---- interfaces and addresses ---- */

/* A positive list of no interface (an empty group): it matches none. */
static bool iface_none(const struct iface_match *im)
{
	return !im->any && !im->neg && !im->n;
}

/* An interface name as an element of an interval set of names: a name is
 * itself (NUL-padded, as meta iifname loads it); a wildcard ("eth*") every
 * name that begins with it, from "eth" and zeros to "eth" and 0xff. */
static void ifname_range(const char *pat, uint8_t *lo, uint8_t *hi)
{
	size_t n = strnlen(pat, POLICY_IFNAMSIZ);
	bool wild = policy_ifname_wild(pat);

	memset(lo, 0, POLICY_IFNAMSIZ);
	memcpy(lo, pat, wild ? n - 1 : n);
	memcpy(hi, lo, POLICY_IFNAMSIZ);
	if (wild)
		memset(hi + n - 1, 0xff, POLICY_IFNAMSIZ - (n - 1));
}

/* A match's text as written ("vpn", "!vpn", "[a, b]") without its '!'. */
static const char *unnegated(const char *what)
{
	return what && what[0] == '!' ? what + 1 + strspn(what + 1, " \t") : what;
}

/* The interface group a match names alone ("vpn" or "!vpn"), if it does. */
static const struct iface_group *named_group(const struct policy *p, const char *what)
{
	what = unnegated(what);
	for (uint32_t i = 0; what && i < p->ngroups; i++)
		if (!strcmp(p->groups[i].name, what))
			return &p->groups[i];
	return NULL;
}

/* The set of im's names. One with a wildcard is an interval set, and a
 * named one: nft, given such a set inside a rule, merges ranges that meet
 * ("vlan1*", "vlan2*") into one it cannot list again, so `nfbox plan --nft`
 * would not read back as what runs. It is called after the group it holds
 * (g_GROUP, shared by the rules that name it), else after the rule and
 * side that list it (i_RULE_in, i_RULE_out). */
static struct nfr_set *iface_set(struct ctx *c, const struct iface_match *im, const char *rule, bool out)
{
	const struct iface_group *g = named_group(c->p, im->what);
	char name[NFR_NAME] = "";
	const struct nfr_set *old;
	struct nfr_set *s;
	bool wild = false;

	for (uint32_t i = 0; i < im->n; i++)
		wild |= policy_ifname_wild(im->ifnames[i]);
	if (wild && g)
		snprintf(name, sizeof(name), "g_%s", g->name);
	else if (wild) /* only rules take wildcards (the loader): there is a rule */
		snprintf(name, sizeof(name), "i_%s_%s", rule ? rule : "", out ? "out" : "in");
	if (name[0] && (old = nfr_set_find(c->t, name)))
		return (struct nfr_set *)old;
	if (!(s = nfr_set_new(c->t, name[0] ? name : NULL, NFR_KEY_IFNAME, wild)))
		return NULL;
	for (uint32_t i = 0; i < im->n; i++) {
		uint8_t lo[POLICY_IFNAMSIZ], hi[POLICY_IFNAMSIZ];

		ifname_range(im->ifnames[i], lo, hi);
		nfr_set_add(c->t, s, lo, hi);
	}
	nfr_set_normalize(s);
	return s;
}

/* The names of im as one match: a compare for one name (a wildcard
 * compares its beginning, as nft writes "eth*"), else a set of them
 * (iface_set). neg: none of them. A list of any length is one match, so a
 * rule keeps every other condition however many names its groups hold. An
 * empty list adds nothing (callers skip a rule whose positive list is
 * empty: iface_none). */
static void match_ifaces(struct ctx *c, struct nfr_rule *r, const struct iface_match *im, bool out, bool neg,
			 const char *rule)
{
	struct nfr_match *m;

	if (im->any || !im->n)
		return;
	m = m_add(r, out ? NFR_M_OIFNAME : NFR_M_IIFNAME);
	m->neg = neg;
	if (im->n == 1)
		memcpy(m->ifname, im->ifnames[0], sizeof(m->ifname));
	else
		m->set = iface_set(c, im, rule, out);
}

/* The last address of a prefix (every host bit set). */
void nft_prefix_range(const struct prefix *pf, uint8_t *lo, uint8_t *hi)
{
	unsigned bits = pf->family == POLICY_FAM_IPV4 ? 32 : 128;

	memcpy(lo, pf->addr, 16);
	memcpy(hi, pf->addr, 16);
	for (unsigned i = pf->plen; i < bits; i++)
		hi[i / 8] |= (uint8_t)(0x80 >> (i % 8));
}

static void fill_addr_set(struct nfr_table *t, struct nfr_set *s, const struct prefix *v, uint32_t n, uint8_t fam)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t lo[16], hi[16];

		if (v[i].family != fam)
			continue;
		nft_prefix_range(&v[i], lo, hi);
		nfr_set_add(t, s, lo, hi);
	}
	nfr_set_normalize(s);
}

/* The policy set a match names ("office", or negated "!office"), if it
 * names one alone. */
static const struct addr_set *named_set(const struct policy *p, const char *what)
{
	what = unnegated(what);
	for (uint32_t i = 0; what && i < p->nsets; i++)
		if (!strcmp(p->sets[i].name, what))
			return &p->sets[i];
	return NULL;
}

/* A policy set referenced by name gets a named set of its own (shared by
 * every rule that uses it: a blocklist is stored once); a list written in
 * the rule an anonymous one. */
static const struct nfr_set *addr_set_for(struct ctx *c, const struct addr_match *am, uint8_t fam)
{
	const struct addr_set *ps = named_set(c->p, am->what);
	enum nfr_key key = fam == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6;
	char name[NFR_NAME];
	struct nfr_set *s;

	if (ps) {
		const struct nfr_set *old;

		snprintf(name, sizeof(name), "s_%s_%s", ps->name, fam == POLICY_FAM_IPV4 ? "4" : "6");
		if ((old = nfr_set_find(c->t, name)))
			return old;
		if ((s = nfr_set_new(c->t, name, key, true)))
			fill_addr_set(c->t, s, ps->v, ps->n, fam);
		return s;
	}
	if ((s = nfr_set_new(c->t, NULL, key, true)))
		fill_addr_set(c->t, s, am->v, am->n, fam);
	return s;
}

/* The one prefix of this family a list holds, if it holds one. */
static const struct prefix *single_prefix(const struct addr_match *am, uint8_t fam)
{
	const struct prefix *one = NULL;

	for (uint32_t i = 0; i < am->n; i++) {
		if (am->v[i].family != fam)
			continue;
		if (one)
			return NULL;
		one = &am->v[i];
	}
	return one;
}

void nft_dyn_set_name(char *buf, size_t len, const char *set, uint8_t fam)
{
	snprintf(buf, len, "d_%s_%s", set, fam == POLICY_FAM_IPV4 ? "4" : "6");
}

/* A dynamic set's nftables set of one family, with the entries it holds
 * now and the time each has left. */
static const struct nfr_set *dyn_set_for(struct ctx *c, const struct addr_set *ps, uint8_t fam)
{
	int f = fam == POLICY_FAM_IPV6;
	const struct dyn_set *ds = c->o->dyn ? dynsets_get(c->o->dyn, ps->name) : NULL;
	const struct nfr_set *old;
	char name[NFR_NAME];
	struct nfr_set *s;
	int64_t now = dyn_now_ms();

	nft_dyn_set_name(name, sizeof(name), ps->name, fam);
	if ((old = nfr_set_find(c->t, name)))
		return old;
	if (!(s = nfr_set_new(c->t, name, f ? NFR_KEY_IPV6 : NFR_KEY_IPV4, true)))
		return NULL;
	s->timeout = true;
	for (uint32_t i = 0; ds && i < ds->n[f]; i++) {
		const struct dyn_entry *e = &ds->v[f][i];
		struct prefix pf = { .family = fam, .plen = e->plen };
		uint8_t lo[16], hi[16];

		if (e->expires && e->expires <= now)
			continue;
		memcpy(pf.addr, e->addr, 16);
		nft_prefix_range(&pf, lo, hi);
		nfr_set_add(c->t, s, lo, hi);
		if (!c->t->err && e->expires) /* after the store lets it go */
			s->v[s->n - 1].timeout_ms = (uint64_t)(e->expires - now) + NFT_TIMEOUT_MARGIN_MS;
	}
	return s; /* sorted and apart already: not normalized (each element keeps its timeout) */
}

static void match_addrs(struct ctx *c, struct nfr_rule *r, const struct addr_match *am, uint8_t dir, uint8_t fam)
{
	const struct prefix *host;
	struct nfr_match *m;
	bool listed = false;

	if (dir == 0 && planted("nft-skip-source"))
		return;

	if (am->dyn) {
		m = m_add(r, NFR_M_ADDR);
		m->dir = dir;
		m->family = fam;
		m->neg = am->neg;
		m->set = dyn_set_for(c, &c->p->sets[am->dyn - 1], fam);
		return;
	}
	if (am->any)
		return;
	for (uint32_t i = 0; i < am->n && !listed; i++)
		listed = am->v[i].family == fam;
	if (am->neg && !listed)
		return; /* "!office" and office has none of this family: every address */
	/* A list of one prefix: compared, no set (as nft writes it). */
	if (!named_set(c->p, am->what) && (host = single_prefix(am, fam))) {
		m = m_add(r, NFR_M_ADDR_EQ);
		m->dir = dir;
		m->family = fam;
		m->value = host->plen;
		m->neg = am->neg;
		memcpy(m->addr, host->addr, 16);
		return;
	}
	m = m_add(r, NFR_M_ADDR);
	m->dir = dir;
	m->family = fam;
	m->neg = am->neg;
	m->set = addr_set_for(c, am, fam);
}

/* ---- ports ---- */

static bool has_proto(const struct port_match *pm, uint8_t proto)
{
	for (uint32_t i = 0; !pm->any && i < pm->n; i++)
		if (pm->v[i].proto == proto)
			return true;
	return false;
}

static void port_key(uint8_t *k, uint8_t proto, uint16_t port, bool concat)
{
	memset(k, 0, 16);
	if (concat) {
		k[0] = proto; /* meta l4proto fills its 4-byte register */
		k += 4;
	}
	k[0] = (uint8_t)(port >> 8);
	k[1] = (uint8_t)port;
}

static bool has_l4proto(const struct nfr_rule *r)
{
	for (uint32_t i = 0; i < r->nm; i++)
		if (r->m[i].kind == NFR_M_L4PROTO)
			return true;
	return false;
}

/* The ports of the protocols in protos (a bit per protocol in port_protos)
 * as one match: a value or range compared; an interval set of ports of one
 * protocol; or, across protocols, an interval set of l4proto . port. */
static const uint8_t port_protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP, IPPROTO_UDPLITE };

static void match_ports(struct ctx *c, struct nfr_rule *r, const struct port_match *pm, uint8_t dir, unsigned protos)
{
	bool concat = (protos & (protos - 1)) != 0;
	struct nfr_set *s = nfr_set_new(c->t, NULL, concat ? NFR_KEY_PROTO_PORT : NFR_KEY_PORT, true);
	struct nfr_match *m;

	if (!s)
		return;
	for (uint32_t i = 0; i < pm->n; i++) {
		uint8_t lo[16], hi[16];
		unsigned bit = 0;

		while (bit < sizeof(port_protos) && port_protos[bit] != pm->v[i].proto)
			bit++;
		if (bit == sizeof(port_protos) || !(protos & (1u << bit)))
			continue;
		port_key(lo, pm->v[i].proto, pm->v[i].lo, concat);
		port_key(hi, pm->v[i].proto, pm->v[i].hi, concat);
		nfr_set_add(c->t, s, lo, hi);
	}
	nfr_set_normalize(s);
	if (!concat && !has_l4proto(r))
		m_add(r, NFR_M_L4PROTO)->value = port_protos[__builtin_ctz(protos)];
	m = m_add(r, concat ? NFR_M_PROTO_PORT : NFR_M_PORT);
	m->dir = dir;
	if (!concat && s->n == 1) {
		m->lo = (uint16_t)(s->v[0].lo[0] << 8 | s->v[0].lo[1]);
		m->hi = (uint16_t)(s->v[0].hi[0] << 8 | s->v[0].hi[1]);
		nfr_set_drop(c->t, s);
		return;
	}
	m->set = s;
}

/* Which of port_protos a rule's ports can match (bit per protocol). */
static unsigned rule_port_protos(const struct rule *ru)
{
	unsigned protos = 0;

	for (unsigned i = 0; i < sizeof(port_protos); i++) {
		if (ru->proto >= 0 && ru->proto != port_protos[i])
			continue;
		/* Both lists given: the protocol must be in each. */
		if ((ru->service.any || has_proto(&ru->service, port_protos[i])) &&
		    (ru->sport.any || has_proto(&ru->sport, port_protos[i])))
			protos |= 1u << i;
	}
	return protos;
}

/* ---- rules of the filter ---- */

/* The statements of a rule, on a copy of its matches; rejects also get the
 * fallback over the reject-rate. */
struct emit {
	struct ctx *c;
	const struct rule *ru;
	enum policy_hook h;
	uint8_t fam; /* the chain's family */
	char counter[NFR_NAME];
	char what[160];
};

static void emit_log(struct emit *e, const struct nfr_rule *base)
{
	struct nfr_rule r = *base;
	struct nfr_stmt *s;

	/* counted before the limit and after it: a packet over the rate
	 * ends the rule at the limit (log_rate_limited is the difference) */
	s_add(&r, NFR_S_COUNTER, NFT_COUNTER_LOG_WANTED);
	s_add(&r, NFR_S_LIMIT, "x_log");
	s_add(&r, NFR_S_COUNTER, NFT_COUNTER_LOGGED);
	s = s_add(&r, NFR_S_LOG, NULL);
	snprintf(s->name, sizeof(s->name), "%s %s %s", policy_hook_name(e->h), policy_action_name(e->ru->action),
		 e->ru->name);
	s->value = NFT_NFLOG_GROUP;
	nfr_rule_add(e->c->t, &r, e->what);
}

static void emit_reject(struct emit *e, const struct nfr_rule *base, bool tcp)
{
	static const uint32_t icmpx[POLICY_REJECT_MAX] = {
		[POLICY_REJECT_TCP_RESET] = NFT_REJECT_ICMPX_PORT_UNREACH,
		[POLICY_REJECT_PORT] = NFT_REJECT_ICMPX_PORT_UNREACH,
		[POLICY_REJECT_ADMIN] = NFT_REJECT_ICMPX_ADMIN_PROHIBITED,
		[POLICY_REJECT_HOST] = NFT_REJECT_ICMPX_HOST_UNREACH,
		[POLICY_REJECT_NET] = NFT_REJECT_ICMPX_NO_ROUTE,
	};
	struct nfr_rule r = *base, over;

	if (tcp && !has_l4proto(&r))
		m_add(&r, NFR_M_L4PROTO)->value = IPPROTO_TCP;
	over = r;
	s_add(&r, NFR_S_LIMIT, "x_reject");
	s_add(&r, NFR_S_COUNTER, e->counter);
	if (tcp)
		s_add(&r, NFR_S_REJECT_TCP, NULL);
	else
		s_add(&r, NFR_S_REJECT_ICMPX, NULL)->value = icmpx[e->ru->reject_with];
	nfr_rule_add(e->c->t, &r, e->what);
	/* Over the rate: dropped, counted, unanswered. */
	s_add(&over, NFR_S_COUNTER, e->counter);
	s_add(&over, NFR_S_COUNTER, NFT_COUNTER_REJECT_LIMITED);
	s_add(&over, NFR_S_DROP, NULL);
	nfr_rule_add(e->c->t, &over, e->what);
}

/* What protocols a rule's matches leave: 1 only TCP, 0 never TCP, -1 TCP
 * and others. */
static int tcp_only(const struct nfr_rule *r, const struct rule *ru)
{
	for (uint32_t i = 0; i < r->nm; i++)
		if (r->m[i].kind == NFR_M_L4PROTO)
			return r->m[i].value == IPPROTO_TCP;
	if (ru->nicmp || (ru->proto >= 0 && ru->proto != IPPROTO_TCP))
		return 0;
	return ru->proto == IPPROTO_TCP ? 1 : -1;
}

/* The family first, as nft writes the dependency of `ip saddr` (the
 * ruleset then lists as the plan prints it). */
static void nfproto_first(struct nfr_rule *r, uint8_t fam)
{
	if (has_match(r, NFR_M_NFPROTO))
		return;
	match_nfproto(r, fam);
	if (!r->full) { /* appended: rotated to the front */
		struct nfr_match m = r->m[r->nm - 1];

		memmove(&r->m[1], &r->m[0], (r->nm - 1) * sizeof(r->m[0]));
		r->m[0] = m;
	}
}

/* The rule's set of family fam's source addresses, filled by the packet
 * path (KIND4_HOOK_RULE: 'm' a limit's buckets, 'c' its connection counts),
 * made on first use: at most size elements, each gone once unused for
 * timeout_s (0: by the kernel's own measure). NULL when out of memory. */
static const struct nfr_set *source_set(struct emit *e, char kind, uint8_t fam, uint32_t size, uint64_t timeout_s)
{
	char name[NFR_NAME];
	const struct nfr_set *set;
	struct nfr_set *ns;

	snprintf(name, sizeof(name), "%c%c_%s_%s", kind, fam == POLICY_FAM_IPV4 ? '4' : '6', policy_hook_name(e->h),
		 e->ru->name);
	if ((set = nfr_set_find(e->c->t, name)))
		return set;
	if (!(ns = nfr_set_new(e->c->t, name, fam == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6, false)))
		return NULL;
	ns->dynamic = true;
	ns->size = size;
	ns->timeout_s = timeout_s;
	return ns;
}

/* The rule's connection limit as a match on r: its own count (ct count),
 * or per source its family's set of counts. An element goes once its
 * count is zero (the kernel's garbage collection), never by a timeout,
 * which would forget live connections. */
static void conn_match(struct emit *e, struct nfr_rule *r, uint8_t fam)
{
	const struct policy_limit *l = &e->ru->limit;
	struct nfr_stmt *s;
	const struct nfr_set *set = NULL;

	if (l->per_source) {
		if (!(set = source_set(e, 'c', fam, NFT_CONN_OWNERS, 0)))
			return;
		nfproto_first(r, fam);
	}
	s = s_add(r, NFR_S_CONNLIMIT, NULL);
	s->set = set;
	s->family = fam;
	s->value = l->conns;
}

/* The rule's limit as a match on r: its named limit, or (per source) its
 * family's set of buckets, made on first use. */
static void limit_match(struct emit *e, struct nfr_rule *r, uint8_t fam)
{
	const struct policy_limit *l = &e->ru->limit;
	char name[NFR_NAME];
	struct nfr_stmt *s;
	const struct nfr_set *set;
	uint64_t fill;

	if (!l->per_source) {
		snprintf(name, sizeof(name), "l_%s_%s", policy_hook_name(e->h), e->ru->name);
		if (!nfr_limit_find(e->c->t, name))
			nfr_limit_add(e->c->t, name, l->rate.n, l->rate.per, l->burst);
		s_add(r, NFR_S_LIMIT, name);
		return;
	}
	/* An element that has not been updated for as long as its bucket
	 * takes to fill is a full bucket: it may go; not sooner (a source
	 * forgotten early would come back to a full bucket). The longest,
	 * 1,000,000 a burst at 1/hour, is 3.6e9 s. */
	fill = ((uint64_t)l->rate.per * l->burst + l->rate.n - 1) / l->rate.n;
	if (!(set = source_set(e, 'm', fam, NFT_METER_SIZE, fill < 1 ? 1 : fill)))
		return;
	nfproto_first(r, fam);
	s = s_add(r, NFR_S_METER, NULL);
	s->set = set;
	s->family = fam;
	s->rate = l->rate.n;
	s->per = l->rate.per;
	s->burst = l->burst;
}

static void emit_verdict_rules(struct emit *e, const struct nfr_rule *base);

/* A scheduled accept rule whose connections are cut at its edge marks
 * each new one it lets in (the daemon deletes them by their mark), in a
 * rule of its own before the verdict's: `ct mark set` on a packet without
 * a connection (untracked: neighbour discovery, say) ends the rule, which
 * must still accept it. */
static void mark_cut(struct emit *e, const struct nfr_rule *base)
{
	struct nfr_rule r = *base;

	if (planted("schedule-unmarked")) /* the test build: connections left unmarked */
		return;
	if (!e->ru->when.cut || e->ru->action != POLICY_ACCEPT)
		return;
	m_add(&r, NFR_M_CT_STATE)->value = CT_NEW;
	s_add(&r, NFR_S_CT_MARK_CUT, NULL)->value = e->ru->when.cut;
	nfr_rule_add(e->c->t, &r, e->what);
}

/* A rule with limit: the limit taken once, then the verdict; a rule after
 * it with the same matches counts the packets over the limit, which go on
 * to the rules after. A verdict of one rule (accept, drop) goes with the
 * limit; log and reject, several rules, go in a chain of their own. */
static void emit_limited(struct emit *e, const struct nfr_rule *base)
{
	struct nfr_rule r = *base, over = *base;
	char name[NFR_NAME];

	if (e->ru->limit.conns)
		conn_match(e, &r, e->fam);
	else
		limit_match(e, &r, e->fam);
	if (e->ru->log || e->ru->action == POLICY_REJECT) {
		struct nfr_chain ch = { 0 };
		struct nfr_rule in = *base;

		snprintf(ch.name, sizeof(ch.name), "limited_%u", e->c->t->nchains);
		in.chain = nfr_chain_add(e->c->t, &ch);
		s_add(&r, NFR_S_JUMP, chain_name(e->c->t, in.chain));
		nfr_rule_add(e->c->t, &r, e->what);
		emit_verdict_rules(e, &in);
	} else {
		mark_cut(e, base); /* without the limit: its token is taken once */
		s_add(&r, NFR_S_COUNTER, e->counter);
		s_add(&r, e->ru->action == POLICY_ACCEPT ? NFR_S_ACCEPT : NFR_S_DROP, NULL);
		nfr_rule_add(e->c->t, &r, e->what);
	}
	nft_over_limit_counter_name(name, sizeof(name), e->h, e->ru->name);
	counter(e->c, name);
	s_add(&over, NFR_S_COUNTER, name);
	if (e->ru->limit.overload) {
		/* The daemon puts the source into the overload set when it
		 * hears of it: NFLOG, at most NFT_OVERLOAD_RATE a second. */
		struct nfr_stmt *s;

		if (!nfr_limit_find(e->c->t, "x_overload"))
			nfr_limit_add(e->c->t, "x_overload", NFT_OVERLOAD_RATE, 1, NFT_OVERLOAD_RATE);
		s_add(&over, NFR_S_LIMIT, "x_overload");
		s = s_add(&over, NFR_S_LOG, NULL);
		snprintf(s->name, sizeof(s->name), "%s overload %s", policy_hook_name(e->h), e->ru->name);
		s->value = NFT_NFLOG_GROUP;
	}
	nfr_rule_add(e->c->t, &over, e->what);
}

static void emit_verdict(struct emit *e, const struct nfr_rule *base)
{
	if (policy_has_limit(&e->ru->limit))
		emit_limited(e, base);
	else
		emit_verdict_rules(e, base);
}

static void emit_verdict_rules(struct emit *e, const struct nfr_rule *base)
{
	struct nfr_rule r = *base;

	if (e->ru->log)
		emit_log(e, base);
	if (e->ru->action == POLICY_REJECT) {
		int tcp = e->ru->reject_with == POLICY_REJECT_TCP_RESET ? tcp_only(base, e->ru) : 0;

		if (tcp)
			emit_reject(e, base, true); /* TCP first: a reset */
		if (tcp != 1)
			emit_reject(e, base, false);
		return;
	}
	mark_cut(e, &r);
	s_add(&r, NFR_S_COUNTER, e->counter);
	s_add(&r, e->ru->action == POLICY_ACCEPT ? NFR_S_ACCEPT : NFR_S_DROP, NULL);
	nfr_rule_add(e->c->t, &r, e->what);
}

/* The layer-4 part of a rule, as the classifier reads it: a fragment has
 * no ports or ICMP type, so only rules without them see it; ports of one
 * list and several protocols become one l4proto . port set; with both
 * source and destination ports, one rule per protocol. */
static void emit_l4(struct emit *e, const struct nfr_rule *base, bool frag_chain)
{
	const struct rule *ru = e->ru;
	struct nfr_rule r = *base;
	unsigned protos;

	if (ru->nicmp || !ru->service.any || !ru->sport.any) {
		if (frag_chain)
			return;
		/* One nft rule per type, all with the rule's counter. */
		for (uint16_t i = 0; i < ru->nicmp; i++) {
			struct nfr_rule one = *base;
			struct nfr_match *m = m_add(&one, NFR_M_ICMP_TYPE);

			m->family = ru->proto == IPPROTO_ICMP ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
			m->value = ru->icmp_types[i];
			emit_verdict(e, &one);
		}
		if (ru->nicmp)
			return;
		if (!(protos = rule_port_protos(ru)))
			return; /* ports of no protocol the rule allows: it never matches */
		if (ru->service.any || ru->sport.any) {
			match_ports(e->c, &r, ru->service.any ? &ru->sport : &ru->service, !ru->service.any, protos);
			emit_verdict(e, &r);
			return;
		}
		for (unsigned i = 0; i < sizeof(port_protos); i++) {
			if (!(protos & (1u << i)))
				continue;
			r = *base;
			match_ports(e->c, &r, &ru->service, 1, 1u << i);
			match_ports(e->c, &r, &ru->sport, 0, 1u << i);
			emit_verdict(e, &r);
		}
		return;
	}
	if (ru->proto >= 0)
		m_add(&r, NFR_M_L4PROTO)->value = (uint32_t)ru->proto;
	emit_verdict(e, &r);
}

static uint32_t ct_bits(uint8_t state)
{
	return (state & POLICY_CT_NEW ? CT_NEW : 0) | (state & POLICY_CT_ESTABLISHED ? CT_ESTABLISHED : 0) |
	       (state & POLICY_CT_RELATED ? CT_RELATED : 0) | (state & POLICY_CT_INVALID ? CT_INVALID : 0) |
	       (state & POLICY_CT_UNTRACKED ? CT_UNTRACKED : 0);
}

static bool applies(const struct rule *ru, uint8_t fam)
{
	return (ru->families & fam) && (ru->from.any || (ru->from.families & fam)) &&
	       (ru->to.any || (ru->to.families & fam));
}

static void sched_set_name(char *buf, size_t len, const char *rule)
{
	snprintf(buf, len, "w_%s", rule);
}

struct nfr_set *nft_sched_set(struct nfr_table *t, const char *rule, bool open)
{
	static const uint8_t fams[] = { NFPROTO_IPV4, NFPROTO_IPV6 };
	char name[NFR_NAME];
	struct nfr_set *s;

	sched_set_name(name, sizeof(name), rule);
	if (!(s = nfr_set_new(t, name, NFR_KEY_NFPROTO, false)))
		return NULL;
	for (size_t i = 0; open && i < sizeof(fams); i++) {
		uint8_t k[16] = { fams[i] };

		nfr_set_add(t, s, k, k);
	}
	return s;
}

/* A scheduled rule's set w_RULE as it is now; the daemon changes it at the
 * window's edges. */
static const struct nfr_set *sched_set_for(struct ctx *c, const struct rule *ru)
{
	const struct nfr_set *old;
	char name[NFR_NAME];

	sched_set_name(name, sizeof(name), ru->name);
	if ((old = nfr_set_find(c->t, name)))
		return old;
	return nft_sched_set(c->t, ru->name, sched_open(&ru->when, (int64_t)time(NULL)));
}

/* The matches of a rule before its layer 4: its schedule, interfaces,
 * addresses, state. */
static void rule_head(struct ctx *c, struct nfr_rule *r, const struct rule *ru, uint8_t fam)
{
	if (ru->when.n)
		m_add(r, NFR_M_SCHED)->set = sched_set_for(c, ru);
	match_ifaces(c, r, &ru->in, false, ru->in.neg, ru->name);
	match_ifaces(c, r, &ru->out, true, ru->out.neg, ru->name);
	/* Redundant in a chain of one family, but it is how nft itself writes
	 * `ip saddr` in an inet table (its dependency), so the ruleset reads
	 * back as the plan printed it. */
	if (!ru->from.any || !ru->to.any)
		match_nfproto(r, fam);
	match_addrs(c, r, &ru->from, 0, fam);
	match_addrs(c, r, &ru->to, 1, fam);
	if (ru->state != POLICY_CT_ALL)
		m_add(r, NFR_M_CT_STATE)->value = ct_bits(ru->state);
}

/* The chain named as ch is, added as ch the first time. */
static uint32_t chain_once(struct ctx *c, const struct nfr_chain *ch)
{
	for (uint32_t i = 0; i < c->t->nchains; i++)
		if (!strcmp(c->t->chains[i].name, ch->name))
			return i;
	return nfr_chain_add(c->t, ch);
}

/* ---- synproxy: true ---- */

/*
 * A rule with synproxy: true first lets its SYNs pass untracked (a raw
 * chain before conntrack, synproxy_raw), so a flood of forged SYNs makes no
 * conntrack entry; in its place among the rules, the untracked SYN and the
 * client's ACK (invalid to conntrack until then) go to nftables' synproxy,
 * which answers with a SYN cookie and, once the ACK proves the address,
 * opens the connection to the server: tracked from then on, it meets the
 * rule again like any other connection. What the proxy leaves (a segment
 * invalid to conntrack that is neither SYN nor ACK: a forged RST, FIN or one
 * without flags) is dropped right after it, as nftables' own SYN proxy
 * recipe does, whatever the rule's state: only a client that completed
 * the handshake reaches the server. Counted in the rule's counter, once.
 */
#define SYNPROXY_RAW_PRIO (-300)
#define SYNPROXY_WSCALE	  7

static uint32_t synproxy_raw_chain(struct ctx *c)
{
	struct nfr_chain ch = {
		.name = "synproxy_raw", .base = true, .hook = NF_INET_PRE_ROUTING, .prio = SYNPROXY_RAW_PRIO
	};

	return chain_once(c, &ch);
}

/* The rule's interfaces, addresses and TCP ports (no state), on r. */
static void synproxy_match(struct ctx *c, struct nfr_rule *r, const struct rule *ru, uint8_t fam)
{
	match_ifaces(c, r, &ru->in, false, ru->in.neg, ru->name);
	match_nfproto(r, fam);
	match_addrs(c, r, &ru->from, 0, fam);
	match_addrs(c, r, &ru->to, 1, fam);
	if (ru->service.any)
		m_add(r, NFR_M_L4PROTO)->value = IPPROTO_TCP;
	else
		match_ports(c, r, &ru->service, 1, 1u << 0 /* port_protos[0]: TCP */);
}

static void synproxy_rules(struct emit *e, uint32_t chain)
{
	struct nfr_rule raw = { .chain = synproxy_raw_chain(e->c), .loc = e->ru->loc };
	struct nfr_rule r = { .chain = chain, .loc = e->ru->loc };
	struct nfr_rule drop = { .chain = chain, .loc = e->ru->loc };
	struct nfr_stmt *s;

	synproxy_match(e->c, &raw, e->ru, e->fam);
	m_add(&raw, NFR_M_TCP_SYN);
	s_add(&raw, NFR_S_NOTRACK, NULL);
	nfr_rule_add(e->c->t, &raw, e->what);
	synproxy_match(e->c, &r, e->ru, e->fam);
	m_add(&r, NFR_M_CT_STATE)->value = CT_INVALID | CT_UNTRACKED;
	if (e->counter[0]) /* the BPF backend counts in the classifier */
		s_add(&r, NFR_S_COUNTER, e->counter);
	s = s_add(&r, NFR_S_SYNPROXY, NULL);
	s->port = e->fam == POLICY_FAM_IPV4 ? 1460 : 1440;
	s->value = SYNPROXY_WSCALE;
	nfr_rule_add(e->c->t, &r, e->what);
	if (planted("synproxy-invalid-passes"))
		return;
	synproxy_match(e->c, &drop, e->ru, e->fam);
	m_add(&drop, NFR_M_CT_STATE)->value = CT_INVALID | CT_UNTRACKED;
	s_add(&drop, NFR_S_DROP, NULL);
	nfr_rule_add(e->c->t, &drop, e->what);
}

/*
 * With the BPF backend the classifier judges the rule's untracked SYNs and
 * invalid ACKs in the rule's place (compile.c widens a synproxy rule's
 * states to them), and the proxy comes after it: a base chain of its own
 * on each hook (synproxy_input, synproxy_forward), after the classifier's
 * priorities, takes what the classifier let through and matches the rule;
 * what the proxy does not take is dropped there (synproxy_rules), as in
 * the nftables backend's rule.
 */
#define SYNPROXY_BPF_PRIO (-80) /* after the classifier's NFB_PRIORITY .. + NFB_PRIORITY_SPAN - 1 */

static void synproxy_bpf(struct ctx *c)
{
	for (uint32_t i = 0; i < c->p->nrules; i++) {
		const struct rule *ru = &c->p->rules[i];

		if (!ru->synproxy || iface_none(&ru->in))
			continue;
		for (int h = 0; h < POLICY_HOOK_MAX; h++) {
			struct nfr_chain ch = { .base = true, .prio = SYNPROXY_BPF_PRIO };
			uint32_t chain;

			if (!(ru->hooks & (1u << h)) || h == POLICY_HOOK_OUTPUT)
				continue;
			snprintf(ch.name, sizeof(ch.name), "synproxy_%s", policy_hook_name((enum policy_hook)h));
			ch.hook = nf_hook_of((enum policy_hook)h);
			chain = chain_once(c, &ch);
			for (uint8_t fam = POLICY_FAM_IPV4; fam <= POLICY_FAM_IPV6; fam <<= 1) {
				struct emit e = { .c = c, .ru = ru, .h = (enum policy_hook)h, .fam = fam };

				if (!applies(ru, fam))
					continue;
				snprintf(e.what, sizeof(e.what), "rule '%s' (%s)", ru->name, policy_hook_name(e.h));
				synproxy_rules(&e, chain);
			}
		}
	}
}

/* A rule in the chain of one family (fam): nothing if it cannot match it. */
static void filter_rule(struct ctx *c, const struct rule *ru, enum policy_hook h, uint32_t chain, uint8_t fam,
			bool frag_chain)
{
	struct emit e = { .c = c, .ru = ru, .h = h, .fam = fam };
	struct nfr_rule r = { .chain = chain, .loc = ru->loc };

	if (!applies(ru, fam))
		return;
	nft_rule_counter_name(e.counter, sizeof(e.counter), h, ru->name);
	snprintf(e.what, sizeof(e.what), "rule '%s' (%s)", ru->name, policy_hook_name(h));
	counter(c, e.counter);
	if (iface_none(&ru->in) || iface_none(&ru->out))
		return; /* an empty group: the rule matches no interface, nothing is emitted */
	if (ru->synproxy && !frag_chain)
		synproxy_rules(&e, chain);
	rule_head(c, &r, ru, fam);
	emit_l4(&e, &r, frag_chain);
}

static void default_rule(struct ctx *c, enum policy_hook h, uint32_t chain)
{
	struct nfr_rule r = { .chain = chain };
	char name[NFR_NAME];

	nft_default_counter_name(name, sizeof(name), h);
	counter(c, name);
	s_add(&r, NFR_S_COUNTER, name);
	s_add(&r, c->p->hooks[h].def == POLICY_ACCEPT ? NFR_S_ACCEPT : NFR_S_DROP, NULL);
	nfr_rule_add(c->t, &r, "the default verdict");
}

static uint32_t plain_chain(struct ctx *c, enum policy_hook h, const char *suffix)
{
	struct nfr_chain ch = { 0 };

	snprintf(ch.name, sizeof(ch.name), "%s_%s", policy_hook_name(h), suffix);
	return nfr_chain_add(c->t, &ch);
}

/* ---- runs of rules that differ only in their ports ---- */

/*
 * Rules next to each other that match the same interfaces, addresses,
 * protocol and state, have the same verdict and no log, and differ only in
 * their destination ports, are one nftables rule: a map from
 * `meta l4proto . th dport` to each rule's named counter. The map lookup is
 * the match (a key not in it ends the rule) and picks the counter: one
 * lookup instead of a rule per policy rule, and every counter still its
 * own. First match holds because the ports of a run never overlap: a rule
 * whose ports overlap an earlier one's in the run starts a new run.
 *
 * The map is named (cm_CHAIN_N), not anonymous: an anonymous map is
 * deleted with its rule in the reload's own commit, and a packet that
 * entered the old rule just before the commit and looked the map up just
 * after it found nothing. The emitter deletes a named one only once no
 * packet can be in it (emit.c, set_name).
 */
static bool iface_eq(const struct iface_match *a, const struct iface_match *b)
{
	if (a->any || b->any)
		return a->any == b->any;
	if (a->n != b->n || a->neg != b->neg)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (strcmp(a->ifnames[i], b->ifnames[i]))
			return false;
	return true;
}

static bool mergeable(const struct rule *r)
{
	return !policy_has_limit(&r->limit) && !iface_none(&r->in) && !iface_none(&r->out) &&
	       (r->action == POLICY_ACCEPT || r->action == POLICY_DROP) && !r->log && !r->nicmp && !r->service.any &&
	       r->sport.any && !r->synproxy && !r->when.n; /* a schedule is the rule's own (w_RULE) */
}

static bool same_shape(const struct rule *a, const struct rule *b)
{
	return a->action == b->action && a->proto == b->proto && a->state == b->state && a->families == b->families &&
	       iface_eq(&a->in, &b->in) && iface_eq(&a->out, &b->out) && policy_addrs_equal(&a->from, &b->from) &&
	       policy_addrs_equal(&a->to, &b->to);
}

/* The ports a run has taken: a bit per port and protocol (port_protos),
 * and the ranges set, to clear them for the next run. Checking a rule
 * costs the length of its ranges in words, not the length of the run: a
 * run of 65,536 rules is built in linear time. */
struct run_ports {
	uint64_t bits[sizeof(port_protos)][65536 / 64];
	struct port_range *v;
	uint32_t n, cap;
};

/* The index of a port protocol in port_protos (a port entry has one). */
static unsigned proto_bit(uint8_t proto)
{
	unsigned i = 0;

	while (i < sizeof(port_protos) - 1 && port_protos[i] != proto)
		i++;
	return i;
}

/* Any bit of lo..hi set in w (set: set them all first). */
static bool bits_range(uint64_t *w, uint16_t lo, uint16_t hi, bool set)
{
	for (uint32_t i = lo / 64; i <= hi / 64u; i++) {
		uint64_t m = ~0ull;

		if (i == lo / 64u)
			m &= ~0ull << (lo % 64);
		if (i == hi / 64u && hi % 64 != 63)
			m &= (1ull << (hi % 64 + 1)) - 1;
		if (set)
			w[i] |= m;
		else if (w[i] & m)
			return true;
	}
	return false;
}

/* The rule's destination ports overlap none of the run's. (A rule with
 * proto: lists only that protocol's ports: the loader narrows them.) */
static bool ports_fit(const struct rule *r, struct run_ports *rp)
{
	for (uint32_t i = 0; i < r->service.n; i++) {
		const struct port_range *p = &r->service.v[i];

		if (bits_range(rp->bits[proto_bit(p->proto)], p->lo, p->hi, false))
			return false;
	}
	return true;
}

/* The rule's ports into the run's; t->err when out of memory (a port the
 * run did not know could let an overlapping rule in). */
static void ports_take(struct nfr_table *t, const struct rule *r, struct run_ports *rp)
{
	for (uint32_t i = 0; i < r->service.n; i++) {
		const struct port_range *p = &r->service.v[i];

		if (rp->n == rp->cap) {
			uint32_t cap = rp->cap ? 2 * rp->cap : 64;
			struct port_range *v = realloc(rp->v, cap * sizeof(*v));

			if (!v) {
				t->err = -ENOMEM;
				return;
			}
			rp->v = v;
			rp->cap = cap;
		}
		rp->v[rp->n++] = *p;
		bits_range(rp->bits[proto_bit(p->proto)], p->lo, p->hi, true);
	}
}

/* Empty for the next run: only the words the last one set. */
static void ports_clear(struct run_ports *rp)
{
	for (uint32_t k = 0; k < rp->n; k++)
		memset(&rp->bits[proto_bit(rp->v[k].proto)][rp->v[k].lo / 64], 0,
		       (rp->v[k].hi / 64u - rp->v[k].lo / 64u + 1) * sizeof(uint64_t));
	rp->n = 0;
}

/* Rules first..last (of hook h) as one rule with a counter map. */
static void emit_run(struct ctx *c, enum policy_hook h, uint32_t chain, uint8_t fam, const struct rule *const *run,
		     uint32_t n)
{
	const struct rule *ru = run[0];
	struct nfr_rule r = { .chain = chain, .loc = ru->loc };
	bool ranges = false;
	struct nfr_set *map;
	char name[NFR_NAME], what[2 * POLICY_MAX_NAME + 96];

	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < run[k]->service.n; i++)
			ranges |= run[k]->service.v[i].lo != run[k]->service.v[i].hi;
	snprintf(name, sizeof(name), "cm_%s_%u", chain_name(c->t, chain), ++c->nmaps);
	if (!(map = nfr_set_new(c->t, name, NFR_KEY_PROTO_PORT, ranges)))
		return;
	map->objmap = true;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t ci;

		nft_rule_counter_name(name, sizeof(name), h, run[k]->name);
		counter(c, name);
		ci = nfr_counter_find(c->t, name);
		for (uint32_t i = 0; i < run[k]->service.n; i++) {
			const struct port_range *p = &run[k]->service.v[i];
			uint8_t lo[16], hi[16];

			port_key(lo, p->proto, p->lo, true);
			port_key(hi, p->proto, p->hi, true);
			nfr_set_add(c->t, map, lo, hi);
			if (!c->t->err)
				map->v[map->n - 1].chain = ci;
		}
	}
	nfr_set_normalize(map); /* a rule may list a port twice */
	rule_head(c, &r, ru, fam);
	s_add(&r, NFR_S_COUNTER_MAP, NULL)->set = map;
	s_add(&r, ru->action == POLICY_ACCEPT ? NFR_S_ACCEPT : NFR_S_DROP, NULL);
	snprintf(what, sizeof(what), "rules '%s' to '%s' (%s, one rule with a counter map)", ru->name, run[n - 1]->name,
		 policy_hook_name(h));
	nfr_rule_add(c->t, &r, what);
}

/* The policy's rules of hook h for family fam, in order, into chain;
 * runs of rules that differ only in their ports as one rule each. */
static void family_rules(struct ctx *c, enum policy_hook h, uint32_t chain, uint8_t fam, bool frag_chain)
{
	const struct policy *p = c->p;
	const struct rule **run = calloc(p->nrules ? p->nrules : 1, sizeof(*run));
	struct run_ports *rp = calloc(1, sizeof(*rp));

	if (!run || !rp) {
		free(run);
		free(rp);
		c->t->err = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < p->nrules; i++) {
		const struct rule *ru = &p->rules[i];
		uint32_t n = 0, j;

		if (!(ru->hooks & (1u << h)))
			continue;
		if (frag_chain || !mergeable(ru) || !applies(ru, fam)) {
			filter_rule(c, ru, h, chain, fam, frag_chain);
			continue;
		}
		ports_clear(rp);
		run[n++] = ru;
		ports_take(c->t, ru, rp);
		for (j = i + 1; j < p->nrules; j++) {
			const struct rule *nx = &p->rules[j];

			if (!(nx->hooks & (1u << h)))
				continue; /* not in this hook's order */
			if (!mergeable(nx) || !same_shape(ru, nx) || !ports_fit(nx, rp))
				break;
			ports_take(c->t, nx, rp);
			run[n++] = nx;
		}
		if (n == 1) {
			filter_rule(c, ru, h, chain, fam, false);
			continue;
		}
		emit_run(c, h, chain, fam, run, n);
		i = j - 1;
	}
	free(rp->v);
	free(rp);
	free(run);
}

/* Before anything else (conntrack's verdict too), an IPv6 packet from or to
 * an IPv4-mapped address (::ffff:0:0/96): malformed, never on the wire
 * (bpf/nfbox.h, nfb_v6_mapped), dropped and counted as the classifier
 * does. The kernel's own parser passes it, and a dual-stack server would
 * take it for the IPv4 peer. */
static void mapped_rules(struct nfr_table *t, uint32_t chain)
{
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff };

	if (planted("mapped-passes"))
		return;
	for (uint8_t dir = 0; dir < 2; dir++) {
		struct nfr_rule r = { .chain = chain };
		struct nfr_match *m;

		match_nfproto(&r, POLICY_FAM_IPV6);
		m = m_add(&r, NFR_M_ADDR_EQ);
		m->dir = dir;
		m->family = POLICY_FAM_IPV6;
		m->value = 96;
		memcpy(m->addr, mapped, sizeof(mapped));
		s_add(&r, NFR_S_COUNTER, NFT_COUNTER_MALFORMED);
		s_add(&r, NFR_S_DROP, NULL);
		nfr_rule_add(t, &r, "IPv4-mapped addresses");
	}
}

/* Fragments first: with defrag on the kernel reassembled what it could, so
 * a fragment here was refused: dropped and counted. With defrag off each
 * fragment is judged by the rules that need no ports (HOOK_ipN_fragments,
 * which ends in the default, as its own verdict). */
static void fragment_rules(struct ctx *c, enum policy_hook h, uint32_t chain)
{
	static const enum nfr_match_kind kinds[] = { NFR_M_FRAG4, NFR_M_FRAG6_MORE, NFR_M_FRAG6_OFF };
	uint32_t frag[2] = { 0, 0 };

	if (!c->p->opt.defrag) {
		for (int f = 0; f < 2; f++) {
			uint8_t fam = f ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;

			frag[f] = plain_chain(c, h, f ? "ip6_fragments" : "ip_fragments");
			family_rules(c, h, frag[f], fam, true);
			default_rule(c, h, frag[f]);
		}
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct nfr_rule r = { .chain = chain };
		bool v4 = kinds[i] == NFR_M_FRAG4;

		match_nfproto(&r, v4 ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6);
		m_add(&r, kinds[i]);
		if (!c->p->opt.defrag) {
			s_add(&r, NFR_S_JUMP, chain_name(c->t, frag[v4 ? 0 : 1]));
		} else {
			s_add(&r, NFR_S_COUNTER, NFT_COUNTER_UNREASSEMBLED);
			s_add(&r, NFR_S_DROP, NULL);
		}
		nfr_rule_add(c->t, &r, "fragments");
	}
}

/* Base chain HOOK: IPv4-mapped addresses, fragments, established, then a jump on the family into
 * HOOK_ip or HOOK_ip6 (each rule is looked at only by packets of a family
 * it can match), and the default, counted, last.
 *
 * Two jump rules, not a verdict map: a map is deleted with the rule that
 * holds it, and the kernel marks a deleted map's elements gone in the
 * next generation. A packet that entered the old rules just before a
 * reload's commit and looked the map up just after it found nothing, fell
 * through to the default, and was dropped (an allow-list) or let through
 * (a deny-list): about one packet in 100 reloads at 100,000 packets/s
 * (test_reload's flood). */
static void filter_hook(struct ctx *c, enum policy_hook h)
{
	const struct policy *p = c->p;
	struct nfr_chain ch = { .base = true,
				.hook = nf_hook_of(h),
				.prio = FILTER_PRIO,
				.policy_drop = p->hooks[h].def != POLICY_ACCEPT };
	uint32_t chain, fchain[2];

	snprintf(ch.name, sizeof(ch.name), "%s", policy_hook_name(h));
	chain = nfr_chain_add(c->t, &ch);
	mapped_rules(c->t, chain);
	fragment_rules(c, h, chain);
	if (p->opt.established_accept) {
		struct nfr_rule r = { .chain = chain };

		m_add(&r, NFR_M_CT_STATE)->value = CT_ESTABLISHED | CT_RELATED;
		s_add(&r, NFR_S_COUNTER, NFT_COUNTER_ESTABLISHED);
		s_add(&r, NFR_S_ACCEPT, NULL);
		nfr_rule_add(c->t, &r, "options.established: accept");
	}
	fchain[0] = plain_chain(c, h, "ip");
	fchain[1] = plain_chain(c, h, "ip6");
	family_rules(c, h, fchain[0], POLICY_FAM_IPV4, false);
	family_rules(c, h, fchain[1], POLICY_FAM_IPV6, false);
	for (int f = 0; f < 2; f++) {
		struct nfr_rule jr = { .chain = chain };

		match_nfproto(&jr, f ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4);
		s_add(&jr, NFR_S_JUMP, chain_name(c->t, fchain[f]));
		nfr_rule_add(c->t, &jr, "the family dispatch");
	}
	default_rule(c, h, chain);
}

static void filter(struct ctx *c)
{
	counter(c, NFT_COUNTER_ESTABLISHED);
	counter(c, NFT_COUNTER_UNREASSEMBLED);
	counter(c, NFT_COUNTER_MALFORMED);
	counter(c, NFT_COUNTER_REJECT_LIMITED);
	counter(c, NFT_COUNTER_LOG_WANTED);
	counter(c, NFT_COUNTER_LOGGED);
	nfr_limit_add(c->t, "x_log", c->p->opt.log_rate.n, c->p->opt.log_rate.per, c->p->opt.log_burst);
	nfr_limit_add(c->t, "x_reject", c->p->opt.reject_rate.n, c->p->opt.reject_rate.per, c->p->opt.reject_rate.n);
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		if (c->p->hooks[h].present)
			filter_hook(c, (enum policy_hook)h);
}

/* ---- early: true: dropped at ingress ---- */

/*
 * A rule with early: true is dropped in an ingress chain of each of its
 * input interfaces too (early_IFNAME, before defrag and conntrack), with
 * the rule's own counters: a frame to one of this host's addresses
 * (x_local_4/6, which the daemon fills, with multicast and the limited
 * broadcast) on the input row, any other on the forward row. An anonymous
 * counter in each rule says what ingress itself dropped (nft list).
 */
#define EARLY_PRIO (-500)

static void local_add(struct nfr_table *t, struct nfr_set *s, uint8_t fam, const uint8_t *addr, unsigned plen)
{
	struct prefix pf = { .family = fam, .plen = (uint8_t)plen };
	uint8_t lo[16], hi[16];

	memcpy(pf.addr, addr, fam == POLICY_FAM_IPV4 ? 4 : 16);
	nft_prefix_range(&pf, lo, hi);
	nfr_set_add(t, s, lo, hi);
}

struct locals {
	struct nfr_table *t;
	struct nfr_set *s[2];
};

static void add_local(uint8_t fam, const uint8_t *addr, void *arg)
{
	struct locals *l = arg;

	local_add(l->t, l->s[fam == POLICY_FAM_IPV6], fam, addr, fam == POLICY_FAM_IPV6 ? 128 : 32);
}

/* x_local_4 and x_local_6: multicast, the limited broadcast and, from a
 * running daemon (o->local), this host's addresses. */
static void local_sets(struct ctx *c)
{
	static const uint8_t mc4[4] = { 224 }, bc4[4] = { 255, 255, 255, 255 }, mc6[16] = { 0xff };
	struct locals l = { .t = c->t };

	if (nfr_set_find(c->t, "x_local_4"))
		return;
	l.s[0] = nfr_set_new(c->t, "x_local_4", NFR_KEY_IPV4, true);
	l.s[1] = nfr_set_new(c->t, "x_local_6", NFR_KEY_IPV6, true);
	if (!l.s[0] || !l.s[1])
		return;
	local_add(c->t, l.s[0], POLICY_FAM_IPV4, mc4, 4);
	local_add(c->t, l.s[0], POLICY_FAM_IPV4, bc4, 32);
	local_add(c->t, l.s[1], POLICY_FAM_IPV6, mc6, 8);
	if (c->o->local)
		c->o->local(add_local, &l, c->o->arg);
	nfr_set_normalize(l.s[0]);
	nfr_set_normalize(l.s[1]);
}

static uint32_t early_chain(struct ctx *c, const char *ifname)
{
	struct nfr_chain ch = { .base = true, .hook = NF_INET_INGRESS, .prio = EARLY_PRIO };

	snprintf(ch.name, sizeof(ch.name), "early_%s", ifname);
	snprintf(ch.device, sizeof(ch.device), "%s", ifname);
	return chain_once(c, &ch);
}

static void early_rule(struct ctx *c, const struct rule *ru, uint32_t chain, uint8_t fam)
{
	static const enum policy_hook hooks[2] = { POLICY_HOOK_INPUT, POLICY_HOOK_FORWARD };

	for (int k = 0; k < 2; k++) {
		struct emit e = { .c = c, .ru = ru, .h = hooks[k], .fam = fam };
		struct nfr_rule r = { .chain = chain, .loc = ru->loc };

		nft_rule_counter_name(e.counter, sizeof(e.counter), hooks[k], ru->name);
		snprintf(e.what, sizeof(e.what), "rule '%s' (early, ingress)", ru->name);
		match_nfproto(&r, fam);
		match_addrs(c, &r, &ru->from, 0, fam);
		if (k == 0) {
			struct nfr_match *m = m_add(&r, NFR_M_ADDR);

			m->dir = 1;
			m->family = fam;
			m->set = nfr_set_find(c->t, fam == POLICY_FAM_IPV4 ? "x_local_4" : "x_local_6");
		}
		if (ru->log)
			emit_log(&e, &r);
		s_add(&r, NFR_S_COUNTER, ""); /* what ingress dropped: nft list shows it */
		s_add(&r, NFR_S_COUNTER, e.counter);
		s_add(&r, NFR_S_DROP, NULL);
		nfr_rule_add(c->t, &r, e.what);
	}
}

static void early(struct ctx *c)
{
	for (uint32_t i = 0; i < c->p->nrules; i++) {
		const struct rule *ru = &c->p->rules[i];

		if (!ru->early)
			continue;
		local_sets(c);
		for (uint32_t j = 0; j < ru->in.n; j++) {
			uint32_t chain = early_chain(c, ru->in.ifnames[j]);

			for (uint8_t fam = POLICY_FAM_IPV4; fam <= POLICY_FAM_IPV6; fam <<= 1)
				if (applies(ru, fam))
					early_rule(c, ru, chain, fam);
		}
	}
}

/* ---- NAT ---- */

static uint32_t nat_chain(struct ctx *c, bool pre)
{
	struct nfr_chain ch = { .base = true,
				.nat = true,
				.hook = pre ? NF_INET_PRE_ROUTING : NF_INET_POST_ROUTING,
				.prio = pre ? DSTNAT_PRIO : SRCNAT_PRIO };
	const char *name = nf_hook_name(ch.hook);

	for (uint32_t i = 0; i < c->t->nchains; i++)
		if (!strcmp(c->t->chains[i].name, name))
			return i;
	snprintf(ch.name, sizeof(ch.name), "%s", name);
	return nfr_chain_add(c->t, &ch);
}

static void nat_what(const struct nat_rule *n, char *buf, size_t len)
{
	snprintf(buf, len, "nat %s (line %u)", policy_nat_kind_names[n->kind], n->loc.line);
}

/* A NAT entry's limits by source and by destination, for family fam. */
static void nat_limits(struct ctx *c, struct nfr_rule *r, const struct nat_rule *n, uint8_t fam)
{
	if (planted("nat-limits-ignored")) /* test_nat's positive control */
		return;
	match_addrs(c, r, &n->from, 0, fam);
	match_addrs(c, r, &n->dest, 1, fam);
}

/* Whether a source translation is a rule per family: all but a masquerade
 * (or no-nat) of both families with no limit. */
static bool per_family(const struct nat_rule *n)
{
	return n->families != POLICY_FAM_ANY || !n->from.any || !n->dest.any;
}

/* The source translation of family fam to lo..hi. */
static void snat_to(struct nfr_rule *r, uint8_t fam, const struct prefix *lo, const struct prefix *hi)
{
	struct nfr_stmt *s = s_add(r, NFR_S_SNAT, NULL);

	s->family = fam;
	memcpy(s->addr_lo, lo->addr, 16);
	memcpy(s->addr_hi, hi->addr, 16);
}

/*
 * ha: the node's own VRRP adverts leave untranslated, ahead of any source
 * NAT. A snat to a virtual address (or masquerade's, policy.h) would give
 * them the virtual address as source on both nodes; the peer's adverts,
 * received with that source, then hold the conntrack tuple this node's own
 * would take, and VRRP has no ports to make it unique: the kernel drops
 * them at confirmation, keepalived's sendmsg fails with EPERM, and the
 * master falls silent on that link (the peer takes it over: split brain).
 */
static void nat_source_vrrp(struct ctx *c, uint32_t chain)
{
	struct nfr_rule r = { .chain = chain, .loc = c->p->ha.loc };

	if (!c->p->ha.present || c->vrrp_untranslated)
		return;
	c->vrrp_untranslated = true;
	m_add(&r, NFR_M_L4PROTO)->value = HA_VRRP_PROTO;
	s_add(&r, NFR_S_ACCEPT, NULL);
	nfr_rule_add(c->t, &r, "ha: VRRP without source NAT");
}

/* One rule of a masquerade, snat or no-nat: out, the family (none: both)
 * and its limits, then the translation, or for a no-nat none (accept ends
 * the nat chain). */
static void nat_source_fam(struct ctx *c, const struct nat_rule *n, uint8_t fam)
{
	struct nfr_rule r = { .chain = nat_chain(c, false), .loc = n->loc };
	char what[64];

	nat_what(n, what, sizeof(what));
	match_ifaces(c, &r, &n->out, true, false, NULL);
	if (fam != POLICY_FAM_ANY) {
		match_nfproto(&r, fam);
		nat_limits(c, &r, n, fam);
	}
	if (n->kind == NAT_NO_NAT)
		s_add(&r, NFR_S_ACCEPT, NULL);
	else if (n->kind == NAT_MASQUERADE)
		s_add(&r, NFR_S_MASQ, NULL);
	else
		snat_to(&r, fam, &n->to_addr, &n->to_last);
	nfr_rule_add(c->t, &r, what);
}

static void nat_source_fams(struct ctx *c, const struct nat_rule *n)
{
	if (!per_family(n) || (n->kind == NAT_MASQUERADE && planted("nat-masq-family-ignored"))) {
		nat_source_fam(c, n, POLICY_FAM_ANY);
		return;
	}
	for (uint8_t fam = POLICY_FAM_IPV4; fam <= POLICY_FAM_IPV6; fam <<= 1)
		if (n->families & fam)
			nat_source_fam(c, n, fam);
}

static void nat_source(struct ctx *c, const struct nat_rule *n)
{
	uint32_t chain = nat_chain(c, false);
	char what[64];

	nat_source_vrrp(c, chain);
	nat_what(n, what, sizeof(what));
	for (uint32_t i = 0; i < n->nvips; i++) { /* ha: before the masquerade (policy.h) */
		struct nfr_rule v = { .chain = chain, .loc = n->loc };
		struct iface_match one = { .ifnames = &n->vips[i].ifname, .n = 1 };
		uint8_t fam = n->vips[i].addr.family;

		match_ifaces(c, &v, &one, true, false, NULL);
		match_nfproto(&v, fam);
		nat_limits(c, &v, n, fam);
		snat_to(&v, fam, &n->vips[i].addr, &n->vips[i].addr);
		nfr_rule_add(c->t, &v, what);
	}
	nat_source_fams(c, n);
}

/* A one-to-one (or nptv6) one way: out of its interface from the inside
 * to the outside (postrouting), or in on it from the outside to the inside
 * (prerouting). A prefix maps address by address, its host bits kept
 * (nftables' prefix NAT); one address maps to one. */
static void nat_binat(struct ctx *c, const struct nat_rule *n, bool pre)
{
	struct nfr_rule r = { .chain = nat_chain(c, pre), .loc = n->loc };
	const struct prefix *from = pre ? &n->to_addr : &n->inside, *to = pre ? &n->inside : &n->to_addr;
	struct nfr_match *m;
	struct nfr_stmt *s;
	char what[64];

	nat_what(n, what, sizeof(what));
	match_ifaces(c, &r, &n->out, !pre, false, NULL);
	match_nfproto(&r, n->families);
	m = m_add(&r, NFR_M_ADDR_EQ);
	m->dir = pre;
	m->family = n->families;
	m->value = from->plen;
	memcpy(m->addr, from->addr, 16);
	s = s_add(&r, pre ? NFR_S_DNAT : NFR_S_SNAT, NULL);
	s->family = n->families;
	nft_prefix_range(to, s->addr_lo, s->addr_hi);
	s->netmap = to->plen < (n->families == POLICY_FAM_IPV4 ? 32 : 128);
	nfr_rule_add(c->t, &r, what);
}

/* Whether the service's ports of protocol proto are the target's range
 * itself: the port is kept, no map needed. */
static bool ports_kept(const struct nat_rule *n, uint8_t proto)
{
	for (uint32_t i = 0; i < n->service.n; i++) {
		const struct port_range *pr = &n->service.v[i];

		if (pr->proto == proto && (pr->lo != n->to_port || pr->hi != n->to_port_last))
			return false;
	}
	return true;
}

/* A forward-port of ranges onto the range to_port..to_port_last: each port
 * of proto's ranges to its own, in a map (a rule per port would make the
 * first packet of a connection walk them all). */
static const struct nfr_set *port_map(struct ctx *c, const struct nat_rule *n, uint8_t proto, uint8_t fam)
{
	struct nfr_set *s = nfr_set_new(c->t, NULL, NFR_KEY_PORT, false);

	if (!s)
		return NULL;
	s->portmap = true;
	s->map_family = fam;
	memcpy(s->map_addr, n->to_addr.addr, 16);
	for (uint32_t i = 0; i < n->service.n; i++) {
		const struct port_range *pr = &n->service.v[i];

		for (uint32_t p = pr->lo; pr->proto == proto && p <= pr->hi && !c->t->err; p++) {
			uint8_t key[16];

			port_key(key, proto, (uint16_t)p, false);
			nfr_set_add(c->t, s, key, key);
			if (!c->t->err)
				s->v[s->n - 1].map_port =
					(uint16_t)(n->to_port + (planted("nat-portmap-flat") ? 0 : p - pr->lo));
		}
	}
	nfr_set_normalize(s);
	return s;
}

static void nat_dest_stmt(struct ctx *c, const struct nat_rule *n, struct nfr_rule *r, uint8_t fam, uint8_t proto)
{
	bool ranged = n->to_port_last != n->to_port;
	struct nfr_stmt *s;

	if (n->kind == NAT_REDIRECT) {
		s_add(r, NFR_S_REDIRECT, NULL)->port = n->to_port;
		return;
	}
	if (ranged && !ports_kept(n, proto)) {
		s = s_add(r, NFR_S_DNAT_MAP, NULL);
		s->family = fam;
		s->set = port_map(c, n, proto, fam);
		return;
	}
	s = s_add(r, NFR_S_DNAT, NULL);
	s->family = fam;
	memcpy(s->addr_lo, n->to_addr.addr, 16);
	memcpy(s->addr_hi, n->to_addr.addr, 16);
	s->port = ranged ? 0 : n->to_port;
}

/*
 * Hairpin (NAT reflection) serves an inside client that uses the outside
 * address of an inside server: only connections to an address of the
 * forward-port's own in: interfaces are translated, never those to the
 * appliance's other addresses (its LAN address, where it may serve SSH or
 * DNS itself). h_IN_4 and h_IN_6 hold those addresses: filled from
 * o->iface_addrs, and put in place again by the daemon whenever an
 * address comes or goes. One set per in: as written, shared by the
 * forward-ports that name it.
 */
struct hairpin_fill {
	struct nfr_table *t;
	struct nfr_set *s;
	const struct iface_match *in;
	uint8_t fam;
};

static void hairpin_add(const char *ifname, uint8_t fam, const uint8_t *addr, void *arg)
{
	struct hairpin_fill *h = arg;

	if (fam == h->fam && policy_iface_in(h->in, ifname))
		nfr_set_add(h->t, h->s, addr, addr);
}

static const struct nfr_set *hairpin_set(struct ctx *c, const struct nat_rule *n, uint8_t fam)
{
	struct hairpin_fill h = { .t = c->t, .in = &n->in, .fam = fam };
	char name[NFR_NAME];
	const struct nfr_set *found;
	char f = fam == POLICY_FAM_IPV4 ? '4' : '6';

	/* a group or an interface: by its name; a list or a negation: by
	 * the entry's line and column (no name starts with '-') */
	if (parse_valid_name(n->in.what))
		snprintf(name, sizeof(name), "h_%s_%c", n->in.what, f);
	else
		snprintf(name, sizeof(name), "h-%u.%u_%c", n->loc.line, n->loc.col, f);
	if ((found = nfr_set_find(c->t, name)))
		return found;
	if (!(h.s = nfr_set_new(c->t, name, fam == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6, false)))
		return NULL;
	snprintf(h.s->comment, sizeof(h.s->comment), "hairpin: the IPv%c addresses of in: %s (nfbox run keeps them)", f,
		 n->in.what);
	if (c->o->iface_addrs)
		c->o->iface_addrs(hairpin_add, &h, c->o->arg);
	nfr_set_normalize(h.s);
	return h.s;
}

static bool hairpins(const struct nat_rule *n)
{
	return n->kind == NAT_FORWARD_PORT && n->hairpin && !iface_none(&n->in) && !iface_none(&n->out) &&
	       (n->families == POLICY_FAM_IPV4 || n->families == POLICY_FAM_IPV6);
}

/* Hairpin to the addresses of in: (its set), not to a destination: named. */
static bool hairpins_by_set(const struct nat_rule *n)
{
	return hairpins(n) && n->dest.any;
}

uint32_t nft_hairpin_sets(const struct policy *p, const struct nft_build_opts *o, struct nfr_table *t)
{
	struct ctx c = { .p = p, .o = o, .t = t };
	uint32_t before = t->nsets;

	for (uint32_t i = 0; i < p->nnat; i++)
		if (hairpins_by_set(&p->nat[i]))
			hairpin_set(&c, &p->nat[i], p->nat[i].families);
	return t->nsets - before;
}

/* One protocol's ports of a forward-port or redirect: as it arrives on
 * `in`, and (hairpin) from anywhere else to an address of `in` (or to its
 * destination: where it names some). */
static void nat_dest_proto(struct ctx *c, const struct nat_rule *n, uint8_t fam, unsigned proto_bit, bool hairpin)
{
	struct nfr_rule r = { .chain = nat_chain(c, true), .loc = n->loc };
	char what[64];

	nat_what(n, what, sizeof(what));
	match_ifaces(c, &r, &n->in, false, hairpin, NULL);
	if (fam != POLICY_FAM_ANY) {
		match_nfproto(&r, fam);
		nat_limits(c, &r, n, fam);
	}
	if (hairpin && hairpins_by_set(n)) {
		struct nfr_match *m = m_add(&r, NFR_M_ADDR);

		m->dir = 1;
		m->family = fam;
		m->set = hairpin_set(c, n, fam);
	}
	match_ports(c, &r, &n->service, 1, proto_bit);
	nat_dest_stmt(c, n, &r, fam, port_protos[__builtin_ctz(proto_bit)]);
	nfr_rule_add(c->t, &r, what);
}

/* Hairpin: the server must answer through the appliance, so connections
 * that came in elsewhere than `in` and were sent to the target leave with
 * the appliance's address. */
static void hairpin_masq(struct ctx *c, const struct nat_rule *n, uint8_t proto)
{
	struct nfr_rule r = { .chain = nat_chain(c, false), .loc = n->loc };
	struct nfr_match *m;
	char what[64];

	nat_what(n, what, sizeof(what));
	match_ifaces(c, &r, &n->in, false, true, NULL);
	m_add(&r, NFR_M_CT_DNAT);
	match_nfproto(&r, n->families);
	m = m_add(&r, NFR_M_ADDR_EQ);
	m->family = n->families;
	m->dir = 1;
	m->value = n->families == POLICY_FAM_IPV4 ? 32 : 128;
	memcpy(m->addr, n->to_addr.addr, 16);
	m_add(&r, NFR_M_L4PROTO)->value = proto;
	s_add(&r, NFR_S_MASQ, NULL);
	nfr_rule_add(c->t, &r, what);
}

/* One rule per protocol: a DNAT to a port needs the protocol known. */
static void nat_dest(struct ctx *c, const struct nat_rule *n)
{
	/* A redirect is for either family; with 'from' it is per family. */
	uint8_t fams[2] = { n->families, 0 };

	if (n->kind == NAT_REDIRECT && !n->from.any) {
		fams[0] = POLICY_FAM_IPV4;
		fams[1] = POLICY_FAM_IPV6;
	}
	for (unsigned i = 0; i < sizeof(port_protos); i++) {
		if (!has_proto(&n->service, port_protos[i]))
			continue;
		for (int f = 0; f < 2 && fams[f]; f++) {
			if (!n->from.any && !(n->from.families & fams[f]))
				continue;
			nat_dest_proto(c, n, fams[f], 1u << i, false);
			if (hairpins(n)) {
				nat_dest_proto(c, n, fams[f], 1u << i, true);
				hairpin_masq(c, n, port_protos[i]);
			}
		}
	}
}

/* In the order the chains take them: a no-nat first (what it matches
 * leaves untranslated, wherever it stands in the policy); a one-to-one's
 * outbound half before masquerade and snat; forward-port and redirect
 * before a one-to-one's inbound half (a port is more precise than an
 * address). The rest in the policy's order. */
static void nat(struct ctx *c)
{
	for (int pass = 0; pass < 4; pass++)
		for (uint32_t i = 0; i < c->p->nnat; i++) {
			const struct nat_rule *n = &c->p->nat[i];
			bool binat = n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6;

			/* An empty interface group names no interface: nothing to
			 * translate (no condition would mean every interface). */
			if (iface_none(&n->in) || iface_none(&n->out))
				continue;
			if (pass == 0 && n->kind == NAT_NO_NAT && !planted("nat-no-nat-ignored"))
				nat_source_fams(c, n);
			else if (((pass == 1 && !planted("nat-binat-inbound-only")) ||
				  (pass == 3 && !planted("nat-binat-outbound-only"))) &&
				 binat)
				nat_binat(c, n, pass == 3);
			else if (pass == 2 && (n->kind == NAT_MASQUERADE || n->kind == NAT_SNAT))
				nat_source(c, n);
			else if (pass == 2 && (n->kind == NAT_FORWARD_PORT || n->kind == NAT_REDIRECT))
				nat_dest(c, n);
		}
}

/* ---- the table ---- */

static void conntrack_anchor(struct ctx *c)
{
	struct nfr_chain ch = { .name = "conntrack" };
	struct nfr_rule r = { .chain = nfr_chain_add(c->t, &ch) };

	m_add(&r, NFR_M_CT_STATE)->value = CT_ESTABLISHED | CT_RELATED;
	s_add(&r, NFR_S_ACCEPT, NULL);
	nfr_rule_add(c->t, &r, "the conntrack anchor");
}

int nft_build(const struct policy *p, const struct nft_build_opts *o, struct nfr_table *t, struct diags *d)
{
	struct ctx c = { .p = p, .o = o, .t = t };

	if (p->opt.defrag)
		conntrack_anchor(&c);
	nat(&c);
	if (o->filter) {
		filter(&c);
		early(&c);
		/* every dynamic set has its sets, used by a rule or not:
		 * `nfbox set` changes them all alike */
		for (uint32_t i = 0; i < p->nsets; i++)
			if (p->sets[i].dynamic) {
				dyn_set_for(&c, &p->sets[i], POLICY_FAM_IPV4);
				dyn_set_for(&c, &p->sets[i], POLICY_FAM_IPV6);
			}
	} else {
		synproxy_bpf(&c);
	}
	nfr_drop_unbound(t);
	if (t->err == -E2BIG) {
		diag_error(d, t->err_loc,
			   "%s needs more than %d matches or %d statements in one nftables rule" DIAG_FIX
			   "; split the rule",
			   t->err_what, NFR_MAX_MATCH, NFR_MAX_STMT);
		return t->err;
	}
	if (t->err)
		return diag_errno(d, t->err, "cannot build table inet %s", NFT_TABLE_NAME);
	return 0;
}
