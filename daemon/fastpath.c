// SPDX-License-Identifier: BSD-3-Clause
/*
 * The fast path's daemon side. Locking is described in fastpath.h: the
 * fast-path lock (fp.lock) nests inside shard locks and only try-locks other
 * shards. Fields of the mapped slab are written only here, each slot under its
 * seqlock: seq is made odd, the slot rewritten, seq made even again, with
 * release ordering so the program never sees a half-written slot as whole.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cluster.h"
#include "config.h"
#include "fastpath.h"
#include "fastpath_keys.h"
#include "fastpath_local.h"
#include "loader.h"
#include "log.h"
#include "mem.h"
#include "store.h"
#include "util.h"
#include "xkv_abi.h"
#include "xkv_xdp.skel.h"

/*
 * The slot a key holds is kept here, not in its entry: a key the kernel does
 * not cache then pays one bit for the cache (ENTRY_AUX_FP in its header)
 * instead of eight bytes. Per shard of db 0, a table of the cached keys
 * (fastpath_keys.h) under that shard's lock: every change to a key's slot is
 * made under its shard's lock (admission; eviction, which takes the victim's;
 * invalidation; and the reset of a flush or swap, which holds them all).
 */
#define FP_PENDING 4096 /* cells of pending_read's counters */

static struct {
	pthread_mutex_t lock;
	bool loaded;
	struct loader ld;
	struct xkv_slot *slots;
	uint32_t *free_stack; /* free slot indexes */
	uint32_t nfree;
	uint32_t hand; /* CLOCK position */
	/* Which keys of db 0 hold slots: per shard, under that shard's lock. */
	struct fp_keys keys[STORE_SHARDS];
	uint32_t *owner_hash; /* per slot: its key's dict hash (its record in keys) */
	uint64_t *pending;    /* reads toward admission (pending_read) */
	/* CLOCK's reference bits, one per slot (atomic bytes): set by a read of
	 * the slot's key, in the daemon or (through the slab's hits) in the
	 * kernel; cleared by the hand. In the daemon's memory, so the slab's line
	 * is written only by the program's bounded hit count. */
	uint8_t *ref;
	uint32_t collect_hand; /* where fastpath_collect_hits() resumes (worker 0 only) */
	size_t slab_counted;   /* bytes of the mapped slab in used_memory (mem_mapped_add) */
	/* Counters (atomic). */
	uint64_t admissions, admission_failures, invalidations, updates, evictions;
	uint64_t hits_collected; /* kernel hits taken into their keys' LRU/LFU */
	/* The access rule (access.c), kept for a load that comes later;
	 * written by fastpath_set_access() only, which access.c serializes. */
	struct {
		bool required, loopback_only, daemon_only;
		uint64_t token;
	} access;
	uint64_t local_refreshed_ns; /* last kv_local refresh (worker 0) */
} fp = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Does slot idx hold e's key? (Its owner's shard lock held: only that lock's
 * holder rewrites it, and only fp.lock's gives it to another key.) */
static bool slot_holds(uint32_t idx, const struct entry *e)
{
	const struct xkv_slot *s = &fp.slots[idx];

	return s->key_len == entry_klen(e) && memcmp(s->key, e->key, entry_klen(e)) == 0;
}

static bool holds_cb(uint32_t slot, const void *e)
{
	return slot_holds(slot, e);
}

/* The record of e in k (fp_keys_find). */
static int64_t keys_find(const struct fp_keys *k, const struct entry *e)
{
	return fp_keys_find(k, e->node.hash, holds_cb, e);
}

/*
 * The slot e of db 0 holds, FP_UNCACHEABLE, or FP_NONE (e's shard lock held,
 * the fast path loaded). A bit left from before a flush or swap of db 0, or
 * from a slot taken back, is cleared here.
 */
static int32_t cached_slot(struct entry *e)
{
	struct fp_keys *k = &fp.keys[e->shard];
	int64_t i;

	if (!(e->node.aux & ENTRY_AUX_FP))
		return FP_NONE;
	i = keys_find(k, e);
	if (i < 0) {
		e->node.aux &= ~ENTRY_AUX_FP;
		return FP_NONE;
	}
	return k->tab[i].slot;
}

/*
 * Daemon-served reads of keys not cached yet, toward admission
 * (fastpath-admit-threshold): FP_PENDING counters tagged with the key's dict
 * hash, shared by every shard and updated without a lock (relaxed atomics),
 * so that a key costs nothing in its entry until it is cached. Lossy, as a
 * cache's admission may be: two keys meeting in one cell restart each other's
 * count, and two workers counting at once may lose a read.
 */
