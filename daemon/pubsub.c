// SPDX-License-Identifier: BSD-3-Clause
/*
 * Pub/sub: the registry of channels, patterns and shard channels, and the
 * delivery of messages to subscribers on any worker.
 *
 * The registry lock (registry_mutex below) protects the three registry dicts,
 * every target in them (its subscriber list and count) and the links of every
 * subscription into a target's list. It is a leaf lock: nothing is called
 * under it that takes another lock (no store, no shard locks, no mailbox, no
 * client registry), so it may be taken with shard locks held but never the
 * other way round. Receivers are collected under it and served after it is
 * released; mail is posted only then.
 *
 * A client's own state (struct ps_client, its per-kind dicts of
 * subscriptions, the soft-limit timer) is touched only by its worker, without
 * the lock. Other workers reach a ps_client only through a subscription
 * while holding the lock, and then read only its immutable id and worker.
 * A ps_client is freed by its worker after all its subscriptions have been
 * unlinked under the lock, so no other thread can still reach it.
 *
 * Mail names its receivers by client id. The receiving worker resolves an id
 * through its own thread-local map of subscribed clients, so a client freed
 * while mail was in flight for it is simply not found.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "client.h"
#include "config.h"
#include "dict.h"
#include "exec_ctx.h"
#include "log.h"
#include "mem.h"
#include "obuf.h"
#include "acl.h"
#include "pubsub.h"
#include "reply.h"
#include "store.h"
#include "util.h"
#include "worker.h"

/* A channel, pattern or shard channel with at least one subscriber. */
struct ps_target {
	struct dict_node node; /* in registry[kind] */
	struct ps_sub *subs;   /* doubly linked through prev/next */
	long nsubs;
	size_t len;
	char name[]; /* NUL-terminated */
};

/* One client's subscription to one target. */
struct ps_sub {
	struct dict_node node; /* in its client's subs[kind], keyed by the target's name */
	struct ps_sub *prev, *next;
	struct ps_target *target; /* immutable; lives as long as the subscription */
	struct ps_client *owner;
};

/* A client's pub/sub state, created on its first subscription. */
struct ps_client {
	struct dict_node node; /* in its worker's by_id map */
	struct client *c;      /* dereferenced only by its worker */
	uint64_t id;	       /* immutable: read by publishers under the lock */
	unsigned worker;       /* immutable: read by publishers under the lock */
	struct dict subs[PUBSUB_KINDS];
	/* Pushes to itself while it runs a command (PUBLISH to a channel it is
	 * subscribed to, in EXEC or a script too): the bytes, sent after the
	 * command's reply by pubsub_command_end, as Redis 8.8 does. */
	char *deferred;
	size_t dlen, dcap;
};

/* A published message, shared by the mail sent to several workers. */
struct ps_msg {
	int refs; /* one per mail; atomic */
	enum pubsub_kind kind;
	size_t chlen, msglen;
	char *ch, *msg; /* point into data */
	char data[];
};

/* One worker's share of a publication (the payload of a publication mail). */
struct ps_mail {
	struct ps_msg *msg;
	size_t n;
	struct ps_rcpt {
		uint64_t id;
		char *pat; /* the matching pattern (a copy), or NULL */
		size_t patlen;
	} r[];
};

static const char *const sub_reply[] = { "subscribe", "psubscribe", "ssubscribe" };
static const char *const unsub_reply[] = { "unsubscribe", "punsubscribe", "sunsubscribe" };

