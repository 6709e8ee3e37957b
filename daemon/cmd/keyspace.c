// SPDX-License-Identifier: BSD-3-Clause
/*
 * keyspace: commands about keys as such, whatever their values: deleting,
 * testing, deadlines, renaming, copying and moving between databases,
 * iterating (KEYS, SCAN, RANDOMKEY) and whole-database operations (DBSIZE,
 * FLUSHDB, FLUSHALL, SWAPDB). Redis 7.0 is the reference for every reply.
 *
 * Locking. No handler here locks: the dispatcher holds what each row's lock
 * scope names (commands.h):
 *  - the shards of the key arguments in c->db, and for MOVE and COPY ... DB
 *    the same keys' shards in the other database (CMD_KEYS_OTHER_DB);
 *  - every shard of c->db for KEYS, SCAN, RANDOMKEY and FLUSHDB
 *    (CMD_LOCK_DB), so each sees one consistent database, as in Redis;
 *  - every shard of the store for FLUSHALL and SWAPDB (CMD_LOCK_ALL);
 *  - none for DBSIZE: db_size() is a racy sum, as good as any snapshot a
 *    client could observe.
 * Every change goes through db_add, db_set_value, db_delete (db_remove) and
 * db_set_expire, which signal the store's change choke point with a reason.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocking.h"
#include "commands.h"
#include "config.h"
#include "exec_ctx.h"
#include "evict.h"
#include "fastpath.h"
#include "mem.h"
#include "notify.h"
#include "pause.h"
#include "propagate.h"
#include "util.h"

#define ERR_SAME_OBJECT "source and destination objects are the same"

/* ---- small helpers ------------------------------------------------------------------------- */

/* Key copies collected under a shard lock and replied to after it: replies
 * need their length before their elements. */
struct keyvec {
	struct arg *v;
	size_t n, cap;
};

static void keyvec_push(struct keyvec *kv, const char *p, size_t len)
{
	if (kv->n == kv->cap) {
		kv->cap = kv->cap ? kv->cap * 2 : 16;
		kv->v = xrealloc(kv->v, kv->cap * sizeof(*kv->v));
	}
	kv->v[kv->n].p = xstrndup(p, len);
	kv->v[kv->n].len = len;
	kv->n++;
}

static void keyvec_free(struct keyvec *kv)
{
	for (size_t i = 0; i < kv->n; i++)
		xfree(kv->v[i].p);
	xfree(kv->v);
	kv->v = NULL;
	kv->n = kv->cap = 0;
}

static void reply_keyvec(struct client *c, const struct keyvec *kv)
{
	reply_array(c, (long)kv->n);
	for (size_t i = 0; i < kv->n; i++)
		reply_bulk(c, kv->v[i].p, kv->v[i].len);
}

/* Deletes the keys in kv that db_find() finds expired (it deletes them and
 * counts them as expired). The caller holds their shard. */
/* The lazy expiry of SCAN and RANDOMKEY: the expired keys they met are
 * deleted (and propagated), unless lazyexpire-nested-arbitrary-keys is off
 * and they run inside MULTI or a script, as Redis's confAllowsExpireDel. */
static void expire_collected(int db, struct keyvec *kv)
{
	bool nested = exec_ctx_top && exec_ctx_top->outer;

	if (!nested || __atomic_load_n(&config.lazyexpire_nested_arbitrary_keys, __ATOMIC_RELAXED))
		for (size_t i = 0; i < kv->n; i++)
			db_find(db, kv->v[i].p, kv->v[i].len);
	keyvec_free(kv);
}

static bool same_arg(const struct client *c, int i, int j)
{
	return c->argv[i].len == c->argv[j].len &&
	       !memcmp(c->argv[i].p, c->argv[j].p, c->argv[i].len);
}

/* A database index argument as Redis parses one with getIntFromObject: a
 * canonical integer that fits an int. Replies and returns false otherwise. */
static bool arg_int(struct client *c, int i, int *out)
{
	long long v;

	if (!str_to_ll(c->argv[i].p, c->argv[i].len, &v)) {
		reply_error(c, ERR_NOT_INT);
		return false;
	}
	if (v < INT_MIN || v > INT_MAX) {
		reply_errorf(c, "value is out of range, value must between %d and %d", INT_MIN,
			     INT_MAX);
		return false;
	}
	*out = (int)v;
	return true;
}

