/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Two policies compared in meaning, by name (diff.h). */
#include "base/sort.h"
#include "policy/diff/diff.h"
#include "policy/syntax/parse.h"

#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/json.h"

#define MAX_LISTED 8 /* elements named per line; the rest are counted */

struct out {
	FILE *f;	/* text: one line per change */
	struct json *j; /* or JSON: one object per change (diff.h) */
	unsigned long n;
};

/* A change as a reader takes it apart; the text line says the same. */
struct change {
	const char *kind;	     /* option, hook, group, set, service, rule, nat, capture, ha */
	const char *hook;	     /* rule: its hook */
	const char *name;	     /* what changed, by name; NULL: nameless (nat, ha) */
	const char *change;	     /* added, removed, moved, changed */
	const char *key;	     /* changed: which key of it */
	const char *old, *new;	     /* changed: the key's values, as written */
	const char *detail;	     /* added, removed: what it is; elements: +added, -removed */
	uint32_t position, from, of; /* rule added (position of), moved (from, position, of) */
	bool counted;		     /* a definition added: how many elements it has */
	uint64_t elements;
};

static void change_json(struct json *j, const struct change *c, const char *text)
{
	json_object_begin(j);
	json_kv_str(j, "kind", c->kind);
	json_kv_str(j, "hook", c->hook);
	json_kv_str(j, "name", c->name);
	json_kv_str(j, "change", c->change);
	json_kv_str(j, "key", c->key);
	json_kv_str(j, "old", c->old);
	json_kv_str(j, "new", c->new);
	json_kv_str(j, "detail", c->detail);
	if (c->position) {
		json_kv_u64(j, "position", c->position);
		json_kv_u64(j, "of", c->of);
	}
	if (c->from)
		json_kv_u64(j, "from", c->from);
	if (c->counted)
		json_kv_u64(j, "elements", c->elements);
	json_kv_str(j, "text", text);
	json_object_end(j);
}

__attribute__((format(printf, 3, 4))) static void say(struct out *o, const struct change *c, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (o->f)
		vfprintf(o->f, fmt, ap);
	else if ((n = vasprintf(&text, fmt, ap)) < 0)
		text = NULL;
	va_end(ap);
	if (o->f)
		fputc('\n', o->f);
	else
		change_json(o->j, c, text);
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

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
	sort_n(s->v, s->n, sizeof(*s->v), cmp_str);
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
		say(o, &(struct change){ kind, .name = name, .change = "changed", .key = "elements", .detail = d },
		    "%s %s: %s", kind, name, d);
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
	if (s)
		sort_n(s, n, sizeof(*s), cmp_named);
	return s;
}

static int64_t lookup(const struct named *s, uint32_t n, const char *name)
{
	struct named key = { name, 0 }, *hit = search_n(&key, s, n, sizeof(*s), cmp_named);

	return hit ? (int64_t)hit->pos : -1;
}

/* The names of an array of structs whose first member is their name, sorted
 * for lookup(): definitions found in log time, so 50,000 sets diff quickly. */
static struct named *names_of(const void *arr, uint32_t n, size_t size)
{
	struct named *s = calloc(n ? n : 1, sizeof(*s));

	for (uint32_t i = 0; s && i < n; i++)
		s[i] = (struct named){ *(const char *const *)((const char *)arr + (size_t)i * size), i };
	if (s)
		sort_n(s, n, sizeof(*s), cmp_named);
	return s;
}

static struct strs group_elems(const void *e)
{
	const struct iface_group *g = e;

	return iface_strs(g->ifnames, g->n);
}

static char *never_ban_str(const struct prefix *p)
{
	char a[64];

	policy_prefix_format(p, a, sizeof(a));
	return dupf("never-ban %s", a);
}

