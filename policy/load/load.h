/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The loader's sections, one file each, called by load.c in this order. */
#ifndef NFBOX_POLICY_LOAD_H
#define NFBOX_POLICY_LOAD_H

#include "policy/load/lx.h"

/*
 * Layers, each file using only those below it: lx.c and read.c (typed
 * reads of nodes, files), names.c (lookups), match.c (the matches), the
 * sections (defs.c, rules.c, nat.c, capture.c, ha.c), load.c (the entry).
 */

/* Definitions (defs.c). */
void load_interfaces(struct lx *x, const struct ynode *n);
void load_sets(struct lx *x, const struct ynode *n);
void load_services(struct lx *x, const struct ynode *n);
void load_hooks(struct lx *x, const struct ynode *n);
void load_options(struct lx *x, const struct ynode *n);

/* What the definitions named, and interface names (names.c). */
struct addr_set *lx_find_set(struct lx *x, const char *name);
struct service *lx_find_service(struct lx *x, const char *name);
struct iface_group *lx_find_group(struct lx *x, const char *name);
struct iface_group *lx_group_member(struct lx *x, const char *ifname);
bool lx_check_ifname(struct lx *x, const struct ynode *n); /* reports a bad name; takes 'eth*' */
bool lx_check_ifname_in(struct lx *x, const struct ynode *n, bool wild);

/* Matches used by rules, NAT and capture (match.c). */
void lx_addr_match(struct lx *x, const struct ynode *n, const char *what, struct addr_match *m);
void lx_iface_match(struct lx *x, const struct ynode *n, const char *what, struct iface_match *m);
void lx_port_match(struct lx *x, const struct ynode *n, const char *what, struct port_match *m);
/* One item of a port list: "tcp/80", "tcp/80,443", "tcp/ssh". A bare port
 * or range ("443", "8000-8010") that follows such an item of the same list
 * is of its protocol, as nft's { 80, 443 }: *cont (NULL: not taken) holds
 * the protocol of the item before, 0 for none. */
void lx_port_list(struct lx *x, const struct ynode *n, uint8_t *cont,
		  void (*add)(struct lx *, const struct port_range *, void *), void *arg);
/* A bare port no item before gives a protocol: the error. */
void lx_bare_port(struct lx *x, const struct ynode *n);
/* An error where a negated match (neg) is not taken. */
/* A dynamic set is for rules only: an error where m names one. */
void lx_no_dynamic(struct lx *x, const struct ynode *n, struct addr_match *m, const char *where);
void lx_no_negation(struct lx *x, const struct ynode *n, bool neg, const char *where);
void lx_no_wildcard(struct lx *x, const struct ynode *n, const struct iface_match *m, const char *where);
int lx_addresses(struct lx *x, const char *text, struct loc loc,
		 bool (*add)(struct lx *, const struct prefix *, void *), void *arg);

/* The sections that use them (rules.c, nat.c, capture.c). */
void load_rules(struct lx *x, const struct ynode *n);
/* A set's country:/hosts: (feeds/part.c): false if it has neither (a set of
 * another kind), else read into s (a dynamic set). */
bool load_set_feed(struct lx *x, struct addr_set *s, const struct ynode *v);
/* A rule's when: (when.c). */
void load_when(struct lx *x, struct rule *r, const struct ynode *n);
void load_nat(struct lx *x, const struct ynode *n);
void load_captures(struct lx *x, const struct ynode *n);
/* ha: after the rules and NAT it checks against; adds the pair's own rules (ha.c). */
void load_ha(struct lx *x, const struct ynode *n, const struct ynode *key);

#endif
