/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The fleet file (conf.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "fleet/conf.h"
#include "policy/syntax/parse.h"
#include "policy/yaml/ytree.h"

bool fleet_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > FLEET_MAX_NAME || s[0] == '.')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

void fleet_key(const struct fleet_conf *c, const char *group, const char *what, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s", c->prefix, group, what);
}

struct reader {
	const char *dir; /* of the fleet file */
	struct diags *d;
	bool trust;
};

static const struct ynode *scalar(struct reader *r, const struct ynode *map, const char *key, bool required)
{
	const struct ynode *n = ynode_get(map, key);

	if (!n) {
		if (required)
			diag_error(r->d, map->loc, "'%s:' is missing", key);
		return NULL;
	}
	if (n->type != YNODE_SCALAR || !n->len) {
		diag_error(r->d, n->loc, "'%s:' must be a single value", key);
		return NULL;
	}
	return n;
}

static char *path_of(struct reader *r, const struct ynode *n)
{
	char *p = NULL;

	if (!n)
		return NULL;
	if (n->str[0] == '/')
		p = strdup(n->str);
	else if (asprintf(&p, "%s/%s", r->dir, n->str) < 0)
		p = NULL;
	if (p && access(p, R_OK) < 0)
		diag_error(r->d, n->loc, "'%s' cannot be read: %s", p, strerror(errno));
	return p;
}

static char *name_of(struct reader *r, const struct ynode *n, const char *what)
{
	if (!n)
		return NULL;
	if (!fleet_name_ok(n->str)) {
		diag_error(r->d, n->loc, "%s '%s': use 1 to %d letters, digits, '-', '_' or '.'", what, n->str,
			   FLEET_MAX_NAME);
		return NULL;
	}
	return strdup(n->str);
}

/* The password: the file's first line, which only root may read. */
static char *read_password(struct reader *r, const struct ynode *n)
{
	_cleanup_free_ char *path = path_of(r, n);
	char line[512] = "";
	struct stat st;
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return NULL;
	if (!r->trust && fstat(fileno(f), &st) == 0 && (st.st_uid != geteuid() || (st.st_mode & 077)))
		diag_error(r->d, n->loc,
			   "password file '%s' %s: chown root %s && chmod 600 %s (or --allow-unsafe-files)", path,
			   st.st_uid != geteuid() ? "is not owned by root" : "may be read by others", path, path);
	if (!fgets(line, sizeof(line), f))
		diag_error(r->d, n->loc, "password file '%s' is empty", path);
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	return strdup(line);
}

static void read_endpoints(struct reader *r, const struct ynode *etcd, struct etcd_conf *c)
{
	const struct ynode *ep = ynode_get(etcd, "endpoints");

	if (!ep) {
		diag_error(r->d, etcd->loc, "'endpoints:' is missing: give etcd's client URLs, [https://HOST:2379]");
		return;
	}
	if (ep->type != YNODE_SEQ || !ep->nkids) {
		diag_error(r->d, ep->loc, "'endpoints:' must be a list of URLs, [https://HOST:2379]");
		return;
	}
	for (size_t i = 0; i < ep->nkids; i++) {
		const struct ynode *u = ep->kids[i];

		if (u->type != YNODE_SCALAR || strncmp(u->str, "https://", 8)) {
			diag_error(r->d, u->loc, "an endpoint is an https:// URL (nfbox speaks to etcd over TLS only)");
			continue;
		}
		if (c->nendpoints == ETCD_MAX_ENDPOINTS) {
			diag_error(r->d, u->loc, "more than %d endpoints", ETCD_MAX_ENDPOINTS);
			return;
		}
		c->endpoints[c->nendpoints++] = strdup(u->str);
	}
}

static void read_etcd(struct reader *r, const struct ynode *etcd, struct fleet_conf *c)
{
	static const char *const keys[] = { "endpoints", "cert", "key", "ca", "user", "password-file", NULL };
	const struct ynode *u;

	for (size_t i = 0; i < ynode_map_len(etcd); i++) {
		const struct ynode *k = ynode_map_key(etcd, i);
		size_t j = 0;

		while (keys[j] && strcmp(keys[j], k->str))
			j++;
		if (!keys[j])
			diag_error(r->d, k->loc,
				   "unknown key '%s' in etcd: (endpoints, cert, key, ca, user, password-file)", k->str);
	}
	read_endpoints(r, etcd, &c->etcd);
	c->etcd.cert = path_of(r, scalar(r, etcd, "cert", true));
	c->etcd.key = path_of(r, scalar(r, etcd, "key", true));
	c->etcd.ca = path_of(r, scalar(r, etcd, "ca", true));
	if ((u = scalar(r, etcd, "user", false)))
		c->etcd.user = strdup(u->str);
	else if (c->node)
		c->etcd.user = strdup(c->node);
	if (c->etcd.user && !ynode_get(etcd, "password-file"))
		diag_error(r->d, etcd->loc, "'password-file:' is missing: etcd's RBAC needs user %s's password",
			   c->etcd.user);
	else
		c->etcd.password = read_password(r, scalar(r, etcd, "password-file", false));
}