/* A dynamic set's never-ban prefixes, as elements of it ("never-ban 192.0.2.53"). */
static void never_ban_strs(struct strs *r, const struct addr_match *m)
{
	char **v = m->n ? realloc(r->v, (r->n + m->n + 1) * sizeof(*v)) : r->v;

	if (!v)
		return;
	r->v = v;
	for (uint32_t k = 0; k < m->n; k++)
		if ((r->v[r->n] = never_ban_str(&m->v[k])))
			r->n++;
	strs_sort(r);
}

/* A set's elements; a set the daemon fills has what defines it instead:
 * "country DE", "database PATH", "host NAME", "min-ttl 30s", ... */
static struct strs set_elems(const void *e)
{
	const struct addr_set *s = e;
	struct strs r;
	size_t k;

	if (s->feed == SET_FEED_NONE) {
		r = prefix_strs(s->v, s->n);
		never_ban_strs(&r, &s->never_ban);
		return r;
	}
	r = (struct strs){ calloc((size_t)s->ncountries + s->nhosts + s->never_ban.n + 4, sizeof(char *)), 0 };
	for (k = 0; r.v && k < s->ncountries; k++)
		r.v[r.n++] = dupf("country %s", s->countries[k]);
	for (k = 0; r.v && k < s->nhosts; k++)
		r.v[r.n++] = dupf("host %s", s->hosts[k]);
	if (r.v && s->feed == SET_FEED_COUNTRY) {
		r.v[r.n++] = dupf("database %s", s->database ? s->database : "?");
	} else if (r.v && s->feed == SET_FEED_EVE) {
		r.v[r.n++] = dupf("eve %s", s->eve ? s->eve : "?");
		r.v[r.n++] = dupf("severity %u", s->severity);
		r.v[r.n++] = dupf("timeout %us", s->ban);
	} else if (r.v) {
		r.v[r.n++] = dupf("min-ttl %us", s->min_ttl);
		r.v[r.n++] = dupf("max-ttl %us", s->max_ttl);
		r.v[r.n++] = dupf("grace %us", s->grace);
	}
	for (k = 0; r.v && k < s->never_ban.n; k++)
		r.v[r.n++] = never_ban_str(&s->never_ban.v[k]);
	for (k = 0; k < r.n && r.v; k++)
		if (!r.v[k]) { /* out of memory: the ones made are kept */
			memmove(&r.v[k], &r.v[k + 1], (r.n - k - 1) * sizeof(*r.v));
			r.n--;
			k--;
		}
	strs_sort(&r);
	return r;
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
	struct named *ia = names_of(a, na, size), *ib = names_of(b, nb, size);

