/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench_txgen: a fast frame sender for the capture benchmark
 * (tests/bench/capture.sh). It sends COUNT copies of one prebuilt
 * Ethernet/IPv4/UDP frame of SIZE bytes out of one interface through an
 * AF_PACKET socket with PACKET_QDISC_BYPASS (the frames go straight to the
 * driver's xmit, no qdisc), BATCH frames per sendmmsg(), either flat out
 * or paced at RATE frames/s.
 *
 *   bench_txgen -i IF -d DST_MAC -s SIZE -n COUNT [-r RATE] [-b BATCH]
 *               [--src A.B.C.D] [--dst A.B.C.D] [--sport N] [--dport N]
 *
 * SIZE is the frame as the receiver's stack and any capture sees it:
 * Ethernet header to the end of the UDP payload, no FCS (60..65535; 9014 is
 * 14 + an MTU 9000 IP packet). COUNT frames are *accepted by the driver*:
 * a send that fails (ENOBUFS: the device refused it) is counted as an error
 * and retried, so the receiving side is offered exactly COUNT frames unless
 * the device drops them itself (veth counts those as the sender's tx_dropped).
 *
 * Pacing: frame k is due at t0 + k / RATE; the sender sleeps to the due
 * time of its next batch (clock_nanosleep to within 60 us, then spins) and
 * never runs more than 10 ms behind schedule (a late start re-bases the
 * schedule instead of bursting to catch up), so the achieved rate can be
 * below RATE when the machine cannot keep up: the achieved rate is printed.
 *
 * Every frame carries its sequence number (0, 1, ...; 32 bits, network
 * order) in the first 4 bytes of the UDP payload (frame offset 42), so a
 * capture file shows which frames were lost, not only how many.
 *
 * Output: one line on stdout, key=value, for scripts:
 *   sent=N bytes=SIZE secs=T pps=R gbps=G errors=E
 * (errors: sends refused and retried) and a sentence on stderr unless -q.
 *
 *   bench_txgen --hold
 *
 * is a memory holder for the same benchmark, driven by lines on stdin:
 * "fill MIB" maps (MAP_POPULATE) 64 MiB chunks until MIB MiB are held,
 * "release MIB" unmaps that much; each is answered by "held MIB MS" (the
 * milliseconds it took). Why: on a VM whose balloon has free page reporting
 * (virtio-balloon, Firecracker), memory that stays free for about 2 s is
 * handed back to the host, and the next touch of each such page costs a
 * host fault (here ~7 us per 4 KiB page instead of ~1.6 us): page-cache
 * writes fall from ~5 GB/s to ~0.5 GB/s, far below a jumbo-frame capture's
 * rate, at random moments. The benchmark holds touched memory between runs
 * and releases it just before the traffic starts, so every capture writes
 * its file into memory that is as warm as a real machine's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH  1024
#define MIN_FRAME  60 /* the Ethernet minimum without FCS; a 64-byte frame with it */
#define MAX_FRAME  65535
#define SPIN_NS	   60000ll
#define MAX_LAG_NS 10000000ll
#define SEQ_OFF	   42 /* Ethernet 14 + IPv4 20 + UDP 8 */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
	int64_t left = t - now_ns();

	if (left > SPIN_NS) {
		int64_t wake = t - SPIN_NS;
		struct timespec ts = { .tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000 };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (now_ns() < t && !stop)
		;
}

static uint16_t ip_csum(const void *p, size_t len)
{
	const uint16_t *w = p;
	uint32_t s = 0;

	for (size_t i = 0; i < len / 2; i++)
		s += w[i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static long parse_num(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "bench_txgen: %s '%s': want %ld..%ld\n", what, s, lo, hi);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_txgen -i IF -d DST_MAC -s SIZE -n COUNT [-r RATE] [-b BATCH]\n"
			"                   [--src IPV4] [--dst IPV4] [--sport N] [--dport N] [-q]\n"
			"       bench_txgen --hold   (memory holder: fill MIB / release MIB on stdin)\n"
			"  SIZE bytes per frame, Ethernet header included, no FCS (60..65535)\n"
			"  RATE frames/s (0 or absent: flat out); BATCH frames per sendmmsg (64)\n");
	exit(2);
}

struct frame_spec {
	uint8_t src_mac[6], dst_mac[6];
	struct in_addr src, dst;
	uint16_t sport, dport;
	size_t size;
};

static uint8_t *build_frame(const struct frame_spec *f)
{
	uint8_t *p = calloc(1, f->size);
	struct ethhdr *eth = (struct ethhdr *)p;
	struct iphdr *ip = (struct iphdr *)(p + sizeof(*eth));
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	size_t iplen = f->size - sizeof(*eth);

	if (!p)
		return NULL;
	memcpy(eth->h_dest, f->dst_mac, 6);
	memcpy(eth->h_source, f->src_mac, 6);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)iplen);
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = f->src.s_addr;
	ip->daddr = f->dst.s_addr;
	ip->check = ip_csum(ip, sizeof(*ip));
	udp->source = htons(f->sport);
	udp->dest = htons(f->dport);
	udp->len = htons((uint16_t)(iplen - sizeof(*ip)));
	udp->check = 0; /* none: allowed for UDP over IPv4 */
	for (size_t i = sizeof(*eth) + sizeof(*ip) + sizeof(*udp); i < f->size; i++)
		p[i] = (uint8_t)i;
	return p;
}

