// SPDX-License-Identifier: GPL-2.0-only
/*
 * The word-at-a-time bitmap helpers of daemon/cmd/bitops.c, each checked
 * against a bit-by-bit version written here: population counts over ranges
 * with unaligned ends, the first set or clear bit of a range, BITFIELD's field
 * reads and writes at every width and alignment, and its arithmetic under
 * each OVERFLOW mode at widths 1..64.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

/* bitops.c exports these for this test (it has no header of its own). */
uint64_t bitops_count(const unsigned char *p, uint64_t first, uint64_t last);
int64_t bitops_find(const unsigned char *p, uint64_t first, uint64_t last, int bit);
uint64_t bitops_get(const unsigned char *p, size_t len, uint64_t offset, unsigned bits);
void bitops_put(unsigned char *p, uint64_t offset, unsigned bits, uint64_t v);
bool bitops_field_add(bool is_signed, unsigned bits, uint64_t v, int64_t incr, int mode,
		      int64_t *out);

enum { WRAP, SAT, FAIL }; /* bitops.c's BITFIELD OVERFLOW modes, in order */

/* A fixed xorshift64* stream: the same cases on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Random bytes, biased now and then to all-zero or all-one runs so that the
 * word loops meet long stretches with nothing to find. */
static void fill(unsigned char *p, size_t n)
{
	unsigned kind = rnd() % 4;

	for (size_t i = 0; i < n; i++) {
		if (kind == 0)
			p[i] = 0;
		else if (kind == 1)
			p[i] = 0xff;
		else
			p[i] = (unsigned char)rnd();
	}
	/* One odd byte somewhere in a run, sometimes. */
	if (n && kind < 2 && rnd() % 2)
		p[rnd() % n] ^= (unsigned char)(1u << (rnd() % 8));
}

static int ref_bit(const unsigned char *p, uint64_t i)
{
	return (p[i >> 3] >> (7 - (i & 7))) & 1;
}

static uint64_t ref_count(const unsigned char *p, uint64_t first, uint64_t last)
{
	uint64_t n = 0;

	for (uint64_t i = first; i <= last; i++)
		n += ref_bit(p, i);
	return n;
}

static int64_t ref_find(const unsigned char *p, uint64_t first, uint64_t last, int bit)
{
	for (uint64_t i = first; i <= last; i++)
		if (ref_bit(p, i) == bit)
			return (int64_t)i;
	return -1;
}

static uint64_t ref_get(const unsigned char *p, size_t len, uint64_t offset, unsigned bits)
{
	uint64_t v = 0;

	for (unsigned k = 0; k < bits; k++) {
		uint64_t i = offset + k;

		v = v << 1 | (uint64_t)((i >> 3) < len ? ref_bit(p, i) : 0);
	}
	return v;
}

static void ref_put(unsigned char *p, uint64_t offset, unsigned bits, uint64_t v)
{
	for (unsigned k = 0; k < bits; k++) {
		uint64_t i = offset + k;
		unsigned char mask = (unsigned char)(0x80 >> (i & 7));

		if ((v >> (bits - 1 - k)) & 1)
			p[i >> 3] |= mask;
		else
			p[i >> 3] &= (unsigned char)~mask;
	}
}

/*
 * BITFIELD arithmetic by the rules as Redis documents them, with 64-bit
 * overflow checks rather than bitops.c's 128-bit sums: the field's range,
 * WRAP as arithmetic modulo 2^bits, SAT clamping, FAIL refusing.
 */
