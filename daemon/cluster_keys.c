// SPDX-License-Identifier: BSD-3-Clause
/*
 * cluster_keys: a slot's keys as the control plane needs them (SETSLOT NODE,
 * slots lost through the bus), by a walk of the slot's shard. A stand-in: the
 * data plane's per-slot key index replaces these two functions.
 */
#include <stdlib.h>

#include "cluster.h"
#include "cluster_ctl.h"
#include "mem.h"
#include "store.h"

struct slot_walk {
	uint16_t slot;
	uint64_t n;
	struct entry **found; /* NULL when only counting */
	size_t cap;
};

static void visit(void *ctx, struct dict_node *node)
{
	struct slot_walk *w = ctx;
	struct entry *e = entry_of(node);

	if (e->slot != w->slot)
		return;
	if (w->found) {
		if (w->n == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 64;
			w->found = xrealloc(w->found, w->cap * sizeof(*w->found));
		}
		w->found[w->n] = e;
	}
	w->n++;
}

static void walk(struct slot_walk *w)
{
	struct shard *s = store_shard(0, w->slot % STORE_SHARDS);
	uint64_t cursor = 0;

	do
		cursor = dict_scan(&s->keys, cursor, visit, w);
	while (cursor);
}

uint64_t cluster_slot_keys_count(uint16_t slot)
{
	struct slot_walk w = { .slot = slot };

	store_shard_lock(0, slot % STORE_SHARDS);
	walk(&w);
	store_shard_unlock(0, slot % STORE_SHARDS);
	return w.n;
}

void cluster_slot_keys_delete(uint16_t slot)
{
	/* found is non-NULL from the start: the walk collects. */
	struct slot_walk w = { .slot = slot,
			       .found = xmalloc(64 * sizeof(struct entry *)),
			       .cap = 64 };

	store_shard_lock(0, slot % STORE_SHARDS);
	walk(&w);
	/* Deleted after the walk: a delete may shrink the table under it. */
	for (uint64_t i = 0; i < w.n; i++)
		db_delete(0, w.found[i]);
	store_shard_unlock(0, slot % STORE_SHARDS);
	xfree(w.found);
}
