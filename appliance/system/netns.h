/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which network namespace nfbox runs in. Two appliances in two namespaces
 * of one host must not share a control socket or pinned state, so the
 * defaults are per namespace: the initial one (pid 1's) keeps the plain
 * paths, a named one (`ip netns add NAME`) gets NAME in them, any other its
 * cookie. The cookie (SO_NETNS_COOKIE) is unique for the boot and never
 * reused: it is written into the pinned state, so that a daemon never
 * adopts the state of another namespace.
 */
#ifndef NFBOX_SYSTEM_NETNS_H
#define NFBOX_SYSTEM_NETNS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/diag.h"

#define NFBOX_RUN_DIR	"/run/nfbox"
#define NFBOX_BPFFS	"/sys/fs/bpf"
#define NFBOX_STATE_DIR "/var/lib/nfbox"

struct netns_id {
	uint64_t cookie;
	bool initial;		 /* pid 1's network namespace */
	char name[NAME_MAX + 1]; /* from /run/netns (ip netns), "" if none */
};

/* 0 or -errno (explained in d). */
int netns_identify(struct netns_id *out, struct diags *d);

/* "" for the initial namespace, else "-NAME" or "-cookie-N": the default
 * control socket is NFBOX_RUN_DIR "/nfbox" SUFFIX ".sock", the default pin
 * directory NFBOX_BPFFS "/nfbox" SUFFIX. */
void netns_suffix(const struct netns_id *id, char *buf, size_t len);

/* The defaults for this namespace (buf at least PATH_MAX). */
int netns_default_socket(char *buf, size_t len, struct diags *d);
int netns_default_pin_dir(char *buf, size_t len, struct diags *d);
/* NFBOX_STATE_DIR "/state" SUFFIX: the confirmed policy's copy, a pending change. */
int netns_default_state_dir(char *buf, size_t len, struct diags *d);

/* Whether an interface of that name is in this network namespace now
 * (arg unused: the shape of policy_files.iface_exists). */
bool netns_has_iface(const char *name, void *arg);

/* The families this network namespace forwards, read now from
 * net.ipv4.ip_forward and net.ipv6.conf.all.forwarding: NETNS_FORWARDS_*
 * bits (POLICY_FAM_*'s), a family whose switch cannot be read counted as
 * forwarded (arg unused: the shape of policy_files.forwarding). */
#define NETNS_FORWARDS_IPV4 1
#define NETNS_FORWARDS_IPV6 2
uint8_t netns_forwarding(void *arg);

#endif
