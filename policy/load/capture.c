/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: the capture: section (interface, match, file, rotation). */
#include <stdlib.h>
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

static void load_capture_match(struct lx *x, struct capture_conf *c, const struct ynode *m)
{
	static const char *const keys[] = {
		"proto", "from", "to", "service", "min-length", "max-length", "non-ip", NULL
	};
	const struct ynode *v;
	uint64_t num;
	const char *why;

	c->match.proto = -1;
	lx_addr_match(x, m ? ynode_get(m, "from") : NULL, "from", &c->match.from);
	lx_no_negation(x, m ? ynode_get(m, "from") : NULL, c->match.from.neg, "a capture match");
	lx_no_dynamic(x, m ? ynode_get(m, "from") : NULL, &c->match.from, "a capture match");
	lx_addr_match(x, m ? ynode_get(m, "to") : NULL, "to", &c->match.to);
	lx_no_negation(x, m ? ynode_get(m, "to") : NULL, c->match.to.neg, "a capture match");
	lx_no_dynamic(x, m ? ynode_get(m, "to") : NULL, &c->match.to, "a capture match");
	lx_port_match(x, m ? ynode_get(m, "service") : NULL, "service", &c->match.service);
	if (!m || !lx_is(x, m, YNODE_MAP, "capture match"))
		return;
	lx_check_keys(x, m, keys, "a capture match");
	if ((v = ynode_get(m, "proto")) && lx_is(x, v, YNODE_SCALAR, "proto") &&
	    parse_proto(v->str, &c->match.proto, &why) < 0)
		diag_error(x->d, v->loc, "proto '%s': %s", v->str, why);
	if ((v = ynode_get(m, "min-length")) && lx_uint(x, v, "min-length", 0, 65535 + 14, &num))
		c->match.min_len = (uint32_t)num;
	if ((v = ynode_get(m, "max-length")) && lx_uint(x, v, "max-length", 1, 65535 + 14, &num))
		c->match.max_len = (uint32_t)num;
	if (c->match.max_len && c->match.min_len > c->match.max_len)
		diag_error(x->d, v->loc, "max-length is below min-length");
	if ((v = ynode_get(m, "non-ip")))
		lx_bool(x, v, "non-ip", &c->match.non_ip);
	/* proto: udp with service: [tcp/80] matches nothing. */
	if (c->match.proto >= 0 && c->match.service.n && (v = ynode_get(m, "service"))) {
		bool meets = false;

		for (uint32_t i = 0; i < c->match.service.n; i++)
			meets |= c->match.service.v[i].proto == c->match.proto;
		if (!meets)
			diag_error(x->d, v->loc,
				   "no port of this service is of proto '%s': the match could catch nothing" DIAG_FIX
				   "; drop "
				   "'proto:' or fix the service",
				   policy_proto_name((uint8_t)c->match.proto));
	}
}

/* Two captures cannot share an interface (AF_XDP takes its queues) or a
 * file (each would overwrite the other's). */
static void capture_conflicts(struct lx *x, const struct capture_conf *c, const struct ynode *iface,
			      const struct ynode *file)
{
	for (uint32_t i = 0; i + 1 < x->p->ncaptures; i++) {
		const struct capture_conf *o = &x->p->captures[i];

		if (iface && c->ifname[0] && !strcmp(o->ifname, c->ifname))
			diag_error(
				x->d, iface->loc,
				"capture '%s' also reads interface '%s' (line %u): one capture per interface" DIAG_FIX
				"; "
				"combine their matches, or mirror into a second interface (mirror-from)",
				o->name ? o->name : "?", c->ifname, o->loc.line);
		if (file && c->file && o->file && !strcmp(o->file, c->file))
			diag_error(x->d, file->loc, "capture '%s' also writes '%s' (line %u): one file per capture",
				   o->name ? o->name : "?", c->file, o->loc.line);
	}
}

static void capture_ifname(struct lx *x, const struct ynode *v, char *out, const char *what)
{
	if (!lx_is(x, v, YNODE_SCALAR, what) || !lx_check_ifname_in(x, v, false))
		return;
	strcpy(out, v->str);
}

