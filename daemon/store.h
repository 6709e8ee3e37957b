/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store: the databases, their shards, keys with deadlines, and the one place
 * where every change to a key is signalled.
 *
 * Locking. Each database is split into STORE_SHARDS shards; a shard is a hash
 * table plus a mutex that protects everything in it (entries, values, counters).
 * A key's shard comes from its Redis Cluster slot (CRC16 of the key or of its
 * {hash tag}), so keys sharing a tag share a shard. A command locks the shards
 * it touches through a lockset, which always acquires in ascending order of
 * (db, shard): that order is the lock order in the store. Commands never lock
 * for themselves: the dispatcher locks what a command's key specs and lock
 * scope name (commands.h), a whole database for KEYS or FLUSHDB, the whole
 * store for FLUSHALL. The one exception is a script with narrower locks,
 * which grows its held set while it runs (lockset_try_extend and the
 * escalation below; docs/architecture.md, "Narrower script locks").
 *
 * Every db_* function below expects the caller to hold the key's shard lock.
 */
#ifndef XKV_STORE_H
#define XKV_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dict.h"
#include "object.h"

#define STORE_SHARDS 64
#define CLUSTER_SLOTS 16384

/*
 * A key and its value: one allocation, laid out as
 *
 *	header | key bytes, NUL | deadline (8 bytes, if ENTRY_F_TTL) | value bytes, NUL (if inline)
 *
 * The header is 39 bytes (the key's length in the dict node's spare word,
 * a two-word struct obj, the small fields packed into bits), so a key of 7
 * bytes with a value of 16 fits jemalloc's 64-byte class, and one of 8 with
 * a value of 256 and a deadline its 320-byte class. The kernel cache's
 * bookkeeping is not here: the entry has one bit for it (ENTRY_AUX_FP), and
 * fastpath.c keeps which slot a cached key holds. A string value of up
 * to ENTRY_INLINE_MAX bytes written whole (SET, db_add) lives inside the
 * entry (val.inl); one that
 * grows past its room (APPEND, SETRANGE) moves to a buffer of its own. The
 * deadline's 8 bytes exist only once a key has had one: setting the first
 * deadline may move the entry (db_set_expire returns where it is now), and
 * so may db_set_string and active defragmentation. Nothing keeps an entry's
 * address past the shard lock: the fast path, WATCH, blocking and tracking
 * find keys by name.
 */
struct entry {
	/* node.aux: the key's length, and ENTRY_AUX_FP */
	struct dict_node node;
	struct obj val;
	uint32_t atime; /* last access, in store_clock() ticks (LRU, OBJECT IDLETIME) */
	/* The rest in 24 bits, so that the key starts at byte 39. */
	uint32_t lfu : 8; /* logarithmic access counter, under LFU policies (evict.c) */
	/* Where INFO keysizes counts the key: type and bin, or KEYSIZES_NONE. */
	uint32_t ks_type : 3;
	uint32_t ks_bin : 6;
	uint32_t shard : 6; /* the key's shard: key_slot() % STORE_SHARDS, computed once */
	uint32_t flags : 1; /* ENTRY_F_* */
	char key[];
};

/* The top bit of node.aux: the kernel cache may hold the key (fastpath.c
 * looks up its slot; clear: it holds no slot). The key's length is the rest,
 * so keys are shorter than 2 GiB (entry_new() asserts it). */
#define ENTRY_AUX_FP 0x80000000u
#define ENTRY_KLEN_MAX (ENTRY_AUX_FP - 1)

#define ENTRY_F_TTL 1 /* the deadline's 8 bytes follow the key (-1: none) */
/* Bytes of the header, where the key starts. */
#define ENTRY_HDR __builtin_offsetof(struct entry, key)
_Static_assert(ENTRY_HDR == 39, "the entry's header is 39 bytes (store.h's layout comment)");
_Static_assert(STORE_SHARDS <= 64, "entry.shard holds 6 bits");
/* The longest string value kept inside its entry. */
#define ENTRY_INLINE_MAX 4096

