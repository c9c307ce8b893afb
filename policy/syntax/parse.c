/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "policy/syntax/parse.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int parse_uint(const char *s, uint64_t max, uint64_t *out, const char **why)
{
	uint64_t v = 0;

	if (!*s) {
		*why = "expected a number";
		return -EINVAL;
	}
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			*why = "expected a decimal number";
			return -EINVAL;
		}
		if (v > (UINT64_MAX - 9) / 10) {
			*why = "number too large";
			return -ERANGE;
		}
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > max) {
		*why = "number out of range";
		return -ERANGE;
	}
	*out = v;
	return 0;
}

int parse_duration(const char *s, uint64_t max, uint64_t *out, const char **why)
{
	static const struct {
		char unit;
		uint64_t mult;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	size_t n = strlen(s);
	uint64_t mult = 1, v;
	char num[24];

	if (n && !isdigit((unsigned char)s[n - 1])) {
		mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (s[n - 1] == units[i].unit)
				mult = units[i].mult;
		n--;
	}
	if (!mult || !n || n >= sizeof(num)) {
		*why = "a duration is a number of seconds, or a number with s, m, h or d, e.g. 90s, 10m, 2h or 7d";
		return -EINVAL;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (parse_uint(num, max, &v, why) < 0 || v == 0 || v > max / mult) {
		*why = "the duration is out of range";
		return -ERANGE;
	}
	*out = v * mult;
	return 0;
}

int parse_duration_ms(const char *s, uint64_t max_ms, uint64_t *out, const char **why)
{
	static const char syntax[] =
		"a duration is a number of seconds, or a number with ms, s, m, h or d, e.g. 100ms, 90s or 10m";
	size_t n = strlen(s);
	uint64_t v = 0;
	char num[24];
	int r;

	if (n > 2 && !strcmp(s + n - 2, "ms") && n - 2 < sizeof(num)) {
		memcpy(num, s, n - 2);
		num[n - 2] = '\0';
		r = parse_uint(num, max_ms, &v, why);
		*why = r == -EINVAL ? syntax : "the duration is out of range";
		if (r < 0 || v == 0)
			return r < 0 ? r : -ERANGE;
		*out = v;
		return 0;
	}
	if ((r = parse_duration(s, max_ms / 1000, &v, why)) < 0) {
		if (r == -EINVAL)
			*why = syntax;
		return r;
	}
	*out = v * 1000;
	return 0;
}

bool parse_looks_like_address(const char *s)
{
	if (strchr(s, ':'))
		return true;
	return isdigit((unsigned char)s[0]) && strchr(s, '.');
}

static void clear_host_bits(struct prefix *p, bool *host_bits)
{
	unsigned bytes = p->family == POLICY_FAM_IPV4 ? 4 : 16;

	*host_bits = false;
	for (unsigned i = 0; i < bytes; i++) {
		unsigned keep = p->plen > i * 8 ? p->plen - i * 8 : 0;
		uint8_t mask = keep >= 8 ? 0xff : (uint8_t)(0xff << (8 - keep));

		if (p->addr[i] & ~mask)
			*host_bits = true;
		p->addr[i] &= mask;
	}
}

int parse_prefix(const char *s, struct prefix *out, bool *host_bits, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct prefix p = { 0 };
	unsigned max;

	if (alen >= INET6_ADDRSTRLEN) {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, p.addr) == 1) {
		p.family = POLICY_FAM_IPV4;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, p.addr) == 1) {
		p.family = POLICY_FAM_IPV6;
		max = 128;
	} else {
		*why = "not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	p.plen = (uint8_t)max;
	if (slash) {
		uint64_t len;

		if (parse_uint(slash + 1, 255, &len, why) < 0) {
			*why = "the prefix length after '/' must be a number";
			return -EINVAL;
		}
		if (len > max) {
			*why = max == 32 ? "IPv4 prefix length must be 0..32" : "IPv6 prefix length must be 0..128";
			return -ERANGE;
		}
		p.plen = (uint8_t)len;
	}
	clear_host_bits(&p, host_bits);
	p.loc = out->loc;
	*out = p;
	return 0;
}

int parse_proto(const char *s, int *out, const char **why)
{
	int known = policy_proto_number(s);
	struct protoent *pe;
	uint64_t v;

	if (known >= 0) {
		*out = known;
		return 0;
	}
	if (isdigit((unsigned char)s[0])) {
		if (parse_uint(s, 255, &v, why) < 0) {
			*why = "protocol number must be 0..255";
			return -ERANGE;
		}
		*out = (int)v;
		return 0;
	}
	/* The system's protocol list: vrrp, ospf, ipv6-icmp, ... */
	if (*s && (pe = getprotobyname(s)) && pe->p_proto >= 0 && pe->p_proto <= 255) {
		*out = pe->p_proto;
		return 0;
	}
	*why = access("/etc/protocols", R_OK)
		       ? "unknown protocol; use tcp, udp, icmp, icmpv6, sctp, gre, esp, ah, udplite or a number 0..255 "
			 "(there is no /etc/protocols for other names: install netbase)"
		       : "unknown protocol; use tcp, udp, icmp, icmpv6, sctp, gre, esp, ah, udplite, a name from "
			 "/etc/protocols or a number 0..255";
	return -EINVAL;
}

/* One port: a number, or a name from the services list (/etc/services)
 * for protocol proto. */
static int parse_port(const char *s, size_t len, int proto, uint64_t *out, const char **why)
{
	char buf[64];
	struct servent *se;

	if (!len || len >= sizeof(buf)) {
		*why = "a port must be a number 0..65535 or a service name";
		return -EINVAL;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (isdigit((unsigned char)buf[0])) {
		if (parse_uint(buf, 65535, out, why) < 0) {
			*why = strcmp(*why, "number out of range") == 0 ? "port out of range 0..65535"
									: "a port must be a number 0..65535";
			return -ERANGE;
		}
		return 0;
	}
	se = getservbyname(buf, policy_proto_name(proto));
	if (!se) {
		*why = access("/etc/services", R_OK)
			       ? "unknown port name (there is no /etc/services: install netbase, or give the number)"
			       : "unknown port name for this protocol (see /etc/services), or give the number";
		return -EINVAL;
	}
	*out = ntohs((uint16_t)se->s_port);
	return 0;
}

int parse_ports(const char *s, struct port_range *out, size_t max, size_t *n, size_t *bad, const char **why)
{
	const char *slash = strchr(s, '/'), *p;
	char proto[32];
	int num;

	*n = 0;
	*bad = 0;
	if (!slash || (size_t)(slash - s) >= sizeof(proto)) {
		*why = "a port is written PROTO/PORT, PROTO/LOW-HIGH or PROTO/P1,P2,..., e.g. tcp/443, "
		       "udp/10000-20000, tcp/80,443";
		return -EINVAL;
	}
	memcpy(proto, s, (size_t)(slash - s));
	proto[slash - s] = '\0';
	if (parse_proto(proto, &num, why) < 0)
		return -EINVAL;
	if (num != IPPROTO_TCP && num != IPPROTO_UDP && num != IPPROTO_SCTP && num != IPPROTO_UDPLITE) {
		*why = "this protocol has no ports; ports exist for tcp, udp, sctp and udplite "
		       "(for ICMP use proto: icmp with icmp-type)";
		return -EINVAL;
	}
	for (p = slash + 1;; p++) {
		size_t len = strcspn(p, ","), dash;
		uint64_t lo, hi;
		int r;

		*bad = (size_t)(p - s);
		if (*n == max) {
			*why = "too many ports in one list";
			return -E2BIG;
		}
		/* A name may hold a '-' (ms-sql-s): the whole element first,
		 * then a range split at each '-' in turn (ftp-data-ssh). */
		if (parse_port(p, len, num, &lo, why) == 0) {
			hi = lo;
		} else {
			const char *first_why = NULL;
			size_t first_bad = 0;
			bool found = false;

			dash = strcspn(p, "-,");
			if (dash >= len)
				return -EINVAL; /* no range: why says what is wrong */
			for (; dash < len && !found; dash += 1 + strcspn(p + dash + 1, "-,")) {
				if ((r = parse_port(p, dash, num, &lo, why)) == 0 &&
				    (r = parse_port(p + dash + 1, len - dash - 1, num, &hi, why)) == 0)
					found = true;
				else if (!first_why) {
					/* the part at fault: the low end, or else the high one */
					first_why = *why;
					first_bad = (size_t)(p - s);
					if (parse_port(p, dash, num, &lo, why) == 0)
						first_bad = (size_t)(p + dash + 1 - s);
				}
			}
			if (!found) {
				*why = first_why;
				*bad = first_bad;
				return -EINVAL;
			}
			if (hi < lo) {
				*why = "inverted port range: the low port comes first (e.g. 1000-2000)";
				return -ERANGE;
			}
		}
		out[*n] = (struct port_range){ .proto = (uint8_t)num, .lo = (uint16_t)lo, .hi = (uint16_t)hi };
		++*n;
		p += len;
		if (!*p)
			return 0;
	}
}

int parse_port_range(const char *s, struct port_range *out, const char **why)
{
	size_t n, bad;

	if (strchr(s, ',')) {
		*why = "one port or range here, not a list";
		return -EINVAL;
	}
	return parse_ports(s, out, 1, &n, &bad, why);
}

int parse_size(const char *s, uint64_t *out, const char **why)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },	     { "B", 1 },	   { "K", 1000 },      { "KB", 1000 },
		{ "KiB", 1024 },     { "M", 1000000 },	   { "MB", 1000000 },  { "MiB", 1 << 20 },
		{ "G", 1000000000 }, { "GB", 1000000000 }, { "GiB", 1 << 30 }, { "TiB", UINT64_C(1) << 40 },
	};
	char num[32];
	size_t n = strspn(s, "0123456789"), nfrac = 0;
	uint64_t v, frac = 0, scale = 1;
	const char *unit = s + n;

	if (n == 0 || n >= sizeof(num)) {
		*why = "a size is a number with an optional unit: 4096, 100MB, 256MiB, 1.5GiB";
		return -EINVAL;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	if (parse_uint(num, UINT64_MAX / (UINT64_C(1) << 40), &v, why) < 0)
		return -ERANGE;
	if (*unit == '.') { /* a decimal fraction: 1.5GiB */
		nfrac = strspn(unit + 1, "0123456789");
		if (nfrac == 0 || nfrac > 6) {
			*why = "a decimal size has 1 to 6 digits after the point, e.g. 1.5GiB";
			return -EINVAL;
		}
		for (size_t i = 0; i < nfrac; i++) {
			frac = frac * 10 + (uint64_t)(unit[1 + i] - '0');
			scale *= 10;
		}
		unit += 1 + nfrac;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unit, units[i].suffix) == 0) {
			/* frac < scale <= 1e6 and mult <= 2^40: no overflow */
			if (frac * units[i].mult % scale) {
				*why = "that is not a whole number of bytes; give more of the number in a smaller unit";
				return -EINVAL;
			}
			*out = v * units[i].mult + frac * units[i].mult / scale;
			return 0;
		}
	}
	*why = "unknown size unit; use B, KB, KiB, MB, MiB, GB, GiB or TiB";
	return -EINVAL;
}

