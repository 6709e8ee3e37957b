// SPDX-License-Identifier: BSD-3-Clause
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "blocking.h"
#include "client.h"
#include "commands.h"
#include "errorstats.h"
#include "exec_ctx.h"
#include "mem.h"
#include "multi.h"
#include "store.h"
#include "util.h"
#include "worker.h"

struct waiter {
	struct waiter *prev, *next; /* the global FIFO, oldest first */
	struct blocked_state *st;
	int db;
	uint32_t klen;
	char key[];
};

enum blocked_phase {
	BLOCKED_WAITING,
	BLOCKED_SERVING,  /* claimed by a thread running its command, or served */
	BLOCKED_ORPHANED, /* its client let go while it was being served */
};

/* A blocked command: read by any thread once in the FIFO, freed by whoever
 * holds it last (its worker, or the thread that serves it). */
struct blocked_state {
	uint64_t client_id;
	struct worker *worker;
	int db, resp;
	int argc;
	struct arg *argv; /* copies */
	uint64_t seq;	  /* order of blocking (under the lock): FIFO position */
	int64_t deadline; /* mono ms, 0: none */
	bool null_bulk;
	enum blocked_phase phase; /* under the lock */
	int nwaiters;		  /* in the FIFO; 0 once served */
	struct waiter **waiters;
	char *reply; /* for the served mail: what to answer */
	size_t reply_len;
};

/* Keys changed by this thread's command that have waiters, to serve. */
struct ready_key {
	int db;
	uint32_t len;
	char *key;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct waiter *head, *tail;
static uint64_t last_seq; /* under the lock */
static _Atomic int nwaiters;

static __thread struct ready_key *ready;
static __thread int nready, ready_cap;

bool blocking_allowed(const struct client *c)
{
	return !(exec_ctx_flags() & (EXEC_RETRY | EXEC_IN_EXEC)) && !c->in_multi;
}

void blocking_block(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk)
{
	struct blocked_state *st = xcalloc(1, sizeof(*st));

	st->client_id = c->id;
	st->worker = c->worker;
	st->db = c->db;
	st->resp = c->resp;
	st->argc = c->argc;
	st->argv = xmalloc(sizeof(*st->argv) * (size_t)c->argc);
	for (int i = 0; i < c->argc; i++) {
		st->argv[i].p = xstrndup(c->argv[i].p, c->argv[i].len);
		st->argv[i].len = c->argv[i].len;
	}
	st->deadline = timeout_ms ? mono_ms() + timeout_ms : 0;
	st->null_bulk = null_bulk;
	st->waiters = xcalloc((size_t)n, sizeof(*st->waiters));
	pthread_mutex_lock(&lock);
	st->seq = ++last_seq;
	for (int i = 0; i < n; i++) {
		const struct arg *k = &c->argv[keys[i]];
		struct waiter *w = xcalloc(1, sizeof(*w) + k->len);

		w->st = st;
		w->db = c->db;
		w->klen = (uint32_t)k->len;
		memcpy(w->key, k->p, k->len);
		w->prev = tail;
		if (tail)
			tail->next = w;
		else
			head = w;
		tail = w;
		st->waiters[st->nwaiters++] = w;
		atomic_fetch_add(&nwaiters, 1);
	}
	pthread_mutex_unlock(&lock);
	c->blocked = st;
	c->worker->nblocked++;
}

static bool waiter_is(const struct waiter *w, int db, const char *key, size_t len)
{
	return w->db == db && w->klen == len && !memcmp(w->key, key, len);
}

static bool is_ready(int db, const char *key, size_t len)
{
	for (int i = 0; i < nready; i++)
		if (ready[i].db == db && ready[i].len == len && !memcmp(ready[i].key, key, len))
			return true;
	return false;
}

/* Notes key of db for serving at the end of the command (once). */
static void add_ready(int db, const char *key, size_t len)
{
	if (is_ready(db, key, len))
		return;
	if (nready == ready_cap) {
		ready_cap = ready_cap ? ready_cap * 2 : 8;
		ready = xrealloc(ready, sizeof(*ready) * (size_t)ready_cap);
	}
	ready[nready].db = db;
	ready[nready].len = (uint32_t)len;
	ready[nready].key = xstrndup(key, len);
	nready++;
}

/* SWAPDB: every key waited on in either database may now hold something
 * (key_fits decides at serving time, after the exchange), as Redis scans
 * both for ready keys. The waiters are copied out first: add_ready
 * allocates, and the FIFO's lock is a leaf. */
static void swap_ready(int a, int b)
{
	struct ready_key *keys = NULL;
	int n = 0, cap = 0;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if ((w->db != a && w->db != b) || w->st->phase != BLOCKED_WAITING)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			keys = xrealloc(keys, sizeof(*keys) * (size_t)cap);
		}
		keys[n].db = w->db;
		keys[n].len = w->klen;
		keys[n].key = xstrndup(w->key, w->klen);
		n++;
	}
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++) {
		add_ready(keys[i].db, keys[i].key, keys[i].len);
		xfree(keys[i].key);
	}
	xfree(keys);
}