	for (uint32_t i = 0; ia && ib && i < na; i++) {
		const char *name = *(const char *const *)((const char *)a + (size_t)i * size);

		if (lookup(ib, nb, name) < 0)
			say(o, &(struct change){ kind, .name = name, .change = "removed" }, "%s %s: removed", kind,
			    name);
	}
	for (uint32_t i = 0; ia && ib && i < nb; i++) {
		const void *e = (const char *)b + (size_t)i * size;
		const char *name = *(const char *const *)e;
		int64_t j = lookup(ia, na, name);

		if (j < 0) {
			struct strs now = elems(e);

			say(o,
			    &(struct change){ kind, .name = name, .change = "added", .counted = true,
					      .elements = now.n },
			    "%s %s: added (%zu)", kind, name, now.n);
			strs_free(&now);
		} else {
			say_delta(o, kind, name, elems((const char *)a + (size_t)j * size), elems(e));
		}
	}
	free(ia);
	free(ib);
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

/* "KIND NAME: OLD -> NEW" (KEY of NAME, for a reader); kind "option" and
 * "ha" have no key of their own: the name is it. */
static void say_changed(struct out *o, const char *kind, const char *name, const char *key, const char *old,
			const char *new)
{
	say(o, &(struct change){ kind, .name = name, .change = "changed", .key = key, .old = old, .new = new },
	    "%s %s: %s -> %s", kind, name, old, new);
}

/* A number that changed, as say_changed() says it. */
static void say_number(struct out *o, const char *kind, const char *name, unsigned x, unsigned y)
{
	char t1[16], t2[16];

	if (x == y)
		return;
	snprintf(t1, sizeof(t1), "%u", x);
	snprintf(t2, sizeof(t2), "%u", y);
	say_changed(o, kind, name, NULL, t1, t2);
}

static void diff_options(struct out *o, const struct policy *a, const struct policy *b)
{
	const struct policy_options *x = &a->opt, *y = &b->opt;
	char r1[32], r2[32];

	if (x->backend != y->backend)
		say_changed(o, "option", "backend", NULL, x->backend ? "nftables" : "bpf",
			    y->backend ? "nftables" : "bpf");
	if (x->defrag != y->defrag)
		say_changed(o, "option", "defrag", NULL, x->defrag ? "true" : "false", y->defrag ? "true" : "false");
	if (x->established_accept != y->established_accept)
		say_changed(o, "option", "established", NULL, x->established_accept ? "accept" : "rules",
			    y->established_accept ? "accept" : "rules");
	rate_text(&x->log_rate, r1, sizeof(r1));
	rate_text(&y->log_rate, r2, sizeof(r2));
	if (strcmp(r1, r2))
		say_changed(o, "option", "log-rate", NULL, r1, r2);
	say_number(o, "option", "log-burst", x->log_burst, y->log_burst);
	rate_text(&x->reject_rate, r1, sizeof(r1));
	rate_text(&y->reject_rate, r2, sizeof(r2));
	if (strcmp(r1, r2))
		say_changed(o, "option", "reject-rate", NULL, r1, r2);
	if (!policy_addrs_equal(&x->never_ban, &y->never_ban))
		say_changed(o, "option", "never-ban", NULL, x->never_ban.what ? x->never_ban.what : "(none)",
			    y->never_ban.what ? y->never_ban.what : "(none)");
	for (int h = 0; h < POLICY_HOOK_MAX; h++) {
		const struct hook_conf *p = &a->hooks[h], *q = &b->hooks[h];
		const char *n = policy_hook_name((enum policy_hook)h);

		if (p->present && !q->present)
			say(o, &(struct change){ "hook", .name = n, .change = "removed" }, "hook %s: removed", n);
		else if (!p->present && q->present)
			say(o,
			    &(struct change){ "hook", .name = n, .change = "added", .key = "default",
					      .new = policy_action_name(q->def) },
			    "hook %s: added, default %s", n, policy_action_name(q->def));
		else if (p->present && p->def != q->def)
			say(o,
			    &(struct change){ "hook", .name = n, .change = "changed", .key = "default",
					      .old = policy_action_name(p->def), .new = policy_action_name(q->def) },
			    "hook %s: default %s -> %s", n, policy_action_name(p->def), policy_action_name(q->def));
	}
}

/* ---- rules ------------------------------------------------------------------- */

/* Each key of a rule as text ("" for a key it does not have). */
enum rkey {
	K_IN,
	K_OUT,
	K_FROM,
	K_TO,
	K_PROTO,
	K_ICMP,
	K_SERVICE,
	K_SPORT,
	K_STATE,
	K_ACTION,
	K_LOG,
	K_LIMIT,
	K_WHEN,
	K_MAX
};
static const char *const rkey_names[K_MAX] = { "in",	"out",	     "from",	"to",
					       "proto", "icmp-type", "service", "source-service",
					       "state", "action",    "log",	"limit",
					       "when" };

/* Each key of a rule twice: as written (shown) and in its meaning (sets,
 * groups and services expanded, sorted; compared), "" where the rule does
 * not have it. Both malloc'd, any length. */
struct rkeys {
	char *written[K_MAX], *meant[K_MAX];
};

static char *joined(struct strs s, const char *neg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f) {
		fputs(neg, f);
		for (size_t i = 0; i < s.n; i++)
			fprintf(f, "%s%s", i ? "," : "", s.v[i]);
		fclose(f);
	}
	strs_free(&s);
	return buf;
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
	va_list ap;
	char *out;

