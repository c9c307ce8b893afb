/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sets the daemon fills itself.
 *
 * Country sets (country:, database:): the database is read with
 * libmaxminddb (feeds/mmdb.h) at the first load, when the set's definition
 * changes, and when the file changes: inotify on its directory, for a new
 * file renamed over the old one (as geoipupdate does; one rewritten in
 * place under the mapping is not supported). The
 * set becomes exactly the database's networks of those countries. A
 * database that cannot be read leaves the set as it was, and says why in
 * the log and in `status`.
 *
 * Host-name sets (hosts:): each name is resolved with c-ares (A and AAAA,
 * through this network namespace's /etc/resolv.conf, which `ip netns exec`
 * takes from /etc/netns/NAME/) on the daemon's loop: its sockets are
 * watched by the loop, its timeouts run once a round. Each address is
 * added (or renewed) with a timeout of its TTL, held between min-ttl and
 * max-ttl, plus grace: a connection a client opens on an answer it still
 * has cached passes, and an address no answer gives any more goes once
 * that runs out. A name is asked again shortly before the shortest TTL of
 * its answer runs out (ask_again_ms). A name that does not resolve keeps the addresses it had until
 * they time out, and is a warning in `status`, never an error of a reload.
 *
 * Suricata's alerts (eve:): eve.json is followed like tail -F (from its end
 * when it is there at the start, from its start when it appears or is
 * rotated, from the start again when truncated), woken by inotify and read
 * once a round at most 4 MiB. Each alert of severity 1..N (1 is the
 * gravest) puts its source (alert.source.ip where the rule names a target,
 * else src_ip) into the set for the timeout, an entry that says which
 * signature (id and message) caused it; each ban is an event ("ids",
 * action "ban") and a line in the log. A reload keeps following the same
 * file from where it was.
 *
 * Lists fetched from a URL (url:, refresh:, ca:; feeds/url/feed.h): at the
 * start, and when the set or its URL is new to a reload, the last good
 * list kept in the state directory is put into the set at once, before any
 * fetch. Then the list is fetched again every refresh (the first soon
 * after the start), a conditional request each time. libcurl blocks, so a
 * fetch runs in a thread of its own, one at a time for a set; the loop
 * learns it is done through an eventfd, joins it, and replaces the set's
 * entries only when the list changed. A fetch that fails or brings garbage
 * changes nothing but the last error (a warning in the log and `status`):
 * the set is never emptied by it. A reload that keeps a set's URL (and
 * CA) keeps its fetcher as it is, list and schedule: no fetch of its own.
 * A fetcher whose set went away is let finish in the background (the loop
 * does not wait for it) and freed then; stop and close end every fetch
 * (libcurl's progress callback, within a second) and join it.
 */
#include <arpa/inet.h>
#include <ares.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/part.h"
#include "daemon/state.h"
#include "dynset/part/part.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/pct.h"
#include "feeds/mmdb.h"
#include "feeds/url/feed.h"
#include "lib/plant.h"

#define FEED_BY_COUNTRY "country"
#define FEED_BY_DNS	"dns"
#define FEED_BY_URL	"url"
#define URL_FIRST_MS	1000 /* the first fetch after the start (or after a new URL) */
#define FEED_RETRY_S	30   /* a name that did not resolve: asked again after this (or min-ttl, if less) */
#define ARES_TIMEOUT_MS 2000
#define ARES_TRIES	2

struct hostname {
	char *name;
	int64_t next_ms; /* monotonic ms of the next question */
	bool asking;	 /* a question is out */
	char problem[160];
};

/* A ban found in eve.json, put into the set with the others of its round. */
struct eve_ban {
	struct dyn_change c;
	char *by, *rule;
	long long sid, sev;
};

/* A set's list from a URL: the library's state and the thread that
 * fetches. While a fetch runs (running) the thread owns st; the loop reads
 * only what it copied out of st when the fetch was joined (shown). */
struct fetcher {
	struct handler h; /* an eventfd: the fetch is done */
	struct daemon *dm;
	pthread_t th;
	bool running;
	atomic_bool cancel; /* the fetch under way ends within a second (stop, a set gone) */
	char *set, *url, *ca, *state_dir;
	struct url_feed uf;
	struct url_feed_state st;
	int r;		  /* of the fetch just done */
	int64_t now;	  /* when it began (Unix time) */
	uint32_t refresh; /* seconds between fetches */
	long long due;	  /* CLOCK_MONOTONIC ms of the next fetch */
	struct {	  /* st as of the last join, for status */
		int64_t fetched, checked, failed;
		uint32_t n;
		char error[256];
	} shown;
	char problem[256];    /* the kernel refused the list ("" none) */
	struct fetcher *next; /* in the part's list of those whose set went away */
};

struct feed {
	char *set;
	enum set_feed kind;
	/* country */
	char *database;
	char (*cc)[3];
	uint32_t ncc;
	struct stat st; /* the file as last loaded (have_st) */
	bool have_st, dirty;
	/* hosts */
	struct hostname *h;
	uint32_t nh;
	uint32_t min_ttl, max_ttl, grace;
	/* eve: Suricata's alerts */
	char *eve;
	uint32_t severity, ban;
	int fd; /* eve.json as followed, -1: not open */
	dev_t dev;
	ino_t ino;
	bool from_start; /* a file that appears later is read from its start */
	char *partial;	 /* the end of the last read, not yet a whole line */
	size_t plen;
	uint64_t alerts, bans, bad, full;
	struct eve_ban *pend; /* this round's bans */
	uint32_t npend, cpend;
	long long loaded;
	char problem[640];
	/* url */
	struct fetcher *fetch;
};

struct sock {
	struct handler h;
	struct daemon *dm;
};

struct feeds;
/* The part's state: the feeds while the policy in force has some. */
struct feeds_part {
	struct daemon *dm;
	struct feeds *fs;
	struct fetcher *orphans; /* fetches still running whose set went away */
};
#define FS(dm) (((struct feeds_part *)daemon_part_state(dm, &part_feeds))->fs)

static void feeds_tick_dm(struct daemon *dm);

struct feeds {
	struct feed *v;
	uint32_t n;
	struct handler ino; /* inotify on the databases' directories; fd -1: none */
	ares_channel ch;
	bool have_ch;
	struct sock **socks;
	uint32_t nsocks;
	uint64_t gen; /* counts the feeds' rebuilds: an answer for a name of an older one is dropped */
	struct handler
		timer; /* a timerfd for the next question of a name (a round may be a second long); fd -1: none */
};

/* A feed freed; its fetcher, if any, was taken or dropped (fetcher_drop). */
static void feed_free(struct feed *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->eve);
	free(f->partial);
	free(f->pend); /* empty between rounds */
	free(f->set);
	free(f->database);
	free(f->cc);
	for (uint32_t i = 0; i < f->nh; i++)
		free(f->h[i].name);
	free(f->h);
}

static struct feed *feed_named(struct feeds *fs, const char *set)
{
	for (uint32_t i = 0; fs && i < fs->n; i++)
		if (!strcmp(fs->v[i].set, set))
			return &fs->v[i];
	return NULL;
}

