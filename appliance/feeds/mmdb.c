/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The search tree of an MMDB is a binary trie over the address bits; each
 * record of a node is another node, empty, or a pointer to the data of the
 * network it ends. The walk keeps the bits of the path and, at each data
 * record, looks up the country once per data offset (networks of one
 * country share their data). An IPv6 database holds IPv4 at ::/96, and
 * again (aliases into the same nodes) at ::ffff:0:0/96 and 2002::/16,
 * which are skipped, as MaxMind's own readers do.
 */
#include "feeds/mmdb.h"

#include <errno.h>
#include <maxminddb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MMDB_MAX_PREFIXES (4u << 20)

struct walk {
	MMDB_s db;
	const char (*cc)[3];
	uint32_t ncc;
	struct prefix *v;
	uint32_t n, cap;
	int err;
	/* the last data offset judged, and whether it was one of the countries */
	uint64_t last_off;
	int last_hit;
	uint64_t visits;
};

static bool country_of(struct walk *w, MMDB_entry_s *e)
{
	MMDB_entry_data_s d;
	char cc[3];

	if (e->offset == w->last_off && w->last_hit >= 0)
		return w->last_hit;
	w->last_off = e->offset;
	w->last_hit = 0;
	if ((MMDB_get_value(e, &d, "country", "iso_code", NULL) != MMDB_SUCCESS || !d.has_data) &&
	    (MMDB_get_value(e, &d, "registered_country", "iso_code", NULL) != MMDB_SUCCESS || !d.has_data))
		return false;
	if (d.type != MMDB_DATA_TYPE_UTF8_STRING || d.data_size != 2)
		return false;
	memcpy(cc, d.utf8_string, 2);
	cc[2] = '\0';
	for (uint32_t i = 0; i < w->ncc; i++)
		if (!strcmp(cc, w->cc[i]))
			return (w->last_hit = 1);
	return false;
}

static void add(struct walk *w, const uint8_t *bits, unsigned depth)
{
	struct prefix p = { 0 };

	if (w->db.metadata.ip_version == 4) {
		p.family = POLICY_FAM_IPV4;
		p.plen = (uint8_t)depth;
		memcpy(p.addr, bits, 4);
	} else if (depth >= 96 && !memcmp(bits, (const uint8_t[12]){ 0 }, 12)) {
		p.family = POLICY_FAM_IPV4; /* ::a.b.c.d/96+n */
		p.plen = (uint8_t)(depth - 96);
		memcpy(p.addr, bits + 12, 4);
	} else {
		p.family = POLICY_FAM_IPV6;
		p.plen = (uint8_t)depth;
		memcpy(p.addr, bits, 16);
	}
	if (w->n == w->cap) {
		struct prefix *nv;

		if (w->cap >= MMDB_MAX_PREFIXES) {
			w->err = -E2BIG;
			return;
		}
		if (!(nv = realloc(w->v, (w->cap = w->cap ? 2 * w->cap : 1024) * sizeof(*nv)))) {
			w->err = -ENOMEM;
			return;
		}
		w->v = nv;
	}
	w->v[w->n++] = p;
}

/* The aliases of the IPv4 subtree in an IPv6 tree: ::ffff:0:0/96,
 * 2001::/32 (Teredo) and 2002::/16 (6to4). */
static bool alias(const struct walk *w, const uint8_t *bits, unsigned depth)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0, 0 };

	if (w->db.metadata.ip_version != 6)
		return false;
	return (depth == 96 && !memcmp(bits, mapped, 12)) || (depth == 32 && !memcmp(bits, teredo, 4)) ||
	       (depth == 16 && bits[0] == 0x20 && bits[1] == 0x02);
}

static void walk(struct walk *w, uint32_t node, uint8_t *bits, unsigned depth)
{
	MMDB_search_node_s sn;
	unsigned max = w->db.metadata.ip_version == 4 ? 32 : 128;

	if (w->err)
		return;
	/* a tree visits each node once (aliases are skipped): more visits are
	 * a corrupt file whose nodes are shared, which could take forever */
	if (++w->visits > 2ull * w->db.metadata.node_count + 2 || depth >= max ||
	    MMDB_read_node(&w->db, node, &sn) != MMDB_SUCCESS) {
		w->err = -EINVAL;
		return;
	}
	for (int side = 0; side < 2 && !w->err; side++) {
		uint8_t type = side ? sn.right_record_type : sn.left_record_type;
		uint64_t rec = side ? sn.right_record : sn.left_record;

		if (side)
			bits[depth / 8] |= (uint8_t)(0x80 >> (depth % 8));
		if (alias(w, bits, depth + 1)) {
			/* skipped */
		} else if (type == MMDB_RECORD_TYPE_SEARCH_NODE) {
			walk(w, (uint32_t)rec, bits, depth + 1);
		} else if (type == MMDB_RECORD_TYPE_DATA) {
			MMDB_entry_s e = side ? sn.right_record_entry : sn.left_record_entry;

			if (country_of(w, &e))
				add(w, bits, depth + 1);
		} else if (type == MMDB_RECORD_TYPE_INVALID) {
			w->err = -EINVAL;
		}
		if (side)
			bits[depth / 8] &= (uint8_t)~(0x80 >> (depth % 8));
	}
}

int mmdb_country_prefixes(const char *path, const char (*cc)[3], uint32_t ncc, struct prefix **out, uint32_t *n,
			  char *why, size_t len)
{
	struct walk w = { .cc = cc, .ncc = ncc, .last_hit = -1 };
	uint8_t bits[16] = { 0 };
	int r;

	*out = NULL;
	*n = 0;
	errno = 0;
	if ((r = MMDB_open(path, MMDB_MODE_MMAP, &w.db)) != MMDB_SUCCESS) {
		int e = (r == MMDB_IO_ERROR || r == MMDB_FILE_OPEN_ERROR) && errno ? errno : 0;

		snprintf(why, len, "%s: %s", path, e ? strerror(e) : MMDB_strerror(r));
		return e ? -e : -EINVAL;
	}
	if (w.db.metadata.ip_version != 4 && w.db.metadata.ip_version != 6) {
		MMDB_close(&w.db);
		snprintf(why, len, "%s: IP version %u: not an IPv4 or IPv6 database", path,
			 (unsigned)w.db.metadata.ip_version);
		return -EINVAL;
	}
	if (w.db.metadata.node_count)
		walk(&w, 0, bits, 0);
	MMDB_close(&w.db);
	if (w.err) {
		free(w.v);
		snprintf(why, len, "%s: %s", path,
			 w.err == -ENOMEM  ? "out of memory"
			 : w.err == -E2BIG ? "more than 4,194,304 networks of those countries"
					   : "its search tree is corrupt");
		return w.err;
	}
	*out = w.v;
	*n = w.n;
	return 0;
}
