// SPDX-License-Identifier: GPL-2.0-only
/*
 * The keyspace (store.h): Redis Cluster slots (checked against redis-server
 * 7.0's CLUSTER KEYSLOT), add/find/set/delete, lazy and active expiry, the
 * counters, FLUSHDB and SWAPDB, and locksets. Every db_* call is made with
 * the key's shard lock held, as the contract says.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "evict.h"
#include "exec_ctx.h"
#include "mem.h"
#include "object.h"
#include "store.h"
#include "util.h"

#include "kselftest_harness.h"

#define NDBS 16

/* What the store's choke point reported, through a hook in the slot
 * keyspace notifications will take. */
static struct {
	unsigned n;
	enum db_change_reason last;
	int db;
	char key[64];
} changes;

static void record_change(const struct db_change *ch)
{
	changes.n++;
	changes.last = ch->reason;
	changes.db = ch->db;
	changes.key[0] = '\0';
	if (ch->e)
		snprintf(changes.key, sizeof(changes.key), "%s", ch->e->key);
}

static struct shard *shard_of_key(int db, const char *key, size_t len)
{
	return store_shard(db, key_shard(key, len));
}

static void lock_key(int db, const char *key)
{
	pthread_mutex_lock(&shard_of_key(db, key, strlen(key))->lock);
}

static void unlock_key(int db, const char *key)
{
	pthread_mutex_unlock(&shard_of_key(db, key, strlen(key))->lock);
}

/* SET key value [with a deadline, or -1], under the shard lock. */
static void set_key(int db, const char *key, const char *val, int64_t expire)
{
	struct entry *e;

	lock_key(db, key);
	e = db_set(db, key, strlen(key), obj_string(val, strlen(val)), false);
	if (expire >= 0)
		e = db_set_expire(db, e, expire);
	unlock_key(db, key);
}

/* 1 if key holds val, 0 if absent, -1 if it holds something else. */
static int key_is(int db, const char *key, const char *val)
{
	char tmp[LL_STR_SIZE + 1];
	struct entry *e;
	const char *p;
	size_t len;
	int r;

	lock_key(db, key);
	e = db_find(db, key, strlen(key));
	if (!e) {
		r = 0;
	} else {
		p = obj_str(&e->val, tmp, &len);
		r = len == strlen(val) && memcmp(p, val, len) == 0 ? 1 : -1;
	}
	unlock_key(db, key);
	return r;
}

static bool key_exists(int db, const char *key)
{
	struct entry *e;

	lock_key(db, key);
	e = db_find(db, key, strlen(key));
	unlock_key(db, key);
	return e != NULL;
}

static uint64_t expired_total(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += store_shard(db, i)->expired;
	return n;
}

static void keyname(char *buf, size_t size, const char *prefix, int i)
{
	snprintf(buf, size, "%s:%d", prefix, i);
}

FIXTURE(store)
{
	size_t mem_before;
	struct store_reads reads; /* this thread's keyspace hits and misses */
};

FIXTURE_SETUP(store)
{
	self->mem_before = mem_used();
	store_reads = &self->reads;
	store_init(NDBS);
	store_hook_set(STORE_HOOK_NOTIFY, record_change);
}

FIXTURE_TEARDOWN(store)
{
	store_destroy();
	/* Everything the store allocated went back. */
	EXPECT_EQ(self->mem_before, mem_used());
}

/* ---- slots -------------------------------------------------------------------- */

static const struct {
	const char *key;
	size_t len;
	unsigned slot;
} known_slots[] = {
	{ "foo", 3, 12182 },
	{ "bar", 3, 5061 },
	{ "somekey", 7, 11058 },
	{ "123456789", 9, 12739 }, /* CRC16/XMODEM check value 0x31c3 */
	{ "{user1000}.following", 20, 3443 },
	{ "{user1000}.followers", 20, 3443 },
	{ "user1000", 8, 3443 },
	{ "foo{}{bar}", 10, 8363 },    /* empty first tag: the whole key */
	{ "{}", 2, 15257 },	       /* empty tag: the whole key */
	{ "foo{{bar}}zap", 13, 4015 }, /* the tag is "{bar" */
	{ "foo{bar}{zap}", 13, 5061 }, /* the first tag only: "bar" */
	{ "", 0, 0 },
	{ "{", 1, 4092 },
	{ "}", 1, 12090 },
	{ "a{b", 3, 13340 }, /* unterminated: the whole key */
	{ "{}a", 3, 10875 },
	{ "x{}", 3, 2608 },
	{ "a\0{bar}\0", 8, 5061 }, /* binary keys: lengths, not strings */
};

