/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The keepalived and conntrackd configurations of a pair (config.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/config.h"

static int join(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int ha_paths_init(struct ha_paths *p, const char *dir)
{
	int r = 0;

	memset(p, 0, sizeof(*p));
	if (snprintf(p->dir, sizeof(p->dir), "%s", dir) >= (int)sizeof(p->dir))
		return -ENAMETOOLONG;
	r |= join(p->keepalived_conf, dir, "keepalived.conf");
	r |= join(p->conntrackd_conf, dir, "conntrackd.conf");
	r |= join(p->fifo, dir, "keepalived.fifo");
	r |= join(p->ctl, dir, "conntrackd.ctl");
	r |= join(p->lock, dir, "conntrackd.lock");
	r |= join(p->pid, dir, "keepalived.pid");
	r |= join(p->vrrp_pid, dir, "keepalived-vrrp.pid");
	r |= join(p->checkers_pid, dir, "keepalived-checkers.pid");
	r |= join(p->bfd_pid, dir, "keepalived-bfd.pid");
	return r ? -ENAMETOOLONG : 0;
}

void ha_instance_name(const struct ha_virtual *v, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%u%s", v->ifname, v->id, v->addr.family == POLICY_FAM_IPV6 ? "_v6" : "");
}

/* An address with its prefix length, as an interface carries it. */
static void addr_text(const struct prefix *p, char *buf, size_t len)
{
	policy_prefix_format(p, buf, len);
}

/* The address alone. */
static void host_text(const struct prefix *p, char *buf, size_t len)
{
	struct prefix h = *p;

	h.plen = h.family == POLICY_FAM_IPV4 ? 32 : 128;
	policy_prefix_format(&h, buf, len);
}

/* keepalived's advert_int: seconds, to the centisecond VRRPv3 carries. */
static void advert_text(uint32_t ms, char *buf, size_t len)
{
	uint32_t cs = ms / 10;

	if (cs % 100)
		snprintf(buf, len, "%u.%02u", cs / 100, cs % 100);
	else
		snprintf(buf, len, "%u", cs / 100);
}

char *ha_keepalived_conf(const struct ha_conf *ha, const struct ha_paths *paths, const char *source)
{
	char *text = NULL, name[64], addr[64], advert[16];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f,
		"# Written by nfbox from the ha: section of %s.\n# Edit the policy, not this file: nfbox writes it "
		"again at every load.\n",
		source);
	fprintf(f,
		"global_defs {\n"
		"\trouter_id nfbox\n"
		"\tnotify_fifo %s\n"
		"\t# VRRPv3: adverts in centiseconds (v2 counts whole seconds)\n"
		"\tvrrp_version 3\n"
		"\t# an interface that is not there yet puts its instance in FAULT until it comes\n"
		"\tdynamic_interfaces\n"
		"\t# nfbox runs no scripts; keepalived then needs no script user of its own\n"
		"\tscript_user nobody\n"
		"}\n",
		paths->fifo);
	if (ha->nvirt > 1) {
		fprintf(f,
			"\n# The addresses move together: a fault on one interface hands all of them "
			"over.\nvrrp_sync_group %s {\n\tgroup {\n",
			HA_SYNC_GROUP);
		for (uint32_t i = 0; i < ha->nvirt; i++) {
			ha_instance_name(&ha->virt[i], name, sizeof(name));
			fprintf(f, "\t\t%s\n", name);
		}
		fprintf(f, "\t}\n}\n");
	}
	for (uint32_t i = 0; i < ha->nvirt; i++) {
		const struct ha_virtual *v = &ha->virt[i];

		ha_instance_name(v, name, sizeof(name));
		addr_text(&v->addr, addr, sizeof(addr));
		advert_text(ha->advert_ms, advert, sizeof(advert));
		fprintf(f,
			"\nvrrp_instance %s {\n"
			"\tstate BACKUP\n"
			"\tinterface %s\n"
			"\tvirtual_router_id %u\n"
			"\tpriority %u\n"
			"\tadvert_int %s\n"
			"\tpreempt_delay %u\n"
			"\tvirtual_ipaddress {\n"
			"\t\t%s dev %s\n"
			"\t}\n"
			"}\n",
			name, v->ifname, v->id, ha->priority, advert, ha->preempt_delay, addr, v->ifname);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

char *ha_conntrackd_conf(const struct ha_conf *ha, const struct prefix *sync_addr, const struct prefix *sync_peer,
			 const struct ha_paths *paths, const char *source)
{
	const char *fam = sync_peer->family == POLICY_FAM_IPV6 ? "IPv6" : "IPv4";
	char *text = NULL, local[64], peer[64];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	host_text(sync_addr, local, sizeof(local));
	host_text(sync_peer, peer, sizeof(peer));
	fprintf(f,
		"# Written by nfbox from the ha: section of %s.\n# Edit the policy, not this file: nfbox writes it "
		"again at every load.\n",
		source);
	fprintf(f,
		"Sync {\n"
		"\t# Reliable (acknowledged, resent) sync; what the peer sends waits in\n"
		"\t# the external cache and is committed to the kernel on becoming master.\n"
		"\tMode FTFW {\n"
		"\t\tDisableExternalCache Off\n"
		"\t\tPurgeTimeout 60\n"
		"\t}\n"
		"\tUDP {\n"
		"\t\t%s_address %s\n"
		"\t\t%s_Destination_Address %s\n"
		"\t\tPort %u\n"
		"\t\tInterface %s\n"
		"\t\tSndSocketBuffer 1249280\n"
		"\t\tRcvSocketBuffer 1249280\n"
		"\t\tChecksum on\n"
		"\t}\n"
		"}\n",
		fam, local, fam, peer, HA_SYNC_PORT, ha->sync_ifname);
	fprintf(f,
		"General {\n"
		"\tSystemd off\n"
		"\tHashSize 32768\n"
		"\tHashLimit 262144\n"
		"\t# Messages go to nfbox, which reads conntrackd's output into its log.\n"
		"\tLogFile off\n"
		"\tSyslog off\n"
		"\tLockFile %s\n"
		"\tUNIX {\n"
		"\t\tPath %s\n"
		"\t}\n"
		"\tNetlinkBufferSize 2097152\n"
		"\tNetlinkBufferSizeMaxGrowth 8388608\n"
		"\tNetlinkOverrunResync On\n"
		"\t# Forwarded flows only: not the node's own loopback and sync traffic.\n"
		"\tFilter From Userspace {\n"
		"\t\tProtocol Accept {\n"
		"\t\t\tTCP\n"
		"\t\t\tUDP\n"
		"\t\t\tSCTP\n"
		"\t\t\tICMP\n"
		"\t\t\tIPv6-ICMP\n"
		"\t\t}\n"
		"\t\tAddress Ignore {\n"
		"\t\t\tIPv4_address 127.0.0.1\n"
		"\t\t\tIPv6_address ::1\n"
		"\t\t\t%s_address %s\n"
		"\t\t}\n"
		"\t}\n"
		"}\n",
		paths->lock, paths->ctl, fam, local);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
