/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Packets that nftables rules log with `log group N`, received over NFLOG
 * (nfnetlink_log): one socket bound to one group in the current network
 * namespace, non-blocking, for the daemon's event loop. Poll nflog_fd() for
 * input and call nflog_read() when it is readable.
 */
#ifndef NFBOX_NETLINK_NFLOG_H
#define NFBOX_NETLINK_NFLOG_H

#include <stddef.h>
#include <stdint.h>
#include <linux/netlink.h>

struct nflog;

/* One logged packet. Its pointers point into the message being read: they
 * are valid only during the callback (or as long as the message parsed by
 * nflog_parse lives). */
struct nflog_packet {
	uint8_t family;		/* nfgenmsg.nfgen_family: NFPROTO_IPV4 or NFPROTO_IPV6 for inet
				 * tables (other families are passed on as they come) */
	uint8_t hook;		/* NF_INET_* from NFULA_PACKET_HDR */
	uint32_t ifin, ifout;	/* NFULA_IFINDEX_INDEV / _OUTDEV (0 if absent) */
	char prefix[128];	/* NFULA_PREFIX, NUL-terminated ("" if absent; cut at 127 bytes) */
	const uint8_t *payload; /* NFULA_PAYLOAD: the packet from its network header */
	size_t len;		/* bytes of payload present */
	uint32_t orig_len;	/* the whole packet's length as far as NFLOG tells it: nfnetlink_log
				 * has no original-length attribute, so this is always len */
	uint64_t ts_ns;		/* NFULA_TIMESTAMP (CLOCK_REALTIME ns) if present, else 0; the
				 * kernel stamps only prerouting, input and forward */
};

/* Bind NFLOG group `group` in this network namespace, copying at most
 * copy_bytes of each packet (NFULNL_COPY_PACKET; 0 asks for as much as the
 * kernel copies, 65531 bytes), with a receive buffer large enough for
 * bursts. Non-blocking. 0 or -errno (-EBUSY when another program already
 * has the group, -EPERM without CAP_NET_ADMIN). *out untouched on failure. */
int nflog_open(uint16_t group, uint32_t copy_bytes, struct nflog **out);
/* Unbinds the group; NULL is fine. */
void nflog_close(struct nflog *n);
int nflog_fd(const struct nflog *n);

/* Read what there is now without blocking: until the socket is empty, or
 * once as many bytes as its receive buffer (SO_RCVBUF) have been read, so
 * that a flood of logged packets cannot hold the event loop (the fd stays
 * readable for the rest). cb (may be NULL) is called once per logged packet. Returns the number of packets,
 * or -errno. Overruns (ENOBUFS: the kernel could not deliver) are counted in
 * nflog_lost() and reading goes on. */
int nflog_read(struct nflog *n, void (*cb)(const struct nflog_packet *p, void *arg), void *arg);
/* Overruns seen so far, as a count of events (not of packets). */
uint64_t nflog_lost(const struct nflog *n);

/* One NFULNL_MSG_PACKET message to a packet (exposed for tests): nlh is
 * nlh->nlmsg_len bytes long. 0, or -EINVAL for a message of another type,
 * without payload or without NFULA_PACKET_HDR, or with an attribute cut
 * short or of the wrong size; *out untouched on failure. */
int nflog_parse(const struct nlmsghdr *nlh, struct nflog_packet *out);

#endif