TEST_F(store, key_slot_matches_redis_cluster)
{
	for (size_t i = 0; i < ARRAY_SIZE(known_slots); i++) {
		ASSERT_EQ(known_slots[i].slot, key_slot(known_slots[i].key, known_slots[i].len))
		TH_LOG("key '%s'", known_slots[i].key);
		ASSERT_EQ(known_slots[i].slot % STORE_SHARDS,
			  key_shard(known_slots[i].key, known_slots[i].len));
	}
}

/*
 * BUG (fails until fixed): key_slot() reads a CRC16 table that only
 * store_init() fills (daemon/store.c crc16_init()), so before store_init()
 * every key hashes to slot 0. store.h states no such precondition for this
 * pure function (nor for key_shard(), lockset_add_key()).
 */
TEST(key_slot_before_store_init)
{
	for (size_t i = 0; i < ARRAY_SIZE(known_slots); i++) {
		ASSERT_EQ(known_slots[i].slot, key_slot(known_slots[i].key, known_slots[i].len))
		TH_LOG("key '%s' without store_init()", known_slots[i].key);
	}
}

/* The bit-at-a-time CRC16/XMODEM of the spec, to check the sliced one
 * against at every length and alignment. */
static unsigned slot_bitwise(const unsigned char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc % CLUSTER_SLOTS;
}

TEST(key_slot_matches_bitwise_crc16)
{
	unsigned char buf[80];
	uint32_t x = 12345;

	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (unsigned char)(x >> 16);
			if (buf[i] == '{') /* no hash tags: the whole key is hashed */
				buf[i] = 0;
		}
		for (size_t off = 0; off < 8; off++) {
			for (size_t len = 0; len + off <= sizeof(buf); len++) {
				ASSERT_EQ(slot_bitwise(buf + off, len),
					  key_slot((const char *)buf + off, len))
				TH_LOG("round %d offset %zu length %zu", round, off, len);
			}
		}
	}
}

TEST_F(store, key_slot_range)
{
	char key[32];
	unsigned seen_shards = 0;
	uint64_t shards = 0;

	for (int i = 0; i < 20000; i++) {
		int n = snprintf(key, sizeof(key), "k%d", i);
		unsigned slot = key_slot(key, (size_t)n);

		ASSERT_GT(CLUSTER_SLOTS, slot);
		if (!(shards & (1ULL << (slot % STORE_SHARDS)))) {
			shards |= 1ULL << (slot % STORE_SHARDS);
			seen_shards++;
		}
	}
	ASSERT_EQ(STORE_SHARDS, seen_shards);
}

/* ---- add, find, set, delete ------------------------------------------------------ */

TEST_F(store, add_find_delete)
{
	const char *k = "greeting";
	size_t klen = strlen(k);
	unsigned seen = changes.n;
	struct entry *e;

	lock_key(0, k);
	ASSERT_EQ(NULL, db_find(0, k, klen));
	e = db_add(0, k, klen, obj_string("hello", 5));
	ASSERT_NE(NULL, e);
	ASSERT_EQ(klen, entry_klen(e));
	ASSERT_EQ(0, memcmp(k, e->key, klen));
	ASSERT_EQ('\0', e->key[klen]);
	ASSERT_EQ(-1, entry_expire(e));
	ASSERT_EQ(e, db_find(0, k, klen));
	ASSERT_EQ(seen + 1, changes.n);
	ASSERT_EQ(DB_CHANGE_WRITE, changes.last);
	ASSERT_STREQ(k, changes.key);
	unlock_key(0, k);

	ASSERT_EQ(1, key_is(0, k, "hello"));
	ASSERT_EQ(0, key_is(1, k, "hello")); /* databases are separate */
	ASSERT_EQ(1, db_size(0));
	ASSERT_EQ(0, db_size(1));
	ASSERT_EQ(0, db_expires(0));

	lock_key(0, k);
	e = db_set_expire(0, db_find(0, k, klen), now_ms() + 10000);
	ASSERT_EQ(DB_CHANGE_TTL, changes.last);
	seen = changes.n;
	db_delete(0, db_find(0, k, klen));
	ASSERT_EQ(seen + 1, changes.n);
	ASSERT_EQ(DB_CHANGE_DELETE, changes.last);
	db_add(0, k, klen, obj_string("x", 1));
	db_remove(0, db_find(0, k, klen), DB_CHANGE_EVICT);
	ASSERT_EQ(DB_CHANGE_EVICT, changes.last);
	ASSERT_EQ(NULL, db_find(0, k, klen));
	unlock_key(0, k);
	ASSERT_EQ(0, db_size(0));
}

