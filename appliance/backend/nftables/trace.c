/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The nftables backend's live trace: two base chains added to table inet
 * nfbox for the trace's time (prerouting and output, before conntrack),
 * each with one rule that sets nftrace on the packets of the filter and
 * has no verdict; the kernel then reports each traced packet's way through
 * the chains on NFNLGRP_NFTRACE. The first accept or drop in one of the
 * filter's chains (input, forward, output and theirs) decided: its rule,
 * named by the counter it moves (r_HOOK_RULE, x_HOOK_default; a counter
 * map's element for the packet), and that counter read after it go to the
 * sink. Early drops at ingress come before the trace and are not seen.
 */
/* glibc's <netinet/in.h> before the kernel's headers, so they step aside. */
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/trace.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "backend/nftables/nftables.h"
#include "backend/nftables/nft/batch.h"
#include "backend/nftables/nft/build.h"
#include "backend/nftables/nft/counters.h"
#include "backend/nftables/nft/emit.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "lib/plant.h"
#include "netlink/nl.h"

/* Before conntrack (-200) and its defrag (-400 < this), so that every
 * packet of the filter is marked before any chain of the policy sees it. */
#define TRACE_PRIO (-350)

/* A rule of the filter's chains, by handle: the counter it moves, or the
 * counter map that picks it. */
struct rule_counter {
	char chain[32];
	uint64_t handle;
	char counter[NFR_NAME];
	char map[NFR_NAME];
};

/* The kernel shows a traced packet's headers once a hook (its first
 * event there), not with the verdict that comes later: kept by trace id. */
#define SEEN_PACKETS 32
struct seen_packet {
	uint32_t id;
	bool valid;
	struct vevent v;
	const char *hook; /* the filter hook whose chains it is in; NULL: none */
};

struct nft_tracer {
	const struct policy *pol; /* in force for the trace's time (a reload ends it first) */
	struct nfr_table t;	  /* the trace's chains and rules */
	struct seen_packet seen[SEEN_PACKETS];
	uint32_t next_seen;
	struct mnl_socket *nl;
	struct handler h;
	struct rule_counter *v; /* the rules of the chains read so far */
	uint32_t n, cap;
	char (*read)[32]; /* chains read */
	uint32_t nread;
};

/* ---- the chains ---- */

static void trace_rule(struct nfr_table *t, uint32_t chain, const struct trace_filter *f)
{
	struct nfr_rule r = { .chain = chain };
	uint8_t fam = f->af == AF_INET ? POLICY_FAM_IPV4 : POLICY_FAM_IPV6;
	struct nfr_match *m;

	if (f->af)
		nfr_match_add(&r, NFR_M_NFPROTO)->value = f->af == AF_INET ? NFPROTO_IPV4 : NFPROTO_IPV6;
	if (f->ifin[0])
		snprintf(nfr_match_add(&r, NFR_M_IIFNAME)->ifname, 16, "%s", f->ifin);
	for (int dir = 0; dir < 2; dir++) {
		if (!(dir ? f->dst_len : f->src_len))
			continue;
		m = nfr_match_add(&r, NFR_M_ADDR_EQ);
		m->family = fam;
		m->dir = (uint8_t)dir;
		m->value = dir ? f->dst_len : f->src_len;
		memcpy(m->addr, dir ? f->dst : f->src, 16);
	}
	if (f->has_proto)
		nfr_match_add(&r, NFR_M_L4PROTO)->value = f->proto;
	if (f->has_port) {
		m = nfr_match_add(&r, NFR_M_PORT);
		m->dir = 1;
		m->lo = m->hi = f->port;
	}
	nfr_stmt_add(&r, NFR_S_NFTRACE);
	nfr_rule_add(t, &r, "the live trace's rule");
}

static void trace_chains(struct nfr_table *t, const struct trace_filter *f)
{
	static const struct {
		const char *name;
		uint32_t hook;
	} at[] = { { "trace_prerouting", NF_INET_PRE_ROUTING }, { "trace_output", NF_INET_LOCAL_OUT } };

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct nfr_chain ch = { .base = true, .hook = at[i].hook, .prio = TRACE_PRIO };

		snprintf(ch.name, sizeof(ch.name), "%s", at[i].name);
		trace_rule(t, nfr_chain_add(t, &ch), f);
	}
}

/* ---- naming the rule that decided ---- */

