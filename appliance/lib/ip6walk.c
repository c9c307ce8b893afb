/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include "lib/ip6walk.h"

#include <string.h>

#include "bpf/nfbox.h"

#define IP6_HDR_LEN 40

enum ip6walk_result ip6_walk(const uint8_t *p, size_t have, size_t end, struct ip6walk *w)
{
	size_t off = IP6_HDR_LEN;
	uint8_t nh;

	memset(w, 0, sizeof(*w));
	if (have < IP6_HDR_LEN)
		return IP6W_CUT;
	nh = p[6];
	for (unsigned i = 0; i <= NFB_V6_MAX_EXT; i++) {
		if (nh == NFB_IP6_NH_FRAGMENT) {
			uint16_t fo;

			if (off + 8 > end)
				return IP6W_MALFORMED;
			if (off + 4 > have)
				return IP6W_CUT;
			fo = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
			nh = p[off];
			off += 8;
			if (fo & NFB_IP6_FRAG_MASK) {
				w->frag = true;
				w->later = (fo & NFB_IP6_FRAG_OFFSET) != 0;
				w->more = fo & 1;
				break;
			}
			continue; /* an atomic fragment */
		}
		if (!nfb_v6_is_ext(nh))
			break;
		if (off + 8 > end)
			return IP6W_MALFORMED;
		if (off + 2 > have)
			return IP6W_CUT;
		{
			uint8_t next = p[off];

			off += nfb_v6_ext_len(nh, p[off + 1]);
			nh = next;
		}
		if (off > end)
			return IP6W_MALFORMED;
	}
	if (!w->frag && (nfb_v6_is_ext(nh) || nh == NFB_IP6_NH_FRAGMENT))
		return IP6W_MALFORMED;
	w->proto = nh;
	w->l4off = off;
	return IP6W_OK;
}
