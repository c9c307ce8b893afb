/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sets the daemon fills itself (feeds): countries from a MaxMind-format
 * database,
 *     eu: { country: [DE, FR], database: /var/lib/GeoIP/GeoLite2-Country.mmdb }
 * and host names resolved over DNS,
 *     updates: { hosts: [deb.debian.org], min-ttl: 30s, max-ttl: 1d, grace: 5m }
 * and the sources of Suricata's alerts,
 *     ids: { eve: /var/log/suricata/eve.json, severity: 2, timeout: 1h }
 * and lists fetched over HTTPS (Spamhaus DROP, FireHOL netsets),
 *     drop: { url: https://www.spamhaus.org/drop/drop_v4.json, refresh: 12h, ca: FILE }
 * All are dynamic sets: rules use them like any set, their entries change
 * at run time without a reload.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "policy/load/load.h"
#include "policy/syntax/parse.h"

#define FEED_DEFAULT_MIN_TTL  30
#define FEED_DEFAULT_MAX_TTL  86400
#define FEED_DEFAULT_GRACE    300
#define FEED_DEFAULT_SEVERITY 2
#define FEED_DEFAULT_BAN      3600
#define FEED_DEFAULT_REFRESH  (12 * 3600)

static void country_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct addr_set *s = arg;
	char cc[3], fix[200];

	if (policy_country_fix(n->str, fix, sizeof(fix)) >= 0) {
		diag_error(x->d, n->loc, "country '%s'" DIAG_FIX ": %s", n->str, fix);
		return;
	}
	if (strlen(n->str) != 2 || !isalpha((unsigned char)n->str[0]) || !isalpha((unsigned char)n->str[1])) {
		diag_error(x->d, n->loc, "country '%s'" DIAG_FIX ": give a two-letter ISO 3166 code, e.g. DE or US",
			   n->str);
		return;
	}
	cc[0] = (char)toupper((unsigned char)n->str[0]);
	cc[1] = (char)toupper((unsigned char)n->str[1]);
	cc[2] = '\0';
	/* a code no database has matches nothing: a block by country would
	 * let everything through */
	if (!policy_country_known(cc)) {
		diag_error(x->d, n->loc,
			   "country '%s' is no ISO 3166-1 code (nor XK or ZZ, which the databases also use): it would "
			   "match nothing",
			   n->str);
		return;
	}
	for (uint32_t i = 0; i < s->ncountries; i++)
		if (!strcmp(s->countries[i], cc))
			return;
	if (LX_APPEND(x, s->countries, s->ncountries))
		memcpy(s->countries[s->ncountries - 1], cc, 3);
}

static bool host_name_ok(const char *h)
{
	size_t n = strlen(h), label = 0;

	if (!n || n > 253 || h[0] == '.' || h[0] == '-')
		return false;
	for (const char *p = h; *p; p++) {
		if (*p == '.') {
			if (!label || p[-1] == '-')
				return false;
			label = 0;
		} else if (isalnum((unsigned char)*p) || *p == '-' || *p == '_') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	return true;
}

static void host_item(struct lx *x, const struct ynode *n, void *arg)
{
	struct addr_set *s = arg;
	char **h;

	if (!host_name_ok(n->str)) {
		diag_error(x->d, n->loc, "hosts: '%s' is not a host name (letters, digits, '-', dots)", n->str);
		return;
	}
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!strcasecmp(s->hosts[i], n->str))
			return; /* named twice: asked once */
	if (s->nhosts == POLICY_MAX_HOSTS) {
		diag_error(x->d, n->loc, "more than %d host names in one set", POLICY_MAX_HOSTS);
		return;
	}
	if ((h = LX_APPEND(x, s->hosts, s->nhosts)) && !(*h = strdup(n->str)))
		x->oom = true;
}

static uint32_t feed_duration(struct lx *x, const struct ynode *v, const char *what, uint32_t def)
{
	const char *why;
	uint64_t u;

	if (!v)
		return def;
	if (!lx_is(x, v, YNODE_SCALAR, what))
		return def;
	if (parse_duration(v->str, 7 * 86400, &u, &why) < 0) {
		diag_error(x->d, v->loc, "%s '%s': %s (1s to 7d)", what, v->str, why);
		return def;
	}
	return (uint32_t)u;
}

