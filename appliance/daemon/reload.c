/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A reload: load and validate, compile, encode, assign counter slots, turn
 * conntrack on if needed, write the spare map generation and flip to it.
 * Any failure before the flip leaves the policy in force untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_int.h"
#include "nft/batch.h"
#include "nft/conntrack.h"
#include "system/files.h"

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

/* Conntrack is on while table inet nfbox exists (its ct expression). It is
 * turned off for defrag: false, since conntrack reassembles fragments. */
static int conntrack_switch(struct daemon *dm, bool on, struct diags *d)
{
	int r = on ? nft_conntrack_on(d) : nft_conntrack_off(d);

	if (r < 0)
		return diag_fail(d, r, "%s table inet %s (conntrack %s)", on ? "cannot create" : "cannot delete",
				 NFT_TABLE_NAME, on ? "on" : "off");
	dm->conntrack = on;
	return 0;
}

static int compile_all(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	int r;

	if ((r = plan_compile(nl->pol, &nl->plan)) < 0)
		return diag_errno(d, r, "cannot compile the policy");
	if ((r = plan_encode(nl->plan, &nl->blob)) < 0)
		return diag_errno(d, r, "cannot encode the policy");
	if ((r = slots_assign(&dm->slots, dm->e, nl->plan, &nl->slots)) < 0)
		return diag_errno(d, r, "cannot assign counters");
	return 0;
}

static int enforce(struct daemon *dm, struct loaded *nl, struct diags *d)
{
	int r;

	if (nl->pol->opt.defrag && dm->conntrack != 1 && (r = conntrack_switch(dm, true, d)) < 0)
		return r;
	if ((r = engine_load(dm->e, nl->plan, &nl->blob, &nl->slots, d)) < 0)
		return r;
	/* Off only once the policy that does not need it is in force. */
	if (!nl->pol->opt.defrag && dm->conntrack != 0)
		conntrack_switch(dm, false, d);
	return 0;
}

static int check_file(int fd, const char *path, char *why, size_t len, void *arg)
{
	return files_check_trusted(fd, path, why, len);
}

int daemon_reload(struct daemon *dm, const char *path, int fd, struct diags *d)
{
	struct policy_files files = { .policy_fd = fd, .check = dm->opts->allow_unsafe_files ? NULL : check_file };
	struct loaded nl = { 0 };
	int r;

	diags_init(&nl.diags);
	nl.path = fd >= 0 ? strdup(path) : realpath(path, NULL);
	r = policy_load_files(path, &files, &nl.diags, &nl.pol);
	diags_append(d, &nl.diags); /* nl keeps its own: the policy points into them */
	if (r == 0 && (r = compile_all(dm, &nl, d)) == 0 && (r = enforce(dm, &nl, d)) == 0)
		daemon_captures_apply(dm, nl.pol, d); /* while the old policy is alive */
	if (r < 0) {
		if (nl.plan)
			slots_abort(&dm->slots, &dm->cur.slots, dm->cur.plan);
		loaded_free(&nl);
		dm->reloads_failed++;
		return r;
	}
	slots_commit(&dm->slots, &nl.slots, nl.plan);
	loaded_free(&dm->cur);
	dm->cur = nl;
	dm->reloads_ok++;
	dm->loaded_at = time(NULL);
	links_after_reload(dm);
	return 0;
}

void daemon_reload_summary(const struct daemon *dm, const char *path, int r, FILE *f)
{
	struct engine_info e;

	if (r < 0) {
		fprintf(f, "%s: not loaded; the policy in force is unchanged%s\n", path, dm->cur.pol ? "" : " (none)");
		return;
	}
	engine_get_info(dm->e, &e);
	fprintf(f, "generation %llu: %s: %u rules enforced\n", (unsigned long long)e.generation, path,
		dm->cur.pol->nrules);
}