static inline uint32_t entry_klen(const struct entry *e)
{
	return e->node.aux & ENTRY_KLEN_MAX;
}

/* Absolute Unix ms, or -1. */
static inline int64_t entry_expire(const struct entry *e)
{
	int64_t t;

	if (!(e->flags & ENTRY_F_TTL))
		return -1;
	__builtin_memcpy(&t, e->key + entry_klen(e) + 1, sizeof(t)); /* unaligned */
	return t;
}

/*
 * INFO keysizes (Redis 8): per database and type (strings by length, the
 * aggregates by elements; streams are not counted), how many keys have a
 * size in each power-of-two bin: bin 0 holds size 0, bin i sizes
 * [2^(i-1), 2^i). Kept exact on every change, under the shard lock.
 */
#define KEYSIZES_TYPES 5 /* OBJ_STRING .. OBJ_HASH */
#define KEYSIZES_BINS 60
#define KEYSIZES_NONE 7 /* fits entry.ks_type */
typedef uint64_t keysizes_hist[KEYSIZES_TYPES][KEYSIZES_BINS];
_Static_assert(KEYSIZES_BINS <= 64 && KEYSIZES_TYPES < KEYSIZES_NONE, "entry.ks_bin, ks_type");

#define entry_of(n) ((struct entry *)((char *)(n) - __builtin_offsetof(struct entry, node)))

struct shard {
	pthread_mutex_t lock;
	struct dict keys;
	uint64_t nexpires;	/* entries with a deadline */
	uint64_t expire_cursor; /* where active expiry resumes its scan */
	uint64_t defrag_cursor; /* where active defragmentation resumes (defrag.c) */
	/* Some hash here may have field deadlines: active expiry then visits the
	 * shard's hashes too (FIELD_TTLS_*; see store_active_expire). */
	uint8_t field_ttls;
	uint32_t field_ttls_seen; /* such hashes met since the scan last wrapped */
	/* Summed by INFO; written under the lock. */
	uint64_t expired;
	uint64_t expired_active;  /* of them, by active expiry */
	uint64_t expired_subkeys; /* hash fields reclaimed past their deadline */
	uint64_t expired_subkeys_active;
	uint64_t avg_ttl;	 /* ms, a running estimate from active expiry samples */
	keysizes_hist *keysizes; /* the shard's keys by size; allocated at its first key */
	/* Cluster mode's per-slot key index (NULL when off, or before the
	 * shard's first key): see db_slot_* below. */
	struct slot_keys *slot_keys;
} __attribute__((aligned(64)));

struct db {
	struct shard shards[STORE_SHARDS];
};

struct store {
	int ndbs;
	struct db *dbs;
};

extern struct store store;

/*
 * Keyspace hits and misses (INFO stats), counted per thread rather than per
 * shard: two workers reading keys of one shard would otherwise both write one
 * of its lines on every read. Written by their thread only (stat_add), read
 * from any thread.
 */
struct store_reads {
	uint64_t hits, misses;
};
/* Where this thread counts: each worker points it at its own (worker.h) as it
 * starts; other threads (unit tests) share a fallback that INFO never reads. */
extern __thread struct store_reads *store_reads;

/* The clock the running command runs at (Unix ms): its execution context's
 * snapshot (exec_ctx.h), fixed for the whole command as in Redis, so a key
 * cannot expire half-way through it; outside commands, the clock. The access
 * clock (store_clock) reads the context's monotonic snapshot likewise, and a
 * context flagged EXEC_NO_TOUCH leaves access times and LFU counters alone. */
int64_t store_now(void);

void store_init(int ndbs);
void store_destroy(void);

unsigned key_slot(const char *key, size_t len);
/* key_slot, remembered for this command's first lockset (cluster mode's
 * redirect check hashes the key the lockset then needs): valid until
 * key_slot_forget(), which the dispatcher calls after every command. */