struct rule_read {
	struct nft_tracer *tr;
	const char *chain;
	struct rule_counter rc;
	int err;
};

static int on_expr(struct nftnl_expr *e, void *arg)
{
	struct rule_counter *rc = arg;
	const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);

	if (!name || strcmp(name, "objref") || rc->counter[0] || rc->map[0])
		return MNL_CB_OK;
	if (nftnl_expr_is_set(e, NFTNL_EXPR_OBJREF_SET_NAME))
		snprintf(rc->map, sizeof(rc->map), "%s", nftnl_expr_get_str(e, NFTNL_EXPR_OBJREF_SET_NAME));
	else if (nftnl_expr_get_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE) == NFT_OBJECT_COUNTER)
		snprintf(rc->counter, sizeof(rc->counter), "%s", nftnl_expr_get_str(e, NFTNL_EXPR_OBJREF_IMM_NAME));
	return MNL_CB_OK;
}

static int on_rule(const struct nlmsghdr *nlh, void *arg)
{
	struct rule_read *rr = arg;
	struct nft_tracer *tr = rr->tr;
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct rule_counter rc = { 0 };

	if (!r || nftnl_rule_nlmsg_parse(nlh, r) < 0) {
		if (r)
			nftnl_rule_free(r);
		return MNL_CB_OK;
	}
	snprintf(rc.chain, sizeof(rc.chain), "%s", rr->chain);
	rc.handle = nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE);
	nftnl_expr_foreach(r, on_expr, &rc);
	nftnl_rule_free(r);
	if (tr->n == tr->cap) {
		uint32_t cap = tr->cap ? 2 * tr->cap : 64;
		struct rule_counter *v = realloc(tr->v, cap * sizeof(*v));

		if (!v) {
			rr->err = -ENOMEM;
			return MNL_CB_OK;
		}
		tr->v = v;
		tr->cap = cap;
	}
	tr->v[tr->n++] = rc;
	return MNL_CB_OK;
}

/* The rules of chain, read once a trace (a chain of 65,536 rules takes a
 * moment: not for each packet). */
static int chain_read(struct nft_tracer *tr, const char *chain)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct rule_read rr = { .tr = tr, .chain = chain };
	struct mnl_socket *nl;
	struct nftnl_rule *r;
	struct nlmsghdr *nlh;
	char (*read)[32];
	int e;

	for (uint32_t i = 0; i < tr->nread; i++)
		if (!strcmp(tr->read[i], chain))
			return 0;
	if (!(read = realloc(tr->read, (tr->nread + 1) * sizeof(*read))) || !(r = nftnl_rule_alloc())) {
		if (read)
			tr->read = read;
		return -ENOMEM;
	}
	tr->read = read;
	snprintf(tr->read[tr->nread++], 32, "%s", chain);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETRULE, NFPROTO_INET, NLM_F_DUMP, (uint32_t)time(NULL));
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFT_TABLE_NAME);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	nftnl_rule_free(r);
	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	e = nl_talk(nl, nlh, on_rule, &rr);
	mnl_socket_close(nl);
	return e < 0 ? e : rr.err;
}

static int on_elem_reply(const struct nlmsghdr *nlh, void *arg)
{
	char *counter = arg;
	struct nftnl_set *s = nftnl_set_alloc();
	struct nftnl_set_elems_iter *it;
	struct nftnl_set_elem *el;

	if (!s || nftnl_set_elems_nlmsg_parse(nlh, s) < 0 || !(it = nftnl_set_elems_iter_create(s))) {
		if (s)
			nftnl_set_free(s);
		return MNL_CB_OK;
	}
	for (el = nftnl_set_elems_iter_next(it); el && !counter[0]; el = nftnl_set_elems_iter_next(it))
		if (nftnl_set_elem_is_set(el, NFTNL_SET_ELEM_OBJREF))
			snprintf(counter, NFR_NAME, "%s", nftnl_set_elem_get_str(el, NFTNL_SET_ELEM_OBJREF));
	nftnl_set_elems_iter_destroy(it);
	nftnl_set_free(s);
	return MNL_CB_OK;
}

