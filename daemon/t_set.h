/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_set: the set type, in the three encodings Redis 7.2 uses.
 *
 *  - ENC_INTSET: a sorted array of integers in one allocation, each stored in
 *    the narrowest width (2, 4 or 8 bytes) that holds every member, while
 *    every member is a canonical integer and there are at most
 *    set-max-intset-entries of them;
 *  - ENC_LISTPACK: the members packed one after another (a varint length,
 *    then the bytes) while there are at most set-max-listpack-entries of them
 *    and none is longer than set-max-listpack-value bytes;
 *  - ENC_HASHTABLE: a dict (dict.h) of members, hashed with seeded XXH3, for
 *    everything else. O(1) membership, and SSCAN's guarantee from dict_scan.
 *
 * A set moves up (intset -> listpack -> hashtable, or intset -> hashtable)
 * when an addition crosses a threshold, and never back, as in Redis.
 *
 * Member pointers handed out (iterators, callbacks) point into the set or
 * into a buffer of the caller's iterator: they are valid until the set is
 * next modified and must be copied to be kept. The caller serialises access
 * (the key's shard lock, see store.h).
 */
#ifndef XKV_T_SET_H
#define XKV_T_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dict.h"
#include "object.h"
#include "util.h"

/*
 * A new empty set, encoded for its first member and the number of members
 * the caller expects (as Redis's SADD on a new key): an intset if first is
 * an integer and size_hint fits one, else a listpack if size_hint fits one,
 * else a hash table. first NULL means an intset (the start of a computed
 * result: SINTERSTORE and its kind). The caller owns the value: it frees it
 * with obj_free() or hands it to the store (db_add, db_set).
 */
struct obj set_new(const char *first, size_t len, size_t size_hint);

size_t set_size(const struct obj *o);
bool set_contains(const struct obj *o, const char *p, size_t len);
/* 1 if p was added, 0 if it was already a member. May change the encoding. */
int set_add(struct obj *o, const char *p, size_t len);
/* 1 if p was removed, 0 if it was not a member. Never changes the encoding;
 * the caller deletes a set left empty. */
int set_remove(struct obj *o, const char *p, size_t len);

/* Visits every member once, in no particular order. The set must not change
 * while an iterator is in use. */
struct set_iter {
	const struct obj *o;
	size_t pos;		/* intset index, or listpack byte offset */
	uint64_t bucket;	/* hashtable: the next bucket to visit */
	struct dict_node *node; /* hashtable: the next node in the bucket */
	char buf[LL_STR_SIZE + 1];
};

void set_iter_init(struct set_iter *it, const struct obj *o);
/* The next member in *p, *len; false when there are no more. */
bool set_iter_next(struct set_iter *it, const char **p, size_t *len);

/* Receives one member (see the validity rule above). */
typedef void set_member_fn(void *ctx, const char *p, size_t len);

/*
 * SRANDMEMBER: calls fn count times with random members. unique: distinct
 * members, min(count, size) of them; otherwise members may repeat and fn is
 * called exactly count times (never on an empty set).
 */
void set_random_members(const struct obj *o, uint64_t count, bool unique, set_member_fn *fn,
			void *ctx);
/* SPOP: removes min(count, size) random members, calling fn on each just
 * before it goes. Returns how many were removed. */
uint64_t set_pop_random(struct obj *o, uint64_t count, set_member_fn *fn, void *ctx);

/*
 * One SSCAN step: calls fn on the members under cursor and returns the next
 * cursor, 0 when the iteration is complete. Compact encodings return every
 * member at once (cursor ignored, 0 returned), as Redis does; a hash table
 * advances as dict_scan, so a full iteration returns every member present
 * throughout it, even when the table is resized between steps.
 */
uint64_t set_scan(const struct obj *o, uint64_t cursor, set_member_fn *fn, void *ctx);

/* A thread's pseudo-random numbers (xorshift64*), for random members. */
uint64_t set_rand64(void);

#endif