static uint64_t set_entries(const struct daemon *dm, const char *set)
{
	const struct dyn_set *s = dynsets_get(dyn_store(dm), set);

	return s ? (uint64_t)s->n[0] + s->n[1] : 0;
}

/* ---- country sets ---- */

static void country_load(struct daemon *dm, struct feed *f)
{
	struct dyn_change *c;
	struct prefix *v;
	uint32_t n, added, deleted;
	struct stat st;
	struct diags d;
	char why[512];
	int r;

	f->dirty = false;
	if (stat(f->database, &st) < 0) {
		snprintf(f->problem, sizeof(f->problem), "database %s: %s; the set keeps its entries (%llu)",
			 f->database, strerror(errno), (unsigned long long)set_entries(dm, f->set));
		log_warn("set %s: %s", f->set, f->problem);
		return;
	}
	if (f->have_st && st.st_ino == f->st.st_ino && st.st_dev == f->st.st_dev && st.st_size == f->st.st_size &&
	    st.st_mtim.tv_sec == f->st.st_mtim.tv_sec && st.st_mtim.tv_nsec == f->st.st_mtim.tv_nsec && !f->problem[0])
		return; /* the file as loaded */
	if ((r = mmdb_country_prefixes(f->database, (const char (*)[3])f->cc, f->ncc, &v, &n, why, sizeof(why))) < 0) {
		snprintf(f->problem, sizeof(f->problem), "%s; the set keeps its entries (%llu)", why,
			 (unsigned long long)set_entries(dm, f->set));
		log_warn("set %s: %s", f->set, f->problem);
		return;
	}
	if (!(c = calloc(n ? n : 1, sizeof(*c)))) {
		free(v);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		c[i].pfx = v[i];
		c[i].by = FEED_BY_COUNTRY;
		c[i].src = f->database;
	}
	free(v);
	diags_init(&d);
	if (dyn_feed(dm, f->set, c, n, true, &added, &deleted, &d) < 0) {
		snprintf(f->problem, sizeof(f->problem), "%s", diags_last(&d, "the kernel refused the entries"));
		log_warn("set %s: from %s: %s", f->set, f->database, f->problem);
	} else {
		f->problem[0] = '\0';
		f->st = st;
		f->have_st = true;
		f->loaded = (long long)time(NULL);
		log_info("set %s: %u network%s of %u countr%s from %s (%u added, %u deleted)", f->set, n,
			 n == 1 ? "" : "s", f->ncc, f->ncc == 1 ? "y" : "ies", f->database, added, deleted);
	}
	diags_free(&d);
	free(c);
}

static void on_inotify(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	(void)events;
	/* Which file changed does not matter much: every country set whose
	 * database is in a directory that changed is looked at (its stat
	 * tells whether it is a new file). */
	while ((len = read(h->fd, buf, sizeof(buf))) > 0)
		;
	for (uint32_t i = 0; FS(dm) && i < FS(dm)->n; i++)
		if (FS(dm)->v[i].kind == SET_FEED_COUNTRY)
			FS(dm)->v[i].dirty = true;
}

static void watch_databases(struct daemon *dm)
{
	struct feeds *fs = FS(dm);

	if (fs->ino.fd >= 0) {
		loop_unwatch(daemon_loop(dm), &fs->ino);
		close(fs->ino.fd);
		fs->ino.fd = -1;
	}
	for (uint32_t i = 0; i < fs->n; i++) {
		char dir[PATH_MAX];

		if (fs->v[i].kind != SET_FEED_COUNTRY && fs->v[i].kind != SET_FEED_EVE)
			continue;
		if (fs->ino.fd < 0) {
			fs->ino = (struct handler){ .fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC),
						    .fn = on_inotify,
						    .ctx = dm };
			if (fs->ino.fd < 0 || loop_watch(daemon_loop(dm), &fs->ino) < 0) {
				log_warn("sets: cannot watch their files (%s): country databases are read at reloads "
					 "only, eve.json once a second",
					 strerror(errno));
				if (fs->ino.fd >= 0)
					close(fs->ino.fd);
				fs->ino.fd = -1;
				return;
			}
		}
		bool eve = fs->v[i].kind == SET_FEED_EVE;

		snprintf(dir, sizeof(dir), "%s", eve ? fs->v[i].eve : fs->v[i].database);
		if (inotify_add_watch(fs->ino.fd, dirname(dir),
				      IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | (eve ? IN_MODIFY : 0)) < 0)
			log_warn("set %s: cannot watch %s (%s): %s", fs->v[i].set, dir, strerror(errno),
				 eve ? "eve.json is read once a second" : "the database is read at reloads only");
	}
}

/* ---- lists fetched from a URL: a thread for each fetch ---- */

/* The refresh of a url: set, in seconds. The test build takes a shorter
 * one from NFBOX_TEST_URL_REFRESH (the policy's least is 5 minutes), so
 * that a suite sees a list change within seconds; nfbox itself has no
 * such switch. */
static uint32_t url_refresh(uint32_t policy_s)
{
#ifdef NFBOX_TEST_PLANT
	const char *e = getenv("NFBOX_TEST_URL_REFRESH");

	if (e && atoi(e) > 0)
		return (uint32_t)atoi(e);
#endif
	return policy_s;
}

static void fetcher_show(struct fetcher *u)
{
	u->shown.fetched = u->st.fetched;
	u->shown.checked = u->st.checked;
	u->shown.failed = u->st.failed;
	u->shown.n = u->st.list.n;
	snprintf(u->shown.error, sizeof(u->shown.error), "%s", u->st.last_error);
}

static void fetcher_free(struct fetcher *u)
{
	if (!u)
		return;
	if (u->h.fd >= 0) {
		loop_unwatch(daemon_loop(u->dm), &u->h);
		close(u->h.fd);
	}
	url_feed_state_free(&u->st);
	free(u->set);
	free(u->url);
	free(u->ca);
	free(u->state_dir);
	free(u);
}

/* Waits for the fetch under way, if any: one that is done (on_fetched),
 * or one told to end (stop: a second at most). */
static void fetcher_join(struct fetcher *u)
{
	uint64_t n;

	if (!u->running)
		return;
	pthread_join(u->th, NULL);
	u->running = false;
	while (read(u->h.fd, &n, sizeof(n)) == sizeof(n))
		;
}

/* A fetcher whose set went away: freed now, or when its fetch is done
 * (on_fetched), so that the loop never waits for the network. */
static void fetcher_drop(struct daemon *dm, struct fetcher *u)
{
	struct feeds_part *p = daemon_part_state(dm, &part_feeds);

	if (!u)
		return;
	if (!u->running) {
		fetcher_free(u);
		return;
	}
	atomic_store(&u->cancel, true); /* its result would not be taken */
	u->next = p->orphans;
	p->orphans = u;
}