static uint64_t hash_bytes(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

static bool target_equal(const struct dict_node *node, const void *key, size_t len)
{
	const struct ps_target *t = (const struct ps_target *)node;

	return t->len == len && memcmp(t->name, key, len) == 0;
}

static bool sub_equal(const struct dict_node *node, const void *key, size_t len)
{
	const struct ps_sub *s = (const struct ps_sub *)node;

	return s->target->len == len && memcmp(s->target->name, key, len) == 0;
}

static bool id_equal(const struct dict_node *node, const void *key, size_t len)
{
	return ((const struct ps_client *)node)->id == *(const uint64_t *)key;
}

static const struct dict_type target_type = { .key_equal = target_equal };
static const struct dict_type sub_type = { .key_equal = sub_equal };
static const struct dict_type id_type = { .key_equal = id_equal };

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct dict registry[PUBSUB_KINDS] = {
	{ .type = &target_type },
	{ .type = &target_type },
	{ .type = &target_type },
};

/* This worker's subscribed clients by id (thread-local: no lock). */
static __thread struct dict by_id = { .type = &id_type };

static struct ps_client *find_by_id(uint64_t id)
{
	return (struct ps_client *)dict_find(&by_id, &id, sizeof(id), hash_bytes(&id, sizeof(id)));
}

/* c's state, created if needed. Owned by c; freed by pubsub_client_free. */
static struct ps_client *client_state(struct client *c)
{
	struct ps_client *pc = c->pubsub;

	if (pc)
		return pc;
	pc = xcalloc(1, sizeof(*pc));
	pc->c = c;
	pc->id = c->id;
	pc->worker = c->worker ? c->worker->id : 0;
	for (int k = 0; k < PUBSUB_KINDS; k++)
		dict_init(&pc->subs[k], &sub_type);
	pc->node.hash = hash_bytes(&pc->id, sizeof(pc->id));
	dict_insert(&by_id, &pc->node);
	c->pubsub = pc;
	return pc;
}

long pubsub_client_count(const struct client *c, enum pubsub_kind kind)
{
	return c->pubsub ? (long)c->pubsub->subs[kind].count : 0;
}

bool pubsub_client_subscribed(const struct client *c)
{
	const struct ps_client *pc = c->pubsub;

	return pc && (pc->subs[0].count || pc->subs[1].count || pc->subs[2].count);
}

/* The count a (un)subscribe confirmation carries: channels and patterns
 * together, shard channels apart, as Redis 7 counts them. */
static long confirm_count(const struct client *c, enum pubsub_kind kind)
{
	if (kind == PUBSUB_SHARD)
		return pubsub_client_count(c, PUBSUB_SHARD);
	return pubsub_client_count(c, PUBSUB_CHANNEL) + pubsub_client_count(c, PUBSUB_PATTERN);
}

/* Publishes the client's subscription counts for CLIENT LIST. */
static void publish_counts(struct client *c)
{
	for (int k = 0; k < PUBSUB_KINDS; k++)
		__atomic_store_n(&c->pubsub_counts[k], pubsub_client_count(c, k), __ATOMIC_RELAXED);
}

static void confirm(struct client *c, const char *what, enum pubsub_kind kind, const char *name,
		    size_t len)
{
	/* Pushes are sent even under CLIENT REPLY OFF, as in Redis. */
	c->flags |= CLIENT_PUSHING;
	reply_push(c, 3);
	reply_bulk_cstr(c, what);
	if (name)
		reply_bulk(c, name, len);
	else
		reply_null(c);
	reply_int(c, confirm_count(c, kind));
	c->flags &= ~CLIENT_PUSHING;
}

void pubsub_subscribe(struct client *c, enum pubsub_kind kind, const char *name, size_t len)
{
	struct ps_client *pc = client_state(c);
	uint64_t h = hash_bytes(name, len);

	if (!dict_find(&pc->subs[kind], name, len, h)) {
		struct ps_sub *s = xcalloc(1, sizeof(*s));
		struct ps_target *t;

		pthread_mutex_lock(&registry_mutex);
		t = (struct ps_target *)dict_find(&registry[kind], name, len, h);
		if (!t) {
			t = xcalloc(1, sizeof(*t) + len + 1);
			memcpy(t->name, name, len);
			t->len = len;
			t->node.hash = h;
			dict_insert(&registry[kind], &t->node);
		}
		s->next = t->subs;
		if (t->subs)
			t->subs->prev = s;
		t->subs = s;
		t->nsubs++;
		s->target = t;
		s->owner = pc;
		pthread_mutex_unlock(&registry_mutex);
		s->node.hash = h;
		dict_insert(&pc->subs[kind], &s->node);
		publish_counts(c);
	}
	confirm(c, sub_reply[kind], kind, name, len);
}

/* Unlinks s from its target, dropping the target if it was the last one,
 * and frees s. s is already out of its client's dict. */
static void drop_sub(enum pubsub_kind kind, struct ps_sub *s)
{
	struct ps_target *t = s->target;

	pthread_mutex_lock(&registry_mutex);
	if (s->prev)
		s->prev->next = s->next;
	else
		t->subs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	if (--t->nsubs == 0) {
		dict_remove(&registry[kind], &t->node);
		dict_maybe_shrink(&registry[kind]);
	} else {
		t = NULL;
	}
	pthread_mutex_unlock(&registry_mutex);
	xfree(t);
	xfree(s);
}

void pubsub_unsubscribe(struct client *c, enum pubsub_kind kind, const char *name, size_t len)
{
	struct ps_client *pc = c->pubsub;
	struct ps_sub *s = NULL;

	if (pc)
		s = (struct ps_sub *)dict_find(&pc->subs[kind], name, len, hash_bytes(name, len));
	if (s) {
		dict_remove(&pc->subs[kind], &s->node);
		dict_maybe_shrink(&pc->subs[kind]);
		publish_counts(c);
	}
	confirm(c, unsub_reply[kind], kind, name, len);
	if (s)
		drop_sub(kind, s);
}

struct sub_array {
	struct ps_sub **v;
	size_t n;
};

static void collect_sub(void *ctx, struct dict_node *node)
{
	struct sub_array *a = ctx;

	a->v[a->n++] = (struct ps_sub *)node;
}

void pubsub_unsubscribe_all(struct client *c, enum pubsub_kind kind, bool notify)
{
	struct ps_client *pc = c->pubsub;
	struct sub_array a = { NULL, 0 };
	uint64_t cursor = 0;

	if (!pc || !pc->subs[kind].count) {
		if (notify)
			confirm(c, unsub_reply[kind], kind, NULL, 0);
		return;
	}
	a.v = xmalloc(sizeof(*a.v) * pc->subs[kind].count);
	do
		cursor = dict_scan(&pc->subs[kind], cursor, collect_sub, &a);
	while (cursor);
	for (size_t i = 0; i < a.n; i++) {
		struct ps_sub *s = a.v[i];

		dict_remove(&pc->subs[kind], &s->node);
		publish_counts(c);
		if (notify)
			confirm(c, unsub_reply[kind], kind, s->target->name, s->target->len);
		drop_sub(kind, s);
	}
	dict_maybe_shrink(&pc->subs[kind]);
	xfree(a.v);
}

struct allowed_scan {
	const struct acl_user *u;
	bool pattern;
	bool ok;
};

static void check_allowed(void *ctx, struct dict_node *node)
{
	struct allowed_scan *a = ctx;
	const struct ps_sub *s = (const struct ps_sub *)node;

	if (a->ok && !acl_user_channel_allowed(a->u, s->target->name, s->target->len, a->pattern))
		a->ok = false;
}

bool pubsub_client_allowed(struct client *c, const struct acl_user *u)
{
	struct ps_client *pc = c->pubsub;

	if (!pc)
		return true;
	for (int k = 0; k < PUBSUB_KINDS; k++) {
		struct allowed_scan a = { u, k == PUBSUB_PATTERN, true };
		uint64_t cursor = 0;

		do
			cursor = dict_scan(&pc->subs[k], cursor, check_allowed, &a);
		while (cursor);
		if (!a.ok)
			return false;
	}
	return true;
}

void pubsub_client_free(struct client *c)
{
	struct ps_client *pc = c->pubsub;

	if (!pc)
		return;
	for (int k = 0; k < PUBSUB_KINDS; k++) {
		pubsub_unsubscribe_all(c, k, false);
		dict_destroy(&pc->subs[k]);
	}
	dict_remove(&by_id, &pc->node);
	dict_maybe_shrink(&by_id);
	c->pubsub = NULL;
	xfree(pc->deferred);
	xfree(pc);
}

/* ---- publishing --------------------------------------------------------- */

/* A receiver found under the lock. */
struct rcpt {
	struct ps_client *pc; /* dereferenced only when on the publisher's worker */
	uint64_t id;
	unsigned worker;
	char *pat; /* the matching pattern (a copy, owned here), or NULL */
	size_t patlen;
};

struct rcpt_list {
	struct rcpt *v;
	size_t n, cap;
	const char *ch; /* for pattern matching */
	size_t chlen;
};

static void add_rcpt(struct rcpt_list *l, const struct ps_client *pc, const struct ps_target *pat)
{
	struct rcpt *r;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, sizeof(*l->v) * l->cap);
	}
	r = &l->v[l->n++];
	r->pc = (struct ps_client *)pc;
	r->id = pc->id;
	r->worker = pc->worker;
	r->pat = pat ? xstrndup(pat->name, pat->len) : NULL;
	r->patlen = pat ? pat->len : 0;
}

