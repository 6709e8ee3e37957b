/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_list: the list type (OBJ_LIST), as Redis 7 encodes it.
 *
 * Elements live in packs: one allocation holding a run of self-delimiting
 * entries that can be walked from either end. Canonical integers are stored
 * as numbers and read back as the same bytes. A small list is one pack
 * (ENC_LISTPACK); once it outgrows list-max-listpack-size it becomes a
 * quicklist (ENC_QUICKLIST), a doubly linked list of packs each bounded by
 * that size, so pushes and pops at either end touch one small pack. A
 * quicklist that shrinks to one pack under half the bound turns back into
 * a listpack, as in Redis 7.2. Nodes that fall under a quarter of the bound
 * are merged with a neighbour when the two fit in one.
 *
 * Indexes here are 0-based from the head and already in range: the commands
 * normalise Redis's negative indexes. The caller holds the key's shard lock;
 * nothing here locks or touches the keyspace.
 */
#ifndef XKV_T_LIST_H
#define XKV_T_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "object.h"
#include "util.h"

enum list_where { LIST_HEAD, LIST_TAIL };

/*
 * An element read from a list. Its bytes are at p: inside the list for a
 * string (valid until the list changes), or formatted into buf for an integer
 * entry, so a list_elem must not be copied by value.
 */
struct list_elem {
	const char *p;
	size_t len;
	char buf[LL_STR_SIZE + 1];
};

struct list_node;
struct list_pack;

/* A read-only walk from one index towards the tail or the head. */
struct list_iter {
	const struct list_node *node; /* NULL for a listpack */
	const struct list_pack *pk;
	size_t off;  /* forward: the next entry's start; reverse: its end */
	size_t left; /* elements still to return */
	bool reverse;
};

/* Called on each element a pop removes, before it is removed. */
typedef void list_elem_fn(void *ctx, const char *p, size_t len);

/* An empty list value (listpack encoded); the caller owns it. */
struct obj list_new(void);
size_t list_len(const struct obj *o);
void list_push(struct obj *o, enum list_where where, const char *p, size_t len);
/* Removes up to n elements from one end, calling fn on each in pop order;
 * returns how many were removed. */
size_t list_pop(struct obj *o, enum list_where where, size_t n, list_elem_fn *fn, void *ctx);
/* Reads the element at index; false if index >= length. */
bool list_index(const struct obj *o, size_t index, struct list_elem *out);
/* Replaces the element at index (< length). */
void list_set(struct obj *o, size_t index, const char *p, size_t len);
/* Inserts p before (or after) the first element equal to pivot; false if
 * there is none. */
bool list_insert(struct obj *o, const char *pivot, size_t plen, bool after, const char *p,
		 size_t len);
/* Removes up to limit elements equal to p (0: all), the first ones from the
 * head, or from the tail if from_tail. Returns how many were removed. */
size_t list_remove(struct obj *o, const char *p, size_t len, size_t limit, bool from_tail);
/* Removes n elements from index start on (start + n <= length). */
void list_delete_range(struct obj *o, size_t start, size_t n);

/* Starts a walk at index (< length, or anything for an empty list). */
void list_iter_init(struct list_iter *it, const struct obj *o, size_t index, bool reverse);
/* The next element of the walk, or false at its end. The list must not
 * change during a walk. */
bool list_iter_next(struct list_iter *it, struct list_elem *out);

/* Elements of this many bytes or more get a quicklist node of their own
 * (Redis's "plain" nodes); DEBUG QUICKLIST-PACKED-THRESHOLD sets it. Read
 * with a relaxed atomic. */
#define LIST_PACKED_THRESHOLD_DEFAULT ((size_t)1 << 30)
extern size_t list_packed_threshold;

/* Packs in the list: 1 for a listpack, the node count of a quicklist. */
size_t list_nodes(const struct obj *o);
/* Elements in the i-th pack from the head (i < list_nodes()). */
size_t list_node_len(const struct obj *o, size_t i);
/* Bytes of element data in all the packs (DEBUG OBJECT's
 * ql_uncompressed_size). */
size_t list_pack_bytes(const struct obj *o);
/* Checks every invariant of the encoding (entry framing both ways, counts,
 * links, no empty nodes): 0 if sound, -EINVAL otherwise. */
int list_validate(const struct obj *o);

#endif