/* The list (st.list) into the set: it becomes exactly the list. */
static void url_apply(struct daemon *dm, struct fetcher *u, const char *why)
{
	const struct url_list *l = &u->st.list;
	uint32_t added, deleted;
	struct dyn_change *c;
	struct diags d;

	if (!(c = calloc(l->n ? l->n : 1, sizeof(*c)))) {
		snprintf(u->problem, sizeof(u->problem), "out of memory for %u entries", l->n);
		log_warn("set %s: %s", u->set, u->problem);
		return;
	}
	for (uint32_t i = 0; i < l->n; i++) {
		c[i].pfx = l->v[i];
		c[i].by = FEED_BY_URL;
		c[i].src = u->url;
	}
	diags_init(&d);
	if (dyn_feed(dm, u->set, c, l->n, true, &added, &deleted, &d) < 0) {
		snprintf(u->problem, sizeof(u->problem), "%s", diags_last(&d, "the kernel refused the entries"));
		log_warn("set %s: the list from %s: %s", u->set, u->url, u->problem);
	} else {
		u->problem[0] = '\0';
		log_info("set %s: %u entr%s %s %s (%u added, %u deleted)", u->set, l->n, l->n == 1 ? "y" : "ies", why,
			 u->url, added, deleted);
	}
	diags_free(&d);
	free(c);
}

static void *fetch_thread(void *arg)
{
	struct fetcher *u = arg;
	uint64_t one = 1;

	u->r = url_feed_refresh(&u->uf, &u->st, u->now);
	if (write(u->h.fd, &one, sizeof(one)) < 0) {
		/* cannot happen (an eventfd takes 2^64 - 2); the loop would wait */
	}
	return NULL;
}

static void fetch_start(struct fetcher *u)
{
	int r;

	u->now = (int64_t)time(NULL);
	if ((r = pthread_create(&u->th, NULL, fetch_thread, u)) != 0) {
		log_warn("set %s: cannot start a fetch of %s: %s; tried again in %us", u->set, u->url, strerror(r),
			 u->refresh);
		u->due = clock_ms(CLOCK_MONOTONIC) + 1000LL * u->refresh;
		return;
	}
	u->running = true;
}

static bool fetcher_owned(struct feeds *fs, const struct fetcher *u)
{
	for (uint32_t i = 0; fs && i < fs->n; i++)
		if (fs->v[i].fetch == u)
			return true;
	return false;
}

/* A fetch is done: joined, and its result taken, in the loop. */
static void on_fetched(struct handler *h, uint32_t events)
{
	struct fetcher *u = (struct fetcher *)h;
	struct daemon *dm = u->dm;
	struct feeds_part *p = daemon_part_state(dm, &part_feeds);

	(void)events;
	fetcher_join(u);
	if (!fetcher_owned(p->fs, u)) { /* its set went away meanwhile */
		for (struct fetcher **o = &p->orphans; *o; o = &(*o)->next)
			if (*o == u) {
				*o = u->next;
				break;
			}
		fetcher_free(u);
		return;
	}
	fetcher_show(u);
	u->due = clock_ms(CLOCK_MONOTONIC) + 1000LL * u->refresh;
	if (u->r == 1 || (u->r == 0 && u->problem[0])) { /* changed, or the kernel refused it last time */
		url_apply(dm, u, "fetched from");
	} else if (u->r < 0) {
		log_warn("set %s: cannot fetch %s: %s; the set keeps its %llu entries; tried again in %us", u->set,
			 u->url, u->st.last_error, (unsigned long long)set_entries(dm, u->set), u->refresh);
		if (planted("urlset-failure-empties")) {
			struct dyn_change none = { 0 };
			uint32_t a, dl;
			struct diags d;

			diags_init(&d);
			dyn_feed(dm, u->set, &none, 0, true, &a, &dl, &d);
			diags_free(&d);
		}
	}
}

/* A fetcher for a set of the policy: the last good list from the state
 * directory put into the set at once; the first fetch soon. */
static struct fetcher *fetcher_new(struct daemon *dm, const struct addr_set *s)
{
	struct fetcher *u = calloc(1, sizeof(*u));
	int r;

	if (!u)
		return NULL;
	u->dm = dm;
	u->h = (struct handler){ .fd = -1, .fn = on_fetched, .ctx = dm };
	if (!(u->set = strdup(s->name)) || !(u->url = strdup(s->url)) || (s->ca && !(u->ca = strdup(s->ca))) ||
	    !(u->state_dir = strdup(daemon_state_dir(dm)))) {
		fetcher_free(u);
		return NULL;
	}
	if ((u->h.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || loop_watch(daemon_loop(dm), &u->h) < 0) {
		log_err("set %s: cannot watch its fetches: %s", s->name, strerror(errno));
		if (u->h.fd >= 0)
			close(u->h.fd);
		u->h.fd = -1;
		fetcher_free(u);
		return NULL;
	}
	u->uf = (struct url_feed){
		.name = u->set,
		.url = u->url,
		.ca = u->ca,
		.state_dir = u->state_dir,
		.max_redirects = -1,
		.cancel = &u->cancel,
	};
	u->refresh = url_refresh(s->refresh);
	u->due = clock_ms(CLOCK_MONOTONIC) + URL_FIRST_MS;
	if ((r = url_feed_load(&u->uf, &u->st)) < 0)
		log_warn("set %s: %s; fetched from %s soon", u->set, u->st.last_error, u->url);
	else if (r == 1)
		url_apply(dm, u, "kept from the last fetch of");
	fetcher_show(u);
	return u;
}

static void url_tick(struct feed *f, long long now)
{
	struct fetcher *u = f->fetch;

	if (u && !u->running && u->due <= now)
		fetch_start(u);
}

/* ---- host-name sets: c-ares on the loop ---- */

static void on_sock(struct handler *h, uint32_t events)
{
	struct sock *s = h->ctx;
	struct feeds *fs = FS(s->dm);
	int fd = h->fd;

	ares_process_fd(fs->ch, events & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD,
			events & EPOLLOUT ? fd : ARES_SOCKET_BAD);
}

/* c-ares opens, changes and closes its sockets: the loop follows. */
static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct daemon *dm = data;
	struct feeds *fs = FS(dm);
	uint32_t i;

	for (i = 0; i < fs->nsocks && fs->socks[i]->h.fd != fd; i++)
		;
	if (!readable && !writable) {
		if (i == fs->nsocks)
			return;
		loop_unwatch(daemon_loop(dm), &fs->socks[i]->h);
		free(fs->socks[i]);
		fs->socks[i] = fs->socks[--fs->nsocks];
		return;
	}
	if (i == fs->nsocks) {
		struct sock **nv = realloc(fs->socks, (fs->nsocks + 1) * sizeof(*nv));
		struct sock *s = calloc(1, sizeof(*s));

		if (!nv || !s) {
			free(s);
			if (nv)
				fs->socks = nv;
			log_err("hosts: out of memory for a resolver socket");
			return;
		}
		fs->socks = nv;
		s->dm = dm;
		s->h = (struct handler){ .fd = fd, .fn = on_sock, .ctx = s };
		if (loop_watch(daemon_loop(dm), &s->h) < 0) {
			free(s);
			log_err("hosts: cannot watch a resolver socket: %s", strerror(errno));
			return;
		}
		fs->socks[fs->nsocks++] = s;
	}
	loop_want_write(daemon_loop(dm), &fs->socks[i]->h, writable);
}

