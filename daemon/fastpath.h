/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastpath: the daemon's half of the kernel GET cache, and the only writer of
 * its BPF maps. It admits hot small strings of db 0 into slots, keeps every
 * cached slot coherent with the store, and reports the program's counters.
 *
 * Coherence: the store's choke point calls fastpath_on_change (its
 * STORE_HOOK_FASTPATH), which calls fastpath_key_changed / fastpath_key_removed /
 * fastpath_db_reset, under the key's shard lock, before
 * the writer is answered; a slot is rewritten in place (seqlock) or cleared
 * there, so no acknowledged write can be followed by a stale kernel hit.
 *
 * Locking: the fast-path lock protects the slot allocator (free stack, CLOCK
 * hand) and the attachments. It is taken under a shard lock; while holding it,
 * eviction only *tries* other shards' locks, so the store's lock order holds.
 * Taking kernel hits into keys needs only the key's shard lock; the cron's
 * walk takes it without holding the fast-path lock.
 */
#ifndef XKV_FASTPATH_H
#define XKV_FASTPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct entry;
struct xkv_slot;

/* Loads and attaches as configured (fastpath, fastpath-interfaces, ...). Never
 * fails the server: without the fast path it logs one line saying why. */
void fastpath_start(void);
void fastpath_stop(void);
bool fastpath_loaded(void);
/* Refreshes the dead-man heartbeat, and once a second the local addresses
 * (worker 0's cron). */
void fastpath_heartbeat(void);
/* The UDP access rule (access.c): with required, only token is answered (0:
 * nothing); with loopback_only, only 127.0.0.1 and ::1; with daemon_only,
 * the kernel answers nothing (the daemon checks the default user's ACL).
 * Takes effect in the kernel before it returns; kept for a later load. */
void fastpath_set_access(bool required, uint64_t token, bool loopback_only, bool daemon_only);

/* The store's hooks; the caller holds e's shard lock. */
void fastpath_note_read(int db, struct entry *e);
/* The store's hook (STORE_HOOK_FASTPATH): keeps the kernel cache coherent
 * with every change, under the changed key's shard lock. */
struct db_change;
void fastpath_on_change(const struct db_change *ch);
void fastpath_key_changed(int db, struct entry *e);
void fastpath_key_removed(int db, struct entry *e);
/* db was emptied or swapped; the caller holds all of its shards. */
void fastpath_db_reset(int db);

/*
 * Kernel hits reach the keyspace's LRU clock and LFU counter through the
 * slab: the program counts hits per slot (xkv_slot.hits) and the daemon takes
 * the counts into the keys as accesses. fastpath_collect does it for one key
 * (the eviction sampler and OBJECT, before they read its access time or
 * counter; the caller holds e's shard lock). fastpath_collect_hits walks a
 * share of the slots (worker 0's cron, no lock held), so that every slot is
 * taken about once a second and an idle time is never older than that.
 */
void fastpath_collect(int db, struct entry *e);
void fastpath_collect_hits(void);

/* Bytes of the mapped slab, counted in used_memory (0 without the fast path). */
size_t fastpath_slab_bytes(void);

/* FASTPATH ATTACH / DETACH: 0, or -1 with why. */
int fastpath_attach(const char *ifaces, char *why, size_t len);
void fastpath_detach(void);

/* Writes one slot under its seqlock: the key and its cluster hash slot, the
 * preformatted reply for value, its checksum partial sum, and the
 * CLOCK_MONOTONIC deadline (0: none). The caller owns the slot (fastpath.c's
 * lock, or a test). */
void fastpath_slot_write(struct xkv_slot *s, const void *key, size_t klen, uint16_t cluster_slot,
			 const void *value, size_t vlen, uint64_t expire_ns);
/* The kv_index key of a key of at most XKV_MAX_KEY bytes under `seed`. */
uint64_t fastpath_index_key(const void *key, size_t len, uint64_t seed);

/* Appends INFO fastpath's fields ("name:value\r\n" lines) via emit. */
typedef void fastpath_emit_fn(void *ctx, const char *name, const char *value);
void fastpath_info(fastpath_emit_fn *emit, void *ctx);

#endif
