// SPDX-License-Identifier: BSD-3-Clause
/*
 * Client-side caching: the tracking table, BCAST prefixes, and invalidation
 * messages to clients on every worker (see tracking.h).
 *
 * The tracking lock (tlock below) protects the clients' tracking states
 * (by id), the key table, the prefix table and their counts. It is taken
 * under shard locks (the store hook, remembering a read's keys) and nothing
 * is taken under it: messages are collected under it into the thread's
 * outbox and sent once it is released. A state's flags and redirection are
 * written by its client's worker only, under the lock; other threads read
 * them under the lock. The owner's mirror in struct client (trk_flags,
 * trk_redir) is what CLIENT LIST reads, as relaxed atomics.
 *
 * Each worker has a tracking inbox (its own leaf lock). A message for a
 * client of another worker is appended there, and the first one wakes the
 * worker by mail; the worker empties the inbox when that mail comes and
 * before dispatching any command, so invalidations are never overtaken by
 * the reply to a command sent after the writer was answered. Messages that
 * must follow a blocked client's answer (which travels by mail) go by mail.
 *
 * Messages name their receivers by id; a receiver freed meanwhile is not
 * found on its worker. For a redirection that means the redirection broke:
 * the tracking client is told (`tracking-redir-broken`) by a message back.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "client.h"
#include "commands.h"
#include "config.h"
#include "dict.h"
#include "exec_ctx.h"
#include "mem.h"
#include "obuf.h"
#include "pubsub.h"
#include "reply.h"
#include "store.h"
#include "tracking.h"
#include "worker.h"

/* A tracking client's state; lives until the client is freed. */
struct trk_client {
	struct dict_node node; /* in states, by id */
	uint64_t id;
	struct worker *worker;
	unsigned flags;		      /* TRACKING_*; see the lock rules above */
	uint64_t redir;		      /* the client invalidations go to, or 0 */
	struct worker *redir_worker;  /* its worker */
	struct trk_prefix **prefixes; /* BCAST: the prefixes it is registered to */
	/* Its client, whose protocol (a relaxed atomic) a flush reads; valid
	 * while the state is in states (tracking_client_free removes it). */
	struct client *c;
	int nprefixes;
};

/* A key of the table and the clients that may cache it. */
struct trk_key {
	struct dict_node node; /* in keys */
	uint64_t *ids;	       /* sorted, no repeats */
	uint32_t n, cap;
	size_t len;
	char key[];
};

/* A BCAST prefix and its clients. */
struct trk_prefix {
	struct dict_node node; /* in prefixes */
	struct trk_client **clients;
	int n, cap;
	size_t len;
	char p[];
};

/* The payload of invalidations: the keys as a RESP array, shared. */
struct trk_msg {
	int refs; /* atomic */
	size_t len;
	char proto[];
};

enum trk_kind { SEND_KEYS, SEND_FLUSH, SEND_BROKEN };

/* One message to one client. */
struct trk_send {
	struct trk_send *next;
	enum trk_kind kind;
	bool redirect;	     /* sent to a redirection, not the tracking client */
	uint64_t to;	     /* the receiver */
	struct worker *to_w; /* its worker */
	uint64_t from;	     /* the tracking client it is for */
	struct worker *from_w;
	uint64_t redir_id;   /* SEND_BROKEN: the redirection that broke */
	int null_resp;	     /* SEND_FLUSH: the tracking client's protocol, whose
			      * null Redis sends (even to a RESP2 redirection) */
	struct trk_msg *msg; /* SEND_KEYS */
};

/* A worker's inbox of messages from other threads. */
struct trk_inbox {
	pthread_mutex_t lock;
	struct trk_send *head, *tail;
	unsigned long n; /* written under lock; read racily as a hint */
};

/* A key changed in a command, for BCAST clients: the last client to change
 * it (NOLOOP) or 0. */
struct trk_bkey {
	struct dict_node node;
	uint64_t by;
	size_t len;
	char key[];
};

static uint64_t hash_bytes(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

static bool state_equal(const struct dict_node *n, const void *key, size_t len)
{
	(void)len;
	return ((const struct trk_client *)n)->id == *(const uint64_t *)key;
}

static bool key_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct trk_key *k = (const struct trk_key *)n;

	return k->len == len && !memcmp(k->key, key, len);
}

static bool prefix_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct trk_prefix *p = (const struct trk_prefix *)n;

	return p->len == len && !memcmp(p->p, key, len);
}

