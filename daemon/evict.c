// SPDX-License-Identifier: BSD-3-Clause
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "evict.h"
#include "fastpath.h"
#include "lazyfree.h"
#include "mem.h"
#include "pause.h"
#include "store.h"
#include "util.h"

/* Bounds one call's work, so one command never stalls for long. */
#define MAX_EVICTIONS_PER_CALL 100000
#define VOLATILE_TRIES_PER_SAMPLE 8
/* Keys of one sample kept distinct (Redis caps maxmemory-samples at 64). */
#define SAMPLE_DISTINCT 64

static _Atomic uint64_t evicted;

uint64_t evict_count(void)
{
	return atomic_load_explicit(&evicted, memory_order_relaxed);
}

bool evict_policy_is_lfu(void)
{
	return config.maxmemory_policy == POLICY_ALLKEYS_LFU ||
	       config.maxmemory_policy == POLICY_VOLATILE_LFU;
}

/* Does the policy rank keys by their accesses (LRU clock, LFU counter)? */
static bool access_policy(void)
{
	switch (config.maxmemory_policy) {
	case POLICY_ALLKEYS_LRU:
	case POLICY_VOLATILE_LRU:
	case POLICY_ALLKEYS_LFU:
	case POLICY_VOLATILE_LFU:
		return true;
	default:
		return false;
	}
}

static bool volatile_policy(void)
{
	return config.maxmemory_policy == POLICY_VOLATILE_LRU ||
	       config.maxmemory_policy == POLICY_VOLATILE_LFU ||
	       config.maxmemory_policy == POLICY_VOLATILE_RANDOM ||
	       config.maxmemory_policy == POLICY_VOLATILE_TTL;
}

