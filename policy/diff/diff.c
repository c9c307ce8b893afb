/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Two policies compared in meaning, by name (diff.h). */
#include "policy/diff/diff.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LISTED 8 /* elements named per line; the rest are counted */

struct out {
	FILE *f;
	unsigned long n;
};

__attribute__((format(printf, 2, 3))) static void say(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
	fputc('\n', o->f);
	o->n++;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* ---- element lists (sets, groups, services) ------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, distinct copies of n strings made by fmt(i). */
struct strs {
	char **v;
	size_t n;
};

static void strs_free(struct strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static void strs_sort(struct strs *s)
{
	size_t k = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_str);
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[i], s->v[k]))
			s->v[++k] = s->v[i];
		else
			free(s->v[i]);
	}
	s->n = k + 1;
}

static struct strs prefix_strs(const struct prefix *v, uint32_t n)
{
	struct strs s = { calloc(n ? n : 1, sizeof(char *)), 0 };

	for (uint32_t i = 0; s.v && i < n; i++) {
		char buf[64];

		policy_prefix_format(&v[i], buf, sizeof(buf));
		if ((s.v[s.n] = strdup(buf)))
			s.n++;
	}
	strs_sort(&s);
	return s;
}

static struct strs iface_strs(char (*v)[POLICY_IFNAMSIZ], uint32_t n)
{
	struct strs s = { calloc(n ? n : 1, sizeof(char *)), 0 };

	for (uint32_t i = 0; s.v && i < n; i++)
		if ((s.v[s.n] = strdup(v[i])))
			s.n++;
	strs_sort(&s);
	return s;
}

static struct strs port_strs(const struct port_range *v, uint32_t n)
{
	struct strs s = { calloc(n ? n : 1, sizeof(char *)), 0 };

	for (uint32_t i = 0; s.v && i < n; i++) {
		const char *pn = policy_proto_name(v[i].proto);
		char buf[48];

		if (v[i].lo == v[i].hi)
			snprintf(buf, sizeof(buf), "%s/%u", pn ? pn : "?", v[i].lo);
		else
			snprintf(buf, sizeof(buf), "%s/%u-%u", pn ? pn : "?", v[i].lo, v[i].hi);
		if ((s.v[s.n] = strdup(buf)))
			s.n++;
	}
	strs_sort(&s);
	return s;
}

/* "+a, +b, -c" of two sorted lists, at most MAX_LISTED named; "" if equal. */
static char *strs_delta(const struct strs *a, const struct strs *b)
{
	size_t i = 0, j = 0, named = 0, more = 0, len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	while (i < a->n || j < b->n) {
		int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->v[i], b->v[j]);
		const char *what = c < 0 ? a->v[i] : b->v[j];

		if (c == 0) {
			i++;
			j++;
			continue;
		}
		if (named < MAX_LISTED)
			fprintf(f, "%s%c%s", named ? ", " : "", c < 0 ? '-' : '+', what);
		else
			more++;
		named++;
		if (c < 0)
			i++;
		else
			j++;
	}
	if (more)
		fprintf(f, " and %zu more", more);
	fclose(f);
	return buf;
}

static void say_delta(struct out *o, const char *kind, const char *name, struct strs a, struct strs b)
{
	char *d = strs_delta(&a, &b);

	if (d && *d)
		say(o, "%s %s: %s", kind, name, d);
	free(d);
	strs_free(&a);
	strs_free(&b);
}

/* ---- definitions ------------------------------------------------------------ */

/* The element named nm of an array of structs whose first member is their
 * name (groups, sets, services, captures), or NULL. */
static const void *find_named(const void *arr, uint32_t n, size_t size, const char *nm)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *const *name = (const void *)((const char *)arr + (size_t)i * size);

		if (*name && !strcmp(*name, nm))
			return name;
	}
	return NULL;
}
#define FIND(arr, n, nm) ((const __typeof__((arr)[0]) *)find_named((arr), (n), sizeof((arr)[0]), (nm)))

