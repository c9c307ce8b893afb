/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The policy's fingerprint (fingerprint.c). */
#ifndef NFBOX_LIB_FINGERPRINT_H
#define NFBOX_LIB_FINGERPRINT_H

#include "base/diag.h"

/* fingerprint.c: SHA-256 of a policy's files as the loader read them
 * (sources: the loader's, newest first), or as they are on disk now. 0 or
 * -errno; out gets 64 hex digits. */
int fingerprint_loaded(const struct source *sources, char out[65]);
/* The same with each file named relative to dir (the policy's directory):
 * a fleet's revision, the same files wherever a node keeps them. */
int fingerprint_relative(const struct source *sources, const char *dir, char out[65]);
int fingerprint_on_disk(const struct source *sources, char out[65]);

#endif
