/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The state directory (state.c). */
#ifndef NFBOX_DAEMON_STATE_H
#define NFBOX_DAEMON_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct daemon;
struct diags;

/* At start: the state directory made (0700, root's) if it is not there,
 * and checked; without it nothing acknowledged (a confirmed policy, a
 * dynamic set's entry) could be kept, so the start fails instead. */
int state_dir_make(const struct daemon *dm, struct diags *d);
/* The directory ("" for none). */
const char *daemon_state_dir(const struct daemon *dm);

/* A file of the state directory: its path; written whole or not at all (a
 * temporary file, synced to disk when sync, renamed). 0 or -errno. */
int state_path(const struct daemon *dm, const char *name, char *buf, size_t len);
int state_write(const struct daemon *dm, const char *name, const char *data, size_t len, bool sync);
/* The same, the data what save() writes of obj. 0 (also with no state
 * directory) or -errno. */
int state_save(const struct daemon *dm, const char *name, void (*save)(const void *obj, FILE *f), const void *obj,
	       bool sync);

/* STATE/name opened to read, if it is there (else *out NULL and 0): a file
 * that is not a regular file of root's that only root may write
 * (files_check_trusted) is not opened. 0, or -errno with why. */
int state_open(const struct daemon *dm, const char *name, FILE **out, char *why, size_t len);
/* STATE/name, which could not be read, renamed to NAME.bad-TIME beside it
 * for a post-mortem (the next save writes a new one); kept says as what,
 * or that it could not be renamed. */
void state_set_aside(const struct daemon *dm, const char *name, char *kept, size_t len);

#endif
