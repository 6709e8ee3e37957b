// SPDX-License-Identifier: BSD-3-Clause
/*
 * topk: the heaviest keys of a stream of weighted updates, in bounded
 * memory (see topk.h). Metwally's space-saving: at most cap keys with a count
 * each; a key not held replaces the smallest and starts from its count, so a
 * key heavier than total/cap is never lost and a key set no larger than cap
 * is counted exactly. A min-heap finds the smallest, a chained hash the key.
 */
#include "topk.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "mem.h"

void topk_init(struct topk *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	t->cap = cap;
	for (t->nbuckets = 1; t->nbuckets < 2 * cap; t->nbuckets <<= 1)
		;
	t->items = xcalloc(cap, sizeof(*t->items));
	t->heap = xcalloc(cap, sizeof(*t->heap));
	t->buckets = xmalloc(t->nbuckets * sizeof(*t->buckets));
	memset(t->buckets, 0xff, t->nbuckets * sizeof(*t->buckets));
}

void topk_free(struct topk *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		xfree(t->items[i].key);
	xfree(t->items);
	xfree(t->heap);
	xfree(t->buckets);
	memset(t, 0, sizeof(*t));
}

size_t topk_memory(const struct topk *t)
{
	size_t n =
		t->cap * (sizeof(*t->items) + sizeof(*t->heap)) + t->nbuckets * sizeof(*t->buckets);

	for (uint32_t i = 0; i < t->n; i++)
		n += t->items[i].len;
	return n;
}

static void heap_swap(struct topk *t, uint32_t a, uint32_t b)
{
	uint32_t ia = t->heap[a], ib = t->heap[b];

	t->heap[a] = ib;
	t->heap[b] = ia;
	t->items[ib].heap = a;
	t->items[ia].heap = b;
}

static void heap_up(struct topk *t, uint32_t i)
{
	while (i && t->items[t->heap[(i - 1) / 2]].count > t->items[t->heap[i]].count) {
		heap_swap(t, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct topk *t, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < t->n && t->items[t->heap[l]].count < t->items[t->heap[m]].count)
			m = l;
		if (r < t->n && t->items[t->heap[r]].count < t->items[t->heap[m]].count)
			m = r;
		if (m == i)
			return;
		heap_swap(t, i, m);
		i = m;
	}
}

static void chain_unlink(struct topk *t, uint32_t idx)
{
	int32_t *p = &t->buckets[t->items[idx].hash & (t->nbuckets - 1)];

	while (*p != (int32_t)idx)
		p = &t->items[*p].next;
	*p = t->items[idx].next;
}

static void chain_link(struct topk *t, uint32_t idx)
{
	int32_t *head = &t->buckets[t->items[idx].hash & (t->nbuckets - 1)];

	t->items[idx].next = *head;
	*head = (int32_t)idx;
}

void topk_add(struct topk *t, const char *key, size_t len, uint64_t w)
{
	uint64_t h = XXH3_64bits(key, len);
	struct topk_item *it;
	uint32_t idx;
	char *copy;

	t->total += w;
	for (int32_t i = t->buckets[h & (t->nbuckets - 1)]; i >= 0; i = t->items[i].next) {
		it = &t->items[i];
		if (it->hash == h && it->len == len && !memcmp(it->key, key, len)) {
			it->count += w;
			heap_down(t, it->heap);
			return;
		}
	}
	copy = xmalloc(len);
	memcpy(copy, key, len);
	if (t->n < t->cap) {
		idx = t->n;
		it = &t->items[idx];
		it->count = 0;
		it->heap = t->n;
		t->heap[t->n++] = idx;
	} else {
		/* The smallest makes room; the newcomer inherits its count. */
		idx = t->heap[0];
		it = &t->items[idx];
		chain_unlink(t, idx);
		xfree(it->key);
	}
	it->key = copy;
	it->len = (uint32_t)len;
	it->hash = h;
	it->count += w;
	chain_link(t, idx);
	heap_down(t, it->heap);
	heap_up(t, it->heap);
}

static int by_count_desc(const void *a, const void *b)
{
	const struct topk_item *x = *(struct topk_item *const *)a;
	const struct topk_item *y = *(struct topk_item *const *)b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

int topk_list(const struct topk *t, int k, struct topk_entry *out)
{
	const struct topk_item **all = xmalloc(t->n * sizeof(*all));
	int n = 0;

	for (uint32_t i = 0; i < t->n; i++)
		all[i] = &t->items[i];
	qsort(all, t->n, sizeof(*all), by_count_desc);
	for (uint32_t i = 0; i < t->n && n < k && all[i]->count; i++) {
		out[n].key = xmalloc(all[i]->len);
		memcpy(out[n].key, all[i]->key, all[i]->len);
		out[n].len = all[i]->len;
		out[n].count = all[i]->count;
		n++;
	}
	xfree(all);
	return n;
}
