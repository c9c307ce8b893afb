/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "system/pins.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "system/netns.h"

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

static int ns_ino(pid_t pid, ino_t *out)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat(path, &st) < 0)
		return -errno;
	*out = st.st_ino;
	return 0;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	_cleanup_fclose_ FILE *f = NULL;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")) || !fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')))
		return 0;
	return sscanf(p + 1, " %*c %d", &ppid) == 1 ? ppid : 0;
}

/* The nearest ancestor (then pid 1) in another mount namespace than ours;
 * 0 if there is none: we are in the outer namespace; -1 if we cannot tell
 * (pid 1's namespace is hidden from us: a sandbox without CAP_SYS_PTRACE,
 * such as nfbox.service). */
static pid_t outer_pid(void)
{
	ino_t self = 0, other = 0;
	int r;

	if (ns_ino(getpid(), &self) < 0)
		return 0;
	for (pid_t p = getppid(); p > 1; p = parent_of(p))
		if (ns_ino(p, &other) == 0 && other != self)
			return p;
	if ((r = ns_ino(1, &other)) == -EACCES || r == -EPERM)
		return -1;
	if (r == 0 && other != self)
		return 1;
	return 0;
}

/* ---- work in the outer namespace, in a child ---- */

enum outer_op {
	OUTER_STAT,	  /* stat(path): is it the same file as ours? */
	OUTER_BIND_BPFFS, /* mount a bpffs on path if there is none; send a clone of the mount */
};

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -EIO;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EIO;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* In the child: returns a positive errno or 0; writes its answer to sock.
 * Paths are resolved as the outer process sees them: setns() puts us at
 * the namespace's root, and rootfd (its /proc/PID/root) takes us into its
 * chroot, if it runs in one (a build root, a test root). */
