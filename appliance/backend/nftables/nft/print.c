/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "backend/nftables/nft/print.h"

/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <string.h>

#include "lib/nfhook.h"
#include "backend/nftables/nft/batch.h"

/* nft's name in `meta l4proto` (its own for ICMPv6), else the number. */
static const char *proto_name(uint32_t p, char *buf, size_t len)
{
	const char *n = p == IPPROTO_ICMPV6 ? "ipv6-icmp" : policy_proto_name((int)p);

	if (n)
		return n;
	snprintf(buf, len, "%u", p);
	return buf;
}

static unsigned key_bits(enum nfr_key k)
{
	return k == NFR_KEY_IPV4 ? 32 : 128;
}

static void print_addr(const uint8_t *a, enum nfr_key k, FILE *f)
{
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(k == NFR_KEY_IPV4 ? AF_INET : AF_INET6, a, buf, sizeof(buf));
	fputs(buf, f);
}

static uint16_t port_at(const uint8_t *k)
{
	return (uint16_t)(k[0] << 8 | k[1]);
}

static void print_elem(const struct nfr_table *t, const struct nfr_set *s, const struct nfr_elem *e, FILE *f)
{
	char pb[8];
	int plen;

	switch (s->key) {
	case NFR_KEY_IFNAME: /* a name, or a wildcard: the range of the names that begin so */
		fprintf(f, "\"%.16s%s\"", (const char *)e->lo, memcmp(e->lo, e->hi, 16) ? "*" : "");
		break;
	case NFR_KEY_NFPROTO:
		fputs(e->lo[0] == NFPROTO_IPV4 ? "ipv4" : "ipv6", f);
		break;
	case NFR_KEY_IPV4:
	case NFR_KEY_IPV6:
		print_addr(e->lo, s->key, f);
		if (!s->interval || !memcmp(e->lo, e->hi, s->key == NFR_KEY_IPV4 ? 4 : 16))
			break;
		if ((plen = nfr_prefix_len(e->lo, e->hi, key_bits(s->key))) >= 0) {
			fprintf(f, "/%d", plen);
			break;
		}
		fputc('-', f);
		print_addr(e->hi, s->key, f);
		break;
	case NFR_KEY_PORT:
	case NFR_KEY_PROTO_PORT: {
		const uint8_t *lo = e->lo, *hi = e->hi;

		if (s->key == NFR_KEY_PROTO_PORT) {
			fprintf(f, "%s . ", proto_name(lo[0], pb, sizeof(pb)));
			lo += 4;
			hi += 4;
		}
		fprintf(f, "%u", port_at(lo));
		if (port_at(hi) != port_at(lo))
			fprintf(f, "-%u", port_at(hi));
		if (s->objmap)
			fprintf(f, " : \"%s\"", t->counters[e->chain].name);
		if (s->portmap) {
			fputs(" : ", f);
			print_addr(s->map_addr, s->map_family == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6, f);
			fprintf(f, " . %u", e->map_port);
		}
		break;
	}
	}
}

static void print_elems(const struct nfr_table *t, const struct nfr_set *s, FILE *f)
{
	fputs("{ ", f);
	for (uint32_t i = 0; i < s->n; i++) {
		if (i)
			fputs(", ", f);
		print_elem(t, s, &s->v[i], f);
	}
	fputs(" }", f);
}

/* A set in a rule: by name, or its elements in place. */
static void print_set_ref(const struct nfr_table *t, const struct nfr_set *s, FILE *f)
{
	if (s->name[0])
		fprintf(f, "@%s", s->name);
	else
		print_elems(t, s, f);
}

static void print_ct_state(uint32_t bits, FILE *f)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = { { 1, "invalid" }, { 2, "established" }, { 4, "related" }, { 8, "new" }, { 64, "untracked" } };
	bool first = true;

	fputs("ct state ", f);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (bits & names[i].bit) {
			fprintf(f, "%s%s", first ? "" : ",", names[i].name);
			first = false;
		}
}

