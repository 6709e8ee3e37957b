// SPDX-License-Identifier: GPL-2.0-only
/*
 * The set type (t_set.h): each encoding's add/remove/membership, every
 * conversion at Redis 7.2's thresholds (intset -> listpack, intset ->
 * hashtable, listpack -> hashtable) and that none goes back, random members
 * and SPOP, copies, and the SSCAN guarantee on a table resized mid-scan.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_set.h"
#include "util.h"

#include "kselftest_harness.h"

static int add(struct obj *o, const char *s)
{
	return set_add(o, s, strlen(s));
}

static int rem(struct obj *o, const char *s)
{
	return set_remove(o, s, strlen(s));
}

static bool has(const struct obj *o, const char *s)
{
	return set_contains(o, s, strlen(s));
}

static int add_ll(struct obj *o, long long v)
{
	char buf[LL_STR_SIZE + 1];

	return set_add(o, buf, (size_t)ll_to_str(buf, v));
}

static bool has_ll(const struct obj *o, long long v)
{
	char buf[LL_STR_SIZE + 1];

	return set_contains(o, buf, (size_t)ll_to_str(buf, v));
}

/* "m<i>": members that are not integers. */
static int add_str(struct obj *o, int i)
{
	char buf[32];

	return set_add(o, buf, (size_t)snprintf(buf, sizeof(buf), "m%d", i));
}

static int rem_str(struct obj *o, int i)
{
	char buf[32];

	return set_remove(o, buf, (size_t)snprintf(buf, sizeof(buf), "m%d", i));
}

static bool has_str(const struct obj *o, int i)
{
	char buf[32];

	return set_contains(o, buf, (size_t)snprintf(buf, sizeof(buf), "m%d", i));
}

static size_t iter_count(const struct obj *o)
{
	struct set_iter it;
	const char *p;
	size_t len, n = 0;

	set_iter_init(&it, o);
	while (set_iter_next(&it, &p, &len)) {
		if (!set_contains(o, p, len))
			return SIZE_MAX;
		n++;
	}
	return n;
}

/* Members handed to a set_member_fn, gathered into a hash-table set (for
 * distinctness) and counted (for repeats). */
struct gather {
	const struct obj *from; /* every member must belong to it */
	struct obj seen;
	uint64_t calls;
	bool stray; /* a member not in `from` */
};

static void gather_init(struct gather *g, const struct obj *from)
{
	g->from = from;
	g->seen = set_new("x", 1, 1000); /* a hash table from the start */
	g->calls = 0;
	g->stray = false;
}

static void gather_fn(void *ctx, const char *p, size_t len)
{
	struct gather *g = ctx;

	g->calls++;
	if (g->from && !set_contains(g->from, p, len))
		g->stray = true;
	set_add(&g->seen, p, len);
}

FIXTURE(set)
{
	struct obj o;
	size_t mem_at_start; /* every byte allocated by a test is freed by its end */
};

FIXTURE_SETUP(set)
{
	self->mem_at_start = mem_used();
	config_init(); /* set-max-intset-entries 512, -listpack-entries 128, -value 64 */
	self->o = set_new(NULL, 0, 0);
}

FIXTURE_TEARDOWN(set)
{
	obj_free(&self->o);
	config_free();
	EXPECT_EQ(self->mem_at_start, mem_used());
}

TEST_F(set, new_follows_hints)
{
	struct obj a = set_new("12", 2, 1), b = set_new("a", 1, 1), c = set_new("a", 1, 129);
	struct obj d = set_new("12", 2, 513), e = set_new("12", 2, 512);

	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(ENC_INTSET, a.enc);
	ASSERT_EQ(ENC_LISTPACK, b.enc);
	ASSERT_EQ(ENC_HASHTABLE, c.enc);
	ASSERT_EQ(ENC_HASHTABLE, d.enc); /* too many for an intset or a listpack */
	ASSERT_EQ(ENC_INTSET, e.enc);
	ASSERT_EQ(OBJ_SET, a.type);
	ASSERT_EQ(0, set_size(&c));
	ASSERT_EQ(0, strcmp("set", obj_type_name(&a)));
	ASSERT_EQ(0, strcmp("intset", obj_encoding_name(&a)));
	ASSERT_EQ(0, strcmp("listpack", obj_encoding_name(&b)));
	ASSERT_EQ(0, strcmp("hashtable", obj_encoding_name(&c)));
	obj_free(&a);
	obj_free(&b);
	obj_free(&c);
	obj_free(&d);
	obj_free(&e);
}