static struct strs group_elems(const void *e)
{
	const struct iface_group *g = e;

	return iface_strs(g->ifnames, g->n);
}

static struct strs set_elems(const void *e)
{
	const struct addr_set *s = e;

	return prefix_strs(s->v, s->n);
}

static struct strs service_elems(const void *e)
{
	const struct service *s = e;

	return port_strs(s->v, s->n);
}

/* Definitions of one kind by name (arrays of structs whose first member is
 * the name): removed, added, or their elements' delta. */
static void diff_named(struct out *o, const char *kind, const void *a, uint32_t na, const void *b, uint32_t nb,
		       size_t size, struct strs (*elems)(const void *))
{
	for (uint32_t i = 0; i < na; i++) {
		const char *const *name = (const void *)((const char *)a + (size_t)i * size);

		if (!find_named(b, nb, size, *name))
			say(o, "%s %s: removed", kind, *name);
	}
	for (uint32_t i = 0; i < nb; i++) {
		const void *e = (const char *)b + (size_t)i * size;
		const char *name = *(const char *const *)e;
		const void *old = find_named(a, na, size, name);

		if (!old) {
			struct strs now = elems(e);

			say(o, "%s %s: added (%zu)", kind, name, now.n);
			strs_free(&now);
		} else {
			say_delta(o, kind, name, elems(old), elems(e));
		}
	}
}

static void diff_defs(struct out *o, const struct policy *a, const struct policy *b)
{
	diff_named(o, "group", a->groups, a->ngroups, b->groups, b->ngroups, sizeof(*a->groups), group_elems);
	diff_named(o, "set", a->sets, a->nsets, b->sets, b->nsets, sizeof(*a->sets), set_elems);
	diff_named(o, "service", a->services, a->nservices, b->services, b->nservices, sizeof(*a->services),
		   service_elems);
}

static void rate_text(const struct policy_rate *r, char *buf, size_t len)
{
	snprintf(buf, len, "%u/%s", r->n, policy_rate_unit(r->per));
}

static void diff_options(struct out *o, const struct policy *a, const struct policy *b)
{
	const struct policy_options *x = &a->opt, *y = &b->opt;
	char r1[32], r2[32];

	if (x->backend != y->backend)
		say(o, "option backend: %s -> %s", x->backend ? "nftables" : "bpf", y->backend ? "nftables" : "bpf");
	if (x->defrag != y->defrag)
		say(o, "option defrag: %s -> %s", x->defrag ? "true" : "false", y->defrag ? "true" : "false");
	if (x->established_accept != y->established_accept)
		say(o, "option established: %s -> %s", x->established_accept ? "accept" : "rules",
		    y->established_accept ? "accept" : "rules");
	rate_text(&x->log_rate, r1, sizeof(r1));
	rate_text(&y->log_rate, r2, sizeof(r2));
	if (strcmp(r1, r2))
		say(o, "option log-rate: %s -> %s", r1, r2);
	if (x->log_burst != y->log_burst)
		say(o, "option log-burst: %u -> %u", x->log_burst, y->log_burst);
	rate_text(&x->reject_rate, r1, sizeof(r1));
	rate_text(&y->reject_rate, r2, sizeof(r2));
	if (strcmp(r1, r2))
		say(o, "option reject-rate: %s -> %s", r1, r2);
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		const struct hook_conf *p = &a->hooks[h], *q = &b->hooks[h];
		const char *n = policy_hook_name((enum policy_hook)h);

		if (p->present && !q->present)
			say(o, "hook %s: removed", n);
		else if (!p->present && q->present)
			say(o, "hook %s: added, default %s", n, policy_action_name(q->def));
		else if (p->present && p->def != q->def)
			say(o, "hook %s: default %s -> %s", n, policy_action_name(p->def), policy_action_name(q->def));
	}
}

/* ---- rules ------------------------------------------------------------------- */

