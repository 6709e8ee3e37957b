// SPDX-License-Identifier: BSD-3-Clause
/* The kernel cache's table of cached keys (fastpath_keys.h). */
#include "fastpath_keys.h"
#include "mem.h"

int64_t fp_keys_find(const struct fp_keys *k, uint32_t hash, fp_keys_holds_fn *holds,
		     const void *ctx)
{
	int64_t uncacheable = -1;

	if (!k->tab)
		return -1;
	/* Ends: at most half the records are taken. */
	for (uint32_t i = hash & k->mask;; i = (i + 1) & k->mask) {
		const struct fp_key *r = &k->tab[i];

		if (r->slot == FP_NONE)
			return uncacheable;
		if (r->hash != hash)
			continue;
		if (r->slot >= 0 && holds((uint32_t)r->slot, ctx))
			return i;
		if (r->slot == FP_UNCACHEABLE && uncacheable < 0)
			uncacheable = i;
	}
}

static void put(struct fp_keys *k, uint32_t hash, int32_t slot)
{
	uint32_t i = hash & k->mask;

	while (k->tab[i].slot != FP_NONE)
		i = (i + 1) & k->mask;
	k->tab[i] = (struct fp_key){ .hash = hash, .slot = slot };
}

void fp_keys_add(struct fp_keys *k, uint32_t hash, int32_t slot)
{
	uint32_t size = k->tab ? k->mask + 1 : 0;

	if ((k->count + 1) * 2 > size) {
		struct fp_key *old = k->tab;
		uint32_t nsize = size ? size * 2 : 16;

		k->tab = xmalloc(nsize * sizeof(*k->tab));
		k->mask = nsize - 1;
		for (uint32_t i = 0; i < nsize; i++)
			k->tab[i].slot = FP_NONE;
		for (uint32_t i = 0; i < size; i++)
			if (old[i].slot != FP_NONE)
				put(k, old[i].hash, old[i].slot);
		xfree(old);
	}
	put(k, hash, slot);
	k->count++;
}

void fp_keys_clear(struct fp_keys *k)
{
	xfree(k->tab);
	*k = (struct fp_keys){ 0 };
}

void fp_keys_del(struct fp_keys *k, uint32_t i)
{
	k->tab[i].slot = FP_NONE;
	/* Records after the hole that probed past it move back into it. */
	for (uint32_t j = (i + 1) & k->mask; k->tab[j].slot != FP_NONE; j = (j + 1) & k->mask) {
		uint32_t home = k->tab[j].hash & k->mask;

		/* Record j may fill the hole unless its home lies in (i, j]. */
		if (((j - home) & k->mask) >= ((j - i) & k->mask)) {
			k->tab[i] = k->tab[j];
			k->tab[j].slot = FP_NONE;
			i = j;
		}
	}
	/* A shard whose keys all left the cache keeps no table. */
	if (--k->count == 0)
		fp_keys_clear(k);
}

void fp_keys_remove(struct fp_keys *k, uint32_t hash, int32_t slot)
{
	if (!k->tab)
		return;
	for (uint32_t i = hash & k->mask; k->tab[i].slot != FP_NONE; i = (i + 1) & k->mask)
		if (k->tab[i].hash == hash && k->tab[i].slot == slot) {
			fp_keys_del(k, i);
			return;
		}
}
