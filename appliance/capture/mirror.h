/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Mirror port for `capture.mirror-from`: nfbox makes a veth pair, CAPIF (the
 * capture interface of the policy) and CAPIF's peer PEER (CAPIF with "-tx"),
 * both without addresses and with IPv6 off, and clones every frame that
 * FROM receives or sends (tcx ingress and egress programs,
 * bpf/nfbox_mirror.bpf.c) into PEER, so it arrives on CAPIF. The frames FROM
 * forwards are never changed or delayed by it.
 *
 * A pair left behind by an nfbox that was killed is recognised (a veth
 * whose peer has nfbox's name) and made anew; any other interface named
 * CAPIF is refused. The tcx links go with the process.
 */
#ifndef NFBOX_APPLIANCE_MIRROR_H
#define NFBOX_APPLIANCE_MIRROR_H

#include <stdint.h>

#include "base/diag.h"

struct mirror;

struct mirror_stats {
	uint64_t mirrored, bytes, failed;
};

/* Creates the veth pair (up, MTU 65535) and returns; nothing is cloned
 * until mirror_attach(). 0 or -errno, explained in d. */
int mirror_create(const char *from, const char *capif, struct diags *d, struct mirror **out);
/* Starts cloning FROM's traffic into the pair. 0 or -errno, explained in d. */
int mirror_attach(struct mirror *m, struct diags *d);
void mirror_get_stats(struct mirror *m, struct mirror_stats *out);
const char *mirror_peer(const struct mirror *m);
/* Stops cloning (the pair stays). */
void mirror_detach(struct mirror *m);
/* Detaches and deletes the pair; NULL is fine. */
void mirror_destroy(struct mirror *m);

#endif
