/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's netfilter hooks as nfbox uses them, written once: the hook
 * of each policy hook (for the BPF links and the nftables base chains) and
 * the hooks' names as nft writes them.
 */
#ifndef NFBOX_LIB_NFHOOK_H
#define NFBOX_LIB_NFHOOK_H

/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <linux/netfilter.h>
#include <stdint.h>

#include "policy/policy.h"

/* NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT */
static inline uint32_t nf_hook_of(enum policy_hook h)
{
	static const uint32_t hooks[POLICY_HOOK_MAX] = { NF_INET_LOCAL_IN, NF_INET_FORWARD, NF_INET_LOCAL_OUT };

	return (unsigned)h < POLICY_HOOK_MAX ? hooks[h] : NF_INET_NUMHOOKS;
}

/* "prerouting", "input", "forward", "output", "postrouting", or "?" */
static inline const char *nf_hook_name(uint32_t hooknum)
{
	static const char *const names[NF_INET_NUMHOOKS] = { [NF_INET_PRE_ROUTING] = "prerouting",
							     [NF_INET_LOCAL_IN] = "input",
							     [NF_INET_FORWARD] = "forward",
							     [NF_INET_LOCAL_OUT] = "output",
							     [NF_INET_POST_ROUTING] = "postrouting" };

	if (hooknum == NF_INET_INGRESS)
		return "ingress";
	return hooknum < NF_INET_NUMHOOKS ? names[hooknum] : "?";
}

#endif
