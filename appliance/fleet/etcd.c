/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* An etcd v3 client over its JSON gateway (etcd.h). */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "fleet/etcd.h"
#include "lib/plant.h"

#define ETCD_MAX_ANSWER (64u << 20) /* a range of a group's keys stays far below */

/* gRPC status codes the gateway puts in "code" */
enum {
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE = 4,
	GRPC_PERMISSION = 7,
	GRPC_UNAVAILABLE = 14,
	GRPC_UNAUTHENTICATED = 16
};

struct buf {
	char *p;
	size_t n, cap;
};

static size_t buf_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t len = size * nmemb;

	if (b->n + len + 1 > ETCD_MAX_ANSWER)
		return 0;
	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *np = realloc(b->p, cap);

		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	b->p[b->n] = '\0';
	return len;
}

/* ---- base64 (the gateway's bytes) ---- */

char *etcd_b64_encode(const char *s, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)len);
	return out;
}

char *etcd_b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *out = malloc(3 * (n / 4) + 1);
	int k;

	if (!out || n % 4)
		return free(out), NULL;
	if ((k = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n)) < 0)
		return free(out), NULL;
	/* EVP_DecodeBlock counts the padding's bytes too */
	while (n && s[n - 1] == '=' && k > 0) {
		n--;
		k--;
	}
	out[k] = '\0';
	*len = (size_t)k;
	return out;
}

void etcd_prefix_end(const char *prefix, char *buf, size_t len)
{
	size_t n = strlen(prefix);

	snprintf(buf, len, "%s", prefix);
	/* the last byte that is not 0xff, plus one, ends the range */
	while (n && (unsigned char)buf[n - 1] == 0xff)
		buf[--n] = '\0';
	if (n)
		buf[n - 1]++;
	else
		snprintf(buf, len, "%c", 0); /* the whole key space */
}

/* ---- JSON ---- */

/* The gateway writes 64-bit numbers as strings. */
static int64_t jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

static int kv_from_json(const json_t *o, struct etcd_kv *kv)
{
	const char *k = json_string_value(json_object_get(o, "key"));
	const char *v = json_string_value(json_object_get(o, "value"));
	size_t klen = 0;

	memset(kv, 0, sizeof(*kv));
	if (!k || !(kv->key = etcd_b64_decode(k, &klen)))
		return -EPROTO;
	if (!(kv->value = v ? etcd_b64_decode(v, &kv->vlen) : strdup(""))) {
		free(kv->key);
		return -EPROTO;
	}
	kv->mod_rev = jnum(o, "mod_revision");
	kv->create_rev = jnum(o, "create_revision");
	kv->lease = jnum(o, "lease");
	return 0;
}

static void kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

void etcd_kvs_free(struct etcd_kvs *k)
{
	for (size_t i = 0; i < k->n; i++)
		kv_free(&k->v[i]);
	free(k->v);
	memset(k, 0, sizeof(*k));
}

/* An error answer as -errno, its text in err. etcd 3.4's gateway writes
 * {"error": TEXT, "message": TEXT, "code": N}, 3.5's {"code": N, "message":
 * TEXT} (no "error"); a watch's error is {"error": {"grpc_code" (3.4) or
 * "code" (3.5): N, "message": TEXT}}. */
static int answer_error(struct etcd *e, const json_t *o)
{
	const json_t *er = json_object_get(o, "error");
	const char *msg = json_string_value(json_object_get(o, "message"));
	int code = (int)jnum(o, "code");

	if (json_is_object(er)) {
		msg = json_string_value(json_object_get(er, "message"));
		code = (int)(jnum(er, "grpc_code") ? jnum(er, "grpc_code") : jnum(er, "code"));
	}
	if (!er && !code)
		return 0;
	snprintf(e->err, sizeof(e->err), "%s", msg ? msg : json_is_string(er) ? json_string_value(er) : "error");
	switch (code) {
	case GRPC_PERMISSION:
		return -EACCES;
	case GRPC_UNAUTHENTICATED:
		return -EKEYEXPIRED; /* the token: authenticate again */
	case GRPC_INVALID_ARGUMENT:
		return strstr(e->err, "authentication failed") ? -EACCES : -EIO;
	case GRPC_DEADLINE:
	case GRPC_UNAVAILABLE:
		return -ETIMEDOUT;
	default:
		return strstr(e->err, "timed out") || strstr(e->err, "no leader") ? -ETIMEDOUT : -EIO;
	}
}

