/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dict: an intrusive chained hash table with power-of-two buckets.
 *
 * Nodes are embedded in the caller's structs (struct entry for the keyspace);
 * the caller computes hashes and compares keys through the dict_type. The
 * table is resized all at once (no incremental rehash): every shard holds only
 * a fraction of the keyspace, so a resize is short, and a single table keeps
 * the SCAN guarantee simple. Scanning uses Redis's reverse-binary cursor, so a
 * full iteration returns every node present throughout it even when the table
 * grows or shrinks between calls.
 *
 * Not thread-safe: the owner (a store shard) holds its lock around every call.
 */
#ifndef XKV_DICT_H
#define XKV_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The low 32 bits of the key's hash are kept (a table never has 2^32
 * buckets), so that the owner's 32 bits of `aux` fill the word instead of
 * padding: the keyspace keeps its key length there (store.h).
 */
struct dict_node {
	struct dict_node *next;
	uint32_t hash;
	uint32_t aux; /* the owner's */
};

struct dict_type {
	/* Does node hold the key (key, len)? Hashes are compared first. */
	bool (*key_equal)(const struct dict_node *node, const void *key, size_t len);
};

struct dict {
	const struct dict_type *type;
	struct dict_node **table; /* NULL until the first insert */
	uint64_t mask;		  /* buckets - 1 */
	uint64_t count;
};

#define DICT_MIN_BUCKETS 4

void dict_init(struct dict *d, const struct dict_type *type);
/* Frees the bucket array (the nodes are the caller's). */
void dict_destroy(struct dict *d);
/* Calls free_node on every node, then leaves d empty. */
void dict_clear(struct dict *d, void (*free_node)(struct dict_node *node));

struct dict_node *dict_find(const struct dict *d, const void *key, size_t len, uint64_t hash);
/* Adds node (node->hash set by the caller); the key must not be present. */
void dict_insert(struct dict *d, struct dict_node *node);
/* Puts node where old was: node is a copy of old (its hash and next are
 * old's), made by an owner that moved its struct (realloc); old may be freed
 * already, only its address is compared. */
void dict_replace(struct dict *d, struct dict_node *old, struct dict_node *node);
/* Unlinks node, which must be in d. Never resizes, so it is safe inside a
 * dict_scan callback; call dict_maybe_shrink() afterwards. */
void dict_remove(struct dict *d, struct dict_node *node);
void dict_maybe_shrink(struct dict *d);
/* DEBUG DICT-RESIZING: false lets tables grow or shrink only when four
 * times further out of shape than usual, as Redis's dict_resizing 0. */
void dict_set_resizing(bool on);

/* Calls fn on every node of the bucket(s) at cursor and returns the next
 * cursor (0 when done). fn may dict_remove() the node it is given. */
typedef void dict_scan_fn(void *ctx, struct dict_node *node);
uint64_t dict_scan(struct dict *d, uint64_t cursor, dict_scan_fn *fn, void *ctx);

/* A pseudo-random node chosen with the random number r, or NULL if empty. */
struct dict_node *dict_random(const struct dict *d, uint64_t r);
/* A random node of a non-empty dict, uniform for every node in a chain of at
 * most DICT_FAIR_CHAIN nodes, drawing random numbers from rnd (a few tries:
 * see dict.c); NULL if empty. */
#define DICT_FAIR_CHAIN 4
struct dict_node *dict_random_fair(const struct dict *d, uint64_t (*rnd)(void));
/* Bytes used by the bucket array. */
size_t dict_mem(const struct dict *d);

#endif
