// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sparse array (t_array.h): values round-trip as written, a random mix
 * of sets, deletes and range deletes agrees with a plain model, walks visit
 * exactly the values in range in either direction, and memory accounting
 * comes back to the empty array's once everything is deleted.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_array.h"

#include "kselftest_harness.h"

/* The model: a few hundred indices spread over flat and superdir ranges. */
#define NIDX 600
static uint64_t idx_at(unsigned i)
{
	static const uint64_t bases[] = { 0, 4090, 70000, 4096ULL * 2048 - 3, 1ULL << 40 };

	return bases[i % 5] + (i / 5) * 37;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct walk_check {
	uint64_t last;
	bool rev, first;
	uint64_t n;
};

static bool ordered(void *ctx, uint64_t idx, ar_value v)
{
	struct walk_check *w = ctx;

	(void)v;
	if (!w->first && (w->rev ? idx >= w->last : idx <= w->last))
		return false;
	w->first = false;
	w->last = idx;
	w->n++;
	return true;
}

FIXTURE(array)
{
	struct obj o;
};

FIXTURE_SETUP(array)
{
	config_init(); /* array-slice-size 4096, kmax 10, kmin 5 */
	self->o = array_new();
}

FIXTURE_TEARDOWN(array)
{
	obj_free(&self->o);
}

TEST_F(array, values_read_back_as_written)
{
	static const char *const vals[] = { "0",
					    "-7",
					    "2305843009213693951",
					    "2305843009213693952",
					    "1.5",
					    "1.0",
					    "-0.0",
					    "0.1",
					    "",
					    "abcdefg",
					    "abcdefgh",
					    "1e5",
					    "007",
					    "+1" };
	struct array *a = array_of(&self->o);

	for (unsigned i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		array_set(a, i * 1000, ar_encode(vals[i], strlen(vals[i])));
	for (unsigned i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		char buf[AR_VALUE_BUF];
		size_t len;
		const char *p = ar_decode(array_get(a, i * 1000), buf, &len);

		ASSERT_EQ(strlen(vals[i]), len);
		ASSERT_EQ(0, memcmp(p, vals[i], len));
	}
	EXPECT_EQ(AR_KIND_INT, ar_kind(array_get(a, 0)));
	EXPECT_EQ(AR_KIND_STRING, ar_kind(array_get(a, 3000))); /* past 62 bits */
	EXPECT_EQ(AR_KIND_FLOAT, ar_kind(array_get(a, 4000)));
	EXPECT_EQ(AR_KIND_SMALL, ar_kind(array_get(a, 7000))); /* 0.1 does not round-trip */
	EXPECT_EQ(AR_KIND_SMALL, ar_kind(array_get(a, 9000)));
	EXPECT_EQ(AR_KIND_STRING, ar_kind(array_get(a, 10000)));
}

TEST_F(array, random_operations_match_a_model)
{
	struct array *a = array_of(&self->o);
	static char model[NIDX]; /* 0: hole, else the value's digit */
	size_t empty = obj_mem(&self->o);

	for (int step = 0; step < 20000; step++) {
		unsigned i = (unsigned)(next_rand() % NIDX), j = (unsigned)(next_rand() % NIDX);
		uint64_t r = next_rand() % 10;

		if (r < 6) {
			char v = (char)('0' + next_rand() % 10);

			array_set(a, idx_at(i), ar_encode(&v, 1));
			model[i] = v;
		} else if (r < 9) {
			ASSERT_EQ(model[i] != 0, array_del(a, idx_at(i)));
			model[i] = 0;
		} else {
			uint64_t lo = idx_at(i) < idx_at(j) ? idx_at(i) : idx_at(j);
			uint64_t hi = idx_at(i) < idx_at(j) ? idx_at(j) : idx_at(i), want = 0;

			for (unsigned k = 0; k < NIDX; k++)
				if (model[k] && idx_at(k) >= lo && idx_at(k) <= hi) {
					want++;
					model[k] = 0;
				}
			ASSERT_EQ(want, array_del_range(a, lo, hi));
		}
		if (step % 500 == 0) {
			uint64_t count = 0, len = 0;
			struct walk_check fw = { .first = true },
					  bw = { .first = true, .rev = true };

			for (unsigned k = 0; k < NIDX; k++) {
				char buf[AR_VALUE_BUF];
				size_t n;
				ar_value v = array_get(a, idx_at(k));

				ASSERT_EQ(model[k] != 0, v != 0);
				if (v) {
					ASSERT_EQ(model[k], ar_decode(v, buf, &n)[0]);
					count++;
					if (idx_at(k) + 1 > len)
						len = idx_at(k) + 1;
				}
			}
			ASSERT_EQ(count, array_count(a));
			ASSERT_EQ(len, array_len(a));
			array_walk(a, 0, UINT64_MAX - 1, ordered, &fw);
			array_walk(a, UINT64_MAX - 1, 0, ordered, &bw);
			ASSERT_EQ(count, fw.n);
			ASSERT_EQ(count, bw.n);
		}
	}
	array_del_range(a, 0, UINT64_MAX - 1);
	ASSERT_EQ(0, array_count(a));
	/* Directories and slices are gone (the superdir's array may stay). */
	ASSERT_GE(empty + 256, obj_mem(&self->o));
}

TEST_F(array, walk_bounds_cut_inside_slices)
{
	struct array *a = array_of(&self->o);
	struct walk_check w = { .first = true };

	for (uint64_t i = 0; i < 10000; i += 3)
		array_set(a, i, ar_encode("x", 1));
	array_walk(a, 10, 4100, ordered, &w);
	ASSERT_EQ((4098 - 12) / 3 + 1, w.n); /* 12, 15, ..., 4098 */
	w = (struct walk_check){ .first = true, .rev = true };
	array_walk(a, 4100, 10, ordered, &w);
	ASSERT_EQ((4098 - 12) / 3 + 1, w.n);
}

TEST_F(array, ring_rework_keeps_the_latest)
{
	struct array *a = array_of(&self->o);
	char buf[AR_VALUE_BUF];
	size_t len;

	/* A ring of 5 written 0..7: positions 0..4 hold 5 6 7 3 4, cursor 2. */
	for (int v = 0; v < 8; v++) {
		char c = (char)('0' + v);

		array_set(a, (uint64_t)v % 5, ar_encode(&c, 1));
		array_set_insert_idx(a, (uint64_t)v % 5);
	}
	array_ring_rework(a, 5, 3);
	ASSERT_EQ(3, array_count(a));
	ASSERT_EQ(2, array_insert_idx(a));
	ASSERT_EQ('5', ar_decode(array_get(a, 0), buf, &len)[0]);
	ASSERT_EQ('7', ar_decode(array_get(a, 2), buf, &len)[0]);
}

TEST_HARNESS_MAIN
