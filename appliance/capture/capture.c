/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Capture engine (capture.h): XDP filter + AF_XDP multi-buffer sockets +
 * the pcapng writer.
 *
 * Frames and their owners. Every queue has its own UMEM of frames_per_queue
 * 4096-byte frames; each frame is at any time in exactly one place: the
 * free stack, the fill ring, the kernel (being filled, or described on the
 * rx ring), the pending packet, or the writer. A packet is a run of rx
 * descriptors ending at one without XDP_PKT_CONTD; a batch may end inside
 * that run, so the pending packet (frame addresses and an iovec over them)
 * lives in the queue and continues with the next batch. When the last
 * descriptor arrives the packet goes to the writer by reference
 * (pcapng_write_ref): its frames are written to the file from the UMEM
 * itself, and come back to the free stack through the writer's release
 * callback once written. While the writer holds more than a quarter of a
 * queue's frames (a slow disk), packets are copied into the writer's queue
 * instead (pcapng_write) and their frames freed at once, so the fill ring
 * never runs dry because of the disk. The fill ring is refilled from the
 * stack once per batch.
 *
 * One receive thread polls every queue's socket: the writer takes exactly one
 * producer, and one thread keeps --count exact.
 */
#include "capture/capture.h"

#include <errno.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/netdev.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "base/log.h"
#include "capture/mirror.h"
#include "netlink/netdev.h"
#include "bpf/nfbox_capture.h"
#include "bpf/nfbox_capture.skel.h"
#include "bpf/nfbox_early.h"
#include "lib/xdpchain.h"
#include "capture/pcapng.h"
#include "capture/thread.h"

#define FRAME_SIZE 4096u
/* 16,384 frames (64 MiB) per queue: half in the fill ring, about 45 ms of
 * jumbo frames at 180k/s; a shorter stall of the receive thread (another
 * busy process, a VM's steal time) loses nothing. Fewer per queue when
 * there are more than four queues. */
#define DEFAULT_FRAMES 16384u
#define MIN_FRAMES     512u
#define FRAME_BUDGET   (1u << 16) /* frames over all queues before frames_per_queue shrinks */
#define MAX_QUEUES     1024u
#define RX_BATCH       64u
#define RX_NAP_BELOW   16u    /* descriptors after a wakeup below which the thread naps */
#define RX_NAP_NS      150000 /* 150 us */
/* Descriptors kept per packet. The kernel splits a frame into at most
 * MAX_SKB_FRAGS + 1 buffers (17 + 1 here); zero-copy drivers into at most
 * zc_max_segs. A longer run is dropped (counted as oversize), never leaked. */
#define MAX_PKT_DESCS	    64u
#define DEFAULT_QUEUE_BYTES (64u << 20) /* ~7,000 jumbo frames of disk stall */
#define BIND_RETRIES	    10
#define RX_CHECK_MS	    500 /* idle receive thread: how often it looks for a socket error */

struct queue_counters {
	uint64_t packets, bytes, descs, multibuf, oversize;
};

struct capture_queue {
	uint32_t id;
	void *area;
	size_t area_len;
	struct xsk_umem *umem;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
	struct xsk_socket *xsk;
	int fd;
	uint64_t *free_frames; /* stack of frame base addresses */
	uint32_t nfree;
	uint32_t held; /* frames the writer has by reference */
	/* The packet being assembled (descriptors so far). */
	uint64_t pend_addr[MAX_PKT_DESCS];
	struct iovec pend_iov[MAX_PKT_DESCS];
	uint32_t npend;
	uint32_t pend_descs; /* all descriptors of it, kept or not */
	uint64_t pend_len;
	struct queue_counters cnt; /* written by the receive thread only */
};

/* Chained after nfbox's early drop (lib/xdpchain.h), instead of a link. */
struct chain {
	bool on;
	uint32_t early_id; /* the program it runs after */
	uint32_t slot;	   /* in that program's nfb_early_next */
	int chain_fd, next_fd;
};

struct capture {
	struct capture_info info;
	struct nfbox_capture_bpf *skel;
	int link_fd;
	struct chain chain;
	int xsks_fd;
	struct pcapng_writer *writer;
	struct capture_queue *q;
	uint32_t nq;
	struct mirror *mirror; /* mirror-from: the pair and its tcx programs */
	uint64_t max_packets;
	uint64_t packets; /* receive thread: packets so far, for max_packets */
	int stop_fd;	  /* eventfd: capture_stop -> thread */
	int done_fd;	  /* eventfd: thread -> caller, ended by itself */
	pthread_t thread;
	bool thread_started;
	bool stopping; /* receive thread: stop reading (limit reached) */
	int last_write_err;
	int end_error; /* atomic */
	bool done;     /* atomic */
};

/* ---- small helpers ---- */

static uint64_t now_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cnt_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static uint64_t cnt_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

const char *capture_xdp_mode_name(enum capture_xdp_mode m)
{
	switch (m) {
	case CAPTURE_XDP_NATIVE:
		return "native";
	case CAPTURE_XDP_SKB:
		return "skb";
	default:
		return "auto";
	}
}

