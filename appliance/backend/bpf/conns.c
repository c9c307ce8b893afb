/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connection limits with the BPF backend: the classifier counts each
 * connection a limited rule lets in (bpf/nfbox.h, "Connection limits"),
 * and gives back at once those whose packets show TCP closed them; this
 * gives back the rest when they end. Conntrack's events say when:
 * destroyed, or TCP in TIME_WAIT or CLOSE (ct count's rule). A sweep once
 * a second asks conntrack about connections counted more than
 * CONNS_CONFIRM_NS ago that no answer has confirmed yet (a connection the
 * stack dropped before conntrack confirmed it has no event), about every
 * unverified one, and about every counted connection after events were
 * lost or at a start (events missed while no daemon ran).
 *
 * Counts that nobody followed (adopted from pins, or kept while the
 * nftables backend enforced) are not trusted: when the daemon begins to
 * listen, each connection counted before is marked unverified and taken
 * out of its owner's count, in one BPF run; the sweep counts each back
 * when conntrack says it is open. Until then a limit judges only the
 * connections counted since: it may let an owner have as many more as it
 * has unverified (at most N), for as long as the sweep takes to reach
 * them, but it never refuses or bans for a connection that has ended.
 * (Holding every limit back until a first full sweep would open them all
 * for that long instead: more than a minute with 262,144 connections at
 * CONNS_ASK_BUDGET a tick, longer still under a flood.)
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "backend/bpf/bpf.h"
#include "base/clock.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/plant.h"
#include "netlink/ctevents.h"

#define CONNS_CONFIRM_NS (2ull * 1000000000) /* counted this long: asked about */
#define CONNS_ASK_BUDGET 4096		     /* questions to conntrack a tick */
#define CONNS_BATCH	 256		     /* connections read from the map at a time */
#define CONNS_PASS_NS	 1000000000ull	     /* a pass begins at most once a second */

/* A walk's place in a hash map: its bucket (bpf_map_lookup_batch()'s
 * token, which an entry that goes meanwhile does not move, unlike
 * bpf_map_get_next_key()'s key), and the batch read from it. */
struct batch_place {
	uint32_t token;
	bool started, last; /* a batch was read; it was the last */
	uint32_t n, at;	    /* entries in the batch, and the next to look at */
};

/* A sweep of the counted connections: its place and batch. */
struct conns_walk {
	struct batch_place p;
	struct nfb_conn_key keys[CONNS_BATCH];
	struct nfb_conn_val vals[CONNS_BATCH];
};

static struct nfb_conn_key key_of(const struct ct_tuple *t)
{
	struct nfb_conn_key k;

	memset(&k, 0, sizeof(k));
	memcpy(k.src, t->src, 16);
	memcpy(k.dst, t->dst, 16);
	memcpy(&k.sport, t->sport, 2);
	memcpy(&k.dport, t->dport, 2);
	k.proto = t->proto;
	k.family = t->af == AF_INET ? NFB_FAM_IPV4 : NFB_FAM_IPV6;
	return k;
}

static struct ct_tuple tuple_of(const struct nfb_conn_key *k)
{
	struct ct_tuple t;

	memset(&t, 0, sizeof(t));
	t.af = k->family == NFB_FAM_IPV4 ? AF_INET : AF_INET6;
	t.proto = k->proto;
	memcpy(t.src, k->src, 16);
	memcpy(t.dst, k->dst, 16);
	memcpy(t.sport, &k->sport, 2);
	memcpy(t.dport, &k->dport, 2);
	return t;
}

static void release(struct bpf_backend *bb, const struct nfb_conn_key *k)
{
	int r = engine_conns_op(bb->e, NFB_CONNS_RELEASE, k);

	if (r > 0)
		bb->conns_released++;
	else if (r < 0 && bb->conns_release_failed++ % 1000 == 0)
		log_warn("connection limits: cannot give back a connection: %s", strerror(-r));
}

static void on_end(const struct ct_end *e, void *arg)
{
	struct nfb_conn_key k = key_of(&e->t);

	release(arg, &k);
}

static void on_ct(struct handler *h, uint32_t events)
{
	struct bpf_backend *bb = h->ctx;
	int r;

	(void)events;
	if ((r = ctev_read(bb->ct, on_end, bb)) == -ENOBUFS) {
		/* Ends were lost: every counted connection is asked about. */
		bb->conns_verify_all = true;
		if (bb->conns_events_lost++ % 100 == 0)
			log_warn(
				"connection limits: conntrack's events overran the socket; every counted connection is "
				"asked about again (conn_events_lost in nfbox stats)");
	} else if (r < 0) {
		log_warn("connection limits: conntrack events: %s", strerror(-r));
	}
}

static bool has_conn_limits(const struct policy *p)
{
	for (uint32_t i = 0; p && i < p->nrules; i++)
		if (p->rules[i].limit.conns)
			return true;
	return false;
}

void bpf_conns_close(struct bpf_backend *bb)
{
	free(bb->walk);
	bb->walk = NULL;
	bb->conns_walking = false;
	if (!bb->ct)
		return;
	loop_unwatch(bb->b.env->loop, &bb->ct_h);
	ctev_close(bb->ct);
	bb->ct = NULL;
}

void bpf_conns_adopted(struct bpf_backend *bb)
{
	if (planted("conns-adopt-trusting")) /* the test build: adopted counts judge and ban */
		return;
	bb->conns_adopted = true;
	bb->overload_after_ns = UINT64_MAX; /* until the policy is in force (bpf_conns_follow) */
}

bool bpf_conns_overload_ok(const struct bpf_backend *bb, uint64_t ts_ns)
{
	return ts_ns >= bb->overload_after_ns;
}

/* The connections counted before now: unverified, out of their owners'
 * counts, until conntrack says they are open (the sweep). */
static void distrust(struct bpf_backend *bb)
{
	int n;

	if (planted("conns-adopt-trusting"))
		return;
	if ((n = engine_conns_op(bb->e, NFB_CONNS_DISTRUST, NULL)) < 0)
		log_warn("connection limits: cannot set aside the counts made while nobody listened to conntrack: %s",
			 strerror(-n));
	else if (n > 0)
		log_info("connection limits: %d connections counted while nobody listened to conntrack count again "
			 "once conntrack says they are open",
			 n);
}

/* Conntrack's events heard from now on; what ended before, while nobody
 * listened, is not trusted. */
static void listen_ct(struct bpf_backend *bb)
{
	int r;

	if ((r = ctev_open(&bb->ct)) < 0) {
		log_err("connection limits: cannot hear conntrack's events (%s): connections are given back only by "
			"the sweep, once a second",
			strerror(-r));
		bb->ct = NULL;
		return;
	}
	bb->ct_h = (struct handler){ .fd = ctev_fd(bb->ct), .fn = on_ct, .ctx = bb };
	if (loop_watch(bb->b.env->loop, &bb->ct_h) < 0) {
		ctev_close(bb->ct);
		bb->ct = NULL;
		return;
	}
	distrust(bb);
	bb->conns_verify_all = true; /* every counted connection asked about */
}

void bpf_conns_follow(struct bpf_backend *bb, const struct policy *p)
{
	if (!has_conn_limits(p))
		bpf_conns_close(bb);
	else if (!bb->ct)
		listen_ct(bb);
	if (bb->conns_adopted) { /* reports made on the adopted counts were not acted on; from now on, they are */
		bb->overload_after_ns = (uint64_t)clock_ns(CLOCK_MONOTONIC);
		bb->conns_adopted = false;
	}
}

/* Whether this pass asks conntrack about the connection. */
static bool wanted(const struct bpf_backend *bb, const struct nfb_conn_val *v, uint64_t now)
{
	if (bb->conns_pass_all || v->since_ns == NFB_CONN_UNVERIFIED)
		return v->since_ns != NFB_CONN_GONE;
	return v->since_ns && v->since_ns != NFB_CONN_GONE && now - v->since_ns >= CONNS_CONFIRM_NS;
}

/* One connection: given back if conntrack no longer has it open, else
 * confirmed (counted again if it was unverified; since_ns 0, so that it is
 * not asked about again). */
static void check_one(struct bpf_backend *bb, const struct nfb_conn_key *k, const struct nfb_conn_val *v)
{
	struct ct_tuple t = tuple_of(k);
	int alive = ctev_alive(bb->ct, &t);

	if (alive == 0)
		release(bb, k);
	else if (alive > 0 && v->since_ns)
		engine_conns_op(bb->e, NFB_CONNS_CONFIRM, k);
}

/* The next batch of a walk (at most CONNS_BATCH entries, into keys and
 * vals): 1, 0 at its end, -errno. */
static int next_batch(struct batch_place *w, int fd, void *keys, void *vals)
{
	uint32_t count = CONNS_BATCH, out = 0;
	int r;

	if (w->last)
		return 0;
	r = bpf_map_lookup_batch(fd, w->started ? &w->token : NULL, &out, keys, vals, &count, NULL);
	if (r < 0 && errno != ENOENT)
		return -errno;
	w->started = true;
	w->last = r < 0; /* ENOENT: no bucket after these */
	w->token = out;
	w->n = count;
	w->at = 0;
	return 1;
}

void bpf_conns_tick(struct bpf_backend *bb)
{
	_cleanup_close_ int fd = bb->e && bb->ct ? engine_conns_fd(bb->e) : -1;
	uint64_t now = (uint64_t)clock_ns(CLOCK_MONOTONIC);
	struct conns_walk *w = bb->walk;
	unsigned asked = 0;
	int r;

	if (fd < 0 || !bb->ct)
		return;
	if (!w && !(w = bb->walk = malloc(sizeof(*w))))
		return;
	if (!bb->conns_walking) { /* a new pass, once a second: it asks about all if so wanted now (at once) */
		if (!bb->conns_verify_all && now - bb->conns_pass_ns < CONNS_PASS_NS)
			return;
		bb->conns_pass_ns = now;
		memset(&w->p, 0, sizeof(w->p));
		bb->conns_walking = true;
		bb->conns_pass_all = bb->conns_verify_all;
		bb->conns_verify_all = false;
	}
	/* A pass goes on from where the last tick stopped, over several ticks
	 * when there is much to ask (a batch is finished past the budget). */
	while (asked < CONNS_ASK_BUDGET) {
		for (; w->p.at < w->p.n; w->p.at++)
			if (wanted(bb, &w->vals[w->p.at], now)) {
				check_one(bb, &w->keys[w->p.at], &w->vals[w->p.at]);
				asked++;
			}
		if ((r = next_batch(&w->p, fd, w->keys, w->vals)) <= 0) {
			if (r < 0)
				log_warn("connection limits: cannot read the counted connections: %s", strerror(-r));
			bb->conns_walking = false;
			return;
		}
	}
}

/* ---- schedules that end (bpf/nfbox.h) ------------------------------------ */

/* The keys of nfb_sched_conns whose value is id, into *out (*n of them). */
static int sched_conns_of(int fd, uint16_t id, struct nfb_conn_key **out, size_t *n)
{
	struct nfb_conn_key k, next, *v = NULL;
	size_t cap = 0;
	bool first = true;
	uint32_t val;

	*n = 0;
	while (bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
		first = false;
		k = next;
		if (bpf_map_lookup_elem(fd, &k, &val) < 0 || (val != id && !planted("schedule-cut-all")))
			continue; /* (the test build's plant: every rule's) */
		if (*n == cap) {
			struct nfb_conn_key *w = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!w) {
				free(v);
				return -ENOMEM;
			}
			v = w;
		}
		v[(*n)++] = k;
	}
	*out = v;
	return 0;
}

