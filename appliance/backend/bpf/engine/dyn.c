/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Engine: the dynamic sets' tries (bpf/nfbox.h, "Dynamic sets"). */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/bpf/engine/engine_int.h"
#include "base/clock.h"

union dyn_key {
	struct nfb_dyn4_key k4;
	struct nfb_dyn6_key k6;
};

static void make_key(union dyn_key *k, uint16_t set, int fam, const uint8_t *addr, uint8_t plen)
{
	memset(k, 0, sizeof(*k));
	if (fam == 0) {
		k->k4.prefixlen = 16u + plen;
		k->k4.set[0] = (uint8_t)(set >> 8);
		k->k4.set[1] = (uint8_t)set;
		memcpy(k->k4.addr, addr, 4);
	} else {
		k->k6.prefixlen = 16u + plen;
		k->k6.set[0] = (uint8_t)(set >> 8);
		k->k6.set[1] = (uint8_t)set;
		memcpy(k->k6.addr, addr, 16);
	}
}

int engine_dyn_put(struct engine *e, uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires)
{
	struct nfb_dyn_val v = { 0 };
	union dyn_key k;

	if (!e)
		return -ENODEV;
	if (expires) {
		/* the classifier's clock is CLOCK_BOOTTIME (bpf_ktime_get_boot_ns) */
		int64_t left = expires * 1000000 - clock_ns(CLOCK_REALTIME);

		v.expires_ns = (uint64_t)(clock_ns(CLOCK_BOOTTIME) + (left > 0 ? left : 0));
		if (!v.expires_ns)
			v.expires_ns = 1;
	}
	make_key(&k, set, fam, addr, plen);
	return bpf_map_update_elem(e->map_fd[fam ? EM_DYN6 : EM_DYN4], &k, &v, BPF_ANY) < 0 ? -errno : 0;
}

int engine_dyn_del(struct engine *e, uint16_t set, int fam, const uint8_t *addr, uint8_t plen)
{
	union dyn_key k;

	if (!e)
		return -ENODEV;
	make_key(&k, set, fam, addr, plen);
	return bpf_map_delete_elem(e->map_fd[fam ? EM_DYN6 : EM_DYN4], &k) < 0 ? -errno : 0;
}

struct prune {
	int fam;
	bool (*keep)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, void *arg);
	void *arg;
};

static bool unkept(const void *key, void *arg)
{
	const struct prune *p = arg;
	union dyn_key k;
	const uint8_t *kb;

	memcpy(&k, key, p->fam ? sizeof(k.k6) : sizeof(k.k4));
	kb = p->fam ? k.k6.set : k.k4.set;
	return !p->keep((uint16_t)(kb[0] << 8 | kb[1]), p->fam, p->fam ? k.k6.addr : k.k4.addr,
			(uint8_t)((p->fam ? k.k6.prefixlen : k.k4.prefixlen) - 16), p->arg);
}

int engine_dyn_prune(struct engine *e,
		     bool (*keep)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, void *arg), void *arg)
{
	int went = 0, r;

	if (!e)
		return -ENODEV;
	for (int fam = 0; fam < 2; fam++) {
		struct prune p = { fam, keep, arg };

		if ((r = engine_delete_keys(e->map_fd[fam ? EM_DYN6 : EM_DYN4],
					    fam ? sizeof(struct nfb_dyn6_key) : sizeof(struct nfb_dyn4_key), unkept,
					    &p)) < 0)
			return r;
		went += r;
	}
	return went;
}

int engine_dyn_name_set(struct engine *e, uint16_t id, const char *name)
{
	struct nfb_dyn_name v = { 0 };
	uint32_t k = id;

	if (!e)
		return -ENODEV;
	if (name && strlen(name) >= sizeof(v.name))
		return -ENAMETOOLONG;
	if (name)
		strcpy(v.name, name);
	return bpf_map_update_elem(e->map_fd[EM_DYN_NAMES], &k, &v, BPF_ANY) < 0 ? -errno : 0;
}

int engine_dyn_name_get(struct engine *e, uint16_t id, char *buf, size_t len)
{
	struct nfb_dyn_name v;
	uint32_t k = id;

	if (!e)
		return -ENODEV;
	if (bpf_map_lookup_elem(e->map_fd[EM_DYN_NAMES], &k, &v) < 0)
		return -errno;
	v.name[sizeof(v.name) - 1] = '\0';
	snprintf(buf, len, "%s", v.name);
	return 0;
}

int engine_dyn_walk_fds(const int fds[2],
			void (*fn)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms,
				   void *arg),
			void *arg)
{
	for (int fam = 0; fam < 2; fam++) {
		int fd = fds[fam];
		union dyn_key k, next;
		struct nfb_dyn_val v;
		void *prev = NULL;

		while (bpf_map_get_next_key(fd, prev, &next) == 0) {
			const uint8_t *set = fam ? next.k6.set : next.k4.set;
			uint32_t plen = (fam ? next.k6.prefixlen : next.k4.prefixlen) - 16;
			/* the clocks read for each entry: a walk of many takes a while */
			int64_t boot = clock_ns(CLOCK_BOOTTIME), real = clock_ns(CLOCK_REALTIME);

			k = next;
			prev = &k;
			if (bpf_map_lookup_elem(fd, &k, &v) < 0)
				continue; /* gone meanwhile */
			if (v.expires_ns && (int64_t)v.expires_ns <= boot)
				continue; /* expired: no member */
			fn((uint16_t)(set[0] << 8 | set[1]), fam, fam ? next.k6.addr : next.k4.addr, (uint8_t)plen,
			   v.expires_ns ? (real + ((int64_t)v.expires_ns - boot)) / 1000000 : 0, arg);
		}
		if (errno != ENOENT)
			return -errno;
	}
	return 0;
}

int engine_dyn_walk(struct engine *e,
		    void (*fn)(uint16_t set, int fam, const uint8_t *addr, uint8_t plen, int64_t expires_ms, void *arg),
		    void *arg)
{
	if (!e)
		return -ENODEV;
	return engine_dyn_walk_fds((const int[2]){ e->map_fd[EM_DYN4], e->map_fd[EM_DYN6] }, fn, arg);
}

int engine_dyn_fds(struct engine *e, int fds[2])
{
	if (!e)
		return -ENODEV;
	if ((fds[0] = fcntl(e->map_fd[EM_DYN4], F_DUPFD_CLOEXEC, 3)) < 0)
		return -errno;
	if ((fds[1] = fcntl(e->map_fd[EM_DYN6], F_DUPFD_CLOEXEC, 3)) < 0) {
		int r = -errno;

		close(fds[0]);
		return r;
	}
	return 0;
}