TEST_F(store, binary_keys)
{
	static const char k1[] = "a\0b", k2[] = "a\0c";
	struct shard *s1 = shard_of_key(0, k1, 3), *s2 = shard_of_key(0, k2, 3);

	pthread_mutex_lock(&s1->lock);
	if (s2 != s1)
		pthread_mutex_lock(&s2->lock);
	db_add(0, k1, 3, obj_string("1", 1));
	db_add(0, k2, 3, obj_string("2", 1));
	ASSERT_EQ(NULL, db_find(0, "a", 1));
	ASSERT_EQ(1, db_find(0, k1, 3)->val.i);
	ASSERT_EQ(2, db_find(0, k2, 3)->val.i);
	if (s2 != s1)
		pthread_mutex_unlock(&s2->lock);
	pthread_mutex_unlock(&s1->lock);
	ASSERT_EQ(2, db_size(0));
}

TEST_F(store, many_keys)
{
	const int n = 100000;
	char key[32];

	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "key", i);
		set_key(7, key, key, -1);
	}
	ASSERT_EQ(n, db_size(7));
	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "key", i);
		ASSERT_EQ(1, key_is(7, key, key));
	}
	keyname(key, sizeof(key), "key", n);
	ASSERT_FALSE(key_exists(7, key));
	for (int i = 0; i < n; i += 2) {
		keyname(key, sizeof(key), "key", i);
		lock_key(7, key);
		db_delete(7, db_find(7, key, strlen(key)));
		unlock_key(7, key);
	}
	ASSERT_EQ(n / 2, db_size(7));
	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "key", i);
		ASSERT_EQ(i % 2 ? 1 : 0, key_is(7, key, key));
	}
}

TEST_F(store, set_replaces_and_drops_ttl)
{
	const char *k = "k";
	int64_t later = now_ms() + 3600 * 1000;
	struct entry *e;

	set_key(0, k, "one", later);
	ASSERT_EQ(1, db_expires(0));
	lock_key(0, k);
	e = db_find(0, k, 1);
	ASSERT_EQ(later, entry_expire(e));
	/* SET ... KEEPTTL keeps the deadline. */
	e = db_set(0, k, 1, obj_string("two", 3), true);
	ASSERT_EQ(later, entry_expire(e));
	ASSERT_EQ(1, db_expires(0));
	/* Plain SET drops it. */
	e = db_set(0, k, 1, obj_string("three", 5), false);
	ASSERT_EQ(-1, entry_expire(e));
	ASSERT_EQ(0, db_expires(0));
	unlock_key(0, k);
	ASSERT_EQ(1, key_is(0, k, "three"));
	ASSERT_EQ(1, db_size(0));

	/* db_set_value keeps the deadline; -1 removes it; setting twice counts once. */
	lock_key(0, k);
	e = db_find(0, k, 1);
	e = db_set_expire(0, e, later);
	e = db_set_expire(0, e, later + 1);
	ASSERT_EQ(1, db_expires(0));
	db_set_value(0, e, obj_string_ll(42));
	ASSERT_EQ(later + 1, entry_expire(e));
	e = db_set_expire(0, e, -1);
	ASSERT_EQ(0, db_expires(0));
	e = db_set_expire(0, e, -1);
	ASSERT_EQ(0, db_expires(0));
	unlock_key(0, k);
	ASSERT_EQ(1, key_is(0, k, "42"));
}

