// SPDX-License-Identifier: BSD-3-Clause
#include <string.h>

#include "dict.h"
#include "mem.h"

void dict_init(struct dict *d, const struct dict_type *type)
{
	memset(d, 0, sizeof(*d));
	d->type = type;
}

void dict_destroy(struct dict *d)
{
	xfree(d->table);
	d->table = NULL;
	d->mask = 0;
	d->count = 0;
}

static void resize(struct dict *d, uint64_t buckets)
{
	struct dict_node **table = xcalloc(buckets, sizeof(*table));
	uint64_t mask = buckets - 1;

	if (d->table) {
		for (uint64_t i = 0; i <= d->mask; i++) {
			struct dict_node *n = d->table[i], *next;

			for (; n; n = next) {
				next = n->next;
				n->next = table[n->hash & mask];
				table[n->hash & mask] = n;
			}
		}
		xfree(d->table);
	}
	d->table = table;
	d->mask = mask;
}

struct dict_node *dict_find(const struct dict *d, const void *key, size_t len, uint64_t hash)
{
	if (!d->table)
		return NULL;
	for (struct dict_node *n = d->table[(uint32_t)hash & d->mask]; n; n = n->next)
		if (n->hash == (uint32_t)hash && d->type->key_equal(n, key, len))
			return n;
	return NULL;
}

/* DEBUG DICT-RESIZING: off, tables resize only when far out of shape (by
 * Redis's dict_force_resize_ratio). Relaxed: any worker may flip it. */
static int resizing = 1;
#define DICT_FORCE_RATIO 4

void dict_set_resizing(bool on)
{
	__atomic_store_n(&resizing, on, __ATOMIC_RELAXED);
}

static uint64_t resize_ratio(void)
{
	return __atomic_load_n(&resizing, __ATOMIC_RELAXED) ? 1 : DICT_FORCE_RATIO;
}

void dict_insert(struct dict *d, struct dict_node *node)
{
	/* Grow at load factor 1, as Redis does. */
	if (!d->table)
		resize(d, DICT_MIN_BUCKETS);
	else if (d->count >= (d->mask + 1) * resize_ratio())
		resize(d, (d->mask + 1) * 2);
	node->next = d->table[node->hash & d->mask];
	d->table[node->hash & d->mask] = node;
	d->count++;
}

void dict_replace(struct dict *d, struct dict_node *old, struct dict_node *node)
{
	/* old may be freed already (realloc): only its address is compared. */
	struct dict_node **pp = &d->table[node->hash & d->mask];

	while (*pp != old)
		pp = &(*pp)->next;
	*pp = node;
}

void dict_remove(struct dict *d, struct dict_node *node)
{
	struct dict_node **pp = &d->table[node->hash & d->mask];

	while (*pp != node)
		pp = &(*pp)->next;
	*pp = node->next;
	d->count--;
}

void dict_maybe_shrink(struct dict *d)
{
	uint64_t buckets = d->mask + 1;

	if (!d->table)
		return;
	if (d->count == 0) {
		dict_destroy(d);
		return;
	}
	/* Shrink below 1/8 full to the smallest power of two that holds count. */
	if (buckets > DICT_MIN_BUCKETS && d->count * 8 * resize_ratio() < buckets) {
		uint64_t want = DICT_MIN_BUCKETS;

		while (want < d->count)
			want *= 2;
		resize(d, want);
	}
}

static uint64_t reverse_bits(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
	v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
	v = ((v >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((v & 0x0f0f0f0f0f0f0f0fULL) << 4);
	return __builtin_bswap64(v);
}

uint64_t dict_scan(struct dict *d, uint64_t cursor, dict_scan_fn *fn, void *ctx)
{
	struct dict_node *n, *next;
	uint64_t mask;

	if (!d->table || d->count == 0)
		return 0;
	mask = d->mask;
	for (n = d->table[cursor & mask]; n; n = next) {
		next = n->next;
		fn(ctx, n);
	}
	/*
	 * Advance the high bits first (increment the reversed cursor): buckets
	 * that a resize splits or merges are then visited consecutively, so a
	 * cursor taken at one size stays valid at another.
	 */
	cursor |= ~mask;
	cursor = reverse_bits(cursor);
	cursor++;
	cursor = reverse_bits(cursor);
	return cursor;
}

struct dict_node *dict_random(const struct dict *d, uint64_t r)
{
	struct dict_node *n;
	uint64_t len = 0, pick;

	if (!d->table || d->count == 0)
		return NULL;
	/* Find a non-empty bucket starting at a random one, then a random
	 * node in its chain. */
	for (uint64_t i = 0;; i++) {
		n = d->table[(r + i) & d->mask];
		if (n)
			break;
	}
	for (struct dict_node *m = n; m; m = m->next)
		len++;
	pick = (r >> 32) % len;
	while (pick--)
		n = n->next;
	return n;
}

/*
 * Each try picks a bucket and a slot in it, and succeeds if the slot holds a
 * node: uniform for nodes in chains of at most DICT_FAIR_CHAIN (nearly all at
 * load factor 1). dict_random, a random node of the chain after a random
 * bucket, favours nodes after runs of empty buckets and in short chains. A
 * longer chain is always accepted with a uniform node, slightly
 * under-sampling its members. Tables stay at least 1/8 full
 * (dict_maybe_shrink), so 32 tries are expected at worst; dict_random is the
 * bounded fallback.
 */
struct dict_node *dict_random_fair(const struct dict *d, uint64_t (*rnd)(void))
{
	if (!d->table || d->count == 0)
		return NULL;
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t r = rnd();
		/* The bucket from the middle bits: the low bits of a multiplying
		 * generator (xorshift64*, hash_rand) are its weakest, and biased
		 * HRANDFIELD -count (test_hashes' chi-square) on small tables. */
		struct dict_node *n = d->table[(r >> 20) & d->mask];
		uint64_t len = 0, slot = r >> 62; /* high bits: independent of the bucket's */

		for (struct dict_node *m = n; m; m = m->next)
			len++;
		if (len > DICT_FAIR_CHAIN)
			slot = rnd() % len;
		else if (slot >= len)
			continue;
		while (slot--)
			n = n->next;
		return n;
	}
	return dict_random(d, rnd());
}

void dict_clear(struct dict *d, void (*free_node)(struct dict_node *node))
{
	if (d->table) {
		for (uint64_t i = 0; i <= d->mask; i++) {
			struct dict_node *n = d->table[i], *next;

			for (; n; n = next) {
				next = n->next;
				free_node(n);
			}
		}
	}
	dict_destroy(d);
}

size_t dict_mem(const struct dict *d)
{
	return d->table ? xusable(d->table) : 0;
}