static void match_pattern(void *ctx, struct dict_node *node)
{
	struct rcpt_list *l = ctx;
	const struct ps_target *p = (const struct ps_target *)node;

	if (!glob_match(p->name, p->len, l->ch, l->chlen, false))
		return;
	for (const struct ps_sub *s = p->subs; s; s = s->next)
		add_rcpt(l, s->owner, p);
}

/* Whether c is the client of the outermost running call (not a waiter served
 * on its behalf, which gets its answer inside another's command). */
static bool runs_command(const struct client *c)
{
	const struct exec_ctx *x = exec_ctx_top;

	while (x && x->outer)
		x = x->outer;
	return x && x->client == c && !(x->flags & EXEC_RETRY);
}

static void defer_add(struct ps_client *pc, const char *p, size_t len)
{
	if (pc->dlen + len > pc->dcap) {
		pc->dcap = (pc->dlen + len) * 2 + 64;
		pc->deferred = xrealloc(pc->deferred, pc->dcap);
	}
	memcpy(pc->deferred + pc->dlen, p, len);
	pc->dlen += len;
}

static void defer_bulk(struct ps_client *pc, const char *p, size_t len)
{
	char head[LL_STR_SIZE + 4];

	head[0] = '$';
	defer_add(pc, head, 1 + (size_t)ll_to_str(head + 1, (long long)len));
	defer_add(pc, "\r\n", 2);
	defer_add(pc, p, len);
	defer_add(pc, "\r\n", 2);
}