TEST_F(store, hits_and_misses)
{
	const char *k = "counted";
	struct shard *s = shard_of_key(0, k, strlen(k));

	set_key(0, k, "v", -1);
	lock_key(0, k);
	ASSERT_NE(NULL, db_find_read(0, k, strlen(k)));
	ASSERT_NE(NULL, db_find_read(0, k, strlen(k)));
	/* Counted in the thread's counters, not the shard's. */
	ASSERT_EQ(2, self->reads.hits);
	ASSERT_EQ(0, self->reads.misses);
	unlock_key(0, k);

	/* A key of the same shard that is absent. */
	for (int i = 0;; i++) {
		char other[32];

		keyname(other, sizeof(other), "absent", i);
		if (shard_of_key(0, other, strlen(other)) != s)
			continue;
		lock_key(0, other);
		ASSERT_EQ(NULL, db_find_read(0, other, strlen(other)));
		unlock_key(0, other);
		break;
	}
	ASSERT_EQ(2, self->reads.hits);
	ASSERT_EQ(1, self->reads.misses);
	/* db_find does not count. */
	ASSERT_TRUE(key_exists(0, k));
	ASSERT_EQ(2, self->reads.hits);
}

/* ---- expiry ----------------------------------------------------------------------- */

TEST(entry_expired_boundary)
{
	/* A key of one byte, its deadline's room after it (store.h). */
	_Alignas(struct entry) char buf[ENTRY_HDR + 2 + sizeof(int64_t)] = { 0 };
	struct entry *e = (struct entry *)buf;
	int64_t t = 1000;

	e->node.aux = 1;
	e->flags = ENTRY_F_TTL;
	memcpy(e->key + 2, &t, sizeof(t));
	ASSERT_FALSE(entry_expired(e, 999));
	ASSERT_FALSE(entry_expired(e, 1000)); /* Redis: expired when now > when */
	ASSERT_TRUE(entry_expired(e, 1001));
	t = -1;
	memcpy(e->key + 2, &t, sizeof(t));
	ASSERT_FALSE(entry_expired(e, INT64_MAX));
	e->flags = 0; /* no room: no deadline */
	ASSERT_FALSE(entry_expired(e, INT64_MAX));
	e->flags = ENTRY_F_TTL;
	t = 0;
	memcpy(e->key + 2, &t, sizeof(t));
	ASSERT_TRUE(entry_expired(e, 1));
}

TEST_F(store, lazy_expiry)
{
	const char *k = "gone", *live = "stays";
	struct shard *s = shard_of_key(0, k, strlen(k));
	unsigned seen;

	set_key(0, k, "v", now_ms() - 1000);
	set_key(0, live, "v", now_ms() + 3600 * 1000);
	ASSERT_EQ(2, db_size(0));
	ASSERT_EQ(2, db_expires(0));
	ASSERT_EQ(0, s->expired);

	lock_key(0, k);
	seen = changes.n;
	ASSERT_EQ(NULL, db_find(0, k, strlen(k)));
	/* Deleted on the way (a change, for its deadline), and counted. */
	ASSERT_EQ(1, s->expired);
	ASSERT_EQ(seen + 1, changes.n);
	ASSERT_EQ(DB_CHANGE_EXPIRE, changes.last);
	ASSERT_STREQ(k, changes.key);
	ASSERT_EQ(NULL, db_find(0, k, strlen(k)));
	ASSERT_EQ(1, s->expired);
	unlock_key(0, k);
	ASSERT_EQ(1, db_size(0));
	ASSERT_EQ(1, db_expires(0));
	ASSERT_EQ(1, key_is(0, live, "v"));

	/* db_find_read counts the expired key as a miss. */
	set_key(0, k, "v", now_ms() - 1);
	lock_key(0, k);
	ASSERT_EQ(NULL, db_find_read(0, k, strlen(k)));
	unlock_key(0, k);
	ASSERT_EQ(2, s->expired);
	ASSERT_EQ(1, self->reads.misses);

	/* SET over an expired key creates a fresh one without the deadline. */
	set_key(0, k, "old", now_ms() - 1);
	set_key(0, k, "new", -1);
	ASSERT_EQ(1, key_is(0, k, "new"));
	ASSERT_EQ(1, db_expires(0));
}

/* Inside a command the clock is frozen at its context's snapshot, which a
 * nested call inherits and does not change. */
