// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Differential fuzzing of the classifier: random policies go through the
 * real loader, compiler, encoder and engine (engine_load into a private
 * bpffs, in a network namespace of its own); random packets (IPv4 options,
 * IPv6 extension-header chains of every length, fragments, truncations,
 * length fields that lie) run through the real program with
 * BPF_PROG_TEST_RUN. Each verdict and the counter it moved must be those of
 * the reference (tests/lib/ref.c): the rules walked one by one, the packet
 * parsed from the RFCs. A disagreement prints the seed, the policy and the
 * packet in hex.
 *
 * Bounded in `make check`; NFBOX_LONG=1 runs many more seeds. NFBOX_SEED=N
 * replays one seed. Needs root.
 */
#include <errno.h>
#include <linux/netfilter.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "backend/bpf/engine/engine.h"
#include "backend/bpf/engine/slots.h"
#include "tests/lib/check.h"
#include "tests/lib/ref.h"

/* BPF_PROG_TEST_RUN gives a netfilter program in = NULL and out = lo on
 * every hook; the policies name lo so that out: rules can match it. */
static const char *const ifaces[] = { "lo", "lan1", "wan0", "dmz0" };
static const int nf_hook_of[NFB_HOOK_MAX] = { NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT };

struct nf_state_in {
	uint8_t hook, pf, pad[6];
	uint64_t in, out, sk, net, okfn;
};

/* What the packets exercised, printed at the end: a fuzzer that only ever
 * hits the default verdict proves little. */
static struct {
	uint64_t malformed, fragment_dropped, fragment_keyed, rule, deflt, chain_long, over_limit;
} seen;

struct world {
	struct engine *e;
	struct slot_table slots;
	char dir[64], bpffs[96];
};

struct loaded {
	struct diags d;
	struct policy *p;
	struct plan *pl;
	struct plan_blob blob;
	struct slot_map m;
};

static void loaded_free(struct loaded *l)
{
	slot_map_free(&l->m);
	plan_blob_free(&l->blob);
	plan_free(l->pl);
	policy_free(l->p);
	diags_free(&l->d);
	memset(l, 0, sizeof(*l));
}

static int load(struct world *w, const char *text, size_t len, struct loaded *l)
{
	int r;

	diags_init(&l->d);
	if ((r = policy_load_buffer("fuzz.yaml", text, len, &l->d, &l->p)) < 0)
		return r;
	if ((r = plan_compile(l->p, &l->pl)) < 0 || (r = plan_encode(l->pl, &l->blob)) < 0)
		return r;
	if ((r = slots_assign(&w->slots, w->e, l->pl, &l->m)) < 0)
		return r;
	if ((r = engine_load(w->e, l->pl, &l->blob, &l->m, NULL, &l->d)) < 0)
		return r;
	slots_commit(&w->slots, &l->m, l->pl);
	return 0;
}

static int run(struct world *w, int hook, uint8_t fam, const uint8_t *ip, size_t len, uint32_t *verdict)
{
	uint8_t frame[4096] = { 0 };
	struct nf_state_in st = { .hook = (uint8_t)nf_hook_of[hook],
				  .pf = fam == POLICY_FAM_IPV4 ? NFPROTO_IPV4 : NFPROTO_IPV6 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &st, .ctx_size_in = sizeof(st), .repeat = 1);
	size_t off = 0;

	/* Every hook but LOCAL_OUT takes an Ethernet header first. */
	if (hook != NFB_HOOK_OUTPUT) {
		frame[12] = fam == POLICY_FAM_IPV4 ? 0x08 : 0x86;
		frame[13] = fam == POLICY_FAM_IPV4 ? 0x00 : 0xdd;
		off = 14;
	}
	memcpy(frame + off, ip, len);
	o.data_in = frame;
	o.data_size_in = (uint32_t)(off + len);
	if (bpf_prog_test_run_opts(engine_prog_fd(w->e), &o) < 0)
		return -errno;
	*verdict = o.retval;
	return 0;
}

static uint64_t packets(struct world *w, uint32_t slot)
{
	struct nfb_counter c;

	return engine_counter_read(w->e, slot, &c) < 0 ? UINT64_MAX : c.packets;
}

/* What the classifier must do: the counter slot and the verdict. */
static void expect(const struct loaded *l, int hook, enum ref_verdict_kind kind, struct ref_pkt *k,
		   struct ref_limits *lim, uint32_t *slot, uint32_t *verdict, int *rule)
{
	const struct plan_hook *h = &l->pl->hook[hook];

