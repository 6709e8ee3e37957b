// SPDX-License-Identifier: BSD-3-Clause
/*
 * Bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP and BITFIELD.
 *
 * A bitmap is an ordinary string value. Bit 0 is the most significant bit of
 * byte 0, as in Redis; reads see the bytes past the end of the string as
 * zeros, and writes first grow the string with zeros. Replies, errors and the
 * order in which arguments are checked follow Redis 7.0, because clients and
 * tests observe which error wins; BITOP's DIFF, DIFF1, ANDOR and ONE follow
 * the Redis 8.2 documentation (7.0 does not have them).
 *
 * Bitmaps can be as large as a string (512 MB by default), so the scanning
 * helpers work 64 bits at a time. They are not static so that the unit tests
 * (tests/unit/test_bitops.c) can check them against bit-by-bit versions.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "commands.h"
#include "notify.h"
#include "config.h"
#include "mem.h"
#include "object.h"
#include "util.h"

/* The helpers the unit tests call; each documents its contract below. */
uint64_t bitops_count(const unsigned char *p, uint64_t first, uint64_t last);
int64_t bitops_find(const unsigned char *p, uint64_t first, uint64_t last, int bit);
uint64_t bitops_get(const unsigned char *p, size_t len, uint64_t offset, unsigned bits);
void bitops_put(unsigned char *p, uint64_t offset, unsigned bits, uint64_t v);
bool bitops_field_add(bool is_signed, unsigned bits, uint64_t v, int64_t incr, int mode,
		      int64_t *out);

#define ERR_BIT_OFFSET "bit offset is not an integer or out of range"
#define ERR_BIT_VALUE "bit is not an integer or out of range"
#define ERR_BITFIELD_TYPE                                                                          \
	"Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "    \
	"i64 is."

/* BITFIELD's OVERFLOW modes. */
enum { BF_WRAP, BF_SAT, BF_FAIL };

/* Eight bytes as a big-endian word, so bit 0 of the bitmap is its MSB. */
static inline uint64_t load_be64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* Leading zeros of a non-zero byte. */
static inline unsigned clz8(unsigned v)
{
	return (unsigned)__builtin_clz(v) - 24;
}

/* Set bits in p[0..n). Four independent words per turn keep the popcount
 * units busy; with POPCNT (chosen at load time on x86) this runs at memory
 * speed. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
static uint64_t
popcount_bytes(const unsigned char *p, size_t n)
{
	uint64_t a = 0, b = 0, c = 0, d = 0, w[4];
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		memcpy(w, p + i, sizeof(w));
		a += (uint64_t)__builtin_popcountll(w[0]);
		b += (uint64_t)__builtin_popcountll(w[1]);
		c += (uint64_t)__builtin_popcountll(w[2]);
		d += (uint64_t)__builtin_popcountll(w[3]);
	}
	for (; i + 8 <= n; i += 8) {
		memcpy(w, p + i, 8);
		a += (uint64_t)__builtin_popcountll(w[0]);
	}
	for (; i < n; i++)
		b += (uint64_t)__builtin_popcount(p[i]);
	return a + b + c + d;
}

/* The set bits among bits first..last (inclusive) of p; p holds them all. */
uint64_t bitops_count(const unsigned char *p, uint64_t first, uint64_t last)
{
	uint64_t fb = first >> 3, lb = last >> 3;
	uint64_t n = popcount_bytes(p + fb, lb - fb + 1);

	/* Whole bytes were counted: take off the bits outside the range in
	 * the first and the last byte. */
	n -= (uint64_t)__builtin_popcount(p[fb] & ((0xff00u >> (first & 7)) & 0xff));
	n -= (uint64_t)__builtin_popcount(p[lb] & ((1u << (7 - (last & 7))) - 1));
	return n;
}

/* The index of the first bit equal to bit among bits first..last (inclusive)
 * of p, or -1 if there is none; p holds them all. */
