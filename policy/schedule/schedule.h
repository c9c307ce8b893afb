/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whether a rule's schedule (when:) is open at an instant, and when it next
 * opens or closes (schedule.c). Each window is judged on its zone's wall
 * clock: a window opens when the clock shows its start on one of its days
 * and closes when it shows its end; where a change of offset skips over an
 * edge (the spring forward) the change happens at the jump.
 */
#ifndef NFBOX_POLICY_SCHEDULE_H
#define NFBOX_POLICY_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

#define SCHED_NEVER INT64_MAX

/* Whether w is open at the UTC instant t (seconds); no windows: always. */
bool sched_open(const struct policy_when *w, int64_t t);
/* The first instant after t at which sched_open() changes, looked for in
 * the next 8 days; SCHED_NEVER if it does not change in them (ask again
 * then). */
int64_t sched_next_change(const struct policy_when *w, int64_t t);

/* The states of p's scheduled rules at t, as the backends take them: bit
 * when.sched - 1 of words (SCHED_WORDS of them) set for each rule in
 * force. */
#define SCHED_WORDS (POLICY_MAX_SCHEDULED / 64)
void sched_words(const struct policy *p, int64_t t, uint64_t *words);

/* Whether p has a rule whose connections are cut at its edge (when.cut). */
bool sched_any_cut(const struct policy *p);

#endif
