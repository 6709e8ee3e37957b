// SPDX-License-Identifier: GPL-2.0-only
/*
 * xkv-bench's latency histogram (tools/xkv-bench/hist.h): the bucket layout
 * keeps every value within 1% over 1 us .. 100 s; percentiles of known
 * distributions (a constant, uniform, exponential, from a fixed-seed
 * generator) are within 1% of the exact percentiles of the same samples;
 * min and max are exact; and merging two histograms gives the histogram of
 * the union.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"

#include "kselftest_harness.h"

#define NSAMPLES 200000
#define US 1000ULL
#define MS 1000000ULL
#define SEC 1000000000ULL

static const double pcts[] = { 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99 };

/* The test's own generator (splitmix64), so the samples never change. */
static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double next_unit(uint64_t *s)
{
	return (double)((next_u64(s) >> 11) + 1) / 9007199254740992.0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The exact nearest-rank percentile of sorted v[0..n). */
static uint64_t exact_pct(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);

	return v[rank ? rank - 1 : 0];
}

/* |seen - want| <= want / 100 */
static int within_1pct(uint64_t want, uint64_t seen)
{
	uint64_t diff = want > seen ? want - seen : seen - want;

	return diff * 100 <= want;
}

/* Records v[0..n) into h, sorts v, and checks every percentile of pcts[]. */
static void check_samples(struct __test_metadata *_metadata, struct hist *h, uint64_t *v, size_t n)
{
	hist_init(h);
	for (size_t i = 0; i < n; i++)
		hist_record(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	ASSERT_EQ(n, h->total);
	ASSERT_EQ(v[0], h->min);
	ASSERT_EQ(v[n - 1], h->max);
	ASSERT_EQ(v[0], hist_percentile(h, 0));
	ASSERT_EQ(v[n - 1], hist_percentile(h, 100));
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		uint64_t want = exact_pct(v, n, pcts[i]), seen = hist_percentile(h, pcts[i]);

		ASSERT_TRUE(within_1pct(want, seen))
		{
			TH_LOG("p%g: exact %llu, histogram %llu", pcts[i], (unsigned long long)want,
			       (unsigned long long)seen);
		}
	}
}

TEST(bucket_layout_within_1pct)
{
	/* Exact below 2 * HIST_SUB, then continuous, and the last bucket is the last index. */
	for (uint64_t v = 0; v < 2 * HIST_SUB; v++) {
		ASSERT_EQ(v, hist_index(v));
		ASSERT_EQ(v, hist_bucket_lo(hist_index(v)));
	}
	ASSERT_EQ(HIST_BUCKETS - 1, hist_index(HIST_MAX_VALUE));
	ASSERT_EQ(HIST_BUCKETS - 1, hist_index(UINT64_MAX));
	for (unsigned i = 1; i < HIST_BUCKETS; i++)
		ASSERT_EQ(hist_bucket_lo(i - 1) + hist_bucket_width(i - 1), hist_bucket_lo(i));
	/* 1 us .. 100 s in steps of 0.1%: each value in its bucket, the bucket < 1% wide. */
	for (double x = 1000.0; x <= 100.0 * SEC; x *= 1.001) {
		uint64_t v = (uint64_t)x;
		unsigned i = hist_index(v);

		ASSERT_LE(hist_bucket_lo(i), v);
		ASSERT_GT(hist_bucket_lo(i) + hist_bucket_width(i), v);
		ASSERT_LE(hist_bucket_width(i) * 100, v);
	}
}

TEST(empty)
{
	struct hist h;

	hist_init(&h);
	ASSERT_EQ(0, h.total);
	ASSERT_EQ(0, hist_percentile(&h, 50));
	ASSERT_EQ(0, hist_percentile(&h, 100));
	ASSERT_TRUE(hist_mean(&h) == 0.0);
}

TEST(constant_is_exact)
{
	struct hist h;

	hist_init(&h);
	for (int i = 0; i < 10000; i++)
		hist_record(&h, 12345678);
	ASSERT_EQ(12345678, h.min);
	ASSERT_EQ(12345678, h.max);
	ASSERT_TRUE(hist_mean(&h) == 12345678.0);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		ASSERT_EQ(12345678, hist_percentile(&h, pcts[i]));
}