static bool bkey_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct trk_bkey *b = (const struct trk_bkey *)n;

	return b->len == len && !memcmp(b->key, key, len);
}

static const struct dict_type state_type = { .key_equal = state_equal };
static const struct dict_type key_type = { .key_equal = key_equal };
static const struct dict_type prefix_type = { .key_equal = prefix_equal };
static const struct dict_type bkey_type = { .key_equal = bkey_equal };

static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static struct dict states = { .type = &state_type };
static struct dict keys = { .type = &key_type };
static struct dict prefixes = { .type = &prefix_type };
static uint64_t nitems;				   /* ids in the key table; under tlock */
static unsigned limit_rounds;			   /* tracking-table-max-keys effort; under tlock */
static uint64_t rand_state = 88172645463325252ull; /* under tlock */
unsigned long tracking_nclients;		   /* under tlock; read relaxed */
/* The key table's and the prefix table's sizes, for the hooks' quick
 * tests and INFO: written under tlock, read anywhere (relaxed). */
static uint64_t nkeys_hint, nprefixes_hint;

static struct trk_inbox inboxes[PUBSUB_MAX_WORKERS] = {
	[0 ... PUBSUB_MAX_WORKERS - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

/* Thread-local: messages collected under tlock, to send once it is
 * released; messages for the running command's client, sent after its
 * reply; the keys a command changed, for BCAST clients; a flush to report. */
static __thread struct trk_send *out_head, *out_tail;
static __thread struct trk_send *pend_head, *pend_tail;
static __thread struct dict bkeys = { .type = &bkey_type };
static __thread bool flush_noted;

static void msg_unref(struct trk_msg *m)
{
	if (m && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0)
		xfree(m);
}

static void send_free(struct trk_send *s)
{
	msg_unref(s->msg);
	xfree(s);
}

static void append(struct trk_send **head, struct trk_send **tail, struct trk_send *s)
{
	s->next = NULL;
	if (*tail)
		(*tail)->next = s;
	else
		*head = s;
	*tail = s;
}

/* The call whose client counts as "the current client", as Redis's
 * server.current_client: the outermost, or a served waiter's own. */
static const struct exec_ctx *current_ctx(void)
{
	const struct exec_ctx *x = exec_ctx_top;

	while (x && x->outer && !((x->flags & EXEC_RETRY) && !(x->outer->flags & EXEC_RETRY)))
		x = x->outer;
	return x;
}

static uint64_t current_id(void)
{
	const struct exec_ctx *x = current_ctx();

	return x && x->client ? x->client->id : 0;
}

static struct trk_client *find_state(uint64_t id)
{
	return (struct trk_client *)dict_find(&states, &id, sizeof(id),
					      hash_bytes(&id, sizeof(id)));
}

static struct worker *this_worker(void)
{
	return pubsub_thread_worker < server.nworkers ? &server.workers[pubsub_thread_worker]
						      : NULL;
}

/* Queues a message for st (tlock held). msg's reference is the caller's to
 * share: one is taken here. */
static void queue_locked(struct trk_client *st, enum trk_kind kind, struct trk_msg *msg)
{
	struct trk_send *s = xcalloc(1, sizeof(*s));

	s->kind = kind;
	s->redirect = st->redir != 0;
	s->to = st->redir ? st->redir : st->id;
	s->to_w = st->redir ? st->redir_worker : st->worker;
	s->from = st->id;
	s->from_w = st->worker;
	if (msg) {
		__atomic_add_fetch(&msg->refs, 1, __ATOMIC_RELAXED);
		s->msg = msg;
	}
	append(&out_head, &out_tail, s);
}

static void publish_mirror(struct client *c, const struct trk_client *st)
{
	__atomic_store_n(&c->trk_flags, st ? st->flags : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->trk_redir, st ? st->redir : 0, __ATOMIC_RELAXED);
}

static void route(struct trk_send *s);

/* Writes s to c, its receiver on this thread. */
static void write_to(struct client *c, const struct trk_send *s)
{
	unsigned old = c->flags & CLIENT_PUSHING;

	if (c->closing || (c->flags & CLIENT_CLOSE_ASAP))
		return;
	/* Pushes are sent even under CLIENT REPLY OFF, as in Redis. */
	c->flags |= CLIENT_PUSHING;
	if (s->kind == SEND_BROKEN) {
		if (c->resp < 3)
			goto done;
		reply_push(c, 2);
		reply_bulk(c, "tracking-redir-broken", 21);
		reply_int(c, (long long)s->redir_id);
	} else {
		if (c->resp >= 3) {
			reply_push(c, 2);
			reply_bulk(c, "invalidate", 10);
		} else if (s->redirect && pubsub_client_subscribed(c)) {
			/* RESP2 has no pushes: a redirection that listens gets
			 * a message of the channel. */
			reply_push(c, 3);
			reply_bulk(c, "message", 7);
			reply_bulk(c, "__redis__:invalidate", 20);
		} else {
			goto done;
		}
		if (s->kind == SEND_FLUSH)
			reply_raw(c, s->null_resp >= 3 ? "_\r\n" : "$-1\r\n",
				  s->null_resp >= 3 ? 3 : 5);
		else
			reply_raw(c, s->msg->proto, s->msg->len);
	}
	c->flags = (c->flags & ~CLIENT_PUSHING) | old;
	if (obuf_check(c))
		return;
	if (c != exec_ctx_client())
		c->worker->engine->wants_write(c);
	return;
done:
	c->flags = (c->flags & ~CLIENT_PUSHING) | old;
}

/* Delivers s on w, this thread's worker; consumes s. */
static void deliver_here(struct worker *w, struct trk_send *s)
{
	struct client *c = worker_find_client(w, s->to);

	/* A redirection that is closing (QUIT answered, killed) is gone too:
	 * what it would be sent is dropped, and Redis, which frees it before
	 * its next event, reports the break. */
	if (c && s->redirect && s->kind != SEND_BROKEN &&
	    (c->closing || (c->flags & (CLIENT_CLOSE_ASAP | CLIENT_CLOSE_AFTER_REPLY))))
		c = NULL;
	if (!c) {
		if (s->redirect && s->kind != SEND_BROKEN) {
			/* Tell the tracking client its redirection is gone. */
			msg_unref(s->msg);
			s->msg = NULL;
			s->kind = SEND_BROKEN;
			s->redir_id = s->to;
			s->redirect = false;
			s->to = s->from;
			s->to_w = s->from_w;
			route(s);
			return;
		}
		send_free(s);
		return;
	}
	if (s->kind == SEND_BROKEN && c->tracking) {
		pthread_mutex_lock(&tlock);
		c->tracking->flags |= TRACKING_BROKEN_REDIR;
		publish_mirror(c, c->tracking);
		pthread_mutex_unlock(&tlock);
	}
	write_to(c, s);
	send_free(s);
}

static void inbox_drain(struct worker *w)
{
	struct trk_inbox *in = &inboxes[w->id];
	struct trk_send *s;

	pthread_mutex_lock(&in->lock);
	s = in->head;
	in->head = in->tail = NULL;
	__atomic_store_n(&in->n, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&in->lock);
	while (s) {
		struct trk_send *next = s->next;

		deliver_here(w, s);
		s = next;
	}
}

static void inbox_mail_deliver(struct worker *w, uint64_t id, void *payload)
{
	(void)id;
	(void)payload;
	inbox_drain(w);
}

static const struct mail_ops inbox_mail = { .deliver = inbox_mail_deliver };

/* A message that must follow mail already posted (a served waiter's
 * answer): it travels by mail itself. */
static void send_mail_deliver(struct worker *w, uint64_t id, void *payload)
{
	(void)id;
	deliver_here(w, payload);
}

static void send_mail_drop(void *payload)
{
	send_free(payload);
}

static const struct mail_ops send_mail = { .deliver = send_mail_deliver, .drop = send_mail_drop };

static void inbox_post(struct worker *w, struct trk_send *s)
{
	struct trk_inbox *in = &inboxes[w->id];
	bool first;

	pthread_mutex_lock(&in->lock);
	append(&in->head, &in->tail, s);
	first = __atomic_fetch_add(&in->n, 1, __ATOMIC_RELAXED) == 0;
	pthread_mutex_unlock(&in->lock);
	if (first)
		worker_post(w, &inbox_mail, 0);
}

/* Sends s now: written here if its receiver is on this thread's worker
 * (after what waits in this worker's inbox), else to its worker's inbox. */
static void route(struct trk_send *s)
{
	struct worker *self = this_worker();

	if (s->to_w != self) {
		inbox_post(s->to_w, s);
		return;
	}
	if (__atomic_load_n(&inboxes[self->id].n, __ATOMIC_RELAXED))
		inbox_drain(self);
	deliver_here(self, s);
}

/* Sends what was collected under tlock (released). A message for the
 * running command's client waits for its reply. */
static void dispatch_out(uint64_t cur)
{
	struct trk_send *s = out_head;

	out_head = out_tail = NULL;
	while (s) {
		struct trk_send *next = s->next;

		if (cur && s->to == cur)
			append(&pend_head, &pend_tail, s);
		else
			route(s);
		s = next;
	}
}

/* Sends the messages that waited for a command's reply. One for a client
 * blocked on this worker, or on another, follows its answer by mail. */
static void send_pending(void)
{
	struct trk_send *s = pend_head;
	struct worker *self = this_worker();

	pend_head = pend_tail = NULL;
	while (s) {
		struct trk_send *next = s->next;
		struct client *c = s->to_w == self ? worker_find_client(self, s->to) : NULL;

		if (c && !c->blocked)
			route(s);
		else
			worker_post_payload(s->to_w, &send_mail, s->to, s);
		s = next;
	}
}

static struct trk_msg *msg_new(size_t cap)
{
	struct trk_msg *m = xmalloc(sizeof(*m) + cap);

	m->refs = 1;
	m->len = 0;
	return m;
}

static void msg_add(struct trk_msg *m, char type, const char *p, size_t len)
{
	m->len += (size_t)sprintf(m->proto + m->len, "%c%zu\r\n", type, len);
	if (p) {
		memcpy(m->proto + m->len, p, len);
		m->len += len;
		memcpy(m->proto + m->len, "\r\n", 2);
		m->len += 2;
	}
}

static void key_free(struct trk_key *k)
{
	xfree(k->ids);
	xfree(k);
}

/* Removes key from the table and queues its invalidation for every client
 * that may cache it (tlock held). cur: the current client (NOLOOP). */
static void invalidate_locked(struct trk_key *k, uint64_t cur)
{
	struct trk_msg *m = NULL;

	for (uint32_t i = 0; i < k->n; i++) {
		struct trk_client *st = find_state(k->ids[i]);

		/* Gone, off, or in BCAST mode since it read the key. */
		if (!st || !(st->flags & TRACKING_ON) || (st->flags & TRACKING_BCAST))
			continue;
		if ((st->flags & TRACKING_NOLOOP) && st->id == cur)
			continue;
		if (!m) {
			m = msg_new(k->len + 48);
			msg_add(m, '*', NULL, 1);
			msg_add(m, '$', k->key, k->len);
		}
		queue_locked(st, SEND_KEYS, m);
	}
	msg_unref(m);
	nitems -= k->n;
	dict_remove(&keys, &k->node);
	__atomic_store_n(&nkeys_hint, keys.count, __ATOMIC_RELAXED);
	key_free(k);
}

static void bkey_free(struct dict_node *n)
{
	xfree(n);
}

/* Byte order, a prefix first: the order of Redis's radix trees, in which
 * it lists keys and prefixes. */
static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int r = memcmp(a, b, alen < blen ? alen : blen);

	return r ? r : (alen > blen) - (alen < blen);
}

static int bkey_cmp(const void *x, const void *y)
{
	const struct trk_bkey *a = *(struct trk_bkey *const *)x, *b = *(struct trk_bkey *const *)y;

	return bytes_cmp(a->key, a->len, b->key, b->len);
}

static int prefix_cmp(const void *x, const void *y)
{
	const struct trk_prefix *a = *(struct trk_prefix *const *)x;
	const struct trk_prefix *b = *(struct trk_prefix *const *)y;

	return bytes_cmp(a->p, a->len, b->p, b->len);
}

/* Nodes of a dict, collected into an array by dict_scan. */
struct node_list {
	struct dict_node **v;
	size_t n;
};

static void collect(void *ctx, struct dict_node *n)
{
	struct node_list *l = ctx;

	l->v[l->n++] = n;
}

static void collect_all(struct dict *d, struct node_list *l)
{
	uint64_t cur = 0;

	l->v = xmalloc((d->count ? d->count : 1) * sizeof(*l->v));
	l->n = 0;
	do
		cur = dict_scan(d, cur, collect, l);
	while (cur);
}

static bool bkey_matches(const struct trk_prefix *p, const struct trk_bkey *b)
{
	return b->len >= p->len && !memcmp(b->key, p->p, p->len);
}

/* The changed keys (sorted) under p, less those last changed by skip (a
 * NOLOOP client; 0 for none), as one message; NULL if there are none. */
static struct trk_msg *bcast_msg(const struct node_list *bk, const struct trk_prefix *p,
				 uint64_t skip)
{
	size_t count = 0, bytes = 24;
	struct trk_msg *m;

	for (size_t i = 0; i < bk->n; i++) {
		const struct trk_bkey *b = (const struct trk_bkey *)bk->v[i];

		if (bkey_matches(p, b) && (!skip || b->by != skip)) {
			count++;
			bytes += b->len + 24;
		}
	}
	if (!count)
		return NULL;
	m = msg_new(bytes);
	msg_add(m, '*', NULL, count);
	for (size_t i = 0; i < bk->n; i++) {
		const struct trk_bkey *b = (const struct trk_bkey *)bk->v[i];

		if (bkey_matches(p, b) && (!skip || b->by != skip))
			msg_add(m, '$', b->key, b->len);
	}
	return m;
}

/* Queues p's message to each of its clients (tlock held). */
static void bcast_prefix(const struct node_list *bk, const struct trk_prefix *p)
{
	struct trk_msg *all = NULL;
	bool built = false;

	for (int i = 0; i < p->n; i++) {
		struct trk_client *st = p->clients[i];

		if (st->flags & TRACKING_NOLOOP) {
			struct trk_msg *m = bcast_msg(bk, p, st->id);

			if (m)
				queue_locked(st, SEND_KEYS, m);
			msg_unref(m);
			continue;
		}
		if (!built) {
			all = bcast_msg(bk, p, 0);
			built = true;
		}
		if (all)
			queue_locked(st, SEND_KEYS, all);
	}
	msg_unref(all);
}

/* Sends the keys changed since the last call to the BCAST clients whose
 * prefixes they match: one message per prefix, prefixes and keys in
 * Redis's order. */
static void flush_bcast(void)
{
	struct node_list bk, pl;

	if (!bkeys.count)
		return;
	collect_all(&bkeys, &bk);
	qsort(bk.v, bk.n, sizeof(*bk.v), bkey_cmp);
	pthread_mutex_lock(&tlock);
	collect_all(&prefixes, &pl);
	qsort(pl.v, pl.n, sizeof(*pl.v), prefix_cmp);
	for (size_t i = 0; i < pl.n; i++)
		bcast_prefix(&bk, (const struct trk_prefix *)pl.v[i]);
	pthread_mutex_unlock(&tlock);
	xfree(pl.v);
	xfree(bk.v);
	dict_clear(&bkeys, bkey_free);
	dict_destroy(&bkeys); /* thread-local: nothing outlives the thread */
	dispatch_out(0);
}

/* Notes key for BCAST clients, changed by client `by` (0 for none). */
static void note_bcast(const char *key, size_t len, uint64_t by)
{
	uint64_t h = hash_bytes(key, len);
	struct trk_bkey *b = (struct trk_bkey *)dict_find(&bkeys, key, len, h);

	if (!b) {
		b = xmalloc(sizeof(*b) + len);
		b->len = len;
		memcpy(b->key, key, len);
		b->node.hash = h;
		dict_insert(&bkeys, &b->node);
	}
	b->by = by;
}

static void flush_state(void *ctx, struct dict_node *n)
{
	struct trk_client *st = (struct trk_client *)n;

	(void)ctx;
	if (st->flags & TRACKING_ON) {
		queue_locked(st, SEND_FLUSH, NULL);
		out_tail->null_resp = __atomic_load_n(&st->c->resp, __ATOMIC_RELAXED);
	}
}

static void free_key_node(struct dict_node *n)
{
	key_free((struct trk_key *)n);
}

/* A database was flushed or swapped: every tracking client hears "all
 * keys" (a null), and the table is emptied, as Redis does. */
static void do_flush(void)
{
	uint64_t cur = 0;

	pthread_mutex_lock(&tlock);
	do
		cur = dict_scan(&states, cur, flush_state, NULL);
	while (cur);
	dict_clear(&keys, free_key_node);
	nitems = 0;
	__atomic_store_n(&nkeys_hint, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tlock);
	dispatch_out(exec_ctx_top ? current_id() : 0);
}

void tracking_on_change(const struct db_change *ch)
{
	bool bcast = __atomic_load_n(&nprefixes_hint, __ATOMIC_RELAXED) != 0;
	uint64_t cur;
	struct trk_key *k;

	if (!__atomic_load_n(&tracking_nclients, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED))
		return;
	if (ch->reason == DB_CHANGE_FLUSH || ch->reason == DB_CHANGE_SWAP) {
		/* FLUSHALL flushes every database: one message, once the
		 * command is done. */
		if (exec_ctx_top)
			flush_noted = true;
		else
			do_flush();
		return;
	}
	cur = current_id();
	if (bcast)
		note_bcast(ch->e->key, entry_klen(ch->e), cur);
	pthread_mutex_lock(&tlock);
	k = (struct trk_key *)dict_find(&keys, ch->e->key, entry_klen(ch->e),
					hash_bytes(ch->e->key, entry_klen(ch->e)));
	if (k)
		invalidate_locked(k, cur);
	pthread_mutex_unlock(&tlock);
	dispatch_out(exec_ctx_top ? cur : 0);
	/* Outside commands (active expiry, eviction) nothing batches. */
	if (!exec_ctx_top && bcast)
		flush_bcast();
}

/* Adds id to key's clients (tlock held). */
static void remember_locked(const char *key, size_t len, uint64_t id)
{
	uint64_t h = hash_bytes(key, len);
	struct trk_key *k = (struct trk_key *)dict_find(&keys, key, len, h);
	uint32_t lo = 0, hi;

	if (!k) {
		k = xcalloc(1, sizeof(*k) + len);
		k->len = len;
		memcpy(k->key, key, len);
		k->node.hash = h;
		dict_insert(&keys, &k->node);
		__atomic_store_n(&nkeys_hint, keys.count, __ATOMIC_RELAXED);
	}
	hi = k->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (k->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < k->n && k->ids[lo] == id)
		return;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 2;
		k->ids = xrealloc(k->ids, k->cap * sizeof(*k->ids));
	}
	memmove(k->ids + lo + 1, k->ids + lo, (k->n - lo) * sizeof(*k->ids));
	k->ids[lo] = id;
	k->n++;
	nitems++;
}

