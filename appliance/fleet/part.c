/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A node of a fleet (fleet.h). Keys of group G under PREFIX (default
 * /nfbox):
 *   PREFIX/G/policy           the group's revision (fleet/bundle.h)
 *   PREFIX/G/candidate        a revision for the canaries it names
 *   PREFIX/G/nodes/NODE       each node's status, under the node's lease
 *   PREFIX/G/sets/SET/PREFIX  a shared set's entry, under a lease that ends
 *                             with its timeout
 * A revision is the mod_revision of its key; a node applies the group's,
 * or the candidate when it is one of its canaries (as a reload --confirm
 * that it confirms once it has reached etcd again, on a new connection,
 * after the change).
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "confirm/confirm.h"
#include "daemon/part.h"
#include "daemon/state.h"
#include "dynset/part/part.h"
#include "ha/pair.h"
#include "lib/fingerprint.h"
#include "fleet/bundle.h"
#include "fleet/conf.h"
#include "fleet/etcd.h"
#include "fleet/mirror.h"
#include "fleet/pack.h"
#include "lib/plant.h"
#include "policy/syntax/parse.h"

#define FLEET_LEASE_S 10 /* a node's status outlives it by this */
/* The lease is kept alive a third of its time (as etcd's own client does):
 * each keepalive is a request of every node to etcd's leader, so its rate
 * is the fleet's idle load (one a second each overloaded a 3-member cluster
 * at 500 nodes). A lost etcd is seen by the watch's connection sooner
 * (etcd.c: TCP keepalive). */
#define FLEET_KEEPALIVE_MS (FLEET_LEASE_S * 1000 / 3)
#define FLEET_RETRY_MS	   1000	 /* etcd tried again after a failure (at random in 0.5-1x of this) */
#define FLEET_RETRY_MAX_MS 4000	 /* ... doubled after each failure up to this */
#define FLEET_SAY_DOWN_MS  30000 /* etcd still lost: the log says so again at most this often */
/* A full read of the group (a shared entry is about 200 bytes of JSON: 2 MB
 * for 10,000) waits this long, not the 3 s of other requests: etcd answers
 * a read it cannot serve (no quorum) with an error within about 7 s itself,
 * and a read given up on while a loaded member is still making its answer
 * is asked again at once and made again, which is how 500 nodes reading
 * 10,000 entries each ran etcd out of memory. */
#define FLEET_READ_TIMEOUT_MS 15000
#define FLEET_WATCH_READY_MS  3000 /* a resumed watch created, or the connection is given up */
#define FLEET_CONFIRM_S	      30   /* a canary's time to confirm when the push gives none */
#define FLEET_MAX_PUBS	      (1u << 16)
#define FLEET_SET_LEASE_PAD   2	  /* s: an entry's key outlives its timeout, so nodes expire it first */
#define FLEET_TXN_OPS	      128 /* operations in one transaction: etcd's --max-txn-ops (its default) */
/* a transaction's keys and values: etcd takes a request of 1.5 MiB
 * (--max-request-bytes), and the gateway's base64 makes 4 bytes of 3 */
#define FLEET_TXN_BYTES	 (512 * 1024)
#define FLEET_TRIM_BYTES (256 * 1024) /* etcd's values in one wake: then malloc gives back what is free */

#define ETCD_LOST   "etcd not reached"
#define WRITES_LOST "etcd did not take this node's writes"

/* ---- what the thread tells the loop ---- */

enum fmsg_kind {
	FM_UP,	     /* etcd reached (again) */
	FM_DOWN,     /* not reached: err; seq: the failed attempts in a row */
	FM_SNAP,     /* a full read of the group's keys begins */
	FM_SNAP_END, /* ... and ends */
	FM_POLICY,   /* the group's revision (del: none) */
	FM_CANDIDATE,
	FM_SET,		  /* a shared set's entry (key: SET/PREFIX) */
	FM_PROBE,	  /* etcd answered a new connection (seq) */
	FM_ERROR,	  /* an operation refused (err), the connection fine */
	FM_WRITES_FAILED, /* etcd did not take a write (err), the watch goes on */
	FM_WRITES_OK,	  /* ... and takes them again */
	FM_NOTE,	  /* for the log (err) */
};

struct fmsg {
	enum fmsg_kind kind;
	bool del;
	int64_t rev;
	uint64_t seq;
	char *key, *value;
	size_t vlen;
	char err[768];
	struct fmsg *next;
};

/* A shared set's change for etcd. */
struct pub {
	char set[POLICY_MAX_NAME + 1];
	struct prefix pfx;
	int64_t expires; /* ms; 0: none */
	char origin[32]; /* who made it here (a pack's "origin") */
	bool del;	 /* taken out of every record */
	bool strip;	 /* an add that another record would outlast: taken out of those too */
	uint64_t seq;	 /* the order they came in */
};

/* A revision as etcd holds it (the raw value, decoded when applied). */
struct fval {
	bool present;
	int64_t rev;
	char *value;
	size_t vlen;
};

struct fleet;
/* The part's state: the node's, with --fleet. */
struct fleet_part {
	struct daemon *dm;
	struct fleet *fl;
};
#define FL(dm) (((struct fleet_part *)daemon_part_state(dm, &part_fleet))->fl)

static void fleet_tick(struct daemon *dm);

struct fleet {
	struct fleet_conf conf;
	char base[PATH_MAX + 16]; /* STATE/fleet */
	pthread_t thread;
	bool running;
	int to_loop, to_thread; /* eventfds */
	struct handler h;
	pthread_mutex_t mu;
	/* under mu */
	struct fmsg *in, **in_tail;
	char *status;
	bool status_dirty, stop;
	struct pub *pubs;
	uint32_t npubs, cappubs;
	uint64_t pub_seq;
	uint64_t probe_req, probe_done;
	char endpoint[160];
	/* the loop's alone */
	bool connected, snapping;
	bool have_snapshot; /* etcd's shared entries were read once: until then the sets keep theirs */
	long long since;
	uint64_t attempts;   /* failed attempts to reach etcd since it was lost (0: reached) */
	long long said_down; /* ms (monotonic): when the log last said etcd was not reached */
	struct fval pol, cand;
	int64_t applied_rev, refused_rev;
	char applied_fp[65], applied_path[PATH_MAX];
	char last_error[1024];
	struct {
		int64_t rev;
		bool canary;
		char fp[65], path[PATH_MAX];
	} applying; /* rev 0: none */
	struct {
		int64_t rev;
		const char *state; /* "confirming", "confirmed", "rolled back", "refused" */
		char fp[65], path[PATH_MAX];
		uint64_t probe; /* the probe asked after its reload */
		long long deadline;
	} canary;
	struct mirror mirror; /* the shared entries as etcd holds them */
	char *sent_status;
	uint64_t probe_seen;	    /* the last probe the thread did */
	unsigned long reloads_seen; /* daemon_loads(dm) when the shared sets were last reconciled */
	char enforced[65];	    /* enforced_fp() of the load daemon_loads(dm) was enforced_load */
	unsigned long enforced_load;
	bool enforced_known;
	unsigned long published, received;
	unsigned long transactions; /* of shared changes, into etcd (the thread's, under mu) */
	/* the thread's alone */
	struct etcd etcd;
	struct etcd_watch *watch;
	int64_t lease;
	int64_t pub_lease, pub_bucket; /* the shared entries' lease for the 10 s they end in (bucket 0: none) */
	uint32_t run_id;	       /* in this node's packs' keys: +NODE.RUN.SEQ */
	uint64_t pack_seq;
	long long pubs_sent; /* ms (monotonic): the last transaction of shared changes */
	long long next_keepalive;
	int64_t seen_rev;      /* the store's revision the node last read or was told of (the thread's) */
	char up_how[160];      /* how the last connection began to follow the group */
	long long write_after; /* ms (monotonic): the writes wait until then after a failure */
	unsigned write_tries;  /* writes failed in a row */
	const char *stage;     /* what the thread was doing with etcd, for its errors */
};

static void post(struct fleet *fl, struct fmsg *m)
{
	uint64_t one = 1;

	pthread_mutex_lock(&fl->mu);
	m->next = NULL;
	*fl->in_tail = m;
	fl->in_tail = &m->next;
	pthread_mutex_unlock(&fl->mu);
	if (write(fl->to_loop, &one, sizeof(one)) < 0) {
		/* the counter is full: the loop wakes anyway */
	}
}

static void post_simple(struct fleet *fl, enum fmsg_kind kind, const char *err)
{
	struct fmsg *m = calloc(1, sizeof(*m));

	if (!m)
		return;
	m->kind = kind;
	snprintf(m->err, sizeof(m->err), "%s", err ? err : "");
	post(fl, m);
}

static void fmsg_free(struct fmsg *m)
{
	free(m->key);
	free(m->value);
	free(m);
}

/* ---- the thread ---- */

static size_t group_prefix(const struct fleet *fl, char *buf, size_t len)
{
	fleet_key(&fl->conf, fl->conf.group, "", buf, len);
	return strlen(buf);
}

/* A key of the group as a message; NULL for keys the node does not follow. */
static struct fmsg *msg_of(struct fleet *fl, const struct etcd_kv *kv, bool del)
{
	char pfx[512];
	size_t pl = group_prefix(fl, pfx, sizeof(pfx));
	const char *rest = kv->key + pl;
	struct fmsg *m;

	if (strncmp(kv->key, pfx, pl))
		return NULL;
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	m->del = del;
	m->rev = kv->mod_rev;
	if (!strcmp(rest, "policy")) {
		m->kind = FM_POLICY;
	} else if (!strcmp(rest, "candidate")) {
		m->kind = FM_CANDIDATE;
	} else if (!strncmp(rest, "sets/", 5)) {
		m->kind = FM_SET;
		m->key = strdup(rest + 5);
	} else {
		free(m);
		return NULL;
	}
	if (!del) {
		m->value = malloc(kv->vlen + 1);
		if (m->value) {
			memcpy(m->value, kv->value, kv->vlen);
			m->value[kv->vlen] = '\0';
			m->vlen = kv->vlen;
		}
	}
	if ((m->kind == FM_SET && !m->key) || (!del && !m->value)) {
		fmsg_free(m);
		return NULL;
	}
	return m;
}

