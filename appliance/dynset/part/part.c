/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Dynamic sets in the daemon: `nfbox set add|del|list|flush` over the
 * control socket, the entries put into the backend in force, saved in the
 * state directory (STATE/dynsets) after every change, read back at start,
 * and expired once a second.
 *
 * The store (dynset/dynset.h) is the daemon's copy and the authority; the
 * backend in force puts each change into the kernel (backend.h: dyn_*).
 * A reload keeps the entries of every dynamic set the new policy still
 * has (by name); the entries of a set it drops are deleted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/sort.h"
#include "daemon/state.h"
#include "dynset/part/part.h"
#include "confirm/confirm.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/pct.h"
#include "base/log.h"
#include "lib/plant.h"
#include "dynset/protect.h"
#include "netlink/addr.h"
#include "policy/syntax/parse.h"
#include "system/files.h"

/* The dynamic sets' state: the part's. */
struct dynstore {
	struct daemon *dm;
	struct dynsets store;	  /* the entries: the authority */
	char unread[512];	  /* why STATE/dynsets could not be read at start ("": it could, or there is none) */
	bool from_fleet;	  /* the change came from etcd: not sent back there */
	dyn_listener_fn listener; /* told of every change not from_fleet (a fleet's node) */
	long long verify_wanted;  /* CLOCK_MONOTONIC ms a check of the kernel is asked for (dyn_verify_take), 0: none */
	uint64_t refused;	  /* automatic bans of addresses never banned */
	struct own_addrs {	  /* the appliance's own addresses, as last listed */
		struct prefix *v;
		uint32_t n, cap;
		long long at; /* CLOCK_MONOTONIC ms; listed again once a second old */
	} own;
	long long refusals_window; /* CLOCK_MONOTONIC ms: the minute refusals are logged in */
	uint32_t refusals_logged;  /* ... and how many were */
	long long saved_at;	   /* CLOCK_MONOTONIC ms of the last save */
	bool save_due;		   /* a change from etcd not saved yet (saved within FLEET_SAVE_MS) */
};

/* A fleet's changes from etcd are saved at most this often: they are
 * etcd's, read again at a start that reaches etcd; a save (the whole
 * store, synced) for each burst a watch brings would be thousands a
 * second on a fleet of hundreds. The daemon's own changes are saved
 * before they are answered, as always, and take what is due with them;
 * a clean stop saves what is due. 10 s, not 1: each save writes the whole
 * store, and while 10,000 shared entries arrived, a node saved up to
 * 400 KB (synced) a second; the fleet bench's 100 nodes held them all in
 * 39 s instead of 56. */
#define FLEET_SAVE_MS 10000

#define DYN(dm) ((struct dynstore *)daemon_part_state(dm, &part_dynsets))

#define DYN_STATE	"dynsets"
#define DYN_BY_CONTROL	"nfbox-set"  /* an entry added through the control socket */
#define DYN_BY_RULE	"rule:"	     /* ... by a limit's overload: "rule:NAME" */
#define DYN_BY_SURICATA "suricata:"  /* ... by a Suricata alert: "suricata:SID:MSG" (feeds/part.c) */
#define DYN_BY_FLEET	"fleet:"     /* ... by a fleet's node: "fleet:NODE" (fleet/part.c) */
#define DYN_MAX_INPUT	(256u << 20) /* bytes of prefixes in one request */
/* addresses never banned (below) */
static void protect_of(struct daemon *dm, const char *set, struct dyn_protect *out);
static void purge_protected(struct daemon *dm);
static void by_text(const char *by, char *buf, size_t len);

/* The backend in force, NULL for none. */
static struct backend *be_of(const struct daemon *dm)
{
	return daemon_backend((struct daemon *)dm);
}

static void save_dyn(const void *obj, FILE *f)
{
	dynsets_save(obj, f);
}

/* Written whole to a temporary file, synced, renamed over the old one and
 * the directory synced: a crash at any point (of the daemon or the machine)
 * leaves the old or the new file, and a change is answered "ok" only once
 * it is on disk. */
static int dyn_save(struct daemon *dm)
{
	long long now = clock_ms(CLOCK_MONOTONIC);
	int r;

	if (DYN(dm)->from_fleet && now - DYN(dm)->saved_at < FLEET_SAVE_MS) {
		DYN(dm)->save_due = true; /* dyn_tick saves it */
		return 0;
	}
	/* the crash test's positive control: a daemon that answers without saving */
	r = planted("dyn-no-save") ? 0 : state_save(dm, DYN_STATE, save_dyn, &DYN(dm)->store, true);
	DYN(dm)->saved_at = now;
	DYN(dm)->save_due = r < 0;
	if (r < 0)
		log_warn("cannot save the dynamic sets in %s: %s", daemon_state_dir(dm), strerror(-r));
	return r;
}

static int dyn_state_load(struct daemon *dm)
{
	char path[PATH_MAX];
	unsigned bad = 0;
	uint64_t n = 0;
	FILE *f;

	dynsets_init(&DYN(dm)->store);
	if (state_open(dm, DYN_STATE, &f, DYN(dm)->unread, sizeof(DYN(dm)->unread)) < 0 || !f)
		return 0;
	state_path(dm, DYN_STATE, path, sizeof(path));
	if (dynsets_load(&DYN(dm)->store, f, dyn_now_ms(), &bad) < 0)
		snprintf(DYN(dm)->unread, sizeof(DYN(dm)->unread),
			 "line %u is not a dynamic-set entry (the file is damaged)", bad);
	fclose(f);
	for (uint32_t i = 0; i < DYN(dm)->store.n; i++)
		n += DYN(dm)->store.sets[i].n[0] + DYN(dm)->store.sets[i].n[1];
	if (n)
		log_info("dynamic sets: %llu entries read back from %s", (unsigned long long)n, path);
	return 0;
}

/* ---- the entries taken from the kernel when the file cannot be read ---- */

/* The store made to hold the entries of text (the saved file's format),
 * read from where. */
static int store_from_text(struct daemon *dm, char *text, size_t len, const char *where, struct diags *d)
{
	unsigned bad = 0;
	FILE *in = fmemopen(text, len ? len : 1, "r");
	int r;

	if (!in)
		return diag_errno(d, -ENOMEM, "dynamic sets");
	dynsets_free(&DYN(dm)->store);
	dynsets_init(&DYN(dm)->store);
	r = dynsets_load(&DYN(dm)->store, in, dyn_now_ms(), &bad);
	fclose(in);
	if (r < 0)
		return diag_fail(d, -EIO, "the dynamic sets' entries in %s cannot be read back (entry %u)", where, bad);
	return 0;
}

