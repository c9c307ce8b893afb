/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Early drop at XDP (early.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include "base/sort.h"
#include "backend/bpf/early/early.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/xdpchain.h"
#include "lib/liblog.h"
#include "netlink/addr.h"
#include "bpf/nfbox_early.h"
#include "bpf/nfbox_early.skel.h"

/* The run priority in the dispatcher: before a capture (libxdp's default 50). */
#define EARLY_RUN_PRIO 10
#define EARLY_NONE     NFB_EARLY_GENS

enum {
	EO_IF,
	EO_SRC4,
	EO_SRC6,
	EO_RULES,
	EO_COUNT
};

static const char *const outer_names[EO_COUNT] = { "nfb_early_if", "nfb_early_src4", "nfb_early_src6",
						   "nfb_early_rules" };
/* The maps the program shares with the classifier (bpf/nfbox_shared.bpf.h). */
static const char *const shared_names[] = { "nfb_ctl",	"nfb_gen",   "nfb_counters", "nfb_dyn4",
					    "nfb_dyn6", "nfb_fixed", "nfb_events",   "nfb_log_bucket" };

struct early {
	char bpffs[PATH_MAX]; /* the pin directory (LIBXDP_BPFFS) */
	char dir[PATH_MAX];   /* its early/, where the maps are pinned */
	struct engine *e;
	struct nfbox_early_bpf *skel; /* fresh: loaded by the first attach */
	struct xdp_program *prog;     /* NULL until attached once or adopted */
	uint32_t prog_id;
	int cfg_fd, outer_fd[EO_COUNT]; /* -1 until loaded (or adopted) */
	int local_fd;			/* this host's addresses */
	int inner_fd[EO_COUNT];		/* the generation in force's, -1: none */
	struct nfb_early_cfg cfg;	/* as written */
	int *att;			/* ifindexes it is attached to */
	uint32_t natt;
};

static bool loaded(const struct early *ea)
{
	return ea->cfg_fd >= 0;
}

uint32_t early_count(const struct plan *pl)
{
	uint32_t n = 0;

	for (uint32_t i = 0; pl && i < pl->pol->nrules; i++)
		n += pl->pol->rules[i].early;
	return n;
}

/* ---- attached interfaces ---- */

static bool attached_to(const struct early *ea, int ifindex)
{
	for (uint32_t i = 0; i < ea->natt; i++)
		if (ea->att[i] == ifindex)
			return true;
	return false;
}

static int note_attached(struct early *ea, int ifindex)
{
	int *v;

	if (attached_to(ea, ifindex))
		return 0;
	if (!(v = realloc(ea->att, (ea->natt + 1) * sizeof(*v))))
		return -ENOMEM;
	ea->att = v;
	ea->att[ea->natt++] = ifindex;
	return 0;
}

static void forget_attached(struct early *ea, uint32_t i)
{
	ea->att[i] = ea->att[--ea->natt];
}

/* Whether the dispatcher on ifindex runs program id. */
static bool runs_prog(int ifindex, uint32_t id)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	bool found = false;

	if (libxdp_get_error(mp) || !mp)
		return false;
	if (xdp_multiprog__is_legacy(mp)) /* no dispatcher: the program alone */
		found = xdp_multiprog__main_prog(mp) && xdp_program__id(xdp_multiprog__main_prog(mp)) == id;
	for (struct xdp_program *p = xdp_multiprog__next_prog(NULL, mp); p && !found;
	     p = xdp_multiprog__next_prog(p, mp))
		found = xdp_program__id(p) == id;
	xdp_multiprog__close(mp);
	return found;
}

/* The interfaces an adopted program is attached to: every interface of
 * this network namespace asked. */
static void find_attached(struct early *ea)
{
	struct if_nameindex *v = if_nameindex();

	for (struct if_nameindex *i = v; i && i->if_index; i++)
		if (runs_prog((int)i->if_index, ea->prog_id))
			note_attached(ea, (int)i->if_index);
	if_freenameindex(v);
}

/* A capture runs chained after the program on ifindex (lib/xdpchain.h):
 * the program stays there for it, passing every frame it does not drop. */
static bool chained(const struct early *ea, int ifindex)
{
	_cleanup_close_ int fd = ea->prog_id ? xdp_prog_map(ea->prog_id, "nfb_early_chain") : -1;
	uint32_t k = (uint32_t)ifindex, slot;

	return fd >= 0 && bpf_map_lookup_elem(fd, &k, &slot) == 0;
}