/* Does a client with these flags have the keys it reads remembered? OPTIN
 * only after CLIENT CACHING YES, OPTOUT unless after CLIENT CACHING NO. */
static bool tracking_wants(unsigned f)
{
	return (f & TRACKING_ON) && !(f & TRACKING_BCAST) &&
	       !((f & TRACKING_OPTIN) && !(f & TRACKING_CACHING)) &&
	       !((f & TRACKING_OPTOUT) && (f & TRACKING_CACHING));
}

/* Remembers the keys c's read command read, for the current client if it
 * tracks (and not in BCAST mode). Under the command's shard locks. */
static void remember(struct client *c, const struct command *cmd)
{
	const struct exec_ctx *x = current_ctx();
	struct client *tc = x ? x->client : NULL;
	struct trk_client *st;
	int stack[16], *idx = stack, n;

	/* A real client's state is its worker's to read without the lock; a
	 * served waiter's stand-in (no socket) is looked up by its id. */
	if (!tc || (!tc->tracking && tc->fd >= 0))
		return;
	if (tc->tracking && !tracking_wants(tc->tracking->flags))
		return;
	/* Read-only scripts count by the commands they run. */
	if (cmd->fn == cmd_eval_ro || cmd->fn == cmd_evalsha_ro || cmd->fn == cmd_fcall_ro ||
	    (cmd->flags & CMD_PUBSUB))
		return;
	if (c->argc > (int)(sizeof(stack) / sizeof(stack[0])))
		idx = xmalloc((size_t)c->argc * sizeof(*idx));
	n = command_key_indexes(cmd, c->argc, c->argv, idx, NULL, c->argc);
	if (n > 0) {
		pthread_mutex_lock(&tlock);
		st = tc->tracking ? tc->tracking : find_state(tc->id);
		if (st && tracking_wants(st->flags))
			for (int i = 0; i < n; i++)
				remember_locked(c->argv[idx[i]].p, c->argv[idx[i]].len, st->id);
		pthread_mutex_unlock(&tlock);
	}
	if (idx != stack)
		xfree(idx);
}