/* ---- requests ---- */

static const char *endpoint(const struct etcd *e, uint32_t i)
{
	return e->conf->endpoints[(e->cur + i) % e->conf->nendpoints];
}

/* libcurl asks this while a transfer runs: non-zero ends it */
static int cancelled(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const bool *cancel = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED);
}

static void setup_tls(const struct etcd *e, CURL *h)
{
	const struct etcd_conf *c = e->conf;

	if (c->ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
	if (c->cert)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
	if (c->key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	if (e->cancel) {
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cancelled);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)e->cancel);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	}
}

static struct curl_slist *headers(const struct etcd *e)
{
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	char auth[600];

	if (e->token && hl) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		hl = curl_slist_append(hl, auth);
	}
	return hl;
}

/* One endpoint's failure, added to e->err ("A: why; B: why"). */
static void add_err(struct etcd *e, uint32_t i, const char *why)
{
	size_t n = strlen(e->err);

	snprintf(e->err + n, sizeof(e->err) - n, "%s%s: %s", n ? "; " : "", endpoint(e, i), why);
}

/* POST body to path at the endpoints in turn: the answer's JSON;
 * -ETIMEDOUT when an endpoint took the request but did not answer in time
 * (a member without quorum holds what it cannot commit), -EHOSTUNREACH
 * when none could be reached. */
static int post_raw(struct etcd *e, const char *path, const char *body, json_t **out)
{
	CURL *h = e->curl;
	int r = -EHOSTUNREACH;
	bool held = false;

	e->err[0] = '\0';
	for (uint32_t i = 0; i < e->conf->nendpoints; i++) {
		_cleanup_free_ char *url = NULL;
		struct buf b = { 0 };
		struct curl_slist *hl = headers(e);
		json_error_t je;
		CURLcode cc;

		if (!hl || asprintf(&url, "%s%s", endpoint(e, i), path) < 0) {
			curl_slist_free_all(hl);
			return -ENOMEM;
		}
		curl_easy_reset(h);
		setup_tls(e, h);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, e->timeout_ms);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms < 1500 ? e->timeout_ms : 1500L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		if (e->fresh) {
			curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
			curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
		}
		cc = curl_easy_perform(h);
		curl_slist_free_all(hl);
		if (cc != CURLE_OK) {
			double connect = 0;

			curl_easy_getinfo(h, CURLINFO_APPCONNECT_TIME, &connect);
			if (cc == CURLE_OPERATION_TIMEDOUT && connect > 0) {
				held = true;
				add_err(e, i, "took the request, no answer in time");
			} else {
				add_err(e, i, curl_easy_strerror(cc));
			}
			free(b.p);
			continue;
		}
		*out = b.p ? json_loadb(b.p, b.n, 0, &je) : NULL;
		if (!*out || !json_is_object(*out)) {
			char why[128];

			snprintf(why, sizeof(why), "not an answer of etcd's: %.80s", b.p ? b.p : "(nothing)");
			add_err(e, i, why);
			json_decref(*out);
			free(b.p);
			r = -EPROTO;
			continue;
		}
		free(b.p);
		e->cur = (e->cur + i) % e->conf->nendpoints;
		e->fresh = false;
		return 0;
	}
	return held && r == -EHOSTUNREACH ? -ETIMEDOUT : r;
}

static int authenticate(struct etcd *e)
{
	_cleanup_free_ char *body = NULL;
	json_t *req, *ans = NULL;
	const char *tok;
	int r;

	free(e->token);
	e->token = NULL;
	req = json_pack("{s:s, s:s}", "name", e->conf->user, "password", e->conf->password ? e->conf->password : "");
	if (!req || !(body = json_dumps(req, JSON_COMPACT)))
		return json_decref(req), -ENOMEM;
	json_decref(req);
	if ((r = post_raw(e, "/v3/auth/authenticate", body, &ans)) < 0)
		return r;
	if ((r = answer_error(e, ans)) < 0) {
		json_decref(ans);
		if (r == -EACCES || r == -EIO)
			snprintf(e->err + strlen(e->err), sizeof(e->err) - strlen(e->err),
				 " (user '%s': check its password file)", e->conf->user);
		return r == -EIO ? -EACCES : r;
	}
	tok = json_string_value(json_object_get(ans, "token"));
	e->token = tok ? strdup(tok) : NULL;
	json_decref(ans);
	return e->token ? 0 : -EPROTO;
}

