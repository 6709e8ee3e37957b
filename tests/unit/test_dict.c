// SPDX-License-Identifier: GPL-2.0-only
/*
 * The intrusive hash table (dict.h): growth, shrinking, removal inside a scan
 * callback, the SCAN guarantee across resizes, random members, and tables
 * whose hashes share their low bits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dict.h"
#include "mem.h"

#include "kselftest_harness.h"

struct tnode {
	struct dict_node node;
	uint64_t key;
	bool in;       /* currently in the dict */
	unsigned seen; /* times a scan returned it */
};

#define tnode_of(n) ((struct tnode *)((char *)(n) - __builtin_offsetof(struct tnode, node)))

static bool tkey_equal(const struct dict_node *n, const void *key, size_t len)
{
	return len == sizeof(uint64_t) && tnode_of(n)->key == *(const uint64_t *)key;
}

static const struct dict_type ttype = { .key_equal = tkey_equal };

/* The splitmix64 finalizer: a fixed, well-mixed 64-bit hash. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

typedef uint64_t hash_fn(uint64_t key);

static uint64_t hash_mixed(uint64_t key)
{
	return mix64(key);
}

/* Low 8 bits always zero: every table up to 256 buckets has one chain. */
static uint64_t hash_low8_zero(uint64_t key)
{
	return mix64(key) << 8;
}

/* Low 20 bits zero: a single chain for any table this test builds. */
static uint64_t hash_low20_zero(uint64_t key)
{
	return mix64(key) << 20;
}

/* Sixteen keys share each full hash: only key_equal tells them apart. */
static uint64_t hash_shared16(uint64_t key)
{
	return mix64(key / 16);
}

/* A deterministic generator (xorshift64*). */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static struct tnode *pool_new(size_t n, uint64_t first_key, hash_fn *hash)
{
	struct tnode *p = xcalloc(n, sizeof(*p));

	for (size_t i = 0; i < n; i++) {
		p[i].key = first_key + i;
		p[i].node.hash = hash(p[i].key);
	}
	return p;
}

static void add(struct dict *d, struct tnode *t)
{
	dict_insert(d, &t->node);
	t->in = true;
}

static void del(struct dict *d, struct tnode *t)
{
	dict_remove(d, &t->node);
	t->in = false;
}

static struct tnode *find(const struct dict *d, uint64_t key, hash_fn *hash)
{
	struct dict_node *n = dict_find(d, &key, sizeof(key), hash(key));

	return n ? tnode_of(n) : NULL;
}

static uint64_t buckets(const struct dict *d)
{
	return d->table ? d->mask + 1 : 0;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void mark_seen(void *ctx, struct dict_node *n)
{
	struct tnode *t = tnode_of(n);

	t->seen++;
	if (!t->in)
		(*(unsigned *)ctx)++; /* a node not in the dict: must never happen */
}

/* ---- basic operations ---------------------------------------------------------- */

TEST(empty)
{
	struct dict d;
	uint64_t key = 1;

	dict_init(&d, &ttype);
	ASSERT_EQ(0, d.count);
	ASSERT_EQ(NULL, dict_find(&d, &key, sizeof(key), 1));
	ASSERT_EQ(NULL, dict_random(&d, 12345));
	ASSERT_EQ(0, dict_scan(&d, 0, mark_seen, NULL));
	ASSERT_EQ(0, dict_mem(&d));
	dict_maybe_shrink(&d);
	dict_destroy(&d);
}

TEST(first_insert_and_load_factor)
{
	const size_t n = 5000;
	size_t before = mem_used();
	struct tnode *p = pool_new(n, 0, hash_mixed);
	struct dict d;

	dict_init(&d, &ttype);
	add(&d, &p[0]);
	ASSERT_EQ(DICT_MIN_BUCKETS, buckets(&d));
	ASSERT_LT(0, dict_mem(&d));
	for (size_t i = 1; i < n; i++) {
		add(&d, &p[i]);
		ASSERT_EQ(i + 1, d.count);
		ASSERT_TRUE(is_pow2(buckets(&d)));
		/* Grown at load factor 1. */
		ASSERT_LE(d.count, buckets(&d));
	}
	dict_destroy(&d);
	xfree(p);
	ASSERT_EQ(before, mem_used());
}

TEST(insert_find_remove_100k)
{
	const size_t n = 100000;
	size_t before = mem_used();
	struct tnode *p = pool_new(n, 1000000, hash_mixed);
	struct dict d;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	ASSERT_EQ(n, d.count);
	ASSERT_LE(n, buckets(&d));
	ASSERT_GE(2 * n, buckets(&d));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(&p[i], find(&d, p[i].key, hash_mixed));
	for (uint64_t k = 0; k < 1000; k++)
		ASSERT_EQ(NULL, find(&d, k, hash_mixed));
	/* Remove the odd ones. */
	for (size_t i = 1; i < n; i += 2)
		del(&d, &p[i]);
	ASSERT_EQ(n / 2, d.count);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i % 2 ? NULL : &p[i], find(&d, p[i].key, hash_mixed));
	for (size_t i = 0; i < n; i += 2)
		del(&d, &p[i]);
	ASSERT_EQ(0, d.count);
	for (size_t i = 0; i < n; i += 997)
		ASSERT_EQ(NULL, find(&d, p[i].key, hash_mixed));
	dict_maybe_shrink(&d);
	ASSERT_EQ(NULL, d.table);
	dict_destroy(&d);
	xfree(p);
	ASSERT_EQ(before, mem_used());
}