/* ---- the interface: rx queues and XDP features ---- */

static uint32_t queues_from_sysfs(const char *ifname)
{
	char path[128];
	uint32_t n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-%u", ifname, n);
		if (access(path, F_OK) < 0)
			return n;
		n++;
	}
}

/* Rx queues: ethtool's channels (rx + combined), else sysfs, else 1. */
static uint32_t count_rx_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr = { 0 };
	uint32_t n = 0;
	int fd;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		n = ch.rx_count + ch.combined_count;
	if (fd >= 0)
		close(fd);
	if (!n)
		n = queues_from_sysfs(ifname);
	return n ? n : 1;
}

/* ---- the XDP program ---- */

static void set_port_bits(struct nfb_cap_portset *sets, const struct port_match *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		const struct port_range *pr = &m->v[i];
		int pc = pr->proto == IPPROTO_TCP    ? NFB_CAP_PC_TCP
			 : pr->proto == IPPROTO_UDP  ? NFB_CAP_PC_UDP
			 : pr->proto == IPPROTO_SCTP ? NFB_CAP_PC_SCTP
						     : NFB_CAP_PC_UDPLITE;

		for (uint32_t p = pr->lo; p <= pr->hi; p++)
			sets[pc].bits[p / 64] |= 1ull << (p % 64);
	}
}

static int fill_ports(struct capture *c, const struct port_match *m)
{
	struct nfb_cap_portset *sets = calloc(NFB_CAP_PC_MAX, sizeof(*sets));
	int fd = bpf_map__fd(c->skel->maps.nfb_cap_ports), r = 0;

	if (!sets)
		return -ENOMEM;
	set_port_bits(sets, m);
	for (uint32_t pc = 0; pc < NFB_CAP_PC_MAX && !r; pc++)
		if (bpf_map_update_elem(fd, &pc, &sets[pc], BPF_ANY) < 0)
			r = -errno;
	free(sets);
	return r;
}

static uint32_t count_family(const struct addr_match *m, uint8_t fam)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->n; i++)
		n += m->v[i].family == fam;
	return n;
}

static int fill_prefixes(const struct addr_match *m, struct bpf_map *t4, struct bpf_map *t6)
{
	uint8_t one = 1;

	for (uint32_t i = 0; i < m->n; i++) {
		const struct prefix *p = &m->v[i];
		struct nfb_cap_lpm4_key k4 = { .plen = p->plen };
		struct nfb_cap_lpm6_key k6 = { .plen = p->plen };
		int r;

		if (p->family == POLICY_FAM_IPV4) {
			memcpy(k4.addr, p->addr, 4);
			r = bpf_map_update_elem(bpf_map__fd(t4), &k4, &one, BPF_ANY);
		} else {
			memcpy(k6.addr, p->addr, 16);
			r = bpf_map_update_elem(bpf_map__fd(t6), &k6, &one, BPF_ANY);
		}
		if (r < 0)
			return -errno;
	}
	return 0;
}

static struct nfb_cap_cfg filter_cfg(const struct capture_match *m, bool mirror_port)
{
	struct nfb_cap_cfg cfg = { .min_len = m->min_len, .max_len = m->max_len };

	if (mirror_port)
		cfg.flags |= NFB_CAP_F_DROP_REST;
	if (m->proto >= 0) {
		cfg.flags |= NFB_CAP_F_PROTO;
		cfg.proto = (uint32_t)m->proto;
	}
	if (!m->from.any)
		cfg.flags |= NFB_CAP_F_SRC;
	if (!m->to.any)
		cfg.flags |= NFB_CAP_F_DST;
	if (!m->service.any)
		cfg.flags |= NFB_CAP_F_PORTS;
	if (m->non_ip)
		cfg.flags |= NFB_CAP_F_NON_IP;
	return cfg;
}

static int size_map(struct bpf_map *m, uint32_t n)
{
	return bpf_map__set_max_entries(m, n ? n : 1);
}

static int load_program(struct capture *c, const struct capture_match *m, struct diags *d)
{
	struct nfbox_capture_bpf *s = nfbox_capture_bpf__open();
	int r;

	if (!s)
		return diag_errno(d, -errno, "capture: cannot open the XDP capture program");
	c->skel = s;
	s->rodata->nfb_cap_cfg = filter_cfg(m, c->mirror != NULL);
	if ((r = size_map(s->maps.nfb_cap_xsks, c->nq)) ||
	    (r = size_map(s->maps.nfb_cap_src4, count_family(&m->from, POLICY_FAM_IPV4))) ||
	    (r = size_map(s->maps.nfb_cap_src6, count_family(&m->from, POLICY_FAM_IPV6))) ||
	    (r = size_map(s->maps.nfb_cap_dst4, count_family(&m->to, POLICY_FAM_IPV4))) ||
	    (r = size_map(s->maps.nfb_cap_dst6, count_family(&m->to, POLICY_FAM_IPV6))))
		return diag_errno(d, r, "capture: cannot size the filter maps");
	if ((r = nfbox_capture_bpf__load(s)) < 0)
		return diag_errno(d, r, "capture: cannot load the XDP capture program");
	if ((r = fill_prefixes(&m->from, s->maps.nfb_cap_src4, s->maps.nfb_cap_src6)) ||
	    (r = fill_prefixes(&m->to, s->maps.nfb_cap_dst4, s->maps.nfb_cap_dst6)) ||
	    (!m->service.any && (r = fill_ports(c, &m->service))))
		return diag_errno(d, r, "capture: cannot fill the filter maps");
	c->xsks_fd = bpf_map__fd(s->maps.nfb_cap_xsks);
	return 0;
}

