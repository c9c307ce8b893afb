/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Pinned state of another nfbox (engine.h, "Upgrades"): the programs of
 * another build replaced in place, and the state of another layout set
 * aside, kept enforcing while this version's takes its place, then
 * retired. Nothing here leaves a moment without a classifier attached.
 */
/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/bpf/engine/engine_int.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/plant.h"
#include "bpf/nfbox_filter.skel.h"

/* Every layout keeps nfb_ctl's first words where they are, so that any
 * nfbox can tell an older layout from a newer one. */
_Static_assert(offsetof(struct nfb_ctl, abi) == 4 && offsetof(struct nfb_ctl, netns_cookie) == 8,
	       "nfb_ctl: abi at byte 4 and the namespace's cookie at byte 8, in every layout");

/* What the engine pins directly under the pin directory, moved aside as
 * one state (links first: a state cut short by a crash is still complete
 * enough to be moved on the next start). Not early/ nor libxdp's
 * dispatchers: the early drop is the backend's. */
static const char *const state_parts[] = { "links", "maps", "prog", "conns", "release", "build" };

#define ASIDE_PREFIX "old-"

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* ---- the build record -------------------------------------------------- */

void engine_build_hash(const void *elf, size_t elf_len, const void *rodata, size_t rodata_len, uint8_t out[32])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int n = 0;

	memset(out, 0, 32);
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(ctx, elf, elf_len) == 1 &&
	    (!rodata_len || EVP_DigestUpdate(ctx, rodata, rodata_len) == 1))
		EVP_DigestFinal_ex(ctx, out, &n);
	EVP_MD_CTX_free(ctx);
}

int engine_build_read(const char *path, struct engine_build *out)
{
	_cleanup_close_ int fd = bpf_obj_get(path);
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info), zero = 0;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -errno;
	if (bpf_map_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != 4 || info.value_size != sizeof(*out))
		return -EPROTO;
	return bpf_map_lookup_elem(fd, &zero, out) < 0 ? -errno : 0;
}

/* fd pinned at path, in place of what is there: pinned beside it first,
 * then renamed over it, so that path never lacks an object. */
int engine_pin_over(int fd, const char *path)
{
	char tmp[512];

	if (snprintf(tmp, sizeof(tmp), "%s-new", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	unlink(tmp);
	if (bpf_obj_pin(fd, tmp) < 0)
		return -errno;
	if (rename(tmp, path) < 0) {
		int r = -errno;

		unlink(tmp);
		return r;
	}
	return 0;
}

int engine_build_pin(const char *path, const struct engine_build *b)
{
	_cleanup_close_ int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nfb_build", 4, sizeof(*b), 1, NULL);
	uint32_t zero = 0;

	if (fd < 0 || bpf_map_update_elem(fd, &zero, b, BPF_ANY) < 0)
		return -errno;
	return engine_pin_over(fd, path);
}

static uint32_t prog_id_of(int fd)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);

	return fd >= 0 && bpf_prog_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
}

/* The classifier object's build: its bytes and the load-time settings
 * (rodata: the test build's planted bugs). */
static void filter_hash(struct nfbox_filter_bpf *skel, uint8_t out[32])
{
	size_t elf_len = 0, ro_len = 0;
	const void *elf = nfbox_filter_bpf__elf_bytes(&elf_len);
	const void *ro = bpf_map__initial_value(skel->maps.rodata, &ro_len);

	engine_build_hash(elf, elf_len, ro, ro ? ro_len : 0, out);
}

/* PIN/build made to say that this engine's programs are this build's. */
int engine_build_record(struct engine *e, struct nfbox_filter_bpf *skel)
{
	struct engine_build b = { .prog_id = { prog_id_of(e->prog_fd), prog_id_of(e->conns_fd) } };
	char path[512];

	if (!e->pin_dir)
		return 0;
	filter_hash(skel, b.hash);
	if (engine_path(path, sizeof(path), e, "", "build") < 0)
		return -ENAMETOOLONG;
	return engine_build_pin(path, &b);
}

/* ---- the pinned state, before anything is opened ------------------------- */

