// SPDX-License-Identifier: BSD-3-Clause
/*
 * The keyspace. Lock rules are at the top of store.h: every function here that
 * takes a db and a key or entry runs under that key's shard lock, held by the
 * caller; lockset_* and store_active_expire take locks themselves, always in
 * ascending (db, shard) order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <xxhash.h>

#include "config.h"
#include "evict.h"
#include "exec_ctx.h"
#include "fastpath.h"
#include "lazyfree.h"
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
/* The bytes before each entry: its slot link when the per-slot index is
 * kept (cluster-enabled), else none. Fixed by store_init. */
static size_t entry_prefix;
int64_t store_now(void)
{
	return exec_ctx_top ? exec_ctx_top->time_ms : now_ms();
}

static bool entry_key_equal(const struct dict_node *node, const void *key, size_t len)
{
	const struct entry *e = entry_of(node);

	return entry_klen(e) == len && memcmp(e->key, key, len) == 0;
}

static const struct dict_type keyspace_type = { .key_equal = entry_key_equal };

/* CRC16-CCITT (XMODEM), the Redis Cluster key hash, eight bytes at a time
 * ("slicing"): crc16_table[k][b] is the CRC of byte b followed by k zero
 * bytes, and the CRC is linear, so eight table reads XORed replace eight
 * dependent steps. Every GET and SET hashes its key this way (its lock
 * shard), most of them twice. */
static uint16_t crc16_table[8][256];

/* A constructor: key_slot() works before store_init() (tools, tests). */
static void __attribute__((constructor)) crc16_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint16_t crc = (uint16_t)(i << 8);

		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
		crc16_table[0][i] = crc;
	}
	for (unsigned k = 1; k < 8; k++)
		for (unsigned i = 0; i < 256; i++) {
			uint16_t prev = crc16_table[k - 1][i];

			crc16_table[k][i] = (uint16_t)(prev << 8) ^ crc16_table[0][prev >> 8];
		}
}

static uint16_t crc16(const char *key, size_t len)
{
	const unsigned char *p = (const unsigned char *)key;
	uint16_t crc = 0;

	for (; len >= 8; p += 8, len -= 8)
		crc = crc16_table[7][(crc >> 8) ^ p[0]] ^ crc16_table[6][(crc & 0xff) ^ p[1]] ^
		      crc16_table[5][p[2]] ^ crc16_table[4][p[3]] ^ crc16_table[3][p[4]] ^
		      crc16_table[2][p[5]] ^ crc16_table[1][p[6]] ^ crc16_table[0][p[7]];
	for (; len; p++, len--)
		crc = (uint16_t)(crc << 8) ^ crc16_table[0][(crc >> 8) ^ *p];
	return crc;
}

void store_init(int ndbs)
{
	store_start_ms = mono_ms();
	entry_prefix = config.cluster_enabled ? sizeof(struct slot_link) : 0;
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
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			pthread_mutex_destroy(&store_shard(db, i)->lock);
			xfree(store_shard(db, i)->keysizes);
			xfree(store_shard(db, i)->slot_keys);
			store_shard(db, i)->slot_keys = NULL;
		}
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
	bool kept; /* by key_slot_remember: the next lockset_init keeps it */
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

unsigned key_slot_remember(const char *key, size_t len)
{
	unsigned slot = key_slot(key, len);

	slot_memo.key = key;
	slot_memo.len = len;
	slot_memo.slot = slot;
	slot_memo.kept = true;
	return slot;
}

void key_slot_forget(void)
{
	slot_memo.key = NULL;
	slot_memo.kept = false;
}

static inline uint64_t key_hash(const char *key, size_t len)
{
	return XXH3_64bits(key, len);
}

int store_allow_access_expired;

bool entry_expired(const struct entry *e, int64_t now)
{
	int64_t t = entry_expire(e);

	return t >= 0 && now > t && !__atomic_load_n(&store_allow_access_expired, __ATOMIC_RELAXED);
}

/* The allocation e lives in (its slot link first, in cluster mode). */
static inline void entry_dealloc(struct entry *e)
{
	xfree((char *)e - entry_prefix);
}

static inline struct slot_link *entry_slot_link(const struct entry *e)
{
	return (struct slot_link *)((char *)e - sizeof(struct slot_link));
}

static inline struct entry *link_entry(const struct slot_link *l)
{
	return (struct entry *)((char *)l + sizeof(struct slot_link));
}

size_t entry_mem(const struct entry *e)
{
	return xusable((void *)((const char *)e - entry_prefix));
}

bool store_slot_index(void)
{
	return entry_prefix != 0;
}

/* Links e into its slot's list; only with the index kept. */
static void slot_index_add(struct shard *s, struct entry *e)
{
	unsigned i = key_slot(e->key, entry_klen(e)) / STORE_SHARDS;
	struct slot_link *l = entry_slot_link(e);

	if (!s->slot_keys)
		s->slot_keys = xcalloc(1, sizeof(*s->slot_keys));
	l->next = s->slot_keys->first[i];
	if (l->next)
		l->next->pprev = &l->next;
	l->pprev = &s->slot_keys->first[i];
	s->slot_keys->first[i] = l;
	s->slot_keys->count[i]++;
}

static void slot_index_remove(struct shard *s, struct entry *e)
{
	struct slot_link *l = entry_slot_link(e);

	*l->pprev = l->next;
	if (l->next)
		l->next->pprev = l->pprev;
	s->slot_keys->count[key_slot(e->key, entry_klen(e)) / STORE_SHARDS]--;
}

/* The index of a shard whose table was just emptied or handed away. */
static void slot_index_clear(struct shard *s)
{
	if (s->slot_keys)
		memset(s->slot_keys, 0, sizeof(*s->slot_keys));
}

uint64_t db_slot_count(int db, unsigned slot)
{
	const struct slot_keys *k = store_shard(db, slot % STORE_SHARDS)->slot_keys;

	return k ? k->count[(slot % CLUSTER_SLOTS) / STORE_SHARDS] : 0;
}

struct entry *db_slot_first(int db, unsigned slot)
{
	const struct slot_keys *k = store_shard(db, slot % STORE_SHARDS)->slot_keys;
	const struct slot_link *l = k ? k->first[(slot % CLUSTER_SLOTS) / STORE_SHARDS] : NULL;

	return l ? link_entry(l) : NULL;
}

struct entry *db_slot_next(const struct entry *e)
{
	const struct slot_link *l = entry_slot_link(e)->next;

	return l ? link_entry(l) : NULL;
}