static bool db_index_ok(int db)
{
	return db >= 0 && db < store.ndbs;
}

/*
 * Moves e's value and deadline to key (dst, dlen) in database ddb, which must
 * be absent, and deletes e. O(1) whatever the value's size, as in Redis: the
 * value is handed over rather than copied (a string inside its entry, at most
 * ENTRY_INLINE_MAX bytes, is copied), and e is left holding an integer
 * (which owns no memory) for db_delete to free. The caller holds both shards.
 */
static void move_entry(int sdb, struct entry *e, int ddb, const char *dst, size_t dlen)
{
	int64_t expire = entry_expire(e);
	/* A string inside e (store.h) is copied out: e is freed below. */
	struct obj val = e->val.inl ? obj_dup(&e->val) : e->val;
	struct entry *ne;

	e->val = obj_string_ll(0);
	db_remove(sdb, e, DB_CHANGE_RENAME);
	ne = db_add(ddb, dst, dlen, val);
	if (expire != -1)
		ne = db_set_expire(ddb, ne, expire);
}

/* A thread's pseudo-random numbers (xorshift64*), for RANDOMKEY. */
static uint64_t rand64(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x9e3779b97f4a7c15ull;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dull;
}

/* ---- DEL, UNLINK, EXISTS, TOUCH, TYPE ------------------------------------------------------- */

/* DEL and UNLINK; lazy: big values are freed on the background pool. */
static void del_generic(struct client *c, bool lazy)
{
	long long n = 0;

	for (int i = 1; i < c->argc; i++) {
		struct entry *e = key_find(c, i);

		if (e) {
			db_delete_lazy(c->db, e, lazy);
			notify_arg(c, NOTIFY_GENERIC, "del", i);
			n++;
		}
	}
	reply_int(c, n);
}

/* Under lazyfree-lazy-user-del, DEL is UNLINK. */
void cmd_del(struct client *c)
{
	del_generic(c, config.lazyfree_lazy_user_del);
}

void cmd_unlink(struct client *c)
{
	del_generic(c, true);
}

/* A lookup that leaves the key's access time alone (Redis's LOOKUP_NOTOUCH:
 * EXISTS, TYPE and the TTL family only look at a key, they do not use it). */
static struct entry *key_find_notouch(struct client *c, int i)
{
	struct exec_ctx *x = exec_ctx_top;
	unsigned saved = x->flags;
	struct entry *e;

	x->flags |= EXEC_NO_TOUCH;
	e = key_find_read(c, i);
	x->flags = saved;
	return e;
}

/* EXISTS and TOUCH: count the arguments that name live keys (a key named
 * twice counts twice), as reads (keyspace hits and misses); only TOUCH
 * updates their access time. */
static void count_existing(struct client *c, bool touch)
{
	long long n = 0;

	for (int i = 1; i < c->argc; i++)
		if (touch ? key_find_read(c, i) : key_find_notouch(c, i))
			n++;
	reply_int(c, n);
}

void cmd_exists(struct client *c)
{
	count_existing(c, false);
}

void cmd_touch(struct client *c)
{
	count_existing(c, true);
}

void cmd_type(struct client *c)
{
	struct entry *e = key_find_notouch(c, 1);

	reply_status(c, e ? obj_type_name(&e->val) : "none");
}

/* ---- deadlines ------------------------------------------------------------------------------- */

enum {
	EXP_NX = 1 << 0,
	EXP_XX = 1 << 1,
	EXP_GT = 1 << 2,
	EXP_LT = 1 << 3,
};

/*
 * EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: argv[2] counts `unit` ms, from `base`
 * (the command's clock, or 0 for an absolute time). Options are checked
 * before the time, and the time before the key, as Redis orders its errors.
 * A missing deadline counts as infinite for GT and LT.
 */