TEST_F(set, intset_widths_and_order)
{
	/* Each width's bounds, and values just past them. */
	static const long long vals[] = {
		5,     -3,     40000,	     -40000,	0,	   32767,	  -32768,
		32768, -32769, 3000000000LL, INT64_MAX, INT64_MIN, -2147483649LL, 7,
	};
	const size_t n = sizeof(vals) / sizeof(vals[0]);
	struct set_iter it;
	long long prev = 0, v;
	const char *p;
	size_t len, k = 0;

	for (size_t i = 0; i < n; i++) {
		ASSERT_EQ(1, add_ll(&self->o, vals[i]));
		ASSERT_EQ(0, add_ll(&self->o, vals[i]));
		/* Every earlier member survives each widening. */
		for (size_t j = 0; j <= i; j++)
			ASSERT_TRUE(has_ll(&self->o, vals[j]));
	}
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(n, set_size(&self->o));
	ASSERT_FALSE(has_ll(&self->o, 6));
	/* Not canonical integers, so not members (and not the same as 5). */
	ASSERT_FALSE(has(&self->o, "05"));
	ASSERT_FALSE(has(&self->o, "+5"));
	ASSERT_FALSE(has(&self->o, " 5"));
	ASSERT_FALSE(has(&self->o, "-0"));
	ASSERT_FALSE(has(&self->o, "9223372036854775808"));

	/* An intset iterates in ascending order. */
	set_iter_init(&it, &self->o);
	while (set_iter_next(&it, &p, &len)) {
		ASSERT_TRUE(str_to_ll(p, len, &v));
		if (k++)
			ASSERT_LT(prev, v);
		prev = v;
	}
	ASSERT_EQ(n, k);

	ASSERT_EQ(0, rem(&self->o, "x"));
	for (size_t i = 0; i < n; i += 2) {
		char buf[LL_STR_SIZE + 1];

		ASSERT_EQ(1, set_remove(&self->o, buf, (size_t)ll_to_str(buf, vals[i])));
		ASSERT_EQ(0, set_remove(&self->o, buf, (size_t)ll_to_str(buf, vals[i])));
	}
	ASSERT_EQ(n / 2, set_size(&self->o));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i % 2 == 1, has_ll(&self->o, vals[i]));
	ASSERT_EQ(ENC_INTSET, self->o.enc);
}

TEST_F(set, intset_to_listpack_on_a_string)
{
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(1, add_ll(&self->o, i * 1000));
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(1, add(&self->o, "hello"));
	ASSERT_EQ(ENC_LISTPACK, self->o.enc);
	ASSERT_EQ(101, set_size(&self->o));
	for (int i = 0; i < 100; i++)
		ASSERT_TRUE(has_ll(&self->o, i * 1000));
	ASSERT_TRUE(has(&self->o, "hello"));
	/* Integers are still members, found by their text. */
	ASSERT_EQ(0, add(&self->o, "5000"));
	ASSERT_EQ(1, add(&self->o, "5001"));
	ASSERT_EQ(101 + 1, iter_count(&self->o));
}

TEST_F(set, intset_to_hashtable_past_512)
{
	for (int i = 0; i < 512; i++)
		ASSERT_EQ(1, add_ll(&self->o, i));
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(0, add_ll(&self->o, 511)); /* a duplicate does not convert */
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(1, add_ll(&self->o, 512));
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);
	ASSERT_EQ(513, set_size(&self->o));
	for (int i = 0; i <= 512; i++)
		ASSERT_TRUE(has_ll(&self->o, i));
	ASSERT_EQ(513, iter_count(&self->o));
}

TEST_F(set, intset_to_hashtable_on_a_string_when_too_big_for_listpack)
{
	struct obj o2 = set_new(NULL, 0, 0);
	char long_member[66];

	/* 128 integers: a listpack could not take one more member. */
	for (int i = 0; i < 128; i++)
		add_ll(&self->o, i);
	ASSERT_EQ(1, add(&self->o, "x"));
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);
	ASSERT_EQ(129, set_size(&self->o));

	/* A member longer than set-max-listpack-value. */
	add_ll(&o2, 1);
	memset(long_member, 'a', 65);
	long_member[65] = '\0';
	ASSERT_EQ(1, add(&o2, long_member));
	ASSERT_EQ(ENC_HASHTABLE, o2.enc);
	ASSERT_TRUE(has(&o2, long_member));
	ASSERT_TRUE(has_ll(&o2, 1));
	obj_free(&o2);
}