static const char *const state_names[] = { "new", "established", "related", "invalid", "untracked" };

/* Each key of a rule as text ("" for a key it does not have). */
enum rkey { K_IN, K_OUT, K_FROM, K_TO, K_PROTO, K_ICMP, K_SERVICE, K_SPORT, K_STATE, K_ACTION, K_LOG, K_MAX };
static const char *const rkey_names[K_MAX] = { "in", "out", "from", "to", "proto", "icmp-type", "service",
					       "source-service", "state", "action", "log" };

static void rule_keys(const struct rule *r, char keys[K_MAX][160])
{
	const char *pn = r->proto >= 0 ? policy_proto_name(r->proto) : NULL;
	size_t len;

	memset(keys, 0, sizeof(char[K_MAX][160]));
	if (!r->in.any)
		snprintf(keys[K_IN], 160, "%s", r->in.what ? r->in.what : "?");
	if (!r->out.any)
		snprintf(keys[K_OUT], 160, "%s", r->out.what ? r->out.what : "?");
	if (!r->from.any)
		snprintf(keys[K_FROM], 160, "%s", r->from.what ? r->from.what : "?");
	if (!r->to.any)
		snprintf(keys[K_TO], 160, "%s", r->to.what ? r->to.what : "?");
	if (pn)
		snprintf(keys[K_PROTO], 160, "%s", pn);
	else if (r->proto >= 0)
		snprintf(keys[K_PROTO], 160, "%d", r->proto);
	for (uint16_t i = 0; i < r->nicmp; i++) {
		len = strlen(keys[K_ICMP]);
		snprintf(keys[K_ICMP] + len, 160 - len, "%s%u", i ? "," : "", r->icmp_types[i]);
	}
	if (!r->service.any)
		snprintf(keys[K_SERVICE], 160, "%s", r->service.what ? r->service.what : "?");
	if (!r->sport.any)
		snprintf(keys[K_SPORT], 160, "%s", r->sport.what ? r->sport.what : "?");
	for (int s = 0; r->state != POLICY_CT_ALL && s < 5; s++) {
		len = strlen(keys[K_STATE]);
		if (r->state & (1u << s))
			snprintf(keys[K_STATE] + len, 160 - len, "%s%s", len ? "," : "", state_names[s]);
	}
	if (r->action == POLICY_REJECT)
		snprintf(keys[K_ACTION], 160, "reject (%s)", policy_reject_names[r->reject_with]);
	else
		snprintf(keys[K_ACTION], 160, "%s", policy_action_name(r->action));
	snprintf(keys[K_LOG], 160, "%s", r->log ? "true" : "false");
}

static void rule_text(const struct rule *r, char *buf, size_t len)
{
	char keys[K_MAX][160];
	size_t used;

	rule_keys(r, keys);
	used = (size_t)snprintf(buf, len, "%s", keys[K_ACTION]);
	for (int k = 0; k < K_ACTION && used < len; k++)
		if (keys[k][0])
			used += (size_t)snprintf(buf + used, len - used, " %s %s", rkey_names[k], keys[k]);
	if (r->log && used < len)
		snprintf(buf + used, len - used, " log");
}

/* The rules of hook h, in order. */
static const struct rule **hook_rules(const struct policy *p, int h, uint32_t *n)
{
	const struct rule **v = calloc(p->nrules ? p->nrules : 1, sizeof(*v));

	*n = 0;
	for (uint32_t i = 0; v && i < p->nrules; i++)
		if (p->rules[i].hooks & (1u << h))
			v[(*n)++] = &p->rules[i];
	return v;
}

struct named {
	const char *name;
	uint32_t pos;
};

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

static struct named *by_name(const struct rule **v, uint32_t n)
{
	struct named *s = calloc(n ? n : 1, sizeof(*s));

	for (uint32_t i = 0; s && i < n; i++)
		s[i] = (struct named){ v[i]->name, i };
	if (s && n)
		qsort(s, n, sizeof(*s), cmp_named);
	return s;
}