static void expire_generic(struct client *c, const char *name, int64_t base, int unit)
{
	unsigned flags = 0;
	struct entry *e;
	long long when;
	int64_t cur;

	for (int i = 3; i < c->argc; i++) {
		const struct arg *a = &c->argv[i];

		if (str_eq_nocase(a->p, a->len, "nx"))
			flags |= EXP_NX;
		else if (str_eq_nocase(a->p, a->len, "xx"))
			flags |= EXP_XX;
		else if (str_eq_nocase(a->p, a->len, "gt"))
			flags |= EXP_GT;
		else if (str_eq_nocase(a->p, a->len, "lt"))
			flags |= EXP_LT;
		else {
			reply_errorf(c, "Unsupported option %s", a->p);
			return;
		}
	}
	if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT))) {
		reply_error(c, "NX and XX, GT or LT options at the same time are not compatible");
		return;
	}
	if ((flags & EXP_GT) && (flags & EXP_LT)) {
		reply_error(c, "GT and LT options at the same time are not compatible");
		return;
	}
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &when)) {
		reply_error(c, ERR_NOT_INT);
		return;
	}
	/* Refuse what would overflow a ms deadline; a large negative relative
	 * time is fine, it just lies in the past. */
	if (unit == 1000) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto invalid;
		when *= 1000;
	}
	if (base) {
		if (when > LLONG_MAX - base)
			goto invalid;
		when += base;
	}

	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	cur = entry_expire(e);
	if (((flags & EXP_NX) && cur != -1) || ((flags & EXP_XX) && cur == -1) ||
	    ((flags & EXP_GT) && (cur == -1 || when <= cur)) ||
	    ((flags & EXP_LT) && cur != -1 && when >= cur)) {
		reply_int(c, 0);
		return;
	}
	/* A deadline already reached deletes the key now rather than leaving a
	 * dead key for lazy expiry to find. */
	if (when <= store_now()) {
		struct arg del[2] = { PROP_STR("DEL"), c->argv[1] };

		db_delete(c->db, e);
		propagate_rewrite(2, del);
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
	} else {
		char buf[LL_STR_SIZE + 1];
		struct arg at[3] = { PROP_STR("PEXPIREAT"), c->argv[1], prop_ll(buf, when) };

		/* The condition held here; the stream carries the result. */
		e = db_set_expire(c->db, e, when);
		propagate_rewrite(3, at);
		notify_arg(c, NOTIFY_GENERIC, "expire", 1);
	}
	reply_int(c, 1);
	return;

invalid:
	reply_errorf(c, "invalid expire time in '%s' command", name);
}

void cmd_expire(struct client *c)
{
	expire_generic(c, "expire", store_now(), 1000);
}

void cmd_pexpire(struct client *c)
{
	expire_generic(c, "pexpire", store_now(), 1);
}

void cmd_expireat(struct client *c)
{
	expire_generic(c, "expireat", 0, 1000);
}

void cmd_pexpireat(struct client *c)
{
	expire_generic(c, "pexpireat", 0, 1);
}

/* TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 for no key, -1 for no deadline;
 * seconds are rounded to the nearest. */
static void ttl_generic(struct client *c, bool ms, bool absolute)
{
	struct entry *e = key_find_notouch(c, 1);
	int64_t v;

	if (!e) {
		reply_int(c, -2);
		return;
	}
	if (entry_expire(e) == -1) {
		reply_int(c, -1);
		return;
	}
	v = absolute ? entry_expire(e) : entry_expire(e) - store_now();
	if (v < 0)
		v = 0;
	/* v / 1000 + rounding, written so that v near LLONG_MAX cannot overflow. */
	reply_int(c, ms ? v : v / 1000 + (v % 1000 >= 500));
}

void cmd_ttl(struct client *c)
{
	ttl_generic(c, false, false);
}

void cmd_pttl(struct client *c)
{
	ttl_generic(c, true, false);
}

void cmd_expiretime(struct client *c)
{
	ttl_generic(c, false, true);
}

void cmd_pexpiretime(struct client *c)
{
	ttl_generic(c, true, true);
}

void cmd_persist(struct client *c)
{
	struct entry *e = key_find(c, 1);

	if (!e || entry_expire(e) == -1) {
		reply_int(c, 0);
		return;
	}
	e = db_set_expire(c->db, e, -1);
	notify_arg(c, NOTIFY_GENERIC, "persist", 1);
	reply_int(c, 1);
}

/* ---- KEYS, SCAN, RANDOMKEY ------------------------------------------------------------------ */

