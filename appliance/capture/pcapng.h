/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pcapng writer for the AF_XDP capture. The receive thread hands packets to
 * pcapng_write_ref() (by reference: the writer writes them from the caller's
 * buffers and hands those back when done) or pcapng_write() (copied once
 * into a bounded lock-free queue); neither blocks. A disk-writer thread
 * writes the queue out with pwritev() in chunks of up to 1 MiB, rotates by
 * size and survives write errors such as ENOSPC with every file left
 * readable.
 *
 * Files: one section, one interface (Ethernet, nanosecond timestamps),
 * host byte order. A file at PATH is created fresh (O_EXCL, O_NOFOLLOW, mode
 * 0640): a stale regular file there is unlinked first, unless another
 * writer still has it open (each holds an flock() on its current file):
 * then -EBUSY. A symlink makes pcapng_open() fail with -ELOOP, anything
 * else that is not a regular file with -EISDIR (directory) or -EEXIST.
 * pcapng_open() returns its failures without printing them (the caller
 * explains them); the writer thread logs what goes wrong later.
 */
#ifndef NFBOX_PCAPNG_H
#define NFBOX_PCAPNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Largest snaplen kept (libpcap's maximum); snaplen 0 means this. */
#define PCAPNG_MAX_SNAPLEN 262144u
/* Most pieces of one packet. */
#define PCAPNG_MAX_REFS 256

struct pcapng_opts {
	const char *path;     /* file to create; with rotation, older files are PATH.1 .. PATH.(keep-1) */
	const char *ifname;   /* interface description block: if_name */
	uint32_t snaplen;     /* bytes kept per packet; longer packets are truncated (orig_len kept) */
	uint64_t rotate_size; /* 0: none; else start a new file when the current one would exceed it */
	uint32_t rotate_keep; /* files kept in all, >= 1 */
	size_t queue_bytes; /* bound of the queue between the receive thread and the disk writer (default 64 MiB if 0) */
	/* Packets given by reference (pcapng_write_ref): each piece's cookie
	 * is passed to release once the writer is done with it (written or
	 * dropped), always on the producer's thread: in pcapng_write*(),
	 * pcapng_reclaim() or pcapng_close*(). */
	void (*release)(uint64_t cookie, void *arg);
	void *release_arg;
	bool keep_existing; /* a file already at PATH is kept as PATH.1 (older ones shifted, as in
				    rotation) when rotate_keep > 1, instead of being replaced */
};

struct pcapng_stats {
	uint64_t packets, bytes; /* written to disk (bytes: captured bytes) */
	uint64_t queue_drops;	 /* packets refused because the queue was full */
	uint64_t write_drops;	 /* packets lost to write errors (e.g. ENOSPC) */
	uint64_t files;		 /* files opened (1 + rotations) */
	uint64_t by_ref;	 /* packets queued by reference (not copied) */
	int last_errno;		 /* last write/open error, 0 if none */
};

struct pcapng_writer;

/* 0 or -errno; the file is created and SHB+IDB written before it returns.
 * *out is left untouched on failure. */
int pcapng_open(const struct pcapng_opts *o, struct pcapng_writer **out);

/* Queue one packet made of iovcnt pieces (the AF_XDP frames of a
 * multi-buffer packet), copied once into the queue; at most snaplen bytes
 * are kept. ts_ns: CLOCK_REALTIME nanoseconds. Never blocks: returns
 * -ENOBUFS (and counts queue_drops) when the queue is full, -EINVAL if
 * orig_len is shorter than the bytes captured. Thread-safe with one
 * producer. */
int pcapng_write(struct pcapng_writer *w, uint64_t ts_ns, const struct iovec *iov, int iovcnt, uint32_t orig_len);

/* Queue one packet of n pieces by reference: nothing is copied, the
 * writer writes the pieces from where they are. The caller must leave
 * piece i untouched until release(cookies[i]) (opts.release, required).
 * Returns as pcapng_write(); on failure nothing is held. */
int pcapng_write_ref(struct pcapng_writer *w, uint64_t ts_ns, const struct iovec *iov, const uint64_t *cookies, int n,
		     uint32_t orig_len);

/* Producer: hands back what the writer is done with (release callbacks).
 * No system call: cheap enough for every turn of a receive loop. */
void pcapng_reclaim(struct pcapng_writer *w);

/* An eventfd that becomes readable when the writer has finished with
 * referenced pieces; -1 without opts.release. A producer about to sleep
 * polls it; once it is readable, pcapng_release_ack() clears it and
 * pcapng_reclaim() takes the pieces back. */
int pcapng_release_fd(const struct pcapng_writer *w);
void pcapng_release_ack(struct pcapng_writer *w);

/* Counters so far; callable from any thread. */
void pcapng_stats(struct pcapng_writer *w, struct pcapng_stats *out);

/* Flushes the queue, writes an interface statistics block, closes the file
 * so it is complete and valid; NULL ok; returns 0 or the first -errno seen
 * (open, write, rotation or close). */
int pcapng_close(struct pcapng_writer *w);

/* pcapng_close(), and final (if not NULL) gets the counters as they are
 * after that last flush: the packets still queued at close are counted as
 * written or write_drops only then. Untouched when w is NULL. */
int pcapng_close_stats(struct pcapng_writer *w, struct pcapng_stats *final);

#endif