	va_start(ap, fmt);
	if (vasprintf(&out, fmt, ap) < 0)
		out = NULL;
	va_end(ap);
	return out;
}

enum canon_kind {
	C_IFACE,
	C_ADDR,
	C_PORT
};

/* A key's meaning with names kept as names: the entries of `what` (a list
 * as written, "[a, b]", or one entry), each a defined name ("set:a"), or
 * inline values normalised (ports one by one, prefixes formatted), sorted.
 * So "a" and "[a]", or "tcp/80,443" and "[tcp/443, tcp/80]", mean the same,
 * and a set's elements are left to the set's own line. */
static char *canon(const struct policy *p, const char *what, enum canon_kind kind)
{
	struct strs e = { NULL, 0 };
	char *list, *save;
	size_t cap = 8;

	if (!what)
		return strdup("");
	list = strdup(what[0] == '[' ? what + 1 : what);
	e.v = calloc(cap, sizeof(char *));
	if (!list || !e.v) {
		free(list);
		free(e.v);
		return NULL;
	}
	if (what[0] == '[' && *list)
		list[strlen(list) - 1] = '\0';
	/* lx_describe() joins the entries with ", "; an entry has no ", " in it
	 * (a port list is "tcp/80,443") */
	for (char *t = list; t; t = save) {
		const char *name = t + strspn(t, " ");

		if ((save = strstr(t, ", ")))
			*save = '\0', save += 2;
		const char *bare = name + (name[0] == '!');
		char *one = NULL;

		if (e.n + 64 >= cap) { /* room for the ports of one inline list */
			char **v;

			while (e.n + 64 >= cap)
				cap *= 2;
			if (!(v = realloc(e.v, cap * sizeof(char *))))
				break;
			e.v = v;
		}
		if (kind == C_ADDR && find_named(p->sets, p->nsets, sizeof(*p->sets), bare))
			one = dupf("%.1sset:%s", name, bare);
		else if (kind == C_IFACE && find_named(p->groups, p->ngroups, sizeof(*p->groups), bare))
			one = dupf("%.1sgroup:%s", name, bare);
		else if (kind == C_PORT && find_named(p->services, p->nservices, sizeof(*p->services), bare))
			one = dupf("service:%s", bare);
		else if (kind == C_PORT && strchr(bare, '/')) {
			struct port_range v[64];
			size_t n = 0, bad;
			const char *why;

			if (parse_ports(bare, v, 64, &n, &bad, &why) == 0) {
				struct strs ps = port_strs(v, (uint32_t)n);

				for (size_t i = 0; i < ps.n; i++)
					e.v[e.n++] = ps.v[i];
				free(ps.v);
				continue;
			}
			one = strdup(bare);
		} else {
			struct prefix pf;
			bool host;
			const char *why;
			char buf[64];

			if (kind == C_ADDR && parse_prefix(bare, &pf, &host, &why) == 0 && !host) {
				policy_prefix_format(&pf, buf, sizeof(buf));
				one = dupf("%s%s", name[0] == '!' ? "!" : "", buf);
			} else {
				one = strdup(name);
			}
		}
		if (one)
			e.v[e.n++] = one;
	}
	free(list);
	strs_sort(&e);
	return joined(e, "");
}