void blocking_on_change(const struct db_change *ch)
{
	bool waited = false;
	const char *key;
	size_t len;
	int db;

	if (!atomic_load_explicit(&nwaiters, memory_order_relaxed))
		return;
	if (ch->reason == DB_CHANGE_SWAP) {
		swap_ready(ch->db, ch->other_db);
		return;
	}
	/* Else only a key written can feed a waiter; removals and flushes
	 * serve nobody. */
	if (ch->reason != DB_CHANGE_WRITE)
		return;
	db = ch->db;
	key = ch->e->key;
	len = ch->e->klen;
	if (is_ready(db, key, len))
		return;
	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w && !waited; w = w->next)
		waited = waiter_is(w, db, key, len) && w->st->phase == BLOCKED_WAITING;
	pthread_mutex_unlock(&lock);
	if (waited)
		add_ready(db, key, len);
}

/* Takes st's waiters out of the FIFO (under the lock). */
static void unlink_waiters(struct blocked_state *st)
{
	for (int i = 0; i < st->nwaiters; i++) {
		struct waiter *w = st->waiters[i];

		if (w->prev)
			w->prev->next = w->next;
		else
			head = w->next;
		if (w->next)
			w->next->prev = w->prev;
		else
			tail = w->prev;
		xfree(w);
		atomic_fetch_sub(&nwaiters, 1);
	}
	st->nwaiters = 0;
}

static void free_state(struct blocked_state *st)
{
	for (int i = 0; i < st->argc; i++)
		xfree(st->argv[i].p);
	xfree(st->argv);
	xfree(st->waiters);
	xfree(st->reply);
	xfree(st);
}

/* The oldest waiter on key still waiting that blocked after *after, now
 * claimed (and *after its order); NULL if none. */