/* A BPF link, not a netlink attach: if nfbox dies, the program goes with
 * it and the interface is left as it was. */
static int attach_mode(struct capture *c, uint32_t flags)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = flags);
	int fd = bpf_link_create(bpf_program__fd(c->skel->progs.nfb_capture), c->info.ifindex, BPF_XDP, &opts);

	if (fd < 0)
		return -errno;
	c->link_fd = fd;
	return 0;
}

/* ---- after nfbox's early drop ---- */

/* Out of the early program's chain; an early program that stayed only for
 * captures (retired) is detached by the last of them. */
static void unchain(struct capture *c)
{
	uint32_t k = (uint32_t)c->info.ifindex, slot;

	if (!c->chain.on)
		return;
	if (bpf_map_lookup_elem(c->chain.chain_fd, &k, &slot) == 0 && slot == c->chain.slot)
		bpf_map_delete_elem(c->chain.chain_fd, &k);
	bpf_map_delete_elem(c->chain.next_fd, &c->chain.slot);
	close(c->chain.chain_fd);
	close(c->chain.next_fd);
	c->chain.on = false;
	if (xdp_early_unused(c->chain.early_id, (int)c->info.ifindex))
		xdp_detach_id((int)c->info.ifindex, c->chain.early_id);
}

/* Where nfbox's early drop runs alone on the interface (the kernel refused
 * libxdp's dispatcher), the capture runs after it: the early program's
 * tail call to this one. 1 chained, 0 no early program there, -errno. */
static int chain_after_early(struct capture *c)
{
	int prog = bpf_program__fd(c->skel->progs.nfb_capture), r;
	uint32_t k = (uint32_t)c->info.ifindex, slot, v;
	struct chain ch = { .on = true };
	bool native;

	ch.early_id = xdp_attached_id((int)c->info.ifindex, &native);
	if (!ch.early_id || !xdp_is_early(ch.early_id))
		return 0;
	ch.chain_fd = xdp_prog_map(ch.early_id, "nfb_early_chain");
	ch.next_fd = xdp_prog_map(ch.early_id, "nfb_early_next");
	if (ch.chain_fd < 0 || ch.next_fd < 0) {
		r = ch.chain_fd < 0 ? ch.chain_fd : ch.next_fd;
		goto fail;
	}
	for (slot = 0; slot < NFB_EARLY_CHAIN_SLOTS; slot++)
		if (bpf_map_lookup_elem(ch.next_fd, &slot, &v) < 0 && errno == ENOENT)
			break;
	if (slot == NFB_EARLY_CHAIN_SLOTS) {
		r = -ENOSPC;
		goto fail;
	}
	ch.slot = slot;
	if (bpf_map_update_elem(ch.next_fd, &slot, &prog, BPF_ANY) < 0) {
		r = -errno;
		goto fail;
	}
	if (bpf_map_update_elem(ch.chain_fd, &k, &slot, BPF_ANY) < 0) {
		r = -errno;
		bpf_map_delete_elem(ch.next_fd, &slot);
		goto fail;
	}
	c->chain = ch;
	c->info.xdp_mode = native ? CAPTURE_XDP_NATIVE : CAPTURE_XDP_SKB;
	log_info("capture: %s: runs after nfbox's early drop there (chained to it: the kernel takes one XDP program "
		 "per interface here)",
		 c->info.ifname);
	return 1;
fail: /* undoes what was opened, not the caller's state */
	if (ch.chain_fd >= 0)
		close(ch.chain_fd);
	if (ch.next_fd >= 0)
		close(ch.next_fd);
	return r;
}

/* attach_program()'s failure r, explained in d. */
static int attach_failed(const struct capture *c, int r, struct diags *d)
{
	if (r == -EBUSY || r == -EEXIST)
		return diag_fail(d, r, "capture: %s already has an XDP program attached; one capture per interface",
				 c->info.ifname);
	return diag_errno(d, r, "capture: cannot attach XDP to %s", c->info.ifname);
}

static int attach_program(struct capture *c, enum capture_xdp_mode want, struct diags *d)
{
	int r;

	if ((r = chain_after_early(c)) > 0)
		return 0;
	if (r < 0)
		return diag_errno(d, r, "capture: cannot run after nfbox's early drop on %s", c->info.ifname);

	if (want != CAPTURE_XDP_SKB) {
		r = attach_mode(c, XDP_FLAGS_DRV_MODE);
		if (!r) {
			c->info.xdp_mode = CAPTURE_XDP_NATIVE;
			return 0;
		}
		if (r == -EBUSY || r == -EEXIST || want == CAPTURE_XDP_NATIVE)
			return attach_failed(c, r, d);
		log_info("capture: native XDP on %s failed (%s); using generic (skb) mode", c->info.ifname,
			 strerror(-r));
	}
	r = attach_mode(c, XDP_FLAGS_SKB_MODE);
	if (!r) {
		c->info.xdp_mode = CAPTURE_XDP_SKB;
		return 0;
	}
	return attach_failed(c, r, d);
}

