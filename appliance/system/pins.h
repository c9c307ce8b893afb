/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A place for pins that outlives the process. Pins hold the classifier's
 * links: while they exist, the policy stays enforced, also when nfbox dies.
 * They live in a bpf filesystem, and a bpffs lives as long as a mount of it
 * does. nfbox often runs in a mount namespace of its own (`ip netns exec`
 * makes one, so do systemd's sandboxing options) that dies with it: a bpffs
 * mounted there would take the pins, and enforcement, with it.
 *
 * So the bpffs is mounted in the nearest mount namespace outside nfbox's
 * own (its parent's, usually the host's, or pid 1's) and bound into
 * nfbox's: the pins are then in a filesystem that the outer namespace keeps.
 */
#ifndef NFBOX_SYSTEM_PINS_H
#define NFBOX_SYSTEM_PINS_H

#include <limits.h>
#include <stdbool.h>

#include "base/diag.h"

struct pin_place {
	bool private_ns; /* nfbox runs in a mount namespace of its own */
	bool mounted;	 /* a bpffs was mounted for it (in the outer namespace) */
	bool bound;	 /* the outer namespace's bpffs was bound into ours */
};

/* Make pin_dir lasting: below /sys/fs/bpf, a bpffs of the outer namespace is
 * mounted (if none is) and bound here (if ours is not it); any other
 * directory must already be on a bpffs that the outer namespace has too.
 * 0, or -errno explained in d (pins there would die with the process). */
int pins_make_lasting(const char *pin_dir, struct pin_place *out, struct diags *d);

#endif