unsigned key_slot_remember(const char *key, size_t len);
void key_slot_forget(void);
static inline unsigned key_shard(const char *key, size_t len)
{
	return key_slot(key, len) % STORE_SHARDS;
}
static inline struct shard *store_shard(int db, unsigned shard)
{
	return &store.dbs[db].shards[shard];
}

/* The live entry for key, or NULL; an expired key is deleted on the way. */
struct entry *db_find(int db, const char *key, size_t len);
/* As db_find, counting a keyspace hit or miss (for reads of values). */
struct entry *db_find_read(int db, const char *key, size_t len);
/* As db_find_read, for GET: a hot small string may be admitted to the kernel
 * cache. */
struct entry *db_find_get(int db, const char *key, size_t len);
/* The entry for key even if past its deadline, with no side effect. */
struct entry *db_peek(int db, const char *key, size_t len);
/* `accesses` reads of e that no lookup saw (the kernel cache's hits): its
 * access time becomes now and, under an LFU policy, its counter takes that
 * many touches, as that many lookups would. */
void db_touch(struct entry *e, uint32_t accesses);

/*
 * Cache warming for a batch of pipelined lookups: called in stages over all
 * the keys of a batch (start for each, then chain for each, then value for
 * each), each stage prefetches what the previous one brought into the cache
 * pointed to, so the misses of the batch overlap instead of stalling one
 * command after another. Only hints: each call takes the key's shard lock for a
 * moment and changes nothing; a key that changes in between is merely looked
 * up cold.
 */
struct db_prefetch {
	struct shard *shard;
	uint64_t hash;
};
void db_prefetch_start(struct db_prefetch *p, int db, const char *key, size_t len);
void db_prefetch_chain(const struct db_prefetch *p);
void db_prefetch_value(const struct db_prefetch *p);
/* Adds key with val (ownership passes to the store); key must be absent. */
struct entry *db_add(int db, const char *key, size_t len, struct obj val);
/* Replaces e's value (the old one is freed); the deadline is kept. */
void db_set_value(int db, struct entry *e, struct obj val);
/* SET semantics: replaces or adds; drops any deadline unless keep_ttl. */
struct entry *db_set(int db, const char *key, size_t len, struct obj val, bool keep_ttl);
/* SET of a string, given the entry the caller found for key (or NULL):
 * db_set(db, key, len, obj_string(p, vlen), keep_ttl) without a second
 * lookup, the value inside the entry when it fits, and without an
 * allocation when it fits the old entry's room. will_expire: a deadline
 * follows (room is made for it at once). Returns the entry, which may have
 * moved. */
struct entry *db_set_string(int db, struct entry *e, const char *key, size_t len, const void *p,
			    size_t vlen, bool keep_ttl, bool will_expire);
/*
 * Every change to the keyspace passes one choke point, which tells a fixed
 * list of hooks, in this order, why and what changed: WATCH (multi.c),
 * blocking wake-ups (blocking.c), the kernel cache (fastpath.c), keyspace
 * notifications (notify.c), the place client tracking will plug into, and the
 * propagation point (propagate.c, set only while a consumer exists). Hooks
 * run on the writer's thread under the shard locks of what changed (all of
 * the database's for FLUSH and SWAP), before the writer is answered; they
 * take no shard lock and must not change the keyspace.
 */
enum db_change_reason {
	DB_CHANGE_WRITE,     /* a key added, or its value set or edited in place */
	DB_CHANGE_TTL,	     /* its deadline set or removed */
	DB_CHANGE_DELETE,    /* removed by a command (DEL, a pop that empties it) */
	DB_CHANGE_RENAME,    /* removed as the source of RENAME or MOVE (the
			   * destination then comes as a WRITE) */
	DB_CHANGE_EXPIRE,    /* removed because its deadline passed */
	DB_CHANGE_EVICT,     /* removed by maxmemory eviction */
	DB_CHANGE_SLOT_LOST, /* removed because this node stopped owning its cluster slot */
	DB_CHANGE_FLUSH,     /* db is about to be emptied (e NULL) */
	DB_CHANGE_SWAP,	     /* db and other_db are about to be exchanged (e NULL) */
};

