// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Packet fixtures for the netfilter classifier (bpf/nfbox_filter.bpf.c),
 * run through BPF_PROG_TEST_RUN. Each group is a small test policy (rules in
 * the terms of struct trule), compiled here into generation maps exactly as
 * nfbox.h describes them, and a table of packets with the verdict and the
 * counter slot each must hit. See tests/bpf/README.md. Needs root.
 *
 * What BPF_PROG_TEST_RUN gives a netfilter program (net/bpf/test_run.c,
 * bpf_prog_test_run_nf): the ctx_in is a struct nf_hook_state of which only
 * hook and pf may be set; state->in is always NULL and state->out the
 * loopback device, whatever the hook (the kernel picks the devices before it
 * copies the hook). Hooks other than LOCAL_OUT take an Ethernet header in
 * front of the IP packet; LOCAL_OUT takes the IP packet itself, at least 20
 * bytes. The skb has no conntrack entry: the program sees NFB_CT_INVALID.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/types.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "backend/bpf/compile/bitvec.h"
#include "backend/bpf/engine/engine.h"
#include "bpf/nfbox.h"
#include "bpf/nfbox_filter.skel.h"
#include "tests/lib/check.h"

/* ---- test policy model ------------------------------------------------ */

/* Zero means "any" everywhere, hence the +1 encodings. */
#define ICMPT(t) ((t) + 1)
#define IFX(i)	 ((i) + 1)
#define CTS(s)	 (1u << (s))

struct trule {
	int action; /* NFB_ACT_* */
	bool log;
	const char *src, *dst; /* "addr/len" */
	int proto;
	int dport_lo, dport_hi; /* dport_hi 0: any */
	int sport_lo, sport_hi;
	int icmp_type; /* ICMPT(type) */
	int iif, oif;  /* IFX(ifindex) */
	unsigned ct;   /* CTS(NFB_CT_*) mask */
};

struct thook {
	bool enabled;
	int default_action;
	const struct trule *rules;
	uint32_t nrules;
};

struct tpolicy {
	struct thook hook[NFB_HOOK_MAX];
	uint32_t options, log_rate, log_burst, log_period;
};

#define RULES(...) \
	(const struct trule[]){ __VA_ARGS__ }, sizeof((const struct trule[]){ __VA_ARGS__ }) / sizeof(struct trule)

static uint32_t slot_rule(int hook, uint32_t rule)
{
	return NFB_CNT_FIRST_RULE + hook * (NFB_MAX_RULES + 1) + rule;
}

static uint32_t slot_default(int hook)
{
	return slot_rule(hook, NFB_MAX_RULES);
}

#define SLOT_ESTABLISHED (NFB_CNT_FIRST_RULE + NFB_HOOK_MAX * (NFB_MAX_RULES + 1))

/* ---- vector blob with de-duplication ----------------------------------- */

#define DEDUP_BITS 18

struct dedup_ent {
	uint64_t hash;
	uint32_t loc;
	uint32_t len; /* 0: empty slot */
};

struct blob {
	uint64_t *w;
	uint32_t nchunks;
	uint32_t off; /* next free word in the last chunk */
	struct dedup_ent *tab;
	uint64_t enc[NFB_VEC_MAX_WORDS];
};

static uint64_t *loc_words(struct blob *b, uint32_t loc)
{
	return b->w + (size_t)(loc >> NFB_LOC_SHIFT) * NFB_CHUNK_WORDS + (loc & NFB_LOC_OFF_MASK);
}

static int blob_add(struct blob *b, const uint64_t *dense, uint32_t nwords, uint32_t *loc_out)
{
	int n = bitvec_encode(dense, nwords, b->enc, NFB_VEC_MAX_WORDS);
	uint64_t h = 1469598103934665603ull;
	uint32_t i, mask = (1u << DEDUP_BITS) - 1;

	if (n < 0)
		return n;
	for (int k = 0; k < n; k++)
		h = (h ^ b->enc[k]) * 1099511628211ull;
	for (i = h & mask;; i = (i + 1) & mask) {
		struct dedup_ent *e = &b->tab[i];

		if (!e->len)
			break;
		if (e->hash == h && e->len == (uint32_t)n &&
		    !memcmp(loc_words(b, e->loc), b->enc, n * sizeof(uint64_t))) {
			*loc_out = e->loc;
			return 0;
		}
	}
	if (!b->nchunks || b->off + n > NFB_CHUNK_WORDS) {
		uint64_t *w = realloc(b->w, (size_t)(b->nchunks + 1) * sizeof(struct nfb_chunk));

		if (!w || b->nchunks + 1 > NFB_MAX_CHUNKS)
			return -ENOMEM;
		b->w = w;
		memset(b->w + (size_t)b->nchunks * NFB_CHUNK_WORDS, 0, sizeof(struct nfb_chunk));
		b->nchunks++;
		b->off = 0;
	}
	*loc_out = (b->nchunks - 1) << NFB_LOC_SHIFT | b->off;
	memcpy(loc_words(b, *loc_out), b->enc, n * sizeof(uint64_t));
	b->off += n;
	b->tab[i] = (struct dedup_ent){ .hash = h, .loc = *loc_out, .len = n };
	return 0;
}

/* ---- compiling a test policy into one generation ----------------------- */

struct tprefix {
	int fam; /* 0 none, 4, 6 */
	int len;
	uint8_t a[16];
};

static int parse_prefix(const char *s, struct tprefix *p)
{
	char buf[64], *slash;

	memset(p, 0, sizeof(*p));
	if (!s)
		return 0;
	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (!slash)
		return -EINVAL;
	*slash = 0;
	p->len = atoi(slash + 1);
	if (inet_pton(AF_INET, buf, p->a) == 1)
		p->fam = 4;
	else if (inet_pton(AF_INET6, buf, p->a) == 1)
		p->fam = 6;
	else
		return -EINVAL;
	for (int bit = p->len; bit < 128; bit++)
		p->a[bit / 8] &= ~(0x80 >> (bit % 8));
	return 0;
}

/* Array maps keep each element in an 8-byte slot (elem_size is value_size
 * rounded up to 8): through mmap() a u32 locator is every other u32. */
#define U32_STRIDE	   2
#define U32_ARRAY_BYTES(n) ((size_t)(n) * U32_STRIDE * sizeof(uint32_t))

struct gen_maps {
	int fd[8]; /* addr4, addr6, iface, port, misc, rules, blob, counters */
	uint32_t *port, *misc;
	struct nfb_rule *rules;
	struct nfb_range4 *r4;
	struct nfb_range6 *r6;
	uint32_t n4, n6, cap4, cap6; /* ranges written, room */
};

enum {
	GM_ADDR4,
	GM_ADDR6,
	GM_IFACE,
	GM_PORT,
	GM_MISC,
	GM_RULES,
	GM_BLOB,
	GM_COUNTERS,
	GM_N
};

/* This harness's port map: every page stored, none shared (the engine
 * shares identical ones: the classifier must not care). Page 0 is all
 * unset; group g (hook, dir, class) page hi is 1 + g * 256 + hi. */
static uint32_t port_entry(int h, int dir, int pc, uint32_t port)
{
	return NFB_PORT_TOP + (1 + nfb_port_top(h, dir, pc, port)) * 256 + (port & 255);
}

/* Counter slots go up to SLOT_ESTABLISHED: slots per counters row. */
#define CNT_CAP 262144

/* An inner map's shape, read from the skeleton's template before load
 * (libbpf frees the templates once the outers exist). */
struct shape {
	enum bpf_map_type type;
	uint32_t key_size, value_size, max_entries, flags;
};

struct env {
	struct nfbox_filter_bpf *skel;
	int prog_fd;
	int outer_fd[GM_N];
	struct shape shape[GM_N];
	int ncpus;
	int cnt_fd; /* one counters map for every generation, as the engine shares one */
	struct nfb_counter *cnt;
	int lo_ifindex;
};

struct build {
	struct gen_maps m;
	struct blob blob;
	uint64_t *v; /* dense scratch vector */
	uint32_t nwords;
	struct tprefix *src, *dst; /* per rule */
};

static const int pclass_proto[NFB_PC_MAX] = { 6, 17, 132, 136 };

static void vzero(struct build *bd)
{
	memset(bd->v, 0, bd->nwords * sizeof(uint64_t));
}

static int vput(struct build *bd, uint32_t *loc)
{
	return blob_add(&bd->blob, bd->v, bd->nwords, loc);
}

static bool l4_any(const struct trule *r)
{
	return !r->proto && !r->dport_hi && !r->icmp_type;
}

/* Rule r in the L4 vector of a packet without ports: class mc, value val. */
static bool l4_misc_match(const struct trule *r, int mc, int val)
{
	int proto = mc == NFB_MC_ICMP ? 1 : mc == NFB_MC_ICMPV6 ? 58 : val;

	if (r->proto && r->proto != proto)
		return false;
	if (r->dport_hi)
		return false; /* a port rule never matches a packet without ports */
	if (r->icmp_type)
		return (mc == NFB_MC_ICMP || mc == NFB_MC_ICMPV6) && r->icmp_type - 1 == val;
	return true;
}

static int compile_ports(struct build *bd, int h, const struct thook *th, int dir, int pc)
{
	uint32_t *at = calloc(65537, sizeof(uint32_t)); /* events per port: count */
	uint32_t (*ev)[2] = calloc(2 * th->nrules + 1, sizeof(*ev));
	uint32_t nev = 0, loc = 0;
	int err = 0;

	if (!at || !ev) {
		err = -ENOMEM;
		goto out;
	}
	vzero(bd);
	for (uint32_t i = 0; i < th->nrules; i++) {
		const struct trule *r = &th->rules[i];
		int lo = dir ? r->dport_lo : r->sport_lo, hi = dir ? r->dport_hi : r->sport_hi;
		bool proto_ok = !r->proto || r->proto == pclass_proto[pc];

		if (dir == 1 && (!proto_ok || r->icmp_type))
			continue;
		if (!hi) {
			bitvec_set(&(struct bitvec){ bd->nwords, bd->v }, i);
			continue;
		}
		if (!proto_ok)
			continue;
		ev[nev][0] = lo;
		ev[nev++][1] = i << 1 | 1;
		ev[nev][0] = hi + 1;
		ev[nev++][1] = i << 1;
	}
	/* Counting sort of the events by port. */
	for (uint32_t i = 0; i < nev; i++)
		at[ev[i][0]]++;
	{
		uint32_t (*sorted)[2] = calloc(nev + 1, sizeof(*sorted));
		uint32_t *start = calloc(65538, sizeof(uint32_t));

		if (!sorted || !start) {
			free(sorted);
			free(start);
			err = -ENOMEM;
			goto out;
		}
		for (uint32_t p = 0; p <= 65536; p++)
			start[p + 1] = start[p] + at[p];
		for (uint32_t i = 0; i < nev; i++) {
			uint32_t p = ev[i][0];

			sorted[start[p] + --at[p]][0] = p;
			sorted[start[p] + at[p]][1] = ev[i][1];
		}
		for (uint32_t p = 0, e = 0; p < 65536; p++) {
			bool changed = p == 0;

			for (; e < nev && sorted[e][0] == p; e++) {
				uint32_t rule = sorted[e][1] >> 1;

				if (sorted[e][1] & 1)
					bd->v[rule / 64] |= UINT64_C(1) << (rule % 64);
				else
					bd->v[rule / 64] &= ~(UINT64_C(1) << (rule % 64));
				changed = true;
			}
			if (changed && (err = vput(bd, &loc)))
				break;
			bd->m.port[U32_STRIDE * port_entry(h, dir, pc, p)] = loc;
		}
		free(sorted);
		free(start);
	}
out:
	free(at);
	free(ev);
	return err;
}

static int compile_misc(struct build *bd, int h, const struct thook *th)
{
	uint32_t loc;
	int err;

	for (int mc = 0; mc < NFB_MC_MAX; mc++) {
		for (int val = 0; val < 256; val++) {
			vzero(bd);
			for (uint32_t i = 0; i < th->nrules; i++)
				if (l4_misc_match(&th->rules[i], mc, val))
					bd->v[i / 64] |= UINT64_C(1) << (i % 64);
			if ((err = vput(bd, &loc)))
				return err;
			bd->m.misc[U32_STRIDE * nfb_misc_index(h, mc, val)] = loc;
		}
	}
	return 0;
}

