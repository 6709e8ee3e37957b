// SPDX-License-Identifier: BSD-3-Clause
/*
 * The keyspace. Lock rules are at the top of store.h: every function here that
 * takes a db and a key or entry runs under that key's shard lock, held by the
 * caller; lockset_* and store_active_expire take locks themselves, always in
 * ascending (db, shard) order.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "blocking.h"
#include "client.h"
#include "evict.h"
#include "fastpath.h"
#include "log.h"
#include "mem.h"
#include "pause.h"
#include "store.h"
#include "t_hash.h"
#include "util.h"

struct store store;
static struct store_reads unowned_reads;
__thread struct store_reads *store_reads = &unowned_reads;
static int64_t store_start_ms; /* the access clock's zero */
__thread int64_t store_time_ms;
__thread bool store_no_touch;
__thread int64_t store_mono_ms;

int64_t store_now(void)
{
	return store_time_ms ? store_time_ms : now_ms();
}

static bool entry_key_equal(const struct dict_node *node, const void *key, size_t len)
{
	const struct entry *e = entry_of(node);

	return e->klen == len && memcmp(e->key, key, len) == 0;
}

static const struct dict_type keyspace_type = { .key_equal = entry_key_equal };

/* CRC16-CCITT (XMODEM), the Redis Cluster key hash, a byte at a time from
 * a table built at start-up. */
static uint16_t crc16_table[256];

/* A constructor: key_slot() works before store_init() (tools, tests). */
static void __attribute__((constructor)) crc16_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint16_t crc = (uint16_t)(i << 8);

		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
		crc16_table[i] = crc;
	}
}

static uint16_t crc16(const char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++)
		crc = (uint16_t)(crc << 8) ^ crc16_table[(crc >> 8) ^ (unsigned char)p[i]];
	return crc;
}

void store_init(int ndbs)
{
	store_start_ms = mono_ms();
	store.ndbs = ndbs;
	store.dbs = xcalloc_aligned(ndbs, sizeof(*store.dbs), _Alignof(struct db));
	for (int db = 0; db < ndbs; db++) {
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *s = store_shard(db, i);

			pthread_mutex_init(&s->lock, NULL);
			dict_init(&s->keys, &keyspace_type);
		}
	}
}

void store_destroy(void)
{
	for (int db = 0; db < store.ndbs; db++) {
		db_flush(db);
		for (unsigned i = 0; i < STORE_SHARDS; i++)
			pthread_mutex_destroy(&store_shard(db, i)->lock);
	}
	xfree(store.dbs);
	store.dbs = NULL;
}

/*
 * The slot of the last key a lockset took on this thread, so that the
 * command's own lookup of that key (nearly always the next key_slot call)
 * does not hash it again: a CRC16 of a short key is ~120 instructions, a
 * tenth of a GET. Keyed by the argument's address and length; valid only while
 * the command runs (lockset_release and lockset_init forget it), when the
 * arguments do not change.
 */
static __thread struct {
	const char *key;
	size_t len;
	unsigned slot;
} slot_memo;

static unsigned key_slot_hash(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	/* Only a non-empty {tag} is hashed in place of the key. */
	if (open) {
		size_t rest = len - (size_t)(open - key) - 1;

		close = memchr(open + 1, '}', rest);
		if (close && close > open + 1)
			return crc16(open + 1, (size_t)(close - open - 1)) % CLUSTER_SLOTS;
	}
	return crc16(key, len) % CLUSTER_SLOTS;
}

unsigned key_slot(const char *key, size_t len)
{
	if (key == slot_memo.key && len == slot_memo.len)
		return slot_memo.slot;
	return key_slot_hash(key, len);
}

static inline uint64_t key_hash(const char *key, size_t len)
{
	return XXH3_64bits(key, len);
}

bool entry_expired(const struct entry *e, int64_t now)
{
	return e->expire >= 0 && now > e->expire;
}

static void entry_free(struct entry *e)
{
	obj_free(&e->val);
	xfree(e);
}

static void entry_free_node(struct dict_node *node)
{
	entry_free(entry_of(node));
}

static inline struct shard *shard_of(int db, const char *key, size_t len)
{
	return store_shard(db, key_shard(key, len));
}

static inline struct shard *entry_shard(int db, const struct entry *e)
{
	return store_shard(db, e->slot % STORE_SHARDS);
}

