/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The HA pair as a daemon part (part.c): what the other parts ask of it. */
#ifndef NFBOX_HA_PAIR_H
#define NFBOX_HA_PAIR_H

struct daemon;

/* This node's role in its pair ("master", "backup", ...); NULL while the
 * policy in force has no ha:. */
const char *ha_pair_role(const struct daemon *dm);

#endif