/* A message for the publisher itself, kept for after its reply. */
static void defer_message(struct ps_client *pc, const char *kind, const char *pat, size_t patlen,
			  const char *ch, size_t chlen, const char *msg, size_t msglen)
{
	defer_add(pc, pc->c->resp >= 3 ? ">" : "*", 1);
	defer_add(pc, pat ? "4\r\n" : "3\r\n", 3);
	defer_bulk(pc, kind, strlen(kind));
	if (pat)
		defer_bulk(pc, pat, patlen);
	defer_bulk(pc, ch, chlen);
	defer_bulk(pc, msg, msglen);
}

void pubsub_command_end(struct client *c)
{
	struct ps_client *pc = c->pubsub;

	if (!pc || !pc->dlen)
		return;
	c->flags |= CLIENT_PUSHING;
	reply_raw(c, pc->deferred, pc->dlen);
	c->flags &= ~CLIENT_PUSHING;
	pc->dlen = 0;
	if (pc->dcap > 65536) {
		xfree(pc->deferred);
		pc->deferred = NULL;
		pc->dcap = 0;
	}
}

/* Appends one message to a subscriber (on its own worker). */
static void push_message(struct ps_client *pc, enum pubsub_kind kind, const char *pat,
			 size_t patlen, const char *ch, size_t chlen, const char *msg,
			 size_t msglen)
{
	struct client *c = pc->c;

	if (c->closing || (c->flags & CLIENT_CLOSE_ASAP))
		return;
	if (runs_command(c)) {
		defer_message(pc,
			      pat		     ? "pmessage"
			      : kind == PUBSUB_SHARD ? "smessage"
						     : "message",
			      pat, patlen, ch, chlen, msg, msglen);
		return;
	}
	c->flags |= CLIENT_PUSHING;
	reply_push(c, pat ? 4 : 3);
	if (pat) {
		reply_bulk(c, "pmessage", 8);
		reply_bulk(c, pat, patlen);
	} else if (kind == PUBSUB_SHARD) {
		reply_bulk(c, "smessage", 8);
	} else {
		reply_bulk(c, "message", 7);
	}
	reply_bulk(c, ch, chlen);
	reply_bulk(c, msg, msglen);
	c->flags &= ~CLIENT_PUSHING;
	if (obuf_check(c))
		return;
	/* The publisher itself is flushed when its command ends. */
	if (c != exec_ctx_client())
		c->worker->engine->wants_write(c);
}

