/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Engine: program, maps and links; loading, pinning and adoption. */
/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/bpf/engine/engine_int.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/nfhook.h"
#include "lib/plant.h"
#include "bpf/nfbox_filter.skel.h"

static const char *const map_names[EM_COUNT] = {
	[EM_CTL] = "nfb_ctl",
	[EM_GEN] = "nfb_gen",
	[EM_ADDR4] = "nfb_addr4",
	[EM_ADDR6] = "nfb_addr6",
	[EM_IFACE] = "nfb_iface",
	[EM_PORT] = "nfb_port",
	[EM_MISC] = "nfb_misc",
	[EM_RULES] = "nfb_rules",
	[EM_LIMITS] = "nfb_limits",
	[EM_BLOB] = "nfb_blob",
	[EM_COUNTERS] = "nfb_counters",
	[EM_METER] = "nfb_meter",
	[EM_CONNS] = "nfb_conns",
	[EM_CONN_COUNT] = "nfb_conn_count",
	[EM_FIXED] = "nfb_fixed",
	[EM_EVENTS] = "nfb_events",
	[EM_LOG_BUCKET] = "nfb_log_bucket",
	[EM_REJECTS] = "nfb_rejects",
	[EM_DYN4] = "nfb_dyn4",
	[EM_DYN6] = "nfb_dyn6",
	[EM_DYN_NAMES] = "nfb_dyn_names",
	[EM_OVERLOAD_SEEN] = "nfb_overload_seen",
	[EM_SCHED] = "nfb_sched",
	[EM_TRACE] = "nfb_trace",
	[EM_SCHED_CONNS] = "nfb_sched_conns",
	[EM_SCHED_FULL] = "nfb_sched_full",
};

/* nfbox's hook and family numbers are the policy's (names written once, in
 * policy/syntax/names.c); the kernel's are looked up here. */
_Static_assert(NFB_HOOK_INPUT == (int)POLICY_HOOK_INPUT && NFB_HOOK_FORWARD == (int)POLICY_HOOK_FORWARD &&
		       NFB_HOOK_OUTPUT == (int)POLICY_HOOK_OUTPUT && NFB_HOOK_MAX == (int)POLICY_HOOK_MAX,
	       "engine and policy number hooks alike");
_Static_assert((1 << NFB_FAM_IPV4) == POLICY_FAM_IPV4 && (1 << NFB_FAM_IPV6) == POLICY_FAM_IPV6,
	       "engine family f is policy family bit 1 << f");

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[512];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void read_shapes(struct engine *e, struct nfbox_filter_bpf *skel)
{
	for (int i = 0; i < EM_NUM_OUTER; i++) {
		struct bpf_map *outer = bpf_object__find_map_by_name(skel->obj, map_names[EM_FIRST_OUTER + i]);
		struct bpf_map *in = outer ? bpf_map__inner_map(outer) : NULL;

		if (!in)
			continue;
		e->shape[i] = (struct inner_shape){
			.type = bpf_map__type(in),
			.key_size = bpf_map__key_size(in),
			.value_size = bpf_map__value_size(in),
			.max_entries = bpf_map__max_entries(in),
			.flags = bpf_map__map_flags(in),
		};
	}
}

/* The active generation's counters map; a spare generation still there (a
 * daemon that stopped before freeing it) is freed by engine_settle(). */
static int adopt_counters(struct engine *e)
{
	struct nfb_gen_cfg cfg;
	uint32_t id, spare = e->active_gen ^ 1;
	int fd;

	for (int i = EM_FIRST_OUTER; i < EM_FIRST_OUTER + EM_NUM_OUTER; i++)
		if (bpf_map_lookup_elem(e->map_fd[i], &spare, &id) == 0)
			e->retired = true;
	if (bpf_map_lookup_elem(e->map_fd[EM_GEN], &e->active_gen, &cfg) < 0 ||
	    bpf_map_lookup_elem(e->map_fd[EM_COUNTERS], &e->active_gen, &id) < 0)
		return 0; /* no policy loaded yet */
	if (cfg.cnt_cpus != (uint32_t)e->ncpus) {
		errno = EPROTO;
		return -1;
	}
	if ((fd = bpf_map_get_fd_by_id(id)) < 0)
		return -1;
	if (cnt_map_open(e, fd, cfg.cnt_cap, &e->cnt) < 0) {
		close(fd);
		return -1;
	}
	return 0;
}

