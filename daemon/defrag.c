// SPDX-License-Identifier: BSD-3-Clause
/* Active defragmentation: when it runs and how hard (see defrag.h). */
#include <stddef.h>
#include <stdio.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "config.h"
#include "defrag.h"
#include "mem.h"
#include "store.h"
#include "util.h"

/* Written by worker 0's cron, read by every worker and INFO (relaxed). */
static unsigned running_pct;
static int64_t run_start_ms; /* when the current run began, 0 when idle */
static int64_t next_check_ms;
static uint64_t total_ms;
/* Summed over workers, each adding its own cycle's counts. */
static uint64_t hits, misses, key_hits, key_misses;

bool defrag_supported(void)
{
	return mem_defrag_supported();
}

/* The allocator's fragmentation: percent and bytes of active pages past
 * what is allocated (INFO's allocator_frag_ratio and _bytes). */
static void allocator_frag(double *pct, size_t *bytes)
{
	size_t allocated = 0, active = 0;
#ifdef HAVE_JEMALLOC
	uint64_t epoch = 1;
	size_t len = sizeof(epoch);

	mallctl("epoch", &epoch, &len, &epoch, len);
	len = sizeof(size_t);
	mallctl("stats.allocated", &allocated, &len, NULL, 0);
	mallctl("stats.active", &active, &len, NULL, 0);
#endif
	*pct = allocated && active > allocated ? ((double)active / (double)allocated - 1) * 100 : 0;
	*bytes = active > allocated ? active - allocated : 0;
}

/* Redis's computeDefragCycles: off below the lower threshold (or ignore-
 * bytes), cycle-min at it, rising linearly to cycle-max at the upper. */
static unsigned wanted_pct(void)
{
	double pct, lower = (double)config.active_defrag_threshold_lower,
		    upper = (double)config.active_defrag_threshold_upper;
	long long cmin = config.active_defrag_cycle_min, cmax = config.active_defrag_cycle_max;
	size_t bytes;
	double want;

	allocator_frag(&pct, &bytes);
	if (pct < lower || bytes < (size_t)config.active_defrag_ignore_bytes)
		return 0;
	if (upper <= lower || pct >= upper)
		want = (double)cmax;
	else
		want = (double)cmin + (pct - lower) * (double)(cmax - cmin) / (upper - lower);
	if (want < (double)cmin)
		want = (double)cmin;
	if (want > (double)cmax)
		want = (double)cmax;
	return (unsigned)want;
}

/* The pages the last second's moves emptied go back to the system at once
 * (jemalloc would only decay them as it allocates again), as Redis's
 * jemalloc background thread does. */
static void purge_emptied(void)
{
	static uint64_t hits_seen;
	uint64_t h = __atomic_load_n(&hits, __ATOMIC_RELAXED);

	if (h == hits_seen)
		return;
	hits_seen = h;
#ifdef HAVE_JEMALLOC
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "arena.%d.purge", MALLCTL_ARENAS_ALL);
	mallctl(cmd, NULL, NULL, NULL, 0);
#endif
}

static void decide(void)
{
	int64_t now = mono_ms();
	unsigned pct;

	if (now < next_check_ms)
		return;
	next_check_ms = now + 1000;
	purge_emptied();
	pct = config.activedefrag && defrag_supported() ? wanted_pct() : 0;
	if (pct && !run_start_ms) {
		__atomic_store_n(&run_start_ms, now, __ATOMIC_RELAXED);
	} else if (!pct && run_start_ms) {
		__atomic_fetch_add(&total_ms, (uint64_t)(now - run_start_ms), __ATOMIC_RELAXED);
		__atomic_store_n(&run_start_ms, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&running_pct, pct, __ATOMIC_RELAXED);
}

void defrag_cron(unsigned self, unsigned n, int64_t period_us)
{
	struct store_defrag_counts c = { 0 };
	unsigned pct;

	if (self == 0 && (config.activedefrag || running_pct))
		decide();
	pct = __atomic_load_n(&running_pct, __ATOMIC_RELAXED);
	if (!pct || !config.activedefrag)
		return;
	store_defrag(self, n, period_us * pct / 100, &c);
	__atomic_fetch_add(&hits, c.hits, __ATOMIC_RELAXED);
	__atomic_fetch_add(&misses, c.misses, __ATOMIC_RELAXED);
	__atomic_fetch_add(&key_hits, c.key_hits, __ATOMIC_RELAXED);
	__atomic_fetch_add(&key_misses, c.key_misses, __ATOMIC_RELAXED);
}

void defrag_info_get(struct defrag_info *out)
{
	int64_t start = __atomic_load_n(&run_start_ms, __ATOMIC_RELAXED);
	uint64_t cur = start ? (uint64_t)(mono_ms() - start) : 0;

	out->running = __atomic_load_n(&running_pct, __ATOMIC_RELAXED);
	out->hits = __atomic_load_n(&hits, __ATOMIC_RELAXED);
	out->misses = __atomic_load_n(&misses, __ATOMIC_RELAXED);
	out->key_hits = __atomic_load_n(&key_hits, __ATOMIC_RELAXED);
	out->key_misses = __atomic_load_n(&key_misses, __ATOMIC_RELAXED);
	out->current_ms = cur;
	out->total_ms = __atomic_load_n(&total_ms, __ATOMIC_RELAXED) + cur;
}

void defrag_reset_stats(void)
{
	__atomic_store_n(&hits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&misses, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&key_hits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&key_misses, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&total_ms, 0, __ATOMIC_RELAXED);
}
