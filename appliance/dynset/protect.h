/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Addresses no ban may take unless an operator forces it: what can never
 * be an offender's own source (unspecified, loopback, the limited
 * broadcast, multicast, IPv4-mapped), the appliance's own addresses, and
 * the policy's never-ban lists. An automatic ban (Suricata's alerts, a
 * limit's overload, a fleet's other nodes) of such an address is refused:
 * whoever can make them alert on a forged source could otherwise ban the
 * appliance, its gateway or its resolver. A prefix is refused when it lies
 * within one of them, and when it overlaps a never-ban entry either way
 * (the operator's own word); a ban of a network that holds one of the
 * appliance's addresses (its LAN, say) is not refused.
 */
#ifndef NFBOX_DYNSET_PROTECT_H
#define NFBOX_DYNSET_PROTECT_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct dyn_protect {
	const struct prefix *own; /* the appliance's addresses, full length */
	uint32_t nown;
	const struct addr_match *lists[2]; /* options.never_ban, the set's never_ban (NULL: none) */
};

/* Why pfx may not be banned ("loopback", "this appliance's own address
 * 198.51.100.1", "in never-ban (trusted)"), written into why; NULL if it
 * may be. */
const char *dyn_protected(const struct dyn_protect *p, const struct prefix *pfx, char *why, size_t len);

#endif
