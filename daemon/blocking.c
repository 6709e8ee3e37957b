// SPDX-License-Identifier: BSD-3-Clause
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "acl_users.h"
#include "bgjob.h"
#include "blocking.h"
#include "client.h"
#include "cluster_route.h"
#include "commands.h"
#include "config.h"
#include "errorstats.h"
#include "exec_ctx.h"
#include "mem.h"
#include "multi.h"
#include "reply.h"
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
	const struct command *cmd;
	int db, resp;
	int argc;
	struct arg *argv;      /* copies */
	struct acl_user *user; /* held: its rules are checked again when served */
	/* Microseconds its runs took (its first, and each run again): what
	 * its answer is counted with, as Redis's c->duration. */
	uint64_t duration_us;
	bool rejected;	  /* its ACL refused it when it was served: NOPERM */
	int64_t deadline; /* mono ms, 0: none */
	bool null_bulk;
	bool on_nokey;		     /* a key's removal wakes it too (XREADGROUP) */
	int type;		     /* the type a key must hold to wake it, -1: any */
	uint64_t tried;		     /* the serving round that last ran it (under the lock) */
	int64_t wake_at, wake_every; /* mono ms: run again then (CLAIM), 0: never */
	enum blocked_phase phase;    /* under the lock */
	int nwaiters;		     /* in the FIFO; 0 once served */
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
static _Atomic int nwaiters;

static __thread struct ready_key *ready;
static __thread int nready, ready_cap;

bool blocking_allowed(const struct client *c)
{
	return !(exec_ctx_flags() & (EXEC_RETRY | EXEC_IN_EXEC)) && !c->in_multi;
}

void blocking_block(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk)
{
	blocking_block_on(c, keys, n, timeout_ms, null_bulk, -1, false);
}

void blocking_block_on(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk,
		       int type, bool on_nokey)
{
	struct blocked_state *st = xcalloc(1, sizeof(*st));

	st->client_id = c->id;
	st->worker = c->worker;
	st->cmd = exec_ctx_top->cmd;
	st->db = c->db;
	st->resp = c->resp;
	st->user = acl_user_hold(c->user);
	st->argc = c->argc;
	st->argv = xmalloc(sizeof(*st->argv) * (size_t)c->argc);
	for (int i = 0; i < c->argc; i++) {
		st->argv[i].p = xstrndup(c->argv[i].p, c->argv[i].len);
		st->argv[i].len = c->argv[i].len;
	}
	st->deadline = timeout_ms ? mono_ms() + timeout_ms : 0;
	st->null_bulk = null_bulk;
	st->on_nokey = on_nokey;
	st->type = type;
	st->waiters = xcalloc((size_t)n, sizeof(*st->waiters));
	pthread_mutex_lock(&lock);
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

void blocking_add_time(struct client *c, uint64_t us)
{
	__atomic_fetch_add(&c->blocked->duration_us, us, __ATOMIC_RELAXED);
}

/* c's command is answered now (by its worker): counted, as Redis counts a
 * blocked command when it is unblocked. failed: with an error. */
static void count_answered(struct client *c, const struct blocked_state *st, bool failed)
{
	command_count_done(c, st->cmd, st->argc, st->argv, st->duration_us, failed);
}

static bool waiter_is(const struct waiter *w, int db, const char *key, size_t len)
{
	return w->db == db && w->klen == len && !memcmp(w->key, key, len);
}

static int waiter_cmp(const void *a, const void *b)
{
	const struct waiter *x = *(const struct waiter *const *)a;
	const struct waiter *y = *(const struct waiter *const *)b;
	int r;

	if (x->db != y->db)
		return x->db < y->db ? -1 : 1;
	r = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);
	return r ? r : (x->klen > y->klen) - (x->klen < y->klen);
}

void blocking_key_counts(uint64_t *keys, uint64_t *nokey)
{
	struct waiter **v;
	size_t n = 0, cap = 16;

	*keys = *nokey = 0;
	v = xmalloc(sizeof(*v) * cap);
	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (n == cap) {
			cap *= 2;
			v = xrealloc(v, sizeof(*v) * cap);
		}
		v[n++] = w;
	}
	qsort(v, n, sizeof(*v), waiter_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		bool on_nokey = false;

		for (; j < n && !waiter_cmp(&v[i], &v[j]); j++)
			on_nokey |= v[j]->st->on_nokey;
		(*keys)++;
		*nokey += on_nokey;
		i = j;
	}
	pthread_mutex_unlock(&lock);
	xfree(v);
}