const char *engine_map_name(int em)
{
	return em >= 0 && em < EM_COUNT ? map_names[em] : "";
}

/* The entries of nfb_sched_conns: NFB_SCHED_CONN_ENTRIES; the test build
 * takes fewer from NFBOX_TEST_SCHED_CONNS, so that a suite fills it with a
 * few connections (nfbox itself has no such switch). */
static uint32_t sched_conn_entries(void)
{
#ifdef NFBOX_TEST_PLANT
	const char *v = getenv("NFBOX_TEST_SCHED_CONNS");

	if (v && atoi(v) > 0 && atoi(v) < NFB_SCHED_CONN_ENTRIES)
		return (uint32_t)atoi(v);
#endif
	return NFB_SCHED_CONN_ENTRIES;
}

/* A map the first builds of layout 14 did not have (nfb_sched_conns,
 * nfb_sched_full), made and pinned at path for a state they left. A fd or
 * -errno. */
static int late_map_make(int em, const char *path)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = em == EM_SCHED_CONNS ? bpf_map_create(BPF_MAP_TYPE_HASH, map_names[em], sizeof(struct nfb_conn_key),
						       sizeof(__u32), sched_conn_entries(), &opts)
				      : bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, map_names[em], sizeof(__u32),
						       sizeof(struct nfb_counter), 1, NULL);

	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* The state pinned in e->pin_dir, of this layout and namespace (probed). */
static int adopt(struct engine *e, uint64_t cookie, struct diags *d)
{
	char path[512];
	struct nfb_ctl ctl;
	uint32_t zero = 0;

	if (engine_path(path, sizeof(path), e, "", "prog") < 0 || (e->prog_fd = bpf_obj_get(path)) < 0)
		return diag_errno(d, -errno, "cannot open the pinned program %s", path);
	/* The control map first: its layout version says whether the other
	 * maps are this version's (an older state lacks some). */
	for (int i = 0; i < EM_COUNT; i++) {
		if ((i == EM_SCHED_CONNS || i == EM_SCHED_FULL) &&
		    engine_path(path, sizeof(path), e, "maps", map_names[i]) == 0 &&
		    (e->map_fd[i] = bpf_obj_get(path)) < 0 && errno == ENOENT) {
			if ((e->map_fd[i] = late_map_make(i, path)) < 0)
				return diag_errno(d, e->map_fd[i], "cannot make the map %s", path);
			continue;
		}
		if (engine_path(path, sizeof(path), e, "maps", map_names[i]) < 0 ||
		    (e->map_fd[i] = bpf_obj_get(path)) < 0)
			return diag_fail(d, -ENOENT,
					 "pinned state in %s is incomplete (map %s is missing); remove the pin "
					 "directory or run 'nfbox run --fresh'",
					 e->pin_dir, map_names[i]);
		if (i == EM_CTL && (bpf_map_lookup_elem(e->map_fd[EM_CTL], &zero, &ctl) < 0 ||
				    ctl.abi != NFB_ABI_VERSION || ctl.netns_cookie != cookie))
			return diag_fail(d, -EPROTO, "the control map pinned in %s changed under this start",
					 e->pin_dir);
	}
	if (engine_path(path, sizeof(path), e, "", "conns") < 0 || (e->conns_fd = bpf_obj_get(path)) < 0)
		return diag_fail(d, -ENOENT,
				 "pinned state in %s is incomplete (program conns is missing); remove the pin "
				 "directory or run 'nfbox run --fresh'",
				 e->pin_dir);
	e->netns_cookie = cookie;
	e->active_gen = ctl.active_gen & 1;
	if (adopt_counters(e) < 0)
		return diag_errno(d, -errno, "cannot map the counters pinned in %s", e->pin_dir);
	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (int f = 0; f < NFB_FAM_MAX; f++) {
			struct engine_link *l = &e->link[h][f];

			if (engine_link_path(path, sizeof(path), e, h, f) < 0)
				return diag_errno(d, -ENAMETOOLONG, "pin directory %s", e->pin_dir);
			l->fd = bpf_obj_get(path);
			if (l->fd >= 0 && engine_link_read_info(l) < 0) {
				close(l->fd);
				l->fd = -1;
			}
		}
	}
	e->adopted = true;
	return 0;
}