int etcd_authenticate(struct etcd *e)
{
	return e->conf->user ? authenticate(e) : 0;
}

/* POST req (consumed) to path; the answer in *out (NULL: not wanted). */
static int call(struct etcd *e, const char *path, json_t *req, json_t **out)
{
	_cleanup_free_ char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_t *ans = NULL;
	int r;

	json_decref(req);
	if (!body)
		return -ENOMEM;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (e->conf->user && !e->token && (r = authenticate(e)) < 0)
			return r;
		if ((r = post_raw(e, path, body, &ans)) < 0)
			return r;
		r = answer_error(e, ans);
		if (r != -EKEYEXPIRED)
			break;
		json_decref(ans);
		ans = NULL;
		free(e->token);
		e->token = NULL;
	}
	if (r == -EKEYEXPIRED)
		r = -EACCES;
	if (r < 0 || !out)
		json_decref(ans);
	else
		*out = ans;
	return r;
}

int etcd_open(struct etcd *e, const struct etcd_conf *c)
{
	static bool inited;

	if (!inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		inited = true;
	}
	memset(e, 0, sizeof(*e));
	if (!c->nendpoints)
		return -EINVAL;
	e->conf = c;
	e->timeout_ms = 3000;
	return (e->curl = curl_easy_init()) ? 0 : -ENOMEM;
}

void etcd_close(struct etcd *e)
{
	if (e->curl)
		curl_easy_cleanup(e->curl);
	free(e->token);
	e->curl = NULL;
	e->token = NULL;
}

/* {"key": b64, "range_end": b64} for key alone (end NULL) or [key, end) */
static json_t *key_span(const char *key, const char *end)
{
	_cleanup_free_ char *k = etcd_b64_encode(key, strlen(key)), *e = NULL;
	json_t *o;

	if (!k)
		return NULL;
	if (!(o = json_pack("{s:s}", "key", k)))
		return NULL;
	if (end &&
	    (!(e = etcd_b64_encode(end, strlen(end))) || json_object_set_new(o, "range_end", json_string(e)) < 0))
		return json_decref(o), NULL;
	return o;
}

/* ... for key or every key under it */
static json_t *key_range(const char *key, bool prefix)
{
	char pe[1024];

	if (prefix)
		etcd_prefix_end(key, pe, sizeof(pe));
	return key_span(key, prefix ? pe : NULL);
}

static int kvs_from_answer(const json_t *ans, struct etcd_kvs *out)
{
	const json_t *kvs = json_object_get(ans, "kvs");
	size_t n = json_array_size(kvs);

	memset(out, 0, sizeof(*out));
	out->rev = jnum(json_object_get(ans, "header"), "revision");
	if (!n)
		return 0;
	if (!(out->v = calloc(n, sizeof(*out->v))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (kv_from_json(json_array_get(kvs, i), &out->v[out->n]) < 0) {
			etcd_kvs_free(out);
			return -EPROTO;
		}
		out->n++;
	}
	return 0;
}

static int get_request(struct etcd *e, json_t *req, struct etcd_kvs *out)
{
	json_t *ans = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	if ((r = call(e, "/v3/kv/range", req, &ans)) < 0)
		return r;
	r = kvs_from_answer(ans, out);
	json_decref(ans);
	return r;
}

int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_kvs *out)
{
	return get_request(e, key_range(key, prefix), out);
}

int etcd_get_span(struct etcd *e, const struct etcd_span *s, int64_t rev, struct etcd_kvs *out)
{
	json_t *req = key_span(s->key, s->end);
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, rev);
	if (req && rev && json_object_set_new(req, "revision", json_string(num)) < 0)
		return json_decref(req), -ENOMEM;
	return get_request(e, req, out);
}

