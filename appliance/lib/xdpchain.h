/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A capture on an interface where nfbox's early drop runs alone (libxdp's
 * dispatcher refused by the kernel): the capture's program is chained
 * after the early program by a tail call (bpf/nfbox_early.h). Both sides
 * find each other through the kernel: the program attached to the
 * interface, and the maps that program uses, by name.
 */
#ifndef NFBOX_LIB_XDPCHAIN_H
#define NFBOX_LIB_XDPCHAIN_H

#include <stdbool.h>
#include <stdint.h>

/* The XDP program attached to ifindex (driver or generic mode): its id, 0
 * if none; *native whether in driver mode. */
uint32_t xdp_attached_id(int ifindex, bool *native);
/* Whether program id is nfbox's early drop (NFB_EARLY_PROG_NAME). */
bool xdp_is_early(uint32_t id);
/* The map called name among those of program id, as a new fd; -errno. */
int xdp_prog_map(uint32_t id, const char *name);
/* Whether the early program id is retired (nfb_early_cfg.active is
 * NFB_EARLY_RETIRED: it runs only for the programs chained to it) and
 * nothing is chained to it on ifindex any more. */
bool xdp_early_unused(uint32_t id, int ifindex);
/* Detach program id from ifindex, if it is still the one attached. */
int xdp_detach_id(int ifindex, uint32_t id);
/* Whether program id is an nfbox capture's (NFB_CAPTURE_PROG_NAME). */
bool xdp_is_capture(uint32_t id);
/* Detach the XDP link that holds ifindex (a capture's, which then
 * follows: capture_reseat). 0, -ENOENT if none, -errno. */
int xdp_link_detach_on(int ifindex);

#endif