static int outer_child(int nsfd, int rootfd, enum outer_op op, const char *path, int sock)
{
	struct stat st;
	int fd;

	if (setns(nsfd, CLONE_NEWNS) < 0)
		return errno;
	if (rootfd >= 0 && (fchdir(rootfd) < 0 || chroot(".") < 0))
		return errno;
	if (chdir("/") < 0)
		return errno;
	if (op == OUTER_STAT) {
		if (stat(path, &st) < 0)
			return errno;
		return write(sock, &st, sizeof(st)) == sizeof(st) ? 0 : EIO;
	}
	if (!is_bpffs(path) && mount("bpf", path, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
		return errno;
	if ((fd = (int)open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0)
		return errno;
	return send_fd(sock, fd) < 0 ? EIO : 0;
}

/* Run op in the mount namespace of pid; its answer can be read from *sock. */
static int in_outer(pid_t pid, enum outer_op op, const char *path, int *sock)
{
	char nspath[64];
	_cleanup_close_ int nsfd = -1, rootfd = -1;
	int sv[2], status;
	pid_t child;

	snprintf(nspath, sizeof(nspath), "/proc/%d/ns/mnt", (int)pid);
	if ((nsfd = open(nspath, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	snprintf(nspath, sizeof(nspath), "/proc/%d/root", (int)pid);
	rootfd = open(nspath, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* -1: use the namespace's root */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	child = fork();
	if (child < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (child == 0) {
		close(sv[0]);
		_exit(outer_child(nsfd, rootfd, op, path, sv[1]));
	}
	close(sv[1]);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		close(sv[0]);
		return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
	}
	*sock = sv[0];
	return 0;
}

/* Is our path the same file as the outer namespace's path of that name? */
static int same_outside(pid_t pid, const char *path, bool *same)
{
	_cleanup_close_ int sock = -1;
	struct stat ours, theirs;
	int r;

	if (stat(path, &ours) < 0)
		return -errno;
	if ((r = in_outer(pid, OUTER_STAT, path, &sock)) < 0) {
		*same = false;
		return r == -ENOENT ? 0 : r;
	}
	if (read(sock, &theirs, sizeof(theirs)) != sizeof(theirs))
		return -EIO;
	*same = ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
	return 0;
}

/* The outer namespace's bpffs at NFBOX_BPFFS, bound on ours. */
static int bind_outer_bpffs(pid_t pid, struct pin_place *out, struct diags *d)
{
	_cleanup_close_ int sock = -1, tree = -1;
	int r;

	if ((r = in_outer(pid, OUTER_BIND_BPFFS, NFBOX_BPFFS, &sock)) < 0)
		return diag_errno(d, r,
				  "cannot mount a bpf filesystem on %s in the mount namespace of process %d (outside "
				  "nfbox's own)",
				  NFBOX_BPFFS, (int)pid);
	if ((tree = recv_fd(sock)) < 0)
		return diag_errno(d, tree, "cannot receive the bpf filesystem from the outer namespace");
	if (move_mount(tree, "", AT_FDCWD, NFBOX_BPFFS, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return diag_errno(d, -errno, "cannot bind the outer namespace's bpf filesystem on %s", NFBOX_BPFFS);
	out->bound = true;
	log_info("pins: %s is the bpf filesystem of the mount namespace outside nfbox's own (process %d)", NFBOX_BPFFS,
		 (int)pid);
	return 0;
}

static bool below_bpffs_root(const char *pin_dir)
{
	size_t n = strlen(NFBOX_BPFFS);

	return !strncmp(pin_dir, NFBOX_BPFFS, n) && (pin_dir[n] == '/' || !pin_dir[n]);
}

/* The deepest existing directory on the way to path. */
static void existing_ancestor(const char *path, char *buf, size_t len)
{
	struct stat st;
	char *slash;

	snprintf(buf, len, "%s", path);
	while (stat(buf, &st) < 0 && (slash = strrchr(buf, '/'))) {
		if (slash == buf) {
			buf[1] = '\0';
			break;
		}
		*slash = '\0';
	}
}

static int check_custom(pid_t outer, const char *pin_dir, struct diags *d)
{
	char anc[PATH_MAX];
	bool same = true;
	int r;

	existing_ancestor(pin_dir, anc, sizeof(anc));
	if (!is_bpffs(anc))
		return diag_fail(d, -ENOTSUP,
				 "pin directory %s is not on a bpf filesystem (mount one: mount -t bpf bpf DIR)",
				 pin_dir);
	if (outer && (r = same_outside(outer, anc, &same)) < 0)
		return diag_errno(d, r, "cannot tell whether the bpf filesystem of %s outlives nfbox", pin_dir);
	if (!same)
		return diag_fail(d, -EPERM,
				 "pin directory %s is on a bpf filesystem that only nfbox's own mount namespace has "
				 "(as one made inside 'ip netns exec'): its pins, and so the firewall, would die with "
				 "nfbox; use a bpf filesystem of the host, or run with --no-pin to accept that",
				 pin_dir);
	return 0;
}

int pins_make_lasting(const char *pin_dir, struct pin_place *out, struct diags *d)
{
	pid_t outer = outer_pid();
	bool same = false;

	*out = (struct pin_place){ .private_ns = outer != 0 };
	if (outer < 0) {
		/* Whatever bpf filesystem we see was there before our namespace
		 * was made (systemd mounts /sys/fs/bpf at boot), so it is the
		 * host's; one we mounted now would die with the namespace. */
		char anc[PATH_MAX];

		existing_ancestor(pin_dir, anc, sizeof(anc));
		if (is_bpffs(anc))
			return 0;
		return diag_fail(d, -ENOTSUP,
				 "no bpf filesystem at %s, and from this sandbox nfbox cannot mount one that outlives "
				 "it: mount one on the host first (mount -t bpf bpf %s; systemd does at boot)",
				 anc, NFBOX_BPFFS);
	}
	if (!below_bpffs_root(pin_dir))
		return check_custom(outer, pin_dir, d);
	if (!outer) {
		if (is_bpffs(NFBOX_BPFFS))
			return 0;
		if (mount("bpf", NFBOX_BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
			return diag_errno(d, -errno, "cannot mount a bpf filesystem on %s (needs CAP_SYS_ADMIN)",
					  NFBOX_BPFFS);
		out->mounted = true;
		log_info("mounted a bpf filesystem on %s", NFBOX_BPFFS);
		return 0;
	}
	if (is_bpffs(NFBOX_BPFFS) && same_outside(outer, NFBOX_BPFFS, &same) == 0 && same)
		return 0;
	return bind_outer_bpffs(outer, out, d);
}