int parse_rate(const char *s, struct policy_rate *out, const char **why)
{
	static const struct {
		const char *name;
		uint32_t per;
	} units[] = {
		{ "second", 1 }, { "s", 1 },  { "sec", 1 },	{ "minute", 60 },
		{ "min", 60 },	 { "m", 60 }, { "hour", 3600 }, { "h", 3600 },
	};
	const char *slash = strchr(s, '/');
	char num[16];
	uint64_t v;

	if (!slash || (size_t)(slash - s) >= sizeof(num)) {
		*why = "a rate is written N/second, N/minute or N/hour, e.g. 100/second";
		return -EINVAL;
	}
	memcpy(num, s, (size_t)(slash - s));
	num[slash - s] = '\0';
	if (parse_uint(num, 1000000, &v, why) < 0 || v == 0) {
		*why = "the rate must be 1..1000000 events";
		return -ERANGE;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(slash + 1, units[i].name) == 0) {
			out->n = (uint32_t)v;
			out->per = units[i].per;
			return 0;
		}
	}
	*why = "the rate unit must be second, minute or hour";
	return -EINVAL;
}

/* "80" or "80-90": ports 1..65535, the range not ending before it starts. */
static int parse_target_ports(const char *s, uint16_t *lo, uint16_t *hi, const char **why)
{
	const char *dash = strchr(s, '-');
	char first[8];
	uint64_t a, b;

	if (!dash)
		dash = s + strlen(s);
	if ((size_t)(dash - s) >= sizeof(first) || dash == s) {
		*why = "the port after ':' must be 1..65535, or a range of them (80-90)";
		return -ERANGE;
	}
	memcpy(first, s, (size_t)(dash - s));
	first[dash - s] = '\0';
	if (parse_uint(first, 65535, &a, why) < 0 || a == 0 ||
	    (*dash && (parse_uint(dash + 1, 65535, &b, why) < 0 || b == 0))) {
		*why = "the port after ':' must be 1..65535, or a range of them (80-90)";
		return -ERANGE;
	}
	if (!*dash)
		b = a;
	if (b < a) {
		*why = "the port range ends before it starts";
		return -ERANGE;
	}
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

int parse_addr_port(const char *s, struct prefix *addr, uint16_t *port, uint16_t *port_last, const char **why)
{
	char buf[INET6_ADDRSTRLEN + 2];
	const char *port_str = NULL;
	bool host_bits;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || (size_t)(end - s - 1) >= sizeof(buf)) {
			*why = "an IPv6 address with a port is written [2001:db8::1]:80";
			return -EINVAL;
		}
		memcpy(buf, s + 1, (size_t)(end - s - 1));
		buf[end - s - 1] = '\0';
		if (end[1] == ':')
			port_str = end + 2;
		else if (end[1]) {
			*why = "an IPv6 address with a port is written [2001:db8::1]:80";
			return -EINVAL;
		}
	} else {
		const char *colon = strchr(s, ':');

		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* bare IPv6 address without port */
		if (strlen(s) >= sizeof(buf)) {
			*why = "not an IPv4 or IPv6 address";
			return -EINVAL;
		}
		strcpy(buf, s);
		if (colon) {
			buf[colon - s] = '\0';
			port_str = colon + 1;
		}
	}
	if (strchr(buf, '/')) {
		*why = "a NAT target is one address, not a prefix";
		return -EINVAL;
	}
	if (parse_prefix(buf, addr, &host_bits, why) < 0)
		return -EINVAL;
	*port = *port_last = 0;
	if (port_str)
		return parse_target_ports(port_str, port, port_last, why);
	return 0;
}