static int make_pin_dirs(struct engine *e, struct diags *d)
{
	char path[512];
	int r;

	if ((r = mkdir_p(e->pin_dir, 0700)) < 0)
		return diag_errno(d, r, "cannot create the pin directory %s", e->pin_dir);
	for (int i = 0; i < 2; i++) {
		if ((r = engine_path(path, sizeof(path), e, "", i ? "links" : "maps")) < 0 ||
		    (r = mkdir_p(path, 0700)) < 0)
			return diag_errno(d, r, "cannot create the pin directory %s", path);
	}
	return 0;
}

/* Our own fds of the maps, pinned when there is a pin directory. */
static int take_maps(struct engine *e, struct nfbox_filter_bpf *skel, struct diags *d)
{
	char path[512];

	for (int i = 0; i < EM_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, map_names[i]);

		if (!m)
			return diag_fail(d, -ENOENT, "the classifier object lacks map %s", map_names[i]);
		if (e->pin_dir) {
			engine_path(path, sizeof(path), e, "maps", map_names[i]);
			unlink(path);
			if (bpf_obj_pin(bpf_map__fd(m), path) < 0)
				return diag_errno(d, -errno, "cannot pin map %s", path);
		}
		if ((e->map_fd[i] = dup(bpf_map__fd(m))) < 0)
			return diag_errno(d, -errno, "dup");
	}
	return 0;
}

static int load_fresh(struct engine *e, struct nfbox_filter_bpf *skel, uint64_t cookie, struct diags *d)
{
	struct nfb_ctl ctl = { .active_gen = 0, .abi = NFB_ABI_VERSION, .netns_cookie = cookie };
	uint32_t zero = 0;
	char path[512];
	int r;

	if ((r = nfbox_filter_bpf__load(skel)))
		return diag_errno(d, r, "the kernel refused the classifier program (see the verifier messages above)");
	if ((e->pin_dir && (r = make_pin_dirs(e, d)) < 0) || (r = take_maps(e, skel, d)) < 0)
		return r;
	e->prog_fd = dup(bpf_program__fd(skel->progs.nfbox_filter));
	e->conns_fd = dup(bpf_program__fd(skel->progs.nfbox_conns));
	e->netns_cookie = cookie;
	if (bpf_map_update_elem(e->map_fd[EM_CTL], &zero, &ctl, BPF_ANY) < 0)
		return diag_errno(d, -errno, "cannot write the classifier's control map");
	e->active_gen = 1; /* so the first load goes to generation 0 */
	if (!e->pin_dir)
		return 0;
	engine_path(path, sizeof(path), e, "", "conns");
	unlink(path);
	if (bpf_obj_pin(e->conns_fd, path) < 0)
		return diag_errno(d, -errno, "cannot pin the program %s", path);
	/* The classifier is pinned last: its pin marks the state as complete. */
	engine_path(path, sizeof(path), e, "", "prog");
	unlink(path);
	if (bpf_obj_pin(e->prog_fd, path) < 0)
		return diag_errno(d, -errno, "cannot pin the program %s", path);
	return 0;
}

static struct engine *engine_alloc(const char *pin_dir)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (!e || (pin_dir && !(e->pin_dir = strdup(pin_dir)))) {
		free(e);
		return NULL;
	}
	e->prog_fd = -1;
	e->conns_fd = -1;
	for (int i = 0; i < EM_COUNT; i++)
		e->map_fd[i] = -1;
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			e->link[h][f].fd = -1;
	e->ncpus = libbpf_num_possible_cpus();
	e->cnt.fd = e->old_cnt.fd = -1;
	return e;
}

static void engine_closep(struct engine **e)
{
	engine_close(*e);
}