static bool pending_read(const struct entry *e)
{
	uint64_t *cell = &fp.pending[e->node.hash % FP_PENDING];
	uint64_t c = __atomic_load_n(cell, __ATOMIC_RELAXED);
	uint64_t n = (uint32_t)(c >> 32) == e->node.hash ? (c & 0xff) + 1 : 1;

	if (n > 255)
		n = 255;
	__atomic_store_n(cell, (uint64_t)e->node.hash << 32 | n, __ATOMIC_RELAXED);
	return n >= (uint64_t)config.fastpath_admit_threshold;
}

/* e's reads are counted afresh (it was cached, evicted or removed). */
static void pending_forget(const struct entry *e)
{
	uint64_t *cell = &fp.pending[e->node.hash % FP_PENDING];

	if ((uint32_t)(__atomic_load_n(cell, __ATOMIC_RELAXED) >> 32) == e->node.hash)
		__atomic_store_n(cell, 0, __ATOMIC_RELAXED);
}

bool fastpath_loaded(void)
{
	return __atomic_load_n(&fp.loaded, __ATOMIC_ACQUIRE);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Ones' complement sum of p as 16-bit words in memory order (a trailing odd
 * byte padded with zero), the way the kernel's csum helpers add. */
static uint32_t reply_sum(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		uint16_t w;

		memcpy(&w, p + i, 2);
		sum += w;
	}
	if (len & 1) {
		uint8_t last[2] = { p[len - 1], 0 };
		uint16_t w;

		memcpy(&w, last, 2);
		sum += w;
	}
	while (sum >> 32)
		sum = (sum & 0xffffffff) + (sum >> 32);
	return (uint32_t)sum;
}

/* Is e a value the kernel may serve? */
static bool cacheable(const struct entry *e)
{
	return e->val.type == OBJ_STRING && e->val.len <= XKV_MAX_VALUE &&
	       entry_klen(e) <= XKV_MAX_KEY;
}

/* See xkv_key_hash() for why kv_index is keyed by a hash. */
uint64_t fastpath_index_key(const void *key, size_t len, uint64_t seed)
{
	__u64 words[XKV_KEY_WORDS] = { 0 };

	memcpy(words, key, len);
	return xkv_key_hash(words, (uint32_t)len, seed);
}

/*
 * The writer's half of the slot seqlock (the reader is copy_slot() in
 * bpf/xkv_xdp.bpf.c), as the kernel's write_seqcount_begin/end: seq++,
 * smp_wmb(), the slot's stores, smp_wmb(), seq++. A slot has one writer at a
 * time (its key's shard lock, or fp.lock), so seq's plain read is its own
 * last store.
 *
 * seq_begin: the release fence orders the odd seq before every later store
 * (on arm64 it is a DMB ISH, on x86 TSO keeps stores in order anyway), so a
 * reader that sees any new byte of the slot, and then (its smp_rmb) reads seq
 * again, sees it odd or changed. seq_end: the store-release (STLR on arm64)
 * orders every store of the slot before the even seq, so a reader that
 * (after its first smp_rmb) finds the new even seq reads only new bytes.
 * The slot's bytes are written plainly: a racing reader may see them torn,
 * which is what the two seq reads catch.
 */
static void seq_begin(struct xkv_slot *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	/* The odd sequence is visible before any byte of the slot changes. */
	atomic_thread_fence(memory_order_release);
}