int64_t bitops_find(const unsigned char *p, uint64_t first, uint64_t last, int bit)
{
	const unsigned flip = bit ? 0 : 0xff;
	const uint64_t wflip = bit ? 0 : ~(uint64_t)0;
	const unsigned last_mask = (0xffu << (7 - (last & 7))) & 0xff; /* bits 0..last&7 */
	uint64_t fb = first >> 3, lb = last >> 3, i;
	unsigned v;

	v = (p[fb] ^ flip) & (0xffu >> (first & 7));
	if (fb == lb)
		v &= last_mask;
	if (v)
		return (int64_t)(fb * 8 + clz8(v));
	if (fb == lb)
		return -1;
	for (i = fb + 1; i + 8 <= lb; i += 8) {
		uint64_t w = load_be64(p + i) ^ wflip;

		if (w)
			return (int64_t)(i * 8 + (uint64_t)__builtin_clzll(w));
	}
	for (; i < lb; i++) {
		v = p[i] ^ flip;
		if (v)
			return (int64_t)(i * 8 + clz8(v));
	}
	v = (p[lb] ^ flip) & last_mask;
	return v ? (int64_t)(lb * 8 + clz8(v)) : -1;
}

/* The bits-wide (1..64) unsigned field at bit offset of p[0..len), reading
 * zeros past len. A field spans at most 9 bytes. */
uint64_t bitops_get(const unsigned char *p, size_t len, uint64_t offset, unsigned bits)
{
	uint64_t byte = offset >> 3;
	unsigned shift = offset & 7, n = (shift + bits + 7) / 8;
	unsigned __int128 acc = 0;

	for (unsigned i = 0; i < n; i++)
		acc = acc << 8 | (byte + i < len ? p[byte + i] : 0);
	acc >>= n * 8 - shift - bits;
	return (uint64_t)acc & (bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1);
}

/* Stores the low bits (1..64) of v at bit offset of p, which must hold the
 * field's last bit; the other bits of the bytes touched are kept. */
void bitops_put(unsigned char *p, uint64_t offset, unsigned bits, uint64_t v)
{
	uint64_t byte = offset >> 3;
	unsigned shift = offset & 7, n = (shift + bits + 7) / 8, low = n * 8 - shift - bits;
	unsigned __int128 acc = 0, mask = (((unsigned __int128)1 << bits) - 1) << low;

	for (unsigned i = 0; i < n; i++)
		acc = acc << 8 | p[byte + i];
	acc = (acc & ~mask) | (((unsigned __int128)v << low) & mask);
	for (unsigned i = n; i-- > 0;) {
		p[byte + i] = (unsigned char)acc;
		acc >>= 8;
	}
}

/*
 * BITFIELD's arithmetic: adds incr to the field value v (for SET, v is the
 * new value and incr 0) and applies the overflow mode. v holds a signed
 * field as int64_t bits, an unsigned one as uint64_t (SET may pass a value
 * out of the field's range, which overflows like a sum). On success *out is
 * the result, to reply with and to store; false means FAIL refused it.
 * The sum is exact in 128 bits, so no case needs special handling.
 */
bool bitops_field_add(bool is_signed, unsigned bits, uint64_t v, int64_t incr, int mode,
		      int64_t *out)
{
	__int128 sum, min, max;

	if (is_signed) {
		max = ((__int128)1 << (bits - 1)) - 1;
		min = -max - 1;
		sum = (__int128)(int64_t)v + incr;
	} else {
		max = ((__int128)1 << bits) - 1;
		min = 0;
		sum = (__int128)v + incr;
	}
	if (sum >= min && sum <= max) {
		*out = (int64_t)sum;
		return true;
	}
	if (mode == BF_FAIL)
		return false;
	if (mode == BF_SAT) {
		/* Redis decides the direction with max - v in 64 bits, which wraps
		 * negative for a signed SET of a value within max of INT64_MIN:
		 * it calls that an upward overflow and stores max. So do we. */
		bool up = sum > max ||
			  (is_signed && bits < 64 && incr > (int64_t)((uint64_t)(int64_t)max - v));

		*out = (int64_t)(up ? max : min);
		return true;
	}
	/* WRAP: keep the low bits, sign-extended for signed fields. */
	{
		uint64_t u = (uint64_t)sum;

		if (bits < 64) {
			u &= ((uint64_t)1 << bits) - 1;
			if (is_signed && (u >> (bits - 1)))
				u |= ~(uint64_t)0 << bits;
		}
		*out = (int64_t)u;
	}
	return true;
}