void tracking_call_done(struct client *c, const struct command *cmd)
{
	if ((cmd->flags & CMD_READONLY) && __atomic_load_n(&tracking_nclients, __ATOMIC_RELAXED))
		remember(c, cmd);
	if (flush_noted) {
		flush_noted = false;
		do_flush();
	}
}

void tracking_command_end(struct client *c, const struct command *cmd)
{
	struct trk_client *st = c->tracking;

	if (bkeys.count)
		flush_bcast();
	if (pend_head)
		send_pending();
	/* CLIENT CACHING covers the next command, or the next transaction. */
	if (st && (st->flags & TRACKING_CACHING) && !c->in_multi &&
	    !(cmd->parent && !strcmp(cmd->parent->name, "client"))) {
		pthread_mutex_lock(&tlock);
		st->flags &= ~TRACKING_CACHING;
		publish_mirror(c, st);
		pthread_mutex_unlock(&tlock);
	}
}

static uint64_t next_rand(void)
{
	rand_state ^= rand_state << 13;
	rand_state ^= rand_state >> 7;
	rand_state ^= rand_state << 17;
	return rand_state;
}

/* tracking-table-max-keys: forgets random keys, telling their clients, as
 * if they had changed; the effort grows while the table stays too big. */
static void limit_table(void)
{
	uint64_t max = (uint64_t)__atomic_load_n(&config.tracking_table_max_keys, __ATOMIC_RELAXED);

	if (!max || __atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED) <= max) {
		if (limit_rounds && __atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED) <= max) {
			pthread_mutex_lock(&tlock);
			limit_rounds = 0;
			pthread_mutex_unlock(&tlock);
		}
		return;
	}
	pthread_mutex_lock(&tlock);
	if (keys.count > max) {
		int effort = 100 * (int)(limit_rounds + 1);

		while (effort-- > 0 && keys.count > max)
			invalidate_locked((struct trk_key *)dict_random(&keys, next_rand()), 0);
		if (keys.count > max)
			limit_rounds++;
		else
			limit_rounds = 0;
	}
	pthread_mutex_unlock(&tlock);
	dispatch_out(0);
}

