/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_array: Redis 8.8's array type, a sparse array over 64-bit indices.
 *
 * The index space is cut into slices of `array-slice-size` positions (a power
 * of two, fixed per array when it is made). A slice is either sparse, a sorted
 * list of (offset, value) pairs for up to `array-sparse-kmax` values, or
 * dense, a window of positions (a power of two wide) that grows toward the
 * offsets written; a dense slice left with `array-sparse-kmin` values or
 * fewer turns sparse again when that saves memory. Slices hang off a flat
 * directory while slice ids stay below 2048, then off a "superdir": sorted
 * blocks of 2048 slice pointers, so that a huge index costs one block, not a
 * directory as long as the index. ARINFO reports this layout, with the same
 * rules as Redis so the numbers agree.
 *
 * A value is one word: an integer of 62 bits, a double whose two low bits
 * are zero, a string of up to 7 bytes, all inline, or a pointer to a heap
 * string. It is replied, compared and saved as the string it was written as.
 *
 * Not thread-safe: the key's shard lock covers every call.
 */
#ifndef XKV_T_ARRAY_H
#define XKV_T_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* The "next insert" cursor before any ARINSERT (and after ARSEEK 0). */
#define AR_NO_INSERT UINT64_MAX
/* Room for an inline value decoded to text. */
#define AR_VALUE_BUF 64

typedef uintptr_t ar_value; /* 0: empty */

struct array;

/* A new empty array value (slice size from the configuration). */
struct obj array_new(void);
static inline struct array *array_of(const struct obj *o)
{
	return o->ptr;
}

uint64_t array_count(const struct array *a); /* values held */
uint64_t array_len(const struct array *a);   /* highest index + 1, or 0 */
uint64_t array_insert_idx(const struct array *a);
void array_set_insert_idx(struct array *a, uint64_t idx);

/* Values: made from the bytes written, freed when not stored. */
ar_value ar_encode(const char *p, size_t len);
void ar_value_free(ar_value v);
/* The bytes of v: inline values are written into buf (AR_VALUE_BUF bytes). */
const char *ar_decode(ar_value v, char *buf, size_t *len);
/* What v holds, as the RDB format tags it. */
enum ar_kind { AR_KIND_STRING, AR_KIND_INT, AR_KIND_FLOAT, AR_KIND_SMALL };
enum ar_kind ar_kind(ar_value v);
int64_t ar_int(ar_value v);
double ar_double(ar_value v);
/* Values as an RDB file carries them (array_rdb_* in rdb.c). */
ar_value ar_from_int(int64_t v);
ar_value ar_from_double(double d);
ar_value ar_from_small(const char *p, size_t len); /* NULL-free: 0 if len > 7 */

ar_value array_get(const struct array *a, uint64_t idx);
/* Stores v at idx (idx < UINT64_MAX), taking ownership of v. */
void array_set(struct array *a, uint64_t idx, ar_value v);
/* Frees the value at idx; true if there was one. */
bool array_del(struct array *a, uint64_t idx);
/* Deletes every value in [lo, hi]; returns how many. */
uint64_t array_del_range(struct array *a, uint64_t lo, uint64_t hi);
/* Before writing every position of [lo, hi]: makes dense, at once, the
 * slices the writes would promote anyway (Redis's range-set rule). */
void array_prepare_range(struct array *a, uint64_t lo, uint64_t hi);

/* Calls fn on each value in [lo, hi] (either order of the bounds), in
 * increasing index order, or decreasing if lo > hi; stops when fn returns
 * false. The array must not change meanwhile. */
typedef bool array_walk_fn(void *ctx, uint64_t idx, ar_value v);
void array_walk(const struct array *a, uint64_t from, uint64_t to, array_walk_fn *fn, void *ctx);

/* ARRING's resize: rebuilds a into the most recent `keep` positions (walking
 * back from the cursor, up to the first hole), oldest first from index 0. */
void array_ring_rework(struct array *a, uint64_t old_span, uint64_t keep);

struct array_info {
	uint64_t slices, directory_size, superdir_entries, slice_size;
	uint64_t dense, sparse, dense_window_total, dense_count_total, sparse_cap_total;
};
void array_info(const struct array *a, struct array_info *out);

#endif