TEST(equal_hashes_told_apart_by_key)
{
	const size_t n = 4096;
	struct tnode *p = pool_new(n, 0, hash_shared16);
	struct dict d;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(&p[i], find(&d, p[i].key, hash_shared16));
	for (size_t i = 0; i < n; i += 3)
		del(&d, &p[i]);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i % 3 ? &p[i] : NULL, find(&d, p[i].key, hash_shared16));
	dict_destroy(&d);
	xfree(p);
}

TEST(shared_low_bits)
{
	const size_t n = 3000;
	struct tnode *p = pool_new(n, 7, hash_low20_zero);
	struct dict d;
	unsigned bad = 0;
	uint64_t cursor = 0;
	int calls = 0;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	ASSERT_EQ(n, d.count);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(&p[i], find(&d, p[i].key, hash_low20_zero));
	for (size_t i = 0; i < n; i += 2)
		del(&d, &p[i]);
	dict_maybe_shrink(&d);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i % 2 ? &p[i] : NULL, find(&d, p[i].key, hash_low20_zero));
	do {
		cursor = dict_scan(&d, cursor, mark_seen, &bad);
		ASSERT_GT(1 << 20, ++calls);
	} while (cursor);
	ASSERT_EQ(0, bad);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i % 2 ? 1 : 0, p[i].seen);
	for (int i = 0; i < 1000; i++) {
		struct dict_node *r = dict_random(&d, mix64((uint64_t)i));

		ASSERT_NE(NULL, r);
		ASSERT_TRUE(tnode_of(r)->in);
	}
	dict_destroy(&d);
	xfree(p);
}

/* ---- shrinking -------------------------------------------------------------------- */

TEST(shrink_after_mass_deletion)
{
	const size_t n = 100000, keep = 100;
	size_t before = mem_used(), big_mem;
	struct tnode *p = pool_new(n, 0, hash_mixed);
	struct dict d;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	big_mem = dict_mem(&d);
	for (size_t i = keep; i < n; i++)
		del(&d, &p[i]);
	/* dict_remove never resizes (it must be safe inside a scan). */
	ASSERT_EQ(big_mem, dict_mem(&d));
	dict_maybe_shrink(&d);
	ASSERT_EQ(keep, d.count);
	ASSERT_TRUE(is_pow2(buckets(&d)));
	ASSERT_LE(keep, buckets(&d));
	ASSERT_GT(8 * keep, buckets(&d));
	ASSERT_GT(big_mem / 100, dict_mem(&d));
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(i < keep ? &p[i] : NULL, find(&d, p[i].key, hash_mixed));
	/* A table at least 1/8 full is left alone. */
	{
		uint64_t b = buckets(&d);

		dict_maybe_shrink(&d);
		ASSERT_EQ(b, buckets(&d));
	}
	/* Emptied, the bucket array is given back. */
	for (size_t i = 0; i < keep; i++)
		del(&d, &p[i]);
	dict_maybe_shrink(&d);
	ASSERT_EQ(NULL, d.table);
	ASSERT_EQ(0, dict_mem(&d));
	/* And the dict is usable again. */
	add(&d, &p[5]);
	ASSERT_EQ(&p[5], find(&d, p[5].key, hash_mixed));
	dict_destroy(&d);
	xfree(p);
	ASSERT_EQ(before, mem_used());
}

/* ---- scanning -------------------------------------------------------------------- */

struct del_ctx {
	struct dict *d;
	unsigned bad;
	bool only_odd; /* delete odd keys only, keep the rest */
};

static void delete_visited(void *arg, struct dict_node *n)
{
	struct del_ctx *ctx = arg;
	struct tnode *t = tnode_of(n);

	t->seen++;
	if (!t->in)
		ctx->bad++;
	if (!ctx->only_odd || t->key % 2)
		del(ctx->d, t);
}

