/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The addresses an interface has, as the policy writes them. */
#ifndef NFBOX_NETLINK_ADDR_H
#define NFBOX_NETLINK_ADDR_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* Each global address of family (POLICY_FAM_IPV4 or _IPV6; IPv6
 * link-local ones left out) that interface ifname has: fn with the
 * address (a full-length prefix) and its network (the prefix of its
 * netmask). fn returns false to stop. 0; -ENODEV when there is no such
 * interface; or -errno of the listing. */
int nl_iface_addrs(const char *ifname, uint8_t family,
		   bool (*fn)(const struct prefix *addr, const struct prefix *net, void *arg), void *arg);

/* Every address this network namespace's interfaces have (IPv4 and IPv6,
 * link-local ones too), and each IPv4 broadcast address: fn(family, addr)
 * with family POLICY_FAM_IPV4 (4 bytes) or _IPV6 (16). 0 or -errno. */
int nl_local_addrs(void (*fn)(uint8_t family, const uint8_t *addr, void *arg), void *arg);

/* Every address of every interface of this network namespace, with the
 * interface's name (IPv6 link-local ones left out, as in nl_iface_addrs):
 * fn(ifname, family, addr) with family POLICY_FAM_IPV4 (4 bytes) or _IPV6
 * (16). 0 or -errno. */
int nl_iface_addrs_all(void (*fn)(const char *ifname, uint8_t family, const uint8_t *addr, void *arg), void *arg);

#endif