/* A publication for another worker's receivers (defined at the end). */
static const struct mail_ops publication_mail;

__thread unsigned pubsub_thread_worker = UINT_MAX;

/*
 * Publication mails posted to each worker and not yet delivered: written by
 * any publisher (before posting) and by the worker (after delivering). While
 * a worker has some, its own publications go by mail too, behind them: a
 * message written at once could otherwise overtake one published before it
 * (a key's earlier change, on another worker) that waits in the mailbox.
 * The publisher of that earlier message counted it before releasing the
 * lock that ordered the two (a shard lock), so the count is seen.
 */
static unsigned in_flight[PUBSUB_MAX_WORKERS];

/* Delivers from worker self's thread: its receivers are written at once
 * (self >= nworkers: none is, all get mail). */
static long long publish_from(unsigned self, enum pubsub_kind kind, const char *ch, size_t chlen,
			      const char *msg, size_t msglen)
{
	struct rcpt_list l = { .ch = ch, .chlen = chlen };
	unsigned nw = server.nworkers;
	size_t *count = NULL;
	struct ps_mail **mail = NULL;
	struct ps_msg *shared = NULL;
	size_t remote = 0;
	struct ps_target *t;

	pthread_mutex_lock(&registry_mutex);
	t = (struct ps_target *)dict_find(&registry[kind], ch, chlen, hash_bytes(ch, chlen));
	for (const struct ps_sub *s = t ? t->subs : NULL; s; s = s->next)
		add_rcpt(&l, s->owner, NULL);
	if (kind == PUBSUB_CHANNEL && registry[PUBSUB_PATTERN].count) {
		uint64_t cursor = 0;

		do
			cursor = dict_scan(&registry[PUBSUB_PATTERN], cursor, match_pattern, &l);
		while (cursor);
	}
	pthread_mutex_unlock(&registry_mutex);

	/* (Workers past the counters' bound always publish by mail.) */
	if (self < nw &&
	    (self >= PUBSUB_MAX_WORKERS || __atomic_load_n(&in_flight[self], __ATOMIC_ACQUIRE)))
		self = nw;
	/* Receivers on this worker are written at once; the others get one
	 * mail per worker, sharing one copy of the message. */
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].worker == self)
			continue;
		if (!count)
			count = xcalloc(nw, sizeof(*count));
		count[l.v[i].worker]++;
		remote++;
	}
	if (remote) {
		unsigned nmail = 0;

		shared = xmalloc(sizeof(*shared) + chlen + msglen);
		shared->kind = kind;
		shared->ch = shared->data;
		shared->chlen = chlen;
		memcpy(shared->ch, ch, chlen);
		shared->msg = shared->data + chlen;
		shared->msglen = msglen;
		memcpy(shared->msg, msg, msglen);
		mail = xcalloc(nw, sizeof(*mail));
		for (unsigned w = 0; w < nw; w++) {
			if (!count[w])
				continue;
			mail[w] = xmalloc(sizeof(*mail[w]) + count[w] * sizeof(mail[w]->r[0]));
			mail[w]->msg = shared;
			mail[w]->n = 0;
			nmail++;
		}
		shared->refs = (int)nmail;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct rcpt *r = &l.v[i];

		if (r->worker == self) {
			push_message(r->pc, kind, r->pat, r->patlen, ch, chlen, msg, msglen);
			xfree(r->pat);
		} else {
			struct ps_mail *m = mail[r->worker];

			m->r[m->n].id = r->id;
			m->r[m->n].pat = r->pat; /* now the mail's */
			m->r[m->n].patlen = r->patlen;
			m->n++;
		}
	}
	for (unsigned w = 0; remote && w < nw; w++) {
		if (!mail[w])
			continue;
		if (w < PUBSUB_MAX_WORKERS)
			__atomic_add_fetch(&in_flight[w], 1, __ATOMIC_RELEASE);
		worker_post_payload(&server.workers[w], &publication_mail, 0, mail[w]);
	}
	xfree(mail);
	xfree(count);
	xfree(l.v);
	return (long long)l.n;
}