static int on_watch(const struct etcd_event *ev, void *arg)
{
	struct fleet *fl = arg;
	struct fmsg *m = msg_of(fl, &ev->kv, ev->del);

	if (ev->kv.mod_rev > fl->seen_rev)
		fl->seen_rev = ev->kv.mod_rev;
	if (m)
		post(fl, m);
	return 0;
}

static void node_key(const struct fleet *fl, char *buf, size_t len)
{
	char what[128];

	snprintf(what, sizeof(what), "nodes/%s", fl->conf.node);
	fleet_key(&fl->conf, fl->conf.group, what, buf, len);
}

/* The node's status under its lease (a new lease when the last is gone). */
static int put_status(struct fleet *fl, bool force)
{
	_cleanup_free_ char *text = NULL;
	char key[512];
	int r;

	pthread_mutex_lock(&fl->mu);
	if ((force || fl->status_dirty) && fl->status)
		text = strdup(fl->status);
	fl->status_dirty = false;
	pthread_mutex_unlock(&fl->mu);
	if (!text)
		return 0;
	if (!fl->lease && (r = etcd_lease_grant(&fl->etcd, FLEET_LEASE_S, &fl->lease)) < 0)
		goto failed;
	node_key(fl, key, sizeof(key));
	if ((r = etcd_put(&fl->etcd, key, text, strlen(text), fl->lease)) == 0)
		return 0;
failed:
	pthread_mutex_lock(&fl->mu);
	fl->status_dirty = true;
	pthread_mutex_unlock(&fl->mu);
	return r;
}

/* The node's lease kept alive (granted again with the status if it is
 * gone), and the next keepalive due FLEET_KEEPALIVE_MS from now. */
static int keepalive(struct fleet *fl)
{
	int64_t left = 0;
	int r;

	fl->stage = "keeping the lease";
	if (!fl->lease) {
		r = put_status(fl, true);
	} else if ((r = etcd_lease_keepalive(&fl->etcd, fl->lease, &left)) == 0 && !left) {
		fl->lease = 0; /* gone while etcd was not reached: the status again */
		r = put_status(fl, true);
	}
	if (r == 0)
		fl->next_keepalive = clock_ms(CLOCK_MONOTONIC) + FLEET_KEEPALIVE_MS;
	return r;
}

/* The lease of entries that end at expires (ms; 0: none, and no lease):
 * those that end within the same 10 s share one (fl->pub_lease), across
 * transactions: a lease granted is a commit of etcd's too, and one for each
 * ban doubled the origin's requests. A transaction that fails forgets it
 * (etcd may have lost it). */
static int pub_lease(struct fleet *fl, int64_t expires, int64_t *out, bool *kept)
{
	int64_t b;
	int r;

	*out = 0;
	if (!expires)
		return 0;
	b = (expires + 9999) / 10000;
	if (fl->pub_bucket != b || planted("fleet-lease-each")) {
		int64_t ttl = (b * 10000 - (int64_t)clock_ms(CLOCK_REALTIME)) / 1000 + 1 + FLEET_SET_LEASE_PAD;

		if ((r = etcd_lease_grant(&fl->etcd, ttl, &fl->pub_lease)) < 0)
			return r;
		fl->pub_bucket = b;
	} else {
		*kept = true;
	}
	*out = fl->pub_lease;
	return 0;
}

/* Operations for etcd, made up to a transaction's size at a time. */
struct txn_batch {
	struct etcd_op ops[FLEET_TXN_OPS];
	struct etcd_cmp cmps[FLEET_TXN_OPS];
	int64_t expires[FLEET_TXN_OPS]; /* an op's entries' end, for its lease (0: none) */
	char *keys[FLEET_TXN_OPS], *vals[FLEET_TXN_OPS];
	uint32_t nops, ncmps;
	size_t bytes;
};

static void batch_reset(struct txn_batch *t)
{
	for (uint32_t i = 0; i < t->nops; i++) {
		free(t->keys[i]);
		free(t->vals[i]);
	}
	t->nops = t->ncmps = 0;
	t->bytes = 0;
}

/* Whether the batch has room for an operation of len bytes more. */
static bool batch_room(const struct txn_batch *t, size_t len)
{
	uint32_t most = planted("fleet-put-each") ? 1 : FLEET_TXN_OPS;

	return t->nops < most && (!t->nops || t->bytes + len <= FLEET_TXN_BYTES);
}

/* One operation into the batch (key and val are the batch's now; val
 * NULL: a delete); cmp_rev >= 0: the key must be at that revision. */
static void batch_add(struct txn_batch *t, char *key, char *val, int64_t expires, int64_t lease, int64_t cmp_rev)
{
	uint32_t i = t->nops++;

	t->keys[i] = key;
	t->vals[i] = val;
	t->expires[i] = expires;
	t->ops[i] =
		(struct etcd_op){ .del = !val, .key = key, .val = val, .len = val ? strlen(val) : 0, .lease = lease };
	t->bytes += strlen(key) + t->ops[i].len;
	if (cmp_rev >= 0)
		t->cmps[t->ncmps++] = (struct etcd_cmp){ .key = key, .mod_rev = cmp_rev };
}

/* The batch into etcd as one transaction (*ok: its compares held), then
 * emptied. The new entries' leases are given here: a lease kept from an
 * earlier transaction may be gone (etcd restored from a backup, the lease
 * revoked by hand), so once more with a new one before it is said
 * refused. */
static int batch_commit(struct fleet *fl, struct txn_batch *t, bool *ok)
{
	int r;

	*ok = true;
	if (!t->nops)
		return 0;
	for (int attempt = 0;; attempt++) {
		bool kept = false;

		for (uint32_t i = 0; i < t->nops; i++)
			if (t->expires[i] && (r = pub_lease(fl, t->expires[i], &t->ops[i].lease, &kept)) < 0)
				goto out;
		if ((r = etcd_txn(&fl->etcd, t->cmps, t->ncmps, t->ops, t->nops, ok, NULL)) == 0)
			break;
		fl->pub_bucket = 0;
		if (!kept || attempt || planted("fleet-lease-no-retry"))
			goto out;
	}
	fl->pubs_sent = clock_ms(CLOCK_MONOTONIC);
	pthread_mutex_lock(&fl->mu);
	fl->transactions++;
	pthread_mutex_unlock(&fl->mu);
out:
	batch_reset(t);
	return r;
}

static void set_records_key(const struct fleet *fl, const char *set, const char *rest, char *buf, size_t len)
{
	char what[POLICY_MAX_NAME + FLEET_MAX_NAME + 200];

	snprintf(what, sizeof(what), "sets/%s/%s", set, rest);
	fleet_key(&fl->conf, fl->conf.group, what, buf, len);
}