static void seq_end(struct xkv_slot *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

void fastpath_slot_write(struct xkv_slot *s, const void *key, size_t klen, uint16_t cluster_slot,
			 const void *value, size_t vlen, uint64_t expire_ns)
{
	size_t n;

	seq_begin(s);
	n = (size_t)snprintf((char *)s->reply, sizeof(s->reply), "$%zu\r\n", vlen);
	memcpy(s->reply + n, value, vlen);
	memcpy(s->reply + n + vlen, "\r\n", 2);
	n += vlen + 2;
	s->reply_len = (uint16_t)n;
	s->reply_csum = reply_sum(s->reply, n);
	s->value_len = (uint32_t)vlen;
	s->expire_ns = expire_ns;
	memset(s->key, 0, sizeof(s->key));
	memcpy(s->key, key, klen);
	s->key_len = (uint16_t)klen;
	s->cluster_slot = cluster_slot;
	seq_end(s);
}

/* Writes e's key, reply and deadline into slot s. */
static void slot_store(struct xkv_slot *s, const struct entry *e)
{
	char tmp[LL_STR_SIZE + 1];
	size_t vlen;
	const char *val = obj_str(&e->val, tmp, &vlen);
	uint64_t expire_ns = 0;
	/* Read by the program in cluster mode only: no CRC16 on every cached
	 * write otherwise. */
	uint16_t cslot = cluster_enabled() ? (uint16_t)key_slot(e->key, entry_klen(e)) : 0;

	if (entry_expire(e) >= 0) {
		int64_t left_ms = entry_expire(e) - now_ms();

		/* The kernel clock is monotonic; a deadline already passed is
		 * stored as "now", which the program treats as expired. */
		expire_ns = mono_ns() + (uint64_t)(left_ms > 0 ? left_ms : 0) * 1000000ULL;
		if (!expire_ns)
			expire_ns = 1;
	}
	fastpath_slot_write(s, e->key, entry_klen(e), cslot, val, vlen, expire_ns);
}

static void slot_clear(struct xkv_slot *s)
{
	seq_begin(s);
	s->key_len = 0;
	s->reply_len = 0;
	memset(s->key, 0, sizeof(s->key));
	/* Hits of the key that leaves are not the next one's. */
	__atomic_store_n(&s->hits, 0, __ATOMIC_RELAXED);
	seq_end(s);
}

/* Empties slot idx and removes its key from the index (fp.lock held). */
static void slot_release(uint32_t idx)
{
	struct xkv_slot *s = &fp.slots[idx];
	uint64_t k = fastpath_index_key(s->key, s->key_len, fp.ld.hash_seed);

	/* The slot first: from here the program misses even if it still finds
	 * the key in the index. */
	slot_clear(s);
	bpf_map_delete_elem(fp.ld.index_fd, &k);
	fp.free_stack[fp.nfree++] = idx;
}

/* The entry of db 0 holding slot idx's key, or NULL (the key's shard lock held). */
static struct entry *slot_owner(uint32_t idx)
{
	const struct xkv_slot *s = &fp.slots[idx];
	struct entry *e = db_peek(0, (const char *)s->key, s->key_len);

	return e && cached_slot(e) == (int32_t)idx ? e : NULL;
}

/*
 * A consistent copy of slot idx's key, read under its seqlock without any
 * lock: its owner's shard may be rewriting it in place (the same key, but the
 * bytes are cleared first). -EAGAIN while it is being written, -ENOENT if the
 * slot is empty.
 */
static int slot_key(uint32_t idx, char *key, uint16_t *klen)
{
	const struct xkv_slot *s = &fp.slots[idx];

	/* Bounded: a writer holds the slot for one copy of at most a slot. */
	for (int tries = 0; tries < 8; tries++) {
		uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		uint16_t len, reply_len;

		if (seq & 1)
			continue;
		len = __atomic_load_n(&s->key_len, __ATOMIC_RELAXED);
		reply_len = __atomic_load_n(&s->reply_len, __ATOMIC_RELAXED);
		if (len > XKV_MAX_KEY)
			continue;
		memcpy(key, s->key, len);
		atomic_thread_fence(memory_order_acquire);
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq)
			continue;
		if (!reply_len)
			return -ENOENT;
		*klen = len;
		return 0;
	}
	return -EAGAIN;
}

/*
 * Takes slot idx's kernel hits since the last collection: they count as that
 * many accesses of its owner e (LRU clock, LFU counter), and as a reference
 * for CLOCK. The caller holds e's shard lock. Returns the hits taken.
 */
static uint32_t take_hits(uint32_t idx, struct entry *e)
{
	struct xkv_slot *s = &fp.slots[idx];
	uint32_t n;

	/* Read first: most slots have none, and their line stays clean. */
	if (!__atomic_load_n(&s->hits, __ATOMIC_RELAXED))
		return 0;
	n = __atomic_exchange_n(&s->hits, 0, __ATOMIC_RELAXED);
	if (!n)
		return 0;
	/* The program's check and increment are not one step: CPUs racing at
	 * the cap may pass it by a few. */
	if (n > XKV_SLOT_HITS_MAX)
		n = XKV_SLOT_HITS_MAX;
	__atomic_store_n(&fp.ref[idx], 1, __ATOMIC_RELAXED);
	db_touch(e, n);
	__atomic_fetch_add(&fp.hits_collected, n, __ATOMIC_RELAXED);
	return n;
}

void fastpath_collect(int db, struct entry *e)
{
	int32_t slot;

	if (db != 0 || !(e->node.aux & ENTRY_AUX_FP) || !fastpath_loaded())
		return;
	slot = cached_slot(e);
	if (slot >= 0)
		take_hits((uint32_t)slot, e);
}

/* Slot idx's hits into its key, with no lock held: its shard is locked
 * (blocking is allowed, as fp.lock is not held) and the slot is checked to be
 * the key's still, which it stays while that lock is held. */
static void collect_slot(uint32_t idx)
{
	char key[XKV_MAX_KEY];
	uint16_t klen;
	unsigned shard;
	struct entry *e;

	if (slot_key(idx, key, &klen) < 0)
		return;
	shard = key_shard(key, klen);
	store_shard_lock(0, shard);
	e = db_peek(0, key, klen);
	if (e && cached_slot(e) == (int32_t)idx)
		take_hits(idx, e);
	store_shard_unlock(0, shard);
}

