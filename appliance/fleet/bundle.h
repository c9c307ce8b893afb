/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A revision of a group's policy, as one etcd value (JSON): the policy
 * file and the set files it reads, each named relative to the policy's
 * directory, with the revision's fingerprint (fingerprint_relative), who
 * pushed it and when. A candidate (a canary rollout) also names its
 * canaries and how long each has to confirm.
 */
#ifndef NFBOX_FLEET_BUNDLE_H
#define NFBOX_FLEET_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "policy/policy.h"

#define FLEET_MAX_CANARIES 64

struct fleet_file {
	char *name; /* relative; files[0] is the policy */
	char *data;
	size_t len;
};

struct fleet_bundle {
	char fingerprint[65];
	char *by;   /* the etcd user who pushed it */
	int64_t at; /* when, s */
	struct fleet_file *files;
	size_t n;
	char *canaries[FLEET_MAX_CANARIES]; /* a candidate's */
	size_t ncanaries;
	uint32_t confirm_s; /* a candidate's: each canary confirms within this */
};

/* The bundle of a loaded policy read from path: every file it read must lie
 * under the policy's directory (-EINVAL, said in d). */
int fleet_bundle_from_policy(const struct policy *p, const char *path, struct fleet_bundle *out, struct diags *d);
/* As JSON (a new string, its length in *len), and back: 0 or -EINVAL with
 * why. */
char *fleet_bundle_encode(const struct fleet_bundle *b, size_t *len);
int fleet_bundle_decode(const char *text, size_t len, struct fleet_bundle *out, char *why, size_t wlen);
/* Write the files under dir (made; files are 0600, folders 0700); the
 * policy's path into path. */
int fleet_bundle_write(const struct fleet_bundle *b, const char *dir, char *path, size_t plen);
/* A revision's folder and all under it (-errno, errno set). */
int fleet_remove_tree(const char *dir);
/* Whether a candidate names node among its canaries. */
bool fleet_bundle_names(const struct fleet_bundle *b, const char *node);
void fleet_bundle_free(struct fleet_bundle *b);

#endif