static int dyn_recover(struct daemon *dm, struct diags *d)
{
	char path[PATH_MAX], kept[PATH_MAX + 64];
	_cleanup_free_ char *text = NULL;
	const char *source = NULL;
	size_t len = 0;
	uint64_t n = 0;
	int r;

	if (!DYN(dm)->unread[0])
		return 0;
	state_path(dm, DYN_STATE, path, sizeof(path));
	if (daemon_opts(dm)->fresh) {
		dynsets_free(&DYN(dm)->store);
		dynsets_init(&DYN(dm)->store);
		state_set_aside(dm, DYN_STATE, kept, sizeof(kept));
		log_warn("%s cannot be read (%s): --fresh, so the dynamic sets start empty; the file is kept as %s",
			 path, DYN(dm)->unread, kept);
		return 0;
	}
	if ((r = daemon_dyn_read_back(dm, &text, &len, &n, &source, d)) < 0 ||
	    (r > 0 && (r = store_from_text(dm, text, len, source, d)) < 0))
		return r;
	if (source) {
		state_set_aside(dm, DYN_STATE, kept, sizeof(kept));
		log_warn("%s cannot be read (%s): the dynamic sets' %llu entries were taken from %s, which enforced "
			 "them; the file is kept as %s",
			 path, DYN(dm)->unread, (unsigned long long)n, source, kept);
		return 0;
	}
	return diag_fail(
		d, -EIO,
		"%s cannot be read (%s), and neither a pinned classifier nor table inet nfbox holds the dynamic sets' "
		"entries: starting would lose every entry added at run time (a blocklist fed by fail2ban or CrowdSec "
		"would stop blocking). Repair or remove the file, or start with --fresh to start the sets empty",
		path, DYN(dm)->unread);
}

/* The new policy's dynamic sets in the store (their ids, which the
 * backends key their entries by; the entries of a set the policy keeps by
 * name stay). */
static int dyn_prepare(struct daemon *dm, const struct policy *p, struct diags *d)
{
	int r;

	if ((r = dynsets_sync_policy(&DYN(dm)->store, p)) < 0)
		return diag_errno(d, r, "dynamic sets");
	return 0;
}

/* The entries of sets the policy in force no longer has are deleted, with
 * the tries' (not while a change waits for `nfbox confirm`: a rollback
 * brings the set back with its entries). */
static bool drop_gone(struct daemon *dm)
{
	bool gone = false;

	if (confirm_pending(dm))
		return false;
	for (uint32_t i = 0; i < DYN(dm)->store.n; i++)
		gone |= !DYN(dm)->store.sets[i].in_policy;
	dynsets_drop_gone(&DYN(dm)->store);
	return gone;
}

/* shared: true where no fleet listens: said at every load, as nothing
 * shares those entries. */
static void warn_unshared(const struct daemon *dm)
{
	for (uint32_t i = 0; !DYN(dm)->listener && daemon_in_force(dm)->pol && i < daemon_in_force(dm)->pol->nsets; i++)
		if (daemon_in_force(dm)->pol->sets[i].shared)
			log_warn("set %s is 'shared: true', but this daemon is not a fleet's node (nfbox run --fleet): "
				 "its entries stay on this node",
				 daemon_in_force(dm)->pol->sets[i].name);
}

static void dyn_after_reload(struct daemon *dm, int r)
{
	bool gone;

	if (r < 0) { /* the policy in force keeps its sets */
		if (daemon_in_force(dm)->pol)
			dynsets_sync_policy(&DYN(dm)->store, daemon_in_force(dm)->pol);
		return;
	}
	gone = drop_gone(dm);
	if (be_of(dm))
		be_of(dm)->ops->dyn_after_reload(be_of(dm), gone);
	purge_protected(dm);
	dyn_save(dm);
	warn_unshared(dm);
}

static void dyn_settle(struct daemon *dm)
{
	if (!drop_gone(dm))
		return;
	if (be_of(dm))
		be_of(dm)->ops->dyn_resync(be_of(dm));
	dyn_save(dm);
}

/* ---- changes ------------------------------------------------------------------- */

/* The changes into the kernel, as the backend in force takes them. */
static int apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		 struct diags *d)
{
	return be_of(dm) ? be_of(dm)->ops->dyn_apply(be_of(dm), set, c, n, del, d) : 0;
}

/* The kernel made to hold the store again, after the store changed. */
static void resync(struct daemon *dm)
{
	if (be_of(dm))
		be_of(dm)->ops->dyn_resync(be_of(dm));
}

/* The kernel checked against the store within after ms (check.c
 * takes the wish). */
static void verify_soon(struct daemon *dm, long long after)
{
	long long at = clock_ms(CLOCK_MONOTONIC) + after;

	if (!DYN(dm)->verify_wanted || at < DYN(dm)->verify_wanted)
		DYN(dm)->verify_wanted = at ? at : 1;
}

/* A change that met an expiry of its set (the store let an entry go within
 * the kernel's margin, and the tolerance): the kernel is checked once both
 * have passed. */
static void after_change(struct daemon *dm, const struct dyn_set *set)
{
	long long race = (be_of(dm) ? be_of(dm)->ops->dyn_margin_ms : 0) + DYN_VERIFY_TOLERANCE_MS;

	if (set->expired_at && dyn_now_ms() - set->expired_at < race)
		verify_soon(dm, race + 100);
}

/* The n changes into the store, then into the kernel; the kernel's refusal
 * puts the store back as it was (and the kernel is checked at once). undo
 * (and did, for an add) say what was done, for a caller that must take it
 * back later. */
static int store_and_apply(struct daemon *dm, struct dyn_set *set, struct dyn_change *c, uint32_t n, bool del,
			   struct diags *d, struct dyn_undo *undo, struct dyn_added *did)
{
	int r = del ? dynset_del(&DYN(dm)->store, set, c, n, d, undo) : dynset_add(&DYN(dm)->store, set, c, n, d, did);

	/* the positive control of test_dynset_renew: changes that do not reach the kernel */
	if (r == 0 && planted("dyn-skips-kernel"))
		return 0;
	if (r == 0 && (r = apply(dm, set, c, n, del, d)) < 0) {
		dynset_undo(&DYN(dm)->store, set, undo);
		resync(dm);
		verify_soon(dm, 0);
	}
	if (r == 0)
		after_change(dm, set);
	if (r == 0 && !DYN(dm)->from_fleet && DYN(dm)->listener)
		DYN(dm)->listener(dm, set->name, c, n, del);
	return r;
}