void fastpath_collect_hits(void)
{
	uint32_t n, budget;

	/* An empty cache has no hits (nfree read racily: a slot taken
	 * meanwhile is visited next time round). */
	if (!fastpath_loaded() || __atomic_load_n(&fp.nfree, __ATOMIC_RELAXED) == fp.ld.nslots)
		return;
	n = fp.ld.nslots;
	/* Every slot about once a second at the cron's rate (hz). */
	budget = n / (uint32_t)(config.hz > 0 ? config.hz : 1) + 1;
	for (uint32_t i = 0; i < budget && i < n; i++) {
		uint32_t idx = fp.collect_hand;

		fp.collect_hand = (idx + 1) % n;
		if (__atomic_load_n(&fp.slots[idx].hits, __ATOMIC_RELAXED))
			collect_slot(idx);
	}
}

/*
 * A free slot, or one taken from a cold key by CLOCK (fp.lock held; the
 * caller holds shard `mine` of db 0). A victim in another shard is taken only
 * if that shard's lock is free right now: never wait under fp.lock. Each slot
 * the hand passes first has its kernel hits taken into its key, so a key the
 * kernel serves keeps both its slot and its place in the keyspace's LRU/LFU.
 */
static int64_t slot_alloc(unsigned mine)
{
	for (uint32_t step = 0; !fp.nfree && step < 2 * fp.ld.nslots; step++) {
		uint32_t idx = fp.hand;
		char key[XKV_MAX_KEY];
		uint16_t klen;
		unsigned shard;
		struct shard *sh;
		struct entry *e;

		fp.hand = (fp.hand + 1) % fp.ld.nslots;
		/* Giving a slot another key takes fp.lock, which is held: its
		 * owner's shard can only rewrite it in place, so a consistent copy
		 * of its key names the shard that owns it. */
		if (slot_key(idx, key, &klen) < 0)
			continue;
		shard = key_shard(key, klen);
		sh = store_shard(0, shard);
		if (shard != mine && pthread_mutex_trylock(&sh->lock) != 0)
			continue;
		e = slot_owner(idx);
		if (e)
			take_hits(idx, e);
		/* Read since the hand last passed (a slot nobody owns never is):
		 * a second chance. */
		if (!__atomic_exchange_n(&fp.ref[idx], 0, __ATOMIC_RELAXED) || !e) {
			/* Evicted for being cold: it must earn its way back. */
			if (e) {
				e->node.aux &= ~ENTRY_AUX_FP;
				pending_forget(e);
			}
			fp_keys_remove(&fp.keys[shard], fp.owner_hash[idx], (int32_t)idx);
			slot_release(idx);
			__atomic_fetch_add(&fp.evictions, 1, __ATOMIC_RELAXED);
		}
		if (shard != mine)
			pthread_mutex_unlock(&sh->lock);
	}
	return fp.nfree ? (int64_t)fp.free_stack[--fp.nfree] : -1;
}

void fastpath_note_read(int db, struct entry *e)
{
	uint64_t k;
	int64_t idx;
	uint32_t slot;
	int32_t cur;

	if (db != 0 || !fastpath_loaded())
		return;
	cur = cached_slot(e);
	if (cur >= 0) {
		/* A daemon-served read of a cached key (over TCP, or a UDP request
		 * the kernel passed) counts for CLOCK like a kernel hit does; the
		 * lookup has touched its LRU/LFU already. */
		uint8_t *ref = &fp.ref[cur];

		if (!__atomic_load_n(ref, __ATOMIC_RELAXED))
			__atomic_store_n(ref, 1, __ATOMIC_RELAXED);
		return;
	}
	if (cur == FP_UNCACHEABLE || !cacheable(e) || !pending_read(e))
		return;
	pthread_mutex_lock(&fp.lock);
	idx = slot_alloc(e->shard);
	if (idx < 0) {
		pthread_mutex_unlock(&fp.lock);
		__atomic_fetch_add(&fp.admission_failures, 1, __ATOMIC_RELAXED);
		return;
	}
	slot = (uint32_t)idx;
	/* Not referenced until read again: the next pass of the hand may take it. */
	__atomic_store_n(&fp.ref[slot], 0, __ATOMIC_RELAXED);
	slot_store(&fp.slots[slot], e);
	k = fastpath_index_key(e->key, entry_klen(e), fp.ld.hash_seed);
	pending_forget(e);
	e->node.aux |= ENTRY_AUX_FP;
	/* BPF_NOEXIST: an entry there belongs to a cached key with the same hash,
	 * which keeps it. */
	if (bpf_map_update_elem(fp.ld.index_fd, &k, &slot, BPF_NOEXIST) < 0) {
		/* Never retried: the key stays daemon-served. */
		log_verbose("fastpath: cannot index a key (%s); it stays uncached",
			    errno == EEXIST ? "its hash is taken by a cached key"
					    : strerror(errno));
		slot_clear(&fp.slots[slot]);
		fp.free_stack[fp.nfree++] = slot;
		fp_keys_add(&fp.keys[e->shard], e->node.hash, FP_UNCACHEABLE);
		pthread_mutex_unlock(&fp.lock);
		__atomic_fetch_add(&fp.admission_failures, 1, __ATOMIC_RELAXED);
		return;
	}
	fp.owner_hash[slot] = e->node.hash;
	fp_keys_add(&fp.keys[e->shard], e->node.hash, (int32_t)slot);
	pthread_mutex_unlock(&fp.lock);
	__atomic_fetch_add(&fp.admissions, 1, __ATOMIC_RELAXED);
}

