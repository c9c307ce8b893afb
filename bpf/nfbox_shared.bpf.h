/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the classifier (nfbox_filter.bpf.c) and the early drop at XDP
 * (nfbox_early.bpf.c) share: the active generation, its counters, the
 * dynamic sets' tries, the verdict event ring and its rate bucket. Each
 * object declares these maps; user space creates them once (the engine)
 * and hands the same maps to the early program (bpf_map__reuse_fd), so
 * both count in a rule's one counter and read the same sets. Included
 * after vmlinux.h, nfbox.h and nfbox_filter.bpf.h.
 */
#ifndef NFBOX_SHARED_BPF_H
#define NFBOX_SHARED_BPF_H

#define NFB_GENS	2
#define NFB_ARRAY_FLAGS BPF_F_MMAPABLE
#define NFB_SIZED_FLAGS (BPF_F_MMAPABLE | BPF_F_INNER_MAP)
#define NFB_BLOB_FLAGS	NFB_SIZED_FLAGS

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfb_ctl);
} nfb_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NFB_GENS);
	__type(key, __u32);
	__type(value, struct nfb_gen_cfg);
} nfb_gen SEC(".maps");

/* Counters and limit state of a generation (bpf/nfbox.h, "Counters"). */
struct nfb_counters_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, NFB_SIZED_FLAGS);
	__uint(max_entries, NFB_CNT_MIN_CAP * 3);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct nfb_counter));
};

/* An outer map of n generations of inner maps (an inner: a template struct). */
#define NFB_OUTER_N(name, inner, n)                       \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS); \
		__uint(max_entries, n);                   \
		__type(key, __u32);                       \
		__array(values, struct inner);            \
	} name SEC(".maps")
#define NFB_OUTER(name, inner) NFB_OUTER_N(name, inner, NFB_GENS)

NFB_OUTER(nfb_counters, nfb_counters_inner);

/* Dynamic sets' entries (bpf/nfbox.h, "Dynamic sets"): outside the generations. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_DYN_ENTRIES);
	__type(key, struct nfb_dyn4_key);
	__type(value, struct nfb_dyn_val);
} nfb_dyn4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NFB_DYN_ENTRIES);
	__type(key, struct nfb_dyn6_key);
	__type(value, struct nfb_dyn_val);
} nfb_dyn6 SEC(".maps");

/* The fixed counters (slots below NFB_CNT_FIRST_RULE): outside the
 * generations. Counters are per CPU and incremented without atomics, as is
 * usual for per-CPU BPF counters: a softirq interrupting a LOCAL_OUT run on
 * the same CPU between load and store could lose one increment. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFB_CNT_FIRST_RULE);
	__type(key, __u32);
	__type(value, struct nfb_counter);
} nfb_fixed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, NFB_RINGBUF_SIZE);
} nfb_events SEC(".maps");

/* Rate state: one bucket for all CPUs for log events (0) and one for the
 * answers to rejects (1), so each rate is the whole appliance's. */
#define NFB_BUCKET_LOG	  0
#define NFB_BUCKET_REJECT 1
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct nfb_log_bucket);
} nfb_log_bucket SEC(".maps");

static __always_inline void nfb_count_add(struct nfb_counter *c, __u32 len)
{
	if (c) {
		c->packets++;
		c->bytes += len;
		c->last_ns = bpf_ktime_get_ns();
	}
}

/* A fixed counter (enum nfb_cnt_fixed). */
static __always_inline void nfb_count_fixed(__u32 slot, __u32 len)
{
	nfb_count_add(bpf_map_lookup_elem(&nfb_fixed, &slot), len);
}

/* A rule's or a default's counter in the generation's map, this CPU's row. */
static __noinline void nfb_count(const struct nfb_gen_cfg *cfg, __u32 gen, __u32 slot, __u32 len)
{
	__u32 cpu = bpf_get_smp_processor_id(), idx;
	void *cnt;

	if (!cfg || cpu >= cfg->cnt_cpus || slot >= cfg->cnt_cap)
		return;
	cnt = bpf_map_lookup_elem(&nfb_counters, &gen);
	if (!cnt)
		return;
	idx = nfb_cnt_index(cfg->cnt_cap, cpu, slot);
	nfb_count_add(bpf_map_lookup_elem(cnt, &idx), len);
}

/* A token from bucket idx at rate per period seconds with burst; true if
 * taken. A token costs period seconds in ns and the bucket gains rate per
 * elapsed ns: rate tokens per period, with no division on the way. The
 * loader keeps burst * period * 1e9 within 64 bits (burst <= 1e6, period
 * <= 3600 s). */
static __always_inline bool nfb_bucket_take(__u32 idx, __u64 rate, __u64 period, __u64 burst, __u64 now)
{
	__u64 limit, elapsed, tokens, cost;
	struct nfb_log_bucket *b;
	bool allowed;

	if (!rate)
		return true;
	b = bpf_map_lookup_elem(&nfb_log_bucket, &idx);
	if (!b)
		return true;
	if (!burst)
		burst = 1;
	if (!period || period > 3600)
		period = 1;
	cost = period * NFB_NSEC_PER_SEC;
	limit = burst * cost;
	bpf_spin_lock(&b->lock);
	/* now may trail last_ns by a little: another CPU read the clock later
	 * but took the lock first. */
	elapsed = now > b->last_ns ? now - b->last_ns : 0;
	/* elapsed < limit / rate keeps elapsed * rate below limit: no overflow */
	if (elapsed >= limit / rate)
		tokens = limit;
	else
		tokens = b->tokens + elapsed * rate;
	if (tokens > limit)
		tokens = limit;
	if (now > b->last_ns)
		b->last_ns = now;
	allowed = tokens >= cost;
	b->tokens = allowed ? tokens - cost : tokens;
	bpf_spin_unlock(&b->lock);
	return allowed;
}

static __always_inline bool nfb_log_allowed(const struct nfb_gen_cfg *cfg, __u64 now)
{
	return nfb_bucket_take(NFB_BUCKET_LOG, cfg->log_rate, cfg->log_period, cfg->log_burst, now);
}

/* Whether dynamic set `set` (an id) holds addr, of family fam. Sets do not
 * overlap within themselves (user space refuses it), so the longest match
 * is the only one: expired, it is no member. */
static __always_inline bool nfb_dyn_has(__u32 set, __u8 fam, const __u8 *addr, __u64 now)
{
	const struct nfb_dyn_val *v;

	if (fam == NFB_FAM_IPV4) {
		struct nfb_dyn4_key k = { .prefixlen = 16 + 32, .set = { set >> 8, set & 0xff } };

		__builtin_memcpy(k.addr, addr, 4);
		v = bpf_map_lookup_elem(&nfb_dyn4, &k);
	} else {
		struct nfb_dyn6_key k = { .prefixlen = 16 + 128, .set = { set >> 8, set & 0xff } };

		__builtin_memcpy(k.addr, addr, 16);
		v = bpf_map_lookup_elem(&nfb_dyn6, &k);
	}
	return v && (!v->expires_ns || v->expires_ns > now);
}

#endif /* NFBOX_SHARED_BPF_H */
