/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pcapng writer: a single-producer, single-consumer byte ring between the
 * receive thread and a disk-writer thread.
 *
 * The producer formats each packet as a complete enhanced packet block (EPB)
 * directly in the ring, so the packet bytes are copied once, and the writer
 * hands ring bytes to pwritev() without copying them again. The ring holds
 * only whole blocks between tail and head; positions grow without wrapping
 * (64 bits) and index the ring modulo its size. Ring space is released only
 * after the bytes are on disk (or dropped), so queue_bytes bounds all memory
 * in flight.
 *
 * The writer sleeps on a futex. It is woken only when a chunk's worth
 * (1 MiB, or half the ring if smaller) is queued or on close; otherwise it
 * polls every FLUSH_NS and writes whatever has waited that long, so at low
 * rates packets reach the disk within about 2 * FLUSH_NS and at high rates
 * every write is a full chunk.
 *
 * The file always ends at a block boundary: a short write is truncated back
 * to the last complete block, and the packets after it are counted as
 * write_drops. After a write error the writer drops what arrives for a
 * back-off period (doubling, capped) before trying again, so a full disk
 * costs one failing write per period, not one per packet.
 */
#include "capture/pcapng.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "capture/thread.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* the same number on every architecture's generic table */
#endif
#ifndef NFBOX_VERSION
#define NFBOX_VERSION "0.0.0"
#endif

#define FILE_MODE 0640
#define DEFAULT_QUEUE_BYTES (64u << 20)
#define CHUNK_BYTES (1u << 20)
#define FLUSH_NS 100000000ll       /* 100 ms */
#define BACKOFF_MIN_NS 100000000ll /* 100 ms */
#define BACKOFF_MAX_NS 2000000000ll
#define IFNAME_MAX 256

#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u
#define BT_ISB 0x00000005u
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du
#define LINKTYPE_ETHERNET 1
#define OPT_ENDOFOPT 0
#define OPT_SHB_USERAPPL 4
#define OPT_IF_NAME 2
#define OPT_IF_TSRESOL 9
#define OPT_ISB_STARTTIME 2
#define OPT_ISB_ENDTIME 3
#define OPT_ISB_IFRECV 4
#define OPT_ISB_OSDROP 7

/* EPB: 28 bytes of header, the data padded to 32 bits, the length again. */
struct epb_head {
	uint32_t type, len, ifid, ts_hi, ts_lo, caplen, origlen;
};
#define EPB_OVERHEAD (sizeof(struct epb_head) + 4)
/* ISB: type, len, ifid, ts (12 + 8), four 64-bit options (4 * 12), end (4), len (4). */
#define ISB_LEN 76u

struct pcapng_writer {
	/* Set by pcapng_open, read-only afterwards. */
	int dirfd;
	char *name;     /* last component of PATH, opened relative to dirfd */
	char *namebuf;  /* room for name + ".N" */
	uint8_t *hdr;   /* SHB + IDB, the start of every file */
	size_t hdr_len;
	uint32_t snaplen;
	uint64_t rotate_size;
	uint32_t rotate_keep;
	uint64_t start_ts; /* CLOCK_REALTIME ns at open: isb_starttime */

	/* The queue. */
	uint8_t *ring;
	uint64_t cap;
	uint64_t wake_level;
	_Atomic uint64_t head; /* written by the producer */
	_Atomic uint64_t tail; /* written by the writer */
	_Atomic uint32_t wake_seq; /* futex word */
	_Atomic int sleeping;
	_Atomic int stop;

	/* Writer thread only. */
	pthread_t thread;
	int fd;            /* -1: no current file (creating it failed) */
	uint64_t file_off; /* end of the last complete block */
	uint64_t file_packets;
	uint64_t rotate_at;
	bool file_dirty;   /* bytes past file_off that a failed ftruncate left */
	int64_t backoff_ns, backoff_until;
	int first_err;

	/* Counters: each has one writing thread (relaxed load + store). */
	_Atomic uint64_t accepted, queue_drops; /* producer */
	_Atomic uint64_t packets, bytes, write_drops, files; /* writer */
	_Atomic int last_errno;
};

