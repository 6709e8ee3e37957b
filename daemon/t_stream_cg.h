/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_stream_cg: a stream's consumer groups, their consumers and pending
 * entries lists (PEL), as Redis 8.8 keeps them.
 *
 * A group holds its PEL as an array of NACK pointers sorted by entry ID, and
 * each consumer an array of the same NACKs (shared: the group's array owns
 * them) sorted the same way. Deliveries nearly always append (IDs only grow),
 * a lookup is a binary search, and XPENDING, XAUTOCLAIM and XINFO walk the
 * arrays in ID order as Redis walks its radix trees. Groups are sorted by
 * name, consumers too (bytewise, shorter first), which is the radix-tree
 * order Redis lists them in.
 *
 * Nothing here locks: the caller holds the shard lock of the stream's key.
 */
#ifndef XKV_T_STREAM_CG_H
#define XKV_T_STREAM_CG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"
#include "t_stream.h"

/* A group's entries_read when not known (Redis's SCG_INVALID_ENTRIES_READ). */
#define STREAM_ENTRIES_READ_INVALID (-1LL)

struct stream_consumer;

/* One delivered, not yet acknowledged entry. */
struct stream_nack {
	struct stream_id id;
	int64_t delivery_time; /* ms, wall clock */
	uint64_t delivery_count;
	struct stream_consumer *consumer; /* the last one it went to; NULL: NACKed */
	struct stream_nack *prev, *next;  /* the group's delivery-time order */
};

/* NACK pointers sorted by ID. */
struct stream_pel {
	struct stream_nack **v;
	size_t n, cap;
};

struct stream_consumer {
	char *name;
	size_t len;
	int64_t seen_time, active_time; /* active_time -1: never active */
	struct stream_pel pel;		/* not owning */
};

struct stream_group {
	char *name;
	size_t len;
	struct stream_id last_id;
	long long entries_read;
	struct stream_pel pel; /* owns the NACKs */
	/* The NACKs by delivery time, oldest first, as Redis 8.8 keeps them for
	 * CLAIM: the NACK zone (XNACKed, unowned) first, up to nack_tail. */
	struct stream_nack *time_head, *time_tail, *nack_tail;
	struct stream_consumer **consumers;
	size_t nconsumers;
};

/* The stream's groups, sorted by name; NULL/0 when none. */
struct stream_group **stream_groups(const struct obj *o, size_t *n);
struct stream_group *stream_group_find(const struct obj *o, const char *name, size_t len);
/* NULL if a group of that name exists. */
struct stream_group *stream_group_create(struct obj *o, const char *name, size_t len,
					 const struct stream_id *last_id, long long entries_read);
void stream_group_destroy(struct obj *o, struct stream_group *g);

struct stream_consumer *stream_consumer_find(const struct stream_group *g, const char *name,
					     size_t len);
/* A new consumer (seen now, never active); NULL if the name exists. */
struct stream_consumer *stream_consumer_create(struct stream_group *g, const char *name, size_t len,
					       int64_t now);
/* Deletes c and its pending entries; returns how many it had. */
size_t stream_consumer_delete(struct stream_group *g, struct stream_consumer *c);

/* The NACK of id in pel, or NULL; *at is where it is or would go. */
struct stream_nack *stream_pel_find(const struct stream_pel *pel, const struct stream_id *id,
				    size_t *at);
/* The index of the first NACK at or after id. */
size_t stream_pel_seek(const struct stream_pel *pel, const struct stream_id *id);
/* A new NACK for id in g's PEL (absent), owned by c (may be NULL). */
struct stream_nack *stream_nack_add(struct stream_group *g, struct stream_consumer *c,
				    const struct stream_id *id, int64_t now);
/* Moves n to consumer c's PEL (from its current owner's). */
void stream_nack_assign(struct stream_nack *n, struct stream_consumer *c);
/* Sets n's delivery time and moves it to its place in the time order. */
void stream_nack_touch(struct stream_group *g, struct stream_nack *n, int64_t when);
/* Moves n to the end of the NACK zone, unowned, delivery time 0 (XNACK). */
void stream_nack_release(struct stream_group *g, struct stream_nack *n);
size_t stream_group_nacked(const struct stream_group *g);
/* Removes and frees n (acknowledged). */
void stream_nack_remove(struct stream_group *g, struct stream_nack *n);

/* Sets g's last delivered ID. */
void stream_group_set_last(struct obj *o, struct stream_group *g, const struct stream_id *id);

/* Is entry id still wanted by a group: not yet delivered to all of them, or
 * pending in one (the ACKED condition)? */
bool stream_entry_referenced(const struct obj *o, const struct stream_id *id);
/* Drops id from every group's PEL (the DELREF condition). */
void stream_entry_unreference(struct obj *o, const struct stream_id *id);

/* Redis's streamEstimateDistanceFromFirstEverEntry: id's logical read
 * counter, or STREAM_ENTRIES_READ_INVALID. */
long long stream_estimate_read(const struct obj *o, const struct stream_id *id);
/* The group's lag; false if it cannot be known (Redis replies null). */
bool stream_group_lag(const struct obj *o, const struct stream_group *g, long long *lag);
/* Redis's streamRangeHasTombstones from start (NULL: 0-0) to the end. */
bool stream_has_tombstones_after(const struct obj *o, const struct stream_id *start);

/* For t_stream.c's free, dup and memory operations. */
struct stream_cgroups;
void stream_cg_free(struct stream_cgroups *cg);
struct stream_cgroups *stream_cg_dup(const struct stream_cgroups *cg);
size_t stream_cg_mem(const struct stream_cgroups *cg);

#endif
