// SPDX-License-Identifier: BSD-3-Clause
/*
 * The propagation point (propagate.h). A unit's commands are collected on its
 * execution context while it runs, then emitted together under the
 * propagation lock, which is a leaf lock taken under shard locks; the
 * stream's database (for SELECT) is protected by it too.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "exec_ctx.h"
#include "mem.h"
#include "propagate.h"
#include "store.h"
#include "util.h"

#define CONSUMERS_MAX 4

struct prop_op {
	int db;
	bool repl_only; /* PUBLISH: for replicas, not the AOF */
	int argc;
	struct arg *argv; /* owned copies */
};

struct prop_ops {
	int n, cap;
	struct prop_op *v;
};

static struct {
	propagate_fn *fn;
	void *arg;
	bool active; /* atomic: read under the lock, written by set_active */
	bool repl;   /* also gets what only replicas get (set at start-up) */
} consumers[CONSUMERS_MAX];
/* Written at start-up only, read without the lock. */
static int nconsumers;
/* How many are active: the one load propagate_enabled costs (atomic). */
static int nactive;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int stream_db = -1; /* the database the stream's last SELECT chose */

bool propagate_enabled(void)
{
	return __atomic_load_n(&nactive, __ATOMIC_ACQUIRE) > 0;
}

struct arg prop_ll(char *buf, long long v)
{
	return (struct arg){ buf, (size_t)ll_to_str(buf, v) };
}

static struct prop_op *op_add(struct exec_ctx *unit, int db, int argc, const struct arg *argv)
{
	struct prop_ops *ops = unit->ops;
	struct prop_op *op;

	if (!ops)
		ops = unit->ops = xcalloc(1, sizeof(*ops));
	if (ops->n == ops->cap) {
		ops->cap = ops->cap ? ops->cap * 2 : 4;
		ops->v = xrealloc(ops->v, sizeof(*ops->v) * (size_t)ops->cap);
	}
	op = &ops->v[ops->n++];
	op->db = db;
	op->argc = argc;
	op->argv = xmalloc(sizeof(*op->argv) * (size_t)argc);
	op->repl_only = false;
	for (int i = 0; i < argc; i++) {
		op->argv[i].p = xstrndup(argv[i].p, argv[i].len);
		op->argv[i].len = argv[i].len;
	}
	return op;
}

/* Under the lock. repl_only: only to consumers that take it. */
static void emit_to(int argc, const struct arg *argv, bool repl_only)
{
	for (int i = 0; i < nconsumers; i++)
		if (__atomic_load_n(&consumers[i].active, __ATOMIC_RELAXED) &&
		    (!repl_only || consumers[i].repl))
			consumers[i].fn(consumers[i].arg, argc, argv);
}

static void emit(int argc, const struct arg *argv)
{
	emit_to(argc, argv, false);
}

/* The SELECT goes to every consumer, so they all agree on the database. */
static void emit_in(int db, int argc, const struct arg *argv, bool repl_only)
{
	if (db != stream_db) {
		char buf[LL_STR_SIZE + 1];
		struct arg sel[2] = { PROP_STR("SELECT"), prop_ll(buf, db) };

		emit(2, sel);
		stream_db = db;
	}
	emit_to(argc, argv, repl_only);
}

/* A key that expired, was evicted or left with its cluster slot leaves as a
 * DEL, or an UNLINK when lazyfree-lazy-expire, -eviction or -server-del frees
 * it lazily (Redis's propagateDeletion): inside a command, before
 * the command's own effect; outside (active expiry, eviction), at once, under
 * the shard lock the caller holds. Any other change marks the running call
 * as having written. */
static void propagate_on_change(const struct db_change *ch)
{
	struct exec_ctx *x = exec_ctx_top;
	struct arg del[2];

	if (!propagate_enabled())
		return;
	if (ch->reason != DB_CHANGE_EXPIRE && ch->reason != DB_CHANGE_EVICT &&
	    ch->reason != DB_CHANGE_SLOT_LOST) {
		if (x)
			x->dirty = true;
		return;
	}
	/* A hash whose last field expired is a key expiring too. */
	if (ch->reason == DB_CHANGE_EXPIRE  ? config.lazyfree_lazy_expire
	    : ch->reason == DB_CHANGE_EVICT ? config.lazyfree_lazy_eviction
					    : config.lazyfree_lazy_server_del)
		del[0] = PROP_STR("UNLINK");
	else
		del[0] = PROP_STR("DEL");
	del[1] = (struct arg){ ch->e->key, entry_klen(ch->e) };
	if (x && x->client) {
		op_add(x->unit, ch->db, 2, del);
		return;
	}
	pthread_mutex_lock(&lock);
	emit_in(ch->db, 2, del, false);
	pthread_mutex_unlock(&lock);
}

int propagate_consumer_add(propagate_fn *fn, void *arg, bool active)
{
	if (nconsumers == CONSUMERS_MAX)
		return -ENOSPC;
	consumers[nconsumers].fn = fn;
	consumers[nconsumers].arg = arg;
	consumers[nconsumers].active = false;
	store_hook_set(STORE_HOOK_PROPAGATE, propagate_on_change);
	if (active)
		propagate_consumer_set_active(nconsumers, true);
	return nconsumers++;
}

void propagate_consumer_set_repl(int id)
{
	consumers[id].repl = true;
}