static void scan_deleting(struct __test_metadata *_metadata, hash_fn *hash, bool only_odd)
{
	const size_t n = 10000;
	struct tnode *p = pool_new(n, 0, hash);
	struct dict d;
	struct del_ctx ctx = { .d = &d, .only_odd = only_odd };
	uint64_t cursor = 0;
	int calls = 0;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	do {
		cursor = dict_scan(&d, cursor, delete_visited, &ctx);
		/* Shrinking between calls is allowed (and happens here). */
		dict_maybe_shrink(&d);
		ASSERT_GT(1 << 22, ++calls);
	} while (cursor);
	ASSERT_EQ(0, ctx.bad);
	for (size_t i = 0; i < n; i++) {
		if (only_odd && i % 2 == 0) {
			ASSERT_LE(1, p[i].seen);
			ASSERT_TRUE(p[i].in);
			ASSERT_EQ(&p[i], find(&d, p[i].key, hash));
		} else {
			/* Deleted when first seen: seen exactly once. */
			ASSERT_EQ(1, p[i].seen);
			ASSERT_FALSE(p[i].in);
		}
	}
	ASSERT_EQ(only_odd ? n / 2 : 0, d.count);
	dict_destroy(&d);
	xfree(p);
}

TEST(scan_deletes_every_visited_node)
{
	scan_deleting(_metadata, hash_mixed, false);
}

TEST(scan_deletes_odd_visited_nodes)
{
	scan_deleting(_metadata, hash_mixed, true);
}

TEST(scan_deletes_in_long_chains)
{
	scan_deleting(_metadata, hash_low8_zero, false);
	scan_deleting(_metadata, hash_low8_zero, true);
}

/* A static table: a full scan returns every node exactly once. */
TEST(scan_static_table_exactly_once)
{
	const size_t n = 20000;
	struct tnode *p = pool_new(n, 0, hash_mixed);
	struct dict d;
	uint64_t cursor = 0, calls = 0;
	unsigned bad = 0;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	do {
		cursor = dict_scan(&d, cursor, mark_seen, &bad);
		calls++;
	} while (cursor && calls <= buckets(&d));
	ASSERT_EQ(0, cursor);
	ASSERT_EQ(buckets(&d), calls);
	ASSERT_EQ(0, bad);
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(1, p[i].seen);
	dict_destroy(&d);
	xfree(p);
}

/*
 * The SCAN guarantee: a node present for the whole scan is returned at least
 * once, while other nodes come and go between calls so that the table grows
 * and shrinks several times.
 */
static void scan_under_churn(struct __test_metadata *_metadata, hash_fn *hash, size_t nstable,
			     size_t nextra, size_t step)
{
	struct tnode *stable = pool_new(nstable, 0, hash);
	struct tnode *extra = pool_new(nextra, 1ULL << 40, hash);
	size_t *order = xmalloc(nextra * sizeof(*order));
	size_t present = 0, removed = 0;
	uint64_t cursor = 0, rng = 0x9e3779b97f4a7c15ULL, mask;
	unsigned bad = 0, grows = 0, shrinks = 0, calls = 0;
	bool growing = true;
	struct dict d;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < nstable; i++)
		add(&d, &stable[i]);
	mask = d.mask;
	do {
		cursor = dict_scan(&d, cursor, mark_seen, &bad);
		ASSERT_GT(10000000, ++calls);
		/* Churn between calls. */
		if (growing) {
			for (size_t k = 0; k < step && present < nextra; k++) {
				order[present] = present;
				add(&d, &extra[present++]);
			}
			if (present == nextra) {
				growing = false;
				removed = 0;
				/* Remove in a shuffled order. */
				for (size_t i = nextra - 1; i > 0; i--) {
					size_t j = rng_next(&rng) % (i + 1), t = order[i];

					order[i] = order[j];
					order[j] = t;
				}
			}
		} else {
			for (size_t k = 0; k < step && removed < nextra; k++)
				del(&d, &extra[order[removed++]]);
			dict_maybe_shrink(&d);
			if (removed == nextra) {
				growing = true;
				present = 0;
			}
		}
		if (d.mask > mask)
			grows++;
		else if (d.mask < mask)
			shrinks++;
		mask = d.mask;
	} while (cursor);

	ASSERT_EQ(0, bad);
	for (size_t i = 0; i < nstable; i++) {
		ASSERT_LE(1, stable[i].seen)
		TH_LOG("stable key %zu never returned", i);
	}
	/* The scan did live through several resizes both ways. */
	ASSERT_LE(3, grows)
	TH_LOG("only %u grows in %u calls", grows, calls);
	ASSERT_LE(3, shrinks)
	TH_LOG("only %u shrinks in %u calls", shrinks, calls);
	dict_destroy(&d);
	xfree(order);
	xfree(extra);
	xfree(stable);
}