static int resolver_open(struct daemon *dm)
{
	struct feeds *fs = FS(dm);
	struct ares_options o = {
		.sock_state_cb = sock_state,
		.sock_state_cb_data = dm,
		.timeout = ARES_TIMEOUT_MS,
		.tries = ARES_TRIES,
	};
	int r;

	if (fs->have_ch)
		return 0;
	if ((r = ares_init_options(&fs->ch, &o, ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES)) !=
	    ARES_SUCCESS) {
		log_err("hosts: cannot start the resolver: %s", ares_strerror(r));
		return -EIO;
	}
	fs->have_ch = true;
	return 0;
}

struct question {
	struct daemon *dm;
	uint64_t gen;
	char *set, *name;
};

static uint32_t clamp_ttl(const struct feed *f, int ttl)
{
	uint32_t t = ttl < 0 ? 0 : (uint32_t)ttl;

	return t < f->min_ttl ? f->min_ttl : t > f->max_ttl ? f->max_ttl : t;
}

/* The timer armed for the earliest next question (CLOCK_MONOTONIC, as
 * next_ms): a name is asked when it is due, not at the next round. */
static void arm_questions(struct feeds *fs)
{
	struct itimerspec its = { 0 };
	long long next = 0;

	for (uint32_t i = 0; fs->timer.fd >= 0 && i < fs->n; i++)
		for (uint32_t k = 0; fs->v[i].kind == SET_FEED_HOSTS && k < fs->v[i].nh; k++)
			if (!fs->v[i].h[k].asking && (!next || fs->v[i].h[k].next_ms < next))
				next = fs->v[i].h[k].next_ms > 0 ? fs->v[i].h[k].next_ms : 1;
	for (uint32_t i = 0; fs->timer.fd >= 0 && i < fs->n; i++) {
		const struct fetcher *u = fs->v[i].fetch;

		if (u && !u->running && (!next || u->due < next))
			next = u->due > 0 ? u->due : 1;
	}
	if (fs->timer.fd < 0)
		return;
	its.it_value.tv_sec = next / 1000;
	its.it_value.tv_nsec = (next % 1000) * 1000000;
	timerfd_settime(fs->timer.fd, TFD_TIMER_ABSTIME, &its, NULL); /* 0: disarmed */
}

static void on_question_due(struct handler *h, uint32_t events)
{
	struct daemon *dm = h->ctx;
	uint64_t n;

	(void)events;
	while (read(h->fd, &n, sizeof(n)) == sizeof(n))
		;
	feeds_tick_dm(dm);
}

/* A name is asked again a little before its shortest TTL runs out, so that
 * the answer renews its addresses before they expire (with grace: 0 they
 * would otherwise be out of the set from the expiry until the answer
 * comes): a quarter of the TTL early, a second at most. */
static long long ask_again_ms(uint32_t ttl_s)
{
	long long ttl = 1000LL * ttl_s;

	return ttl - (ttl / 4 < 1000 ? ttl / 4 : 1000);
}