/* Rules without a restriction on the field (the miss vector). */
static int vec_unrestricted(struct build *bd, const struct thook *th, int field, uint32_t *loc)
{
	vzero(bd);
	for (uint32_t i = 0; i < th->nrules; i++) {
		const struct trule *r = &th->rules[i];
		bool any = field == NFB_F_IIF	  ? !r->iif
			   : field == NFB_F_OIF	  ? !r->oif
			   : field == NFB_F_SRC	  ? !r->src
			   : field == NFB_F_DST	  ? !r->dst
			   : field == NFB_F_L4	  ? l4_any(r)
			   : field == NFB_F_SPORT ? !r->sport_hi
						  : !r->ct;

		if (any)
			bd->v[i / 64] |= UINT64_C(1) << (i % 64);
	}
	return vput(bd, loc);
}

static int compile_iface(struct build *bd, int h, const struct thook *th, int dir)
{
	for (uint32_t i = 0; i < th->nrules; i++) {
		int want = dir ? th->rules[i].oif : th->rules[i].iif;
		struct nfb_iface_key key = { .ifindex = want - 1, .hook = h, .dir = dir };
		uint32_t loc;
		int err;

		if (!want)
			continue;
		vzero(bd);
		for (uint32_t j = 0; j < th->nrules; j++) {
			int other = dir ? th->rules[j].oif : th->rules[j].iif;

			if (!other || other == want)
				bd->v[j / 64] |= UINT64_C(1) << (j % 64);
		}
		if ((err = vput(bd, &loc)))
			return err;
		if (bpf_map_update_elem(bd->m.fd[GM_IFACE], &key, &loc, BPF_ANY))
			return -errno;
	}
	return 0;
}

typedef unsigned __int128 u128;

static u128 tprefix_value(const struct tprefix *p)
{
	u128 v = 0;

	for (int i = 0; i < (p->fam == 4 ? 4 : 16); i++)
		v = v << 8 | p->a[i];
	return v;
}

static u128 host_of(int len, int bits)
{
	u128 all = bits == 128 ? ~(u128)0 : (((u128)1 << bits) - 1);

	return len >= bits ? 0 : len == 0 ? all : (((u128)1 << (bits - len)) - 1);
}

static int u128_cmp(const void *a, const void *b)
{
	u128 x = *(const u128 *)a, y = *(const u128 *)b;

	return x < y ? -1 : x > y;
}

/* This harness's address ranges (bpf/nfbox.h, "Address maps"), made
 * another way than the engine's: every prefix's first address and the one
 * after its last cut the space; each piece gets, by brute force, the rules
 * whose prefix holds its first address (and the rules without one), or
 * NFB_LOC_UNSET when no prefix holds it. */
static int compile_addr(struct build *bd, const struct thook *th, int dir, struct nfb_hook_cfg *hc)
{
	const struct tprefix *pfx = dir ? bd->dst : bd->src;
	int err = 0;

	for (int fi = 0; fi < 2 && !err; fi++) {
		int fam = fi ? 6 : 4, bits = fi ? 128 : 32;
		u128 max = fi ? ~(u128)0 : 0xffffffffu;
		u128 *pt = calloc(2 * th->nrules + 1, sizeof(*pt));
		uint32_t npt = 0, base = fi ? bd->m.n6 : bd->m.n4, k = 0;

		if (!pt)
			return -ENOMEM;
		pt[npt++] = 0;
		for (uint32_t j = 0; j < th->nrules; j++) {
			u128 host, first;

			if (pfx[j].fam != fam)
				continue;
			host = host_of(pfx[j].len, bits);
			first = tprefix_value(&pfx[j]) & ~host & max;
			pt[npt++] = first;
			if ((first | host) != max)
				pt[npt++] = (first | host) + 1;
		}
		qsort(pt, npt, sizeof(*pt), u128_cmp);
		for (uint32_t i = 0; i < npt && !err; i++) {
			bool covered = false;
			uint32_t loc = NFB_LOC_UNSET;

			if (i && pt[i] == pt[i - 1])
				continue;
			vzero(bd);
			for (uint32_t j = 0; j < th->nrules; j++) {
				u128 host;

				if (!pfx[j].fam) {
					bd->v[j / 64] |= UINT64_C(1) << (j % 64);
					continue;
				}
				if (pfx[j].fam != fam)
					continue;
				host = host_of(pfx[j].len, bits);
				if ((pt[i] & ~host) == (tprefix_value(&pfx[j]) & ~host & max)) {
					bd->v[j / 64] |= UINT64_C(1) << (j % 64);
					covered = true;
				}
			}
			if (covered && (err = vput(bd, &loc)))
				break;
			if (fi && base + k < bd->m.cap6)
				bd->m.r6[base + k] = (struct nfb_range6){ .hi = (uint64_t)(pt[i] >> 64),
									  .lo = (uint64_t)pt[i],
									  .loc = loc };
			else if (!fi && base + k < bd->m.cap4)
				bd->m.r4[base + k] = (struct nfb_range4){ .start = (uint32_t)pt[i], .loc = loc };
			else
				err = -ENOSPC;
			k++;
		}
		free(pt);
		hc->range[fi][dir][0] = base;
		hc->range[fi][dir][1] = k;
		if (fi)
			bd->m.n6 += k;
		else
			bd->m.n4 += k;
	}
	return err;
}

static int compile_hook(struct build *bd, int h, const struct thook *th, struct nfb_hook_cfg *hc)
{
	int err;

	memset(hc, 0, sizeof(*hc));
	if (!th->enabled)
		return 0;
	hc->enabled = 1;
	hc->nrules = th->nrules;
	bd->nwords = bitvec_words_for(th->nrules);
	hc->nsum = bitvec_nsum(bd->nwords);
	hc->default_action = th->default_action;
	hc->default_counter = slot_default(h);
	hc->rule_base = (uint32_t)h * NFB_MAX_RULES;
	bd->src = calloc(th->nrules + 1, sizeof(*bd->src));
	bd->dst = calloc(th->nrules + 1, sizeof(*bd->dst));
	if (!bd->src || !bd->dst)
		return -ENOMEM;
	for (uint32_t i = 0; i < th->nrules; i++) {
		const struct trule *r = &th->rules[i];

		if (parse_prefix(r->src, &bd->src[i]) || parse_prefix(r->dst, &bd->dst[i]))
			return -EINVAL;
		hc->fields |= (r->iif ? 1u << NFB_F_IIF : 0) | (r->oif ? 1u << NFB_F_OIF : 0) |
			      (r->src ? 1u << NFB_F_SRC : 0) | (r->dst ? 1u << NFB_F_DST : 0) |
			      (!l4_any(r) ? 1u << NFB_F_L4 : 0) | (r->sport_hi ? 1u << NFB_F_SPORT : 0) |
			      (r->ct ? 1u << NFB_F_CT : 0);
		bd->m.rules[hc->rule_base + i] = (struct nfb_rule){
			.action = r->action,
			.flags = r->log ? NFB_RULE_LOG : 0,
			.counter = slot_rule(h, i),
		};
	}
	for (int f = 0; f < NFB_F_MAX; f++)
		if ((err = vec_unrestricted(bd, th, f, &hc->miss[f])))
			return err;
	hc->sport_none = hc->miss[NFB_F_SPORT];
	for (int s = 0; s < NFB_CT_MAX; s++) {
		vzero(bd);
		for (uint32_t i = 0; i < th->nrules; i++)
			if (!th->rules[i].ct || th->rules[i].ct & CTS(s))
				bd->v[i / 64] |= UINT64_C(1) << (i % 64);
		if ((err = vput(bd, &hc->ct[s])))
			return err;
	}
	for (int dir = 0; dir < 2; dir++) {
		for (int pc = 0; pc < NFB_PC_MAX; pc++)
			if ((err = compile_ports(bd, h, th, dir, pc)))
				return err;
		if ((err = compile_iface(bd, h, th, dir)) || (err = compile_addr(bd, th, dir, hc)))
			return err;
	}
	err = compile_misc(bd, h, th);
	free(bd->src);
	free(bd->dst);
	bd->src = bd->dst = NULL;
	return err;
}

/* An inner map shaped like the skeleton's template for outer i. */
static int inner_create(struct env *e, int i, uint32_t max_entries)
{
	const struct shape *t = &e->shape[i];
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = t->flags);

	return bpf_map_create(t->type, "nfb_test_inner", t->key_size, t->value_size,
			      max_entries ? max_entries : t->max_entries, &o);
}

static void *map_mmap(int fd, size_t bytes)
{
	size_t pg = sysconf(_SC_PAGESIZE), len = (bytes + pg - 1) / pg * pg;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void map_munmap(void *p, size_t bytes)
{
	size_t pg = sysconf(_SC_PAGESIZE);

	if (p)
		munmap(p, (bytes + pg - 1) / pg * pg);
}

static int set_ctl(struct env *e, uint32_t gen)
{
	struct nfb_ctl ctl = { .active_gen = gen };
	uint32_t zero = 0;

	return bpf_map_update_elem(bpf_map__fd(e->skel->maps.nfb_ctl), &zero, &ctl, BPF_ANY) ? -errno : 0;
}

/* Compile pol into generation gen (maps, outers' slot gen, nfb_gen[gen]). */
static int install(struct env *e, const struct tpolicy *pol, uint32_t gen)
{
	struct build bd = { 0 };
	struct nfb_gen_cfg cfg = {
		.options = pol->options,
		.log_rate = pol->log_rate,
		.log_burst = pol->log_burst,
		.log_period = pol->log_period,
		.established_counter = SLOT_ESTABLISHED,
		.cnt_cap = CNT_CAP,
		.cnt_cpus = (uint32_t)e->ncpus,
	};
	uint32_t nprefix = 64;
	int err = 0;

	for (int i = 0; i < GM_N; i++)
		bd.m.fd[i] = -1;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		nprefix += pol->hook[h].enabled ? 2 * (2 * pol->hook[h].nrules + 1) : 0;
	bd.v = calloc(NFB_MAX_WORDS, sizeof(uint64_t));
	bd.blob.tab = calloc(1u << DEDUP_BITS, sizeof(struct dedup_ent));
	/* Address arrays and the iface hash sized per generation, smaller than
	 * the templates: the outer must accept them. */
	bd.m.cap4 = bd.m.cap6 = nprefix;
	bd.m.fd[GM_ADDR4] = inner_create(e, GM_ADDR4, nprefix);
	bd.m.fd[GM_ADDR6] = inner_create(e, GM_ADDR6, nprefix);
	bd.m.fd[GM_IFACE] = inner_create(e, GM_IFACE, 256);
	bd.m.fd[GM_PORT] = inner_create(e, GM_PORT, NFB_PORT_MAX_ENTRIES);
	bd.m.fd[GM_MISC] = inner_create(e, GM_MISC, 0);
	bd.m.fd[GM_RULES] = inner_create(e, GM_RULES, NFB_RULE_ENTRIES);
	bd.m.fd[GM_COUNTERS] = dup(e->cnt_fd);
	for (int i = 0; i < GM_BLOB; i++)
		if (bd.m.fd[i] < 0) {
			err = bd.m.fd[i];
			goto out;
		}
	bd.m.port = map_mmap(bd.m.fd[GM_PORT], U32_ARRAY_BYTES(NFB_PORT_MAX_ENTRIES));
	bd.m.r4 = map_mmap(bd.m.fd[GM_ADDR4], (size_t)nprefix * sizeof(struct nfb_range4));
	bd.m.r6 = map_mmap(bd.m.fd[GM_ADDR6], (size_t)nprefix * sizeof(struct nfb_range6));
	bd.m.misc = map_mmap(bd.m.fd[GM_MISC], U32_ARRAY_BYTES(NFB_MISC_ENTRIES));
	bd.m.rules = map_mmap(bd.m.fd[GM_RULES], NFB_RULE_ENTRIES * sizeof(struct nfb_rule));
	if (!bd.v || !bd.blob.tab || !bd.m.port || !bd.m.misc || !bd.m.rules || bd.m.fd[GM_COUNTERS] < 0 || !bd.m.r4 ||
	    !bd.m.r6) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < NFB_PORT_TOP; i++) /* every port unset until compile_ports */
		bd.m.port[U32_STRIDE * i] = 1 + i;
	for (uint32_t i = NFB_PORT_TOP; i < NFB_PORT_MAX_ENTRIES; i++)
		bd.m.port[U32_STRIDE * i] = UINT32_MAX;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		if ((err = compile_hook(&bd, h, &pol->hook[h], &cfg.hook[h])))
			goto out;
	if (!bd.blob.nchunks) { /* no hook: keep the blob non-empty */
		uint32_t loc;

		bd.nwords = 1;
		vzero(&bd);
		if ((err = vput(&bd, &loc)))
			goto out;
	}
	bd.m.fd[GM_BLOB] = inner_create(e, GM_BLOB, bd.blob.nchunks);
	if (bd.m.fd[GM_BLOB] < 0) {
		err = bd.m.fd[GM_BLOB];
		goto out;
	}
	{
		size_t bytes = (size_t)bd.blob.nchunks * sizeof(struct nfb_chunk);
		void *p = map_mmap(bd.m.fd[GM_BLOB], bytes);

		if (!p) {
			err = -errno;
			goto out;
		}
		memcpy(p, bd.blob.w, bytes);
		map_munmap(p, bytes);
	}
	for (int i = 0; i < GM_N; i++)
		if (bpf_map_update_elem(e->outer_fd[i], &gen, &bd.m.fd[i], BPF_ANY)) {
			err = -errno;
			goto out;
		}
	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.nfb_gen), &gen, &cfg, BPF_ANY))
		err = -errno;