/*
 * Parses argv[i] as a bit offset. With bits > 0 (BITFIELD) "#n" means n
 * fields of that width. The offset must address a byte within
 * proto-max-bulk-len, so the largest by default is 2^32 - 1.
 */
static bool bit_offset_arg(struct client *c, int i, unsigned bits, uint64_t *offset)
{
	const char *p = c->argv[i].p;
	size_t len = c->argv[i].len;
	bool fields = bits && len && p[0] == '#';
	long long v;

	if (fields) {
		p++;
		len--;
	}
	if (!str_to_ll(p, len, &v))
		goto err;
	if (fields) {
		if (v > LLONG_MAX / (long long)bits || v < LLONG_MIN / (long long)bits)
			goto err;
		v *= bits;
	}
	if (v < 0 || (v >> 3) >= config.proto_max_bulk_len)
		goto err;
	*offset = (uint64_t)v;
	return true;

err:
	reply_error(c, ERR_BIT_OFFSET);
	return false;
}

/*
 * The string at argv[1] for a write that reaches bit maxbit: created, or
 * grown with zero bytes, as needed. Returns NULL after replying WRONGTYPE.
 * *dirty says whether the value already changed (created or grown); the
 * caller calls db_changed() once its edits are done, unless *created: the
 * add was the key's one change (Redis counts a new key once).
 */
static struct entry *string_for_bits(struct client *c, uint64_t maxbit, bool *dirty, bool *created)
{
	const struct arg *key = &c->argv[1];
	size_t need = (size_t)(maxbit >> 3) + 1, len;
	struct entry *e = key_find(c, 1);
	char *p;

	*dirty = *created = false;
	if (!e) {
		*dirty = *created = true;
		return db_add(c->db, key->p, key->len,
			      obj_string_owned(xcalloc(1, need + 1), need));
	}
	if (!entry_is(c, e, OBJ_STRING))
		return NULL;
	/* In-place edits need raw bytes, so an "int" value becomes "raw"
	 * even when nothing changes, as in Redis. */
	len = e->val.enc == ENC_INT ? 0 : e->val.len;
	p = obj_string_make_raw(&e->val, need > len ? need : len);
	len = e->val.len;
	if (need > len) {
		memset(p + len, 0, need - len + 1);
		e->val.len = need;
		*dirty = true;
	}
	return e;
}

/* A read-only view of a string value's bytes; tmp formats "int" values. */
static const unsigned char *string_bytes(const struct entry *e, char *tmp, size_t *len)
{
	return (const unsigned char *)obj_str(&e->val, tmp, len);
}

void cmd_setbit(struct client *c)
{
	const struct arg *val = &c->argv[3];
	uint64_t offset;
	unsigned char *p, mask;
	struct entry *e;
	long long on;
	bool dirty, created;
	int old;

	if (!bit_offset_arg(c, 2, 0, &offset))
		return;
	if (!str_to_ll(val->p, val->len, &on) || (on & ~1LL)) {
		reply_error(c, ERR_BIT_VALUE);
		return;
	}
	e = string_for_bits(c, offset, &dirty, &created);
	if (!e)
		return;
	p = (unsigned char *)e->val.bytes + (offset >> 3);
	mask = (unsigned char)(0x80 >> (offset & 7));
	old = !!(*p & mask);
	/* Redis 7.0 signals a change only if the key was created or grown or
	 * the bit flipped; WATCH observes the difference. */
	if (dirty || old != on) {
		*p = on ? (unsigned char)(*p | mask) : (unsigned char)(*p & ~mask);
		if (!created)
			db_changed(c->db, e);
		notify_arg(c, NOTIFY_STRING, "setbit", 1);
	}
	reply_int(c, old);
}