/* The prefixes of the file the client sent: one per line, blank lines and
 * comments ('#', ';') as in set files. */
static int read_changes(int fd, const char *source, int64_t expires, struct dyn_change **out, uint32_t *nout,
			struct diags *d)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct dyn_change *v = NULL;
	uint32_t n = 0, cap = 0, lineno = 0;
	size_t len = 0;
	struct stat st;
	char *line;

	if (fd < 0)
		return diag_fail(d, -EINVAL, "no prefixes were sent with the request");
	/* a regular file (or memfd): never wait on a pipe a client holds open */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return diag_fail(d, -EINVAL, "the prefixes must come as a regular file");
	if (st.st_size > (off_t)DYN_MAX_INPUT)
		return diag_fail(d, -EFBIG, "%s: more than %u MiB of prefixes in one request", source,
				 DYN_MAX_INPUT >> 20);
	if (!(text = malloc((size_t)st.st_size + 1)))
		return diag_errno(d, -ENOMEM, "%s", source);
	while (len < (size_t)st.st_size) {
		ssize_t k = pread(fd, text + len, (size_t)st.st_size - len, (off_t)len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	text[len] = '\0';
	if (memchr(text, '\0', len))
		return diag_fail(d, -EINVAL, "%s: not text", source);
	for (char *next = text; next && *next;) {
		char *w, *end;
		struct dyn_change *c;
		const char *why;
		bool host_bits;

		line = next;
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		lineno++;
		w = line + strspn(line, " \t\r");
		end = w + strcspn(w, " \t\r#;");
		if (end == w) /* blank or a comment */
			continue;
		if (*end && !strchr("#;", *(end + strspn(end, " \t\r")))) {
			diag_fail(d, -EINVAL, "%s:%u: one prefix per line: '%s' follows '%.*s'", source, lineno,
				  end + strspn(end, " \t\r"), (int)(end - w), w);
			return -EINVAL;
		}
		*end = '\0';
		if (n == 2 * DYNSET_MAX_ENTRIES) {
			diag_fail(d, -E2BIG, "%s:%u: more entries than all dynamic sets may hold (%u of each family)",
				  source, lineno, DYNSET_MAX_ENTRIES);
			return -EINVAL;
		}
		if (n == cap) {
			struct dyn_change *nv = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof(*v));

			if (!nv) {
				diag_errno(d, -ENOMEM, "%s", source);
				return -EINVAL;
			}
			v = nv;
		}
		c = &v[n];
		memset(c, 0, sizeof(*c));
		if (parse_prefix(w, &c->pfx, &host_bits, &why) < 0) {
			diag_fail(d, -EINVAL, "%s:%u: '%s': %s (a dynamic set takes addresses and prefixes)", source,
				  lineno, w, why);
			return -EINVAL;
		}
		if (host_bits) {
			char net[64];

			policy_prefix_format(&c->pfx, net, sizeof(net));
			diag_fail(d, -EINVAL, "%s:%u: '%s' has host bits set: write the network, %s", source, lineno, w,
				  net);
			return -EINVAL;
		}
		c->expires = expires;
		c->by = DYN_BY_CONTROL;
		c->src = source;
		c->line = lineno;
		n++;
	}
	*out = TAKE_PTR(v);
	*nout = n;
	return 0;
}

static const struct addr_set *policy_set(const struct policy *p, const char *name)
{
	for (uint32_t i = 0; p && i < p->nsets; i++)
		if (!strcmp(p->sets[i].name, name))
			return &p->sets[i];
	return NULL;
}

static struct dyn_set *find_set(struct daemon *dm, const char *name, struct diags *d)
{
	struct dyn_set *s = dynsets_find(&DYN(dm)->store, name ? name : "");

	if (s && s->in_policy)
		return s;
	if (!daemon_in_force(dm)->pol)
		diag_fail(d, -ENOENT, "no policy is in force");
	else if (policy_set(daemon_in_force(dm)->pol, name ? name : ""))
		diag_fail(d, -EINVAL,
			  "set '%s' is not dynamic: its entries are in the policy (mark it 'dynamic: true' to change "
			  "it at run time)",
			  name);
	else
		diag_fail(d, -ENOENT, "the policy in force has no set '%s'", name ? name : "");
	return NULL;
}

/* A set the daemon fills itself from a source it follows (country:,
 * hosts:, url:) is not changed by hand; Suricata's offenders (eve:) may be
 * let go by hand. */
static struct dyn_set *find_set_by_hand(struct daemon *dm, const char *name, struct diags *d)
{
	struct dyn_set *s = find_set(dm, name, d);
	const struct addr_set *fs = s ? policy_set(daemon_in_force(dm)->pol, s->name) : NULL;

	if (fs && policy_set_fed_by(fs)) {
		diag_fail(d, -EPERM, "set '%s' is filled from %s by the daemon: change the policy instead", s->name,
			  policy_set_fed_by(fs));
		return NULL;
	}
	return s;
}

static uint64_t set_size(const struct dyn_set *s)
{
	return (uint64_t)s->n[0] + s->n[1];
}

/* The kernel's side of a change taken back (dyn_undo: what it added goes,
 * what it renewed or deleted comes back as it was); then resync(). */
static void undo_kernel(struct daemon *dm, const struct dyn_set *set, const struct dyn_undo *u)
{
	if (be_of(dm))
		be_of(dm)->ops->dyn_undo(be_of(dm), set, u);
}

#define PROTECTED_SAID 8 /* refused entries of one request explained; the rest counted */

/* An add by hand of addresses that are never banned: refused whole, each
 * said at its place, unless forced. */
static int refuse_protected(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n,
			    struct diags *d)
{
	struct dyn_protect p;
	uint32_t refused = 0;
	char why[160], a[64];

	protect_of(dm, set->name, &p);
	for (uint32_t i = 0; i < n; i++) {
		if (!dyn_protected(&p, &c[i].pfx, why, sizeof(why)))
			continue;
		if (refused++ < PROTECTED_SAID) {
			policy_prefix_format(&c[i].pfx, a, sizeof(a));
			diag_fail(d, -EPERM, "%s:%u: %s is %s, which is never banned (add --force to ban it anyway)",
				  c[i].src, c[i].line, a, why);
		}
	}
	if (refused > PROTECTED_SAID)
		diag_fail(d, -EPERM, "and %u more addresses that are never banned", refused - PROTECTED_SAID);
	if (refused)
		diag_fail(d, -EPERM, "set '%s': nothing added", set->name);
	return refused ? -EPERM : 0;
}

