// SPDX-License-Identifier: GPL-2.0-only
/*
 * HyperLogLog registers (hll.h) in Redis's byte layout: the empty value, the
 * sparse bytes of a known PFADD (captured from redis-server 7.0 with
 * `PFADD h a b c d e f g` then GET), dense register packing, the sparse to
 * dense conversion, promotion at hll-sparse-max-bytes, and corrupt opcodes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hll.h"

#include "kselftest_harness.h"

/* `PFADD h a b c d e f g` on redis-server, before PFCOUNT (cache stale). */
static const uint8_t abcdefg[] = {
	'H',  'Y',  'L',  'L',	1,    0,    0,	  0,	0,    0,    0,	  0,	0,
	0,    0,    0x80, 0x46, 0x6d, 0x80, 0x56, 0x0c, 0x80, 0x44, 0x3c, 0x84, 0x38,
	0x80, 0x50, 0xb1, 0x84, 0x49, 0x8c, 0x80, 0x42, 0x6d, 0x80, 0x42, 0x5a,
};

/* Adds the NUL-terminated elements to the sparse value p (room for 3000
 * bytes); returns how many changed a register. */
static int add_all(uint8_t *p, size_t *len, const char *const *els, int n, size_t max)
{
	int changed = 0;

	for (int i = 0; i < n; i++) {
		long index;
		int count = hll_pattern(els[i], strlen(els[i]), &index);

		changed += hll_sparse_set(p, len, index, (uint8_t)count, max) == 1;
	}
	return changed;
}

TEST(empty_value_is_one_xzero)
{
	static const uint8_t want[HLL_SPARSE_EMPTY_SIZE] = { 'H', 'Y',	       'L',	   'L',
							     1,	  [16] = 0x7f, [17] = 0xff };
	uint8_t p[HLL_SPARSE_EMPTY_SIZE];

	hll_init_sparse(p);
	ASSERT_EQ(0, memcmp(want, p, sizeof(want)));
	ASSERT_TRUE(hll_valid(p, sizeof(p)));
	ASSERT_TRUE(hll_cache_valid(p));
	ASSERT_EQ(0, hll_count(p, sizeof(p), NULL));
}

TEST(sparse_bytes_match_redis)
{
	static const char *const els[] = { "a", "b", "c", "d", "e", "f", "g" };
	uint8_t p[3000];
	size_t len = HLL_SPARSE_EMPTY_SIZE;
	bool invalid = false;

	hll_init_sparse(p);
	ASSERT_EQ(7, add_all(p, &len, els, 7, 3000));
	ASSERT_EQ(sizeof(abcdefg), len);
	ASSERT_EQ(0, memcmp(abcdefg, p, len));
	ASSERT_FALSE(hll_cache_valid(p));
	ASSERT_EQ(7, hll_count(p, len, &invalid));
	ASSERT_FALSE(invalid);
	/* The same elements again change nothing. */
	ASSERT_EQ(0, add_all(p, &len, els, 7, 3000));
	ASSERT_EQ(sizeof(abcdefg), len);
}

TEST(cache_is_little_endian_with_a_stale_bit)
{
	uint8_t p[HLL_SPARSE_EMPTY_SIZE];

	hll_init_sparse(p);
	hll_cache_set(p, 0x0102030405060708ULL);
	ASSERT_EQ(0x08, p[8]);
	ASSERT_EQ(0x01, p[15]);
	ASSERT_TRUE(hll_cache_valid(p));
	ASSERT_EQ(0x0102030405060708ULL, hll_cache_get(p));
	hll_cache_invalidate(p);
	ASSERT_FALSE(hll_cache_valid(p));
}

TEST(dense_registers_keep_their_neighbours)
{
	static uint8_t regs[HLL_DENSE_SIZE - HLL_HDR_SIZE], want[HLL_REGISTERS];

	srand(7);
	for (int round = 0; round < 20; round++) {
		for (long i = 0; i < HLL_REGISTERS; i++) {
			want[i] = (uint8_t)(rand() & HLL_REGISTER_MAX);
			hll_dense_put(regs, i, want[i]);
		}
		for (long i = 0; i < HLL_REGISTERS; i++)
			ASSERT_EQ(want[i], hll_dense_get(regs, i));
	}
	/* Register 1 spans bits 6..11: the top two bits of byte 0, then byte 1. */
	memset(regs, 0, sizeof(regs));
	hll_dense_put(regs, 1, 63);
	ASSERT_EQ(0xc0, regs[0]);
	ASSERT_EQ(0x0f, regs[1]);
	ASSERT_EQ(1, hll_dense_set(regs, 2, 5));
	ASSERT_EQ(0, hll_dense_set(regs, 2, 4));
}

/* The dense merge (AVX2 where the CPU has it, four registers a word
 * otherwise) and the packing back agree register by register with
 * hll_dense_get(), at the first and last 24-byte chunks too. */
TEST(dense_merge_and_pack_agree_with_each_register)
{
	static uint8_t dense[HLL_DENSE_SIZE], packed[HLL_DENSE_SIZE - HLL_HDR_SIZE];
	uint8_t max[HLL_REGISTERS], want[HLL_REGISTERS];

	srand(11);
	memcpy(dense, "HYLL", 4);
	memset(dense + 4, 0, HLL_HDR_SIZE - 4);
	ASSERT_EQ(HLL_DENSE, hll_encoding(dense));
	for (int round = 0; round < 10; round++) {
		for (long i = 0; i < HLL_REGISTERS; i++) {
			hll_dense_put(dense + HLL_HDR_SIZE, i,
				      (uint8_t)(rand() & HLL_REGISTER_MAX));
			max[i] = (uint8_t)(rand() % 40);
			want[i] = hll_dense_get(dense + HLL_HDR_SIZE, i);
			if (max[i] > want[i])
				want[i] = max[i];
		}
		ASSERT_EQ(0, hll_merge(max, dense, HLL_DENSE_SIZE));
		ASSERT_EQ(0, memcmp(want, max, HLL_REGISTERS));
		hll_dense_from_raw(packed, max);
		for (long i = 0; i < HLL_REGISTERS; i++)
			ASSERT_EQ(want[i], hll_dense_get(packed, i));
	}
}

