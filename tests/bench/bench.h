/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the benchmarks that time programs with BPF_PROG_TEST_RUN share. */
#ifndef NFBOX_BENCH_H
#define NFBOX_BENCH_H

#include <stdint.h>
#include <stdlib.h>

/* The kernel's struct nf_hook_state (include/linux/netfilter.h), which is
 * what BPF_PROG_TEST_RUN takes as ctx_in for netfilter programs (it builds
 * the struct bpf_nf_ctx itself). Only hook and pf may be set: every pointer
 * must be NULL (-EINVAL otherwise). net/bpf/test_run.c, as of 6.x:
 *   - hook == NF_INET_LOCAL_OUT: data_in starts at the IP header;
 *   - any other hook: data_in starts with an Ethernet header whose type
 *     must agree with pf; eth_type_trans() pulls it, so the program still
 *     sees the IP header at offset 0 of the skb;
 *   - in/out are set to the netns's loopback device from the *default*
 *     hook (LOCAL_OUT) before the user's hook is copied: state->out = lo,
 *     state->in = NULL, whatever hook is asked for. The policies here do
 *     not match on interfaces, so that does not matter.
 *   - skb->_nfct is 0: the classifier sees conntrack state "invalid".
 */
struct nf_hook_state_ctx {
	uint8_t hook;
	uint8_t pf;
	void *in, *out, *sk, *net, *okfn;
};

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place; n > 0). */
static inline double bench_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