static void print_match(const struct nfr_table *t, const struct nfr_match *m, FILE *f)
{
	const char *ip = m->family == POLICY_FAM_IPV4 ? "ip" : "ip6";
	const char *dir = m->dir ? "daddr" : "saddr";
	char pb[8];

	switch (m->kind) {
	case NFR_M_IIFNAME:
	case NFR_M_OIFNAME:
		fprintf(f, "%s %s", m->kind == NFR_M_IIFNAME ? "iifname" : "oifname", m->neg ? "!= " : "");
		if (m->set)
			print_set_ref(t, m->set, f);
		else
			fprintf(f, "\"%.16s\"", m->ifname);
		break;
	case NFR_M_NFPROTO:
		fprintf(f, "meta nfproto %s", m->value == NFPROTO_IPV4 ? "ipv4" : "ipv6");
		break;
	case NFR_M_SCHED:
		fputs("meta nfproto ", f);
		print_set_ref(t, m->set, f);
		break;
	case NFR_M_ADDR:
		fprintf(f, "%s %s %s", ip, dir, m->neg ? "!= " : "");
		print_set_ref(t, m->set, f);
		break;
	case NFR_M_ADDR_EQ:
		fprintf(f, "%s %s %s", ip, dir, m->neg ? "!= " : "");
		print_addr(m->addr, m->family == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6, f);
		if (m->value != (m->family == POLICY_FAM_IPV4 ? 32u : 128u))
			fprintf(f, "/%u", m->value);
		break;
	case NFR_M_L4PROTO:
		fprintf(f, "meta l4proto %s", proto_name(m->value, pb, sizeof(pb)));
		break;
	case NFR_M_PORT:
		fprintf(f, "th %s ", m->dir ? "dport" : "sport");
		if (m->set)
			print_set_ref(t, m->set, f);
		else if (m->lo == m->hi)
			fprintf(f, "%u", m->lo);
		else
			fprintf(f, "%u-%u", m->lo, m->hi);
		break;
	case NFR_M_PROTO_PORT:
		fprintf(f, "meta l4proto . th %s ", m->dir ? "dport" : "sport");
		print_set_ref(t, m->set, f);
		break;
	case NFR_M_ICMP_TYPE:
		fprintf(f, "%s type %u", m->family == POLICY_FAM_IPV4 ? "icmp" : "icmpv6", m->value);
		break;
	case NFR_M_CT_STATE:
		print_ct_state(m->value, f);
		break;
	case NFR_M_CT_DNAT:
		fputs("ct status dnat", f);
		break;
	case NFR_M_FRAG4:
		fputs("ip frag-off & 0x3fff != 0", f);
		break;
	case NFR_M_TCP_SYN:
		fputs("tcp flags & (syn | ack) == syn", f);
		break;
	case NFR_M_FRAG6_MORE:
		fputs("frag more-fragments 1", f);
		break;
	case NFR_M_FRAG6_OFF:
		fputs("frag frag-off != 0", f);
		break;
	}
}

static void print_nat_addr(const uint8_t *a, uint8_t fam, bool bracket, FILE *f)
{
	if (bracket)
		fputc('[', f);
	print_addr(a, fam == POLICY_FAM_IPV4 ? NFR_KEY_IPV4 : NFR_KEY_IPV6, f);
	if (bracket)
		fputc(']', f);
}