static inline void counter_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t counter(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static inline uint32_t pad4(uint32_t n)
{
	return (n + 3) & ~3u;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- ring ---- */

static void ring_put(const struct pcapng_writer *w, uint64_t *pos, const void *src, size_t len)
{
	size_t off = *pos % w->cap, first = len < w->cap - off ? len : w->cap - off;

	memcpy(w->ring + off, src, first);
	memcpy(w->ring, (const uint8_t *)src + first, len - first);
	*pos += len;
}

static void ring_get(const struct pcapng_writer *w, uint64_t pos, void *dst, size_t len)
{
	size_t off = pos % w->cap, first = len < w->cap - off ? len : w->cap - off;

	memcpy(dst, w->ring + off, first);
	memcpy((uint8_t *)dst + first, w->ring, len - first);
}

/* The ring bytes [pos, pos + len) as one or two iovecs. */
static int ring_iov(const struct pcapng_writer *w, uint64_t pos, size_t len, struct iovec *iov)
{
	size_t off = pos % w->cap;

	iov[0].iov_base = w->ring + off;
	if (len <= w->cap - off) {
		iov[0].iov_len = len;
		return 1;
	}
	iov[0].iov_len = w->cap - off;
	iov[1].iov_base = w->ring;
	iov[1].iov_len = len - iov[0].iov_len;
	return 2;
}

static uint64_t queued_bytes(struct pcapng_writer *w)
{
	return atomic_load_explicit(&w->head, memory_order_acquire) -
	       atomic_load_explicit(&w->tail, memory_order_relaxed);
}

static void writer_wake(struct pcapng_writer *w)
{
	atomic_fetch_add(&w->wake_seq, 1);
	syscall(SYS_futex, &w->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- producer ---- */

int pcapng_write(struct pcapng_writer *w, uint64_t ts_ns, const struct iovec *iov, int iovcnt,
		 uint32_t orig_len)
{
	static const uint8_t zeros[4];
	size_t total = 0;
	uint32_t caplen, left;
	uint64_t head, tail, pos;

	if (iovcnt < 0)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	caplen = total < w->snaplen ? (uint32_t)total : w->snaplen;
	if (orig_len < caplen)
		return -EINVAL;

	struct epb_head h = {
		.type = BT_EPB,
		.len = (uint32_t)EPB_OVERHEAD + pad4(caplen),
		.ts_hi = (uint32_t)(ts_ns >> 32),
		.ts_lo = (uint32_t)ts_ns,
		.caplen = caplen,
		.origlen = orig_len,
	};
	head = atomic_load_explicit(&w->head, memory_order_relaxed);
	tail = atomic_load_explicit(&w->tail, memory_order_acquire);
	if (w->cap - (head - tail) < h.len) {
		counter_add(&w->queue_drops, 1);
		return -ENOBUFS;
	}
	pos = head;
	ring_put(w, &pos, &h, sizeof(h));
	left = caplen;
	for (int i = 0; i < iovcnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (n)
			ring_put(w, &pos, iov[i].iov_base, n);
		left -= (uint32_t)n;
	}
	ring_put(w, &pos, zeros, pad4(caplen) - caplen);
	ring_put(w, &pos, &h.len, sizeof(h.len));
	/* seq_cst store, then the load of sleeping: pairs with writer_sleep(). */
	atomic_store(&w->head, pos);
	counter_add(&w->accepted, 1);
	if (atomic_load(&w->sleeping) && pos - tail >= w->wake_level)
		writer_wake(w);
	return 0;
}

/* ---- blocks ---- */

struct blk {
	uint8_t *p;
	size_t len;
};

static void put(struct blk *b, const void *v, size_t n)
{
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put32(struct blk *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_opt(struct blk *b, uint16_t code, const void *v, uint16_t n)
{
	static const uint8_t zeros[4];
	uint16_t h[2] = { code, n };

	put(b, h, 4);
	put(b, v, n);
	put(b, zeros, pad4(n) - n);
}

static void put_opt_ts(struct blk *b, uint16_t code, uint64_t v)
{
	uint32_t hl[2] = { (uint32_t)(v >> 32), (uint32_t)v }; /* high word first, as in EPB */

	put_opt(b, code, hl, sizeof(hl));
}

/* Closes a block begun at b->p + start: end of options, total length twice. */
static void blk_end(struct blk *b, size_t start, bool opts)
{
	uint32_t len;

	if (opts)
		put32(b, OPT_ENDOFOPT);
	len = (uint32_t)(b->len - start + 4);
	memcpy(b->p + start + 4, &len, 4);
	put32(b, len);
}

static int build_header(struct pcapng_writer *w, const char *ifname)
{
	static const char appl[] = "nfbox " NFBOX_VERSION;
	size_t ifn = ifname ? strlen(ifname) : 0;
	uint8_t tsresol = 9; /* 10^-9 s */
	uint16_t ver[2] = { 1, 0 };
	uint16_t lt[2] = { LINKTYPE_ETHERNET, 0 };
	uint64_t section_len = UINT64_MAX; /* unknown */
	struct blk b;
	size_t start;

	if (ifn > IFNAME_MAX)
		return -EINVAL;
	b.p = calloc(1, 64 + pad4(sizeof(appl)) + 64 + pad4((uint32_t)ifn));
	if (!b.p)
		return -ENOMEM;
	b.len = 0;

	start = b.len;
	put32(&b, BT_SHB);
	put32(&b, 0);
	put32(&b, BYTE_ORDER_MAGIC);
	put(&b, ver, 4);
	put(&b, &section_len, 8);
	put_opt(&b, OPT_SHB_USERAPPL, appl, sizeof(appl) - 1);
	blk_end(&b, start, true);

	start = b.len;
	put32(&b, BT_IDB);
	put32(&b, 0);
	put(&b, lt, 4);
	put32(&b, w->snaplen);
	if (ifn)
		put_opt(&b, OPT_IF_NAME, ifname, (uint16_t)ifn);
	put_opt(&b, OPT_IF_TSRESOL, &tsresol, 1);
	blk_end(&b, start, true);

	w->hdr = b.p;
	w->hdr_len = b.len;
	return 0;
}

static void build_isb(struct pcapng_writer *w, uint8_t *out)
{
	struct blk b = { .p = out, .len = 0 };
	uint64_t now = (uint64_t)clock_ns(CLOCK_REALTIME);
	uint64_t drops = counter(&w->queue_drops) + counter(&w->write_drops);
	uint64_t recv = counter(&w->accepted) + counter(&w->queue_drops);

	put32(&b, BT_ISB);
	put32(&b, 0);
	put32(&b, 0); /* interface 0 */
	put32(&b, (uint32_t)(now >> 32));
	put32(&b, (uint32_t)now);
	put_opt_ts(&b, OPT_ISB_STARTTIME, w->start_ts);
	put_opt_ts(&b, OPT_ISB_ENDTIME, now);
	put_opt(&b, OPT_ISB_IFRECV, &recv, 8);
	put_opt(&b, OPT_ISB_OSDROP, &drops, 8);
	blk_end(&b, 0, true);
}

/* ---- files ---- */

static void record_err(struct pcapng_writer *w, int err)
{
	atomic_store_explicit(&w->last_errno, err, memory_order_relaxed);
	if (!w->first_err)
		w->first_err = -err;
}

static void write_failed(struct pcapng_writer *w, const char *what, int err)
{
	record_err(w, err);
	if (!w->backoff_ns)
		log_warn("pcapng: %s %s: %s; dropping packets until it works again", what,
			 w->name, strerror(err));
	w->backoff_ns = w->backoff_ns ? w->backoff_ns * 2 : BACKOFF_MIN_NS;
	if (w->backoff_ns > BACKOFF_MAX_NS)
		w->backoff_ns = BACKOFF_MAX_NS;
	w->backoff_until = clock_ns(CLOCK_MONOTONIC) + w->backoff_ns;
}

static void write_worked(struct pcapng_writer *w)
{
	if (w->backoff_ns)
		log_info("pcapng: writing %s works again", w->name);
	w->backoff_ns = 0;
}

/* 0, or a positive errno with *done set to the bytes written before it. */
static int pwrite_ring(struct pcapng_writer *w, uint64_t pos, size_t len, size_t *done)
{
	struct iovec iov[2];

	for (*done = 0; *done < len;) {
		int cnt = ring_iov(w, pos + *done, len - *done, iov);
		ssize_t n = pwritev(w->fd, iov, cnt, (off_t)(w->file_off + *done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		*done += (size_t)n;
	}
	return 0;
}

static int pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Mode 0640 whatever the umask. fchmodat2() with AT_SYMLINK_NOFOLLOW (Linux
 * 6.6) cannot be redirected by a symlink swapped in at the name. Whatever it
 * did (ENOSYS on older kernels, or the name no longer leads to our file), the
 * descriptor decides: fchmod() it if its mode is still not right. */
static int set_mode(struct pcapng_writer *w, int fd)
{
	struct stat st;

	syscall(SYS_fchmodat2, w->dirfd, w->name, FILE_MODE, AT_SYMLINK_NOFOLLOW);
	if (fstat(fd, &st))
		return -errno;
	if ((st.st_mode & 07777) != FILE_MODE && fchmod(fd, FILE_MODE))
		return -errno;
	return 0;
}

/* Removes PATH only while it is still the file open at fd. */
static void unlink_ours(struct pcapng_writer *w, int fd)
{
	struct stat a, b;

	if (!fstat(fd, &a) && !fstatat(w->dirfd, w->name, &b, AT_SYMLINK_NOFOLLOW) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(w->dirfd, w->name, 0);
}

/* Unlinks the stale file at PATH unless a writer still has it open: every
 * writer holds an exclusive flock() on its current file, so a second
 * capture to the same PATH fails with -EBUSY instead of unlinking the
 * first one's file from under it (its packets would go to a nameless inode). */
static int unlink_stale(struct pcapng_writer *w)
{
	int fd = openat(w->dirfd, w->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
	} else if (unlinkat(w->dirfd, w->name, 0) && errno != ENOENT) {
		err = -errno;
	}
	close(fd);
	return err;
}

/* Creates PATH afresh: a stale regular file is unlinked (never truncated,
 * which would write through a hard link into another file), anything else
 * is refused. O_EXCL then guarantees a new inode of ours; if something
 * appears at the name in between, open fails with EEXIST. */
static int create_file(struct pcapng_writer *w)
{
	struct stat st;
	int fd, err;

	if (!fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (!S_ISREG(st.st_mode))
			return -EEXIST;
		if ((err = unlink_stale(w)))
			return err;
	} else if (errno != ENOENT) {
		return -errno;
	}
	fd = openat(w->dirfd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    FILE_MODE);
	if (fd < 0)
		return -errno;
	/* A new inode: nobody else can hold its lock. */
	err = flock(fd, LOCK_EX | LOCK_NB) ? -errno : set_mode(w, fd);
	if (!err)
		err = -pwrite_all(fd, w->hdr, w->hdr_len, 0);
	if (err) {
		unlink_ours(w, fd);
		close(fd);
		return err;
	}
	w->fd = fd;
	w->file_off = w->hdr_len;
	w->file_packets = 0;
	w->file_dirty = false;
	w->rotate_at = w->rotate_size;
	counter_add(&w->files, 1);
	return 0;
}

/* Ends the current file with an ISB (cut back on failure) and closes it. */
static void finish_file(struct pcapng_writer *w)
{
	uint8_t isb[ISB_LEN];
	int err;

	if (w->fd < 0)
		return;
	build_isb(w, isb);
	err = pwrite_all(w->fd, isb, sizeof(isb), w->file_off);
	if (err) {
		record_err(w, err);
		w->file_dirty = true;
	} else {
		w->file_off += sizeof(isb);
	}
	if (w->file_dirty && ftruncate(w->fd, (off_t)w->file_off))
		record_err(w, errno);
	if (close(w->fd))
		record_err(w, errno);
	w->fd = -1;
}

static const char *numbered(struct pcapng_writer *w, uint32_t i)
{
	if (!i)
		return w->name;
	sprintf(w->namebuf, "%s.%u", w->name, i);
	return w->namebuf;
}

/* PATH.(keep-2) -> PATH.(keep-1) ... PATH -> PATH.1; the oldest is replaced.
 * Only the last step must succeed for PATH to be free. */
static int shift_names(struct pcapng_writer *w)
{
	char to[PATH_MAX];

	for (uint32_t i = w->rotate_keep - 1; i >= 1; i--) {
		snprintf(to, sizeof(to), "%s", numbered(w, i));
		if (!renameat(w->dirfd, numbered(w, i - 1), w->dirfd, to))
			continue;
		if (i == 1)
			return -errno;
		if (errno != ENOENT)
			record_err(w, errno);
	}
	return 0;
}

static void rotate(struct pcapng_writer *w)
{
	int err = shift_names(w);

	if (err) {
		/* Keep writing the current file; try again one rotate_size later. */
		record_err(w, -err);
		log_warn("pcapng: cannot rotate %s: %s", w->name, strerror(-err));
		w->rotate_at = w->file_off + w->rotate_size;
		return;
	}
	finish_file(w);
	err = create_file(w);
	if (err)
		write_failed(w, "creating", -err);
}

/* ---- writer thread ---- */

struct chunk {
	uint64_t len, n, bytes;
	bool rotate; /* nothing fits in the current file: rotate first */
};

static void chunk_collect(struct pcapng_writer *w, struct chunk *c)
{
	uint64_t pos = atomic_load_explicit(&w->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&w->head, memory_order_acquire);
	struct epb_head h;

	memset(c, 0, sizeof(*c));
	for (; pos < head; pos += h.len) {
		ring_get(w, pos, &h, sizeof(h));
		if (w->rotate_size && (w->file_packets || c->n) &&
		    w->file_off + c->len + h.len + ISB_LEN > w->rotate_at) {
			c->rotate = !c->n;
			break;
		}
		if (c->len + h.len > CHUNK_BYTES)
			break;
		c->len += h.len;
		c->n++;
		c->bytes += h.caplen;
	}
}

static void chunk_release(struct pcapng_writer *w, uint64_t len)
{
	atomic_store_explicit(&w->tail, atomic_load_explicit(&w->tail, memory_order_relaxed) + len,
			      memory_order_release);
}

/* Of the chunk at tail, the complete blocks within its first `done` bytes. */
static void chunk_prefix(struct pcapng_writer *w, uint64_t done, struct chunk *c)
{
	uint64_t pos = atomic_load_explicit(&w->tail, memory_order_relaxed);
	struct epb_head h;

	memset(c, 0, sizeof(*c));
	for (;; pos += h.len) {
		ring_get(w, pos, &h, sizeof(h));
		if (c->len + h.len > done)
			break;
		c->len += h.len;
		c->n++;
		c->bytes += h.caplen;
	}
}

static void account(struct pcapng_writer *w, const struct chunk *c)
{
	w->file_off += c->len;
	w->file_packets += c->n;
	counter_add(&w->packets, c->n);
	counter_add(&w->bytes, c->bytes);
}

static void chunk_write(struct pcapng_writer *w, const struct chunk *c)
{
	struct chunk ok;
	size_t done;
	int err = pwrite_ring(w, atomic_load_explicit(&w->tail, memory_order_relaxed), c->len, &done);

	if (!err) {
		account(w, c);
		write_worked(w);
	} else {
		chunk_prefix(w, done, &ok);
		account(w, &ok);
		counter_add(&w->write_drops, c->n - ok.n);
		if (done > ok.len && ftruncate(w->fd, (off_t)w->file_off))
			w->file_dirty = true; /* overwritten by the next write, cut at close */
		write_failed(w, "writing", err);
	}
	chunk_release(w, c->len);
}

static void drop_queued(struct pcapng_writer *w)
{
	uint64_t pos = atomic_load_explicit(&w->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&w->head, memory_order_acquire), n = 0;
	struct epb_head h;

	for (; pos < head; pos += h.len, n++)
		ring_get(w, pos, &h, sizeof(h));
	counter_add(&w->write_drops, n);
	chunk_release(w, head - atomic_load_explicit(&w->tail, memory_order_relaxed));
}

/* One step: write up to a chunk, or rotate, or drop while backing off.
 * final: closing, so try once more even while backing off. */
static void drain_step(struct pcapng_writer *w, bool final)
{
	struct chunk c;
	int err;

	if (!final && w->backoff_ns && clock_ns(CLOCK_MONOTONIC) < w->backoff_until) {
		drop_queued(w);
		return;
	}
	if (w->fd < 0 && (err = create_file(w))) {
		write_failed(w, "creating", -err);
		drop_queued(w);
		return;
	}
	chunk_collect(w, &c);
	if (c.rotate)
		rotate(w);
	else
		chunk_write(w, &c);
}

static void writer_sleep(struct pcapng_writer *w, int64_t timeout_ns)
{
	uint32_t seq = atomic_load(&w->wake_seq);
	struct timespec ts = {
		.tv_sec = timeout_ns / 1000000000,
		.tv_nsec = timeout_ns % 1000000000,
	};

	/* seq_cst store, then the load of head: pairs with pcapng_write(). */
	atomic_store(&w->sleeping, 1);
	if (!atomic_load(&w->stop) && queued_bytes(w) < w->wake_level)
		syscall(SYS_futex, &w->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
	atomic_store(&w->sleeping, 0);
}

static void *writer_main(void *arg)
{
	struct pcapng_writer *w = arg;
	int64_t pending_since = 0;

	for (;;) {
		bool stop = atomic_load(&w->stop);
		uint64_t queued = queued_bytes(w);
		int64_t now = clock_ns(CLOCK_MONOTONIC);

		if (!queued) {
			if (stop)
				break;
			writer_sleep(w, FLUSH_NS);
			pending_since = 0;
			continue;
		}
		if (!pending_since)
			pending_since = now;
		if (stop || queued >= w->wake_level || now - pending_since >= FLUSH_NS) {
			drain_step(w, stop);
			pending_since = 0;
			continue;
		}
		writer_sleep(w, pending_since + FLUSH_NS - now);
	}
	finish_file(w);
	return NULL;
}

/* ---- open / close ---- */

static void writer_free(struct pcapng_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->dirfd >= 0)
		close(w->dirfd);
	if (w->ring)
		munmap(w->ring, w->cap);
	free(w->hdr);
	free(w->name);
	free(w->namebuf);
	free(w);
}

static int open_dir(struct pcapng_writer *w, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;

	if (slash && !slash[1])
		return -EISDIR;
	w->name = strdup(slash ? slash + 1 : path);
	w->namebuf = malloc(strlen(w->name) + 12);
	dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	if (!w->name || !w->namebuf || !dir) {
		free(dir);
		return -ENOMEM;
	}
	if (strlen(w->name) + 12 > PATH_MAX) {
		free(dir);
		return -ENAMETOOLONG;
	}
	w->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	return w->dirfd < 0 ? -errno : 0;
}

static int start_thread(struct pcapng_writer *w)
{
	return -thread_start_quiet(&w->thread, writer_main, w, "nfbox-pcapng");
}

int pcapng_open(const struct pcapng_opts *o, struct pcapng_writer **out)
{
	struct pcapng_writer *w;
	int err;

	if (!o || !o->path || !*o->path || !out || (o->rotate_size && !o->rotate_keep))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->dirfd = -1;
	w->snaplen = o->snaplen && o->snaplen < PCAPNG_MAX_SNAPLEN ? o->snaplen : PCAPNG_MAX_SNAPLEN;
	w->rotate_size = o->rotate_size;
	w->rotate_keep = o->rotate_keep;
	w->start_ts = (uint64_t)clock_ns(CLOCK_REALTIME);
	w->cap = o->queue_bytes ? o->queue_bytes : DEFAULT_QUEUE_BYTES;
	w->wake_level = w->cap / 2 < CHUNK_BYTES ? w->cap / 2 : CHUNK_BYTES;

	err = open_dir(w, o->path);
	if (!err)
		err = build_header(w, o->ifname);
	/* Touched now, not while capturing: faulting the queue in page by page
	 * during the first seconds of a capture overflowed the socket's ring
	 * (tests/bench/capture.sh). */
	if (!err) {
		w->ring = mmap(NULL, w->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (w->ring == MAP_FAILED) {
			w->ring = NULL;
			err = -ENOMEM;
		}
	}
	if (!err && o->keep_existing && w->rotate_keep > 1) {
		struct stat st;

		if (!fstatat(w->dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			err = shift_names(w);
	}
	if (!err)
		err = create_file(w);
	if (!err)
		err = start_thread(w);
	if (err) {
		if (w->fd >= 0)
			unlink_ours(w, w->fd);
		writer_free(w);
		return err;
	}
	*out = w;
	return 0;
}

void pcapng_stats(struct pcapng_writer *w, struct pcapng_stats *out)
{
	*out = (struct pcapng_stats){
		.packets = counter(&w->packets),
		.bytes = counter(&w->bytes),
		.queue_drops = counter(&w->queue_drops),
		.write_drops = counter(&w->write_drops),
		.files = counter(&w->files),
		.last_errno = atomic_load_explicit(&w->last_errno, memory_order_relaxed),
	};
}

int pcapng_close_stats(struct pcapng_writer *w, struct pcapng_stats *final)
{
	int err;

	if (!w)
		return 0;
	atomic_store(&w->stop, 1);
	writer_wake(w);
	pthread_join(w->thread, NULL);
	if (final)
		pcapng_stats(w, final);
	err = w->first_err;
	writer_free(w);
	return err;
}

int pcapng_close(struct pcapng_writer *w)
{
	return pcapng_close_stats(w, NULL);
}
