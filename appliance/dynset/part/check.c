/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The dynamic sets' kernel checked against the store (dynset/verify.h): at
 * least every DYNV_EVERY_MS (longer when a check takes long: it takes at
 * most 1/DYNV_SHARE of the time), and soon after a change the kernel
 * refused or that met an expiry (part.c asks: dyn_verify_take). What
 * the kernel holds is read, and compared with a copy of the store, in a
 * thread of its own: a dump of a large nftables interval set takes seconds,
 * and the loop must not wait for it. The repairs found are applied in the
 * loop, each only if the store still holds what the copy held (a change
 * made meanwhile went to the kernel itself), and are counted and logged.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dynset/part/part.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"

#define DYNV_EVERY_MS 10000 /* at least this often */
#define DYNV_SHARE    100   /* a check takes at most a hundredth of the time between checks */
#define DYNV_LOGGED   8	    /* repairs logged one by one in a check; the rest counted */

struct dynverify {
	struct handler h; /* an eventfd: the thread is done */
	pthread_t th;
	bool running;
	struct backend *be; /* the backend the walk reads */
	void *walker;
	struct dynsets snap; /* the store as the walk began */
	struct dyn_kentry *k;
	size_t nk, capk;
	int err; /* of the collection */
	struct dyn_verdict v;
	int r;
	long long t0, due, every; /* CLOCK_MONOTONIC ms */
	struct dyn_check_counts {
		uint64_t checks, check_failed;
		uint64_t repaired;  /* kernel entries put again or deleted to match the store */
		int64_t checked_at; /* ms, CLOCK_REALTIME, of the last check; 0: none yet */
		uint64_t check_ms;
		char last_repair[192]; /* "" if none */
	} rep;
	struct daemon *dm;
};

#define DV(dm) ((struct dynverify *)daemon_part_state(dm, &part_dynsets_check))

/* ---- the thread ---- */

static const struct dyn_set *snap_set(const struct dynsets *s, const struct dyn_kref *ref)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (ref->name ? !strcmp(s->sets[i].name, ref->name) : s->sets[i].id == ref->id)
			return &s->sets[i];
	return NULL;
}

static void collect(const struct dyn_kref *ref, struct dyn_kentry *k, void *arg)
{
	struct dynverify *w = arg;

	if (w->nk == w->capk) {
		size_t cap = w->capk ? 2 * w->capk : 256;
		struct dyn_kentry *v = realloc(w->k, cap * sizeof(*v));

		if (!v) {
			w->err = -ENOMEM;
			return;
		}
		w->k = v;
		w->capk = cap;
	}
	k->set = snap_set(&w->snap, ref);
	w->k[w->nk++] = *k;
}

static void *verify_thread(void *arg)
{
	struct dynverify *w = arg;
	uint64_t one = 1;

	w->r = w->be->ops->dyn_walk(w->walker, collect, w);
	if (!w->r)
		w->r = w->err;
	if (!w->r)
		w->r = dynset_verify(&w->snap, w->k, w->nk, dyn_now_ms(), w->be->ops->dyn_margin_ms, &w->v);
	if (write(w->h.fd, &one, sizeof(one)) < 0) {
		/* cannot happen (an eventfd takes 2^64 - 2); the loop would wait */
	}
	return NULL;
}

/* ---- the repairs, in the loop ---- */

/* Whether the store holds what the copy held that the repair is of: an
 * entry to put (with that expiry), or none for an entry to delete. */
static bool still(const struct dyn_set *live, const struct dyn_repair *r)
{
	int fam = r->c.pfx.family == POLICY_FAM_IPV6;
	int64_t i = dynset_index(live, fam, r->c.pfx.addr, r->c.pfx.plen);

	if (r->kind == DYN_REPAIR_EXTRA)
		return i < 0;
	return i >= 0 && live->v[fam][i].expires == r->c.expires;
}