static void rkeys_of(const struct policy *p, const struct rule *r, struct rkeys *k)
{
	const char *pn = r->proto >= 0 ? policy_proto_name(r->proto) : NULL;
	const struct iface_match *ifm[2] = { &r->in, &r->out };
	const struct addr_match *am[2] = { &r->from, &r->to };
	const struct port_match *pm[2] = { &r->service, &r->sport };
	char buf[1200] = "";

	for (int i = 0; i < 2; i++) {
		k->written[K_IN + i] = strdup(ifm[i]->any ? "" : ifm[i]->what ? ifm[i]->what : "?");
		k->meant[K_IN + i] = ifm[i]->any ? strdup("") : canon(p, ifm[i]->what, C_IFACE);
		k->written[K_FROM + i] = strdup(am[i]->any ? "" : am[i]->what ? am[i]->what : "?");
		k->meant[K_FROM + i] = am[i]->any ? strdup("") : canon(p, am[i]->what, C_ADDR);
		k->written[K_SERVICE + i] = strdup(pm[i]->any ? "" : pm[i]->what ? pm[i]->what : "?");
		k->meant[K_SERVICE + i] = pm[i]->any ? strdup("") : canon(p, pm[i]->what, C_PORT);
	}
	k->written[K_PROTO] = pn ? strdup(pn) : r->proto >= 0 ? dupf("%d", r->proto) : strdup("");
	for (uint16_t i = 0; i < r->nicmp; i++) {
		const char *tn = policy_icmp_type_name(r->icmp_types[i], r->proto == IPPROTO_ICMPV6);
		size_t len = strlen(buf);

		if (tn)
			snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "", tn);
		else
			snprintf(buf + len, sizeof(buf) - len, "%s%u", i ? "," : "", r->icmp_types[i]);
	}
	k->written[K_ICMP] = strdup(buf);
	buf[0] = '\0';
	for (int st = 0; r->state != POLICY_CT_ALL && st < POLICY_CT_STATES; st++) {
		size_t len = strlen(buf);

		if (r->state & (1u << st))
			snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? "," : "", policy_ct_names[st]);
	}
	k->written[K_STATE] = strdup(buf);
	k->written[K_ACTION] = r->action == POLICY_REJECT ? dupf("reject (%s)", policy_reject_names[r->reject_with])
							  : strdup(policy_action_name(r->action));
	k->written[K_LOG] = strdup(r->log ? "true" : "false");
	buf[0] = '\0';
	if (policy_has_limit(&r->limit))
		policy_limit_format(&r->limit, buf, sizeof(buf));
	k->written[K_LIMIT] = strdup(buf);
	buf[0] = '\0';
	if (r->when.n)
		policy_when_format(&r->when, buf, sizeof(buf));
	k->written[K_WHEN] = strdup(buf);
	for (int i = K_PROTO; i < K_MAX; i++)
		if (i != K_SERVICE && i != K_SPORT)
			k->meant[i] = k->written[i] ? strdup(k->written[i]) : NULL;
}

static void rkeys_free(struct rkeys *k)
{
	for (int i = 0; i < K_MAX; i++) {
		free(k->written[i]);
		free(k->meant[i]);
	}
}

static void rule_text(const struct policy *p, const struct rule *r, FILE *f)
{
	struct rkeys k;

	rkeys_of(p, r, &k);
	fputs(k.written[K_ACTION] ? k.written[K_ACTION] : "?", f);
	for (int i = 0; i < K_ACTION; i++)
		if (k.written[i] && k.written[i][0])
			fprintf(f, " %s %s", rkey_names[i], k.written[i]);
	if (r->log)
		fputs(" log", f);
	if (policy_has_limit(&r->limit))
		fprintf(f, " limit %s", k.written[K_LIMIT]);
	rkeys_free(&k);
}

