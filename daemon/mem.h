/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem: the daemon's allocator front end.
 *
 * Every heap allocation of the daemon goes through these wrappers so that
 * used_memory (INFO, MEMORY USAGE, maxmemory) is the sum of the allocator's
 * usable sizes. Each thread counts into its own slot (no shared cache line on
 * the hot path); mem_used() sums the slots. Allocation failure aborts, as in
 * Redis: a server that cannot allocate cannot keep its promises.
 */
#ifndef XKV_MEM_H
#define XKV_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
/* xcalloc for types that must start on an `align` boundary (a power of two),
 * such as those declared aligned(64) to own their cache lines: calloc only
 * promises alignof(max_align_t). Freed with xfree(). */
void *xcalloc_aligned(size_t nmemb, size_t size, size_t align);
void *xrealloc(void *ptr, size_t size);
void xfree(void *ptr);
/* Returns a NUL-terminated copy of p[0..len); the caller frees it with xfree(). */
/* Active defragmentation (defrag.c): can the allocator say where a block
 * lies (jemalloc's utilization query)? */
bool mem_defrag_supported(void);
/* p's block moved to a fuller slab when jemalloc's figures say its own is
 * used less than its size class's average: the new block (same size and
 * contents; p is freed), or NULL when p stays. The caller repoints what
 * pointed to p. */
void *mem_defrag_move(void *p);
char *xstrndup(const char *p, size_t len);
/* The usable size of an allocation made here (what accounting charges for it). */
size_t xusable(void *ptr);
/* The usable size xmalloc(size) would get, or 0 where the allocator cannot
 * tell (libc malloc, in the sanitizer build). */
size_t xgood_size(size_t size);

/* Bytes currently allocated through the wrappers, over all threads, plus
 * the memory held outside the allocator (mem_mapped()). */
size_t mem_used(void);
/* Memory the daemon holds outside the allocator but must answer for in
 * used_memory and maxmemory: the fast path's mapped slab. Added when it is
 * mapped, subtracted when it is unmapped (any thread). */
void mem_mapped_add(int64_t delta);
size_t mem_mapped(void);
/* Peak of mem_used() as last sampled by mem_sample_peak(). */
size_t mem_peak(void);
void mem_sample_peak(void);
/* When the peak was last raised (Unix seconds). */
int64_t mem_peak_time(void);
/* Records used memory once the server is ready to serve (INFO's
 * used_memory_startup, what an empty server needs), and reads it back. */
void mem_mark_startup(void);
size_t mem_startup(void);
/* The process's resident set size in bytes, from /proc (0 if unreadable). */
size_t mem_rss(void);
/* Name of the allocator in use ("jemalloc-5.3.0" or "libc"). */
const char *mem_allocator(void);

#endif
