// SPDX-License-Identifier: GPL-2.0-only
/*
 * Cluster mode's per-slot key index (store.h, db_slot_*): kept exact on add,
 * delete, rename-like remove and re-add, active and lazy expiry, FLUSHDB and
 * SWAPDB; cluster_slot_keys_delete() empties one slot and nothing else; and
 * with cluster mode off an entry carries no link (MEMORY USAGE's bytes are
 * the same as before).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "config.h"
#include "mem.h"
#include "object.h"
#include "store.h"
#include "util.h"

#include "kselftest_harness.h"

#define NDBS 4

static void lock_slot(int db, unsigned slot)
{
	pthread_mutex_lock(&store_shard(db, slot % STORE_SHARDS)->lock);
}

static void unlock_slot(int db, unsigned slot)
{
	pthread_mutex_unlock(&store_shard(db, slot % STORE_SHARDS)->lock);
}

static struct entry *set_key(int db, const char *key, int64_t expire)
{
	unsigned slot = key_slot(key, strlen(key));
	struct entry *e;

	lock_slot(db, slot);
	e = db_set(db, key, strlen(key), obj_string("v", 1), false);
	if (expire >= 0)
		e = db_set_expire(db, e, expire);
	unlock_slot(db, slot);
	return e;
}

static void del_key(int db, const char *key)
{
	unsigned slot = key_slot(key, strlen(key));
	struct entry *e;

	lock_slot(db, slot);
	e = db_peek(db, key, strlen(key));
	if (e)
		db_delete(db, e);
	unlock_slot(db, slot);
}

static uint64_t count(int db, unsigned slot)
{
	uint64_t n;

	lock_slot(db, slot);
	n = db_slot_count(db, slot);
	unlock_slot(db, slot);
	return n;
}

/* The index's list walked: its length, every key in the right slot. */
static uint64_t walk(int db, unsigned slot, bool *ok)
{
	uint64_t n = 0;

	lock_slot(db, slot);
	for (struct entry *e = db_slot_first(db, slot); e; e = db_slot_next(e)) {
		if (e->shard != slot % STORE_SHARDS || key_slot(e->key, entry_klen(e)) != slot)
			*ok = false;
		n++;
	}
	unlock_slot(db, slot);
	return n;
}

FIXTURE(slot_index)
{
	size_t mem_before;
};

FIXTURE_SETUP(slot_index)
{
	self->mem_before = mem_used();
	config.cluster_enabled = true;
	store_init(NDBS);
}

FIXTURE_TEARDOWN(slot_index)
{
	store_destroy();
	config.cluster_enabled = false;
	EXPECT_EQ(self->mem_before, mem_used());
}

/* "{user1000}" hashes to slot 3443 (Redis's CLUSTER KEYSLOT), foo to 12182. */
TEST_F(slot_index, add_delete_count)
{
	char key[64];
	bool ok = true;

	ASSERT_TRUE(store_slot_index());
	ASSERT_EQ(0, count(0, 3443));
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "{user1000}.%d", i);
		set_key(0, key, -1);
	}
	set_key(0, "foo", -1);
	ASSERT_EQ(100, count(0, 3443));
	ASSERT_EQ(100, walk(0, 3443, &ok));
	ASSERT_TRUE(ok);
	ASSERT_EQ(1, count(0, 12182));
	/* Overwriting a key keeps one entry. */
	set_key(0, "{user1000}.7", -1);
	ASSERT_EQ(100, count(0, 3443));
	/* Deleting from the middle, the head and the tail. */
	del_key(0, "{user1000}.50");
	del_key(0, "{user1000}.99");
	del_key(0, "{user1000}.0");
	ASSERT_EQ(97, count(0, 3443));
	ASSERT_EQ(97, walk(0, 3443, &ok));
	ASSERT_TRUE(ok);
	/* Another database has its own lists. */
	ASSERT_EQ(0, count(1, 3443));
	/* A slot of the same shard is apart: 3443 + 64. */
	ASSERT_EQ(0, count(0, 3443 + STORE_SHARDS));
}

TEST_F(slot_index, expiry_lazy_and_active)
{
	char key[64];
	bool ok = true;

	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "{user1000}.%d", i);
		set_key(0, key, i % 2 ? 1 : -1); /* odd ones expired long ago */
	}
	ASSERT_EQ(50, count(0, 3443));
	/* A lookup reclaims one. */
	lock_slot(0, 3443);
	ASSERT_EQ(NULL, db_find(0, "{user1000}.1", 12));
	unlock_slot(0, 3443);
	ASSERT_EQ(49, count(0, 3443));
	for (int round = 0; round < 100 && count(0, 3443) > 25; round++)
		store_active_expire(0, 1, 100000);
	ASSERT_EQ(25, count(0, 3443));
	ASSERT_EQ(25, walk(0, 3443, &ok));
	ASSERT_TRUE(ok);
}

TEST_F(slot_index, flush_and_swap)
{
	set_key(0, "foo", -1);
	set_key(1, "{user1000}a", -1);
	set_key(1, "{user1000}b", -1);
	store_lock_all();
	db_swap(0, 1);
	store_unlock_all();
	ASSERT_EQ(2, count(0, 3443));
	ASSERT_EQ(0, count(0, 12182));
	ASSERT_EQ(1, count(1, 12182));
	/* Deleting after the swap unlinks from the swapped lists. */
	del_key(0, "{user1000}a");
	ASSERT_EQ(1, count(0, 3443));
	store_lock_all();
	ASSERT_EQ(1, db_flush(0));
	store_unlock_all();
	ASSERT_EQ(0, count(0, 3443));
	set_key(0, "{user1000}c", -1);
	ASSERT_EQ(1, count(0, 3443));
}

TEST_F(slot_index, slot_keys_delete)
{
	char key[64];

	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "{user1000}.%d", i);
		set_key(0, key, -1);
	}
	set_key(0, "foo", -1);
	ASSERT_EQ(1000, cluster_slot_keys_delete(3443));
	ASSERT_EQ(0, count(0, 3443));
	ASSERT_EQ(1, count(0, 12182));
	ASSERT_EQ(0, cluster_slot_keys_delete(3443));
	ASSERT_EQ(1, db_size(0));
}

/* With cluster mode off: no index, no link before the entry. */
TEST(no_index_when_off)
{
	size_t before = mem_used(), with;
	struct entry *e;

	config.cluster_enabled = false;
	store_init(1);
	ASSERT_FALSE(store_slot_index());
	e = set_key(0, "foo", -1);
	with = mem_used() - before;
	ASSERT_EQ(0, db_slot_count(0, 12182));
	ASSERT_EQ(NULL, db_slot_first(0, 12182));
	/* No link before the entry: its allocation starts at the entry
	 * (under any allocator, the sanitizer's too). */
	ASSERT_EQ(xusable(e), entry_mem(e));
	ASSERT_GT(with, 0);
	store_destroy();
}

TEST_HARNESS_MAIN