long long pubsub_publish(struct client *c, enum pubsub_kind kind, const char *ch, size_t chlen,
			 const char *msg, size_t msglen)
{
	return publish_from(c->worker ? c->worker->id : 0, kind, ch, chlen, msg, msglen);
}

long long pubsub_publish_here(const char *ch, size_t chlen, const char *msg, size_t msglen)
{
	return publish_from(pubsub_thread_worker, PUBSUB_CHANNEL, ch, chlen, msg, msglen);
}

long long pubsub_publish_remote(bool shard, const char *ch, size_t chlen, const char *msg,
				size_t msglen)
{
	return publish_from(pubsub_thread_worker, shard ? PUBSUB_SHARD : PUBSUB_CHANNEL, ch, chlen,
			    msg, msglen);
}

void pubsub_mail_free(void *payload)
{
	struct ps_mail *m = payload;

	for (size_t i = 0; i < m->n; i++)
		xfree(m->r[i].pat);
	if (__atomic_sub_fetch(&m->msg->refs, 1, __ATOMIC_ACQ_REL) == 0)
		xfree(m->msg);
	xfree(m);
}

void pubsub_deliver(struct worker *w, void *payload)
{
	struct ps_mail *m = payload;
	const struct ps_msg *msg = m->msg;

	for (size_t i = 0; i < m->n; i++) {
		const struct ps_rcpt *r = &m->r[i];
		struct ps_client *pc = find_by_id(r->id);
		enum pubsub_kind k = r->pat ? PUBSUB_PATTERN : msg->kind;
		const char *name = r->pat ? r->pat : msg->ch;
		size_t len = r->pat ? r->patlen : msg->chlen;

		/* Gone, or unsubscribed since: its confirmation was the last
		 * word on that channel. */
		if (!pc || !dict_find(&pc->subs[k], name, len, hash_bytes(name, len)))
			continue;
		push_message(pc, msg->kind, r->pat, r->patlen, msg->ch, msg->chlen, msg->msg,
			     msg->msglen);
	}
	if (w->id < PUBSUB_MAX_WORKERS)
		__atomic_sub_fetch(&in_flight[w->id], 1, __ATOMIC_RELEASE);
	pubsub_mail_free(m);
}

/* ---- introspection ------------------------------------------------------ */

struct chan_list {
	const struct ps_target **v;
	size_t n;
	const char *pat;
	size_t plen;
};

static void collect_channel(void *ctx, struct dict_node *node)
{
	struct chan_list *l = ctx;
	const struct ps_target *t = (const struct ps_target *)node;

	if (!l->pat || glob_match(l->pat, l->plen, t->name, t->len, false))
		l->v[l->n++] = t;
}

void pubsub_reply_channels(struct client *c, enum pubsub_kind kind, const char *pat, size_t plen)
{
	struct chan_list l = { .pat = pat, .plen = plen };
	uint64_t cursor = 0;

	/* Replies are formatted under the lock: they only touch c's buffer. */
	pthread_mutex_lock(&registry_mutex);
	l.v = xmalloc(sizeof(*l.v) * (registry[kind].count + 1));
	do
		cursor = dict_scan(&registry[kind], cursor, collect_channel, &l);
	while (cursor);
	reply_array(c, (long)l.n);
	for (size_t i = 0; i < l.n; i++)
		reply_bulk(c, l.v[i]->name, l.v[i]->len);
	pthread_mutex_unlock(&registry_mutex);
	xfree(l.v);
}