static void log_repair(struct dynverify *w, const struct dyn_repair *r, int64_t now)
{
	char a[64], kern[48] = "", store[48] = "for good";
	struct dyn_entry e = { .plen = r->c.pfx.plen };

	memcpy(e.addr, r->c.pfx.addr, 16);
	dyn_entry_format(r->c.pfx.family == POLICY_FAM_IPV6, &e, a, sizeof(a));
	snprintf(w->rep.last_repair, sizeof(w->rep.last_repair), "set %s: %s: %s", r->set->name, a,
		 dyn_repair_why(r->kind));
	if (r->kernel_expires)
		snprintf(kern, sizeof(kern), "for %.1fs", (double)(r->kernel_expires - now) / 1000.0);
	else if (r->kind != DYN_REPAIR_MISSING)
		snprintf(kern, sizeof(kern), "for good");
	if (r->c.expires)
		snprintf(store, sizeof(store), "for %.1fs", (double)(r->c.expires - now) / 1000.0);
	if (r->kind == DYN_REPAIR_EXTRA)
		log_warn("dynamic sets: %s (the kernel held it %s): deleted", w->rep.last_repair, kern);
	else if (r->kind == DYN_REPAIR_EXPIRY)
		log_warn("dynamic sets: %s (the kernel held it %s, the store %s): put again", w->rep.last_repair, kern,
			 store);
	else
		log_warn("dynamic sets: %s (the store holds it %s): put again", w->rep.last_repair, store);
}

/* The repairs of one live set of one kind (deletes or puts) that still
 * hold, in one change; how many. */
static uint64_t repair_set(struct daemon *dm, struct dynverify *w, const struct dyn_set *live, bool del, int64_t now,
			   uint64_t *logged)
{
	_cleanup_free_ struct dyn_change *c = calloc(w->v.n ? w->v.n : 1, sizeof(*c));
	uint32_t n = 0;
	struct diags d;

	if (!c)
		return 0;
	for (size_t i = 0; i < w->v.n; i++) {
		const struct dyn_repair *r = &w->v.v[i];

		if ((r->kind == DYN_REPAIR_EXTRA) != del || strcmp(r->set->name, live->name) || !still(live, r))
			continue;
		c[n++] = r->c;
		if ((*logged)++ < DYNV_LOGGED)
			log_repair(w, r, now);
	}
	diags_init(&d);
	if (n && dyn_kernel_apply(dm, live, c, n, del, &d) < 0) {
		log_err("dynamic sets: set %s: the kernel refused a repair: %s", live->name, diags_last(&d, ""));
		n = 0;
	}
	diags_free(&d);
	return n;
}

static void apply_repairs(struct daemon *dm, struct dynverify *w)
{
	const struct dynsets *store = dyn_store(dm);
	uint64_t done = 0, logged = 0;
	int64_t now = dyn_now_ms();

	/* each set's deletes before its puts: an entry the kernel holds may
	 * overlap one it lacks */
	for (uint32_t i = 0; i < store->n; i++)
		if (store->sets[i].in_policy) {
			done += repair_set(dm, w, &store->sets[i], true, now, &logged);
			done += repair_set(dm, w, &store->sets[i], false, now, &logged);
		}
	if (logged > DYNV_LOGGED)
		log_warn("dynamic sets: %llu more entries repaired in the kernel",
			 (unsigned long long)(logged - DYNV_LOGGED));
	if (w->v.orphans) {
		log_warn("dynamic sets: the kernel held %llu entries of no set nfbox has: removed",
			 (unsigned long long)w->v.orphans);
		dyn_kernel_resync(dm);
	}
	w->rep.repaired += done + w->v.orphans;
}

static void job_clear(struct dynverify *w)
{
	if (w->be && w->walker)
		w->be->ops->dyn_walk_end(w->walker);
	w->walker = NULL;
	w->be = NULL;
	dynsets_free(&w->snap);
	free(w->k);
	w->k = NULL;
	w->nk = w->capk = 0;
	w->err = 0;
	dyn_verdict_free(&w->v);
}

static void job_join(struct daemon *dm, struct dynverify *w)
{
	uint64_t n;

	loop_unwatch(daemon_loop(dm), &w->h);
	pthread_join(w->th, NULL);
	w->running = false;
	while (read(w->h.fd, &n, sizeof(n)) == sizeof(n))
		;
}

