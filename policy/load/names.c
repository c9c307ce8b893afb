/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Loader: what the definitions named (groups, sets, services) looked up by
 * the sections that use them, and interface names checked. Below every
 * section (load.h). */
#include <string.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

struct iface_group *lx_find_group(struct lx *x, const char *name)
{
	uint32_t i = lx_index_find(&x->groups, name);

	return i == UINT32_MAX ? NULL : &x->p->groups[i];
}

struct addr_set *lx_find_set(struct lx *x, const char *name)
{
	uint32_t i = lx_index_find(&x->sets, name);

	return i == UINT32_MAX ? NULL : &x->p->sets[i];
}

struct service *lx_find_service(struct lx *x, const char *name)
{
	uint32_t i = lx_index_find(&x->services, name);

	return i == UINT32_MAX ? NULL : &x->p->services[i];
}

/* An interface name as Linux takes it, or a wildcard as nftables writes
 * it ('eth*': every interface whose name starts with "eth"). iptables'
 * 'eth+' is refused with the spelling to use, not taken as a literal name
 * that would never exist. wild: whether a wildcard may stand here. */
bool lx_check_ifname_in(struct lx *x, const struct ynode *n, bool wild)
{
	size_t len = strlen(n->str);

	if (len && n->str[len - 1] == '+') {
		diag_error(x->d, n->loc,
			   "'%s' is iptables' wildcard" DIAG_FIX "; nfbox writes it as nftables does: '%.*s*' (quoted)",
			   n->str, (int)len - 1, n->str);
		return false;
	}
	if (len && n->str[len - 1] == '*') {
		if (!wild) {
			diag_error(x->d, n->loc,
				   "'%s': an interface wildcard cannot stand here" DIAG_FIX "; name one interface",
				   n->str);
			return false;
		}
		if (len == 1 || strchr(n->str, '*') != n->str + len - 1) {
			diag_error(x->d, n->loc,
				   "'%s': a wildcard is a name's beginning and one '*' at its end, e.g. 'eth*' ('any' "
				   "takes every interface)",
				   n->str);
			return false;
		}
	}
	if (!parse_valid_ifname(n->str)) {
		diag_error(x->d, n->loc, "'%s' is not a valid interface name (1..15 characters, no '/', ':' or spaces)",
			   n->str);
		return false;
	}
	return true;
}

bool lx_check_ifname(struct lx *x, const struct ynode *n)
{
	return lx_check_ifname_in(x, n, true);
}

/* The group that lists interface ifname, or NULL. */
struct iface_group *lx_group_member(struct lx *x, const char *ifname)
{
	for (uint32_t g = 0; g < x->p->ngroups; g++)
		for (uint32_t i = 0; i < x->p->groups[g].n; i++)
			if (strcmp(x->p->groups[g].ifnames[i], ifname) == 0)
				return &x->p->groups[g];
	return NULL;
}