/* Notes key as ready (once). */
static void mark_ready(int db, const char *key, size_t len)
{
	for (int i = 0; i < nready; i++)
		if (ready[i].db == db && ready[i].len == len && !memcmp(ready[i].key, key, len))
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

/* A database emptied or swapped: the waiters on keys of db or other (-1:
 * none) are run again; after a flush only those that hear of removals
 * (XREADGROUP fails), after SWAPDB all (any key may now hold something, as
 * Redis scans both databases; wants() decides). */
static void wake_nokey_waiters(int db, int other, bool all)
{
	struct {
		int db;
		size_t len;
		char *key;
	} *v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if ((!all && !w->st->on_nokey) || w->st->phase != BLOCKED_WAITING ||
		    (w->db != db && w->db != other))
			continue;
		v = xrealloc(v, sizeof(*v) * (n + 1));
		v[n].db = w->db;
		v[n].len = w->klen;
		v[n].key = xstrndup(w->key, w->klen);
		n++;
	}
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < n; i++) {
		mark_ready(v[i].db, v[i].key, v[i].len);
		xfree(v[i].key);
	}
	xfree(v);
}

void blocking_on_change(const struct db_change *ch)
{
	bool waited = false, removed;
	const char *key;
	size_t len;
	int db;

	/* Only a key written can feed a waiter, and a key removed one that
	 * wants to hear of it (XREADGROUP fails then, as in Redis); whole-
	 * database changes serve nobody. */
	if (!atomic_load_explicit(&nwaiters, memory_order_relaxed))
		return;
	if (ch->reason == DB_CHANGE_FLUSH || ch->reason == DB_CHANGE_SWAP) {
		wake_nokey_waiters(ch->db, ch->reason == DB_CHANGE_SWAP ? ch->other_db : -1,
				   ch->reason == DB_CHANGE_SWAP);
		return;
	}
	if (!ch->e)
		return;
	removed = ch->reason == DB_CHANGE_DELETE || ch->reason == DB_CHANGE_RENAME ||
		  ch->reason == DB_CHANGE_EXPIRE || ch->reason == DB_CHANGE_EVICT ||
		  ch->reason == DB_CHANGE_SLOT_LOST;
	if (ch->reason != DB_CHANGE_WRITE && !removed)
		return;
	db = ch->db;
	key = ch->e->key;
	len = entry_klen(ch->e);
	for (int i = 0; i < nready; i++)
		if (ready[i].db == db && ready[i].len == len && !memcmp(ready[i].key, key, len))
			return;
	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w && !waited; w = w->next)
		waited = waiter_is(w, db, key, len) && w->st->phase == BLOCKED_WAITING &&
			 (!removed || w->st->on_nokey);
	pthread_mutex_unlock(&lock);
	if (waited)
		mark_ready(db, key, len);
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
	acl_user_put(st->user);
	xfree(st->waiters);
	xfree(st->reply);
	xfree(st);
}

/* The oldest waiter on key still waiting, now claimed; NULL if none. */
/* Serving rounds: a waiter is run at most once per round of a ready key. */
static _Atomic uint64_t rounds;

