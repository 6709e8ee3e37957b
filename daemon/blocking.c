// SPDX-License-Identifier: BSD-3-Clause
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "blocking.h"
#include "client.h"
#include "commands.h"
#include "mem.h"
#include "multi.h"
#include "util.h"
#include "worker.h"

struct waiter {
	struct waiter *prev, *next; /* the global FIFO, oldest first */
	struct client *client;	    /* read only by its own worker */
	uint64_t client_id;
	struct worker *worker;
	struct blocked_state *st; /* only its unblock field, under the lock */
	int db;
	bool woken; /* a wake-up is in flight: the next change wakes the next one */
	uint32_t klen;
	char key[];
};

struct blocked_state {
	struct command *cmd;
	int argc;
	struct arg *argv; /* copies */
	int64_t deadline; /* mono ms, 0: none */
	bool null_bulk;
	int unblock; /* CLIENT UNBLOCK claimed it: 1 timeout, 2 error (lock) */
	int nwaiters;
	struct waiter **waiters;
};

__thread bool blocking_retrying;
__thread bool blocking_still_waiting;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct waiter *head, *tail;
static _Atomic int nwaiters;

bool blocking_allowed(const struct client *c)
{
	return !blocking_retrying && !c->in_multi && !multi_executing;
}

void blocking_block(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk)
{
	struct blocked_state *st = xcalloc(1, sizeof(*st));

	st->cmd = NULL;
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
	for (int i = 0; i < n; i++) {
		const struct arg *k = &c->argv[keys[i]];
		struct waiter *w = xcalloc(1, sizeof(*w) + k->len);

		w->client = c;
		w->client_id = c->id;
		w->worker = c->worker;
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

void blocking_key_changed(int db, const char *key, size_t len)
{
	struct worker *target = NULL;
	uint64_t id = 0;

	if (!atomic_load_explicit(&nwaiters, memory_order_relaxed))
		return;
	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (w->db != db || w->klen != len || memcmp(w->key, key, len) || w->st->unblock)
			continue;
		if (w->woken)
			break; /* the one ahead will pass the turn on */
		w->woken = true;
		target = w->worker;
		id = w->client_id;
		break;
	}
	pthread_mutex_unlock(&lock);
	if (target)
		worker_post(target, MAIL_UNBLOCK, id);
}

void blocking_unblock(struct client *c)
{
	struct blocked_state *st = c->blocked;

	if (!st)
		return;
	pthread_mutex_lock(&lock);
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
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < st->argc; i++)
		xfree(st->argv[i].p);
	xfree(st->argv);
	xfree(st->waiters);
	xfree(st);
	c->blocked = NULL;
	c->worker->nblocked--;
}

/* After c was answered: carry on with what it sent meanwhile. */
static void resume(struct client *c)
{
	client_command_done(c);
	if (!client_process_input(c) && !(c->flags & CLIENT_CLOSE_ASAP))
		c->flags |= CLIENT_CLOSE_AFTER_REPLY;
	c->worker->engine->wants_write(c);
}

/* Unblocks c and passes the turn on its keys to the next waiter, for
 * elements that may remain (or that c, unblocked otherwise, did not take). */
static void unblock_passing_turn(struct client *c)
{
	struct blocked_state *st = c->blocked;
	int db = c->db, n = st->nwaiters;
	struct arg *keys = xmalloc(sizeof(*keys) * (size_t)n);

	for (int i = 0; i < n; i++) {
		keys[i].p = xstrndup(st->waiters[i]->key, st->waiters[i]->klen);
		keys[i].len = st->waiters[i]->klen;
		db = st->waiters[i]->db;
	}
	blocking_unblock(c);
	for (int i = 0; i < n; i++) {
		blocking_key_changed(db, keys[i].p, keys[i].len);
		xfree(keys[i].p);
	}
	xfree(keys);
}

void blocking_retry(struct client *c)
{
	struct blocked_state *st = c->blocked;
	struct arg *argv = c->argv;
	int argc = c->argc;
	struct command *cmd;
	bool claimed;

	if (!st || c->closing)
		return;
	/* CLIENT UNBLOCK got there first: its mail answers c. */
	pthread_mutex_lock(&lock);
	claimed = st->unblock != 0;
	pthread_mutex_unlock(&lock);
	if (claimed)
		return;
	cmd = command_lookup(st->argv[0].p, st->argv[0].len);
	c->argv = st->argv;
	c->argc = st->argc;
	blocking_retrying = true;
	blocking_still_waiting = false;
	command_call(c, cmd, true);
	blocking_retrying = false;
	c->argv = argv;
	c->argc = argc;
	if (!blocking_still_waiting) {
		unblock_passing_turn(c);
		resume(c);
		return;
	}
	/* Someone else got there first: wait for the next change. */
	pthread_mutex_lock(&lock);
	for (int i = 0; i < st->nwaiters; i++)
		st->waiters[i]->woken = false;
	pthread_mutex_unlock(&lock);
}

void blocking_timeouts(struct worker *w)
{
	int64_t now = mono_ms();

	for (struct client *c = w->clients; c && w->nblocked; c = c->next_in_worker) {
		struct blocked_state *st = c->blocked;

		if (!st || c->closing || !st->deadline || now < st->deadline ||
		    __atomic_load_n(&st->unblock, __ATOMIC_RELAXED))
			continue;
		if (st->null_bulk)
			reply_null(c);
		else
			reply_null_array(c);
		blocking_unblock(c);
		resume(c);
	}
}

bool blocking_unblock_id(uint64_t id, bool error)
{
	struct worker *target = NULL;

	pthread_mutex_lock(&lock);
	for (struct waiter *w = head; w; w = w->next) {
		if (w->client_id != id || w->st->unblock)
			continue;
		__atomic_store_n(&w->st->unblock, error ? 2 : 1, __ATOMIC_RELAXED);
		target = w->worker;
		break;
	}
	pthread_mutex_unlock(&lock);
	if (target)
		worker_post(target, error ? MAIL_UNBLOCK_ERROR : MAIL_UNBLOCK_TIMEOUT, id);
	return target != NULL;
}

void blocking_unblock_requested(struct client *c, bool error)
{
	struct blocked_state *st = c->blocked;

	if (!st || c->closing)
		return;
	if (error)
		reply_error(c, "-UNBLOCKED client unblocked via CLIENT UNBLOCK");
	else if (st->null_bulk)
		reply_null(c);
	else
		reply_null_array(c);
	unblock_passing_turn(c);
	resume(c);
}