/* ---- sockets ---- */

/* Every frame must be in one place: the free stack, the pending packet,
 * the fill ring or the rx ring (the kernel holds none once the program is
 * detached and the socket drained). Only exact when the kernel dropped
 * nothing: a packet it drops midway can leave frames in its own pool. A
 * mismatch is a bug in the receive loop, reported loudly (the tests look
 * for it). */
static void queue_audit(struct capture *c, struct capture_queue *q)
{
	uint32_t fill_out, rx_out, total;
	struct xdp_statistics st;
	socklen_t len = sizeof(st);

	if (!q->xsk || getsockopt(q->fd, SOL_XDP, XDP_STATISTICS, &st, &len) < 0 || st.rx_dropped || st.rx_ring_full ||
	    st.rx_invalid_descs)
		return;
	fill_out = q->fill.size - xsk_prod_nb_free(&q->fill, q->fill.size);
	rx_out = xsk_cons_nb_avail(&q->rx, UINT32_MAX);
	total = q->nfree + q->npend + q->held + fill_out + rx_out;
	if (total != c->info.frames_per_queue)
		log_err("capture: BUG: frame accounting on %s queue %u: %u frames of %u (free %u, pending %u, "
			"writer %u, fill ring %u, rx ring %u)",
			c->info.ifname, q->id, total, c->info.frames_per_queue, q->nfree, q->npend, q->held, fill_out,
			rx_out);
}

static void queue_close(struct capture_queue *q)
{
	if (q->xsk)
		xsk_socket__delete(q->xsk);
	if (q->umem)
		xsk_umem__delete(q->umem);
	if (q->area)
		munmap(q->area, q->area_len);
	free(q->free_frames);
	q->xsk = NULL;
	q->umem = NULL;
	q->area = NULL;
	q->free_frames = NULL;
	q->fd = -1;
}