long pubsub_numsub(enum pubsub_kind kind, const char *name, size_t len)
{
	const struct ps_target *t;
	long n;

	pthread_mutex_lock(&registry_mutex);
	t = (const struct ps_target *)dict_find(&registry[kind], name, len, hash_bytes(name, len));
	n = t ? t->nsubs : 0;
	pthread_mutex_unlock(&registry_mutex);
	return n;
}

long pubsub_active(enum pubsub_kind kind)
{
	long n;

	pthread_mutex_lock(&registry_mutex);
	n = (long)registry[kind].count;
	pthread_mutex_unlock(&registry_mutex);
	return n;
}

long pubsub_numpat(void)
{
	return pubsub_active(PUBSUB_PATTERN);
}

/* ---- cluster: shard channels of a slot this node loses ----------------------------------------- */

/* A subscriber to drop from one shard channel: the mail's payload. */
struct ps_kick {
	size_t len;
	char name[];
};

static void kick_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct ps_kick *k = payload;
	struct ps_client *pc = find_by_id(client_id);

	(void)w;
	/* Gone, or unsubscribed since: nothing to say. */
	if (pc && !pc->c->closing &&
	    dict_find(&pc->subs[PUBSUB_SHARD], k->name, k->len, hash_bytes(k->name, k->len))) {
		pubsub_unsubscribe(pc->c, PUBSUB_SHARD, k->name, k->len);
		if (!obuf_check(pc->c))
			pc->c->worker->engine->wants_write(pc->c);
	}
	xfree(k);
}

static void kick_drop(void *payload)
{
	xfree(payload);
}

static const struct mail_ops kick_mail = { .deliver = kick_deliver, .drop = kick_drop };

/* One subscription to a shard channel of the slot being lost. */
struct slot_sub {
	uint64_t id;
	unsigned worker;
	const struct ps_target *t; /* under the lock only */
	struct ps_kick *kick;
};

struct slot_subs {
	uint16_t slot;
	struct slot_sub *v;
	size_t n, cap;
};

static void collect_slot_subs(void *ctx, struct dict_node *node)
{
	struct slot_subs *l = ctx;
	const struct ps_target *t = (const struct ps_target *)node;

	if (key_slot(t->name, t->len) != l->slot)
		return;
	for (const struct ps_sub *s = t->subs; s; s = s->next) {
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 16;
			l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
		}
		l->v[l->n].id = s->owner->id;
		l->v[l->n].worker = s->owner->worker;
		l->v[l->n++].t = t;
	}
}

void pubsub_slot_changed(uint16_t slot, bool owned)
{
	struct slot_subs l = { .slot = slot };
	uint64_t cursor = 0;

	if (owned)
		return;
	/* The names are copied under the lock: a target lives only as long as
	 * its subscribers. Each subscriber's worker unsubscribes it. */
	pthread_mutex_lock(&registry_mutex);
	if (registry[PUBSUB_SHARD].count)
		do
			cursor = dict_scan(&registry[PUBSUB_SHARD], cursor, collect_slot_subs, &l);
		while (cursor);
	for (size_t i = 0; i < l.n; i++) {
		struct ps_kick *k = xmalloc(sizeof(*k) + l.v[i].t->len);

		k->len = l.v[i].t->len;
		memcpy(k->name, l.v[i].t->name, k->len);
		l.v[i].kick = k;
	}
	pthread_mutex_unlock(&registry_mutex);
	/* A SSUBSCRIBE that a worker runs between this and the owner's change
	 * (the caller's next store) is not kicked: a window of one store. */
	for (size_t i = 0; i < l.n; i++)
		worker_post_payload(&server.workers[l.v[i].worker], &kick_mail, l.v[i].id,
				    l.v[i].kick);
	xfree(l.v);
}

static void publication_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	(void)client_id;
	pubsub_deliver(w, payload);
}

static const struct mail_ops publication_mail = { .deliver = publication_deliver,
						  .drop = pubsub_mail_free };
