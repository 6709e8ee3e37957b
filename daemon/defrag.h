/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * defrag: active defragmentation (activedefrag and its active-defrag-*
 * directives), as Redis does it with jemalloc's hints: while the allocator's
 * fragmentation (active over allocated pages) is past
 * active-defrag-threshold-lower and active-defrag-ignore-bytes, each worker
 * spends between active-defrag-cycle-min and -max percent of its cron period
 * (more as fragmentation nears active-defrag-threshold-upper) moving the
 * blocks of its shards' keys out of slabs that are emptier than average
 * (store_defrag, mem_defrag_move), so those slabs drain and their pages go
 * back. Keys' entries and string buffers move; aggregates' inner blocks do
 * not (active-defrag-max-scan-fields is accepted and unused).
 */
#ifndef XKV_DEFRAG_H
#define XKV_DEFRAG_H

#include <stdbool.h>
#include <stdint.h>

/* Can activedefrag be switched on (jemalloc with its utilization query)? */
bool defrag_supported(void);
/* A worker's share of the work, from its cron (worker `self` of `n`, every
 * period_us). Worker 0 also decides, once a second, whether and how hard
 * everyone works. */
void defrag_cron(unsigned self, unsigned n, int64_t period_us);

struct defrag_info {
	unsigned running; /* percent of CPU the cycles take now, 0 when idle */
	uint64_t hits, misses, key_hits, key_misses;
	uint64_t total_ms;   /* time spent running, all runs */
	uint64_t current_ms; /* of the run going on, 0 when idle */
};
/* For INFO (active_defrag_* fields); any thread. */
void defrag_info_get(struct defrag_info *out);
/* CONFIG RESETSTAT. */
void defrag_reset_stats(void);

#endif