static void refill(struct capture_queue *q)
{
	uint32_t n = xsk_prod_nb_free(&q->fill, q->nfree), idx;

	if (n > q->nfree)
		n = q->nfree;
	if (n && xsk_ring_prod__reserve(&q->fill, n, &idx) == n) {
		for (uint32_t i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&q->fill, idx + i) = q->free_frames[--q->nfree];
		xsk_ring_prod__submit(&q->fill, n);
	}
	/* Zero-copy drivers sleep on an empty fill ring until told. */
	if (xsk_ring_prod__needs_wakeup(&q->fill))
		recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static int queue_open_once(struct capture *c, struct capture_queue *q, uint16_t mode)
{
	uint32_t frames = c->info.frames_per_queue;
	struct xsk_umem_config ucfg = {
		.fill_size = frames / 2,
		.comp_size = 64, /* no transmit: the ring must exist, nothing uses it */
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = frames / 2,
		.tx_size = 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = (uint16_t)(XDP_USE_SG | XDP_USE_NEED_WAKEUP | mode),
	};
	int r;

	q->area_len = (size_t)frames * FRAME_SIZE;
	q->area = mmap(NULL, q->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->area == MAP_FAILED) {
		q->area = NULL;
		return -errno;
	}
	q->free_frames = calloc(frames, sizeof(*q->free_frames));
	if (!q->free_frames)
		return -ENOMEM;
	for (q->nfree = 0; q->nfree < frames; q->nfree++)
		q->free_frames[q->nfree] = (uint64_t)(frames - 1 - q->nfree) * FRAME_SIZE;
	if ((r = xsk_umem__create(&q->umem, q->area, q->area_len, &q->fill, &q->comp, &ucfg)) < 0)
		return r;
	if ((r = xsk_socket__create(&q->xsk, c->info.ifname, q->id, q->umem, &q->rx, NULL, &scfg)) < 0) {
		q->xsk = NULL;
		return r;
	}
	q->fd = xsk_socket__fd(q->xsk);
	refill(q);
	return 0;
}

/* Bind with mode; right after a failed bind the queue can report -EBUSY for
 * a moment, hence the retries. */
static int queue_open(struct capture *c, struct capture_queue *q, uint16_t mode)
{
	int r = -EBUSY;

	for (int i = 0; i < BIND_RETRIES && r == -EBUSY; i++) {
		if (i)
			usleep(20000);
		r = queue_open_once(c, q, mode);
		if (r < 0)
			queue_close(q);
	}
	return r;
}

static const char *zc_refusal(const struct capture *c, bool force_copy)
{
	if (force_copy)
		return "copy mode requested";
	if (c->info.xdp_mode != CAPTURE_XDP_NATIVE)
		return "generic XDP has no zero-copy";
	if (!(c->info.xdp_features & NETDEV_XDP_ACT_XSK_ZEROCOPY))
		return "the driver has no AF_XDP zero-copy";
	if (c->info.zc_max_segs < 2)
		return "the driver's zero-copy has no multi-buffer (zc_max_segs < 2)";
	return NULL;
}

static int open_sockets(struct capture *c, bool force_copy, struct diags *d)
{
	const char *why = zc_refusal(c, force_copy);
	int r;

	for (uint32_t i = 0; i < c->nq; i++) {
		struct capture_queue *q = &c->q[i];

		r = -EOPNOTSUPP;
		if (!why && (r = queue_open(c, q, XDP_ZEROCOPY)) < 0) {
			why = "zero-copy bind failed";
			log_info("capture: zero-copy bind on %s queue %u failed (%s); using copy mode", c->info.ifname,
				 i, strerror(-r));
		}
		if (r < 0 && (r = queue_open(c, q, XDP_COPY)) < 0)
			return diag_errno(d, r, "capture: cannot bind an AF_XDP socket to %s queue %u", c->info.ifname,
					  i);
	}
	c->info.zerocopy = !why;
	c->info.copy_reason = why;
	return 0;
}

static int map_sockets(struct capture *c, struct diags *d)
{
	for (uint32_t i = 0; i < c->nq; i++)
		if (bpf_map_update_elem(c->xsks_fd, &i, &c->q[i].fd, BPF_ANY) < 0)
			return diag_errno(d, -errno, "capture: cannot insert the socket of queue %u", i);
	return 0;
}

/* Matching frames go back to the stack from now on. */
static void unmap_sockets(struct capture *c)
{
	if (c->xsks_fd < 0)
		return;
	for (uint32_t i = 0; i < c->nq; i++)
		bpf_map_delete_elem(c->xsks_fd, &i);
}

/* ---- receive ---- */

static void pend_reset(struct capture_queue *q)
{
	for (uint32_t i = 0; i < q->npend; i++)
		q->free_frames[q->nfree++] = q->pend_addr[i];
	q->npend = 0;
	q->pend_descs = 0;
	q->pend_len = 0;
}

static void pend_add(struct capture_queue *q, const struct xdp_desc *d)
{
	uint64_t base = d->addr & ~(uint64_t)(FRAME_SIZE - 1);

	q->pend_descs++;
	q->pend_len += d->len;
	if (q->npend == MAX_PKT_DESCS) {
		/* Too long to keep: its frame goes straight back. */
		q->free_frames[q->nfree++] = base;
		return;
	}
	q->pend_addr[q->npend] = base;
	q->pend_iov[q->npend].iov_base = xsk_umem__get_data(q->area, d->addr);
	q->pend_iov[q->npend].iov_len = d->len;
	q->npend++;
}

/* Cookie of a frame given to the writer: its queue and its address. */
#define COOKIE_QUEUE_SHIFT 48

static void frame_released(uint64_t cookie, void *arg)
{
	struct capture *c = arg;
	struct capture_queue *q = &c->q[cookie >> COOKIE_QUEUE_SHIFT];

	q->free_frames[q->nfree++] = cookie & ((1ull << COOKIE_QUEUE_SHIFT) - 1);
	q->held--;
}

/* By reference while the writer keeps up; a copy (frames freed now) while
 * it holds a quarter of the queue's frames. */
static void write_packet(struct capture *c, struct capture_queue *q, uint64_t ts)
{
	uint64_t cookies[MAX_PKT_DESCS];
	int r;

	if (q->held + q->npend <= c->info.frames_per_queue / 4) {
		for (uint32_t i = 0; i < q->npend; i++)
			cookies[i] = (uint64_t)(q - c->q) << COOKIE_QUEUE_SHIFT | q->pend_addr[i];
		r = pcapng_write_ref(c->writer, ts, q->pend_iov, cookies, (int)q->npend, (uint32_t)q->pend_len);
		if (!r) {
			q->held += q->npend;
			q->npend = 0; /* the writer's now */
		}
	} else {
		r = pcapng_write(c->writer, ts, q->pend_iov, (int)q->npend, (uint32_t)q->pend_len);
	}

	/* -ENOBUFS is counted by the writer (queue_drops); anything else is a
	 * bug worth one message per kind. */
	if (r < 0 && r != -ENOBUFS && r != c->last_write_err) {
		c->last_write_err = r;
		log_warn("capture: pcapng_write: %s", strerror(-r));
	}
}

static void packet_end(struct capture *c, struct capture_queue *q)
{
	if (c->stopping) {
		pend_reset(q);
		return;
	}
	cnt_add(&q->cnt.descs, q->pend_descs);
	if (q->pend_descs > MAX_PKT_DESCS) {
		cnt_add(&q->cnt.oversize, 1);
		pend_reset(q);
		return;
	}
	/* Stamped when its last buffer is read: AF_XDP in copy mode carries no
	 * kernel timestamp, and one stamp per batch would blur the order. */
	write_packet(c, q, now_realtime_ns());
	cnt_add(&q->cnt.packets, 1);
	cnt_add(&q->cnt.bytes, q->pend_len);
	if (q->pend_descs > 1)
		cnt_add(&q->cnt.multibuf, 1);
	pend_reset(q);
	if (c->max_packets && ++c->packets >= c->max_packets)
		c->stopping = true;
}

/* One batch from one queue: returns the descriptors consumed. */
static uint32_t queue_rx(struct capture *c, struct capture_queue *q)
{
	uint32_t idx = 0, n = xsk_ring_cons__peek(&q->rx, RX_BATCH, &idx);

	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);

		pend_add(q, d);
		if (!(d->options & XDP_PKT_CONTD))
			packet_end(c, q);
	}
	if (n)
		xsk_ring_cons__release(&q->rx, n);
	refill(q);
	return n;
}