int bpf_sched_cut(struct backend *b, uint16_t id, void (*fn)(const struct ct_tuple *t, void *arg), void *arg,
		  struct diags *d)
{
	struct bpf_backend *bb = bpf_of(b);
	_cleanup_free_ struct nfb_conn_key *keys = NULL;
	_cleanup_free_ struct ct_tuple *t = NULL;
	int fd = bb->e ? engine_map_fd(bb->e, "nfb_sched_conns") : -ENOENT, r;
	size_t n;

	if (fd < 0)
		return diag_errno(d, fd, "the classifier's scheduled connections");
	if ((r = sched_conns_of(fd, id, &keys, &n)) < 0)
		return diag_errno(d, r, "the classifier's scheduled connections");
	if (n && !(t = calloc(n, sizeof(*t))))
		return diag_errno(d, -ENOMEM, "the classifier's scheduled connections");
	for (size_t i = 0; i < n; i++)
		t[i] = tuple_of(&keys[i]);
	/* the entries go once conntrack answered: a cut that failed is tried
	 * again with them */
	if ((r = ct_delete_tuples(t, n, fn, arg)) < 0)
		return diag_errno(d, r, "cannot delete connections from conntrack");
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &keys[i]);
	return r;
}

/* The connections nfb_sched_conns had no room for: logged when the first
 * is counted, then at most once an hour while more are (with how many
 * since); status and stats show the count (bpf_stats, bpf_status). */