out:
	map_munmap(bd.m.port, U32_ARRAY_BYTES(NFB_PORT_MAX_ENTRIES));
	map_munmap(bd.m.r4, (size_t)nprefix * sizeof(struct nfb_range4));
	map_munmap(bd.m.r6, (size_t)nprefix * sizeof(struct nfb_range6));
	map_munmap(bd.m.misc, U32_ARRAY_BYTES(NFB_MISC_ENTRIES));
	map_munmap(bd.m.rules, NFB_RULE_ENTRIES * sizeof(struct nfb_rule));
	for (int i = 0; i < GM_N; i++)
		if (bd.m.fd[i] >= 0)
			close(bd.m.fd[i]);
	free(bd.src);
	free(bd.dst);
	free(bd.v);
	free(bd.blob.w);
	free(bd.blob.tab);
	return err;
}

/* ---- packets ----------------------------------------------------------- */

/* An IPv6 extension header: type, length in bytes, fragment field. */
struct text {
	uint8_t type;
	uint16_t len;
	uint16_t frag_off; /* host order: offset << 3 | M */
};

#define L4B(n) ((n) + 1)

struct tpkt {
	int fam; /* 4 or 6 */
	const char *src, *dst;
	int proto;
	int sport, dport;
	int icmp_type, icmp_code;
	int l4bytes;   /* L4B(n): n bytes of L4; 0: a full header */
	uint16_t frag; /* IPv4 frag_off field, host order */
	struct text ext[12];
	int next;
	/* malformations */
	int ihl;       /* 0: 5 */
	int version;   /* 0: the right one */
	int cut;       /* truncate to this many bytes (length fields follow) */
	int len_delta; /* then add this to the length field */
};

#define MF 0x2000

static size_t build_l4(const struct tpkt *t, uint8_t *p)
{
	size_t n;

	switch (t->proto) {
	case 6:
		n = 20;
		p[12] = 5 << 4;
		break;
	case 17:
		n = 8;
		break;
	case 132:
		n = 12;
		break;
	case 1:
	case 58:
		n = 8;
		break;
	default:
		n = 8;
	}
	if (t->proto == 1 || t->proto == 58) {
		p[0] = t->icmp_type;
		p[1] = t->icmp_code;
	} else {
		p[0] = t->sport >> 8;
		p[1] = t->sport;
		p[2] = t->dport >> 8;
		p[3] = t->dport;
	}
	if (t->proto == 17)
		p[4] = 0, p[5] = 8;
	return t->l4bytes ? (size_t)t->l4bytes - 1 : n;
}

static size_t build_pkt(const struct tpkt *t, uint8_t *buf, size_t cap)
{
	const char *src = t->src, *dst = t->dst;
	size_t len;

	memset(buf, 0, cap);
	if (t->fam == 4) {
		int ihl = t->ihl ? t->ihl : 5;
		size_t hl = ihl * 4 > 20 ? ihl * 4 : 20;

		if (!src)
			src = "198.51.100.1";
		if (!dst)
			dst = "203.0.113.1";
		buf[0] = (t->version ? t->version : 4) << 4 | ihl;
		buf[4] = 0x12;
		buf[6] = t->frag >> 8;
		buf[7] = t->frag;
		buf[8] = 64;
		buf[9] = t->proto;
		inet_pton(AF_INET, src, buf + 12);
		inet_pton(AF_INET, dst, buf + 16);
		memset(buf + 20, 1, hl - 20); /* NOP options */
		len = hl + build_l4(t, buf + hl);
		if (t->cut)
			len = t->cut;
		buf[2] = (len + t->len_delta) >> 8;
		buf[3] = len + t->len_delta;
	} else {
		size_t off = 40;
		uint8_t *nh = buf + 6;
		int plen;

		if (!src)
			src = "2001:db8:2::1";
		if (!dst)
			dst = "2001:db8:3::1";
		buf[0] = (t->version ? t->version : 6) << 4;
		buf[7] = 64;
		inet_pton(AF_INET6, src, buf + 8);
		inet_pton(AF_INET6, dst, buf + 24);
		for (int i = 0; i < t->next; i++) {
			const struct text *x = &t->ext[i];

			*nh = x->type;
			nh = buf + off;
			if (x->type == 44) {
				buf[off + 2] = x->frag_off >> 8;
				buf[off + 3] = x->frag_off;
				buf[off + 7] = 1;
				off += 8;
			} else if (x->type == 51) {
				buf[off + 1] = x->len / 4 - 2;
				off += x->len;
			} else {
				buf[off + 1] = x->len / 8 - 1;
				off += x->len;
			}
		}
		*nh = t->proto;
		len = off + build_l4(t, buf + off);
		if (t->cut)
			len = t->cut;
		plen = (len > 40 ? (int)len - 40 : 0) + t->len_delta;
		buf[4] = plen >> 8;
		buf[5] = plen;
	}
	return len;
}

static const int nf_hook_of[NFB_HOOK_MAX] = { NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT };

/* The user's view of struct nf_hook_state for test_run: hook and pf only. */
struct nf_state_in {
	uint8_t hook, pf, pad[6];
	uint64_t in, out, sk, net, okfn;
};

static int run_ip(struct env *e, int hook, int fam, const uint8_t *ip, size_t len, uint32_t repeat, uint32_t *retval,
		  uint32_t *duration)
{
	uint8_t frame[4096] = { 0 };
	size_t off = 0;
	struct nf_state_in st = { .hook = nf_hook_of[hook], .pf = fam == 4 ? NFPROTO_IPV4 : NFPROTO_IPV6 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &st, .ctx_size_in = sizeof(st), .repeat = repeat);
	int err;

	if (st.hook != NF_INET_LOCAL_OUT) {
		frame[12] = fam == 4 ? 0x08 : 0x86;
		frame[13] = fam == 4 ? 0x00 : 0xdd;
		off = 14;
	}
	memcpy(frame + off, ip, len);
	o.data_in = frame;
	o.data_size_in = off + len;
	err = bpf_prog_test_run_opts(e->prog_fd, &o);
	if (err)
		return -errno;
	*retval = o.retval;
	if (duration)
		*duration = o.duration;
	return 0;
}

static int read_counter(struct env *e, uint32_t slot, struct nfb_counter *sum)
{
	struct nfb_counter v[e->ncpus];

	memset(sum, 0, sizeof(*sum));
	if (slot >= NFB_CNT_FIRST_RULE) { /* the generations' map: CPU rows and the carry row */
		for (uint32_t row = 0; row <= (uint32_t)e->ncpus; row++) {
			sum->packets += e->cnt[nfb_cnt_index(CNT_CAP, row, slot)].packets;
			sum->bytes += e->cnt[nfb_cnt_index(CNT_CAP, row, slot)].bytes;
		}
		return 0;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.nfb_fixed), &slot, v))
		return -errno;
	for (int i = 0; i < e->ncpus; i++) {
		sum->packets += v[i].packets;
		sum->bytes += v[i].bytes;
	}
	return 0;
}

/* ---- fixtures ---------------------------------------------------------- */

enum {
	X_DEFAULT = -1,	  /* the hook's default verdict and counter */
	X_MALFORMED = -2, /* NFB_CNT_MALFORMED */
	X_NOGEN = -3,	  /* NFB_CNT_NO_GEN */
	X_NONE = -4,	  /* no counter at all (hook not enforced) */
	X_FRAGMENT = -5,  /* NFB_CNT_FRAGMENT */
};

struct fixture {
	const char *name;
	int hook; /* NFB_HOOK_* */
	struct tpkt pkt;
	int verdict;
	int expect; /* rule index, or X_* */
};

#define DROP   NF_DROP
#define ACCEPT NF_ACCEPT

static uint32_t expect_slot(const struct fixture *f)
{
	switch (f->expect) {
	case X_DEFAULT:
		return slot_default(f->hook);
	case X_MALFORMED:
		return NFB_CNT_MALFORMED;
	case X_FRAGMENT:
		return NFB_CNT_FRAGMENT;
	case X_NOGEN:
	case X_NONE:
		return NFB_CNT_NO_GEN;
	default:
		return slot_rule(f->hook, f->expect);
	}
}

/* After a failure: run the packet again and name the counter it moved. */
static void explain(struct env *e, int hook, int fam, const uint8_t *pkt, size_t len)
{
	enum {
		N = 64
	};
	struct nfb_counter before[N + 2], after;
	uint32_t slots[N + 2], retval;

	for (int i = 0; i < N; i++)
		slots[i] = slot_rule(hook, i);
	slots[N] = slot_default(hook);
	slots[N + 1] = NFB_CNT_MALFORMED;
	for (int i = 0; i < N + 2; i++)
		read_counter(e, slots[i], &before[i]);
	if (run_ip(e, hook, fam, pkt, len, 1, &retval, NULL))
		return;
	for (int i = 0; i < N + 2; i++) {
		read_counter(e, slots[i], &after);
		if (after.packets != before[i].packets)
			printf("# verdict %u, counted in %s %d\n", retval,
			       i < N	? "rule"
			       : i == N ? "default"
					: "malformed",
			       i < N ? i : -1);
	}
}

static void run_fixture(struct env *e, const char *group, const struct fixture *f)
{
	char name[160];
	uint8_t pkt[4096];
	size_t len = build_pkt(&f->pkt, pkt, sizeof(pkt));
	uint32_t slot = expect_slot(f), retval = ~0u;
	struct nfb_counter b0, b1, m0, m1, d0, d1;
	int err;

	snprintf(name, sizeof(name), "%s/%s", group, f->name);
	check_begin(name);
	read_counter(e, slot, &b0);
	read_counter(e, NFB_CNT_MALFORMED, &m0);
	read_counter(e, slot_default(f->hook), &d0);
	err = run_ip(e, f->hook, f->pkt.fam, pkt, len, 1, &retval, NULL);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_INT(retval, f->verdict);
	read_counter(e, slot, &b1);
	read_counter(e, NFB_CNT_MALFORMED, &m1);
	read_counter(e, slot_default(f->hook), &d1);
	if (f->expect == X_NONE) {
		CHECK_EQ_INT(b1.packets - b0.packets, 0);
		CHECK_EQ_INT(d1.packets - d0.packets, 0);
	} else {
		CHECK_EQ_INT(b1.packets - b0.packets, 1);
		CHECK_EQ_INT(b1.bytes - b0.bytes, len);
	}
	if (f->expect != X_MALFORMED)
		CHECK_EQ_INT(m1.packets - m0.packets, 0);
	if (f->expect >= 0)
		CHECK_EQ_INT(d1.packets - d0.packets, 0);
	if (check_case_failed)
		explain(e, f->hook, f->pkt.fam, pkt, len);
	check_end();
}

