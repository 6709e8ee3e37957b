// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdb: Redis's value serialization (see rdb.h). The byte layouts were learnt
 * from Redis 8.8's rdb.c, listpack.c, ziplist.c, zipmap.c and intset.c and
 * are written here from that description:
 *  - listpack: a 4-byte total size and 2-byte count (little endian, 65535
 *    meaning "count unknown"), entries, then 0xff. An entry is an encoding
 *    byte (7-bit uint, 6-bit string, 13-bit int, 12-bit string, 16/24/32/64
 *    bit int, 32-bit string) with its data, then a "backlen" varint of the
 *    entry's size written so it reads from its last byte backwards;
 *  - ziplist (read only): 10-byte header, entries of prevlen + encoding +
 *    data, 0xff;
 *  - zipmap (read only): a count byte then length-prefixed keys and values;
 *  - intset: a 4-byte width (2, 4, 8), a 4-byte count, then that many sorted
 *    little-endian integers of that width.
 */
#include <errno.h>
#include <limits.h>
#include <liblzf/lzf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "crc64.h"
#include "mem.h"
#include "crc64.h"
#include "rdb.h"
#include "t_array.h"
#include "t_hash.h"
#include "t_list.h"
#include "t_set.h"
#include "t_zset.h"
#include "util.h"

enum rdb_type {
	RDB_TYPE_STRING = 0,
	RDB_TYPE_LIST = 1,
	RDB_TYPE_SET = 2,
	RDB_TYPE_ZSET = 3,
	RDB_TYPE_HASH = 4,
	RDB_TYPE_ZSET_2 = 5,
	RDB_TYPE_MODULE_2 = 7,
	RDB_TYPE_HASH_ZIPMAP = 9,
	RDB_TYPE_LIST_ZIPLIST = 10,
	RDB_TYPE_SET_INTSET = 11,
	RDB_TYPE_ZSET_ZIPLIST = 12,
	RDB_TYPE_HASH_ZIPLIST = 13,
	RDB_TYPE_LIST_QUICKLIST = 14,
	RDB_TYPE_HASH_LISTPACK = 16,
	RDB_TYPE_ZSET_LISTPACK = 17,
	RDB_TYPE_LIST_QUICKLIST_2 = 18,
	RDB_TYPE_SET_LISTPACK = 20,
	RDB_TYPE_HASH_METADATA_PRE_GA = 22,
	RDB_TYPE_HASH_LISTPACK_EX_PRE_GA = 23,
	RDB_TYPE_HASH_METADATA = 24,
	RDB_TYPE_HASH_LISTPACK_EX = 25,
	RDB_TYPE_ARRAY = 28,
};

#define RDB_ENC_INT8 0
#define RDB_ENC_INT16 1
#define RDB_ENC_INT32 2
#define RDB_ENC_LZF 3

#define QUICKLIST_PLAIN 1
#define QUICKLIST_PACKED 2

/* Longest decimal form of a 64-bit integer plus one: listpack never reads
 * longer strings as integers. */
#define LP_INT_STR_MAX 21

/* Redis caps one string at 512 MB by default; a larger claim in untrusted
 * input is refused before anything is allocated for it. */
#define RDB_STRING_MAX (1ULL << 32)

/* ---- output ------------------------------------------------------------------------------- */

void rdb_buf_put(struct rdb_buf *b, const void *p, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (cap < b->len + len)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, p, len);
	b->len += len;
}

void rdb_put_byte(struct rdb_buf *b, uint8_t v)
{
	rdb_buf_put(b, &v, 1);
}

void rdb_put_le(struct rdb_buf *b, uint64_t v, int n)
{
	uint8_t t[8];

	for (int i = 0; i < n; i++)
		t[i] = v >> (8 * i);
	rdb_buf_put(b, t, n);
}

void rdb_save_len(struct rdb_buf *b, uint64_t len)
{
	if (len < (1 << 6)) {
		rdb_put_byte(b, len);
	} else if (len < (1 << 14)) {
		rdb_put_byte(b, 0x40 | (len >> 8));
		rdb_put_byte(b, len & 0xff);
	} else if (len <= UINT32_MAX) {
		rdb_put_byte(b, 0x80);
		for (int i = 3; i >= 0; i--)
			rdb_put_byte(b, len >> (8 * i));
	} else {
		rdb_put_byte(b, 0x81);
		for (int i = 7; i >= 0; i--)
			rdb_put_byte(b, len >> (8 * i));
	}
}