static int change(struct daemon *dm, const struct dyn_caller *c, const struct ctl_request *req, FILE *f,
		  struct diags *d)
{
	bool del = req->verb == CTL_SET_DEL;
	const char *source = req->source ? req->source : "argument";
	struct dyn_change *v = NULL;
	uint32_t n = 0;
	struct dyn_undo undo = { 0 };
	struct dyn_added did = { .undo = &undo };
	struct dyn_set *set;
	int64_t expires = req->timeout ? dyn_now_ms() + (int64_t)req->timeout * 1000 : 0;
	int r;

	if (!(set = find_set_by_hand(dm, req->set, d)))
		return -ENOENT;
	if ((r = read_changes(c->fd, source, expires, &v, &n, d)) < 0)
		return r;
	if (!del && !req->force && (r = refuse_protected(dm, set, v, n, d)) < 0) {
		free(v);
		return r;
	}
	r = store_and_apply(dm, set, v, n, del, d, &undo, &did);
	if (r == 0 && (r = dyn_save(dm)) < 0) {
		/* Not kept, so not done: the kernel and the store go back to
		 * what they were, and the client is told. */
		diag_errno(d, r, "set '%s': the change could not be saved in %s, so it was taken back", set->name,
			   daemon_state_dir(dm));
		undo_kernel(dm, set, &undo);
		dynset_undo(&DYN(dm)->store, set, &undo);
		resync(dm);
	}
	dyn_undo_free(&undo);
	free(v);
	if (r < 0)
		return r;
	if (del)
		fprintf(f, "set %s: %u deleted; %llu entries\n", set->name, n, (unsigned long long)set_size(set));
	else
		fprintf(f, "set %s: %u added, %u renewed%s; %llu entries\n", set->name, did.added, did.renewed,
			req->timeout ? "" : " (no timeout)", (unsigned long long)set_size(set));
	log_info("set %s (control socket, uid %u): %u %s from %s; %llu entries", set->name, (unsigned)c->uid, n,
		 del ? "deleted" : "added or renewed", source, (unsigned long long)set_size(set));
	return 0;
}

static int flush_set(struct daemon *dm, const struct dyn_caller *c, const struct ctl_request *req, FILE *f,
		     struct diags *d)
{
	struct dyn_change *v = NULL;
	struct dyn_set *set;
	uint32_t n = 0;
	int r;

	if (!(set = find_set_by_hand(dm, req->set, d)))
		return -ENOENT;
	if (!(v = calloc(set_size(set) + 1, sizeof(*v))))
		return diag_errno(d, -ENOMEM, "set '%s'", set->name);
	for (int fam = 0; fam < 2; fam++)
		for (uint32_t j = 0; j < set->n[fam]; j++, n++) {
			v[n].pfx.family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
			v[n].pfx.plen = set->v[fam][j].plen;
			memcpy(v[n].pfx.addr, set->v[fam][j].addr, 16);
			v[n].expires = set->v[fam][j].expires;
		}
	if ((r = apply(dm, set, v, n, true, d)) < 0) {
		free(v);
		return r;
	}
	dynset_flush(&DYN(dm)->store, set);
	if (DYN(dm)->listener)
		DYN(dm)->listener(dm, set->name, v, n, true);
	if ((r = dyn_save(dm)) < 0) {
		/* not kept, so not done: the entries come back */
		diag_errno(d, r, "set '%s': the flush could not be saved in %s, so it was taken back", set->name,
			   daemon_state_dir(dm));
		struct diags tmp;

		diags_init(&tmp);
		if (dynset_add(&DYN(dm)->store, set, v, n, &tmp, NULL) < 0 || apply(dm, set, v, n, false, &tmp) < 0)
			log_err("set '%s': the entries of a flush that could not be saved could not all be put back: "
				"%s",
				set->name, diags_last(&tmp, ""));
		diags_free(&tmp);
		resync(dm);
	}
	free(v);
	if (r < 0)
		return r;
	fprintf(f, "set %s: %u deleted; 0 entries\n", set->name, n);
	log_info("set %s flushed (control socket, uid %u): %u entries deleted", set->name, (unsigned)c->uid, n);
	return 0;
}

/* "suricata:SID:MSG" (MSG %-escaped, feeds/part.c) as "Suricata alert SID (MSG)" */
static void suricata_text(const char *by, char *buf, size_t len)
{
	const char *sid = by + strlen(DYN_BY_SURICATA), *msg = strchr(sid, ':');
	_cleanup_free_ char *text = msg ? pct_decode(msg + 1, strlen(msg + 1)) : NULL;

	if (!msg)
		snprintf(buf, len, "%s", by);
	else
		snprintf(buf, len, "Suricata alert %.*s (%s)", (int)(msg - sid), sid, text ? text : msg + 1);
}

/* Who added an entry, as `set list` says it: "rule ssh" for a limit's
 * overload, "Suricata alert SID (MSG)", else the origin as saved. */
static void by_text(const char *by, char *buf, size_t len)
{
	if (!strncmp(by, DYN_BY_RULE, strlen(DYN_BY_RULE)))
		snprintf(buf, len, "rule %s", by + strlen(DYN_BY_RULE));
	else if (!strncmp(by, DYN_BY_SURICATA, strlen(DYN_BY_SURICATA)))
		suricata_text(by, buf, len);
	else
		snprintf(buf, len, "%s", by);
}

