// SPDX-License-Identifier: BSD-3-Clause
/*
 * The memory overview (memstats.h). Redis's definitions, mapped onto xkvd:
 * an entry keeps its TTL, so there is no expires table (its overhead is 0),
 * and tables are resized at once, so nothing is ever half rehashed. The
 * fast path's slab is mapped at start-up: it counts as start-up memory.
 */
#include <stdio.h>
#include <string.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "client.h"
#include "fastpath.h"
#include "hotkeys.h"
#include "mem.h"
#include "memstats.h"
#include "script.h"
#include "store.h"

static double ratio(size_t a, size_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void allocator_stats(struct memstats *m)
{
#ifdef HAVE_JEMALLOC
	uint64_t epoch = 1;
	size_t len = sizeof(size_t), pmuzzy = 0, page = 4096;
	char name[64];

	/* jemalloc's statistics are refreshed when the epoch is bumped. */
	len = sizeof(epoch);
	mallctl("epoch", &epoch, &len, &epoch, len);
	len = sizeof(size_t);
	mallctl("stats.allocated", &m->alloc_allocated, &len, NULL, 0);
	mallctl("stats.active", &m->alloc_active, &len, NULL, 0);
	mallctl("stats.resident", &m->alloc_resident, &len, NULL, 0);
	snprintf(name, sizeof(name), "stats.arenas.%d.pmuzzy", MALLCTL_ARENAS_ALL);
	mallctl(name, &pmuzzy, &len, NULL, 0);
	mallctl("arenas.page", &page, &len, NULL, 0);
	m->alloc_muzzy = pmuzzy * page;
#else
	m->alloc_allocated = m->alloc_active = m->alloc_resident = m->used;
#endif
}

static void key_tables(struct memstats *m)
{
	for (int db = 0; db < store.ndbs; db++) {
		struct memstats_db d = { .keys = db_size(db), .table_bytes = db_table_bytes(db) };

		m->keys += d.keys;
		m->db_table_bytes += d.table_bytes;
		if (!d.keys)
			continue;
		d.main_bytes = d.table_bytes + d.keys * sizeof(struct entry);
		if (m->ndbs < (int)(sizeof(m->dbs) / sizeof(m->dbs[0]))) {
			m->db_ids[m->ndbs] = db;
			m->dbs[m->ndbs++] = d;
		}
	}
}

void memstats_get(struct memstats *m)
{
	long long vm, scripts, fvm, fbytes;
	unsigned long n, nfuncs, nlibs;
	size_t main_bytes = 0;

	memset(m, 0, sizeof(*m));
	m->used = mem_used();
	m->peak = mem_peak();
	m->peak_time = mem_peak_time();
	m->rss = mem_rss();
	m->fastpath_slab = fastpath_slab_bytes();
	m->startup = mem_startup() + m->fastpath_slab;
	m->clients_normal = clients_mem();
	script_memory(&vm, &scripts, &n);
	function_memory(&fvm, &fbytes, &nfuncs, &nlibs);
	m->eval_caches = (size_t)scripts;
	m->functions_caches = (size_t)fbytes;
	m->script_vms = (size_t)(vm + fvm);
	key_tables(m);
	for (int i = 0; i < m->ndbs; i++)
		main_bytes += m->dbs[i].main_bytes;
	/* HOTKEYS's summaries count as overhead, as in Redis. */
	m->overhead = m->startup + m->clients_normal + m->eval_caches + m->functions_caches +
		      m->script_vms + main_bytes + hotkeys_memory();
	m->dataset = m->used > m->overhead ? m->used - m->overhead : 0;
	/* Redis's dataset percentage: of what is not start-up memory. */
	m->dataset_perc =
		m->used > m->startup ? 100.0 * ratio(m->dataset, m->used - m->startup) : 0;
	m->peak_perc = 100.0 * ratio(m->used, m->peak);
	allocator_stats(m);
	m->alloc_frag = ratio(m->alloc_active, m->alloc_allocated);
	m->alloc_frag_bytes = (long long)m->alloc_active - (long long)m->alloc_allocated;
	m->alloc_rss = ratio(m->alloc_resident, m->alloc_active);
	m->alloc_rss_bytes = (long long)m->alloc_resident - (long long)m->alloc_active;
	m->rss_overhead = ratio(m->rss, m->alloc_resident);
	m->rss_overhead_bytes = (long long)m->rss - (long long)m->alloc_resident;
	m->frag = ratio(m->rss, m->used);
	m->frag_bytes = (long long)m->rss - (long long)m->used;
}
