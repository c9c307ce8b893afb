/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Checks over a whole loaded policy: each reports through d, at the place
 * of the element concerned. The loader runs them after every section is in. */
#ifndef NFBOX_POLICY_CHECK_H
#define NFBOX_POLICY_CHECK_H

#include "policy/policy.h"

/* Groups, sets and services never used; rules an option makes unreachable;
 * captures on interfaces the policy filters (warnings). */
void check_unused(struct policy *p, struct diags *d);
/* Rules an earlier rule of the same hook always matches first (warnings). */
void check_shadowed(const struct policy *p, struct diags *d);
/* 'defrag: false' leaves conntrack off: what needs it is an error, and
 * 'established' falls back to 'rules'. */
void check_defrag_off(struct policy *p, struct diags *d);
/* Two targets for one port, two source translations for one interface
 * (errors); a forward-port or redirect that no rule lets in (warning). */
void check_nat(const struct policy *p, struct diags *d);
/* Rules with early: true keep their meaning when dropped at XDP: errors
 * where they would not. */
void check_early(const struct policy *p, struct diags *d);
/* Rules with synproxy: true: TCP accept rules on input or forward, with
 * conntrack, that no earlier rule keeps the handshake's last ACK from. */
void check_synproxy(const struct policy *p, struct diags *d);
/* The families the policy forwards or translates that the host (host:
 * POLICY_FAM_* it forwards) does not forward: a warning each, with the fix. */
void check_forwarding(const struct policy *p, uint8_t host, struct diags *d);

/* Rules that name a country set whose database cannot be read: the set
 * starts empty, so a block by country fails open (a warning at the rule
 * that says what it means; an error under --strict). */
void check_empty_feeds(const struct policy *p, struct diags *d);

#endif