	*rule = -1;
	if (kind == REF_MALFORMED) {
		*slot = NFB_CNT_MALFORMED;
		*verdict = NF_DROP;
		return;
	}
	if (kind == REF_FRAGMENT && l->p->opt.defrag) {
		*slot = NFB_CNT_FRAGMENT;
		*verdict = NF_DROP;
		return;
	}
	k->hook = hook;
	k->iif = NULL;
	k->oif = "lo";
	k->ct = NFB_CT_INVALID; /* no conntrack entry in a test run */
	*rule = ref_first_match_limited(h, k, lim);
	if (*rule < 0) {
		*slot = l->m.default_slot[hook];
		*verdict = h->def == POLICY_ACCEPT ? NF_ACCEPT : NF_DROP;
	} else {
		*slot = l->m.rule_slot[hook][*rule];
		*verdict = h->rules[*rule]->action == POLICY_ACCEPT ? NF_ACCEPT : NF_DROP;
	}
}

static void report(uint64_t seed, const char *text, int hook, uint8_t fam, const uint8_t *ip, size_t len,
		   const char *what)
{
	check_fail_at(__FILE__, __LINE__, "seed %llu: %s", (unsigned long long)seed, what);
	printf("# hook %s, %s packet of %zu bytes:\n", policy_hook_name((enum policy_hook)hook),
	       policy_family_name((enum policy_family)fam), len);
	ref_hexdump(stdout, ip, len);
	printf("# policy (replay: NFBOX_SEED=%llu):\n%s", (unsigned long long)seed, text);
}

static void tally(const struct loaded *l, enum ref_verdict_kind kind, int rule, uint8_t fam, const uint8_t *ip,
		  size_t len)
{
	if (kind == REF_MALFORMED)
		seen.malformed++;
	else if (kind == REF_FRAGMENT && l->p->opt.defrag)
		seen.fragment_dropped++;
	else if (kind == REF_FRAGMENT)
		seen.fragment_keyed++;
	else if (rule >= 0)
		seen.rule++;
	else
		seen.deflt++;
	if (fam == POLICY_FAM_IPV6 && len > 40 + 9 * 8 && ip[6] != 6 && ip[6] != 17)
		seen.chain_long++;
}

/* One seed: a policy and npkts packets. Returns false after a disagreement. */
static bool one_seed(struct world *w, uint64_t seed, uint32_t nrules, uint32_t npkts)
{
	char prefix[32];
	/* Names of their own per seed: a rule that keeps its name keeps its
	 * limit's bucket across a reload, as it keeps its counters. */
	struct ref_policy_opts po = {
		.nrules = nrules, .ifaces = ifaces, .random_defaults = true, .limits = true, .name_prefix = prefix
	};
	struct ref_limits lim = { 0 };
	struct loaded l = { 0 };
	uint8_t ip[3000];
	size_t len;
	char *text, what[256];
	bool ok = true;

	snprintf(prefix, sizeof(prefix), "s%llu_", (unsigned long long)seed);
	ref_seed(seed);
	text = ref_random_policy(&po, &len);
	if (load(w, text, len, &l) < 0) {
		diags_print(&l.d, stdout, false);
		report(seed, text, 0, POLICY_FAM_IPV4, NULL, 0, "the policy did not load");
		loaded_free(&l);
		free(text);
		return false;
	}
	for (uint32_t i = 0; i < npkts && ok; i++) {
		uint8_t fam = ref_rnd(2) ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
		int hook = (int)ref_rnd(NFB_HOOK_MAX), rule;
		struct ref_pkt k = { 0 };
		enum ref_verdict_kind kind;
		uint32_t slot, want, got;
		uint64_t before, after;

		len = ref_random_bytes(fam, ip, sizeof(ip));
		kind = ref_parse(ip, len, fam, &k);
		expect(&l, hook, kind, &k, &lim, &slot, &want, &rule);
		tally(&l, kind, rule, fam, ip, len);
		before = packets(w, slot);
		if (run(w, hook, fam, ip, len, &got) < 0) {
			report(seed, text, hook, fam, ip, len, "BPF_PROG_TEST_RUN failed");
			ok = false;
			break;
		}
		after = packets(w, slot);
		if (got != want || after != before + 1) {
			snprintf(what, sizeof(what),
				 "packet %u: verdict %u, counter %u moved by %lld; expected verdict %u in %s %d (%s)",
				 i, got, slot, (long long)(after - before), want,
				 kind == REF_MALFORMED			   ? "malformed"
				 : kind == REF_FRAGMENT && l.p->opt.defrag ? "fragment"
				 : rule < 0				   ? "default"
									   : "rule",
				 rule, kind == REF_FRAGMENT ? "a fragment" : "keyed");
			report(seed, text, hook, fam, ip, len, what);
			ok = false;
		}
	}
	/* Packets over each limit: the classifier's count is the reference's. */
	for (int h = 0; ok && h < NFB_HOOK_MAX; h++) {
		for (uint32_t b = 0; b < l.pl->hook[h].nrules && b < 64; b++) {
			uint64_t over = 0;

			if (!l.pl->hook[h].rules[b]->limit.rate.n)
				continue;
			engine_limit_over(w->e, l.m.rule_slot[h][b], &over);
			seen.over_limit += over;
			if (over != lim.over[h][b]) {
				snprintf(what, sizeof(what), "rule %s (%s): %llu packets over its limit; expected %llu",
					 l.pl->hook[h].rules[b]->name, policy_hook_name((enum policy_hook)h),
					 (unsigned long long)over, (unsigned long long)lim.over[h][b]);
				report(seed, text, h, POLICY_FAM_IPV4, NULL, 0, what);
				ok = false;
			}
		}
	}
	ref_limits_free(&lim);
	loaded_free(&l);
	free(text);
	return ok;
}