/* The counter a counter map (meta l4proto . th dport) picks for v. */
static int map_counter(const char *map, const struct vevent *v, char *counter)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	uint8_t key[8] = { v->proto, 0, 0, 0, (uint8_t)(v->dport >> 8), (uint8_t)v->dport };
	struct nftnl_set *s = nftnl_set_alloc();
	struct nftnl_set_elem *el = nftnl_set_elem_alloc();
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	int r;

	if (!s || !el) {
		if (s)
			nftnl_set_free(s);
		if (el)
			nftnl_set_elem_free(el);
		return -ENOMEM;
	}
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFT_TABLE_NAME);
	nftnl_set_set_str(s, NFTNL_SET_NAME, map);
	nftnl_set_elem_set(el, NFTNL_SET_ELEM_KEY, key, sizeof(key));
	nftnl_set_elem_add(s, el);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET, 0, (uint32_t)time(NULL));
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	nftnl_set_free(s);
	if (!(nl = nl_open(NETLINK_NETFILTER)))
		return -errno;
	counter[0] = '\0';
	r = nl_talk(nl, nlh, on_elem_reply, counter);
	mnl_socket_close(nl);
	return r < 0 ? r : counter[0] ? 0 : -ENOENT;
}

/* The counter the rule handle of chain moved for v: "" when not known. */
static void counter_of(struct nft_tracer *tr, const char *chain, uint64_t handle, const struct vevent *v, char *counter)
{
	counter[0] = '\0';
	if (chain_read(tr, chain) < 0)
		return;
	for (uint32_t i = 0; i < tr->n; i++) {
		const struct rule_counter *rc = &tr->v[i];

		if (rc->handle != handle || strcmp(rc->chain, chain))
			continue;
		if (rc->map[0])
			map_counter(rc->map, v, counter);
		else
			snprintf(counter, NFR_NAME, "%s", rc->counter);
		return;
	}
}

/* The policy's name of what a counter counts: the rule of r_HOOK_RULE, the
 * default of x_HOOK_default, the established accept; else the counter's. */
static const char *rule_of_counter(const char *counter, const char *hook)
{
	size_t n = strlen(hook);

	if (!strcmp(counter, NFT_COUNTER_ESTABLISHED))
		return "(established)";
	if (counter[0] == 'x' && counter[1] == '_' && !strncmp(counter + 2, hook, n) &&
	    !strcmp(counter + 2 + n, "_default"))
		return "(default)";
	if (counter[0] == 'r' && counter[1] == '_' && !strncmp(counter + 2, hook, n) && counter[2 + n] == '_')
		return counter + 3 + n;
	return counter[0] ? counter : "?";
}

/* ---- the trace's events ---- */

/* The filter's hook of one of its chains ("forward", "forward_frag"), or NULL. */
static const char *hook_of_chain(const char *chain)
{
	static const char *const hooks[] = { "input", "forward", "output" };

	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		size_t n = strlen(hooks[i]);

		if (!strncmp(chain, hooks[i], n) && (chain[n] == '\0' || chain[n] == '_'))
			return hooks[i];
	}
	return NULL;
}

/* The packet as the trace shows it: its network and transport headers. */
static int packet_of(const struct nftnl_trace *t, struct vevent *v)
{
	uint8_t p[512];
	uint32_t nlen = 0, tlen = 0;
	const void *nh = nftnl_trace_is_set(t, NFTNL_TRACE_NETWORK_HEADER)
				 ? nftnl_trace_get_data(t, NFTNL_TRACE_NETWORK_HEADER, &nlen)
				 : NULL;
	const void *th = nftnl_trace_is_set(t, NFTNL_TRACE_TRANSPORT_HEADER)
				 ? nftnl_trace_get_data(t, NFTNL_TRACE_TRANSPORT_HEADER, &tlen)
				 : NULL;

	if (!nh || nlen > sizeof(p))
		return -EINVAL;
	memcpy(p, nh, nlen);
	if (th && tlen <= sizeof(p) - nlen)
		memcpy(p + nlen, th, tlen);
	else
		tlen = 0;
	v->ifin = nftnl_trace_is_set(t, NFTNL_TRACE_IIF) ? nftnl_trace_get_u32(t, NFTNL_TRACE_IIF) : 0;
	v->ifout = nftnl_trace_is_set(t, NFTNL_TRACE_OIF) ? nftnl_trace_get_u32(t, NFTNL_TRACE_OIF) : 0;
	return nft_packet_fields(nftnl_trace_get_u32(t, NFTNL_TRACE_NFPROTO), p, nlen + tlen, v);
}

