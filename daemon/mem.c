// SPDX-License-Identifier: BSD-3-Clause
/*
 * Allocation accounting: each thread adds the usable size of what it
 * allocates and subtracts what it frees in its own counter slot. A block may
 * be freed by another thread than the one that allocated it, so a slot can go
 * negative; only the sum over slots means anything.
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

/* jemalloc reads this at its first allocation. Larger per-thread caches of
 * small size classes (200 -> 1000 slots, multiplier 2 -> 8) keep a worker's
 * churn of small entries and replies out of the arena locks; the same tuning
 * Redis 8.8 builds in, so DEBUG MALLCTL reports the same values. */
const char *malloc_conf = "lg_tcache_nslots_mul:3,tcache_nslots_small_max:1000";
#endif

#include "log.h"
#include "mem.h"

#define MEM_SLOTS 256

/* One cache line per slot: threads never share a written line. */
static struct {
	_Atomic int64_t bytes;
	char pad[56];
} slots[MEM_SLOTS];
static _Atomic unsigned next_slot;
static __thread int my_slot = -1;
static size_t peak;
static int64_t peak_time; /* Unix seconds when peak was last raised */
static size_t startup;
/* Held outside the allocator (mem_mapped_add); rarely written. */
static _Atomic int64_t mapped;

static inline void account(int64_t delta)
{
	if (my_slot < 0)
		my_slot = atomic_fetch_add(&next_slot, 1) % MEM_SLOTS;
	atomic_fetch_add_explicit(&slots[my_slot].bytes, delta, memory_order_relaxed);
}

static void __attribute__((noreturn)) oom(size_t size)
{
	log_warning("Out Of Memory allocating %zu bytes!", size);
	abort();
}

size_t xusable(void *ptr)
{
	return ptr ? malloc_usable_size(ptr) : 0;
}

size_t xgood_size(size_t size)
{
#ifdef HAVE_JEMALLOC
	return nallocx(size ? size : 1, 0);
#else
	(void)size;
	return 0;
#endif
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		oom(size);
	account((int64_t)xusable(p));
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		oom(nmemb * size);
	account((int64_t)xusable(p));
	return p;
}

void *xcalloc_aligned(size_t nmemb, size_t size, size_t align)
{
	size_t bytes;
	void *p;

	if (__builtin_mul_overflow(nmemb ? nmemb : 1, size ? size : 1, &bytes))
		oom(SIZE_MAX);
	/* aligned_alloc() wants a multiple of the alignment. */
	bytes = (bytes + align - 1) & ~(align - 1);
	p = aligned_alloc(align, bytes);
	if (!p)
		oom(bytes);
	memset(p, 0, bytes);
	account((int64_t)xusable(p));
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	size_t old = xusable(ptr);
	void *p = realloc(ptr, size ? size : 1);

	if (!p)
		oom(size);
	account((int64_t)xusable(p) - (int64_t)old);
	return p;
}

void xfree(void *ptr)
{
	if (!ptr)
		return;
	account(-(int64_t)xusable(ptr));
	free(ptr);
}

#ifdef HAVE_JEMALLOC
/* jemalloc's experimental.utilization.query, looked up once. */
static size_t util_mib[4];
static size_t util_miblen;
static int util_state; /* 0 not looked up, 1 available, -1 not */

bool mem_defrag_supported(void)
{
	int st = __atomic_load_n(&util_state, __ATOMIC_ACQUIRE);

	if (!st) {
		size_t mib[4], n = 4;

		st = mallctlnametomib("experimental.utilization.query", mib, &n) == 0 ? 1 : -1;
		if (st > 0) {
			memcpy(util_mib, mib, sizeof(mib));
			util_miblen = n;
		}
		__atomic_store_n(&util_state, st, __ATOMIC_RELEASE);
	}
	return st > 0;
}

void *mem_defrag_move(void *p)
{
	/* jemalloc's inspect_extent_util_stats_verbose_t. */
	struct {
		void *slabcur;
		size_t nfree, nregs, size, bin_nfree, bin_nregs;
	} u;
	size_t len = sizeof(u), sz;
	void *q;

	if (!p || !mem_defrag_supported() ||
	    mallctlbymib(util_mib, util_miblen, &u, &len, &p, sizeof(p)))
		return NULL;
	/* A large block, a full slab, or the slab being filled: moving frees
	 * nothing. */
	if (u.nregs <= 1 || !u.nfree || !u.bin_nregs ||
	    ((char *)p >= (char *)u.slabcur && (char *)p < (char *)u.slabcur + u.size))
		return NULL;
	/* Used less than the bin's average: its blocks go to fuller slabs,
	 * so that it empties and its pages go back (Redis's defrag hint). */
	if ((u.nregs - u.nfree) * u.bin_nregs > (u.bin_nregs - u.bin_nfree) * u.nregs)
		return NULL;
	sz = malloc_usable_size(p);
	/* Past the thread cache, which would hand back a block of the same
	 * sparse slab. The size class is the same: accounting is unchanged. */
	q = mallocx(sz, MALLOCX_TCACHE_NONE);
	if (!q)
		return NULL;
	memcpy(q, p, sz);
	dallocx(p, MALLOCX_TCACHE_NONE);
	return q;
}
#else
bool mem_defrag_supported(void)
{
	return false;
}

void *mem_defrag_move(void *p)
{
	(void)p;
	return NULL;
}
#endif

char *xstrndup(const char *p, size_t len)
{
	char *s = xmalloc(len + 1);

	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

void mem_mapped_add(int64_t delta)
{
	atomic_fetch_add_explicit(&mapped, delta, memory_order_relaxed);
}

size_t mem_mapped(void)
{
	int64_t n = atomic_load_explicit(&mapped, memory_order_relaxed);

	return n > 0 ? (size_t)n : 0;
}

size_t mem_used(void)
{
	int64_t sum = atomic_load_explicit(&mapped, memory_order_relaxed);

	for (int i = 0; i < MEM_SLOTS; i++)
		sum += atomic_load_explicit(&slots[i].bytes, memory_order_relaxed);
	return sum > 0 ? (size_t)sum : 0;
}

void mem_sample_peak(void)
{
	size_t used = mem_used();

	if (used > peak) {
		peak = used;
		peak_time = (int64_t)time(NULL);
	}
}

int64_t mem_peak_time(void)
{
	mem_sample_peak();
	return peak_time;
}

void mem_mark_startup(void)
{
	startup = mem_used();
}

size_t mem_startup(void)
{
	return startup;
}

size_t mem_peak(void)
{
	mem_sample_peak();
	return peak;
}

size_t mem_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0, rss = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &pages, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * (size_t)sysconf(_SC_PAGESIZE);
}

const char *mem_allocator(void)
{
#ifdef HAVE_JEMALLOC
	static char name[64];
	const char *version = NULL;
	size_t len = sizeof(version);

	if (!name[0]) {
		if (mallctl("version", &version, &len, NULL, 0) == 0 && version)
			snprintf(name, sizeof(name), "jemalloc-%.*s", (int)strcspn(version, "-"),
				 version);
		else
			snprintf(name, sizeof(name), "jemalloc");
	}
	return name;
#else
	return "libc";
#endif
}
