/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pcapng writer (appliance/capture/pcapng.c) without privileges: packets given
 * as iovecs in random pieces come back from the file byte for byte, with
 * their lengths and timestamps; the block structure is checked by a reader
 * of our own (every block's two length fields, SHB/IDB options, ISB at the
 * end); snaplen truncation; rotation (count, sizes, order of packets across
 * files); a full queue is counted; packets given by reference are written
 * from the caller's buffers, which come back once each and only after
 * being written; unsafe paths are refused; an earlier file is kept when
 * asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/check.h"
#include "capture/pcapng.h"

#define MAXPKT 9100

struct pkt {
	uint32_t caplen, origlen;
	uint64_t ts;
	uint8_t *data;
};

struct file {
	uint32_t snaplen;
	char ifname[64];
	uint8_t tsresol;
	bool has_isb;
	struct pkt *v;
	size_t n;
};

static char dir[] = "/tmp/nfbox-test-pcapng.XXXXXX";

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static uint8_t *pattern(uint32_t seq, uint32_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
	return p;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Parses a whole file; returns 0, or -1 with the problem printed as a
 * failure of the current case. */
static int parse(const char *path, struct file *f)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long size;
	size_t off = 0;

	memset(f, 0, sizeof(*f));
	if (!fp) {
		check_fail_at(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	rewind(fp);
	if (size < 0 || size > (1l << 30)) {
		fclose(fp);
		check_fail_at(__FILE__, __LINE__, "%s: cannot size it", path);
		return -1;
	}
	buf = malloc((size_t)size + 1);
	if (fread(buf, 1, (size_t)size, fp) != (size_t)size) {
		fclose(fp);
		free(buf);
		check_fail_at(__FILE__, __LINE__, "%s: short read", path);
		return -1;
	}
	fclose(fp);
	f->v = calloc((size_t)size / 32 + 1, sizeof(*f->v));
	while (off < (size_t)size) {
		uint32_t type, len;

		if (off + 12 > (size_t)size)
			goto bad;
		type = rd32(buf + off);
		len = rd32(buf + off + 4);
		if (len < 12 || len % 4 || off + len > (size_t)size || rd32(buf + off + len - 4) != len)
			goto bad;
		if (off == 0 && (type != 0x0A0D0D0A || rd32(buf + 8) != 0x1A2B3C4D))
			goto bad;
		if (type == 1) { /* IDB: linktype, snaplen, options */
			uint8_t *o = buf + off + 16, *end = buf + off + len - 4;

			if (rd32(buf + off + 8) != 1) /* LINKTYPE_ETHERNET, reserved 0 */
				goto bad;
			f->snaplen = rd32(buf + off + 12);
			while (o + 4 <= end) {
				uint16_t code, olen;

				memcpy(&code, o, 2);
				memcpy(&olen, o + 2, 2);
				if (code == 0)
					break;
				if (code == 2 && olen < sizeof(f->ifname))
					memcpy(f->ifname, o + 4, olen);
				if (code == 9 && olen == 1)
					f->tsresol = o[4];
				o += 4 + ((olen + 3u) & ~3u);
			}
		} else if (type == 6) { /* EPB */
			struct pkt *p = &f->v[f->n++];

			if (rd32(buf + off + 8) != 0)
				goto bad;
			p->ts = (uint64_t)rd32(buf + off + 12) << 32 | rd32(buf + off + 16);
			p->caplen = rd32(buf + off + 20);
			p->origlen = rd32(buf + off + 24);
			if (28 + ((p->caplen + 3u) & ~3u) + 4 != len)
				goto bad;
			p->data = malloc(p->caplen + 1);
			memcpy(p->data, buf + off + 28, p->caplen);
		} else if (type == 5) {
			f->has_isb = true;
		}
		off += len;
	}
	free(buf);
	return 0;
bad:
	free(buf);
	check_fail_at(__FILE__, __LINE__, "%s: malformed pcapng at offset %zu", path, off);
	return -1;
}

static void file_free(struct file *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].data);
	free(f->v);
}