static uint32_t rx_all(struct capture *c)
{
	uint32_t work = 0;

	for (uint32_t i = 0; i < c->nq && !c->stopping; i++)
		work += queue_rx(c, &c->q[i]);
	return work;
}

static void end_by_itself(struct capture *c, int err)
{
	uint64_t one = 1;

	unmap_sockets(c);
	__atomic_store_n(&c->end_error, err, __ATOMIC_RELAXED);
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	if (write(c->done_fd, &one, sizeof(one)) < 0)
		log_warn("capture: cannot signal the end: %s", strerror(errno));
}

/* Wait for traffic or the stop request. 1: go on, 0: stop requested,
 * negative: a socket failed (the interface went away). When its device is
 * unregistered, an AF_XDP socket is unbound and sets sk_err = ENETDOWN, but
 * poll() on an unbound socket reports no event at all: hence the timeout
 * and the look at SO_ERROR when nothing happened. */
static int rx_wait(struct capture *c, struct pollfd *pfd)
{
	int n = poll(pfd, c->nq + 2, RX_CHECK_MS);

	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (pfd[c->nq].revents)
		return 0;
	if (pfd[c->nq + 1].revents)
		pcapng_release_ack(c->writer); /* the loop reclaims next */
	for (uint32_t i = 0; i < c->nq; i++) {
		socklen_t len = sizeof(int);
		int err = 0;

		if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
			return -ENETDOWN;
		if (!n && !getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) && err)
			return -err;
	}
	return 1;
}

static void *rx_thread(void *arg)
{
	static const struct timespec nap = { .tv_nsec = RX_NAP_NS };
	struct capture *c = arg;
	struct pollfd *pfd = calloc(c->nq + 2, sizeof(*pfd));
	bool woke = false;
	int r = 1;

	if (!pfd) {
		end_by_itself(c, -ENOMEM);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nq; i++)
		pfd[i] = (struct pollfd){ .fd = c->q[i].fd, .events = POLLIN };
	pfd[c->nq] = (struct pollfd){ .fd = c->stop_fd, .events = POLLIN };
	pfd[c->nq + 1] = (struct pollfd){ .fd = pcapng_release_fd(c->writer), .events = POLLIN };
	while (!c->stopping && r > 0) {
		uint32_t n;

		pcapng_reclaim(c->writer); /* written frames back to the free stacks */
		n = rx_all(c);

		if (!n) {
			r = rx_wait(c, pfd);
			woke = true;
			continue;
		}
		/* Woken for a handful of frames: let more gather (well within the
		 * rings' slack) rather than take a wakeup, with its interrupt on
		 * the sender's CPU, every few frames. */
		if (woke && n < RX_NAP_BELOW)
			nanosleep(&nap, NULL);
		woke = false;
	}
	/* Asked to stop: the sockets are already unbound; take what they hold. */
	while (r == 0 && !c->stopping && rx_all(c))
		;
	if (r < 0)
		log_err("capture: receive on %s failed: %s", c->info.ifname, strerror(-r));
	if (r != 0)
		end_by_itself(c, r < 0 ? r : 0);
	free(pfd);
	return NULL;
}

static int start_thread(struct capture *c, struct diags *d)
{
	int r = thread_start_quiet(&c->thread, rx_thread, c, "nfbox-capture");

	if (r)
		return diag_errno(d, -r, "capture: cannot start the receive thread");
	c->thread_started = true;
	return 0;
}

/* ---- start, stats, stop ---- */

static uint32_t frames_per_queue(const struct capture_opts *o, uint32_t nq)
{
	uint32_t f = o->frames_per_queue ? o->frames_per_queue : DEFAULT_FRAMES;

	if (!o->frames_per_queue)
		while (f > MIN_FRAMES && (uint64_t)f * nq > FRAME_BUDGET)
			f /= 2;
	return f;
}

static int check_conf(const struct capture_conf *conf, const struct capture_opts *o, struct diags *d)
{
	if (conf->mirror_from[0] && !strcmp(conf->mirror_from, conf->ifname))
		return diag_fail(d, -EINVAL, "capture: mirror-from %s is the capture interface itself",
				 conf->mirror_from);
	if (!conf->file || !conf->ifname[0])
		return diag_fail(d, -EINVAL, "capture: an interface and a file are needed");
	if (o->frames_per_queue && (o->frames_per_queue < 64 || (o->frames_per_queue & (o->frames_per_queue - 1))))
		return diag_fail(d, -EINVAL, "capture: frames per queue must be a power of two, at least 64");
	return 0;
}