static void answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct question *q = arg;
	struct daemon *dm = q->dm;
	struct feed *f = FS(dm) && q->gen == FS(dm)->gen ? feed_named(FS(dm), q->set) : NULL;
	struct hostname *h = NULL;
	struct dyn_change c[64];
	uint32_t n = 0, held = 0, added, deleted, next_s = UINT32_MAX;
	int64_t now = dyn_now_ms();
	struct diags d;

	(void)timeouts;
	for (uint32_t i = 0; f && i < f->nh && !h; i++)
		if (!strcmp(f->h[i].name, q->name))
			h = &f->h[i];
	if (!h || status == ARES_EDESTRUCTION)
		goto out;
	h->asking = false;
	if (status != ARES_SUCCESS) {
		snprintf(h->problem, sizeof(h->problem), "%s does not resolve: %s", h->name, ares_strerror(status));
		log_warn("set %s: %s; its addresses stay until their time is up; asked again in %us", f->set,
			 h->problem, f->min_ttl < FEED_RETRY_S ? f->min_ttl : FEED_RETRY_S);
		h->next_ms =
			clock_ms(CLOCK_MONOTONIC) + 1000LL * (f->min_ttl < FEED_RETRY_S ? f->min_ttl : FEED_RETRY_S);
		goto out;
	}
	for (struct ares_addrinfo_node *a = res->nodes; a && n < sizeof(c) / sizeof(c[0]); a = a->ai_next) {
		uint32_t ttl = clamp_ttl(f, a->ai_ttl);

		memset(&c[n], 0, sizeof(c[n]));
		if (a->ai_family == AF_INET) {
			c[n].pfx.family = POLICY_FAM_IPV4;
			c[n].pfx.plen = 32;
			memcpy(c[n].pfx.addr, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
		} else if (a->ai_family == AF_INET6) {
			c[n].pfx.family = POLICY_FAM_IPV6;
			c[n].pfx.plen = 128;
			memcpy(c[n].pfx.addr, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		c[n].expires = now + 1000LL * (ttl + f->grace);
		{
			/* another name's answer may hold the address longer: never shortened */
			const struct dyn_set *ds = dynsets_get(dyn_store(dm), f->set);
			int fam = c[n].pfx.family == POLICY_FAM_IPV6;
			int64_t k = ds ? dynset_index(ds, fam, c[n].pfx.addr, c[n].pfx.plen) : -1;

			if (k >= 0 && (!ds->v[fam][k].expires || ds->v[fam][k].expires >= c[n].expires)) {
				if (ttl < next_s)
					next_s = ttl;
				held++;
				continue;
			}
		}
		c[n].by = FEED_BY_DNS;
		c[n].src = h->name;
		if (ttl < next_s)
			next_s = ttl;
		n++;
	}
	if (!n && !held) {
		snprintf(h->problem, sizeof(h->problem), "%s has no address", h->name);
		next_s = f->min_ttl;
	} else if (!n) {
		h->problem[0] = '\0'; /* all its addresses held longer already */
	} else {
		diags_init(&d);
		if (dyn_feed(dm, f->set, c, n, false, &added, &deleted, &d) < 0) {
			snprintf(h->problem, sizeof(h->problem), "%s: %s", h->name,
				 diags_last(&d, "the kernel refused its addresses"));
			log_warn("set %s: %s", f->set, h->problem);
		} else {
			h->problem[0] = '\0';
			if (added)
				log_info("set %s: %s: %u new address%s (%u in the answer)", f->set, h->name, added,
					 added == 1 ? "" : "es", n);
		}
		diags_free(&d);
	}
	f->loaded = (long long)time(NULL);
	h->next_ms = clock_ms(CLOCK_MONOTONIC) + ask_again_ms(next_s);
	arm_questions(FS(dm));
out:
	if (res)
		ares_freeaddrinfo(res);
	free(q->set);
	free(q->name);
	free(q);
}

static void ask(struct daemon *dm, struct feed *f, struct hostname *h)
{
	struct ares_addrinfo_hints hints = { .ai_family = AF_UNSPEC };
	struct question *q;

	if (resolver_open(dm) < 0) {
		h->next_ms = clock_ms(CLOCK_MONOTONIC) + 1000LL * FEED_RETRY_S;
		return;
	}
	if (!(q = calloc(1, sizeof(*q))) || !(q->set = strdup(f->set)) || !(q->name = strdup(h->name))) {
		if (q) {
			free(q->set);
			free(q);
		}
		h->next_ms = clock_ms(CLOCK_MONOTONIC) + 1000LL * FEED_RETRY_S;
		return;
	}
	q->dm = dm;
	q->gen = FS(dm)->gen;
	h->asking = true;
	ares_getaddrinfo(FS(dm)->ch, h->name, NULL, &hints, answer, q);
}

/* ---- Suricata's eve.json ---- */

#define EVE_MAX_LINE (64u << 10) /* a longer line is skipped (counted as bad) */
#define EVE_MAX_READ (4u << 20)	 /* bytes read in one round */

/* "suricata:SID:MSG" with MSG %-escaped (base/pct.h: one word, as a
 * dynamic entry's origin is saved), at most about 200 bytes. */
static void eve_by(char *buf, size_t len, json_int_t sid, const char *msg)
{
	size_t n = (size_t)snprintf(buf, len, "suricata:%lld:", (long long)sid);

	for (const unsigned char *m = (const unsigned char *)(msg ? msg : ""); *m && n + 4 < len && n < 200; m++)
		n += (size_t)(pct_escaped(*m) ? snprintf(buf + n, len - n, "%%%02X", *m)
					      : snprintf(buf + n, len - n, "%c", *m));
}

#define EVE_BATCH	1024   /* bans put into the set at once */
#define EVE_MAX_ENTRIES 65536u /* a set of Suricata's offenders holds at most this many */

static void eve_flush(struct daemon *dm, struct feed *f);

/* The entry of set s that holds address a (entries never overlap: the
 * last one that starts at or before a), or NULL. */
static const struct dyn_entry *covering(const struct dyn_set *s, int fam, const uint8_t *a)
{
	unsigned len = fam ? 16 : 4;
	uint32_t lo = 0, hi = s->n[fam];
	const struct dyn_entry *e;

	while (lo < hi) { /* the first entry that starts after a */
		uint32_t mid = lo + (hi - lo) / 2;

		if (memcmp(s->v[fam][mid].addr, a, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	e = &s->v[fam][lo - 1];
	for (unsigned bit = 0; bit < e->plen; bit++)
		if (((e->addr[bit / 8] ^ a[bit / 8]) >> (7 - bit % 8)) & 1)
			return NULL;
	return e;
}

/* Whether the address is in the set already (also within a wider entry
 * someone put there), banned as long as a ban now would. */
static bool eve_banned(const struct daemon *dm, const struct feed *f, const struct prefix *p, int64_t expires)
{
	const struct dyn_set *s = dynsets_get(dyn_store(dm), f->set);
	int fam = p->family == POLICY_FAM_IPV6;
	const struct dyn_entry *e = s ? covering(s, fam, p->addr) : NULL;

	if (!e)
		return false;
	if (e->plen != p->plen)
		return true; /* a wider entry holds it: an entry of its own would overlap it */
	/* renewed within the last second, or for good: nothing to do */
	return !e->expires || (expires && e->expires >= expires - 1000);
}

static void eve_alert(struct daemon *dm, struct feed *f, json_t *ev)
{
	json_t *al = json_object_get(ev, "alert"), *src;
	const char *ip, *msg;
	json_int_t sev, sid;
	struct eve_ban b = { 0 };
	char by[320], rule[300];

	if (!json_is_object(al) || !json_is_integer(json_object_get(al, "severity")))
		return;
	f->alerts++;
	sev = json_integer_value(json_object_get(al, "severity"));
	if (sev < 1 || sev > f->severity)
		return;
	/* the rule's source (Suricata 7's alert.source with target:), else the packet's */
	src = json_object_get(json_object_get(al, "source"), "ip");
	ip = json_is_string(src) ? json_string_value(src) : json_string_value(json_object_get(ev, "src_ip"));
	sid = json_integer_value(json_object_get(al, "signature_id"));
	msg = json_string_value(json_object_get(al, "signature"));
	if (!ip)
		return;
	if (inet_pton(AF_INET, ip, b.c.pfx.addr) == 1) {
		b.c.pfx.family = POLICY_FAM_IPV4;
		b.c.pfx.plen = 32;
	} else if (inet_pton(AF_INET6, ip, b.c.pfx.addr) == 1) {
		b.c.pfx.family = POLICY_FAM_IPV6;
		b.c.pfx.plen = 128;
	} else {
		f->bad++;
		return;
	}
	b.c.expires = f->ban ? dyn_now_ms() + 1000LL * f->ban : 0;
	if (eve_banned(dm, f, &b.c.pfx, b.c.expires))
		return;
	eve_by(by, sizeof(by), sid, msg);
	if (!dyn_ban_allowed(dm, f->set, &b.c.pfx, by))
		return;
	if (set_entries(dm, f->set) + f->npend >= EVE_MAX_ENTRIES) {
		f->full++; /* a flood of (spoofed) sources must not take every set's room */
		return;
	}
	if (f->npend >= EVE_BATCH)
		eve_flush(dm, f); /* a flood of alerts: in batches, each checked against the one before */
	for (uint32_t i = 0; i < f->npend; i++)
		if (f->pend[i].c.pfx.family == b.c.pfx.family && !memcmp(f->pend[i].c.pfx.addr, b.c.pfx.addr, 16))
			return; /* in this round's batch already */
	if (f->npend == f->cpend) {
		struct eve_ban *nv = realloc(f->pend, (f->cpend = f->cpend ? 2 * f->cpend : 64) * sizeof(*nv));

		if (!nv) {
			f->cpend = f->npend;
			return;
		}
		f->pend = nv;
	}
	snprintf(rule, sizeof(rule), "suricata sid %lld: %s", (long long)sid, msg ? msg : "");
	if (!(b.by = strdup(by)) || !(b.rule = strdup(rule))) {
		free(b.by);
		return;
	}
	b.c.by = b.by;
	b.c.src = f->eve;
	b.sid = sid;
	b.sev = sev;
	f->pend[f->npend++] = b;
}

#define EVE_LOGGED_BANS 20 /* bans said one by one in a round; the rest counted */

/* The round's bans into the set at once (one change, one save), then an
 * event each and a line each for the first EVE_LOGGED_BANS. */
static void eve_flush(struct daemon *dm, struct feed *f)
{
	struct dyn_change *c;
	uint32_t added, deleted;
	struct timespec ts;
	struct diags d;

	if (!f->npend)
		return;
	diags_init(&d);
	if (!(c = calloc(f->npend, sizeof(*c)))) {
		log_warn("set %s: out of memory for %u bans", f->set, f->npend);
	} else {
		for (uint32_t i = 0; i < f->npend; i++)
			c[i] = f->pend[i].c;
		if (dyn_feed(dm, f->set, c, f->npend, false, &added, &deleted, &d) < 0) {
			log_warn("set %s: cannot add the sources of %u Suricata alerts: %s", f->set, f->npend,
				 diags_last(&d, "refused"));
		} else {
			clock_gettime(CLOCK_REALTIME, &ts);
			for (uint32_t i = 0; i < f->npend; i++) {
				const struct eve_ban *b = &f->pend[i];
				struct vevent v = { .hook = "ids",
						    .action = "ban",
						    .rule = b->rule,
						    .ts = (double)ts.tv_sec + ts.tv_nsec / 1e9,
						    .af = b->c.pfx.family == POLICY_FAM_IPV4 ? AF_INET : AF_INET6 };
				char a[64];

				memcpy(v.src, b->c.pfx.addr, 16);
				daemon_verdict(dm, &v);
				inet_ntop(v.af, b->c.pfx.addr, a, sizeof(a));
				if (i < EVE_LOGGED_BANS)
					log_info("set %s: %s banned by Suricata alert %lld (%s), severity %lld%s",
						 f->set, a, (long long)b->sid, b->rule + strcspn(b->rule, ":") + 2,
						 (long long)b->sev, f->ban ? "" : ", no timeout");
			}
			if (f->npend > EVE_LOGGED_BANS)
				log_info("set %s: and %u more sources banned by Suricata alerts in this round", f->set,
					 f->npend - EVE_LOGGED_BANS);
			f->bans += f->npend;
		}
		free(c);
	}
	diags_free(&d);
	for (uint32_t i = 0; i < f->npend; i++) {
		free(f->pend[i].by);
		free(f->pend[i].rule);
	}
	f->npend = 0;
}

static void eve_line(struct daemon *dm, struct feed *f, const char *line, size_t len)
{
	json_error_t err;
	json_t *ev;
	const char *type;

	if (!len)
		return;
	if (!(ev = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err)) || !json_is_object(ev)) {
		f->bad++;
		json_decref(ev);
		return;
	}
	type = json_string_value(json_object_get(ev, "event_type"));
	if (type && !strcmp(type, "alert"))
		eve_alert(dm, f, ev);
	json_decref(ev);
}

/* Whole lines of buf (n bytes) after what f->partial holds. */
static void eve_feed_bytes(struct daemon *dm, struct feed *f, const char *buf, size_t n)
{
	while (n) {
		const char *nl = memchr(buf, '\n', n);
		size_t take = nl ? (size_t)(nl - buf) : n;

		if (f->plen + take > EVE_MAX_LINE) { /* too long: skipped to its end */
			f->plen = EVE_MAX_LINE + 1;
		} else {
			char *np = realloc(f->partial, f->plen + take + 1);

			if (np) {
				memcpy(np + f->plen, buf, take);
				f->partial = np;
				f->plen += take;
			}
		}
		if (!nl)
			return;
		if (f->plen > EVE_MAX_LINE)
			f->bad++;
		else
			eve_line(dm, f, f->partial, f->plen);
		f->plen = 0;
		buf = nl + 1;
		n -= take + 1;
	}
}

static void eve_read(struct daemon *dm, struct feed *f)
{
	char buf[64 << 10];
	size_t total = 0;
	struct stat st;
	ssize_t r;

	if (f->fd >= 0 && stat(f->eve, &st) == 0 && (st.st_ino != f->ino || st.st_dev != f->dev)) {
		/* rotated: the rest of the old file, then the new one from its start */
		while ((r = read(f->fd, buf, sizeof(buf))) > 0)
			eve_feed_bytes(dm, f, buf, (size_t)r);
		close(f->fd);
		f->fd = -1;
		f->plen = 0;
		f->from_start = true;
	}
	if (f->fd < 0) {
		if ((f->fd = open(f->eve, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
			if (!f->problem[0] || errno != ENOENT)
				snprintf(f->problem, sizeof(f->problem), "%s: %s; waiting for it", f->eve,
					 strerror(errno));
			f->from_start = true; /* when it comes, all of it is new */
			return;
		}
		if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			snprintf(f->problem, sizeof(f->problem), "%s: not a regular file", f->eve);
			close(f->fd);
			f->fd = -1;
			eve_flush(dm, f);
			return;
		}
		f->problem[0] = '\0';
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		if (!f->from_start) /* there before us: what it holds was before us */
			lseek(f->fd, 0, SEEK_END);
		f->loaded = (long long)time(NULL);
	}
	if (fstat(f->fd, &st) == 0 && st.st_size < lseek(f->fd, 0, SEEK_CUR)) {
		lseek(f->fd, 0, SEEK_SET); /* truncated (copytruncate): from the start */
		f->plen = 0;
	}
	while (total < EVE_MAX_READ && (r = read(f->fd, buf, sizeof(buf))) > 0) {
		eve_feed_bytes(dm, f, buf, (size_t)r);
		total += (size_t)r;
	}
	eve_flush(dm, f);
}

/* ---- the feeds of the policy in force ---- */

static bool same_country(const struct feed *f, const struct addr_set *s)
{
	if (f->kind != SET_FEED_COUNTRY || strcmp(f->database, s->database) || f->ncc != s->ncountries)
		return false;
	for (uint32_t i = 0; i < f->ncc; i++)
		if (strcmp(f->cc[i], s->countries[i]))
			return false;
	return true;
}

static int feed_of(struct feed *f, const struct addr_set *s, struct feed *old)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->kind = s->feed;
	if (!(f->set = strdup(s->name)))
		return -ENOMEM;
	if (s->feed == SET_FEED_COUNTRY) {
		if (!(f->database = strdup(s->database)) || !(f->cc = malloc(s->ncountries * sizeof(*f->cc))))
			return -ENOMEM;
		memcpy(f->cc, s->countries, s->ncountries * sizeof(*f->cc));
		f->ncc = s->ncountries;
		if (old && same_country(old, s)) { /* the same: what was loaded stays, unless the file changed */
			f->st = old->st;
			f->have_st = old->have_st;
			f->loaded = old->loaded;
		}
		f->dirty = true;
		return 0;
	}
	if (s->feed == SET_FEED_URL)
		return 0; /* its fetcher: feeds_after_reload */
	if (s->feed == SET_FEED_EVE) {
		if (!(f->eve = strdup(s->eve ? s->eve : "")))
			return -ENOMEM;
		f->severity = s->severity;
		f->ban = s->ban;
		if (old && old->kind == SET_FEED_EVE && !strcmp(old->eve, f->eve)) {
			/* the same file: followed on from where it was, nothing missed */
			f->fd = old->fd;
			old->fd = -1;
			f->dev = old->dev;
			f->ino = old->ino;
			f->from_start = old->from_start;
			f->partial = old->partial;
			f->plen = old->plen;
			old->partial = NULL;
			f->alerts = old->alerts;
			f->bans = old->bans;
			f->bad = old->bad;
			f->full = old->full;
			f->loaded = old->loaded;
		}
		return 0;
	}
	f->min_ttl = s->min_ttl;
	f->max_ttl = s->max_ttl;
	f->grace = s->grace;
	if (!(f->h = calloc(s->nhosts ? s->nhosts : 1, sizeof(*f->h))))
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		if (!(f->h[i].name = strdup(s->hosts[i])))
			return -ENOMEM;
		f->nh++;
		/* a name asked before keeps its schedule and state; a new one is asked now */
		for (uint32_t k = 0; old && old->kind == SET_FEED_HOSTS && k < old->nh; k++)
			if (!strcmp(old->h[k].name, s->hosts[i])) {
				f->h[i].next_ms = old->h[k].asking ? 0 : old->h[k].next_ms;
				memcpy(f->h[i].problem, old->h[k].problem, sizeof(f->h[i].problem));
			}
	}
	if (old && old->kind == SET_FEED_HOSTS)
		f->loaded = old->loaded;
	return 0;
}

/* A url: set's fetcher: the one it had when its URL and CA are the same
 * (its list and its schedule: a reload fetches nothing), else a new one. */
static void url_fetcher_of(struct daemon *dm, struct feed *f, const struct addr_set *s, struct feed *old)
{
	struct fetcher *u = old && old->kind == SET_FEED_URL ? old->fetch : NULL;

	if (u && !strcmp(u->url, s->url) && !strcmp(u->ca ? u->ca : "", s->ca ? s->ca : "")) {
		uint32_t refresh = url_refresh(s->refresh);

		u->due += 1000LL * ((long long)refresh - (long long)u->refresh);
		u->refresh = refresh;
		f->fetch = u;
		old->fetch = NULL;
		return;
	}
	if (!(f->fetch = fetcher_new(dm, s)))
		log_err("set %s: its list from %s is not fetched (out of memory)", s->name, s->url);
}

static void feeds_close_all(struct daemon *dm);

static void feeds_after_reload(struct daemon *dm)
{
	const struct policy *p = daemon_in_force(dm)->pol;
	struct feeds *fs = FS(dm);
	struct feed *nv;
	uint32_t n = 0, want = 0;

	for (uint32_t i = 0; p && i < p->nsets; i++)
		want += p->sets[i].feed != SET_FEED_NONE;
	if (!want) {
		feeds_close_all(dm);
		return;
	}
	if (!fs) {
		if (!(fs = FS(dm) = calloc(1, sizeof(*fs))))
			return;
		fs->ino.fd = -1;
		fs->timer = (struct handler){ .fn = on_question_due, .ctx = dm };
		fs->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (fs->timer.fd >= 0 && loop_watch(daemon_loop(dm), &fs->timer) < 0) {
			close(fs->timer.fd);
			fs->timer.fd = -1;
		}
		if (fs->timer.fd < 0)
			log_warn("feeds: no timer (%s): host names are asked again at the loop's next round, up to "
				 "a second late",
				 strerror(errno));
	}
	if (!(nv = calloc(want, sizeof(*nv))))
		return;
	for (uint32_t i = 0; i < p->nsets; i++) {
		if (p->sets[i].feed == SET_FEED_NONE)
			continue;
		if (feed_of(&nv[n], &p->sets[i], feed_named(fs, p->sets[i].name)) < 0) {
			feed_free(&nv[n]);
			log_err("set %s: out of memory for its feed", p->sets[i].name);
			continue;
		}
		if (p->sets[i].feed == SET_FEED_URL)
			url_fetcher_of(dm, &nv[n], &p->sets[i], feed_named(fs, p->sets[i].name));
		n++;
	}
	for (uint32_t i = 0; i < fs->n; i++) {
		fetcher_drop(dm, fs->v[i].fetch);
		feed_free(&fs->v[i]);
	}
	free(fs->v);
	fs->v = nv;
	fs->n = n;
	fs->gen++;	   /* answers to the old feeds' questions are dropped; their names are asked anew */
	if (fs->have_ch) { /* a new channel at the next question: resolv.conf read again */
		ares_destroy(fs->ch);
		fs->have_ch = false;
	}
	watch_databases(dm);
	feeds_tick_dm(dm);
}

static void feeds_tick_dm(struct daemon *dm)
{
	struct feeds *fs = FS(dm);
	long long now;

	if (!fs)
		return;
	now = clock_ms(CLOCK_MONOTONIC);
	for (uint32_t i = 0; i < fs->n; i++) {
		struct feed *f = &fs->v[i];

		if (f->kind == SET_FEED_COUNTRY && f->dirty)
			country_load(dm, f);
		if (f->kind == SET_FEED_EVE)
			eve_read(dm, f);
		for (uint32_t k = 0; f->kind == SET_FEED_HOSTS && k < f->nh; k++)
			if (!f->h[k].asking && f->h[k].next_ms <= now)
				ask(dm, f, &f->h[k]);
		if (f->kind == SET_FEED_URL)
			url_tick(f, now);
	}
	if (fs->have_ch)
		ares_process_fd(fs->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts */
	arm_questions(fs);
}

static void feeds_close_all(struct daemon *dm)
{
	struct feeds *fs = FS(dm);

	if (!fs)
		return;
	fs->gen++;
	if (fs->have_ch)
		ares_destroy(fs->ch); /* each question's answer comes, ARES_EDESTRUCTION */
	for (uint32_t i = 0; i < fs->nsocks; i++) {
		loop_unwatch(daemon_loop(dm), &fs->socks[i]->h);
		free(fs->socks[i]);
	}
	free(fs->socks);
	if (fs->ino.fd >= 0) {
		loop_unwatch(daemon_loop(dm), &fs->ino);
		close(fs->ino.fd);
	}
	if (fs->timer.fd >= 0) {
		loop_unwatch(daemon_loop(dm), &fs->timer);
		close(fs->timer.fd);
	}
	for (uint32_t i = 0; i < fs->n; i++) {
		fetcher_drop(dm, fs->v[i].fetch);
		feed_free(&fs->v[i]);
	}
	free(fs->v);
	free(fs);
	FS(dm) = NULL;
}

/* ---- the part ---- */

static int feeds_open(struct daemon *dm, void **self, struct diags *d)
{
	struct feeds_part *p = calloc(1, sizeof(*p));

	if (!p)
		return diag_errno(d, -ENOMEM, "feeds");
	p->dm = dm;
	*self = p;
	return 0;
}

/* After a reload (or the start): the policy in force's feeds (re)loaded
 * where their definition or source changed, the others kept. */
static void feeds_settle(void *self, const struct change *c, int r)
{
	struct feeds_part *p = self;

	(void)c;
	if (r == 0)
		feeds_after_reload(p->dm);
}

/* Once a round: names whose refresh is due asked again. */
static void feeds_tick(void *self)
{
	struct feeds_part *p = self;

	feeds_tick_dm(p->dm);
}

static void feeds_text(const struct rep *o, FILE *f)
{
	char age[32];
	int i = 0;

	for (const struct rep *x = rep_first(o); x; x = rep_next(x), i++) {
		fprintf(f, "%-11s %s: %s, %s; %llu entries, loaded %s\n", i ? "" : "feeds:", rep_s(x, "set"),
			rep_s(x, "kind"), rep_s(x, "source"), (unsigned long long)rep_u(x, "entries"),
			rep_ago(rep_i(x, "loaded") * 1000, age, sizeof(age)));
		if (rep_has(x, "checked"))
			fprintf(f, "%-11s   checked %s\n", "", rep_ago(rep_i(x, "checked") * 1000, age, sizeof(age)));
		if (rep_has(x, "warning"))
			fprintf(f, "%-11s   warning: %s\n", "", rep_s(x, "warning"));
	}
}

/* A url: set's: the URL, when its list was fetched (loaded: its age), when
 * its server last answered (checked), and the last error (the set keeps
 * the last good list). */
static void url_status(struct daemon *dm, const struct fetcher *u, struct rep *o)
{
	char problem[640] = "";

	rep_str(o, "source", u ? u->url : "");
	rep_uint(o, "entries", set_entries(dm, u ? u->set : ""));
	if (u && u->shown.fetched)
		rep_int(o, "loaded", u->shown.fetched);
	else
		rep_null(o, "loaded");
	if (u && u->shown.checked)
		rep_int(o, "checked", u->shown.checked);
	else
		rep_null(o, "checked");
	if (!u)
		snprintf(problem, sizeof(problem), "not fetched (out of memory)");
	else if (u->problem[0])
		snprintf(problem, sizeof(problem), "%s", u->problem);
	else if (u->shown.error[0])
		snprintf(problem, sizeof(problem), "%s; the set keeps its %llu entries", u->shown.error,
			 (unsigned long long)set_entries(dm, u->set));
	rep_str(o, "warning", problem[0] ? problem : NULL);
}

/* One feed: its set, kind, source ("DE,FR from /var/lib/GeoIP/x.mmdb", "3
 * names"), the set's entries now, when it was last loaded or answered
 * (time(), null: not yet), and what is wrong (a warning: the set keeps
 * what it has). */
/* A country set that is empty because its database was never read: what
 * that means for the rules that name it (a deny-list that denies nothing
 * fails open), appended to its warning. */
static void empty_means(struct daemon *dm, const struct feed *f, char *buf, size_t len)
{
	const struct policy *p = daemon_in_force(dm)->pol;
	size_t at = strlen(buf);
	uint32_t idx = UINT32_MAX, named = 0;

	for (uint32_t i = 0; p && i < p->nsets; i++)
		if (!strcmp(p->sets[i].name, f->set))
			idx = i;
	if (idx == UINT32_MAX)
		return;
	at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%sset '%s' is empty until the database is read",
			       at ? "; " : "", f->set);
	for (uint32_t r = 0; r < p->nrules && at < len; r++) {
		const struct rule *ru = &p->rules[r];
		const struct addr_match *m = ru->from.dyn == idx + 1 ? &ru->from
					     : ru->to.dyn == idx + 1 ? &ru->to
								     : NULL;

		if (!m)
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%s rule '%s' %s", named++ ? "," : ":", ru->name,
				       m->neg			     ? "takes every address"
				       : ru->action == POLICY_ACCEPT ? "accepts nothing"
								     : "drops nothing");
	}
}

static void feed_status(struct daemon *dm, const struct feed *f, struct rep *o)
{
	char source[160] = "", problem[640] = "";
	size_t len = 0;

	rep_str(o, "set", f->set);
	rep_str(o, "kind",
		f->kind == SET_FEED_COUNTRY ? "country"
		: f->kind == SET_FEED_EVE   ? "suricata"
		: f->kind == SET_FEED_URL   ? "url"
					    : "hosts");
	if (f->kind == SET_FEED_URL) {
		url_status(dm, f->fetch, o);
		return;
	}
	if (f->kind == SET_FEED_COUNTRY) {
		for (uint32_t k = 0; k < f->ncc && len < sizeof(source) - 4; k++)
			len += (size_t)snprintf(source + len, sizeof(source) - len, "%s%s", k ? "," : "", f->cc[k]);
		if (len < sizeof(source))
			snprintf(source + len, sizeof(source) - len, " from %s", f->database);
		snprintf(problem, sizeof(problem), "%s", f->problem);
		if (f->problem[0] && !set_entries(dm, f->set))
			empty_means(dm, f, problem, sizeof(problem));
	} else if (f->kind == SET_FEED_EVE) {
		snprintf(source, sizeof(source),
			 "%s, severity 1-%u; %llu alerts, %llu bans, %llu lines not understood, %llu not banned (set "
			 "full)",
			 f->eve, f->severity, (unsigned long long)f->alerts, (unsigned long long)f->bans,
			 (unsigned long long)f->bad, (unsigned long long)f->full);
		snprintf(problem, sizeof(problem), "%s", f->problem);
	} else {
		snprintf(source, sizeof(source), "%u name%s", f->nh, f->nh == 1 ? "" : "s");
		for (uint32_t k = 0; k < f->nh; k++) {
			len = strlen(problem);
			if (f->h[k].problem[0] && len < sizeof(problem) - 2)
				snprintf(problem + len, sizeof(problem) - len, "%s%s", len ? "; " : "",
					 f->h[k].problem);
		}
	}
	rep_str(o, "source", source);
	rep_uint(o, "entries", set_entries(dm, f->set));
	if (f->loaded)
		rep_int(o, "loaded", f->loaded);
	else
		rep_null(o, "loaded");
	rep_str(o, "warning", problem[0] ? problem : NULL);
}

static void feeds_status(void *self, struct rep *status)
{
	struct feeds_part *p = self;
	struct rep *l = rep_list(status, "feeds");

	rep_text(l, feeds_text);
	for (uint32_t i = 0; p->fs && i < p->fs->n; i++)
		feed_status(p->dm, &p->fs->v[i], rep_object(l, NULL));
}

/* Every fetch under way told to end, and joined (within a second: libcurl
 * looks at cancel at least once a second); its result is not taken. */
static void feeds_stop(void *self, bool keep)
{
	struct feeds_part *p = self;

	(void)keep;
	for (uint32_t i = 0; p->fs && i < p->fs->n; i++)
		if (p->fs->v[i].fetch && !planted("urlset-stop-waits"))
			atomic_store(&p->fs->v[i].fetch->cancel, true);
	for (uint32_t i = 0; p->fs && i < p->fs->n; i++)
		if (p->fs->v[i].fetch)
			fetcher_join(p->fs->v[i].fetch);
	while (p->orphans) {
		struct fetcher *u = p->orphans;

		p->orphans = u->next;
		fetcher_join(u);
		fetcher_free(u);
	}
}

static void feeds_close(void *self)
{
	struct feeds_part *p = self;

	if (!p)
		return;
	feeds_close_all(p->dm);
	feeds_stop(p, false);
	free(p);
}

const struct part part_feeds = {
	.name = "feeds",
	.open = feeds_open,
	.settle = feeds_settle,
	.tick = feeds_tick,
	.status = feeds_status,
	.stop = feeds_stop,
	.close = feeds_close,
};