TEST_F(store, command_clock)
{
	const char *k = "tick";
	const int64_t t = 1700000000000LL;
	struct exec_ctx outer, inner;

	set_key(0, k, "v", t);
	exec_ctx_push(&outer, NULL, NULL, 0, 0, 0);
	outer.time_ms = t - 5000;
	ASSERT_EQ(t - 5000, store_now());
	ASSERT_TRUE(key_exists(0, k));
	exec_ctx_push(&inner, NULL, NULL, 0, EXEC_IN_EXEC, 0);
	ASSERT_EQ(t - 5000, store_now());
	ASSERT_EQ(EXEC_IN_EXEC, exec_ctx_flags());
	exec_ctx_pop(&inner);
	ASSERT_EQ(t - 5000, store_now());
	ASSERT_EQ(0, exec_ctx_flags());
	outer.time_ms = t;
	ASSERT_TRUE(key_exists(0, k));
	outer.time_ms = t + 1;
	ASSERT_FALSE(key_exists(0, k));
	exec_ctx_pop(&outer);
	ASSERT_EQ(NULL, exec_ctx_top);
	ASSERT_LE(now_ms() - 1000, store_now());
}

/*
 * Accesses no lookup saw (the kernel cache's hits, fastpath.c): the access
 * time becomes now and, under an LFU policy only, the counter takes one touch
 * per access (each counts with lfu-log-factor 0).
 */
TEST_F(store, touch_counts_accesses)
{
	const char *k = "touched";
	long long policy = config.maxmemory_policy, factor = config.lfu_log_factor;
	struct exec_ctx x;
	struct entry *e;

	set_key(0, k, "v", -1);
	lock_key(0, k);
	e = db_peek(0, k, strlen(k));
	ASSERT_NE(NULL, e);
	exec_ctx_push(&x, NULL, NULL, 0, 0, 0); /* a frozen access clock */
	config.maxmemory_policy = POLICY_ALLKEYS_LFU;
	config.lfu_log_factor = 0;
	ASSERT_EQ(LFU_INIT_VAL, lfu_value(e, store_clock()));
	db_touch(e, 7);
	EXPECT_EQ(LFU_INIT_VAL + 7, lfu_value(e, store_clock()));
	EXPECT_EQ(store_clock(), e->atime);
	db_touch(e, 1000);
	EXPECT_EQ(255, lfu_value(e, store_clock()));
	config.maxmemory_policy = POLICY_ALLKEYS_LRU;
	e->lfu = LFU_INIT_VAL;
	x.mono_ms += 5000;
	db_touch(e, 3);
	EXPECT_EQ(store_clock(), e->atime);
	EXPECT_EQ(LFU_INIT_VAL, (unsigned)e->lfu);
	exec_ctx_pop(&x);
	config.maxmemory_policy = policy;
	config.lfu_log_factor = factor;
	unlock_key(0, k);
}

/*
 * Active expiry removes keys whose deadline passed without any lookup, keeps
 * those with a future deadline or none, and counts what it removed.
 */
TEST_F(store, active_expiry)
{
	const int n = 300, dbs[] = { 0, 5 };
	int64_t now = now_ms();
	char key[32];
	int calls = 0;

	for (size_t d = 0; d < ARRAY_SIZE(dbs); d++) {
		for (int i = 0; i < n; i++) {
			keyname(key, sizeof(key), "past", i);
			set_key(dbs[d], key, "x", now - 10000 - i);
			keyname(key, sizeof(key), "future", i);
			set_key(dbs[d], key, "x", now + 3600 * 1000);
			keyname(key, sizeof(key), "plain", i);
			set_key(dbs[d], key, "x", -1);
		}
		ASSERT_EQ(3 * n, db_size(dbs[d]));
		ASSERT_EQ(2 * n, db_expires(dbs[d]));
	}
	while (db_expires(0) > n || db_expires(5) > n) {
		store_active_expire(0, 1, 100000);
		ASSERT_GT(1000, ++calls);
	}
	for (size_t d = 0; d < ARRAY_SIZE(dbs); d++) {
		/* Counted before any lookup: the removal was active. */
		ASSERT_EQ(2 * n, db_size(dbs[d]));
		ASSERT_EQ(n, db_expires(dbs[d]));
		ASSERT_EQ(n, expired_total(dbs[d]));
		ASSERT_LT(0, db_avg_ttl(dbs[d]));
		ASSERT_GE(3600 * 1000, db_avg_ttl(dbs[d]));
		for (int i = 0; i < n; i++) {
			keyname(key, sizeof(key), "past", i);
			ASSERT_FALSE(key_exists(dbs[d], key));
			keyname(key, sizeof(key), "future", i);
			ASSERT_TRUE(key_exists(dbs[d], key));
			keyname(key, sizeof(key), "plain", i);
			ASSERT_TRUE(key_exists(dbs[d], key));
		}
		/* The lookups found nothing left to expire lazily. */
		ASSERT_EQ(n, expired_total(dbs[d]));
	}
	/* Nothing more to do: further runs change nothing. */
	store_active_expire(0, 1, 100000);
	ASSERT_EQ(2 * n, db_size(0));
	ASSERT_EQ(n, expired_total(0));
}

