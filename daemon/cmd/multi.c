// SPDX-License-Identifier: BSD-3-Clause
/* MULTI EXEC DISCARD WATCH UNWATCH. */
#include <string.h>

#include "commands.h"
#include "mem.h"
#include "multi.h"

__thread bool multi_executing;

void multi_queue(struct client *c, struct command *cmd)
{
	struct queued_command *q;

	if (cmd->flags & CMD_NO_MULTI) {
		reply_error(c, "Command not allowed inside a transaction");
		c->multi_error = true;
		return;
	}
	if (c->nqueued == c->queue_cap) {
		c->queue_cap = c->queue_cap ? 2 * c->queue_cap : 8;
		c->queue = xrealloc(c->queue, sizeof(*c->queue) * (size_t)c->queue_cap);
	}
	q = &c->queue[c->nqueued++];
	q->cmd = cmd;
	q->argc = c->argc;
	q->argv = xmalloc(sizeof(*q->argv) * (size_t)c->argc);
	/* The query buffer is reused by the next request: keep copies. */
	for (int i = 0; i < c->argc; i++) {
		q->argv[i].p = xstrndup(c->argv[i].p, c->argv[i].len);
		q->argv[i].len = c->argv[i].len;
	}
	reply_status(c, "QUEUED");
}

void multi_unwatch(struct client *c)
{
	for (int i = 0; i < c->nwatched; i++) {
		struct watched_key *wk = &c->watched[i];
		struct lockset ls;

		lockset_init(&ls);
		lockset_add_key(&ls, wk->db, wk->watcher->key, wk->watcher->klen);
		lockset_acquire(&ls);
		db_unwatch(wk->db, wk->watcher);
		lockset_release(&ls);
	}
	xfree(c->watched);
	c->watched = NULL;
	c->nwatched = 0;
	__atomic_store_n(&c->watch_dirty, false, __ATOMIC_RELAXED);
}

void multi_reset(struct client *c)
{
	for (int i = 0; i < c->nqueued; i++) {
		for (int j = 0; j < c->queue[i].argc; j++)
			xfree(c->queue[i].argv[j].p);
		xfree(c->queue[i].argv);
	}
	xfree(c->queue);
	c->queue = NULL;
	c->nqueued = c->queue_cap = 0;
	c->in_multi = false;
	c->multi_error = false;
}

void cmd_multi(struct client *c)
{
	if (c->in_multi) {
		reply_error(c, "MULTI calls can not be nested");
		return;
	}
	c->in_multi = true;
	reply_ok(c);
}

void cmd_discard(struct client *c)
{
	if (!c->in_multi) {
		reply_error(c, "DISCARD without MULTI");
		return;
	}
	multi_reset(c);
	multi_unwatch(c);
	reply_ok(c);
}

static bool watching(const struct client *c, int db, const struct arg *key)
{
	for (int i = 0; i < c->nwatched; i++) {
		const struct watcher *w = c->watched[i].watcher;

		if (c->watched[i].db == db && w->klen == key->len &&
		    !memcmp(w->key, key->p, key->len))
			return true;
	}
	return false;
}

void cmd_watch(struct client *c)
{
	if (c->in_multi) {
		reply_error(c, "WATCH inside MULTI is not allowed");
		return;
	}
	c->watched =
		xrealloc(c->watched, sizeof(*c->watched) * (size_t)(c->nwatched + c->argc - 1));
	for (int i = 1; i < c->argc; i++) {
		struct watched_key *wk;

		/* A key already watched stays as it was, as in Redis. */
		if (watching(c, c->db, &c->argv[i]))
			continue;
		wk = &c->watched[c->nwatched++];
		wk->db = c->db;
		wk->existed = key_find(c, i) != NULL;
		wk->watcher = db_watch(c->db, c, c->argv[i].p, c->argv[i].len);
	}
	reply_ok(c);
}

void cmd_unwatch(struct client *c)
{
	/* Queued in a transaction: EXEC holds the watched keys' shards and
	 * unwatches everything once the queue has run. */
	if (!multi_executing)
		multi_unwatch(c);
	reply_ok(c);
}

/* Did a watched key change or expire since WATCH? (Its shard is locked.) */
static bool watch_broken(struct client *c)
{
	if (__atomic_load_n(&c->watch_dirty, __ATOMIC_ACQUIRE))
		return true;
	for (int i = 0; i < c->nwatched; i++) {
		const struct watched_key *wk = &c->watched[i];
		struct entry *e;

		if (!wk->existed)
			continue;
		e = db_peek(wk->db, wk->watcher->key, wk->watcher->klen);
		if (!e || entry_expired(e, store_now()))
			return true;
	}
	return false;
}

void cmd_exec(struct client *c)
{
	struct arg *argv = c->argv;
	int argc = c->argc;
	struct lockset ls;
	bool all = false;

	if (!c->in_multi) {
		reply_error(c, "EXEC without MULTI");
		return;
	}
	if (c->multi_error) {
		reply_error(c, "-EXECABORT Transaction discarded because of previous errors.");
		multi_reset(c);
		multi_unwatch(c);
		return;
	}
	/* Every shard the queue touches, plus the watched keys', at once and in
	 * order: the whole transaction is one critical section. */
	lockset_init(&ls);
	for (int i = 0; i < c->nwatched && !all; i++) {
		if (ls.n >= LOCKSET_MAX - 1)
			all = true;
		else
			lockset_add_key(&ls, c->watched[i].db, c->watched[i].watcher->key,
					c->watched[i].watcher->klen);
	}
	for (int i = 0; i < c->nqueued && !all; i++) {
		struct queued_command *q = &c->queue[i];

		/* A command in another database (SELECT inside MULTI) or one
		 * that locks for itself: take everything. */
		if (q->cmd->fn == cmd_select ||
		    !command_add_key_locks(q->cmd, c->db, q->argc, q->argv, &ls) ||
		    ls.n >= LOCKSET_MAX - STORE_SHARDS)
			all = true;
	}
	if (all)
		store_lock_all();
	else
		lockset_acquire(&ls);

	if (watch_broken(c)) {
		reply_null_array(c);
	} else {
		reply_array(c, c->nqueued);
		multi_executing = true;
		for (int i = 0; i < c->nqueued; i++) {
			c->argv = c->queue[i].argv;
			c->argc = c->queue[i].argc;
			command_call(c, c->queue[i].cmd, false);
		}
		multi_executing = false;
		c->argv = argv;
		c->argc = argc;
		current_client = c;
	}
	if (all)
		store_unlock_all();
	else
		lockset_release(&ls);
	multi_reset(c);
	multi_unwatch(c);
}