static void entry_free(struct entry *e)
{
	obj_free(&e->val);
	entry_dealloc(e);
}

/* As entry_free, a big value on the background pool if lazy (lazyfree.h):
 * e is unlinked and its change signalled, so the value is detached. */
static void entry_free_lazy(struct entry *e, bool lazy)
{
	lazyfree_obj(&e->val, lazy);
	entry_dealloc(e);
}

/* Is a value removed for `why` freed lazily? Redis's lazyfree-lazy-*
 * directives: a command's deletion (DEL aside, which asks for itself), a
 * value replaced, expiry, eviction. */
static bool lazy_for(enum db_change_reason why)
{
	switch (why) {
	case DB_CHANGE_EXPIRE:
		return config.lazyfree_lazy_expire;
	case DB_CHANGE_EVICT:
		return config.lazyfree_lazy_eviction;
	default:
		return config.lazyfree_lazy_server_del;
	}
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
	return store_shard(db, e->shard);
}

static store_hook_fn *hooks[STORE_HOOKS];

static unsigned keysizes_bin(size_t n)
{
	unsigned bin = n ? 64 - (unsigned)__builtin_clzll((unsigned long long)n) : 0;

	return bin < KEYSIZES_BINS ? bin : KEYSIZES_BINS - 1;
}

/* Moves e to the bin of its size now (none once removed); written with
 * atomic stores because INFO sums the bins without the lock. */
static void keysizes_update(struct shard *sh, struct entry *e, bool removed)
{
	unsigned type = KEYSIZES_NONE, bin = 0;
	uint64_t *cell;

	if (!removed && e->val.type < KEYSIZES_TYPES) {
		type = e->val.type;
		bin = keysizes_bin(obj_items(&e->val));
	}
	if (type == e->ks_type && bin == e->ks_bin)
		return;
	if (e->ks_type != KEYSIZES_NONE) {
		cell = &(*sh->keysizes)[e->ks_type][e->ks_bin];
		__atomic_store_n(cell, *cell - 1, __ATOMIC_RELAXED);
	}
	if (type != KEYSIZES_NONE) {
		if (!sh->keysizes)
			__atomic_store_n(&sh->keysizes, xcalloc(1, sizeof(*sh->keysizes)),
					 __ATOMIC_RELEASE);
		cell = &(*sh->keysizes)[type][bin];
		__atomic_store_n(cell, *cell + 1, __ATOMIC_RELAXED);
	}
	e->ks_type = (uint8_t)type;
	e->ks_bin = (uint8_t)bin;
}

void store_hook_set(enum store_hook h, store_hook_fn *fn)
{
	hooks[h] = fn;
}

/* The choke point: every change, whatever made it, ends here. */
static void signal_change_fields(int db, int other_db, struct entry *e, enum db_change_reason why,
				 unsigned flags, const struct field_list *fields)
{
	struct db_change ch = { .reason = why,
				.db = db,
				.other_db = other_db,
				.e = e,
				.flags = flags,
				.fields = fields };

	if (e) {
		struct shard *sh = store_shard(db, e->shard);

		/* One change per key changed, for a command that gives no count
		 * of its own; expiry and eviction count none, as in Redis. A
		 * key written twice in a row (created, then set: HINCRBY) is one
		 * change, and a deadline set after a write (SET EX, RESTORE) is
		 * part of it. After a removal the entry's address may come back
		 * for another key: it is not remembered. */
		struct exec_ctx *x = exec_ctx_top;

		if (why == DB_CHANGE_EXPIRE || why == DB_CHANGE_EVICT) {
			;
		} else if (!x) {
			store_count_changes(1);
		} else if (e != x->last_changed && (why != DB_CHANGE_TTL || !x->keys_changed)) {
			x->keys_changed++;
			x->last_changed = why == DB_CHANGE_WRITE || why == DB_CHANGE_TTL ? e : NULL;
		}
		if (why != DB_CHANGE_TTL)
			keysizes_update(sh, e, why != DB_CHANGE_WRITE);
	}
	for (unsigned i = 0; i < STORE_HOOKS; i++)
		if (hooks[i])
			hooks[i](&ch);
}

static void signal_change_as(int db, int other_db, struct entry *e, enum db_change_reason why,
			     unsigned flags)
{
	signal_change_fields(db, other_db, e, why, flags, NULL);
}

static void signal_change(int db, int other_db, struct entry *e, enum db_change_reason why)
{
	signal_change_as(db, other_db, e, why, 0);
}

/* shard.field_ttls: none seen; seen in the last full scan; set since. */
enum { FIELD_TTLS_NONE, FIELD_TTLS_SEEN, FIELD_TTLS_NEW };

/* A key was written: its hash may now have field deadlines to expire. */
static void written_fields(int db, struct entry *e, enum db_change_reason why, unsigned flags,
			   const struct field_list *fields)
{
	struct shard *s = entry_shard(db, e);

	if (e->val.type == OBJ_HASH && s->field_ttls != FIELD_TTLS_NEW && hash_has_expire(&e->val))
		__atomic_store_n(&s->field_ttls, FIELD_TTLS_NEW, __ATOMIC_RELAXED);
	signal_change_fields(db, -1, e, why, flags, fields);
}

static void written(int db, struct entry *e, enum db_change_reason why, unsigned flags)
{
	written_fields(db, e, why, flags, NULL);
}

void db_changed(int db, struct entry *e)
{
	written(db, e, DB_CHANGE_WRITE, 0);
}

void db_changed_unsignalled(int db, struct entry *e)
{
	struct db_change ch = { .reason = DB_CHANGE_WRITE, .db = db, .other_db = -1, .e = e };

	keysizes_update(store_shard(db, e->shard), e, false);
	if (hooks[STORE_HOOK_FASTPATH])
		hooks[STORE_HOOK_FASTPATH](&ch);
}

/* Deletes e because its deadline passed (lazily or actively). */
static void expire_entry(int db, struct shard *s, struct entry *e)
{
	s->expired++;
	db_remove(db, e, DB_CHANGE_EXPIRE);
}

void db_count_expired(int db, const char *key, size_t len)
{
	struct shard *s = shard_of(db, key, len);

	/* Under the key's shard lock; INFO reads it without. */
	__atomic_store_n(&s->expired, s->expired + 1, __ATOMIC_RELAXED);
}

