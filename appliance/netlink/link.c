/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "netlink/link.h"

#include <errno.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

#include "netlink/nl.h"

/* One request on a socket of its own. */
static int rtnl_talk(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct mnl_socket *nl = nl_open(NETLINK_ROUTE);
	int r;

	if (!nl)
		return -errno;
	r = nl_talk(nl, nlh, cb, data);
	mnl_socket_close(nl);
	return r;
}

static struct nlmsghdr *link_msg(char *buf, uint16_t type, uint16_t flags, int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = (unsigned)time(NULL);
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return nlh;
}

static void put_no_ipv6_addr(struct nlmsghdr *nlh)
{
	struct nlattr *spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC), *in6;

	in6 = mnl_attr_nest_start(nlh, AF_INET6);
	mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	mnl_attr_nest_end(nlh, in6);
	mnl_attr_nest_end(nlh, spec);
}

int nl_link_veth_create(const char *name, const char *peer, uint32_t mtu)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
	struct nlattr *info, *data, *pinfo;
	struct ifinfomsg *pifm;

	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	pinfo = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	pifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*pifm));
	pifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	mnl_attr_nest_end(nlh, pinfo);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return rtnl_talk(nlh, NULL, NULL);
}

int nl_link_no_ipv6_addr(int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, 0, ifindex);

	put_no_ipv6_addr(nlh);
	return rtnl_talk(nlh, NULL, NULL);
}

int nl_link_set_up(int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, 0, ifindex);
	struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return rtnl_talk(nlh, NULL, NULL);
}

int nl_link_del(int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	return rtnl_talk(link_msg(buf, RTM_DELLINK, 0, ifindex), NULL, NULL);
}

static int linkinfo_cb(const struct nlattr *a, void *data)
{
	struct nl_link *lf = data;

	if (mnl_attr_get_type(a) == IFLA_INFO_KIND && !mnl_attr_validate(a, MNL_TYPE_STRING))
		lf->veth = !strcmp(mnl_attr_get_str(a), "veth");
	return MNL_CB_OK;
}

static int link_attr_cb(const struct nlattr *a, void *data)
{
	struct nl_link *lf = data;

	if (mnl_attr_get_type(a) == IFLA_LINK && !mnl_attr_validate(a, MNL_TYPE_U32))
		lf->peer_ifindex = (int)mnl_attr_get_u32(a);
	else if (mnl_attr_get_type(a) == IFLA_LINKINFO)
		mnl_attr_parse_nested(a, linkinfo_cb, data);
	return MNL_CB_OK;
}

static int link_facts_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct ifinfomsg), link_attr_cb, data);
}

int nl_link_get(int ifindex, struct nl_link *lf)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	/* With NLM_F_ACK: the reply, then the ACK that ends rtnl_talk's wait. */
	struct nlmsghdr *nlh = link_msg(buf, RTM_GETLINK, 0, ifindex);

	memset(lf, 0, sizeof(*lf));
	return rtnl_talk(nlh, link_facts_cb, lf);
}
