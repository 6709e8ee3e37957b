// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sorted set value (t_zset.h), through its C API: the order of scores and
 * tied members, ranks, spans and rank deletions in both encodings checked
 * against a brute-force sorted array, the conversion thresholds, scans, and
 * the object operations. Everything allocated is freed (the suite also runs
 * under AddressSanitizer).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_zset.h"

#include "kselftest_harness.h"

/* ---- a brute-force model ------------------------------------------------------------------- */

struct model_elem {
	char m[16];
	size_t len;
	double score;
};

struct model {
	struct model_elem v[4096];
	size_t n;
};

static int memb_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int r = n ? memcmp(a, b, n) : 0;

	return r ? r : (al > bl) - (al < bl);
}

static int model_cmp(const void *x, const void *y)
{
	const struct model_elem *a = x, *b = y;

	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	return memb_cmp(a->m, a->len, b->m, b->len);
}

static long model_find(const struct model *md, const char *m, size_t len)
{
	for (size_t i = 0; i < md->n; i++)
		if (md->v[i].len == len && !memcmp(md->v[i].m, m, len))
			return (long)i;
	return -1;
}

static void model_set(struct model *md, const char *m, size_t len, double score)
{
	long i = model_find(md, m, len);

	if (i < 0) {
		i = (long)md->n++;
		memcpy(md->v[i].m, m, len);
		md->v[i].len = len;
	}
	md->v[i].score = score;
	qsort(md->v, md->n, sizeof(md->v[0]), model_cmp);
}

static void model_del(struct model *md, size_t first, size_t end)
{
	memmove(&md->v[first], &md->v[end], (md->n - end) * sizeof(md->v[0]));
	md->n -= end - first;
}

/* Does the set hold exactly the model's elements, in its order, forwards
 * and backwards, with the right ranks? */
static int same_as_model(const struct obj *o, const struct model *md)
{
	struct zset_iter it;
	struct zset_elem el;
	size_t i = 0;

	if (zset_check(o) != 0)
		return zset_check(o);
	if (zset_len(o) != md->n)
		return -1;
	zset_iter_init(&it, o, 0, false);
	while (zset_iter_next(&it, &el)) {
		if (i >= md->n || el.len != md->v[i].len || memcmp(el.m, md->v[i].m, el.len) ||
		    el.score != md->v[i].score)
			return -2;
		if (zset_rank(o, el.m, el.len, NULL) != (long long)i)
			return -3;
		i++;
	}
	if (i != md->n)
		return -4;
	if (md->n) {
		zset_iter_init(&it, o, md->n - 1, true);
		while (zset_iter_next(&it, &el)) {
			i--;
			if (el.len != md->v[i].len || memcmp(el.m, md->v[i].m, el.len))
				return -5;
		}
		if (i != 0)
			return -6;
	}
	return 0;
}

static uint64_t rng_state = 0x1234567887654321ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void set_limits(long long entries, long long value)
{
	config.zset_max_listpack_entries = entries;
	config.zset_max_listpack_value = value;
}

static void add(struct obj *o, double score, const char *m)
{
	zset_add(o, score, m, strlen(m), 0, NULL);
}

/* ---- order ----------------------------------------------------------------------------------- */

/* Ties are ordered by member bytes, a prefix before its extensions, and
 * NUL and high bytes compared unsigned, in both encodings. */