static int open_socket(const char *ifname, uint8_t src_mac[6])
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	int one = 1, sndbuf = 16 << 20;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* protocol 0: receives nothing */

	if (fd < 0) {
		perror("bench_txgen: socket(AF_PACKET)");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
		fprintf(stderr, "bench_txgen: %s: %s\n", ifname, strerror(errno));
		goto fail;
	}
	sll.sll_ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		fprintf(stderr, "bench_txgen: %s: no hardware address: %s\n", ifname, strerror(errno));
		goto fail;
	}
	memcpy(src_mac, ifr.ifr_hwaddr.sa_data, 6);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("bench_txgen: bind");
		goto fail;
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0) {
		perror("bench_txgen: PACKET_QDISC_BYPASS");
		goto fail;
	}
	/* Room for a whole batch of jumbo frames in flight (SNDBUFFORCE: root). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return fd;
fail:
	close(fd);
	return -1;
}

#define HOLD_CHUNK (64ul << 20)
#define HOLD_MAX   4096

/* --hold: see the top of the file. */
static int hold_main(void)
{
	static void *chunks[HOLD_MAX];
	unsigned long n = 0, mib;
	char line[64], cmd[16];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		int64_t t0 = now_ns();

		if (sscanf(line, "%15s %lu", cmd, &mib) != 2) {
			printf("error\n");
			continue;
		}
		unsigned long want = mib / (HOLD_CHUNK >> 20);

		if (!strcmp(cmd, "fill")) {
			while (n < want && n < HOLD_MAX) {
				void *p = mmap(NULL, HOLD_CHUNK, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

				if (p == MAP_FAILED)
					break;
				chunks[n++] = p;
			}
		} else if (!strcmp(cmd, "release")) {
			for (unsigned long i = 0; i < want && n; i++)
				munmap(chunks[--n], HOLD_CHUNK);
		}
		printf("held %lu %.0f\n", n * (HOLD_CHUNK >> 20), (double)(now_ns() - t0) / 1e6);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--hold"))
		return hold_main();

	static const struct option opts[] = {
		{ "src", required_argument, NULL, 'A' },   { "dst", required_argument, NULL, 'B' },
		{ "sport", required_argument, NULL, 'P' }, { "dport", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },	   { 0 },
	};
	struct frame_spec f = { .sport = 4000, .dport = 9 };
	const char *ifname = NULL, *dmac = NULL;
	const char *src = "198.51.100.1", *dst = "203.0.113.2";
	long count = 0, rate = 0, batch = 64;
	bool quiet = false;
	int c;

	f.size = 0;
	while ((c = getopt_long(argc, argv, "i:d:s:n:r:b:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			ifname = optarg;
			break;
		case 'd':
			dmac = optarg;
			break;
		case 's':
			f.size = (size_t)parse_num(optarg, MIN_FRAME, MAX_FRAME, "size");
			break;
		case 'n':
			count = parse_num(optarg, 1, 1L << 40, "count");
			break;
		case 'r':
			rate = parse_num(optarg, 0, 1L << 32, "rate");
			break;
		case 'b':
			batch = parse_num(optarg, 1, MAX_BATCH, "batch");
			break;
		case 'A':
			src = optarg;
			break;
		case 'B':
			dst = optarg;
			break;
		case 'P':
			f.sport = (uint16_t)parse_num(optarg, 1, 65535, "sport");
			break;
		case 'Q':
			f.dport = (uint16_t)parse_num(optarg, 1, 65535, "dport");
			break;
		case 'q':
			quiet = true;
			break;
		default:
			usage();
		}
	}
	if (optind < argc || !ifname || !dmac || !f.size || !count)
		usage();
	if (parse_mac(dmac, f.dst_mac) < 0 || inet_pton(AF_INET, src, &f.src) != 1 ||
	    inet_pton(AF_INET, dst, &f.dst) != 1) {
		fprintf(stderr, "bench_txgen: bad MAC or IPv4 address\n");
		return 2;
	}

	int fd = open_socket(ifname, f.src_mac);
	uint8_t *frame;

	if (fd < 0)
		return 1;
	if (!(frame = build_frame(&f))) {
		perror("bench_txgen");
		return 1;
	}

	/* Paced: batches of ~50 us worth of frames (at least 1, at most BATCH). */
	long b = batch;
	if (rate > 0) {
		b = rate / 20000;
		if (b < 1)
			b = 1;
		if (b > batch)
			b = batch;
	}
	/* One header copy per slot of the batch (the sequence number differs);
	 * the payload after it is shared. */
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iov[MAX_BATCH][2];
	static uint8_t heads[MAX_BATCH][SEQ_OFF + 4];
	for (long i = 0; i < b; i++) {
		memcpy(heads[i], frame, SEQ_OFF);
		iov[i][0] = (struct iovec){ .iov_base = heads[i], .iov_len = SEQ_OFF + 4 };
		iov[i][1] = (struct iovec){ .iov_base = frame + SEQ_OFF + 4, .iov_len = f.size - SEQ_OFF - 4 };
		msgs[i].msg_hdr = (struct msghdr){ .msg_iov = iov[i], .msg_iovlen = 2 };
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	long sent = 0, errors = 0;
	int64_t t0 = now_ns(), base = t0, based = 0;
	int err = 0;

	while (sent < count && !stop) {
		unsigned n = (unsigned)(count - sent < b ? count - sent : b);
		int r;

		for (unsigned i = 0; i < n; i++) {
			uint32_t seq = htonl((uint32_t)(sent + i));

			memcpy(heads[i] + SEQ_OFF, &seq, 4);
		}

		if (rate > 0) {
			int64_t due = base + (int64_t)((double)(sent - based) * 1e9 / (double)rate);
			int64_t now = now_ns();

			if (now - due > MAX_LAG_NS) { /* behind: re-base, no catch-up burst */
				base = now;
				based = sent;
			} else {
				sleep_until(due);
			}
		}
		r = sendmmsg(fd, msgs, n, 0);
		if (r > 0) {
			sent += r;
		} else if (r < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
			if (errno != EINTR)
				errors++;
		} else {
			err = errno;
			break;
		}
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	double pps = secs > 0 ? (double)sent / secs : 0;

	printf("sent=%ld bytes=%zu secs=%.4f pps=%.0f gbps=%.3f errors=%ld\n", sent, f.size, secs, pps,
	       pps * (double)f.size * 8 / 1e9, errors);
	if (!quiet)
		fprintf(stderr, "bench_txgen: %ld frames of %zu bytes in %.3f s: %.0f frames/s, %.2f Gbit/s%s%s\n",
			sent, f.size, secs, pps, pps * (double)f.size * 8 / 1e9, rate ? " (paced)" : "",
			stop ? " (interrupted)" : "");
	if (err) {
		fprintf(stderr, "bench_txgen: sendmmsg: %s\n", strerror(err));
		return 1;
	}
	close(fd);
	free(frame);
	return stop ? 130 : 0;
}