struct walk {
	const char *pat; /* NULL: every key */
	size_t plen;
	const char *type; /* NULL: every type */
	size_t tlen;
	int64_t now;
	uint64_t seen;	     /* nodes visited, expired ones included (SCAN COUNT) */
	struct keyvec keys;  /* matching live keys */
	struct keyvec *dead; /* expired keys to delete afterwards, or NULL */
};

/* dict_scan callback: filters one node into w->keys. Deleting here could
 * shrink the table under dict_scan, so expired keys are only noted. */
static void walk_node(void *ctx, struct dict_node *node)
{
	struct walk *w = ctx;
	struct entry *e = entry_of(node);

	w->seen++;
	/* Redis 8.8's order: the pattern first (a key it filters out is left
	 * alone, expired or not), then expiry, then the type. */
	if (w->pat && !glob_match(w->pat, w->plen, e->key, entry_klen(e), false))
		return;
	if (entry_expired(e, w->now)) {
		if (w->dead)
			keyvec_push(w->dead, e->key, entry_klen(e));
		return;
	}
	if (w->type && !str_eq_nocase(w->type, w->tlen, obj_type_name(&e->val)))
		return;
	keyvec_push(&w->keys, e->key, entry_klen(e));
}

/* Expired keys are skipped, not deleted, as Redis's KEYS does. */
void cmd_keys(struct client *c)
{
	struct walk w = { .now = store_now() };

	if (!(c->argv[1].len == 1 && c->argv[1].p[0] == '*')) {
		w.pat = c->argv[1].p;
		w.plen = c->argv[1].len;
	}
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *sh = store_shard(c->db, i);
		uint64_t cur = 0;

		if (sh->keys.count) {
			do
				cur = dict_scan(&sh->keys, cur, walk_node, &w);
			while (cur);
		}
	}
	reply_keyvec(c, &w.keys);
	keyvec_free(&w.keys);
}

/*
 * SCAN cursors: shard * 2^48 + the shard's dict_scan cursor. A call walks
 * shard after shard in index order and, within a shard, buckets in dict_scan's
 * reverse-binary order, so a complete iteration returns every key present for
 * all of it even when shards resize between calls. 48 bits hold the cursor of
 * any table that fits in memory; 64 shards use 6 of the 16 bits left above.
 */
#define SCAN_SHARD_SHIFT 48
#define SCAN_INNER_MASK ((1ull << SCAN_SHARD_SHIFT) - 1)