/* The rules of hook h, in order. */
static const struct rule **hook_rules(const struct policy *p, int h, uint32_t *n)
{
	const struct rule **v = calloc(p->nrules ? p->nrules : 1, sizeof(*v));

	*n = 0;
	/* The rules ha: adds follow from its section, told by diff_ha. */
	for (uint32_t i = 0; v && i < p->nrules; i++)
		if (p->rules[i].hooks & (1u << h) && !p->rules[i].implicit)
			v[(*n)++] = &p->rules[i];
	return v;
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
	_cleanup_free_ const struct rule **va = hook_rules(a, h, &na);
	_cleanup_free_ const struct rule **vb = hook_rules(b, h, &nb);
	_cleanup_free_ struct named *sa = by_name(va, na);
	_cleanup_free_ struct named *sb = by_name(vb, nb);
	_cleanup_free_ uint32_t *common = calloc(na ? na : 1, sizeof(*common));
	_cleanup_free_ uint32_t *newpos = calloc(na ? na : 1, sizeof(*newpos));
	_cleanup_free_ bool *kept = NULL;

	if (!va || !vb || !sa || !sb || !common || !newpos)
		return;
	for (uint32_t i = 0; i < na; i++) {
		int64_t j = lookup(sb, nb, va[i]->name);

		if (j < 0) {
			say(o, &(struct change){ "rule", hn, va[i]->name, "removed", .key = NULL },
			    "rule %s %s: removed", hn, va[i]->name);
			continue;
		}
		common[nc] = i;
		newpos[nc++] = (uint32_t)j;
	}
	for (uint32_t j = 0; j < nb; j++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		if (lookup(sa, na, vb[j]->name) >= 0 || !(f = open_memstream(&text, &len)))
			continue;
		rule_text(b, vb[j], f);
		fclose(f);
		say(o,
		    &(struct change){ "rule", hn, vb[j]->name, "added", .detail = text ? text : "?", .position = j + 1,
				      .of = nb },
		    "rule %s %s: added as rule %u of %u: %s", hn, vb[j]->name, j + 1, nb, text ? text : "?");
		free(text);
	}
	kept = kept_order(newpos, nc);
	for (uint32_t c = 0; c < nc; c++) {
		const struct rule *x = va[common[c]], *y = vb[newpos[c]];
		struct rkeys kx, ky;

		if (kept && !kept[c])
			say(o,
			    &(struct change){ "rule", hn, x->name, "moved", .from = common[c] + 1,
					      .position = newpos[c] + 1, .of = nb },
			    "rule %s %s: moved from rule %u to rule %u of %u", hn, x->name, common[c] + 1,
			    newpos[c] + 1, nb);
		rkeys_of(a, x, &kx);
		rkeys_of(b, y, &ky);
		for (int k = 0; k < K_MAX; k++) {
			/* A change in meaning, said as written; other words for
			 * the same meaning are no change (canon()). */
			if (str_eq(kx.meant[k], ky.meant[k]))
				continue;
			/* a key left out: any packet for a match, no limit */
			const char *none = k == K_LIMIT ? "(none)" : "(any)";
			const char *was = kx.written[k] && kx.written[k][0] ? kx.written[k] : none;
			const char *is = ky.written[k] && ky.written[k][0] ? ky.written[k] : none;

			say(o,
			    &(struct change){ "rule", hn, x->name, "changed", rkey_names[k], was, is, .detail = NULL },
			    "rule %s %s: %s %s -> %s", hn, x->name, rkey_names[k], was, is);
		}
		rkeys_free(&kx);
		rkeys_free(&ky);
	}
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
	if (n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6)
		fprintf(f, " interface %s", n->out.what);
	else
		policy_print_sides(f, &n->in, &n->out, &n->from, NULL);
	if (!n->dest.any)
		fprintf(f, " destination %s", n->dest.what);
	if (n->kind == NAT_MASQUERADE) /* what it translates: ipv4 unless it says */
		fprintf(f, " family %s",
			n->families == POLICY_FAM_ANY ? "[ipv4, ipv6]"
						      : policy_family_name((enum policy_family)n->families));
	if (!n->service.any)
		fprintf(f, " service %s", n->service.what);
	if (n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6) {
		policy_prefix_format(&n->inside, a, sizeof(a));
		fprintf(f, " inside %s", a);
		policy_prefix_format(&n->to_addr, a, sizeof(a));
		fprintf(f, " outside %s", a);
	}
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
	if (n->to_port_last != n->to_port)
		fprintf(f, "-%u", n->to_port_last);
	/* hairpin: an inside client's connection to an address of `in`
	 * only (never to the appliance's other addresses), or to its
	 * destination */
	if (n->kind == NAT_FORWARD_PORT && n->hairpin && !n->dest.any)
		fprintf(f, " hairpin to %s", n->dest.what);
	else if (n->kind == NAT_FORWARD_PORT)
		fprintf(f, n->hairpin ? " hairpin to the addresses of %s" : " hairpin false", n->in.what);
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
			say(o, &(struct change){ "nat", .change = "removed", .detail = x.v[i] ? x.v[i] : "?" },
			    "nat removed: %s", x.v[i] ? x.v[i] : "?");
	}
	for (size_t j = 0; used && j < y.n; j++)
		if (!used[j])
			say(o, &(struct change){ "nat", .change = "added", .detail = y.v[j] ? y.v[j] : "?" },
			    "nat added: %s", y.v[j] ? y.v[j] : "?");
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
			say(o, &(struct change){ "capture", .name = a->captures[i].name, .change = "removed" },
			    "capture %s: removed", a->captures[i].name);
	for (uint32_t i = 0; i < b->ncaptures; i++) {
		const struct capture_conf *c = &b->captures[i], *old;

		if (!c->name)
			continue;
		old = FIND(a->captures, a->ncaptures, c->name);
		capture_text(c, t2, sizeof(t2));
		if (!old) {
			say(o, &(struct change){ "capture", .name = c->name, .change = "added", .detail = t2 },
			    "capture %s: added: %s", c->name, t2);
			continue;
		}
		capture_text(old, t1, sizeof(t1));
		if (strcmp(t1, t2) || !str_eq(old->match.from.what, c->match.from.what) ||
		    !str_eq(old->match.to.what, c->match.to.what) ||
		    !str_eq(old->match.service.what, c->match.service.what) || old->match.min_len != c->match.min_len ||
		    old->match.max_len != c->match.max_len || old->match.non_ip != c->match.non_ip)
			say(o,
			    &(struct change){ "capture", .name = c->name, .change = "changed", .old = t1, .new = t2 },
			    "capture %s: changed: %s -> %s", c->name, t1, t2);
	}
}