static void check_tie_order(struct __test_metadata *_metadata, long long entries)
{
	static const char *const want[] = { "", "a", "a\x00", "ab", "b", "\xff" };
	const char *members[] = { "b", "\xff", "", "ab", "a" };
	struct zset_iter it;
	struct zset_elem el;
	struct obj o;
	size_t i = 0;

	set_limits(entries, 64);
	o = zset_new(1, 1);
	for (size_t k = 0; k < 5; k++)
		add(&o, 7, members[k]);
	zset_add(&o, 7, "a\x00", 2, 0, NULL);
	add(&o, -INFINITY, "zz");
	add(&o, INFINITY, "aa");
	ASSERT_EQ(0, zset_check(&o));
	ASSERT_EQ(8, zset_len(&o));

	zset_iter_init(&it, &o, 0, false);
	ASSERT_TRUE(zset_iter_next(&it, &el));
	ASSERT_EQ(-INFINITY, el.score);
	for (i = 0; i < 6; i++) {
		size_t len = i == 2 ? 2 : strlen(want[i]);

		ASSERT_TRUE(zset_iter_next(&it, &el));
		ASSERT_EQ(7, el.score);
		ASSERT_EQ(len, el.len);
		ASSERT_EQ(0, memcmp(want[i], el.m, len));
	}
	ASSERT_TRUE(zset_iter_next(&it, &el));
	ASSERT_EQ(INFINITY, el.score);
	ASSERT_FALSE(zset_iter_next(&it, &el));
	obj_free(&o);
}

TEST(tie_order_packed)
{
	check_tie_order(_metadata, 128);
}

TEST(tie_order_skiplist)
{
	check_tie_order(_metadata, 0);
}

/* ---- ZADD semantics ------------------------------------------------------------------------- */

static void check_add_flags(struct __test_metadata *_metadata, long long entries)
{
	double s = 0;
	struct obj o;

	set_limits(entries, 64);
	o = zset_new(1, 1);
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 1, "a", 1, ZADD_XX, &s));
	ASSERT_EQ(0, zset_len(&o));
	ASSERT_EQ(ZADD_ADDED, zset_add(&o, 1, "a", 1, ZADD_GT, &s));
	ASSERT_EQ(1, s);
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 2, "a", 1, ZADD_NX, &s));
	ASSERT_EQ(ZADD_SAME, zset_add(&o, 1, "a", 1, 0, &s));
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 0, "a", 1, ZADD_GT, &s));
	ASSERT_EQ(ZADD_UPDATED, zset_add(&o, 5, "a", 1, ZADD_GT | ZADD_XX, &s));
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 6, "a", 1, ZADD_LT, &s));
	ASSERT_EQ(ZADD_UPDATED, zset_add(&o, 2.5, "a", 1, ZADD_INCR, &s));
	ASSERT_EQ(7.5, s);
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 1, "a", 1, ZADD_INCR | ZADD_LT, &s));
	ASSERT_EQ(ZADD_UPDATED, zset_add(&o, INFINITY, "a", 1, ZADD_INCR, &s));
	ASSERT_EQ(ZADD_NAN, zset_add(&o, -INFINITY, "a", 1, ZADD_INCR, &s));
	ASSERT_TRUE(zset_score(&o, "a", 1, &s));
	ASSERT_EQ(INFINITY, s);
	ASSERT_FALSE(zset_score(&o, "b", 1, &s));
	ASSERT_EQ(-1, zset_rank(&o, "b", 1, NULL));
	ASSERT_TRUE(zset_del(&o, "a", 1));
	ASSERT_FALSE(zset_del(&o, "a", 1));
	ASSERT_EQ(0, zset_check(&o));
	obj_free(&o);
}

TEST(add_flags_packed)
{
	check_add_flags(_metadata, 128);
}

TEST(add_flags_skiplist)
{
	check_add_flags(_metadata, 0);
}

/* A packed set cannot keep -0 (Redis's listpack stores it as the integer 0);
 * a skiplist keeps it. */
TEST(negative_zero)
{
	struct obj o;
	double s;

	set_limits(128, 64);
	o = zset_new(1, 1);
	add(&o, -0.0, "a");
	ASSERT_TRUE(zset_score(&o, "a", 1, &s));
	ASSERT_EQ(0, signbit(s));
	obj_free(&o);

	set_limits(0, 64);
	o = zset_new(1, 1);
	add(&o, -0.0, "a");
	ASSERT_TRUE(zset_score(&o, "a", 1, &s));
	ASSERT_NE(0, signbit(s));
	obj_free(&o);
}

/* ---- randomized comparison with the model ----------------------------------------------------- */

/* Random adds, score updates (with ties), deletions and rank deletions on a
 * set of up to ~600 members, checked against the model after every step;
 * spans of random score ranges too. */