static void detach_one(struct early *ea, uint32_t i)
{
	int r = xdp_program__detach(ea->prog, ea->att[i], XDP_MODE_UNSPEC, 0);
	char name[IF_NAMESIZE];

	if (r && r != -ENOENT && if_indextoname((unsigned)ea->att[i], name))
		log_warn("early: cannot detach the XDP program from %s: %s", name, strerror(-r));
	forget_attached(ea, i);
}

/* ---- opening: adopting or fresh ---- */

static int pin_path(const struct early *ea, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", ea->dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* This build's early program: the object's bytes (it has no load-time
 * settings). */
static void early_hash(uint8_t out[32])
{
	size_t n = 0;
	const void *elf = nfbox_early_bpf__elf_bytes(&n);

	engine_build_hash(elf, n, NULL, 0, out);
}

static void unpin_all(struct early *ea)
{
	char path[PATH_MAX];

	if (pin_path(ea, "build", path, sizeof(path)) == 0)
		unlink(path);

	if (pin_path(ea, "nfb_early_cfg", path, sizeof(path)) == 0)
		unlink(path);
	if (pin_path(ea, "nfb_early_local", path, sizeof(path)) == 0)
		unlink(path);
	for (int i = 0; i < EO_COUNT; i++)
		if (pin_path(ea, outer_names[i], path, sizeof(path)) == 0)
			unlink(path);
}

