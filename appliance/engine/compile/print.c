/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox plan`: the compiled plan as stable text or JSON. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compile/plan.h"

static const char *const field_names[NFB_F_MAX] = { "in", "out", "src", "dst", "l4", "sport", "ct" };
static const char *const ct_names[NFB_CT_MAX] = { "new", "established", "related", "invalid", "untracked" };
static const char *const pclass_names[NFB_PC_MAX] = { "tcp", "udp", "sctp" };
static const char *const mclass_names[NFB_MC_MAX] = { "icmp", "icmpv6", "proto", "fragment" };

/* Print the rules of a vector: "{0,2-5}" (text) or "[0,2,3,4,5]" (json). */
static void print_vec(const struct plan_hook *h, uint32_t v, FILE *f, bool json)
{
	uint64_t *w = calloc(h->nwords, sizeof(*w));
	bool first = true;

	if (!w) {
		fputs(json ? "null" : "?", f);
		return;
	}
	plan_vec_dense(h, v, w);
	fputc(json ? '[' : '{', f);
	for (uint32_t b = 0; b < h->nrules; b++) {
		uint32_t e = b;

		if (!bitvec_test(&(struct bitvec){ h->nwords, w }, b))
			continue;
		if (json) {
			fprintf(f, "%s%u", first ? "" : ",", b);
			first = false;
			continue;
		}
		while (e + 1 < h->nrules && bitvec_test(&(struct bitvec){ h->nwords, w }, e + 1))
			e++;
		if (e == b)
			fprintf(f, "%s%u", first ? "" : ",", b);
		else
			fprintf(f, "%s%u-%u", first ? "" : ",", b, e);
		first = false;
		b = e;
	}
	fputc(json ? ']' : '}', f);
	free(w);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char *families_str(uint8_t fam)
{
	switch (fam) {
	case POLICY_FAM_IPV4:
		return "ipv4";
	case POLICY_FAM_IPV6:
		return "ipv6";
	case POLICY_FAM_ANY:
		return "ipv4,ipv6";
	default:
		return "none";
	}
}

static void rule_summary(const struct rule *r, FILE *f)
{
	if (!r->in.any)
		fprintf(f, " in %s", r->in.what);
	if (!r->out.any)
		fprintf(f, " out %s", r->out.what);
	if (!r->from.any)
		fprintf(f, " from %s", r->from.what);
	if (!r->to.any)
		fprintf(f, " to %s", r->to.what);
	if (r->proto >= 0) {
		const char *pn = policy_proto_name(r->proto);

		if (pn)
			fprintf(f, " proto %s", pn);
		else
			fprintf(f, " proto %d", r->proto);
	}
	if (r->icmp_type >= 0) {
		const char *tn = policy_icmp_type_name(r->icmp_type, r->proto == IPPROTO_ICMPV6);

		if (tn)
			fprintf(f, " icmp-type %s", tn);
		else
			fprintf(f, " icmp-type %d", r->icmp_type);
	}
	if (!r->service.any)
		fprintf(f, " service %s", r->service.what);
	if (!r->sport.any)
		fprintf(f, " source-service %s", r->sport.what);
	if (r->state != POLICY_CT_ALL) {
		fputs(" state ", f);
		for (int s = 0, first = 1; s < NFB_CT_MAX; s++)
			if (r->state & (1u << s)) {
				fprintf(f, "%s%s", first ? "" : ",", ct_names[s]);
				first = 0;
			}
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

static void print_segs(const struct plan_hook *h, const struct plan_seg *s, uint32_t n, bool ports,
		       uint8_t dir, FILE *f)
{
	for (uint32_t i = 0; i < n; i++) {
		if (ports && s[i].dir != dir)
			continue;
		if (s[i].lo == s[i].hi)
			fprintf(f, "    %-8s %-11u -> ", ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls], s[i].lo);
		else
			fprintf(f, "    %-8s %5u-%-5u -> ", ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls],
				s[i].lo, s[i].hi);
		print_vec(h, s[i].vec, f, false);
		fputc('\n', f);
	}
}

static void print_lpm(const struct plan_hook *h, int fi, uint8_t dir, FILE *f)
{
	char buf[64];

	fprintf(f, "  %s %s prefixes (longest match wins):\n", fi ? "ipv6" : "ipv4", dir ? "destination" : "source");
	for (uint32_t i = 0; i < h->nlpm[fi]; i++) {
		if (h->lpm[fi][i].dir != dir)
			continue;
		policy_prefix_format(&h->lpm[fi][i].pfx, buf, sizeof(buf));
		fprintf(f, "    %-43s -> ", buf);
		print_vec(h, h->lpm[fi][i].vec, f, false);
		fputc('\n', f);
	}
	fprintf(f, "    %-43s -> ", "(no match)");
	print_vec(h, h->miss[dir ? NFB_F_DST : NFB_F_SRC], f, false);
	fputc('\n', f);
}

static void print_hook_text(const struct plan_hook *h, int hk, FILE *f)
{
	fprintf(f, "\nhook %s: default %s, %u rules, fields ", policy_hook_name((enum policy_hook)hk),
		h->def == POLICY_ACCEPT ? "accept" : "drop", h->nrules);
	print_fields(h, f);
	fprintf(f, ", %u vectors of %u words (%u summary)\n", h->nvecs, h->nwords, h->nsum);
	fprintf(f, "  rules (first match wins):\n");
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];

		fprintf(f, "    %-5u %-24s %-6s %-9s%s", b, r->name, r->action == POLICY_ACCEPT ? "accept" : "drop",
			families_str(r->families), r->log ? " log" : "");
		rule_summary(r, f);
		fputc('\n', f);
	}
	if (h->fields & (1u << NFB_F_IIF | 1u << NFB_F_OIF)) {
		fprintf(f, "  interfaces:\n");
		for (uint32_t i = 0; i < h->nifaces; i++) {
			fprintf(f, "    %-3s %-15s -> ", h->ifaces[i].dir ? "out" : "in", h->ifaces[i].ifname);
			print_vec(h, h->ifaces[i].vec, f, false);
			fputc('\n', f);
		}
		for (int d = 0; d < 2; d++) {
			if (!(h->fields & (1u << (NFB_F_IIF + d))))
				continue;
			fprintf(f, "    %-3s %-15s -> ", d ? "out" : "in", "(other)");
			print_vec(h, h->miss[NFB_F_IIF + d], f, false);
			fputc('\n', f);
		}
	}
	for (int fi = 0; fi < 2; fi++)
		for (uint8_t dir = 0; dir < 2; dir++)
			if (h->fields & (1u << (NFB_F_SRC + dir)))
				print_lpm(h, fi, dir, f);
	if (h->fields & (1u << NFB_F_L4)) {
		fprintf(f, "  destination ports and other l4 keys:\n");
		print_segs(h, h->ports, h->nports, true, 1, f);
		print_segs(h, h->misc, h->nmisc, false, 0, f);
	}
	if (h->fields & (1u << NFB_F_SPORT)) {
		fprintf(f, "  source ports:\n");
		print_segs(h, h->ports, h->nports, true, 0, f);
		fprintf(f, "    %-20s -> ", "(no ports)");
		print_vec(h, h->sport_none, f, false);
		fputc('\n', f);
	}
	if (h->fields & (1u << NFB_F_CT)) {
		fprintf(f, "  conntrack states:\n");
		for (int s = 0; s < NFB_CT_MAX; s++) {
			fprintf(f, "    %-20s -> ", ct_names[s]);
			print_vec(h, h->ct[s], f, false);
			fputc('\n', f);
		}
	}
}

void plan_print(const struct plan *pl, FILE *f)
{
	const struct policy *p = pl->pol;

	fprintf(f, "# nfbox plan of %s\n", p->src->name);
	fprintf(f, "options: defrag %s, established %s, log-rate %u/second burst %u\n",
		p->opt.defrag ? "on" : "off", p->opt.established_accept ? "accept" : "rules", p->opt.log_rate,
		p->opt.log_burst);
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++)
		if (pl->hook[hk].enabled)
			print_hook_text(&pl->hook[hk], hk, f);
	if (p->nnat)
		fprintf(f, "\nnat: %u rules (applied through nftables)\n", p->nnat);
	for (uint32_t i = 0; i < p->ncaptures; i++)
		fprintf(f, "\ncapture %s: interface %s -> %s\n", p->captures[i].name, p->captures[i].ifname,
			p->captures[i].file);
}

static void json_segs(const struct plan_hook *h, const struct plan_seg *s, uint32_t n, bool ports,
		      FILE *f, bool *first)
{
	for (uint32_t i = 0; i < n; i++) {
		fprintf(f, "%s{\"dir\":\"%s\",\"class\":\"%s\",\"lo\":%u,\"hi\":%u,\"rules\":", *first ? "" : ",",
			ports ? (s[i].dir ? "dst" : "src") : "dst",
			ports ? pclass_names[s[i].cls] : mclass_names[s[i].cls], s[i].lo, s[i].hi);
		print_vec(h, s[i].vec, f, true);
		fputc('}', f);
		*first = false;
	}
}

static void json_hook(const struct plan_hook *h, int hk, FILE *f)
{
	char buf[64];
	bool first = true;

	fprintf(f, "{\"name\":\"%s\",\"default\":\"%s\",\"nwords\":%u,\"nsum\":%u,\"vectors\":%u,\"fields\":[",
		policy_hook_name((enum policy_hook)hk), h->def == POLICY_ACCEPT ? "accept" : "drop", h->nwords,
		h->nsum, h->nvecs);
	for (int i = 0; i < NFB_F_MAX; i++)
		if (h->fields & (1u << i)) {
			fprintf(f, "%s\"%s\"", first ? "" : ",", field_names[i]);
			first = false;
		}
	fputs("],\"rules\":[", f);
	for (uint32_t b = 0; b < h->nrules; b++) {
		const struct rule *r = h->rules[b];

		fprintf(f, "%s{\"bit\":%u,\"name\":", b ? "," : "", b);
		json_str(f, r->name);
		fprintf(f, ",\"action\":\"%s\",\"log\":%s,\"families\":\"%s\",\"line\":%u}",
			r->action == POLICY_ACCEPT ? "accept" : "drop", r->log ? "true" : "false",
			families_str(r->families), r->loc.line);
	}
	fputs("],\"interfaces\":[", f);
	for (uint32_t i = 0; i < h->nifaces; i++) {
		fprintf(f, "%s{\"dir\":\"%s\",\"name\":", i ? "," : "", h->ifaces[i].dir ? "out" : "in");
		json_str(f, h->ifaces[i].ifname);
		fputs(",\"rules\":", f);
		print_vec(h, h->ifaces[i].vec, f, true);
		fputc('}', f);
	}
	fputs("],\"prefixes\":{", f);
	for (int fi = 0; fi < 2; fi++) {
		fprintf(f, "%s\"%s\":[", fi ? "," : "", fi ? "ipv6" : "ipv4");
		for (uint32_t i = 0; i < h->nlpm[fi]; i++) {
			policy_prefix_format(&h->lpm[fi][i].pfx, buf, sizeof(buf));
			fprintf(f, "%s{\"dir\":\"%s\",\"prefix\":\"%s\",\"rules\":", i ? "," : "",
				h->lpm[fi][i].dir ? "dst" : "src", buf);
			print_vec(h, h->lpm[fi][i].vec, f, true);
			fputc('}', f);
		}
		fputc(']', f);
	}
	fputs("},\"l4\":[", f);
	first = true;
	json_segs(h, h->ports, h->nports, true, f, &first);
	json_segs(h, h->misc, h->nmisc, false, f, &first);
	fputs("],\"miss\":{", f);
	for (int i = 0; i < NFB_F_MAX; i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "", field_names[i]);
		print_vec(h, h->miss[i], f, true);
	}
	fputs("},\"ct\":{", f);
	for (int s = 0; s < NFB_CT_MAX; s++) {
		fprintf(f, "%s\"%s\":", s ? "," : "", ct_names[s]);
		print_vec(h, h->ct[s], f, true);
	}
	fputs("}}", f);
}

void plan_print_json(const struct plan *pl, FILE *f)
{
	const struct policy *p = pl->pol;
	bool first = true;

	fputs("{\"policy\":", f);
	json_str(f, p->src->name);
	fprintf(f, ",\"version\":1,\"options\":{\"defrag\":%s,\"established\":\"%s\",\"log_rate\":%u,\"log_burst\":%u},\"hooks\":[",
		p->opt.defrag ? "true" : "false", p->opt.established_accept ? "accept" : "rules", p->opt.log_rate,
		p->opt.log_burst);
	for (int hk = 0; hk < NFB_HOOK_MAX; hk++) {
		if (!pl->hook[hk].enabled)
			continue;
		if (!first)
			fputc(',', f);
		json_hook(&pl->hook[hk], hk, f);
		first = false;
	}
	fprintf(f, "],\"nat\":%u,\"captures\":%u}\n", p->nnat, p->ncaptures);
}
