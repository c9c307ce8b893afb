/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/netdev.h"

#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netdev.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "netlink/nl.h"

static struct nlmsghdr *genl_start(char *buf, uint16_t family, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = family;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (unsigned)time(NULL);
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

static int family_id_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID) *
		(uint16_t *)data = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int dev_features_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nl_netdev_xdp *info = data;
	struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr))
	{
		if (mnl_attr_get_type(a) == NETDEV_A_DEV_XDP_FEATURES)
			info->xdp_features = mnl_attr_get_u64(a);
		else if (mnl_attr_get_type(a) == NETDEV_A_DEV_XDP_ZC_MAX_SEGS)
			info->zc_max_segs = mnl_attr_get_u32(a);
	}
	return MNL_CB_OK;
}

int nl_netdev_xdp_probe(int ifindex, struct nl_netdev_xdp *info)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	_cleanup_(nl_closep) struct mnl_socket *nl = nl_open(NETLINK_GENERIC);
	struct nlmsghdr *nlh;
	uint16_t family = 0;
	int r;

	memset(info, 0, sizeof(*info));
	if (!nl)
		return -errno;
	nlh = genl_start(buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY_NAME);
	if ((r = nl_talk(nl, nlh, family_id_cb, &family)) < 0)
		return r;
	nlh = genl_start(buf, family, NETDEV_CMD_DEV_GET, NETDEV_FAMILY_VERSION);
	mnl_attr_put_u32(nlh, NETDEV_A_DEV_IFINDEX, (uint32_t)ifindex);
	return nl_talk(nl, nlh, dev_features_cb, info);
}