/* The last address of pf's prefix: every host bit set. */
static void prefix_last(const struct prefix *pf, struct prefix *out)
{
	unsigned bytes = pf->family == POLICY_FAM_IPV4 ? 4 : 16;

	*out = *pf;
	for (unsigned i = 0; i < bytes * 8; i++)
		if (i >= pf->plen)
			out->addr[i / 8] |= (uint8_t)(0x80 >> (i % 8));
	out->plen = (uint8_t)(bytes * 8);
}

int parse_addr_range(const char *s, struct prefix *first, struct prefix *last, const char **why)
{
	char buf[2 * INET6_ADDRSTRLEN + 8];
	const char *dash = strchr(s, '-');
	bool host_bits;

	if (strlen(s) >= sizeof(buf)) {
		*why = "not an address, a range A-B or a prefix";
		return -EINVAL;
	}
	if (!dash) {
		if (parse_prefix(s, first, &host_bits, why) < 0)
			return -EINVAL;
		prefix_last(first, last);
		first->plen = last->plen;
		return 0;
	}
	memcpy(buf, s, (size_t)(dash - s));
	buf[dash - s] = '\0';
	if (strchr(buf, '/') || strchr(dash + 1, '/')) {
		*why = "a range is two addresses, A-B, without prefix lengths";
		return -EINVAL;
	}
	if (parse_prefix(buf, first, &host_bits, why) < 0 || parse_prefix(dash + 1, last, &host_bits, why) < 0)
		return -EINVAL;
	if (first->family != last->family) {
		*why = "the two ends of a range are of different address families";
		return -EINVAL;
	}
	if (memcmp(first->addr, last->addr, 16) > 0) {
		*why = "the range ends before it starts";
		return -EINVAL;
	}
	return 0;
}