static void print_stmt(const struct nfr_table *t, const struct nfr_stmt *s, FILE *f)
{
	static const char *const icmpx[] = {
		[NFT_REJECT_ICMPX_NO_ROUTE] = "no-route",
		[NFT_REJECT_ICMPX_PORT_UNREACH] = "port-unreachable",
		[NFT_REJECT_ICMPX_HOST_UNREACH] = "host-unreachable",
		[NFT_REJECT_ICMPX_ADMIN_PROHIBITED] = "admin-prohibited",
	};
	const char *ip = s->family == POLICY_FAM_IPV4 ? "ip" : "ip6";
	bool v6 = s->family == POLICY_FAM_IPV6;

	switch (s->kind) {
	case NFR_S_NOTRACK:
		fputs("notrack", f);
		break;
	case NFR_S_CT_MARK_CUT:
		fprintf(f, "ct mark set ct mark & 0x%08x | 0x%08x", ~POLICY_CUT_MASK, s->value << POLICY_CUT_SHIFT);
		break;
	case NFR_S_NFTRACE:
		fputs("meta nftrace set 1", f);
		break;
	case NFR_S_SYNPROXY:
		fprintf(f, "synproxy mss %u wscale %u sack-perm", s->port, s->value);
		break;
	case NFR_S_COUNTER:
		if (s->name[0])
			fprintf(f, "counter name \"%s\"", s->name);
		else
			fputs("counter", f);
		break;
	case NFR_S_LIMIT:
		fprintf(f, "limit name \"%s\"", s->name);
		break;
	case NFR_S_LOG:
		fprintf(f, "log prefix \"%s\" group %u", s->name, s->value);
		break;
	case NFR_S_ACCEPT:
		fputs("accept", f);
		break;
	case NFR_S_DROP:
		fputs("drop", f);
		break;
	case NFR_S_REJECT_TCP:
		fputs("reject with tcp reset", f);
		break;
	case NFR_S_REJECT_ICMPX:
		fprintf(f, "reject with icmpx %s", s->value < sizeof(icmpx) / sizeof(icmpx[0]) ? icmpx[s->value] : "?");
		break;
	case NFR_S_JUMP:
		fprintf(f, "jump %s", s->name);
		break;
	case NFR_S_MASQ:
		fputs("masquerade", f);
		break;
	case NFR_S_SNAT:
	case NFR_S_DNAT:
		fprintf(f, "%s %s %sto ", s->kind == NFR_S_SNAT ? "snat" : "dnat", ip, s->netmap ? "prefix " : "");
		print_nat_addr(s->addr_lo, s->family, v6 && s->port, f);
		if (s->netmap)
			fprintf(f, "/%d", nfr_prefix_len(s->addr_lo, s->addr_hi, v6 ? 128 : 32));
		else if (s->kind == NFR_S_SNAT && memcmp(s->addr_lo, s->addr_hi, v6 ? 16 : 4)) {
			fputc('-', f);
			print_nat_addr(s->addr_hi, s->family, false, f);
		}
		if (s->port)
			fprintf(f, ":%u", s->port);
		break;
	case NFR_S_DNAT_MAP:
		fprintf(f, "dnat %s to th dport map ", ip);
		print_set_ref(t, s->set, f);
		break;
	case NFR_S_REDIRECT:
		fprintf(f, "redirect to :%u", s->port);
		break;
	case NFR_S_COUNTER_MAP:
		fputs("counter name meta l4proto . th dport map ", f);
		print_set_ref(t, s->set, f);
		break;
	case NFR_S_CONNLIMIT:
		if (s->set)
			fprintf(f, "add @%s { %s saddr ct count %u }", s->set->name, ip, s->value);
		else
			fprintf(f, "ct count %u", s->value);
		break;
	case NFR_S_METER:
		fprintf(f, "update @%s { %s saddr limit rate %u/%s burst %u packets }", s->set->name, ip, s->rate,
			policy_rate_unit(s->per), s->burst);
		break;
	}
}

static void print_rule(const struct nfr_table *t, const struct nfr_rule *r, FILE *f)
{
	fputs("\t\t", f);
	for (uint32_t i = 0; i < r->nm; i++) {
		print_match(t, &r->m[i], f);
		fputc(' ', f);
	}
	for (uint32_t i = 0; i < r->ns; i++) {
		if (i)
			fputc(' ', f);
		print_stmt(t, &r->s[i], f);
	}
	fputc('\n', f);
}