/* Tells the watchers of key (in shard s) that it changed. */
static void touch_watchers(struct shard *s, const char *key, size_t len)
{
	for (struct watcher *w = s->watchers; w; w = w->next)
		if (w->klen == len && memcmp(w->key, key, len) == 0)
			__atomic_store_n(&w->client->watch_dirty, true, __ATOMIC_RELEASE);
}

struct watcher *db_watch(int db, struct client *c, const char *key, size_t len)
{
	struct shard *s = shard_of(db, key, len);
	struct watcher *w = xmalloc(sizeof(*w) + len);

	w->client = c;
	w->klen = (uint32_t)len;
	memcpy(w->key, key, len);
	w->next = s->watchers;
	s->watchers = w;
	return w;
}

void db_unwatch(int db, struct watcher *w)
{
	struct shard *s = shard_of(db, w->key, w->klen);
	struct watcher **pp = &s->watchers;

	while (*pp && *pp != w)
		pp = &(*pp)->next;
	if (*pp)
		*pp = w->next;
	xfree(w);
}

/* shard.field_ttls: none seen; seen in the last full scan; set since. */
enum { FIELD_TTLS_NONE, FIELD_TTLS_SEEN, FIELD_TTLS_NEW };

void db_changed(int db, struct entry *e)
{
	struct shard *s = entry_shard(db, e);

	if (e->val.type == OBJ_HASH && s->field_ttls != FIELD_TTLS_NEW && hash_has_expire(&e->val))
		__atomic_store_n(&s->field_ttls, FIELD_TTLS_NEW, __ATOMIC_RELAXED);

	fastpath_key_changed(db, e);
	blocking_key_changed(db, e->key, e->klen);
	if (s->watchers)
		touch_watchers(s, e->key, e->klen);
	s->version++;
}

/* Deletes e because its deadline passed (lazily or actively). */
static void expire_entry(int db, struct shard *s, struct entry *e)
{
	s->expired++;
	db_delete(db, e);
}

uint32_t store_clock(void)
{
	int64_t now = store_mono_ms ? store_mono_ms : mono_ms();

	return (uint32_t)((now - store_start_ms) / (1000 / STORE_CLOCK_HZ));
}

static struct entry *find_in(int db, struct shard *s, const char *key, size_t len)
{
	struct dict_node *n = dict_find(&s->keys, key, len, key_hash(key, len));
	struct entry *e;
	uint32_t now;

	if (!n)
		return NULL;
	e = entry_of(n);
	if (entry_expired(e, store_now())) {
		/* CLIENT PAUSE keeps the data set still: the key only reads as gone. */
		if (!pause_frozen())
			expire_entry(db, s, e);
		return NULL;
	}
	if (store_no_touch)
		return e;
	now = store_clock();
	if (evict_policy_is_lfu())
		lfu_touch(e, now);
	e->atime = now;
	return e;
}

struct entry *db_find(int db, const char *key, size_t len)
{
	return find_in(db, shard_of(db, key, len), key, len);
}

struct entry *db_find_read(int db, const char *key, size_t len)
{
	struct entry *e = db_find(db, key, len);

	stat_add(e ? &store_reads->hits : &store_reads->misses, 1);
	return e;
}

struct entry *db_find_get(int db, const char *key, size_t len)
{
	struct entry *e = db_find_read(db, key, len);

	if (e)
		fastpath_note_read(db, e);
	return e;
}

struct entry *db_peek(int db, const char *key, size_t len)
{
	struct shard *s = shard_of(db, key, len);
	struct dict_node *n = dict_find(&s->keys, key, len, key_hash(key, len));

	return n ? entry_of(n) : NULL;
}

void db_touch(struct entry *e, uint32_t accesses)
{
	uint32_t now = store_clock();

	/* The access time is set after each touch: lfu_touch() decays the
	 * counter by the time since the last access, once. */
	if (evict_policy_is_lfu())
		for (uint32_t i = 0; i < accesses; i++) {
			lfu_touch(e, now);
			e->atime = now;
		}
	e->atime = now;
}

void db_prefetch_start(struct db_prefetch *p, int db, const char *key, size_t len)
{
	struct dict *d;

	p->shard = shard_of(db, key, len);
	p->hash = key_hash(key, len);
	d = &p->shard->keys;
	pthread_mutex_lock(&p->shard->lock);
	if (d->table)
		__builtin_prefetch(&d->table[p->hash & d->mask]);
	pthread_mutex_unlock(&p->shard->lock);
}