uint32_t store_clock(void)
{
	int64_t now = exec_ctx_top ? exec_ctx_top->mono_ms : mono_ms();

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
	if (exec_ctx_flags() & EXEC_NO_TOUCH)
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

/* ---- the entry's layout (store.h) ---------------------------------------------------------- */

/* Where the deadline's 8 bytes are, when ENTRY_F_TTL says they exist. */
static inline char *entry_ttl_at(struct entry *e)
{
	return e->key + entry_klen(e) + 1;
}

/* Where an inline value starts: after the key and the deadline's room. */
static inline size_t entry_value_off(const struct entry *e, bool ttl)
{
	return ENTRY_HDR + entry_klen(e) + 1 + (ttl ? sizeof(int64_t) : 0);
}

/* Is p[0..len) a string SET keeps inside its entry (not an integer)? */
static bool string_inlines(const void *p, size_t len)
{
	long long v;

	return len <= ENTRY_INLINE_MAX && !(len <= LL_STR_SIZE && str_to_ll(p, len, &v));
}

/* An unlinked entry for key with room for a deadline (-1 in it) if ttl and
 * for `extra` bytes after; the caller fills val. */
static struct entry *entry_new(const char *key, size_t len, unsigned slot, bool ttl, size_t extra)
{
	size_t size = ENTRY_HDR + len + 1 + (ttl ? sizeof(int64_t) : 0) + extra;
	struct entry *e = (struct entry *)((char *)xmalloc(entry_prefix + size) + entry_prefix);

	e->node.hash = (uint32_t)key_hash(key, len);
	xkv_assert(len <= ENTRY_KLEN_MAX);
	e->node.aux = (uint32_t)len; /* not cached: no ENTRY_AUX_FP */
	e->shard = slot % STORE_SHARDS;
	e->atime = store_clock();
	e->lfu = LFU_INIT_VAL;
	e->ks_type = KEYSIZES_NONE;
	e->ks_bin = 0;
	e->flags = ttl ? ENTRY_F_TTL : 0;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	if (ttl) {
		int64_t none = -1;

		memcpy(entry_ttl_at(e), &none, sizeof(none));
	}
	return e;
}

/* Makes e's value the inline string p[0..len), at off (room checked). */
static void entry_put_inline(struct entry *e, size_t off, const void *p, size_t len)
{
	char *b = (char *)e + off;

	memmove(b, p, len);
	b[len] = '\0';
	e->val = (struct obj){ .type = OBJ_STRING,
			       .enc = len <= EMBSTR_MAX ? ENC_EMBSTR : ENC_RAW,
			       .inl = 1,
			       .len = len,
			       .bytes = b };
}

/* The bytes e's allocation holds from e on (its slot link before it aside). */
static inline size_t entry_room(const struct entry *e)
{
	return xusable((char *)e - entry_prefix) - entry_prefix;
}

/* The room an entry that needs `need` bytes gets from the allocator. */
static inline size_t entry_good_size(size_t need)
{
	return xgood_size(entry_prefix + need) - entry_prefix;
}

/* e moved to ne (a realloc, defragmentation): the shard's table, its inline
 * value (voff bytes in, or 0) and its slot's list follow it. */
static void entry_moved(struct shard *s, struct entry *e, struct entry *ne, size_t voff)
{
	/* The running command's last counted change follows it: e's old
	 * address may come back for another key (signal_change_fields). */
	if (exec_ctx_top && exec_ctx_top->last_changed == e)
		exec_ctx_top->last_changed = ne;
	dict_replace(&s->keys, &e->node, &ne->node);
	if (voff)
		ne->val.bytes = (char *)ne + voff;
	if (__builtin_expect(entry_prefix != 0, 0)) {
		struct slot_link *l = entry_slot_link(ne);

		*l->pprev = l;
		if (l->next)
			l->next->pprev = &l->next;
	}
}

/*
 * Reallocates e to size bytes, keeping its contents and its place in the
 * shard's table; returns it where it is now. An inline value moves with it.
 */
static struct entry *entry_resize(struct shard *s, struct entry *e, size_t size)
{
	size_t voff = e->val.inl ? (size_t)(e->val.bytes - (char *)e) : 0;
	struct entry *ne =
		(struct entry *)((char *)xrealloc((char *)e - entry_prefix, entry_prefix + size) +
				 entry_prefix);

	if (ne != e)
		entry_moved(s, e, ne, voff);
	return ne;
}

/* After e's value stopped being inline or shrank: gives back the room the
 * entry no longer needs, when a smaller size class would hold it. */
static struct entry *entry_fit(struct shard *s, struct entry *e)
{
	size_t need = e->val.inl ? (size_t)(e->val.bytes - (char *)e) + e->val.len + 1
				 : entry_value_off(e, e->flags & ENTRY_F_TTL);

	if (entry_good_size(need) < entry_room(e))
		return entry_resize(s, e, need);
	return e;
}

/* Links e, new, into its shard (and its slot's list, in cluster mode) and
 * signals it. */
static struct entry *entry_insert(int db, struct entry *e)
{
	struct shard *s = store_shard(db, e->shard);

	dict_insert(&s->keys, &e->node);
	if (__builtin_expect(entry_prefix != 0, 0))
		slot_index_add(s, e);
	written(db, e, DB_CHANGE_WRITE, DB_CHANGE_F_CREATED);
	return e;
}

struct entry *db_add(int db, const char *key, size_t len, struct obj val)
{
	unsigned slot = key_slot(key, len);
	struct entry *e;

	/* A string made whole elsewhere (RESTORE, a loaded RDB, RENAME) goes
	 * inside the entry, unless its buffer has room to grow into. */
	if (val.type == OBJ_STRING && val.enc != ENC_INT && !val.inl &&
	    val.len <= ENTRY_INLINE_MAX && xusable(val.bytes) == xgood_size(val.len + 1)) {
		e = entry_new(key, len, slot, false, val.len + 1);
		entry_put_inline(e, entry_value_off(e, false), val.bytes, val.len);
		xfree(val.bytes);
		return entry_insert(db, e);
	}
	e = entry_new(key, len, slot, false, 0);
	e->val = val;
	return entry_insert(db, e);
}

void db_set_value(int db, struct entry *e, struct obj val)
{
	lazyfree_obj(&e->val, config.lazyfree_lazy_server_del);
	e->val = val;
	db_changed(db, e);
}

struct entry *db_set(int db, const char *key, size_t len, struct obj val, bool keep_ttl)
{
	struct entry *e = db_find(db, key, len);
	bool type_changed;

	if (!e)
		return db_add(db, key, len, val);
	if (!keep_ttl && entry_expire(e) >= 0)
		e = db_set_expire(db, e, -1);
	type_changed = e->val.type != val.type;
	/* Redis's setKey: the old value goes as lazyfree-lazy-server-del says. */
	lazyfree_obj(&e->val, config.lazyfree_lazy_server_del);
	e->val = val;
	written(db, e, DB_CHANGE_WRITE,
		DB_CHANGE_F_OVERWRITTEN | (type_changed ? DB_CHANGE_F_TYPE_CHANGED : 0));
	return e;
}

struct entry *db_set_string(int db, struct entry *e, const char *key, size_t len, const void *p,
			    size_t vlen, bool keep_ttl, bool will_expire)
{
	bool type_changed, inl = string_inlines(p, vlen);
	struct shard *s;

	if (!e) {
		unsigned slot = key_slot(key, len);

		e = entry_new(key, len, slot, will_expire, inl ? vlen + 1 : 0);
		if (inl)
			entry_put_inline(e, entry_value_off(e, will_expire), p, vlen);
		else
			e->val = obj_string(p, vlen);
		return entry_insert(db, e);
	}
	s = entry_shard(db, e);
	if (!keep_ttl && entry_expire(e) >= 0)
		e = db_set_expire(db, e, -1);
	type_changed = e->val.type != OBJ_STRING;
	/* A string frees in one step; anything else may be big. */
	if (type_changed)
		lazyfree_obj(&e->val, config.lazyfree_lazy_server_del);
	if (inl) {
		size_t off, need;

		if (!type_changed)
			obj_free(&e->val); /* an old inline value frees nothing */
		bool add_ttl = will_expire && !(e->flags & ENTRY_F_TTL);

		off = entry_value_off(e, add_ttl || (e->flags & ENTRY_F_TTL));
		need = off + vlen + 1;
		/* In place when the size class is the same (the common SET of
		 * a value of about the same size), else resized to fit; the
		 * deadline's room is written only once it exists. */
		if (entry_good_size(need) != entry_room(e))
			e = entry_resize(s, e, need);
		if (add_ttl) {
			/* The old value is gone: its place is free. */
			int64_t none = -1;

			e->flags |= ENTRY_F_TTL;
			memcpy(entry_ttl_at(e), &none, sizeof(none));
		}
		entry_put_inline(e, off, p, vlen);
	} else {
		bool was_inline = e->val.inl;

		if (type_changed)
			e->val = obj_string(p, vlen);
		else
			obj_string_assign(&e->val, p, vlen);
		if (was_inline)
			e = entry_fit(s, e);
	}
	written(db, e, DB_CHANGE_WRITE,
		DB_CHANGE_F_OVERWRITTEN | (type_changed ? DB_CHANGE_F_TYPE_CHANGED : 0));
	return e;
}

static void remove_entry(int db, struct entry *e, enum db_change_reason why, bool lazy)
{
	struct shard *s = entry_shard(db, e);

	signal_change(db, -1, e, why);
	if (entry_expire(e) >= 0)
		s->nexpires--;
	dict_remove(&s->keys, &e->node);
	if (__builtin_expect(entry_prefix != 0, 0))
		slot_index_remove(s, e);
	entry_free_lazy(e, lazy);
	dict_maybe_shrink(&s->keys);
}

void db_delete(int db, struct entry *e)
{
	remove_entry(db, e, DB_CHANGE_DELETE, lazy_for(DB_CHANGE_DELETE));
}

void db_delete_lazy(int db, struct entry *e, bool lazy)
{
	remove_entry(db, e, DB_CHANGE_DELETE, lazy);
}

void db_remove(int db, struct entry *e, enum db_change_reason why)
{
	remove_entry(db, e, why, lazy_for(why));
}

/* Makes room for e's deadline after its key: an inline value moves up by 8
 * bytes, within the entry's size class if it has the room, else the entry
 * is resized (and may move). */
static struct entry *entry_add_ttl(struct shard *s, struct entry *e)
{
	size_t need = entry_value_off(e, true);
	int64_t none = -1;

	if (e->val.inl) {
		size_t vlen = e->val.len;

		need += vlen + 1;
		if (entry_room(e) < need)
			e = entry_resize(s, e, need);
		memmove((char *)e + entry_value_off(e, true), e->val.bytes, vlen + 1);
		e->val.bytes = (char *)e + entry_value_off(e, true);
	} else if (entry_room(e) < need) {
		e = entry_resize(s, e, need);
	}
	e->flags |= ENTRY_F_TTL;
	memcpy(entry_ttl_at(e), &none, sizeof(none));
	return e;
}

struct entry *db_set_expire(int db, struct entry *e, int64_t when_ms)
{
	struct shard *s = entry_shard(db, e);
	int64_t old = entry_expire(e);

	if (old < 0 && when_ms >= 0)
		s->nexpires++;
	else if (old >= 0 && when_ms < 0)
		s->nexpires--;
	/* Removing a deadline keeps its room (-1 in it): a key that had one
	 * often gets another. */
	if (when_ms >= 0 && !(e->flags & ENTRY_F_TTL))
		e = entry_add_ttl(s, e);
	if (e->flags & ENTRY_F_TTL)
		memcpy(entry_ttl_at(e), &when_ms, sizeof(when_ms));
	written(db, e, DB_CHANGE_TTL, 0);
	return e;
}

/* The change count, one line per thread that counts (its one writer, a
 * relaxed load and store), the last shared by any threads past those. */
#define CHANGE_SLOTS 64

static struct {
	uint64_t n;
} __attribute__((aligned(64))) change_slots[CHANGE_SLOTS];
static unsigned change_slots_taken;
static __thread int my_change_slot = -1;

void store_count_changes(uint64_t n)
{
	if (!n)
		return;
	if (my_change_slot < 0) {
		unsigned i = __atomic_fetch_add(&change_slots_taken, 1, __ATOMIC_RELAXED);

		my_change_slot = i < CHANGE_SLOTS - 1 ? (int)i : CHANGE_SLOTS - 1;
	}
	if (my_change_slot == CHANGE_SLOTS - 1)
		__atomic_fetch_add(&change_slots[my_change_slot].n, n, __ATOMIC_RELAXED);
	else
		stat_add(&change_slots[my_change_slot].n, n);
}

uint64_t store_changes(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < CHANGE_SLOTS; i++)
		n += __atomic_load_n(&change_slots[i].n, __ATOMIC_RELAXED);
	return n;
}

