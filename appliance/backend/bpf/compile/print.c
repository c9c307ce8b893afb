/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox plan`: the compiled plan as stable text or JSON. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bpf/compile/plan.h"
#include "base/json.h"

static const char *const field_names[NFB_F_MAX] = { "in", "out", "src", "dst", "l4", "sport", "ct" };
_Static_assert(NFB_CT_MAX == POLICY_CT_STATES, "the classifier's states are the policy's");
static const char *const pclass_names[NFB_PC_MAX] = { "tcp", "udp", "sctp", "udplite" };
static const char *const mclass_names[NFB_MC_MAX] = { "icmp", "icmpv6", "proto", "fragment" };

/*
 * A vector is printed as its own rules, the ones its key selects; the rules
 * that do not restrict the field (its wildcards) belong to every entry and
 * are printed once per table. So the output grows with the policy: a
 * wildcard rule is not repeated in every entry of every table.
 */

/* Rules by name, in rule order: "{ssh, ping}". Names, not bit numbers, so
 * that inserting a rule changes the lines it is in, not every line after. */
static void print_bits(const struct plan_hook *h, const uint32_t *v, uint32_t n, FILE *f)
{
	fputc('{', f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", h->rules[v[i]]->name);
	fputc('}', f);
}

/* The own rules of vector v (NULL when it has none: h->bits may be NULL). */
static const uint32_t *vec_bits(const struct plan_hook *h, uint32_t v)
{
	return h->vecs[v].n ? h->bits + h->vecs[v].off : NULL;
}

static void print_vec(const struct plan_hook *h, uint32_t v, FILE *f)
{
	print_bits(h, vec_bits(h, v), h->vecs[v].n, f);
}

/* The wildcard rules of field fl (sorted, malloc'd into *out), their number. */
static uint32_t wild_bits(const struct plan_hook *h, int fl, uint32_t **out)
{
	uint32_t n = 0;

	*out = malloc((h->nrules ? h->nrules : 1) * sizeof(**out));
	for (uint32_t b = 0; *out && b < h->nrules; b++)
		if (h->wild[fl].w[b / 64] >> (b % 64) & 1)
			(*out)[n++] = b;
	return *out ? n : 0;
}

/* Under a table's header: its wildcards, which every entry also takes
 * (nothing when there are none). dir: "in  " or "out " for the interface
 * table, "" for the others. */
static void print_wild(const struct plan_hook *h, int fl, const char *dir, FILE *f)
{
	uint32_t *v, n = wild_bits(h, fl, &v);

	if (n) {
		fprintf(f, "    %s(every entry) + ", dir);
		print_bits(h, v, n, f);
		fputs(": the rules that do not restrict it\n", f);
	}
	free(v);
}

static void json_bits(const uint32_t *v, uint32_t n, struct json *j)
{
	json_array_begin(j);
	for (uint32_t i = 0; i < n; i++)
		json_u64(j, v[i]);
	json_array_end(j);
}

/* A vector's own rules as a JSON array (the field's wildcards are apart). */
static void json_vec(const struct plan_hook *h, uint32_t v, struct json *j)
{
	json_bits(vec_bits(h, v), h->vecs[v].n, j);
}

static const char *families_str(uint8_t fam)
{
	if (fam == POLICY_FAM_ANY)
		return "ipv4,ipv6";
	return fam ? policy_family_name((enum policy_family)fam) : "none";
}

static void rule_summary(const struct rule *r, FILE *f)
{
	policy_print_sides(f, &r->in, &r->out, &r->from, &r->to);
	if (r->proto >= 0) {
		const char *pn = policy_proto_name(r->proto);

		if (pn)
			fprintf(f, " proto %s", pn);
		else
			fprintf(f, " proto %d", r->proto);
	}
	for (uint16_t i = 0; i < r->nicmp; i++) {
		const char *tn = policy_icmp_type_name(r->icmp_types[i], r->proto == IPPROTO_ICMPV6);

		fprintf(f, "%s", !i ? (r->nicmp > 1 ? " icmp-type [" : " icmp-type ") : ", ");
		if (tn)
			fprintf(f, "%s", tn);
		else
			fprintf(f, "%d", r->icmp_types[i]);
		if (i + 1 == r->nicmp && r->nicmp > 1)
			fputc(']', f);
	}
	if (!r->service.any)
		fprintf(f, " service %s", r->service.what);
	if (!r->sport.any)
		fprintf(f, " source-service %s", r->sport.what);
	if (r->state != POLICY_CT_ALL) {
		fputs(" state ", f);
		for (int s = 0, first = 1; s < NFB_CT_MAX; s++)
			if (r->state & (1u << s)) {
				fprintf(f, "%s%s", first ? "" : ",", policy_ct_names[s]);
				first = 0;
			}
	}
	if (policy_has_limit(&r->limit)) {
		char buf[160];

		policy_limit_format(&r->limit, buf, sizeof(buf));
		fprintf(f, " limit %s", buf);
	}
	if (r->when.n) {
		char buf[1024];

		policy_when_format(&r->when, buf, sizeof(buf));
		fprintf(f, " when %s", buf);
	}
}

static void print_fields(const struct plan_hook *h, FILE *f)
{
	bool first = true;

	for (int i = 0; i < NFB_F_MAX; i++)
		if (h->fields & (1u << i)) {
			fprintf(f, "%s%s", first ? "" : ",", field_names[i]);
			first = false;
		}
	if (first)
		fputs("none", f);
}

static void print_segs(const struct plan_hook *h, const struct plan_seg *s, uint32_t n, bool ports, uint8_t dir,
		       FILE *f)
{
	for (uint32_t i = 0; i < n; i++) {
		if (ports && s[i].dir != dir)
			continue;
		if (s[i].lo == s[i].hi)
			fprintf(f, "    %-8s %-11u -> ", ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls],
				s[i].lo);
		else
			fprintf(f, "    %-8s %5u-%-5u -> ", ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls],
				s[i].lo, s[i].hi);
		print_vec(h, s[i].vec, f);
		fputc('\n', f);
	}
}

static void print_lpm(const struct plan_hook *h, int fi, uint8_t dir, FILE *f)
{
	char buf[64];

	fprintf(f, "  %s %s prefixes (longest match wins):\n",
		policy_family_name(fi ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4), dir ? "destination" : "source");
	print_wild(h, dir ? NFB_F_DST : NFB_F_SRC, "", f);
	for (uint32_t i = 0; i < h->nlpm[fi]; i++) {
		if (h->lpm[fi][i].dir != dir)
			continue;
		policy_prefix_format(&h->lpm[fi][i].pfx, buf, sizeof(buf));
		fprintf(f, "    %-43s -> ", buf);
		print_vec(h, h->lpm[fi][i].vec, f);
		fputc('\n', f);
	}
	fprintf(f, "    %-43s -> ", "(no match)");
	print_vec(h, h->miss[dir ? NFB_F_DST : NFB_F_SRC], f);
	fputc('\n', f);
}

static void print_hook_text(const struct plan_hook *h, int hk, FILE *f)
{
	fprintf(f, "\nhook %s: default %s, %u rules, fields ", policy_hook_name((enum policy_hook)hk),
		policy_action_name(h->def), h->nrules);
	print_fields(h, f);
	fprintf(f, ", %u vectors of %u words (%u summary)\n", h->nvecs, h->nwords, h->nsum);
	fprintf(f, "  rules (first match wins):\n");
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];

		fprintf(f, "    %-24s %-6s %-9s%s%s%s", r->name, policy_action_name(r->action),
			families_str(r->families), r->log ? " log" : "", r->early ? " early(xdp)" : "",
			r->synproxy ? " synproxy" : "");
		rule_summary(r, f);
		fputc('\n', f);
	}
	if (h->fields & (1u << NFB_F_IIF | 1u << NFB_F_OIF)) {
		fprintf(f, "  interfaces:\n");
		for (int d = 0; d < 2; d++) {
			if (!(h->fields & (1u << (NFB_F_IIF + d))))
				continue;
			print_wild(h, NFB_F_IIF + d, d ? "out " : "in  ", f);
		}
		for (uint32_t i = 0; i < h->nifaces; i++) {
			fprintf(f, "    %-3s %-15s -> ", h->ifaces[i].dir ? "out" : "in", h->ifaces[i].ifname);
			print_vec(h, h->ifaces[i].vec, f);
			fputc('\n', f);
		}
		for (int d = 0; d < 2; d++) {
			if (!(h->fields & (1u << (NFB_F_IIF + d))))
				continue;
			fprintf(f, "    %-3s %-15s -> ", d ? "out" : "in", "(other)");
			print_vec(h, h->miss[NFB_F_IIF + d], f);
			fputc('\n', f);
		}
	}
	for (int fi = 0; fi < 2; fi++)
		for (uint8_t dir = 0; dir < 2; dir++)
			if (h->fields & (1u << (NFB_F_SRC + dir)))
				print_lpm(h, fi, dir, f);
	if (h->fields & (1u << NFB_F_L4)) {
		fprintf(f, "  destination ports and other l4 keys:\n");
		print_wild(h, NFB_F_L4, "", f);
		print_segs(h, h->ports, h->nports, true, 1, f);
		print_segs(h, h->misc, h->nmisc, false, 0, f);
	}
	if (h->fields & (1u << NFB_F_SPORT)) {
		fprintf(f, "  source ports:\n");
		print_wild(h, NFB_F_SPORT, "", f);
		print_segs(h, h->ports, h->nports, true, 0, f);
		fprintf(f, "    %-20s -> ", "(no ports)");
		print_vec(h, h->sport_none, f);
		fputc('\n', f);
	}
	if (h->fields & (1u << NFB_F_CT)) {
		fprintf(f, "  conntrack states:\n");
		print_wild(h, NFB_F_CT, "", f);
		for (int s = 0; s < NFB_CT_MAX; s++) {
			fprintf(f, "    %-20s -> ", policy_ct_names[s]);
			print_vec(h, h->ct[s], f);
			fputc('\n', f);
		}
	}
}

/* The sets the daemon fills itself, and from what. */
static void print_feeds(const struct policy *p, FILE *f)
{
	for (uint32_t i = 0; i < p->nsets; i++) {
		const struct addr_set *s = &p->sets[i];

		if (s->feed == SET_FEED_NONE)
			continue;
		fprintf(f, "\nset %s: filled by the daemon from ", s->name);
		if (s->feed == SET_FEED_COUNTRY) {
			fputs("the countries ", f);
			for (uint32_t k = 0; k < s->ncountries; k++)
				fprintf(f, "%s%s", k ? "," : "", s->countries[k]);
			fprintf(f, " of %s (read again when it changes)\n", s->database);
		} else if (s->feed == SET_FEED_HOSTS) {
			fputs("DNS: ", f);
			for (uint32_t k = 0; k < s->nhosts; k++)
				fprintf(f, "%s%s", k ? ", " : "", s->hosts[k]);
			fprintf(f, " (each address for its TTL within %us..%us, plus %us)\n", s->min_ttl, s->max_ttl,
				s->grace);
		} else if (s->feed == SET_FEED_URL) {
			fprintf(f, "%s every %us%s%s (the last good list kept; a failed fetch keeps it)\n", s->url,
				s->refresh, s->ca ? ", verified with " : "", s->ca ? s->ca : "");
		} else {
			fprintf(f, "Suricata's alerts of severity 1..%u in %s (each source for %us%s)\n", s->severity,
				s->eve, s->ban, s->ban ? "" : ": until deleted");
		}
	}
}

/* The dynamic sets' never-ban, and the policy's: as written. */
static void print_never_ban(const struct policy *p, FILE *f)
{
	if (p->opt.never_ban.what)
		fprintf(f, "\nnever banned by the daemon, in any dynamic set: %s\n", p->opt.never_ban.what);
	for (uint32_t i = 0; i < p->nsets; i++)
		if (p->sets[i].never_ban.what)
			fprintf(f, "\nset %s: never banned by the daemon: %s\n", p->sets[i].name,
				p->sets[i].never_ban.what);
}

void plan_print(const struct plan *pl, FILE *f)
{
	const struct policy *p = pl->pol;

	fprintf(f, "# nfbox plan of %s\n", p->src->name);
	fprintf(f, "options: backend %s, defrag %s, established %s, log-rate %u/%s burst %u, reject-rate %u/%s\n",
		p->opt.backend == POLICY_BACKEND_NFTABLES ? "nftables" : "bpf", p->opt.defrag ? "on" : "off",
		p->opt.established_accept ? "accept" : "rules", p->opt.log_rate.n,
		policy_rate_unit(p->opt.log_rate.per), p->opt.log_burst, p->opt.reject_rate.n,
		policy_rate_unit(p->opt.reject_rate.per));
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		if (pl->hook[hk].enabled)
			print_hook_text(&pl->hook[hk], hk, f);
	if (p->nnat)
		fprintf(f, "\nnat: %u rules (applied through nftables)\n", p->nnat);
	for (uint32_t i = 0; i < p->ncaptures; i++)
		fprintf(f, "\ncapture %s: interface %s -> %s\n", p->captures[i].name, p->captures[i].ifname,
			p->captures[i].file);
	print_feeds(p, f);
	print_never_ban(p, f);
}

static void json_segs(const struct plan_hook *h, const struct plan_seg *s, uint32_t n, bool ports, struct json *j)
{
	for (uint32_t i = 0; i < n; i++) {
		json_object_begin(j);
		json_kv_str(j, "dir", ports ? (s[i].dir ? "dst" : "src") : "dst");
		json_kv_str(j, "class", ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls]);
		json_kv_u64(j, "lo", s[i].lo);
		json_kv_u64(j, "hi", s[i].hi);
		json_key(j, "rules");
		json_vec(h, s[i].vec, j);
		json_object_end(j);
	}
}

/* A match as the policy means it: null for any, else what it lists (sets,
 * groups and services expanded) and whether it is negated (neg NULL: it
 * cannot be). Opens the array of the list under key list; false for any. */
static bool json_match_begin(struct json *j, const char *key, bool any, const char *what, const bool *neg,
			     const char *list)
{
	json_key(j, key);
	if (any) {
		json_null_value(j);
		return false;
	}
	json_object_begin(j);
	json_kv_str(j, "as_written", what);
	if (neg)
		json_kv_bool(j, "negated", *neg);
	json_key(j, list);
	json_array_begin(j);
	return true;
}

static void json_match_end(struct json *j)
{
	json_array_end(j);
	json_object_end(j);
}

static void json_addrs(struct json *j, const char *key, const struct addr_match *m)
{
	char buf[64];

	if (m->dyn) { /* a dynamic set: its entries come at run time (nfbox set) */
		json_key(j, key);
		json_object_begin(j);
		json_kv_str(j, "as_written", m->what);
		json_kv_bool(j, "negated", m->neg);
		json_kv_bool(j, "dynamic", true);
		json_object_end(j);
		return;
	}
	if (!json_match_begin(j, key, m->any, m->what, &m->neg, "prefixes"))
		return;
	for (uint32_t i = 0; i < m->n; i++) {
		policy_prefix_format(&m->v[i], buf, sizeof(buf));
		json_str(j, buf);
	}
	json_match_end(j);
}

static void json_ifaces(struct json *j, const char *key, const struct iface_match *m)
{
	if (!json_match_begin(j, key, m->any, m->what, &m->neg, "interfaces"))
		return;
	for (uint32_t i = 0; i < m->n; i++)
		json_str(j, m->ifnames[i]);
	json_match_end(j);
}

static void json_ports(struct json *j, const char *key, const struct port_match *m)
{
	if (!json_match_begin(j, key, m->any, m->what, NULL, "ports"))
		return;
	for (uint32_t i = 0; i < m->n; i++) {
		json_object_begin(j);
		json_kv_str(j, "proto", policy_proto_name(m->v[i].proto));
		json_kv_u64(j, "lo", m->v[i].lo);
		json_kv_u64(j, "hi", m->v[i].hi);
		json_object_end(j);
	}
	json_match_end(j);
}

static void json_match(const struct rule *r, struct json *j)
{
	json_key(j, "match");
	json_object_begin(j);
	json_ifaces(j, "in", &r->in);
	json_ifaces(j, "out", &r->out);
	json_addrs(j, "from", &r->from);
	json_addrs(j, "to", &r->to);
	json_key(j, "proto");
	if (r->proto < 0)
		json_null_value(j);
	else
		json_u64(j, (uint64_t)r->proto);
	json_key(j, "icmp_types");
	if (!r->nicmp) {
		json_null_value(j);
	} else {
		json_array_begin(j);
		for (uint16_t i = 0; i < r->nicmp; i++)
			json_u64(j, r->icmp_types[i]);
		json_array_end(j);
	}
	json_ports(j, "service", &r->service);
	json_ports(j, "source_service", &r->sport);
	json_key(j, "state");
	if (r->state == POLICY_CT_ALL) {
		json_null_value(j);
	} else {
		json_array_begin(j);
		for (int s = 0; s < POLICY_CT_STATES; s++)
			if (r->state & (1u << s))
				json_str(j, policy_ct_names[s]);
		json_array_end(j);
	}
	json_object_end(j);
}

static void json_rules(const struct plan_hook *h, struct json *j)
{
	json_key(j, "rules");
	json_array_begin(j);
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];

		json_object_begin(j);
		json_kv_u64(j, "bit", b);
		json_kv_str(j, "name", r->name);
		json_kv_str(j, "action", policy_action_name(r->action));
		json_kv_bool(j, "log", r->log);
		json_kv_bool(j, "early", r->early);
		json_kv_bool(j, "synproxy", r->synproxy);
		json_kv_str(j, "families", families_str(r->families));
		json_kv_u64(j, "line", r->loc.line);
		json_kv_str(j, "comment", r->comment);
		if (r->action == POLICY_REJECT)
			json_kv_str(j, "reject_with", policy_reject_names[r->reject_with]);
		if (r->when.n) {
			char buf[1024];

			policy_when_format(&r->when, buf, sizeof(buf));
			json_kv_str(j, "when", buf);
		}
		if (policy_has_limit(&r->limit)) {
			json_key(j, "limit");
			json_object_begin(j);
			if (r->limit.conns) {
				json_kv_u64(j, "connections", r->limit.conns);
			} else {
				json_kv_u64(j, "rate", r->limit.rate.n);
				json_kv_str(j, "per", policy_rate_unit(r->limit.rate.per));
				json_kv_u64(j, "burst", r->limit.burst);
			}
			json_kv_str(j, "bucket", r->limit.per_source ? "source" : "rule");
			if (r->limit.overload) {
				json_kv_str(j, "overload", r->limit.overload);
				json_kv_u64(j, "overload_timeout", r->limit.overload_timeout);
			}
			json_object_end(j);
		}
		json_match(r, j);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_keys(const struct plan_hook *h, struct json *j)
{
	char buf[64];

	json_key(j, "interfaces");
	json_array_begin(j);
	for (uint32_t i = 0; i < h->nifaces; i++) {
		json_object_begin(j);
		json_kv_str(j, "dir", h->ifaces[i].dir ? "out" : "in");
		json_kv_str(j, "name", h->ifaces[i].ifname);
		json_key(j, "rules");
		json_vec(h, h->ifaces[i].vec, j);
		json_object_end(j);
	}
	json_array_end(j);
	json_key(j, "prefixes");
	json_object_begin(j);
	for (int fi = 0; fi < 2; fi++) {
		json_key(j, policy_family_name(fi ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4));
		json_array_begin(j);
		for (uint32_t i = 0; i < h->nlpm[fi]; i++) {
			policy_prefix_format(&h->lpm[fi][i].pfx, buf, sizeof(buf));
			json_object_begin(j);
			json_kv_str(j, "dir", h->lpm[fi][i].dir ? "dst" : "src");
			json_kv_str(j, "prefix", buf);
			json_key(j, "rules");
			json_vec(h, h->lpm[fi][i].vec, j);
			json_object_end(j);
		}
		json_array_end(j);
	}
	json_object_end(j);
	json_key(j, "l4");
	json_array_begin(j);
	json_segs(h, h->ports, h->nports, true, j);
	json_segs(h, h->misc, h->nmisc, false, j);
	json_array_end(j);
}

static void json_hook(const struct plan_hook *h, int hk, struct json *j)
{
	json_object_begin(j);
	json_kv_str(j, "name", policy_hook_name((enum policy_hook)hk));
	json_kv_str(j, "default", policy_action_name(h->def));
	json_kv_u64(j, "nwords", h->nwords);
	json_kv_u64(j, "nsum", h->nsum);
	json_kv_u64(j, "vectors", h->nvecs);
	json_key(j, "fields");
	json_array_begin(j);
	for (int i = 0; i < NFB_F_MAX; i++)
		if (h->fields & (1u << i))
			json_str(j, field_names[i]);
	json_array_end(j);
	json_rules(h, j);
	json_keys(h, j);
	json_key(j, "miss");
	json_object_begin(j);
	for (int i = 0; i < NFB_F_MAX; i++) {
		json_key(j, field_names[i]);
		json_vec(h, h->miss[i], j);
	}
	json_object_end(j);
	json_key(j, "wildcards"); /* in every vector of the field, not repeated there */
	json_object_begin(j);
	for (int i = 0; i < NFB_F_MAX; i++) {
		uint32_t *v, n = wild_bits(h, i, &v);

		json_key(j, field_names[i]);
		json_bits(v, n, j);
		free(v);
	}
	json_object_end(j);
	json_key(j, "ct");
	json_object_begin(j);
	for (int s = 0; s < NFB_CT_MAX; s++) {
		json_key(j, policy_ct_names[s]);
		json_vec(h, h->ct[s], j);
	}
	json_object_end(j);
	json_object_end(j);
}

static void json_nat(const struct policy *p, struct json *j)
{
	char buf[64];

	json_key(j, "nat");
	json_array_begin(j);
	for (uint32_t i = 0; i < p->nnat; i++) {
		const struct nat_rule *n = &p->nat[i];

		json_object_begin(j);
		json_kv_str(j, "kind", policy_nat_kind_names[n->kind]);
		json_kv_u64(j, "line", n->loc.line);
		json_key(j, "families");
		json_array_begin(j);
		for (uint8_t f = POLICY_FAM_IPV4; f <= POLICY_FAM_IPV6; f <<= 1)
			if (n->families & f)
				json_str(j, policy_family_name((enum policy_family)f));
		json_array_end(j);
		json_ifaces(j, "in", nat_in(n));
		json_ifaces(j, "out", &n->out);
		json_addrs(j, "from", &n->from);
		json_addrs(j, "destination", &n->dest);
		json_ports(j, "service", &n->service);
		if (n->kind == NAT_SNAT || n->kind == NAT_FORWARD_PORT) {
			policy_prefix_format(&n->to_addr, buf, sizeof(buf));
			json_kv_str(j, "to", buf);
		}
		if (n->kind == NAT_SNAT) {
			policy_prefix_format(&n->to_last, buf, sizeof(buf));
			json_kv_str(j, "to_last", buf);
		}
		if (n->kind == NAT_ONE_TO_ONE || n->kind == NAT_NPTV6) {
			policy_prefix_format(&n->inside, buf, sizeof(buf));
			json_kv_str(j, "inside", buf);
			policy_prefix_format(&n->to_addr, buf, sizeof(buf));
			json_kv_str(j, "outside", buf);
		}
		if (n->kind == NAT_FORWARD_PORT || n->kind == NAT_REDIRECT)
			json_kv_u64(j, "to_port", n->to_port);
		if (n->kind == NAT_FORWARD_PORT && n->to_port_last != n->to_port)
			json_kv_u64(j, "to_port_last", n->to_port_last);
		if (n->kind == NAT_FORWARD_PORT)
			json_kv_bool(j, "hairpin", n->hairpin);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_captures(const struct policy *p, struct json *j)
{
	json_key(j, "captures");
	json_array_begin(j);
	for (uint32_t i = 0; i < p->ncaptures; i++) {
		const struct capture_conf *c = &p->captures[i];

		json_object_begin(j);
		json_kv_str(j, "name", c->name);
		json_kv_u64(j, "line", c->loc.line);
		json_kv_str(j, "interface", c->ifname);
		json_kv_str(j, "mirror_from", c->mirror_from[0] ? c->mirror_from : NULL);
		json_kv_str(j, "file", c->file);
		json_key(j, "proto");
		if (c->match.proto < 0)
			json_null_value(j);
		else
			json_u64(j, (uint64_t)c->match.proto);
		json_addrs(j, "from", &c->match.from);
		json_addrs(j, "to", &c->match.to);
		json_ports(j, "service", &c->match.service);
		json_kv_u64(j, "min_length", c->match.min_len);
		json_kv_u64(j, "max_length", c->match.max_len);
		json_kv_u64(j, "snaplen", c->snaplen);
		json_kv_u64(j, "rotate_size", c->rotate_size);
		json_kv_u64(j, "rotate_keep", c->rotate_keep);
		json_object_end(j);
	}
	json_array_end(j);
}

void plan_print_json(const struct plan *pl, FILE *f)
{
	const struct policy *p = pl->pol;
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_kv_str(&j, "policy", p->src->name);
	json_kv_u64(&j, "version", 1);
	json_key(&j, "options");
	json_object_begin(&j);
	json_kv_str(&j, "backend", p->opt.backend == POLICY_BACKEND_NFTABLES ? "nftables" : "bpf");
	json_kv_bool(&j, "defrag", p->opt.defrag);
	json_kv_str(&j, "established", p->opt.established_accept ? "accept" : "rules");
	json_kv_u64(&j, "log_rate", p->opt.log_rate.n);
	json_kv_str(&j, "log_rate_per", policy_rate_unit(p->opt.log_rate.per));
	json_kv_u64(&j, "log_burst", p->opt.log_burst);
	json_kv_u64(&j, "reject_rate", p->opt.reject_rate.n);
	json_kv_str(&j, "reject_rate_per", policy_rate_unit(p->opt.reject_rate.per));
	json_object_end(&j);
	json_key(&j, "hooks");
	json_array_begin(&j);
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		if (pl->hook[hk].enabled)
			json_hook(&pl->hook[hk], hk, &j);
	json_array_end(&j);
	json_nat(p, &j);
	json_captures(p, &j);
	json_object_end(&j);
	fputc('\n', f);
}