TEST(uniform)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v)), seed = 1;
	struct hist h;

	ASSERT_NE(NULL, v);
	/* Uniform over 1 us .. 10 ms. */
	for (int i = 0; i < NSAMPLES; i++)
		v[i] = US + next_u64(&seed) % (10 * MS - US);
	check_samples(_metadata, &h, v, NSAMPLES);
	/* And the distribution's own quantiles, a + p (b - a). */
	ASSERT_TRUE(within_1pct(US + (10 * MS - US) / 2, hist_percentile(&h, 50)));
	ASSERT_TRUE(within_1pct(US + (10 * MS - US) * 9 / 10, hist_percentile(&h, 90)));
	ASSERT_TRUE(within_1pct(US + (10 * MS - US) * 99 / 100, hist_percentile(&h, 99)));
	free(v);
}

TEST(exponential)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v)), seed = 2;
	struct hist h;

	ASSERT_NE(NULL, v);
	/* Mean 1 ms, shifted by 1 us so that every value is in the reported range. */
	for (int i = 0; i < NSAMPLES; i++)
		v[i] = US + (uint64_t)(-log(next_unit(&seed)) * (double)MS);
	check_samples(_metadata, &h, v, NSAMPLES);
	/* The quantiles of an exponential: -mean * ln(1 - p). */
	ASSERT_TRUE(within_1pct(US + (uint64_t)(log(2.0) * MS), hist_percentile(&h, 50)));
	ASSERT_TRUE(within_1pct(US + (uint64_t)(log(10.0) * MS), hist_percentile(&h, 90)));
	ASSERT_TRUE(within_1pct(1000 * US, (uint64_t)hist_mean(&h) - US));
	free(v);
}

TEST(wide_range_min_max_exact)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v)), seed = 3;
	struct hist h;

	ASSERT_NE(NULL, v);
	/* Log-uniform over 1 us .. 100 s: every octave of the range is used. */
	for (int i = 0; i < NSAMPLES; i++)
		v[i] = (uint64_t)exp(log(1000.0) +
				     next_unit(&seed) * (log(100.0 * SEC) - log(1000.0)));
	check_samples(_metadata, &h, v, NSAMPLES);
}

TEST(rank_rounding)
{
	struct hist h;

	/* 1..1000 us: p99.9 is the 999th value, not the 1000th. */
	hist_init(&h);
	for (uint64_t i = 1; i <= 1000; i++)
		hist_record(&h, i * US);
	ASSERT_TRUE(within_1pct(999 * US, hist_percentile(&h, 99.9)));
	ASSERT_GT(1000 * US, hist_percentile(&h, 99.9));
	ASSERT_EQ(1000 * US, hist_percentile(&h, 100));
	ASSERT_TRUE(within_1pct(500 * US, hist_percentile(&h, 50)));
	ASSERT_EQ(US, hist_percentile(&h, 0.01));
}

TEST(beyond_the_range)
{
	struct hist h;

	/* Past 2^37 ns a value shares the last bucket, but max stays exact. */
	hist_init(&h);
	hist_record(&h, 200 * SEC);
	hist_record(&h, 1 * US);
	ASSERT_EQ(1, h.counts[HIST_BUCKETS - 1]);
	ASSERT_EQ(200 * SEC, h.max);
	ASSERT_EQ(200 * SEC, hist_percentile(&h, 100));
	ASSERT_EQ(US, h.min);
}

TEST(merge_equals_union)
{
	struct hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *all = malloc(sizeof(*all));
	uint64_t seed = 4;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, all);
	hist_init(a);
	hist_init(b);
	hist_init(all);
	/* Two threads' worth: one fast and narrow, one slow and wide. */
	for (int i = 0; i < NSAMPLES / 2; i++) {
		uint64_t x = 5 * US + next_u64(&seed) % (50 * US);
		uint64_t y = (uint64_t)(-log(next_unit(&seed)) * 20.0 * MS);

		hist_record(a, x);
		hist_record(all, x);
		hist_record(b, y);
		hist_record(all, y);
	}
	hist_merge(a, b);
	ASSERT_EQ(all->total, a->total);
	ASSERT_EQ(all->min, a->min);
	ASSERT_EQ(all->max, a->max);
	ASSERT_EQ(0, memcmp(all->counts, a->counts, sizeof(all->counts)));
	ASSERT_TRUE(fabs(all->sum - a->sum) <= all->sum * 1e-12);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		ASSERT_EQ(hist_percentile(all, pcts[i]), hist_percentile(a, pcts[i]));
	/* Merging into an empty histogram copies; merging an empty one changes nothing. */
	hist_init(b);
	hist_merge(b, a);
	ASSERT_EQ(0, memcmp(a, b, sizeof(*a)));
	hist_init(all);
	hist_merge(a, all);
	ASSERT_EQ(0, memcmp(a, b, sizeof(*a)));
	free(a);
	free(b);
	free(all);
}

TEST_HARNESS_MAIN
