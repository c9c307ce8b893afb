/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An etcd v3 client over etcd's JSON gateway (/v3/kv/range, /v3/kv/txn,
 * /v3/lease/..., /v3/watch), on libcurl and jansson: requests over TLS with
 * a client certificate, and a user's password for etcd's RBAC (the gateway
 * ignores a certificate's common name, and refuses a request whose
 * certificate has one: certificates for nfbox have none).
 *
 * Calls are synchronous, each bounded by the client's timeout, and try the
 * endpoints in turn from the one that last answered. Keys and values are
 * bytes (the gateway's base64 is this module's business). Functions return
 * 0 or a negative errno; the etcd or curl message of the last failure is
 * in e->err:
 *   -EHOSTUNREACH  no endpoint answered (connection refused, TLS, timeout)
 *   -ETIMEDOUT     etcd answered that the request timed out (no quorum)
 *   -EACCES        permission denied (RBAC), or the user's password refused
 *   -EPROTO        an answer that is not etcd's
 *   -EIO           any other error etcd gave
 */
#ifndef NFBOX_FLEET_ETCD_H
#define NFBOX_FLEET_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_MAX_ENDPOINTS 16

struct etcd_conf {
	char *endpoints[ETCD_MAX_ENDPOINTS]; /* "https://192.0.2.1:2379" */
	uint32_t nendpoints;
	char *cert, *key, *ca; /* PEM files */
	char *user;	       /* etcd user; NULL: no RBAC (etcd's auth not enabled) */
	char *password;	       /* read from the password file */
};

struct etcd {
	const struct etcd_conf *conf;
	void *curl;	    /* CURL * */
	uint32_t cur;	    /* the endpoint that last answered */
	char *token;	    /* etcd's auth token; NULL until authenticated */
	long timeout_ms;    /* of each request (default 3000) */
	bool fresh;	    /* the next request on a new connection (then false again) */
	const bool *cancel; /* when it turns true (another thread), a request ends at once */
	char err[512];
};

struct etcd_kv {
	char *key;
	char *value; /* NUL-terminated as well */
	size_t vlen;
	int64_t mod_rev, create_rev, lease;
};

struct etcd_kvs {
	struct etcd_kv *v;
	size_t n;
	int64_t rev; /* the store's revision when read */
};

int etcd_open(struct etcd *e, const struct etcd_conf *c);
void etcd_close(struct etcd *e);
void etcd_kvs_free(struct etcd_kvs *k);

/* The key, or every key under it (prefix). */
int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_kvs *out);
/* Keys from key up to end (NULL: key alone), as the store held them at
 * revision rev (0: now). */
struct etcd_span {
	const char *key, *end;
};
int etcd_get_span(struct etcd *e, const struct etcd_span *s, int64_t rev, struct etcd_kvs *out);
int etcd_put(struct etcd *e, const char *key, const char *val, size_t len, int64_t lease);

/* A transaction: if every compare holds, the operations; *ok says which. */
struct etcd_cmp {
	const char *key;
	int64_t mod_rev; /* the key's mod_revision must equal this (0: the key must not exist) */
};
struct etcd_op {
	bool del;
	bool prefix; /* del: every key under key */
	const char *key;
	const char *val;
	size_t len;
	int64_t lease;
};
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops, bool *ok,
	     int64_t *rev);

/* A new token for the fleet file's user (0 at once without a user). The
 * requests get one themselves when etcd refuses theirs; a watch cannot. */
int etcd_authenticate(struct etcd *e);

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id);
/* *ttl_left: what the lease has left; 0: it is gone. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left);
int etcd_lease_revoke(struct etcd *e, int64_t id);

/* A watch of the keys of n spans from revision from, on one stream:
 * events come to fn (del: a delete; kv->value empty then). fn returns 0,
 * or <0 to end it. */
struct etcd_event {
	bool del;
	struct etcd_kv kv;
};
typedef int (*etcd_watch_fn)(const struct etcd_event *ev, void *arg);
struct etcd_watch;
int etcd_watch_start(struct etcd *e, const struct etcd_span *spans, size_t n, int64_t from, etcd_watch_fn fn, void *arg,
		     struct etcd_watch **out);
/* Drive it up to timeout_ms, or until wake_fd (-1: none) is readable: 0
 * while it goes on; -ECANCELED when etcd ended it (the revision was
 * compacted: read again), -EKEYEXPIRED when etcd no longer knows the
 * token it was started with (etcd_authenticate, and start it again),
 * -EHOSTUNREACH when the stream broke, or fn's error. */
int etcd_watch_poll(struct etcd_watch *w, int timeout_ms, int wake_fd);
/* Driven until etcd has answered that it created each span's watch: 0;
 * -ETIMEDOUT after timeout_ms; else as etcd_watch_poll. */
int etcd_watch_ready(struct etcd_watch *w, int timeout_ms);
void etcd_watch_free(struct etcd_watch *w);

/* A watch's stream as it arrives: the JSON objects in it, each ended by a
 * newline, each given whole to fn once (fn's negative answer ends the
 * feed and is returned; -ENOMEM: no room). What is not whole stays for the
 * next piece; an object that arrives in many pieces is parsed about once
 * (parses counts json_loadb's calls: the tests read it). */
struct json_t;
struct etcd_stream {
	char *p;
	size_t n, cap;
	size_t used;  /* of p: objects already given */
	size_t tried; /* where the last parse that found the object not whole ended (0: none) */
	unsigned long parses;
};
int etcd_stream_feed(struct etcd_stream *s, const char *data, size_t n, int (*fn)(void *arg, struct json_t *o),
		     void *arg);
void etcd_stream_free(struct etcd_stream *s);

/* Base64 as the gateway writes it: a new string; decode NULL if s is not
 * base64 (*len: the bytes, which are also NUL-terminated). */
char *etcd_b64_encode(const char *s, size_t len);
char *etcd_b64_decode(const char *s, size_t *len);

/* Key bytes just past every key under prefix (range_end), into buf. */
void etcd_prefix_end(const char *prefix, char *buf, size_t len);

#endif
