// SPDX-License-Identifier: GPL-2.0-only
/*
 * The list type (t_list.h) through its C API: exact bytes for every entry
 * form, the listpack -> quicklist conversion at list-max-listpack-size and
 * back, node splits on inserts in the middle, deletions across nodes, and a
 * long randomized run against a plain array model with list_validate()
 * after every operation, under several bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "object.h"
#include "t_list.h"

#include "kselftest_harness.h"

static void push_str(struct obj *o, enum list_where where, const char *s)
{
	list_push(o, where, s, strlen(s));
}

/* Pushes "0".."n-1" (canonical integers: stored as numbers) to the tail. */
static void push_range(struct obj *o, int from, int n)
{
	char buf[32];

	for (int i = from; i < from + n; i++) {
		snprintf(buf, sizeof(buf), "%d", i);
		push_str(o, LIST_TAIL, buf);
	}
}

/* Does element index hold the C string s? */
static bool elem_is(const struct obj *o, size_t index, const char *s)
{
	struct list_elem el;

	return list_index(o, index, &el) && el.len == strlen(s) && !memcmp(el.p, s, el.len);
}

/* The list's elements joined with ',' into buf (for readable asserts). */
static const char *joined(const struct obj *o, char *buf, size_t size)
{
	struct list_iter it;
	struct list_elem el;
	size_t n = 0;

	buf[0] = '\0';
	list_iter_init(&it, o, 0, false);
	while (list_iter_next(&it, &el) && n + el.len + 2 < size) {
		if (n)
			buf[n++] = ',';
		memcpy(buf + n, el.p, el.len);
		n += el.len;
		buf[n] = '\0';
	}
	return buf;
}

struct collect {
	char buf[256];
	size_t n;
};

static void collect_fn(void *ctx, const char *p, size_t len)
{
	struct collect *c = ctx;

	if (c->n)
		c->buf[c->n++] = ',';
	memcpy(c->buf + c->n, p, len);
	c->n += len;
	c->buf[c->n] = '\0';
}

TEST(empty_and_basic)
{
	struct obj o = list_new();
	struct collect got = { .n = 0 };
	struct list_elem el;
	char buf[256];

	config.list_max_listpack_size = -2;
	ASSERT_EQ(OBJ_LIST, o.type);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(0, list_len(&o));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_FALSE(list_index(&o, 0, &el));
	ASSERT_EQ(0, list_pop(&o, LIST_HEAD, 3, collect_fn, &got));

	push_str(&o, LIST_TAIL, "b");
	push_str(&o, LIST_HEAD, "a");
	push_str(&o, LIST_TAIL, "c");
	ASSERT_EQ(3, list_len(&o));
	ASSERT_STREQ("a,b,c", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(2, list_pop(&o, LIST_TAIL, 2, collect_fn, &got));
	ASSERT_STREQ("c,b", got.buf);
	ASSERT_EQ(1, list_pop(&o, LIST_HEAD, 5, NULL, NULL));
	ASSERT_EQ(0, list_len(&o));
	ASSERT_EQ(0, list_validate(&o));
	obj_free(&o);
}

TEST(exact_bytes)
{
	static const char *const values[] = {
		"0",
		"1",
		"127",
		"128",
		"-1",
		"-128",
		"-129",
		"255",
		"32767",
		"-32768",
		"8388608",
		"2147483647",
		"-2147483648",
		"4294967296",
		"9223372036854775807",
		"-9223372036854775808",
		"9223372036854775808",
		"-9223372036854775809",
		"007",
		"-0",
		"+1",
		" 1",
		"1.0",
		"",
		"abc",
		"12345678901234567890123",
	};
	size_t nvals = sizeof(values) / sizeof(values[0]);
	static const size_t lens[] = { 63, 64, 4095, 4096, 70000 };
	struct obj o = list_new();
	struct list_elem el;
	char *big;

	config.list_max_listpack_size = -2;
	for (size_t i = 0; i < nvals; i++)
		push_str(&o, LIST_TAIL, values[i]);
	for (size_t i = 0; i < nvals; i++)
		ASSERT_TRUE(elem_is(&o, i, values[i]));
	/* Binary bytes, and strings at each length-field boundary. */
	list_push(&o, LIST_TAIL, "a\0b\r\n", 5);
	ASSERT_TRUE(list_index(&o, nvals, &el));
	ASSERT_EQ(5, el.len);
	ASSERT_EQ(0, memcmp(el.p, "a\0b\r\n", 5));
	big = xmalloc(70000);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(big, 'a' + (int)i, lens[i]);
		list_push(&o, LIST_HEAD, big, lens[i]);
	}
	ASSERT_EQ(0, list_validate(&o));
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t at = sizeof(lens) / sizeof(lens[0]) - 1 - i;

		ASSERT_TRUE(list_index(&o, at, &el));
		ASSERT_EQ(lens[i], el.len);
		ASSERT_EQ('a' + (int)i, el.p[0]);
		ASSERT_EQ('a' + (int)i, el.p[el.len - 1]);
	}
	/* Searches compare integers with integers and strings with strings. */
	ASSERT_EQ(0, list_remove(&o, "00", 2, 0, false));
	ASSERT_EQ(1, list_remove(&o, "-0", 2, 0, false));
	ASSERT_EQ(1, list_remove(&o, "-129", 4, 0, false));
	ASSERT_EQ(0, list_remove(&o, "-129", 4, 0, false));
	ASSERT_EQ(0, list_validate(&o));
	xfree(big);
	obj_free(&o);
}

