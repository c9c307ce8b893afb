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

struct json;
/* The same as JSON objects (into an array j has open), one per change:
 *   kind    option, hook, group, set, service, rule, nat, capture, ha
 *   hook    a rule's hook (null otherwise)
 *   name    the option, hook, definition, rule or capture (null: nat, ha)
 *   change  added, removed, moved, changed
 *   key     changed: which key (a rule's from, action, ...; a hook's
 *           default; a definition's elements; ha's virtual); else null
 *   old, new  the key's values as written (null where there is none)
 *   detail  added or removed: what it is (a rule's keys, a NAT entry);
 *           elements: "+added, -removed"
 *   position, of  a rule added or moved: its place among the new rules
 *   from    a rule moved: its old place
 *   elements  a group, set or service added: how many it has
 *   text    the line policy_diff() writes */
unsigned long policy_diff_json(const struct policy *old, const struct policy *new, struct json *j);

/* diff --json's document to f: {"valid": both policies are (old and new
 * not NULL), "changes": [policy_diff_json()], "warnings": [what warnings
 * writes, if not NULL: objects], "diagnostics": [diags_json() of d]}.
 * Returns how many changes there were. */
unsigned long policy_diff_doc(const struct policy *old, const struct policy *new, const struct diags *d,
			      void (*warnings)(struct json *j, void *arg), void *arg, FILE *f);

#endif