/* The slot e holds, or a negative FP_* (clearing a stale bit). */
static int32_t owned_slot(int db, struct entry *e)
{
	if (db != 0 || !(e->node.aux & ENTRY_AUX_FP) || !fastpath_loaded())
		return FP_NONE;
	return cached_slot(e);
}

void fastpath_key_changed(int db, struct entry *e)
{
	int32_t slot = owned_slot(db, e);

	if (slot < 0)
		return;
	if (cacheable(e)) {
		/* The key is unchanged: a store into the slab, no syscall. */
		slot_store(&fp.slots[slot], e);
		__atomic_fetch_add(&fp.updates, 1, __ATOMIC_RELAXED);
		return;
	}
	fastpath_key_removed(db, e);
}

void fastpath_key_removed(int db, struct entry *e)
{
	struct fp_keys *k = &fp.keys[e->shard];
	int64_t i;
	int32_t slot;

	if (db != 0 || !fastpath_loaded())
		return;
	pending_forget(e);
	if (!(e->node.aux & ENTRY_AUX_FP))
		return;
	e->node.aux &= ~ENTRY_AUX_FP;
	i = keys_find(k, e);
	if (i < 0)
		return;
	slot = k->tab[i].slot;
	/* An uncacheable mark goes with its key too. */
	fp_keys_del(k, (uint32_t)i);
	if (slot < 0)
		return;
	pthread_mutex_lock(&fp.lock);
	slot_release((uint32_t)slot);
	pthread_mutex_unlock(&fp.lock);
	__atomic_fetch_add(&fp.invalidations, 1, __ATOMIC_RELAXED);
}

void fastpath_db_reset(int db)
{
	if (db != 0 || !fastpath_loaded())
		return;
	pthread_mutex_lock(&fp.lock);
	for (uint32_t i = 0; i < fp.ld.nslots; i++) {
		if (fp.slots[i].key_len || fp.slots[i].reply_len) {
			slot_release(i);
			__atomic_fetch_add(&fp.invalidations, 1, __ATOMIC_RELAXED);
		}
	}
	/* Entries whose bit says cached (now in another db after SWAPDB, or
	 * gone) find no record and clear it when next looked up. */
	for (unsigned i = 0; i < STORE_SHARDS; i++)
		fp_keys_clear(&fp.keys[i]);
	pthread_mutex_unlock(&fp.lock);
}

/* "10.0.0.0/8" or "::1/128" into an LPM key (IPv4 mapped into ::ffff:0:0/96). */
static int parse_prefix(const char *text, struct xkv_allow_key *k)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(text, '/');
	size_t alen = slash ? (size_t)(slash - text) : strlen(text);
	long bits = -1;

	if (alen >= sizeof(addr))
		return -1;
	memcpy(addr, text, alen);
	addr[alen] = '\0';
	if (slash) {
		char *end;

		bits = strtol(slash + 1, &end, 10);
		if (*end || slash[1] == '\0')
			return -1;
	}
	memset(k, 0, sizeof(*k));
	if (inet_pton(AF_INET, addr, &k->addr[12]) == 1) {
		if (bits > 32)
			return -1;
		k->addr[10] = k->addr[11] = 0xff;
		k->prefixlen = (uint32_t)(96 + (bits < 0 ? 32 : bits));
		return 0;
	}
	if (inet_pton(AF_INET6, addr, k->addr) == 1 && bits <= 128) {
		k->prefixlen = (uint32_t)(bits < 0 ? 128 : bits);
		return 0;
	}
	return -1;
}

static int load_allowlist(char *why, size_t len)
{
	char *copy = xstrndup(config.fastpath_allow, strlen(config.fastpath_allow)), *save = NULL;
	uint8_t one = 1;
	int ret = 0;

	for (char *p = strtok_r(copy, " ,", &save); p; p = strtok_r(NULL, " ,", &save)) {
		struct xkv_allow_key k;

		if (parse_prefix(p, &k) < 0) {
			snprintf(why, len, "bad fastpath-allow network '%s'", p);
			ret = -1;
			break;
		}
		if (bpf_map_update_elem(fp.ld.allow_fd, &k, &one, BPF_ANY) < 0) {
			snprintf(why, len, "cannot fill the allowlist: %s", strerror(errno));
			ret = -1;
			break;
		}
	}
	xfree(copy);
	return ret;
}

