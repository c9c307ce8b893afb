/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Engine: the netfilter links, one per enabled hook and family, pinned;
 * replaced without a gap when the defrag flag changes. */
/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <stdio.h>
#include <unistd.h>

#include "backend/bpf/engine/engine_int.h"
#include "lib/nfhook.h"

static const uint32_t nf_pf[NFB_FAM_MAX] = { NFPROTO_IPV4, NFPROTO_IPV6 };

int engine_link_path(char *buf, size_t len, const struct engine *e, int hook, int fam)
{
	char name[32];

	snprintf(name, sizeof(name), "%s-%s", policy_hook_name((enum policy_hook)hook), engine_fam_name(fam));
	return engine_path(buf, len, e, "links", name);
}

int engine_link_read_info(struct engine_link *l)
{
	struct bpf_link_info info = { 0 };
	uint32_t len = sizeof(info);

	if (bpf_link_get_info_by_fd(l->fd, &info, &len) < 0)
		return -errno;
	l->defrag = info.netfilter.flags & BPF_F_NETFILTER_IP_DEFRAG;
	l->priority = info.netfilter.priority;
	l->id = info.id;
	return 0;
}

static int link_attach(struct engine *e, int hook, int fam, bool defrag, int32_t priority, struct engine_link *out)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts);
	int fd;

	opts.netfilter.pf = nf_pf[fam];
	opts.netfilter.hooknum = nf_hook_of((enum policy_hook)hook);
	opts.netfilter.priority = priority;
	opts.netfilter.flags = defrag ? BPF_F_NETFILTER_IP_DEFRAG : 0;
	fd = bpf_link_create(e->prog_fd, 0, BPF_NETFILTER, &opts);
	if (fd < 0)
		return -errno;
	*out = (struct engine_link){ .fd = fd, .defrag = defrag, .priority = priority };
	engine_link_read_info(out);
	return 0;
}

static void link_drop(struct engine *e, struct engine_link *l, int hook, int fam)
{
	char path[512];

	if (e->pin_dir && engine_link_path(path, sizeof(path), e, hook, fam) == 0)
		unlink(path);
	bpf_link_detach(l->fd);
	close(l->fd);
	l->fd = -1;
}

/* A new link for hook/fam takes the place of cur: attached and pinned
 * first, then the old one detached, so there is no instant without
 * enforcement. On failure cur stays as it was, pinned. */
static int link_replace(struct engine *e, struct engine_link *cur, int hook, int fam, bool defrag, struct diags *d)
{
	struct engine_link nl;
	char path[512];
	int r = -EBUSY;

	/* The first priority of the span that is not the current link's and
	 * that no other hook of this point uses (EBUSY: another BPF link,
	 * or a chain such as someone's nat or filter at that number). */
	for (int32_t prio = NFB_PRIORITY; prio < NFB_PRIORITY + NFB_PRIORITY_SPAN && r == -EBUSY; prio++) {
		if (cur->fd >= 0 && prio == cur->priority)
			continue;
		r = link_attach(e, hook, fam, defrag, prio, &nl);
	}
	if (r == -EBUSY)
		return diag_errno(d, r,
				  "cannot attach the netfilter link for %s/%s: priorities %d to %d are all taken by "
				  "other hooks (nft list hooks shows them)",
				  policy_hook_name((enum policy_hook)hook), engine_fam_name(fam), NFB_PRIORITY,
				  NFB_PRIORITY + NFB_PRIORITY_SPAN - 1);
	if (r < 0)
		return diag_errno(d, r, "cannot attach the netfilter link for %s/%s",
				  policy_hook_name((enum policy_hook)hook), engine_fam_name(fam));
	/* pinned over the old one's pin: the path never lacks a link */
	if (e->pin_dir &&
	    ((r = engine_link_path(path, sizeof(path), e, hook, fam)) < 0 || (r = engine_pin_over(nl.fd, path)) < 0)) {
		r = diag_errno(d, r, "cannot pin link %s", path);
		bpf_link_detach(nl.fd); /* the old one stays in force, pinned */
		close(nl.fd);
		return r;
	}
	if (cur->fd >= 0) {
		bpf_link_detach(cur->fd);
		close(cur->fd);
	}
	*cur = nl;
	return 0;
}

int engine_link_renew(struct engine *e, int hook, int fam, struct diags *d)
{
	struct engine_link *cur = &e->link[hook][fam];

	return link_replace(e, cur, hook, fam, cur->defrag, d);
}

/* Make the links match the plan: one per enabled hook and family, with the
 * plan's defrag flag. A link whose flag changes is replaced (at the other
 * priority, then the old one detached). */
int engine_links_sync(struct engine *e, const struct plan *pl, struct diags *d)
{
	bool defrag = pl->pol->opt.defrag;
	int r;

	for (int h = 0; h < NFB_HOOK_MAX; h++) {
		for (int f = 0; f < NFB_FAM_MAX; f++) {
			struct engine_link *cur = &e->link[h][f];

			if (!pl->hook[h].enabled) {
				if (cur->fd >= 0)
					link_drop(e, cur, h, f);
				continue;
			}
			if (cur->fd >= 0 && cur->defrag == defrag)
				continue;
			if ((r = link_replace(e, cur, h, f, defrag, d)) < 0)
				return r;
		}
	}
	return 0;
}

void engine_unhook(struct engine *e)
{
	for (int h = 0; e && h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			if (e->link[h][f].fd >= 0)
				link_drop(e, &e->link[h][f], h, f);
}

bool engine_hooked(const struct engine *e)
{
	for (int h = 0; e && h < NFB_HOOK_MAX; h++)
		for (int f = 0; f < NFB_FAM_MAX; f++)
			if (e->link[h][f].fd >= 0)
				return true;
	return false;
}