uint64_t db_size(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += __atomic_load_n(&store_shard(db, i)->keys.count, __ATOMIC_RELAXED);
	return n;
}

size_t db_table_bytes(int db)
{
	size_t n = 0;

	/* Relaxed reads, no lock: INFO may run inside a script, which holds
	 * every shard lock. The size is what xmalloc gives such an array. */
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct dict *d = &store_shard(db, i)->keys;

		if (__atomic_load_n(&d->table, __ATOMIC_RELAXED))
			n += xgood_size((__atomic_load_n(&d->mask, __ATOMIC_RELAXED) + 1) *
					sizeof(struct dict_node *));
	}
	return n;
}

void db_keysizes(int db, keysizes_hist out)
{
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		keysizes_hist *h = __atomic_load_n(&store_shard(db, i)->keysizes, __ATOMIC_ACQUIRE);

		if (!h)
			continue;
		for (unsigned t = 0; t < KEYSIZES_TYPES; t++)
			for (unsigned b = 0; b < KEYSIZES_BINS; b++)
				out[t][b] += __atomic_load_n(&(*h)[t][b], __ATOMIC_RELAXED);
	}
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

/* The key tables of a flushed database, freed on the background pool. */
struct flushed {
	struct dict keys[STORE_SHARDS];
};

