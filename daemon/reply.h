/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reply: RESP2/RESP3 reply formatting into a client's output buffer.
 *
 * Command handlers write replies only through these functions; they pick the
 * RESP2 or RESP3 form from the client's protocol, so handlers never test it
 * for the common shapes (maps, sets, nulls, doubles, verbatim strings).
 * Errors: a message without a leading '-' gets "-ERR " in front of it, one
 * with a leading '-' carries its own code ("-WRONGTYPE ...").
 */
#ifndef XKV_REPLY_H
#define XKV_REPLY_H

#include <stddef.h>

struct client;

/* Replies go into blocks of this size (a larger reply gets one its size):
 * CLIENT LIST's rbs. */
#define REPLY_BLOCK_SIZE (16 * 1024)
/* The smallest a client's adaptive reply block gets (client.h rbuf_size). */
#define REPLY_BLOCK_MIN 1024

void reply_raw(struct client *c, const void *p, size_t len);
void reply_ok(struct client *c);
void reply_status(struct client *c, const char *s);
void reply_error(struct client *c, const char *msg);
void reply_errorf(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void reply_int(struct client *c, long long v);
/* An unsigned 64-bit integer as Redis replies one (addReplyUnsignedLongLong). */
void reply_uint(struct client *c, unsigned long long v);
void reply_bulk(struct client *c, const void *p, size_t len);
void reply_bulk_cstr(struct client *c, const char *s);
void reply_bulk_ll(struct client *c, long long v);
/* Null bulk: "$-1" in RESP2, "_" in RESP3. */
void reply_null(struct client *c);
/* Null array: "*-1" in RESP2, "_" in RESP3. */
void reply_null_array(struct client *c);
void reply_array(struct client *c, long len);
/* An out-of-band push (pub/sub): ">len" in RESP3, "*len" in RESP2. */
void reply_push(struct client *c, long len);
/* A map of len pairs: "%len" in RESP3, "*2len" in RESP2. */
void reply_map(struct client *c, long len);
/* A set: "~len" in RESP3, "*len" in RESP2. */
void reply_set(struct client *c, long len);
/* A double as Redis 8 prints it (d_to_str: the shortest digits that read
 * back): ",v" in RESP3, a bulk string in RESP2. */
void reply_double(struct client *c, double v);
/* A boolean: "#t"/"#f" in RESP3, ":1"/":0" in RESP2. */
void reply_bool(struct client *c, int v);
/* Verbatim text ("=len\r\ntxt:..." in RESP3, a bulk string in RESP2). */
void reply_verbatim(struct client *c, const char *p, size_t len);
/* Redis's help reply: a status line per text line. lines ends with NULL. */
void reply_help(struct client *c, const char *const *lines);

/* Shared error messages, as Redis words them. */
#define ERR_SYNTAX "syntax error"
#define ERR_NOT_INT "value is not an integer or out of range"
#define ERR_NOT_FLOAT "value is not a valid float"
#define ERR_WRONGTYPE "-WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_NO_KEY "no such key"
#define ERR_OVERFLOW "increment or decrement would overflow"
#define ERR_DB_INDEX "DB index is out of range"

#endif