/* A duration as nft reads it: seconds, or where nft would not read that
 * many seconds (more than 2^64 picoseconds), days, hours, minutes and
 * seconds. */
static void print_seconds(uint64_t s, FILE *f)
{
	if (s < 18446744) {
		fprintf(f, "%llus", (unsigned long long)s);
		return;
	}
	fprintf(f, "%llud%lluh%llum%llus", (unsigned long long)(s / 86400), (unsigned long long)(s % 86400 / 3600),
		(unsigned long long)(s % 3600 / 60), (unsigned long long)(s % 60));
}

static const char *set_type(enum nfr_key k)
{
	switch (k) {
	case NFR_KEY_IFNAME:
		return "ifname";
	case NFR_KEY_IPV4:
		return "ipv4_addr";
	case NFR_KEY_IPV6:
		return "ipv6_addr";
	case NFR_KEY_PORT:
		return "inet_service";
	case NFR_KEY_NFPROTO:
		return "nf_proto";
	default:
		return "inet_proto . inet_service";
	}
}

void nfr_print(const struct nfr_table *t, FILE *f)
{
	fprintf(f, "table inet %s {\n", NFT_TABLE_NAME);
	for (uint32_t i = 0; i < t->ncounters; i++)
		fprintf(f, "\tcounter %s {\n\t\tpackets %" PRIu64 " bytes %" PRIu64 "\n\t}\n\n", t->counters[i].name,
			t->counters[i].packets, t->counters[i].bytes);
	for (uint32_t i = 0; i < t->nlimits; i++)
		fprintf(f, "\tlimit %s {\n\t\trate %u/%s burst %u packets\n\t}\n\n", t->limits[i].name,
			t->limits[i].rate, policy_rate_unit(t->limits[i].per), t->limits[i].burst);
	for (uint32_t i = 0; i < t->nsets; i++) {
		const struct nfr_set *s = t->sets[i];

		if (!s->name[0])
			continue;
		fprintf(f, "\t%s %s {\n\t\ttype %s%s\n", s->objmap ? "map" : "set", s->name, set_type(s->key),
			s->objmap ? " : counter" : "");
		if (s->timeout)
			fputs("\t\tflags interval,timeout\n", f);
		else if (s->interval)
			fputs("\t\tflags interval\n", f);
		if (s->dynamic && !s->timeout_s) {
			fprintf(f, "\t\tsize %u\n\t\tflags dynamic\n", s->size);
		} else if (s->dynamic) {
			fprintf(f, "\t\tsize %u\n\t\tflags dynamic,timeout\n\t\ttimeout ", s->size);
			print_seconds(s->timeout_s, f);
			fputc('\n', f);
		}
		if (s->comment[0])
			fprintf(f, "\t\tcomment \"%s\"\n", s->comment);
		if (s->n) {
			fputs("\t\telements = ", f);
			print_elems(t, s, f);
			fputc('\n', f);
		}
		fputs("\t}\n\n", f);
	}
	for (uint32_t c = 0; c < t->nchains; c++) {
		const struct nfr_chain *ch = &t->chains[c];

		fprintf(f, "\tchain %s {\n", ch->name);
		if (ch->base && ch->device[0])
			fprintf(f, "\t\ttype filter hook %s device \"%s\" priority %d; policy %s;\n",
				nf_hook_name(ch->hook), ch->device, ch->prio, ch->policy_drop ? "drop" : "accept");
		else if (ch->base)
			fprintf(f, "\t\ttype %s hook %s priority %d; policy %s;\n", ch->nat ? "nat" : "filter",
				nf_hook_name(ch->hook), ch->prio, ch->policy_drop ? "drop" : "accept");
		for (uint32_t i = 0; i < t->nrules; i++)
			if (t->rules[i].chain == c)
				print_rule(t, &t->rules[i], f);
		fprintf(f, "\t}\n%s", c + 1 < t->nchains ? "\n" : "");
	}
	fputs("}\n", f);
}