void cmd_getbit(struct client *c)
{
	char tmp[LL_STR_SIZE + 1];
	const unsigned char *p;
	uint64_t offset;
	struct entry *e;
	size_t len;

	if (!bit_offset_arg(c, 2, 0, &offset))
		return;
	e = key_find_read(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_STRING))
		return;
	p = string_bytes(e, tmp, &len);
	if ((offset >> 3) >= len)
		reply_int(c, 0);
	else
		reply_int(c, !!(p[offset >> 3] & (0x80 >> (offset & 7))));
}

/*
 * Turns a BITCOUNT/BITPOS range into bit indexes. start and end count bytes,
 * or bits with in_bits; negative ones count from the end; both are clamped
 * into the string (len bytes). Returns false for an empty range.
 */
static bool bit_range(long long start, long long end, bool in_bits, size_t len, uint64_t *first,
		      uint64_t *last)
{
	long long total = (long long)len << (in_bits ? 3 : 0);

	if (start < 0)
		start += total;
	if (end < 0)
		end += total;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= total)
		end = total - 1;
	if (start > end)
		return false;
	*first = in_bits ? (uint64_t)start : (uint64_t)start << 3;
	*last = in_bits ? (uint64_t)end : ((uint64_t)end << 3) + 7;
	return true;
}