static void random_ops(struct __test_metadata *_metadata, long long entries, int steps)
{
	static struct model md;
	struct obj o;
	char m[16];

	set_limits(entries, 64);
	md.n = 0;
	o = zset_new(1, 1);
	for (int step = 0; step < steps; step++) {
		int op = (int)(rng() % 100);
		size_t len = (size_t)snprintf(m, sizeof(m), "m%u", (unsigned)(rng() % 600));
		double score = (double)(rng() % 50) / 2 - 10;

		if (rng() % 40 == 0)
			score = rng() % 2 ? INFINITY : -INFINITY;
		if (op < 60) {
			zset_add(&o, score, m, len, 0, NULL);
			model_set(&md, m, len, score);
		} else if (op < 85) {
			long i = model_find(&md, m, len);

			ASSERT_EQ(i >= 0, zset_del(&o, m, len));
			if (i >= 0)
				model_del(&md, (size_t)i, (size_t)i + 1);
		} else if (op < 88 && md.n) {
			size_t first = rng() % md.n, end = first + rng() % 4;

			if (end > md.n)
				end = md.n;
			ASSERT_EQ(end - first, zset_del_ranks(&o, first, end));
			model_del(&md, first, end);
		} else {
			struct zscore_range r = { .min = score,
						  .max = score + (double)(rng() % 8),
						  .minex = rng() % 2,
						  .maxex = rng() % 2 };
			size_t first, end, want_first = 0, want_end;

			zset_score_span(&o, &r, &first, &end);
			while (want_first < md.n && (r.minex ? md.v[want_first].score <= r.min
							     : md.v[want_first].score < r.min))
				want_first++;
			want_end = want_first;
			while (want_end < md.n && (r.maxex ? md.v[want_end].score < r.max
							   : md.v[want_end].score <= r.max))
				want_end++;
			ASSERT_EQ(want_first, first);
			ASSERT_EQ(want_end, end);
		}
		if (step % 50 == 0 || step == steps - 1) {
			ASSERT_EQ(0, same_as_model(&o, &md));
		} else {
			ASSERT_EQ(0, zset_check(&o));
		}
	}
	for (size_t r = 0; r < md.n; r += 7) {
		struct zset_elem el;

		ASSERT_TRUE(zset_at(&o, r, &el));
		ASSERT_EQ(md.v[r].score, el.score);
	}
	obj_free(&o);
}

TEST(random_vs_model_skiplist)
{
	random_ops(_metadata, 0, 6000);
}

TEST(random_vs_model_packed)
{
	/* Large limits keep the set packed throughout. */
	random_ops(_metadata, 100000, 3000);
}

TEST(random_vs_model_converting)
{
	random_ops(_metadata, 128, 4000);
}

/* Rank deletions of whole runs, including the tail and everything. */
TEST(delete_rank_runs)
{
	static struct model md;
	struct obj o;
	char m[16];

	set_limits(0, 64);
	md.n = 0;
	o = zset_new(1, 1);
	for (int i = 0; i < 1000; i++) {
		size_t len = (size_t)snprintf(m, sizeof(m), "k%d", i);

		zset_add(&o, (double)(i % 10), m, len, 0, NULL);
		model_set(&md, m, len, (double)(i % 10));
	}
	ASSERT_EQ(0, same_as_model(&o, &md));
	ASSERT_EQ(100, zset_del_ranks(&o, 900, 2000));
	model_del(&md, 900, 1000);
	ASSERT_EQ(0, same_as_model(&o, &md));
	ASSERT_EQ(300, zset_del_ranks(&o, 100, 400));
	model_del(&md, 100, 400);
	ASSERT_EQ(0, same_as_model(&o, &md));
	ASSERT_EQ(0, zset_del_ranks(&o, 10, 10));
	ASSERT_EQ(600, zset_del_ranks(&o, 0, 600));
	ASSERT_EQ(0, zset_len(&o));
	ASSERT_EQ(0, zset_check(&o));
	obj_free(&o);
}

