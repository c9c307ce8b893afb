/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rules with early: true, dropped at XDP (bpf/nfbox_early.h) on their input
 * interfaces through libxdp's dispatcher, so that another XDP program on
 * the same interface (a capture) runs after it. The program and its maps
 * are pinned in the pin directory's bpf filesystem (LIBXDP_BPFFS): they
 * keep dropping when the daemon dies, and the next daemon adopts them.
 *
 * The early rules stay in the classifier too: XDP only drops sooner what
 * the hook would drop. So a moment without XDP (an interface that appeared
 * a moment ago, a reload being written) loses speed, never protection.
 */
#ifndef NFBOX_BACKEND_BPF_EARLY_H
#define NFBOX_BACKEND_BPF_EARLY_H

#include "backend/bpf/compile/plan.h"
#include "backend/bpf/engine/engine.h"
#include "base/diag.h"

struct early;

/* The early drop of engine e's classifier, pinned under pin_dir/early;
 * what a daemon before left there is adopted. 0 or -errno in d. */
int early_open(struct engine *e, const char *pin_dir, struct early **out, struct diags *d);
/* The file descriptors closed; the program stays attached (pinned). */
void early_close(struct early *ea);
/* Before pl is put in force: the program attached to every interface
 * present that one of pl's early rules names (nothing drops there until
 * early_apply). An interface that cannot take XDP fails here. */
int early_prepare(struct early *ea, const struct plan *pl, struct diags *d);
/* pl in force (its counters' slots in slots): its early rules' maps
 * written as a new generation and flipped to in one step; detached where
 * no early rule is left. pl NULL or without early rules: detached
 * everywhere. */
int early_apply(struct early *ea, const struct plan *pl, const struct slot_map *slots, struct diags *d);
/* Interfaces came or went (pl, slots: the policy in force): attached to
 * those that appeared, and a generation with their ifindexes. */
int early_links_changed(struct early *ea, const struct plan *pl, const struct slot_map *slots, struct diags *d);
/* Detached everywhere and the pins removed (a stop that does not keep the
 * state, or the other backend in force). */
void early_destroy(struct early *ea);
/* The interfaces it drops on now, as "wan0, wan1" in buf ("" if none);
 * how many. */
uint32_t early_ifaces(const struct early *ea, char *buf, size_t len);
/* How many of pl's rules have early: true. */
uint32_t early_count(const struct plan *pl);

#endif