/* share-window: "0", or a duration up to FLEET_SHARE_WINDOW_MAX_MS. */
static void read_window(struct reader *r, const struct ynode *n, struct fleet_conf *c)
{
	const char *why = NULL;
	uint64_t ms = FLEET_SHARE_WINDOW_MS;

	if (n && !strcmp(n->str, "0"))
		ms = 0;
	else if (n && parse_duration_ms(n->str, FLEET_SHARE_WINDOW_MAX_MS, &ms, &why) < 0)
		diag_error(r->d, n->loc, "share-window '%s': %s (0, or a time such as 200ms, up to %ums)", n->str,
			   why ? why : "not a time", FLEET_SHARE_WINDOW_MAX_MS);
	c->share_window_ms = (uint32_t)ms;
}

static void read_top(struct reader *r, const struct ynode *root, struct fleet_conf *c)
{
	static const char *const keys[] = { "etcd", "node", "group", "prefix", "share-window", NULL };
	const struct ynode *etcd = ynode_get(root, "etcd"), *p;

	for (size_t i = 0; i < ynode_map_len(root); i++) {
		const struct ynode *k = ynode_map_key(root, i);
		size_t j = 0;

		while (keys[j] && strcmp(keys[j], k->str))
			j++;
		if (!keys[j])
			diag_error(r->d, k->loc, "unknown key '%s' (etcd, node, group, prefix, share-window)", k->str);
	}
	c->node = name_of(r, scalar(r, root, "node", false), "node");
	c->group = name_of(r, scalar(r, root, "group", false), "group");
	if ((p = scalar(r, root, "prefix", false)) && (p->str[0] != '/' || p->str[p->len - 1] == '/'))
		diag_error(r->d, p->loc, "prefix '%s': a key prefix starts with '/' and does not end with one", p->str);
	c->prefix = strdup(p ? p->str : "/nfbox");
	read_window(r, scalar(r, root, "share-window", false), c);
	if (!etcd)
		diag_error(r->d, root->loc, "'etcd:' is missing");
	else if (etcd->type != YNODE_MAP)
		diag_error(r->d, etcd->loc, "'etcd:' must be a map (endpoints, cert, key, ca, user, password-file)");
	else
		read_etcd(r, etcd, c);
}

int fleet_conf_load(const char *path, bool trust_files, struct diags *d, struct fleet_conf *out)
{
	_cleanup_free_ char *copy = strdup(path);
	struct fleet_conf c = { 0 };
	struct sources srcs = { 0 };
	struct source *src;
	struct ytree t = { 0 };
	struct reader r = { .d = d, .trust = trust_files };
	size_t errors = d->errors;
	int err;

	if (!copy)
		return -ENOMEM;
	r.dir = dirname(copy);
	if ((err = sources_load(&srcs, path, &src)) < 0)
		return diag_errno(d, err, "fleet file %s", path);
	if (ytree_parse(&t, src, d) == 0) {
		if (!t.root || t.root->type != YNODE_MAP)
			diag_error(d, (struct loc){ .src = src, .line = 1, .col = 1 },
				   "a fleet file is a map: etcd:, node:, group:");
		else
			read_top(&r, t.root, &c);
	}
	ytree_free(&t);
	/* the diagnostics copied what they show: the source may go */
	sources_free(&srcs);
	c.path = strdup(path);
	if (d->errors > errors) {
		fleet_conf_free(&c);
		return -EINVAL;
	}
	*out = c;
	return 0;
}

void fleet_conf_free(struct fleet_conf *c)
{
	for (uint32_t i = 0; i < c->etcd.nendpoints; i++)
		free(c->etcd.endpoints[i]);
	free(c->etcd.cert);
	free(c->etcd.key);
	free(c->etcd.ca);
	free(c->etcd.user);
	if (c->etcd.password)
		explicit_bzero(c->etcd.password, strlen(c->etcd.password));
	free(c->etcd.password);
	free(c->node);
	free(c->group);
	free(c->prefix);
	free(c->path);
	memset(c, 0, sizeof(*c));
}
