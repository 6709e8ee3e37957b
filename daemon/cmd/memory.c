// SPDX-License-Identifier: BSD-3-Clause
/* MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP. */
#include <stdio.h>
#include <string.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "commands.h"
#include "config.h"
#include "evict.h"
#include "fastpath.h"
#include "mem.h"
#include "memstats.h"
#include "text.h"

void cmd_memory_usage(struct client *c)
{
	struct entry *e;

	/* SAMPLES is accepted for compatibility: sizes here are exact. */
	if (c->argc != 3 && !(c->argc == 5 && arg_is(c, 3, "SAMPLES"))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (c->argc == 5) {
		long long n;

		if (!arg_ll(c, 4, &n))
			return;
	}
	e = db_peek(c->db, c->argv[2].p, c->argv[2].len);
	if (!e || entry_expired(e, store_now())) {
		reply_null(c);
		return;
	}
	reply_int(c, (long long)(entry_mem(e) + obj_mem(&e->val)));
}

static void stat_int(struct client *c, const char *name, long long v)
{
	reply_bulk_cstr(c, name);
	reply_int(c, v);
}

static void stat_double(struct client *c, const char *name, double v)
{
	reply_bulk_cstr(c, name);
	reply_double(c, v);
}

/* Redis 8.8's fields in its order, each database as a map of its own;
 * fastpath.slab is xkvd's (part of startup.allocated). */
void cmd_memory_stats(struct client *c)
{
	struct memstats m;

	memstats_get(&m);
	reply_map(c, 36 + m.ndbs);
	stat_int(c, "peak.allocated", (long long)m.peak);
	stat_int(c, "total.allocated", (long long)m.used);
	stat_int(c, "startup.allocated", (long long)m.startup);
	stat_int(c, "fastpath.slab", (long long)m.fastpath_slab);
	stat_int(c, "replication.backlog", 0);
	stat_int(c, "replica.fullsync.buffer", 0);
	stat_int(c, "clients.slaves", 0);
	stat_int(c, "clients.normal", (long long)m.clients_normal);
	stat_int(c, "clients.normal.shared", 0);
	stat_int(c, "clients.normal.unshared", (long long)m.clients_normal);
	stat_int(c, "cluster.links", 0);
	stat_int(c, "aof.buffer", 0);
	stat_int(c, "lua.caches", (long long)m.eval_caches);
	stat_int(c, "functions.caches", (long long)m.functions_caches);
	stat_int(c, "script.VMs", (long long)m.script_vms);
	for (int i = 0; i < m.ndbs; i++) {
		char name[32];

		snprintf(name, sizeof(name), "db.%d", m.db_ids[i]);
		reply_bulk_cstr(c, name);
		reply_map(c, 2);
		stat_int(c, "overhead.hashtable.main", (long long)m.dbs[i].main_bytes);
		/* A key's deadline lives in its entry: there is no expires table. */
		stat_int(c, "overhead.hashtable.expires", 0);
	}
	stat_int(c, "overhead.db.hashtable.lut", (long long)m.db_table_bytes);
	stat_int(c, "overhead.db.hashtable.rehashing", 0);
	stat_int(c, "overhead.total", (long long)m.overhead);
	stat_int(c, "db.dict.rehashing.count", 0);
	stat_int(c, "keys.count", (long long)m.keys);
	stat_int(c, "keys.bytes-per-key", m.keys ? (long long)((m.used - m.startup) / m.keys) : 0);
	stat_int(c, "dataset.bytes", (long long)m.dataset);
	stat_double(c, "dataset.percentage", m.dataset_perc);
	stat_double(c, "peak.percentage", m.peak_perc);
	stat_int(c, "allocator.allocated", (long long)m.alloc_allocated);
	stat_int(c, "allocator.active", (long long)m.alloc_active);
	stat_int(c, "allocator.resident", (long long)m.alloc_resident);
	stat_int(c, "allocator.muzzy", (long long)m.alloc_muzzy);
	stat_double(c, "allocator-fragmentation.ratio", m.alloc_frag);
	stat_int(c, "allocator-fragmentation.bytes", m.alloc_frag_bytes);
	stat_double(c, "allocator-rss.ratio", m.alloc_rss);
	stat_int(c, "allocator-rss.bytes", m.alloc_rss_bytes);
	stat_double(c, "rss-overhead.ratio", m.rss_overhead);
	stat_int(c, "rss-overhead.bytes", m.rss_overhead_bytes);
	stat_double(c, "fragmentation", m.frag);
	stat_int(c, "fragmentation.bytes", m.frag_bytes);
}

void cmd_memory_doctor(struct client *c)
{
	size_t used = mem_used(), rss = mem_rss(), slab = fastpath_slab_bytes();
	char report[512];

	/* The slab is there from the start: it does not make an instance full. */
	if (used - (slab < used ? slab : used) < 5 * 1024 * 1024)
		snprintf(report, sizeof(report),
			 "Hi Sam, this instance is empty or is using very little memory, my issues "
			 "detector can't be used in these conditions. Please, leave for your "
			 "mission "
			 "on Earth and fill it with some data. The new Sam and I will be back to "
			 "our "
			 "programming as soon as I finished rebooting.");
	else if (rss > used + used / 2)
		snprintf(report, sizeof(report),
			 "Sam, I detected a few issues in this instance memory implementation:\n\n"
			 " * High fragmentation: the resident set (%zu bytes) is more than 1.5 "
			 "times "
			 "what is allocated (%zu bytes). MEMORY PURGE returns unused pages to the "
			 "system.\n",
			 rss, used);
	else
		snprintf(report, sizeof(report),
			 "Hi Sam, I can't find any memory issue in your instance. I can only "
			 "account "
			 "for what occurs on this base.");
	reply_verbatim(c, report, strlen(report));
}

#ifdef HAVE_JEMALLOC
static void collect(void *arg, const char *s)
{
	text_printf(arg, "%s", s);
}
#endif

void cmd_memory_malloc_stats(struct client *c)
{
#ifdef HAVE_JEMALLOC
	struct text t = { 0 };

	malloc_stats_print(collect, &t, NULL);
	reply_verbatim(c, t.p ? t.p : "", t.len);
	xfree(t.p);
#else
	static const char none[] = "Stats not supported for the current allocator";

	reply_verbatim(c, none, sizeof(none) - 1);
#endif
}

void cmd_memory_purge(struct client *c)
{
#ifdef HAVE_JEMALLOC
	char cmd[64];

	/* Return every arena's unused dirty pages to the system. */
	snprintf(cmd, sizeof(cmd), "arena.%d.purge", MALLCTL_ARENAS_ALL);
	mallctl(cmd, NULL, NULL, NULL, 0);
#endif
	reply_ok(c);
}

void cmd_memory_help(struct client *c)
{
	static const char *const help[] = {
		"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, help);
}
