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
#include "util.h"

/* The RDB version Redis 8.8 writes (and the newest this code reads). */
#define RDB_VERSION 14

/* A growing output buffer; the caller frees p with xfree(). */
struct rdb_buf {
	char *p;
	size_t len, cap;
};

/* A bounded input cursor over p[0..len). A streamed one (a replica's
 * diskless load) has fill, which makes at least n bytes available from off
 * (moving what is left to the front of a buffer of its own and reading
 * more): 0, or -EINVAL when the source ends first or fails. Pointers into p
 * are good only until the next read. */
struct rdb_reader {
	const uint8_t *p;
	size_t len, off;
	int (*fill)(struct rdb_reader *r, size_t n);
};

/* Are n more bytes there (filled if streamed)? 0 or -EINVAL. */
static inline int rdb_need(struct rdb_reader *r, size_t n)
{
	if (r->len - r->off >= n)
		return 0;
	return r->fill ? r->fill(r, n) : -EINVAL;
}

void rdb_buf_put(struct rdb_buf *b, const void *p, size_t len);
/* Redis's length encoding (6, 14, 32 or 64 bits). */
void rdb_save_len(struct rdb_buf *b, uint64_t len);
/* A string as rdbSaveRawString: int-encoded if short and canonical, LZF if
 * compress and longer than 20 bytes and it shrinks, else verbatim. */
void rdb_save_string(struct rdb_buf *b, const void *p, size_t len, bool compress);
/* The type byte and body of value o. */
void rdb_save_value(struct rdb_buf *b, const struct obj *o, bool compress);
/* DUMP's payload: the value, the RDB version (2 bytes LE) and the CRC-64 (8
 * bytes LE, 0 with rdbchecksum no), under rdbcompression. */
void rdb_dump_payload(struct rdb_buf *b, const struct obj *o);
/* Set by a fork child writing the replication form (rdbfile.h): small sets
 * are written as plain sets, which RDB 10 readers know. */
extern bool rdb_save_compat;

int rdb_read_byte(struct rdb_reader *r, uint8_t *out);
int rdb_read_len(struct rdb_reader *r, uint64_t *out);
/* An n-byte little-endian integer. */
int rdb_read_le(struct rdb_reader *r, int n, uint64_t *out);
/* A string (any encoding) into a fresh xmalloc'd buffer the caller frees. */
int rdb_read_string(struct rdb_reader *r, char **out, size_t *len);
/* Is t a value type byte this code reads? */
bool rdb_type_known(uint8_t t);
/* Reads the body of a value of type byte t into *out (the caller owns it).
 * 0, or -EINVAL for malformed or unsupported data (nothing is left to free). */
int rdb_load_object(struct rdb_reader *r, uint8_t t, struct obj *out);

/* Raw output: a byte, and an n-byte little-endian integer. */
void rdb_put_byte(struct rdb_buf *b, uint8_t v);
void rdb_put_le(struct rdb_buf *b, uint64_t v, int n);

/* A listpack being built, then written as one RDB string. */
struct rdb_lp {
	struct rdb_buf b;
	uint32_t count;
};
void rdb_lp_init(struct rdb_lp *lp);
void rdb_lp_int(struct rdb_lp *lp, int64_t v);
/* A string element, or an integer one for a canonical integer (lpAppend). */
void rdb_lp_str(struct rdb_lp *lp, const char *p, size_t len);
/* Closes the listpack and writes it as one RDB string; frees the builder. */
void rdb_lp_save(struct rdb_lp *lp, struct rdb_buf *out, bool compress);

/* One element of a listpack or ziplist: its bytes, or an integer. */
struct rdb_ent {
	const char *s;
	size_t len;
	long long v;
	bool is_int;
	char buf[LL_STR_SIZE + 1];
};
/* The bytes of e (an integer is formatted into e->buf). */
const char *rdb_ent_str(struct rdb_ent *e, size_t *len);
/* A cursor over a listpack or ziplist blob, checked once at start. */
struct rdb_pack {
	const uint8_t *p;
	size_t len, off;
	bool ziplist;
};
int rdb_pack_open(struct rdb_pack *k, const char *p, size_t len, bool ziplist);
/* The next element: 1 with *e filled, 0 at the end, -EINVAL. */
int rdb_pack_next(struct rdb_pack *k, struct rdb_ent *e);

/* Streams (rdb_stream.c): RDB_TYPE_STREAM_LISTPACKS to _5 read, _5 written. */
bool rdb_stream_type(uint8_t t);
/* Vector sets as Redis 8's module record (rdb_vset.c). */
void rdb_save_vset(struct rdb_buf *b, const struct obj *o);
int rdb_load_vset(struct rdb_reader *r, struct obj *out);
void rdb_save_stream(struct rdb_buf *b, const struct obj *o, bool compress);
int rdb_load_stream(struct rdb_reader *r, uint8_t t, struct obj *out);
/* A DUMP payload's footer (RDB version, CRC-64) p[len-10..len): a version
 * not newer than ours and a CRC that matches, or is 0 (rdbchecksum no). */
bool rdb_payload_ok(const uint8_t *p, size_t len);

#endif