/* Reads argv[i] as BYTE or BIT into *in_bits; otherwise a syntax error. */
static bool unit_arg(struct client *c, int i, bool *in_bits)
{
	if (arg_is(c, i, "bit"))
		*in_bits = true;
	else if (arg_is(c, i, "byte"))
		*in_bits = false;
	else {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	return true;
}

void cmd_bitcount(struct client *c)
{
	char tmp[LL_STR_SIZE + 1];
	long long start = 0, end = -1;
	const unsigned char *p;
	uint64_t first, last;
	bool in_bits = false;
	struct entry *e;
	size_t len;

	/* Redis 8 reads the range before it looks the key up, so a bad range
	 * is an error even on a missing key. */
	if (c->argc == 4 || c->argc == 5) {
		if (!arg_ll(c, 2, &start) || !arg_ll(c, 3, &end))
			return;
		if (c->argc == 5 && !unit_arg(c, 4, &in_bits))
			return;
	} else if (c->argc != 2) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find_read(c, 1);
	if (e && !entry_is(c, e, OBJ_STRING))
		return;
	/* Two negative indexes out of order are empty whatever the unit. */
	if (!e || (start < 0 && end < 0 && start > end)) {
		reply_int(c, 0);
		return;
	}
	p = string_bytes(e, tmp, &len);
	if (!bit_range(start, end, in_bits, len, &first, &last))
		reply_int(c, 0);
	else
		reply_int(c, (long long)bitops_count(p, first, last));
}

void cmd_bitpos(struct client *c)
{
	char tmp[LL_STR_SIZE + 1];
	long long bit, start = 0, end = -1;
	bool in_bits = false, end_given = false;
	const unsigned char *p;
	uint64_t first, last;
	struct entry *e;
	int64_t pos;
	size_t len;

	if (!arg_ll(c, 2, &bit))
		return;
	if (bit != 0 && bit != 1) {
		reply_error(c, "The bit argument must be 1 or 0.");
		return;
	}
	/* Redis 8 reads start, then the unit, then end, before the key. */
	if (c->argc >= 4 && c->argc <= 6) {
		if (!arg_ll(c, 3, &start))
			return;
		if (c->argc == 6 && !unit_arg(c, 5, &in_bits))
			return;
		if (c->argc >= 5) {
			if (!arg_ll(c, 4, &end))
				return;
			end_given = true;
		}
	} else if (c->argc != 3) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find_read(c, 1);
	if (e && !entry_is(c, e, OBJ_STRING))
		return;
	/* A missing key is an endless run of zeros. */
	if (!e) {
		reply_int(c, bit ? -1 : 0);
		return;
	}
	p = string_bytes(e, tmp, &len);
	/* An empty range holds neither a 0 nor a 1. */
	if (!bit_range(start, end, in_bits, len, &first, &last)) {
		reply_int(c, -1);
		return;
	}
	pos = bitops_find(p, first, last, (int)bit);
	/* Without an explicit end the string reads as padded with zeros, so
	 * a clear bit is found just past the range. */
	if (pos < 0 && bit == 0 && !end_given)
		pos = (int64_t)last + 1;
	reply_int(c, pos);
}

enum bitop {
	BITOP_AND,
	BITOP_OR,
	BITOP_XOR,
	BITOP_NOT,
	BITOP_DIFF,  /* Redis 8.2: X and none of the others */
	BITOP_DIFF1, /* Redis 8.2: any of the others and not X */
	BITOP_ANDOR, /* Redis 8.2: X and any of the others */
	BITOP_ONE,   /* Redis 8.2: exactly one source */
};

static const char *const bitop_names[] = {
	[BITOP_AND] = "AND",	 [BITOP_OR] = "OR",	[BITOP_XOR] = "XOR",
	[BITOP_NOT] = "NOT",	 [BITOP_DIFF] = "DIFF", [BITOP_DIFF1] = "DIFF1",
	[BITOP_ANDOR] = "ANDOR", [BITOP_ONE] = "ONE",
};

/* How one buffer is folded into another, a word at a time. */
enum fold { FOLD_AND, FOLD_OR, FOLD_XOR, FOLD_ANDNOT, FOLD_NOTAND };

static inline __attribute__((always_inline)) uint64_t fold_word(enum fold f, uint64_t a, uint64_t b)
{
	switch (f) {
	case FOLD_AND:
		return a & b;
	case FOLD_OR:
		return a | b;
	case FOLD_XOR:
		return a ^ b;
	case FOLD_ANDNOT:
		return a & ~b;
	default:
		return ~a & b;
	}
}

static inline __attribute__((always_inline)) void fold_loop(enum fold f, unsigned char *dst,
							    const unsigned char *src, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t a, b;

		memcpy(&a, dst + i, 8);
		memcpy(&b, src + i, 8);
		a = fold_word(f, a, b);
		memcpy(dst + i, &a, 8);
	}
	for (; i < n; i++)
		dst[i] = (unsigned char)fold_word(f, dst[i], src[i]);
}

/* dst[i] = dst[i] f src[i] for i < n; one loop per operation so that each
 * is compiled (and vectorised) on its own. */
static void fold(enum fold f, unsigned char *dst, const unsigned char *src, size_t n)
{
	switch (f) {
	case FOLD_AND:
		fold_loop(FOLD_AND, dst, src, n);
		break;
	case FOLD_OR:
		fold_loop(FOLD_OR, dst, src, n);
		break;
	case FOLD_XOR:
		fold_loop(FOLD_XOR, dst, src, n);
		break;
	case FOLD_ANDNOT:
		fold_loop(FOLD_ANDNOT, dst, src, n);
		break;
	case FOLD_NOTAND:
		fold_loop(FOLD_NOTAND, dst, src, n);
		break;
	}
}