static int open_pinned(const struct early *ea, const char *name)
{
	char path[PATH_MAX];
	int fd;

	if (pin_path(ea, name, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

/* Whether the pinned record names program id as this build's. */
static bool same_build(const struct early *ea, uint32_t id)
{
	struct engine_build b;
	uint8_t hash[32];
	char path[PATH_MAX];

	if (pin_path(ea, "build", path, sizeof(path)) < 0 || engine_build_read(path, &b) < 0)
		return false;
	early_hash(hash);
	return b.prog_id[0] == id && !memcmp(b.hash, hash, sizeof(hash));
}

/* The pinned maps of a daemon before this one, if they are of this
 * layout and their program, this build's, still runs. */
static bool adoptable(struct early *ea)
{
	uint32_t zero = 0;
	struct xdp_program *p;

	if (bpf_map_lookup_elem(ea->cfg_fd, &zero, &ea->cfg) < 0 || ea->cfg.abi != NFB_EARLY_ABI)
		return false;
	if (!same_build(ea, ea->cfg.prog_id)) {
		log_info("early: the XDP early drop pinned in %s is another build's program: this build's takes its "
			 "place when the policy is loaded (until then the hooks drop the early rules' packets)",
			 ea->dir);
		return false;
	}
	for (int i = 0; i < EO_COUNT; i++)
		if ((ea->outer_fd[i] = open_pinned(ea, outer_names[i])) < 0)
			return false;
	if ((ea->local_fd = open_pinned(ea, "nfb_early_local")) < 0)
		return false;
	p = xdp_program__from_id(ea->cfg.prog_id);
	if (libxdp_get_error(p) || !p)
		return false;
	ea->prog = p;
	ea->prog_id = ea->cfg.prog_id;
	return true;
}

/* Pins of another layout, or of a program that is gone: the program
 * detached wherever it still runs, the pins removed. */
static void remove_stale(struct early *ea)
{
	struct xdp_program *p = ea->prog ? ea->prog : ea->cfg.prog_id ? xdp_program__from_id(ea->cfg.prog_id) : NULL;

	if (p && !libxdp_get_error(p)) {
		ea->prog = p;
		ea->prog_id = xdp_program__id(p);
		find_attached(ea);
		while (ea->natt)
			detach_one(ea, 0);
		xdp_program__close(p);
	}
	ea->prog = NULL;
	ea->prog_id = 0;
	close(ea->cfg_fd);
	ea->cfg_fd = -1;
	for (int i = 0; i < EO_COUNT; i++) {
		if (ea->outer_fd[i] >= 0)
			close(ea->outer_fd[i]);
		ea->outer_fd[i] = -1;
	}
	if (ea->local_fd >= 0)
		close(ea->local_fd);
	ea->local_fd = -1;
	unpin_all(ea);
}

static bool all_keys(const void *key, void *arg)
{
	(void)key;
	(void)arg;
	return true;
}

/* What a daemon before this one left: its maps and program. -ENOENT if
 * there is nothing usable (what there was is removed). */
static int adopt(struct early *ea)
{
	if ((ea->cfg_fd = open_pinned(ea, "nfb_early_cfg")) < 0)
		return -ENOENT;
	if (!adoptable(ea)) {
		remove_stale(ea);
		return -ENOENT;
	}
	find_attached(ea);
	{
		/* the captures chained to it went with the daemon before (and
		 * with them the programs in nfb_early_next): their entries go */
		_cleanup_close_ int chain = xdp_prog_map(ea->prog_id, "nfb_early_chain");

		if (chain >= 0)
			engine_delete_keys(chain, sizeof(uint32_t), all_keys, NULL);
	}
	log_info("early: adopted the XDP early drop pinned in %s (on %u interfaces)", ea->dir, ea->natt);
	return 0;
}

/* A program not loaded yet: the classifier's maps shared, its own pinned
 * where an adopter finds them; libxdp loads it at the first attach. */
static int fresh(struct early *ea, struct diags *d)
{
	char path[PATH_MAX];
	struct bpf_map *m;
	int r;

	if (!(ea->skel = nfbox_early_bpf__open()))
		return diag_errno(d, -errno, "early: cannot open the XDP program");
	for (size_t i = 0; i < sizeof(shared_names) / sizeof(shared_names[0]); i++) {
		int fd = engine_map_fd(ea->e, shared_names[i]);

		m = bpf_object__find_map_by_name(ea->skel->obj, shared_names[i]);
		if (fd < 0 || !m || (r = bpf_map__reuse_fd(m, fd)) < 0)
			return diag_fail(d, fd < 0 ? fd : -ENOENT, "early: cannot share the classifier's map %s",
					 shared_names[i]);
	}
	for (int i = 0; i <= EO_COUNT + 1; i++) {
		const char *name = i == EO_COUNT ? "nfb_early_cfg" : i > EO_COUNT ? "nfb_early_local" : outer_names[i];

		m = bpf_object__find_map_by_name(ea->skel->obj, name);
		if (!m || pin_path(ea, name, path, sizeof(path)) < 0 || bpf_map__set_pin_path(m, path) < 0)
			return diag_fail(d, -ENOENT, "early: cannot pin map %s", name);
	}
	ea->prog = xdp_program__from_bpf_obj(ea->skel->obj, NULL);
	if ((r = libxdp_get_error(ea->prog)) || !ea->prog) {
		ea->prog = NULL;
		return diag_errno(d, r ? r : -ENOENT, "early: libxdp cannot take the XDP program");
	}
	xdp_program__set_run_prio(ea->prog, EARLY_RUN_PRIO);
	return 0;
}

static void early_closep(struct early **p)
{
	early_close(*p);
}

int early_open(struct engine *e, const char *pin_dir, struct early **out, struct diags *d)
{
	_cleanup_(early_closep) struct early *ea = calloc(1, sizeof(*ea));
	int r;

	if (!ea)
		return diag_errno(d, -ENOMEM, "early");
	ea->e = e;
	ea->cfg_fd = ea->local_fd = -1;
	for (int i = 0; i < EO_COUNT; i++)
		ea->outer_fd[i] = ea->inner_fd[i] = -1;
	ea->cfg.active = EARLY_NONE;
	if (!pin_dir || !pin_dir[0])
		return diag_fail(
			d, -EINVAL,
			"early: dropping at XDP needs pinned state (the program must outlive nfbox), and nfbox "
			"runs with --no-pin");
	snprintf(ea->bpffs, sizeof(ea->bpffs), "%s", pin_dir);
	if (snprintf(ea->dir, sizeof(ea->dir), "%s/early", pin_dir) >= (int)sizeof(ea->dir))
		return diag_fail(d, -ENAMETOOLONG, "early: pin directory %s is too long", pin_dir);
	if (mkdir(ea->dir, 0700) < 0 && errno != EEXIST)
		return diag_errno(d, -errno, "early: cannot make %s", ea->dir);
	/* libxdp pins its dispatchers on this bpf filesystem: they outlive nfbox */
	setenv("LIBXDP_BPFFS", ea->bpffs, 1);
	if (adopt(ea) < 0 && (r = fresh(ea, d)) < 0)
		return r;
	*out = TAKE_PTR(ea);
	return 0;
}

void early_close(struct early *ea)
{
	if (!ea)
		return;
	for (int i = 0; i < EO_COUNT; i++) {
		if (ea->outer_fd[i] >= 0 && !ea->skel)
			close(ea->outer_fd[i]);
		if (ea->inner_fd[i] >= 0)
			close(ea->inner_fd[i]);
	}
	if (ea->cfg_fd >= 0 && !ea->skel)
		close(ea->cfg_fd);
	if (ea->local_fd >= 0 && !ea->skel)
		close(ea->local_fd);
	xdp_program__close(ea->prog);
	nfbox_early_bpf__destroy(ea->skel);
	free(ea->att);
	free(ea);
}

/* ---- attaching ---- */

/* The record that the program pinned is this build's (its absence makes
 * the next daemon load its own). */
static void record_build(const struct early *ea)
{
	struct engine_build b = { .prog_id = { ea->prog_id } };
	char path[PATH_MAX];
	int r;

	early_hash(b.hash);
	if ((r = pin_path(ea, "build", path, sizeof(path))) < 0 || (r = engine_build_pin(path, &b)) < 0)
		log_warn("early: cannot record which build's XDP program runs (%s): the next daemon loads its own",
			 strerror(-r));
}

/* The maps, once libxdp loaded the program: the configuration says which
 * program they belong to, and that nothing is in force yet. */
static int after_load(struct early *ea, struct diags *d)
{
	uint32_t zero = 0;

	ea->cfg_fd = bpf_map__fd(ea->skel->maps.nfb_early_cfg);
	ea->outer_fd[EO_IF] = bpf_map__fd(ea->skel->maps.nfb_early_if);
	ea->outer_fd[EO_SRC4] = bpf_map__fd(ea->skel->maps.nfb_early_src4);
	ea->outer_fd[EO_SRC6] = bpf_map__fd(ea->skel->maps.nfb_early_src6);
	ea->outer_fd[EO_RULES] = bpf_map__fd(ea->skel->maps.nfb_early_rules);
	ea->local_fd = bpf_map__fd(ea->skel->maps.nfb_early_local);
	ea->prog_id = xdp_program__id(ea->prog);
	ea->cfg = (struct nfb_early_cfg){ .active = EARLY_NONE, .abi = NFB_EARLY_ABI, .prog_id = ea->prog_id };
	if (bpf_map_update_elem(ea->cfg_fd, &zero, &ea->cfg, BPF_ANY) < 0)
		return diag_errno(d, -errno, "early: cannot write the XDP program's configuration");
	record_build(ea);
	return 0;
}

/* libxdp tries its dispatcher first, and falls back to the program alone
 * where the kernel refuses the dispatcher's extension programs (lockdown):
 * said once here, not as libbpf's load failures (nfbox run -v shows them). */
static int attach_mode(struct early *ea, int ifindex, enum xdp_attach_mode mode)
{
	int r;

	log_libraries_quiet(true);
	r = xdp_program__attach(ea->prog, ifindex, mode, 0);
	log_libraries_quiet(false);
	return r;
}

static void say_mode(int ifindex, const char *name)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);

	if (libxdp_get_error(mp) || !mp)
		return;
	if (xdp_multiprog__is_legacy(mp))
		log_info("early: %s: the kernel refused libxdp's dispatcher, so the XDP program runs alone there (no "
			 "other XDP program, such as a capture, can attach beside it)",
			 name);
	xdp_multiprog__close(mp);
}

static int attach(struct early *ea, int ifindex, const char *name, struct diags *d)
{
	bool first = !loaded(ea);
	int r;

	if (attached_to(ea, ifindex))
		return 0;
	{
		/* an early program of a policy before, kept for a capture: the
		 * new one takes its place (the capture chains itself after it
		 * again, capture_reseat) */
		bool native;
		uint32_t old = xdp_attached_id(ifindex, &native);

		if (old && old != ea->prog_id && xdp_is_early(old))
			xdp_detach_id(ifindex, old);
		/* a capture's link: the early program takes the interface, and
		 * the capture chains itself after it (capture_reseat) */
		else if (old && xdp_is_capture(old) && xdp_link_detach_on(ifindex) == 0)
			log_info("early: %s: the capture there runs after the early drop from now on", name);
	}
	if ((r = attach_mode(ea, ifindex, XDP_MODE_NATIVE)) < 0) {
		int native = r;

		if ((r = attach_mode(ea, ifindex, XDP_MODE_SKB)) < 0)
			return diag_fail(
				d, r,
				"early: cannot attach the XDP program to %s (native: %s; generic: %s; nfbox run -v "
				"says why); remove 'early' from the rules on it",
				name, strerror(-native), strerror(-r));
		log_info("early: native XDP on %s failed (%s); dropping in generic (skb) mode", name,
			 strerror(-native));
	}
	say_mode(ifindex, name);
	if (first && (r = after_load(ea, d)) < 0)
		return r;
	return note_attached(ea, ifindex) < 0 ? diag_errno(d, -ENOMEM, "early") : 0;
}

/* Rule r names interface ifname in its in:. */
static bool names(const struct rule *r, const char *ifname)
{
	for (uint32_t i = 0; i < r->in.n; i++)
		if (!strcmp(r->in.ifnames[i], ifname))
			return true;
	return false;
}

/* Attached to every interface present that an early rule of pl names. */
static int attach_all(struct early *ea, const struct plan *pl, struct diags *d)
{
	int r;

	for (uint32_t i = 0; pl && i < pl->pol->nrules; i++) {
		const struct rule *ru = &pl->pol->rules[i];

		for (uint32_t j = 0; ru->early && j < ru->in.n; j++) {
			int ifindex = (int)if_nametoindex(ru->in.ifnames[j]);

			if (ifindex && (r = attach(ea, ifindex, ru->in.ifnames[j], d)) < 0)
				return r;
		}
	}
	return 0;
}

int early_prepare(struct early *ea, const struct plan *pl, struct diags *d)
{
	return attach_all(ea, pl, d);
}

/* ---- a generation of the maps ---- */

struct epfx {
	uint8_t fam, plen; /* 0: IPv4, 1: IPv6 */
	uint8_t addr[16];
	uint64_t mask;
};

static int epfx_cmp(const void *a, const void *b)
{
	const struct epfx *x = a, *y = b;

	if (x->fam != y->fam)
		return x->fam - y->fam;
	if (x->plen != y->plen)
		return x->plen - y->plen;
	return memcmp(x->addr, y->addr, 16);
}

static void mask_to(uint8_t *a, unsigned plen)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned bits = plen > 8 * i ? plen - 8 * i : 0;

		a[i] &= bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);
	}
}