TEST(listpack_to_quicklist_by_count)
{
	struct obj o = list_new();
	char buf[256];

	config.list_max_listpack_size = 4;
	push_range(&o, 0, 4);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	push_range(&o, 4, 1);
	ASSERT_EQ(ENC_QUICKLIST, o.enc);
	ASSERT_EQ(2, list_nodes(&o));
	ASSERT_EQ(4, list_node_len(&o, 0));
	ASSERT_EQ(1, list_node_len(&o, 1));
	push_range(&o, 5, 7);
	ASSERT_EQ(3, list_nodes(&o));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_STREQ("0,1,2,3,4,5,6,7,8,9,10,11", joined(&o, buf, sizeof(buf)));
	/* Back to a listpack once one node of at most half the bound is left. */
	list_pop(&o, LIST_HEAD, 9, NULL, NULL);
	ASSERT_EQ(ENC_QUICKLIST, o.enc); /* 3 left in one node: more than 4 / 2 */
	list_pop(&o, LIST_HEAD, 1, NULL, NULL);
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_STREQ("10,11", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(0, list_validate(&o));
	obj_free(&o);
}

TEST(listpack_to_quicklist_by_bytes)
{
	struct obj o = list_new();
	char val[100], *big = xmalloc(10000);
	size_t n = 0;

	config.list_max_listpack_size = -1; /* 4 KiB */
	memset(val, 'v', sizeof(val));
	while (o.enc == ENC_LISTPACK) {
		list_push(&o, LIST_TAIL, val, sizeof(val));
		n++;
	}
	/* Each entry is 100 bytes plus 2 of header and 1 of backlen. */
	ASSERT_EQ(4096 / 103 + 1, n);
	ASSERT_EQ(2, list_nodes(&o));
	ASSERT_EQ(0, list_validate(&o));
	/* An element larger than the bound gets a node of its own. */
	memset(big, 'B', 10000);
	list_push(&o, LIST_HEAD, big, 10000);
	ASSERT_EQ(3, list_nodes(&o));
	ASSERT_EQ(1, list_node_len(&o, 0));
	xfree(big);
	/* A lower bound set at run time applies to later inserts. */
	config.list_max_listpack_size = -5;
	list_push(&o, LIST_TAIL, val, sizeof(val));
	ASSERT_EQ(3, list_nodes(&o));
	ASSERT_EQ(0, list_validate(&o));
	obj_free(&o);
}

TEST(split_on_middle_insert)
{
	struct obj o = list_new();
	char buf[256];

	config.list_max_listpack_size = 4;
	push_range(&o, 0, 12); /* nodes [0..3] [4..7] [8..11] */
	ASSERT_EQ(3, list_nodes(&o));
	ASSERT_TRUE(list_insert(&o, "5", 1, true, "X", 1));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_STREQ("0,1,2,3,4,5,X,6,7,8,9,10,11", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(4, list_nodes(&o)); /* [0..3] [4,5,X] [6,7] [8..11] */
	ASSERT_EQ(3, list_node_len(&o, 1));
	ASSERT_EQ(2, list_node_len(&o, 2));

	/* At the head of a full node whose predecessor is full: a new node. */
	ASSERT_TRUE(list_insert(&o, "8", 1, false, "Y", 1));
	ASSERT_STREQ("0,1,2,3,4,5,X,6,7,Y,8,9,10,11", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(3, list_node_len(&o, 2)); /* [6,7] had room */
	ASSERT_TRUE(list_insert(&o, "0", 1, false, "Z", 1));
	ASSERT_EQ(5, list_nodes(&o));
	ASSERT_EQ(1, list_node_len(&o, 0));
	ASSERT_TRUE(list_insert(&o, "11", 2, true, "W", 1));
	ASSERT_EQ(6, list_nodes(&o));
	ASSERT_FALSE(list_insert(&o, "nope", 4, true, "W", 1));
	ASSERT_STREQ("Z,0,1,2,3,4,5,X,6,7,Y,8,9,10,11,W", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(0, list_validate(&o));

	/* A split that leaves a sliver folds it into its outer neighbour:
	 * [0] [1,2,3] after splitting [0..3], then [Z] + [0,V]. */
	ASSERT_TRUE(list_insert(&o, "0", 1, true, "V", 1));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_STREQ("Z,0,V,1,2,3,4,5,X,6,7,Y,8,9,10,11,W", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(6, list_nodes(&o));
	ASSERT_EQ(3, list_node_len(&o, 0));
	ASSERT_EQ(3, list_node_len(&o, 1));
	obj_free(&o);
}

TEST(split_on_replace)
{
	struct obj o = list_new();
	char val[1000], *big = xmalloc(3000);
	struct list_elem el;

	config.list_max_listpack_size = -1;
	memset(val, 'v', sizeof(val));
	memset(big, 'B', 3000);
	for (int i = 0; i < 4; i++)
		list_push(&o, LIST_TAIL, val, sizeof(val)); /* ~4 KiB: one full listpack */
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	list_set(&o, 1, big, 3000);
	ASSERT_EQ(ENC_QUICKLIST, o.enc);
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_EQ(4, list_len(&o));
	ASSERT_TRUE(list_nodes(&o) >= 2);
	ASSERT_TRUE(list_index(&o, 1, &el));
	ASSERT_EQ(3000, el.len);
	ASSERT_TRUE(list_index(&o, 2, &el));
	ASSERT_EQ(1000, el.len);
	list_set(&o, 1, "s", 1);
	ASSERT_TRUE(elem_is(&o, 1, "s"));
	ASSERT_EQ(0, list_validate(&o));
	xfree(big);
	obj_free(&o);
}

TEST(delete_across_nodes)
{
	struct obj o = list_new();
	char buf[256];

	config.list_max_listpack_size = 4;
	push_range(&o, 0, 20); /* five full nodes */
	ASSERT_EQ(5, list_nodes(&o));
	list_delete_range(&o, 3, 10);
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_STREQ("0,1,2,13,14,15,16,17,18,19", joined(&o, buf, sizeof(buf)));
	/* [0,1,2] and [13..15] were cut; the full ones in between are gone. */
	ASSERT_EQ(3, list_nodes(&o));

	/* Cutting two nodes to one element each merges them. */
	list_delete_range(&o, 1, 4);
	ASSERT_STREQ("0,15,16,17,18,19", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_EQ(2, list_node_len(&o, 0));

	/* Removing matches across nodes, from either end. */
	obj_free(&o);
	o = list_new();
	for (int i = 0; i < 24; i++)
		push_str(&o, LIST_TAIL, i % 3 ? "x" : "m");
	ASSERT_EQ(2, list_remove(&o, "m", 1, 2, false));
	ASSERT_EQ(2, list_remove(&o, "m", 1, 2, true));
	ASSERT_STREQ("x,x,x,x,m,x,x,m,x,x,m,x,x,m,x,x,x,x,x,x", joined(&o, buf, sizeof(buf)));
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_EQ(16, list_remove(&o, "x", 1, 0, false));
	ASSERT_STREQ("m,m,m,m", joined(&o, buf, sizeof(buf)));
	/* The thinned nodes merge into one, still too full for a listpack. */
	ASSERT_EQ(ENC_QUICKLIST, o.enc);
	ASSERT_EQ(1, list_nodes(&o));
	ASSERT_EQ(1, list_remove(&o, "m", 1, 1, false));
	ASSERT_EQ(1, list_remove(&o, "m", 1, 1, true));
	ASSERT_EQ(ENC_LISTPACK, o.enc);
	ASSERT_EQ(0, list_validate(&o));
	ASSERT_EQ(2, list_remove(&o, "m", 1, 0, true));
	ASSERT_EQ(0, list_len(&o));
	ASSERT_EQ(0, list_validate(&o));
	obj_free(&o);
}

TEST(iterators_and_dup)
{
	struct obj o = list_new(), copy;
	struct list_iter it;
	struct list_elem el;
	char want[16];
	int n = 0;

	config.list_max_listpack_size = 3;
	push_range(&o, 0, 50);
	for (size_t i = 0; i < 50; i++) {
		snprintf(want, sizeof(want), "%zu", i);
		ASSERT_TRUE(elem_is(&o, i, want));
	}
	list_iter_init(&it, &o, 30, true);
	while (list_iter_next(&it, &el)) {
		snprintf(want, sizeof(want), "%d", 30 - n++);
		ASSERT_EQ(strlen(want), el.len);
		ASSERT_EQ(0, memcmp(want, el.p, el.len));
	}
	ASSERT_EQ(31, n);
	n = 0;
	list_iter_init(&it, &o, 47, false);
	while (list_iter_next(&it, &el))
		n++;
	ASSERT_EQ(3, n);
	list_iter_init(&it, &o, 50, false);
	ASSERT_FALSE(list_iter_next(&it, &el));

	copy = obj_dup(&o);
	ASSERT_EQ(0, list_validate(&copy));
	list_pop(&o, LIST_HEAD, 50, NULL, NULL);
	ASSERT_EQ(50, list_len(&copy));
	ASSERT_TRUE(elem_is(&copy, 49, "49"));
	ASSERT_TRUE(obj_mem(&copy) > 0);
	obj_free(&copy);
	obj_free(&o);
}

/* ---- randomized run against an array model ---------------------------------------------- */

struct model {
	char **v;
	size_t *len;
	size_t n, cap;
};

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static size_t rnd(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

static void model_insert(struct model *m, size_t at, const char *p, size_t len)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = xrealloc(m->v, m->cap * sizeof(*m->v));
		m->len = xrealloc(m->len, m->cap * sizeof(*m->len));
	}
	memmove(m->v + at + 1, m->v + at, (m->n - at) * sizeof(*m->v));
	memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof(*m->len));
	m->v[at] = xmalloc(len ? len : 1);
	memcpy(m->v[at], p, len);
	m->len[at] = len;
	m->n++;
}

static void model_delete(struct model *m, size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++)
		xfree(m->v[i]);
	memmove(m->v + at, m->v + at + n, (m->n - at - n) * sizeof(*m->v));
	memmove(m->len + at, m->len + at + n, (m->n - at - n) * sizeof(*m->len));
	m->n -= n;
}

static bool model_eq(const struct model *m, size_t i, const char *p, size_t len)
{
	return m->len[i] == len && !memcmp(m->v[i], p, len);
}

/* A random element: small integers and short words repeat, so searches
 * match; some are long enough to fill a node alone. */
static size_t random_value(char *buf)
{
	size_t r = rnd(100), len;

	if (r < 40)
		return (size_t)snprintf(buf, 32, "%lld", (long long)rnd(20) - 5);
	if (r < 45)
		return (size_t)snprintf(buf, 32, "%lld", (long long)(rng() >> rnd(64)));
	if (r < 80) {
		len = 1 + rnd(3);
		memset(buf, 'a' + (int)rnd(4), len);
		return len;
	}
	len = r < 97 ? 10 + rnd(200) : 2000 + rnd(6000);
	memset(buf, 'A' + (int)rnd(3), len);
	return len;
}

static int check_same(const struct obj *o, const struct model *m)
{
	struct list_iter it;
	struct list_elem el;
	size_t i = 0;

	if (list_validate(o) || list_len(o) != m->n)
		return -1;
	list_iter_init(&it, o, 0, false);
	while (list_iter_next(&it, &el))
		if (i >= m->n || !model_eq(m, i++, el.p, el.len))
			return -2;
	if (i != m->n)
		return -3;
	if (m->n) {
		list_iter_init(&it, o, m->n - 1, true);
		while (list_iter_next(&it, &el))
			if (!model_eq(m, --i, el.p, el.len))
				return -4;
	}
	return 0;
}

static int random_run(long long fill, uint64_t seed, int ops)
{
	struct obj o = list_new();
	struct model m = { 0 };
	char *val = xmalloc(8192), *piv = xmalloc(8192);
	int ret = 0;

	config.list_max_listpack_size = fill;
	rng_state = seed;
	for (int step = 0; step < ops && !ret; step++) {
		size_t op = rnd(100), len = random_value(val), n, i, plen, removed;
		bool tail = rnd(2);
		struct list_elem el;

		if (op < (m.n < 40 ? 40u : 25u)) {
			list_push(&o, tail ? LIST_TAIL : LIST_HEAD, val, len);
			model_insert(&m, tail ? m.n : 0, val, len);
		} else if (op < 40) {
			n = rnd(6);
			list_pop(&o, tail ? LIST_TAIL : LIST_HEAD, n, NULL, NULL);
			n = n < m.n ? n : m.n;
			model_delete(&m, tail ? m.n - n : 0, n);
		} else if (op < 55 && m.n) {
			i = rnd(m.n);
			list_set(&o, i, val, len);
			model_delete(&m, i, 1);
			model_insert(&m, i, val, len);
		} else if (op < 70) {
			plen = random_value(piv);
			for (i = 0; i < m.n && !model_eq(&m, i, piv, plen); i++)
				;
			if (list_insert(&o, piv, plen, tail, val, len) != (i < m.n))
				ret = -10;
			else if (i < m.n)
				model_insert(&m, i + tail, val, len);
		} else if (op < 80) {
			size_t limit = rnd(4), found = 0;

			removed = list_remove(&o, val, len, limit, tail);
			for (size_t k = 0; k < m.n && (!limit || found < limit);) {
				size_t at = tail ? m.n - 1 - k : k;

				/* After a deletion the next candidate has the same k. */
				if (model_eq(&m, at, val, len)) {
					model_delete(&m, at, 1);
					found++;
					continue;
				}
				k++;
			}
			if (removed != found)
				ret = -11;
		} else if (op < 88 && m.n) {
			i = rnd(m.n);
			n = rnd(m.n - i + 1);
			list_delete_range(&o, i, n);
			model_delete(&m, i, n);
		} else if (op < 100 && m.n) {
			i = rnd(m.n);
			if (!list_index(&o, i, &el) || !model_eq(&m, i, el.p, el.len))
				ret = -12;
		}
		if (!ret)
			ret = check_same(&o, &m);
		if (ret)
			fprintf(stderr, "# fill %lld seed %llu: step %d op %zu failed (%d)\n", fill,
				(unsigned long long)seed, step, op, ret);
	}
	model_delete(&m, 0, m.n);
	xfree(m.v);
	xfree(m.len);
	xfree(val);
	xfree(piv);
	obj_free(&o);
	return ret;
}

TEST(random_against_model)
{
	static const long long fills[] = { 1, 2, 3, 4, 8, 0, -1, -2, -5, -9 };

	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++)
		ASSERT_EQ(0, random_run(fills[i], 0x9e3779b97f4a7c15ULL + i, 4000));
}

TEST_HARNESS_MAIN