void tracking_before_command(struct client *c)
{
	struct worker *w = c->worker;

	if (__atomic_load_n(&inboxes[w->id].n, __ATOMIC_RELAXED))
		inbox_drain(w);
	if (pend_head)
		send_pending();
	if (__atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED))
		limit_table();
}

void tracking_cron(struct worker *w)
{
	if (__atomic_load_n(&inboxes[w->id].n, __ATOMIC_RELAXED))
		inbox_drain(w);
	if (bkeys.count)
		flush_bcast();
	if (pend_head)
		send_pending();
	if (__atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED))
		limit_table();
}

/* ---- the client's side ---------------------------------------------- */

static struct trk_prefix *prefix_get(const char *p, size_t len)
{
	uint64_t h = hash_bytes(p, len);
	struct trk_prefix *tp = (struct trk_prefix *)dict_find(&prefixes, p, len, h);

	if (!tp) {
		tp = xcalloc(1, sizeof(*tp) + len + 1);
		tp->len = len;
		memcpy(tp->p, p, len);
		tp->node.hash = h;
		dict_insert(&prefixes, &tp->node);
		__atomic_store_n(&nprefixes_hint, prefixes.count, __ATOMIC_RELAXED);
	}
	return tp;
}

/* Registers st to p (tlock held); nothing if it already is. */
static void prefix_add_locked(struct trk_client *st, const char *p, size_t len)
{
	struct trk_prefix *tp = prefix_get(p, len);

	for (int i = 0; i < tp->n; i++)
		if (tp->clients[i] == st)
			return;
	if (tp->n == tp->cap) {
		tp->cap = tp->cap ? tp->cap * 2 : 4;
		tp->clients = xrealloc(tp->clients, (size_t)tp->cap * sizeof(*tp->clients));
	}
	tp->clients[tp->n++] = st;
	st->prefixes = xrealloc(st->prefixes, (size_t)(st->nprefixes + 1) * sizeof(*st->prefixes));
	st->prefixes[st->nprefixes++] = tp;
}