static void list_one(const struct dynsets *s, const struct dyn_set *set, int64_t now, FILE *f, struct json *j)
{
	char a[64], by[320], when[32];

	if (j) {
		json_object_begin(j);
		json_kv_str(j, "set", set->name);
		json_kv_u64(j, "entries", set_size(set));
		json_key(j, "elements");
		json_array_begin(j);
	} else {
		fprintf(f, "set %s: %llu entries\n", set->name, (unsigned long long)set_size(set));
	}
	for (int fam = 0; fam < 2; fam++)
		for (uint32_t i = 0; i < set->n[fam]; i++) {
			const struct dyn_entry *e = &set->v[fam][i];
			int64_t left = e->expires ? (e->expires - now + 999) / 1000 : 0;

			time_t added = (time_t)e->added;
			struct tm tm;

			dyn_entry_format(fam, e, a, sizeof(a));
			by_text(dyn_entry_by(s, e), by, sizeof(by));
			when[0] = '\0';
			if (added && gmtime_r(&added, &tm))
				strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
			if (left < 0)
				left = 0;
			if (j) {
				json_object_begin(j);
				json_kv_str(j, "prefix", a);
				json_key(j, "expires");
				if (e->expires)
					json_fixed(j, (double)e->expires / 1000.0, 3);
				else
					json_null_value(j);
				json_key(j, "seconds_left");
				if (e->expires)
					json_i64(j, left);
				else
					json_null_value(j);
				json_key(j, "added");
				if (e->added)
					json_i64(j, e->added);
				else
					json_null_value(j);
				json_key(j, "by");
				if (by[0])
					json_str(j, by);
				else
					json_null_value(j);
				json_object_end(j);
			} else {
				fputs(a, f);
				if (e->expires)
					fprintf(f, "\texpires in %llds", (long long)left);
				if (when[0])
					fprintf(f, "\tadded %s", when);
				if (by[0])
					fprintf(f, " by %s", by);
				fputc('\n', f);
			}
		}
	if (j) {
		json_array_end(j);
		json_object_end(j);
	}
}

static int list(struct daemon *dm, const struct ctl_request *req, FILE *f, struct diags *d)
{
	int64_t now = dyn_now_ms();
	struct json j;
	struct dyn_set *set = NULL;

	if (req->set && !(set = find_set(dm, req->set, d)))
		return -ENOENT;
	fputs(CTL_REPLY_OK, f);
	if (req->json)
		json_init(&j, f);
	if (set) {
		list_one(&DYN(dm)->store, set, now, f, req->json ? &j : NULL);
	} else {
		if (req->json)
			json_array_begin(&j);
		for (uint32_t i = 0; i < DYN(dm)->store.n; i++) {
			if (!DYN(dm)->store.sets[i].in_policy)
				continue;
			if (req->json) {
				json_object_begin(&j);
				json_kv_str(&j, "set", DYN(dm)->store.sets[i].name);
				json_kv_u64(&j, "entries", set_size(&DYN(dm)->store.sets[i]));
				json_object_end(&j);
			} else {
				fprintf(f, "%s\t%llu entries\n", DYN(dm)->store.sets[i].name,
					(unsigned long long)set_size(&DYN(dm)->store.sets[i]));
			}
		}
		if (req->json)
			json_array_end(&j);
	}
	if (req->json)
		fputc('\n', f);
	return 0;
}

static void dyn_answer(struct daemon *dm, const struct dyn_caller *c, const struct ctl_request *req, FILE *f)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *body;
	struct diags d;
	int r;

	diags_init(&d);
	if (req->verb == CTL_SET_LIST) {
		if ((r = list(dm, req, f, &d)) < 0) {
			fputs(CTL_REPLY_ERROR, f);
			diags_print(&d, f, false);
		}
		diags_free(&d);
		return;
	}
	if (!req->set) {
		diag_fail(&d, -EINVAL, "%s needs set=NAME", ctl_verb_name(req->verb));
		r = -EINVAL;
	} else if (!(body = open_memstream(&out, &len))) {
		r = diag_errno(&d, -ENOMEM, "reply");
	} else {
		r = req->verb == CTL_SET_FLUSH ? flush_set(dm, c, req, body, &d) : change(dm, c, req, body, &d);
		fclose(body);
	}
	fputs(r < 0 ? CTL_REPLY_ERROR : CTL_REPLY_OK, f);
	diags_print(&d, f, false);
	if (r == 0 && out)
		fwrite(out, 1, len, f);
	diags_free(&d);
}

/* ---- feeds (country:, hosts:, url:) ------------------------------------------------ */

static int change_cmp(const void *a, const void *b)
{
	const struct dyn_change *x = a, *y = b;
	int c = (int)x->pfx.family - (int)y->pfx.family;

	if (!c)
		c = memcmp(x->pfx.addr, y->pfx.addr, 16);
	return c ? c : (int)x->pfx.plen - (int)y->pfx.plen;
}

static bool in_sorted(const struct dyn_change *c, uint32_t n, int fam, const struct dyn_entry *e)
{
	struct dyn_change k = { .pfx = { .family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4, .plen = e->plen } };

	memcpy(k.pfx.addr, e->addr, 16);
	return search_n(&k, c, n, sizeof(*c), change_cmp) != NULL;
}

int dyn_feed(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool replace, uint32_t *added,
	     uint32_t *deleted, struct diags *d)
{
	struct dyn_set *set = dynsets_find(&DYN(dm)->store, name);
	struct dyn_change *del = NULL, *add = c;
	uint32_t ndel = 0, nadd = n;
	int r = 0;

	*added = *deleted = 0;
	if (!set || !set->in_policy)
		return diag_fail(d, -ENOENT, "set '%s' is not in the policy in force", name);
	if (replace) {
		/* exactly c: what is not there is added, what c lacks is deleted */
		sort_n(c, n, sizeof(*c), change_cmp);
		if (!(del = calloc(set_size(set) + 1, sizeof(*del))) || !(add = calloc(n + 1, sizeof(*add)))) {
			free(del);
			return diag_errno(d, -ENOMEM, "set '%s'", name);
		}
		nadd = 0;
		for (int fam = 0; fam < 2; fam++)
			for (uint32_t j = 0; j < set->n[fam]; j++)
				if (!in_sorted(c, n, fam, &set->v[fam][j])) {
					del[ndel].pfx.family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4;
					del[ndel].pfx.plen = set->v[fam][j].plen;
					memcpy(del[ndel++].pfx.addr, set->v[fam][j].addr, 16);
				}
		for (uint32_t i = 0; i < n; i++)
			if (dynset_index(set, c[i].pfx.family == POLICY_FAM_IPV6, c[i].pfx.addr, c[i].pfx.plen) < 0)
				add[nadd++] = c[i];
	}
	struct dyn_undo undo_del = { 0 };
	uint32_t renewed = 0;

	if (ndel && (r = store_and_apply(dm, set, del, ndel, true, d, &undo_del, NULL)) == 0)
		*deleted = ndel;
	if (r == 0 && nadd) {
		struct dyn_undo undo = { 0 };
		struct dyn_added did = { .undo = &undo };

		r = store_and_apply(dm, set, add, nadd, false, d, &undo, &did);
		dyn_undo_free(&undo);
		if (r == 0) {
			*added = did.added;
			renewed = did.renewed;
		} else if (*deleted) {
			/* all or nothing: what the replacement deleted comes back */
			undo_kernel(dm, set, &undo_del);
			dynset_undo(&DYN(dm)->store, set, &undo_del);
			resync(dm);
			*deleted = 0;
		}
	}
	dyn_undo_free(&undo_del);
	if (replace) {
		free(del);
		free(add);
	}
	if ((*added || *deleted || renewed) && dyn_save(dm) < 0)
		log_warn(
			"set %s: the entries from its feed could not be saved in %s; they come again at the next start",
			name, daemon_state_dir(dm));
	return r;
}

