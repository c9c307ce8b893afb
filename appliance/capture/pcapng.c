/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pcapng writer: a single-producer, single-consumer queue of records between
 * the receive thread and a disk-writer thread.
 *
 * A record is one enhanced packet block (EPB). Its packet bytes are either
 * inline (copied once into the queue: pcapng_write) or referenced
 * (pcapng_write_ref: the record holds the EPB header and trailer and points
 * at the caller's buffers, the AF_XDP frames themselves, which the caller
 * keeps until the writer hands them back). Either way the writer gives the
 * bytes to pwritev() without copying them: the kernel's copy into the page
 * cache is the only one for a referenced packet. Records never wrap (a skip
 * record fills the end of the ring instead) and are 8-byte aligned;
 * positions grow without wrapping (64 bits) and index the ring modulo its
 * size.
 *
 * Three cursors: head (the producer has published up to here), tail (the
 * writer is done with everything before: written or dropped) and reclaimed
 * (the producer has handed the referenced buffers before it back to their
 * owner, through the release callback, and may reuse the space). Ring space
 * is reused only after reclaim, so queue_bytes bounds the queue's memory and
 * the caller's own pool bounds what is held by reference.
 *
 * The writer sleeps on a futex. It is woken only when a chunk's worth of
 * file bytes (1 MiB, or half the ring if smaller) is queued or on close;
 * otherwise it polls every FLUSH_NS and writes whatever has waited that
 * long, so at low rates packets reach the disk within about 2 * FLUSH_NS and
 * at high rates every write is a full chunk. After a chunk that held
 * references it signals release_fd, so a producer asleep in poll() takes
 * its buffers back.
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
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "capture/thread.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* the same number on every architecture's generic table */
#endif
#ifndef NFBOX_VERSION
#define NFBOX_VERSION "0.0.0"
#endif

#define FILE_MODE	    0640
#define DEFAULT_QUEUE_BYTES (64u << 20)
#define CHUNK_BYTES	    (1u << 20)
#define CHUNK_IOV	    1024	/* UIO_MAXIOV: most iovecs one pwritev() takes */
#define FLUSH_NS	    100000000ll /* 100 ms */
#define BACKOFF_MIN_NS	    100000000ll /* 100 ms */
#define BACKOFF_MAX_NS	    2000000000ll
#define IFNAME_MAX	    256

#define BT_SHB		  0x0A0D0D0Au
#define BT_IDB		  0x00000001u
#define BT_EPB		  0x00000006u
#define BT_ISB		  0x00000005u
#define BYTE_ORDER_MAGIC  0x1A2B3C4Du
#define LINKTYPE_ETHERNET 1
#define OPT_ENDOFOPT	  0
#define OPT_SHB_USERAPPL  4
#define OPT_IF_NAME	  2
#define OPT_IF_TSRESOL	  9
#define OPT_ISB_STARTTIME 2
#define OPT_ISB_ENDTIME	  3
#define OPT_ISB_IFRECV	  4
#define OPT_ISB_OSDROP	  7

/* EPB: 28 bytes of header, the data padded to 32 bits, the length again. */
struct epb_head {
	uint32_t type, len, ifid, ts_hi, ts_lo, caplen, origlen;
};
#define EPB_OVERHEAD (sizeof(struct epb_head) + 4)
/* ISB: type, len, ifid, ts (12 + 8), four 64-bit options (4 * 12), end (4), len (4). */
#define ISB_LEN 76u

/* A record: this head, the EPB header, then either the rest of the block
 * (inline: data, padding, length) or, for nref > 0, the trailer (up to 3
 * bytes of padding and the length, in tr[4 - pad .. 8)) and nref refs. */
struct rec {
	uint32_t len;  /* ring bytes of the whole record, a multiple of 8 */
	uint32_t nref; /* 0: inline; REC_SKIP: filler to the end of the ring */
	struct epb_head h;
	uint8_t tr[8];
} __attribute__((aligned(8)));
#define REC_SKIP	UINT32_MAX
#define REC_INLINE_HEAD offsetof(struct rec, tr)

struct ref {
	const void *base;
	uint64_t len;
	uint64_t cookie;
};

_Static_assert(sizeof(struct rec) % 8 == 0 && REC_INLINE_HEAD == 36, "record layout");

struct pcapng_writer {
	/* Set by pcapng_open, read-only afterwards. */
	int dirfd;
	char *name;    /* last component of PATH, opened relative to dirfd */
	char *namebuf; /* room for name + ".N" */
	uint8_t *hdr;  /* SHB + IDB, the start of every file */
	size_t hdr_len;
	uint32_t snaplen;
	uint64_t rotate_size;
	uint32_t rotate_keep;
	uint64_t start_ts; /* CLOCK_REALTIME ns at open: isb_starttime */
	void (*release)(uint64_t cookie, void *arg);
	void *release_arg;
	int release_fd; /* eventfd, -1 without a release callback */