/* Unregisters st from all its prefixes (tlock held). */
static void prefixes_drop_locked(struct trk_client *st)
{
	for (int i = 0; i < st->nprefixes; i++) {
		struct trk_prefix *tp = st->prefixes[i];

		for (int j = 0; j < tp->n; j++) {
			if (tp->clients[j] == st) {
				tp->clients[j] = tp->clients[--tp->n];
				break;
			}
		}
		if (!tp->n) {
			dict_remove(&prefixes, &tp->node);
			__atomic_store_n(&nprefixes_hint, prefixes.count, __ATOMIC_RELAXED);
			dict_maybe_shrink(&prefixes);
			xfree(tp->clients);
			xfree(tp);
		}
	}
	xfree(st->prefixes);
	st->prefixes = NULL;
	st->nprefixes = 0;
}

void tracking_enable(struct client *c, uint64_t redir, struct worker *redir_worker, unsigned opts,
		     const struct arg *p, int n)
{
	struct trk_client *st = c->tracking;

	pthread_mutex_lock(&tlock);
	if (!st) {
		st = xcalloc(1, sizeof(*st));
		st->id = c->id;
		st->worker = c->worker;
		st->c = c;
		st->node.hash = hash_bytes(&st->id, sizeof(st->id));
		dict_insert(&states, &st->node);
		c->tracking = st;
	}
	if (!(st->flags & TRACKING_ON))
		__atomic_add_fetch(&tracking_nclients, 1, __ATOMIC_RELAXED);
	st->flags = (st->flags & TRACKING_CACHING) | TRACKING_ON;
	st->redir = redir;
	st->redir_worker = redir_worker;
	if (opts & TRACKING_BCAST) {
		st->flags |= TRACKING_BCAST;
		if (!n)
			prefix_add_locked(st, "", 0);
		for (int i = 0; i < n; i++)
			prefix_add_locked(st, p[i].p, p[i].len);
	}
	st->flags |= opts & (TRACKING_OPTIN | TRACKING_OPTOUT | TRACKING_NOLOOP);
	publish_mirror(c, st);
	pthread_mutex_unlock(&tlock);
}