static char *path_of(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

/* Writes packet seq (len bytes) in 1..4 random pieces. */
static int write_pkt(struct pcapng_writer *w, uint32_t seq, uint32_t len, uint64_t ts)
{
	uint8_t *d = pattern(seq, len);
	struct iovec iov[4];
	int n = 1 + (int)(rnd() % 4), r;
	uint32_t off = 0;

	for (int i = 0; i < n; i++) {
		uint32_t left = len - off, take = i == n - 1 ? left : (left ? rnd() % (left + 1) : 0);

		iov[i].iov_base = d + off;
		iov[i].iov_len = take;
		off += take;
	}
	r = pcapng_write(w, ts, iov, n, len);
	free(d);
	return r;
}

static void test_roundtrip(void)
{
	struct pcapng_opts o = { .path = path_of("a.pcapng"), .ifname = "cap0", .snaplen = 65535 };
	uint32_t sizes[300];
	struct pcapng_writer *w;
	struct pcapng_stats st;
	struct file f;
	size_t n = 0;

	check_begin("roundtrip-iovec-pieces");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	for (uint32_t i = 0; i < 300; i++) {
		sizes[n] = i < 10 ? (uint32_t[]){ 0, 1, 2, 3, 4, 5, 3840, 3841, 7680, 9014 }[i]
				  : 14 + rnd() % (MAXPKT - 14);
		CHECK_EQ_INT(write_pkt(w, i, sizes[n], 1000000000ull * 1700000000 + i), 0);
		n++;
	}
	pcapng_stats(w, &st);
	CHECK_EQ_INT(pcapng_close(w), 0);
	if (parse(o.path, &f) == 0) {
		CHECK_EQ_INT(f.n, n);
		CHECK_EQ_INT(f.snaplen, 65535);
		CHECK_EQ_INT(f.tsresol, 9);
		CHECK(!strcmp(f.ifname, "cap0"));
		CHECK(f.has_isb);
		for (size_t i = 0; i < f.n && i < n; i++) {
			uint8_t *want = pattern((uint32_t)i, sizes[i]);

			if (f.v[i].caplen != sizes[i] || f.v[i].origlen != sizes[i] ||
			    f.v[i].ts != 1000000000ull * 1700000000 + i || memcmp(f.v[i].data, want, sizes[i]))
				check_fail_at(__FILE__, __LINE__, "packet %zu differs (caplen %u, want %u)", i,
					      f.v[i].caplen, sizes[i]);
			free(want);
		}
	}
	file_free(&f);
	check_end();
}

static void test_snaplen(void)
{
	struct pcapng_opts o = { .path = path_of("s.pcapng"), .snaplen = 100 };
	struct pcapng_writer *w;
	struct iovec iov[2];
	uint8_t *d = pattern(7, 500);
	struct file f;

	check_begin("snaplen-truncates-keeps-orig-len");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	iov[0] = (struct iovec){ d, 60 };
	iov[1] = (struct iovec){ d + 60, 440 };
	CHECK_EQ_INT(pcapng_write(w, 1, iov, 2, 500), 0);
	CHECK_EQ_INT(pcapng_write(w, 2, iov, 1, 60), 0); /* shorter than snaplen: whole */
	CHECK_EQ_INT(pcapng_close(w), 0);
	if (parse(o.path, &f) == 0) {
		CHECK_EQ_INT(f.snaplen, 100);
		CHECK_EQ_INT(f.n, 2);
		if (f.n == 2) {
			CHECK_EQ_INT(f.v[0].caplen, 100);
			CHECK_EQ_INT(f.v[0].origlen, 500);
			CHECK(!memcmp(f.v[0].data, d, 100));
			CHECK_EQ_INT(f.v[1].caplen, 60);
			CHECK_EQ_INT(f.v[1].origlen, 60);
		}
	}
	file_free(&f);
	free(d);
	check_end();
}

static void test_bad_origlen(void)
{
	struct pcapng_opts o = { .path = path_of("e.pcapng") };
	struct pcapng_writer *w;
	uint8_t d[64] = { 0 };
	struct iovec iov = { d, sizeof(d) };

	check_begin("orig-len-below-captured-rejected");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	CHECK_EQ_INT(pcapng_write(w, 1, &iov, 1, 63), -EINVAL);
	CHECK_EQ_INT(pcapng_write(w, 1, &iov, 1, 64), 0);
	CHECK_EQ_INT(pcapng_close(w), 0);
	check_end();
}

static void test_rotation(void)
{
	struct pcapng_opts o = { .path = path_of("r.pcapng"), .ifname = "r0", .rotate_size = 65536, .rotate_keep = 3 };
	struct pcapng_writer *w;
	const uint32_t total = 200, len = 3000; /* 600 kB: about 10 files' worth */
	int64_t expect = -1;

	check_begin("rotation-keeps-newest-files-complete");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	for (uint32_t i = 0; i < total; i++) {
		uint8_t *d = pattern(i, len);
		struct iovec iov = { d, len };

		/* Never faster than the writer: rotation, not queue drops, is tested. */
		while (pcapng_write(w, i, &iov, 1, len) == -ENOBUFS)
			usleep(1000);
		free(d);
	}
	CHECK_EQ_INT(pcapng_close(w), 0);
	/* Oldest first: r.pcapng.2, r.pcapng.1, r.pcapng; timestamps are the
	 * sequence numbers and must run on without a gap and end at total-1. */
	for (int k = 2; k >= 0; k--) {
		char name[64];
		struct stat sb;
		struct file f;

		snprintf(name, sizeof(name), k ? "r.pcapng.%d" : "r.pcapng", k);
		if (stat(path_of(name), &sb) < 0) {
			check_fail_at(__FILE__, __LINE__, "%s missing", name);
			continue;
		}
		if (sb.st_size > 65536)
			check_fail_at(__FILE__, __LINE__, "%s is %lld bytes, over the rotate size", name,
				      (long long)sb.st_size);
		if (parse(path_of(name), &f) == 0) {
			CHECK(f.n > 0);
			CHECK(f.has_isb);
			for (size_t i = 0; i < f.n; i++) {
				uint8_t *want = pattern((uint32_t)f.v[i].ts, len);

				if (expect >= 0 && (int64_t)f.v[i].ts != expect)
					check_fail_at(__FILE__, __LINE__, "%s: packet %llu after %lld", name,
						      (unsigned long long)f.v[i].ts, (long long)expect - 1);
				if (f.v[i].caplen != len || memcmp(f.v[i].data, want, len))
					check_fail_at(__FILE__, __LINE__, "%s: packet %llu differs", name,
						      (unsigned long long)f.v[i].ts);
				expect = (int64_t)f.v[i].ts + 1;
				free(want);
			}
		}
		file_free(&f);
	}
	CHECK_EQ_INT(expect, total);
	CHECK(access(path_of("r.pcapng.3"), F_OK) < 0);
	check_end();
}

static void test_queue_full(void)
{
	struct pcapng_opts o = { .path = path_of("q.pcapng"), .queue_bytes = 65536 };
	struct pcapng_writer *w;
	struct pcapng_stats st;
	uint8_t *d = pattern(1, 9000);
	struct iovec iov = { d, 9000 };
	uint64_t ok = 0, refused = 0;
	struct file f;

	check_begin("full-queue-counted-never-blocks");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	for (int i = 0; i < 20000; i++) {
		int r = pcapng_write(w, (uint64_t)i, &iov, 1, 9000);

		if (r == 0)
			ok++;
		else if (r == -ENOBUFS)
			refused++;
		else
			check_fail_at(__FILE__, __LINE__, "pcapng_write: %d", r);
	}
	pcapng_stats(w, &st);
	CHECK(refused > 0);
	CHECK_EQ_INT(st.queue_drops, refused);
	CHECK_EQ_INT(pcapng_close(w), 0);
	if (parse(o.path, &f) == 0)
		CHECK_EQ_INT(f.n, ok);
	file_free(&f);
	free(d);
	check_end();
}

/* By reference: a pool of buffers lent to the writer, each piece's cookie
 * released exactly once, and a buffer is poisoned the moment its last piece
 * comes back, so a write after release would show in the file. A small
 * queue makes records wrap (skip records) every few packets; every fifth
 * packet is copied instead, to check both kinds keep their order. */
#define POOL 48
static struct {
	uint8_t data[MAXPKT];
	int out; /* pieces the writer holds */
} pool[POOL];
static uint64_t released, bad_release;

static void pool_release(uint64_t cookie, void *arg)
{
	uint32_t b = (uint32_t)(cookie >> 8);

	(void)arg;
	released++;
	if (b >= POOL || pool[b].out <= 0) {
		bad_release++;
		return;
	}
	if (--pool[b].out == 0)
		memset(pool[b].data, 0xEE, sizeof(pool[b].data));
}

static int pool_take(struct pcapng_writer *w)
{
	for (int tries = 0; tries < 20000; tries++) {
		for (int b = 0; b < POOL; b++)
			if (!pool[b].out)
				return b;
		usleep(100);
		pcapng_reclaim(w);
	}
	return -1;
}

static void test_by_reference(void)
{
	struct pcapng_opts o = {
		.path = path_of("ref.pcapng"), .snaplen = 5000, .queue_bytes = 32768, .release = pool_release
	};
	enum {
		N = 3000
	};
	static uint32_t sizes[N];
	uint64_t lent = 0, refs = 0;
	struct pcapng_writer *w;
	struct pcapng_stats st;
	struct file f;

	check_begin("by-reference-released-once-after-written");
	released = bad_release = 0;
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	for (uint32_t i = 0; i < N; i++) {
		int b = pool_take(w), n = 1 + (int)(rnd() % 4), r;
		uint64_t cookies[4];
		struct iovec iov[4];
		uint32_t off = 0;
		uint8_t *d;

		if (b < 0) {
			check_fail_at(__FILE__, __LINE__, "no buffer came back");
			break;
		}
		sizes[i] = 14 + rnd() % (MAXPKT - 14);
		d = pattern(i, sizes[i]);
		memcpy(pool[b].data, d, sizes[i]);
		free(d);
		for (int k = 0; k < n; k++) {
			uint32_t left = sizes[i] - off, take = k == n - 1 ? left : rnd() % (left + 1);

			iov[k] = (struct iovec){ pool[b].data + off, take };
			cookies[k] = (uint64_t)b << 8 | (uint64_t)k;
			off += take;
		}
		do {
			if (i % 5 == 4) {
				r = pcapng_write(w, i, iov, n, sizes[i]);
			} else {
				pool[b].out = n;
				r = pcapng_write_ref(w, i, iov, cookies, n, sizes[i]);
				if (r)
					pool[b].out = 0;
			}
			if (r == -ENOBUFS) {
				usleep(200);
				pcapng_reclaim(w);
			}
		} while (r == -ENOBUFS);
		CHECK_EQ_INT(r, 0);
		if (i % 5 != 4) {
			lent += (uint64_t)n;
			refs++;
		}
	}
	pcapng_stats(w, &st);
	CHECK_EQ_INT(st.by_ref, refs);
	CHECK_EQ_INT(pcapng_close(w), 0);
	CHECK_EQ_INT(released, lent);
	CHECK_EQ_INT(bad_release, 0);
	for (int b = 0; b < POOL; b++)
		CHECK_EQ_INT(pool[b].out, 0);
	if (parse(o.path, &f) == 0) {
		CHECK_EQ_INT(f.n, N);
		for (size_t i = 0; i < f.n && i < N; i++) {
			uint32_t cap = sizes[i] < 5000 ? sizes[i] : 5000;
			uint8_t *want = pattern((uint32_t)i, sizes[i]);

			if (f.v[i].caplen != cap || f.v[i].origlen != sizes[i] || f.v[i].ts != i ||
			    memcmp(f.v[i].data, want, cap))
				check_fail_at(__FILE__, __LINE__, "packet %zu differs (caplen %u, want %u)", i,
					      f.v[i].caplen, cap);
			free(want);
		}
	}
	file_free(&f);
	check_end();
}

/* A producer asleep in poll() learns that its buffers are free. */
static void test_release_fd(void)
{
	struct pcapng_opts o = { .path = path_of("rfd.pcapng"), .release = pool_release };
	struct pcapng_writer *w;
	struct iovec iov = { pool[0].data, 100 };
	uint64_t cookie = 0;
	struct pollfd pfd;

	check_begin("release-fd-wakes-the-producer");
	released = bad_release = 0;
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	pfd = (struct pollfd){ .fd = pcapng_release_fd(w), .events = POLLIN };
	CHECK(pfd.fd >= 0);
	pool[0].out = 1;
	CHECK_EQ_INT(pcapng_write_ref(w, 1, &iov, &cookie, 1, 100), 0);
	CHECK_EQ_INT(poll(&pfd, 1, 3000), 1);
	CHECK_EQ_INT(released, 0); /* only on the producer's thread */
	pcapng_release_ack(w);
	CHECK_EQ_INT(poll(&pfd, 1, 0), 0); /* cleared */
	pcapng_reclaim(w);
	CHECK_EQ_INT(released, 1);
	CHECK_EQ_INT(pcapng_close(w), 0);
	CHECK_EQ_INT(bad_release, 0);
	check_end();
}

static void test_unsafe_paths(void)
{
	struct pcapng_writer *w = NULL;
	struct pcapng_opts o = { 0 };
	struct stat sb;
	char target[256];
	int fd;

	check_begin("symlink-refused-target-untouched");
	snprintf(target, sizeof(target), "%s", path_of("target"));
	fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
	close(fd);
	CHECK_EQ_INT(symlink(target, path_of("link.pcapng")), 0);
	o.path = path_of("link.pcapng");
	CHECK_EQ_INT(pcapng_open(&o, &w), -ELOOP);
	CHECK(stat(target, &sb) == 0 && sb.st_size == 4);
	check_end();

	check_begin("directory-refused");
	o.path = dir;
	CHECK_EQ_INT(pcapng_open(&o, &w), -EISDIR);
	check_end();

	check_begin("mode-0640-whatever-the-umask");
	umask(0);
	o.path = path_of("m.pcapng");
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	CHECK_EQ_INT(pcapng_close(w), 0);
	CHECK(stat(o.path, &sb) == 0 && (sb.st_mode & 07777) == 0640);
	umask(022);
	check_end();

	check_begin("keep-existing-shifts-earlier-file");
	o.path = path_of("k.pcapng");
	o.rotate_keep = 3;
	o.keep_existing = true;
	fd = open(o.path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "old!", 4) == 4);
	close(fd);
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	CHECK_EQ_INT(pcapng_close(w), 0);
	CHECK(stat(path_of("k.pcapng.1"), &sb) == 0 && sb.st_size == 4);
	o.keep_existing = false; /* replaced, not shifted */
	CHECK_EQ_INT(pcapng_open(&o, &w), 0);
	CHECK_EQ_INT(pcapng_close(w), 0);
	CHECK(stat(path_of("k.pcapng.2"), &sb) < 0);
	check_end();
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_roundtrip();
	test_snaplen();
	test_bad_origlen();
	test_rotation();
	test_queue_full();
	test_by_reference();
	test_release_fd();
	test_unsafe_paths();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	CHECK_EXIT();
}
