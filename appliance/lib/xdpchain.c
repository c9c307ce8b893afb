/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "lib/xdpchain.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "bpf/nfbox.h"
#include "bpf/nfbox_early.h"

uint32_t xdp_attached_id(int ifindex, bool *native)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	*native = false;
	if (bpf_xdp_query(ifindex, 0, &q) < 0)
		return 0;
	if (q.drv_prog_id) {
		*native = true;
		return q.drv_prog_id;
	}
	return q.skb_prog_id;
}

static bool prog_named(uint32_t id, const char *name)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);
	_cleanup_close_ int fd = id ? bpf_prog_get_fd_by_id(id) : -1;

	return fd >= 0 && bpf_prog_get_info_by_fd(fd, &info, &len) == 0 && !strcmp(info.name, name);
}

bool xdp_is_early(uint32_t id)
{
	return prog_named(id, NFB_EARLY_PROG_NAME);
}

bool xdp_is_capture(uint32_t id)
{
	return prog_named(id, "nfb_capture");
}

int xdp_link_detach_on(int ifindex)
{
	uint32_t id = 0;

	while (bpf_link_get_next_id(id, &id) == 0) {
		struct bpf_link_info info = { 0 };
		uint32_t len = sizeof(info);
		_cleanup_close_ int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0 || bpf_link_get_info_by_fd(fd, &info, &len) < 0)
			continue;
		if (info.type == BPF_LINK_TYPE_XDP && (int)info.xdp.ifindex == ifindex)
			return bpf_link_detach(fd) < 0 ? -errno : 0;
	}
	return -ENOENT;
}

int xdp_prog_map(uint32_t id, const char *name)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info), n;
	_cleanup_close_ int fd = bpf_prog_get_fd_by_id(id);
	_cleanup_free_ uint32_t *ids = NULL;

	if (fd < 0 || bpf_prog_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	n = info.nr_map_ids;
	if (!(ids = calloc(n ? n : 1, sizeof(*ids))))
		return -ENOMEM;
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = n;
	info.map_ids = (uint64_t)(uintptr_t)ids;
	len = sizeof(info);
	if (bpf_prog_get_info_by_fd(fd, &info, &len) < 0)
		return -errno;
	for (uint32_t i = 0; i < n && i < info.nr_map_ids; i++) {
		struct bpf_map_info mi = { 0 };
		uint32_t ml = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		if (bpf_map_get_info_by_fd(mfd, &mi, &ml) == 0 && !strncmp(mi.name, name, sizeof(mi.name) - 1))
			return mfd;
		close(mfd);
	}
	return -ENOENT;
}

bool xdp_early_unused(uint32_t id, int ifindex)
{
	_cleanup_close_ int cfg = xdp_prog_map(id, "nfb_early_cfg");
	_cleanup_close_ int chain = xdp_prog_map(id, "nfb_early_chain");
	struct nfb_early_cfg c;
	uint32_t zero = 0, key = (uint32_t)ifindex, slot;

	if (cfg < 0 || chain < 0 || bpf_map_lookup_elem(cfg, &zero, &c) < 0)
		return false;
	return c.active == NFB_EARLY_RETIRED && bpf_map_lookup_elem(chain, &key, &slot) < 0;
}

int xdp_detach_id(int ifindex, uint32_t id)
{
	_cleanup_close_ int fd = bpf_prog_get_fd_by_id(id);
	LIBBPF_OPTS(bpf_xdp_attach_opts, o, .old_prog_fd = fd);
	bool native;

	if (fd < 0)
		return -errno;
	if (xdp_attached_id(ifindex, &native) != id)
		return 0;
	return bpf_xdp_detach(ifindex, XDP_FLAGS_REPLACE | (native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE), &o) < 0
		       ? -errno
		       : 0;
}
