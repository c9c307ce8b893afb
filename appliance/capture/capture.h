/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The capture engine: one policy `capture:` entry (struct capture_conf)
 * brought to life on one interface. An XDP program (bpf/nfbox_capture.bpf.c)
 * filters in the kernel and redirects matching frames to one AF_XDP socket
 * per rx queue (multi-buffer, so a 9000-byte frame arrives whole as a run of
 * descriptors); a receive thread hands each frame, as an iovec over the UMEM
 * frames, to the pcapng writer. Everything else goes on to the stack.
 *
 * Used by `nfbox capture` (one ad-hoc capture) and meant for `nfbox run`
 * (one engine per policy capture): start, read stats at any time from any
 * thread, stop. The receive thread blocks every signal; callers keep their
 * own signal handling.
 */
#ifndef NFBOX_APPLIANCE_CAPTURE_H
#define NFBOX_APPLIANCE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

struct capture;

enum capture_xdp_mode {
	CAPTURE_XDP_AUTO = 0, /* native (driver) mode, else generic (SKB) mode */
	CAPTURE_XDP_NATIVE,
	CAPTURE_XDP_SKB,
};

struct capture_opts {
	enum capture_xdp_mode xdp_mode;
	bool force_copy;	   /* never try zero-copy */
	uint64_t max_packets;	   /* end by itself after this many packets; 0: no limit */
	size_t queue_bytes;	   /* writer queue; 0: 64 MiB */
	bool keep_existing;	   /* an earlier file at the path becomes PATH.1 (pcapng.h) */
	uint32_t frames_per_queue; /* UMEM frames (4096 bytes) per rx queue, a power of two;
				      0: 16384, fewer when there are more than 4 queues */
};

/* How the capture runs, fixed once it started. */
struct capture_info {
	char ifname[POLICY_IFNAMSIZ];
	int ifindex;
	uint32_t nqueues; /* AF_XDP sockets, one per rx queue */
	uint32_t frames_per_queue;
	enum capture_xdp_mode xdp_mode;	   /* CAPTURE_XDP_NATIVE or _SKB as attached */
	bool zerocopy;			   /* XDP_ZEROCOPY bound; else XDP_COPY */
	uint64_t xdp_features;		   /* NETDEV_XDP_ACT_* (0 when unknown) */
	uint32_t zc_max_segs;		   /* driver's zero-copy multi-buffer limit (0 unknown) */
	const char *copy_reason;	   /* why not zero-copy (NULL when zero-copy) */
	char mirror_from[POLICY_IFNAMSIZ]; /* "" unless a mirror port */
	char mirror_peer[POLICY_IFNAMSIZ]; /* the veth end the copies are sent from */
};

struct capture_stats {
	/* Delivered through the sockets, all queues. */
	uint64_t packets;  /* whole frames (runs of descriptors) */
	uint64_t bytes;	   /* their full length */
	uint64_t descs;	   /* descriptors read */
	uint64_t multibuf; /* frames of more than one descriptor */
	uint64_t oversize; /* frames of more descriptors than the engine keeps: not written */
	/* The XDP program (per-CPU counters summed). */
	uint64_t xdp_seen, xdp_matched, xdp_redirected, xdp_passed;
	/* Kernel socket drops: XDP_STATISTICS summed over the sockets. */
	uint64_t rx_dropped, rx_ring_full, rx_fill_ring_empty_descs, rx_invalid_descs;
	/* The pcapng writer. written: packets on disk; while running, queued
	 * ones are not yet counted; after capture_stop every packet captured
	 * is written, a queue drop or a write drop. */
	uint64_t written, writer_queue_drops, writer_write_drops, files;
	uint64_t by_ref;  /* packets handed to the writer as UMEM frames (not copied) */
	int writer_errno; /* positive errno, 0 if none */
	/* Why the capture ended by itself: 0 (still running, stopped, or the
	 * packet limit was reached) or a negative errno (e.g. -ENETDOWN). */
	int end_error;
	bool done; /* the capture ended by itself (limit or error) */
	/* Mirror port (mirror-from): frames cloned from the source interface,
	 * and clones that could not be sent. */
	uint64_t mirrored, mirror_failed;
};

/* Start capturing per conf (interface, match, file, snaplen, rotation).
 * opts may be NULL. Opens the writer, loads and attaches the program, binds
 * the sockets, starts the receive thread. Returns 0 or -errno explained in
 * d; *out is untouched on failure. With mirror_from, the capture interface
 * is a veth pair that the capture creates and deletes (mirror.h); frames it
 * does not capture are dropped there. What happens once it runs (a
 * receive error, drops) is logged. */
int capture_start(const struct capture_conf *conf, const struct capture_opts *opts, struct diags *d,
		  struct capture **out);

void capture_get_info(const struct capture *c, struct capture_info *out);

/* A snapshot of the counters; safe while the capture runs. Returns 0 or
 * -errno when a kernel counter could not be read (the rest is filled). */
int capture_stats(struct capture *c, struct capture_stats *out);

/* An fd that becomes readable when the capture ends by itself (packet
 * limit reached, or the interface went away): poll it beside your own. */
int capture_done_fd(const struct capture *c);

/* Stop: unbind the sockets from the program, drain what they hold, detach
 * XDP, close the sockets and the writer (the file is complete). final, if
 * not NULL, gets the last counters. NULL c is fine. Returns 0 or the
 * writer's -errno on close. */
/* Once a second from its owner: a capture chained after nfbox's early drop
 * (lib/xdpchain.h) follows the XDP program on its interface: chained again
 * after a new one, or attached alone when it left. 0, or -errno (said in
 * the log: the capture then takes no frames). */
int capture_reseat(struct capture *c);
int capture_stop(struct capture *c, struct capture_stats *final);

const char *capture_xdp_mode_name(enum capture_xdp_mode m); /* "native", "skb", "auto" */

#endif