#define SCHED_FULL_WARN_NS (3600ull * 1000000000)

void bpf_sched_full_tick(struct bpf_backend *bb)
{
	uint64_t now = (uint64_t)clock_ns(CLOCK_MONOTONIC);
	struct nfb_counter c;
	uint32_t entries;

	if (!bb->e || engine_sched_full_read(bb->e, &c, NULL) < 0)
		return;
	if (c.packets < bb->sched_full_told)
		bb->sched_full_told = 0; /* nfbox stats --zero */
	if (c.packets == bb->sched_full_told ||
	    (bb->sched_full_told_ns && now - bb->sched_full_told_ns < SCHED_FULL_WARN_NS &&
	     !planted("sched-full-warn-each"))) /* (the test build's plant: warned of at every tick) */
		return;
	engine_sched_full_read(bb->e, &c, &entries); /* and the table's size, for the warning */
	log_warn("schedules: %llu connections let in by scheduled rules were not recorded (%llu since this was "
		 "last logged): the classifier's table of them (nfb_sched_conns, %u entries) is full, so they will not "
		 "be cut when their rule goes out of force. A rule's entries go at its edges, and the daemon prunes "
		 "those of connections that ended (a pass at most every 10 s; sched_conns_pruned in 'nfbox status'): "
		 "so many were open at once, or ended faster than the pruning. Give the rules whose connections may "
		 "outlive their window 'keep-connections: true', or enforce with the nftables backend "
		 "(it marks connections in conntrack and has no such table). Counted as sched_conns_full in 'nfbox "
		 "status' and 'nfbox stats'; warned of again in an hour at the soonest",
		 (unsigned long long)c.packets, (unsigned long long)(c.packets - bb->sched_full_told), entries);
	bb->sched_full_told = c.packets;
	bb->sched_full_told_ns = now;
}