/* ---- a fleet's shared sets (fleet/part.c) ------------------------------------------ */

void dyn_listen(struct daemon *dm, dyn_listener_fn fn)
{
	DYN(dm)->listener = fn;
}

int dyn_from_fleet(struct daemon *dm, const char *name, struct dyn_change *c, uint32_t n, bool del, bool replace)
{
	struct dyn_set *set = dynsets_find(&DYN(dm)->store, name);
	uint32_t added = 0, deleted = 0;
	struct dyn_undo undo = { 0 };
	struct diags d;
	int r;

	if (!set || !set->in_policy)
		return -ENOENT;
	if (del && !replace) { /* an entry that is not here (expired here first, or never came): nothing to delete */
		uint32_t kept = 0;

		for (uint32_t i = 0; i < n; i++)
			if (dynset_index(set, c[i].pfx.family == POLICY_FAM_IPV6, c[i].pfx.addr, c[i].pfx.plen) >= 0)
				c[kept++] = c[i];
		if (!(n = kept))
			return 0;
	}
	if (!del) { /* a ban the fleet shares is a ban of another node's: never of what is never banned here */
		uint32_t kept = 0;

		for (uint32_t i = 0; i < n; i++)
			if (dyn_ban_allowed(dm, name, &c[i].pfx, c[i].by ? c[i].by : "the fleet"))
				c[kept++] = c[i];
		n = kept;
	}
	diags_init(&d);
	DYN(dm)->from_fleet = true;
	if (replace || !del)
		r = dyn_feed(dm, name, c, n, replace, &added, &deleted, &d);
	else if ((r = store_and_apply(dm, set, c, n, true, &d, &undo, NULL)) == 0 && dyn_save(dm) < 0)
		log_warn("set %s: an entry deleted through the fleet could not be saved in %s", name,
			 daemon_state_dir(dm));
	DYN(dm)->from_fleet = false;
	dyn_undo_free(&undo);
	if (r < 0)
		log_warn("set %s: a shared entry from etcd not taken: %s", name, diags_last(&d, strerror(-r)));
	else if (replace && (added || deleted))
		log_info("set %s: %u entries added, %u deleted to hold what the fleet shares", name, added, deleted);
	diags_free(&d);
	return r < 0 ? r : (int)n;
}

/* ---- addresses never banned (dynset/protect.h) ------------------------------ */

#define OWN_ADDRS_MS	1000 /* the appliance's addresses listed again once this old */
#define REFUSALS_LOGGED 20   /* refused bans logged one by one in a minute; the rest counted */

static void own_add(uint8_t family, const uint8_t *addr, void *arg)
{
	struct own_addrs *o = arg;
	struct prefix *p;

	if (o->n == o->cap) {
		struct prefix *v = realloc(o->v, (o->cap = o->cap ? 2 * o->cap : 16) * sizeof(*v));

		if (!v) {
			o->cap = o->n;
			return;
		}
		o->v = v;
	}
	p = &o->v[o->n++];
	memset(p, 0, sizeof(*p));
	p->family = family;
	p->plen = family == POLICY_FAM_IPV6 ? 128 : 32;
	memcpy(p->addr, addr, family == POLICY_FAM_IPV6 ? 16 : 4);
}

/* The appliance's own addresses: its interfaces' (with their broadcast
 * addresses) and an HA pair's virtual and sync addresses (the backup's
 * too, which it does not hold yet). */
static const struct own_addrs *own_addrs(struct daemon *dm)
{
	struct own_addrs *o = &DYN(dm)->own;
	const struct ha_conf *ha = daemon_in_force(dm)->pol ? &daemon_in_force(dm)->pol->ha : NULL;
	long long now = clock_ms(CLOCK_MONOTONIC);
	int r;

	if (o->at && now - o->at < OWN_ADDRS_MS)
		return o;
	o->n = 0;
	o->at = now;
	if ((r = nl_local_addrs(own_add, o)) < 0)
		log_warn("cannot list this appliance's addresses (%s): bans of them are not refused", strerror(-r));
	for (uint32_t i = 0; ha && ha->present && i < ha->nvirt; i++)
		own_add(ha->virt[i].addr.family, ha->virt[i].addr.addr, o);
	for (uint32_t i = 0; ha && ha->present && i < ha->npeers; i++)
		own_add(ha->sync_peers[i].family, ha->sync_peers[i].addr, o);
	return o;
}

/* A refused ban: counted, and logged (REFUSALS_LOGGED a minute, then one
 * line for the rest of that minute). */
static void refusal(struct daemon *dm, const char *set, const struct prefix *pfx, const char *why, const char *who)
{
	long long now = clock_ms(CLOCK_MONOTONIC);
	char a[64], by[320];

	DYN(dm)->refused++;
	if (now - DYN(dm)->refusals_window >= 60000) {
		if (DYN(dm)->refusals_logged > REFUSALS_LOGGED)
			log_warn("dynamic sets: %u more automatic bans refused in the last minute",
				 DYN(dm)->refusals_logged - REFUSALS_LOGGED);
		DYN(dm)->refusals_window = now;
		DYN(dm)->refusals_logged = 0;
	}
	if (DYN(dm)->refusals_logged++ >= REFUSALS_LOGGED)
		return;
	policy_prefix_format(pfx, a, sizeof(a));
	by_text(who, by, sizeof(by));
	log_warn("set %s: %s not banned (asked by %s): it is %s, which is never banned", set, a, by, why);
}

