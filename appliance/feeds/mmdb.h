/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Country sets (mmdb.c): the networks a MaxMind-format database (MMDB:
 * GeoLite2-Country, DB-IP lite, ...) gives to any of a list of countries,
 * read with libmaxminddb by walking its search tree. The file is mapped:
 * a new database must be renamed over the old one (as geoipupdate does),
 * not rewritten in place under the daemon.
 */
#ifndef NFBOX_FEEDS_MMDB_H
#define NFBOX_FEEDS_MMDB_H

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* The prefixes of path whose country (the record's country.iso_code,
 * else registered_country.iso_code) is one of cc[0..ncc) (two upper-case
 * letters each): *out malloc'd, *n of them; adjacent networks are not
 * merged. 0, or -errno with the reason in why (not readable, not an MMDB,
 * corrupt). */
int mmdb_country_prefixes(const char *path, const char (*cc)[3], uint32_t ncc, struct prefix **out, uint32_t *n,
			  char *why, size_t len);

#endif