TEST_F(set, listpack_to_hashtable_past_128)
{
	struct obj o = set_new("m0", 2, 1);

	ASSERT_EQ(ENC_LISTPACK, o.enc);
	for (int i = 0; i < 128; i++)
		ASSERT_EQ(1, add_str(&o, i));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(0, add_str(&o, 127));
	ASSERT_EQ(1, add_ll(&o, 5)); /* integers join a listpack as text */
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_EQ(129, set_size(&o));
	for (int i = 0; i < 128; i++)
		ASSERT_TRUE(has_str(&o, i));
	ASSERT_TRUE(has_ll(&o, 5));
	obj_free(&o);
}

TEST_F(set, listpack_to_hashtable_on_a_long_member)
{
	struct obj o = set_new("a", 1, 1);
	char m[66];

	memset(m, 'z', sizeof(m));
	ASSERT_EQ(1, add(&o, "a"));
	ASSERT_EQ(1, set_add(&o, m, 64)); /* exactly the limit: still packed */
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(1, set_add(&o, m, 65));
	ASSERT_EQ(ENC_HASHTABLE, o.enc);
	ASSERT_TRUE(set_contains(&o, m, 64));
	ASSERT_TRUE(set_contains(&o, m, 65));
	ASSERT_FALSE(set_contains(&o, m, 66));
	ASSERT_TRUE(has(&o, "a"));
	obj_free(&o);
}

TEST_F(set, binary_and_empty_members)
{
	struct obj o = set_new("a", 1, 1);
	struct obj h;
	const char bin[] = { 'a', '\0', 'b', '\r', '\n', (char)0xff };
	char big[300];

	ASSERT_EQ(1, set_add(&o, "", 0));
	ASSERT_EQ(0, set_add(&o, "", 0));
	ASSERT_EQ(1, set_add(&o, bin, sizeof(bin)));
	ASSERT_EQ(1, set_add(&o, bin, 1)); /* "a", a prefix of bin */
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	/* A member whose length needs a two-byte varint (with a raised limit). */
	config.set_max_listpack_value = 1000;
	memset(big, 'q', sizeof(big));
	ASSERT_EQ(1, set_add(&o, big, sizeof(big)));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_TRUE(set_contains(&o, big, sizeof(big)));
	ASSERT_FALSE(set_contains(&o, big, sizeof(big) - 1));
	ASSERT_TRUE(set_contains(&o, "", 0));
	ASSERT_TRUE(set_contains(&o, bin, sizeof(bin)));
	ASSERT_EQ(4, iter_count(&o));
	h = obj_dup(&o);
	ASSERT_EQ(1, set_remove(&o, "", 0));
	ASSERT_EQ(1, set_remove(&o, bin, sizeof(bin)));
	ASSERT_TRUE(set_contains(&o, "a", 1));
	ASSERT_TRUE(set_contains(&o, big, sizeof(big)));
	ASSERT_EQ(2, iter_count(&o));
	/* The copy is independent. */
	ASSERT_EQ(4, set_size(&h));
	ASSERT_TRUE(set_contains(&h, bin, sizeof(bin)));
	obj_free(&h);
	obj_free(&o);
}

TEST_F(set, never_converts_back)
{
	struct obj o = set_new("a", 1, 1);

	for (int i = 0; i < 600; i++)
		add_ll(&self->o, i);
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);
	for (int i = 0; i < 599; i++) {
		char buf[LL_STR_SIZE + 1];

		ASSERT_EQ(1, set_remove(&self->o, buf, (size_t)ll_to_str(buf, i)));
	}
	ASSERT_EQ(1, set_size(&self->o));
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);
	ASSERT_EQ(1, add_ll(&self->o, 7));
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);

	/* A listpack of integers only stays a listpack. */
	ASSERT_EQ(1, add(&o, "a"));
	ASSERT_EQ(1, add(&o, "1"));
	ASSERT_EQ(1, rem(&o, "a"));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(1, add(&o, "2"));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	obj_free(&o);
}

