/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_zset: the sorted set value (type OBJ_ZSET), ordered by score, then by
 * member bytes (memcmp, a shorter prefix first), as Redis orders it.
 *
 * Two encodings, as in Redis, chosen from config.zset_max_listpack_entries and
 * config.zset_max_listpack_value:
 *  - ENC_LISTPACK: one packed allocation of (member, score) entries in order;
 *    every operation is a linear walk, which beats pointers for small sets;
 *  - ENC_SKIPLIST: a skiplist with span counts (rank operations in O(log n))
 *    whose nodes also sit in a member -> node hash table (lookups in O(1)).
 * A set is converted to a skiplist when an insertion takes it past either
 * limit, and never back; zset_new() picks the encoding for a known size.
 *
 * Ranks are 0-based and ascending everywhere in this API; callers turn
 * reverse positions into ascending ranks. Ranges of elements are rank spans
 * [first, end). Pointers into a set (member bytes of iterators and elements)
 * stay valid until the set is next changed or freed.
 *
 * No locking here: a value belongs to its key, whose shard lock the caller
 * holds (see store.h).
 */
#ifndef XKV_T_ZSET_H
#define XKV_T_ZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "object.h"

/* One element, as read from a set. */
struct zset_elem {
	const char *m;
	size_t len;
	double score;
};

/* ZADD's options for zset_add(). */
enum zadd_flag {
	ZADD_NX = 1u << 0,   /* only add new members */
	ZADD_XX = 1u << 1,   /* only update existing members */
	ZADD_GT = 1u << 2,   /* update only to a greater score */
	ZADD_LT = 1u << 3,   /* update only to a lesser score */
	ZADD_INCR = 1u << 4, /* the score is an increment */
};

enum zadd_result {
	ZADD_ADDED,   /* a new member */
	ZADD_UPDATED, /* an existing member got another score */
	ZADD_SAME,    /* an existing member, score unchanged */
	ZADD_SKIPPED, /* NX, XX, GT or LT stopped it */
	ZADD_NAN,     /* INCR would make the score NaN: nothing changed */
};

/* A score interval, each end inclusive unless its "ex" flag is set. */
struct zscore_range {
	double min, max;
	bool minex, maxex;
};

/* One end of a lexicographic interval: "-", "+", "[member" or "(member". */
enum zlex_kind { ZLEX_NEG_INF, ZLEX_POS_INF, ZLEX_INCL, ZLEX_EXCL };
struct zlex_bound {
	enum zlex_kind kind;
	const char *p; /* ZLEX_INCL / ZLEX_EXCL: the member bytes */
	size_t len;
};
struct zlex_range {
	struct zlex_bound min, max;
};

/* An empty set in the encoding Redis would give one about to receive count
 * members, the longest maxlen bytes long. Free it with obj_free(). */
struct obj zset_new(size_t count, size_t maxlen);

size_t zset_len(const struct obj *o);
/* The score of member m (true), or false if absent. */
bool zset_score(const struct obj *o, const char *m, size_t len, double *score);
/* The ascending rank of m (and its score if score is not NULL), or -1. */
long long zset_rank(const struct obj *o, const char *m, size_t len, double *score);

/*
 * Adds m with score under ZADD's flags, converting the encoding as needed.
 * With ZADD_INCR the score is added to the current one. *newscore (if not
 * NULL) gets the member's score when the result is ADDED, UPDATED or SAME.
 * score must not be NaN.
 */
enum zadd_result zset_add(struct obj *o, double score, const char *m, size_t len, unsigned flags,
			  double *newscore);
/* Removes m; false if it was absent. */
bool zset_del(struct obj *o, const char *m, size_t len);
/* Removes the elements of ranks [first, end); returns how many. */
size_t zset_del_ranks(struct obj *o, size_t first, size_t end);

/* The ranks [*first, *end) of the elements inside a score or lex range. For
 * lex ranges all scores are meant to be equal, as in Redis: otherwise the
 * span is that of a search that assumes members in order. */
void zset_score_span(const struct obj *o, const struct zscore_range *r, size_t *first, size_t *end);
void zset_lex_span(const struct obj *o, const struct zlex_range *r, size_t *first, size_t *end);
/* Does member m lie within r? (Used by both encodings' searches.) */
bool zlex_gte_min(const char *m, size_t len, const struct zlex_bound *min);
bool zlex_lte_max(const char *m, size_t len, const struct zlex_bound *max);

/* Walks the elements from ascending rank `rank`, forwards or (rev) backwards. */
struct zset_iter {
	const struct obj *o;
	bool rev;
	const void *pos; /* the next element (packed entry or skiplist node), NULL at the end */
};

void zset_iter_init(struct zset_iter *it, const struct obj *o, size_t rank, bool rev);
/* The next element, or false past the last one. */
bool zset_iter_next(struct zset_iter *it, struct zset_elem *out);
/* The element at ascending rank (false if out of range). */
bool zset_at(const struct obj *o, size_t rank, struct zset_elem *out);

/*
 * ZSCAN: calls fn for some elements from cursor and returns the next cursor
 * (0 when done). A packed set is returned whole in one call; a skiplist
 * set's hash table is walked in Redis's reverse-binary cursor order, about
 * count elements per call, so an element present throughout a full
 * iteration is returned at least once.
 */
typedef void zset_scan_fn(void *ctx, const struct zset_elem *el);
uint64_t zset_scan(const struct obj *o, uint64_t cursor, size_t count, zset_scan_fn *fn, void *ctx);

/* Checks the encoding's invariants (order, spans, counts, hash table); for
 * tests. Returns 0 or a negative line number identifying the broken check. */
int zset_check(const struct obj *o);

#endif
