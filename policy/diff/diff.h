/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What changes in meaning from one policy to another, by name: rules added,
 * removed, moved (their order among the rules both have) or changed (a key
 * or the action), per hook; elements added to and removed from sets,
 * services and interface groups; hook defaults and options; NAT entries and
 * captures. Not a text diff: comments, spacing, key order and the order of
 * definitions change nothing and are not reported.
 */
#ifndef NFBOX_POLICY_DIFF_H
#define NFBOX_POLICY_DIFF_H

#include <stdio.h>

#include "policy/policy.h"

/* Writes one line per difference to f; returns how many there were. */
unsigned long policy_diff(const struct policy *old, const struct policy *new, FILE *f);

#endif
