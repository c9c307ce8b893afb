/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A reload: load and validate, compile, encode, assign counter slots, then
 * put the policy in force. Any failure before that leaves the policy in
 * force untouched.
 *
 * A policy is in force in two places: the BPF classifier (its spare map
 * generation written, then flipped to) and table inet nfbox in nftables
 * (NAT, the conntrack anchor and, with backend: nftables, the filter),
 * replaced whole in one transaction. The order, with the BPF backend:
 *   1. the nftables transaction: the step the kernel may refuse (its
 *      extended ack is reported at the policy element). Refused: nothing
 *      changed, the reload fails.
 *   2. the BPF flip. For the instant between the two, new NAT meets the old
 *      filter, which judges translated traffic in forward: a new
 *      forward-port is dropped by the old filter until the flip (closed,
 *      never open), and a removed one stops translating before its accept
 *      rule goes. Connections already translated keep their mapping in
 *      conntrack whatever the table says. If the flip fails the previous
 *      table is put back, in a second transaction.
 * Switching backend, the new filter is always in place before the old one
 * goes: for an instant both judge (stricter, never looser).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"
#include "lib/log.h"
#include "nft/batch.h"
#include "nft/build.h"
#include "nft/counters.h"
#include "nft/emit.h"
#include "system/files.h"
#include "system/sdnotify.h"

void loaded_free(struct loaded *l)
{
	slot_map_free(&l->slots);
	plan_blob_free(&l->blob);
	plan_free(l->plan);
	policy_free(l->pol);
	diags_free(&l->diags);
	free(l->path);
	memset(l, 0, sizeof(*l));
}

static bool carried(const char *name, uint64_t *packets, uint64_t *bytes, void *arg)
{
	const struct nfr_counter *c = nft_counters_find(arg, name);

	if (!c)
		return false;
	*packets = c->packets;
	*bytes = c->bytes;
	return true;
}

int daemon_nft_apply(struct daemon *dm, const struct policy *p, struct diags *d)
{
	struct nft_counters old = { 0 };
	struct nft_build_opts o = { .filter = p->opt.backend == POLICY_BACKEND_NFTABLES,
				    .counter_value = carried,
				    .arg = &old,
				    .dyn = &dm->dyn };
	struct nfr_table t;
	int r;

	if (o.filter && nft_counters_read(&old) < 0)
		log_warn("cannot read the counters of table inet %s: they start again from 0", NFT_TABLE_NAME);
	nfr_init(&t);
	if ((r = nft_build(p, &o, &t)) < 0)
		r = diag_errno(d, r, "cannot build table inet %s", NFT_TABLE_NAME);
	else if (t.nchains)
		r = nft_table_apply(&t, d);
	else
		r = nft_table_remove(d); /* nothing to do in nftables */
	if (r == 0)
		dm->nft_table = t.nchains ? 1 : 0;
	nfr_free(&t);
	nft_counters_free(&old);
	return r;
}

/* The BPF engine, opened when a policy first needs it: a daemon whose
 * policy uses the nftables backend runs without one where the kernel has
 * no netfilter BPF links. */
static int need_engine(struct daemon *dm, struct diags *d)
{
	return dm->e ? 0 : daemon_engine_open(dm, d);
}

static int compile_all(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	int r;

	if ((r = plan_make(nl->pol, &nl->plan, &nl->blob, d)) < 0)
		return r;
	if ((r = slots_assign(&dm->slots, dm->e, nl->plan, &nl->slots)) < 0)
		return diag_errno(d, r, "cannot assign counters");
	return dyn_prepare(dm, nl->pol, &nl->slots, d);
}

static void restore_table(struct daemon *dm, const struct policy *old)
{
	struct diags tmp;

	diags_init(&tmp);
	if (old && daemon_nft_apply(dm, old, &tmp) < 0)
		log_err("cannot put the previous table inet %s back: %s", NFT_TABLE_NAME,
			tmp.n ? tmp.v[tmp.n - 1].msg : "");
	diags_free(&tmp);
}

static int enforce(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	const struct policy *old = dm->cur.pol;
	bool was_nft = old && old->opt.backend == POLICY_BACKEND_NFTABLES;
	int r;

	if (nl->pol->opt.backend == POLICY_BACKEND_NFTABLES) {
		if ((r = daemon_nft_apply(dm, nl->pol, d)) < 0)
			return r;
		engine_unhook(dm->e);
		return 0;
	}
	if ((r = need_engine(dm, d)) < 0)
		return r;
	if (was_nft) {
		if ((r = engine_load(dm->e, nl->plan, &nl->blob, &nl->slots, d)) < 0)
			return r;
		if ((r = daemon_nft_apply(dm, nl->pol, d)) < 0)
			engine_unhook(dm->e); /* the nftables filter in force stays alone */
		return r;
	}
	if ((r = daemon_nft_apply(dm, nl->pol, d)) < 0)
		return r;
	if ((r = engine_load(dm->e, nl->plan, &nl->blob, &nl->slots, d)) < 0)
		restore_table(dm, old);
	return r;
}