static void flushed_free(void *arg)
{
	struct flushed *f = arg;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		dict_clear(&f->keys[i], entry_free_node);
	xfree(f);
}

uint64_t db_flush_lazy(int db, bool lazy)
{
	struct flushed *f = NULL;
	uint64_t removed = 0;

	signal_change(db, -1, NULL, DB_CHANGE_FLUSH);
	for (unsigned i = 0; i < STORE_SHARDS; i++)
		removed += store_shard(db, i)->keys.count;
	/* Redis's emptyDbAsync: the tables are swapped for empty ones and the
	 * old ones, with every key in them, go to the pool whatever their size. */
	if (lazy && removed)
		f = xmalloc(sizeof(*f));
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *s = store_shard(db, i);

		if (f) {
			f->keys[i] = s->keys;
			dict_init(&s->keys, &keyspace_type);
		} else {
			dict_clear(&s->keys, entry_free_node);
		}
		slot_index_clear(s);
		if (s->keysizes)
			for (unsigned t = 0; t < KEYSIZES_TYPES; t++)
				for (unsigned b = 0; b < KEYSIZES_BINS; b++)
					__atomic_store_n(&(*s->keysizes)[t][b], 0,
							 __ATOMIC_RELAXED);
		s->nexpires = 0;
		s->expire_cursor = 0;
	}
	if (f)
		lazyfree_submit(flushed_free, f, removed);
	return removed;
}

uint64_t db_flush(int db)
{
	return db_flush_lazy(db, false);
}

void db_swap(int a, int b)
{
	signal_change(a, b, NULL, DB_CHANGE_SWAP);
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *x = store_shard(a, i), *y = store_shard(b, i);
		struct dict keys = x->keys;
		uint64_t nexpires = x->nexpires;
		keysizes_hist *ks = x->keysizes;
		struct slot_keys *sk = x->slot_keys;

		x->keys = y->keys;
		y->keys = keys;
		x->nexpires = y->nexpires;
		y->nexpires = nexpires;
		__atomic_store_n(&x->keysizes, y->keysizes, __ATOMIC_RELEASE);
		__atomic_store_n(&y->keysizes, ks, __ATOMIC_RELEASE);
		x->slot_keys = y->slot_keys;
		y->slot_keys = sk;
		x->expire_cursor = y->expire_cursor = 0;
		/* Either may now hold the other's hashes with field deadlines. */
		x->field_ttls_seen = y->field_ttls_seen = 0;
		if (x->field_ttls || y->field_ttls)
			x->field_ttls = y->field_ttls = FIELD_TTLS_NEW;
	}
}

/* The keys of every database, set aside while a replica loads its
 * master's file (repl-diskless-load swapdb): its tables, deadlines, slot
 * index and a copy of its size histogram, per shard. */
struct store_aside {
	int ndbs;
	struct aside_shard {
		struct dict keys;
		uint64_t nexpires;
		struct slot_keys *slot_keys;
		keysizes_hist sizes;
		bool has_sizes;
	} shards[];
};

/* Lock held: the shard is left as a fresh one (its histogram zeroed in
 * place: INFO reads it without the lock). */
static void shard_reset(struct shard *s)
{
	dict_init(&s->keys, &keyspace_type);
	s->nexpires = 0;
	s->expire_cursor = 0;
	s->slot_keys = NULL;
	s->field_ttls = FIELD_TTLS_NEW;
	s->field_ttls_seen = 0;
	if (s->keysizes)
		for (unsigned t = 0; t < KEYSIZES_TYPES; t++)
			for (unsigned b = 0; b < KEYSIZES_BINS; b++)
				__atomic_store_n(&(*s->keysizes)[t][b], 0, __ATOMIC_RELAXED);
}

struct store_aside *do_store_set_aside(void)
{
	struct store_aside *a =
		xcalloc(1, sizeof(*a) + (size_t)store.ndbs * STORE_SHARDS * sizeof(a->shards[0]));

	a->ndbs = store.ndbs;
	for (int db = 0; db < store.ndbs; db++) {
		/* To every hook, the database is flushed (the fast path, WATCH,
		 * tracking): what it held is not served while set aside. */
		signal_change(db, -1, NULL, DB_CHANGE_FLUSH);
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *s = store_shard(db, i);
			struct aside_shard *x = &a->shards[db * STORE_SHARDS + i];

			x->keys = s->keys;
			x->nexpires = s->nexpires;
			x->slot_keys = s->slot_keys;
			if (s->keysizes) {
				memcpy(x->sizes, *s->keysizes, sizeof(x->sizes));
				x->has_sizes = true;
			}
			shard_reset(s);
		}
	}
	return a;
}

void do_store_restore_aside(struct store_aside *a)
{
	for (int db = 0; db < a->ndbs; db++) {
		db_flush(db);
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			struct shard *s = store_shard(db, i);
			struct aside_shard *x = &a->shards[db * STORE_SHARDS + i];

			dict_clear(&s->keys, entry_free_node);
			s->keys = x->keys;
			s->nexpires = x->nexpires;
			xfree(s->slot_keys);
			s->slot_keys = x->slot_keys;
			s->expire_cursor = 0;
			s->field_ttls = FIELD_TTLS_NEW;
			if (x->has_sizes) {
				if (!s->keysizes)
					__atomic_store_n(&s->keysizes,
							 xcalloc(1, sizeof(*s->keysizes)),
							 __ATOMIC_RELEASE);
				for (unsigned t = 0; t < KEYSIZES_TYPES; t++)
					for (unsigned b = 0; b < KEYSIZES_BINS; b++)
						__atomic_store_n(&(*s->keysizes)[t][b],
								 x->sizes[t][b], __ATOMIC_RELAXED);
			}
		}
	}
	xfree(a);
}