void cmd_scan(struct client *c)
{
	struct keyvec dead = { 0 };
	struct walk w = { .dead = &dead };
	long long count = 10;
	uint64_t cursor, inner, budget;
	unsigned shard;
	char buf[LL_STR_SIZE + 1];

	if (!str_to_cursor(c->argv[1].p, &cursor)) {
		reply_error(c, "invalid cursor");
		return;
	}
	for (int i = 2; i < c->argc; i += 2) {
		bool has_val = i + 1 < c->argc;
		const struct arg *a = &c->argv[i];

		if (has_val && str_eq_nocase(a->p, a->len, "count")) {
			if (!arg_ll(c, i + 1, &count))
				return;
			if (count < 1) {
				reply_error(c, ERR_SYNTAX);
				return;
			}
		} else if (has_val && str_eq_nocase(a->p, a->len, "match")) {
			w.pat = c->argv[i + 1].p;
			w.plen = c->argv[i + 1].len;
		} else if (has_val && str_eq_nocase(a->p, a->len, "type")) {
			w.type = c->argv[i + 1].p;
			w.tlen = c->argv[i + 1].len;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (w.pat && w.plen == 1 && w.pat[0] == '*')
		w.pat = NULL;

	/* As Redis, visit at most about 10 buckets per key asked for, so a
	 * sparse table cannot make one call long; empty shards cost nothing. */
	budget = (uint64_t)count > UINT64_MAX / 10 ? UINT64_MAX : (uint64_t)count * 10;
	/* A cursor past the last shard (one we never gave) ends the iteration. */
	shard = STORE_SHARDS;
	if (cursor >> SCAN_SHARD_SHIFT < STORE_SHARDS)
		shard = (unsigned)(cursor >> SCAN_SHARD_SHIFT);
	inner = cursor & SCAN_INNER_MASK;
	w.now = store_now();
	while (shard < STORE_SHARDS) {
		struct shard *sh = store_shard(c->db, shard);

		if (!sh->keys.count) {
			inner = 0;
		} else {
			do {
				inner = dict_scan(&sh->keys, inner, walk_node, &w);
				budget--;
			} while (inner && w.seen < (uint64_t)count && budget);
		}
		expire_collected(c->db, &dead);
		if (inner)
			break;
		shard++;
		if (w.seen >= (uint64_t)count || !budget)
			break;
	}
	cursor = shard < STORE_SHARDS ? (uint64_t)shard << SCAN_SHARD_SHIFT | inner : 0;

	reply_array(c, 2);
	reply_bulk(c, buf, (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cursor));
	reply_keyvec(c, &w.keys);
	keyvec_free(&w.keys);
}

/* Attempts at a random pick before RANDOMKEY falls back to a walk. */
#define RANDOMKEY_TRIES 128

/*
 * Picks a shard with probability proportional to its size, then a node in
 * it. An expired node is deleted and the pick retried, as Redis does, so a
 * key past its deadline is never returned. Shard sizes are read without their
 * locks (they only weight the choice); the chosen shard is re-checked under
 * its lock. If every try fails (a database of mostly expired keys, or one
 * emptying as we look), one ordered walk settles it.
 */
void cmd_randomkey(struct client *c)
{
	uint64_t counts[STORE_SHARDS], total = 0;
	int64_t now = store_now();
	struct entry *frozen = NULL;
	int db = c->db;

	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		counts[i] = __atomic_load_n(&store_shard(db, i)->keys.count, __ATOMIC_RELAXED);
		total += counts[i];
	}
	for (int t = 0; t < RANDOMKEY_TRIES && total; t++) {
		uint64_t r = rand64() % total;
		struct dict_node *node = NULL;
		struct shard *sh;
		struct entry *e;
		unsigned i = 0;

		while (r >= counts[i])
			r -= counts[i++];
		sh = store_shard(db, i);
		if (sh->keys.count)
			node = dict_random(&sh->keys, rand64());
		if (!node) {
			total -= counts[i];
			counts[i] = 0;
			continue;
		}
		e = entry_of(node);
		if (!entry_expired(e, now)) {
			reply_bulk(c, e->key, entry_klen(e));
			return;
		}
		/* Under CLIENT PAUSE an expired key stays (pause_frozen). */
		frozen = pause_frozen() ? e : NULL;
		{
			struct keyvec dead = { 0 };

			keyvec_push(&dead, e->key, entry_klen(e));
			expire_collected(db, &dead);
		}
		counts[i]--;
		total--;
	}
	/* As Redis: a paused server whose keys all have deadlines answers an
	 * expired one rather than nothing (they cannot expire meanwhile). */
	if (frozen && db_size(db) == db_expires(db)) {
		reply_bulk(c, frozen->key, entry_klen(frozen));
		return;
	}

	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *sh = store_shard(db, i);
		struct keyvec dead = { 0 };
		struct walk w = { .now = now, .dead = &dead };
		uint64_t cur = 0;

		if (sh->keys.count) {
			do
				cur = dict_scan(&sh->keys, cur, walk_node, &w);
			while (cur && !w.keys.n);
		}
		expire_collected(db, &dead);
		if (w.keys.n) {
			reply_bulk(c, w.keys.v[0].p, w.keys.v[0].len);
			keyvec_free(&w.keys);
			return;
		}
	}
	reply_null(c);
}

/* ---- RENAME, RENAMENX, COPY, MOVE ----------------------------------------------------------- */

/* Both keys are in c->db, locked by the dispatcher (key positions 1..2).
 * The deadline moves with the value. */
/* Redis's events for a destination that RENAME or COPY replaced (old_type
 * -1: there was none). */
static void overwrite_events(int db, const struct arg *key, int old_type, int new_type)
{
	if (old_type < 0)
		return;
	notify_keyspace_event(NOTIFY_OVERWRITTEN, "overwritten", key->p, key->len, db);
	if (old_type != new_type)
		notify_keyspace_event(NOTIFY_TYPE_CHANGED, "type_changed", key->p, key->len, db);
}