static void skel_destroyp(struct nfbox_filter_bpf **s)
{
	nfbox_filter_bpf__destroy(*s);
}

uint32_t engine_plants(void)
{
	return (planted("mapped-passes") ? NFB_PLANT_MAPPED_PASSES : 0) |
	       (planted("conns-keep-closed") ? NFB_PLANT_KEEP_CLOSED : 0) |
	       (planted("schedule-unmarked") ? NFB_PLANT_SCHED_UNKEPT : 0) |
	       (planted("trace-all") ? NFB_PLANT_TRACE_ALL : 0) |
	       (planted("sched-full-uncounted") ? NFB_PLANT_SCHED_UNCOUNTED : 0);
}

/* What a failed adopt() opened, closed: the engine as engine_alloc() made it. */
static void forget(struct engine *e)
{
	cnt_map_close(e, &e->cnt);
	for (int i = 0; i < EM_COUNT; i++) {
		if (e->map_fd[i] >= 0)
			close(e->map_fd[i]);
		e->map_fd[i] = -1;
	}
	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (int f = 0; f < NFB_FAM_MAX; f++) {
			if (e->link[h][f].fd >= 0)
				close(e->link[h][f].fd);
			e->link[h][f].fd = -1;
		}
	}
	if (e->prog_fd >= 0)
		close(e->prog_fd);
	if (e->conns_fd >= 0)
		close(e->conns_fd);
	e->prog_fd = e->conns_fd = -1;
	e->retired = e->adopted = false;
}

/* The state found pinned: adopted (its programs made this build's), set
 * aside to be replaced, or (a newer layout, another namespace) refused
 * and left enforcing. */
static int open_pinned(struct engine *e, struct nfbox_filter_bpf *skel, const struct engine_opts *o, struct diags *d)
{
	struct engine_probe p;
	char tag[32], why[sizeof(e->replaced)];
	struct diags ad;
	int r;

	engine_probe(e, &p);
	if (o->fresh)
		return engine_set_aside(e, "fresh", "is replaced (--fresh)", d);
	if (p.abi > NFB_ABI_VERSION)
		return diag_fail(d, -EPROTO,
				 "the state pinned in %s is of layout %u, newer than this nfbox's (%u): a newer nfbox "
				 "made it (a downgrade?), and this one cannot read it. It stays enforcing, untouched. "
				 "Run the newer nfbox again, or replace the state with this version's: 'nfbox run "
				 "--fresh' (no gap: it enforces until this version's classifier has taken its place; "
				 "its counters are not carried over)",
				 e->pin_dir, p.abi, NFB_ABI_VERSION);
	if (p.cookie_known && p.cookie != o->netns_cookie)
		return diag_fail(
			d, -EXDEV,
			"the state pinned in %s enforces another network namespace (cookie %llu, this one %llu): give "
			"each appliance its own --pin-dir, or replace the stale state with 'nfbox run --fresh'",
			e->pin_dir, (unsigned long long)p.cookie, (unsigned long long)o->netns_cookie);
	if (p.abi == NFB_ABI_VERSION) {
		diags_init(&ad);
		r = adopt(e, o->netns_cookie, &ad);
		snprintf(why, sizeof(why), "cannot be adopted (%s)", diags_last(&ad, strerror(-r)));
		diags_free(&ad);
		if (r == 0)
			return engine_programs_follow(e, skel, d);
		forget(e);
		return engine_set_aside(e, "broken", why, d);
	}
	if (p.abi) {
		snprintf(tag, sizeof(tag), "abi%u", p.abi);
		snprintf(why, sizeof(why), "%s, older than this nfbox's %u", p.why, NFB_ABI_VERSION);
	} else {
		snprintf(tag, sizeof(tag), "unknown");
		snprintf(why, sizeof(why), "%s", p.why);
	}
	return engine_set_aside(e, tag, why, d);
}

/* A classifier of this build, loaded and pinned; the states set aside go
 * on enforcing beside it until the backend retires them. */