static void run_group(struct env *e, const char *group, const struct tpolicy *pol, uint32_t gen,
		      const struct fixture *fx, size_t n)
{
	char name[128];
	int err;

	snprintf(name, sizeof(name), "%s/install", group);
	check_begin(name);
	err = install(e, pol, gen);
	CHECK_EQ_INT(err, 0);
	if (!err)
		CHECK_EQ_INT(set_ctl(e, gen), 0);
	check_end();
	if (err)
		return;
	for (size_t i = 0; i < n; i++)
		run_fixture(e, group, &fx[i]);
}

#define RUN_GROUP(e, name, pol, gen, fx) run_group(e, name, pol, gen, fx, sizeof(fx) / sizeof(fx[0]))

#define TCP(...)  { .fam = 4, .proto = 6, __VA_ARGS__ }
#define UDP(...)  { .fam = 4, .proto = 17, __VA_ARGS__ }
#define TCP6(...) { .fam = 6, .proto = 6, __VA_ARGS__ }
#define UDP6(...) { .fam = 6, .proto = 17, __VA_ARGS__ }

/* Group "match": every field kind, both families, INPUT hook. */
static const struct tpolicy pol_match = {
	.hook[NFB_HOOK_INPUT] = { .enabled = true,
				  .default_action = NFB_ACT_ACCEPT,
				  .rules = RULES(
					  /* 0 */ { .action = NFB_ACT_ACCEPT, .src = "192.0.2.128/25" },
					  /* 1 */ { .action = NFB_ACT_DROP, .src = "192.0.2.0/24" },
					  /* 2 */
					  { .action = NFB_ACT_ACCEPT,
					    .dst = "203.0.113.0/24",
					    .proto = 6,
					    .dport_lo = 22,
					    .dport_hi = 22 },
					  /* 3 */
					  { .action = NFB_ACT_DROP, .proto = 6, .dport_lo = 8000, .dport_hi = 8099 },
					  /* 4 */
					  { .action = NFB_ACT_ACCEPT, .proto = 17, .sport_lo = 53, .sport_hi = 53 },
					  /* 5 */ { .action = NFB_ACT_DROP, .proto = 47 },
					  /* 6 */ { .action = NFB_ACT_ACCEPT, .proto = 1, .icmp_type = ICMPT(8) },
					  /* 7 */ { .action = NFB_ACT_DROP, .proto = 1 },
					  /* 8 */ { .action = NFB_ACT_ACCEPT, .src = "2001:db8:1:1::/64" },
					  /* 9 */ { .action = NFB_ACT_DROP, .src = "2001:db8:1::/48" },
					  /* 10 */
					  { .action = NFB_ACT_DROP,
					    .dst = "2001:db8:ff::/48",
					    .proto = 6,
					    .dport_lo = 443,
					    .dport_hi = 443 },
					  /* 11 */ { .action = NFB_ACT_ACCEPT, .proto = 58, .icmp_type = ICMPT(128) },
					  /* 12 */ { .action = NFB_ACT_DROP, .proto = 58 },
					  /* 13 */
					  { .action = NFB_ACT_DROP,
					    .proto = 132,
					    .dport_lo = 9,
					    .dport_hi = 9,
					    .sport_lo = 1000,
					    .sport_hi = 2000 },
					  /* 14 */
					  { .action = NFB_ACT_DROP, .proto = 17, .dport_lo = 7, .dport_hi = 7 }, ) },
};

static const struct fixture fx_match[] = {
	{ "v4_src_longest_prefix", 0, TCP(.src = "192.0.2.200", .dport = 1), ACCEPT, 0 },
	{ "v4_src_shorter_prefix", 0, TCP(.src = "192.0.2.5", .dport = 1), DROP, 1 },
	{ "v4_dst_prefix_dport", 0, TCP(.dst = "203.0.113.5", .dport = 22), ACCEPT, 2 },
	{ "v4_dst_prefix_other_dport", 0, TCP(.dst = "203.0.113.5", .dport = 23), ACCEPT, X_DEFAULT },
	{ "v4_dst_outside_prefix", 0, TCP(.dst = "198.51.100.9", .dport = 22), ACCEPT, X_DEFAULT },
	{ "v4_dport_range_low", 0, TCP(.dport = 8000), DROP, 3 },
	{ "v4_dport_range_high", 0, TCP(.dport = 8099), DROP, 3 },
	{ "v4_dport_range_below", 0, TCP(.dport = 7999), ACCEPT, X_DEFAULT },
	{ "v4_dport_range_above", 0, TCP(.dport = 8100), ACCEPT, X_DEFAULT },
	{ "v4_dport_range_udp_not_tcp", 0, UDP(.dport = 8000), ACCEPT, X_DEFAULT },
	{ "v4_sport", 0, UDP(.sport = 53, .dport = 4444), ACCEPT, 4 },
	{ "v4_sport_other", 0, UDP(.sport = 54, .dport = 4444), ACCEPT, X_DEFAULT },
	{ "v4_sport_tcp_not_udp", 0, TCP(.sport = 53, .dport = 4444), ACCEPT, X_DEFAULT },
	{ "v4_sctp_sport_dport", 0, { .fam = 4, .proto = 132, .sport = 1500, .dport = 9 }, DROP, 13 },
	{ "v4_sctp_sport_out", 0, { .fam = 4, .proto = 132, .sport = 2001, .dport = 9 }, ACCEPT, X_DEFAULT },
	{ "v4_proto_only", 0, { .fam = 4, .proto = 47 }, DROP, 5 },
	{ "v4_proto_other", 0, { .fam = 4, .proto = 50 }, ACCEPT, X_DEFAULT },
	{ "v4_icmp_type", 0, { .fam = 4, .proto = 1, .icmp_type = 8 }, ACCEPT, 6 },
	{ "v4_icmp_other_type", 0, { .fam = 4, .proto = 1, .icmp_type = 0 }, DROP, 7 },
	{ "v6_src_longest_prefix", 0, TCP6(.src = "2001:db8:1:1::5", .dport = 1), ACCEPT, 8 },
	{ "v6_src_shorter_prefix", 0, TCP6(.src = "2001:db8:1:2::5", .dport = 1), DROP, 9 },
	{ "v6_src_outside", 0, TCP6(.src = "2001:db8:5::5", .dport = 1), ACCEPT, X_DEFAULT },
	{ "v6_dst_prefix_dport", 0, TCP6(.dst = "2001:db8:ff::1", .dport = 443), DROP, 10 },
	{ "v6_dst_prefix_other_dport", 0, TCP6(.dst = "2001:db8:ff::1", .dport = 444), ACCEPT, X_DEFAULT },
	{ "v6_dport_range", 0, TCP6(.dport = 8050), DROP, 3 },
	{ "v6_sport", 0, UDP6(.sport = 53, .dport = 5), ACCEPT, 4 },
	{ "v6_udp_dport", 0, UDP6(.sport = 1, .dport = 7), DROP, 14 },
	{ "v6_proto_only", 0, { .fam = 6, .proto = 47 }, DROP, 5 },
	{ "v6_icmpv6_type", 0, { .fam = 6, .proto = 58, .icmp_type = 128 }, ACCEPT, 11 },
	{ "v6_icmpv6_other_type", 0, { .fam = 6, .proto = 58, .icmp_type = 129 }, DROP, 12 },
	{ "v4_proto58_is_not_icmpv6", 0, { .fam = 4, .proto = 58, .icmp_type = 128 }, DROP, 12 },
};

/* Group "iface_ct": interfaces, conntrack state, FORWARD and OUTPUT. */
static const struct trule rules_iface_ct[] = {
	/* 0 */ { .action = NFB_ACT_DROP, .iif = IFX(0), .proto = 17, .dport_lo = 9, .dport_hi = 9 },
	/* 1 */ { .action = NFB_ACT_DROP, .oif = IFX(1), .proto = 17, .dport_lo = 10, .dport_hi = 10 },
	/* 2 */ { .action = NFB_ACT_DROP, .oif = IFX(999), .proto = 17, .dport_lo = 11, .dport_hi = 11 },
	/* 3 */ { .action = NFB_ACT_DROP, .iif = IFX(1), .proto = 17, .dport_lo = 12, .dport_hi = 12 },
	/* 4 */ { .action = NFB_ACT_DROP, .ct = CTS(NFB_CT_INVALID), .proto = 17, .dport_lo = 13, .dport_hi = 13 },
	/* 5 */ { .action = NFB_ACT_DROP, .ct = CTS(NFB_CT_NEW), .proto = 17, .dport_lo = 14, .dport_hi = 14 },
	/* 6 */
	{ .action = NFB_ACT_DROP,
	  .ct = CTS(NFB_CT_ESTABLISHED) | CTS(NFB_CT_RELATED) | CTS(NFB_CT_UNTRACKED),
	  .proto = 17,
	  .dport_lo = 15,
	  .dport_hi = 15 },
};

static const struct tpolicy pol_iface_ct = {
	.options = NFB_OPT_ESTABLISHED_ACCEPT,
	.hook[NFB_HOOK_FORWARD] = { .enabled = true,
				    .default_action = NFB_ACT_ACCEPT,
				    .rules = rules_iface_ct,
				    .nrules = 7 },
	.hook[NFB_HOOK_OUTPUT] = { .enabled = true,
				   .default_action = NFB_ACT_ACCEPT,
				   .rules = rules_iface_ct,
				   .nrules = 7 },
};

static const struct fixture fx_iface_ct[] = {
	/* test_run: in == NULL (ifindex 0 reaches the iface map), out == lo (1). */
	{ "fwd_iif_null_is_ifindex0", 1, UDP(.dport = 9), DROP, 0 },
	{ "fwd_oif_lo", 1, UDP(.dport = 10), DROP, 1 },
	{ "fwd_oif_miss", 1, UDP(.dport = 11), ACCEPT, X_DEFAULT },
	{ "fwd_iif_miss", 1, UDP(.dport = 12), ACCEPT, X_DEFAULT },
	{ "fwd_ct_invalid", 1, UDP(.dport = 13), DROP, 4 },
	{ "fwd_ct_new_not_invalid", 1, UDP(.dport = 14), ACCEPT, X_DEFAULT },
	{ "fwd_ct_est_not_invalid", 1, UDP(.dport = 15), ACCEPT, X_DEFAULT },
	{ "out_oif_lo_v6", 2, UDP6(.dport = 10), DROP, 1 },
	{ "out_iif_null_v6", 2, UDP6(.dport = 9), DROP, 0 },
	{ "out_ct_invalid_v6", 2, UDP6(.dport = 13), DROP, 4 },
	{ "input_not_enforced", 0, UDP(.dport = 13), ACCEPT, X_NONE },
};

/* Group "order": first match wins, defaults, no-field and empty hooks. */
static const struct tpolicy pol_order = {
	.hook[NFB_HOOK_INPUT] = { .enabled = true,
				  .default_action = NFB_ACT_DROP,
				  .rules = RULES(
					  /* 0 */ { .action = NFB_ACT_ACCEPT,
						    .src = "192.0.2.0/24",
						    .proto = 6,
						    .dport_lo = 80,
						    .dport_hi = 80 },
					  /* 1 */
					  { .action = NFB_ACT_DROP, .proto = 6, .dport_lo = 80, .dport_hi = 80 },
					  /* 2 */
					  { .action = NFB_ACT_ACCEPT, .proto = 6, .dport_lo = 1, .dport_hi = 1024 },
					  /* 3 */ { .action = NFB_ACT_DROP, .src = "192.0.2.0/24" },
					  /* 4 */ { .action = NFB_ACT_ACCEPT, .proto = 17 }, ) },
	.hook[NFB_HOOK_FORWARD] = { .enabled = true,
				    .default_action = NFB_ACT_DROP,
				    .rules = RULES(
					    /* 0 */ { .action = NFB_ACT_ACCEPT }, /* no field at all: every packet */
					    /* 1 */ { .action = NFB_ACT_DROP }, ) },
	.hook[NFB_HOOK_OUTPUT] = { .enabled = true, .default_action = NFB_ACT_DROP }, /* no rules */
};