static bool ref_field_add(bool is_signed, unsigned bits, uint64_t v, int64_t incr, int mode,
			  int64_t *out)
{
	if (is_signed) {
		int64_t max = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
		int64_t min = -max - 1, sum;
		bool ovf = __builtin_add_overflow((int64_t)v, incr, &sum);
		bool up = ovf ? incr > 0 : sum > max, down = ovf ? incr < 0 : sum < min;
		uint64_t wrapped = v + (uint64_t)incr;

		/* As Redis 7.0: a SET of a value within max of INT64_MIN into a
		 * narrower field makes max - v wrap, which counts as overflowing up. */
		if (down && bits < 64 && incr == 0 && (int64_t)v - INT64_MIN <= max)
			up = true, down = false;

		if (!up && !down) {
			*out = sum;
			return true;
		}
		if (mode == FAIL)
			return false;
		if (mode == SAT) {
			*out = up ? max : min;
			return true;
		}
		/* Modulo 2^bits, then the top bit of the field is the sign. */
		for (unsigned k = bits; k < 64; k++) {
			if ((wrapped >> (bits - 1)) & 1)
				wrapped |= (uint64_t)1 << k;
			else
				wrapped &= ~((uint64_t)1 << k);
		}
		*out = (int64_t)wrapped;
		return true;
	} else {
		uint64_t max = ((uint64_t)1 << bits) - 1, sum = v + (uint64_t)incr;
		bool up, down;

		/* v may exceed the field (SET of a large or negative value). */
		if (incr >= 0) {
			up = v > max || sum < v || sum > max;
			down = false;
		} else {
			uint64_t mag = (uint64_t)0 - (uint64_t)incr;

			up = v > max;
			down = !up && mag > v;
		}
		if (!up && !down) {
			*out = (int64_t)sum;
			return true;
		}
		if (mode == FAIL)
			return false;
		if (mode == SAT) {
			*out = up ? (int64_t)max : 0;
			return true;
		}
		*out = (int64_t)(sum & max);
		return true;
	}
}

TEST(count_small_ranges_every_alignment)
{
	unsigned char buf[40];

	for (int round = 0; round < 200; round++) {
		fill(buf, sizeof(buf));
		for (uint64_t first = 0; first < 80; first++)
			for (uint64_t last = first; last < sizeof(buf) * 8; last += 1 + rnd() % 7)
				ASSERT_EQ(ref_count(buf, first, last),
					  bitops_count(buf, first, last));
	}
}

TEST(count_large_unaligned)
{
	size_t n = 1 << 16;
	unsigned char *buf = malloc(n + 7);

	/* A buffer that does not start on a word boundary. */
	for (int round = 0; round < 40; round++) {
		unsigned char *p = buf + round % 7;
		uint64_t first = rnd() % (n * 8), last = first + rnd() % (n * 8 - first);

		fill(p, n);
		ASSERT_EQ(ref_count(p, first, last), bitops_count(p, first, last));
		ASSERT_EQ(ref_count(p, 0, n * 8 - 1), bitops_count(p, 0, n * 8 - 1));
	}
	free(buf);
}

TEST(count_single_bits_and_bytes)
{
	unsigned char b[2] = { 0xa5, 0x3c };

	ASSERT_EQ(1, bitops_count(b, 0, 0));
	ASSERT_EQ(0, bitops_count(b, 1, 1));
	ASSERT_EQ(4, bitops_count(b, 0, 7));
	ASSERT_EQ(2, bitops_count(b, 7, 10));
	ASSERT_EQ(8, bitops_count(b, 0, 15));
	ASSERT_EQ(0, bitops_count(b, 14, 15));
}

TEST(find_every_alignment)
{
	unsigned char buf[48];

	for (int round = 0; round < 300; round++) {
		fill(buf, sizeof(buf));
		for (uint64_t first = 0; first < 72; first += 1 + rnd() % 3) {
			for (uint64_t last = first; last < sizeof(buf) * 8; last += 1 + rnd() % 9) {
				ASSERT_EQ(ref_find(buf, first, last, 1),
					  bitops_find(buf, first, last, 1));
				ASSERT_EQ(ref_find(buf, first, last, 0),
					  bitops_find(buf, first, last, 0));
			}
		}
	}
}