static struct blocked_state *claim(int db, const char *key, size_t len, uint64_t *after)
{
	struct blocked_state *st = NULL;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (waiter_is(w, db, key, len) && w->st->phase == BLOCKED_WAITING &&
		    w->st->seq > *after) {
			st = w->st;
			st->phase = BLOCKED_SERVING;
			*after = st->seq;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return st;
}

/*
 * Does the ready key now hold what cmd waits for? As in Redis, a key that
 * became another type (or went) wakes nobody: BLPOP keeps waiting on a key
 * turned into a string instead of answering WRONGTYPE. XREADGROUP is woken
 * by any change (its group may be gone). The caller holds the key's shard.
 */
static bool key_fits(const struct command *cmd, const struct ready_key *r)
{
	struct entry *e;
	int want;

	if (!strcmp(cmd->group, "list"))
		want = OBJ_LIST;
	else if (!strcmp(cmd->group, "sorted-set"))
		want = OBJ_ZSET;
	else if (!strcmp(cmd->name, "xread"))
		want = OBJ_STREAM;
	else
		return true;
	/* The clock, not the command's snapshot: a key that expired during
	 * the EXEC that fed it (DEBUG SLEEP) feeds nobody, as in Redis, where
	 * the served command runs as a new unit with a fresh time. */
	e = db_peek(r->db, r->key, r->len);
	return e && !entry_expired(e, now_ms()) && e->val.type == want;
}

/* Its command found nothing to serve it with: it waits on. */
static void unclaim(struct blocked_state *st)
{
	pthread_mutex_lock(&lock);
	if (st->phase == BLOCKED_ORPHANED) {
		unlink_waiters(st);
		pthread_mutex_unlock(&lock);
		free_state(st);
		return;
	}
	st->phase = BLOCKED_WAITING;
	pthread_mutex_unlock(&lock);
}

/* A served waiter's answer, for its worker (defined below). */
static const struct mail_ops served_mail;

/* Served: out of the FIFO, and its reply on the way to its worker. */
static void served(struct blocked_state *st)
{
	bool orphaned;

	pthread_mutex_lock(&lock);
	unlink_waiters(st);
	orphaned = st->phase == BLOCKED_ORPHANED;
	pthread_mutex_unlock(&lock);
	if (orphaned)
		free_state(st);
	else
		worker_post_payload(st->worker, &served_mail, st->client_id, st);
}

/* Runs st's command for its client, replying into a stand-in client; true
 * if that served it (it replied). The caller holds the shards of its keys. */
static bool run_for(struct blocked_state *st, struct command *cmd)
{
	struct client proxy = { .id = st->client_id, .fd = -1 };
	char *p;

	proxy.worker = st->worker; /* for its error count, which is atomic */
	proxy.db = st->db;
	proxy.resp = st->resp;
	proxy.authenticated = true;
	command_call_as(&proxy, cmd, st->argc, st->argv, EXEC_RETRY);
	if (!proxy.reply_bytes)
		return false;
	st->reply = p = xmalloc(proxy.reply_bytes);
	st->reply_len = proxy.reply_bytes;
	while (proxy.reply_head) {
		struct reply_block *b = proxy.reply_head;

		memcpy(p, b->data, b->used);
		p += b->used;
		proxy.reply_head = b->next;
		xfree(b);
	}
	served(st);
	return true;
}

/*
 * Serves the ready keys' waiters, oldest first, for as long as each key's
 * next waiter gets an answer (its pop's own change keeps the key ready).
 * With held, only the waiters whose shards it holds, under those locks; a
 * key whose next waiter needs others stays ready for blocking_serve_ready.
 */
static void serve(const struct lockset *held)
{
	int i = 0;

	while (i < nready) {
		struct ready_key r = ready[i];
		struct blocked_state *st;
		uint64_t after = 0;
		bool later = false;

		while ((st = claim(r.db, r.key, r.len, &after))) {
			struct command *cmd = command_lookup(st->argv[0].p, st->argv[0].len);
			struct lockset ls;
			bool ok, fits;

			lockset_init(&ls);
			command_add_locks(cmd, NULL, st->db, st->argc, st->argv, &ls);
			if (held && !lockset_covers(held, &ls)) {
				unclaim(st);
				later = true;
				break;
			}
			if (!held)
				lockset_acquire(&ls);
			fits = key_fits(cmd, &r);
			ok = fits && run_for(st, cmd);
			if (!held)
				lockset_release(&ls);
			if (!fits) {
				/* Not for this one: the next waiter may want it. */
				unclaim(st);
				continue;
			}
			if (!ok) {
				unclaim(st);
				break;
			}
		}
		if (later) {
			i++;
			continue;
		}
		xfree(r.key);
		memmove(ready + i, ready + i + 1, sizeof(*ready) * (size_t)(nready - i - 1));
		nready--;
	}
	/* Thread-local: nothing must outlive the thread. */
	if (!nready) {
		xfree(ready);
		ready = NULL;
		ready_cap = 0;
	}
}

void blocking_serve_held(const struct lockset *held)
{
	/* A transaction's waiters are served once EXEC is done, as in Redis
	 * (EXEC's own call, the outermost, serves them). */
	if (nready && !(exec_ctx_flags() & EXEC_IN_EXEC))
		serve(held);
}

void blocking_serve_ready(void)
{
	if (nready && !(exec_ctx_flags() & EXEC_IN_EXEC))
		serve(NULL);
}

/* After c was answered: carry on with what it sent meanwhile. */
static void resume(struct client *c)
{
	client_command_done(c);
	if (!client_process_input(c) && !(c->flags & CLIENT_CLOSE_ASAP))
		c->flags |= CLIENT_CLOSE_AFTER_REPLY;
	c->worker->engine->wants_write(c);
}

static void served_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	(void)client_id;
	blocking_deliver(w, payload);
}

