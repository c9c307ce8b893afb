/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Out of memory at every allocation of the loader, the BPF backend's
 * compiler and encoder, and the nftables builder: with the Nth allocation
 * failing, for every N until one run needs fewer, each step either
 * succeeds or returns an error (-ENOMEM, or a diagnostic), never crashes,
 * and frees what it took (ASan's leak check at exit). The allocations are
 * wrapped at link time (-Wl,--wrap, the Makefile's rule for this test), so
 * only nfbox's own code sees them fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/check.h"
#include "backend/bpf/compile/plan.h"
#include "backend/nftables/nft/build.h"
#include "policy/policy.h"

static long fail_at = -1; /* the allocation that fails (counted from 1); -1: none */
static long calls;

static bool trace; /* print where the failing allocation is (a failure that went unnoticed) */

/* The sanitizers' (the test build); weak, so that make coverage's build,
 * which has none, links and says so instead. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool fails(void)
{
	if (fail_at <= 0 || ++calls != fail_at)
		return false;
	if (trace && __sanitizer_print_stack_trace)
		__sanitizer_print_stack_trace();
	else if (trace)
		fprintf(stderr, "allocation %ld fails here (no stack trace: this build has no sanitizer)\n", calls);
	return true;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

void *__wrap_malloc(size_t n)
{
	return fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fails() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fails() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fails() ? NULL : __real_strndup(s, n);
}

/* One run with allocation `at` failing: whether that allocation was
 * reached (the run made at least `at`), and the steps' results. */
static bool run(const char *text, long at, int *load, int *plan, int *nft, size_t *dropped)
{
	struct nft_build_opts o = { .filter = true };
	struct plan_blob blob = { 0 };
	struct policy *p = NULL;
	struct plan *pl = NULL;
	struct nfr_table t;
	struct diags d;

	diags_init(&d);
	nfr_init(&t);
	calls = 0;
	fail_at = at;
	*plan = *nft = 0;
	*load = policy_load_buffer("enomem.yaml", text, strlen(text), &d, &p);
	if (*load == 0) {
		/* as the daemon makes it: a blob it keeps (left empty on failure,
		 * so it is freed only on success: a leak is ASan's to find) */
		if ((*plan = plan_make(p, &pl, &blob, &d)) == 0)
			plan_blob_free(&blob);
		*nft = nft_build(p, &o, &t, &d);
	}
	fail_at = -1;
	*dropped = d.dropped; /* a message it had no memory for: counted, and said so */
	nfr_free(&t);
	plan_free(pl);
	policy_free(p);
	diags_free(&d);
	return calls >= at;
}

static void every_allocation(const char *name, const char *text)
{
	int load, plan, nft;
	size_t dropped;
	long n;

	check_begin(name);
	run(text, -1, &load, &plan, &nft, &dropped); /* with no failure planned, every step passes */
	CHECK_EQ_INT(load, 0);
	CHECK_EQ_INT(plan, 0);
	CHECK_EQ_INT(nft, 0);
	for (n = 1; run(text, n, &load, &plan, &nft, &dropped); n++) {
		/* the failure was reached: some step must say so (or the message
		 * it failed to make is counted as dropped) */
		if (!load && !plan && !nft && !dropped) {
			check_fail_at(__FILE__, __LINE__, "allocation %ld failed and every step succeeded; it is:", n);
			trace = true;
			run(text, n, &load, &plan, &nft, &dropped);
			trace = false;
			break;
		}
		if (load && load != -ENOMEM && load != -EINVAL)
			check_fail_at(__FILE__, __LINE__, "allocation %ld: load returned %d", n, load);
		if (plan && plan != -ENOMEM)
			check_fail_at(__FILE__, __LINE__, "allocation %ld: plan_make returned %d", n, plan);
		if (nft && nft != -ENOMEM)
			check_fail_at(__FILE__, __LINE__, "allocation %ld: nft_build returned %d", n, nft);
	}
	printf("# %s: %ld allocations, each failed once\n", name, n - 1);
	CHECK(n > 100); /* the runs counted real allocations */
	check_end();
}

int main(void)
{
	every_allocation(
		"enomem-office",
		"version: 1\n"
		"interfaces: { lan: [lan0, \"vlan*\"], wan: [wan0] }\n"
		"sets: { office: [198.51.100.0/24, \"2001:db8:1::/64\", 192.0.2.10-192.0.2.20], bad: { dynamic: true } "
		"}\n"
		"services: { web: [tcp/80, tcp/443, udp/443], mail: [tcp/25, tcp/587] }\n"
		"hooks: { forward: { default: drop }, input: { default: drop }, output: { default: accept } }\n"
		"options: { established: rules }\n"
		"nat:\n  - masquerade: { out: wan }\n"
		"  - forward-port: { in: wan, service: tcp/8080, to: \"198.51.100.10:80\" }\n"
		"rules:\n"
		"  - { name: bad, from: bad, action: drop }\n"
		"  - { name: web, in: lan, out: \"!lan\", from: office, service: web, state: new, action: accept, log: "
		"true }\n"
		"  - { name: mail, in: lan, service: mail, action: accept }\n"
		"  - { name: dns, service: [udp/53, tcp/53], action: accept, limit: { rate: 10/second, per: source } "
		"}\n"
		"  - { name: ping, proto: icmp, icmp-type: [echo-request, 0], action: accept, limit: 5/second }\n"
		"  - { name: ping6, hook: [input, forward], proto: icmpv6, icmp-type: echo-request, action: reject }\n"
		"  - { name: ssh, hook: input, in: lan, service: tcp/22, action: accept }\n"
		"  - { name: out, hook: output, to: \"!office\", source-service: udp/1000-2000, action: drop }\n");
	CHECK_EXIT();
}