static void load_capture_one(struct lx *x, const struct ynode *n)
{
	static const char *const keys[] = { "name",   "interface", "match",	  "file",
					    "rotate", "snaplen",   "mirror-from", NULL };
	static const char *const rkeys[] = { "size", "keep", NULL };
	const struct ynode *v, *rot;
	struct capture_conf *c;
	const char *why;
	uint64_t num;

	if (!lx_is(x, n, YNODE_MAP, "a capture"))
		return;
	lx_check_keys(x, n, keys, "a capture");
	c = LX_APPEND(x, x->p->captures, x->p->ncaptures);
	if (!c)
		return;
	c->loc = n->loc;
	c->snaplen = 65535;
	c->rotate_keep = 8;
	if ((v = ynode_get(n, "name")) && lx_is(x, v, YNODE_SCALAR, "capture name")) {
		if (!parse_valid_name(v->str))
			diag_error(x->d, v->loc, "capture name '%s' is not valid", v->str);
		for (uint32_t i = 0; i + 1 < x->p->ncaptures; i++)
			if (x->p->captures[i].name && strcmp(x->p->captures[i].name, v->str) == 0)
				diag_error(x->d, v->loc, "duplicate capture name '%s'", v->str);
		x->oom |= !(c->name = strdup(v->str));
	} else if (!v && !ynode_has(n, "name")) {
		diag_error(x->d, n->loc, "a capture needs a 'name:'");
	}
	if ((v = ynode_get(n, "interface")))
		capture_ifname(x, v, c->ifname, "interface");
	else if (!ynode_has(n, "interface"))
		diag_error(x->d, n->loc, "a capture needs 'interface:' (the interface to capture on)");
	if ((v = ynode_get(n, "mirror-from"))) {
		capture_ifname(x, v, c->mirror_from, "mirror-from");
		if (c->mirror_from[0] && !strcmp(c->mirror_from, c->ifname))
			diag_error(x->d, v->loc,
				   "mirror-from '%s' is the capture interface itself" DIAG_FIX
				   "; name the interface whose traffic "
				   "is copied, and a new interface for 'interface:' (nfbox creates it)",
				   c->mirror_from);
	}
	load_capture_match(x, c, ynode_get(n, "match"));
	if (!(v = ynode_get(n, "file"))) {
		if (!ynode_has(n, "file"))
			diag_error(
				x->d, n->loc,
				"a capture needs 'file:' (an absolute path, e.g. /var/lib/nfbox/capture/NAME.pcapng)");
	} else if (lx_is(x, v, YNODE_SCALAR, "file")) {
		if (v->str[0] != '/')
			diag_error(x->d, v->loc, "capture file '%s' must be an absolute path", v->str);
		x->oom |= !(c->file = strdup(v->str));
	}
	if ((rot = ynode_get(n, "rotate")) && lx_is(x, rot, YNODE_MAP, "rotate")) {
		lx_check_keys(x, rot, rkeys, "rotate");
		if ((v = ynode_get(rot, "size")) && lx_is(x, v, YNODE_SCALAR, "rotate.size")) {
			if (parse_size(v->str, &c->rotate_size, &why) < 0)
				diag_error(x->d, v->loc, "rotate.size '%s': %s", v->str, why);
			else if (c->rotate_size < 65536)
				diag_error(x->d, v->loc, "rotate.size must be at least 64KiB");
		}
		if ((v = ynode_get(rot, "keep")) && lx_uint(x, v, "rotate.keep", 1, 100000, &num))
			c->rotate_keep = (uint32_t)num;
	}
	if ((v = ynode_get(n, "snaplen")) && lx_uint(x, v, "snaplen", 64, 262144, &num))
		c->snaplen = (uint32_t)num;
	capture_conflicts(x, c, ynode_get(n, "interface"), ynode_get(n, "file"));
}

void load_captures(struct lx *x, const struct ynode *n)
{
	if (!n || !lx_is(x, n, YNODE_SEQ, "capture"))
		return;
	for (size_t i = 0; i < n->nkids; i++)
		load_capture_one(x, n->kids[i]);
}