/* Order of the waiting changes: by set and prefix, then as they came. */
static int cmp_pub(const void *a, const void *b)
{
	const struct pub *x = a, *y = b;
	int c = strcmp(x->set, y->set);

	if (c || (c = pack_prefix_cmp(&x->pfx, &y->pfx)))
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Packs in the order they are made: by set, the 10 s their entries end
 * in, and who made them. */
static int cmp_pack(const void *a, const void *b)
{
	const struct pub *x = a, *y = b;
	int64_t bx = (x->expires + 9999) / 10000, by = (y->expires + 9999) / 10000;
	int c = strcmp(x->set, y->set);

	if (c)
		return c;
	if (bx != by)
		return bx < by ? -1 : 1;
	return strcmp(x->origin, y->origin);
}

static bool same_entry(const struct pub *x, const struct pub *y)
{
	return !strcmp(x->set, y->set) && !pack_prefix_cmp(&x->pfx, &y->pfx);
}

/* The changes folded to the last of each entry (v sorted by cmp_pub): an
 * add after a delete of the same entry still takes it out of the other
 * records. The number left, at the front of v. */
static uint32_t fold(struct pub *v, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (k && same_entry(&v[k - 1], &v[i]) && !planted("fleet-no-fold")) {
			bool out = v[k - 1].del || v[k - 1].strip;

			v[k - 1] = v[i];
			v[k - 1].strip |= out && !v[i].del;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

/* The adds of v (sorted by cmp_pack) into etcd as packs, a transaction
 * holding as many as it may. */
static int send_packs(struct fleet *fl, const struct pub *v, uint32_t n)
{
	_cleanup_free_ struct txn_batch *t = calloc(1, sizeof(*t));
	_cleanup_free_ struct mirror_item *items = calloc(PACK_MAX_ENTRIES, sizeof(*items));
	uint32_t most = planted("fleet-pack-one") ? 1 : PACK_MAX_ENTRIES;
	int64_t now = (int64_t)clock_ms(CLOCK_REALTIME);
	bool ok;
	int r = 0;

	if (!t || !items)
		return -ENOMEM;
	for (uint32_t i = 0, j; i < n && r == 0; i = j) {
		char id[FLEET_MAX_NAME + 48], key[600], *val, *kd;
		uint32_t k = 0;

		for (j = i; j < n && k < most && !cmp_pack(&v[i], &v[j]); j++)
			if (!v[j].expires || v[j].expires > now) /* (one over already is not shared) */
				items[k++] = (struct mirror_item){ .pfx = v[j].pfx, .expires = v[j].expires };
		if (!k)
			continue;
		snprintf(id, sizeof(id), "+%s.%08x.%" PRIu64, fl->conf.node, fl->run_id, ++fl->pack_seq);
		set_records_key(fl, v[i].set, id, key, sizeof(key));
		val = pack_encode(fl->conf.node, v[i].origin, items, k);
		kd = strdup(key);
		if (!val || !kd)
			r = -ENOMEM;
		else if (!batch_room(t, strlen(key) + strlen(val)))
			r = batch_commit(fl, t, &ok);
		if (r < 0) {
			free(val);
			free(kd);
			break;
		}
		batch_add(t, kd, val, items[0].expires, 0, -1);
	}
	if (r == 0)
		r = batch_commit(fl, t, &ok);
	batch_reset(t);
	return r;
}

/* Whether key (below sets/) names a pack this node made after seq. */
static bool pack_since(const struct fleet *fl, const char *rest, uint64_t seq)
{
	char mine[FLEET_MAX_NAME + 24];
	size_t ml = (size_t)snprintf(mine, sizeof(mine), "+%s.%08x.", fl->conf.node, fl->run_id);
	const char *p = strchr(rest, '/');

	return p && !strncmp(p + 1, mine, ml) && strtoull(p + 1 + ml, NULL, 10) > seq;
}

/* Whether the record kv (rest: its key below sets/) holds any of del:
 * *out its value without them (NULL: a delete). */
static int strip_record(const struct etcd_kv *kv, const char *rest, const struct prefix *del, uint32_t ndel, char **out,
			bool *changed)
{
	struct mirror_item *it = NULL;
	char s[POLICY_MAX_NAME + 1], by[MIRROR_BY_MAX];
	uint32_t n, bad;

	*out = NULL;
	*changed = false;
	if (pack_key_is_pack(rest))
		return pack_strip(kv->value, kv->vlen, del, ndel, out, changed) == -ENOMEM ? -ENOMEM : 0;
	*changed = pack_decode(rest, NULL, 0, true, s, by, sizeof(by), &it, &n, &bad) == 0 &&
		   pack_has(del, ndel, &it[0].pfx);
	free(it);
	return 0;
}

#ifdef NFBOX_TEST_PLANT
/* The test build's other writer: while the file NFBOX_TEST_FLEET_RACE
 * names is there, the prefixes it lists (one a line) are taken out of the
 * packs just read, by a write of their own, before this node writes what
 * it read: as another node's delete landing between this node's read and
 * its write (nfbox itself has no such switch). */
static void race_hook(struct fleet *fl, const struct etcd_kvs *kvs, size_t dl, const char *set)
{
	const char *f = getenv("NFBOX_TEST_FLEET_RACE");
	_cleanup_fclose_ FILE *in = f ? fopen(f, "re") : NULL;
	struct prefix del[16];
	uint32_t n = 0;
	char line[128], rest[600];

	while (in && n < 16 && fgets(line, sizeof(line), in)) {
		const char *why;
		bool hb;

		line[strcspn(line, "\n")] = '\0';
		if (parse_prefix(line, &del[n], &hb, &why) == 0)
			n++;
	}
	pack_sort(del, n);
	for (size_t i = 0; n && i < kvs->n; i++) {
		char *out = NULL;
		bool changed = false;

		snprintf(rest, sizeof(rest), "%s/%s", set, kvs->v[i].key + dl);
		if (!pack_key_is_pack(rest) ||
		    pack_strip(kvs->v[i].value, kvs->v[i].vlen, del, n, &out, &changed) < 0 || !changed) {
			free(out);
			continue;
		}
		if (out)
			etcd_put(&fl->etcd, kvs->v[i].key, out, strlen(out), kvs->v[i].lease);
		free(out);
	}
}
#endif

/* The entries del (sorted: pack_sort) taken out of every record of set
 * that holds them, but the packs this node made after seq (this round's):
 * a key of one entry deleted, a pack written again without them (under
 * its lease; deleted when none is left), each only if no one changed it
 * since it was read; else read again. */
static int send_removals(struct fleet *fl, const char *set, const struct prefix *del, uint32_t ndel, uint64_t seq)
{
	_cleanup_free_ struct txn_batch *t = calloc(1, sizeof(*t));
	char dir[600], end[600], rest[600];
	size_t dl;
	int r = 0;

	if (!t)
		return -ENOMEM;
	set_records_key(fl, set, "", dir, sizeof(dir));
	etcd_prefix_end(dir, end, sizeof(end));
	dl = strlen(dir);
	for (int tries = 0; tries < 5; tries++) {
		struct etcd_kvs kvs = { 0 };
		struct etcd_span span = { .key = dir, .end = end };
		long was = fl->etcd.timeout_ms;
		bool held = true, ok = true;

		fl->etcd.timeout_ms = FLEET_READ_TIMEOUT_MS;
		r = etcd_get_span(&fl->etcd, &span, 0, &kvs);
		fl->etcd.timeout_ms = was;
		if (r < 0)
			return r;
#ifdef NFBOX_TEST_PLANT
		race_hook(fl, &kvs, dl, set);
#endif
		for (size_t i = 0; i < kvs.n && r == 0 && held; i++) {
			const struct etcd_kv *kv = &kvs.v[i];
			char *out, *key;
			bool changed;

			snprintf(rest, sizeof(rest), "%s/%s", set, kv->key + dl);
			if (pack_since(fl, rest, seq) || (r = strip_record(kv, rest, del, ndel, &out, &changed)) < 0 ||
			    !changed)
				continue;
			if (!batch_room(t, strlen(kv->key) + (out ? strlen(out) : 0)) &&
			    (r = batch_commit(fl, t, &ok)) == 0)
				held = ok;
			if (r < 0 || !held || !(key = strdup(kv->key))) {
				free(out);
				r = r < 0 || !held ? r : -ENOMEM;
				continue;
			}
			/* (the positive control writes what it read, whoever changed it since) */
			batch_add(t, key, out, 0, out ? kv->lease : 0,
				  planted("fleet-rewrite-blind") ? -1 : kv->mod_rev);
		}
		if (r == 0 && held && (r = batch_commit(fl, t, &ok)) == 0)
			held = ok;
		batch_reset(t);
		etcd_kvs_free(&kvs);
		if (r == -EIO && strstr(fl->etcd.err, "lease not found"))
			continue; /* a pack's lease ended as it was written: gone with it; read again */
		if (r < 0 || held)
			return r;
	}
	snprintf(fl->etcd.err, sizeof(fl->etcd.err), "set %s's records changed by others while this node changed them",
		 set);
	return -EIO;
}

/* The changes v (n, folded) into etcd: the adds as packs first, then the
 * entries deleted, or shortened, taken out of the other records (so that
 * a renewal is never a moment without the entry). *sent_adds: whether the
 * adds went (the removals are tried again alone). */
static int send_changes(struct fleet *fl, struct pub *v, uint32_t n, bool *sent_adds)
{
	_cleanup_free_ struct prefix *del = calloc(n + 1, sizeof(*del));
	uint32_t nadd = 0;
	uint64_t seq = fl->pack_seq;
	int r;

	if (!del)
		return -ENOMEM;
	if (!*sent_adds) {
		_cleanup_free_ struct pub *adds = calloc(n + 1, sizeof(*adds));

		if (!adds)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			if (!v[i].del)
				adds[nadd++] = v[i];
		qsort(adds, nadd, sizeof(*adds), cmp_pack);
		if ((r = send_packs(fl, adds, nadd)) < 0)
			return r;
		*sent_adds = true;
	}
	for (uint32_t i = 0; i < n;) { /* v is by set: a read of each set with removals */
		uint32_t j = i, ndel = 0;

		for (; j < n && !strcmp(v[j].set, v[i].set); j++)
			if (v[j].del || v[j].strip)
				del[ndel++] = v[j].pfx;
		if (ndel) {
			pack_sort(del, ndel);
			if ((r = send_removals(fl, v[i].set, del, ndel, seq)) < 0)
				return r;
		}
		i = j;
	}
	return 0;
}

/* The shared sets' changes waiting: into etcd; what etcd refuses (RBAC)
 * is said and dropped, what cannot be sent (etcd not reached) goes back to
 * the front of the queue (sent again whole: packs and removals are the
 * same when sent twice). */
static int put_pubs(struct fleet *fl)
{
	struct pub *v;
	uint32_t n;
	bool sent_adds = false;
	int r;

	pthread_mutex_lock(&fl->mu);
	v = fl->pubs;
	n = fl->npubs;
	fl->pubs = NULL;
	fl->npubs = fl->cappubs = 0;
	pthread_mutex_unlock(&fl->mu);
	if (!n) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_pub);
	n = fold(v, n);
	r = send_changes(fl, v, n, &sent_adds);
	if (r == -EACCES || r == -EIO) {
		char err[700], pfx[64];

		policy_prefix_format(&v[0].pfx, pfx, sizeof(pfx));
		snprintf(err, sizeof(err), "shared set %s: %u change%s (%s%s): %s", v[0].set, n, n == 1 ? "" : "s", pfx,
			 n > 1 ? " ..." : "", fl->etcd.err);
		post_simple(fl, FM_ERROR, err);
		r = 0;
	}
	if (r < 0) {
		uint32_t keep = 0;

		for (uint32_t i = 0; i < n; i++)		  /* what went already stays out */
			if (!sent_adds || v[i].del || v[i].strip) /* (an add that strips goes again whole) */
				v[keep++] = v[i];
		pthread_mutex_lock(&fl->mu);
		struct pub *nv = realloc(v, (keep + fl->npubs + 1) * sizeof(*nv));

		if (nv) {
			memcpy(nv + keep, fl->pubs, fl->npubs * sizeof(*nv));
			free(fl->pubs);
			fl->pubs = nv;
			fl->npubs += keep;
			fl->cappubs = fl->npubs + 1;
			v = NULL;
		}
		pthread_mutex_unlock(&fl->mu);
		if (v) /* no memory for both: these are lost, and said */
			post_simple(fl, FM_ERROR, "out of memory: shared changes lost");
	}
	free(v);
	return r;
}

/* The keys a node follows: its group's candidate, and from its policy on
 * (the policy and the shared sets), never the other nodes' status keys
 * between them: every node's status written is not every node's to read
 * (with N nodes, N times N events). spans[] points into keys. */
struct followed {
	char cand[512], pol[512], end[512];
	struct etcd_span spans[2];
};

static void followed_keys(const struct fleet *fl, struct followed *f)
{
	char pfx[512];

	group_prefix(fl, pfx, sizeof(pfx));
	fleet_key(&fl->conf, fl->conf.group, "candidate", f->cand, sizeof(f->cand));
	fleet_key(&fl->conf, fl->conf.group, "policy", f->pol, sizeof(f->pol));
	etcd_prefix_end(pfx, f->end, sizeof(f->end));
	f->spans[0] = (struct etcd_span){ .key = f->cand };
	f->spans[1] = (struct etcd_span){ .key = f->pol, .end = f->end };
}

/* The followed keys read (the candidate at the same revision as the rest). */
static int read_followed(struct fleet *fl, const struct followed *f, struct etcd_kvs *kvs, struct etcd_kvs *cand)
{
	long was = fl->etcd.timeout_ms;
	int r;

	fl->etcd.timeout_ms = FLEET_READ_TIMEOUT_MS;
	if ((r = etcd_get_span(&fl->etcd, &f->spans[1], 0, kvs)) == 0 &&
	    (r = etcd_get_span(&fl->etcd, &f->spans[0], kvs->rev, cand)) < 0)
		etcd_kvs_free(kvs);
	fl->etcd.timeout_ms = was;
	return r;
}

/* A full read's keys to the loop, between FM_SNAP and FM_SNAP_END; a
 * policy or candidate that is not there is said as deleted. */
static void post_snapshot(struct fleet *fl, const struct etcd_kvs *kvs, const struct etcd_kvs *cand)
{
	bool pol = false, cnd = false;
	struct fmsg *m;

	post_simple(fl, FM_SNAP, NULL);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < (k ? cand : kvs)->n; i++) {
			if (!(m = msg_of(fl, &(k ? cand : kvs)->v[i], false)))
				continue;
			pol |= m->kind == FM_POLICY;
			cnd |= m->kind == FM_CANDIDATE;
			post(fl, m);
		}
	for (int k = 0; k < 2; k++) {
		if ((k ? cnd : pol) || !(m = calloc(1, sizeof(*m))))
			continue;
		*m = (struct fmsg){ .kind = k ? FM_CANDIDATE : FM_POLICY, .del = true };
		post(fl, m);
	}
	post_simple(fl, FM_SNAP_END, NULL);
}

/* The watch resumed from the revision after the last seen, and etcd's
 * answer that it created it. Once more with a new token if etcd does not
 * know the one it went with: a member restarted since it was given (the
 * lease's keepalive before it needs none). */
static int resume_watch(struct fleet *fl, const struct followed *f)
{
	int r;

	for (int tries = 0;; tries++) {
		fl->stage = "resuming the watch";
		if ((r = etcd_watch_start(&fl->etcd, f->spans, 2, fl->seen_rev + 1, on_watch, fl, &fl->watch)) < 0)
			return r;
		r = etcd_watch_ready(fl->watch, FLEET_WATCH_READY_MS);
		if (r != -EKEYEXPIRED || tries || planted("fleet-watch-stale-token"))
			return r;
		etcd_watch_free(fl->watch);
		fl->watch = NULL;
		fl->stage = "authenticating";
		if ((r = etcd_authenticate(&fl->etcd)) < 0)
			return r;
	}
}

/* The group's keys followed. A node that has followed them before resumes
 * its watch from the revision after the last it saw: etcd sends what
 * changed meanwhile (a lease's end is a delete too), and nothing more is
 * read. A member lost drops a third of the nodes; each read the group
 * whole again before (2 MB with 10,000 shared entries). If etcd compacted
 * past that revision while the node was away, the watch ends with
 * "compacted" (thread_main then forgets the revision) and the next
 * connection, at once, reads the group whole and watches from there: what
 * changed meanwhile is only in a read. fl->up_how: which, for the log. */
static int connect_etcd(struct fleet *fl)
{
	struct etcd_kvs kvs = { 0 }, cand = { 0 };
	struct followed f;
	int r;

	/* on new connections: one that was open may be to a member behind a
	 * partition, and the read's long wait is for a member that answers */
	fl->etcd.fresh = !planted("fleet-reconnect-reuses");
	fl->stage = "sending this node's shared changes";
	if ((r = put_pubs(fl)) < 0) /* what changed here while away goes first */
		return r;
	followed_keys(fl, &f);
	if (fl->seen_rev && !planted("fleet-read-each-reconnection")) {
		/* the lease first: it needs etcd's leader (a member cut off
		 * from the others would still take a watch), and the
		 * request goes to a member that answers, where the watch
		 * goes too; etcd's answer that it created the watch, before
		 * etcd is said reached */
		if ((r = keepalive(fl)) < 0)
			return r;
		if ((r = resume_watch(fl, &f)) < 0)
			return r;
		snprintf(fl->up_how, sizeof(fl->up_how), "the watch resumed from revision %" PRId64, fl->seen_rev + 1);
		return 0;
	}
	fl->stage = "reading the group";
	if ((r = read_followed(fl, &f, &kvs, &cand)) < 0)
		return r;
	fl->seen_rev = kvs.rev;
	post_snapshot(fl, &kvs, &cand);
	snprintf(fl->up_how, sizeof(fl->up_how), "the group read whole at revision %" PRId64 " (%zu keys)", kvs.rev,
		 kvs.n + cand.n);
	fl->stage = "starting the watch";
	r = etcd_watch_start(&fl->etcd, f.spans, 2, kvs.rev + 1, on_watch, fl, &fl->watch);
	etcd_kvs_free(&kvs);
	etcd_kvs_free(&cand);
	if (r < 0)
		return r;
	return keepalive(fl);
}

static bool want_stop(struct fleet *fl)
{
	return __atomic_load_n(&fl->stop, __ATOMIC_RELAXED);
}

static void drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

/* A probe asked for: etcd reached on a new connection. */
static int probe(struct fleet *fl)
{
	uint64_t want;
	struct fmsg *m;
	int64_t left;
	int r;

	pthread_mutex_lock(&fl->mu);
	want = fl->probe_req;
	pthread_mutex_unlock(&fl->mu);
	if (want == fl->probe_done)
		return 0;
	fl->etcd.fresh = true;
	r = fl->lease ? etcd_lease_keepalive(&fl->etcd, fl->lease, &left) : put_status(fl, true);
	if (r < 0)
		return r;
	fl->probe_done = want;
	if ((m = calloc(1, sizeof(*m)))) {
		m->kind = FM_PROBE;
		m->seq = want;
		post(fl, m);
	}
	return 0;
}

static int retry_ms(unsigned *tries);

/* How long the shared changes waiting have yet to wait (ms; 0: they may
 * go; -1: none wait). A change made within the fleet file's share-window
 * of the last transaction waits for the window's end and goes with all
 * made meanwhile, so that a burst of bans is a few events on every node's
 * watch, not one each: each is a response that etcd encodes for every
 * node, and a wake, a transaction of nftables and a line of the log on
 * each. A change after a quiet window goes at once. */
static long long pubs_wait_ms(struct fleet *fl)
{
	long long w;
	uint32_t n;

	pthread_mutex_lock(&fl->mu);
	n = fl->npubs;
	pthread_mutex_unlock(&fl->mu);
	if (!n)
		return -1;
	if (planted("fleet-no-share-window"))
		return 0;
	w = fl->pubs_sent + (long long)fl->conf.share_window_ms - clock_ms(CLOCK_MONOTONIC);
	return w > 0 ? w : 0;
}

/* What the node writes while connected: its status, its shared changes,
 * a probe asked for, and the lease kept alive when it is due. */
static int writes(struct fleet *fl)
{
	int r;

	fl->stage = "writing this node's status or shared changes";
#ifdef NFBOX_TEST_PLANT
	/* the test build's writes fail while the file NFBOX_TEST_FLEET_WRITES_FAIL
	 * names is there, as a loaded member's time out (nfbox has no such switch) */
	const char *f = getenv("NFBOX_TEST_FLEET_WRITES_FAIL");

	if (f && access(f, F_OK) == 0) {
		snprintf(fl->etcd.err, sizeof(fl->etcd.err), "test: %s is there", f);
		return -ETIMEDOUT;
	}
#endif
	if ((r = put_status(fl, false)) < 0 || (pubs_wait_ms(fl) == 0 && (r = put_pubs(fl)) < 0) || (r = probe(fl)) < 0)
		return r;
	return clock_ms(CLOCK_MONOTONIC) >= fl->next_keepalive ? keepalive(fl) : 0;
}

static void stage_err(const struct fleet *fl, int r, char *buf, size_t len)
{
	snprintf(buf, len, "%s: %s", fl->stage ? fl->stage : "connecting",
		 fl->etcd.err[0] ? fl->etcd.err : strerror(-r));
}

/* While connected: the watch followed, and the writes. A write etcd does
 * not take (a loaded member times out) leaves the watch as it is: the
 * writes are tried again after a wait that grows as a reconnection's does,
 * and what they carry waits for them (the status, the shared changes; a
 * lease that ended meanwhile is granted again). Dropping the watch for it
 * meant a full read of the group on every node that timed out, the load
 * that made them time out. Only the watch's end reconnects. */
static int serve(struct fleet *fl)
{
	char err[700];
	long long w = pubs_wait_ms(fl);
	int r;

	fl->stage = "watching the group";
	/* woken by the loop, or when shared changes' window ends */
	if ((r = etcd_watch_poll(fl->watch, w > 0 && w < 250 ? (int)w + 1 : 250, fl->to_thread)) < 0)
		return r;
	drain(fl->to_thread);
	if (clock_ms(CLOCK_MONOTONIC) < fl->write_after)
		return 0;
	if ((r = writes(fl)) == 0) {
		if (fl->write_tries)
			post_simple(fl, FM_WRITES_OK, NULL);
		fl->write_tries = 0;
		return 0;
	}
	if (planted("fleet-write-fail-drops-watch"))
		return r;
	if (!fl->write_tries) {
		stage_err(fl, r, err, sizeof(err));
		post_simple(fl, FM_WRITES_FAILED, err);
	}
	fl->write_after = clock_ms(CLOCK_MONOTONIC) + retry_ms(&fl->write_tries);
	return 0;
}

static void set_endpoint(struct fleet *fl)
{
	pthread_mutex_lock(&fl->mu);
	snprintf(fl->endpoint, sizeof(fl->endpoint), "%s", fl->conf.etcd.endpoints[fl->etcd.cur]);
	pthread_mutex_unlock(&fl->mu);
}

/* How long to wait before etcd is tried again, after tries failures in a
 * row: doubled each time up to a bound, and each wait drawn at random in
 * its upper half, so that the nodes a lost member or leader dropped all
 * at once come back spread out, not at the same moment (each comes with
 * a full read of its group). */
static long long random_below(long long n)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint64_t)clock_ns(CLOCK_MONOTONIC) * 0x9e3779b97f4a7c15ull;
	return n > 0 ? (long long)(v % (uint64_t)n) : 0;
}

