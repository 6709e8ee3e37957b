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
	reply_int(c, (long long)(xusable(e) + obj_mem(&e->val)));
}

void cmd_memory_stats(struct client *c)
{
	size_t used = mem_used(), peak = mem_peak(), rss = mem_rss(), slab = fastpath_slab_bytes();
	size_t dataset = used > slab ? used - slab : 0;
	uint64_t keys = 0;

	for (int db = 0; db < store.ndbs; db++)
		keys += db_size(db);
	reply_map(c, 9);
	reply_bulk_cstr(c, "peak.allocated");
	reply_int(c, (long long)peak);
	reply_bulk_cstr(c, "total.allocated");
	reply_int(c, (long long)used);
	/* An overhead in total.allocated, where Redis lists its own. */
	reply_bulk_cstr(c, "fastpath.slab");
	reply_int(c, (long long)slab);
	reply_bulk_cstr(c, "keys.count");
	reply_int(c, (long long)keys);
	reply_bulk_cstr(c, "keys.bytes-per-key");
	reply_int(c, keys ? (long long)(dataset / keys) : 0);
	reply_bulk_cstr(c, "dataset.bytes");
	reply_int(c, (long long)dataset);
	reply_bulk_cstr(c, "rss-bytes");
	reply_int(c, (long long)rss);
	reply_bulk_cstr(c, "fragmentation");
	reply_double(c, used ? (double)rss / (double)used : 0);
	reply_bulk_cstr(c, "evicted.keys");
	reply_int(c, (long long)evict_count());
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