/* Entries of connections that ended, pruned: a scheduled rule's entries
 * would otherwise go only at its edges, and a long window of many short
 * connections would fill the table (then new ones are not recorded). A
 * pass over nfb_sched_conns begins at most every PRUNE_PASS_NS, asks
 * conntrack about each entry, a chunk of at most PRUNE_BUDGET questions
 * every PRUNE_CHUNK_NS (the daemon's loop goes on answering between
 * them), and goes on where the last chunk stopped. An entry conntrack
 * has not (ENOENT), or has as TCP closed (TIME_WAIT or CLOSE: a new SYN
 * on its tuple is a new connection, recorded anew), is asked about once
 * more PRUNE_GRACE_NS later and deleted if the answer is the same: the
 * classifier records a connection before conntrack confirms it (at the
 * end of the hook), so a first answer may come too soon. */
#define PRUNE_BUDGET   256		    /* questions to conntrack a chunk */
#define PRUNE_CHUNK_NS (200ull * 1000000)   /* a chunk at most this often */
#define PRUNE_GRACE_NS (2000ull * 1000000)  /* between the two questions */
#define PRUNE_PASS_NS  (10ull * 1000000000) /* a pass begins at most this often */
#define PRUNE_SUSPECTS 1024		    /* entries waiting for their second question */

struct sched_prune {
	struct ctask *ask; /* opened at the first pass */
	bool ask_failed;   /* and said so once */
	struct batch_place p;
	bool walking;		    /* a pass is under way */
	uint64_t pass_ns, chunk_ns; /* when the last pass and chunk began */
	uint64_t pass_pruned;	    /* entries pruned since the last was logged */
	uint32_t head, count;	    /* the suspects: a ring, oldest at head */
	struct {
		struct nfb_conn_key k;
		uint64_t ns; /* the first answer */
	} sus[PRUNE_SUSPECTS];
	struct nfb_conn_key keys[CONNS_BATCH];
	uint32_t vals[CONNS_BATCH];
};

/* How often a pass begins: the test build takes it from
 * NFBOX_TEST_SCHED_PRUNE_MS, so that a suite sees a prune within seconds
 * (nfbox itself has no such switch). */
