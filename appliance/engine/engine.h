/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The enforcement engine: the netfilter classifier, its maps and links.
 * Everything lives pinned under a pin directory, so that enforcement
 * survives the daemon (fail closed) and a new daemon adopts it.
 *
 *   PIN/prog                 the classifier program
 *   PIN/maps/NAME            every map of the program
 *   PIN/links/HOOK-FAMILY    one netfilter link per hook and family
 */
#ifndef NFBOX_ENGINE_H
#define NFBOX_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/compile/plan.h"

enum engine_map {
	EM_CTL,
	EM_GEN,
	EM_LPM4,
	EM_LPM6,
	EM_IFACE,
	EM_PORT,
	EM_MISC,
	EM_RULES,
	EM_BLOB,
	EM_COUNTERS,
	EM_EVENTS,
	EM_LOG_BUCKET,
	EM_COUNT,
};

/* First outer (per-generation) map and how many there are. */
#define EM_FIRST_OUTER EM_LPM4
#define EM_NUM_OUTER (EM_BLOB - EM_LPM4 + 1)

struct inner_shape {
	uint32_t type, key_size, value_size, max_entries, flags;
};

struct engine_link {
	int fd;           /* -1: none */
	bool defrag;
	int32_t priority;
	uint32_t id;
};

struct engine {
	char *pin_dir;
	int prog_fd;
	int map_fd[EM_COUNT];
	struct inner_shape shape[EM_NUM_OUTER];
	struct engine_link link[NFB_HOOK_MAX][NFB_FAM_MAX];
	bool adopted;       /* found enforcing state pinned at start */
	uint32_t active_gen;
	uint64_t generation; /* policies loaded by this daemon */
	int ncpus;
};

/* Open the engine: adopt the pinned state under pin_dir if there is one
 * (enforcement continues without a gap), else load the program and pin it.
 * Mounts bpffs on /sys/fs/bpf first when pin_dir is below it and it is not
 * mounted. Returns 0 or -errno; *why explains a failure. */
int engine_open(const char *pin_dir, struct engine **out, const char **why);
/* Close fds; pins stay, so enforcement goes on. NULL is fine. */
void engine_close(struct engine *e);
/* Detach links and remove every pin: enforcement stops. */
void engine_destroy_pins(struct engine *e);

/* Per-rule counter slots assigned by the daemon for a plan. */
struct slot_map {
	uint32_t *rule_slot[NFB_HOOK_MAX]; /* by rule bit */
	uint32_t default_slot[NFB_HOOK_MAX];
	uint32_t established_slot;
};

/* Write the plan into the spare generation and flip to it, then attach
 * or re-attach links so that exactly the plan's hooks are enforced with
 * its defrag setting. On failure the running generation is untouched.
 * Errors are described in buf. */
int engine_load(struct engine *e, const struct plan *pl, const struct plan_blob *blob,
		const struct slot_map *slots, char *buf, size_t len);

/* Internal to the engine (engine_gen.c uses it): make links match the plan. */
int engine_links_sync(struct engine *e, const struct plan *pl, char *buf, size_t len);

int engine_counter_read(struct engine *e, uint32_t slot, struct nfb_counter *out);
int engine_counter_zero(struct engine *e, uint32_t slot);

#endif
