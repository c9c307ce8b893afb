/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static enum log_level log_max = LOG_INFO;
static bool log_journal;

/* syslog priorities (LOG_ERR ... LOG_DEBUG of <syslog.h>, whose names
 * clash with ours) by enum log_level. */
static const int journal_priority[] = { 3, 4, 6, 7 };
static const char *const level_word[] = { "error: ", "warning: ", "", "debug: " };

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* stderr is systemd's journal stream when $JOURNAL_STREAM names its device
 * and inode (systemd.exec(5)). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

bool log_to_journal(void)
{
	return log_journal;
}

/*
 * A message of several lines as one journal entry, through journald's
 * native protocol: MESSAGE in its binary form (name, newline, 64-bit
 * little-endian length, the bytes, newline) keeps the newlines inside the
 * entry. 0, or -errno (the caller then writes it line by line).
 */
static int journal_fd = -1;

static int journal_sendmsg(struct iovec *iov, size_t n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
	struct msghdr mh = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = iov, .msg_iovlen = n };

	if (journal_fd < 0 && (journal_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	/* never wait: a stalled journald must not stall the daemon's loop */
	return sendmsg(journal_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

int log_journal_fields(int priority, const char *const *fields, size_t n)
{
	struct iovec iov[LOG_JOURNAL_MAX_FIELDS * 2 + 1];
	char head[64];
	size_t k = 0;

	if (n > LOG_JOURNAL_MAX_FIELDS)
		return -E2BIG;
	iov[k++] = (struct iovec){ head, (size_t)snprintf(head, sizeof(head), "PRIORITY=%d\nSYSLOG_IDENTIFIER=nfbox\n",
							  priority) };
	for (size_t i = 0; i < n; i++) {
		if (strchr(fields[i], '\n') || !strchr(fields[i], '='))
			return -EINVAL; /* the simple form only: KEY=VALUE on one line */
		iov[k++] = (struct iovec){ (void *)fields[i], strlen(fields[i]) };
		iov[k++] = (struct iovec){ "\n", 1 };
	}
	return journal_sendmsg(iov, k);
}

static int journal_send(int priority, const char *msg, size_t len)
{
	char head[96];
	uint8_t le[8];
	struct iovec iov[4];
	int n = snprintf(head, sizeof(head), "PRIORITY=%d\nSYSLOG_IDENTIFIER=nfbox\nMESSAGE\n", priority);

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)((uint64_t)len >> (8 * i));
	iov[0] = (struct iovec){ head, (size_t)n };
	iov[1] = (struct iovec){ le, sizeof(le) };
	iov[2] = (struct iovec){ (void *)msg, len };
	iov[3] = (struct iovec){ "\n", 1 };
	return journal_sendmsg(iov, 4);
}

/* buf (malloc'd, taken) at level; word: the level's word or "". */
static void log_buf(enum log_level level, const char *word, char *buf)
{
	char *line, *next;
	size_t n;

	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (!log_journal) {
		fprintf(stderr, "nfbox: %s%s\n", word, buf);
		free(buf);
		return;
	}
	/* The journal: one entry per message, with its priority, so that
	 * `journalctl -p err -u nfbox` lists nfbox's errors. */
	if (!strchr(buf, '\n') || journal_send(journal_priority[level], buf, n) < 0) {
		for (line = buf; line; line = next) {
			if ((next = strchr(line, '\n')))
				*next++ = '\0';
			fprintf(stderr, "<%d>%s%s\n", journal_priority[level], line == buf ? word : "  ", line);
		}
	}
	free(buf);
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char *buf = NULL;

	if (level > log_max || vasprintf(&buf, fmt, ap) < 0)
		return;
	log_buf(level, level_word[level], buf);
}

void log_text(enum log_level level, const char *text)
{
	char *buf;

	if (level <= log_max && (buf = strdup(text)))
		log_buf(level, "", buf);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_init(enum log_level max)
{
	log_max = max;
	log_journal = stderr_is_journal();
}