static int retry_ms(unsigned *tries)
{
	unsigned shift = *tries < 8 ? *tries : 8;
	long long d = (long long)FLEET_RETRY_MS << shift;

	if (d > FLEET_RETRY_MAX_MS)
		d = FLEET_RETRY_MAX_MS;
	(*tries)++;
	return (int)(d / 2 + random_below(d / 2 + 1));
}

/* etcd not reached: the loop told, with the failures in a row, each time
 * (it decides what the log says), so that its status stays current. */
static void post_down(struct fleet *fl, int r, uint64_t failures)
{
	struct fmsg *m = calloc(1, sizeof(*m));

	if (!m)
		return;
	m->kind = FM_DOWN;
	m->seq = failures;
	stage_err(fl, r, m->err, sizeof(m->err));
	post(fl, m);
}

/* The wait before etcd is tried again: only a stop ends it early. What
 * else wakes the thread (the status, a shared change, a probe) waits for
 * the connection; the status changes with each failure (its attempts),
 * and a wake for it once made a node whose etcd refused connections try
 * again at once, hundreds of times a second. */
static void retry_wait(struct fleet *fl, int ms)
{
	long long end = clock_ms(CLOCK_MONOTONIC) + ms, left;
	struct pollfd pfd = { .fd = fl->to_thread, .events = POLLIN };

	while (!want_stop(fl) && (left = end - clock_ms(CLOCK_MONOTONIC)) > 0) {
		poll(&pfd, 1, (int)left);
		drain(fl->to_thread);
		if (planted("fleet-retry-woken"))
			break;
	}
}