/* What set may never get (dynset/protect.h), for the policy in force. */
static void protect_of(struct daemon *dm, const char *set, struct dyn_protect *out)
{
	const struct own_addrs *o = own_addrs(dm);
	const struct addr_set *ps = policy_set(daemon_in_force(dm)->pol, set);

	*out = (struct dyn_protect){
		.own = o->v,
		.nown = o->n,
		.lists = { daemon_in_force(dm)->pol ? &daemon_in_force(dm)->pol->opt.never_ban : NULL,
			   ps ? &ps->never_ban : NULL },
	};
	if (planted("ban-anything")) /* test_neverban's positive control: the protection's lists lost */
		*out = (struct dyn_protect){ .nown = 0 };
}

bool dyn_ban_allowed(struct daemon *dm, const char *set, const struct prefix *pfx, const char *who)
{
	struct dyn_protect p;
	char why[160];

	protect_of(dm, set, &p);
	if (!dyn_protected(&p, pfx, why, sizeof(why)))
		return true;
	refusal(dm, set, pfx, why, who);
	return false;
}

/* An entry an automatic source put there (a limit, Suricata, a fleet's
 * other node): not one an operator added. */
static bool automatic(const char *by)
{
	return !strncmp(by, DYN_BY_RULE, strlen(DYN_BY_RULE)) ||
	       !strncmp(by, DYN_BY_SURICATA, strlen(DYN_BY_SURICATA)) ||
	       !strncmp(by, DYN_BY_FLEET, strlen(DYN_BY_FLEET));
}

/* The automatic entries of one set that are never banned now (put there
 * before the address was the appliance's, or the policy's never-ban grew,
 * or by an nfbox before this rule): deleted, each said. */
static void purge_set(struct daemon *dm, struct dyn_set *set)
{
	_cleanup_free_ struct dyn_change *c = calloc(set_size(set) + 1, sizeof(*c));
	struct dyn_undo undo = { 0 };
	struct dyn_protect p;
	uint32_t n = 0;
	struct diags d;
	char why[160], a[64], by[320];

	if (!c)
		return;
	protect_of(dm, set->name, &p);
	for (int fam = 0; fam < 2; fam++)
		for (uint32_t j = 0; j < set->n[fam]; j++) {
			const struct dyn_entry *e = &set->v[fam][j];
			struct prefix pfx = { .family = fam ? POLICY_FAM_IPV6 : POLICY_FAM_IPV4, .plen = e->plen };

			memcpy(pfx.addr, e->addr, 16);
			if (!automatic(dyn_entry_by(&DYN(dm)->store, e)) || !dyn_protected(&p, &pfx, why, sizeof(why)))
				continue;
			dyn_entry_format(fam, e, a, sizeof(a));
			by_text(dyn_entry_by(&DYN(dm)->store, e), by, sizeof(by));
			log_warn("set %s: %s, put there by %s, is %s, which is never banned: deleted", set->name, a, by,
				 why);
			c[n++].pfx = pfx;
		}
	diags_init(&d);
	if (n && store_and_apply(dm, set, c, n, true, &d, &undo, NULL) < 0)
		log_err("set %s: cannot delete entries that are never banned: %s", set->name, diags_last(&d, ""));
	dyn_undo_free(&undo);
	diags_free(&d);
}

static void purge_protected(struct daemon *dm)
{
	for (uint32_t i = 0; i < DYN(dm)->store.n; i++)
		if (DYN(dm)->store.sets[i].in_policy)
			purge_set(dm, &DYN(dm)->store.sets[i]);
}

/* ---- overload (limit: { overload: SET }) ------------------------------------ */

static const struct rule *rule_named(const struct policy *p, const char *name)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (!strcmp(p->rules[i].name, name))
			return &p->rules[i];
	return NULL;
}

void dyn_overload(void *arg, const struct vevent *v)
{
	struct daemon *dm = arg;
	const struct rule *ru = rule_named(daemon_in_force(dm)->pol, v->rule);
	int64_t now = dyn_now_ms();
	struct dyn_change c = { .src = "overload" };
	struct dyn_undo undo = { 0 };
	struct dyn_added did = { .undo = &undo };
	char by[POLICY_MAX_NAME + 8], a[64];
	struct dyn_set *set;
	struct diags d;
	int64_t i;
	int f, r;

	if (!ru || !ru->limit.overload || !(set = dynsets_find(&DYN(dm)->store, ru->limit.overload)))
		return; /* an event of a policy no longer in force */
	c.pfx.family = v->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
	c.pfx.plen = v->af == AF_INET ? 32 : 128;
	memcpy(c.pfx.addr, v->src, 16);
	c.expires = ru->limit.overload_timeout ? now + (int64_t)ru->limit.overload_timeout * 1000 : 0;
	snprintf(by, sizeof(by), DYN_BY_RULE "%s", ru->name);
	c.by = by;
	/* There already, for good or renewed within the last second (NFLOG
	 * repeats an offender's events; the classifier stops once the source
	 * is in the set): nothing to do. */
	f = c.pfx.family == POLICY_FAM_IPV6;
	i = dynset_index(set, f, c.pfx.addr, c.pfx.plen);
	if (i >= 0 && (!c.expires || (set->v[f][i].expires && c.expires - set->v[f][i].expires < 1000)))
		return;
	if (!dyn_ban_allowed(dm, set->name, &c.pfx, by))
		return;
	diags_init(&d);
	r = store_and_apply(dm, set, &c, 1, false, &d, &undo, &did);
	if (r == 0 && (r = dyn_save(dm)) < 0) {
		/* enforced, not kept: the next start would lose it; said loudly */
		log_warn("set %s: the entry added by rule %s could not be saved in %s: %s", set->name, ru->name,
			 daemon_state_dir(dm), strerror(-r));
		r = 0;
	}
	dyn_undo_free(&undo);
	inet_ntop(v->af, v->src, a, sizeof(a));
	if (r < 0 && r != -EEXIST)
		log_warn("set %s: cannot add %s, over the limit of rule %s: %s", set->name, a, ru->name,
			 diags_last(&d, "refused"));
	else if (r == 0)
		log_info("set %s: %s %s by rule %s (over its limit)%s", set->name, a, did.renewed ? "renewed" : "added",
			 ru->name, c.expires ? "" : ", no timeout");
	diags_free(&d);
}

/* ---- expiry ---------------------------------------------------------------- */

static void expired(const struct dyn_set *set, int fam, const struct dyn_entry *e, void *arg)
{
	struct daemon *dm = arg;

	if (be_of(dm))
		be_of(dm)->ops->dyn_expired(be_of(dm), set, fam, e);
}

