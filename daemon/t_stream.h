/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_stream: the stream type, an append-only log of entries ordered by a
 * 128-bit ID (milliseconds, sequence), each holding field/value pairs.
 *
 * Entries live in nodes of up to stream-node-max-entries entries (or about
 * stream-node-max-bytes bytes), each node one allocation, as Redis packs a
 * listpack per radix-tree node. A node's first entry gives the node its master
 * ID and master fields: every later entry stores its ID as deltas against the
 * master ID, and an entry whose fields are the master fields stores only its
 * values. Deleted entries are flagged in place; a node whose entries are all
 * deleted is freed. The nodes sit in an array sorted by master ID, so a range
 * starts with a binary search.
 *
 * Entries handed out (struct stream_entry) point into the stream and stay
 * valid until it is next modified or freed. Nothing here locks: the caller
 * holds the shard lock of the key that owns the value.
 */
#ifndef XKV_T_STREAM_H
#define XKV_T_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* IDs as text: two 20-digit numbers and a dash. */
#define STREAM_ID_STR_SIZE 42

struct stream_id {
	uint64_t ms, seq;
};

/* One entry as iteration reports it; read its pairs with stream_entry_next. */
struct stream_entry {
	struct stream_id id;
	uint64_t nfields;
	/* Private cursor state. */
	const unsigned char *fields; /* master fields, or NULL: pairs inline */
	const unsigned char *p;
	uint64_t left;
};

/* An empty stream; obj_free() releases it. */
struct obj stream_new(void);
/* Live entries. */
uint64_t stream_len(const struct obj *o);
struct stream_id stream_last_id(const struct obj *o);
struct stream_id stream_max_deleted(const struct obj *o);
uint64_t stream_entries_added(const struct obj *o);
/* The first and last live entries' IDs; false if the stream is empty. */
bool stream_first(const struct obj *o, struct stream_id *id);
bool stream_last(const struct obj *o, struct stream_id *id);

int stream_id_cmp(const struct stream_id *a, const struct stream_id *b);
/* Formats id as "ms-seq" into buf (STREAM_ID_STR_SIZE); returns the length. */
int stream_id_str(char *buf, const struct stream_id *id);
/* Parses "ms", "ms-seq", and (if seq_given is not NULL) "ms-*", where
 * *seq_given becomes false; "-" and "+" are the smallest and largest IDs
 * unless strict. An absent sequence is missing_seq. 0 or -EINVAL. */
int stream_id_parse(const char *p, size_t len, uint64_t missing_seq, bool strict,
		    struct stream_id *id, bool *seq_given);
/* The next/previous ID; -ERANGE at the end of the space. */
int stream_id_incr(struct stream_id *id);
int stream_id_decr(struct stream_id *id);

/*
 * Appends an entry of n pairs (argv-style arrays f[i], v[i] of lengths).
 * The ID: with use_id NULL, the next after the last (the clock's ms, now_ms,
 * if that is later); with seq_given false, use_id's ms and the next sequence
 * free in it. Returns 0 and *added, or -EDOM if the ID is not above the last
 * ID, -ERANGE if the pairs are too large for one node.
 */
int stream_append(struct obj *o, const char *const *f, const size_t *flen, const char *const *v,
		  const size_t *vlen, uint64_t n, const struct stream_id *use_id, bool seq_given,
		  int64_t now_ms, struct stream_id *added);

/* Calls fn on the live entries from start to end (inclusive), ascending or,
 * with rev, descending, until it returns false or count (0: no limit) were
 * reported. Returns how many were reported. */
typedef bool stream_entry_fn(void *ctx, struct stream_entry *e);
uint64_t stream_range(const struct obj *o, const struct stream_id *start,
		      const struct stream_id *end, bool rev, uint64_t count, stream_entry_fn *fn,
		      void *ctx);
/* The next pair of e; false when all were read. */
bool stream_entry_next(struct stream_entry *e, const char **f, size_t *flen, const char **v,
		       size_t *vlen);

/* Deletes the live entry id (max-deleted-entry-id follows); false if absent. */
bool stream_delete(struct obj *o, const struct stream_id *id);

enum stream_trim_by { STREAM_TRIM_MAXLEN, STREAM_TRIM_MINID };
/* May the trim delete entry id? (It may act on the groups first: DELREF.) */
typedef bool stream_trim_fn(struct obj *o, const struct stream_id *id);
/* Removes entries from the head until at most maxlen remain, or none below
 * minid. approx trims whole nodes only; limit (0: none) caps the entries
 * removed, node by node, as Redis does. With can_delete (DELREF, ACKED),
 * entries are asked one by one, whole nodes included, and approx goes on
 * inside a node, as Redis's streamTrim does. Returns how many went. */