void propagate_repl_only(void)
{
	struct exec_ctx *x = exec_ctx_top;

	if (!propagate_enabled() || !x || !x->client)
		return;
	x->rewritten = true;
	op_add(x->unit, x->client->db, x->client->argc, x->client->argv)->repl_only = true;
}

void propagate_consumer_set_active(int id, bool active)
{
	pthread_mutex_lock(&lock);
	if (consumers[id].active != active) {
		__atomic_store_n(&consumers[id].active, active, __ATOMIC_RELAXED);
		__atomic_add_fetch(&nactive, active ? 1 : -1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
}

void propagate_sync_point(void (*fn)(void *arg), void *arg, bool reset_db)
{
	pthread_mutex_lock(&lock);
	if (reset_db)
		stream_db = -1;
	fn(arg);
	pthread_mutex_unlock(&lock);
}

void propagate_consumer_activate(propagate_fn *fn, bool on)
{
	for (int i = 0; i < nconsumers; i++)
		if (consumers[i].fn == fn)
			propagate_consumer_set_active(i, on);
}

void propagate_forget_db(void)
{
	pthread_mutex_lock(&lock);
	stream_db = -1;
	pthread_mutex_unlock(&lock);
}

void propagate_rewrite(int argc, const struct arg *argv)
{
	struct exec_ctx *x = exec_ctx_top;

	if (!propagate_enabled() || !x || !x->client)
		return;
	x->rewritten = true;
	op_add(x->unit, x->client->db, argc, argv);
}

void propagate_done(struct exec_ctx *x, bool write_cmd)
{
	if (!x->dirty || x->rewritten || !write_cmd)
		return;
	/* The common case, a unit of one verbatim command: propagate_flush,
	 * which follows at once, emits it from the client's own arguments,
	 * without the copies a longer unit needs. */
	if (x->unit == x && !x->ops) {
		x->verbatim = true;
		return;
	}
	op_add(x->unit, x->client->db, x->client->argc, x->client->argv);
}

bool propagate_flush(struct exec_ctx *x)
{
	struct prop_ops *ops = x->ops;
	static const struct arg multi = PROP_STR("MULTI"), exec = PROP_STR("EXEC");

	if (x->verbatim) {
		x->verbatim = false;
		pthread_mutex_lock(&lock);
		emit_in(x->client->db, x->client->argc, x->client->argv, false);
		pthread_mutex_unlock(&lock);
		return true;
	}
	if (!ops)
		return false;
	/* More than one command: one transaction, as Redis propagates it, so
	 * a consumer never applies half of it; but the lazy expiry of SCAN or
	 * RANDOMKEY run directly goes as plain DELs, as Redis's active expiry. */
	bool tx = ops->n > 1 && !(x->flags & EXEC_ARBITRARY_KEYS);

	pthread_mutex_lock(&lock);
	if (tx)
		emit(1, &multi); /* before any SELECT, as Redis 7+ */
	for (int i = 0; i < ops->n; i++)
		emit_in(ops->v[i].db, ops->v[i].argc, ops->v[i].argv, ops->v[i].repl_only);
	if (tx)
		emit(1, &exec);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < ops->n; i++) {
		for (int j = 0; j < ops->v[i].argc; j++)
			xfree(ops->v[i].argv[j].p);
		xfree(ops->v[i].argv);
	}
	xfree(ops->v);
	xfree(ops);
	x->ops = NULL;
	return true;
}

void propagate_deadline(int argc, const struct arg *argv, const char *name, int at, bool word,
			int64_t when)
{
	char buf[LL_STR_SIZE + 1];
	struct arg *v;

	if (!propagate_enabled())
		return;
	v = xmalloc(sizeof(*v) * (size_t)argc);
	memcpy(v, argv, sizeof(*v) * (size_t)argc);
	if (name)
		v[0] = (struct arg){ (char *)name, strlen(name) };
	if (word)
		v[at - 1] = PROP_STR("PXAT");
	v[at] = prop_ll(buf, when);
	propagate_rewrite(argc, v);
	xfree(v);
}

void propagate_renamed(int argc, const struct arg *argv, const char *name, int drop)
{
	struct arg *v;
	int n = 0;

	if (!propagate_enabled())
		return;
	v = xmalloc(sizeof(*v) * (size_t)argc);
	v[n++] = (struct arg){ (char *)name, strlen(name) };
	for (int i = 1; i < argc; i++)
		if (i != drop)
			v[n++] = argv[i];
	propagate_rewrite(n, v);
	xfree(v);
}

void propagate_renamed_from(int argc, const struct arg *argv, const char *name, int from)
{
	struct arg *v;
	int n = 0;

	if (!propagate_enabled())
		return;
	v = xmalloc(sizeof(*v) * (size_t)argc);
	v[n++] = (struct arg){ (char *)name, strlen(name) };
	v[n++] = argv[1];
	for (int i = from; i < argc; i++)
		v[n++] = argv[i];
	propagate_rewrite(n, v);
	xfree(v);
}

void propagate_pop(const char *name, const struct arg *key, long long count)
{
	char buf[LL_STR_SIZE + 1];
	struct arg v[3] = { { (char *)name, strlen(name) }, *key, prop_ll(buf, count) };

	if (propagate_enabled())
		propagate_rewrite(count > 0 ? 3 : 2, v);
}
