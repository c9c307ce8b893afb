/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a daemon running as root may trust, in the manner of sshd's
 * StrictModes: a file it reads (the policy, set files) and the directory a
 * path lies in (the control socket's, a policy's) must belong to root (or
 * to nfbox's own user) and be writable by no one else, so that nobody but
 * root can change what root enforces or stand in for the daemon.
 */
#ifndef NFBOX_SYSTEM_FILES_H
#define NFBOX_SYSTEM_FILES_H

#include <stddef.h>

/* fd is open on path: the file, and the directory it is in. 0, or -EPERM
 * with the reason (and the fix) in why. */
int files_check_trusted(int fd, const char *path, char *why, size_t len);
/* A directory alone (the control socket's). */
int files_check_dir(const char *dir, char *why, size_t len);
/* A directory only the daemon's user may enter (the state directory):
 * its parent is made (0755) if missing and must pass files_check_dir; dir
 * is made 0700 if missing. An existing dir must be a directory (not a
 * link) of root or the daemon's user that no one else may write; one that
 * others may read or enter is made 0700. 0, 1 (its mode was tightened:
 * why says from what), or -errno with the reason and the fix in why. */
int files_private_dir(const char *dir, char *why, size_t len);

/* Write a file so that a crash at any point leaves the old or the new one:
 * PATH.tmp (made with mode, not followed if a link), written whole, then
 * renamed over path. With FILES_SYNC the data is synced before the rename
 * and the directory after it, so that the new file is on disk when this
 * returns. 0 or -errno (PATH.tmp removed); a directory that cannot be
 * synced after the rename is -errno too, with the new file in place. */
enum {
	FILES_SYNC = 1
};
/* All n bytes to fd (a short write or EINTR goes on): 0 or -errno. */
int files_write_all(int fd, const void *p, size_t n);
int files_write_atomic(const char *path, const void *data, size_t len, unsigned mode, unsigned flags);

#endif