static json_t *put_request(const char *key, const char *val, size_t len, int64_t lease)
{
	_cleanup_free_ char *k = etcd_b64_encode(key, strlen(key)), *v = etcd_b64_encode(val, len);
	char ls[32];

	if (!k || !v)
		return NULL;
	snprintf(ls, sizeof(ls), "%" PRId64, lease);
	return lease ? json_pack("{s:s, s:s, s:s}", "key", k, "value", v, "lease", ls)
		     : json_pack("{s:s, s:s}", "key", k, "value", v);
}

int etcd_put(struct etcd *e, const char *key, const char *val, size_t len, int64_t lease)
{
	json_t *req = put_request(key, val, len, lease);

	return req ? call(e, "/v3/kv/put", req, NULL) : -ENOMEM;
}

static json_t *txn_op(const struct etcd_op *op)
{
	json_t *in = op->del ? key_range(op->key, op->prefix) : put_request(op->key, op->val, op->len, op->lease);

	return in ? json_pack("{s:o}", op->del ? "request_delete_range" : "request_put", in) : NULL;
}

static json_t *txn_cmp(const struct etcd_cmp *c)
{
	_cleanup_free_ char *k = etcd_b64_encode(c->key, strlen(c->key));
	char rev[32];

	if (!k)
		return NULL;
	snprintf(rev, sizeof(rev), "%" PRId64, c->mod_rev);
	return json_pack("{s:s, s:s, s:s, s:s}", "key", k, "target", "MOD", "result", "EQUAL", "mod_revision", rev);
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ops, size_t nops, bool *ok,
	     int64_t *rev)
{
	json_t *req = json_pack("{s:[], s:[]}", "compare", "success"), *ans = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	for (size_t i = 0; i < ncmp; i++)
		if (json_array_append_new(json_object_get(req, "compare"), txn_cmp(&cmp[i])) < 0)
			return json_decref(req), -ENOMEM;
	for (size_t i = 0; i < nops; i++)
		if (json_array_append_new(json_object_get(req, "success"), txn_op(&ops[i])) < 0)
			return json_decref(req), -ENOMEM;
	if ((r = call(e, "/v3/kv/txn", req, &ans)) < 0)
		return r;
	*ok = json_is_true(json_object_get(ans, "succeeded"));
	if (rev)
		*rev = jnum(json_object_get(ans, "header"), "revision");
	json_decref(ans);
	return 0;
}

/* A lease's request: {key: "v"} to path; *out the number at field of the
 * answer (under "result" for a keepalive). */
static int lease_call(struct etcd *e, const char *path, const char *key, int64_t v, bool result, const char *field,
		      int64_t *out)
{
	char num[32];
	json_t *ans = NULL;
	int r;

	snprintf(num, sizeof(num), "%" PRId64, v);
	if ((r = call(e, path, json_pack("{s:s}", key, num), &ans)) < 0)
		return r;
	*out = jnum(result ? json_object_get(ans, "result") : ans, field);
	json_decref(ans);
	return 0;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id)
{
	int r = lease_call(e, "/v3/lease/grant", "TTL", ttl_s, false, "ID", id);

	return r < 0 ? r : *id ? 0 : -EPROTO;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left)
{
	/* {"result": {"ID": ..., "TTL": ...}}; no TTL: the lease is gone */
	return lease_call(e, "/v3/lease/keepalive", "ID", id, true, "TTL", ttl_left);
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	char ids[32];

	snprintf(ids, sizeof(ids), "%" PRId64, id);
	return call(e, "/v3/lease/revoke", json_pack("{s:s}", "ID", ids), NULL);
}

/* ---- watch ---- */

struct etcd_watch {
	struct etcd *e;
	CURLM *m;
	CURL *h;
	struct curl_slist *hl;
	char *body;
	struct etcd_stream s;
	etcd_watch_fn fn;
	void *arg;
	size_t spans, created; /* its watches, and those etcd said it created */
	int err;	       /* what ended it, from the callbacks */
};

