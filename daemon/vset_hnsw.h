/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vset_hnsw: the HNSW graph behind vector sets (t_vset.c).
 *
 * Vectors are stored normalised (cosine: the distance is 1 - dot, in [0, 2])
 * as FP32, Q8 (one signed byte per component scaled by the vector's own
 * largest magnitude) or BIN (one sign bit per component; distance is
 * hamming * 2 / dim). The L2 and IP metrics (VSIM.* front end) store FP32
 * as given. Links are undirected: when a node lists a neighbour, the
 * neighbour lists it back, so a deletion knows every node that pointed at
 * the deleted one and repairs their lists from each other.
 *
 * Locking. Each index has one rwlock, index->lock. Searches take it shared,
 * so any number run at once (both workers, no global lock). An insert runs in
 * two phases, both under the shared lock: vhnsw_prepare() searches the
 * neighbours and selects them; vhnsw_commit() links the node while searches
 * and other inserts' first phases go on (readers load link counts and links
 * atomically, see vset_hnsw.c), and redoes the search first if a node was
 * deleted in between (index->gen moved) or the entry point changed.
 * Deletions and attribute changes take it exclusive. The caller serialises
 * writers to one set (commits, deletions) by its own means (the key's shard
 * lock).
 *
 * Ownership: node->value belongs to the caller (t_vset.c), who frees it after
 * vhnsw_delete() returns or from the callback of vhnsw_free().
 */
#ifndef XKV_VSET_HNSW_H
#define XKV_VSET_HNSW_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Numbered as Redis 8.8 saves them in its RDB records. */
enum vhnsw_quant {
	VHNSW_NOQUANT = 0,
	VHNSW_Q8 = 1,
	VHNSW_BIN = 2,
};

enum vhnsw_metric {
	VHNSW_COSINE = 0,
	VHNSW_L2 = 1, /* squared Euclidean distance, FP32 only */
	VHNSW_IP = 2, /* 1 - dot, unnormalised, FP32 only */
};

#define VHNSW_DEFAULT_M 16
#define VHNSW_MIN_M 4
#define VHNSW_MAX_M 4096
#define VHNSW_MAX_LEVEL 16

struct vhnsw_node {
	struct vhnsw_node *next, *prev; /* insertion order (VRANDMEMBER, RDB) */
	void *value;			/* the caller's */
	uint64_t id;			/* unique in the index, from 1 */
	uint32_t slot;			/* index->nodes[slot] == this */
	uint32_t level;
	float l2;		    /* norm before normalisation (VEMB de-normalises) */
	float range;		    /* Q8: the largest magnitude after normalisation */
	uint32_t *nlinks;	    /* [level + 1] */
	struct vhnsw_node ***links; /* [level + 1][cap(level)] */
	/* then the vector (vhnsw_vec_bytes), 8-aligned */
	uint64_t vec[];
};

struct vhnsw {
	pthread_rwlock_t lock;
	uint32_t dim;
	uint8_t quant, metric;
	uint32_t m;
	uint64_t count, last_id;
	uint32_t max_level;
	struct vhnsw_node *entry;
	struct vhnsw_node *head, *tail;
	struct vhnsw_node **nodes; /* by slot; NULL for free slots */
	uint32_t nslots, slots_cap;
	uint32_t *free_slots;
	uint32_t nfree, free_cap;
	uint64_t gen; /* bumped by every deletion (vhnsw_commit's check) */
	size_t bytes; /* heap bytes of nodes and arrays (MEMORY USAGE) */
};

struct vhnsw_result {
	struct vhnsw_node *node;
	float dist;
};

/* NULL on bad parameters. Freed by vhnsw_free. */
struct vhnsw *vhnsw_new(uint32_t dim, enum vhnsw_quant quant, enum vhnsw_metric metric, uint32_t m);
/* Frees every node, calling free_value(value) for each if not NULL. */
void vhnsw_free(struct vhnsw *h, void (*free_value)(void *));
size_t vhnsw_vec_bytes(const struct vhnsw *h);