void tracking_disable(struct client *c)
{
	struct trk_client *st = c->tracking;

	if (!st)
		return;
	pthread_mutex_lock(&tlock);
	prefixes_drop_locked(st);
	if (st->flags & TRACKING_ON)
		__atomic_sub_fetch(&tracking_nclients, 1, __ATOMIC_RELAXED);
	st->flags = 0;
	publish_mirror(c, st);
	pthread_mutex_unlock(&tlock);
}

unsigned tracking_flags(const struct client *c)
{
	return c->tracking ? c->tracking->flags : 0;
}

uint64_t tracking_redirect(const struct client *c)
{
	return c->tracking ? c->tracking->redir : 0;
}

void tracking_set_caching(struct client *c)
{
	pthread_mutex_lock(&tlock);
	c->tracking->flags |= TRACKING_CACHING;
	publish_mirror(c, c->tracking);
	pthread_mutex_unlock(&tlock);
}

/* Two prefixes overlap when one starts the other: a key would match both. */
static bool overlap(const char *a, size_t alen, const char *b, size_t blen)
{
	return !memcmp(a, b, alen < blen ? alen : blen);
}

const char *tracking_prefix_overlap(const struct client *c, const struct arg *p, int n, int i,
				    size_t *len, bool *own)
{
	const struct trk_client *st = c->tracking;

	/* c's own prefixes are touched only by its worker: no lock needed. */
	for (int j = 0; st && j < st->nprefixes; j++) {
		if (overlap(st->prefixes[j]->p, st->prefixes[j]->len, p[i].p, p[i].len)) {
			*len = st->prefixes[j]->len;
			*own = true;
			return st->prefixes[j]->p;
		}
	}
	for (int j = i + 1; j < n; j++) {
		if (overlap(p[i].p, p[i].len, p[j].p, p[j].len)) {
			*len = p[j].len;
			*own = false;
			return p[j].p;
		}
	}
	return NULL;
}