static void *thread_main(void *arg)
{
	struct fleet *fl = arg;
	bool up = false;
	unsigned tries = 0;
	uint64_t failures = 0;

	while (!want_stop(fl)) {
		int r;

		if (!up) {
			if ((r = connect_etcd(fl)) == 0) {
				up = true;
				tries = 0;
				failures = 0;
				fl->write_after = 0;
				set_endpoint(fl);
				post_simple(fl, FM_UP, fl->up_how);
				continue;
			}
		} else if ((r = serve(fl)) == 0) {
			continue;
		}
		/* etcd not reached, or the watch ended: from the start again */
		etcd_watch_free(fl->watch);
		fl->watch = NULL;
		if (r == -ECANCELED && fl->seen_rev) { /* compacted: read whole, at once */
			char note[sizeof(fl->etcd.err) + 80];

			snprintf(note, sizeof(note), "%s after revision %" PRId64 ": the group is read whole again",
				 fl->etcd.err, fl->seen_rev);
			post_simple(fl, FM_NOTE, note);
			if (!planted("fleet-compacted-resumes"))
				fl->seen_rev = 0;
			up = false;
			continue;
		}
		post_down(fl, r, ++failures);
		up = false;
		retry_wait(fl, retry_ms(&tries));
	}
	etcd_watch_free(fl->watch);
	fl->watch = NULL;
	if (fl->lease && up) { /* a clean stop: the node leaves the view at once */
		fl->etcd.cancel = NULL;
		fl->etcd.timeout_ms = 1000;
		etcd_lease_revoke(&fl->etcd, fl->lease);
	}
	return NULL;
}

static void wake_thread(struct fleet *fl)
{
	uint64_t one = 1;

	if (write(fl->to_thread, &one, sizeof(one)) < 0) {
		/* full: it wakes anyway */
	}
}

/* ---- the loop's side: revisions ---- */

static void fval_set(struct fval *v, const struct fmsg *m)
{
	free(v->value);
	*v = (struct fval){ .present = !m->del, .rev = m->rev };
	if (!m->del) {
		v->value = m->value;
		v->vlen = m->vlen;
	}
}

/* The fingerprint of what is enforced, its files named relative to the
 * policy's folder (as a revision's): hashed once a load (the status asks
 * every round, and a policy's set files may be megabytes). */
static int enforced_fp(struct daemon *dm, char out[65])
{
	struct fleet *fl = FL(dm);
	_cleanup_free_ char *copy = NULL;

	if (!daemon_in_force(dm)->pol || !daemon_in_force(dm)->path)
		return -ENOENT;
	if (!fl->enforced_known || fl->enforced_load != daemon_loads(dm)) {
		int r;

		if (!(copy = strdup(daemon_in_force(dm)->path)))
			return -ENOMEM;
		if ((r = fingerprint_relative(daemon_in_force(dm)->pol->sources.head, dirname(copy), fl->enforced)) < 0)
			return r;
		fl->enforced_load = daemon_loads(dm);
		fl->enforced_known = true;
	}
	memcpy(out, fl->enforced, sizeof(fl->enforced));
	return 0;
}

static void save_applied(struct fleet *fl)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/applied", fl->base);
	snprintf(tmp, sizeof(tmp), "%s/applied.tmp", fl->base);
	if (!(f = fopen(tmp, "we")))
		goto failed;
	fprintf(f, "%" PRId64 " %s %s\n", fl->applied_rev, fl->applied_fp, fl->applied_path);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		fclose(f);
		goto failed;
	}
	if (fclose(f) == 0 && rename(tmp, path) == 0)
		return;
failed:
	log_warn("fleet: cannot keep the revision applied in %s: %s; a start without etcd enforces the one before",
		 path, strerror(errno));
}

/* Revisions' folders but the one applied and the one being tried. */
static void prune(struct fleet *fl)
{
	DIR *dir = opendir(fl->base);
	struct dirent *e;
	char keep1[64] = "", keep2[64] = "";

	if (!dir)
		return;
	snprintf(keep1, sizeof(keep1), "%s", fl->applied_path[0] ? basename(dirname(strdupa(fl->applied_path))) : "");
	if (fl->canary.rev)
		snprintf(keep2, sizeof(keep2), "c%" PRId64, fl->canary.rev);
	while ((e = readdir(dir))) {
		char path[PATH_MAX + 300];

		if ((e->d_name[0] != 'r' && e->d_name[0] != 'c') || !strcmp(e->d_name, keep1) ||
		    !strcmp(e->d_name, keep2) || strchr(e->d_name, '.') || e->d_type != DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", fl->base, e->d_name);
		if (fleet_remove_tree(path) < 0)
			log_warn("fleet: cannot remove %s: %s", path, strerror(errno));
	}
	closedir(dir);
}

static void set_error(struct fleet *fl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct fleet *fl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fl->last_error, sizeof(fl->last_error), fmt, ap);
	va_end(ap);
	log_warn("fleet: %s", fl->last_error);
}

/* The error reported is etcd's (ETCD_LOST, WRITES_LOST), not a revision's. */
static bool error_is(const struct fleet *fl, const char *what)
{
	return !strncmp(fl->last_error, what, strlen(what));
}

static void adopt(struct daemon *dm, int64_t rev, const char *fp, const char *path)
{
	struct fleet *fl = FL(dm);

	fl->applied_rev = rev;
	snprintf(fl->applied_fp, sizeof(fl->applied_fp), "%s", fp);
	snprintf(fl->applied_path, sizeof(fl->applied_path), "%s", path);
	daemon_set_policy_path(dm, path);
	if (!error_is(fl, ETCD_LOST) && !error_is(fl, WRITES_LOST))
		fl->last_error[0] = '\0'; /* a revision's error: this one is fine (etcd's stay until it is) */
	save_applied(fl);
	prune(fl);
}

/* What was loaded is the revision's files, hashed here: the fingerprint the
 * pusher wrote is only a claim (a mismatch is said, and the files' own is
 * what the node reports). */
static void fingerprint_check(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	char fp[65];

	if (enforced_fp(dm, fp) < 0)
		return;
	if (strcmp(fp, fl->applying.fp))
		log_warn("fleet: revision %" PRId64 ": its files hash to %.12s, not to the %.12s it claims",
			 fl->applying.rev, fp, fl->applying.fp);
	memcpy(fl->applying.fp, fp, sizeof(fp));
}

static void reload_done(struct daemon *dm, void *arg, int r, struct diags *d)
{
	struct fleet *fl = FL(dm);
	_cleanup_free_ char *text = diags_to_text(d);

	(void)arg;
	if (!fl)
		return;
	if (r == 0)
		fingerprint_check(dm);
	if (r < 0) {
		fl->refused_rev = fl->applying.rev;
		if (fl->applying.canary) {
			fl->canary.rev = fl->applying.rev;
			fl->canary.state = "refused";
		}
		set_error(fl, "revision %" PRId64 " refused, the policy in force stays: %s", fl->applying.rev,
			  text ? text : "");
	} else if (fl->applying.canary) {
		pthread_mutex_lock(&fl->mu);
		fl->canary.probe = ++fl->probe_req;
		pthread_mutex_unlock(&fl->mu);
		wake_thread(fl);
		fl->canary.rev = fl->applying.rev;
		fl->canary.state = "confirming";
		memcpy(fl->canary.fp, fl->applying.fp, sizeof(fl->canary.fp));
		memcpy(fl->canary.path, fl->applying.path, sizeof(fl->canary.path));
		log_info("fleet: candidate %" PRId64 " in force; confirmed once etcd is reached again",
			 fl->applying.rev);
	} else {
		adopt(dm, fl->applying.rev, fl->applying.fp, fl->applying.path);
		log_info("fleet: revision %" PRId64 " in force", fl->applied_rev);
	}
	fl->applying.rev = 0;
}

static int apply(struct daemon *dm, const struct fval *v, bool canary, const struct fleet_bundle *b)
{
	struct fleet *fl = FL(dm);
	char dir[PATH_MAX + 64];
	int r;

	snprintf(dir, sizeof(dir), "%s/%c%" PRId64, fl->base, canary ? 'c' : 'r', v->rev);
	/* refused_rev: not tried again every round (the next push tries) */
	if ((r = fleet_bundle_write(b, dir, fl->applying.path, sizeof(fl->applying.path))) < 0) {
		fl->refused_rev = v->rev;
		set_error(fl, "revision %" PRId64 ": cannot write it under %s: %s", v->rev, dir, strerror(-r));
		return r;
	}
	/* a canary's change rolls back unless etcd is reached again after it */
	if ((r = daemon_reload_start(
		     dm,
		     &(struct reload_req){ .path = fl->applying.path,
					   .fd = -1,
					   .why = RELOAD_FLEET,
					   .confirm = canary ? b->confirm_s ? b->confirm_s : FLEET_CONFIRM_S : 0 },
		     reload_done, NULL)) < 0)
		return r; /* busy: tried again next round */
	fl->applying.rev = v->rev;
	fl->applying.canary = canary;
	memcpy(fl->applying.fp, b->fingerprint, sizeof(fl->applying.fp));
	log_info("fleet: applying %s %" PRId64 " (pushed by %s)", canary ? "candidate" : "revision", v->rev,
		 b->by && *b->by ? b->by : "?");
	return 0;
}