/* ---- ha ------------------------------------------------------------------------ */

static void sync_text(const struct ha_conf *h, char *buf, size_t len)
{
	char peer[140], addr[64] = "";

	policy_ha_peers_format(h, peer, sizeof(peer));
	if (h->sync_addr.family)
		policy_prefix_format(&h->sync_addr, addr, sizeof(addr));
	snprintf(buf, len, "%s, peer %s%s%s", h->sync_ifname, peer, addr[0] ? ", address " : "", addr);
}

static void virtual_text(const struct ha_virtual *v, char *buf, size_t len)
{
	char addr[64];

	policy_prefix_format(&v->addr, addr, sizeof(addr));
	snprintf(buf, len, "%s on %s", addr, v->ifname);
}

static const struct ha_virtual *find_virtual(const struct ha_conf *h, const struct ha_virtual *v)
{
	for (uint32_t i = 0; i < h->nvirt; i++)
		if (h->virt[i].id == v->id && h->virt[i].addr.family == v->addr.family)
			return &h->virt[i];
	return NULL;
}

/* "1s", "100ms": as the policy would write it. */
static const char *ms_text(uint32_t ms, char *buf, size_t len)
{
	snprintf(buf, len, ms % 1000 ? "%ums" : "%us", ms % 1000 ? ms : ms / 1000);
	return buf;
}