/* Worker self of n handles the shards whose id (db * STORE_SHARDS + shard)
 * is self modulo n, and no other. */
TEST_F(store, active_expiry_partition)
{
	const int n = 2000;
	int64_t now = now_ms();
	uint64_t before[STORE_SHARDS];
	char key[32];

	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "p", i);
		set_key(1, key, "x", now - 1000);
	}
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		before[i] = store_shard(1, i)->keys.count;
		ASSERT_LT(0, before[i]); /* every shard has some */
	}
	/* Ids of db 1 are 64..127: worker 1 of 2 owns the odd shards. */
	for (int i = 0; i < 50; i++)
		store_active_expire(1, 2, 100000);
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		struct shard *s = store_shard(1, i);

		if (i % 2) {
			ASSERT_EQ(0, s->keys.count);
			ASSERT_EQ(0, s->nexpires);
			ASSERT_EQ(before[i], s->expired);
		} else {
			ASSERT_EQ(before[i], s->keys.count);
			ASSERT_EQ(before[i], s->nexpires);
			ASSERT_EQ(0, s->expired);
		}
	}
	for (int i = 0; i < 50 && db_size(1); i++)
		store_active_expire(0, 2, 100000);
	ASSERT_EQ(0, db_size(1));
	ASSERT_EQ(0, db_expires(1));
	ASSERT_EQ(n, expired_total(1));
}

/* ---- whole databases -------------------------------------------------------------- */

/* A replica's swapdb load: the keys go aside, the store is empty (a flush
 * to the hooks), what is loaded meanwhile is dropped when they come back;
 * freed instead, the loaded keys stay. */
TEST_F(store, set_aside_then_restore_or_free)
{
	struct store_aside *a;
	char key[32];

	for (int i = 0; i < 500; i++) {
		keyname(key, sizeof(key), "old", i);
		set_key(i % 3, key, "o", i % 2 ? now_ms() + 100000 : -1);
	}
	ASSERT_EQ(167, db_size(0));
	store_lock_all();
	a = do_store_set_aside();
	store_unlock_all();
	EXPECT_EQ(DB_CHANGE_FLUSH, changes.last);
	for (int db = 0; db < 3; db++) {
		EXPECT_EQ(0, db_size(db));
		EXPECT_EQ(0, db_expires(db));
	}
	keyname(key, sizeof(key), "old", 3);
	EXPECT_FALSE(key_exists(0, key));
	/* A half-loaded file. */
	for (int i = 0; i < 100; i++) {
		keyname(key, sizeof(key), "new", i);
		set_key(0, key, "n", now_ms() + 100000);
	}
	store_lock_all();
	do_store_restore_aside(a);
	store_unlock_all();
	EXPECT_EQ(167, db_size(0));
	EXPECT_EQ(167, db_size(1));
	EXPECT_EQ(166, db_size(2));
	EXPECT_EQ(250, db_expires(0) + db_expires(1) + db_expires(2));
	keyname(key, sizeof(key), "new", 5);
	EXPECT_FALSE(key_exists(0, key));
	keyname(key, sizeof(key), "old", 3);
	EXPECT_EQ(1, key_is(0, key, "o"));
	/* Still a working table: keys come and go. */
	set_key(0, "after", "a", -1);
	EXPECT_EQ(1, key_is(0, "after", "a"));
	/* A whole file: the old keys are dropped for good. */
	store_lock_all();
	a = do_store_set_aside();
	store_unlock_all();
	set_key(0, "loaded", "l", -1);
	store_aside_free(a);
	EXPECT_EQ(1, db_size(0));
	EXPECT_EQ(0, db_size(1));
	EXPECT_EQ(1, key_is(0, "loaded", "l"));
}