/* Every early rule's static prefixes with its bit, sorted and merged. */
static int collect(const struct plan *pl, struct epfx **out, size_t *n)
{
	size_t cap = 0, k = 0, w = 0;
	uint32_t bit = 0;
	struct epfx *v = NULL;

	for (uint32_t i = 0; i < pl->pol->nrules; i++) {
		const struct rule *r = &pl->pol->rules[i];

		if (!r->early)
			continue;
		for (uint32_t j = 0; j < r->from.n; j++, k++) {
			if (k == cap) {
				struct epfx *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[k] = (struct epfx){ .fam = r->from.v[j].family == POLICY_FAM_IPV6,
					      .plen = r->from.v[j].plen,
					      .mask = 1ull << bit };
			memcpy(v[k].addr, r->from.v[j].addr, v[k].fam ? 16 : 4);
			mask_to(v[k].addr, v[k].plen);
		}
		bit++;
	}
	sort_n(v, k, sizeof(*v), epfx_cmp);
	for (size_t i = 0; i < k; i++) { /* one entry per prefix: the union of its rules */
		if (w && !epfx_cmp(&v[w - 1], &v[i]))
			v[w - 1].mask |= v[i].mask;
		else
			v[w++] = v[i];
	}
	*out = v;
	*n = w;
	return 0;
}

/* Each prefix also takes the rules of every shorter prefix that holds it:
 * the trie answers with the longest match only. v is sorted by family,
 * length, address, so a prefix's holders come before it, each length a
 * run of its own (at most 2 * 129 runs): one search per shorter run. */
static int unite(struct epfx *v, size_t n)
{
	struct run {
		size_t lo, hi;
	} runs[2 * 129];
	size_t nruns = 0;

	for (size_t i = 0; i < n; i++) {
		if (!nruns || v[runs[nruns - 1].lo].fam != v[i].fam || v[runs[nruns - 1].lo].plen != v[i].plen) {
			if (nruns == sizeof(runs) / sizeof(runs[0]))
				return -EINVAL;
			runs[nruns++] = (struct run){ .lo = i };
		}
		runs[nruns - 1].hi = i + 1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < nruns && runs[k].lo < i; k++) {
			const struct epfx *h = &v[runs[k].lo];
			struct epfx key = v[i];
			struct epfx *f;

			if (h->fam != v[i].fam || h->plen >= v[i].plen)
				continue;
			key.plen = h->plen;
			mask_to(key.addr, key.plen);
			if ((f = search_n(&key, v + runs[k].lo, runs[k].hi - runs[k].lo, sizeof(*v), epfx_cmp)))
				v[i].mask |= f->mask;
		}
	return 0;
}

static int create_inner(int k)
{
	LIBBPF_OPTS(bpf_map_create_opts, nopre, .map_flags = BPF_F_NO_PREALLOC);

	switch (k) {
	case EO_IF:
		return bpf_map_create(BPF_MAP_TYPE_HASH, "nfb_early_if_g", sizeof(uint32_t), sizeof(uint64_t),
				      NFB_EARLY_IFACES, NULL);
	case EO_SRC4:
		return bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "nfb_early_s4_g", sizeof(struct nfb_early4_key),
				      sizeof(uint64_t), NFB_EARLY_PREFIXES, &nopre);
	case EO_SRC6:
		return bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "nfb_early_s6_g", sizeof(struct nfb_early6_key),
				      sizeof(uint64_t), NFB_EARLY_PREFIXES, &nopre);
	default:
		return bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfb_early_r_g", sizeof(uint32_t),
				      sizeof(struct nfb_early_rule), NFB_EARLY_MAX, NULL);
	}
}