/* Which revision this node should enforce, and whether it does. */
static void decide(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	struct fleet_bundle b = { 0 }, cb = { 0 };
	const struct fval *want = NULL;
	bool canary = false;
	char why[256];

	if (fl->applying.rev || daemon_reloading(dm) || fl->snapping)
		return;
	if (fl->canary.state && !strcmp(fl->canary.state, "confirming"))
		return;
	if (confirm_pending(dm)) /* a local reload --confirm is not overtaken: after it */
		return;
	if (fl->cand.present && fl->cand.rev != fl->refused_rev &&
	    fleet_bundle_decode(fl->cand.value, fl->cand.vlen, &cb, why, sizeof(why)) == 0 &&
	    fleet_bundle_names(&cb, fl->conf.node)) {
		want = &fl->cand;
		canary = true;
		b = cb;
	} else {
		fleet_bundle_free(&cb);
		if (fl->pol.present && fl->pol.rev != fl->refused_rev && fl->pol.rev != fl->applied_rev) {
			want = &fl->pol;
			if (fleet_bundle_decode(fl->pol.value, fl->pol.vlen, &b, why, sizeof(why)) < 0) {
				fl->refused_rev = fl->pol.rev;
				set_error(fl, "revision %" PRId64 " refused: %s", fl->pol.rev, why);
				return;
			}
		}
	}
	if (!want)
		return;
	if (canary && fl->canary.rev == want->rev) {
		fleet_bundle_free(&b); /* this candidate was tried already */
		return;
	}
	if (!strcmp(b.fingerprint, fl->applied_fp) && !canary) {
		/* the same files under a new revision (a candidate promoted) */
		adopt(dm, want->rev, b.fingerprint, fl->applied_path);
	} else if (canary && !strcmp(b.fingerprint, fl->applied_fp)) {
		fl->canary.rev = want->rev;
		fl->canary.state = "confirmed";
	} else {
		apply(dm, want, canary, &b);
	}
	fleet_bundle_free(&b);
}

/* A canary's change: confirmed once etcd answered after it, or rolled back
 * by confirm (confirm/part.c) at its deadline. */
static void canary_tick(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	char fp[65];
	struct diags d;

	if (!fl->canary.state || strcmp(fl->canary.state, "confirming"))
		return;
	if (!confirm_pending(dm)) {
		/* ended without us: by `nfbox confirm` (what runs is the
		 * candidate) or rolled back at the deadline */
		if (enforced_fp(dm, fp) == 0 && !strcmp(fp, fl->canary.fp)) {
			fl->canary.state = "confirmed";
			adopt(dm, fl->canary.rev, fl->canary.fp, fl->canary.path);
		} else {
			fl->canary.state = "rolled back";
			fl->refused_rev = fl->canary.rev;
			set_error(fl,
				  "candidate %" PRId64 " rolled back: etcd was not reached within its confirmation "
				  "time after the change",
				  fl->canary.rev);
		}
		return;
	}
	if (fl->probe_seen < fl->canary.probe && !planted("canary-trusting"))
		return;
	diags_init(&d);
	if (confirm_now(dm, &d) == 0) {
		fl->canary.state = "confirmed";
		adopt(dm, fl->canary.rev, fl->canary.fp, fl->canary.path);
		log_info("fleet: candidate %" PRId64 " confirmed (etcd reached after the change)", fl->canary.rev);
	}
	diags_free(&d);
}

/* ---- the loop's side: shared sets ---- */

static const struct addr_set *shared_set(const struct daemon *dm, const char *name)
{
	for (uint32_t i = 0; daemon_in_force(dm)->pol && i < daemon_in_force(dm)->pol->nsets; i++)
		if (daemon_in_force(dm)->pol->sets[i].shared && !strcmp(daemon_in_force(dm)->pol->sets[i].name, name))
			return &daemon_in_force(dm)->pol->sets[i];
	return NULL;
}

/* Shared entries from etcd of one set, all added or all deleted, taken
 * into the set here at once (one change of the store and the kernel, one
 * save): a watch's answer brings many (a txn of bans, a node's catch-up). */
struct set_run {
	char set[POLICY_MAX_NAME + 1];
	bool del;
	struct dyn_change *v;
	char (*by)[FLEET_MAX_NAME + 8];
	uint32_t n, cap;
};

#define RECORD_LISTED 32 /* entries a record's line names; more take more lines */

/* The node's record of shared entries in force (the kernel holds them)
 * or deleted: which and when, to the millisecond, in the log; a line for
 * each RECORD_LISTED of them. */
static void record(const char *set, bool del, const struct dyn_change *v, uint32_t n)
{
	char list[RECORD_LISTED * 48], when[40], pfx[64];
	int64_t ms = (int64_t)clock_ms(CLOCK_REALTIME);
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (planted("fleet-no-record"))
		return;
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	for (uint32_t i = 0; i < n; i += RECORD_LISTED) {
		uint32_t k, m = n - i < RECORD_LISTED ? n - i : RECORD_LISTED;
		size_t off = 0;

		list[0] = '\0';
		for (k = 0; k < m; k++) {
			policy_prefix_format(&v[i + k].pfx, pfx, sizeof(pfx));
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", k ? " " : "", pfx);
		}
		log_info("fleet: set %s: %u shared %s %s at %s.%03dZ: %s", set, m, m == 1 ? "entry" : "entries",
			 del ? "deleted" : "in force", when, (int)(ms % 1000), list);
	}
}

static void run_flush(struct daemon *dm, struct set_run *run)
{
	struct fleet *fl = FL(dm);
	int r;

	if (!run->n)
		return;
	for (uint32_t i = 0; i < run->n; i++)
		run->v[i].by = run->by[i];
	fl->received += run->n;
	r = dyn_from_fleet(dm, run->set, run->v, run->n, run->del, false);
	if (r > 0)
		record(run->set, run->del, run->v, (uint32_t)r);
	run->n = 0;
}

static void run_free(struct set_run *run)
{
	free(run->v);
	free(run->by);
}

static int run_add(struct daemon *dm, struct set_run *run, const char *set, bool del, const struct dyn_change *c,
		   const char *by)
{
	if (run->n && (run->del != del || strcmp(run->set, set) || planted("fleet-one-by-one")))
		run_flush(dm, run);
	if (run->n == run->cap) {
		uint32_t cap = run->cap ? 2 * run->cap : 64;
		struct dyn_change *v = realloc(run->v, cap * sizeof(*v));
		char (*b)[FLEET_MAX_NAME + 8];

		if (v)
			run->v = v;
		if (!v || !(b = realloc(run->by, cap * sizeof(*b))))
			return -ENOMEM;
		run->by = b;
		run->cap = cap;
	}
	snprintf(run->set, sizeof(run->set), "%s", set);
	run->del = del;
	run->v[run->n] = *c;
	snprintf(run->by[run->n++], sizeof(run->by[0]), "%s", by);
	return 0;
}

/* Where the mirror's changes go: the set here, with the rest of their run
 * (not back into etcd). */
struct to_set {
	struct daemon *dm;
	struct set_run *run;
	int64_t now;
};

static void entry_changed(void *arg, const char *set, const struct prefix *pfx, bool present, int64_t expires,
			  const char *by)
{
	struct to_set *ts = arg;
	struct dyn_change c = { .src = "etcd", .pfx = *pfx, .expires = expires };

	if (!shared_set(ts->dm, set))
		return;
	if (present && expires && expires <= ts->now)
		return; /* over already */
	if (run_add(ts->dm, ts->run, set, !present, &c, by) < 0) {
		/* no memory for a run: this one alone */
		c.by = by;
		FL(ts->dm)->received++;
		dyn_from_fleet(ts->dm, set, &c, 1, !present, false);
	}
}

/* A record of a shared set from etcd (one entry, or a pack) into the
 * mirror; the entries it changed into the sets here, once etcd was read
 * whole (until then what the sets hold stays, and the read's end makes
 * them hold what etcd does). */
static void set_message(struct daemon *dm, const struct fmsg *m, struct set_run *run)
{
	struct fleet *fl = FL(dm);
	_cleanup_free_ struct mirror_item *items = NULL;
	char set[POLICY_MAX_NAME + 1], by[MIRROR_BY_MAX];
	struct to_set ts = { .dm = dm, .run = run, .now = (int64_t)clock_ms(CLOCK_REALTIME) };
	bool live = !fl->snapping && fl->have_snapshot && !planted("fleet-deaf");
	uint32_t n, bad;
	int r;

	if ((r = pack_decode(m->key, m->value, m->vlen, m->del, set, by, sizeof(by), &items, &n, &bad)) == -EINVAL) {
		log_warn("fleet: shared record '%s' is not SET/PREFIX or a pack (SET/+ID): ignored", m->key);
		return;
	}
	if (bad)
		log_warn("fleet: shared pack '%s': %u of its entries are not prefixes: skipped", m->key, bad);
	if (r < 0 ||
	    mirror_record(&fl->mirror, m->key, set, by, items, m->del ? 0 : n, live ? entry_changed : NULL, &ts) < 0)
		log_warn("fleet: out of memory: shared record '%s' not mirrored", m->key);
}

static const struct dyn_set *store_set(const struct daemon *dm, const char *name)
{
	const struct dynsets *st = dyn_store(dm);

	for (uint32_t i = 0; i < st->n; i++)
		if (!strcmp(st->sets[i].name, name))
			return &st->sets[i];
	return NULL;
}

static bool in_store(const struct dyn_set *set, const struct dyn_change *c)
{
	return dynset_index(set, c->pfx.family == POLICY_FAM_IPV6, c->pfx.addr, c->pfx.plen) >= 0;
}