static int open_writer(struct capture *c, const struct capture_conf *conf, const struct capture_opts *o,
		       struct diags *d)
{
	struct pcapng_opts po = {
		.path = conf->file,
		.ifname = conf->ifname,
		.snaplen = conf->snaplen,
		.rotate_size = conf->rotate_size,
		.rotate_keep = conf->rotate_keep ? conf->rotate_keep : 1,
		.queue_bytes = o->queue_bytes ? o->queue_bytes : DEFAULT_QUEUE_BYTES,
		.keep_existing = o->keep_existing,
		.release = frame_released,
		.release_arg = c,
	};
	int r = pcapng_open(&po, &c->writer);

	if (r == -EBUSY)
		return diag_fail(d, r, "capture: %s is being written by another capture", conf->file);
	return r < 0 ? diag_errno(d, r, "capture: cannot create %s", conf->file) : 0;
}

static struct capture *capture_alloc(const struct capture_conf *conf, const struct capture_opts *o)
{
	struct capture *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->link_fd = c->xsks_fd = -1;
	c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	snprintf(c->info.ifname, sizeof(c->info.ifname), "%s", conf->ifname);
	c->max_packets = o->max_packets;
	c->nq = count_rx_queues(conf->ifname);
	if (c->nq > MAX_QUEUES)
		c->nq = MAX_QUEUES;
	c->info.nqueues = c->nq;
	c->info.frames_per_queue = frames_per_queue(o, c->nq);
	c->q = calloc(c->nq, sizeof(*c->q));
	if (!c->q || c->stop_fd < 0 || c->done_fd < 0) {
		capture_stop(c, NULL);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nq; i++)
		c->q[i] = (struct capture_queue){ .id = i, .fd = -1 };
	return c;
}

int capture_start(const struct capture_conf *conf, const struct capture_opts *opts, struct diags *d,
		  struct capture **out)
{
	static const struct capture_opts defaults;
	const struct capture_opts *o = opts ? opts : &defaults;
	struct capture *c;
	struct nl_netdev_xdp xdp;
	int ifindex, r;

	struct mirror *m = NULL;

	if ((r = check_conf(conf, o, d)) < 0)
		return r;
	if (conf->mirror_from[0] && (r = mirror_create(conf->mirror_from, conf->ifname, d, &m)) < 0)
		return r;
	if (!(ifindex = (int)if_nametoindex(conf->ifname))) {
		r = diag_errno(d, -errno, "capture: no interface %s", conf->ifname);
		mirror_destroy(m);
		return r;
	}
	if (!(c = capture_alloc(conf, o))) {
		mirror_destroy(m);
		return diag_errno(d, -ENOMEM, "capture: %s", conf->ifname);
	}
	c->mirror = m;
	if (m) {
		snprintf(c->info.mirror_from, sizeof(c->info.mirror_from), "%s", conf->mirror_from);
		snprintf(c->info.mirror_peer, sizeof(c->info.mirror_peer), "%s", mirror_peer(m));
	}
	c->info.ifindex = ifindex;
	if (nl_netdev_xdp_probe(ifindex, &xdp) < 0)
		log_debug("capture: no netdev netlink family; assuming no zero-copy");
	c->info.xdp_features = xdp.xdp_features;
	c->info.zc_max_segs = xdp.zc_max_segs;
	/* The file last of what can fail for outside reasons (XDP already
	 * attached, no such queue): a capture that cannot start leaves no
	 * empty file behind, and an earlier one is not shifted for nothing. */
	if ((r = load_program(c, &conf->match, d)) < 0 || (r = attach_program(c, o->xdp_mode, d)) < 0 ||
	    (r = open_sockets(c, o->force_copy, d)) < 0 || (r = open_writer(c, conf, o, d)) < 0 ||
	    (r = map_sockets(c, d)) < 0 || (r = start_thread(c, d)) < 0 || (m && (r = mirror_attach(m, d)) < 0)) {
		capture_stop(c, NULL);
		return r;
	}
	*out = c;
	return 0;
}

void capture_get_info(const struct capture *c, struct capture_info *out)
{
	*out = c->info;
}

int capture_done_fd(const struct capture *c)
{
	return c->done_fd;
}

static int xdp_counters(struct capture *c, struct capture_stats *s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct nfb_cap_counters *v;
	uint32_t zero = 0;
	int r = 0;

	if (ncpu <= 0 || !c->skel)
		return ncpu < 0 ? ncpu : 0;
	if (!(v = calloc((size_t)ncpu, sizeof(*v))))
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.nfb_cap_counters), &zero, v) < 0)
		r = -errno;
	for (int i = 0; i < ncpu && !r; i++) {
		s->xdp_seen += v[i].seen;
		s->xdp_matched += v[i].matched;
		s->xdp_redirected += v[i].redirected;
		s->xdp_passed += v[i].passed;
	}
	free(v);
	return r;
}