size_t parse_range_split(const struct prefix *first, const struct prefix *last, struct prefix *out, size_t max)
{
	unsigned bits = first->family == POLICY_FAM_IPV4 ? 32 : 128, bytes = bits / 8;
	unsigned __int128 lo = 0, hi = 0;
	size_t n = 0;

	for (unsigned i = 0; i < bytes; i++) {
		lo = lo << 8 | first->addr[i];
		hi = hi << 8 | last->addr[i];
	}
	while (lo <= hi && n < max) {
		unsigned k = 0; /* the largest aligned block from lo that ends by hi */
		struct prefix *p = &out[n++];
		unsigned __int128 v;

		while (k < bits && !((lo >> k) & 1) && (lo | (((unsigned __int128)2 << k) - 1)) <= hi)
			k++;
		memset(p, 0, sizeof(*p));
		p->family = first->family;
		p->plen = (uint8_t)(bits - k);
		p->loc = first->loc;
		v = lo;
		for (unsigned i = bytes; i-- > 0; v >>= 8)
			p->addr[i] = (uint8_t)v;
		if (k == bits || (lo | (((unsigned __int128)1 << k) - 1)) == hi)
			break; /* the block ends at hi (or covers everything) */
		lo += (unsigned __int128)1 << k;
	}
	return n;
}

bool parse_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > POLICY_MAX_NAME || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return false;
	return true;
}

bool parse_valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= POLICY_IFNAMSIZ || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || isspace((unsigned char)s[i]))
			return false;
	return true;
}
