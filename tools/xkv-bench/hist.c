// SPDX-License-Identifier: BSD-3-Clause
/*
 * The latency histogram (hist.h). Bucket i for i < 2 * HIST_SUB holds the
 * value i. Above that, a value v with its highest set bit at position b is
 * split into a shift e = b - HIST_SUB_BITS and a mantissa m = v >> e, which is
 * always in [HIST_SUB, 2 * HIST_SUB): the index e * HIST_SUB + m is then
 * continuous with the exact range and grows by HIST_SUB per power of two.
 */
#include <math.h>
#include <string.h>

#include "hist.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned hist_index(uint64_t v)
{
	unsigned e;

	if (v > HIST_MAX_VALUE)
		v = HIST_MAX_VALUE;
	if (v < 2 * HIST_SUB)
		return (unsigned)v;
	e = 63 - __builtin_clzll(v) - HIST_SUB_BITS;
	return e * HIST_SUB + (unsigned)(v >> e);
}

uint64_t hist_bucket_lo(unsigned i)
{
	unsigned e;

	if (i < 2 * HIST_SUB)
		return i;
	e = i / HIST_SUB - 1;
	return (uint64_t)(i % HIST_SUB + HIST_SUB) << e;
}

uint64_t hist_bucket_width(unsigned i)
{
	if (i < 2 * HIST_SUB)
		return 1;
	return 1ULL << (i / HIST_SUB - 1);
}

void hist_record(struct hist *h, uint64_t v)
{
	h->counts[hist_index(v)]++;
	h->total++;
	h->sum += (double)v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t ppm, rank, seen = 0, v;
	unsigned i;

	if (!h->total)
		return 0;
	if (p >= 100.0)
		return h->max;
	if (p <= 0.0)
		return h->min;
	/*
	 * The rank in integers (parts per million), so that 99.9% of 1000
	 * values is rank 999 and not 1000 through a rounding error.
	 */
	ppm = (uint64_t)llround(p * 10000.0);
	rank = (uint64_t)(((unsigned __int128)h->total * ppm + 999999) / 1000000);
	/* The first and the last rank are the exact min and max. */
	if (rank <= 1)
		return h->min;
	if (rank >= h->total)
		return h->max;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		return h->max;
	v = hist_bucket_lo(i) + (hist_bucket_width(i) - 1) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

double hist_mean(const struct hist *h)
{
	return h->total ? h->sum / (double)h->total : 0.0;
}