TEST_F(set, large_hashtable)
{
	const int n = 200000;

	for (int i = 0; i < n; i++)
		ASSERT_EQ(1, add_str(&self->o, i));
	ASSERT_EQ(ENC_HASHTABLE, self->o.enc);
	ASSERT_EQ(n, set_size(&self->o));
	for (int i = 0; i < n; i++)
		ASSERT_TRUE(has_str(&self->o, i));
	ASSERT_FALSE(has_str(&self->o, n));
	ASSERT_LT(n * 16, obj_mem(&self->o)); /* nodes are counted */
	for (int i = 0; i < n - 10; i++)
		ASSERT_EQ(1, rem_str(&self->o, i));
	ASSERT_EQ(10, set_size(&self->o));
	ASSERT_EQ(10, iter_count(&self->o));
	ASSERT_GT(1024 * 1024, obj_mem(&self->o)); /* the table shrank */
}

/* SSCAN step callback: marks members by number ("m<i>"). */
struct scan_marks {
	unsigned char *seen;
	int n;
};

static void scan_mark(void *ctx, const char *p, size_t len)
{
	struct scan_marks *s = ctx;
	long long v;

	if (len > 1 && p[0] == 'm' && str_to_ll(p + 1, len - 1, &v) && v < s->n)
		s->seen[v] = 1;
}

/*
 * The SSCAN guarantee: a member present from the first call to the last is
 * returned, even when the table grows and shrinks between calls. Members
 * 0..base-1 stay throughout; others come and go while the scan runs.
 */
TEST_F(set, scan_guarantee_across_resizes)
{
	const int base = 20000, extra = 100000;
	struct scan_marks s = { xcalloc(base + extra, 1), base + extra };
	uint64_t cursor = 0;
	int steps = 0, added = 0;

	for (int i = 0; i < base; i++)
		add_str(&self->o, i);
	do {
		cursor = set_scan(&self->o, cursor, scan_mark, &s);
		steps++;
		/* Grow by a lot early on, then remove it all again. */
		if (steps % 10 == 0 && added < extra) {
			for (int k = 0; k < 5000; k++)
				add_str(&self->o, base + added++);
		} else if (steps % 7 == 0 && added == extra && set_size(&self->o) > base) {
			for (int i = base; i < base + extra; i++)
				rem_str(&self->o, i);
		}
	} while (cursor);
	for (int i = 0; i < base; i++)
		ASSERT_EQ(1, s.seen[i]);
	ASSERT_EQ(base, set_size(&self->o));
	xfree(s.seen);
}

TEST_F(set, scan_compact_returns_everything)
{
	struct gather g;

	for (int i = 0; i < 50; i++)
		add_ll(&self->o, i);
	gather_init(&g, &self->o);
	ASSERT_EQ(0, set_scan(&self->o, 12345, gather_fn, &g)); /* cursor ignored */
	ASSERT_EQ(50, g.calls);
	ASSERT_EQ(50, set_size(&g.seen));
	obj_free(&g.seen);
}

/* Random members on one set: distinct for a positive count, exactly count
 * (with repeats) otherwise, always members. */
static void check_random(struct __test_metadata *_metadata, const struct obj *o)
{
	uint64_t size = set_size(o);
	const uint64_t counts[] = {
		1, 2, size / 4, size / 3 + 1, size - 1, size, size + 5, 3 * size
	};

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct gather g;
		uint64_t want = counts[i] < size ? counts[i] : size;

		gather_init(&g, o);
		set_random_members(o, counts[i], true, gather_fn, &g);
		ASSERT_EQ(want, g.calls);
		ASSERT_EQ(want, set_size(&g.seen));
		ASSERT_FALSE(g.stray);
		obj_free(&g.seen);

		gather_init(&g, o);
		set_random_members(o, counts[i], false, gather_fn, &g);
		ASSERT_EQ(counts[i], g.calls);
		ASSERT_FALSE(g.stray);
		obj_free(&g.seen);
	}
}