static int open_fresh(struct engine *e, struct nfbox_filter_bpf *skel, uint64_t cookie, struct diags *d)
{
	int r;

	if ((r = engine_find_predecessors(e)) < 0)
		return diag_errno(d, r, "pin directory %s", e->pin_dir);
	if (e->npred && !e->replaced[0]) {
		snprintf(e->replaced, sizeof(e->replaced), "was set aside by a start before this one");
		log_warn("%s holds %u states set aside by a start before this one: they go on enforcing until this "
			 "classifier has its policy and dynamic sets",
			 e->pin_dir, e->npred);
	}
	if (planted("replace-detaches-first"))
		engine_retire_predecessors(e);
	if ((r = load_fresh(e, skel, cookie, d)) < 0)
		return r;
	if ((r = engine_build_record(e, skel)) < 0)
		log_warn("cannot record which build's programs are pinned in %s (the next start loads them again): %s",
			 e->pin_dir, strerror(-r));
	return 0;
}

int engine_open(const struct engine_opts *o, struct diags *d, struct engine **out)
{
	_cleanup_(skel_destroyp) struct nfbox_filter_bpf *skel = NULL;
	_cleanup_(engine_closep) struct engine *e = engine_alloc(o->pin_dir);
	char path[512];
	int r = 0;

	if (!e)
		return diag_errno(d, -ENOMEM, "opening the engine");
	if (!(skel = nfbox_filter_bpf__open()))
		return diag_errno(d, -errno, "cannot open the classifier object");
	skel->rodata->nfb_plant = engine_plants();
	if ((r = bpf_map__set_max_entries(skel->maps.nfb_sched_conns, sched_conn_entries())) < 0)
		return diag_errno(d, r, "cannot size the classifier's map nfb_sched_conns");
	read_shapes(e, skel);
	if (e->pin_dir && engine_path(path, sizeof(path), e, "", "prog") == 0 && access(path, F_OK) == 0)
		r = open_pinned(e, skel, o, d);
	if (r == 0 && !e->adopted)
		r = open_fresh(e, skel, o->netns_cookie, d);
	if (r < 0)
		return r;
	*out = TAKE_PTR(e);
	return 0;
}

int engine_map_fd(const struct engine *e, const char *name)
{
	for (int i = 0; e && i < EM_COUNT; i++)
		if (!strcmp(map_names[i], name))
			return e->map_fd[i] >= 0 ? e->map_fd[i] : -ENOENT;
	return -ENOENT;
}

void engine_close(struct engine *e)
{
	if (!e)
		return;
	if (e->map_fd[EM_CTL] >= 0)
		engine_settle(e);
	cnt_map_close(e, &e->cnt);
	for (int i = 0; i < EM_COUNT; i++)
		if (e->map_fd[i] >= 0)
			close(e->map_fd[i]);
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			if (e->link[h][f].fd >= 0)
				close(e->link[h][f].fd);
	if (e->prog_fd >= 0)
		close(e->prog_fd);
	if (e->conns_fd >= 0)
		close(e->conns_fd);
	for (uint32_t i = 0; i < e->npred; i++)
		free(e->pred[i]);
	free(e->pred);
	free(e->pin_dir);
	free(e);
}

void engine_destroy_pins(struct engine *e)
{
	static const char *const own_pins[] = { "prog", "conns", "release", "build" };
	char path[512];

	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (int f = 0; f < NFB_FAM_MAX; f++) {
			if (e->pin_dir && engine_link_path(path, sizeof(path), e, h, f) == 0) {
				unlink(path);
				strncat(path, "-new", sizeof(path) - strlen(path) - 1);
				unlink(path);
			}
			if (e->link[h][f].fd >= 0) {
				/* Detach now, even if someone else holds the link. */
				bpf_link_detach(e->link[h][f].fd);
				close(e->link[h][f].fd);
				e->link[h][f].fd = -1;
			}
		}
	}
	if (!e->pin_dir)
		return;
	/* "release": layouts 11 and 12's name; X-new: a pin_over cut short */
	for (size_t i = 0; i < sizeof(own_pins) / sizeof(own_pins[0]); i++) {
		engine_path(path, sizeof(path), e, "", own_pins[i]);
		unlink(path);
		strncat(path, "-new", sizeof(path) - strlen(path) - 1);
		unlink(path);
	}
	for (int i = 0; i < EM_COUNT; i++) {
		engine_path(path, sizeof(path), e, "maps", map_names[i]);
		unlink(path);
	}
	engine_path(path, sizeof(path), e, "", "maps");
	rmdir(path);
	engine_path(path, sizeof(path), e, "", "links");
	rmdir(path);
	rmdir(e->pin_dir);
}

