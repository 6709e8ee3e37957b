/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdb: values in Redis's RDB serialization, both ways.
 *
 * rdb_save_value() writes a value as Redis 8.8 writes the same logical value
 * in the same encoding: a type byte, then the body (strings with the int and
 * LZF encodings, lists as quicklist 2 of listpacks, sets as intset, listpack
 * or a plain list of members, sorted sets as listpack or ZSET_2, hashes as
 * listpack, listpack-ex or plain with per-field TTLs). xkvd's own compact
 * encodings are not Redis's bytes: genuine listpacks and intsets are built
 * here by walking each type's API. Collections in a hash table come out in
 * xkvd's iteration order, which (as between two Redis servers, whose hash
 * seeds differ) need not match another server's.
 *
 * rdb_load_value() reads every value encoding Redis 2.6 and later wrote
 * (ziplists, zipmaps, quicklist 1, linked lists, intsets, listpacks, the
 * 7.4 hash-field-expire types) into xkvd's types, which choose their
 * encoding from xkvd's thresholds as values are filled, as Redis does on
 * load. Input is untrusted (RESTORE): every length is bounds-checked and
 * empty collections or duplicate members are rejected.
 *
 * Nothing here locks or touches the keyspace.
 */
#ifndef XKV_RDB_H
#define XKV_RDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* The RDB version Redis 8.8 writes (and the newest this code reads). */
#define RDB_VERSION 14

/* A growing output buffer; the caller frees p with xfree(). */
struct rdb_buf {
	char *p;
	size_t len, cap;
};

/* A bounded input cursor over p[0..len). */
struct rdb_reader {
	const uint8_t *p;
	size_t len, off;
};

void rdb_buf_put(struct rdb_buf *b, const void *p, size_t len);
/* Redis's length encoding (6, 14, 32 or 64 bits). */
void rdb_save_len(struct rdb_buf *b, uint64_t len);
/* A string as rdbSaveRawString: int-encoded if short and canonical, LZF if
 * compress and longer than 20 bytes and it shrinks, else verbatim. */
void rdb_save_string(struct rdb_buf *b, const void *p, size_t len, bool compress);
/* The type byte and body of value o. */
void rdb_save_value(struct rdb_buf *b, const struct obj *o, bool compress);

int rdb_read_byte(struct rdb_reader *r, uint8_t *out);
int rdb_read_len(struct rdb_reader *r, uint64_t *out);
/* A string (any encoding) into a fresh xmalloc'd buffer the caller frees. */
int rdb_read_string(struct rdb_reader *r, char **out, size_t *len);
/* Is t a value type byte this code reads? */
bool rdb_type_known(uint8_t t);
/* Reads the body of a value of type byte t into *out (the caller owns it).
 * 0, or -EINVAL for malformed or unsupported data (nothing is left to free). */
int rdb_load_object(struct rdb_reader *r, uint8_t t, struct obj *out);

/* A DUMP payload's footer (RDB version, CRC-64) p[len-10..len): a version
 * not newer than ours and a CRC that matches, or is 0 (rdbchecksum no). */
bool rdb_payload_ok(const uint8_t *p, size_t len);

#endif