/* ONE's step: a bit seen twice moves from once to twice. */
static void fold_one(unsigned char *once, unsigned char *twice, const unsigned char *src, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t a, b, x;

		memcpy(&a, once + i, 8);
		memcpy(&b, twice + i, 8);
		memcpy(&x, src + i, 8);
		b |= a & x;
		a |= x;
		memcpy(once + i, &a, 8);
		memcpy(twice + i, &b, 8);
	}
	for (; i < n; i++) {
		twice[i] |= once[i] & src[i];
		once[i] |= src[i];
	}
}

struct bitop_src {
	const unsigned char *p;
	size_t len;
	char tmp[LL_STR_SIZE + 1]; /* the digits of an "int" value */
};

/* The result of op over the sources into res (maxlen bytes), shorter sources
 * read as zero-padded. */
static void bitop_compute(enum bitop op, const struct bitop_src *s, int n, unsigned char *res,
			  size_t maxlen)
{
	unsigned char *twice;

	switch (op) {
	case BITOP_NOT:
		memcpy(res, s[0].p, maxlen);
		for (size_t i = 0; i < maxlen; i++)
			res[i] = (unsigned char)~res[i];
		return;
	case BITOP_AND:
		memcpy(res, s[0].p, s[0].len);
		memset(res + s[0].len, 0, maxlen - s[0].len);
		for (int j = 1; j < n; j++) {
			fold(FOLD_AND, res, s[j].p, s[j].len);
			memset(res + s[j].len, 0, maxlen - s[j].len);
		}
		return;
	case BITOP_OR:
	case BITOP_XOR:
		memset(res, 0, maxlen);
		for (int j = 0; j < n; j++)
			fold(op == BITOP_OR ? FOLD_OR : FOLD_XOR, res, s[j].p, s[j].len);
		return;
	case BITOP_ONE:
		twice = xcalloc(1, maxlen ? maxlen : 1);
		memset(res, 0, maxlen);
		for (int j = 0; j < n; j++)
			fold_one(res, twice, s[j].p, s[j].len);
		fold(FOLD_ANDNOT, res, twice, maxlen);
		xfree(twice);
		return;
	default:
		/* DIFF, DIFF1 and ANDOR compare X with the union of the others. */
		memset(res, 0, maxlen);
		for (int j = 1; j < n; j++)
			fold(FOLD_OR, res, s[j].p, s[j].len);
		if (op == BITOP_DIFF1) {
			/* Past X's end, ~X is all ones: the union stays. */
			fold(FOLD_ANDNOT, res, s[0].p, s[0].len);
			return;
		}
		fold(op == BITOP_DIFF ? FOLD_NOTAND : FOLD_AND, res, s[0].p, s[0].len);
		memset(res + s[0].len, 0, maxlen - s[0].len);
		return;
	}
}

void cmd_bitop(struct client *c)
{
	const struct arg *dest = &c->argv[2];
	int n = c->argc - 3, op = -1;
	struct bitop_src *s;
	unsigned char *res;
	size_t maxlen = 0;

	for (int i = 0; i < (int)(sizeof(bitop_names) / sizeof(bitop_names[0])); i++) {
		if (arg_is(c, 1, bitop_names[i])) {
			op = i;
			break;
		}
	}
	if (op < 0) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (op == BITOP_NOT && n != 1) {
		reply_error(c, "BITOP NOT must be called with a single source key.");
		return;
	}
	/* Redis 8.2: these compare a first key with the others, so they need
	 * at least one of each. */
	if ((op == BITOP_DIFF || op == BITOP_DIFF1 || op == BITOP_ANDOR) && n < 2) {
		reply_errorf(c, "BITOP %s must be called with at least two source keys.",
			     bitop_names[op]);
		return;
	}

	s = xmalloc((size_t)n * sizeof(*s));
	for (int j = 0; j < n; j++) {
		struct entry *e = key_find_read(c, 3 + j);

		s[j].p = (const unsigned char *)"";
		s[j].len = 0;
		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_STRING))
			goto out;
		s[j].p = string_bytes(e, s[j].tmp, &s[j].len);
		if (s[j].len > maxlen)
			maxlen = s[j].len;
	}

	if (maxlen == 0) {
		/* An empty result removes the destination, as in Redis. */
		struct entry *e = key_find(c, 2);

		if (e) {
			db_delete(c->db, e);
			notify_arg(c, NOTIFY_GENERIC, "del", 2);
		}
		reply_int(c, 0);
		goto out;
	}
	res = xmalloc(maxlen + 1);
	bitop_compute((enum bitop)op, s, n, res, maxlen);
	res[maxlen] = '\0';
	/* The sources' bytes are no longer needed, so dest may be one of them. */
	db_set(c->db, dest->p, dest->len, obj_string_owned((char *)res, maxlen), false);
	notify_arg(c, NOTIFY_STRING, "set", 2);
	reply_int(c, (long long)maxlen);

