/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Scalar syntaxes of the policy language: pure string parsers. Each returns
 * 0 or a negative errno and, on failure, sets *why to a static explanation. */
#ifndef NFBOX_PARSE_H
#define NFBOX_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* "192.0.2.0/24", "2001:db8::/32", "198.51.100.7" (host). *host_bits is set
 * when bits beyond the prefix length were set (they are cleared in out). */
int parse_prefix(const char *s, struct prefix *out, bool *host_bits, const char **why);
/* True if s looks like an address rather than a name. */
bool parse_looks_like_address(const char *s);
/* "tcp/80", "udp/10000-20000", "sctp/5060", "tcp/ssh" (a name from
 * /etc/services): one port or range. */
int parse_port_range(const char *s, struct port_range *out, const char **why);
/* The same, or a list of one protocol: "tcp/80,443,8000-8100". Up to max
 * ranges into out, their number in *n; on an error *bad is the offset in s
 * of the element at fault. */
int parse_ports(const char *s, struct port_range *out, size_t max, size_t *n, size_t *bad, const char **why);
/* "tcp", "udp", "icmp", "icmpv6", "sctp", ..., a name from /etc/protocols
 * (vrrp, ospf), or 0..255. */
int parse_proto(const char *s, int *out, const char **why);
/* "256MiB", "1G", "1.5GiB", "4096" -> bytes (a fraction must come to whole bytes). */
int parse_size(const char *s, uint64_t *out, const char **why);
/* "100/second", "10/minute", "5/hour" (also s, min, m, h). */
int parse_rate(const char *s, struct policy_rate *out, const char **why);
int parse_uint(const char *s, uint64_t max, uint64_t *out, const char **why);
/* "90", "90s", "10m", "2h", "7d" -> seconds, 1..max. */
int parse_duration(const char *s, uint64_t max, uint64_t *out, const char **why);
/* The same, or "100ms" -> milliseconds, 1..max_ms. */
int parse_duration_ms(const char *s, uint64_t max_ms, uint64_t *out, const char **why);
/* "198.51.100.10:80", "[2001:db8::1]:80", "198.51.100.10", and a range of
 * ports "198.51.100.10:8000-8010" (port..port_last; both 0 without a port,
 * equal for one). */
int parse_addr_port(const char *s, struct prefix *addr, uint16_t *port, uint16_t *port_last, const char **why);
/* "198.51.100.10", "198.51.100.10-198.51.100.20", "198.51.100.0/28" (every
 * address of the prefix): the first and last address, both with a full
 * prefix length. */
int parse_addr_range(const char *s, struct prefix *first, struct prefix *last, const char **why);
/* The range first..last (same family, full-length addresses, first <= last)
 * as the fewest prefixes that cover exactly it, in order; at most max
 * (254 suffice for any IPv6 range, 62 for IPv4). Returns the number. */
size_t parse_range_split(const struct prefix *first, const struct prefix *last, struct prefix *out, size_t max);
bool parse_valid_name(const char *s);
bool parse_valid_ifname(const char *s);

#endif