/* The verdict of t, if it is one that decides a packet: accept or drop. */
static const char *deciding(const struct nftnl_trace *t)
{
	uint32_t type = nftnl_trace_get_u32(t, NFTNL_TRACE_TYPE), verdict;

	if (type == NFT_TRACETYPE_POLICY)
		verdict = nftnl_trace_get_u32(t, NFTNL_TRACE_POLICY);
	else if (type == NFT_TRACETYPE_RULE && nftnl_trace_is_set(t, NFTNL_TRACE_VERDICT))
		verdict = nftnl_trace_get_u32(t, NFTNL_TRACE_VERDICT);
	else
		return NULL;
	return verdict == NF_ACCEPT ? "accept" : verdict == NF_DROP ? "drop" : NULL;
}

/* The packet of trace id: from t if it shows it (then kept), else as
 * kept; NULL when not known. */
static struct seen_packet *packet_seen(struct nft_tracer *tr, const struct nftnl_trace *t)
{
	uint32_t id = nftnl_trace_get_u32(t, NFTNL_TRACE_ID);
	struct seen_packet *sp;

	for (uint32_t i = 0; i < SEEN_PACKETS; i++) {
		sp = &tr->seen[(tr->next_seen - 1 - i) % SEEN_PACKETS];
		if (sp->valid && sp->id == id)
			break;
		sp = NULL;
	}
	if (nftnl_trace_is_set(t, NFTNL_TRACE_NETWORK_HEADER)) {
		const char *hook = sp ? sp->hook : NULL;

		if (!sp)
			sp = &tr->seen[tr->next_seen++ % SEEN_PACKETS];
		*sp = (struct seen_packet){ .id = id, .hook = hook };
		sp->valid = packet_of(t, &sp->v) == 0;
	}
	return sp && sp->valid ? sp : NULL;
}

/* A rule's own chain (limited_N), entered by a jump from a filter chain. */
static bool rule_chain(const char *chain)
{
	return !strncmp(chain, "limited_", 8);
}

/* The hook of a chain the packet is in: a filter chain's, or for a rule's
 * own chain the hook it came from (NULL: its events came out of order;
 * the counter says it then). */
static const char *hook_now(struct seen_packet *sp, const char *chain)
{
	const char *hook = hook_of_chain(chain);

	if (hook || !rule_chain(chain))
		sp->hook = hook;
	return sp->hook;
}

/* The hook a rule's counter (r_HOOK_RULE) counts in, or NULL. */
static const char *hook_of_counter(const char *counter)
{
	const char *hook = counter[0] == 'r' && counter[1] == '_' ? hook_of_chain(counter + 2) : NULL;

	return hook && counter[2 + strlen(hook)] == '_' ? hook : NULL;
}

/* The policy's action of the rule that decided, where nftables' verdict
 * does not say it (a reject is a drop with a reply). */
static const char *action_of(const struct policy *p, const char *hook, const char *rule, const char *verdict)
{
	unsigned h = 0;

	while (h < POLICY_HOOK_MAX && strcmp(policy_hook_name((enum policy_hook)h), hook))
		h++;
	for (uint32_t i = 0; i < p->nrules && h < POLICY_HOOK_MAX; i++) {
		const struct rule *r = &p->rules[i];

		if (!strcmp(r->name, rule) && (r->hooks & (1u << h)) && r->action == POLICY_REJECT)
			return policy_action_name(POLICY_REJECT);
	}
	return verdict;
}

static void on_trace_event(struct nft_backend *nb, const struct nftnl_trace *t)
{
	const struct backend_sink *sink = &nb->b.env->sink;
	const char *table = nftnl_trace_get_str(t, NFTNL_TRACE_TABLE),
		   *chain = nftnl_trace_get_str(t, NFTNL_TRACE_CHAIN);
	const char *hook, *action = deciding(t);
	struct seen_packet *sp;
	struct vevent v;
	char counter[NFR_NAME] = "";
	struct nfr_counter c;
	struct backend_counter bc;
	struct timespec now;
	bool counted;

	if (!table || strcmp(table, NFT_TABLE_NAME) || !chain || !(sp = packet_seen(nb->tracer, t)))
		return;
	hook = hook_now(sp, chain);
	if (!action || (!hook && !rule_chain(chain)))
		return;
	v = sp->v;
	if (nftnl_trace_get_u32(t, NFTNL_TRACE_TYPE) == NFT_TRACETYPE_RULE)
		counter_of(nb->tracer, chain, nftnl_trace_get_u64(t, NFTNL_TRACE_RULE_HANDLE), &v, counter);
	if (!hook && !(hook = hook_of_counter(counter)))
		return;
	v.hook = hook;
	v.rule = rule_of_counter(counter, hook);
	v.action = action_of(nb->tracer->pol, hook, v.rule, action);
	clock_gettime(CLOCK_REALTIME, &now);
	v.ts = (double)now.tv_sec + now.tv_nsec / 1e9;
	counted = counter[0] && nft_counter_read(counter, &c) == 0;
	if (counted)
		bc = (struct backend_counter){ .packets = c.packets, .bytes = c.bytes };
	sink->traced(sink->targ, &v, counted ? &bc : NULL);
}