static void diff_ha(struct out *o, const struct policy *a, const struct policy *b)
{
	const struct ha_conf *x = &a->ha, *y = &b->ha;
	char t1[384], t2[256];

	if (!x->present && !y->present)
		return;
	if (!y->present) {
		say(o, &(struct change){ "ha", .change = "removed" },
		    "ha: removed (keepalived and conntrackd stop; the addresses go to the peer)");
		return;
	}
	if (!x->present) {
		sync_text(y, t2, sizeof(t2));
		snprintf(t1, sizeof(t1), "priority %u, sync %s, %u virtual address%s", y->priority, t2, y->nvirt,
			 y->nvirt == 1 ? "" : "es");
		say(o, &(struct change){ "ha", .change = "added", .detail = t1 }, "ha: added: %s", t1);
		return;
	}
	say_number(o, "ha", "priority", x->priority, y->priority);
	say_number(o, "ha", "preempt-delay", x->preempt_delay, y->preempt_delay);
	if (x->advert_ms != y->advert_ms)
		say_changed(o, "ha", "advert", NULL, ms_text(x->advert_ms, t1, sizeof(t1)),
			    ms_text(y->advert_ms, t2, sizeof(t2)));
	sync_text(x, t1, sizeof(t1));
	sync_text(y, t2, sizeof(t2));
	if (strcmp(t1, t2))
		say_changed(o, "ha", "sync", NULL, t1, t2);
	for (uint32_t i = 0; i < x->nvirt; i++)
		if (!find_virtual(y, &x->virt[i])) {
			virtual_text(&x->virt[i], t1, sizeof(t1));
			say(o, &(struct change){ "ha", .key = "virtual", .change = "removed", .old = t1 },
			    "ha virtual id %u: removed (%s)", x->virt[i].id, t1);
		}
	for (uint32_t i = 0; i < y->nvirt; i++) {
		const struct ha_virtual *old = find_virtual(x, &y->virt[i]);

		virtual_text(&y->virt[i], t2, sizeof(t2));
		if (!old) {
			say(o, &(struct change){ "ha", .key = "virtual", .change = "added", .new = t2 },
			    "ha virtual id %u: added (%s)", y->virt[i].id, t2);
			continue;
		}
		virtual_text(old, t1, sizeof(t1));
		if (strcmp(t1, t2))
			say(o, &(struct change){ "ha", .key = "virtual", .change = "changed", .old = t1, .new = t2 },
			    "ha virtual id %u: %s -> %s", y->virt[i].id, t1, t2);
	}
}

static unsigned long diff_all(struct out *o, const struct policy *a, const struct policy *b)
{
	diff_options(o, a, b);
	diff_defs(o, a, b);
	for (int h = 0; h < POLICY_HOOK_MAX; h++)
		diff_hook_rules(o, a, b, h);
	diff_nat(o, a, b);
	diff_captures(o, a, b);
	diff_ha(o, a, b);
	return o->n;
}

unsigned long policy_diff(const struct policy *a, const struct policy *b, FILE *f)
{
	return diff_all(&(struct out){ .f = f }, a, b);
}

unsigned long policy_diff_json(const struct policy *a, const struct policy *b, struct json *j)
{
	return diff_all(&(struct out){ .j = j }, a, b);
}

unsigned long policy_diff_doc(const struct policy *a, const struct policy *b, const struct diags *d,
			      void (*warnings)(struct json *j, void *arg), void *arg, FILE *f)
{
	struct json j;
	unsigned long n = 0;

	json_init(&j, f);
	json_object_begin(&j);
	json_kv_bool(&j, "valid", a && b);
	json_key(&j, "changes");
	json_array_begin(&j);
	if (a && b)
		n = policy_diff_json(a, b, &j);
	json_array_end(&j);
	json_key(&j, "warnings");
	json_array_begin(&j);
	if (a && b && warnings)
		warnings(&j, arg);
	json_array_end(&j);
	json_key(&j, "diagnostics");
	diags_json(d, &j);
	json_object_end(&j);
	fputc('\n', f);
	return n;
}
