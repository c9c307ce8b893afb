/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The addresses an interface has (getifaddrs, which asks rtnetlink). */
#include "netlink/addr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* An interface address (getifaddrs) as a prefix of its own length, and
 * its network. */
static bool if_prefix(const struct ifaddrs *i, uint8_t family, struct prefix *a, struct prefix *net)
{
	int fam = family == POLICY_FAM_IPV4 ? AF_INET : AF_INET6;
	const uint8_t *m;
	size_t n = fam == AF_INET ? 4 : 16;

	if (!i->ifa_addr || i->ifa_addr->sa_family != fam || !i->ifa_netmask)
		return false;
	memset(a, 0, sizeof(*a));
	a->family = family;
	a->plen = (uint8_t)(8 * n);
	memcpy(a->addr,
	       fam == AF_INET ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
			      : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
	       n);
	if (fam == AF_INET6 && a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80)
		return false; /* link-local: conntrackd binds a global one */
	m = fam == AF_INET ? (const uint8_t *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
			   : ((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr.s6_addr;
	*net = *a;
	net->plen = 0;
	for (size_t b = 0; b < n; b++)
		net->plen = (uint8_t)(net->plen + __builtin_popcount(m[b]));
	return true;
}

int nl_iface_addrs(const char *ifname, uint8_t family,
		   bool (*fn)(const struct prefix *addr, const struct prefix *net, void *arg), void *arg)
{
	struct ifaddrs *all, *i;
	bool seen = false;

	if (getifaddrs(&all) < 0)
		return -errno;
	for (i = all; i; i = i->ifa_next) {
		struct prefix a, net;

		if (strcmp(i->ifa_name, ifname))
			continue;
		seen = true;
		if (if_prefix(i, family, &a, &net) && !fn(&a, &net, arg))
			break;
	}
	freeifaddrs(all);
	return seen ? 0 : -ENODEV;
}

static void each_sockaddr(const struct sockaddr *sa, void (*fn)(uint8_t family, const uint8_t *addr, void *arg),
			  void *arg)
{
	if (sa && sa->sa_family == AF_INET)
		fn(POLICY_FAM_IPV4, (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr, arg);
	else if (sa && sa->sa_family == AF_INET6)
		fn(POLICY_FAM_IPV6, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr, arg);
}

int nl_local_addrs(void (*fn)(uint8_t family, const uint8_t *addr, void *arg), void *arg)
{
	struct ifaddrs *all;

	if (getifaddrs(&all) < 0)
		return -errno;
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		each_sockaddr(i->ifa_addr, fn, arg);
		if ((i->ifa_flags & IFF_BROADCAST) && i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			each_sockaddr(i->ifa_broadaddr, fn, arg);
	}
	freeifaddrs(all);
	return 0;
}

int nl_iface_addrs_all(void (*fn)(const char *ifname, uint8_t family, const uint8_t *addr, void *arg), void *arg)
{
	struct ifaddrs *all;

	if (getifaddrs(&all) < 0)
		return -errno;
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		struct prefix a, net;

		if (if_prefix(i, POLICY_FAM_IPV4, &a, &net) || if_prefix(i, POLICY_FAM_IPV6, &a, &net))
			fn(i->ifa_name, a.family, a.addr, arg);
	}
	freeifaddrs(all);
	return 0;
}