static void rename_generic(struct client *c, bool nx)
{
	struct entry *e = key_find(c, 1), *d;
	int dtype = -1, stype;

	if (!e) {
		reply_error(c, ERR_NO_KEY);
		return;
	}
	if (same_arg(c, 1, 2)) {
		if (nx)
			reply_int(c, 0);
		else
			reply_ok(c);
		return;
	}
	d = key_find(c, 2);
	if (d) {
		if (nx) {
			reply_int(c, 0);
			return;
		}
		dtype = d->val.type;
		db_delete(c->db, d);
	}
	stype = e->val.type;
	command_dirty(1); /* one change, the target's deletion included */
	move_entry(c->db, e, c->db, c->argv[2].p, c->argv[2].len);
	notify_arg(c, NOTIFY_GENERIC, "rename_from", 1);
	notify_arg(c, NOTIFY_GENERIC, "rename_to", 2);
	overwrite_events(c->db, &c->argv[2], dtype, stype);
	if (nx)
		reply_int(c, 1);
	else
		reply_ok(c);
}

void cmd_rename(struct client *c)
{
	rename_generic(c, false);
}

void cmd_renamenx(struct client *c)
{
	rename_generic(c, true);
}

/* COPY source destination [DB n] [REPLACE]: the copy keeps the deadline. */
void cmd_copy(struct client *c)
{
	struct entry *e, *d;
	int dtype = -1;
	bool replace = false;
	int ddb = c->db;
	long long ret = 0;

	for (int i = 3; i < c->argc; i++) {
		const struct arg *a = &c->argv[i];

		if (str_eq_nocase(a->p, a->len, "replace")) {
			replace = true;
		} else if (str_eq_nocase(a->p, a->len, "db") && i + 1 < c->argc) {
			if (!arg_int(c, ++i, &ddb))
				return;
			if (!db_index_ok(ddb)) {
				reply_error(c, ERR_DB_INDEX);
				return;
			}
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (ddb == c->db && same_arg(c, 1, 2)) {
		reply_error(c, ERR_SAME_OBJECT);
		return;
	}

	e = key_find_read(c, 1);
	if (!e)
		goto out;
	d = db_find(ddb, c->argv[2].p, c->argv[2].len);
	if (d) {
		if (!replace)
			goto out;
		dtype = d->val.type;
		db_delete(ddb, d);
	}
	d = db_add(ddb, c->argv[2].p, c->argv[2].len, obj_dup(&e->val));
	if (entry_expire(e) != -1)
		d = db_set_expire(ddb, d, entry_expire(e));
	notify_keyspace_event(NOTIFY_GENERIC, "copy_to", c->argv[2].p, c->argv[2].len, ddb);
	overwrite_events(ddb, &c->argv[2], dtype, e->val.type);
	ret = 1;
out:
	reply_int(c, ret);
}

void cmd_move(struct client *c)
{
	const struct arg *key = &c->argv[1];
	struct entry *e;
	long long ret = 0;
	int ddb;

	if (!arg_int(c, 2, &ddb))
		return;
	if (!db_index_ok(ddb)) {
		reply_error(c, ERR_DB_INDEX);
		return;
	}
	if (ddb == c->db) {
		reply_error(c, ERR_SAME_OBJECT);
		return;
	}

	e = key_find(c, 1);
	if (e && !db_find(ddb, key->p, key->len)) {
		command_dirty(1);
		move_entry(c->db, e, ddb, key->p, key->len);
		notify_keyspace_event(NOTIFY_GENERIC, "move_from", key->p, key->len, c->db);
		notify_keyspace_event(NOTIFY_GENERIC, "move_to", key->p, key->len, ddb);
		ret = 1;
	}
	reply_int(c, ret);
}

/* ---- DBSIZE, FLUSHDB, FLUSHALL, SWAPDB ------------------------------------------------------ */

void cmd_dbsize(struct client *c)
{
	reply_int(c, (long long)db_size(c->db));
}

/* FLUSHDB and FLUSHALL take an optional ASYNC or SYNC; without either,
 * lazyfree-lazy-user-flush chooses. The keys are gone for every client
 * before the reply either way. ASYNC replaces the tables at once, frees the
 * keys on the background pool and answers. SYNC is run as Redis 8.8 runs it:
 * as a blocking ASYNC, answered once the pool has freed the keys, so the
 * store's locks are not held meanwhile; inside MULTI or a script, where
 * nothing may block, it frees the keys itself. */
static bool flush_args_ok(struct client *c, bool *lazy)
{
	*lazy = config.lazyfree_lazy_user_flush;
	if (c->argc == 1)
		return true;
	if (c->argc == 2 && str_eq_nocase(c->argv[1].p, c->argv[1].len, "async")) {
		*lazy = true;
		return true;
	}
	if (c->argc == 2 && str_eq_nocase(c->argv[1].p, c->argv[1].len, "sync")) {
		*lazy = false;
		return true;
	}
	reply_error(c, ERR_SYNTAX);
	return false;
}

static void flush_generic(struct client *c, bool all)
{
	bool lazy, wait = false;

	if (!flush_args_ok(c, &lazy))
		return;
	if (!lazy && blocking_jobs_allowed(c))
		lazy = wait = true;
	/* Each key removed counts as a change, as in Redis. */
	for (int db = all ? 0 : c->db; db < (all ? store.ndbs : c->db + 1); db++)
		command_dirty(db_flush_lazy(db, lazy));
	if (wait)
		blocking_wait_jobs(c);
	else
		reply_ok(c);
}

void cmd_flushdb(struct client *c)
{
	flush_generic(c, false);
}

void cmd_flushall(struct client *c)
{
	flush_generic(c, true);
}

/* SWAPDB's indexes have their own parse errors, naming which one is bad. */
static bool swapdb_index(struct client *c, int i, int *out, const char *err)
{
	long long v;

	if (!str_to_ll(c->argv[i].p, c->argv[i].len, &v) || v < INT_MIN || v > INT_MAX) {
		reply_error(c, err);
		return false;
	}
	*out = (int)v;
	return true;
}

void cmd_swapdb(struct client *c)
{
	int a, b;

	if (!swapdb_index(c, 1, &a, "invalid first DB index") ||
	    !swapdb_index(c, 2, &b, "invalid second DB index"))
		return;
	if (!db_index_ok(a) || !db_index_ok(b)) {
		reply_error(c, ERR_DB_INDEX);
		return;
	}
	if (a != b)
		db_swap(a, b);
	command_dirty(1); /* even a database with itself, as Redis */
	reply_ok(c);
}

/* ---- OBJECT ---------------------------------------------------------------------------------- */

/* The key without touching its access time, as OBJECT looks keys up. */
static struct entry *key_peek(struct client *c, int i)
{
	struct entry *e = db_peek(c->db, c->argv[i].p, c->argv[i].len);

	return e && !entry_expired(e, store_now()) ? e : NULL;
}

void cmd_object_encoding(struct client *c)
{
	struct entry *e = key_peek(c, 2);

	if (e)
		reply_bulk_cstr(c, obj_encoding_name(&e->val));
	else
		reply_null(c);
}

void cmd_object_refcount(struct client *c)
{
	struct entry *e = key_peek(c, 2);

	/* Redis 8 gives every key's value an object of its own, the key
	 * embedded (kvobjSet): no value in the keyspace is shared, not even
	 * the integers 0..9999 that Redis 7 shared (refcount INT_MAX). */
	if (!e)
		reply_null(c);
	else
		reply_int(c, 1);
}

void cmd_object_idletime(struct client *c)
{
	struct entry *e = key_peek(c, 2);

	if (!e) {
		reply_null(c);
		return;
	}
	fastpath_collect(c->db, e); /* the kernel's hits are accesses too */
	/* Under LFU the access time keeps the counter's decay, not idle time. */
	if (evict_policy_is_lfu()) {
		reply_error(c, "An LFU maxmemory policy is selected, idle time not tracked. Please "
			       "note that when switching between policies at runtime LRU and LFU "
			       "data will take some time to adjust.");
		return;
	}
	reply_int(c, (long long)((store_clock() - e->atime) / STORE_CLOCK_HZ));
}

void cmd_object_freq(struct client *c)
{
	struct entry *e = key_peek(c, 2);

	if (!e) {
		reply_null(c);
		return;
	}
	if (!evict_policy_is_lfu()) {
		reply_error(c,
			    "An LFU maxmemory policy is not selected, access frequency not "
			    "tracked. Please note that when switching between policies at runtime "
			    "LRU and LFU data will take some time to adjust.");
		return;
	}
	fastpath_collect(c->db, e);
	reply_int(c, lfu_value(e, store_clock()));
}

void cmd_object_help(struct client *c)
{
	static const char *const help[] = {
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, help);
}