/* ---- lex ranges ------------------------------------------------------------------------------ */

static void check_lex(struct __test_metadata *_metadata, long long entries)
{
	static const char *const members[] = { "a", "b", "ba", "c", "d" };
	struct zlex_range r;
	size_t first, end;
	struct obj o;

	set_limits(entries, 64);
	o = zset_new(1, 1);
	for (size_t i = 0; i < 5; i++)
		add(&o, 0, members[i]);

	r.min = (struct zlex_bound){ .kind = ZLEX_NEG_INF };
	r.max = (struct zlex_bound){ .kind = ZLEX_POS_INF };
	zset_lex_span(&o, &r, &first, &end);
	ASSERT_EQ(0, first);
	ASSERT_EQ(5, end);

	r.min = (struct zlex_bound){ .kind = ZLEX_INCL, .p = "b", .len = 1 };
	r.max = (struct zlex_bound){ .kind = ZLEX_EXCL, .p = "c", .len = 1 };
	zset_lex_span(&o, &r, &first, &end);
	ASSERT_EQ(1, first);
	ASSERT_EQ(3, end);

	r.min = (struct zlex_bound){ .kind = ZLEX_EXCL, .p = "b", .len = 1 };
	r.max = (struct zlex_bound){ .kind = ZLEX_INCL, .p = "c", .len = 1 };
	zset_lex_span(&o, &r, &first, &end);
	ASSERT_EQ(2, first);
	ASSERT_EQ(4, end);

	/* An inverted range is empty. */
	r.min = (struct zlex_bound){ .kind = ZLEX_INCL, .p = "d", .len = 1 };
	r.max = (struct zlex_bound){ .kind = ZLEX_INCL, .p = "a", .len = 1 };
	zset_lex_span(&o, &r, &first, &end);
	ASSERT_EQ(first, end);

	r.min = (struct zlex_bound){ .kind = ZLEX_POS_INF };
	r.max = (struct zlex_bound){ .kind = ZLEX_POS_INF };
	zset_lex_span(&o, &r, &first, &end);
	ASSERT_EQ(first, end);
	obj_free(&o);
}

TEST(lex_packed)
{
	check_lex(_metadata, 128);
}

TEST(lex_skiplist)
{
	check_lex(_metadata, 0);
}

/* ---- encodings ------------------------------------------------------------------------------- */

TEST(convert_at_entries_threshold)
{
	char m[16];
	struct obj o;

	set_limits(128, 64);
	o = zset_new(1, 1);
	for (int i = 0; i < 128; i++)
		zset_add(&o, i, m, (size_t)snprintf(m, sizeof(m), "m%d", i), 0, NULL);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	/* Updating or incrementing an existing member does not convert. */
	zset_add(&o, 1000, "m5", 2, ZADD_INCR, NULL);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(ZADD_SKIPPED, zset_add(&o, 1, "new", 3, ZADD_XX, NULL));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	zset_add(&o, 5, "m128", 4, 0, NULL);
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	ASSERT_EQ(129, zset_len(&o));
	ASSERT_EQ(0, zset_check(&o));
	ASSERT_EQ(128, zset_rank(&o, "m5", 2, NULL));
	/* Never back, even when emptied down to one element. */
	ASSERT_EQ(128, zset_del_ranks(&o, 0, 128));
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	ASSERT_EQ(0, zset_check(&o));
	obj_free(&o);
}

TEST(convert_at_value_threshold)
{
	char big[66];
	struct obj o;

	memset(big, 'x', sizeof(big));
	set_limits(128, 64);
	o = zset_new(1, 1);
	zset_add(&o, 1, big, 64, 0, NULL);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	zset_add(&o, 2, big, 65, 0, NULL);
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	ASSERT_EQ(2, zset_len(&o));
	ASSERT_EQ(1, zset_rank(&o, big, 65, NULL));
	ASSERT_EQ(0, zset_check(&o));
	obj_free(&o);
}