static struct blocked_state *claim(int db, const char *key, size_t len, uint64_t round)
{
	struct blocked_state *st = NULL;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (waiter_is(w, db, key, len) && w->st->phase == BLOCKED_WAITING &&
		    w->st->tried != round) {
			st = w->st;
			st->phase = BLOCKED_SERVING;
			st->tried = round;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return st;
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
	int64_t start, end;
	char *p;

	proxy.worker = st->worker; /* for its error count, which is atomic */
	proxy.db = st->db;
	proxy.resp = st->resp;
	proxy.authenticated = true;
	proxy.user = st->user;
	start = mono_us();
	/* As Redis reprocesses it: rules changed while it waited apply (an
	 * ACL SETUSER that took the command or the key away answers NOPERM). */
	if (!acl_client_restricted(&proxy) ||
	    acl_check_slow(&proxy, cmd, st->argc, st->argv, ACL_CTX_TOPLEVEL, true))
		command_call_as(&proxy, cmd, st->argc, st->argv, EXEC_RETRY);
	else
		st->rejected = true;
	end = mono_us();
	__atomic_fetch_add(&st->duration_us, end > start ? (uint64_t)(end - start) : 0,
			   __ATOMIC_RELAXED);
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

/* Is st woken by r as it is now (under the locks of st's keys)? As Redis: a
 * key of the type it waits for, or any change if removals wake it too. */
static bool wants(const struct blocked_state *st, const struct ready_key *r)
{
	const struct entry *e;

	if (st->on_nokey || st->type < 0)
		return true;
	/* The clock, not the command's snapshot: a key that expired during
	 * the EXEC that fed it (DEBUG SLEEP) feeds nobody, as in Redis, where
	 * the served command runs as a new unit with a fresh time. */
	e = db_peek(r->db, r->key, r->len);
	return e && !entry_expired(e, now_ms()) && (int)e->val.type == st->type;
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
		bool later = false;
		uint64_t round = atomic_fetch_add(&rounds, 1) + 1;

		while ((st = claim(r.db, r.key, r.len, round))) {
			struct command *cmd = command_lookup(st->argv[0].p, st->argv[0].len);
			struct lockset ls;
			bool ok;

			lockset_init(&ls);
			command_add_locks(cmd, NULL, st->db, st->argc, st->argv, &ls);
			if (held && !lockset_covers(held, &ls)) {
				unclaim(st);
				later = true;
				break;
			}
			if (!held)
				lockset_acquire(&ls);
			ok = wants(st, &r) && run_for(st, cmd);
			if (!held)
				lockset_release(&ls);
			/* Not served: the next waiter may be (another type's). */
			if (!ok)
				unclaim(st);
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

bool blocking_serve_pending(void)
{
	return nready && !(exec_ctx_flags() & EXEC_IN_EXEC);
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
	/* Counted before it leaves the blocked count (INFO blocked_clients):
	 * whoever sees it unblocked sees its SLOWLOG entry too. */
	if (st->rejected)
		command_count_rejected(c, st->cmd);
	else
		count_answered(c, st, st->reply_len && st->reply[0] == '-');
	c->blocked = NULL;
	w->nblocked--;
	reply_raw(c, st->reply, st->reply_len);
	free_state(st);
	resume(c);
}

/* Takes c's wait out of the FIFO, if no thread is serving it; c->blocked
 * stays until blocking_release. */
static bool blocking_claim(struct client *c)
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
	return waiting;
}

static void blocking_release(struct client *c)
{
	free_state(c->blocked);
	c->blocked = NULL;
	c->worker->nblocked--;
}

bool blocking_cancel(struct client *c)
{
	if (!blocking_claim(c))
		return false;
	blocking_release(c);
	return true;
}

bool blocking_jobs_allowed(const struct client *c)
{
	return c->worker && blocking_allowed(c) && !(exec_ctx_flags() & EXEC_SCRIPT);
}

/* On c's worker, once the pool reached the wait's place in its queue. */
static void jobs_done_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct client *c = w->clients;

	(void)payload;
	while (c && c->id != client_id)
		c = c->next_in_worker;
	if (!c || !(c->flags & CLIENT_JOB_WAIT) || c->closing)
		return;
	c->flags &= ~CLIENT_JOB_WAIT;
	w->nblocked--;
	reply_ok(c);
	resume(c);
}

static const struct mail_ops jobs_done_mail = { .deliver = jobs_done_deliver };

struct jobs_wait {
	struct worker *worker;
	uint64_t client_id;
};

/* A job of the pool: every job before it has run. The workers outlive the
 * pool (server_run stops it before their mailboxes go). */
static void jobs_wait_done(void *arg)
{
	struct jobs_wait *jw = arg;

	worker_post(jw->worker, &jobs_done_mail, jw->client_id);
	xfree(jw);
}

void blocking_wait_jobs(struct client *c)
{
	struct jobs_wait *jw = xmalloc(sizeof(*jw));

	jw->worker = c->worker;
	jw->client_id = c->id;
	c->flags |= CLIENT_JOB_WAIT;
	c->worker->nblocked++;
	bgjob_submit(jobs_wait_done, jw);
}

void blocking_unblock(struct client *c)
{
	struct blocked_state *st = c->blocked;

	if (c->flags & CLIENT_JOB_WAIT) {
		c->flags &= ~CLIENT_JOB_WAIT;
		c->worker->nblocked--;
	}
	if (!st || blocking_cancel(c))
		return;
	/* Being served: whoever holds it frees it, and drops the answer. */
	pthread_mutex_lock(&lock);
	st->phase = BLOCKED_ORPHANED;
	pthread_mutex_unlock(&lock);
	c->blocked = NULL;
	c->worker->nblocked--;
}

void blocking_wake_at(struct client *c, int64_t at_ms, int64_t every_ms)
{
	struct blocked_state *st = c->blocked;

	if (!st)
		return;
	/* Set before any thread can read it for a wake: only this worker's
	 * cron reads it, and it runs after this command. */
	st->wake_at = at_ms > 0 ? at_ms : 1;
	st->wake_every = every_ms > 0 ? every_ms : 1;
}

/* A waiter whose wake time came: its keys are ready, so that it runs again
 * (it goes on waiting if that serves nothing). */
static void wake_due(struct blocked_state *st, int64_t now)
{
	struct {
		int db;
		size_t len;
		char *key;
	} * v;
	int n = 0;

	st->wake_at = now + st->wake_every;
	pthread_mutex_lock(&lock);
	if (st->phase != BLOCKED_WAITING) {
		pthread_mutex_unlock(&lock);
		return;
	}
	v = xmalloc(sizeof(*v) * (size_t)(st->nwaiters ? st->nwaiters : 1));
	for (int i = 0; i < st->nwaiters; i++) {
		v[n].db = st->waiters[i]->db;
		v[n].len = st->waiters[i]->klen;
		v[n].key = xstrndup(st->waiters[i]->key, st->waiters[i]->klen);
		n++;
	}
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < n; i++) {
		mark_ready(v[i].db, v[i].key, v[i].len);
		xfree(v[i].key);
	}
	xfree(v);
}

/* Cluster mode: a client waiting on a key whose slot this node no longer
 * serves is answered the redirect and unblocked (all its keys share the
 * first one's slot). True if it was. */
static bool redirected(struct client *c, struct blocked_state *st)
{
	char err[512], *key = NULL;
	uint32_t klen = 0;
	bool here;

	/* The first key, copied while it is sure to be there. */
	pthread_mutex_lock(&lock);
	if (st->phase == BLOCKED_WAITING && st->nwaiters) {
		klen = st->waiters[0]->klen;
		key = xstrndup(st->waiters[0]->key, klen);
	}
	pthread_mutex_unlock(&lock);
	if (!key)
		return false;
	here = cluster_route_blocked(c, key, klen, err, sizeof(err));
	xfree(key);
	if (here)
		return false;
	/* Being served: the answer is on its way instead. */
	if (!blocking_claim(c))
		return false;
	count_answered(c, st, true);
	blocking_release(c);
	reply_error(c, err);
	resume(c);
	return true;
}

void blocking_timeouts(struct worker *w)
{
	int64_t now = mono_ms();
	bool woke = false;

	for (struct client *c = w->clients; c && w->nblocked; c = c->next_in_worker) {
		struct blocked_state *st = c->blocked;
		bool null_bulk;

		if (__builtin_expect(config.cluster_enabled, 0) && st && !c->closing &&
		    redirected(c, st))
			continue;
		if (st && !c->closing && st->wake_at && now >= st->wake_at &&
		    (!st->deadline || now < st->deadline)) {
			wake_due(st, now);
			woke = true;
			continue;
		}

		if (!st || c->closing || !st->deadline || now < st->deadline)
			continue;
		null_bulk = st->null_bulk;
		/* Being served: the answer is on its way instead. */
		if (!blocking_claim(c))
			continue;
		count_answered(c, st, false);
		blocking_release(c);
		if (null_bulk)
			reply_null(c);
		else
			reply_null_array(c);
		resume(c);
	}
	if (woke)
		blocking_serve_ready();
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