void db_prefetch_chain(const struct db_prefetch *p)
{
	struct dict *d = &p->shard->keys;

	pthread_mutex_lock(&p->shard->lock);
	if (d->table) {
		struct dict_node *n = d->table[p->hash & d->mask];

		/* The head entry: its node and, a line further, its key. */
		if (n) {
			__builtin_prefetch(n);
			__builtin_prefetch((char *)n + 64);
		}
	}
	pthread_mutex_unlock(&p->shard->lock);
}

void db_prefetch_value(const struct db_prefetch *p)
{
	struct dict *d = &p->shard->keys;

	pthread_mutex_lock(&p->shard->lock);
	if (d->table) {
		for (struct dict_node *n = d->table[p->hash & d->mask]; n; n = n->next) {
			const struct entry *e = entry_of(n);

			if (n->hash != p->hash)
				continue;
			/* The first lines of a string's bytes (a GET's reply). */
			if (e->val.type == OBJ_STRING &&
			    (e->val.enc == ENC_EMBSTR || e->val.enc == ENC_RAW))
				for (size_t off = 0; off < e->val.len && off < 256; off += 64)
					__builtin_prefetch(e->val.bytes + off);
			break;
		}
	}
	pthread_mutex_unlock(&p->shard->lock);
}

struct entry *db_add(int db, const char *key, size_t len, struct obj val)
{
	unsigned slot = key_slot(key, len);
	struct shard *s = store_shard(db, slot % STORE_SHARDS);
	struct entry *e = xmalloc(sizeof(*e) + len + 1);

	e->slot = (uint16_t)slot;
	e->fp_reads = 0;
	e->fp_flags = 0;
	e->fp_slot = -1;
	e->fp_epoch = 0;
	e->atime = store_clock();
	e->lfu = LFU_INIT_VAL;
	e->node.hash = key_hash(key, len);
	e->expire = -1;
	e->val = val;
	e->klen = (uint32_t)len;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	dict_insert(&s->keys, &e->node);
	db_changed(db, e);
	return e;
}

void db_set_value(int db, struct entry *e, struct obj val)
{
	obj_free(&e->val);
	e->val = val;
	db_changed(db, e);
}

struct entry *db_set(int db, const char *key, size_t len, struct obj val, bool keep_ttl)
{
	struct entry *e = db_find(db, key, len);

	if (!e)
		return db_add(db, key, len, val);
	if (!keep_ttl && e->expire >= 0)
		db_set_expire(db, e, -1);
	db_set_value(db, e, val);
	return e;
}

struct entry *db_set_string(int db, struct entry *e, const char *key, size_t len, const void *p,
			    size_t vlen, bool keep_ttl)
{
	if (!e)
		return db_add(db, key, len, obj_string(p, vlen));
	if (!keep_ttl && e->expire >= 0)
		db_set_expire(db, e, -1);
	obj_string_assign(&e->val, p, vlen);
	db_changed(db, e);
	return e;
}

void db_delete(int db, struct entry *e)
{
	struct shard *s = entry_shard(db, e);

	fastpath_key_removed(db, e);
	db_changed(db, e);
	if (e->expire >= 0)
		s->nexpires--;
	dict_remove(&s->keys, &e->node);
	entry_free(e);
	dict_maybe_shrink(&s->keys);
}

void db_set_expire(int db, struct entry *e, int64_t when_ms)
{
	struct shard *s = entry_shard(db, e);

	if (e->expire < 0 && when_ms >= 0)
		s->nexpires++;
	else if (e->expire >= 0 && when_ms < 0)
		s->nexpires--;
	e->expire = when_ms;
	db_changed(db, e);
}

uint64_t db_size(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += __atomic_load_n(&store_shard(db, i)->keys.count, __ATOMIC_RELAXED);
	return n;
}

uint64_t db_expires(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += __atomic_load_n(&store_shard(db, i)->nexpires, __ATOMIC_RELAXED);
	return n;
}

uint64_t db_avg_ttl(int db)
{
	uint64_t sum = 0, n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		uint64_t avg = __atomic_load_n(&store_shard(db, i)->avg_ttl, __ATOMIC_RELAXED);

		if (avg) {
			sum += avg;
			n++;
		}
	}
	return n ? sum / n : 0;
}

