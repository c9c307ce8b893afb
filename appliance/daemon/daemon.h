/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* `nfbox run`: the enforcing daemon and its control socket. */
#ifndef NFBOX_DAEMON_H
#define NFBOX_DAEMON_H

#include <stdbool.h>

#define NFBOX_DEFAULT_POLICY "/etc/nfbox/policy.yaml"
#define NFBOX_DEFAULT_SOCKET "/run/nfbox/nfbox.sock"
#define NFBOX_DEFAULT_PIN_DIR "/sys/fs/bpf/nfbox"

struct daemon_opts {
	const char *policy;
	const char *socket;
	const char *pin_dir;
	const char *log;   /* NULL: none; "-": stdout */
	bool fresh;        /* drop pinned state instead of adopting it */
};

int daemon_run(const struct daemon_opts *o);

#endif