	/* The queue. */
	uint8_t *ring;
	uint64_t cap;
	uint64_t wake_level;			 /* file bytes */
	_Atomic uint64_t head;			 /* written by the producer */
	_Atomic uint64_t tail;			 /* written by the writer */
	_Atomic uint64_t queued_file, done_file; /* file bytes published / written or dropped */
	uint64_t reclaimed;			 /* producer only */
	_Atomic uint32_t wake_seq;		 /* futex word */
	_Atomic int sleeping;
	_Atomic int stop;

	/* Writer thread only. */
	pthread_t thread;
	int fd;		   /* -1: no current file (creating it failed) */
	uint64_t file_off; /* end of the last complete block */
	uint64_t file_packets;
	uint64_t rotate_at;
	bool file_dirty; /* bytes past file_off that a failed ftruncate left */
	int64_t backoff_ns, backoff_until;
	int first_err;
	struct iovec iov[CHUNK_IOV];

	/* Counters: each has one writing thread (relaxed load + store). */
	_Atomic uint64_t accepted, queue_drops, by_ref;	     /* producer */
	_Atomic uint64_t packets, bytes, write_drops, files; /* writer */
	_Atomic int last_errno;
};

static inline void counter_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

static inline uint64_t counter(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static inline uint32_t pad4(uint32_t n)
{
	return (n + 3) & ~3u;
}

static inline uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~7ull;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- ring ---- */

static struct rec *rec_at(const struct pcapng_writer *w, uint64_t pos)
{
	return (struct rec *)(w->ring + pos % w->cap);
}

static struct ref *rec_refs(struct rec *r)
{
	return (struct ref *)(r + 1);
}

/* File bytes not yet written (writer's view). */
static uint64_t queued_bytes(struct pcapng_writer *w)
{
	return atomic_load_explicit(&w->queued_file, memory_order_acquire) -
	       atomic_load_explicit(&w->done_file, memory_order_relaxed);
}

static void writer_wake(struct pcapng_writer *w)
{
	atomic_fetch_add(&w->wake_seq, 1);
	syscall(SYS_futex, &w->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- producer ---- */

/* Hands back what the writer is done with: the space, and the referenced
 * buffers through the release callback. */
static void reclaim(struct pcapng_writer *w)
{
	uint64_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);

	while (w->reclaimed < tail) {
		struct rec *r = rec_at(w, w->reclaimed);

		if (r->nref != REC_SKIP && w->release)
			for (uint32_t i = 0; i < r->nref; i++)
				w->release(rec_refs(r)[i].cookie, w->release_arg);
		w->reclaimed += r->len;
	}
}

void pcapng_reclaim(struct pcapng_writer *w)
{
	reclaim(w);
}

void pcapng_release_ack(struct pcapng_writer *w)
{
	uint64_t n;

	if (w->release_fd >= 0 && read(w->release_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_debug("pcapng: release_fd: %s", strerror(errno));
}

int pcapng_release_fd(const struct pcapng_writer *w)
{
	return w->release_fd;
}

/* Room for a record of len bytes after head, contiguous: NULL if the queue
 * is full. *skip: bytes of filler to put first (the rest of the ring). */
static struct rec *reserve(struct pcapng_writer *w, uint64_t len, uint64_t *skip)
{
	uint64_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
	uint64_t off = head % w->cap;

	reclaim(w);
	*skip = w->cap - off < len ? w->cap - off : 0;
	if (w->cap - (head - w->reclaimed) < *skip + len)
		return NULL;
	if (*skip) { /* as little as 8 bytes: only the two words */
		rec_at(w, head)->len = (uint32_t)*skip;
		rec_at(w, head)->nref = REC_SKIP;
	}
	return rec_at(w, head + *skip);
}

static void publish(struct pcapng_writer *w, const struct rec *r, uint64_t skip)
{
	uint64_t head = atomic_load_explicit(&w->head, memory_order_relaxed) + skip + r->len;
	uint64_t queued = atomic_load_explicit(&w->queued_file, memory_order_relaxed) + r->h.len;

	atomic_store_explicit(&w->queued_file, queued, memory_order_relaxed);
	/* seq_cst store, then the load of sleeping: pairs with writer_sleep(). */
	atomic_store(&w->head, head);
	counter_add(&w->accepted, 1);
	if (atomic_load(&w->sleeping) && queued - atomic_load(&w->done_file) >= w->wake_level)
		writer_wake(w);
}

static int epb_init(struct pcapng_writer *w, struct epb_head *h, uint64_t ts_ns, const struct iovec *iov, int iovcnt,
		    uint32_t orig_len)
{
	size_t total = 0;
	uint32_t caplen;

	if (iovcnt < 0 || iovcnt > PCAPNG_MAX_REFS)
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	caplen = total < w->snaplen ? (uint32_t)total : w->snaplen;
	if (orig_len < caplen)
		return -EINVAL;
	*h = (struct epb_head){
		.type = BT_EPB,
		.len = (uint32_t)EPB_OVERHEAD + pad4(caplen),
		.ts_hi = (uint32_t)(ts_ns >> 32),
		.ts_lo = (uint32_t)ts_ns,
		.caplen = caplen,
		.origlen = orig_len,
	};
	return 0;
}

static int queue_full(struct pcapng_writer *w)
{
	counter_add(&w->queue_drops, 1);
	return -ENOBUFS;
}

int pcapng_write(struct pcapng_writer *w, uint64_t ts_ns, const struct iovec *iov, int iovcnt, uint32_t orig_len)
{
	struct epb_head h;
	uint64_t skip, len;
	uint32_t left;
	uint8_t *p;
	struct rec *r;
	int err = epb_init(w, &h, ts_ns, iov, iovcnt, orig_len);

	if (err)
		return err;
	len = pad8(offsetof(struct rec, h) + h.len);
	if (len > w->cap || !(r = reserve(w, len, &skip)))
		return queue_full(w);
	r->len = (uint32_t)len;
	r->nref = 0;
	r->h = h;
	p = r->tr;
	left = h.caplen;
	for (int i = 0; i < iovcnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;

		memcpy(p, iov[i].iov_base, n);
		p += n;
		left -= (uint32_t)n;
	}
	memset(p, 0, pad4(h.caplen) - h.caplen);
	p += pad4(h.caplen) - h.caplen;
	memcpy(p, &h.len, sizeof(h.len));
	publish(w, r, skip);
	return 0;
}

int pcapng_write_ref(struct pcapng_writer *w, uint64_t ts_ns, const struct iovec *iov, const uint64_t *cookies, int n,
		     uint32_t orig_len)
{
	struct epb_head h;
	uint64_t skip, len;
	uint32_t left;
	struct rec *r;
	int err = epb_init(w, &h, ts_ns, iov, n, orig_len);

	if (err)
		return err;
	len = sizeof(struct rec) + (uint64_t)n * sizeof(struct ref);
	if (len > w->cap || !(r = reserve(w, len, &skip)))
		return queue_full(w);
	r->len = (uint32_t)len;
	r->nref = (uint32_t)n;
	r->h = h;
	memset(r->tr, 0, 4);
	memcpy(r->tr + 4, &h.len, 4);
	left = h.caplen;
	for (int i = 0; i < n; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

		rec_refs(r)[i] = (struct ref){ .base = iov[i].iov_base, .len = k, .cookie = cookies[i] };
		left -= (uint32_t)k;
	}
	counter_add(&w->by_ref, 1);
	publish(w, r, skip);
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
		log_warn("pcapng: %s %s: %s; dropping packets until it works again", what, w->name, strerror(err));
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

	if (!fstat(fd, &a) && !fstatat(w->dirfd, w->name, &b, AT_SYMLINK_NOFOLLOW) && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
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
	fd = openat(w->dirfd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
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

/* Records from tail: ring bytes, file bytes, blocks, packet bytes, and the
 * iovecs that write them (w->iov). */
struct chunk {
	uint64_t ring_len, len, n, bytes;
	int iovcnt;
	bool refs;
	bool rotate; /* nothing fits in the current file: rotate first */
};

static void iov_add(struct pcapng_writer *w, struct chunk *c, const void *p, size_t len)
{
	w->iov[c->iovcnt++] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
}

/* The iovecs of one block. */
static void rec_iov(struct pcapng_writer *w, struct chunk *c, struct rec *r)
{
	uint32_t padn = pad4(r->h.caplen) - r->h.caplen;

	if (!r->nref) {
		iov_add(w, c, &r->h, r->h.len);
		return;
	}
	iov_add(w, c, &r->h, sizeof(r->h));
	for (uint32_t i = 0; i < r->nref; i++)
		if (rec_refs(r)[i].len)
			iov_add(w, c, rec_refs(r)[i].base, rec_refs(r)[i].len);
	iov_add(w, c, r->tr + 4 - padn, padn + 4);
}

/* Up to a chunk of blocks (bytes, iovecs) that fit the current file. With
 * want_iov false only counts, up to limit file bytes (a short write's
 * complete blocks). */
static void chunk_collect(struct pcapng_writer *w, struct chunk *c, bool want_iov, uint64_t limit)
{
	uint64_t pos = atomic_load_explicit(&w->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&w->head, memory_order_acquire);

	memset(c, 0, sizeof(*c));
	while (pos < head) {
		struct rec *r = rec_at(w, pos);
		uint64_t need = r->nref == REC_SKIP ? 0 : r->nref + 2;

		if (r->nref == REC_SKIP) {
			pos += r->len;
			c->ring_len += r->len;
			continue;
		}
		if (c->len + r->h.len > limit)
			break;
		if (want_iov) {
			if (w->rotate_size && (w->file_packets || c->n) &&
			    w->file_off + c->len + r->h.len + ISB_LEN > w->rotate_at) {
				c->rotate = !c->n;
				break;
			}
			if (c->n && (c->len + r->h.len > CHUNK_BYTES || c->iovcnt + need > CHUNK_IOV))
				break;
			rec_iov(w, c, r);
		}
		c->refs |= r->nref != 0;
		c->ring_len += r->len;
		c->len += r->h.len;
		c->n++;
		c->bytes += r->h.caplen;
		pos += r->len;
	}
}

/* The writer is done with ring_len bytes at tail (file bytes len). */
static void chunk_release(struct pcapng_writer *w, const struct chunk *c)
{
	uint64_t one = 1;

	atomic_store_explicit(&w->done_file, atomic_load_explicit(&w->done_file, memory_order_relaxed) + c->len,
			      memory_order_relaxed);
	atomic_store_explicit(&w->tail, atomic_load_explicit(&w->tail, memory_order_relaxed) + c->ring_len,
			      memory_order_release);
	if (c->refs && w->release_fd >= 0 && write(w->release_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		record_err(w, errno);
}

static void account(struct pcapng_writer *w, const struct chunk *c)
{
	w->file_off += c->len;
	w->file_packets += c->n;
	counter_add(&w->packets, c->n);
	counter_add(&w->bytes, c->bytes);
}

/* 0, or a positive errno with *done set to the bytes written before it;
 * advances iov over what was written. */
static int pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off, size_t *done)
{
	for (*done = 0; cnt > 0;) {
		ssize_t n = pwritev(fd, iov, cnt, (off_t)(off + *done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		*done += (size_t)n;
		for (; cnt && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= (ssize_t)iov->iov_len;
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void chunk_write(struct pcapng_writer *w, const struct chunk *c)
{
	struct chunk ok;
	size_t done;
	int err = pwritev_all(w->fd, w->iov, c->iovcnt, w->file_off, &done);

	if (!err) {
		account(w, c);
		write_worked(w);
	} else {
		chunk_collect(w, &ok, false, done);
		account(w, &ok);
		counter_add(&w->write_drops, c->n - ok.n);
		if (done > ok.len && ftruncate(w->fd, (off_t)w->file_off))
			w->file_dirty = true; /* overwritten by the next write, cut at close */
		write_failed(w, "writing", err);
	}
	chunk_release(w, c);
}

static void drop_queued(struct pcapng_writer *w)
{
	struct chunk c;

	chunk_collect(w, &c, false, UINT64_MAX);
	counter_add(&w->write_drops, c.n);
	chunk_release(w, &c);
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
	chunk_collect(w, &c, true, UINT64_MAX);
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
	if (w->release_fd >= 0)
		close(w->release_fd);
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
	w->release_fd = -1;
	w->snaplen = o->snaplen && o->snaplen < PCAPNG_MAX_SNAPLEN ? o->snaplen : PCAPNG_MAX_SNAPLEN;
	w->rotate_size = o->rotate_size;
	w->rotate_keep = o->rotate_keep;
	w->start_ts = (uint64_t)clock_ns(CLOCK_REALTIME);
	/* Whole pages: records are 8-byte aligned and never wrap. */
	w->cap = ((o->queue_bytes ? o->queue_bytes : DEFAULT_QUEUE_BYTES) + 4095) & ~(uint64_t)4095;
	w->wake_level = w->cap / 2 < CHUNK_BYTES ? w->cap / 2 : CHUNK_BYTES;
	w->release = o->release;
	w->release_arg = o->release_arg;

	err = open_dir(w, o->path);
	if (!err && w->release && (w->release_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		err = -errno;
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
		.by_ref = counter(&w->by_ref),
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
	reclaim(w); /* every referenced buffer goes back before close returns */
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