TEST(find_edges)
{
	unsigned char zeros[64] = { 0 }, ones[64];

	memset(ones, 0xff, sizeof(ones));
	/* Nothing to find: every length, both ends unaligned or not. */
	for (uint64_t first = 0; first < 16; first++) {
		for (uint64_t last = first; last < 512; last++) {
			ASSERT_EQ(-1, bitops_find(zeros, first, last, 1));
			ASSERT_EQ(-1, bitops_find(ones, first, last, 0));
			ASSERT_EQ((int64_t)first, bitops_find(zeros, first, last, 0));
			ASSERT_EQ((int64_t)first, bitops_find(ones, first, last, 1));
		}
	}
	/* The only set bit just inside, and just outside, the range. */
	for (uint64_t at = 0; at < 512; at++) {
		zeros[at >> 3] = (unsigned char)(0x80 >> (at & 7));
		ASSERT_EQ((int64_t)at, bitops_find(zeros, 0, 511, 1));
		ASSERT_EQ((int64_t)at, bitops_find(zeros, at, at, 1));
		if (at > 0)
			ASSERT_EQ(-1, bitops_find(zeros, 0, at - 1, 1));
		if (at < 511)
			ASSERT_EQ(-1, bitops_find(zeros, at + 1, 511, 1));
		zeros[at >> 3] = 0;
	}
}

TEST(find_large_sparse)
{
	size_t n = 1 << 20;
	unsigned char *buf = calloc(1, n);
	uint64_t at = (uint64_t)(n - 3) * 8 + 5;

	buf[at >> 3] = (unsigned char)(0x80 >> (at & 7));
	ASSERT_EQ((int64_t)at, bitops_find(buf, 3, n * 8 - 1, 1));
	ASSERT_EQ(-1, bitops_find(buf, 3, at - 1, 1));
	memset(buf, 0xff, n);
	buf[at >> 3] = (unsigned char)~(0x80 >> (at & 7));
	ASSERT_EQ((int64_t)at, bitops_find(buf, 1, n * 8 - 1, 0));
	free(buf);
}

TEST(get_put_every_width_and_alignment)
{
	unsigned char a[24], b[24];

	for (unsigned bits = 1; bits <= 64; bits++) {
		for (uint64_t offset = 0; offset < 64; offset++) {
			uint64_t v = rnd();

			fill(a, sizeof(a));
			memcpy(b, a, sizeof(a));
			ASSERT_EQ(ref_get(a, sizeof(a), offset, bits),
				  bitops_get(a, sizeof(a), offset, bits));
			ref_put(a, offset, bits, v);
			bitops_put(b, offset, bits, v);
			ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
			ASSERT_EQ(ref_get(a, sizeof(a), offset, bits),
				  bitops_get(b, sizeof(b), offset, bits));
		}
	}
}

TEST(get_reads_zeros_past_the_end)
{
	unsigned char a[9];

	for (int round = 0; round < 2000; round++) {
		size_t len = rnd() % (sizeof(a) + 1);
		unsigned bits = 1 + rnd() % 64;
		uint64_t offset = rnd() % 96;

		fill(a, sizeof(a));
		ASSERT_EQ(ref_get(a, len, offset, bits), bitops_get(a, len, offset, bits));
	}
}

TEST(put_touches_only_its_bytes)
{
	/* Fields ending in byte 7 or 8, followed by guard bytes that a write
	 * straying past the field's last byte would change. */
	unsigned char buf[10];

	for (unsigned bits = 1; bits <= 64; bits++) {
		for (unsigned shift = 0; shift < 8; shift++) {
			uint64_t offset = 64 + shift - bits; /* the last bit is 63 + shift */
			size_t end = (offset + bits - 1) / 8 + 1;

			memset(buf, 0x5a, sizeof(buf));
			bitops_put(buf, offset, bits, ~(uint64_t)0);
			for (size_t i = end; i < sizeof(buf); i++)
				ASSERT_EQ(0x5a, buf[i]);
		}
	}
}

/* Values that sit on and around every width's limits. */
static uint64_t edge_value(unsigned bits, bool is_signed)
{
	uint64_t lim =
		is_signed ? (uint64_t)1 << (bits - 1) : (bits == 64 ? 0 : (uint64_t)1 << bits);
	uint64_t picks[] = { 0,
			     1,
			     lim - 1,
			     lim,
			     lim + 1,
			     -lim,
			     -lim - 1,
			     -lim + 1,
			     ~(uint64_t)0,
			     (uint64_t)INT64_MAX,
			     (uint64_t)INT64_MIN,
			     rnd(),
			     rnd() >> (rnd() % 64) };

	return picks[rnd() % (sizeof(picks) / sizeof(picks[0]))];
}