/* One answer of the stream: its events to fn. */
static int watch_answer(struct etcd_watch *w, const json_t *o)
{
	const json_t *res = json_object_get(o, "result"), *evs;
	bool compacted;
	int r;

	if ((r = answer_error(w->e, o)) < 0)
		return r;
	if (!res)
		return 0;
	if (json_is_true(json_object_get(res, "created")))
		w->created++;
	compacted = jnum(res, "compact_revision") != 0;
	if (compacted || json_is_true(json_object_get(res, "canceled"))) {
		const char *why = json_string_value(json_object_get(res, "cancel_reason"));

		snprintf(w->e->err, sizeof(w->e->err), "etcd ended the watch (%s)",
			 compacted     ? "its revision was compacted"
			 : why && *why ? why
				       : "cancelled");
		/* the token it was started with is unknown to etcd: a
		 * member restarted since it was given, or its time ended */
		return !compacted && why && strstr(why, "Unauthenticated") ? -EKEYEXPIRED : -ECANCELED;
	}
	evs = json_object_get(res, "events");
	for (size_t i = 0; i < json_array_size(evs); i++) {
		const json_t *ev = json_array_get(evs, i);
		const char *type = json_string_value(json_object_get(ev, "type"));
		struct etcd_event x = { .del = type && !strcmp(type, "DELETE") };

		if (kv_from_json(json_object_get(ev, "kv"), &x.kv) < 0)
			return -EPROTO;
		r = w->fn(&x, w->arg);
		kv_free(&x.kv);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The stream is JSON objects one after another, each ended by a newline
 * (the gateway's delimiter). An answer of many events comes in many
 * pieces: it is parsed again only once a line has ended after the last
 * try, or what there is of it has doubled, so that it is parsed about
 * once, not once a piece (a node spent 20 us of CPU on each of 10,000
 * shared entries so). */
int etcd_stream_feed(struct etcd_stream *s, const char *data, size_t n, int (*fn)(void *arg, json_t *o), void *arg)
{
	struct buf b = { s->p, s->n, s->cap };
	size_t len = buf_write((char *)data, 1, n, &b);
	int r = 0;

	s->p = b.p;
	s->n = b.n;
	s->cap = b.cap;
	if (len != n)
		return -ENOMEM;
	while (s->used < s->n) {
		json_error_t je;
		json_t *o;
		size_t start = s->used + strspn(s->p + s->used, " \t\r\n");

		if (start == s->n) {
			s->used = s->n;
			break;
		}
		if (s->tried > start && !planted("etcd-parse-each-piece") &&
		    !memchr(s->p + s->tried, '\n', s->n - s->tried) && s->n - start < 2 * (s->tried - start))
			break;
		s->parses++;
		if (!(o = json_loadb(s->p + start, s->n - start, JSON_DISABLE_EOF_CHECK, &je))) {
			s->tried = s->n; /* not whole yet */
			break;
		}
		s->tried = 0;
		s->used = start + (size_t)je.position;
		r = fn(arg, o);
		json_decref(o);
		if (r < 0)
			return r;
	}
	if (s->used == s->n) {
		s->n = s->used = s->tried = 0;
	} else if (s->used > (1u << 20)) {
		memmove(s->p, s->p + s->used, s->n - s->used);
		s->n -= s->used;
		s->tried = s->tried > s->used ? s->tried - s->used : 0;
		s->used = 0;
	}
	return 0;
}

void etcd_stream_free(struct etcd_stream *s)
{
	free(s->p);
	*s = (struct etcd_stream){ 0 };
}

static int watch_object(void *arg, json_t *o)
{
	struct etcd_watch *w = arg;

	return w->err = watch_answer(w, o);
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct etcd_watch *w = arg;

	return etcd_stream_feed(&w->s, data, size * nmemb, watch_object, w) < 0 ? 0 : size * nmemb;
}

/* The stream's body: a create_request for each span, one after another
 * (the gateway sends each on one gRPC stream, and etcd keeps the watches
 * once the body ends). */
static char *watch_body(const struct etcd_span *spans, size_t n, int64_t from)
{
	char *body = strdup(""), rev[32];

	snprintf(rev, sizeof(rev), "%" PRId64, from);
	for (size_t i = 0; body && i < n; i++) {
		json_t *req = key_span(spans[i].key, spans[i].end);
		_cleanup_free_ char *one = NULL;
		char *nb = NULL;

		if (req && json_object_set_new(req, "start_revision", json_string(rev)) == 0)
			one = json_dumps(json_pack("{s:o}", "create_request", req), JSON_COMPACT);
		else
			json_decref(req);
		if (!one || asprintf(&nb, "%s%s", body, one) < 0)
			nb = NULL;
		free(body);
		body = nb;
	}
	return body;
}

/* A watch's connection ends after 3 unanswered keepalive probes (the
 * kernel's default is 9): with idle 2 s and 1 s between probes, a member
 * lost is seen within about 5 s, with no request to etcd. */
static int watch_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	int cnt = 3;

	(void)arg;
	if (purpose == CURLSOCKTYPE_IPCXN && setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0) {
		/* the default count stays: seen later */
	}
	return CURL_SOCKOPT_OK;
}

int etcd_watch_start(struct etcd *e, const struct etcd_span *spans, size_t n, int64_t from, etcd_watch_fn fn, void *arg,
		     struct etcd_watch **out)
{
	_cleanup_free_ char *url = NULL;
	struct etcd_watch *w;

	if (!(w = calloc(1, sizeof(*w))))
		return -ENOMEM;
	w->e = e;
	w->fn = fn;
	w->arg = arg;
	w->spans = n;
	w->body = watch_body(spans, n, from);
	if (!w->body || !(w->m = curl_multi_init()) || !(w->h = curl_easy_init()) || !(w->hl = headers(e)) ||
	    asprintf(&url, "%s/v3/watch", endpoint(e, 0)) < 0) {
		etcd_watch_free(w);
		return -ENOMEM;
	}
	setup_tls(e, w->h);
	curl_easy_setopt(w->h, CURLOPT_URL, url);
	curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, w->hl);
	curl_easy_setopt(w->h, CURLOPT_POSTFIELDS, w->body);
	curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, 1500L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPIDLE, 2L);
	curl_easy_setopt(w->h, CURLOPT_TCP_KEEPINTVL, 1L);
	curl_easy_setopt(w->h, CURLOPT_SOCKOPTFUNCTION, watch_sockopt);
	curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, watch_write);
	curl_easy_setopt(w->h, CURLOPT_WRITEDATA, w);
	curl_multi_add_handle(w->m, w->h);
	*out = w;
	return 0;
}