/* The 8/16/32-bit integer encodings of a string; false if v needs more. */
static bool rdb_save_int_enc(struct rdb_buf *b, long long v)
{
	if (v >= INT8_MIN && v <= INT8_MAX) {
		rdb_put_byte(b, 0xc0 | RDB_ENC_INT8);
		rdb_put_le(b, (uint64_t)v, 1);
	} else if (v >= INT16_MIN && v <= INT16_MAX) {
		rdb_put_byte(b, 0xc0 | RDB_ENC_INT16);
		rdb_put_le(b, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		rdb_put_byte(b, 0xc0 | RDB_ENC_INT32);
		rdb_put_le(b, (uint64_t)v, 4);
	} else {
		return false;
	}
	return true;
}

/* LZF only when it saves at least four bytes, as Redis requires. */
static bool rdb_save_lzf(struct rdb_buf *b, const void *p, size_t len)
{
	size_t outlen = len - 4;
	char *out = xmalloc(outlen + 1);
	unsigned int n = lzf_compress(p, len, out, outlen);

	if (n) {
		rdb_put_byte(b, 0xc0 | RDB_ENC_LZF);
		rdb_save_len(b, n);
		rdb_save_len(b, len);
		rdb_buf_put(b, out, n);
	}
	xfree(out);
	return n != 0;
}

void rdb_save_string(struct rdb_buf *b, const void *p, size_t len, bool compress)
{
	long long v;

	if (len <= 11 && str_to_ll(p, len, &v) && rdb_save_int_enc(b, v))
		return;
	/* Under 21 bytes LZF never wins, so Redis does not try. */
	if (compress && len > 20 && rdb_save_lzf(b, p, len))
		return;
	rdb_save_len(b, len);
	rdb_buf_put(b, p, len);
}

static void rdb_save_ll_string(struct rdb_buf *b, long long v)
{
	char tmp[LL_STR_SIZE + 1];
	int n;

	if (rdb_save_int_enc(b, v))
		return;
	n = ll_to_str(tmp, v);
	rdb_save_len(b, n);
	rdb_buf_put(b, tmp, n);
}

/* ---- listpack building ---------------------------------------------------------------------- */

void rdb_lp_init(struct rdb_lp *lp)
{
	static const uint8_t hdr[6];

	memset(lp, 0, sizeof(*lp));
	rdb_buf_put(&lp->b, hdr, sizeof(hdr));
}

static void rdb_lp_backlen(struct rdb_lp *lp, uint64_t l)
{
	uint8_t t[5];
	int n;

	if (l <= 127)
		n = 1;
	else if (l <= 16383)
		n = 2;
	else if (l <= 2097151)
		n = 3;
	else if (l <= 268435455)
		n = 4;
	else
		n = 5;
	/* Most significant 7 bits first; every byte but the first has bit 7 set,
	 * so a reader going backwards knows where the varint starts. */
	for (int i = 0; i < n; i++)
		t[i] = ((l >> (7 * (n - 1 - i))) & 127) | (i ? 128 : 0);
	rdb_buf_put(&lp->b, t, n);
}

void rdb_lp_int(struct rdb_lp *lp, int64_t v)
{
	uint8_t t[9];
	int n;

	if (v >= 0 && v <= 127) {
		t[0] = v;
		n = 1;
	} else if (v >= -4096 && v <= 4095) {
		uint64_t u = v < 0 ? (1 << 13) + v : v;

		t[0] = 0xc0 | (u >> 8);
		t[1] = u & 0xff;
		n = 2;
	} else {
		int w = v >= INT16_MIN && v <= INT16_MAX   ? 2
			: v >= -8388608 && v <= 8388607	   ? 3
			: v >= INT32_MIN && v <= INT32_MAX ? 4
							   : 8;
		uint64_t u = (uint64_t)v;

		t[0] = w == 2 ? 0xf1 : w == 3 ? 0xf2 : w == 4 ? 0xf3 : 0xf4;
		for (int i = 0; i < w; i++)
			t[1 + i] = u >> (8 * i);
		n = 1 + w;
	}
	rdb_buf_put(&lp->b, t, n);
	rdb_lp_backlen(lp, n);
	lp->count++;
}

/* A string entry, or an integer one when the bytes are a canonical integer,
 * as Redis's lpAppend stores them. */
void rdb_lp_str(struct rdb_lp *lp, const char *p, size_t len)
{
	uint8_t t[5];
	size_t h;
	long long v;

	if (len && len < LP_INT_STR_MAX && str_to_ll(p, len, &v)) {
		rdb_lp_int(lp, v);
		return;
	}
	if (len < 64) {
		t[0] = 0x80 | len;
		h = 1;
	} else if (len < 4096) {
		t[0] = 0xe0 | (len >> 8);
		t[1] = len & 0xff;
		h = 2;
	} else {
		t[0] = 0xf0;
		for (int i = 0; i < 4; i++)
			t[1 + i] = len >> (8 * i);
		h = 5;
	}
	rdb_buf_put(&lp->b, t, h);
	rdb_buf_put(&lp->b, p, len);
	rdb_lp_backlen(lp, h + len);
	lp->count++;
}

/* Closes the listpack and writes it as one RDB string; frees the builder. */
void rdb_lp_save(struct rdb_lp *lp, struct rdb_buf *out, bool compress)
{
	uint8_t *h;
	uint32_t n;

	rdb_put_byte(&lp->b, 0xff);
	h = (uint8_t *)lp->b.p;
	n = lp->b.len;
	for (int i = 0; i < 4; i++)
		h[i] = n >> (8 * i);
	n = lp->count < 65535 ? lp->count : 65535;
	h[4] = n & 0xff;
	h[5] = n >> 8;
	rdb_save_string(out, lp->b.p, lp->b.len, compress);
	xfree(lp->b.p);
}

/* ---- saving each type ------------------------------------------------------------------------ */

static void rdb_save_list(struct rdb_buf *b, const struct obj *o, bool compress)
{
	size_t nodes = list_nodes(o);
	struct list_iter it;
	struct list_elem el;

	rdb_put_byte(b, RDB_TYPE_LIST_QUICKLIST_2);
	rdb_save_len(b, nodes);
	list_iter_init(&it, o, 0, false);
	/* One listpack per node, so the node boundaries are the list's own. */
	for (size_t i = 0; i < nodes; i++) {
		size_t n = list_node_len(o, i);
		struct rdb_lp lp;

		rdb_lp_init(&lp);
		for (size_t k = 0; k < n && list_iter_next(&it, &el); k++)
			rdb_lp_str(&lp, el.p, el.len);
		rdb_save_len(b, QUICKLIST_PACKED);
		rdb_lp_save(&lp, b, compress);
	}
}

static int rdb_cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static void rdb_save_intset(struct rdb_buf *b, const struct obj *o, bool compress)
{
	size_t n = set_size(o), k = 0;
	long long *v = xmalloc((n ? n : 1) * sizeof(*v));
	struct set_iter it;
	struct rdb_buf is = { 0 };
	const char *p;
	size_t len;
	uint32_t w = 2;

	set_iter_init(&it, o);
	while (k < n && set_iter_next(&it, &p, &len))
		if (str_to_ll(p, len, &v[k]))
			k++;
	qsort(v, k, sizeof(*v), rdb_cmp_ll);
	for (size_t i = 0; i < k; i++) {
		if (v[i] < INT32_MIN || v[i] > INT32_MAX)
			w = 8;
		else if ((v[i] < INT16_MIN || v[i] > INT16_MAX) && w < 4)
			w = 4;
	}
	rdb_put_le(&is, w, 4);
	rdb_put_le(&is, k, 4);
	for (size_t i = 0; i < k; i++)
		rdb_put_le(&is, (uint64_t)v[i], w);
	rdb_save_string(b, is.p, is.len, compress);
	xfree(is.p);
	xfree(v);
}

bool rdb_save_compat;

static void rdb_save_set(struct rdb_buf *b, const struct obj *o, bool compress)
{
	struct set_iter it;
	const char *p;
	size_t len;

	if (o->enc == ENC_INTSET) {
		rdb_put_byte(b, RDB_TYPE_SET_INTSET);
		rdb_save_intset(b, o, compress);
	} else if (o->enc == ENC_LISTPACK && !rdb_save_compat) {
		struct rdb_lp lp;

		rdb_put_byte(b, RDB_TYPE_SET_LISTPACK);
		rdb_lp_init(&lp);
		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			rdb_lp_str(&lp, p, len);
		rdb_lp_save(&lp, b, compress);
	} else {
		rdb_put_byte(b, RDB_TYPE_SET);
		rdb_save_len(b, set_size(o));
		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			rdb_save_string(b, p, len, compress);
	}
}

/* Redis's double2ll: scores that are exact integers of moderate size are
 * stored in a listpack as integers. */
static bool rdb_double_ll(double d, long long *out)
{
	long long ll;

	if (d < (double)(-LLONG_MAX / 2) || d > (double)(LLONG_MAX / 2))
		return false;
	ll = (long long)d;
	if ((double)ll != d)
		return false;
	*out = ll;
	return true;
}

static void rdb_save_zset(struct rdb_buf *b, const struct obj *o, bool compress)
{
	size_t n = zset_len(o);
	struct zset_iter it;
	struct zset_elem el;

	if (o->enc == ENC_LISTPACK) {
		struct rdb_lp lp;

		rdb_put_byte(b, RDB_TYPE_ZSET_LISTPACK);
		rdb_lp_init(&lp);
		zset_iter_init(&it, o, 0, false);
		while (zset_iter_next(&it, &el)) {
			char tmp[64];
			long long ll;

			rdb_lp_str(&lp, el.m, el.len);
			if (rdb_double_ll(el.score, &ll))
				rdb_lp_int(&lp, ll);
			else
				rdb_lp_str(&lp, tmp, d_to_str(tmp, sizeof(tmp), el.score));
		}
		rdb_lp_save(&lp, b, compress);
		return;
	}
	/* ZSET_2: greatest first, scores as binary little-endian doubles. */
	rdb_put_byte(b, RDB_TYPE_ZSET_2);
	rdb_save_len(b, n);
	if (!n)
		return;
	zset_iter_init(&it, o, n - 1, true);
	while (zset_iter_next(&it, &el)) {
		uint64_t u;

		memcpy(&u, &el.score, 8);
		rdb_save_string(b, el.m, el.len, compress);
		rdb_put_le(b, u, 8);
	}
}

struct rdb_hfield {
	const char *f, *v;
	size_t flen, vlen;
	int64_t expire;
	size_t pos;
};

/* Redis keeps a listpack-ex hash ordered: fields with a TTL first, by TTL,
 * then the others in insertion order. */
static int rdb_cmp_hfield(const void *a, const void *b)
{
	const struct rdb_hfield *x = a, *y = b;
	bool xe = x->expire != HASH_NO_EXPIRE, ye = y->expire != HASH_NO_EXPIRE;

	if (xe != ye)
		return xe ? -1 : 1;
	if (xe && x->expire != y->expire)
		return x->expire < y->expire ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void rdb_save_hash(struct rdb_buf *b, const struct obj *o, bool compress)
{
	bool ttl = hash_has_expire(o);
	int64_t min = hash_next_expire(o);
	size_t n = hash_len(o), k = 0;
	struct rdb_hfield *fs = xmalloc((n ? n : 1) * sizeof(*fs));
	struct hash_iter it;
	struct hash_field hf;

	hash_iter_init(&it, o);
	while (k < n && hash_iter_next(&it, &hf)) {
		fs[k] = (struct rdb_hfield){ hf.f, hf.v, hf.flen, hf.vlen, hf.expire, k };
		k++;
	}
	if (o->enc == ENC_LISTPACK) {
		struct rdb_lp lp;

		rdb_put_byte(b, ttl ? RDB_TYPE_HASH_LISTPACK_EX : RDB_TYPE_HASH_LISTPACK);
		if (ttl) {
			qsort(fs, k, sizeof(*fs), rdb_cmp_hfield);
			rdb_put_le(b, (uint64_t)(min == HASH_NO_EXPIRE ? 0 : min), 8);
		}
		rdb_lp_init(&lp);
		for (size_t i = 0; i < k; i++) {
			rdb_lp_str(&lp, fs[i].f, fs[i].flen);
			rdb_lp_str(&lp, fs[i].v, fs[i].vlen);
			if (ttl)
				rdb_lp_int(&lp, fs[i].expire == HASH_NO_EXPIRE ? 0 : fs[i].expire);
		}
		rdb_lp_save(&lp, b, compress);
	} else {
		rdb_put_byte(b, ttl ? RDB_TYPE_HASH_METADATA : RDB_TYPE_HASH);
		if (ttl)
			rdb_put_le(b, (uint64_t)min, 8);
		rdb_save_len(b, k);
		for (size_t i = 0; i < k; i++) {
			/* A TTL is stored relative to the hash's earliest, plus one:
			 * 0 means none. */
			if (ttl)
				rdb_save_len(b, fs[i].expire == HASH_NO_EXPIRE
							? 0
							: (uint64_t)(fs[i].expire - min) + 1);
			rdb_save_string(b, fs[i].f, fs[i].flen, compress);
			rdb_save_string(b, fs[i].v, fs[i].vlen, compress);
		}
	}
	xfree(fs);
}

/* An array: its count, its insert cursor (a flag, then the index: the cursor
 * may be 2^64-1, which a length cannot carry), then each value in index
 * order as (index, tag, body); the tag says how Redis holds the value. */
enum { AR_RDB_STRING = 0, AR_RDB_INT = 1, AR_RDB_FLOAT = 2, AR_RDB_SMALL = 3 };

struct ar_save {
	struct rdb_buf *b;
	bool compress;
};

static bool rdb_save_array_value(void *ctx, uint64_t idx, ar_value v)
{
	struct ar_save *as = ctx;
	char buf[AR_VALUE_BUF];
	const char *p;
	size_t len;
	double d;
	uint64_t bits;

	rdb_save_len(as->b, idx);
	switch (ar_kind(v)) {
	case AR_KIND_INT:
		rdb_save_len(as->b, AR_RDB_INT);
		rdb_put_le(as->b, (uint64_t)ar_int(v), 8);
		break;
	case AR_KIND_FLOAT:
		rdb_save_len(as->b, AR_RDB_FLOAT);
		d = ar_double(v);
		memcpy(&bits, &d, sizeof(bits));
		rdb_put_le(as->b, bits, 8);
		break;
	default:
		rdb_save_len(as->b, ar_kind(v) == AR_KIND_SMALL ? AR_RDB_SMALL : AR_RDB_STRING);
		p = ar_decode(v, buf, &len);
		rdb_save_string(as->b, p, len, as->compress);
		break;
	}
	return true;
}

static void rdb_save_array(struct rdb_buf *b, const struct obj *o, bool compress)
{
	const struct array *a = array_of(o);
	struct ar_save as = { b, compress };

	rdb_put_byte(b, RDB_TYPE_ARRAY);
	rdb_save_len(b, array_count(a));
	rdb_save_len(b, array_insert_idx(a) != AR_NO_INSERT);
	if (array_insert_idx(a) != AR_NO_INSERT)
		rdb_save_len(b, array_insert_idx(a));
	array_walk(a, 0, UINT64_MAX - 1, rdb_save_array_value, &as);
}

void rdb_save_value(struct rdb_buf *b, const struct obj *o, bool compress)
{
	switch (o->type) {
	case OBJ_STRING:
		rdb_put_byte(b, RDB_TYPE_STRING);
		if (o->enc == ENC_INT)
			rdb_save_ll_string(b, o->i);
		else
			rdb_save_string(b, o->bytes, o->len, compress);
		break;
	case OBJ_LIST:
		rdb_save_list(b, o, compress);
		break;
	case OBJ_SET:
		rdb_save_set(b, o, compress);
		break;
	case OBJ_ZSET:
		rdb_save_zset(b, o, compress);
		break;
	case OBJ_HASH:
		rdb_save_hash(b, o, compress);
		break;
	case OBJ_STREAM:
		rdb_save_stream(b, o, compress);
		break;
	case OBJ_ARRAY:
		rdb_save_array(b, o, compress);
		break;
	case OBJ_VSET:
		rdb_save_vset(b, o);
		break;
	}
}

void rdb_dump_payload(struct rdb_buf *b, const struct obj *o)
{
	uint8_t ver[2] = { RDB_VERSION & 0xff, RDB_VERSION >> 8 };
	uint64_t crc = 0;

	rdb_save_value(b, o, config.rdbcompression);
	rdb_buf_put(b, ver, sizeof(ver));
	if (config.rdbchecksum)
		crc = crc64_update(0, b->p, b->len);
	for (int i = 0; i < 8; i++) {
		uint8_t x = crc >> (8 * i);

		rdb_buf_put(b, &x, 1);
	}
}

/* ---- input ---------------------------------------------------------------------------------- */

int rdb_read_byte(struct rdb_reader *r, uint8_t *out)
{
	if (rdb_need(r, 1))
		return -EINVAL;
	*out = r->p[r->off++];
	return 0;
}

int rdb_read_le(struct rdb_reader *r, int n, uint64_t *out)
{
	uint64_t v = 0;

	if (rdb_need(r, n))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	*out = v;
	return 0;
}

/* A length, or (*enc set) the special string encoding it announces. */
static int rdb_read_len_enc(struct rdb_reader *r, uint64_t *out, bool *enc)
{
	uint8_t b, c;
	uint64_t v = 0;
	int n;

	*enc = false;
	if (rdb_read_byte(r, &b))
		return -EINVAL;
	switch (b >> 6) {
	case 0:
		*out = b & 0x3f;
		return 0;
	case 1:
		if (rdb_read_byte(r, &c))
			return -EINVAL;
		*out = ((uint64_t)(b & 0x3f) << 8) | c;
		return 0;
	case 3:
		*enc = true;
		*out = b & 0x3f;
		return 0;
	}
	if (b == 0x80)
		n = 4;
	else if (b == 0x81)
		n = 8;
	else
		return -EINVAL;
	if (rdb_need(r, n))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		v = (v << 8) | r->p[r->off++];
	*out = v;
	return 0;
}

int rdb_read_len(struct rdb_reader *r, uint64_t *out)
{
	bool enc;

	return rdb_read_len_enc(r, out, &enc) || enc ? -EINVAL : 0;
}

int rdb_read_string(struct rdb_reader *r, char **out, size_t *len)
{
	uint64_t n, clen;
	bool enc;
	char *p;

	if (rdb_read_len_enc(r, &n, &enc))
		return -EINVAL;
	if (enc && n <= RDB_ENC_INT32) {
		uint64_t u;
		int w = n == RDB_ENC_INT8 ? 1 : n == RDB_ENC_INT16 ? 2 : 4;
		long long v;
		char tmp[LL_STR_SIZE + 1];

		if (rdb_read_le(r, w, &u))
			return -EINVAL;
		v = w == 1 ? (int8_t)u : w == 2 ? (int16_t)u : (int32_t)u;
		*len = ll_to_str(tmp, v);
		*out = xstrndup(tmp, *len);
		return 0;
	}
	if (enc && n == RDB_ENC_LZF) {
		if (rdb_read_len(r, &clen) || rdb_read_len(r, &n) || rdb_need(r, clen) ||
		    n > RDB_STRING_MAX || !n)
			return -EINVAL;
		p = xmalloc(n + 1);
		if (lzf_decompress(r->p + r->off, clen, p, n) != n) {
			xfree(p);
			return -EINVAL;
		}
		r->off += clen;
		p[n] = '\0';
		*out = p;
		*len = n;
		return 0;
	}
	if (enc || rdb_need(r, n))
		return -EINVAL;
	*out = xstrndup((const char *)r->p + r->off, n);
	*len = n;
	r->off += n;
	return 0;
}

/* ---- compact encodings, read ------------------------------------------------------------------ */

/* The bytes of e (an integer is formatted into e->buf). */
const char *rdb_ent_str(struct rdb_ent *e, size_t *len)
{
	if (e->is_int) {
		*len = ll_to_str(e->buf, e->v);
		return e->buf;
	}
	*len = e->len;
	return e->s;
}

static int64_t rdb_sext(uint64_t v, int bits)
{
	uint64_t m = 1ULL << (bits - 1);

	return (int64_t)((v ^ m) - m);
}

static uint64_t rdb_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int rdb_pack_open(struct rdb_pack *k, const char *p, size_t len, bool ziplist)
{
	size_t hdr = ziplist ? 10 : 6;

	k->p = (const uint8_t *)p;
	k->len = len;
	k->off = hdr;
	k->ziplist = ziplist;
	if (len < hdr + 1 || rdb_le(k->p, 4) != len || k->p[len - 1] != 0xff)
		return -EINVAL;
	return 0;
}

static unsigned rdb_lp_backlen_size(uint64_t l)
{
	return l <= 127 ? 1 : l <= 16383 ? 2 : l <= 2097151 ? 3 : l <= 268435455 ? 4 : 5;
}

/* The next listpack entry: 1 with *e filled, 0 at the end, -EINVAL. */
static int rdb_lp_next(struct rdb_pack *k, struct rdb_ent *e)
{
	const uint8_t *q = k->p + k->off;
	size_t left = k->len - k->off, h, dl = 0, sz;
	uint8_t b = q[0];

	e->is_int = true;
	if (b == 0xff)
		return k->off == k->len - 1 ? 0 : -EINVAL;
	if (!(b & 0x80)) {
		e->v = b & 0x7f;
		h = 1;
	} else if ((b & 0xc0) == 0x80) {
		e->is_int = false;
		h = 1;
		dl = b & 0x3f;
	} else if ((b & 0xe0) == 0xc0) {
		if (left < 2)
			return -EINVAL;
		e->v = rdb_sext(((uint64_t)(b & 0x1f) << 8) | q[1], 13);
		h = 2;
	} else if ((b & 0xf0) == 0xe0) {
		if (left < 2)
			return -EINVAL;
		e->is_int = false;
		h = 2;
		dl = ((size_t)(b & 0x0f) << 8) | q[1];
	} else if (b == 0xf0) {
		if (left < 5)
			return -EINVAL;
		e->is_int = false;
		h = 5;
		dl = rdb_le(q + 1, 4);
	} else if (b >= 0xf1 && b <= 0xf4) {
		int w = b == 0xf1 ? 2 : b == 0xf2 ? 3 : b == 0xf3 ? 4 : 8;

		if (left < 1 + (size_t)w)
			return -EINVAL;
		e->v = rdb_sext(rdb_le(q + 1, w), 8 * w);
		h = 1 + w;
	} else {
		return -EINVAL;
	}
	sz = h + dl;
	if (dl > left || sz + rdb_lp_backlen_size(sz) >= left)
		return -EINVAL;
	e->s = (const char *)q + h;
	e->len = dl;
	k->off += sz + rdb_lp_backlen_size(sz);
	return 1;
}

/* The next ziplist entry, as rdb_lp_next. */
static int rdb_zl_next(struct rdb_pack *k, struct rdb_ent *e)
{
	const uint8_t *q = k->p + k->off;
	size_t left = k->len - k->off, h, dl = 0;
	uint8_t b;

	if (q[0] == 0xff)
		return k->off == k->len - 1 ? 0 : -EINVAL;
	h = q[0] == 0xfe ? 5 : 1;
	if (left < h + 2)
		return -EINVAL;
	b = q[h];
	e->is_int = true;
	switch (b >> 6) {
	case 0:
		e->is_int = false;
		dl = b & 0x3f;
		h += 1;
		break;
	case 1:
		e->is_int = false;
		dl = ((size_t)(b & 0x3f) << 8) | q[h + 1];
		h += 2;
		break;
	case 2:
		if (left < h + 6)
			return -EINVAL;
		e->is_int = false;
		dl = ((size_t)q[h + 1] << 24) | ((size_t)q[h + 2] << 16) | ((size_t)q[h + 3] << 8) |
		     q[h + 4];
		h += 5;
		break;
	default: {
		int w = b == 0xc0   ? 2
			: b == 0xd0 ? 4
			: b == 0xe0 ? 8
			: b == 0xf0 ? 3
			: b == 0xfe ? 1
				    : 0;

		h += 1;
		if (!w) {
			if (b < 0xf1 || b > 0xfd)
				return -EINVAL;
			e->v = (b & 0x0f) - 1;
			break;
		}
		if (left < h + w + 1)
			return -EINVAL;
		e->v = rdb_sext(rdb_le(q + h, w), 8 * w);
		h += w;
		break;
	}
	}
	if (dl >= left || h + dl >= left)
		return -EINVAL;
	e->s = (const char *)q + h;
	e->len = dl;
	k->off += h + dl;
	return 1;
}

int rdb_pack_next(struct rdb_pack *k, struct rdb_ent *e)
{
	return k->ziplist ? rdb_zl_next(k, e) : rdb_lp_next(k, e);
}

/* ---- loading each type ------------------------------------------------------------------------ */

static void rdb_list_add(void *ctx, const char *p, size_t len)
{
	list_push(ctx, LIST_TAIL, p, len);
}

/* Pushes every element of a listpack/ziplist blob onto list o. */
static int rdb_load_pack_into_list(struct obj *o, const char *p, size_t len, bool ziplist)
{
	struct rdb_pack k;
	struct rdb_ent e;
	int rc;

	if (rdb_pack_open(&k, p, len, ziplist))
		return -EINVAL;
	while ((rc = rdb_pack_next(&k, &e)) == 1) {
		const char *s = rdb_ent_str(&e, &len);

		rdb_list_add(o, s, len);
	}
	return rc;
}

static int rdb_load_list(struct rdb_reader *r, uint8_t t, struct obj *o)
{
	uint64_t n, container = QUICKLIST_PACKED;
	char *s;
	size_t len;
	int rc = 0;

	if (rdb_read_len(r, &n))
		return -EINVAL;
	*o = list_new();
	for (uint64_t i = 0; i < n && !rc; i++) {
		if (t == RDB_TYPE_LIST_QUICKLIST_2 && rdb_read_len(r, &container))
			return -EINVAL;
		if (rdb_read_string(r, &s, &len))
			return -EINVAL;
		if (t == RDB_TYPE_LIST || container == QUICKLIST_PLAIN)
			rdb_list_add(o, s, len);
		else if (container == QUICKLIST_PACKED)
			rc = rdb_load_pack_into_list(o, s, len, t == RDB_TYPE_LIST_QUICKLIST);
		else
			rc = -EINVAL;
		xfree(s);
	}
	return rc;
}

static int rdb_set_add(struct obj *o, bool *made, const char *p, size_t len, size_t hint)
{
	if (!*made) {
		*o = set_new(p, len, hint);
		*made = true;
	}
	return set_add(o, p, len) == 1 ? 0 : -EINVAL;
}

static int rdb_load_intset(struct obj *o, bool *made, const char *p, size_t len)
{
	const uint8_t *q = (const uint8_t *)p;
	uint64_t w, n;
	char tmp[LL_STR_SIZE + 1];

	if (len < 8)
		return -EINVAL;
	w = rdb_le(q, 4);
	n = rdb_le(q + 4, 4);
	if ((w != 2 && w != 4 && w != 8) || len != 8 + w * n)
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++) {
		long long v = rdb_sext(rdb_le(q + 8 + i * w, w), 8 * w);
		int l = ll_to_str(tmp, v);

		if (rdb_set_add(o, made, tmp, l, n))
			return -EINVAL;
	}
	return 0;
}

static int rdb_load_set(struct rdb_reader *r, uint8_t t, struct obj *o, bool *made)
{
	char *s;
	size_t len;
	uint64_t n;
	int rc = 0;

	if (t == RDB_TYPE_SET) {
		if (rdb_read_len(r, &n))
			return -EINVAL;
		for (uint64_t i = 0; i < n && !rc; i++) {
			if (rdb_read_string(r, &s, &len))
				return -EINVAL;
			rc = rdb_set_add(o, made, s, len, n);
			xfree(s);
		}
		return rc;
	}
	if (rdb_read_string(r, &s, &len))
		return -EINVAL;
	if (t == RDB_TYPE_SET_INTSET) {
		rc = rdb_load_intset(o, made, s, len);
	} else {
		struct rdb_pack k;
		struct rdb_ent e;
		size_t hint = len >= 6 ? rdb_le((const uint8_t *)s + 4, 2) : 0;

		rc = rdb_pack_open(&k, s, len, false);
		while (!rc && (rc = rdb_pack_next(&k, &e)) == 1) {
			size_t l;
			const char *m = rdb_ent_str(&e, &l);

			rc = rdb_set_add(o, made, m, l, hint);
		}
	}
	xfree(s);
	return rc;
}

static int rdb_zset_add(struct obj *o, double score, const char *m, size_t len)
{
	if (isnan(score))
		return -EINVAL;
	return zset_add(o, score, m, len, 0, NULL) == ZADD_ADDED ? 0 : -EINVAL;
}

/* The old text form of a double: a length byte (253 nan, 254 inf, 255
 * -inf) then that many characters. */
static int rdb_read_text_double(struct rdb_reader *r, double *out)
{
	uint8_t n;
	char tmp[256];

	if (rdb_read_byte(r, &n))
		return -EINVAL;
	if (n >= 253) {
		*out = n == 253 ? NAN : n == 254 ? INFINITY : -INFINITY;
		return 0;
	}
	if (rdb_need(r, n))
		return -EINVAL;
	memcpy(tmp, r->p + r->off, n);
	tmp[n] = '\0';
	r->off += n;
	return sscanf(tmp, "%lg", out) == 1 ? 0 : -EINVAL;
}

static int rdb_load_zset(struct rdb_reader *r, uint8_t t, struct obj *o, bool *made)
{
	char *s;
	size_t len;
	uint64_t n;
	int rc = 0;

	if (t == RDB_TYPE_ZSET || t == RDB_TYPE_ZSET_2) {
		if (rdb_read_len(r, &n))
			return -EINVAL;
		for (uint64_t i = 0; i < n && !rc; i++) {
			double d;
			uint64_t u = 0;

			if (rdb_read_string(r, &s, &len))
				return -EINVAL;
			if (!*made) {
				*o = zset_new(n, len);
				*made = true;
			}
			if (t == RDB_TYPE_ZSET_2) {
				rc = rdb_read_le(r, 8, &u);
				memcpy(&d, &u, 8);
			} else {
				rc = rdb_read_text_double(r, &d);
			}
			if (!rc)
				rc = rdb_zset_add(o, d, s, len);
			xfree(s);
		}
		return rc;
	}
	if (rdb_read_string(r, &s, &len))
		return -EINVAL;
	{
		struct rdb_pack k;
		struct rdb_ent m, sc;

		rc = rdb_pack_open(&k, s, len, t == RDB_TYPE_ZSET_ZIPLIST);
		while (!rc && (rc = rdb_pack_next(&k, &m)) == 1) {
			size_t ml, sl;
			const char *mp = rdb_ent_str(&m, &ml), *sp;
			double d;

			if (rdb_pack_next(&k, &sc) != 1) {
				rc = -EINVAL;
				break;
			}
			sp = rdb_ent_str(&sc, &sl);
			if (!str_to_d(sp, sl, &d)) {
				rc = -EINVAL;
				break;
			}
			if (!*made) {
				*o = zset_new(0, 0);
				*made = true;
			}
			rc = rdb_zset_add(o, d, mp, ml);
		}
	}
	xfree(s);
	return rc;
}

static int rdb_hash_add(struct obj *o, bool *made, const char *f, size_t flen, const char *v,
			size_t vlen, int64_t expire)
{
	if (!*made) {
		*o = hash_new();
		*made = true;
	}
	if (!hash_set(o, f, flen, v, vlen, 0))
		return -EINVAL;
	if (expire != HASH_NO_EXPIRE)
		hash_set_expire(o, f, flen, expire);
	return 0;
}

/* Redis 2.6's zipmap: key and value lengths of one byte (< 254) or 254 and
 * four bytes, a free-space byte after each value length. */
static int rdb_zipmap_len(const uint8_t *q, size_t len, size_t *off, size_t *out)
{
	if (*off >= len)
		return -EINVAL;
	if (q[*off] < 254) {
		*out = q[(*off)++];
		return 0;
	}
	if (q[*off] != 254 || *off + 5 > len)
		return -EINVAL;
	*out = rdb_le(q + *off + 1, 4);
	*off += 5;
	return 0;
}

static int rdb_load_zipmap(struct obj *o, bool *made, const char *p, size_t len)
{
	const uint8_t *q = (const uint8_t *)p;
	size_t off = 1;

	if (len < 2)
		return -EINVAL;
	while (off < len && q[off] != 0xff) {
		size_t kl, vl, kp, vp;

		if (rdb_zipmap_len(q, len, &off, &kl) || kl > len - off)
			return -EINVAL;
		kp = off;
		off += kl;
		if (rdb_zipmap_len(q, len, &off, &vl) || off >= len)
			return -EINVAL;
		{
			size_t fr = q[off++];

			if (vl > len - off || fr > len - off - vl)
				return -EINVAL;
			vp = off;
			off += vl + fr;
		}
		if (rdb_hash_add(o, made, p + kp, kl, p + vp, vl, HASH_NO_EXPIRE))
			return -EINVAL;
	}
	return off == len - 1 ? 0 : -EINVAL;
}

static int rdb_load_hash_pairs(struct obj *o, bool *made, const char *p, size_t len, bool ziplist,
			       bool ttl)
{
	struct rdb_pack k;
	struct rdb_ent f, v, x;
	int rc;

	if (rdb_pack_open(&k, p, len, ziplist))
		return -EINVAL;
	while ((rc = rdb_pack_next(&k, &f)) == 1) {
		size_t fl, vl;
		const char *fp, *vp;
		int64_t exp = HASH_NO_EXPIRE;

		if (rdb_pack_next(&k, &v) != 1)
			return -EINVAL;
		if (ttl) {
			if (rdb_pack_next(&k, &x) != 1 || !x.is_int || x.v < 0)
				return -EINVAL;
			if (x.v)
				exp = x.v;
		}
		fp = rdb_ent_str(&f, &fl);
		vp = rdb_ent_str(&v, &vl);
		if (rdb_hash_add(o, made, fp, fl, vp, vl, exp))
			return -EINVAL;
	}
	return rc;
}

static int rdb_load_hash(struct rdb_reader *r, uint8_t t, struct obj *o, bool *made)
{
	uint64_t n, min = 0, u;
	char *f, *v;
	size_t fl, vl;
	int rc = 0;

	if ((t == RDB_TYPE_HASH_METADATA || t == RDB_TYPE_HASH_LISTPACK_EX) &&
	    rdb_read_le(r, 8, &min))
		return -EINVAL;
	if (t == RDB_TYPE_HASH || t == RDB_TYPE_HASH_METADATA ||
	    t == RDB_TYPE_HASH_METADATA_PRE_GA) {
		if (rdb_read_len(r, &n))
			return -EINVAL;
		for (uint64_t i = 0; i < n && !rc; i++) {
			int64_t exp = HASH_NO_EXPIRE;

			if (t != RDB_TYPE_HASH) {
				if (rdb_read_len(r, &u))
					return -EINVAL;
				if (u)
					exp = t == RDB_TYPE_HASH_METADATA ? (int64_t)(u + min - 1)
									  : (int64_t)u;
			}
			if (rdb_read_string(r, &f, &fl))
				return -EINVAL;
			if (rdb_read_string(r, &v, &vl)) {
				xfree(f);
				return -EINVAL;
			}
			rc = rdb_hash_add(o, made, f, fl, v, vl, exp);
			xfree(f);
			xfree(v);
		}
		return rc;
	}
	if (rdb_read_string(r, &f, &fl))
		return -EINVAL;
	if (t == RDB_TYPE_HASH_ZIPMAP)
		rc = rdb_load_zipmap(o, made, f, fl);
	else
		rc = rdb_load_hash_pairs(o, made, f, fl, t == RDB_TYPE_HASH_ZIPLIST,
					 t == RDB_TYPE_HASH_LISTPACK_EX ||
						 t == RDB_TYPE_HASH_LISTPACK_EX_PRE_GA);
	xfree(f);
	return rc;
}

static int rdb_load_array_value(struct rdb_reader *r, ar_value *v)
{
	uint64_t tag, bits;
	char *s;
	size_t len;
	double d;

	if (rdb_read_len(r, &tag))
		return -EINVAL;
	switch (tag) {
	case AR_RDB_INT:
		if (rdb_read_le(r, 8, &bits))
			return -EINVAL;
		/* Written by a build whose inline integers are wider: a string. */
		if ((int64_t)bits < -(1LL << 61) || (int64_t)bits > (1LL << 61) - 1) {
			char num[LL_STR_SIZE + 1];
			int n = ll_to_str(num, (long long)bits);

			*v = ar_encode(num, (size_t)n);
		} else {
			*v = ar_from_int((int64_t)bits);
		}
		return 0;
	case AR_RDB_FLOAT:
		if (rdb_read_le(r, 8, &bits))
			return -EINVAL;
		memcpy(&d, &bits, sizeof(d));
		*v = ar_from_double(d);
		return 0;
	case AR_RDB_SMALL:
	case AR_RDB_STRING:
		if (rdb_read_string(r, &s, &len))
			return -EINVAL;
		if (tag == AR_RDB_SMALL && len > 7) {
			xfree(s);
			return -EINVAL;
		}
		*v = tag == AR_RDB_SMALL ? ar_from_small(s, len) : ar_encode(s, len);
		xfree(s);
		return 0;
	}
	return -EINVAL;
}

static int rdb_load_array(struct rdb_reader *r, struct obj *o, bool *made)
{
	uint64_t count, flag, cursor = AR_NO_INSERT, idx;
	bool enc;

	if (rdb_read_len(r, &count) || !count || rdb_read_len(r, &flag) || flag > 1 ||
	    (flag && rdb_read_len(r, &cursor)))
		return -EINVAL;
	*o = array_new();
	*made = true;
	array_set_insert_idx(array_of(o), cursor);
	for (uint64_t i = 0; i < count; i++) {
		ar_value v;

		if (rdb_read_len_enc(r, &idx, &enc) || enc || idx == UINT64_MAX ||
		    rdb_load_array_value(r, &v))
			return -EINVAL;
		array_set(array_of(o), idx, v);
	}
	return 0;
}

bool rdb_type_known(uint8_t t)
{
	return t <= RDB_TYPE_ZSET_2 ||
	       (t >= RDB_TYPE_HASH_ZIPMAP && t <= RDB_TYPE_LIST_QUICKLIST) ||
	       t == RDB_TYPE_HASH_LISTPACK || t == RDB_TYPE_ZSET_LISTPACK ||
	       t == RDB_TYPE_LIST_QUICKLIST_2 || t == RDB_TYPE_SET_LISTPACK ||
	       (t >= RDB_TYPE_HASH_METADATA_PRE_GA && t <= RDB_TYPE_HASH_LISTPACK_EX) ||
	       t == RDB_TYPE_ARRAY || t == RDB_TYPE_MODULE_2 || rdb_stream_type(t);
}

int rdb_load_object(struct rdb_reader *r, uint8_t t, struct obj *out)
{
	struct obj o = { 0 };
	bool made = false;
	char *s;
	size_t len;
	int rc;

	switch (t) {
	case RDB_TYPE_STRING:
		if (rdb_read_string(r, &s, &len))
			return -EINVAL;
		*out = obj_string(s, len);
		xfree(s);
		return 0;
	case RDB_TYPE_LIST:
	case RDB_TYPE_LIST_QUICKLIST:
	case RDB_TYPE_LIST_QUICKLIST_2:
		rc = rdb_load_list(r, t, &o);
		made = true;
		break;
	case RDB_TYPE_LIST_ZIPLIST:
		if (rdb_read_string(r, &s, &len))
			return -EINVAL;
		o = list_new();
		made = true;
		rc = rdb_load_pack_into_list(&o, s, len, true);
		xfree(s);
		break;
	case RDB_TYPE_SET:
	case RDB_TYPE_SET_INTSET:
	case RDB_TYPE_SET_LISTPACK:
		rc = rdb_load_set(r, t, &o, &made);
		break;
	case RDB_TYPE_ZSET:
	case RDB_TYPE_ZSET_2:
	case RDB_TYPE_ZSET_ZIPLIST:
	case RDB_TYPE_ZSET_LISTPACK:
		rc = rdb_load_zset(r, t, &o, &made);
		break;
	case RDB_TYPE_ARRAY:
		rc = rdb_load_array(r, &o, &made);
		break;
	case RDB_TYPE_MODULE_2:
		/* Only Redis's vector sets are known (rdb_vset.c). */
		if (rdb_load_vset(r, &o))
			return -EINVAL;
		*out = o;
		return 0;
	default:
		if (rdb_stream_type(t)) {
			/* An empty stream is a valid value. */
			if (rdb_load_stream(r, t, &o))
				return -EINVAL;
			*out = o;
			return 0;
		}
		if (!rdb_type_known(t))
			return -EINVAL;
		rc = rdb_load_hash(r, t, &o, &made);
		break;
	}
	/* Redis refuses empty collections: no key may hold one. */
	if (!rc && (!made || (o.type == OBJ_LIST && !list_len(&o))))
		rc = -EINVAL;
	if (rc) {
		if (made)
			obj_free(&o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

bool rdb_payload_ok(const uint8_t *p, size_t len)
{
	uint64_t crc = 0;

	if (len < 10 || (p[len - 10] | (p[len - 9] << 8)) > RDB_VERSION)
		return false;
	for (int i = 0; i < 8; i++)
		crc |= (uint64_t)p[len - 8 + i] << (8 * i);
	return !crc || crc == crc64_update(0, p, len - 8);
}