/* A value the field can hold (what INCRBY reads back). */
static uint64_t in_field(uint64_t v, unsigned bits, bool is_signed)
{
	if (bits == 64)
		return v;
	v &= ((uint64_t)1 << bits) - 1;
	if (is_signed && (v >> (bits - 1)))
		v |= ~(uint64_t)0 << bits;
	return v;
}

TEST(field_add_every_width_and_mode)
{
	for (int s = 0; s < 2; s++) {
		bool is_signed = s;

		for (unsigned bits = 1; bits <= (is_signed ? 64u : 63u); bits++) {
			for (int mode = WRAP; mode <= FAIL; mode++) {
				for (int round = 0; round < 400; round++) {
					uint64_t old = in_field(edge_value(bits, is_signed), bits,
								is_signed);
					int64_t incr = (int64_t)edge_value(bits, is_signed);
					int64_t want = 0, got = 0;
					bool ok_want, ok_got;

					/* INCRBY: the field's value plus incr. */
					ok_want = ref_field_add(is_signed, bits, old, incr, mode,
								&want);
					ok_got = bitops_field_add(is_signed, bits, old, incr, mode,
								  &got);
					ASSERT_EQ(ok_want, ok_got);
					if (ok_want)
						ASSERT_EQ(want, got);
					/* SET: any 64-bit value, with no increment. */
					ok_want = ref_field_add(is_signed, bits, (uint64_t)incr, 0,
								mode, &want);
					ok_got = bitops_field_add(is_signed, bits, (uint64_t)incr,
								  0, mode, &got);
					ASSERT_EQ(ok_want, ok_got);
					if (ok_want)
						ASSERT_EQ(want, got);
				}
			}
		}
	}
}

TEST(field_add_known_values)
{
	int64_t out;

	/* u8: 250 + 10 */
	ASSERT_TRUE(bitops_field_add(false, 8, 250, 10, WRAP, &out));
	ASSERT_EQ(4, out);
	ASSERT_TRUE(bitops_field_add(false, 8, 250, 10, SAT, &out));
	ASSERT_EQ(255, out);
	ASSERT_FALSE(bitops_field_add(false, 8, 250, 10, FAIL, &out));
	/* u8 SET -1: out of range upwards, so SAT gives 255, not 0 (as Redis). */
	ASSERT_TRUE(bitops_field_add(false, 8, (uint64_t)-1, 0, SAT, &out));
	ASSERT_EQ(255, out);
	ASSERT_TRUE(bitops_field_add(false, 8, (uint64_t)-1, 0, WRAP, &out));
	ASSERT_EQ(255, out);
	/* i5: 15 + 1 wraps to -16. */
	ASSERT_TRUE(bitops_field_add(true, 5, 15, 1, WRAP, &out));
	ASSERT_EQ(-16, out);
	ASSERT_TRUE(bitops_field_add(true, 5, (uint64_t)-16, -1, SAT, &out));
	ASSERT_EQ(-16, out);
	/* i64 at both ends. */
	ASSERT_TRUE(bitops_field_add(true, 64, (uint64_t)INT64_MAX, 1, WRAP, &out));
	ASSERT_EQ(INT64_MIN, out);
	ASSERT_TRUE(bitops_field_add(true, 64, (uint64_t)INT64_MIN, -1, SAT, &out));
	ASSERT_EQ(INT64_MIN, out);
	ASSERT_FALSE(bitops_field_add(true, 64, (uint64_t)INT64_MIN, INT64_MIN, FAIL, &out));
	/* i1 holds -1 and 0 only. */
	ASSERT_TRUE(bitops_field_add(true, 1, 0, 1, WRAP, &out));
	ASSERT_EQ(-1, out);
	ASSERT_TRUE(bitops_field_add(true, 1, 0, 1, SAT, &out));
	ASSERT_EQ(0, out);
	/* u63 tops out at INT64_MAX. */
	ASSERT_TRUE(bitops_field_add(false, 63, (uint64_t)INT64_MAX, 1, WRAP, &out));
	ASSERT_EQ(0, out);
	ASSERT_TRUE(bitops_field_add(false, 63, 0, INT64_MIN, SAT, &out));
	ASSERT_EQ(0, out);
}

TEST_HARNESS_MAIN
