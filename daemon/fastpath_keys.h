/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastpath_keys: which keys hold a slot of the kernel cache, kept outside
 * their entries (fastpath.c). An open-addressed table (linear probing, at most
 * half full, deletion by moving records back: no tombstones) of records that
 * pair a key's dict hash with its slot. Keys may share a hash: the caller
 * tells which record is its key's by checking the slot's key (the `holds`
 * callback). A record may also hold a negative marker (FP_UNCACHEABLE), which
 * only the hash identifies.
 *
 * Not thread-safe: fastpath.c keeps one per shard of db 0, under its lock.
 */
#ifndef XKV_FASTPATH_KEYS_H
#define XKV_FASTPATH_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#define FP_NONE (-1)	    /* no slot; an empty record */
#define FP_UNCACHEABLE (-2) /* indexing failed once: the key stays daemon-served */

struct fp_key {
	uint32_t hash; /* the key's dict hash (entry.node.hash) */
	int32_t slot;  /* a slot, FP_UNCACHEABLE or FP_NONE */
};

struct fp_keys {
	struct fp_key *tab; /* NULL while empty (xmalloc'd, owned) */
	uint32_t mask;	    /* size - 1 */
	uint32_t count;
};

/* Does slot (>= 0) hold the key looked up? */
typedef bool fp_keys_holds_fn(uint32_t slot, const void *ctx);

/* The index of the record of the key with this hash: the one whose slot
 * holds it, else an FP_UNCACHEABLE one with its hash, else -1. */
int64_t fp_keys_find(const struct fp_keys *k, uint32_t hash, fp_keys_holds_fn *holds,
		     const void *ctx);
void fp_keys_add(struct fp_keys *k, uint32_t hash, int32_t slot);
/* Removes the record at index i (from fp_keys_find). */
void fp_keys_del(struct fp_keys *k, uint32_t i);
/* Removes the record (hash, slot) if there is one. */
void fp_keys_remove(struct fp_keys *k, uint32_t hash, int32_t slot);
/* Frees the table; k is empty after. */
void fp_keys_clear(struct fp_keys *k);

#endif