out:
	xfree(s);
}

enum bitfield_opcode { BF_GET, BF_SET, BF_INCRBY };

struct bitfield_op {
	uint64_t offset;
	int64_t value;
	uint8_t opcode, is_signed, bits, overflow;
};

/* Parses a type such as "i16" or "u8": i1..i64 or u1..u63. The width is
 * read up to a NUL byte, as Redis reads it with strlen(). */
static bool bitfield_type_arg(struct client *c, int i, bool *is_signed, unsigned *bits)
{
	const char *p = c->argv[i].p;
	size_t len = c->argv[i].len;
	const char *nul;
	long long v;

	if (len == 0 || (p[0] != 'i' && p[0] != 'u'))
		goto err;
	*is_signed = p[0] == 'i';
	nul = memchr(p + 1, '\0', len - 1);
	if (nul)
		len = (size_t)(nul - p);
	if (!str_to_ll(p + 1, len - 1, &v) || v < 1 || v > (*is_signed ? 64 : 63))
		goto err;
	*bits = (unsigned)v;
	return true;

err:
	reply_error(c, ERR_BITFIELD_TYPE);
	return false;
}

/* Runs one GET on the value's bytes (p may be NULL for a missing key). */
static void bitfield_get(struct client *c, const struct bitfield_op *op, const unsigned char *p,
			 size_t len)
{
	uint64_t u = p ? bitops_get(p, len, op->offset, op->bits) : 0;

	if (op->is_signed && op->bits < 64 && (u >> (op->bits - 1)))
		u |= ~(uint64_t)0 << op->bits;
	reply_int(c, (long long)u);
}

/* Runs one SET or INCRBY on p, which holds the field. Returns 1 if the
 * field's bits changed, 0 if written unchanged, -1 if OVERFLOW FAIL refused. */
static int bitfield_write(struct client *c, const struct bitfield_op *op, unsigned char *p)
{
	uint64_t raw = bitops_get(p, SIZE_MAX, op->offset, op->bits), old = raw;
	int64_t result;

	if (op->is_signed && op->bits < 64 && (old >> (op->bits - 1)))
		old |= ~(uint64_t)0 << op->bits;
	if (op->opcode == BF_INCRBY) {
		if (!bitops_field_add(op->is_signed, op->bits, old, op->value, op->overflow,
				      &result)) {
			reply_null(c);
			return -1;
		}
		reply_int(c, result);
	} else {
		if (!bitops_field_add(op->is_signed, op->bits, (uint64_t)op->value, 0, op->overflow,
				      &result)) {
			reply_null(c);
			return -1;
		}
		/* SET answers the value it replaced. */
		reply_int(c, (long long)old);
	}
	bitops_put(p, op->offset, op->bits, (uint64_t)result);
	return bitops_get(p, SIZE_MAX, op->offset, op->bits) != raw;
}

/*
 * BITFIELD and BITFIELD_RO. Every subcommand is parsed before the key is
 * touched, so a bad argument anywhere leaves the key as it was; then writes
 * grow the string to the farthest bit any of them reaches (even one that
 * OVERFLOW FAIL will refuse, as Redis does) and the operations run in order.
 */