TEST(new_chooses_encoding)
{
	struct obj o;

	set_limits(128, 64);
	o = zset_new(128, 64);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	obj_free(&o);
	o = zset_new(129, 1);
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	obj_free(&o);
	o = zset_new(1, 65);
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	obj_free(&o);
	set_limits(0, 64);
	o = zset_new(1, 1);
	ASSERT_EQ(ENC_SKIPLIST, o.enc);
	ASSERT_STREQ("skiplist", obj_encoding_name(&o));
	ASSERT_STREQ("zset", obj_type_name(&o));
	obj_free(&o);
}

/* ---- object operations and scans ----------------------------------------------------------- */

static void check_dup(struct __test_metadata *_metadata, long long entries)
{
	struct zset_iter a, b;
	struct zset_elem x, y;
	struct obj o, copy;
	char m[16];

	set_limits(entries, 64);
	o = zset_new(1, 1);
	for (int i = 0; i < 300; i++)
		zset_add(&o, i % 7, m, (size_t)snprintf(m, sizeof(m), "d%d", i), 0, NULL);
	copy = obj_dup(&o);
	ASSERT_EQ(o.enc, copy.enc);
	ASSERT_EQ(0, zset_check(&copy));
	ASSERT_TRUE(obj_mem(&copy) > 300);
	zset_iter_init(&a, &o, 0, false);
	zset_iter_init(&b, &copy, 0, false);
	while (zset_iter_next(&a, &x)) {
		ASSERT_TRUE(zset_iter_next(&b, &y));
		ASSERT_EQ(x.len, y.len);
		ASSERT_EQ(0, memcmp(x.m, y.m, x.len));
		ASSERT_EQ(x.score, y.score);
		ASSERT_NE(x.m, y.m);
	}
	ASSERT_FALSE(zset_iter_next(&b, &y));
	/* The copy is independent. */
	zset_del_ranks(&o, 0, 300);
	ASSERT_EQ(300, zset_len(&copy));
	obj_free(&o);
	obj_free(&copy);
}

TEST(dup_packed)
{
	check_dup(_metadata, 1000);
}

TEST(dup_skiplist)
{
	check_dup(_metadata, 0);
}

struct seen {
	unsigned char hits[2000];
	size_t calls;
};

static void count_seen(void *ctx, const struct zset_elem *el)
{
	struct seen *s = ctx;
	char num[16];

	/* Members are not NUL-terminated. */
	memcpy(num, el->m + 1, el->len - 1);
	num[el->len - 1] = '\0';
	s->hits[atoi(num)]++;
	s->calls++;
}

/* A full ZSCAN iteration of a skiplist set returns every member; members
 * added or removed during it may or may not appear. */
TEST(scan_skiplist)
{
	struct seen s = { 0 };
	uint64_t cursor = 0;
	struct obj o;
	char m[16];
	int rounds = 0;

	set_limits(0, 64);
	o = zset_new(1, 1);
	for (int i = 0; i < 1000; i++)
		zset_add(&o, i, m, (size_t)snprintf(m, sizeof(m), "s%d", i), 0, NULL);
	do {
		cursor = zset_scan(&o, cursor, 10, count_seen, &s);
		/* Grow the table mid-iteration. */
		if (++rounds == 5)
			for (int i = 1000; i < 2000; i++)
				zset_add(&o, i, m, (size_t)snprintf(m, sizeof(m), "s%d", i), 0,
					 NULL);
	} while (cursor);
	for (int i = 0; i < 1000; i++)
		ASSERT_NE(0, s.hits[i]);
	ASSERT_TRUE(rounds > 10);
	obj_free(&o);
}

TEST(scan_packed_whole)
{
	struct seen s = { 0 };
	struct obj o;
	char m[16];

	set_limits(128, 64);
	o = zset_new(1, 1);
	for (int i = 0; i < 100; i++)
		zset_add(&o, i, m, (size_t)snprintf(m, sizeof(m), "s%d", i), 0, NULL);
	ASSERT_EQ(0, zset_scan(&o, 12345, 1, count_seen, &s));
	ASSERT_EQ(100, s.calls);
	obj_free(&o);
}

TEST_HARNESS_MAIN