static void on_done(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	struct dynverify *w = (struct dynverify *)h;
	long long took;

	(void)events;
	job_join(dm, w);
	took = clock_ms(CLOCK_MONOTONIC) - w->t0;
	if (w->r < 0) {
		w->rep.check_failed++;
		log_warn("dynamic sets: cannot check %s against the store: %s", w->be->ops->holder, strerror(-w->r));
	} else if (w->be == daemon_backend((struct daemon *)dm)) { /* else another backend took over meanwhile */
		apply_repairs(dm, w);
		w->rep.checks++;
		w->rep.checked_at = dyn_now_ms();
		w->rep.check_ms = (uint64_t)took;
		w->every = took * DYNV_SHARE > DYNV_EVERY_MS ? took * DYNV_SHARE : DYNV_EVERY_MS;
	}
	job_clear(w);
	w->due = clock_ms(CLOCK_MONOTONIC) + w->every;
}

/* ---- starting one ---- */

static int job_start(struct daemon *dm, struct dynverify *w, struct backend *be)
{
	int r;

	w->be = be;
	if ((r = be->ops->dyn_walk_begin(be, &w->walker)) < 0 || (r = dynsets_copy(&w->snap, dyn_store(dm))) < 0 ||
	    (r = loop_watch(daemon_loop(dm), &w->h)) < 0) {
		job_clear(w);
		return r;
	}
	w->t0 = clock_ms(CLOCK_MONOTONIC);
	if ((r = -pthread_create(&w->th, NULL, verify_thread, w)) < 0) {
		loop_unwatch(daemon_loop(dm), &w->h);
		job_clear(w);
		return r;
	}
	w->running = true;
	return 0;
}

static int check_open(struct daemon *dm, void **self, struct diags *d)
{
	struct dynverify *w = calloc(1, sizeof(*w));

	if (!w)
		return diag_errno(d, -ENOMEM, "the dynamic sets' check");
	w->dm = dm;
	w->h = (struct handler){ .fn = on_done, .ctx = dm };
	if ((w->h.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		free(w);
		return diag_errno(d, -errno, "the dynamic sets' check: eventfd");
	}
	w->every = DYNV_EVERY_MS;
	*self = w;
	return 0;
}

static void check_tick(void *self)
{
	struct dynverify *w = self;
	struct daemon *dm = w->dm;
	long long now = clock_ms(CLOCK_MONOTONIC), wanted = dyn_verify_take(dm);
	struct backend *be = daemon_backend((struct daemon *)dm);
	int r;

	if (wanted && wanted < w->due)
		w->due = wanted;
	if (w->running || now < w->due || !be || !dyn_store(dm)->n)
		return;
	if ((r = job_start(dm, w, be)) < 0) {
		w->rep.check_failed++;
		w->due = now + w->every;
		log_warn("dynamic sets: cannot start a check of %s against the store: %s", be->ops->holder,
			 strerror(-r));
	}
}

/* ---- the part ---- */

void dyn_check_report(const struct daemon *dm, struct rep *o)
{
	const struct dynverify *w = DV(dm);

	if (!w)
		return;
	rep_ms(o, "checked_at", w->rep.checked_at);
	rep_uint(o, "every_ms", (uint64_t)w->every);
	rep_uint(o, "took_ms", w->rep.check_ms);
	rep_uint(o, "checks", w->rep.checks);
	rep_uint(o, "failed", w->rep.check_failed);
	rep_uint(o, "repaired", w->rep.repaired);
	rep_str(o, "last_repair", w->rep.last_repair);
}

uint64_t dyn_check_repaired(const struct daemon *dm, bool zero)
{
	struct dynverify *w = DV(dm);
	uint64_t n;

	if (!w)
		return 0;
	n = w->rep.repaired;
	if (zero)
		w->rep.repaired = w->rep.check_failed = 0;
	return n;
}

/* A check under way finishes before its backend stops (its repairs are
 * not applied). */
static void check_stop(void *self, bool keep)
{
	struct dynverify *w = self;

	(void)keep;
	if (w->running)
		job_join(w->dm, w);
	job_clear(w);
}

static void check_close(void *self)
{
	struct dynverify *w = self;

	if (!w)
		return;
	check_stop(w, false);
	close(w->h.fd);
	free(w);
}

const struct part part_dynsets_check = {
	.name = "the dynamic sets' check",
	.open = check_open,
	.tick = check_tick,
	.stop = check_stop,
	.close = check_close,
};