/* ---- counters (bpf/nfbox.h, "Counters") -------------------------------- */

/* A per-CPU counter (key in map em), summed over the CPUs into *out. */
static int percpu_read(struct engine *e, int em, uint32_t key, struct nfb_counter *out)
{
	struct nfb_counter *v = calloc((size_t)e->ncpus, sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(e->map_fd[em], &key, v) < 0) {
		free(v);
		return -errno;
	}
	for (int i = 0; i < e->ncpus; i++) {
		out->packets += v[i].packets;
		out->bytes += v[i].bytes;
		if (v[i].last_ns > out->last_ns)
			out->last_ns = v[i].last_ns;
	}
	free(v);
	return 0;
}

int engine_trace_set(struct engine *e, const struct nfb_trace *t)
{
	struct nfb_trace none = { .family = NFB_FAM_MAX };
	uint32_t zero = 0;

	if (!e)
		return -ENODEV;
	return bpf_map_update_elem(e->map_fd[EM_TRACE], &zero, t ? t : &none, BPF_ANY) < 0 ? -errno : 0;
}

int engine_counter_read(struct engine *e, uint32_t slot, struct nfb_counter *out)
{
	struct nfb_counter old;

	memset(out, 0, sizeof(*out));
	if (!e)
		return -ENODEV;
	if (slot < NFB_CNT_FIRST_RULE)
		return percpu_read(e, EM_FIXED, slot, out);
	if (!e->cnt.v || slot >= e->cnt.cap)
		return 0; /* no policy has had this slot */
	cnt_map_total(e, &e->cnt, slot, out);
	if (e->retired && e->old_cnt.v && e->snap && slot < e->old_cnt.cap) {
		/* what the replaced map counted since the new one took its counts */
		cnt_map_total(e, &e->old_cnt, slot, &old);
		if (old.packets > e->snap[slot].packets)
			out->packets += old.packets - e->snap[slot].packets;
		if (old.bytes > e->snap[slot].bytes)
			out->bytes += old.bytes - e->snap[slot].bytes;
		if (old.last_ns > out->last_ns)
			out->last_ns = old.last_ns;
	}
	return 0;
}

/* A per-CPU counter (key in map em) back to 0 on every CPU. */
static int percpu_zero(struct engine *e, int em, uint32_t key)
{
	struct nfb_counter *v = calloc((size_t)e->ncpus, sizeof(*v));
	int r = 0;

	if (!v)
		return -ENOMEM;
	if (bpf_map_update_elem(e->map_fd[em], &key, v, BPF_ANY) < 0)
		r = -errno;
	free(v);
	return r;
}

int engine_sched_full_read(struct engine *e, struct nfb_counter *out, uint32_t *entries)
{
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);

	memset(out, 0, sizeof(*out));
	if (entries)
		*entries = 0;
	if (!e)
		return -ENODEV;
	if (entries && bpf_map_get_info_by_fd(e->map_fd[EM_SCHED_CONNS], &info, &len) == 0)
		*entries = info.max_entries;
	return percpu_read(e, EM_SCHED_FULL, 0, out);
}

int engine_sched_full_reset(struct engine *e)
{
	return e ? percpu_zero(e, EM_SCHED_FULL, 0) : -ENODEV;
}

static struct nfb_limit_state *limit_state(struct engine *e, uint32_t slot)
{
	if (!e->cnt.v || slot >= e->cnt.cap)
		return NULL;
	return (struct nfb_limit_state *)&e->cnt.v[nfb_cnt_index(e->cnt.cap, (uint32_t)e->ncpus + 1, slot)];
}

/* Zero a slot's counts (and with `state` its limit state too). Counts of a
 * rule in force race with the classifier's increments: one may be lost. */