static uint64_t prune_pass_ns(void)
{
#ifdef NFBOX_TEST_PLANT
	const char *v = getenv("NFBOX_TEST_SCHED_PRUNE_MS");

	if (v && atoi(v) > 0)
		return (uint64_t)atoi(v) * 1000000;
#endif
	return PRUNE_PASS_NS;
}

static bool ended(struct sched_prune *s, const struct nfb_conn_key *k)
{
	struct ct_tuple t = tuple_of(k);

	return ctask_alive(s->ask, &t) == 0; /* an error: kept, asked about at the next pass */
}

/* The second question to each suspect whose grace is over: the entry goes
 * if its connection still has ended. The questions asked. */
static unsigned second_look(struct bpf_backend *bb, struct sched_prune *s, int fd, uint64_t now)
{
	unsigned asked = 0;

	for (; s->count && asked < PRUNE_BUDGET && now - s->sus[s->head].ns >= PRUNE_GRACE_NS; asked++) {
		const struct nfb_conn_key *k = &s->sus[s->head].k;

		if (ended(s, k) && bpf_map_delete_elem(fd, k) == 0) {
			bb->sched_pruned++;
			s->pass_pruned++;
		}
		s->head = (s->head + 1) % PRUNE_SUSPECTS;
		s->count--;
	}
	return asked;
}

void bpf_sched_prune_tick(struct bpf_backend *bb)
{
	int fd = bb->e ? engine_map_fd(bb->e, "nfb_sched_conns") : -ENOENT, r;
	uint64_t now = (uint64_t)clock_ns(CLOCK_MONOTONIC);
	struct sched_prune *s = bb->prune;
	unsigned asked;

	if (fd < 0 || planted("sched-prune-none")) /* (the test build's plant: nothing pruned) */
		return;
	if (!s && !(s = bb->prune = calloc(1, sizeof(*s))))
		return;
	if (s->chunk_ns && now - s->chunk_ns < PRUNE_CHUNK_NS)
		return;
	if (!s->walking && !s->count) { /* a new pass */
		if (s->pass_ns && now - s->pass_ns < prune_pass_ns())
			return;
		s->pass_ns = now;
		memset(&s->p, 0, sizeof(s->p));
		s->walking = true;
	}
	if (!s->ask && (r = ctask_open(&s->ask)) < 0) {
		if (!s->ask_failed)
			log_warn("schedules: cannot ask conntrack about the connections of scheduled rules (%s): "
				 "entries of "
				 "connections that ended stay in nfb_sched_conns until their rule's edge",
				 strerror(-r));
		s->ask_failed = true;
		s->ask = NULL;
		s->walking = false;
		return;
	}
	s->chunk_ns = now;
	asked = second_look(bb, s, fd, now);
	while (s->walking && asked < PRUNE_BUDGET && s->count < PRUNE_SUSPECTS) {
		const struct nfb_conn_key *k;

		if (s->p.at == s->p.n) {
			if ((r = next_batch(&s->p, fd, s->keys, s->vals)) < 0)
				log_warn("schedules: cannot read nfb_sched_conns: %s", strerror(-r));
			if (r <= 0)
				s->walking = false;
			continue;
		}
		k = &s->keys[s->p.at++];
		asked++;
		if (planted("sched-prune-hasty") && ended(s, k)) { /* (the test build's plant: at the first answer) */
			if (bpf_map_delete_elem(fd, k) == 0)
				bb->sched_pruned++;
		} else if (ended(s, k)) {
			uint32_t i = (s->head + s->count++) % PRUNE_SUSPECTS;

			s->sus[i].k = *k;
			s->sus[i].ns = now;
		}
	}
	if (!s->walking && !s->count && s->pass_pruned) {
		log_debug(
			"schedules: %llu entries of connections that ended pruned from nfb_sched_conns (%llu since the "
			"start)",
			(unsigned long long)s->pass_pruned, (unsigned long long)bb->sched_pruned);
		s->pass_pruned = 0;
	}
}

void bpf_sched_prune_close(struct bpf_backend *bb)
{
	if (!bb->prune)
		return;
	ctask_close(bb->prune->ask);
	free(bb->prune);
	bb->prune = NULL;
}