struct field_list;

struct db_change {
	enum db_change_reason reason;
	int db, other_db;
	struct entry *e; /* the key, still in place for removals; NULL for FLUSH, SWAP */
	unsigned flags;	 /* DB_CHANGE_F_* */
	/* DB_CHANGE_F_FIELDS: the names of the expired fields, when subkey
	 * notifications want them (config_notify_subkeys), else NULL. */
	const struct field_list *fields;
};

enum db_change_flag {
	DB_CHANGE_F_CREATED = 1 << 0, /* WRITE: the key was just added (db_add) */
	DB_CHANGE_F_FIELDS = 1 << 1,  /* WRITE or EXPIRE of a hash: by active field expiry */
	/* WRITE by db_set or db_set_string of a key that existed (Redis's
	 * setKey overwriting a value), and whether the type changed. */
	DB_CHANGE_F_OVERWRITTEN = 1 << 2,
	DB_CHANGE_F_TYPE_CHANGED = 1 << 3,
};

enum store_hook {
	STORE_HOOK_WATCH,
	STORE_HOOK_BLOCKING,
	STORE_HOOK_FASTPATH,
	STORE_HOOK_NOTIFY,
	STORE_HOOK_TRACKING,
	STORE_HOOK_PROPAGATE, /* expiry and eviction as DEL; "it wrote" (propagate.c) */
	STORE_HOOKS
};

typedef void store_hook_fn(const struct db_change *ch);
/* Fills hook slot h (NULL empties it). At start-up only, before any worker
 * runs: the list is read without a lock. */
void store_hook_set(enum store_hook h, store_hook_fn *fn);

/* Removes e and frees it (DB_CHANGE_DELETE); a big value on the background
 * pool under lazyfree-lazy-server-del (lazyfree.h), as Redis's dbDelete. The
 * value replaced by db_set_value, db_set, db_set_string goes the same way. */
void db_delete(int db, struct entry *e);
/* As db_delete, lazily or not as the caller says (DEL, UNLINK). */
void db_delete_lazy(int db, struct entry *e, bool lazy);
/* As db_delete, for another reason (DB_CHANGE_RENAME, EXPIRE, EVICT); lazy
 * as lazyfree-lazy-expire or -eviction says for those two. */
void db_remove(int db, struct entry *e, enum db_change_reason why);
/* Sets e's deadline (absolute ms) or removes it with -1. A first deadline
 * may move e: the entry is returned where it is now. */
struct entry *db_set_expire(int db, struct entry *e, int64_t when_ms)
	__attribute__((warn_unused_result));
/* Counts key as expired (INFO expired_keys) with no change to the store:
 * SET with a deadline already past, which Redis counts as a key added and
 * expired at once. The caller holds the key's shard lock. */
void db_count_expired(int db, const char *key, size_t len);
/* A key's value was edited in place (APPEND, SETRANGE, a push): signals a
 * DB_CHANGE_WRITE. db_add, db_set_value, db_set, db_set_string, db_delete,
 * db_remove and db_set_expire signal their own changes. */
void db_changed(int db, struct entry *e);
/* A value edited in place by a command that then failed without telling
 * Redis's keyspace (PFADD stopped by a corrupt HyperLogLog keeps the
 * registers it raised, with no signalModifiedKey and no dirty++): only the
 * copies of the value (the kernel cache) and INFO keysizes hear of it; WATCH,
 * tracking, propagation and the change count do not. */
void db_changed_unsignalled(int db, struct entry *e);
/* Adds n to the count of changes (Redis's server.dirty: INFO
 * rdb_changes_since_last_save, the save points), from any thread. A
 * command's count is added at its end (commands.h, command_dirty); the store
 * counts one per key changed outside commands (expiry and eviction count
 * none, as in Redis). */
void store_count_changes(uint64_t n);
/* The access clock: ticks of 10 ms since the store started (idle times, LRU
 * and LFU decay); 32 bits last 497 days. */