/*
 * Writes the access rule into the program's mapped .bss (see xkv_access in
 * bpf/xkv_xdp.bpf.c): a packet meets the old rule, the new one, or a
 * refusal, never a mix looser than both. The full fence makes the rule
 * visible before the caller goes on to answer the CONFIG SET.
 */
static void access_publish(void)
{
	struct xkv_xdp__bss *bss = fp.ld.skel->bss;
	uint32_t flags = (fp.access.required ? XKV_ACCESS_TOKEN : 0) |
			 (fp.access.loopback_only ? XKV_ACCESS_LOOPBACK_ONLY : 0) |
			 (fp.access.daemon_only ? XKV_ACCESS_DAEMON : 0);

	/* The token before the flag that makes it count, cleared after it. */
	if (fp.access.required)
		__atomic_store_n(&bss->xkv_token, fp.access.token, __ATOMIC_RELEASE);
	__atomic_store_n(&bss->xkv_access, flags, __ATOMIC_RELEASE);
	if (!fp.access.required)
		__atomic_store_n(&bss->xkv_token, 0, __ATOMIC_RELEASE);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Sets or clears slot's bit in the program's xkv_owned_slots; the fence makes
 * a cleared bit visible before the caller lets the slot go. */
static void owned_slot_set(uint16_t slot, bool owned)
{
	__u64 *w = &fp.ld.skel->bss->xkv_owned_slots[slot / 64], bit = 1ull << (slot % 64);

	if (owned)
		__atomic_fetch_or(w, bit, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(w, ~bit, __ATOMIC_RELEASE);
	atomic_thread_fence(memory_order_seq_cst);
}

/* cluster.h's slot listener: called under cluster_lock, before this node
 * stops owning slot and after it starts. */
static void owned_slot_changed(uint16_t slot, bool owned)
{
	pthread_mutex_lock(&fp.lock);
	if (fp.ld.skel)
		owned_slot_set(slot, owned);
	pthread_mutex_unlock(&fp.lock);
}

/* Cluster mode: the slots owned now, and the listener that keeps them, set
 * under cluster_lock so that no change falls between the two. */
static void owned_slots_publish(void)
{
	cluster_lock();
	for (uint32_t s = 0; s < XKV_CLUSTER_SLOTS; s++)
		owned_slot_set((uint16_t)s, cluster_owns_slot((uint16_t)s));
	cluster_add_slot_listener(owned_slot_changed);
	cluster_unlock();
}

void fastpath_set_access(bool required, uint64_t token, bool loopback_only, bool daemon_only)
{
	fp.access.required = required;
	fp.access.token = token;
	fp.access.loopback_only = loopback_only;
	fp.access.daemon_only = daemon_only;
	if (fastpath_loaded())
		access_publish();
}

/* Refreshes kv_local from the attached interfaces (fp.lock held). */
static void local_refresh_locked(void)
{
	int ifindexes[sizeof(fp.ld.links) / sizeof(fp.ld.links[0])];

	for (int i = 0; i < fp.ld.nlinks; i++)
		ifindexes[i] = fp.ld.links[i].ifindex;
	if (fastpath_local_refresh(fp.ld.local_fd, ifindexes, fp.ld.nlinks) < 0)
		log_warning("fastpath: cannot read the interfaces' addresses: %s", strerror(errno));
}

void fastpath_heartbeat(void)
{
	struct xkv_xdp__bss *bss;
	uint64_t now = mono_ns();

	if (!fastpath_loaded())
		return;
	bss = fp.ld.skel->bss;
	__atomic_store_n(&bss->xkv_heartbeat_ns, now, __ATOMIC_RELEASE);
	/* Addresses come and go (and a MAC may change): follow them within a
	 * second. The interface list is copied under the lock, the netlink dump
	 * is done outside it. */
	if (now - fp.local_refreshed_ns >= 1000000000ULL) {
		int ifindexes[sizeof(fp.ld.links) / sizeof(fp.ld.links[0])], n;

		fp.local_refreshed_ns = now;
		pthread_mutex_lock(&fp.lock);
		n = fp.ld.nlinks;
		for (int i = 0; i < n; i++)
			ifindexes[i] = fp.ld.links[i].ifindex;
		pthread_mutex_unlock(&fp.lock);
		fastpath_local_refresh(fp.ld.local_fd, ifindexes, n);
	}
}

int fastpath_attach(const char *ifaces, char *why, size_t len)
{
	char *copy, *save = NULL;
	int attached = 0, ret = 0;

	if (!fastpath_loaded()) {
		snprintf(why, len, "the fast path is not loaded");
		return -1;
	}
	copy = xstrndup(ifaces, strlen(ifaces));
	pthread_mutex_lock(&fp.lock);
	for (char *p = strtok_r(copy, " ,", &save); p; p = strtok_r(NULL, " ,", &save)) {
		bool already = false;

		for (int i = 0; i < fp.ld.nlinks; i++)
			already |= strcmp(fp.ld.links[i].name, p) == 0;
		if (already)
			continue;
		if (loader_attach(&fp.ld, p, (enum attach_mode)config.fastpath_mode, why, len) <
		    0) {
			log_warning("fastpath: %s", why);
			ret = -1;
			continue;
		}
		log_notice("fastpath: XDP attached to %s (%s mode)", p,
			   fp.ld.links[fp.ld.nlinks - 1].native ? "native" : "generic");
		if (fp.ld.links[fp.ld.nlinks - 1].ifindex >= XKV_MAX_IFINDEX)
			log_warning("fastpath: %s has ifindex %d, past the %d the kernel "
				    "serves: its GETs are daemon-served",
				    p, fp.ld.links[fp.ld.nlinks - 1].ifindex, XKV_MAX_IFINDEX);
		attached++;
	}
	local_refresh_locked();
	pthread_mutex_unlock(&fp.lock);
	xfree(copy);
	return attached || ret == 0 ? 0 : -1;
}

void fastpath_detach(void)
{
	pthread_mutex_lock(&fp.lock);
	loader_detach_all(&fp.ld);
	local_refresh_locked();
	pthread_mutex_unlock(&fp.lock);
	log_notice("fastpath: detached from every interface");
}

/*
 * The slab is memory of this process like any allocation: the kernel
 * allocates every page of the array when it creates the map, and mapping it
 * makes all of them resident here. So the whole mapping counts in used_memory
 * (and so toward maxmemory) from the start, not only the slots in use.
 */
static void count_slab(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = (fp.ld.slab_bytes + page - 1) / page * page;

	__atomic_store_n(&fp.slab_counted, bytes, __ATOMIC_RELAXED);
	mem_mapped_add((int64_t)bytes);
	if (config.maxmemory > 0 && bytes >= (size_t)config.maxmemory / 2)
		log_warning("fastpath: the value slab (%zu bytes for fastpath-slots %u) counts "
			    "toward maxmemory (%lld bytes) and leaves %s for keys: lower "
			    "fastpath-slots or raise maxmemory",
			    bytes, fp.ld.nslots, config.maxmemory,
			    bytes >= (size_t)config.maxmemory ? "no room" : "little room");
}

void fastpath_start(void)
{
	char why[256];
	long long port = config.udp_port < 0 ? config.port : config.udp_port;

	if (!config.fastpath) {
		log_notice("fastpath: off (fastpath no)");
		return;
	}
	if (port == 0) {
		log_notice("fastpath: off (udp-port 0)");
		return;
	}
	if (loader_load(&fp.ld, (uint16_t)port, (uint32_t)config.fastpath_slots, cluster_enabled(),
			why, sizeof(why)) < 0) {
		log_warning("fastpath: off: %s", why);
		return;
	}
	fp.slots = fp.ld.slab;
	fp.free_stack = xmalloc(sizeof(*fp.free_stack) * fp.ld.nslots);
	fp.ref = xcalloc(fp.ld.nslots, sizeof(*fp.ref));
	fp.owner_hash = xcalloc(fp.ld.nslots, sizeof(*fp.owner_hash));
	fp.pending = xcalloc(FP_PENDING, sizeof(*fp.pending));
	fp.hand = fp.collect_hand = 0;
	/* Hand out low slots first. */
	for (uint32_t i = fp.ld.nslots; i-- > 0;)
		fp.free_stack[fp.nfree++] = i;
	if (load_allowlist(why, sizeof(why)) < 0) {
		log_warning("fastpath: off: %s", why);
		loader_destroy(&fp.ld);
		xfree(fp.free_stack);
		xfree(fp.ref);
		xfree(fp.owner_hash);
		xfree(fp.pending);
		fp.free_stack = NULL;
		fp.ref = NULL;
		fp.owner_hash = NULL;
		fp.pending = NULL;
		fp.nfree = 0;
		return;
	}
	count_slab();
	access_publish();
	if (cluster_enabled())
		owned_slots_publish();
	__atomic_store_n(&fp.loaded, true, __ATOMIC_RELEASE);
	fastpath_heartbeat();
	if (fastpath_attach(config.fastpath_interfaces, why, sizeof(why)) < 0)
		log_warning("fastpath: loaded but not attached: GETs are served by the daemon");
}

void fastpath_stop(void)
{
	if (!fastpath_loaded())
		return;
	__atomic_store_n(&fp.loaded, false, __ATOMIC_RELEASE);
	pthread_mutex_lock(&fp.lock);
	loader_destroy(&fp.ld);
	xfree(fp.free_stack);
	xfree(fp.ref);
	xfree(fp.owner_hash);
	xfree(fp.pending);
	/* At exit, the workers stopped: no shard lock is needed. */
	for (unsigned i = 0; i < STORE_SHARDS; i++)
		fp_keys_clear(&fp.keys[i]);
	fp.free_stack = NULL;
	fp.ref = NULL;
	fp.owner_hash = NULL;
	fp.pending = NULL;
	fp.slots = NULL;
	fp.nfree = 0;
	mem_mapped_add(-(int64_t)fp.slab_counted);
	__atomic_store_n(&fp.slab_counted, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fp.lock);
}

size_t fastpath_slab_bytes(void)
{
	return __atomic_load_n(&fp.slab_counted, __ATOMIC_RELAXED);
}

static const char *const stat_names[XKV_STAT_COUNT] = {
	[XKV_STAT_HIT] = "hits",
	[XKV_MISS_NOT_OURS] = "miss_not_ours",
	[XKV_MISS_MALFORMED] = "miss_malformed",
	[XKV_MISS_KEY_TOO_LONG] = "miss_key_too_long",
	[XKV_MISS_NOT_CACHED] = "miss_not_cached",
	[XKV_MISS_EXPIRED] = "miss_expired",
	[XKV_MISS_TORN] = "miss_torn",
	[XKV_MISS_DENIED] = "miss_denied",
	[XKV_MISS_BAD_TOKEN] = "miss_bad_token",
	[XKV_MISS_NO_ROOM] = "miss_no_room",
	[XKV_MISS_STALE_DAEMON] = "miss_stale_daemon",
	[XKV_MISS_NOT_LOCAL] = "miss_not_local",
	[XKV_STAT_MGET_HIT] = "mget_hits",
	[XKV_MISS_TOO_MANY_KEYS] = "miss_too_many_keys",
	[XKV_MISS_NOT_OWNER] = "miss_not_owner",
	[XKV_MISS_CROSSSLOT] = "miss_crossslot",
	[XKV_MISS_ACL] = "miss_acl",
};

void fastpath_info(fastpath_emit_fn *emit, void *ctx)
{
	char buf[256];
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *percpu;
	size_t n = 0;

	emit(ctx, "fastpath_enabled", fastpath_loaded() ? "1" : "0");
	if (!fastpath_loaded())
		return;
	pthread_mutex_lock(&fp.lock);
	buf[0] = '\0';
	for (int i = 0; i < fp.ld.nlinks && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s(%s)", i ? "," : "",
				      fp.ld.links[i].name,
				      fp.ld.links[i].native ? "native" : "generic");
	emit(ctx, "fastpath_interfaces", buf);
	snprintf(buf, sizeof(buf), "%u", fp.ld.nslots - fp.nfree);
	emit(ctx, "fastpath_slots_used", buf);
	snprintf(buf, sizeof(buf), "%u", fp.ld.nslots);
	emit(ctx, "fastpath_slots_total", buf);
	pthread_mutex_unlock(&fp.lock);

	percpu = xcalloc((size_t)(ncpus > 0 ? ncpus : 1), sizeof(*percpu));
	for (uint32_t stat = 0; stat < XKV_STAT_COUNT; stat++) {
		uint64_t sum = 0;

		if (ncpus > 0 && bpf_map_lookup_elem(fp.ld.stats_fd, &stat, percpu) == 0)
			for (int cpu = 0; cpu < ncpus; cpu++)
				sum += percpu[cpu];
		snprintf(buf, sizeof(buf), "fastpath_%s", stat_names[stat]);
		{
			char value[32];

			snprintf(value, sizeof(value), "%llu", (unsigned long long)sum);
			emit(ctx, buf, value);
		}
	}
	xfree(percpu);
#define EMIT_COUNTER(name, field)                                                                  \
	do {                                                                                       \
		snprintf(buf, sizeof(buf), "%llu",                                                 \
			 (unsigned long long)__atomic_load_n(&fp.field, __ATOMIC_RELAXED));        \
		emit(ctx, name, buf);                                                              \
	} while (0)
	EMIT_COUNTER("fastpath_admissions", admissions);
	EMIT_COUNTER("fastpath_admission_failures", admission_failures);
	EMIT_COUNTER("fastpath_invalidations", invalidations);
	EMIT_COUNTER("fastpath_inplace_updates", updates);
	EMIT_COUNTER("fastpath_evictions", evictions);
	EMIT_COUNTER("fastpath_hits_collected", hits_collected);
#undef EMIT_COUNTER
}

void fastpath_on_change(const struct db_change *ch)
{
	switch (ch->reason) {
	case DB_CHANGE_WRITE:
	case DB_CHANGE_TTL:
		fastpath_key_changed(ch->db, ch->e);
		break;
	case DB_CHANGE_FLUSH:
		fastpath_db_reset(ch->db);
		break;
	case DB_CHANGE_SWAP:
		fastpath_db_reset(ch->db);
		fastpath_db_reset(ch->other_db);
		break;
	default:
		/* Removed: the slot is cleared before its index entry goes. */
		fastpath_key_removed(ch->db, ch->e);
		break;
	}
}