/* A shared set made to hold exactly v (what etcd holds), and the entries
 * that were not there before recorded as in force. */
static void reconcile_set(struct daemon *dm, const char *name, struct dyn_change *v, uint32_t n)
{
	const struct dyn_set *set = store_set(dm, name);
	_cleanup_free_ struct dyn_change *added = calloc(n + 1, sizeof(*added));
	uint32_t nadded = 0, k = 0;

	for (uint32_t i = 0; added && set && i < n; i++)
		if (!in_store(set, &v[i]))
			added[nadded++] = v[i];
	if (dyn_from_fleet(dm, name, v, n, false, true) < 0 || !(set = store_set(dm, name)))
		return;
	for (uint32_t i = 0; i < nadded; i++) /* those taken (not one never banned here) */
		if (in_store(set, &added[i]))
			added[k++] = added[i];
	if (k)
		record(name, false, added, k);
}

/* Every shared set made to hold what etcd holds (after a full read, and
 * after a reload: a set may have become shared). */
static void reconcile(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	int64_t now = (int64_t)clock_ms(CLOCK_REALTIME);

	if (!fl->have_snapshot) /* etcd not read yet: what the sets hold stays */
		return;
	for (uint32_t s = 0; daemon_in_force(dm)->pol && s < daemon_in_force(dm)->pol->nsets; s++) {
		const struct addr_set *as = &daemon_in_force(dm)->pol->sets[s];
		_cleanup_free_ struct dyn_change *v = NULL;
		uint32_t n = 0;

		if (!as->shared)
			continue;
		if (!(v = calloc(fl->mirror.n + 1, sizeof(*v))))
			return;
		for (uint32_t i = 0; i < fl->mirror.n; i++)
			if (!strcmp(fl->mirror.v[i].set, as->name) &&
			    (!fl->mirror.v[i].expires || fl->mirror.v[i].expires > now)) {
				v[n].pfx = fl->mirror.v[i].pfx;
				v[n].expires = fl->mirror.v[i].expires;
				v[n].by = "fleet";
				v[n++].src = "etcd";
			}
		reconcile_set(dm, as->name, v, n);
	}
}

static void shared_changed(struct daemon *dm, const char *set, const struct dyn_change *c, uint32_t n, bool del)
{
	struct fleet *fl = FL(dm);

	if (!fl || !shared_set(dm, set))
		return;
	pthread_mutex_lock(&fl->mu);
	for (uint32_t i = 0; i < n; i++) {
		struct pub *p;

		if (fl->npubs >= FLEET_MAX_PUBS) {
			log_warn("fleet: more than %u shared changes wait for etcd: set %s's change not shared",
				 FLEET_MAX_PUBS, set);
			break;
		}
		if (fl->npubs == fl->cappubs) {
			uint32_t cap = fl->cappubs ? 2 * fl->cappubs : 64;

			if (!(p = realloc(fl->pubs, cap * sizeof(*p))))
				break;
			fl->pubs = p;
			fl->cappubs = cap;
		}
		p = &fl->pubs[fl->npubs++];
		*p = (struct pub){ .pfx = c[i].pfx,
				   .expires = del ? 0 : c[i].expires,
				   .del = del,
				   .strip = !del && !planted("fleet-no-strip") &&
					    mirror_outlives(&fl->mirror, set, &c[i].pfx, c[i].expires),
				   .seq = ++fl->pub_seq };
		snprintf(p->set, sizeof(p->set), "%s", set);
		snprintf(p->origin, sizeof(p->origin), "%s", c[i].by ? c[i].by : "");
		fl->published++;
	}
	pthread_mutex_unlock(&fl->mu);
	wake_thread(fl);
}

/* ---- the loop's side: messages ---- */

/* How often the log says again that etcd is still lost: the test build
 * takes it from NFBOX_TEST_FLEET_SAY_MS (nfbox itself has no such switch). */
static long long say_down_ms(void)
{
#ifdef NFBOX_TEST_PLANT
	const char *v = getenv("NFBOX_TEST_FLEET_SAY_MS");

	if (v && atoi(v) > 0)
		return atoi(v);
#endif
	return FLEET_SAY_DOWN_MS;
}

/* etcd not reached: said at once when it was lost, then again at most
 * every FLEET_SAY_DOWN_MS with the attempts since and the last one's
 * reasons (each endpoint's), which the status has at every attempt. */
static void on_down(struct fleet *fl, const struct fmsg *m)
{
	long long now = clock_ms(CLOCK_MONOTONIC);

	if (fl->connected || !fl->since) {
		log_warn("fleet: etcd not reached, the policy in force stays: %s", m->err);
		fl->since = time(NULL);
		fl->said_down = now;
	} else if (now - fl->said_down >= say_down_ms() && !planted("fleet-down-said-once")) {
		log_warn("fleet: etcd still not reached after %" PRIu64 " attempts in %llds, the policy in force "
			 "stays; the last: %s",
			 m->seq, (long long)(time(NULL) - fl->since), m->err);
		fl->said_down = now;
	}
	fl->connected = false;
	fl->attempts = m->seq;
	snprintf(fl->last_error, sizeof(fl->last_error), ETCD_LOST " (attempt %" PRIu64 "): %s", m->seq, m->err);
}

static void on_message(struct daemon *dm, struct fmsg *m, struct set_run *run)
{
	struct fleet *fl = FL(dm);

	if (m->kind != FM_SET) /* what comes after a run sees it done */
		run_flush(dm, run);
	switch (m->kind) {
	case FM_UP:
		fl->connected = true;
		fl->since = time(NULL);
		if (fl->attempts)
			log_info("fleet: etcd reached (%s) after %" PRIu64 " failed attempt%s: %s", fl->endpoint,
				 fl->attempts, fl->attempts == 1 ? "" : "s", m->err);
		else
			log_info("fleet: etcd reached (%s): %s", fl->endpoint, m->err);
		fl->attempts = 0;
		if (error_is(fl, ETCD_LOST))
			fl->last_error[0] = '\0'; /* the error metric is 1 only while etcd is lost */
		break;
	case FM_DOWN:
		on_down(fl, m);
		break;
	case FM_ERROR:
		set_error(fl, "%s", m->err);
		break;
	case FM_WRITES_FAILED:
		set_error(fl, WRITES_LOST "; the watch goes on, and they are tried again: %s", m->err);
		break;
	case FM_WRITES_OK:
		log_info("fleet: etcd takes this node's writes again");
		if (error_is(fl, WRITES_LOST))
			fl->last_error[0] = '\0';
		break;
	case FM_SNAP:
		fl->snapping = true;
		mirror_clear(&fl->mirror);
		break;
	case FM_SNAP_END:
		fl->snapping = false;
		fl->have_snapshot = true;
		reconcile(dm);
		break;
	case FM_POLICY:
		fval_set(&fl->pol, m);
		m->value = NULL;
		break;
	case FM_CANDIDATE:
		fval_set(&fl->cand, m);
		m->value = NULL;
		break;
	case FM_SET:
		set_message(dm, m, run);
		break;
	case FM_PROBE:
		fl->probe_seen = m->seq;
		break;
	case FM_NOTE:
		log_info("fleet: %s", m->err);
		break;
	}
}

static void on_wake(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct fleet *fl = FL(dm);
	struct set_run run = { 0 };
	struct fmsg *list;
	size_t bytes = 0;

	(void)events;
	drain(fl->to_loop);
	pthread_mutex_lock(&fl->mu);
	list = fl->in;
	fl->in = NULL;
	fl->in_tail = &fl->in;
	pthread_mutex_unlock(&fl->mu);
	while (list) {
		struct fmsg *next = list->next;

		bytes += list->vlen;
		on_message(dm, list, &run);
		fmsg_free(list);
		list = next;
	}
	run_flush(dm, &run);
	run_free(&run);
	/* a large answer (packs of 512 entries, a full read) leaves its
	 * buffers free in malloc's arenas, the thread's and the loop's: given
	 * back, or a node that took 10,000 entries kept 7 MiB more */
	if (bytes >= FLEET_TRIM_BYTES && !planted("fleet-no-trim"))
		malloc_trim(0);
	fleet_tick(dm);
}

/* ---- status ---- */

static char *status_json(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	const char *role = ha_pair_role(dm);
	char line[256], fp[65] = "";
	json_t *o;
	char *text;

	daemon_status_line(dm, line, sizeof(line));
	enforced_fp(dm, fp);
	o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:b, s:I, s:s, s:s, s:s, s:s}", "node", fl->conf.node, "group",
		      fl->conf.group, "revision", (json_int_t)fl->applied_rev, "fingerprint", fl->applied_fp,
		      "enforced", fp, "local_change", fl->applied_fp[0] && strcmp(fp, fl->applied_fp), "generation",
		      (json_int_t)daemon_loads(dm), "summary", line, "role", role ? role : "none", "health",
		      fl->last_error[0] ? "error" : "ok", "last_error", fl->last_error);
	if (o)
		json_object_set_new(o, "refused", json_integer(fl->refused_rev));
	if (o && fl->canary.rev)
		json_object_set_new(o, "candidate",
				    json_pack("{s:I, s:s}", "revision", (json_int_t)fl->canary.rev, "state",
					      fl->canary.state ? fl->canary.state : "?"));
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

static void send_status(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	char *text = status_json(dm);

	if (!text || (fl->sent_status && !strcmp(text, fl->sent_status))) {
		free(text);
		return;
	}
	free(fl->sent_status);
	fl->sent_status = text;
	pthread_mutex_lock(&fl->mu);
	free(fl->status);
	fl->status = strdup(text);
	fl->status_dirty = true;
	pthread_mutex_unlock(&fl->mu);
	wake_thread(fl);
}

static void fleet_tick(struct daemon *dm)
{
	struct fleet *fl = FL(dm);

	if (!fl)
		return;
	if (fl->reloads_seen != daemon_loads(dm) && !fl->snapping && fl->have_snapshot) {
		/* a new policy: a set may have become shared */
		fl->reloads_seen = daemon_loads(dm);
		reconcile(dm);
	}
	canary_tick(dm);
	decide(dm);
	send_status(dm);
}

/* ---- start and stop ---- */

