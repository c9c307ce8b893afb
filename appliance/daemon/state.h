/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The state directory (state.c). */
#ifndef NFBOX_DAEMON_STATE_H
#define NFBOX_DAEMON_STATE_H

#include "daemon/daemon_int.h"

/* A file of the state directory: its path; written whole or not at all (a
 * temporary file, synced to disk when sync, renamed). 0 or -errno. */
int state_path(const struct daemon *dm, const char *name, char *buf, size_t len);
int state_write(const struct daemon *dm, const char *name, const char *data, size_t len, bool sync);
/* The same, the data what save() writes of obj. 0 (also with no state
 * directory) or -errno. */
int state_save(const struct daemon *dm, const char *name, void (*save)(const void *obj, FILE *f), const void *obj,
	       bool sync);

#endif