void engine_probe(const struct engine *e, struct engine_probe *p)
{
	_Alignas(8) uint8_t v[256];
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info), zero = 0;
	char path[512];
	_cleanup_close_ int fd = -1;

	memset(p, 0, sizeof(*p));
	if (engine_path(path, sizeof(path), e, "maps", "nfb_ctl") < 0 || (fd = bpf_obj_get(path)) < 0 ||
	    bpf_map_get_info_by_fd(fd, &info, &len) < 0) {
		snprintf(p->why, sizeof(p->why), "has no readable control map");
		return;
	}
	if (info.type != BPF_MAP_TYPE_ARRAY || info.key_size != 4 || info.value_size < 8 ||
	    info.value_size > sizeof(v) || bpf_map_lookup_elem(fd, &zero, v) < 0) {
		snprintf(p->why, sizeof(p->why), "has a control map of no layout nfbox made");
		return;
	}
	memcpy(&p->abi, v + offsetof(struct nfb_ctl, abi), sizeof(p->abi));
	if (info.value_size >= 16) { /* layout 2 on */
		memcpy(&p->cookie, v + offsetof(struct nfb_ctl, netns_cookie), sizeof(p->cookie));
		p->cookie_known = true;
	}
	if (!p->abi)
		snprintf(p->why, sizeof(p->why), "has no layout version");
	else
		snprintf(p->why, sizeof(p->why), "is of layout %u", p->abi);
}

/* ---- setting a state aside ----------------------------------------------- */

