/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memstats: where the memory goes, as INFO memory and MEMORY STATS report it
 * (Redis's getMemoryOverheadData): what an empty server held at start-up,
 * the clients' buffers, the scripting engines, the key tables; the dataset
 * is what remains of used_memory. Plus the allocator's own view (jemalloc's
 * allocated, active and resident bytes) and the ratios between them and the
 * process's RSS.
 *
 * Computed on demand by the thread asking, with the registry lock and no
 * shard lock (INFO may run inside a script, which holds them all).
 */
#ifndef XKV_MEMSTATS_H
#define XKV_MEMSTATS_H

#include <stddef.h>
#include <stdint.h>

struct memstats_db {
	size_t keys;	    /* keys of the database */
	size_t table_bytes; /* its bucket arrays */
	size_t main_bytes;  /* bucket arrays plus the entries' headers */
};

struct memstats {
	size_t used, peak, startup, rss;
	int64_t peak_time; /* Unix seconds */
	size_t clients_normal, fastpath_slab;
	size_t eval_caches, functions_caches, script_vms;
	size_t db_table_bytes; /* bucket arrays of every database */
	size_t overhead, dataset, keys;
	double dataset_perc, peak_perc;
	/* The allocator's counters (jemalloc; the used bytes under libc). */
	size_t alloc_allocated, alloc_active, alloc_resident, alloc_muzzy;
	double alloc_frag, alloc_rss, rss_overhead, frag;
	long long alloc_frag_bytes, alloc_rss_bytes, rss_overhead_bytes, frag_bytes;
	int ndbs;	/* non-empty databases in dbs[] */
	int db_ids[64]; /* their numbers (the first 64 listed) */
	struct memstats_db dbs[64];
};

void memstats_get(struct memstats *m);

#endif