void tracking_reply_prefixes(struct client *c)
{
	const struct trk_client *st = c->tracking;
	int n = st ? st->nprefixes : 0;
	struct trk_prefix **v = xmalloc((size_t)(n ? n : 1) * sizeof(*v));

	/* Redis lists them in byte order. */
	if (n)
		memcpy(v, st->prefixes, (size_t)n * sizeof(*v));
	qsort(v, (size_t)n, sizeof(*v), prefix_cmp);
	reply_array(c, n);
	for (int i = 0; i < n; i++)
		reply_bulk(c, v[i]->p, v[i]->len);
	xfree(v);
}

void tracking_client_free(struct client *c)
{
	struct trk_client *st = c->tracking;

	if (!st)
		return;
	tracking_disable(c);
	pthread_mutex_lock(&tlock);
	dict_remove(&states, &st->node);
	dict_maybe_shrink(&states);
	pthread_mutex_unlock(&tlock);
	c->tracking = NULL;
	xfree(st);
}

uint64_t tracking_total_keys(void)
{
	return __atomic_load_n(&nkeys_hint, __ATOMIC_RELAXED);
}

uint64_t tracking_total_items(void)
{
	uint64_t n;

	pthread_mutex_lock(&tlock);
	n = nitems;
	pthread_mutex_unlock(&tlock);
	return n;
}

uint64_t tracking_total_prefixes(void)
{
	return __atomic_load_n(&nprefixes_hint, __ATOMIC_RELAXED);
}
