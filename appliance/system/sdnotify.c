/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "system/sdnotify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"

static int notify_send(const char *msg, size_t len)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	socklen_t salen;
	size_t n;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	/* A path, or an abstract name written with a leading '@'. */
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EAFNOSUPPORT;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (sendto(fd, msg, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		return -errno;
	return 0;
}

int sd_notifyf(const char *fmt, ...)
{
	static bool warned;
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	r = notify_send(msg, (size_t)n);
	if (r < 0 && !warned) {
		warned = true;
		log_warn("cannot tell systemd our state through NOTIFY_SOCKET=%s: %s", getenv("NOTIFY_SOCKET"),
			 strerror(-r));
	}
	return r;
}

int sd_notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return sd_notifyf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
			  (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000);
}
