/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hist: a log-linear latency histogram in the HDR style.
 *
 * Values are nanoseconds. Below 2 * HIST_SUB every value has its own bucket;
 * above, each power of two [2^k, 2^(k+1)) is cut into HIST_SUB equal buckets,
 * so a bucket is never wider than 1/HIST_SUB (0.78%) of the values in it and
 * a reported percentile is within 0.4% of a recorded value. The buckets cover
 * 0 .. 2^HIST_MAX_BITS - 1 ns (137 s), which includes the 1 us .. 100 s range
 * the reports need; larger values land in the last bucket. min and max are
 * kept exactly.
 *
 * A histogram belongs to one thread and is not locked: each worker records
 * into its own and the runner merges them after the workers have joined.
 * Merging adds counts, so merge(a, b) is the histogram of both sets of values.
 */
#ifndef XKV_BENCH_HIST_H
#define XKV_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB (1U << HIST_SUB_BITS)
#define HIST_MAX_BITS 37
#define HIST_MAX_VALUE ((1ULL << HIST_MAX_BITS) - 1)
/* Exact buckets 0 .. 2*SUB-1, then SUB per power of two up to 2^MAX_BITS. */
#define HIST_BUCKETS ((HIST_MAX_BITS - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t total; /* values recorded */
	uint64_t min;	/* UINT64_MAX while empty */
	uint64_t max;
	double sum; /* for the mean; a double so long runs cannot overflow it */
	uint64_t counts[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* Adds src's values to dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/*
 * The value at percentile p (0..100) by nearest rank: the smallest recorded
 * value v such that at least p% of the values are <= v, as the midpoint of
 * its bucket, clamped to [min, max]. The first rank is min and the last is
 * max, exactly. 0 for an empty histogram.
 */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);

/* The bucket layout, for tests and for anyone who merges raw counts. */
unsigned hist_index(uint64_t v);
uint64_t hist_bucket_lo(unsigned i);
uint64_t hist_bucket_width(unsigned i);

#endif /* XKV_BENCH_HIST_H */
