// SPDX-License-Identifier: BSD-3-Clause
/*
 * MULTI EXEC DISCARD WATCH UNWATCH.
 *
 * Watchers live here, not in the store: one list per (db, shard), each
 * protected by that shard's mutex, which every path that reads or changes it
 * holds (WATCH's key is locked by the dispatcher; EXEC, DISCARD, UNWATCH and
 * RESET lock their client's watched keys through multi_add_locks; a closing
 * client takes them in multi_unwatch; the store's hook runs under the lock of
 * what changed). A change marks each watching client dirty with a release
 * store; EXEC reads that under the same locks.
 */
#include <string.h>

#include "acl_users.h"
#include "commands.h"
#include "exec_ctx.h"
#include "mem.h"
#include "multi.h"
#include "store.h"

/* A client watching a key. */
struct watcher {
	struct watcher *next;
	struct client *client;
	uint32_t klen;
	char key[];
};

/* store.ndbs * STORE_SHARDS lists, by db * STORE_SHARDS + shard. */
static struct watcher **watch_lists;

static struct watcher **list_of(int db, unsigned shard)
{
	return &watch_lists[(unsigned)db * STORE_SHARDS + shard];
}

static struct watcher *watch_add(int db, struct client *c, const char *key, size_t len)
{
	struct watcher **head = list_of(db, key_shard(key, len));
	struct watcher *w = xmalloc(sizeof(*w) + len);

	w->client = c;
	w->klen = (uint32_t)len;
	memcpy(w->key, key, len);
	w->next = *head;
	*head = w;
	return w;
}

static void watch_remove(int db, struct watcher *w)
{
	struct watcher **pp = list_of(db, key_shard(w->key, w->klen));

	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	xfree(w);
}

static void mark_dirty(struct watcher *w)
{
	__atomic_store_n(&w->client->watch_dirty, true, __ATOMIC_RELEASE);
}

static bool live(int db, const char *key, size_t len)
{
	struct entry *e = db_peek(db, key, len);

	return e && !entry_expired(e, store_now());
}

/*
 * Marks the watchers of db's shard whose key lives in db or (if >= 0) odb.
 * A key past its deadline counts as none, as in Redis 8.8: SWAPDB that
 * brings a stale key where there was none (or another stale one) changes
 * nothing logically. A watched key that lived at WATCH and is stale now is
 * caught by EXEC's own check (watch_broken).
 */
static void touch_existing(int db, unsigned shard, int odb)
{
	for (struct watcher *w = *list_of(db, shard); w; w = w->next)
		if (live(db, w->key, w->klen) || (odb >= 0 && live(odb, w->key, w->klen)))
			mark_dirty(w);
}

void multi_on_change(const struct db_change *ch)
{
	if (ch->reason == DB_CHANGE_FLUSH || ch->reason == DB_CHANGE_SWAP) {
		int odb = ch->reason == DB_CHANGE_SWAP ? ch->other_db : -1;

		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			touch_existing(ch->db, i, odb);
			if (odb >= 0)
				touch_existing(odb, i, ch->db);
		}
		return;
	}
	for (struct watcher *w = *list_of(ch->db, ch->e->shard); w; w = w->next)
		if (w->klen == entry_klen(ch->e) && memcmp(w->key, ch->e->key, w->klen) == 0)
			mark_dirty(w);
}

unsigned long long multi_watched_keys(void)
{
	unsigned long long n = 0;

	/* A list has one entry per client and key: repeats within it are skipped. */
	for (int db = 0; db < store.ndbs; db++) {
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			if (!__atomic_load_n(list_of(db, i), __ATOMIC_RELAXED))
				continue;
			store_shard_lock(db, i);
			for (struct watcher *w = *list_of(db, i); w; w = w->next) {
				struct watcher *o = *list_of(db, i);

				while (o != w &&
				       !(o->klen == w->klen && !memcmp(o->key, w->key, w->klen)))
					o = o->next;
				n += o == w;
			}
			store_shard_unlock(db, i);
		}
	}
	return n;
}

void multi_init(void)
{
	watch_lists = xcalloc((size_t)store.ndbs * STORE_SHARDS, sizeof(*watch_lists));
}

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