static const struct fixture fx_order[] = {
	{ "first_of_three", 0, TCP(.src = "192.0.2.1", .dport = 80), ACCEPT, 0 },
	{ "second_when_first_misses", 0, TCP(.src = "198.51.100.1", .dport = 80), DROP, 1 },
	{ "range_after_exact", 0, TCP(.src = "192.0.2.1", .dport = 81), ACCEPT, 2 },
	{ "src_only_after_ports", 0, TCP(.src = "192.0.2.1", .dport = 2000), DROP, 3 },
	{ "proto_udp", 0, UDP(.src = "198.51.100.1", .dport = 2000), ACCEPT, 4 },
	{ "default_drop", 0, TCP(.src = "198.51.100.1", .dport = 2000), DROP, X_DEFAULT },
	{ "default_drop_v6", 0, TCP6(.dport = 2000), DROP, X_DEFAULT },
	{ "no_field_rule0", 1, TCP(.dport = 5), ACCEPT, 0 },
	{ "no_field_rule0_v6", 1, { .fam = 6, .proto = 58 }, ACCEPT, 0 },
	{ "no_rules_default", 2, TCP(.dport = 5), DROP, X_DEFAULT },
};

/* Group "malformed": headers, fragments, truncation, extension chains. */
static const struct trule rules_malformed[] = {
	/* 0 */ { .action = NFB_ACT_DROP, .proto = 6, .dport_lo = 80, .dport_hi = 80 },
	/* 1 */ { .action = NFB_ACT_DROP, .proto = 17, .dport_lo = 53, .dport_hi = 53 },
	/* 2 */ { .action = NFB_ACT_ACCEPT, .proto = 17 }, /* proto only: matches fragments */
	/* 3 */ { .action = NFB_ACT_DROP, .proto = 1, .icmp_type = ICMPT(8) },
	/* 4 */ { .action = NFB_ACT_DROP, .sport_lo = 7, .sport_hi = 7 },
};

static const struct tpolicy pol_malformed = {
	.hook[NFB_HOOK_INPUT] = { .enabled = true,
				  .default_action = NFB_ACT_ACCEPT,
				  .rules = rules_malformed,
				  .nrules = 5 },
	.hook[NFB_HOOK_OUTPUT] = { .enabled = true,
				   .default_action = NFB_ACT_ACCEPT,
				   .rules = rules_malformed,
				   .nrules = 5 },
};

#define HBH(n)	 { .type = 0, .len = (n) }
#define DSTO(n)	 { .type = 60, .len = (n) }
#define RTH(n)	 { .type = 43, .len = (n) }
#define AH(n)	 { .type = 51, .len = (n) }
#define FRAG6(f) { .type = 44, .len = 8, .frag_off = (f) }

static const struct fixture fx_malformed[] = {
	{ "v4_ihl_below_5", 0, UDP(.dport = 53, .ihl = 4), DROP, X_MALFORMED },
	{ "v4_ihl_beyond_packet", 0, UDP(.dport = 53, .ihl = 15, .cut = 40), DROP, X_MALFORMED },
	{ "v4_options_truncated", 2, { .fam = 4, .proto = 17, .ihl = 6, .cut = 20 }, DROP, X_MALFORMED },
	{ "v4_total_length_beyond", 0, UDP(.dport = 53, .len_delta = 10), DROP, X_MALFORMED },
	{ "v4_total_length_below_ihl", 0, UDP(.dport = 53, .len_delta = -12), DROP, X_MALFORMED },
	{ "v4_version_6", 0, UDP(.dport = 53, .version = 6), DROP, X_MALFORMED },
	{ "v6_header_truncated", 2, UDP6(.dport = 53, .cut = 30), DROP, X_MALFORMED },
	{ "v6_payload_beyond", 0, UDP6(.dport = 53, .len_delta = 1), DROP, X_MALFORMED },
	{ "v6_version_4", 0, UDP6(.dport = 53, .version = 4), DROP, X_MALFORMED },
	{ "v4_options_ok", 0, UDP(.dport = 53, .ihl = 6), DROP, 1 },
	{ "v4_trailing_bytes_ok", 0, UDP(.dport = 53, .len_delta = -1), DROP, 1 },
	/* An L4 key cut short is malformed: no key that rules cannot see. */
	{ "v4_tcp_ports_truncated", 0, TCP(.dport = 80, .l4bytes = L4B(3)), DROP, X_MALFORMED },
	{ "v4_tcp_total_len_cuts_ports", 0, TCP(.dport = 80, .len_delta = -17), DROP, X_MALFORMED },
	{ "v4_udp_truncated_proto_rule", 0, UDP(.dport = 53, .l4bytes = L4B(3)), DROP, X_MALFORMED },
	{ "v4_udp_ports_only_ok", 0, UDP(.dport = 53, .l4bytes = L4B(4)), DROP, 1 },
	{ "v4_first_fragment_mf", 0, UDP(.dport = 53, .frag = MF), ACCEPT, 2 },
	{ "v4_middle_fragment", 0, UDP(.dport = 53, .frag = MF | 185), ACCEPT, 2 },
	{ "v4_last_fragment", 0, UDP(.dport = 53, .frag = 185), ACCEPT, 2 },
	{ "v4_df_not_fragment", 0, UDP(.dport = 53, .frag = 0x4000), DROP, 1 },
	{ "v4_tcp_fragment_no_port_rule", 0, TCP(.dport = 80, .frag = MF), ACCEPT, X_DEFAULT },
	{ "v4_fragment_no_sport_rule", 0, TCP(.sport = 7, .dport = 1, .frag = MF), ACCEPT, X_DEFAULT },
	{ "v4_icmp_no_type", 0, { .fam = 4, .proto = 1, .icmp_type = 8, .l4bytes = L4B(0) }, DROP, X_MALFORMED },
	{ "v4_icmp_type_only", 2, { .fam = 4, .proto = 1, .icmp_type = 8, .l4bytes = L4B(1) }, DROP, X_MALFORMED },
	{ "v4_icmp_type_code", 2, { .fam = 4, .proto = 1, .icmp_type = 8, .l4bytes = L4B(2) }, DROP, 3 },
	{ "v6_nonfirst_fragment", 0, UDP6(.dport = 53, .ext = { FRAG6(100 << 3) }, .next = 1), ACCEPT, 2 },
	{ "v6_first_fragment_m", 0, UDP6(.dport = 53, .ext = { FRAG6(1) }, .next = 1), ACCEPT, 2 },
	{ "v6_atomic_fragment", 0, UDP6(.dport = 53, .ext = { FRAG6(0) }, .next = 1), DROP, 1 },
	{ "v6_tcp_fragment_no_port_rule", 0, TCP6(.dport = 80, .ext = { FRAG6(1) }, .next = 1), ACCEPT, X_DEFAULT },
	{ "v6_ext_chain", 0, UDP6(.dport = 53, .ext = { HBH(8), RTH(24), DSTO(16) }, .next = 3), DROP, 1 },
	{ "v6_ext_ah", 0, UDP6(.dport = 53, .ext = { HBH(8), AH(24) }, .next = 2), DROP, 1 },
	/* The chain claims more than the datagram holds: malformed, never a
	 * fragment-like key that only the proto-only rule would see. */
	{ "v6_chain_ends_early", 0, UDP6(.dport = 53, .ext = { HBH(8), DSTO(32) }, .next = 2, .cut = 40 + 8 + 16), DROP,
	  X_MALFORMED },
	{ "v6_ext_header_cut", 2, UDP6(.dport = 53, .ext = { HBH(8) }, .next = 1, .cut = 40 + 4), DROP, X_MALFORMED },
	{ "v6_frag_header_cut", 0, UDP6(.dport = 53, .ext = { FRAG6(0) }, .next = 1, .cut = 40 + 6), DROP,
	  X_MALFORMED },
	/* Nine headers (one more than the old walk took) and twelve: the port
	 * rule sees the real key. */
	{ "v6_chain_nine", 0,
	  UDP6(.dport = 53, .ext = { HBH(8), DSTO(8), DSTO(8), DSTO(8), DSTO(8), DSTO(8), DSTO(8), DSTO(8), DSTO(8) },
	       .next = 9),
	  DROP, 1 },
	{ "v6_chain_twelve_mixed", 0,
	  UDP6(.dport = 53,
	       .ext = { HBH(8), DSTO(16), RTH(24), AH(16), FRAG6(0), DSTO(8), AH(12), RTH(8), FRAG6(0), DSTO(40),
			DSTO(8), DSTO(8) },
	       .next = 12),
	  DROP, 1 },
	{ "v6_udp_truncated_proto_rule", 0, UDP6(.dport = 53, .l4bytes = L4B(2)), DROP, X_MALFORMED },
	{ "v6_udp_ports_only_ok", 0, UDP6(.dport = 53, .l4bytes = L4B(4)), DROP, 1 },
	{ "v6_no_next_header", 0, { .fam = 6, .proto = 59, .l4bytes = L4B(0) }, ACCEPT, X_DEFAULT },
	/* An IPv4-mapped address (::ffff:0:0/96) as source or destination is
	 * malformed, whatever the rules (rule 2 would accept); the addresses
	 * beside the prefix are not. */
	{ "v6_mapped_source", 0, UDP6(.src = "::ffff:192.0.2.2", .dport = 99), DROP, X_MALFORMED },
	{ "v6_mapped_destination", 0, UDP6(.dst = "::ffff:203.0.113.10", .dport = 99), DROP, X_MALFORMED },
	{ "v6_mapped_destination_output", 2, TCP6(.dst = "::ffff:203.0.113.10", .dport = 443), DROP, X_MALFORMED },
	{ "v6_mapped_all_zero_v4", 0, UDP6(.src = "::ffff:0.0.0.0", .dport = 99), DROP, X_MALFORMED },
	{ "v6_beside_mapped_ok", 0, UDP6(.src = "::1:ffff:192.0.2.2", .dport = 99), ACCEPT, 2 },
	{ "v6_ipv4_compatible_ok", 0, UDP6(.src = "::192.0.2.2", .dport = 99), ACCEPT, 2 },
	{ "v6_below_mapped_ok", 0, UDP6(.dst = "::fffe:ffff:ffff", .dport = 99), ACCEPT, 2 },
};

/* Group "defrag": the same rules with the links' defrag flag on. The kernel
 * has reassembled what it could, so a fragment that still arrives (RFC 7112
 * split chain, odd-length middle fragment, ...) is dropped and counted on
 * its own, whatever the rules say; an atomic fragment is a whole datagram. */
static const struct tpolicy pol_defrag = {
	.options = NFB_OPT_DEFRAG,
	.hook[NFB_HOOK_INPUT] = { .enabled = true,
				  .default_action = NFB_ACT_ACCEPT,
				  .rules = rules_malformed,
				  .nrules = 5 },
};

static const struct fixture fx_defrag[] = {
	{ "v4_first_fragment", 0, UDP(.dport = 99, .frag = MF), DROP, X_FRAGMENT },
	{ "v4_middle_fragment", 0, UDP(.dport = 99, .frag = MF | 185), DROP, X_FRAGMENT },
	{ "v4_last_fragment", 0, TCP(.dport = 99, .frag = 185), DROP, X_FRAGMENT },
	{ "v4_df_whole", 0, UDP(.dport = 53, .frag = 0x4000), DROP, 1 },
	{ "v4_whole_default", 0, UDP(.dport = 99), ACCEPT, 2 },
	{ "v6_first_fragment", 0, UDP6(.dport = 99, .ext = { FRAG6(1) }, .next = 1), DROP, X_FRAGMENT },
	{ "v6_nonfirst_fragment", 0, UDP6(.dport = 99, .ext = { HBH(8), FRAG6(100 << 3) }, .next = 2), DROP,
	  X_FRAGMENT },
	{ "v6_atomic_fragment", 0, UDP6(.dport = 53, .ext = { FRAG6(0) }, .next = 1), DROP, 1 },
	{ "v6_malformed_before_fragment", 0, UDP6(.dport = 53, .ext = { HBH(8), FRAG6(1) }, .next = 2, .cut = 40 + 4),
	  DROP, X_MALFORMED },
};

/* An IPv6 UDP datagram to port 53 behind n destination-options headers:
 * chains longer than any fixed walk would take (the kernel forwards them). */
