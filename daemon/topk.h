/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topk: the heaviest keys of a stream of weighted updates, in memory fixed
 * by its capacity whatever the number of distinct keys (HOTKEYS's summaries).
 * Counts are exact for a key set no larger than the capacity; beyond it a key
 * may be over-counted by at most the smallest count it displaced, and a key
 * heavier than total / capacity is always held. Not locked: the caller
 * serializes.
 */
#ifndef XKV_TOPK_H
#define XKV_TOPK_H

#include <stddef.h>
#include <stdint.h>

struct topk_item {
	char *key;
	uint32_t len;
	uint32_t heap; /* its place in the heap */
	int32_t next;  /* the hash chain, -1 ends it */
	uint64_t hash;
	uint64_t count;
};

struct topk {
	struct topk_item *items; /* cap of them, n used */
	uint32_t *heap;		 /* item indexes, smallest count first */
	int32_t *buckets;	 /* nbuckets chain heads, -1 for none */
	uint32_t cap, n, nbuckets;
	uint64_t total; /* every weight ever added */
};

struct topk_entry {
	char *key; /* owned by whoever asked for the list */
	size_t len;
	uint64_t count;
};

/* An empty summary holding at most cap keys (cap > 0). */
void topk_init(struct topk *t, uint32_t cap);
void topk_free(struct topk *t);
/* Adds weight w to key. */
void topk_add(struct topk *t, const char *key, size_t len, uint64_t w);
/* The first k keys by count, largest first, copied into out[0..k); returns
 * how many (keys counted 0 are left out). */
int topk_list(const struct topk *t, int k, struct topk_entry *out);
/* Bytes the summary holds. */
size_t topk_memory(const struct topk *t);

#endif