static int fill_sources(int fd4, int fd6, const struct plan *pl)
{
	_cleanup_free_ struct epfx *v = NULL;
	size_t n = 0;
	int r;

	if ((r = collect(pl, &v, &n)) < 0 || (r = unite(v, n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct nfb_early4_key k4 = { .prefixlen = v[i].plen };
		struct nfb_early6_key k6 = { .prefixlen = v[i].plen };

		memcpy(k4.addr, v[i].addr, 4);
		memcpy(k6.addr, v[i].addr, 16);
		if (bpf_map_update_elem(v[i].fam ? fd6 : fd4, v[i].fam ? (void *)&k6 : (void *)&k4, &v[i].mask,
					BPF_ANY) < 0)
			return -errno;
	}
	return 0;
}

/* The rule's bit in hook h's plan, or -1 if it is not there. */
static int64_t bit_in(const struct plan *pl, int h, const struct rule *r)
{
	for (uint32_t b = 0; b < pl->hook[h].nrules; b++)
		if (pl->hook[h].rules[b] == r)
			return b;
	return -1;
}

static int fill_rules(int fd, const struct plan *pl, const struct slot_map *slots, uint64_t *dyn_rules)
{
	static const int hooks[2] = { POLICY_HOOK_INPUT, POLICY_HOOK_FORWARD };
	uint32_t bit = 0;

	*dyn_rules = 0;
	for (uint32_t i = 0; i < pl->pol->nrules; i++) {
		const struct rule *r = &pl->pol->rules[i];
		struct nfb_early_rule v = { .flags = r->log ? NFB_EARLY_LOG : 0 };

		if (!r->early)
			continue;
		for (int h = 0; h < 2; h++) {
			int64_t b = bit_in(pl, hooks[h], r);

			v.bit[h] = b < 0 ? 0 : (uint32_t)b;
			v.slot[h] = b < 0 ? 0 : slots->rule_slot[hooks[h]][b];
		}
		if (r->from.dyn && r->from.dyn - 1 < slots->nsets)
			v.dyn = slots->set_id[r->from.dyn - 1];
		if (v.dyn)
			*dyn_rules |= 1ull << bit;
		if (bpf_map_update_elem(fd, &bit, &v, BPF_ANY) < 0)
			return -errno;
		bit++;
	}
	return 0;
}

/* Each present interface an early rule names, with the rules on it. */
static int fill_ifaces(int fd, const struct plan *pl)
{
	uint32_t bit = 0;

	for (uint32_t i = 0; i < pl->pol->nrules; i++) {
		const struct rule *r = &pl->pol->rules[i];

		if (!r->early)
			continue;
		for (uint32_t j = 0; j < r->in.n; j++) {
			uint32_t ifindex = if_nametoindex(r->in.ifnames[j]);
			uint64_t m = 0;

			if (!ifindex)
				continue;
			bpf_map_lookup_elem(fd, &ifindex, &m);
			m |= 1ull << bit;
			if (bpf_map_update_elem(fd, &ifindex, &m, BPF_ANY) < 0)
				return -errno;
		}
		bit++;
	}
	return 0;
}

/* The generation of inner maps fd[] put in the spare slot and flipped to;
 * the one before emptied. fd[] is then the generation in force. */
static int flip(struct early *ea, int fd[EO_COUNT], uint64_t dyn_rules)
{
	uint32_t zero = 0, old = ea->cfg.active, spare = old == 0 ? 1 : 0;
	struct nfb_early_cfg c = ea->cfg;

	for (int k = 0; k < EO_COUNT; k++)
		if (bpf_map_update_elem(ea->outer_fd[k], &spare, &fd[k], BPF_ANY) < 0)
			return -errno;
	c.active = spare;
	c.dyn_rules = dyn_rules;
	if (bpf_map_update_elem(ea->cfg_fd, &zero, &c, BPF_ANY) < 0)
		return -errno;
	ea->cfg = c;
	for (int k = 0; k < EO_COUNT && old < NFB_EARLY_GENS; k++)
		bpf_map_delete_elem(ea->outer_fd[k], &old); /* freed once no frame uses it */
	for (int k = 0; k < EO_COUNT; k++) {
		if (ea->inner_fd[k] >= 0 && ea->inner_fd[k] != fd[k])
			close(ea->inner_fd[k]);
		ea->inner_fd[k] = fd[k];
	}
	return 0;
}

/* Nothing in force: every frame passes (no early rule, or one to come). */
static void suspend(struct early *ea)
{
	uint32_t zero = 0;
	struct nfb_early_cfg c = ea->cfg;

	if (!loaded(ea) || c.active >= NFB_EARLY_GENS)
		return;
	c.active = EARLY_NONE;
	if (bpf_map_update_elem(ea->cfg_fd, &zero, &c, BPF_ANY) == 0)
		ea->cfg = c;
}

/* Detached from the interfaces no early rule of pl names now (or that are
 * gone). */
static void detach_unused(struct early *ea, const struct plan *pl)
{
	for (uint32_t i = 0; i < ea->natt;) {
		char name[IF_NAMESIZE];
		bool used = false;

		if (!if_indextoname((unsigned)ea->att[i], name)) {
			forget_attached(ea, i); /* gone, with its dispatcher */
			continue;
		}
		for (uint32_t j = 0; pl && j < pl->pol->nrules && !used; j++)
			used = pl->pol->rules[j].early && names(&pl->pol->rules[j], name);
		if (used || chained(ea, ea->att[i]))
			i++; /* a chained capture keeps it there, dropping nothing on it */
		else
			detach_one(ea, i);
	}
}

static void close_all(int fd[EO_COUNT])
{
	for (int k = 0; k < EO_COUNT; k++)
		if (fd[k] >= 0)
			close(fd[k]);
}

/* ---- this host's addresses ---- */

struct locals {
	struct nfb_early_local_key v[NFB_EARLY_LOCALS];
	uint32_t n;
};

static void add_local(uint8_t family, const uint8_t *addr, void *arg)
{
	struct locals *l = arg;
	struct nfb_early_local_key k = { .family = family == POLICY_FAM_IPV6 ? NFB_FAM_IPV6 : NFB_FAM_IPV4 };

	if (l->n == NFB_EARLY_LOCALS)
		return;
	memcpy(k.addr, addr, family == POLICY_FAM_IPV6 ? 16 : 4);
	l->v[l->n++] = k;
}

static bool is_local(const struct locals *l, const struct nfb_early_local_key *k)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (!memcmp(&l->v[i], k, sizeof(*k)))
			return true;
	return false;
}

static bool not_local(const void *key, void *arg)
{
	return !is_local(arg, key);
}

/* nfb_early_local made to hold this host's addresses now: which hook a
 * dropped frame is counted on. */
static void sync_locals(struct early *ea)
{
	_cleanup_free_ struct locals *l = calloc(1, sizeof(*l));
	uint8_t one = 1;
	int r;

	if (!l || ea->local_fd < 0)
		return;
	if ((r = nl_local_addrs(add_local, l)) < 0) {
		log_warn("early: cannot list this host's addresses (%s); frames dropped at XDP may be counted on the "
			 "forward hook instead of input",
			 strerror(-r));
		return;
	}
	engine_delete_keys(ea->local_fd, sizeof(struct nfb_early_local_key), not_local, l);
	for (uint32_t i = 0; i < l->n; i++)
		bpf_map_update_elem(ea->local_fd, &l->v[i], &one, BPF_ANY);
}

/* A generation of maps for pl in fd[] (made here), flipped to. */
static int write_gen(struct early *ea, const struct plan *pl, const struct slot_map *slots, int fd[EO_COUNT])
{
	uint64_t dyn_rules = 0;
	int r;

	for (int k = 0; k < EO_COUNT; k++)
		if ((fd[k] = create_inner(k)) < 0)
			return -errno;
	if ((r = fill_sources(fd[EO_SRC4], fd[EO_SRC6], pl)) < 0 ||
	    (r = fill_rules(fd[EO_RULES], pl, slots, &dyn_rules)) < 0 || (r = fill_ifaces(fd[EO_IF], pl)) < 0)
		return r;
	return flip(ea, fd, dyn_rules);
}

int early_apply(struct early *ea, const struct plan *pl, const struct slot_map *slots, struct diags *d)
{
	int fd[EO_COUNT] = { -1, -1, -1, -1 };
	int r;

	if (!early_count(pl))
		pl = NULL;
	if (pl && (r = attach_all(ea, pl, d)) < 0) {
		suspend(ea);
		return r;
	}
	if (!pl || !loaded(ea)) { /* none, or none of their interfaces is here yet */
		suspend(ea);
		detach_unused(ea, pl);
		return 0;
	}
	sync_locals(ea);
	if ((r = write_gen(ea, pl, slots, fd)) < 0) {
		/* XDP drops nothing until the next apply (the hook still does) */
		close_all(fd);
		suspend(ea);
		return diag_errno(d, r, "early: cannot write the XDP program's maps");
	}
	detach_unused(ea, pl);
	return 0;
}

int early_links_changed(struct early *ea, const struct plan *pl, const struct slot_map *slots, struct diags *d)
{
	int fd[EO_COUNT];
	int r;

	if (!early_count(pl))
		return 0;
	if ((r = attach_all(ea, pl, d)) < 0)
		return r;
	if (!loaded(ea))
		return 0;
	sync_locals(ea);
	if (ea->inner_fd[EO_RULES] < 0 || ea->cfg.active >= NFB_EARLY_GENS) /* nothing written yet */
		return early_apply(ea, pl, slots, d);
	/* a new interface map beside the same sources and rules */
	for (int k = 0; k < EO_COUNT; k++)
		fd[k] = k == EO_IF ? create_inner(k) : ea->inner_fd[k];
	if (fd[EO_IF] < 0)
		return diag_errno(d, -errno, "early: cannot make the interface map");
	if ((r = fill_ifaces(fd[EO_IF], pl)) < 0 || (r = flip(ea, fd, ea->cfg.dyn_rules)) < 0) {
		close(fd[EO_IF]);
		return diag_errno(d, r, "early: cannot write the interface map");
	}
	detach_unused(ea, pl);
	return 0;
}

void early_destroy(struct early *ea)
{
	uint32_t zero = 0, kept = 0;

	suspend(ea);
	for (uint32_t i = 0; i < ea->natt;) {
		if (chained(ea, ea->att[i])) {
			kept++, i++;
		} else {
			detach_one(ea, i);
		}
	}
	if (kept && loaded(ea)) {
		/* it stays for the captures chained to it; the last one to go
		 * detaches it (capture.c) */
		struct nfb_early_cfg c = ea->cfg;

		c.active = NFB_EARLY_RETIRED;
		if (bpf_map_update_elem(ea->cfg_fd, &zero, &c, BPF_ANY) == 0)
			ea->cfg = c;
		log_info("early: the XDP program stays on %u interface%s for the capture chained to it, dropping "
			 "nothing",
			 kept, kept == 1 ? "" : "s");
	}
	unpin_all(ea);
	rmdir(ea->dir);
}

uint32_t early_ifaces(const struct early *ea, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (uint32_t i = 0; ea && i < ea->natt && off < len; i++) {
		char name[IF_NAMESIZE];

		if (!if_indextoname((unsigned)ea->att[i], name))
			snprintf(name, sizeof(name), "if%d", ea->att[i]);
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", name);
	}
	return ea ? ea->natt : 0;
}