TEST_F(store, flush)
{
	const int n = 1000;
	struct lockset ls;
	char key[32];

	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "f", i);
		set_key(2, key, "x", i % 2 ? now_ms() + 100000 : -1);
		set_key(3, key, "y", -1);
	}
	ASSERT_EQ(n, db_size(2));
	ASSERT_EQ(n / 2, db_expires(2));

	lockset_init(&ls);
	lockset_add_db(&ls, 2);
	lockset_acquire(&ls);
	ASSERT_EQ(n, db_flush(2));
	ASSERT_EQ(0, db_flush(2));
	lockset_release(&ls);

	ASSERT_EQ(0, db_size(2));
	ASSERT_EQ(0, db_expires(2));
	ASSERT_EQ(n, db_size(3));
	keyname(key, sizeof(key), "f", 7);
	ASSERT_FALSE(key_exists(2, key));
	ASSERT_EQ(1, key_is(3, key, "y"));
	/* Still usable. */
	set_key(2, key, "again", -1);
	ASSERT_EQ(1, key_is(2, key, "again"));
	ASSERT_EQ(1, db_size(2));
}

TEST_F(store, swap)
{
	const int n = 500;
	struct lockset ls;
	char key[32];

	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "a", i);
		set_key(3, key, "in3", now_ms() + 100000);
	}
	for (int i = 0; i < 2 * n; i++) {
		keyname(key, sizeof(key), "b", i);
		set_key(4, key, "in4", -1);
	}
	lockset_init(&ls);
	lockset_add_db(&ls, 4);
	lockset_add_db(&ls, 3);
	lockset_acquire(&ls);
	db_swap(3, 4);
	lockset_release(&ls);

	ASSERT_EQ(2 * n, db_size(3));
	ASSERT_EQ(0, db_expires(3));
	ASSERT_EQ(n, db_size(4));
	ASSERT_EQ(n, db_expires(4));
	for (int i = 0; i < n; i++) {
		keyname(key, sizeof(key), "a", i);
		ASSERT_EQ(1, key_is(4, key, "in3"));
		ASSERT_EQ(0, key_is(3, key, "in3"));
	}
	for (int i = 0; i < 2 * n; i++) {
		keyname(key, sizeof(key), "b", i);
		ASSERT_EQ(1, key_is(3, key, "in4"));
	}
	/* Deleting after the swap keeps the counters right. */
	keyname(key, sizeof(key), "a", 0);
	lock_key(4, key);
	db_delete(4, db_find(4, key, strlen(key)));
	unlock_key(4, key);
	ASSERT_EQ(n - 1, db_size(4));
	ASSERT_EQ(n - 1, db_expires(4));
}

/* ---- locksets ------------------------------------------------------------------ */

static bool shard_locked(int db, unsigned shard)
{
	pthread_mutex_t *m = &store_shard(db, shard)->lock;

	if (pthread_mutex_trylock(m) == EBUSY)
		return true;
	pthread_mutex_unlock(m);
	return false;
}

TEST_F(store, lockset_orders_and_dedups)
{
	struct lockset ls;
	char key[32];
	unsigned nlocked = 0;

	lockset_init(&ls);
	/* The same shard through a hash tag, twice. */
	lockset_add_key(&ls, 9, "{t}a", 4);
	lockset_add_key(&ls, 9, "{t}b", 4);
	ASSERT_EQ(1, lockset_count(&ls));
	for (int i = 0; i < 40; i++) {
		keyname(key, sizeof(key), "l", i);
		lockset_add_key(&ls, i % 2 ? 9 : 2, key, strlen(key));
	}
	lockset_acquire(&ls);
	ASSERT_TRUE(ls.held);
	ASSERT_EQ(2, ls.ndbs);
	ASSERT_LT(ls.dbs[0].db, ls.dbs[1].db);
	for (int db = 0; db < NDBS; db++)
		for (unsigned s = 0; s < STORE_SHARDS; s++)
			if (shard_locked(db, s))
				nlocked++;
	ASSERT_EQ(lockset_count(&ls), nlocked);
	ASSERT_TRUE(shard_locked(9, key_shard("{t}b", 4)));
	lockset_release(&ls);
	ASSERT_FALSE(ls.held);
	ASSERT_FALSE(shard_locked(9, key_shard("{t}b", 4)));
	/* Releasing twice is harmless. */
	lockset_release(&ls);

	store_lock_all();
	ASSERT_TRUE(shard_locked(NDBS - 1, STORE_SHARDS - 1));
	store_unlock_all();
	ASSERT_FALSE(shard_locked(0, 0));
}

TEST_HARNESS_MAIN