TEST(sparse_and_dense_agree)
{
	static uint8_t sparse[3000], dense[HLL_DENSE_SIZE];
	uint8_t max[HLL_REGISTERS] = { 0 };
	size_t len = HLL_SPARSE_EMPTY_SIZE;
	char el[32];
	int promoted = 0;

	hll_init_sparse(sparse);
	for (int i = 0; i < 300 && !promoted; i++) {
		long index;
		int count;

		snprintf(el, sizeof(el), "member:%d", i);
		count = hll_pattern(el, strlen(el), &index);
		promoted = hll_sparse_set(sparse, &len, index, (uint8_t)count, 3000) == HLL_PROMOTE;
	}
	ASSERT_FALSE(promoted);
	ASSERT_EQ(0, hll_sparse_to_dense(sparse, len, dense));
	ASSERT_EQ(HLL_DENSE, hll_encoding(dense));
	ASSERT_TRUE(hll_valid(dense, HLL_DENSE_SIZE));
	ASSERT_EQ(hll_count(sparse, len, NULL), hll_count(dense, HLL_DENSE_SIZE, NULL));
	ASSERT_EQ(0, hll_merge(max, sparse, len));
	ASSERT_EQ(hll_count(dense, HLL_DENSE_SIZE, NULL), hll_count_raw(max));
	/* Estimates within a few percent for 300 distinct elements. */
	ASSERT_LT(labs((long)hll_count(dense, HLL_DENSE_SIZE, NULL) - 300), 15);
}

TEST(promotion_when_too_big_or_too_high)
{
	uint8_t p[64];
	size_t len = HLL_SPARSE_EMPTY_SIZE;

	hll_init_sparse(p);
	/* A register over 32 needs the dense form. */
	ASSERT_EQ(HLL_PROMOTE, hll_sparse_set(p, &len, 100, 33, 3000));
	ASSERT_EQ(HLL_SPARSE_EMPTY_SIZE, len);
	/* Splitting the XZERO adds 3 bytes: past a 20-byte limit. */
	ASSERT_EQ(HLL_PROMOTE, hll_sparse_set(p, &len, 100, 1, 20));
	ASSERT_EQ(1, hll_sparse_set(p, &len, 100, 1, 21));
	ASSERT_EQ(HLL_SPARSE_EMPTY_SIZE + 3, len);
}

/* A value cut inside its last XZERO (SETRANGE, APPEND): Redis reads the
 * missing byte from its string's NUL terminator, and an edit there writes one
 * byte past the new end, which that terminator then overwrites. */
TEST(cut_xzero_at_the_end_reads_as_redis)
{
	uint8_t p[HLL_SPARSE_EMPTY_SIZE + 1 + HLL_SPARSE_ROOM], dense[HLL_DENSE_SIZE];
	size_t len = HLL_HDR_SIZE + 3;

	hll_init_sparse(p);
	p[16] = 0x40; /* XZERO of 255 */
	p[17] = 0xfe;
	p[18] = 0x7f; /* XZERO of (0x3f << 8 | NUL) + 1 = 16129: 16384 in all */
	p[19] = 0;
	ASSERT_EQ(0, hll_sparse_to_dense(p, len, dense));
	ASSERT_EQ(1, hll_sparse_set(p, &len, 300, 1, 3000));
	p[len] = 0;
	/* The cut run split into ZERO 45, VAL 1x1 and XZERO 16083 (0x7e 0xd2),
	 * the last cut to its first byte again. */
	ASSERT_EQ(HLL_HDR_SIZE + 5, len);
	ASSERT_EQ(0xfe, p[17]);
	ASSERT_EQ(0x2c, p[18]);
	ASSERT_EQ(0x80, p[19]);
	ASSERT_EQ(0x7e, p[20]);
}

TEST(corrupt_opcodes_are_reported)
{
	uint8_t p[HLL_SPARSE_EMPTY_SIZE + 1], dense[HLL_DENSE_SIZE], max[HLL_REGISTERS] = { 0 };
	size_t len;
	bool invalid = false;

	hll_init_sparse(p);
	p[16] = 0x7f;
	p[17] = 0xfe; /* one register short */
	len = HLL_SPARSE_EMPTY_SIZE;
	ASSERT_EQ(-1, hll_sparse_to_dense(p, len, dense));
	ASSERT_EQ(-1, hll_merge(max, p, len));
	hll_count(p, len, &invalid);
	ASSERT_TRUE(invalid);
	ASSERT_EQ(-1, hll_sparse_set(p, &len, 16383, 1, 3000));
	/* Bad magic, unknown encoding, a dense value of the wrong size. */
	ASSERT_FALSE(hll_valid((const uint8_t *)"HYLX\x01", 16));
	p[4] = 2;
	ASSERT_FALSE(hll_valid(p, HLL_SPARSE_EMPTY_SIZE));
	p[4] = HLL_DENSE;
	ASSERT_FALSE(hll_valid(p, HLL_SPARSE_EMPTY_SIZE));
}

TEST_HARNESS_MAIN
