// SPDX-License-Identifier: GPL-2.0-only
/*
 * The fast path's table of cached keys (fastpath_keys.h): records found by
 * hash and slot check, keys that share a hash, uncacheable markers, and
 * random adds and deletes (moving records back into holes, wrapping around
 * the table's end) checked against a plain array.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "fastpath_keys.h"
#include "mem.h"

#include "kselftest_harness.h"

/* A "key" is its slot number here: slot s holds key s. */
static bool holds_key(uint32_t slot, const void *ctx)
{
	return slot == *(const uint32_t *)ctx;
}

static int32_t find_slot(const struct fp_keys *k, uint32_t hash, uint32_t key)
{
	int64_t i = fp_keys_find(k, hash, holds_key, &key);

	return i < 0 ? FP_NONE : k->tab[i].slot;
}

TEST(shared_hashes_and_markers)
{
	struct fp_keys k = { 0 };

	ASSERT_EQ(FP_NONE, find_slot(&k, 7, 1));
	/* Three keys of one hash, and one that failed to index. */
	fp_keys_add(&k, 7, 1);
	fp_keys_add(&k, 7, 2);
	fp_keys_add(&k, 7, 3);
	ASSERT_EQ(1, find_slot(&k, 7, 1));
	ASSERT_EQ(3, find_slot(&k, 7, 3));
	ASSERT_EQ(FP_NONE, find_slot(&k, 7, 4));
	fp_keys_add(&k, 7, FP_UNCACHEABLE);
	/* A key of that hash with no slot of its own reads as uncacheable. */
	ASSERT_EQ(FP_UNCACHEABLE, find_slot(&k, 7, 4));
	ASSERT_EQ(2, find_slot(&k, 7, 2));
	fp_keys_remove(&k, 7, 2);
	ASSERT_EQ(FP_UNCACHEABLE, find_slot(&k, 7, 2));
	ASSERT_EQ(3, find_slot(&k, 7, 3));
	ASSERT_EQ(3u, k.count);
	fp_keys_remove(&k, 7, 1);
	fp_keys_remove(&k, 7, 3);
	fp_keys_remove(&k, 7, FP_UNCACHEABLE);
	/* Empty: no table kept. */
	ASSERT_EQ(0u, k.count);
	ASSERT_EQ(NULL, k.tab);
	fp_keys_clear(&k);
}

TEST(random_adds_and_deletes)
{
	enum { KEYS = 3000, STEPS = 200000 };
	static bool in[KEYS];
	static uint32_t hash[KEYS];
	struct fp_keys k = { 0 };
	uint32_t count = 0;

	srand(20);
	/* Few distinct hashes with shared low bits: long probe runs that
	 * wrap, many keys per hash. */
	for (uint32_t i = 0; i < KEYS; i++)
		hash[i] = (uint32_t)(rand() % 512) * 61;
	for (uint32_t step = 0; step < STEPS; step++) {
		uint32_t key = (uint32_t)rand() % KEYS;

		if (in[key]) {
			int64_t i = fp_keys_find(&k, hash[key], holds_key, &key);

			ASSERT_GE(i, 0);
			fp_keys_del(&k, (uint32_t)i);
			count--;
		} else {
			fp_keys_add(&k, hash[key], (int32_t)key);
			count++;
		}
		in[key] = !in[key];
		ASSERT_EQ(count, k.count);
		if (step % 997 == 0)
			for (uint32_t j = 0; j < KEYS; j++)
				ASSERT_EQ(in[j] ? (int32_t)j : FP_NONE, find_slot(&k, hash[j], j));
	}
	for (uint32_t j = 0; j < KEYS; j++)
		ASSERT_EQ(in[j] ? (int32_t)j : FP_NONE, find_slot(&k, hash[j], j));
	fp_keys_clear(&k);
	ASSERT_EQ(0u, k.count);
}

TEST_HARNESS_MAIN