#define STORE_CLOCK_HZ 100
uint32_t store_clock(void);
/* DEBUG SET-ALLOW-ACCESS-EXPIRED: nonzero makes lookups see keys (and hash
 * fields) past their deadlines, as Redis's allow_access_expired; the
 * active expiry cycle still reclaims them. */
extern int store_allow_access_expired;
/* Is e past its deadline, as lookups see it (see store_allow_access_expired)? */
bool entry_expired(const struct entry *e, int64_t now);

/* Keys and keys with deadlines in db (a racy sum over shards; exact when
 * the caller holds all of db's shards). */
/* Changes counted since start (store_count_changes), summed over threads. */
uint64_t store_changes(void);
uint64_t db_size(int db);
/* Counts n hash fields of e reclaimed past their deadline by a command (INFO's
 * expired_subkeys); e's shard lock held. */
void db_count_expired_fields(int db, struct entry *e, uint64_t n);
/* Active expiry's own figures (INFO stats): the running estimate of the share
 * of sampled keys found expired (percent), the cycles cut short by their time
 * budget, and the CPU time spent in cycles (ms). */
double store_expired_stale_perc(void);
uint64_t store_expire_time_cap_reached(void);
uint64_t store_expire_cycle_ms(void);
/* Bytes of db's bucket arrays (MEMORY STATS' hashtable overhead). */
size_t db_table_bytes(int db);
/* Adds db's keysizes histogram into out (a racy sum over shards, as
 * db_size). */
void db_keysizes(int db, keysizes_hist out);
uint64_t db_expires(int db);
/* Estimated average time to live of db's keys with deadlines (ms). */
uint64_t db_avg_ttl(int db);
/* Empties db; the caller holds all of its shards. Returns keys removed. */
uint64_t db_flush(int db);
/* As db_flush; if lazy, the keys are freed on the background pool (their
 * tables are replaced by empty ones at once). */
uint64_t db_flush_lazy(int db, bool lazy);
/* Exchanges the contents of two databases; the caller holds both. */
void db_swap(int a, int b);
/* A replica's swapdb load (Redis's disklessLoadInitTempDb): every
 * database's keys are set aside, the store is left empty (flushed, to every
 * hook); restore flushes what was loaded since and puts them back (and
 * frees a); free drops them, on the background pool. The caller of the
 * do_ ones holds every shard lock; a is owned by the caller until restored
 * or freed. */
struct store_aside;
struct store_aside *do_store_set_aside(void);
void do_store_restore_aside(struct store_aside *a);
void store_aside_free(struct store_aside *a);

/*
 * The per-slot key index, kept only when cluster-enabled (fixed at start):
 * each entry then carries, just before itself in the same allocation, a
 * link into its slot's list (no field of struct entry, no allocation of
 * its own: with cluster mode off an entry costs not one byte more). A
 * slot's keys all live in one shard (slot % STORE_SHARDS), so the lists of
 * a shard's 256 slots hang off the shard, under its lock, and move with
 * its table (SWAPDB, FLUSHDB ASYNC).
 */
#define STORE_SLOTS_PER_SHARD (CLUSTER_SLOTS / STORE_SHARDS)
struct slot_link {
	struct slot_link *next, **pprev;
};
struct slot_keys {
	struct slot_link *first[STORE_SLOTS_PER_SHARD];
	uint32_t count[STORE_SLOTS_PER_SHARD];
};
/* Is the index kept (cluster-enabled when store_init ran)? */
bool store_slot_index(void);
/* Keys in slot of db (0 without the index); slot's shard lock held. */
uint64_t db_slot_count(int db, unsigned slot);
/* The first key of slot in db, then the next one after e (NULL at the
 * end); the order is the index's (latest added first). Slot's shard lock
 * held; e must stay in place between the calls. */
struct entry *db_slot_first(int db, unsigned slot);
struct entry *db_slot_next(const struct entry *e);
/* The bytes e's allocation takes (MEMORY USAGE), its slot link included. */
size_t entry_mem(const struct entry *e);