/* eve: PATH, severity: N, timeout: D */
static void load_eve(struct lx *x, struct addr_set *s, const struct ynode *v, const struct ynode *e)
{
	const struct ynode *t;
	const char *why;
	uint64_t u;

	s->feed = SET_FEED_EVE;
	s->severity = FEED_DEFAULT_SEVERITY;
	s->ban = FEED_DEFAULT_BAN;
	if (lx_is(x, e, YNODE_SCALAR, "eve"))
		s->eve = lx_path(x, e->str);
	if ((t = ynode_get(v, "severity")) && lx_uint(x, t, "severity", 1, 255, &u))
		s->severity = (uint32_t)u;
	if ((t = ynode_get(v, "timeout")) && lx_is(x, t, YNODE_SCALAR, "timeout")) {
		if (!strcmp(t->str, "0"))
			s->ban = 0;
		else if (parse_duration(t->str, POLICY_MAX_TIMEOUT, &u, &why) < 0)
			diag_error(x->d, t->loc, "timeout '%s': %s (at most 365 days; 0: until deleted)", t->str, why);
		else
			s->ban = (uint32_t)u;
	}
	for (const char *const *k =
		     (const char *const[]){ "country", "hosts", "database", "min-ttl", "max-ttl", "grace", NULL };
	     *k; k++)
		if ((t = ynode_get(v, *k)))
			diag_error(x->d, t->loc, "'%s' does not go with 'eve:' (a set is filled from one source)", *k);
}

/* url: https://..., refresh: D (default 12h, 5m to 7d), ca: FILE. */
static void load_url(struct lx *x, struct addr_set *s, const struct ynode *v, const struct ynode *u)
{
	const struct ynode *t;
	const char *why;
	uint64_t secs;

	s->feed = SET_FEED_URL;
	s->refresh = FEED_DEFAULT_REFRESH;
	if (!u || !lx_is(x, u, YNODE_SCALAR, "url")) {
		if (!u)
			diag_error(x->d, v->loc, "url: give the list's https:// address");
		return;
	}
	if (strncasecmp(u->str, "https://", 8) || !u->str[8] || strpbrk(u->str, " \t\r\n"))
		diag_error(x->d, u->loc,
			   "url '%s': give an https:// address (the list is fetched over TLS, its server verified)",
			   u->str);
	else if (!(s->url = strdup(u->str)))
		x->oom = true;
	if ((t = ynode_get(v, "refresh")) && lx_is(x, t, YNODE_SCALAR, "refresh")) {
		if (parse_duration(t->str, 7 * 86400, &secs, &why) < 0)
			diag_error(x->d, t->loc, "refresh '%s': %s (5m to 7d)", t->str, why);
		else if (secs < 300)
			diag_error(x->d, t->loc, "refresh '%s': too often for a list others serve (5m to 7d)", t->str);
		else
			s->refresh = (uint32_t)secs;
	}
	if ((t = ynode_get(v, "ca")) && lx_is(x, t, YNODE_SCALAR, "ca"))
		s->ca = lx_path(x, t->str);
	if ((t = ynode_get(v, "file")))
		diag_error(x->d, t->loc, "a set fetched from a URL gets its entries from there: drop 'file:'");
	for (const char *const *k = (const char *const[]){ "country", "hosts", "eve", NULL }; *k; k++)
		if ((t = ynode_get(v, *k)))
			diag_error(x->d, t->loc, "'%s' does not go with 'url:' (a set is filled from one source)", *k);
}