static int counter_clear(struct engine *e, uint32_t slot, bool state)
{
	struct nfb_limit_state *st;

	if (!e)
		return -ENODEV;
	if (slot < NFB_CNT_FIRST_RULE)
		return percpu_zero(e, EM_FIXED, slot);
	engine_settle(e); /* no count of the replaced map is still to come in */
	if (!e->cnt.v || slot >= e->cnt.cap)
		return 0;
	for (uint32_t row = 0; row <= (uint32_t)e->ncpus; row++)
		memset(&e->cnt.v[nfb_cnt_index(e->cnt.cap, row, slot)], 0, sizeof(struct nfb_counter));
	st = limit_state(e, slot);
	if (state)
		memset(st, 0, sizeof(struct nfb_counter));
	else
		st->over = 0; /* a limit's bucket stays */
	return 0;
}

int engine_counter_reset(struct engine *e, uint32_t slot)
{
	return counter_clear(e, slot, false);
}

int engine_counter_zero(struct engine *e, uint32_t slot)
{
	return counter_clear(e, slot, true);
}

int engine_limit_over(struct engine *e, uint32_t slot, uint64_t *over)
{
	const struct nfb_limit_state *st;

	*over = 0;
	if (!e)
		return -ENODEV;
	if (!(st = limit_state(e, slot)))
		return -ENOENT;
	*over = st->over;
	return 0;
}

/* memlock of a map, as the kernel accounts it (fdinfo). */
static uint64_t map_memlock(int fd)
{
	char path[64], line[128];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

int engine_memory(struct engine *e, uint64_t *bytes)
{
	uint32_t seen[2 * EM_NUM_OUTER], nseen = 0;

	*bytes = 0;
	if (!e)
		return -ENODEV;
	for (int i = 0; i < EM_COUNT; i++)
		if (e->map_fd[i] >= 0)
			*bytes += map_memlock(e->map_fd[i]);
	for (int i = EM_FIRST_OUTER; i < EM_FIRST_OUTER + EM_NUM_OUTER; i++) {
		for (uint32_t gen = 0; gen < 2; gen++) {
			uint32_t id, k;
			int fd;

			if (bpf_map_lookup_elem(e->map_fd[i], &gen, &id) < 0)
				continue;
			for (k = 0; k < nseen && seen[k] != id; k++)
				;
			if (k < nseen || (fd = bpf_map_get_fd_by_id(id)) < 0)
				continue; /* shared by both generations: once */
			seen[nseen++] = id;
			*bytes += map_memlock(fd);
			close(fd);
		}
	}
	return 0;
}

void engine_get_info(const struct engine *e, struct engine_info *out)
{
	memset(out, 0, sizeof(*out));
	for (int h = 0; h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			out->link[h][f].fd = -1;
	if (!e)
		return;
	out->pin_dir = e->pin_dir;
	out->netns_cookie = e->netns_cookie;
	out->adopted = e->adopted;
	out->programs_replaced = e->prog_replaced;
	out->replaced = e->replaced[0] ? e->replaced : NULL;
	out->set_aside = e->npred;
	out->active_gen = e->active_gen;
	out->generation = e->generation;
	memcpy(out->link, e->link, sizeof(out->link));
}

int engine_events_fd(const struct engine *e)
{
	return e->map_fd[EM_EVENTS];
}

int engine_rejects_fd(const struct engine *e)
{
	return e->map_fd[EM_REJECTS];
}

int engine_conns_fd(const struct engine *e)
{
	return e ? engine_inner_fd(e, EM_CONNS, e->active_gen) : -1;
}

int engine_conns_op(const struct engine *e, uint32_t verb, const struct nfb_conn_key *k)
{
	struct nfb_conns_op op = { .verb = verb };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &op, .ctx_size_in = sizeof(op));

	if (!e || e->conns_fd < 0)
		return -EBADF;
	if (k)
		op.key = *k;
	if (bpf_prog_test_run_opts(e->conns_fd, &o) < 0)
		return -errno;
	return (int)o.retval;
}

int engine_prog_fd(const struct engine *e)
{
	return e->prog_fd;
}