uint64_t stream_trim(struct obj *o, enum stream_trim_by by, uint64_t maxlen,
		     const struct stream_id *minid, bool approx, uint64_t limit,
		     stream_trim_fn *can_delete);
/* Is id a live entry? */
bool stream_exists(const struct obj *o, const struct stream_id *id);
/* The recorded first entry ID (0-0 when empty), and the node count. */
struct stream_id stream_first_id(const struct obj *o);
size_t stream_node_count(const struct obj *o);
/* Node i's master ID (i < stream_node_count). */
struct stream_id stream_node_master(const struct obj *o, size_t i);
/*
 * The nodes as RDB writes them (rdb_stream.c): for each node in order,
 * node_fn with its master ID, counters and master fields, then item_fn for
 * each of its entries, deleted ones too, with the entry's flags
 * (STREAM_ITEM_*) and its pairs (read them with stream_entry_next).
 */
enum { STREAM_ITEM_DELETED = 1, STREAM_ITEM_SAMEFIELDS = 2 };
typedef void stream_node_fn(void *ctx, const struct stream_id *master, uint64_t live,
			    uint64_t deleted, uint64_t nmaster, const char *const *mf,
			    const size_t *mflen);
typedef void stream_item_fn(void *ctx, unsigned flags, struct stream_entry *e);
void stream_walk_nodes(const struct obj *o, stream_node_fn *node_fn, stream_item_fn *item_fn,
		       void *ctx);
/* Loading: a new tail node with these master fields (IDs ascending), then
 * its entries, each above the last; 0 or -EINVAL. stream_load_done sets the
 * counters and checks the live entries against length. */
int stream_load_node(struct obj *o, const struct stream_id *master, const char *const *mf,
		     const size_t *mflen, uint64_t nmf);
int stream_load_entry(struct obj *o, const struct stream_id *id, bool deleted, const char *const *f,
		      const size_t *flen, const char *const *v, const size_t *vlen, uint64_t nf);
int stream_load_done(struct obj *o, uint64_t length, const struct stream_id *last,
		     const struct stream_id *first, const struct stream_id *max_deleted,
		     uint64_t entries_added);
/* Loading IDMP: the settings, and the counters. */
void stream_idmp_load(struct obj *o, uint64_t duration, uint64_t maxsize, uint64_t added,
		      uint64_t duplicates);
/* The producers in byte order of their IDs, for saving: calls fn per
 * producer with its live (not expired at now) IDs, oldest first. */
typedef void stream_idmp_fn(void *ctx, const char *pid, size_t plen, size_t n,
			    const struct stream_id *const *ids, const char *const *iids,
			    const size_t *ilens);
void stream_idmp_walk(const struct obj *o, int64_t now, stream_idmp_fn *fn, void *ctx);

/* The consumer groups' slot (t_stream_cg.c owns what it points to). */
struct stream_cgroups;
struct stream_cgroups **stream_cg_slot(const struct obj *o);

/* XSETID: the fields XSETID sets (the caller checks them first). */
void stream_set_ids(struct obj *o, const struct stream_id *last, uint64_t entries_added,
		    const struct stream_id *max_deleted);

/*
 * IDMP (idempotent production): per producer, the recent idempotency IDs and
 * the entry each produced. Lookup drops entries older than the stream's
 * duration first; insert keeps the newest maxsize per producer (both taken
 * from stream-idmp-duration and stream-idmp-maxsize when the stream is made).
 */
bool stream_idmp_find(struct obj *o, const char *pid, size_t plen, const void *iid, size_t ilen,
		      int64_t now_ms, struct stream_id *id);
void stream_idmp_insert(struct obj *o, const char *pid, size_t plen, const void *iid, size_t ilen,
			const struct stream_id *id);
/* XIDMPRECORD's lookup (no expiry, no count): 0 absent, 1 there for id,
 * -1 there for another entry. */
int stream_idmp_peek(const struct obj *o, const char *pid, size_t plen, const void *iid,
		     size_t ilen, const struct stream_id *id);
/* XCFGSET: new settings (0: unchanged); a change forgets every producer's
 * IDs, as Redis. True if anything changed. */
bool stream_idmp_configure(struct obj *o, uint64_t duration, uint64_t maxsize);
/* XINFO STREAM's IDMP figures: settings, producers and IDs tracked, IDs
 * ever added and duplicates seen. */
struct stream_idmp_info {
	uint64_t duration, maxsize, pids, iids, added, duplicates;
};
void stream_idmp_info(const struct obj *o, struct stream_idmp_info *info);

#endif
