// SPDX-License-Identifier: GPL-2.0-only
/*
 * The latency histograms' buckets (latency.h): every value lands in a bucket
 * that holds it, no bucket straddles a key of Redis's LATENCY HISTOGRAM (so
 * its counts are exact), buckets are under 1% wide as Redis's two
 * significant digits, and the reported percentile values are those of
 * Redis's hdr_histogram (its bucket tops in ns, shown in us).
 */
#include <math.h>
#include <stdint.h>

#include "latency.h"

#include "kselftest_harness.h"

/* Redis's LATENCY HISTOGRAM key 2^k ns holds the values up to the top of
 * hdr's sub-bucket at 2^k (2^(k-7) ns wide), in whole us. */
static uint64_t key_us(unsigned k)
{
	return ((1ULL << k) + (1ULL << (k - 7)) - 1) / 1000;
}

TEST(every_value_in_its_bucket)
{
	uint64_t prev_top = 0;

	for (uint64_t us = 0; us <= 1000000; us++) {
		uint64_t top = latency_bucket_top_us(us), low = latency_bucket_low_us(us);

		ASSERT_LE(low, us);
		ASSERT_GE(top, us);
		ASSERT_EQ(top, latency_bucket_top_us(low));
		ASSERT_EQ(low, latency_bucket_low_us(top));
		/* Buckets follow each other: a new one starts past the last. */
		if (us && top != prev_top) {
			ASSERT_EQ(low, prev_top + 1);
		}
		prev_top = top;
		if (us <= 132) {
			ASSERT_EQ(low, top); /* exact */
		} else {
			ASSERT_LE((double)(top - low + 1), (double)us / 100.0 + 1.0);
		}
	}
	/* Longer calls count as Redis's 1 s limit. */
	ASSERT_EQ(latency_bucket_top_us(1000000), latency_bucket_top_us(5000000));
}

TEST(no_bucket_straddles_a_histogram_key)
{
	for (unsigned k = 10; k < 30; k++) {
		uint64_t edge = key_us(k);

		ASSERT_EQ(edge, latency_bucket_top_us(edge));
		ASSERT_EQ(edge + 1, latency_bucket_low_us(edge + 1));
	}
	/* The last key, 2^30 ns, holds everything from there to 1 s. */
	ASSERT_GT(latency_bucket_low_us(1000000), key_us(29));
}

TEST(reported_values_are_hdr_bucket_tops)
{
	/* 1 us = 1000 ns in hdr's 4 ns wide bucket [1000, 1003]. */
	ASSERT_EQ(1003, (long)lround(latency_reported_usec(1) * 1000));
	ASSERT_EQ(0, (long)lround(latency_reported_usec(0) * 1000));
	/* 57000 ns: [56832, 57087], 256 ns wide. */
	ASSERT_EQ(57087, (long)lround(latency_reported_usec(57) * 1000));
	/* 1 s: [998244352, 1002438655], 2^22 ns wide. */
	ASSERT_EQ(1002438655, (long)lround(latency_reported_usec(1000000) * 1000));
}

TEST_HARNESS_MAIN
