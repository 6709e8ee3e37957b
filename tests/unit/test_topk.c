// SPDX-License-Identifier: GPL-2.0-only
/*
 * The space-saving summary behind HOTKEYS (topk.h): exact counts while the
 * keys fit, the heavy key kept among many light ones, the over-count bound,
 * ties and zero weights, and memory that stays fixed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "topk.h"

#include "kselftest_harness.h"

static void add(struct topk *t, const char *key, uint64_t w)
{
	topk_add(t, key, strlen(key), w);
}

static void free_list(struct topk_entry *e, int n)
{
	for (int i = 0; i < n; i++)
		xfree(e[i].key);
}

TEST(exact_while_the_keys_fit)
{
	struct topk t;
	struct topk_entry out[8];
	int n;

	topk_init(&t, 4);
	add(&t, "a", 5);
	add(&t, "b", 7);
	add(&t, "a", 5);
	add(&t, "c", 1);
	add(&t, "", 3); /* the empty key is a key */
	n = topk_list(&t, 8, out);
	ASSERT_EQ(4, n);
	ASSERT_EQ(10, out[0].count);
	ASSERT_EQ(1, out[0].len);
	ASSERT_EQ('a', out[0].key[0]);
	ASSERT_EQ(7, out[1].count);
	ASSERT_EQ(3, out[2].count);
	ASSERT_EQ(0, out[2].len);
	ASSERT_EQ(1, out[3].count);
	ASSERT_EQ(21, t.total);
	free_list(out, n);
	/* k below the keys held: only the heaviest. */
	n = topk_list(&t, 1, out);
	ASSERT_EQ(1, n);
	ASSERT_EQ(10, out[0].count);
	free_list(out, n);
	topk_free(&t);
}

TEST(the_heavy_key_survives_many_light_ones)
{
	struct topk t;
	struct topk_entry out[3];
	char key[32];
	size_t mem;
	int n;

	topk_init(&t, 10);
	mem = topk_memory(&t);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "cold:%d", i);
		add(&t, key, 1);
		if (i % 5 == 0)
			add(&t, "hot", 1);
	}
	n = topk_list(&t, 3, out);
	ASSERT_GE(n, 1);
	ASSERT_EQ(3, out[0].len);
	ASSERT_EQ(0, memcmp(out[0].key, "hot", 3));
	/* 1000 of 6000, above total / cap: always held, never
	 * under-counted, over by at most what it displaced (the minimum, at
	 * most total / cap). */
	ASSERT_GE(out[0].count, 1000);
	ASSERT_LE(out[0].count, 1000 + t.total / 10);
	free_list(out, n);
	ASSERT_EQ(10, t.n);
	/* Only the keys' bytes may grow the summary, never its tables. */
	ASSERT_LE(topk_memory(&t), mem + 10 * 16);
	topk_free(&t);
}

TEST(zero_weights_are_not_listed)
{
	struct topk t;
	struct topk_entry out[4];
	int n;

	topk_init(&t, 4);
	add(&t, "x", 0);
	add(&t, "y", 2);
	n = topk_list(&t, 4, out);
	ASSERT_EQ(1, n);
	ASSERT_EQ('y', out[0].key[0]);
	free_list(out, n);
	topk_free(&t);
}

TEST(replacement_keeps_the_hash_consistent)
{
	struct topk t;
	struct topk_entry out[2];
	char key[16];
	int n;

	/* Capacity 2: every new key evicts; re-adding an evicted key must
	 * find no stale entry, and a held key must still be found. */
	topk_init(&t, 2);
	add(&t, "keep", 1000);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 50; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			add(&t, key, 1);
		}
	add(&t, "keep", 1);
	n = topk_list(&t, 2, out);
	ASSERT_EQ(2, n);
	ASSERT_EQ(0, memcmp(out[0].key, "keep", 4));
	ASSERT_EQ(1001, out[0].count);
	/* The other place went to the newest key, from the count it displaced:
	 * 150 light adds, 150. */
	ASSERT_EQ(150, out[1].count);
	ASSERT_EQ(2, t.n);
	free_list(out, n);
	topk_free(&t);
}

TEST_HARNESS_MAIN