static int socket_counters(struct capture *c, struct capture_stats *s)
{
	int r = 0;

	for (uint32_t i = 0; i < c->nq; i++) {
		const struct capture_queue *q = &c->q[i];
		struct xdp_statistics st;
		socklen_t len = sizeof(st);

		s->packets += cnt_get(&q->cnt.packets);
		s->bytes += cnt_get(&q->cnt.bytes);
		s->descs += cnt_get(&q->cnt.descs);
		s->multibuf += cnt_get(&q->cnt.multibuf);
		s->oversize += cnt_get(&q->cnt.oversize);
		if (q->fd < 0)
			continue;
		if (getsockopt(q->fd, SOL_XDP, XDP_STATISTICS, &st, &len) < 0) {
			r = -errno;
			continue;
		}
		s->rx_dropped += st.rx_dropped;
		s->rx_invalid_descs += st.rx_invalid_descs;
		s->rx_ring_full += st.rx_ring_full;
		s->rx_fill_ring_empty_descs += st.rx_fill_ring_empty_descs;
	}
	return r;
}

int capture_stats(struct capture *c, struct capture_stats *out)
{
	struct pcapng_stats ws = { 0 };
	int r, r2;

	memset(out, 0, sizeof(*out));
	r = socket_counters(c, out);
	r2 = xdp_counters(c, out);
	if (c->writer)
		pcapng_stats(c->writer, &ws);
	out->written = ws.packets;
	out->by_ref = ws.by_ref;
	out->writer_queue_drops = ws.queue_drops;
	out->writer_write_drops = ws.write_drops;
	out->files = ws.files;
	out->writer_errno = ws.last_errno;
	if (c->mirror) {
		struct mirror_stats ms;

		mirror_get_stats(c->mirror, &ms);
		out->mirrored = ms.mirrored;
		out->mirror_failed = ms.failed;
	}
	out->done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	out->end_error = __atomic_load_n(&c->end_error, __ATOMIC_RELAXED);
	return r ? r : r2;
}

static void stop_thread(struct capture *c)
{
	uint64_t one = 1;

	if (!c->thread_started)
		return;
	if (write(c->stop_fd, &one, sizeof(one)) < 0)
		log_warn("capture: cannot signal the receive thread: %s", strerror(errno));
	pthread_join(c->thread, NULL);
	c->thread_started = false;
}

int capture_reseat(struct capture *c)
{
	enum capture_xdp_mode was;
	bool native;
	int r;

	if (!c)
		return 0;
	if (!c->chain.on) {
		/* Alone on its link: the early drop took the interface (it
		 * detached the link); after it from now on. */
		if (c->link_fd < 0 || chain_after_early(c) <= 0)
			return 0;
		close(c->link_fd);
		c->link_fd = -1;
		log_warn("capture: %s: frames that came while the early drop took the interface may be missing",
			 c->info.ifname);
		return 0;
	}
	if (xdp_attached_id((int)c->info.ifindex, &native) == c->chain.early_id)
		return 0;
	/* The early program it ran after left the interface, or another took
	 * its place: after that one, or alone. */
	was = c->info.xdp_mode;
	unchain(c);
	if ((r = chain_after_early(c)) == 0) {
		r = attach_mode(c, was == CAPTURE_XDP_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
		if (r == 0)
			log_info("capture: %s: the early drop left; the capture runs alone there again",
				 c->info.ifname);
	}
	if (r < 0)
		log_err("capture: %s: cannot run again after the early drop changed (%s): it takes no frames",
			c->info.ifname, strerror(-r));
	else
		log_warn("capture: %s: frames that came while the XDP program there changed may be missing",
			 c->info.ifname);
	return r < 0 ? r : 0;
}

int capture_stop(struct capture *c, struct capture_stats *final)
{
	struct pcapng_stats ws;
	int r;

	if (!c)
		return 0;
	if (c->mirror)
		mirror_detach(c->mirror); /* no new copies */
	unmap_sockets(c);
	stop_thread(c);
	if (c->link_fd >= 0)
		close(c->link_fd); /* detaches the program */
	c->link_fd = -1;
	unchain(c);
	if (final)
		capture_stats(c, final);
	/* close flushes the queue, after the snapshot above: the writer's
	 * counters are final only once it is done. It writes from the UMEM,
	 * which stays mapped until then, and hands every frame back. */
	r = pcapng_close_stats(c->writer, final ? &ws : NULL);
	for (uint32_t i = 0; c->q && i < c->nq; i++) {
		queue_audit(c, &c->q[i]);
		queue_close(&c->q[i]);
	}
	nfbox_capture_bpf__destroy(c->skel);
	mirror_destroy(c->mirror);
	if (final && c->writer) {
		final->written = ws.packets;
		final->by_ref = ws.by_ref;
		final->writer_queue_drops = ws.queue_drops;
		final->writer_write_drops = ws.write_drops;
		final->files = ws.files;
		final->writer_errno = r < 0 ? -r : ws.last_errno;
	}
	if (c->stop_fd >= 0)
		close(c->stop_fd);
	if (c->done_fd >= 0)
		close(c->done_fd);
	free(c->q);
	free(c);
	return r;
}