static int on_trace_msg(const struct nlmsghdr *nlh, void *arg)
{
	struct nft_backend *nb = arg;
	struct nftnl_trace *t;

	if (NFNL_MSG_TYPE(nlh->nlmsg_type) != NFT_MSG_TRACE || !(t = nftnl_trace_alloc()))
		return MNL_CB_OK;
	if (nftnl_trace_nlmsg_parse(nlh, t) == 0 && nb->tracer && nb->b.env->sink.traced)
		on_trace_event(nb, t);
	nftnl_trace_free(t);
	return MNL_CB_OK;
}

static void on_trace_socket(struct handler *h, uint32_t events)
{
	struct nft_backend *nb = h->ctx;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t n;

	(void)events;
	/* a few messages a round: the loop stays with the others */
	for (int i = 0; i < 64 && nb->tracer; i++) {
		if ((n = mnl_socket_recvfrom(nb->tracer->nl, buf, sizeof(buf))) <= 0)
			return;
		mnl_cb_run(buf, (size_t)n, 0, 0, on_trace_msg, nb);
	}
}

/* ---- start and stop ---- */

static int trace_listen(struct nft_backend *nb, struct nft_tracer *tr, struct diags *d)
{
	int group = NFNLGRP_NFTRACE, one = 1;

	if (!(tr->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK | SOCK_CLOEXEC)) ||
	    mnl_socket_bind(tr->nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    mnl_socket_setsockopt(tr->nl, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
		return diag_errno(d, -errno, "cannot receive nftables' trace events");
	/* a lost message is a packet not shown, not a wrong one: no ENOBUFS */
	mnl_socket_setsockopt(tr->nl, NETLINK_NO_ENOBUFS, &one, sizeof(one));
	tr->h = (struct handler){ .fd = mnl_socket_get_fd(tr->nl), .fn = on_trace_socket, .ctx = nb };
	return loop_watch(nb->b.env->loop, &tr->h) < 0 ? diag_errno(d, -errno, "epoll") : 0;
}

static void tracer_free(struct nft_backend *nb, struct nft_tracer *tr)
{
	if (!tr)
		return;
	if (tr->nl) {
		loop_unwatch(nb->b.env->loop, &tr->h);
		mnl_socket_close(tr->nl);
	}
	nfr_free(&tr->t);
	free(tr->v);
	free(tr->read);
	free(tr);
}

int nft_trace_start(struct backend *b, const struct loaded *cur, const struct trace_filter *f, struct diags *d)
{
	struct nft_backend *nb = nft_of(b);
	struct nft_tracer *tr;
	int r;

	if (nb->tracer)
		return diag_fail(d, -EBUSY, "a live trace runs already");
	if (!(tr = calloc(1, sizeof(*tr))))
		return diag_errno(d, -ENOMEM, "the live trace");
	tr->pol = cur->pol;
	nfr_init(&tr->t);
	trace_chains(&tr->t, f);
	/* listening before the rule is in: no packet of it goes unseen */
	if ((r = trace_listen(nb, tr, d)) < 0 || (r = nft_chains_change(&tr->t, false, d)) < 0) {
		tracer_free(nb, tr);
		return r;
	}
	nb->tracer = tr;
	return 0;
}

void nft_trace_stop(struct backend *b)
{
	struct nft_backend *nb = nft_of(b);
	struct diags d;

	if (!nb->tracer)
		return;
	diags_init(&d);
	if (!planted("trace-rule-stays") && nft_chains_change(&nb->tracer->t, true, &d) < 0)
		log_err("the live trace's chains could not be removed from table inet %s: %s", NFT_TABLE_NAME,
			diags_last(&d, ""));
	diags_free(&d);
	tracer_free(nb, nb->tracer);
	nb->tracer = NULL;
}
