/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Mirror port (mirror.h): a veth pair (netlink/link.h) and two tcx programs
 * that clone into it. */
#include "capture/mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "netlink/link.h"
#include "bpf/nfbox_capture.h"
#include "bpf/nfbox_mirror.skel.h"

#define PEER_SUFFIX "-tx"
#define MIRROR_MTU  65535

struct mirror {
	char from[IF_NAMESIZE], capif[IF_NAMESIZE], peer[IF_NAMESIZE];
	int from_ifindex, peer_ifindex;
	struct nfbox_mirror_bpf *skel;
	struct bpf_link *in, *out;
};

/* No IPv6 link-local address on either end (so no DAD, router solicitation
 * or MLD from the pair): works where /proc/sys is read-only, as under the
 * systemd unit's ProtectKernelTunables=. Before the link goes up. */
static void no_ipv6_addr(int ifindex, const char *ifname)
{
	int r = nl_link_no_ipv6_addr(ifindex);

	if (r < 0)
		log_debug("mirror: addrgenmode none on %s: %s", ifname, strerror(-r));
}

/* IPv6 off as well where /proc/sys is writable: the pair stays silent. */
static void ipv6_off(const char *ifname)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		log_debug("mirror: cannot turn IPv6 off on %s: %s", ifname, strerror(errno));
	close(fd);
}

/* An interface named capif: ours from an earlier run (a veth whose peer is
 * named peer) is deleted; anything else is refused. */
static int clear_leftover(const struct mirror *m, struct diags *d)
{
	int idx = (int)if_nametoindex(m->capif), peer = (int)if_nametoindex(m->peer);
	struct nl_link lf;
	int r;

	if (!idx)
		return 0;
	r = nl_link_get(idx, &lf);
	if (r < 0)
		return diag_errno(d, r, "capture: cannot read interface %s", m->capif);
	if (!lf.veth || !peer || lf.peer_ifindex != peer)
		return diag_fail(d, -EEXIST,
				 "capture: interface %s already exists; with mirror-from nfbox creates it (a veth pair "
				 "%s/%s): name a free interface in the policy",
				 m->capif, m->capif, m->peer);
	log_info("capture: removing the mirror pair %s/%s left by an earlier nfbox", m->capif, m->peer);
	if ((r = nl_link_del(idx)) < 0)
		return diag_errno(d, r, "capture: cannot remove the old mirror pair %s/%s", m->capif, m->peer);
	return 0;
}

/* ---- API ---- */

/* The pair just made, without IPv6 and up. */
static int pair_up(struct mirror *m, struct diags *d)
{
	int r = 0, cap_idx = (int)if_nametoindex(m->capif);

	m->peer_ifindex = (int)if_nametoindex(m->peer);
	if (cap_idx && m->peer_ifindex) {
		no_ipv6_addr(cap_idx, m->capif);
		no_ipv6_addr(m->peer_ifindex, m->peer);
	}
	ipv6_off(m->capif);
	ipv6_off(m->peer);
	if (!cap_idx || !m->peer_ifindex || (r = nl_link_set_up(cap_idx)) < 0 ||
	    (r = nl_link_set_up(m->peer_ifindex)) < 0)
		return diag_errno(d, r < 0 ? r : -ENODEV, "capture: cannot bring the mirror pair %s/%s up", m->capif,
				  m->peer);
	return 0;
}

int mirror_create(const char *from, const char *capif, struct diags *d, struct mirror **out)
{
	_cleanup_free_ struct mirror *m = calloc(1, sizeof(*m));
	size_t keep;
	int r;

	if (!m)
		return diag_errno(d, -ENOMEM, "capture: mirror");
	snprintf(m->from, sizeof(m->from), "%s", from);
	snprintf(m->capif, sizeof(m->capif), "%s", capif);
	keep = strlen(capif) < IF_NAMESIZE - sizeof(PEER_SUFFIX) ? strlen(capif) : IF_NAMESIZE - sizeof(PEER_SUFFIX);
	snprintf(m->peer, sizeof(m->peer), "%.*s%s", (int)keep, capif, PEER_SUFFIX);
	if (!(m->from_ifindex = (int)if_nametoindex(from)))
		return diag_errno(d, -errno, "capture: mirror-from %s: no such interface", from);
	if ((r = clear_leftover(m, d)) < 0)
		return r;
	if ((r = nl_link_veth_create(m->capif, m->peer, MIRROR_MTU)) < 0) {
		diag_errno(d, r, "capture: cannot create the mirror pair %s/%s", m->capif, m->peer);
		return r;
	}
	if ((r = pair_up(m, d)) < 0) {
		mirror_destroy(TAKE_PTR(m)); /* the pair made above is deleted again */
		return r;
	}
	*out = TAKE_PTR(m);
	return 0;
}

int mirror_attach(struct mirror *m, struct diags *d)
{
	LIBBPF_OPTS(bpf_tcx_opts, opts);
	int r;

	m->skel = nfbox_mirror_bpf__open();
	if (!m->skel)
		return diag_errno(d, -errno, "capture: cannot open the mirror program");
	m->skel->rodata->nfb_mirror_ifindex = (uint32_t)m->peer_ifindex;
	if ((r = nfbox_mirror_bpf__load(m->skel)) < 0)
		return diag_errno(d, r, "capture: cannot load the mirror program");
	m->in = bpf_program__attach_tcx(m->skel->progs.nfb_mirror_in, m->from_ifindex, &opts);
	if (!m->in || !(m->out = bpf_program__attach_tcx(m->skel->progs.nfb_mirror_out, m->from_ifindex, &opts)))
		return diag_errno(d, -errno, "capture: cannot attach the mirror to %s (tcx)", m->from);
	return 0;
}

void mirror_get_stats(struct mirror *m, struct mirror_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct nfb_mirror_counters *v;
	uint32_t zero = 0;

	memset(out, 0, sizeof(*out));
	if (!m || !m->skel || ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(m->skel->maps.nfb_mirror_counters), &zero, v))
		for (int i = 0; i < ncpu; i++) {
			out->mirrored += v[i].mirrored;
			out->bytes += v[i].bytes;
			out->failed += v[i].failed;
		}
	free(v);
}

const char *mirror_peer(const struct mirror *m)
{
	return m ? m->peer : "";
}

void mirror_detach(struct mirror *m)
{
	bpf_link__destroy(m->in);
	bpf_link__destroy(m->out);
	m->in = m->out = NULL;
}

void mirror_destroy(struct mirror *m)
{
	int idx;

	if (!m)
		return;
	mirror_detach(m);
	nfbox_mirror_bpf__destroy(m->skel);
	/* Only the pair we made: the peer index is set once it exists. */
	if (m->peer_ifindex && (idx = (int)if_nametoindex(m->capif)))
		nl_link_del(idx);
	free(m);
}