static int setup(struct world *w)
{
	struct diags d;
	char pins[128];
	int r;

	/* Our mounts stay ours. In a chroot "/" is no mount point (EINVAL):
	 * then the bpffs below may be seen outside until teardown unmounts
	 * it. */
	if (unshare(CLONE_NEWNET | CLONE_NEWNS) < 0 ||
	    (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 && errno != EINVAL))
		return -errno;
	snprintf(w->dir, sizeof(w->dir), "/tmp/nfbox-fuzz.XXXXXX");
	if (!mkdtemp(w->dir))
		return -errno;
	snprintf(w->bpffs, sizeof(w->bpffs), "%s/bpf", w->dir);
	if (mkdir(w->bpffs, 0700) < 0 || mount("bpf", w->bpffs, "bpf", 0, "mode=0700") < 0)
		return -errno;
	snprintf(pins, sizeof(pins), "%s/nfbox", w->bpffs);
	if ((r = slots_init(&w->slots)) < 0)
		return r;
	diags_init(&d);
	r = engine_open(&(struct engine_opts){ .pin_dir = pins }, &d, &w->e);
	diags_print(&d, stdout, false);
	diags_free(&d);
	return r;
}

static void teardown(struct world *w)
{
	if (w->e) {
		engine_destroy_pins(w->e);
		engine_close(w->e);
	}
	slots_free(&w->slots);
	umount(w->bpffs);
	rmdir(w->bpffs);
	rmdir(w->dir);
}

int main(void)
{
	const char *seed_env = getenv("NFBOX_SEED");
	bool longrun = getenv("NFBOX_LONG") && *getenv("NFBOX_LONG") == '1';
	uint32_t nseeds = longrun ? 400 : 40, npkts = longrun ? 3000 : 600;
	struct world w = { 0 };
	int r;

	libbpf_set_print(NULL);
	check_begin("fuzz-setup");
	r = setup(&w);
	if (r < 0)
		check_fail_at(__FILE__, __LINE__, "setup: %s", strerror(-r));
	check_end();
	if (r == 0) {
		check_begin(longrun ? "fuzz-classifier-long" : "fuzz-classifier");
		if (seed_env) {
			one_seed(&w, strtoull(seed_env, NULL, 10), 12, npkts);
		} else {
			for (uint32_t s = 1; s <= nseeds; s++)
				if (!one_seed(&w, s * 7919, s % 5 == 0 ? 150 : 1 + s % 12, npkts))
					break;
		}
		check_end();
		printf("# packets: %llu matched a rule, %llu the default, %llu malformed, %llu fragments dropped, %llu "
		       "fragments keyed; %llu IPv6 with a long chain; %llu times over a limit\n",
		       (unsigned long long)seen.rule, (unsigned long long)seen.deflt,
		       (unsigned long long)seen.malformed, (unsigned long long)seen.fragment_dropped,
		       (unsigned long long)seen.fragment_keyed, (unsigned long long)seen.chain_long,
		       (unsigned long long)seen.over_limit);
	}
	teardown(&w);
	CHECK_EXIT();
}
