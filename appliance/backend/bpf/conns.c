/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Connection limits with the BPF backend: the classifier counts each
 * connection a limited rule lets in (bpf/nfbox.h, "Connection limits"),
 * and gives back at once those whose packets show TCP closed them; this
 * gives back the rest when they end. Conntrack's events say when:
 * destroyed, or TCP in TIME_WAIT or CLOSE (ct count's rule). A sweep once
 * a second asks conntrack about connections counted more than
 * CONNS_CONFIRM_NS ago that no answer has confirmed yet (a connection the
 * stack dropped before conntrack confirmed it has no event), and about
 * every counted connection after events were lost or at a start (events
 * missed while no daemon ran).
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
#include "netlink/ctevents.h"

#define CONNS_CONFIRM_NS (2ull * 1000000000) /* counted this long: asked about */
#define CONNS_ASK_BUDGET 4096		     /* questions to conntrack a tick */

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
	int r = engine_conn_release(bb->e, k);

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
	if (!bb->ct)
		return;
	loop_unwatch(bb->b.env->loop, &bb->ct_h);
	ctev_close(bb->ct);
	bb->ct = NULL;
}

void bpf_conns_follow(struct bpf_backend *bb, const struct policy *p)
{
	int r;

	if (!has_conn_limits(p)) {
		bpf_conns_close(bb);
		return;
	}
	if (bb->ct)
		return;
	if ((r = ctev_open(&bb->ct)) < 0) {
		log_err("connection limits: cannot hear conntrack's events (%s): connections are given back only by "
			"the sweep, once a second",
			strerror(-r));
		bb->ct = NULL;
	} else {
		bb->ct_h = (struct handler){ .fd = ctev_fd(bb->ct), .fn = on_ct, .ctx = bb };
		if (loop_watch(bb->b.env->loop, &bb->ct_h) < 0) {
			ctev_close(bb->ct);
			bb->ct = NULL;
		}
	}
	bb->conns_verify_all = true; /* what ended while nobody listened */
}

/* One connection: given back if conntrack no longer has it open, else
 * marked confirmed (since_ns 0) so that it is not asked about again. */
static void check_one(struct bpf_backend *bb, int fd, const struct nfb_conn_key *k, struct nfb_conn_val *v)
{
	struct ct_tuple t = tuple_of(k);
	int alive = ctev_alive(bb->ct, &t);

	if (alive == 0) {
		release(bb, k);
	} else if (alive > 0 && v->since_ns) {
		v->since_ns = 0;
		bpf_map_update_elem(fd, k, v, BPF_EXIST);
	}
}

void bpf_conns_tick(struct bpf_backend *bb)
{
	_cleanup_close_ int fd = bb->e && bb->ct ? engine_conns_fd(bb->e) : -1;
	struct nfb_conn_key next, *cur = &bb->conns_cursor;
	struct nfb_conn_val v;
	uint64_t now = (uint64_t)clock_ns(CLOCK_MONOTONIC);
	unsigned asked = 0;

	if (fd < 0 || !bb->ct)
		return;
	if (!bb->conns_walking) { /* a new pass: it asks about all if so wanted now */
		bb->conns_walking = true;
		bb->conns_pass_all = bb->conns_verify_all;
		bb->conns_verify_all = false;
		bb->conns_at_start = true;
	}
	/* A walk goes on from where the last tick stopped (from the start
	 * again if that connection went meanwhile). */
	while (bpf_map_get_next_key(fd, bb->conns_at_start ? NULL : cur, &next) == 0) {
		bb->conns_at_start = false;
		*cur = next;
		if (bpf_map_lookup_elem(fd, cur, &v) < 0)
			continue;
		if (!bb->conns_pass_all && (!v.since_ns || now - v.since_ns < CONNS_CONFIRM_NS))
			continue;
		check_one(bb, fd, cur, &v);
		if (++asked == CONNS_ASK_BUDGET)
			return;
	}
	bb->conns_walking = false;
}