static void aside_free(void *arg)
{
	struct store_aside *a = arg;

	for (int j = 0; j < a->ndbs * STORE_SHARDS; j++) {
		dict_clear(&a->shards[j].keys, entry_free_node);
		xfree(a->shards[j].slot_keys);
	}
	xfree(a);
}

void store_aside_free(struct store_aside *a)
{
	uint64_t n = 0;

	for (int j = 0; j < a->ndbs * STORE_SHARDS; j++)
		n += a->shards[j].keys.count;
	lazyfree_submit(aside_free, a, n);
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
static void expire_unlink(struct expire_ctx *ctx, struct entry *e, unsigned flags,
			  const struct field_list *fields)
{
	signal_change_fields(ctx->db, -1, e, DB_CHANGE_EXPIRE, flags, fields);
	if (entry_expire(e) >= 0)
		ctx->shard->nexpires--;
	if (entry_prefix)
		slot_index_remove(ctx->shard, e);
	if (config.lazyfree_lazy_expire) {
		dict_remove(&ctx->shard->keys, &e->node);
		entry_free_lazy(e, true);
		return;
	}
	/* The value goes first: DBSIZE (the count, read without the lock)
	 * drops once a big value's free is over, when the cycle that freed it
	 * is about to end and report its latency, as in single-threaded Redis. */
	obj_free(&e->val);
	dict_remove(&ctx->shard->keys, &e->node);
	entry_dealloc(e);
}

/* Reclaims a hash's expired fields, as Redis 7.4's active field expiry does;
 * a hash left empty is deleted. */
static void expire_hash_fields(struct expire_ctx *ctx, struct entry *e)
{
	struct field_list names = { 0 };
	bool want = config_notify_subkeys(NOTIFY_HASH);
	uint64_t n;

	ctx->shard->field_ttls_seen++;
	if (hash_next_expire(&e->val) > ctx->now)
		return;
	ctx->sampled++;
	ctx->expired++;
	n = hash_expire_due(&e->val, ctx->now, want ? &names : NULL);
	ctx->shard->expired_subkeys += n;
	ctx->shard->expired_subkeys_active += n;
	if (hash_len(&e->val))
		written_fields(ctx->db, e, DB_CHANGE_WRITE, DB_CHANGE_F_FIELDS,
			       want ? &names : NULL);
	else
		expire_unlink(ctx, e, DB_CHANGE_F_FIELDS, want ? &names : NULL);
	field_list_free(&names);
}

static void expire_visit(void *arg, struct dict_node *node)
{
	struct expire_ctx *ctx = arg;
	struct entry *e = entry_of(node);
	int64_t t = entry_expire(e);

	/* Not entry_expired(): active expiry goes on under
	 * DEBUG SET-ALLOW-ACCESS-EXPIRED. */
	if (t >= 0) {
		ctx->sampled++;
		if (ctx->now > t) {
			ctx->shard->expired++;
			ctx->shard->expired_active++;
			ctx->expired++;
			expire_unlink(ctx, e, 0, NULL);
			return;
		}
		ctx->ttl_sum += (uint64_t)(t - ctx->now);
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
/* Written by whichever worker ends a cycle (relaxed: estimates and counts). */
static uint64_t stale_perc_bits; /* a double's bits */
static uint64_t time_cap_reached, cycle_us;

double store_expired_stale_perc(void)
{
	uint64_t bits = __atomic_load_n(&stale_perc_bits, __ATOMIC_RELAXED);
	double perc;

	memcpy(&perc, &bits, sizeof(perc));
	return perc;
}

uint64_t store_expire_time_cap_reached(void)
{
	return __atomic_load_n(&time_cap_reached, __ATOMIC_RELAXED);
}

uint64_t store_expire_cycle_ms(void)
{
	return __atomic_load_n(&cycle_us, __ATOMIC_RELAXED) / 1000;
}

/* Redis's estimate: each cycle moves it 5% toward the share it found. */
static void stale_perc_update(uint64_t sampled, uint64_t expired)
{
	double perc = store_expired_stale_perc(), now = sampled ? (double)expired / sampled : 0;
	uint64_t bits;

	perc = now * 0.05 + perc * 0.95;
	memcpy(&bits, &perc, sizeof(bits));
	__atomic_store_n(&stale_perc_bits, bits, __ATOMIC_RELAXED);
}

void db_count_expired_fields(int db, struct entry *e, uint64_t n)
{
	entry_shard(db, e)->expired_subkeys += n;
}

void store_active_expire(unsigned self, unsigned n, int64_t budget_us)
{
	int64_t start = now_us(), deadline = start + budget_us;
	unsigned total = (unsigned)store.ndbs * STORE_SHARDS;
	uint64_t sampled = 0, expired = 0;

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
			sampled += ctx.sampled;
			expired += ctx.expired;
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
		if (now_us() >= deadline) {
			__atomic_fetch_add(&time_cap_reached, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	__atomic_fetch_add(&cycle_us, (uint64_t)(now_us() - start), __ATOMIC_RELAXED);
	stale_perc_update(sampled, expired);
}

/* ---- active defragmentation ------------------------------------------------------------------ */

struct defrag_ctx {
	struct shard *shard;
	struct store_defrag_counts *c;
};

static void defrag_visit(void *arg, struct dict_node *node)
{
	struct defrag_ctx *ctx = arg;
	struct entry *e = entry_of(node), *ne;
	size_t voff = e->val.inl ? (size_t)(e->val.bytes - (char *)e) : 0;
	bool moved = false;

	ne = mem_defrag_move((char *)e - entry_prefix);
	if (ne) {
		/* As entry_resize: relinked where it was, its inline value
		 * with it. */
		ne = (struct entry *)((char *)ne + entry_prefix);
		entry_moved(ctx->shard, e, ne, voff);
		e = ne;
		moved = true;
		ctx->c->hits++;
	} else {
		ctx->c->misses++;
	}
	if (e->val.type == OBJ_STRING && e->val.enc != ENC_INT && !e->val.inl) {
		char *b = mem_defrag_move(e->val.bytes);

		if (b) {
			e->val.bytes = b;
			moved = true;
			ctx->c->hits++;
		} else {
			ctx->c->misses++;
		}
	}
	if (moved)
		ctx->c->key_hits++;
	else
		ctx->c->key_misses++;
}

/* The shard each worker resumes at (an index among the shards it owns). */
static __thread unsigned defrag_next;

bool store_defrag(unsigned self, unsigned n, int64_t budget_us, struct store_defrag_counts *c)
{
	int64_t deadline = now_us() + budget_us;
	unsigned total = (unsigned)store.ndbs * STORE_SHARDS;

	for (unsigned id = self + defrag_next * n; id < total; id += n, defrag_next++) {
		struct shard *s = store_shard((int)(id / STORE_SHARDS), id % STORE_SHARDS);
		struct defrag_ctx ctx = { .shard = s, .c = c };

		if (!__atomic_load_n(&s->keys.count, __ATOMIC_RELAXED))
			continue;
		pthread_mutex_lock(&s->lock);
		/* 16 buckets between looks at the clock. */
		do {
			for (int i = 0; i < 16; i++) {
				s->defrag_cursor =
					dict_scan(&s->keys, s->defrag_cursor, defrag_visit, &ctx);
				if (!s->defrag_cursor)
					break;
			}
		} while (s->defrag_cursor && now_us() < deadline);
		pthread_mutex_unlock(&s->lock);
		if (s->defrag_cursor)
			return false; /* out of time in this shard: resume here */
		if (now_us() >= deadline) {
			defrag_next++;
			return false;
		}
	}
	defrag_next = 0;
	return true;
}

void lockset_init(struct lockset *ls)
{
	/* The command's own first lockset keeps what its redirect check
	 * remembered; any later one (nested calls) starts afresh. */
	if (!slot_memo.kept)
		slot_memo.key = NULL;
	slot_memo.kept = false;
	ls->ndbs = 0;
	ls->all = false;
	ls->held = false;
}

/* The mask of db's shards in ls, or NULL when ls must take everything. */
static uint64_t *lockset_mask(struct lockset *ls, int db)
{
	if (ls->all)
		return NULL;
	for (unsigned i = 0; i < ls->ndbs; i++)
		if (ls->dbs[i].db == db)
			return &ls->dbs[i].mask;
	if (ls->ndbs == LOCKSET_DBS) {
		ls->all = true;
		return NULL;
	}
	ls->dbs[ls->ndbs].db = db;
	ls->dbs[ls->ndbs].mask = 0;
	return &ls->dbs[ls->ndbs++].mask;
}

void lockset_add_key(struct lockset *ls, int db, const char *key, size_t len)
{
	unsigned slot = key_slot(key, len);
	uint64_t *mask = lockset_mask(ls, db);

	slot_memo.key = key;
	slot_memo.len = len;
	slot_memo.slot = slot;
	if (mask)
		*mask |= 1ull << (slot % STORE_SHARDS);
}

void lockset_add_db(struct lockset *ls, int db)
{
	uint64_t *mask = lockset_mask(ls, db);

	if (mask)
		*mask = ~0ull;
}

void lockset_add_all(struct lockset *ls)
{
	ls->all = true;
}

unsigned lockset_count(const struct lockset *ls)
{
	unsigned n = 0;

	if (ls->all)
		return (unsigned)store.ndbs * STORE_SHARDS;
	for (unsigned i = 0; i < ls->ndbs; i++)
		n += (unsigned)__builtin_popcountll(ls->dbs[i].mask);
	return n;
}

__thread unsigned store_locks_held;

bool lockset_covers(const struct lockset *held, const struct lockset *ls)
{
	if (store_locks_held)
		return true;
	if (!held->held || ls->all)
		return held->held && held->all;
	if (held->all)
		return true;
	for (unsigned i = 0; i < ls->ndbs; i++) {
		uint64_t have = 0;

		for (unsigned j = 0; j < held->ndbs; j++)
			if (held->dbs[j].db == ls->dbs[i].db)
				have = held->dbs[j].mask;
		if (ls->dbs[i].mask & ~have)
			return false;
	}
	return true;
}

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

/* Databases in ascending order (at most LOCKSET_DBS: an insertion sort);
 * each one's shards are then taken from the lowest bit up. */
static void lockset_sort(struct lockset *ls)
{
	for (unsigned i = 1; i < ls->ndbs; i++)
		for (unsigned j = i; j > 0 && ls->dbs[j - 1].db > ls->dbs[j].db; j--) {
			__typeof__(ls->dbs[0]) t = ls->dbs[j];

			ls->dbs[j] = ls->dbs[j - 1];
			ls->dbs[j - 1] = t;
		}
}

/* A script escalating (store_escalation_begin) may wait for a shard held by
 * a thread that waits for one of the script's: every multi-shard acquirer
 * that holds no outer shard gives up what it took and retries after it. */
static int escalations; /* escalating scripts; atomic */

void store_escalation_begin(void)
{
	__atomic_add_fetch(&escalations, 1, __ATOMIC_SEQ_CST);
}

void store_escalation_end(void)
{
	__atomic_sub_fetch(&escalations, 1, __ATOMIC_SEQ_CST);
}

bool store_escalation_pending(void)
{
	return __atomic_load_n(&escalations, __ATOMIC_ACQUIRE) != 0;
}

void store_escalation_wait(void)
{
	const struct timespec ts = { 0, 50000 };

	while (store_escalation_pending())
		nanosleep(&ts, NULL);
}

void lockset_acquire(struct lockset *ls)
{
	ls->held = false;
	if (store_locks_held)
		return;
	while (lockset_acquire_unless(ls, store_escalation_pending) < 0)
		store_escalation_wait();
}

/* Gives back the first n shards ls took, in acquisition order (any order
 * is safe for unlocking). */
static void lockset_unlock_first(struct lockset *ls, unsigned n)
{
	if (ls->all) {
		for (int db = 0; db < store.ndbs; db++)
			for (unsigned i = 0; i < STORE_SHARDS && n; i++, n--)
				pthread_mutex_unlock(&store_shard(db, i)->lock);
		return;
	}
	for (unsigned i = 0; i < ls->ndbs; i++)
		for (uint64_t m = ls->dbs[i].mask; m && n; m &= m - 1, n--)
			pthread_mutex_unlock(
				&store_shard(ls->dbs[i].db, (unsigned)__builtin_ctzll(m))->lock);
}

/* One shard for lockset_acquire_unless: an uncontended lock (nearly every
 * command's) costs one trylock and no call. */
static inline bool lock_unless(pthread_mutex_t *m, bool (*give_up)(void))
{
	return !pthread_mutex_trylock(m) || mutex_lock_unless(m, give_up);
}

int lockset_acquire_unless(struct lockset *ls, bool (*give_up)(void))
{
	unsigned got = 0;

	ls->held = false;
	if (store_locks_held)
		return 0;
	if (ls->all) {
		for (int db = 0; db < store.ndbs; db++)
			for (unsigned i = 0; i < STORE_SHARDS; i++, got++)
				if (!lock_unless(&store_shard(db, i)->lock, give_up))
					goto give_up;
		store_locks_held++;
		ls->held = true;
		return 0;
	}
	lockset_sort(ls);
	for (unsigned i = 0; i < ls->ndbs; i++)
		for (uint64_t m = ls->dbs[i].mask; m; m &= m - 1, got++)
			if (!lock_unless(
				    &store_shard(ls->dbs[i].db, (unsigned)__builtin_ctzll(m))->lock,
				    give_up))
				goto give_up;
	ls->held = true;
	return 0;
give_up:
	lockset_unlock_first(ls, got);
	return -EBUSY;
}

void lockset_release(struct lockset *ls)
{
	slot_memo.key = NULL;
	if (!ls->held)
		return;
	ls->held = false;
	if (ls->all) {
		store_unlock_all();
		return;
	}
	for (unsigned i = ls->ndbs; i-- > 0;)
		for (uint64_t m = ls->dbs[i].mask; m; m &= m - 1)
			pthread_mutex_unlock(
				&store_shard(ls->dbs[i].db, (unsigned)__builtin_ctzll(m))->lock);
}

/* ---- growing a held set (a script's escalation) ---- */

static uint64_t held_mask(const struct lockset *held, int db)
{
	for (unsigned i = 0; i < held->ndbs; i++)
		if (held->dbs[i].db == db)
			return held->dbs[i].mask;
	return 0;
}

/* Would held plus need still fit the per-database masks? */
static bool extend_fits(const struct lockset *held, const struct lockset *need)
{
	unsigned n = held->ndbs;

	if (need->all)
		return false;
	for (unsigned i = 0; i < need->ndbs; i++) {
		bool have = false;

		for (unsigned j = 0; j < held->ndbs; j++)
			have |= held->dbs[j].db == need->dbs[i].db;
		n += !have;
	}
	return n <= LOCKSET_DBS;
}

/* Calls fn(db, shard) for each shard that held lacks and need names (all
 * of them when the two do not fit masks), in ascending (db, shard) order;
 * stops at the first false and returns how many were done. */
static unsigned extend_walk(struct lockset *held, const struct lockset *need,
			    bool (*fn)(int db, unsigned shard), bool *stopped)
{
	struct lockset want = *need;
	unsigned n = 0;

	*stopped = false;
	if (!extend_fits(held, need)) {
		for (int db = 0; db < store.ndbs; db++) {
			uint64_t m = ~held_mask(held, db);

			for (; m; m &= m - 1, n++)
				if (!fn(db, (unsigned)__builtin_ctzll(m))) {
					*stopped = true;
					return n;
				}
		}
		return n;
	}
	lockset_sort(&want);
	for (unsigned i = 0; i < want.ndbs; i++)
		for (uint64_t m = want.dbs[i].mask & ~held_mask(held, want.dbs[i].db); m;
		     m &= m - 1, n++)
			if (!fn(want.dbs[i].db, (unsigned)__builtin_ctzll(m))) {
				*stopped = true;
				return n;
			}
	return n;
}

static bool shard_trylock(int db, unsigned shard)
{
	return !pthread_mutex_trylock(&store_shard(db, shard)->lock);
}

static bool shard_lock(int db, unsigned shard)
{
	pthread_mutex_lock(&store_shard(db, shard)->lock);
	return true;
}

static __thread unsigned unlock_left;
static bool shard_unlock_some(int db, unsigned shard)
{
	if (!unlock_left)
		return false;
	unlock_left--;
	pthread_mutex_unlock(&store_shard(db, shard)->lock);
	return true;
}

/* Records in held the shards of need just taken. */
static void extend_commit(struct lockset *held, const struct lockset *need)
{
	if (!extend_fits(held, need)) {
		held->all = true;
		held->ndbs = 0;
		store_locks_held++;
		return;
	}
	for (unsigned i = 0; i < need->ndbs; i++)
		*lockset_mask(held, need->dbs[i].db) |= need->dbs[i].mask;
}

int lockset_try_extend(struct lockset *held, const struct lockset *need)
{
	unsigned got;
	bool stopped;

	if (lockset_covers(held, need))
		return 0;
	got = extend_walk(held, need, shard_trylock, &stopped);
	if (stopped) {
		/* The walk's order is fixed: the first got are those taken. */
		unlock_left = got;
		extend_walk(held, need, shard_unlock_some, &stopped);
		return -EAGAIN;
	}
	extend_commit(held, need);
	return 0;
}

bool lockset_extend_is_above(const struct lockset *held, const struct lockset *need)
{
	int top_db = -1;
	unsigned top = 0;

	if (held->all || store_locks_held)
		return false;
	for (unsigned i = 0; i < held->ndbs; i++)
		if (held->dbs[i].mask && held->dbs[i].db >= top_db) {
			top_db = held->dbs[i].db;
			top = 63 - (unsigned)__builtin_clzll(held->dbs[i].mask);
		}
	if (top_db < 0)
		return true;
	if (!extend_fits(held, need))
		return false;
	for (unsigned i = 0; i < need->ndbs; i++) {
		uint64_t m = need->dbs[i].mask & ~held_mask(held, need->dbs[i].db);

		if (!m)
			continue;
		if (need->dbs[i].db < top_db ||
		    (need->dbs[i].db == top_db && (unsigned)__builtin_ctzll(m) < top))
			return false;
	}
	return true;
}

void lockset_extend(struct lockset *held, const struct lockset *need)
{
	bool stopped;

	if (lockset_covers(held, need))
		return;
	extend_walk(held, need, shard_lock, &stopped);
	extend_commit(held, need);
}

void store_lock_all(void)
{
	struct lockset ls;

	if (store_locks_held) {
		store_locks_held++;
		return;
	}
	/* lockset_acquire_unless counts the hold for a set of everything. */
	lockset_init(&ls);
	ls.all = true;
	while (lockset_acquire_unless(&ls, store_escalation_pending) < 0)
		store_escalation_wait();
}

void store_unlock_all(void)
{
	if (--store_locks_held)
		return;
	for (int db = store.ndbs; db-- > 0;)
		for (unsigned i = STORE_SHARDS; i-- > 0;)
			pthread_mutex_unlock(&store_shard(db, i)->lock);
}
