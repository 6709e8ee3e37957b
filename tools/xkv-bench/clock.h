/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock: the one time base of xkv-bench. Every timestamp (send times, the
 * open-loop timetable, reply arrival) is CLOCK_MONOTONIC in nanoseconds, so
 * that latencies are plain differences and the timetable can be tested with
 * made-up numbers instead of a real clock.
 */
#ifndef XKV_BENCH_CLOCK_H
#define XKV_BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

#endif /* XKV_BENCH_CLOCK_H */