TEST_F(set, random_members_each_encoding)
{
	struct obj lp = set_new("a", 1, 1), ht = set_new("a", 1, 1000);
	struct gather g;

	for (int i = 0; i < 300; i++)
		add_ll(&self->o, i * 7 - 1000);
	for (int i = 0; i < 100; i++)
		add_str(&lp, i);
	for (int i = 0; i < 5000; i++)
		add_str(&ht, i);
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(ENC_LISTPACK, lp.enc);
	ASSERT_EQ(ENC_HASHTABLE, ht.enc);
	check_random(_metadata, &self->o);
	check_random(_metadata, &lp);
	check_random(_metadata, &ht);

	/* Every member turns up over enough repeated draws. */
	gather_init(&g, &lp);
	set_random_members(&lp, 20000, false, gather_fn, &g);
	ASSERT_EQ(100, set_size(&g.seen));
	obj_free(&g.seen);
	gather_init(&g, &ht);
	set_random_members(&ht, 200000, false, gather_fn, &g);
	ASSERT_EQ(5000, set_size(&g.seen));
	obj_free(&g.seen);

	/* Nothing is drawn from an empty set. */
	gather_init(&g, NULL);
	set_random_members(&g.seen, 10, false, gather_fn, &g);
	ASSERT_EQ(0, g.calls);
	obj_free(&g.seen);
	obj_free(&lp);
	obj_free(&ht);
}

static void check_pop(struct __test_metadata *_metadata, struct obj *o)
{
	uint64_t size = set_size(o);
	struct obj before = obj_dup(o);
	struct set_iter it;
	struct gather g;
	const char *p;
	size_t len;

	/* Popped members were members, are distinct, and are gone. */
	gather_init(&g, &before);
	ASSERT_EQ(1, set_pop_random(o, 1, gather_fn, &g));
	ASSERT_EQ(size / 3, set_pop_random(o, size / 3, gather_fn, &g));
	ASSERT_EQ(1 + size / 3, g.calls);
	ASSERT_EQ(1 + size / 3, set_size(&g.seen));
	ASSERT_FALSE(g.stray);
	ASSERT_EQ(size - 1 - size / 3, set_size(o));
	ASSERT_EQ(set_size(o), iter_count(o));
	set_iter_init(&it, &g.seen);
	while (set_iter_next(&it, &p, &len))
		ASSERT_FALSE(set_contains(o, p, len));
	/* More than is left pops everything, leaving an empty set. */
	ASSERT_EQ(set_size(o), set_pop_random(o, size * 2, gather_fn, &g));
	ASSERT_EQ(0, set_size(o));
	ASSERT_EQ(size, set_size(&g.seen));
	ASSERT_EQ(0, iter_count(o));
	obj_free(&g.seen);
	obj_free(&before);
}

TEST_F(set, pop_each_encoding)
{
	struct obj lp = set_new("a", 1, 1), ht = set_new("a", 1, 1000);

	for (int i = 0; i < 400; i++)
		add_ll(&self->o, i - 200);
	for (int i = 0; i < 120; i++)
		add_str(&lp, i);
	for (int i = 0; i < 30000; i++)
		add_str(&ht, i);
	check_pop(_metadata, &self->o);
	check_pop(_metadata, &lp);
	check_pop(_metadata, &ht);
	ASSERT_EQ(ENC_INTSET, self->o.enc);
	ASSERT_EQ(ENC_LISTPACK, lp.enc);
	ASSERT_EQ(ENC_HASHTABLE, ht.enc);
	/* An emptied set still takes members. */
	ASSERT_EQ(1, add(&ht, "again"));
	ASSERT_EQ(1, add_ll(&self->o, 3));
	obj_free(&lp);
	obj_free(&ht);
}

TEST_F(set, dup_each_encoding)
{
	struct obj lp = set_new("a", 1, 1), ht = set_new("a", 1, 1000);
	struct obj c1, c2, c3;

	for (int i = 0; i < 100; i++) {
		add_ll(&self->o, i * 100000);
		add_str(&lp, i);
		add_str(&ht, i);
	}
	c1 = obj_dup(&self->o);
	c2 = obj_dup(&lp);
	c3 = obj_dup(&ht);
	ASSERT_EQ(ENC_INTSET, c1.enc);
	ASSERT_EQ(ENC_LISTPACK, c2.enc);
	ASSERT_EQ(ENC_HASHTABLE, c3.enc);
	for (int i = 0; i < 100; i++) {
		ASSERT_TRUE(has_ll(&c1, i * 100000));
		ASSERT_TRUE(has_str(&c2, i));
		ASSERT_TRUE(has_str(&c3, i));
	}
	ASSERT_EQ(obj_mem(&ht), obj_mem(&c3));
	ASSERT_EQ(1, add(&c3, "new"));
	ASSERT_FALSE(has(&ht, "new"));
	obj_free(&c1);
	obj_free(&c2);
	obj_free(&c3);
	obj_free(&lp);
	obj_free(&ht);
}

TEST_HARNESS_MAIN