static void dyn_tick(struct daemon *dm)
{
	uint32_t n = dynsets_expire(&DYN(dm)->store, dyn_now_ms(), expired, dm);

	if (n)
		log_info("dynamic sets: %u entries expired", n);
	if (n || (DYN(dm)->save_due && clock_ms(CLOCK_MONOTONIC) - DYN(dm)->saved_at >= FLEET_SAVE_MS))
		dyn_save(dm);
}

long long dyn_verify_take(struct daemon *dm)
{
	long long at = DYN(dm)->verify_wanted;

	DYN(dm)->verify_wanted = 0;
	return at;
}

int dyn_kernel_apply(struct daemon *dm, const struct dyn_set *set, const struct dyn_change *c, uint32_t n, bool del,
		     struct diags *d)
{
	return apply(dm, set, c, n, del, d);
}

void dyn_kernel_resync(struct daemon *dm)
{
	resync(dm);
}

const struct dynsets *dyn_store(const struct daemon *dm)
{
	return &DYN(dm)->store;
}

/* ---- the part ---- */

static int dynsets_open(struct daemon *dm, void **self, struct diags *d)
{
	struct dynstore *ds = calloc(1, sizeof(*ds));

	if (!ds)
		return diag_errno(d, -ENOMEM, "dynamic sets");
	ds->dm = dm;
	*self = ds;
	return dyn_state_load(dm) < 0 ? diag_errno(d, -ENOMEM, "dynamic sets") : 0;
}

/* The backends read the store; a source over a limit with an overload
 * set is banned into it (dyn_overload). */
static void dynsets_env(void *self, struct backend_env *env)
{
	struct dynstore *ds = self;

	env->dyn = &ds->store;
	env->sink.overload = dyn_overload;
	env->sink.oarg = ds->dm;
}

static int dynsets_start(void *self, struct diags *d)
{
	struct dynstore *ds = self;

	return dyn_recover(ds->dm, d);
}

static int dynsets_check(void *self, const struct change *c, struct diags *d)
{
	struct dynstore *ds = self;

	return dyn_prepare(ds->dm, c->nl->pol, d);
}

static void dynsets_settle(void *self, const struct change *c, int r)
{
	struct dynstore *ds = self;

	(void)c;
	dyn_after_reload(ds->dm, r);
}

static void dynsets_confirmed(void *self)
{
	struct dynstore *ds = self;

	dyn_settle(ds->dm);
}

static void dynsets_tick(void *self)
{
	struct dynstore *ds = self;

	dyn_tick(ds->dm);
}

static bool dynsets_answer(void *self, const struct part_caller *who, const struct ctl_request *req, FILE *f)
{
	struct dynstore *ds = self;

	if (req->verb != CTL_SET_ADD && req->verb != CTL_SET_DEL && req->verb != CTL_SET_LIST &&
	    req->verb != CTL_SET_FLUSH)
		return false;
	dyn_answer(ds->dm, &(struct dyn_caller){ .uid = who->uid, .fd = who->fd }, req, f);
	return true;
}

static void dynsets_text(const struct rep *o, FILE *f)
{
	const struct rep *chk = rep_get(rep_parent(o), "dynamic_sets_check");
	bool first = true;
	char age[32];

	for (const struct rep *s = rep_first(o); s; s = rep_next(s)) {
		fprintf(f, "%s%s %llu", first ? "dynamic:    " : ", ", rep_s(s, "set"),
			(unsigned long long)rep_u(s, "entries"));
		first = false;
	}
	if (first)
		return;
	fputs(" entries (nfbox set list NAME)\n", f);
	fprintf(f, "            the kernel checked against them %s (every %llus): %llu entries repaired",
		rep_ago(rep_i(chk, "checked_at"), age, sizeof(age)),
		(unsigned long long)(rep_u(chk, "every_ms") / 1000), (unsigned long long)rep_u(chk, "repaired"));
	if (rep_u(chk, "failed"))
		fprintf(f, ", %llu checks failed", (unsigned long long)rep_u(chk, "failed"));
	if (*rep_s(chk, "last_repair"))
		fprintf(f, " (last: %s)", rep_s(chk, "last_repair"));
	fputc('\n', f);
	if (rep_u(chk, "bans_refused"))
		fprintf(f, "            %llu automatic bans refused (addresses that are never banned)\n",
			(unsigned long long)rep_u(chk, "bans_refused"));
}

static const struct rep_metric m_entries = { "nfbox_dynamic_set_entries", "gauge", "Entries of each dynamic set.",
					     "set" };

static void dynsets_status(void *self, struct rep *status)
{
	struct dynstore *ds = self;
	struct rep *chk = rep_object(status, "dynamic_sets_check"), *l;

	dyn_check_report(ds->dm, chk);
	rep_uint(chk, "bans_refused", ds->refused);
	l = rep_list(status, "dynamic_sets");
	rep_text(l, dynsets_text);
	for (uint32_t i = 0; i < ds->store.n; i++) {
		const struct dyn_set *s = &ds->store.sets[i];
		struct rep *o;

		if (!s->in_policy)
			continue;
		o = rep_object(l, NULL);
		rep_str(o, "set", s->name);
		rep_metric(rep_uint(o, "entries", (uint64_t)s->n[0] + s->n[1]), &m_entries);
	}
}

static void dynsets_stats(void *self, struct stats_rows *rows, struct rep *stats, bool zero)
{
	struct dynstore *ds = self;
	struct rep *drops = rep_at(stats, "drops");

	if (rows || !stats)
		return;
	rep_metric(rep_uint(drops, "dynset_repaired", dyn_check_repaired(ds->dm, zero)), &report_drop_metric);
	rep_metric(rep_uint(drops, "ban_refused", ds->refused), &report_drop_metric);
	if (zero)
		ds->refused = 0;
}

static void dynsets_close(void *self)
{
	struct dynstore *ds = self;

	if (!ds)
		return;
	if (ds->save_due && !planted("dyn-fleet-unsaved-at-stop")) /* etcd's changes of the last seconds */
		dyn_save(ds->dm);
	dynsets_free(&ds->store);
	free(ds->own.v);
	free(ds);
}

const struct part part_dynsets = {
	.name = "dynamic sets",
	.open = dynsets_open,
	.env = dynsets_env,
	.start = dynsets_start,
	.check = dynsets_check,
	.settle = dynsets_settle,
	.confirmed = dynsets_confirmed,
	.tick = dynsets_tick,
	.answer = dynsets_answer,
	.status = dynsets_status,
	.stats = dynsets_stats,
	.close = dynsets_close,
};
