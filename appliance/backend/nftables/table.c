/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* table inet nfbox put in place whole (table.h). */
#include "backend/nftables/table.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/counters.h"
#include "backend/nftables/nft/emit.h"
#include "base/log.h"
#include "lib/plant.h"
#include "netlink/addr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool carried(const char *name, uint64_t *packets, uint64_t *bytes, void *arg)
{
	const struct nfr_counter *c = nft_counters_find(arg, name);

	if (!c)
		return false;
	*packets = c->packets;
	*bytes = c->bytes;
	return true;
}

/* This host's addresses, for the ingress chains of early: true rules. */
static void table_locals(void (*add)(uint8_t fam, const uint8_t *addr, void *l), void *l, void *arg)
{
	int r;

	(void)arg;
	if ((r = nl_local_addrs(add, l)) < 0)
		log_warn("cannot list this host's addresses (%s): early drops at ingress are counted on the forward "
			 "hook",
			 strerror(-r));
}

/* Every interface's addresses, for the hairpin sets. */
static void table_iface_addrs(void (*add)(const char *ifname, uint8_t fam, const uint8_t *addr, void *l), void *l,
			      void *arg)
{
	int r;

	(void)arg;
	if ((r = nl_iface_addrs_all(add, l)) < 0)
		log_warn("cannot list the interfaces' addresses (%s): forward-ports are not hairpinned until they "
			 "change",
			 strerror(-r));
}

/* synproxy: true needs conntrack to leave a connection it did not see
 * begin alone (the client's ACK to a SYN cookie): no loose pickup, in this
 * network namespace. */
static int strict_tcp_pickup(const struct policy *p, struct diags *d)
{
	static const char path[] = "/proc/sys/net/netfilter/nf_conntrack_tcp_loose";
	bool want = false;
	FILE *f;

	for (uint32_t i = 0; i < p->nrules && !want; i++)
		want = p->rules[i].synproxy;
	if (!want)
		return 0;
	if (!(f = fopen(path, "we")))
		return diag_errno(d, -errno, "synproxy: cannot set %s to 0", path);
	fputs("0\n", f);
	if (fclose(f) != 0)
		return diag_errno(d, -errno, "synproxy: cannot set %s to 0", path);
	return 0;
}

int nft_table_put(struct backend_table *t, const struct dynsets *dyn, const struct policy *p, bool filter,
		  void (*applied)(const struct nfr_table *nt, void *arg), void *arg, struct diags *d)
{
	struct nft_counters old = { 0 };
	struct nft_build_opts o = {
		.filter = filter,
		.counter_value = carried,
		.arg = &old,
		.dyn = dyn,
		.local = table_locals,
		.iface_addrs = table_iface_addrs,
	};
	struct nfr_table nt;
	int r;

	if ((r = strict_tcp_pickup(p, d)) < 0)
		return r;
	if (o.filter && nft_counters_read(&old) < 0)
		log_warn("cannot read the counters of table inet %s: they start again from 0", NFT_TABLE_NAME);
	nfr_init(&nt);
	if ((r = nft_build(p, &o, &nt, d)) == 0)
		r = nt.nchains ? nft_table_apply(&nt, d) : nft_table_remove(d); /* none: nothing to do in nftables */
	if (r == 0)
		t->present = nt.nchains ? 1 : 0;
	if (r == 0 && applied)
		applied(&nt, arg);
	nfr_free(&nt);
	nft_counters_free(&old);
	return r;
}

int nft_table_drop(struct backend_table *t, struct diags *d)
{
	int r;

	if ((r = nft_table_remove(d)) == 0)
		t->present = 0;
	return r;
}

int nft_table_hairpin_follow(const struct policy *p, struct diags *d)
{
	const struct nft_build_opts o = { .iface_addrs = table_iface_addrs };
	const struct nfr_set **v = NULL;
	struct nfr_table nt;
	uint32_t n;
	int r = 0;

	if (planted("hairpin-deaf")) /* test_nat's positive control: the sets never follow */
		return 0;
	nfr_init(&nt);
	if ((n = nft_hairpin_sets(p, &o, &nt)) && !nt.err && !(v = calloc(n, sizeof(*v))))
		nt.err = -ENOMEM;
	for (uint32_t i = 0; v && i < n; i++)
		v[i] = nt.sets[i];
	if (nt.err)
		r = diag_errno(d, nt.err, "the hairpin sets");
	else if (n)
		r = nft_sets_replace(v, n, "the hairpin sets (the in: interfaces' addresses)", d);
	free(v);
	nfr_free(&nt);
	return r;
}
