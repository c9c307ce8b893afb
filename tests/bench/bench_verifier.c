/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the kernel's verifier costs to load the classifier: each `nfbox run`
 * with the BPF backend (a start, an upgrade) loads nfbox_filter, and the
 * verifier's walk of it was the largest CPU cost of a start.
 *
 * The object is loaded whole (its maps made, nothing attached, nothing
 * pinned) REPEAT (5) times; for the program nfbox_filter the kernel's own
 * figures are read from its statistics log (BPF_LOG_STATS: instructions
 * processed, states, verification time), and the load is timed in this
 * process's CPU time (the verifier runs in the bpf() system call; on a busy
 * machine wall time says more about the neighbours). Each round also loads
 * the object without its programs (maps, BTF, libbpf's own work): the
 * programs' share is the difference (nfbox_filter's, and nfbox_conns' few
 * hundred instructions). Medians are printed with the figures
 * of the program before issue 40 made its subprograms global.
 *
 * usage: bench_verifier [-r REPEAT] [OBJECT]
 *   OBJECT  a nfbox_filter.bpf.o to measure instead of the one built in
 *           (the skeleton's), e.g. another build's, to compare
 * Needs root (BPF). Exit status 0 if every load succeeded, 1 otherwise.
 */
#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/nfbox_filter.skel.h"
#include "tests/bench/bench.h"

#define LOG_SIZE   (1u << 16)
#define MAX_REPEAT 50

/* The classifier before issue 40 (bd7ab85), measured by this tool on this
 * machine kind (kernel 6.18, clang 14; tests/bench/README.md, 1a). */
#define BEFORE_INSNS  243120
#define BEFORE_STATES 14534
#define BEFORE_MS     805

struct sample {
	double insns, states, peak, verify_ms, cpu_ms, bare_ms, prog_ms;
};

static double now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The numbers after key in the kernel's statistics log; 0 if absent. */
static double log_num(const char *log, const char *key)
{
	const char *p = strstr(log, key);

	return p ? strtod(p + strlen(key), NULL) : 0;
}

/* One load of the object, with its programs or without (progs false);
 * the CPU time of the load in *cpu_ms, the filter's statistics in s. */
static int load_once(const char *path, bool progs, struct sample *s, double *cpu_ms)
{
	static char log[LOG_SIZE];
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct bpf_object *obj;
	struct bpf_program *prog;
	const void *elf;
	size_t sz;
	double c0;
	int err;

	obj = path ? bpf_object__open_file(path, &opts) : NULL;
	if (!path) {
		elf = nfbox_filter_bpf__elf_bytes(&sz);
		obj = bpf_object__open_mem(elf, sz, &opts);
	}
	if (!obj) {
		fprintf(stderr, "bench_verifier: cannot open %s\n", path ? path : "the built-in object");
		return -1;
	}
	prog = bpf_object__find_program_by_name(obj, "nfbox_filter");
	if (!prog) {
		fprintf(stderr, "bench_verifier: no program nfbox_filter\n");
		bpf_object__close(obj);
		return -1;
	}
	log[0] = 0;
	if (progs) {
		bpf_program__set_log_buf(prog, log, sizeof(log));
		bpf_program__set_log_level(prog, 4); /* BPF_LOG_STATS: the summary only */
	} else {
		bpf_object__for_each_program(prog, obj) bpf_program__set_autoload(prog, false);
	}
	c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	err = bpf_object__load(obj);
	*cpu_ms = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (err) {
		fprintf(stderr, "bench_verifier: load failed (%d):\n%s\n", err, log);
		bpf_object__close(obj);
		return -1;
	}
	bpf_object__close(obj);
	if (!progs)
		return 0;
	s->insns = log_num(log, "processed ");
	s->states = log_num(log, "total_states ");
	s->peak = log_num(log, "peak_states ");
	s->verify_ms = log_num(log, "verification time ") / 1e3;
	return s->insns > 0 ? 0 : -1;
}

static double median_of(struct sample *v, unsigned n, size_t off)
{
	double x[MAX_REPEAT];
	unsigned i;

	for (i = 0; i < n; i++)
		x[i] = *(double *)((char *)&v[i] + off);
	return bench_median(x, n);
}

#define MED(field) median_of(s, repeat, offsetof(struct sample, field))

int main(int argc, char **argv)
{
	struct sample s[MAX_REPEAT];
	unsigned repeat = 5, i;
	const char *path = NULL;
	int c;

	while ((c = getopt(argc, argv, "r:")) != -1) {
		if (c != 'r') {
			fprintf(stderr, "usage: bench_verifier [-r REPEAT] [OBJECT]\n");
			return 1;
		}
		repeat = (unsigned)atoi(optarg);
	}
	if (repeat < 1 || repeat > MAX_REPEAT) {
		fprintf(stderr, "bench_verifier: -r takes 1 to %d\n", MAX_REPEAT);
		return 1;
	}
	if (optind < argc)
		path = argv[optind];
	libbpf_set_print(NULL);
	for (i = 0; i < repeat; i++) {
		if (load_once(path, true, &s[i], &s[i].cpu_ms) < 0 || load_once(path, false, &s[i], &s[i].bare_ms) < 0)
			return 1;
		s[i].prog_ms = s[i].cpu_ms - s[i].bare_ms;
	}
	printf("== the classifier's load (nfbox_filter, %s), median of %u loads\n", path ? path : "this build", repeat);
	printf("filter program: %.0f insns processed (before: %d), %.0f states (before: %d; peak %.0f)\n", MED(insns),
	       BEFORE_INSNS, MED(states), BEFORE_STATES, MED(peak));
	printf("filter program: load %.0f ms CPU (before: ~%d ms); the object %.0f ms CPU, %.0f of them without "
	       "its programs; verification time (the kernel's, wall) %.0f ms\n",
	       MED(prog_ms), BEFORE_MS, MED(cpu_ms), MED(bare_ms), MED(verify_ms));
	return 0;
}