bool load_set_feed(struct lx *x, struct addr_set *s, const struct ynode *v)
{
	const struct ynode *c = ynode_get(v, "country"), *db = ynode_get(v, "database"), *h = ynode_get(v, "hosts");
	const struct ynode *t, *e = ynode_get(v, "eve"), *u = ynode_get(v, "url");

	if (u || ynode_has(v, "url")) {
		s->dynamic = true;
		s->families = POLICY_FAM_ANY;
		load_url(x, s, v, u);
		return true;
	}
	if ((t = ynode_get(v, "refresh")) || (t = ynode_get(v, "ca"))) {
		diag_error(x->d, t->loc, "'%s' belongs to a set with 'url:' (a list fetched over HTTPS)",
			   t == ynode_get(v, "refresh") ? "refresh" : "ca");
		return true;
	}

	if (e || ynode_has(v, "eve")) {
		s->dynamic = true;
		s->families = POLICY_FAM_ANY;
		if (!e)
			diag_error(x->d, v->loc, "eve: give the path of Suricata's eve.json");
		else
			load_eve(x, s, v, e);
		if ((t = ynode_get(v, "file")))
			diag_error(x->d, t->loc,
				   "a set of Suricata's offenders gets its entries from eve.json" DIAG_FIX
				   ": drop 'file:'");
		return true;
	}
	if ((t = ynode_get(v, "severity")) || (t = ynode_get(v, "timeout"))) {
		diag_error(x->d, t->loc, "'%s' belongs to a set with 'eve:' (Suricata's alerts)",
			   t == ynode_get(v, "severity") ? "severity" : "timeout");
		return true;
	}

	if (!c && !h && !ynode_has(v, "country") && !ynode_has(v, "hosts")) {
		if ((t = ynode_get(v, "database")) || (t = ynode_get(v, "min-ttl")) || (t = ynode_get(v, "max-ttl")) ||
		    (t = ynode_get(v, "grace"))) {
			diag_error(x->d, t->loc, "'%s' belongs to a set with %s", t == db ? "database" : "a TTL",
				   t == db ? "'country:'" : "'hosts:'");
			return true; /* said once, not again as a set of no kind */
		}
		return false;
	}
	s->dynamic = true;
	s->families = POLICY_FAM_ANY;
	if ((t = ynode_get(v, "file")))
		diag_error(x->d, t->loc, "a set of %s gets its entries from there" DIAG_FIX ": drop 'file:'",
			   c ? "countries" : "host names");
	if ((t = ynode_get(v, "dynamic")) && t->type == YNODE_SCALAR && !strcmp(t->str, "false"))
		diag_error(x->d, t->loc,
			   "a set of %s is dynamic (filled at run time)" DIAG_FIX ": drop 'dynamic: false'",
			   c ? "countries" : "host names");
	if (c && h) {
		diag_error(x->d, h->loc,
			   "a set is filled from countries or from host names, not both" DIAG_FIX ": make two sets");
		return true;
	}
	if (c || ynode_has(v, "country")) {
		s->feed = SET_FEED_COUNTRY;
		if (c && c->type == YNODE_SCALAR)
			country_item(x, c, s);
		else if (c)
			lx_each_scalar(x, c, "country", country_item, s);
		if (!s->ncountries && (!c || c->type != YNODE_SEQ || !c->nkids))
			diag_error(x->d, c ? c->loc : v->loc, "country: give at least one country, e.g. [DE, FR]");
		if (!db) {
			diag_error(x->d, c ? c->loc : v->loc,
				   "a set of countries needs 'database: PATH', a MaxMind-format file such as "
				   "/var/lib/GeoIP/GeoLite2-Country.mmdb (geoipupdate) or DB-IP's lite database");
		} else if (lx_is(x, db, YNODE_SCALAR, "database")) {
			s->database = lx_path(x, db->str);
			if (s->database && access(s->database, R_OK) < 0 && (s->feed_unreadable = true))
				diag_warn(x->d, db->loc,
					  "database '%s' cannot be read (%s): the set stays as it was (empty at first) "
					  "until it can; the daemon watches for it",
					  s->database, strerror(errno));
		}
		return true;
	}
	s->feed = SET_FEED_HOSTS;
	if (h && h->type == YNODE_SCALAR)
		host_item(x, h, s);
	else if (h)
		lx_each_scalar(x, h, "hosts", host_item, s);
	if (!s->nhosts && (!h || h->type != YNODE_SEQ || !h->nkids))
		diag_error(x->d, h ? h->loc : v->loc, "hosts: give at least one host name");
	s->min_ttl = feed_duration(x, ynode_get(v, "min-ttl"), "min-ttl", FEED_DEFAULT_MIN_TTL);
	s->max_ttl = feed_duration(x, ynode_get(v, "max-ttl"), "max-ttl", FEED_DEFAULT_MAX_TTL);
	s->grace =
		ynode_has(v, "grace") && (t = ynode_get(v, "grace")) && t->type == YNODE_SCALAR && !strcmp(t->str, "0")
			? 0
			: feed_duration(x, ynode_get(v, "grace"), "grace", FEED_DEFAULT_GRACE);
	if (s->min_ttl > s->max_ttl)
		diag_error(x->d, ynode_get(v, "min-ttl") ? ynode_get(v, "min-ttl")->loc : v->loc,
			   "min-ttl (%us) is above max-ttl (%us)", s->min_ttl, s->max_ttl);
	if ((t = ynode_get(v, "database")))
		diag_error(x->d, t->loc, "'database' belongs to a set with 'country:'");
	return true;
}
