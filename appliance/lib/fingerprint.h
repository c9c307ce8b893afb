/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The policy's fingerprint (fingerprint.c). */
#ifndef NFBOX_LIB_FINGERPRINT_H
#define NFBOX_LIB_FINGERPRINT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/diag.h"

/* fingerprint.c: SHA-256 of a policy's files as the loader read them
 * (sources: the loader's, newest first), or as they are on disk now. 0 or
 * -errno; out gets 64 hex digits. */
int fingerprint_loaded(const struct source *sources, char out[65]);
/* The same with each file named relative to dir (the policy's directory):
 * a fleet's revision, the same files wherever a node keeps them. */
int fingerprint_relative(const struct source *sources, const char *dir, char out[65]);
int fingerprint_on_disk(const struct source *sources, char out[65]);

/* fingerprint_on_disk, kept while no file changed: each file's stat (device,
 * inode, size, modification and change times) is compared with the last
 * time's, and the files are read and hashed again only when one differs.
 * (A status asked in a loop no longer reads a policy of a million prefixes
 * each time.) */
struct fingerprint_cache {
	bool valid;
	uint64_t sig; /* of the files' stat */
	int r;
	char fp[65];
};
int fingerprint_on_disk_cached(struct fingerprint_cache *c, const struct source *sources, char out[65]);

#endif