static void bitfield_generic(struct client *c, bool ro)
{
	struct bitfield_op *ops = xmalloc((size_t)c->argc * sizeof(*ops));
	uint64_t maxbit = 0;
	int nops = 0, nwrites = 0, overflow = BF_WRAP;
	struct entry *e;

	for (int j = 2; j < c->argc; j++) {
		int rest = c->argc - j - 1;
		struct bitfield_op *op = &ops[nops];
		unsigned bits;
		bool is_signed;

		if (arg_is(c, j, "get") && rest >= 2) {
			op->opcode = BF_GET;
		} else if (arg_is(c, j, "set") && rest >= 3) {
			op->opcode = BF_SET;
		} else if (arg_is(c, j, "incrby") && rest >= 3) {
			op->opcode = BF_INCRBY;
		} else if (arg_is(c, j, "overflow") && rest >= 1) {
			j++;
			if (arg_is(c, j, "wrap")) {
				overflow = BF_WRAP;
			} else if (arg_is(c, j, "sat")) {
				overflow = BF_SAT;
			} else if (arg_is(c, j, "fail")) {
				overflow = BF_FAIL;
			} else {
				reply_error(c, "Invalid OVERFLOW type specified");
				goto out;
			}
			continue;
		} else {
			reply_error(c, ERR_SYNTAX);
			goto out;
		}
		if (!bitfield_type_arg(c, j + 1, &is_signed, &bits) ||
		    !bit_offset_arg(c, j + 2, bits, &op->offset))
			goto out;
		op->is_signed = is_signed;
		op->bits = (uint8_t)bits;
		op->overflow = (uint8_t)overflow;
		op->value = 0;
		if (op->opcode != BF_GET) {
			long long v;

			if (!arg_ll(c, j + 3, &v))
				goto out;
			op->value = v;
			nwrites++;
			if (op->offset + bits - 1 > maxbit)
				maxbit = op->offset + bits - 1;
		}
		j += op->opcode == BF_GET ? 2 : 3;
		nops++;
	}

	if (nwrites == 0) {
		char tmp[LL_STR_SIZE + 1];
		const unsigned char *p = NULL;
		size_t len = 0;

		/* Reads do not create the key. */
		e = key_find_read(c, 1);
		if (e && !entry_is(c, e, OBJ_STRING))
			goto out;
		if (e)
			p = string_bytes(e, tmp, &len);
		reply_array(c, nops);
		for (int i = 0; i < nops; i++)
			bitfield_get(c, &ops[i], p, len);
		goto out;
	}
	if (ro) {
		reply_error(c, "BITFIELD_RO only supports the GET subcommand");
		goto out;
	}
	{
		unsigned char *p;
		bool dirty, created, grew;
		uint64_t changes = 0;

		e = string_for_bits(c, maxbit, &dirty, &created);
		if (!e)
			goto out;
		grew = dirty;
		p = (unsigned char *)e->val.bytes;
		reply_array(c, nops);
		for (int i = 0; i < nops; i++) {
			int r;

			if (ops[i].opcode == BF_GET) {
				bitfield_get(c, &ops[i], p, e->val.len);
				continue;
			}
			r = bitfield_write(c, &ops[i], p);
			dirty |= r > 0;
			/* As Redis: each write done once the string grew, or
			 * that changed bits, is a change. */
			changes += r > 0 || (r == 0 && grew);
		}
		command_dirty(changes);
		/* Like Redis 8.8, only a write that grew the string or changed
		 * bits is a change (and its event). */
		if (dirty && !created)
			db_changed(c->db, e);
		if (dirty)
			notify_arg(c, NOTIFY_STRING, "setbit", 1);
	}

out:
	xfree(ops);
}

void cmd_bitfield(struct client *c)
{
	bitfield_generic(c, false);
}

void cmd_bitfield_ro(struct client *c)
{
	bitfield_generic(c, true);
}