static size_t long_chain(uint8_t *buf, size_t cap, uint32_t n, bool cut_last)
{
	size_t off = 40, len;

	memset(buf, 0, cap);
	buf[0] = 6 << 4;
	buf[6] = 60;
	buf[7] = 64;
	inet_pton(AF_INET6, "2001:db8:2::1", buf + 8);
	inet_pton(AF_INET6, "2001:db8:3::1", buf + 24);
	for (uint32_t i = 0; i < n && off + 8 + 8 <= cap; i++, off += 8)
		buf[off] = i + 1 < n ? 60 : 17; /* next header; length 0: 8 bytes */
	buf[off + 2] = 0;
	buf[off + 3] = 53;
	buf[off + 5] = 8;
	len = cut_last ? off - 4 : off + 8;
	buf[4] = (len - 40) >> 8;
	buf[5] = len - 40;
	return len;
}

static void test_long_chains(struct env *e)
{
	static const uint32_t counts[] = { 9, 64, 100, 300, 400 };
	uint8_t buf[4096];
	uint32_t retval;
	char name[64];

	if (install(e, &pol_malformed, 0) < 0 || set_ctl(e, 0) < 0)
		return;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		size_t len = long_chain(buf, sizeof(buf), counts[i], false);
		struct nfb_counter r0, r1;

		snprintf(name, sizeof(name), "chains/udp53_behind_%u_headers", counts[i]);
		check_begin(name);
		read_counter(e, slot_rule(NFB_HOOK_INPUT, 1), &r0);
		CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 6, buf, len, 1, &retval, NULL), 0);
		read_counter(e, slot_rule(NFB_HOOK_INPUT, 1), &r1);
		CHECK_EQ_INT(retval, NF_DROP); /* rule 1: udp/53 drop */
		CHECK_EQ_INT(r1.packets - r0.packets, 1);
		check_end();
	}
	{
		size_t len = long_chain(buf, sizeof(buf), 400, true);
		struct nfb_counter m0, m1;

		check_begin("chains/400_headers_cut_short_malformed");
		read_counter(e, NFB_CNT_MALFORMED, &m0);
		CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 6, buf, len, 1, &retval, NULL), 0);
		read_counter(e, NFB_CNT_MALFORMED, &m1);
		CHECK_EQ_INT(retval, NF_DROP);
		CHECK_EQ_INT(m1.packets - m0.packets, 1);
		check_end();
	}
}

/* ---- generated policies ------------------------------------------------ */

static struct trule *rules_alloc(uint32_t n)
{
	return calloc(n, sizeof(struct trule));
}

/* 12,000 rules: tcp dport 10000 + r, a few overrides across summary words. */
#define BIG_N 12000
static struct trule *big_rules(void)
{
	struct trule *r = rules_alloc(BIG_N);

	if (!r)
		return NULL;
	for (uint32_t i = 0; i < BIG_N; i++)
		r[i] = (struct trule){ .action = i & 1, .proto = 6, .dport_lo = 10000 + i, .dport_hi = 10000 + i };
	r[4097] = (struct trule){
		.action = NFB_ACT_ACCEPT, .src = "192.0.2.0/24", .proto = 6, .dport_lo = 7777, .dport_hi = 7777
	};
	r[6000] = (struct trule){
		.action = NFB_ACT_ACCEPT, .src = "198.51.100.0/24", .proto = 17, .dport_lo = 7777, .dport_hi = 7777
	};
	r[8191] = (struct trule){ .action = NFB_ACT_DROP, .proto = 6, .dport_lo = 7777, .dport_hi = 7777 };
	r[11000] = (struct trule){ .action = NFB_ACT_DROP, .src = "192.0.2.0/24" };
	return r;
}

static const struct fixture fx_big[] = {
	{ "src_and_port_word64", 0, TCP(.src = "192.0.2.1", .dport = 7777), ACCEPT, 4097 },
	{ "port_only_word127", 0, TCP(.src = "198.51.100.1", .dport = 7777), DROP, 8191 },
	{ "src_only_word171", 0, TCP(.src = "192.0.2.1", .dport = 9), DROP, 11000 },
	{ "last_rule", 0, TCP(.src = "198.51.100.1", .dport = 21999), ACCEPT, 11999 },
	{ "first_of_two", 0, TCP(.src = "192.0.2.1", .dport = 10005), ACCEPT, 5 },
	{ "udp_word93", 0, UDP(.src = "198.51.100.1", .dport = 7777), ACCEPT, 6000 },
	{ "default", 0, UDP(.src = "203.0.113.9", .dport = 7777), DROP, X_DEFAULT },
	{ "v6_last_rule", 0, TCP6(.dport = 21999), ACCEPT, 11999 },
};

/* Every summary word is a candidate but no word ANDs nonzero until the
 * last: even rules want src A and dst B, odd rules src B and dst C; a
 * packet from A to C matches neither. Rule n - 1 matches everything. */
static struct trule *decoy_rules(uint32_t n)
{
	struct trule *r = rules_alloc(n);

	if (!r)
		return NULL;
	for (uint32_t i = 0; i + 1 < n; i++)
		r[i] = (struct trule){ .action = NFB_ACT_DROP,
				       .src = i & 1 ? "198.51.100.0/24" : "192.0.2.0/24",
				       .dst = i & 1 ? "203.0.113.0/24" : "198.51.100.0/24" };
	r[n - 1] = (struct trule){ .action = NFB_ACT_ACCEPT };
	return r;
}

/* ---- log events -------------------------------------------------------- */

struct events {
	int n;
	struct nfb_event last;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct events *ev = ctx;

	if (len >= sizeof(ev->last))
		memcpy(&ev->last, data, sizeof(ev->last));
	ev->n++;
	return 0;
}

static int reset_bucket(struct env *e)
{
	const struct bpf_map *m = e->skel->maps.nfb_log_bucket;
	size_t sz = (bpf_map__value_size(m) + 7) / 8 * 8;
	void *zero = calloc(e->ncpus, sz);
	uint32_t key = 0;
	int err;

	if (!zero)
		return -ENOMEM;
	err = bpf_map_update_elem(bpf_map__fd(m), &key, zero, BPF_ANY) ? -errno : 0;
	free(zero);
	return err;
}

/* The log bucket emptied ago_ns before now (as after a burst of events). */
static int drain_bucket(struct env *e, uint64_t ago_ns)
{
	struct { /* struct nfb_log_bucket, its spin lock a word */
		uint32_t lock, pad;
		uint64_t tokens, last_ns;
	} b = { 0 };
	struct timespec ts;
	uint32_t key = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	b.last_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - ago_ns;
	return bpf_map_update_elem(bpf_map__fd(e->skel->maps.nfb_log_bucket), &key, &b, BPF_ANY) ? -errno : 0;
}

struct cpu_run {
	struct env *e;
	const uint8_t *pkt;
	size_t len;
	int cpu, err;
};

static void *cpu_run_thread(void *arg)
{
	struct cpu_run *c = arg;
	cpu_set_t set;
	uint32_t retval;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	c->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (!c->err)
		c->err = run_ip(c->e, NFB_HOOK_INPUT, 4, c->pkt, c->len, 5, &retval, NULL);
	return NULL;
}

/* 5 packets on CPU 0 and 5 on CPU 1, one after the other. */
static int run_on_two_cpus(struct env *e, const uint8_t *pkt, size_t len)
{
	for (int cpu = 0; cpu < 2; cpu++) {
		struct cpu_run c = { .e = e, .pkt = pkt, .len = len, .cpu = cpu };
		pthread_t t;

		if (pthread_create(&t, NULL, cpu_run_thread, &c) || pthread_join(t, NULL) || c.err)
			return -1;
	}
	return 0;
}

static void test_log(struct env *e)
{
	static const struct trule rules[] = {
		{ .action = NFB_ACT_DROP, .log = true, .proto = 17, .dport_lo = 514, .dport_hi = 514 },
		{ .action = NFB_ACT_ACCEPT, .proto = 17 },
	};
	struct tpolicy pol = {
		.hook[NFB_HOOK_INPUT] = { .enabled = true,
					  .default_action = NFB_ACT_ACCEPT,
					  .rules = rules,
					  .nrules = 2 },
	};
	struct tpkt t = UDP(.src = "192.0.2.7", .dst = "203.0.113.8", .sport = 4321, .dport = 514);
	struct tpkt t_nolog = UDP(.dport = 515);
	uint8_t pkt[256], pkt2[256];
	size_t len = build_pkt(&t, pkt, sizeof(pkt)), len2 = build_pkt(&t_nolog, pkt2, sizeof(pkt2));
	struct nfb_counter l0, l1, d0, d1, r0, r1;
	struct events ev = { 0 };
	struct ring_buffer *rb;
	uint32_t retval, saddr;
	int err;

	rb = ring_buffer__new(bpf_map__fd(e->skel->maps.nfb_events), on_event, &ev, NULL);
	check_begin("log/event");
	CHECK(rb != NULL);
	if (!rb) {
		check_end();
		return;
	}
	ring_buffer__consume(rb);
	ev.n = 0;
	CHECK_EQ_INT(install(e, &pol, 0), 0);
	CHECK_EQ_INT(set_ctl(e, 0), 0);
	CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_DROP);
	CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 4, pkt2, len2, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_ACCEPT);
	ring_buffer__consume(rb);
	CHECK_EQ_INT(ev.n, 1);
	inet_pton(AF_INET, "192.0.2.7", &saddr);
	if (ev.n == 1) {
		CHECK_EQ_INT(ev.last.counter, slot_rule(NFB_HOOK_INPUT, 0));
		CHECK_EQ_INT(ev.last.rule, 0);
		CHECK_EQ_INT(ev.last.gen, 0);
		CHECK_EQ_INT(ev.last.len, len);
		CHECK_EQ_INT(ev.last.hook, NFB_HOOK_INPUT);
		CHECK_EQ_INT(ev.last.family, NFB_FAM_IPV4);
		CHECK_EQ_INT(ev.last.action, NFB_ACT_DROP);
		CHECK_EQ_INT(ev.last.proto, 17);
		CHECK_EQ_INT(ev.last.sport, 4321);
		CHECK_EQ_INT(ev.last.dport, 514);
		CHECK_EQ_INT(ev.last.ifin, 0);
		CHECK_EQ_INT(ev.last.ifout, e->lo_ifindex);
		CHECK(!memcmp(ev.last.saddr, &saddr, 4));
		CHECK(ev.last.ts_ns != 0);
	}
	check_end();

	/* log_rate 1/s, burst 3: of 10 back-to-back packets, 3 log. */
	check_begin("log/rate_limit");
	pol.log_rate = 1;
	pol.log_burst = 3;
	CHECK_EQ_INT(install(e, &pol, 0), 0);
	CHECK_EQ_INT(reset_bucket(e), 0);
	read_counter(e, NFB_CNT_LOG_LIMITED, &l0);
	read_counter(e, slot_rule(NFB_HOOK_INPUT, 0), &r0);
	ev.n = 0;
	CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 4, pkt, len, 10, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_DROP);
	ring_buffer__consume(rb);
	read_counter(e, NFB_CNT_LOG_LIMITED, &l1);
	read_counter(e, slot_rule(NFB_HOOK_INPUT, 0), &r1);
	CHECK_EQ_INT(ev.n, 3);
	CHECK_EQ_INT(l1.packets - l0.packets, 7);
	CHECK_EQ_INT(r1.packets - r0.packets, 10);
	check_end();

	/* The period: an empty bucket 2.5 s after its last event has refilled
	 * 2 events at 1/second, none at 1/minute, and 2 at 60/minute. */
	{
		static const struct {
			const char *name;
			uint32_t rate, period, want;
		} per[] = {
			{ "log/rate_per_second_refills", 1, 1, 2 },
			{ "log/rate_per_minute_refills_slowly", 1, 60, 0 },
			{ "log/rate_60_per_minute_is_1_per_second", 60, 60, 2 },
			{ "log/rate_per_hour_refills_slowly", 1, 3600, 0 },
			{ "log/rate_3600_per_hour_is_1_per_second", 3600, 3600, 2 },
		};

		for (size_t i = 0; i < sizeof(per) / sizeof(per[0]); i++) {
			check_begin(per[i].name);
			pol.log_rate = per[i].rate;
			pol.log_period = per[i].period;
			pol.log_burst = 5;
			CHECK_EQ_INT(install(e, &pol, 0), 0);
			CHECK_EQ_INT(drain_bucket(e, 2500000000ull), 0);
			ring_buffer__consume(rb);
			ev.n = 0;
			CHECK_EQ_INT(run_ip(e, NFB_HOOK_INPUT, 4, pkt, len, 10, &retval, NULL), 0);
			ring_buffer__consume(rb);
			CHECK_EQ_INT(ev.n, (int)per[i].want);
			check_end();
		}
		pol.log_rate = 1; /* as before, for what follows */
		pol.log_burst = 3;
		pol.log_period = 0;
		if (install(e, &pol, 0))
			fprintf(stderr, "cannot reinstall the 1/s burst 3 policy\n");
	}

	/* log-rate is one rate for the appliance: the same 10 packets split
	 * over two CPUs log 3 events, not 3 per CPU. */
	check_begin("log/rate_limit_all_cpus");
	if (e->ncpus < 2) {
		check_skip("log/rate_limit_all_cpus", "machine: one CPU (the case needs two)");
	} else {
		CHECK_EQ_INT(reset_bucket(e), 0);
		read_counter(e, NFB_CNT_LOG_LIMITED, &l0);
		ring_buffer__consume(rb);
		ev.n = 0;
		CHECK_EQ_INT(run_on_two_cpus(e, pkt, len), 0);
		ring_buffer__consume(rb);
		read_counter(e, NFB_CNT_LOG_LIMITED, &l1);
		CHECK_EQ_INT(ev.n, 3);
		CHECK_EQ_INT(l1.packets - l0.packets, 7);
		check_end();
	}

	/* Ring buffer full: reserve fails, NFB_CNT_LOG_DROPPED counts it. */
	check_begin("log/ring_full");
	pol.log_rate = 0;
	CHECK_EQ_INT(install(e, &pol, 0), 0);
	read_counter(e, NFB_CNT_LOG_DROPPED, &d0);
	ev.n = 0;
	err = run_ip(e, NFB_HOOK_INPUT, 4, pkt, len, 20000, &retval, NULL);
	CHECK_EQ_INT(err, 0);
	read_counter(e, NFB_CNT_LOG_DROPPED, &d1);
	ring_buffer__consume(rb);
	CHECK(d1.packets - d0.packets > 0);
	CHECK_EQ_INT((long long)(d1.packets - d0.packets) + ev.n, 20000);
	check_end();
	ring_buffer__free(rb);
}