/* Does cmd wait for the script lock (a script, SCRIPT, FUNCTION, INFO's
 * and MEMORY's script figures)? A transaction with one holds every shard,
 * never some: a script that holds declared shards and escalates (script.c)
 * must not wait for a shard whose holder waits for the script lock. */
static bool takes_script_lock(const struct command *cmd)
{
	return (cmd->flags & CMD_LOCK_SCRIPT) || cmd->fn == cmd_info ||
	       !strcmp(cmd->group, "scripting") || !strncmp(cmd->name, "memory|", 7);
}

void multi_add_locks(struct client *c, struct lockset *ls, bool queue)
{
	int db = c->db;

	for (int i = 0; i < c->nwatched; i++)
		lockset_add_key(ls, c->watched[i].db, c->watched[i].watcher->key,
				c->watched[i].watcher->klen);
	if (!queue || !c->in_multi || c->multi_error)
		return;
	/* Each command in the database the SELECTs before it leave. */
	for (int i = 0; i < c->nqueued; i++) {
		struct queued_command *q = &c->queue[i];

		db = command_add_locks(q->cmd, NULL, db, q->argc, q->argv, ls);
		if (takes_script_lock(q->cmd))
			lockset_add_all(ls);
	}
}

void do_multi_unwatch(struct client *c)
{
	for (int i = 0; i < c->nwatched; i++)
		watch_remove(c->watched[i].db, c->watched[i].watcher);
	xfree(c->watched);
	c->watched = NULL;
	c->nwatched = 0;
	__atomic_store_n(&c->watch_dirty, false, __ATOMIC_RELAXED);
}

void multi_unwatch(struct client *c)
{
	struct lockset ls;

	lockset_init(&ls);
	for (int i = 0; i < c->nwatched; i++)
		lockset_add_key(&ls, c->watched[i].db, c->watched[i].watcher->key,
				c->watched[i].watcher->klen);
	lockset_acquire(&ls);
	do_multi_unwatch(c);
	lockset_release(&ls);
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
	do_multi_unwatch(c);
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
		wk->watcher = watch_add(c->db, c, c->argv[i].p, c->argv[i].len);
	}
	reply_ok(c);
}

void cmd_unwatch(struct client *c)
{
	/* Queued in a transaction: EXEC holds the watched keys' shards and
	 * unwatches everything once the queue has run. */
	if (!(exec_ctx_flags() & EXEC_IN_EXEC))
		do_multi_unwatch(c);
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

/* The dispatcher holds every shard the queue and the watched keys need
 * (multi_add_locks): the whole transaction is one critical section. */
bool multi_queue_any(const struct client *c, uint32_t flag, bool set)
{
	if (!c->in_multi)
		return false;
	for (int i = 0; i < c->nqueued; i++)
		if (!(c->queue[i].cmd->flags & flag) != set)
			return true;
	return false;
}

void cmd_exec(struct client *c)
{
	if (!c->in_multi) {
		reply_error(c, "EXEC without MULTI");
		return;
	}
	if (c->multi_error) {
		reply_error(c, "-EXECABORT Transaction discarded because of previous errors.");
		multi_reset(c);
		do_multi_unwatch(c);
		return;
	}
	if (watch_broken(c)) {
		reply_null_array(c);
	} else {
		reply_array(c, c->nqueued);
		for (int i = 0; i < c->nqueued; i++) {
			struct queued_command *q = &c->queue[i];

			/* The rules may have changed since it was queued (Redis
			 * checks again, and goes on with the next command). */
			if (acl_client_restricted(c) &&
			    !acl_check_slow(c, q->cmd, q->argc, q->argv, ACL_CTX_MULTI, false)) {
				int why = acl_last_deny_reason();

				reply_errorf(
					c,
					"-NOPERM ACLs rules changed between the moment the "
					"transaction was accumulated and the EXEC call. This "
					"command is no longer allowed for the following reason: %s",
					why == ACL_DENIED_CMD
						? "no permission to execute the command "
						  "or subcommand"
					: why == ACL_DENIED_KEY
						? "no permission to touch the specified keys"
					: why == ACL_DENIED_CHANNEL ? "no permission to access one "
								      "of the channels used "
								      "as arguments"
								    : "no permission");
				continue;
			}
			command_call_as(c, q->cmd, q->argc, q->argv, EXEC_IN_EXEC);
		}
	}
	multi_reset(c);
	do_multi_unwatch(c);
}