/* Runs active expiry on the shards that belong to worker `self` of `n`,
 * for at most budget_us microseconds. Takes the shard locks itself. */
void store_active_expire(unsigned self, unsigned n, int64_t budget_us);

/* Active defragmentation's figures (INFO stats: active_defrag_*). */
struct store_defrag_counts {
	uint64_t hits, misses;	       /* blocks moved, blocks left */
	uint64_t key_hits, key_misses; /* keys with a block moved, keys without */
};
/* Moves the blocks of the keys (entries, string buffers) of the shards that
 * belong to worker `self` of `n` out of sparse slabs (mem_defrag_move), for
 * at most budget_us, resuming where the last call stopped; takes the shard
 * locks itself. True once a whole pass over those shards is done. */
bool store_defrag(unsigned self, unsigned n, int64_t budget_us, struct store_defrag_counts *c);

/*
 * A set of shards to lock together, always in ascending (db, shard) order: a
 * 64-bit mask of shards per database named. A set that would name more than
 * LOCKSET_DBS databases, or was asked for everything (lockset_add_all), takes
 * every shard of the store instead, so adding never fails.
 */
#define LOCKSET_DBS 4
struct lockset {
	uint8_t ndbs;
	bool all;  /* every shard of every database */
	bool held; /* acquired by this set (not by an enclosing holder) */
	struct {
		int db;
		uint64_t mask; /* bit i: shard i of db */
	} dbs[LOCKSET_DBS];
};

void lockset_init(struct lockset *ls);
void lockset_add_key(struct lockset *ls, int db, const char *key, size_t len);
/* Adds every shard of db. */
void lockset_add_db(struct lockset *ls, int db);
/* Adds every shard of the store (FLUSHALL, SWAPDB). */
void lockset_add_all(struct lockset *ls);
/* The number of shards the set names. */
unsigned lockset_count(const struct lockset *ls);
/* True if every shard of ls is one of held's (held acquired), or this thread
 * holds the whole store. */
bool lockset_covers(const struct lockset *held, const struct lockset *ls);
void lockset_acquire(struct lockset *ls);
/* lockset_acquire that gives up while waiting for a shard once give_up()
 * says so (a busy script holds it): 0, or -EBUSY with nothing held. */
int lockset_acquire_unless(struct lockset *ls, bool (*give_up)(void));
void lockset_release(struct lockset *ls);
/*
 * Growing a held set, for a script that reaches a shard it did not declare
 * (docs/architecture.md, "Narrower script locks"). try_extend takes what
 * need adds to held by trylock only: 0, or -EAGAIN with held unchanged.
 * extend_is_above: is every shard need adds above every shard held, in
 * (db, shard) order (a blocking wait for them is then safe against other
 * shard waiters)? extend takes them by blocking locks, in ascending order:
 * safe when above, or between store_escalation_begin and _end, while every
 * acquirer that could wait for held's shards gives up and retries.
 */
int lockset_try_extend(struct lockset *held, const struct lockset *need);
bool lockset_extend_is_above(const struct lockset *held, const struct lockset *need);
void lockset_extend(struct lockset *held, const struct lockset *need);
/* An escalation in progress: lockset_acquire, store_lock_all and
 * command_call's acquisition give up what they took while one is pending,
 * wait (store_escalation_wait, holding nothing) and retry. */
void store_escalation_begin(void);
void store_escalation_end(void);
bool store_escalation_pending(void);
void store_escalation_wait(void);
/* Locks or unlocks every shard of every database (a lockset naming them all).
 * While this thread holds them all, the lock functions here are no-ops for
 * it. */
void store_lock_all(void);
void store_unlock_all(void);
/* One shard, for work outside commands (eviction). */
void store_shard_lock(int db, unsigned shard);
void store_shard_unlock(int db, unsigned shard);
/* Non-zero while this thread holds every shard (store_lock_all). */
extern __thread unsigned store_locks_held;

#endif