static int add_predecessor(struct engine *e, const char *dir)
{
	char **v = realloc(e->pred, (e->npred + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	e->pred = v;
	if (!(e->pred[e->npred] = strdup(dir)))
		return -ENOMEM;
	e->npred++;
	return 0;
}

/* A directory PIN/old-TAG[-N] made for a state set aside. */
static int aside_dir(const struct engine *e, const char *tag, char *name, size_t nlen, struct diags *d)
{
	char path[512];

	for (int i = 1; i < 100; i++) {
		if (i == 1)
			snprintf(name, nlen, ASIDE_PREFIX "%s", tag);
		else
			snprintf(name, nlen, ASIDE_PREFIX "%s-%d", tag, i);
		if (engine_path(path, sizeof(path), e, "", name) < 0)
			return diag_errno(d, -ENAMETOOLONG, "pin directory %s", e->pin_dir);
		if (mkdir(path, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return diag_errno(d, -errno, "cannot make %s", path);
	}
	return diag_fail(d, -EEXIST, "%s holds 99 states set aside under %s%s: remove them", e->pin_dir, ASIDE_PREFIX,
			 tag);
}

int engine_set_aside(struct engine *e, const char *tag, const char *why, struct diags *d)
{
	char name[64], src[512], dst[512];
	int r;

	if ((r = aside_dir(e, tag, name, sizeof(name), d)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(state_parts) / sizeof(state_parts[0]); i++) {
		engine_path(src, sizeof(src), e, "", state_parts[i]);
		if (engine_path(dst, sizeof(dst), e, name, state_parts[i]) < 0)
			return diag_errno(d, -ENAMETOOLONG, "pin directory %s", e->pin_dir);
		if (rename(src, dst) < 0 && errno != ENOENT)
			return diag_errno(d, -errno, "cannot set the pinned state aside (%s to %s)", src, dst);
	}
	engine_path(dst, sizeof(dst), e, "", name);
	snprintf(e->replaced, sizeof(e->replaced), "%s", why);
	log_warn("the state pinned in %s %s: set aside in %s, where it goes on enforcing until this version's "
		 "classifier, attached beside it, has its policy and dynamic sets; then it is removed (its counters "
		 "are not carried over)",
		 e->pin_dir, why, dst);
	return 0;
}

/* Every state set aside under the pin directory: by this start, or by one
 * that failed before its policy was in force. */
int engine_find_predecessors(struct engine *e)
{
	_cleanup_(closedirp) DIR *dir = e->pin_dir ? opendir(e->pin_dir) : NULL;
	struct dirent *de;
	char path[512];
	int r;

	while (dir && (de = readdir(dir))) {
		if (strncmp(de->d_name, ASIDE_PREFIX, strlen(ASIDE_PREFIX)) || de->d_type != DT_DIR)
			continue;
		if (engine_path(path, sizeof(path), e, "", de->d_name) < 0)
			continue;
		if ((r = add_predecessor(e, path)) < 0)
			return r;
	}
	return 0;
}

/* ---- retiring what was set aside ---------------------------------------- */

/* Every link pinned under dir detached (a link held elsewhere too goes all
 * the same). How many. */
static unsigned detach_links(const char *dir)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;
	char path[1024];

	while (d && (de = readdir(d))) {
		_cleanup_close_ int fd = -1;

		if (de->d_name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if ((fd = bpf_obj_get(path)) >= 0 && bpf_link_detach(fd) == 0)
			n++;
	}
	return n;
}

/* dir and everything under it unpinned. */
static int remove_tree(const char *dir)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	struct dirent *de;
	char path[1024];
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path)) {
			r = -ENAMETOOLONG;
			continue;
		}
		if (de->d_type == DT_DIR) {
			int rr = remove_tree(path);

			r = rr < 0 ? rr : r;
		} else if (unlink(path) < 0 && errno != ENOENT) {
			r = -errno;
		}
	}
	if (rmdir(dir) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

void engine_retire_predecessors(struct engine *e)
{
	char links[1024];

	for (uint32_t i = 0; e && i < e->npred; i++) {
		unsigned n;
		int r;

		snprintf(links, sizeof(links), "%s/links", e->pred[i]);
		n = detach_links(links);
		if ((r = remove_tree(e->pred[i])) < 0)
			log_warn("cannot remove all of %s: %s", e->pred[i], strerror(-r));
		log_info("the state set aside in %s is removed (%u links detached): this version's classifier "
			 "enforces in its place",
			 e->pred[i], n);
		free(e->pred[i]);
	}
	if (e) {
		free(e->pred);
		e->pred = NULL;
		e->npred = 0;
	}
}

/* ---- programs of another build, same layout ------------------------------- */

/* This build's programs loaded against the adopted maps, pinned in place
 * of the others'. On failure the adopted programs stay. */
static int swap_programs(struct engine *e, struct nfbox_filter_bpf *skel, struct diags *d)
{
	char path[512];
	int prog, conns, r;

	for (int i = 0; i < EM_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, engine_map_name(i));

		if (!m || (r = bpf_map__reuse_fd(m, e->map_fd[i])) < 0)
			return diag_fail(d, m ? r : -ENOENT, "this build's classifier cannot use the adopted map %s",
					 engine_map_name(i));
	}
	if ((r = nfbox_filter_bpf__load(skel)))
		return diag_errno(d, r, "the kernel refused this build's classifier against the adopted maps");
	prog = bpf_program__fd(skel->progs.nfbox_filter);
	conns = bpf_program__fd(skel->progs.nfbox_conns);
	if ((r = engine_path(path, sizeof(path), e, "", "conns")) < 0 || (r = engine_pin_over(conns, path)) < 0)
		return diag_errno(d, r, "cannot pin the program %s", path);
	if ((r = engine_path(path, sizeof(path), e, "", "prog")) < 0 || (r = engine_pin_over(prog, path)) < 0)
		return diag_errno(d, r, "cannot pin the program %s", path);
	close(e->prog_fd);
	close(e->conns_fd);
	e->prog_fd = dup(prog);
	e->conns_fd = dup(conns);
	if (e->prog_fd < 0 || e->conns_fd < 0)
		return diag_errno(d, -errno, "dup");
	e->prog_replaced = true;
	if ((r = engine_build_record(e, skel)) < 0)
		log_warn("cannot record which build's programs are pinned in %s (the next start loads them again): %s",
			 e->pin_dir, strerror(-r));
	return 0;
}

/* Whether the pinned programs are this build's (PIN/build says so of
 * exactly these programs). */
static bool same_build(const struct engine *e, struct nfbox_filter_bpf *skel)
{
	struct engine_build b;
	uint8_t hash[32];
	char path[512];

	if (engine_path(path, sizeof(path), e, "", "build") < 0 || engine_build_read(path, &b) < 0)
		return false;
	filter_hash(skel, hash);
	return b.prog_id[0] == prog_id_of(e->prog_fd) && b.prog_id[1] == prog_id_of(e->conns_fd) &&
	       !memcmp(b.hash, hash, sizeof(hash));
}

/* Each link that runs another program than the pinned classifier (a swap
 * that a crash cut short) is replaced by one that runs it. */
static int links_follow(struct engine *e, struct diags *d)
{
	uint32_t id = prog_id_of(e->prog_fd);
	int r;

	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (int f = 0; f < NFB_FAM_MAX; f++) {
			struct bpf_link_info info = { 0 };
			uint32_t len = sizeof(info);

			if (e->link[h][f].fd < 0 || bpf_link_get_info_by_fd(e->link[h][f].fd, &info, &len) < 0 ||
			    info.prog_id == id)
				continue;
			if ((r = engine_link_renew(e, h, f, d)) < 0)
				return r;
		}
	}
	return 0;
}

int engine_programs_follow(struct engine *e, struct nfbox_filter_bpf *skel, struct diags *d)
{
	struct diags sd;

	if (!e->pin_dir || same_build(e, skel) || planted("adopt-keeps-program"))
		return links_follow(e, d);
	diags_init(&sd);
	if (swap_programs(e, skel, &sd) < 0)
		log_err("%s; the adopted classifier, another build's, stays in force",
			diags_last(&sd, "this build's classifier could not take the adopted one's place"));
	else
		log_info("the classifier pinned in %s was another build's: this build's programs run in its place, "
			 "on the same maps (policy, counters and dynamic sets kept), its links attached before the old "
			 "ones were detached",
			 e->pin_dir);
	diags_free(&sd);
	return links_follow(e, d);
}