static int check_file(int fd, const char *path, char *why, size_t len, void *arg)
{
	return files_check_trusted(fd, path, why, len);
}

int daemon_load_only(struct daemon *dm, const char *path, int fd, struct diags *d, struct policy **out)
{
	struct policy_files files = { .policy_fd = fd, .check = dm->opts->allow_unsafe_files ? NULL : check_file };

	return policy_load_files(path, &files, d, out);
}

int daemon_reload(struct daemon *dm, const char *path, int fd, struct diags *d)
{
	struct policy_files files = { .check = dm->opts->allow_unsafe_files ? NULL : check_file };

	return daemon_reload_files(dm, path, fd, &files, d);
}

int daemon_reload_files(struct daemon *dm, const char *path, int fd, const struct policy_files *via,
			struct diags *d)
{
	struct policy_files files = *via;
	struct loaded nl = { 0 };
	int r;

	files.policy_fd = fd;
	diags_init(&nl.diags);
	nl.path = fd >= 0 ? strdup(path) : realpath(path, NULL);
	r = policy_load_files(path, &files, &nl.diags, &nl.pol);
	diags_append(d, &nl.diags); /* nl keeps its own: the policy points into them */
	if (r == 0 && (r = compile_all(dm, &nl, d)) == 0) {
		dm->policy_fault = false; /* from here on, a failure is the system's */
		if ((r = enforce(dm, &nl, d)) == 0)
			daemon_captures_apply(dm, nl.pol, d); /* while the old policy is alive */
	} else {
		dm->policy_fault = true; /* the file: unreadable, invalid, beyond a limit */
	}
	if (r < 0) {
		if (nl.plan)
			slots_abort(&dm->slots, &dm->cur.slots, dm->cur.plan);
		loaded_free(&nl);
		dm->reloads_failed++;
		dyn_after_reload(dm, r);
		return r;
	}
	slots_commit(&dm->slots, &nl.slots, nl.plan);
	state_save_slots(dm);
	loaded_free(&dm->cur);
	dm->cur = nl;
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	if (fingerprint_loaded(dm->cur.diags.sources, dm->fingerprint) < 0)
		dm->fingerprint[0] = '\0';
	links_after_reload(dm);
	nflog_events_sync(dm);
	dyn_after_reload(dm, 0);
	return 0;
}

void daemon_notify_ready(struct daemon *dm, int r)
{
	char status[256];

	daemon_status_line(dm, status, sizeof(status));
	sd_notifyf("READY=1\nSTATUS=%s%s", r < 0 ? "reload failed, unchanged: " : "", status);
}

int daemon_reload_notified(struct daemon *dm, const char *path, int fd, struct diags *d)
{
	int r;

	sd_notify_reloading();
	r = daemon_reload(dm, path, fd, d);
	daemon_notify_ready(dm, r);
	return r;
}

void daemon_status_line(const struct daemon *dm, char *buf, size_t len)
{
	struct engine_info e;

	if (!dm->cur.pol) {
		snprintf(buf, len, "no policy loaded");
		return;
	}
	if (dm->cur.pol->opt.backend == POLICY_BACKEND_NFTABLES) {
		snprintf(buf, len, "enforcing %u rules (nftables backend, table inet %s)", dm->cur.pol->nrules,
			 NFT_TABLE_NAME);
		return;
	}
	engine_get_info(dm->e, &e);
	snprintf(buf, len, "enforcing generation %llu: %u rules", (unsigned long long)e.generation,
		 dm->cur.pol->nrules);
}

void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f)
{
	struct engine_info e;

	if (r < 0) {
		fprintf(f, "%s: not loaded; the policy in force is unchanged%s\n", path, dm->cur.pol ? "" : " (none)");
		return;
	}
	if (dm->cur.pol->opt.backend == POLICY_BACKEND_NFTABLES) {
		fprintf(f, "nftables: %s: %u rules enforced (table inet %s)\n", path, dm->cur.pol->nrules,
			NFT_TABLE_NAME);
		return;
	}
	engine_get_info(dm->e, &e);
	fprintf(f, "generation %llu: %s: %u rules enforced\n", (unsigned long long)e.generation, path,
		dm->cur.pol->nrules);
}