/* ---- generations ------------------------------------------------------- */

static void test_generations(struct env *e)
{
	static const struct trule drop80[] = { { .action = NFB_ACT_DROP, .proto = 6, .dport_lo = 80, .dport_hi = 80 } };
	static const struct trule accept80[] = {
		{ .action = NFB_ACT_ACCEPT, .proto = 6, .dport_lo = 80, .dport_hi = 80 }
	};
	struct tpolicy a = {
		.hook[0] = { .enabled = true, .default_action = NFB_ACT_ACCEPT, .rules = drop80, .nrules = 1 }
	};
	struct tpolicy b = {
		.hook[0] = { .enabled = true, .default_action = NFB_ACT_DROP, .rules = accept80, .nrules = 1 }
	};
	struct tpolicy none = { 0 };
	struct tpkt t = TCP(.dport = 80);
	uint8_t pkt[128];
	size_t len = build_pkt(&t, pkt, sizeof(pkt));
	struct nfb_counter n0, n1;
	uint32_t retval;

	check_begin("gen/flip");
	CHECK_EQ_INT(install(e, &a, 0), 0);
	CHECK_EQ_INT(install(e, &b, 1), 0);
	CHECK_EQ_INT(set_ctl(e, 0), 0);
	CHECK_EQ_INT(run_ip(e, 0, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_DROP);
	CHECK_EQ_INT(set_ctl(e, 1), 0);
	CHECK_EQ_INT(run_ip(e, 0, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_ACCEPT);
	CHECK_EQ_INT(set_ctl(e, 0), 0);
	CHECK_EQ_INT(run_ip(e, 0, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_DROP);
	check_end();

	check_begin("gen/empty_generation_no_gen");
	CHECK_EQ_INT(install(e, &none, 1), 0);
	CHECK_EQ_INT(set_ctl(e, 1), 0);
	read_counter(e, NFB_CNT_NO_GEN, &n0);
	CHECK_EQ_INT(run_ip(e, 0, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_ACCEPT);
	read_counter(e, NFB_CNT_NO_GEN, &n1);
	CHECK_EQ_INT(n1.packets - n0.packets, 1);
	check_end();

	check_begin("gen/bad_active_gen_no_gen");
	CHECK_EQ_INT(set_ctl(e, 7), 0);
	read_counter(e, NFB_CNT_NO_GEN, &n0);
	CHECK_EQ_INT(run_ip(e, 0, 4, pkt, len, 1, &retval, NULL), 0);
	CHECK_EQ_INT(retval, NF_ACCEPT);
	read_counter(e, NFB_CNT_NO_GEN, &n1);
	CHECK_EQ_INT(n1.packets - n0.packets, 1);
	check_end();
	set_ctl(e, 0);
}

/* ---- connection limits' counts (nfbox_conns) ---------------------------- */

/* nfb_conns's and nfb_conn_count's inner maps, as bpf/nfbox_filter.bpf.c
 * shapes them. */
static int conns_inner(size_t key, size_t value, uint32_t entries)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);

	return bpf_map_create(BPF_MAP_TYPE_HASH, "nfb_test_inner", key, value, entries, &o);
}

static int conns_op(struct env *e, uint32_t verb, const struct nfb_conn_key *k)
{
	struct nfb_conns_op op = { .verb = verb };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &op, .ctx_size_in = sizeof(op));

	if (k)
		op.key = *k;
	if (bpf_prog_test_run_opts(bpf_program__fd(e->skel->progs.nfbox_conns), &o) < 0)
		return -errno;
	return (int)o.retval;
}

static uint64_t conns_count(int fd, const struct nfb_meter_key *owner)
{
	struct nfb_conn_count c;

	return bpf_map_lookup_elem(fd, owner, &c) ? 0 : c.n;
}

static uint64_t conns_since(int fd, const struct nfb_conn_key *k)
{
	struct nfb_conn_val v;

	return bpf_map_lookup_elem(fd, k, &v) ? 1234 : v.since_ns; /* 1234: not there */
}

/* What user space asks of the counts (bpf/nfbox.h, "Connection limits"):
 * the connections counted before a daemon listened are set aside
 * (unverified, out of their owner's count), each counted again when
 * conntrack says it is open, or forgotten without touching the count when
 * it ended; a counted one given back takes its count with it. */
static void test_conns(struct env *e)
{
	int conns = conns_inner(sizeof(struct nfb_conn_key), sizeof(struct nfb_conn_val), NFB_CONN_ENTRIES);
	int counts = conns_inner(sizeof(struct nfb_meter_key), sizeof(struct nfb_conn_count), NFB_CONN_OWNERS);
	int oc = bpf_map__fd(e->skel->maps.nfb_conns), on = bpf_map__fd(e->skel->maps.nfb_conn_count);
	struct nfb_meter_key owner = { .slot = 7, .family = NFB_FAM_IPV4, .addr = { 198, 51, 100, 2 } };
	struct nfb_conn_count three = { .n = 3 };
	struct nfb_conn_key k[3];
	uint32_t gen = 0;

	check_begin("conns/distrust");
	CHECK(conns >= 0 && counts >= 0);
	CHECK_EQ_INT(bpf_map_update_elem(oc, &gen, &conns, BPF_ANY), 0);
	CHECK_EQ_INT(bpf_map_update_elem(on, &gen, &counts, BPF_ANY), 0);
	CHECK_EQ_INT(set_ctl(e, gen), 0);
	for (int i = 0; i < 3; i++) {
		/* counted long ago, confirmed, and counted after the distrust begins */
		struct nfb_conn_val v = { .owner = owner, .since_ns = i == 0 ? 1 : i == 1 ? 0 : NFB_CONN_GONE - 1 };

		memset(&k[i], 0, sizeof(k[i]));
		k[i].proto = 6;
		k[i].family = NFB_FAM_IPV4;
		k[i].sport = htons(40000 + i);
		CHECK_EQ_INT(bpf_map_update_elem(conns, &k[i], &v, BPF_NOEXIST), 0);
	}
	CHECK_EQ_INT(bpf_map_update_elem(counts, &owner, &three, BPF_NOEXIST), 0);
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_DISTRUST, NULL), 2);
	CHECK_EQ_INT(conns_count(counts, &owner), 1);
	CHECK(conns_since(conns, &k[0]) == NFB_CONN_UNVERIFIED && conns_since(conns, &k[1]) == NFB_CONN_UNVERIFIED);
	CHECK(conns_since(conns, &k[2]) == NFB_CONN_GONE - 1);
	check_end();

	check_begin("conns/distrust_again_nothing");
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_DISTRUST, NULL), 0);
	CHECK_EQ_INT(conns_count(counts, &owner), 1);
	check_end();

	check_begin("conns/confirm_counts_again");
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_CONFIRM, &k[0]), 1);
	CHECK_EQ_INT(conns_count(counts, &owner), 2);
	CHECK(conns_since(conns, &k[0]) == 0);
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_CONFIRM, &k[0]), 1); /* once */
	CHECK_EQ_INT(conns_count(counts, &owner), 2);
	check_end();

	check_begin("conns/release_unverified_keeps_count");
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_RELEASE, &k[1]), 1);
	CHECK(conns_since(conns, &k[1]) == 1234);
	CHECK_EQ_INT(conns_count(counts, &owner), 2);
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_RELEASE, &k[1]), 0);
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_CONFIRM, &k[1]), 0);
	check_end();

	check_begin("conns/release_counted_to_zero");
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_RELEASE, &k[0]), 1);
	CHECK_EQ_INT(conns_count(counts, &owner), 1);
	CHECK_EQ_INT(conns_op(e, NFB_CONNS_RELEASE, &k[2]), 1);
	CHECK_EQ_INT(conns_count(counts, &owner), 0); /* the owner's entry went */
	check_end();

	gen = 0;
	bpf_map_delete_elem(oc, &gen);
	bpf_map_delete_elem(on, &gen);
	close(conns);
	close(counts);
}

/* ---- benchmark --------------------------------------------------------- */

/* Rules 0 .. n-2: src 198.51.100.0/24 (or a distinct /64 under 2001:db8::/32
 * for v6), tcp dport 1000 + r; rule n-1: src 192.0.2.0/24 (2001:db8:ffff::/48)
 * tcp dport 80: the packet matches the last rule only. */
static struct trule *bench_rules(uint32_t n, bool v6, char (*names)[48])
{
	struct trule *r = rules_alloc(n);

	if (!r)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		if (v6)
			snprintf(names[i], 48, "2001:db8:%x:%x::/64", i >> 16, i & 0xffff);
		r[i] = (struct trule){ .action = NFB_ACT_DROP,
				       .src = v6 ? names[i] : "198.51.100.0/24",
				       .proto = 6,
				       .dport_lo = 1000 + i,
				       .dport_hi = 1000 + i };
	}
	r[n - 1] = (struct trule){ .action = NFB_ACT_ACCEPT,
				   .src = v6 ? "2001:db8:ffff::/48" : "192.0.2.0/24",
				   .proto = 6,
				   .dport_lo = 80,
				   .dport_hi = 80 };
	return r;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

#define BENCH_ROUNDS 21

/*
 * ns/packet of the 10-rule (generation 0) and the 10,000-rule policy
 * (generation 1), measured in alternation (the active generation flips
 * between runs of 100,000) so that both see the same machine noise.
 */