static int64_t lookup(const struct named *s, uint32_t n, const char *name)
{
	struct named key = { name, 0 }, *hit = n ? bsearch(&key, s, n, sizeof(*s), cmp_named) : NULL;

	return hit ? (int64_t)hit->pos : -1;
}

/* Which of the common rules keep their order: a longest increasing run of
 * their new positions taken in old order (O(n log n)); the others moved. */
static bool *kept_order(const uint32_t *newpos, uint32_t n)
{
	uint32_t *tail = calloc(n + 1, sizeof(*tail)), *prev = calloc(n + 1, sizeof(*prev)), len = 0;
	bool *kept = calloc(n + 1, sizeof(*kept));

	if (!tail || !prev || !kept) {
		free(tail);
		free(prev);
		free(kept);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t lo = 0, hi = len;

		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;

			if (newpos[tail[mid]] < newpos[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[i] = lo ? tail[lo - 1] : UINT32_MAX;
		tail[lo] = i;
		if (lo == len)
			len++;
	}
	for (uint32_t i = len ? tail[len - 1] : UINT32_MAX; i != UINT32_MAX; i = prev[i])
		kept[i] = true;
	free(tail);
	free(prev);
	return kept;
}

static void diff_hook_rules(struct out *o, const struct policy *a, const struct policy *b, int h)
{
	const char *hn = policy_hook_name((enum policy_hook)h);
	uint32_t na, nb, nc = 0;
	const struct rule **va = hook_rules(a, h, &na), **vb = hook_rules(b, h, &nb);
	struct named *sa = by_name(va, na), *sb = by_name(vb, nb);
	uint32_t *common = calloc(na ? na : 1, sizeof(*common)), *newpos = calloc(na ? na : 1, sizeof(*newpos));
	char text[512];
	bool *kept = NULL;

	if (!va || !vb || !sa || !sb || !common || !newpos)
		goto out;
	for (uint32_t i = 0; i < na; i++) {
		int64_t j = lookup(sb, nb, va[i]->name);

		if (j < 0) {
			say(o, "rule %s %s: removed", hn, va[i]->name);
			continue;
		}
		common[nc] = i;
		newpos[nc++] = (uint32_t)j;
	}
	for (uint32_t j = 0; j < nb; j++) {
		if (lookup(sa, na, vb[j]->name) >= 0)
			continue;
		rule_text(vb[j], text, sizeof(text));
		say(o, "rule %s %s: added as rule %u of %u: %s", hn, vb[j]->name, j + 1, nb, text);
	}
	kept = kept_order(newpos, nc);
	for (uint32_t c = 0; c < nc; c++) {
		const struct rule *x = va[common[c]], *y = vb[newpos[c]];
		char kx[K_MAX][160], ky[K_MAX][160];

		if (kept && !kept[c])
			say(o, "rule %s %s: moved from rule %u to rule %u of %u", hn, x->name, common[c] + 1,
			    newpos[c] + 1, nb);
		rule_keys(x, kx);
		rule_keys(y, ky);
		for (int k = 0; k < K_MAX; k++) {
			if (str_eq(kx[k], ky[k]))
				continue;
			say(o, "rule %s %s: %s %s -> %s", hn, x->name, rkey_names[k], kx[k][0] ? kx[k] : "(any)",
			    ky[k][0] ? ky[k] : "(any)");
		}
	}
out:
	free(kept);
	free(common);
	free(newpos);
	free(sa);
	free(sb);
	free(va);
	free(vb);
}

/* ---- NAT and captures ---------------------------------------------------------- */

static char *nat_text(const struct nat_rule *n)
{
	char *buf = NULL, a[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "%s", policy_nat_kind_names[n->kind]);
	policy_print_sides(f, &n->in, &n->out, &n->from, NULL);
	if (!n->service.any)
		fprintf(f, " service %s", n->service.what);
	if (n->kind == NAT_SNAT || n->kind == NAT_FORWARD_PORT) {
		policy_prefix_format(&n->to_addr, a, sizeof(a));
		fprintf(f, " to %s", a);
	}
	if (n->kind == NAT_SNAT && memcmp(n->to_addr.addr, n->to_last.addr, 16)) {
		policy_prefix_format(&n->to_last, a, sizeof(a));
		fprintf(f, "-%s", a);
	}
	if (n->to_port)
		fprintf(f, "%s%u", n->kind == NAT_REDIRECT ? " to " : ":", n->to_port);
	if (n->kind == NAT_FORWARD_PORT && !n->hairpin)
		fprintf(f, " hairpin false");
	fclose(f);
	return buf;
}

/* NAT entries have no names: compared as texts, each matched once. */
static void diff_nat(struct out *o, const struct policy *a, const struct policy *b)
{
	struct strs x = { calloc(a->nnat + 1, sizeof(char *)), 0 }, y = { calloc(b->nnat + 1, sizeof(char *)), 0 };
	bool *used = calloc(b->nnat + 1, sizeof(*used));

	for (uint32_t i = 0; x.v && i < a->nnat; i++)
		x.v[x.n++] = nat_text(&a->nat[i]);
	for (uint32_t i = 0; y.v && i < b->nnat; i++)
		y.v[y.n++] = nat_text(&b->nat[i]);
	for (size_t i = 0; used && i < x.n; i++) {
		bool found = false;

		for (size_t j = 0; j < y.n && !found; j++)
			if (!used[j] && str_eq(x.v[i], y.v[j]))
				found = used[j] = true;
		if (!found)
			say(o, "nat removed: %s", x.v[i] ? x.v[i] : "?");
	}
	for (size_t j = 0; used && j < y.n; j++)
		if (!used[j])
			say(o, "nat added: %s", y.v[j] ? y.v[j] : "?");
	free(used);
	strs_free(&x);
	strs_free(&y);
}

static void capture_text(const struct capture_conf *c, char *buf, size_t len)
{
	snprintf(buf, len, "interface %s%s%s file %s snaplen %u rotate %llu/%u proto %d", c->ifname,
		 c->mirror_from[0] ? " mirror-from " : "", c->mirror_from, c->file ? c->file : "?", c->snaplen,
		 (unsigned long long)c->rotate_size, c->rotate_keep, c->match.proto);
}

static void diff_captures(struct out *o, const struct policy *a, const struct policy *b)
{
	char t1[512], t2[512];

	for (uint32_t i = 0; i < a->ncaptures; i++)
		if (a->captures[i].name && !FIND(b->captures, b->ncaptures, a->captures[i].name))
			say(o, "capture %s: removed", a->captures[i].name);
	for (uint32_t i = 0; i < b->ncaptures; i++) {
		const struct capture_conf *c = &b->captures[i], *old;

		if (!c->name)
			continue;
		old = FIND(a->captures, a->ncaptures, c->name);
		capture_text(c, t2, sizeof(t2));
		if (!old) {
			say(o, "capture %s: added: %s", c->name, t2);
			continue;
		}
		capture_text(old, t1, sizeof(t1));
		if (strcmp(t1, t2) || !str_eq(old->match.from.what, c->match.from.what) ||
		    !str_eq(old->match.to.what, c->match.to.what) || !str_eq(old->match.service.what, c->match.service.what) ||
		    old->match.min_len != c->match.min_len || old->match.max_len != c->match.max_len)
			say(o, "capture %s: changed: %s -> %s", c->name, t1, t2);
	}
}

unsigned long policy_diff(const struct policy *a, const struct policy *b, FILE *f)
{
	struct out o = { f, 0 };

	diff_options(&o, a, b);
	diff_defs(&o, a, b);
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		diff_hook_rules(&o, a, b, h);
	diff_nat(&o, a, b);
	diff_captures(&o, a, b);
	return o.n;
}
