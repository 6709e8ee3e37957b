/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_hash: the hash type, a map of fields to values where each field may carry
 * its own deadline (Redis 7.4 hash field expiry).
 *
 * Encodings, as Redis reports them:
 *  - ENC_LISTPACK: one allocation holding every field/value pair in insertion
 *    order, for hashes of at most hash-max-listpack-entries fields whose fields
 *    and values are at most hash-max-listpack-value bytes;
 *  - ENC_HASHTABLE: a dict of field nodes (XXH3 hashes) plus a min-heap of the
 *    fields that have deadlines, so the next deadline is O(1) and reclaiming k
 *    expired fields costs O(k log n).
 * A hash converts to a hash table as soon as it outgrows either threshold and
 * never converts back, as in Redis.
 *
 * Field deadlines are absolute Unix milliseconds; a field is expired once the
 * clock is past its deadline. The functions here never look at the clock:
 * callers reclaim expired fields with hash_expire_due() when they look a hash
 * up, so that everything afterwards (lengths, iteration, random picks) sees only
 * live fields.
 *
 * Pointers handed out (struct hash_field) point into the hash and stay valid
 * until the hash is next modified or freed. Nothing here locks: the caller
 * holds the shard lock of the key that owns the value.
 */
#ifndef XKV_T_HASH_H
#define XKV_T_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* A field without a deadline. */
#define HASH_NO_EXPIRE (-1)

/* A field and its value, as lookups and iteration report them. */
struct hash_field {
	const char *f;
	size_t flen;
	const char *v;
	size_t vlen;
	int64_t expire; /* absolute ms, or HASH_NO_EXPIRE */
};

/*
 * Field names, as notifications with subkeys (Redis 8.8's S T I V classes)
 * carry them. A name pushed with field_list_push points at storage that
 * outlives the list (the command's argv); one added by hash_expire_due is a
 * copy the list owns. field_list_free releases both kinds.
 */
struct field_ref {
	const char *p;
	size_t len;
	bool owned;
};

struct field_list {
	struct field_ref *v;
	uint32_t n, cap;
};

void field_list_push(struct field_list *l, const char *p, size_t len);
void field_list_free(struct field_list *l); /* NULL: nothing */

/* An empty hash value (listpack encoded); obj_free() releases it. */
struct obj hash_new(void);
/* Number of fields, expired ones not yet reclaimed included. */
uint64_t hash_len(const struct obj *o);

/* Looks field f up; true and *out filled if present. */
bool hash_get(const struct obj *o, const char *f, size_t flen, struct hash_field *out);
bool hash_exists(const struct obj *o, const char *f, size_t flen);

enum hash_set_flag {
	HASH_SET_KEEPTTL = 1u << 0, /* keep an existing field's deadline */
};

/*
 * Sets field f to value v (both copied), converting the encoding when a
 * threshold is crossed. An existing field keeps its place in a listpack and,
 * with HASH_SET_KEEPTTL, its deadline; otherwise the deadline is dropped.
 * Returns true if the field was added, false if it was updated.
 */
bool hash_set(struct obj *o, const char *f, size_t flen, const char *v, size_t vlen,
	      unsigned flags);
/* Removes field f; false if it was absent. The caller deletes an emptied key. */
bool hash_delete(struct obj *o, const char *f, size_t flen);

/* Sets field f's deadline (absolute ms), or removes it with HASH_NO_EXPIRE.
 * Returns false if f is absent. */
bool hash_set_expire(struct obj *o, const char *f, size_t flen, int64_t when);
/* Removes every field whose deadline is before now; returns how many. O(1)
 * when none is due. The caller signals the change and deletes an emptied key.
 * With names non-NULL, a copy of each removed field's name is added to it. */
uint64_t hash_expire_due(struct obj *o, int64_t now, struct field_list *names);
/* The earliest field deadline, or HASH_NO_EXPIRE if no field has one. */
int64_t hash_next_expire(const struct obj *o);
/* True if some field has a deadline (cheap: no walk). */
bool hash_has_expire(const struct obj *o);
/* Redis 8.8 turns a listpack hash into "listpackex" for good when field
 * expiry first touches it (HEXPIRE, HGETEX or HSETEX with an option, on an
 * existing key): the commands mark it, and OBJECT ENCODING says so. */
void hash_mark_ex(struct obj *o);
bool hash_is_listpackex(const struct obj *o);

/* Walks every field once, in listpack order or bucket order. The hash must
 * not change during the walk. */
struct hash_iter {
	const struct obj *o;
	size_t off;	  /* listpack: next entry */
	uint64_t bucket;  /* hash table: current bucket */
	const void *node; /* hash table: next node in the bucket, or NULL */
};

void hash_iter_init(struct hash_iter *it, const struct obj *o);
bool hash_iter_next(struct hash_iter *it, struct hash_field *out);

/*
 * HSCAN: calls fn for the fields of the step at cursor and returns the next
 * cursor (0 when done). A listpack is returned whole in one step (cursor 0),
 * as Redis does; a hash table one bucket per call, in the reverse-binary order
 * that survives resizes between calls.
 */
typedef void hash_scan_fn(void *ctx, const struct hash_field *hf);
uint64_t hash_scan(const struct obj *o, uint64_t cursor, hash_scan_fn *fn, void *ctx);

/* Random picks (HRANDFIELD). A listpack gets an index of its entries so that
 * each pick is O(1); the hash must not change while the sampler lives. */
struct hash_sampler {
	const struct obj *o;
	uint32_t *offs; /* listpack: offset of each entry */
};

void hash_sampler_init(struct hash_sampler *s, const struct obj *o);
/* Picks a field with the random number r; the hash must not be empty. */
void hash_sampler_pick(const struct hash_sampler *s, uint64_t r, struct hash_field *out);
void hash_sampler_free(struct hash_sampler *s);

/* A thread's pseudo-random numbers (xorshift64*), seeded per thread. */
uint64_t hash_rand(void);

#endif