int etcd_watch_poll(struct etcd_watch *w, int timeout_ms, int wake_fd)
{
	struct curl_waitfd extra = { .fd = wake_fd, .events = CURL_WAIT_POLLIN };
	int running = 0, left;
	CURLMsg *msg;

	curl_multi_poll(w->m, wake_fd >= 0 ? &extra : NULL, wake_fd >= 0 ? 1 : 0, timeout_ms, NULL);
	curl_multi_perform(w->m, &running);
	while ((msg = curl_multi_info_read(w->m, &left)))
		if (msg->msg == CURLMSG_DONE) {
			if (w->err < 0)
				return w->err;
			snprintf(w->e->err, sizeof(w->e->err), "the watch ended: %s",
				 curl_easy_strerror(msg->data.result));
			return -EHOSTUNREACH;
		}
	return w->err < 0 ? w->err : 0;
}

int etcd_watch_ready(struct etcd_watch *w, int timeout_ms)
{
	int64_t end = clock_ms(CLOCK_MONOTONIC) + timeout_ms, left;
	int r;

	while (w->created < w->spans) {
		if ((left = end - clock_ms(CLOCK_MONOTONIC)) <= 0) {
			snprintf(w->e->err, sizeof(w->e->err), "%s: no answer to the watch within %d ms",
				 endpoint(w->e, 0), timeout_ms);
			return -ETIMEDOUT;
		}
		if ((r = etcd_watch_poll(w, (int)(left < 100 ? left : 100), -1)) < 0)
			return r;
	}
	return 0;
}

void etcd_watch_free(struct etcd_watch *w)
{
	if (!w)
		return;
	if (w->m && w->h)
		curl_multi_remove_handle(w->m, w->h);
	if (w->h)
		curl_easy_cleanup(w->h);
	if (w->m)
		curl_multi_cleanup(w->m);
	curl_slist_free_all(w->hl);
	free(w->body);
	etcd_stream_free(&w->s);
	free(w);
}
