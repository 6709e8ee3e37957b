/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * evict: maxmemory. Before a command runs, the server frees memory by
 * evicting keys chosen as Redis does: sample maxmemory-samples keys of one
 * shard (only keys with deadlines for the volatile-* policies) and evict the
 * best candidate for the policy (least recently used, least frequently used,
 * nearest deadline, or any), until used_memory is back under the limit.
 *
 * Locks: evict_until_fits() takes one shard lock at a time and must be called
 * with none held.
 */
#ifndef XKV_EVICT_H
#define XKV_EVICT_H

#include <stdbool.h>
#include <stdint.h>

struct entry;

/* In the order Redis lists them (its error messages show this order). */
enum maxmemory_policy {
	POLICY_VOLATILE_LRU,
	POLICY_VOLATILE_LFU,
	POLICY_VOLATILE_RANDOM,
	POLICY_VOLATILE_TTL,
	POLICY_ALLKEYS_LRU,
	POLICY_ALLKEYS_LFU,
	POLICY_ALLKEYS_RANDOM,
	POLICY_NOEVICTION,
};

/* The value a new key's LFU counter starts at, as in Redis. */
#define LFU_INIT_VAL 5

/* Evicts until used memory fits maxmemory; false if it still does not. */
bool evict_until_fits(void);
/* Keys evicted since start (INFO stats evicted_keys). */
uint64_t evict_count(void);
bool evict_policy_is_lfu(void);
/* An access to e under an LFU policy: decay its counter, then maybe bump it. */
void lfu_touch(struct entry *e, uint32_t now);
/* e's counter, decayed to now (OBJECT FREQ). */
uint8_t lfu_value(const struct entry *e, uint32_t now);

#endif