static uint64_t rand64(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() * 0x9e3779b97f4a7c15ULL | 1;
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

uint8_t lfu_value(const struct entry *e, uint32_t now)
{
	/* The counter loses one per lfu-decay-time minutes without access. */
	uint32_t minutes = (now - e->atime) / (60 * STORE_CLOCK_HZ);
	uint32_t periods = config.lfu_decay_time ? minutes / (uint32_t)config.lfu_decay_time : 0;

	return periods >= e->lfu ? 0 : (uint8_t)(e->lfu - periods);
}

void lfu_touch(struct entry *e, uint32_t now)
{
	uint8_t counter = lfu_value(e, now);

	/* Logarithmic: the more hits a key has, the less likely one more counts. */
	if (counter < 255) {
		double base = counter > LFU_INIT_VAL ? counter - LFU_INIT_VAL : 0;
		double p = 1.0 / (base * (double)config.lfu_log_factor + 1);

		if ((double)(rand64() >> 11) / (double)(1ULL << 53) < p)
			counter++;
	}
	e->lfu = counter;
}

/* Lower is evicted first. */
static uint64_t eviction_rank(const struct entry *e, uint32_t now)
{
	switch (config.maxmemory_policy) {
	case POLICY_ALLKEYS_LRU:
	case POLICY_VOLATILE_LRU:
		return e->atime;
	case POLICY_ALLKEYS_LFU:
	case POLICY_VOLATILE_LFU:
		return lfu_value(e, now);
	case POLICY_VOLATILE_TTL:
		return (uint64_t)entry_expire(e);
	default:
		return 0;
	}
}

/* Evicts the best of a sample from one shard; false if the shard had none. */
static bool evict_from(int db, unsigned shard)
{
	struct shard *s = store_shard(db, shard);
	bool only_volatile = volatile_policy(), by_access = access_policy();
	uint32_t now;
	struct entry *best = NULL;
	uint64_t best_rank = 0;
	long samples = config.maxmemory_samples;
	/* The sample's keys so far: each counts once, as in Redis's sample. */
	struct entry *seen[SAMPLE_DISTINCT];
	unsigned nseen = 0;

	store_shard_lock(db, shard);
	now = store_clock();
	/* No more distinct keys than the shard has candidates. */
	if ((uint64_t)samples > (only_volatile ? s->nexpires : s->keys.count))
		samples = (long)(only_volatile ? s->nexpires : s->keys.count);
	for (long i = 0, tries = 0; i < samples && tries < samples * VOLATILE_TRIES_PER_SAMPLE;
	     tries++) {
		struct dict_node *n = dict_random(&s->keys, rand64());
		struct entry *e = n ? entry_of(n) : NULL;
		bool again = false;
		uint64_t rank;

		if (!e || (only_volatile && entry_expire(e) < 0))
			continue;
		/* dict_random() favours a key after a run of empty buckets: drawn
		 * again and again, one hot key could make a whole sample, and lose. */
		for (unsigned k = 0; k < nseen && !again; k++)
			again = seen[k] == e;
		if (again)
			continue;
		if (nseen < SAMPLE_DISTINCT)
			seen[nseen++] = e;
		i++;
		/* A key the kernel serves has accesses no lookup saw: the hits
		 * since the last collection count before it is ranked. */
		if (by_access)
			fastpath_collect(db, e);
		rank = eviction_rank(e, now);
		if (!best || rank < best_rank) {
			best = e;
			best_rank = rank;
		}
	}
	if (best) {
		db_remove(db, best, DB_CHANGE_EVICT);
		atomic_fetch_add_explicit(&evicted, 1, memory_order_relaxed);
	}
	store_shard_unlock(db, shard);
	return best != NULL;
}

/* Keys the policy may evict in db (racy, as a weight). */
static uint64_t candidates(int db)
{
	return volatile_policy() ? db_expires(db) : db_size(db);
}

/* A database chosen with probability proportional to its candidates, so every
 * key has the same chance to be sampled; -1 if there are none. One pass that
 * reads each count once (weighted reservoir sampling): other workers evict
 * concurrently, and a second reading could point past every database with keys. */
static int pick_db(void)
{
	uint64_t total = 0;
	int chosen = -1;

	for (int db = 0; db < store.ndbs; db++) {
		uint64_t n = candidates(db);

		if (!n)
			continue;
		total += n;
		if (rand64() % total < n)
			chosen = db;
	}
	return chosen;
}

/* A shard's candidates (racy, as a weight). */
static uint64_t shard_candidates(int db, unsigned shard)
{
	struct shard *s = store_shard(db, shard);

	return volatile_policy() ? __atomic_load_n(&s->nexpires, __ATOMIC_RELAXED)
				 : __atomic_load_n(&s->keys.count, __ATOMIC_RELAXED);
}

/*
 * A shard of db chosen with probability proportional to its candidates, as
 * Redis picks among its per-slot tables, so every key is as likely to be
 * sampled wherever it lives. Chosen uniformly, shards drift apart in size (each
 * loses keys as often as any other) and a key in a drained one is compared
 * with few, recent others: a hot key there went as if it were cold. -1 if db
 * has none; each count is read once.
 */
static int pick_shard(int db)
{
	uint64_t counts[STORE_SHARDS], total = 0, r;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		total += counts[i] = shard_candidates(db, i);
	if (!total)
		return -1;
	r = rand64() % total;
	for (unsigned i = 0; i < STORE_SHARDS; i++) {
		if (r < counts[i])
			return (int)i;
		r -= counts[i];
	}
	return -1;
}

/* Redis's eviction time limit for maxmemory-eviction-tenacity: 50 us a step
 * up to 10 (500 us by default), then 15% more a step; 100: no limit. */
static int64_t time_limit_us(void)
{
	long long t = config.maxmemory_eviction_tenacity;

	if (t <= 10)
		return 50 * t;
	if (t < 100)
		return (int64_t)(500.0 * pow(1.15, (double)(t - 10)));
	return INT64_MAX;
}

/*
 * Nothing is left to evict, but values evicted (or deleted) lazily may still
 * be on the background pool, and their memory with them: as Redis does, wait
 * for it a little, no longer than the eviction time limit, polling every
 * millisecond at most. True if the memory fits by then.
 */
static bool wait_for_lazyfree(size_t limit, int64_t start_us)
{
	int64_t budget = time_limit_us();

	while (lazyfree_pending_objects() && now_us() - start_us < budget) {
		if (mem_used() <= limit)
			return true;
		usleep(budget < 1000 ? (useconds_t)budget : 1000);
	}
	return mem_used() <= limit;
}

bool evict_until_fits(void)
{
	int64_t start_us;
	size_t limit = (size_t)config.maxmemory;

	if (!limit || mem_used() <= limit)
		return true;
	/* CLIENT PAUSE keeps the data set still (and, as Redis, refuses nothing). */
	if (pause_frozen())
		return true;
	if (config.maxmemory_policy == POLICY_NOEVICTION)
		return false;
	start_us = now_us();
	for (int round = 0; round < MAX_EVICTIONS_PER_CALL && mem_used() > limit; round++) {
		int db = pick_db(), fair;
		unsigned start = (unsigned)(rand64() % STORE_SHARDS);
		bool done = false;

		if (db < 0) /* nothing left that the policy may evict */
			return wait_for_lazyfree(limit, start_us);
		fair = pick_shard(db);
		if (fair >= 0)
			done = evict_from(db, (unsigned)fair);
		/* Emptied meanwhile by another worker: from a random shard of that
		 * database on, the first with candidates. */
		for (unsigned k = 0; k < STORE_SHARDS && !done; k++) {
			unsigned shard = (start + k) % STORE_SHARDS;

			if (!shard_candidates(db, shard))
				continue;
			done = evict_from(db, shard);
		}
		if (!done)
			return wait_for_lazyfree(limit, start_us);
	}
	/* Under the limit once, or evicting as fast as it may: another worker's
	 * writes can push the total back over meanwhile, which, as in Redis, is
	 * no reason to refuse this command. Only finding nothing to evict is. */
	return true;
}
