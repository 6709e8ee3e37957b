/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * object: typed values and their encodings.
 *
 * A value lives inline in its key's entry (struct obj is two words), and owns
 * whatever heap memory its encoding needs. Strings are encoded as Redis does,
 * so OBJECT ENCODING answers the same: "int" for canonical integers that fit a
 * long long, "embstr" for short strings as written by SET, "raw" otherwise.
 */
#ifndef XKV_OBJECT_H
#define XKV_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum obj_type {
	OBJ_STRING,
	OBJ_LIST,
	OBJ_SET,
	OBJ_ZSET,
	OBJ_HASH,
	OBJ_STREAM,
	OBJ_ARRAY,
	OBJ_VSET, /* Redis 8's vector sets (t_vset.h) */
	OBJ_TYPES
};
/* Encodings, named as OBJECT ENCODING reports them in Redis. */
enum obj_enc {
	ENC_INT,
	ENC_EMBSTR,
	ENC_RAW,
	ENC_LISTPACK,
	ENC_QUICKLIST,
	ENC_HASHTABLE,
	ENC_INTSET,
	ENC_SKIPLIST,
	ENC_STREAM,
	ENC_SLICED_ARRAY,
};

/* Strings up to this length are reported as "embstr" when set whole. */
#define EMBSTR_MAX 44

/*
 * Two words (the bit-fields share the first with type and enc, as the
 * x86-64 and arm64 ABIs lay them out): the header word packs the type, the encoding, whether a
 * string's bytes are inline in its entry, and the length (strings: bytes,
 * also for ENC_INT: digits), so that an entry of the keyspace fits a small
 * size class (store.h).
 */
struct obj {
	uint8_t type;
	uint8_t enc;
	/* ENC_EMBSTR / ENC_RAW: bytes lie inside the key's entry, which owns
	 * them (store.c): freeing the value frees nothing, and anything that
	 * reallocates them first copies them to a buffer of their own. */
	uint64_t inl : 1;
	uint64_t len : 47;
	union {
		int64_t i;   /* ENC_INT */
		char *bytes; /* ENC_EMBSTR / ENC_RAW: len bytes and a NUL, owned */
		void *ptr;   /* other types */
	};
};
_Static_assert(sizeof(struct obj) == 16, "struct obj is two words");

/* A string value that copies p[0..len), choosing the encoding as SET does. */
struct obj obj_string(const void *p, size_t len);
/* Makes o (any value, which it frees) the string p[0..len), encoded as
 * obj_string() would. A string whose buffer is the size a fresh one would get
 * takes the bytes in place: no allocation, and to memory accounting and
 * MEMORY USAGE no difference. */
void obj_string_assign(struct obj *o, const void *p, size_t len);
/* A string value holding the integer v ("int" encoding). */
struct obj obj_string_ll(long long v);
/* A string value that takes ownership of the xmalloc'd buffer p. */
struct obj obj_string_owned(char *p, size_t len);
void obj_free(struct obj *o);
struct obj obj_dup(const struct obj *o);

/* The bytes of a string value; ENC_INT is formatted into tmp, which must hold
 * LL_STR_SIZE + 1 bytes. The pointer is valid while o and tmp are unchanged. */
const char *obj_str(const struct obj *o, char *tmp, size_t *len);
/* Is the string value a canonical integer? (*v set if so.) */
bool obj_string_ll_value(const struct obj *o, long long *v);
/* Makes a string value raw and mutable with room for at least cap bytes;
 * returns its bytes (valid until the next call that may reallocate). */
char *obj_string_make_raw(struct obj *o, size_t cap);

/*
 * The aggregate types (lists, sets, sorted sets, hashes) keep their data
 * behind o->ptr in a layout of their own module (t_<type>.c), which registers
 * these operations for the generic code (freeing, COPY, MEMORY USAGE).
 */
struct obj_ops {
	void (*free)(struct obj *o);
	/* A deep copy; the original is unchanged. */
	struct obj (*dup)(const struct obj *o);
	/* Heap bytes owned by the value. */
	size_t (*mem)(const struct obj *o);
	/* About how many allocations freeing it takes (lazyfree.h); NULL: 1. */
	size_t (*free_effort)(const struct obj *o);
	/* Its elements: items, members or fields (INFO keysizes). */
	size_t (*items)(const struct obj *o);
};

/* Called by each type module once, from a constructor. */
void obj_register(enum obj_type type, const struct obj_ops *ops);

const char *obj_type_name(const struct obj *o);
const char *obj_encoding_name(const struct obj *o);
/* Heap bytes owned by the value (for MEMORY USAGE / accounting). */
size_t obj_mem(const struct obj *o);
/* The work freeing the value takes, in allocations (1 for a string). */
size_t obj_free_effort(const struct obj *o);
/* The size INFO keysizes counts: a string's length, an aggregate's
 * elements (0 for a stream, which keysizes leaves out). */
size_t obj_items(const struct obj *o);

#endif