static int bench_pair(struct env *e, bool v6, uint32_t min[2], uint32_t med[2])
{
	static const uint32_t sizes[2] = { 10, 10000 };
	struct tpkt t = {
		.fam = v6 ? 6 : 4, .proto = 6, .src = v6 ? "2001:db8:ffff::1" : "192.0.2.1", .sport = 40000, .dport = 80
	};
	uint32_t d[2][BENCH_ROUNDS], retval = 0;
	uint8_t pkt[128];
	size_t len = build_pkt(&t, pkt, sizeof(pkt));
	int err = 0;

	for (uint32_t g = 0; g < 2 && !err; g++) {
		char (*names)[48] = calloc(sizes[g], 48);
		struct trule *r = names ? bench_rules(sizes[g], v6, names) : NULL;
		struct tpolicy pol = {
			.hook[0] = { .enabled = true, .default_action = NFB_ACT_DROP, .rules = r, .nrules = sizes[g] }
		};

		err = r ? install(e, &pol, g) : -ENOMEM;
		free(r);
		free(names);
	}
	for (int i = 0; i < BENCH_ROUNDS && !err; i++) {
		for (uint32_t g = 0; g < 2 && !err; g++) {
			if ((err = set_ctl(e, g)) || (err = run_ip(e, 0, t.fam, pkt, len, 100000, &retval, &d[g][i])))
				break;
			if (retval != NF_ACCEPT)
				err = -EBADMSG;
		}
	}
	for (int g = 0; g < 2 && !err; g++) {
		qsort(d[g], BENCH_ROUNDS, sizeof(uint32_t), cmp_u32);
		min[g] = d[g][0];
		med[g] = d[g][BENCH_ROUNDS / 2];
	}
	set_ctl(e, 0);
	return err;
}

/* Best of BENCH_ROUNDS runs of 100,000 of one packet on generation 0. */
static int bench_min(struct env *e, const struct tpolicy *pol, const struct tpkt *t, int hook, uint32_t want,
		     uint32_t *ns)
{
	uint8_t pkt[128];
	size_t len = build_pkt(t, pkt, sizeof(pkt));
	uint32_t retval, d;
	int err;

	if ((err = install(e, pol, 0)) || (err = set_ctl(e, 0)))
		return err;
	*ns = ~0u;
	for (int i = 0; i < BENCH_ROUNDS; i++) {
		if ((err = run_ip(e, hook, t->fam, pkt, len, 100000, &retval, &d)))
			return err;
		if (retval != want)
			return -EBADMSG;
		*ns = d < *ns ? d : *ns;
	}
	return 0;
}

/* Context for the figures: the program on a hook it does not enforce
 * (test_run overhead plus two map lookups), and the adversarial policy
 * where every summary bit is a candidate that ANDs to zero. */
static void test_bench_context(struct env *e)
{
	static const struct trule one[] = { { .action = NFB_ACT_ACCEPT } };
	struct tpolicy off = { .hook[NFB_HOOK_OUTPUT] = { .enabled = true, .rules = one, .nrules = 1 } };
	struct tpolicy decoy = { .hook[0] = { .enabled = true, .default_action = NFB_ACT_DROP, .nrules = 8192 } };
	struct tpkt t = TCP(.src = "192.0.2.1", .dst = "203.0.113.1", .dport = 80);
	struct trule *r = decoy_rules(8192);
	uint32_t base = 0, worst = 0;

	check_begin("bench/context");
	CHECK(r != NULL);
	decoy.hook[0].rules = r;
	CHECK_EQ_INT(bench_min(e, &off, &t, NFB_HOOK_INPUT, NF_ACCEPT, &base), 0);
	if (r)
		CHECK_EQ_INT(bench_min(e, &decoy, &t, NFB_HOOK_INPUT, NF_ACCEPT, &worst), 0);
	printf("# bench baseline, hook not enforced: %u ns/packet\n", base);
	printf("# bench worst case, 8192 rules, 128 candidate words all empty: %u ns/packet\n", worst);
	check_end();
	free(r);
}

static void test_bench(struct env *e)
{
	for (int v6 = 0; v6 < 2; v6++) {
		uint32_t min[2] = { 0 }, med[2] = { 0 };
		char name[64];

		snprintf(name, sizeof(name), "bench/%s_last_rule_matches", v6 ? "v6_distinct_prefixes" : "v4");
		check_begin(name);
		CHECK_EQ_INT(bench_pair(e, v6, min, med), 0);
		printf("# bench %s, last rule matches: 10 rules %u ns/packet (median %u), "
		       "10000 rules %u ns/packet (median %u): ratio %.2f (target <= 1.5)\n",
		       v6 ? "v6, 10,000 distinct /64 src prefixes" : "v4, dport per rule", min[0], med[0], min[1],
		       med[1], min[0] ? (double)min[1] / min[0] : 0.0);
		check_end();
	}
}

/* ---- main -------------------------------------------------------------- */

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !getenv("NFBOX_TEST_VERBOSE"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void run_generated(struct env *e, const char *group, struct trule *rules, uint32_t n, int default_action,
			  const struct fixture *fx, size_t nfx)
{
	struct tpolicy pol = {
		.hook[0] = { .enabled = true, .default_action = default_action, .rules = rules, .nrules = n }
	};

	if (!rules) {
		check_begin(group);
		CHECK(rules != NULL);
		check_end();
		return;
	}
	run_group(e, group, &pol, 0, fx, nfx);
	free(rules);
}

/*
 * The verifier limits the stack of a call chain to 512 bytes. The deep
 * chain is nfbox_filter() -> one subprogram (nfb_search(), or the lookups
 * through nfb_locate()); a compiler that spills more (clang 19 against
 * clang 14) must not push it over. The verifier's own figures (log level
 * BPF_LOG_STATS: "stack depth MAIN+SUB+...", main first) must leave
 * NFB_STACK_MARGIN bytes: main plus its largest callee, plus the frames of
 * the three-deep chain (nfb_locate() and the largest lookup leaf, bounded
 * here by the two next largest frames), stay within 512 - margin.
 */
#define NFB_STACK_MARGIN 64

static void check_stack(const char *log)
{
	const char *p = strstr(log, "stack depth ");
	int depth[64], n = 0, main_depth, top[3] = { 0, 0, 0 };

	check_begin("stack");
	CHECK(p != NULL);
	if (!p) {
		check_end();
		return;
	}
	p += strlen("stack depth ");
	while (n < 64) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		depth[n++] = (int)v;
		if (*end != '+')
			break;
		p = end + 1;
	}
	CHECK(n >= 2);
	if (n < 2) {
		check_end();
		return;
	}
	main_depth = depth[0];
	for (int i = 1; i < n; i++) {
		int d = depth[i];

		for (int j = 0; j < 3; j++) {
			if (d > top[j]) {
				int t = top[j];

				top[j] = d;
				d = t;
			}
		}
	}
	printf("# stack: main %d, largest callees %d %d %d; chains %d and %d of %d allowed\n", main_depth, top[0],
	       top[1], top[2], main_depth + top[0], main_depth + top[1] + top[2], 512 - NFB_STACK_MARGIN);
	CHECK(main_depth + top[0] <= 512 - NFB_STACK_MARGIN);
	CHECK(main_depth + top[1] + top[2] <= 512 - NFB_STACK_MARGIN);
	check_end();
}

/*
 * The verifier's walk of the classifier, paid at every start: its global
 * subprograms are each verified once, which took it from 243,120
 * instructions to about 20,000 (bench_verifier prints the figures). A
 * subprogram made static again, or a loop that stops the states from
 * pruning, shows here first. The control: the figure of the old walk,
 * given to the same check, is caught.
 */
#define NFB_VERIFIER_BUDGET 60000

static long verifier_processed(const char *log)
{
	const char *p = strstr(log, "processed ");

	return p ? strtol(p + strlen("processed "), NULL, 10) : -1;
}

static void check_verifier_budget(const char *log)
{
	long n = verifier_processed(log);

	check_begin("verifier-budget");
	printf("# verifier: %ld instructions processed of %d allowed\n", n, NFB_VERIFIER_BUDGET);
	CHECK(n > 0);
	CHECK(n <= NFB_VERIFIER_BUDGET);
	check_end();
	check_begin("verifier-budget-control");
	n = verifier_processed("processed 243120 insns (limit 1000000) max_states_per_insn 50");
	CHECK(n == 243120 && n > NFB_VERIFIER_BUDGET);
	check_end();
}

int main(void)
{
	static const char *outer_names[GM_N] = { "nfb_addr4", "nfb_addr6", "nfb_iface", "nfb_port",
						 "nfb_misc",  "nfb_rules", "nfb_blob",	"nfb_counters" };
	struct env e = { 0 };
	cpu_set_t cpus;
	int err;

	libbpf_set_print(libbpf_print);
	/* One CPU: the per-CPU log bucket and counters stay predictable. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	check_begin("load");
	e.skel = nfbox_filter_bpf__open();
	CHECK(e.skel != NULL);
	if (!e.skel) {
		check_end();
		CHECK_EXIT();
	}
	e.skel->rodata->nfb_plant = engine_plants(); /* as the engine loads it */
	for (int i = 0; i < GM_N; i++) {
		struct bpf_map *outer = bpf_object__find_map_by_name(e.skel->obj, outer_names[i]);
		const struct bpf_map *t = outer ? bpf_map__inner_map(outer) : NULL;

		CHECK(t != NULL);
		if (!t)
			continue;
		e.shape[i] = (struct shape){ bpf_map__type(t), bpf_map__key_size(t), bpf_map__value_size(t),
					     bpf_map__max_entries(t), bpf_map__map_flags(t) };
	}
	static char vlog[1 << 16];

	bpf_program__set_log_buf(e.skel->progs.nfbox_filter, vlog, sizeof(vlog));
	bpf_program__set_log_level(e.skel->progs.nfbox_filter, 4 /* BPF_LOG_STATS */);
	err = nfbox_filter_bpf__load(e.skel);
	CHECK_EQ_INT(err, 0);
	e.ncpus = libbpf_num_possible_cpus();
	e.lo_ifindex = if_nametoindex("lo");
	if (!err) {
		e.prog_fd = bpf_program__fd(e.skel->progs.nfbox_filter);
		for (int i = 0; i < GM_N; i++)
			e.outer_fd[i] = bpf_map__fd(bpf_object__find_map_by_name(e.skel->obj, outer_names[i]));
		e.cnt_fd = inner_create(&e, GM_COUNTERS, NFB_CNT_ROWS((uint32_t)e.ncpus) * CNT_CAP);
		e.cnt = e.cnt_fd < 0 ? NULL
				     : map_mmap(e.cnt_fd, (size_t)NFB_CNT_ROWS((uint32_t)e.ncpus) * CNT_CAP *
								  sizeof(struct nfb_counter));
		CHECK(e.cnt != NULL);
		err = e.cnt ? 0 : -ENOMEM;
	}
	check_end();
	if (!err) {
		check_stack(vlog);
		check_verifier_budget(vlog);
	}
	if (check_failed_cases) {
		nfbox_filter_bpf__destroy(e.skel);
		CHECK_EXIT();
	}

	RUN_GROUP(&e, "match", &pol_match, 0, fx_match);
	RUN_GROUP(&e, "iface_ct", &pol_iface_ct, 1, fx_iface_ct);
	RUN_GROUP(&e, "order", &pol_order, 0, fx_order);
	RUN_GROUP(&e, "malformed", &pol_malformed, 1, fx_malformed);
	RUN_GROUP(&e, "defrag", &pol_defrag, 0, fx_defrag);
	test_long_chains(&e);
	run_generated(&e, "big12000", big_rules(), BIG_N, NFB_ACT_DROP, fx_big, sizeof(fx_big) / sizeof(fx_big[0]));
	{
		static const struct fixture fx_decoy[] = {
			{ "all_candidates_then_last", 0, TCP(.src = "192.0.2.1", .dst = "203.0.113.1"), ACCEPT, 8191 },
			{ "even_rule", 0, TCP(.src = "192.0.2.1", .dst = "198.51.100.1"), DROP, 0 },
			{ "odd_rule", 0, TCP(.src = "198.51.100.1", .dst = "203.0.113.1"), DROP, 1 },
		};
		run_generated(&e, "decoy8192", decoy_rules(8192), 8192, NFB_ACT_DROP, fx_decoy,
			      sizeof(fx_decoy) / sizeof(fx_decoy[0]));
	}
	test_log(&e);
	test_generations(&e);
	test_conns(&e);
	test_bench(&e);
	test_bench_context(&e);

	nfbox_filter_bpf__destroy(e.skel);
	CHECK_EXIT();
}
