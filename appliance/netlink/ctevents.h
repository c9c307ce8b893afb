/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Conntrack over ctnetlink: the events of connections that end (destroyed,
 * or a TCP connection that reached TIME_WAIT or CLOSE), and whether one
 * connection is still there. Used to give back the connections a limit
 * counted (backend/bpf/conns.c). One socket, non-blocking, in the current
 * network namespace. And connections deleted (a scheduled rule's, when it
 * goes out of force).
 */
#ifndef NFBOX_NETLINK_CTEVENTS_H
#define NFBOX_NETLINK_CTEVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/netlink.h>

/* A connection's original tuple as the kernel keeps it (struct
 * nf_conntrack_tuple): the protocol fields are the raw bytes of its
 * unions, network order; for ICMP/ICMPv6 the id in sport and the type and
 * code bytes in dport; zero for protocols without. */
struct ct_tuple {
	uint8_t af; /* AF_INET, AF_INET6 */
	uint8_t proto;
	uint8_t src[16], dst[16]; /* IPv4 in the first 4 bytes */
	uint8_t sport[2], dport[2];
};

/* A connection that ended: destroyed, or TCP closed (tcp_state TIME_WAIT
 * or CLOSE: ct count's "already closed"). */
struct ct_end {
	struct ct_tuple t;
	bool destroyed;
};

struct ctev;

/* Subscribe to conntrack's update and destroy events. 0 or -errno. */
int ctev_open(struct ctev **out);
void ctev_close(struct ctev *c);
int ctev_fd(const struct ctev *c);
/* Read what there is without blocking (at most the receive buffer's worth
 * at once); cb for each connection that ended. The number of ends, or
 * -ENOBUFS once after events were lost (the caller then checks what it
 * counts), or another -errno. */
int ctev_read(struct ctev *c, void (*cb)(const struct ct_end *e, void *arg), void *arg);

/* Whether the connection is there and not closed: 1 open, 0 gone or TCP
 * closed, -errno. Asked on the socket of its own that c keeps. */
int ctev_alive(struct ctev *c, const struct ct_tuple *t);

/* The same question without the events (no group joined): a socket of
 * its own, non-blocking; ctask_alive answers as ctev_alive. */
struct ctask;
int ctask_open(struct ctask **out);
void ctask_close(struct ctask *a);
int ctask_alive(struct ctask *a, const struct ct_tuple *t);

/* Cutting connections (a scheduled rule out of force), each on a socket of
 * its own. ct_delete_tuples: each connection of an original tuple of t
 * deleted, cb for each that was there; how many, or -errno.
 * ct_list_marked: the original tuples of the connections whose conntrack
 * mark & mask is mark, into *out (malloc()ed) and *n; 0 or -errno. */
int ct_delete_tuples(const struct ct_tuple *t, size_t n, void (*cb)(const struct ct_tuple *t, void *arg), void *arg);
int ct_list_marked(uint32_t mark, uint32_t mask, struct ct_tuple **out, size_t *n);

/* One ctnetlink conntrack message to a tuple and whether it ends the
 * connection (exposed for tests): 1 an end (*out set), 0 another event,
 * -EINVAL malformed. */
int ctev_parse(const struct nlmsghdr *nlh, struct ct_end *out);

#endif