static void served_drop(void *payload)
{
	free_state(payload);
}

static const struct mail_ops served_mail = { .deliver = served_deliver, .drop = served_drop };

void blocking_deliver(struct worker *w, void *payload)
{
	struct blocked_state *st = payload;
	struct client *c = w->clients;

	while (c && c->id != st->client_id)
		c = c->next_in_worker;
	/* Gone, or unblocked meanwhile (RESET): the answer is dropped. */
	if (!c || c->blocked != st || c->closing) {
		free_state(st);
		return;
	}
	c->blocked = NULL;
	w->nblocked--;
	reply_raw(c, st->reply, st->reply_len);
	free_state(st);
	resume(c);
}

bool blocking_cancel(struct client *c)
{
	struct blocked_state *st = c->blocked;
	bool waiting;

	if (!st)
		return false;
	pthread_mutex_lock(&lock);
	waiting = st->phase == BLOCKED_WAITING;
	if (waiting)
		unlink_waiters(st);
	pthread_mutex_unlock(&lock);
	if (!waiting)
		return false;
	free_state(st);
	c->blocked = NULL;
	c->worker->nblocked--;
	return true;
}

void blocking_unblock(struct client *c)
{
	struct blocked_state *st = c->blocked;

	if (!st || blocking_cancel(c))
		return;
	/* Being served: whoever holds it frees it, and drops the answer. */
	pthread_mutex_lock(&lock);
	st->phase = BLOCKED_ORPHANED;
	pthread_mutex_unlock(&lock);
	c->blocked = NULL;
	c->worker->nblocked--;
}

void blocking_timeouts(struct worker *w)
{
	int64_t now = mono_ms();

	for (struct client *c = w->clients; c && w->nblocked; c = c->next_in_worker) {
		struct blocked_state *st = c->blocked;
		bool null_bulk;

		if (!st || c->closing || !st->deadline || now < st->deadline)
			continue;
		null_bulk = st->null_bulk;
		/* Being served: the answer is on its way instead. */
		if (!blocking_cancel(c))
			continue;
		if (null_bulk)
			reply_null(c);
		else
			reply_null_array(c);
		resume(c);
	}
}

bool blocking_unblock_id(uint64_t id, bool error)
{
	static const char unblocked[] = "-UNBLOCKED client unblocked via CLIENT UNBLOCK";
	struct blocked_state *st = NULL;
	const char *answer;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (w->st->client_id == id && w->st->phase == BLOCKED_WAITING) {
			st = w->st;
			st->phase = BLOCKED_SERVING;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!st)
		return false;
	/* The answer its timeout would give, or the error, in its protocol. */
	if (error) {
		errorstats_count(unblocked);
		__atomic_fetch_add(&st->worker->stats.errors, 1, __ATOMIC_RELAXED);
		answer = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";
	} else if (st->resp >= 3) {
		answer = "_\r\n";
	} else {
		answer = st->null_bulk ? "$-1\r\n" : "*-1\r\n";
	}
	st->reply_len = strlen(answer);
	st->reply = xstrndup(answer, st->reply_len);
	served(st);
	return true;
}