uint64_t db_flush(int db)
{
	uint64_t removed = 0;

	fastpath_db_reset(db);
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *s = store_shard(db, i);

		removed += s->keys.count;
		if (s->keys.count)
			s->version++;
		/* A watched key that existed is gone. */
		for (struct watcher *w = s->watchers; w; w = w->next)
			if (dict_find(&s->keys, w->key, w->klen, key_hash(w->key, w->klen)))
				__atomic_store_n(&w->client->watch_dirty, true, __ATOMIC_RELEASE);
		dict_clear(&s->keys, entry_free_node);
		s->nexpires = 0;
		s->expire_cursor = 0;
	}
	return removed;
}

void db_swap(int a, int b)
{
	fastpath_db_reset(a);
	fastpath_db_reset(b);
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *x = store_shard(a, i), *y = store_shard(b, i);
		struct dict keys = x->keys;

		/* A watched key that exists on either side changes. */
		for (int side = 0; side < 2; side++) {
			struct shard *w_s = side ? y : x;

			for (struct watcher *w = w_s->watchers; w; w = w->next) {
				uint64_t h = key_hash(w->key, w->klen);

				if (dict_find(&x->keys, w->key, w->klen, h) ||
				    dict_find(&y->keys, w->key, w->klen, h))
					__atomic_store_n(&w->client->watch_dirty, true,
							 __ATOMIC_RELEASE);
			}
		}
		uint64_t nexpires = x->nexpires;

		x->keys = y->keys;
		y->keys = keys;
		x->nexpires = y->nexpires;
		y->nexpires = nexpires;
		x->expire_cursor = y->expire_cursor = 0;
		/* Either may now hold the other's hashes with field deadlines. */
		x->field_ttls_seen = y->field_ttls_seen = 0;
		if (x->field_ttls || y->field_ttls)
			x->field_ttls = y->field_ttls = FIELD_TTLS_NEW;
		x->version++;
		y->version++;
	}
}

struct expire_ctx {
	int db;
	struct shard *shard;
	int64_t now;
	unsigned sampled, expired;
	uint64_t ttl_sum, ttl_n;
};

/* Unlinks e from the shard being scanned: db_delete would shrink the table
 * under dict_scan, so the scan shrinks it once the bucket is done. */
static void expire_unlink(struct expire_ctx *ctx, struct entry *e)
{
	fastpath_key_removed(ctx->db, e);
	db_changed(ctx->db, e);
	if (e->expire >= 0)
		ctx->shard->nexpires--;
	dict_remove(&ctx->shard->keys, &e->node);
	entry_free(e);
}

/* Reclaims a hash's expired fields, as Redis 7.4's active field expiry does;
 * a hash left empty is deleted. */
static void expire_hash_fields(struct expire_ctx *ctx, struct entry *e)
{
	ctx->shard->field_ttls_seen++;
	if (hash_next_expire(&e->val) > ctx->now)
		return;
	ctx->sampled++;
	ctx->expired++;
	hash_expire_due(&e->val, ctx->now);
	if (hash_len(&e->val))
		db_changed(ctx->db, e);
	else
		expire_unlink(ctx, e);
}

static void expire_visit(void *arg, struct dict_node *node)
{
	struct expire_ctx *ctx = arg;
	struct entry *e = entry_of(node);

	if (e->expire >= 0) {
		ctx->sampled++;
		if (entry_expired(e, ctx->now)) {
			ctx->shard->expired++;
			ctx->expired++;
			expire_unlink(ctx, e);
			return;
		}
		ctx->ttl_sum += (uint64_t)(e->expire - ctx->now);
		ctx->ttl_n++;
	}
	if (ctx->shard->field_ttls && e->val.type == OBJ_HASH && hash_has_expire(&e->val))
		expire_hash_fields(ctx, e);
}

/* A full scan met no hash with field deadlines and none was made since: the
 * shard's hashes need no more visits until db_changed sees one again. */
static void field_ttls_scan_wrapped(struct shard *s)
{
	s->field_ttls = s->field_ttls_seen || s->field_ttls == FIELD_TTLS_NEW ? FIELD_TTLS_SEEN
									      : FIELD_TTLS_NONE;
	s->field_ttls_seen = 0;
}

/*
 * Like Redis's active expiry: visit the keys with deadlines a bucket at a
 * time, and keep going on a shard while a good share of what was sampled had
 * expired, within the time budget.
 */
