/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "system/netns.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

static int cookie_of_this_netns(uint64_t *out)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(*out);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, out, &len) < 0)
		return -errno;
	return 0;
}

static bool same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* The name `ip netns add` gave this namespace: a file in /run/netns bound to it. */
static void find_name(const struct stat *self, char *buf, size_t len)
{
	DIR *dir = opendir("/run/netns");
	struct dirent *de;
	char path[PATH_MAX];

	buf[0] = '\0';
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (same_file(self, path)) {
			snprintf(buf, len, "%s", de->d_name);
			break;
		}
	}
	closedir(dir);
}

int netns_identify(struct netns_id *out, struct diags *d)
{
	struct stat self;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = cookie_of_this_netns(&out->cookie)) < 0)
		return diag_errno(d, r, "cannot read this network namespace's cookie (SO_NETNS_COOKIE, Linux 5.14)");
	if (stat("/proc/self/ns/net", &self) < 0)
		return diag_errno(d, -errno, "cannot read /proc/self/ns/net");
	out->initial = same_file(&self, "/proc/1/ns/net");
	if (!out->initial)
		find_name(&self, out->name, sizeof(out->name));
	return 0;
}

void netns_suffix(const struct netns_id *id, char *buf, size_t len)
{
	if (id->initial)
		snprintf(buf, len, "%s", "");
	else if (id->name[0])
		snprintf(buf, len, "-%s", id->name);
	else
		snprintf(buf, len, "-cookie-%llu", (unsigned long long)id->cookie);
}

static int default_path(char *buf, size_t len, const char *head, const char *tail, struct diags *d)
{
	struct netns_id id;
	char suffix[NAME_MAX + 32];
	int r, n;

	if ((r = netns_identify(&id, d)) < 0)
		return r;
	netns_suffix(&id, suffix, sizeof(suffix));
	n = snprintf(buf, len, "%s%s%s", head, suffix, tail);
	if (n < 0 || (size_t)n >= len)
		return diag_fail(d, -ENAMETOOLONG, "the default path for network namespace %s is too long", id.name);
	return 0;
}

int netns_default_socket(char *buf, size_t len, struct diags *d)
{
	return default_path(buf, len, NFBOX_RUN_DIR "/nfbox", ".sock", d);
}

int netns_default_pin_dir(char *buf, size_t len, struct diags *d)
{
	return default_path(buf, len, NFBOX_BPFFS "/nfbox", "", d);
}

int netns_default_state_dir(char *buf, size_t len, struct diags *d)
{
	return default_path(buf, len, NFBOX_STATE_DIR "/state", "", d);
}

bool netns_has_iface(const char *name, void *arg)
{
	(void)arg;
	return if_nametoindex(name) != 0;
}

/* A sysctl that is 0: false; 1 or more, or one that cannot be read: true. */
static bool sysctl_on(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	int v;

	return !f || fscanf(f, "%d", &v) != 1 || v != 0;
}

uint8_t netns_forwarding(void *arg)
{
	(void)arg;
	return (uint8_t)((sysctl_on("/proc/sys/net/ipv4/ip_forward") ? NETNS_FORWARDS_IPV4 : 0) |
			 (sysctl_on("/proc/sys/net/ipv6/conf/all/forwarding") ? NETNS_FORWARDS_IPV6 : 0));
}
