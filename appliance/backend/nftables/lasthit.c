/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Each rule's last hit with the nftables backend. The BPF classifier
 * stamps every counter with the time of its last packet; nftables' rules
 * have no such stamp nfbox could read for every rule (rules that differ only
 * in their ports share one nftables rule, a counter map picks the counter).
 * So the daemon watches the named counters: it reads them every period (1 s,
 * or 20 times what a read takes, for a big table), and a counter that grew
 * was hit since the read before. The last hit is then known to within a
 * period, and from the daemon's start on (a restart starts from "none").
 * Each table applied is the baseline (lasthit_start): a counter that grew
 * since it was made was hit, also before the first read.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sort.h"
#include "backend/nftables/lasthit.h"
#include "backend/nftables/nft/counters.h"
#include "base/clock.h"

#define LASTHIT_PERIOD_MS   1000
#define LASTHIT_COST_FACTOR 20

struct lasthit {
	struct nft_counters prev; /* the last read, sorted by name */
	long long *when;	  /* wall ms of each one's last hit (by index in prev), 0: none seen */
	long long next;		  /* monotonic ms of the next read */
	long long period;
};

void lasthit_free(struct lasthit **lhp)
{
	if (!*lhp)
		return;
	nft_counters_free(&(*lhp)->prev);
	free((*lhp)->when);
	free(*lhp);
	*lhp = NULL;
}

void lasthit_tick(struct lasthit **lhp)
{
	struct lasthit *lh = *lhp;
	struct nft_counters cur;
	long long t0 = clock_ms(CLOCK_MONOTONIC), now, *when;
	bool first = !lh;

	if (lh && t0 < lh->next)
		return;
	if (!lh && !(lh = *lhp = calloc(1, sizeof(*lh))))
		return;
	if (nft_counters_read(&cur) < 0) {
		lh->next = t0 + LASTHIT_PERIOD_MS;
		return;
	}
	now = clock_ms(CLOCK_REALTIME);
	if (!(when = calloc(cur.n ? cur.n : 1, sizeof(*when)))) {
		nft_counters_free(&cur);
		return;
	}
	/* both sorted by name: one walk */
	for (uint32_t i = 0, j = 0; i < cur.n; i++) {
		int c = 1;

		while (j < lh->prev.n && (c = strcmp(lh->prev.v[j].name, cur.v[i].name)) < 0)
			j++;
		if (j < lh->prev.n && c == 0)
			when[i] = cur.v[i].packets > lh->prev.v[j].packets ? now : lh->when[j];
		else /* a counter new since the read before: hit if it counted */
			when[i] = !first && cur.v[i].packets ? now : 0;
	}
	nft_counters_free(&lh->prev);
	free(lh->when);
	lh->prev = cur;
	lh->when = when;
	lh->period = (clock_ms(CLOCK_MONOTONIC) - t0) * LASTHIT_COST_FACTOR;
	if (lh->period < LASTHIT_PERIOD_MS)
		lh->period = LASTHIT_PERIOD_MS;
	lh->next = t0 + lh->period;
}

static int counter_cmp(const void *a, const void *b)
{
	return strcmp(((const struct nfr_counter *)a)->name, ((const struct nfr_counter *)b)->name);
}

void lasthit_start(struct lasthit **lhp, const struct nfr_table *t)
{
	struct lasthit *lh = *lhp;
	struct nft_counters start = { 0 };
	long long *when;

	if (!lh && !(lh = *lhp = calloc(1, sizeof(*lh))))
		return;
	start.v = malloc((t->ncounters ? t->ncounters : 1) * sizeof(*start.v));
	when = calloc(t->ncounters ? t->ncounters : 1, sizeof(*when));
	if (!start.v || !when) {
		free(start.v);
		free(when);
		return;
	}
	memcpy(start.v, t->counters, t->ncounters * sizeof(*start.v));
	start.n = t->ncounters;
	sort_n(start.v, start.n, sizeof(*start.v), counter_cmp);
	for (uint32_t i = 0; i < start.n; i++)
		when[i] = lasthit_of(lh, start.v[i].name);
	nft_counters_free(&lh->prev);
	free(lh->when);
	lh->prev = start;
	lh->when = when;
	if (!lh->period)
		lh->period = LASTHIT_PERIOD_MS;
	lh->next = clock_ms(CLOCK_MONOTONIC) + lh->period;
}

long long lasthit_of(const struct lasthit *lh, const char *counter)
{
	uint32_t lo = 0, hi = lh ? lh->prev.n : 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(lh->prev.v[mid].name, counter);

		if (!c)
			return lh->when[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void lasthit_zero(struct lasthit *lh)
{
	for (uint32_t i = 0; lh && i < lh->prev.n; i++) {
		lh->prev.v[i].packets = 0;
		lh->when[i] = 0;
	}
}
