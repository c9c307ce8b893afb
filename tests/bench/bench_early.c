/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Cost of one dropped packet: the early drop at XDP against the classifier
 * at the netfilter hook, both as a running daemon loaded them (its pinned
 * classifier, the XDP program on the interface), on the same frame from a
 * blocked source, timed with BPF_PROG_TEST_RUN.
 *
 *   bench_early -p PIN_DIR -i IFNAME --src A.B.C.D --dst A.B.C.D [-r REPEAT] [-b BATCHES]
 *
 * Run inside the daemon's network namespace (the XDP test run needs the
 * interface, and the FIB lookup its routes). Each figure is the median of
 * BATCHES calls of REPEAT runs (the kernel's mean ns per run); every call's
 * verdict is checked (XDP_DROP, NF_DROP): a number is printed only for the
 * right answer. Output, one line: xdp_ns=X hook_ns=Y ratio=Y/X
 * Exit status 1 if a run failed or a verdict was wrong.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include "tests/bench/bench.h"

/* An Ethernet/IPv4/UDP frame from src to dst. */
static size_t frame(uint8_t *b, const char *src, const char *dst)
{
	struct ethhdr *eth = (struct ethhdr *)b;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	size_t len = sizeof(*eth) + sizeof(*ip) + sizeof(*udp) + 18;

	memset(b, 0, len);
	memset(eth->h_dest, 0x02, ETH_ALEN);
	memset(eth->h_source, 0x04, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((uint16_t)(len - sizeof(*eth)));
	inet_pton(AF_INET, src, &ip->saddr);
	inet_pton(AF_INET, dst, &ip->daddr);
	udp->source = htons(4444);
	udp->dest = htons(5555);
	udp->len = htons((uint16_t)(len - sizeof(*eth) - sizeof(*ip)));
	return len;
}

/* The median ns per run of batches calls; -1 on a failed run or a wrong verdict. */
static double timed(int fd, struct bpf_test_run_opts *o, unsigned batches, uint32_t want, const char *what)
{
	double v[64];

	if (batches > 64)
		batches = 64;
	for (unsigned i = 0; i <= batches; i++) { /* call 0: warm-up */
		o->duration = 0;
		o->retval = 0xdead;
		if (bpf_prog_test_run_opts(fd, o) < 0) {
			perror(what);
			return -1;
		}
		if (o->retval != want) {
			fprintf(stderr, "bench_early: %s: verdict %u, expected %u\n", what, o->retval, want);
			return -1;
		}
		if (i)
			v[i - 1] = (double)o->duration;
	}
	return bench_median(v, batches);
}

/* The fd of the XDP program called nfb_early on ifindex (alone or in a dispatcher). */
static int early_fd(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	int fd = -1;

	if (libxdp_get_error(mp) || !mp)
		return -1;
	p = xdp_multiprog__is_legacy(mp) ? xdp_multiprog__main_prog(mp) : xdp_multiprog__next_prog(NULL, mp);
	for (; p && fd < 0; p = xdp_multiprog__is_legacy(mp) ? NULL : xdp_multiprog__next_prog(p, mp))
		if (!strcmp(xdp_program__name(p), "nfb_early"))
			fd = dup(xdp_program__fd(p));
	xdp_multiprog__close(mp);
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = { { "src", 1, NULL, 's' }, { "dst", 1, NULL, 'd' }, { NULL, 0, NULL, 0 } };
	const char *pins = NULL, *ifname = NULL, *src = NULL, *dst = NULL;
	unsigned repeat = 1000000, batches = 5;
	uint8_t buf[128];
	char path[4096];
	size_t len;
	int c, ifindex, xfd, hfd;
	double x, h;

	while ((c = getopt_long(argc, argv, "p:i:r:b:", longs, NULL)) != -1) {
		if (c == 'p')
			pins = optarg;
		else if (c == 'i')
			ifname = optarg;
		else if (c == 's')
			src = optarg;
		else if (c == 'd')
			dst = optarg;
		else if (c == 'r')
			repeat = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'b')
			batches = (unsigned)strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (!pins || !ifname || !src || !dst || !batches || !repeat) {
		fprintf(stderr, "usage: bench_early -p PIN_DIR -i IFNAME --src A --dst B [-r REPEAT] [-b BATCHES]\n");
		return 2;
	}
	if (!(ifindex = (int)if_nametoindex(ifname)) || (xfd = early_fd(ifindex)) < 0) {
		fprintf(stderr, "bench_early: no nfb_early XDP program on %s\n", ifname);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/prog", pins);
	if ((hfd = bpf_obj_get(path)) < 0) {
		perror(path);
		return 1;
	}
	len = frame(buf, src, dst);
	{
		struct xdp_md xctx = { .data_end = (uint32_t)len, .ingress_ifindex = (uint32_t)ifindex };
		struct nf_hook_state_ctx nctx = { .hook = NF_INET_FORWARD, .pf = NFPROTO_IPV4 };
		LIBBPF_OPTS(bpf_test_run_opts, xo, .data_in = buf, .data_size_in = (uint32_t)len, .ctx_in = &xctx,
			    .ctx_size_in = sizeof(xctx), .repeat = repeat);
		LIBBPF_OPTS(bpf_test_run_opts, ho, .data_in = buf, .data_size_in = (uint32_t)len, .ctx_in = &nctx,
			    .ctx_size_in = sizeof(nctx), .repeat = repeat);

		x = timed(xfd, &xo, batches, XDP_DROP, "XDP");
		h = timed(hfd, &ho, batches, NF_DROP, "hook");
	}
	if (x <= 0 || h <= 0)
		return 1;
	printf("xdp_ns=%.1f hook_ns=%.1f ratio=%.2f\n", x, h, h / x);
	return 0;
}