void store_active_expire(unsigned self, unsigned n, int64_t budget_us)
{
	int64_t deadline = now_us() + budget_us;
	unsigned total = (unsigned)store.ndbs * STORE_SHARDS;

	if (pause_frozen())
		return;

	for (unsigned id = self; id < total; id += n) {
		struct shard *s = store_shard((int)(id / STORE_SHARDS), id % STORE_SHARDS);
		struct expire_ctx ctx = { .db = (int)(id / STORE_SHARDS), .shard = s };

		if (__atomic_load_n(&s->nexpires, __ATOMIC_RELAXED) == 0 &&
		    __atomic_load_n(&s->field_ttls, __ATOMIC_RELAXED) == FIELD_TTLS_NONE)
			continue;
		pthread_mutex_lock(&s->lock);
		ctx.now = now_ms();
		do {
			ctx.sampled = ctx.expired = 0;
			for (int buckets = 0; buckets < 64 && (s->nexpires || s->field_ttls);
			     buckets++) {
				s->expire_cursor =
					dict_scan(&s->keys, s->expire_cursor, expire_visit, &ctx);
				if (s->expire_cursor == 0)
					field_ttls_scan_wrapped(s);
				if (ctx.sampled >= 20 || s->expire_cursor == 0)
					break;
			}
			dict_maybe_shrink(&s->keys);
		} while ((s->nexpires || s->field_ttls) && ctx.sampled &&
			 ctx.expired * 4 > ctx.sampled && now_us() < deadline);
		if (ctx.ttl_n) {
			/* Smooth like Redis: each cycle moves the estimate 2%. */
			uint64_t avg = ctx.ttl_sum / ctx.ttl_n;

			s->avg_ttl = s->avg_ttl ? s->avg_ttl / 50 * 49 + avg / 50 : avg;
		}
		if (!s->nexpires)
			s->avg_ttl = 0;
		pthread_mutex_unlock(&s->lock);
		if (now_us() >= deadline)
			break;
	}
}

void lockset_init(struct lockset *ls)
{
	slot_memo.key = NULL;
	ls->n = 0;
	ls->held = false;
}

static void lockset_add_id(struct lockset *ls, uint32_t id)
{
	for (unsigned i = 0; i < ls->n; i++)
		if (ls->ids[i] == id)
			return;
	xkv_assert(ls->n < LOCKSET_MAX);
	ls->ids[ls->n++] = id;
}

void lockset_add_key(struct lockset *ls, int db, const char *key, size_t len)
{
	unsigned slot = key_slot_hash(key, len);

	slot_memo.key = key;
	slot_memo.len = len;
	slot_memo.slot = slot;
	lockset_add_id(ls, (uint32_t)db * STORE_SHARDS + slot % STORE_SHARDS);
}

void lockset_add_db(struct lockset *ls, int db)
{
	for (unsigned i = 0; i < STORE_SHARDS; i++)
		lockset_add_id(ls, (uint32_t)db * STORE_SHARDS + i);
}

static int id_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

__thread unsigned store_locks_held;

void store_shard_lock(int db, unsigned shard)
{
	if (!store_locks_held)
		pthread_mutex_lock(&store_shard(db, shard)->lock);
}

void store_shard_unlock(int db, unsigned shard)
{
	if (!store_locks_held)
		pthread_mutex_unlock(&store_shard(db, shard)->lock);
}

void lockset_acquire(struct lockset *ls)
{
	if (store_locks_held) {
		ls->held = false;
		return;
	}
	if (ls->n > 1)
		qsort(ls->ids, ls->n, sizeof(ls->ids[0]), id_cmp);
	for (unsigned i = 0; i < ls->n; i++)
		pthread_mutex_lock(
			&store_shard((int)(ls->ids[i] / STORE_SHARDS), ls->ids[i] % STORE_SHARDS)
				 ->lock);
	ls->held = true;
}

void lockset_release(struct lockset *ls)
{
	slot_memo.key = NULL;
	if (!ls->held)
		return;
	for (unsigned i = ls->n; i-- > 0;)
		pthread_mutex_unlock(
			&store_shard((int)(ls->ids[i] / STORE_SHARDS), ls->ids[i] % STORE_SHARDS)
				 ->lock);
	ls->held = false;
}

void store_lock_all(void)
{
	if (store_locks_held++)
		return;
	for (int db = 0; db < store.ndbs; db++)
		for (unsigned i = 0; i < STORE_SHARDS; i++)
			pthread_mutex_lock(&store_shard(db, i)->lock);
}

void store_unlock_all(void)
{
	if (--store_locks_held)
		return;
	for (int db = store.ndbs; db-- > 0;)
		for (unsigned i = STORE_SHARDS; i-- > 0;)
			pthread_mutex_unlock(&store_shard(db, i)->lock);
}