/* STATE/fleet/applied: "REV FINGERPRINT PATH" of the last revision applied. */
static void read_applied(struct daemon *dm)
{
	struct fleet *fl = FL(dm);
	char path[PATH_MAX + 32], line[PATH_MAX + 128], fp[65], file[PATH_MAX];
	long long rev;
	FILE *f;

	snprintf(path, sizeof(path), "%s/applied", fl->base);
	if (!(f = fopen(path, "re")))
		return;
	if (fgets(line, sizeof(line), f) && sscanf(line, "%lld %64s %4095s", &rev, fp, file) == 3 &&
	    access(file, R_OK) == 0) {
		fl->applied_rev = rev;
		snprintf(fl->applied_fp, sizeof(fl->applied_fp), "%s", fp);
		snprintf(fl->applied_path, sizeof(fl->applied_path), "%s", file);
		daemon_set_policy_path(dm, file);
		log_info("fleet: enforcing revision %lld as last applied (%s) until etcd is reached", rev, file);
	}
	fclose(f);
}

static int fleet_open(struct daemon *dm, struct diags *d)
{
	struct fleet *fl;
	int r;

	if (!daemon_opts(dm)->fleet)
		return 0;
	if (!(fl = calloc(1, sizeof(*fl))))
		return diag_errno(d, -ENOMEM, "fleet");
	fl->to_loop = fl->to_thread = -1;
	FL(dm) = fl;
	pthread_mutex_init(&fl->mu, NULL);
	fl->in_tail = &fl->in;
	if ((r = fleet_conf_load(daemon_opts(dm)->fleet, daemon_opts(dm)->allow_unsafe_files, d, &fl->conf)) < 0)
		return r;
	if (!fl->conf.node || !fl->conf.group)
		return diag_fail(d, -EINVAL,
				 "%s: a node's fleet file names its node: and its group:", daemon_opts(dm)->fleet);
	snprintf(fl->base, sizeof(fl->base), "%s/fleet", daemon_state_dir(dm));
	if (mkdir(fl->base, 0700) < 0 && errno != EEXIST)
		return diag_errno(d, -errno, "%s", fl->base);
	read_applied(dm);
	/* a pack's key is new at each start: +NODE.RUN.SEQ */
	if (getrandom(&fl->run_id, sizeof(fl->run_id), GRND_NONBLOCK) != (ssize_t)sizeof(fl->run_id))
		fl->run_id = (uint32_t)clock_ms(CLOCK_REALTIME) ^ (uint32_t)getpid();
	dyn_listen(dm, shared_changed);
	if ((r = etcd_open(&fl->etcd, &fl->conf.etcd)) < 0)
		return diag_errno(d, r, "fleet: etcd client");
	fl->etcd.cancel = &fl->stop;
	if ((fl->to_loop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    (fl->to_thread = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return diag_errno(d, -errno, "fleet: eventfd");
	fl->h = (struct handler){ .fd = fl->to_loop, .fn = on_wake, .ctx = dm };
	if ((r = loop_watch(daemon_loop(dm), &fl->h)) < 0)
		return diag_errno(d, r, "fleet: epoll");
	if ((r = pthread_create(&fl->thread, NULL, thread_main, fl)) != 0)
		return diag_errno(d, -r, "fleet: thread");
	fl->running = true;
	log_info("fleet: node %s of group %s, etcd at %s%s", fl->conf.node, fl->conf.group, fl->conf.etcd.endpoints[0],
		 fl->conf.etcd.nendpoints > 1 ? " and others" : "");
	return 0;
}

static void fleet_close(struct daemon *dm)
{
	struct fleet *fl = FL(dm);

	if (!fl)
		return;
	if (fl->running) {
		__atomic_store_n(&fl->stop, true, __ATOMIC_RELAXED); /* a request under way ends too */
		wake_thread(fl);
		pthread_join(fl->thread, NULL);
	}
	if (fl->h.fd >= 0 && fl->h.fn)
		loop_unwatch(daemon_loop(dm), &fl->h);
	etcd_close(&fl->etcd);
	while (fl->in) {
		struct fmsg *n = fl->in->next;

		fmsg_free(fl->in);
		fl->in = n;
	}
	free(fl->pubs);
	free(fl->status);
	free(fl->sent_status);
	free(fl->pol.value);
	free(fl->cand.value);
	mirror_free(&fl->mirror);
	if (fl->to_loop >= 0)
		close(fl->to_loop);
	if (fl->to_thread >= 0)
		close(fl->to_thread);
	fleet_conf_free(&fl->conf);
	pthread_mutex_destroy(&fl->mu);
	free(fl);
	FL(dm) = NULL;
}

/* ---- the part ---- */

static int part_open(struct daemon *dm, void **self, struct diags *d)
{
	struct fleet_part *p = calloc(1, sizeof(*p));

	if (!p)
		return diag_errno(d, -ENOMEM, "fleet");
	p->dm = dm;
	*self = p;
	return fleet_open(dm, d);
}

/* Once a round: a revision to apply, a canary's confirmation, the status;
 * after a load, the shared sets made to hold what etcd holds. */
static void part_tick(void *self)
{
	struct fleet_part *p = self;

	fleet_tick(p->dm);
}

static void fleet_text(const struct rep *x, FILE *f)
{
	char age[32], age2[32];
	bool connected = rep_b(x, "connected");

	rep_ago(rep_i(x, "since") * 1000, age, sizeof(age));
	if (connected)
		fprintf(f, "fleet:      node %s of group %s; etcd reached at %s (%s)\n", rep_s(x, "node"),
			rep_s(x, "group"), rep_s(x, "endpoint"), rep_ago(rep_i(x, "since") * 1000, age2, sizeof(age2)));
	else
		fprintf(f,
			"fleet:      node %s of group %s; etcd NOT reached since %s (%llu attempts; the policy in "
			"force stays)\n",
			rep_s(x, "node"), rep_s(x, "group"), age, (unsigned long long)rep_u(x, "attempts"));
	if (rep_i(x, "revision"))
		fprintf(f, "            revision %lld (%.12s)%s\n", (long long)rep_i(x, "revision"),
			rep_s(x, "fingerprint"),
			rep_b(x, "local_change") ? "; what is enforced is NOT that revision (a local reload)" : "");
	else
		fprintf(f, "            no revision of the group applied yet\n");
	if (rep_i(x, "candidate"))
		fprintf(f, "            candidate %lld: %s\n", (long long)rep_i(x, "candidate"),
			rep_s(x, "candidate_state"));
	fprintf(f, "            shared entries: %llu sent (in %llu transactions), %llu received\n",
		(unsigned long long)rep_u(x, "published"), (unsigned long long)rep_u(x, "transactions"),
		(unsigned long long)rep_u(x, "received"));
	if (rep_has(x, "last_error"))
		fprintf(f, "            last error: %s\n", rep_s(x, "last_error"));
}

static const struct rep_metric m_connected = { "nfbox_fleet_etcd_connected", "gauge",
					       "1 while the node reaches etcd (run --fleet).", NULL };
static const struct rep_metric m_revision = { "nfbox_fleet_revision", "gauge",
					      "The group's revision this node applied last; 0: none yet.", NULL };
static const struct rep_metric m_local = { "nfbox_fleet_local_change", "gauge",
					   "1 while what is enforced is not that revision (a local reload).", NULL };
static const struct rep_metric m_error = { "nfbox_fleet_error", "gauge",
					   "1 while the node reports an error (a revision refused, etcd lost).", NULL };
#define SHARED_HELP "Shared sets' changes sent to etcd and received from it."
static const struct rep_metric m_sent = { "nfbox_fleet_shared_changes_total{direction=\"sent\"}", "counter",
					  SHARED_HELP, NULL };
static const struct rep_metric m_received = { "nfbox_fleet_shared_changes_total{direction=\"received\"}", "counter",
					      SHARED_HELP, NULL };
static const struct rep_metric m_txns = {
	"nfbox_fleet_shared_transactions_total", "counter",
	"Transactions that carried this node's shared changes into etcd (a burst goes as few: share-window).", NULL
};

static void part_status(void *self, struct rep *status)
{
	struct fleet_part *p = self;
	struct fleet *fl = p->fl;
	char fp[65] = "", endpoint[160];
	unsigned long txns;
	struct rep *o;

	if (!fl) {
		rep_null(status, "fleet");
		return;
	}
	o = rep_object(status, "fleet");
	rep_text(o, fleet_text);
	rep_str(o, "node", fl->conf.node);
	rep_str(o, "group", fl->conf.group);
	rep_metric(rep_bool(o, "connected", fl->connected), &m_connected);
	pthread_mutex_lock(&fl->mu);
	snprintf(endpoint, sizeof(endpoint), "%s", fl->endpoint);
	pthread_mutex_unlock(&fl->mu);
	rep_str(o, "endpoint", endpoint);
	rep_int(o, "since", fl->since);
	rep_uint(o, "attempts", fl->attempts);
	rep_metric(rep_int(o, "revision", fl->applied_rev), &m_revision);
	rep_str(o, "fingerprint", fl->applied_fp);
	rep_metric(rep_bool(o, "local_change",
			    fl->applied_fp[0] && enforced_fp(p->dm, fp) == 0 && strcmp(fp, fl->applied_fp)),
		   &m_local);
	rep_int(o, "candidate", fl->canary.rev);
	rep_str(o, "candidate_state", fl->canary.state ? fl->canary.state : "");
	rep_metric(rep_uint(o, "published", fl->published), &m_sent);
	rep_metric(rep_uint(o, "received", fl->received), &m_received);
	pthread_mutex_lock(&fl->mu);
	txns = fl->transactions;
	pthread_mutex_unlock(&fl->mu);
	rep_metric(rep_uint(o, "transactions", txns), &m_txns);
	rep_str(o, "last_error", fl->last_error[0] ? fl->last_error : NULL);
	rep_metric(rep_hidden(rep_bool(o, "error", fl->last_error[0] != '\0')), &m_error);
}

static void part_close(void *self)
{
	struct fleet_part *p = self;

	if (!p)
		return;
	fleet_close(p->dm);
	free(p);
}

const struct part part_fleet = {
	.name = "fleet",
	.open = part_open,
	.tick = part_tick,
	.status = part_status,
	.close = part_close,
};
