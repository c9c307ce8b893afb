/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The IPv6 header chain read as the classifier reads it (bpf/nfbox.h, "The
 * IPv6 header chain"): the one walker of user space, for verdict events,
 * reject replies and the tests' reference.
 */
#ifndef NFBOX_LIB_IP6WALK_H
#define NFBOX_LIB_IP6WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ip6walk {
	uint8_t proto; /* the upper-layer protocol; a fragment's: the header after its fragment header */
	size_t l4off;  /* where the header after the chain starts */
	bool frag;     /* ended at a fragment header with an offset or M set */
	bool later;    /* a fragment with an offset: what follows is data */
	bool more;     /* M set */
};

enum ip6walk_result {
	IP6W_OK = 0,
	IP6W_MALFORMED = -1, /* a header runs past the datagram, or the chain is longer than any */
	IP6W_CUT = -2,	     /* the bytes given end inside the chain (a capture cut short) */
};

/* The chain of the IPv6 packet p (its fixed header first), of which have
 * bytes are given and whose datagram ends at end (from the payload
 * length; end may exceed have). */
enum ip6walk_result ip6_walk(const uint8_t *p, size_t have, size_t end, struct ip6walk *w);

#endif