TEST(scan_guarantee_under_resize)
{
	size_t before = mem_used();

	scan_under_churn(_metadata, hash_mixed, 1000, 20000, 40);
	ASSERT_EQ(before, mem_used());
}

TEST(scan_guarantee_under_resize_shared_low_bits)
{
	scan_under_churn(_metadata, hash_low8_zero, 500, 8000, 40);
}

/* A cursor taken at one size continues at another without losing nodes,
 * even across a large jump in size (grow 64x, shrink back). */
TEST(scan_cursor_survives_big_jumps)
{
	const size_t nstable = 256, nextra = 8192;
	struct tnode *stable = pool_new(nstable, 0, hash_mixed);
	struct tnode *extra = pool_new(nextra, 1ULL << 40, hash_mixed);
	struct dict d;
	uint64_t cursor = 0;
	unsigned bad = 0, calls = 0;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < nstable; i++)
		add(&d, &stable[i]);
	do {
		cursor = dict_scan(&d, cursor, mark_seen, &bad);
		calls++;
		if (calls % 2) {
			for (size_t i = 0; i < nextra; i++)
				add(&d, &extra[i]);
		} else {
			for (size_t i = 0; i < nextra; i++)
				del(&d, &extra[i]);
			dict_maybe_shrink(&d);
		}
		ASSERT_GT(1000000, calls);
	} while (cursor);
	ASSERT_EQ(0, bad);
	for (size_t i = 0; i < nstable; i++)
		ASSERT_LE(1, stable[i].seen);
	dict_destroy(&d);
	xfree(extra);
	xfree(stable);
}

/* ---- random and clear -------------------------------------------------------------- */

TEST(random_returns_members_only)
{
	const size_t n = 1000, keep = 100;
	struct tnode *p = pool_new(n, 0, hash_mixed);
	struct dict d;
	uint64_t rng = 42;
	size_t distinct = 0;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++)
		add(&d, &p[i]);
	for (int i = 0; i < 20000; i++) {
		struct dict_node *r = dict_random(&d, rng_next(&rng));

		ASSERT_NE(NULL, r);
		ASSERT_TRUE(tnode_of(r)->in);
		if (!tnode_of(r)->seen++)
			distinct++;
	}
	/* Not a distribution test, but it must not be stuck on a few nodes. */
	ASSERT_LT(n / 2, distinct);

	for (size_t i = 0; i < n; i++)
		p[i].seen = 0;
	for (size_t i = keep; i < n; i++)
		del(&d, &p[i]);
	dict_maybe_shrink(&d);
	distinct = 0;
	for (int i = 0; i < 20000; i++) {
		struct dict_node *r = dict_random(&d, rng_next(&rng));

		ASSERT_NE(NULL, r);
		ASSERT_TRUE(tnode_of(r)->in);
		if (!tnode_of(r)->seen++)
			distinct++;
	}
	ASSERT_EQ(keep, distinct);

	/* Removed without shrinking: the table is sparse, still only members. */
	for (size_t i = 1; i < keep; i++)
		del(&d, &p[i]);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(&p[0].node, dict_random(&d, rng_next(&rng)));
	del(&d, &p[0]);
	ASSERT_EQ(NULL, dict_random(&d, rng_next(&rng)));
	dict_destroy(&d);
	xfree(p);
}

static unsigned freed_nodes;

static void free_tnode(struct dict_node *n)
{
	freed_nodes++;
	xfree(tnode_of(n));
}

TEST(clear_frees_all)
{
	const size_t n = 50000;
	size_t before = mem_used();
	struct dict d;

	dict_init(&d, &ttype);
	for (size_t i = 0; i < n; i++) {
		struct tnode *t = xcalloc(1, sizeof(*t));

		t->key = i;
		t->node.hash = hash_low8_zero(i);
		add(&d, t);
	}
	freed_nodes = 0;
	dict_clear(&d, free_tnode);
	ASSERT_EQ(n, freed_nodes);
	ASSERT_EQ(0, d.count);
	ASSERT_EQ(NULL, d.table);
	ASSERT_EQ(NULL, find(&d, 1, hash_low8_zero));
	ASSERT_EQ(before, mem_used());

	/* Clearing an empty dict calls nothing. */
	dict_clear(&d, free_tnode);
	ASSERT_EQ(n, freed_nodes);
}

TEST_HARNESS_MAIN