/*
 * A query or insert vector prepared for the index: normalised (cosine) and
 * quantised as the index stores them. At most dim floats read from v.
 */
struct vhnsw_query {
	float l2, range;
	uint64_t *vec; /* vhnsw_vec_bytes, owned */
};
int vhnsw_query_init(const struct vhnsw *h, const float *v, struct vhnsw_query *q);
void vhnsw_query_free(struct vhnsw_query *q);

/* The k nearest (at most) to q, nearest first, exploring ef >= k; under
 * the caller's shared lock (vhnsw_read_lock). Returns how many. With exact,
 * a linear scan. */
uint32_t vhnsw_search(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k, uint32_t ef,
		      bool exact, struct vhnsw_result *out);
/* As vhnsw_search, keeping only nodes accept(value, arg) says yes to and
 * visiting at most max_visit nodes. */
uint32_t vhnsw_search_filter(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k, uint32_t ef,
			     bool exact, int (*accept)(void *value, void *arg), void *arg,
			     uint64_t max_visit, struct vhnsw_result *out);

static inline void vhnsw_read_lock(struct vhnsw *h)
{
	pthread_rwlock_rdlock(&h->lock);
}
static inline void vhnsw_write_lock(struct vhnsw *h)
{
	pthread_rwlock_wrlock(&h->lock);
}
static inline void vhnsw_unlock(struct vhnsw *h)
{
	pthread_rwlock_unlock(&h->lock);
}

/* Phase one of an insert: the candidate neighbours per level, found under
 * the shared lock (taken here). Owned by the caller until commit/free. */
struct vhnsw_prep;
struct vhnsw_prep *vhnsw_prepare(struct vhnsw *h, struct vhnsw_query *q, uint32_t ef);
void vhnsw_prep_free(struct vhnsw_prep *p);
/* Phase two: links a new node holding q's vector (taken: q is emptied) and
 * value, under the exclusive lock (taken here); p may be NULL (one phase).
 * Returns the node. */
struct vhnsw_node *vhnsw_commit(struct vhnsw *h, struct vhnsw_prep *p, struct vhnsw_query *q,
				uint32_t ef, void *value);
/* A node from saved data: vector bytes, norm, range, and its links by id
 * resolved later (vhnsw_link_loaded). Caller holds no lock (loading). */
struct vhnsw_node *vhnsw_load_node(struct vhnsw *h, const void *vec, float l2, float range,
				   uint64_t id, uint32_t level, void *value);
/* Unlinks and frees node (not its value), repairing its neighbours' lists;
 * takes the exclusive lock. */
void vhnsw_delete(struct vhnsw *h, struct vhnsw_node *node);

float vhnsw_distance(const struct vhnsw *h, const struct vhnsw_node *a, const struct vhnsw_node *b);
float vhnsw_query_distance(const struct vhnsw *h, const struct vhnsw_query *q,
			   const struct vhnsw_node *n);
/* The node's vector de-quantised and de-normalised into out[dim]. */
void vhnsw_node_vector(const struct vhnsw *h, const struct vhnsw_node *n, float *out);
/* A random node (NULL if empty); rnd is any random 64-bit value. */
struct vhnsw_node *vhnsw_random(const struct vhnsw *h, uint64_t rnd);
uint32_t vhnsw_cap(const struct vhnsw *h, uint32_t level);
/* Adds the undirected link a-b at level (loading); false if either is full. */
bool vhnsw_add_link(struct vhnsw *h, struct vhnsw_node *a, struct vhnsw_node *b, uint32_t level);

/* Which distance code runs: "avx512", "avx2" or "scalar" (chosen at start
 * from the CPU); vhnsw_force_isa lets tests compare them. */
const char *vhnsw_isa(void);
void vhnsw_force_isa(int isa); /* 0 scalar, 1 avx2, 2 avx512; clamped to the CPU */
float vhnsw_dot_f32(const float *a, const float *b, uint32_t n);
int32_t vhnsw_dot_q8(const int8_t *a, const int8_t *b, uint32_t n);

#endif
