// SPDX-License-Identifier: BSD-3-Clause
/*
 * t_zset: the sorted set value, in its two encodings (see t_zset.h).
 *
 * Packed (ENC_LISTPACK). o->ptr is a struct zpack: a count, a byte length and
 * the entries in order, each its member's length, the member, the score
 * (small integers in one byte) and a back length that lets a walk go
 * backwards (ZREVRANGE), as the leading length lets it go forwards (the
 * layout is at struct zpack); read with memcpy, since entries are not
 * aligned. A set stays packed while it has at most
 * zset-max-listpack-entries members of at most zset-max-listpack-value bytes.
 *
 * Skiplist (ENC_SKIPLIST). o->ptr is a struct zsl: a skiplist (p = 1/4, at
 * most 32 levels) whose links count the level-0 steps they jump ("span"), so
 * the rank of a node is the sum of the spans followed to reach it. Each node
 * is also a dict node keyed by its member, so a member's score is found in
 * O(1). A node is one allocation: header, its level array, then the member.
 * Span convention: a link with no forward node spans to the end, so that
 * rank(node) + span == length there; only followed links are ever summed.
 */
#include <string.h>
#include <xxhash.h>

#include "config.h"
#include "dict.h"
#include "log.h"
#include "mem.h"
#include "t_zset.h"
#include "util.h"

/* ---- ordering -------------------------------------------------------------------------------- */

/* Binary member order, as Redis's sdscmp: memcmp, then the shorter first. */
static int mem_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int r = n ? memcmp(a, b, n) : 0;

	if (r)
		return r;
	return (alen > blen) - (alen < blen);
}

static int elem_cmp(double s1, const char *m1, size_t l1, double s2, const char *m2, size_t l2)
{
	if (s1 < s2)
		return -1;
	if (s1 > s2)
		return 1;
	return mem_cmp(m1, l1, m2, l2);
}

bool zlex_gte_min(const char *m, size_t len, const struct zlex_bound *min)
{
	switch (min->kind) {
	case ZLEX_NEG_INF:
		return true;
	case ZLEX_POS_INF:
		return false;
	case ZLEX_INCL:
		return mem_cmp(m, len, min->p, min->len) >= 0;
	default:
		return mem_cmp(m, len, min->p, min->len) > 0;
	}
}

bool zlex_lte_max(const char *m, size_t len, const struct zlex_bound *max)
{
	switch (max->kind) {
	case ZLEX_NEG_INF:
		return false;
	case ZLEX_POS_INF:
		return true;
	case ZLEX_INCL:
		return mem_cmp(m, len, max->p, max->len) <= 0;
	default:
		return mem_cmp(m, len, max->p, max->len) < 0;
	}
}

/* The searches below count the elements before a point: the prefix of the
 * order on which a predicate holds. */
typedef bool elem_pred(const struct zset_elem *el, const void *arg);

static bool below_min_score(const struct zset_elem *el, const void *arg)
{
	const struct zscore_range *r = arg;

	return r->minex ? el->score <= r->min : el->score < r->min;
}

static bool within_max_score(const struct zset_elem *el, const void *arg)
{
	const struct zscore_range *r = arg;

	return r->maxex ? el->score < r->max : el->score <= r->max;
}

static bool below_min_lex(const struct zset_elem *el, const void *arg)
{
	return !zlex_gte_min(el->m, el->len, arg);
}

static bool within_max_lex(const struct zset_elem *el, const void *arg)
{
	return zlex_lte_max(el->m, el->len, arg);
}

/* A thread's pseudo-random numbers (xorshift64*), for skiplist levels. */
static uint64_t zrand(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x9e3779b97f4a7c15ull;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dull;
}

/* ---- packed encoding ------------------------------------------------------------------------- */

struct zpack {
	uint32_t count;
	uint32_t used; /* bytes of data[] in use */
	unsigned char data[];
};

/*
 * An entry is, as compact as Redis's listpack (a member of a few bytes with a
 * small integral score takes 6):
 *
 *	member length (LEB128) | member | score | back length
 *
 * The score's first byte is the score itself for integers 0..ZP_SMALL_MAX,
 * else a tag: an int16, an int32 or a double (8 bytes) follows. The back
 * length is the entry's size without it: one byte below 128, else the size
 * as a u32 then a byte 0x80, so a walk backwards reads it from its end.
 */
#define ZP_SMALL_MAX 0xef
#define ZP_TAG_I16 0xf0
#define ZP_TAG_I32 0xf1
#define ZP_TAG_DBL 0xf2

static size_t varint_size(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t score_size(double score)
{
	if (score >= 0 && score <= ZP_SMALL_MAX && score == (double)(int)score)
		return 1;
	if (score >= INT16_MIN && score <= INT16_MAX && score == (double)(int16_t)score)
		return 1 + sizeof(int16_t);
	if (score >= INT32_MIN && score <= INT32_MAX && score == (double)(int32_t)score)
		return 1 + sizeof(int32_t);
	return 1 + sizeof(double);
}

static inline size_t backlen_size(size_t body)
{
	return body < 0x80 ? 1 : 1 + sizeof(uint32_t);
}

/* The bytes an entry for (score, a member of len bytes) takes. */
static size_t zp_encoded_size(double score, size_t len)
{
	size_t body = varint_size(len) + len + score_size(score);

	return body + backlen_size(body);
}

static inline uint32_t get_u32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The member's length at p, and where the member starts. */
static const unsigned char *varint_get(const unsigned char *p, size_t *v)
{
	size_t x = 0;
	unsigned shift = 0;

	for (;; shift += 7) {
		x |= (size_t)(*p & 0x7f) << shift;
		if (!(*p++ & 0x80))
			break;
	}
	*v = x;
	return p;
}

/* The score at p, and the end of its bytes. */
static const unsigned char *score_get(const unsigned char *p, double *score)
{
	int16_t i16;
	int32_t i32;

	switch (*p) {
	case ZP_TAG_I16:
		memcpy(&i16, p + 1, sizeof(i16));
		*score = i16;
		return p + 1 + sizeof(i16);
	case ZP_TAG_I32:
		memcpy(&i32, p + 1, sizeof(i32));
		*score = i32;
		return p + 1 + sizeof(i32);
	case ZP_TAG_DBL:
		memcpy(score, p + 1, sizeof(*score));
		return p + 1 + sizeof(*score);
	default:
		*score = *p;
		return p + 1;
	}
}

/* The size of the entry at p, its back length included. */
static size_t zp_size_at(const unsigned char *p)
{
	const unsigned char *q;
	size_t len, body;
	double score;

	q = varint_get(p, &len);
	q = score_get(q + len, &score);
	body = (size_t)(q - p);
	return body + backlen_size(body);
}

static void zp_read(const unsigned char *p, struct zset_elem *el)
{
	size_t len;
	const unsigned char *m = varint_get(p, &len);

	el->len = len;
	el->m = (const char *)m;
	score_get(m + len, &el->score);
}

static void zp_write(unsigned char *p, double score, const char *m, size_t len)
{
	unsigned char *q = p;
	size_t v = len, body;

	/* Redis's listpack keeps an integral score as an integer, which loses
	 * the sign of -0: a packed set holds 0 instead, as Redis's does. */
	if (score == 0)
		score = 0;

	do {
		*q++ = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	if (len)
		memcpy(q, m, len);
	q += len;
	switch (score_size(score)) {
	case 1:
		*q++ = (unsigned char)score;
		break;
	case 1 + sizeof(int16_t): {
		int16_t i16 = (int16_t)score;

		*q++ = ZP_TAG_I16;
		memcpy(q, &i16, sizeof(i16));
		q += sizeof(i16);
		break;
	}
	case 1 + sizeof(int32_t): {
		int32_t i32 = (int32_t)score;

		*q++ = ZP_TAG_I32;
		memcpy(q, &i32, sizeof(i32));
		q += sizeof(i32);
		break;
	}
	default:
		*q++ = ZP_TAG_DBL;
		memcpy(q, &score, sizeof(score));
		q += sizeof(score);
	}
	body = (size_t)(q - p);
	if (body < 0x80) {
		*q = (unsigned char)body;
	} else {
		uint32_t b = (uint32_t)body;

		memcpy(q, &b, sizeof(b));
		q[sizeof(b)] = 0x80;
	}
}

static inline const unsigned char *zp_end(const struct zpack *zp)
{
	return zp->data + zp->used;
}

static const unsigned char *zp_next(const struct zpack *zp, const unsigned char *p)
{
	p += zp_size_at(p);
	return p < zp_end(zp) ? p : NULL;
}

static const unsigned char *zp_prev(const struct zpack *zp, const unsigned char *p)
{
	if (p == zp->data)
		return NULL;
	if (p[-1] < 0x80)
		return p - 1 - p[-1];
	return p - 1 - sizeof(uint32_t) - get_u32(p - 1 - sizeof(uint32_t));
}

/* The entry at index i, or NULL. */
static const unsigned char *zp_seek(const struct zpack *zp, size_t i)
{
	const unsigned char *p = zp->data;

	if (i >= zp->count)
		return NULL;
	while (i--)
		p += zp_size_at(p);
	return p;
}

/* The entry holding member m and its index, or NULL. */
static const unsigned char *zp_find(const struct zpack *zp, const char *m, size_t len, size_t *idx)
{
	const unsigned char *p = zp->data, *end = zp_end(zp);
	size_t i = 0;

	for (; p < end; p += zp_size_at(p), i++) {
		size_t mlen;
		const unsigned char *mp = varint_get(p, &mlen);

		if (mlen == len && (!len || !memcmp(mp, m, len))) {
			if (idx)
				*idx = i;
			return p;
		}
	}
	return NULL;
}

static struct zpack *zp_new(void)
{
	struct zpack *zp = xmalloc(sizeof(*zp));

	zp->count = 0;
	zp->used = 0;
	return zp;
}

/* Inserts (score, m), which must be absent, at its place in the order. */
static struct zpack *zp_insert(struct zpack *zp, double score, const char *m, size_t len)
{
	const unsigned char *p = zp->data, *end = zp_end(zp);
	size_t off, size = zp_encoded_size(score, len);
	struct zset_elem el;

	for (; p < end; p += zp_size_at(p)) {
		zp_read(p, &el);
		if (elem_cmp(el.score, el.m, el.len, score, m, len) > 0)
			break;
	}
	off = (size_t)(p - zp->data);
	zp = xrealloc(zp, sizeof(*zp) + zp->used + size);
	memmove(zp->data + off + size, zp->data + off, zp->used - off);
	zp_write(zp->data + off, score, m, len);
	zp->used += size;
	zp->count++;
	return zp;
}

/* Removes the entries [first, end) by index. */
static struct zpack *zp_delete_range(struct zpack *zp, size_t first, size_t end)
{
	const unsigned char *from, *to;

	if (first >= end)
		return zp;
	from = zp_seek(zp, first);
	to = end < zp->count ? zp_seek(zp, end) : zp_end(zp);
	memmove((unsigned char *)from, to, (size_t)(zp_end(zp) - to));
	zp->used -= (size_t)(to - from);
	zp->count -= end - first;
	return xrealloc(zp, sizeof(*zp) + zp->used);
}

/* Elements [0, n) on which pred holds, from index `from` on (prefix count). */
static size_t zp_count_while(const struct zpack *zp, size_t from, elem_pred *pred, const void *arg)
{
	const unsigned char *p = zp_seek(zp, from);
	struct zset_elem el;

	for (; p; p = zp_next(zp, p), from++) {
		zp_read(p, &el);
		if (!pred(&el, arg))
			break;
	}
	return from;
}

/* ---- skiplist encoding ----------------------------------------------------------------------- */

#define ZSL_MAXLEVEL 32

struct zsl_node;

struct zsl_level {
	struct zsl_node *forward;
	size_t span;
};

struct zsl_node {
	struct dict_node dnode; /* in zsl->dict, keyed by the member */
	double score;
	struct zsl_node *backward;
	size_t len;
	int nlevel;
	struct zsl_level level[]; /* then the member's len bytes */
};

struct zsl {
	struct dict dict; /* member -> node */
	struct zsl_node *header, *tail;
	size_t length;
	int level; /* levels in use, at least 1 */
};

#define node_of(n) ((struct zsl_node *)((char *)(n) - __builtin_offsetof(struct zsl_node, dnode)))

static inline char *node_member(const struct zsl_node *x)
{
	return (char *)&x->level[x->nlevel];
}

static inline void node_elem(const struct zsl_node *x, struct zset_elem *el)
{
	el->m = node_member(x);
	el->len = x->len;
	el->score = x->score;
}

static inline int node_cmp(const struct zsl_node *x, double score, const char *m, size_t len)
{
	return elem_cmp(x->score, node_member(x), x->len, score, m, len);
}

static bool zsl_key_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct zsl_node *x = node_of(n);

	return x->len == len && (!len || !memcmp(node_member(x), key, len));
}

static const struct dict_type zsl_dict_type = { .key_equal = zsl_key_equal };

static inline uint64_t member_hash(const char *m, size_t len)
{
	return XXH3_64bits(m, len);
}

/* A level for a new node: 1 + the number of successes at probability 1/4. */
static int zsl_random_level(void)
{
	uint64_t r = zrand();
	int level = 1;

	while (level < ZSL_MAXLEVEL && (r & 3) == 0) {
		level++;
		r >>= 2;
	}
	return level;
}

static struct zsl_node *zsl_node_new(int nlevel, double score, const char *m, size_t len)
{
	struct zsl_node *x = xmalloc(sizeof(*x) + (size_t)nlevel * sizeof(x->level[0]) + len);

	x->nlevel = nlevel;
	x->score = score;
	x->len = len;
	x->backward = NULL;
	if (len)
		memcpy(node_member(x), m, len);
	x->dnode.hash = member_hash(m, len);
	return x;
}

static struct zsl *zsl_new(void)
{
	struct zsl *zsl = xmalloc(sizeof(*zsl));

	dict_init(&zsl->dict, &zsl_dict_type);
	zsl->header = zsl_node_new(ZSL_MAXLEVEL, 0, NULL, 0);
	for (int i = 0; i < ZSL_MAXLEVEL; i++) {
		zsl->header->level[i].forward = NULL;
		zsl->header->level[i].span = 0;
	}
	zsl->tail = NULL;
	zsl->length = 0;
	zsl->level = 1;
	return zsl;
}

static void zsl_free(struct zsl *zsl)
{
	struct zsl_node *x = zsl->header->level[0].forward, *next;

	for (; x; x = next) {
		next = x->level[0].forward;
		xfree(x);
	}
	xfree(zsl->header);
	dict_destroy(&zsl->dict);
	xfree(zsl);
}

/* Fills update[i] with the last node at level i ordered before (score, m),
 * and rank[i] (if not NULL) with its rank (header: 0). */
static void zsl_find_update(const struct zsl *zsl, double score, const char *m, size_t len,
			    struct zsl_node **update, size_t *rank)
{
	struct zsl_node *x = zsl->header;
	size_t r = 0;

	for (int i = zsl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && node_cmp(x->level[i].forward, score, m, len) < 0) {
			r += x->level[i].span;
			x = x->level[i].forward;
		}
		update[i] = x;
		if (rank)
			rank[i] = r;
	}
}

/* Links node x (not in the list) at the place of its score and member. */
static void zsl_link(struct zsl *zsl, struct zsl_node *x)
{
	struct zsl_node *update[ZSL_MAXLEVEL];
	size_t rank[ZSL_MAXLEVEL];
	int i;

	zsl_find_update(zsl, x->score, node_member(x), x->len, update, rank);
	if (x->nlevel > zsl->level) {
		for (i = zsl->level; i < x->nlevel; i++) {
			rank[i] = 0;
			update[i] = zsl->header;
			update[i]->level[i].forward = NULL;
			update[i]->level[i].span = zsl->length;
		}
		zsl->level = x->nlevel;
	}
	for (i = 0; i < x->nlevel; i++) {
		/* rank[0] - rank[i] nodes lie between update[i] and x. */
		x->level[i].forward = update[i]->level[i].forward;
		update[i]->level[i].forward = x;
		x->level[i].span = update[i]->level[i].span - (rank[0] - rank[i]);
		update[i]->level[i].span = rank[0] - rank[i] + 1;
	}
	for (; i < zsl->level; i++)
		update[i]->level[i].span++;
	x->backward = update[0] == zsl->header ? NULL : update[0];
	if (x->level[0].forward)
		x->level[0].forward->backward = x;
	else
		zsl->tail = x;
	zsl->length++;
}

/* Unlinks x given the nodes before it at every level (zsl_find_update). */
static void zsl_unlink_at(struct zsl *zsl, struct zsl_node *x, struct zsl_node **update)
{
	for (int i = 0; i < zsl->level; i++) {
		if (update[i]->level[i].forward == x) {
			update[i]->level[i].span += x->level[i].span - 1;
			update[i]->level[i].forward = x->level[i].forward;
		} else {
			update[i]->level[i].span--;
		}
	}
	if (x->level[0].forward)
		x->level[0].forward->backward = x->backward;
	else
		zsl->tail = x->backward;
	while (zsl->level > 1 && !zsl->header->level[zsl->level - 1].forward)
		zsl->level--;
	zsl->length--;
}

static void zsl_unlink(struct zsl *zsl, struct zsl_node *x)
{
	struct zsl_node *update[ZSL_MAXLEVEL];

	zsl_find_update(zsl, x->score, node_member(x), x->len, update, NULL);
	zsl_unlink_at(zsl, x, update);
}

static struct zsl_node *zsl_lookup(const struct zsl *zsl, const char *m, size_t len)
{
	struct dict_node *n = dict_find(&zsl->dict, m, len, member_hash(m, len));

	return n ? node_of(n) : NULL;
}

/* Adds (score, m), which must be absent. */
static void zsl_add(struct zsl *zsl, double score, const char *m, size_t len)
{
	struct zsl_node *x = zsl_node_new(zsl_random_level(), score, m, len);

	zsl_link(zsl, x);
	dict_insert(&zsl->dict, &x->dnode);
}

/* Gives x a new score, moving it only if its neighbours no longer frame it. */
static void zsl_update_score(struct zsl *zsl, struct zsl_node *x, double score)
{
	const char *m = node_member(x);
	struct zsl_node *next = x->level[0].forward;

	if ((!x->backward || node_cmp(x->backward, score, m, x->len) < 0) &&
	    (!next || node_cmp(next, score, m, x->len) > 0)) {
		x->score = score;
		return;
	}
	zsl_unlink(zsl, x);
	x->score = score;
	zsl_link(zsl, x);
}

static void zsl_delete_node(struct zsl *zsl, struct zsl_node *x)
{
	zsl_unlink(zsl, x);
	dict_remove(&zsl->dict, &x->dnode);
	dict_maybe_shrink(&zsl->dict);
	xfree(x);
}

/* The 1-based rank of x. */
static size_t zsl_rank_of(const struct zsl *zsl, const struct zsl_node *target)
{
	const char *m = node_member(target);
	struct zsl_node *x = zsl->header;
	size_t rank = 0;

	for (int i = zsl->level - 1; i >= 0; i--) {
		while (x->level[i].forward &&
		       node_cmp(x->level[i].forward, target->score, m, target->len) <= 0) {
			rank += x->level[i].span;
			x = x->level[i].forward;
		}
		if (x == target)
			return rank;
	}
	xkv_assert(!"node not in its skiplist");
	return 0;
}

/* The node of 1-based rank r, or NULL. */
static struct zsl_node *zsl_by_rank(const struct zsl *zsl, size_t r)
{
	struct zsl_node *x = zsl->header;
	size_t traversed = 0;

	if (r == 0 || r > zsl->length)
		return NULL;
	for (int i = zsl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && traversed + x->level[i].span <= r) {
			traversed += x->level[i].span;
			x = x->level[i].forward;
		}
		if (traversed == r)
			return x;
	}
	return NULL;
}

/* How many nodes from the first one the (prefix) predicate holds for, found
 * by descending as for an ordered search. */
static size_t zsl_count_while(const struct zsl *zsl, elem_pred *pred, const void *arg)
{
	struct zsl_node *x = zsl->header;
	struct zset_elem el;
	size_t n = 0;

	for (int i = zsl->level - 1; i >= 0; i--) {
		while (x->level[i].forward) {
			node_elem(x->level[i].forward, &el);
			if (!pred(&el, arg))
				break;
			n += x->level[i].span;
			x = x->level[i].forward;
		}
	}
	return n;
}

/* Removes the nodes of 0-based ranks [first, end). */
static size_t zsl_delete_ranks(struct zsl *zsl, size_t first, size_t end)
{
	struct zsl_node *update[ZSL_MAXLEVEL], *x = zsl->header, *next;
	size_t traversed = 0, n = 0;

	if (end > zsl->length)
		end = zsl->length;
	if (first >= end)
		return 0;
	for (int i = zsl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && traversed + x->level[i].span <= first) {
			traversed += x->level[i].span;
			x = x->level[i].forward;
		}
		update[i] = x;
	}
	/* update[] keeps framing the next node as each one goes. */
	for (x = x->level[0].forward; x && n < end - first; x = next, n++) {
		next = x->level[0].forward;
		zsl_unlink_at(zsl, x, update);
		dict_remove(&zsl->dict, &x->dnode);
		xfree(x);
	}
	dict_maybe_shrink(&zsl->dict);
	return n;
}

/* ---- conversion and the generic operations --------------------------------------------------- */

static bool packed_fits(size_t count, size_t maxlen)
{
	long long entries = config.zset_max_listpack_entries;
	long long value = config.zset_max_listpack_value;

	return entries > 0 && count <= (unsigned long long)entries &&
	       maxlen <= (unsigned long long)value && maxlen <= UINT32_MAX;
}

struct obj zset_new(size_t count, size_t maxlen)
{
	struct obj o = { .type = OBJ_ZSET };

	if (packed_fits(count, maxlen)) {
		o.enc = ENC_LISTPACK;
		o.ptr = zp_new();
	} else {
		o.enc = ENC_SKIPLIST;
		o.ptr = zsl_new();
	}
	return o;
}

static void to_skiplist(struct obj *o)
{
	struct zpack *zp = o->ptr;
	struct zsl *zsl = zsl_new();
	struct zset_elem el;

	for (const unsigned char *p = zp->count ? zp->data : NULL; p; p = zp_next(zp, p)) {
		zp_read(p, &el);
		zsl_add(zsl, el.score, el.m, el.len);
	}
	xfree(zp);
	o->ptr = zsl;
	o->enc = ENC_SKIPLIST;
}

size_t zset_len(const struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		return ((const struct zpack *)o->ptr)->count;
	return ((const struct zsl *)o->ptr)->length;
}

/* Finds m: its score, and its 0-based rank if rank is not NULL. */
static bool zset_find(const struct obj *o, const char *m, size_t len, double *score, size_t *rank)
{
	const struct zsl_node *x;
	const unsigned char *p;
	struct zset_elem el;

	if (o->enc == ENC_LISTPACK) {
		p = zp_find(o->ptr, m, len, rank);
		if (!p)
			return false;
		zp_read(p, &el);
		*score = el.score;
		return true;
	}
	x = zsl_lookup(o->ptr, m, len);
	if (!x)
		return false;
	*score = x->score;
	if (rank)
		*rank = zsl_rank_of(o->ptr, x) - 1;
	return true;
}

bool zset_score(const struct obj *o, const char *m, size_t len, double *score)
{
	return zset_find(o, m, len, score, NULL);
}

long long zset_rank(const struct obj *o, const char *m, size_t len, double *score)
{
	double s;
	size_t rank;

	if (!zset_find(o, m, len, &s, &rank))
		return -1;
	if (score)
		*score = s;
	return (long long)rank;
}

/* The new score of an existing member under flags, or why there is none. */
static enum zadd_result zadd_existing(double cur, double *score, unsigned flags)
{
	if (flags & ZADD_NX)
		return ZADD_SKIPPED;
	if (flags & ZADD_INCR) {
		*score += cur;
		if (*score != *score)
			return ZADD_NAN;
	}
	if (((flags & ZADD_LT) && *score >= cur) || ((flags & ZADD_GT) && *score <= cur))
		return ZADD_SKIPPED;
	return *score == cur ? ZADD_SAME : ZADD_UPDATED;
}

/* Moves the packed entry at p, whose member is m (len bytes), to its place
 * for a new score. */
static struct zpack *zp_rescore(struct zpack *zp, const unsigned char *p, double score,
				const char *m, size_t len)
{
	size_t off = (size_t)(p - zp->data), size = zp_size_at(p);
	char buf[64], *tmp = len <= sizeof(buf) ? buf : xmalloc(len);

	/* m may point into the entry itself, which is overwritten. */
	memcpy(tmp, m, len);
	memmove(zp->data + off, p + size, zp->used - off - size);
	zp->used -= size;
	zp->count--;
	zp = zp_insert(zp, score, tmp, len);
	if (tmp != buf)
		xfree(tmp);
	return zp;
}

/* zset_add on a packed set; ZADD_NAN+1 when it must become a skiplist. */
#define ZADD_CONVERT (ZADD_NAN + 1)
static int zp_add(struct obj *o, double *score, const char *m, size_t len, unsigned flags)
{
	struct zpack *zp = o->ptr;
	const unsigned char *p = zp_find(zp, m, len, NULL);
	enum zadd_result res;
	struct zset_elem el;

	if (p) {
		zp_read(p, &el);
		res = zadd_existing(el.score, score, flags);
		if (res == ZADD_UPDATED)
			o->ptr = zp_rescore(zp, p, *score, m, len);
		return res;
	}
	if (flags & ZADD_XX)
		return ZADD_SKIPPED;
	if (!packed_fits(zp->count + 1, len))
		return ZADD_CONVERT;
	o->ptr = zp_insert(zp, *score, m, len);
	return ZADD_ADDED;
}

static enum zadd_result zsl_zadd(struct zsl *zsl, double *score, const char *m, size_t len,
				 unsigned flags)
{
	struct zsl_node *x = zsl_lookup(zsl, m, len);
	enum zadd_result res;

	if (x) {
		res = zadd_existing(x->score, score, flags);
		if (res == ZADD_UPDATED)
			zsl_update_score(zsl, x, *score);
		return res;
	}
	if (flags & ZADD_XX)
		return ZADD_SKIPPED;
	zsl_add(zsl, *score, m, len);
	return ZADD_ADDED;
}

enum zadd_result zset_add(struct obj *o, double score, const char *m, size_t len, unsigned flags,
			  double *newscore)
{
	int res = ZADD_CONVERT;

	if (o->enc == ENC_LISTPACK)
		res = zp_add(o, &score, m, len, flags);
	if (res == ZADD_CONVERT) {
		if (o->enc == ENC_LISTPACK)
			to_skiplist(o);
		res = zsl_zadd(o->ptr, &score, m, len, flags);
	}
	if (newscore && res <= ZADD_SAME)
		*newscore = score;
	return res;
}

bool zset_del(struct obj *o, const char *m, size_t len)
{
	struct zsl_node *x;
	size_t i;

	if (o->enc == ENC_LISTPACK) {
		if (!zp_find(o->ptr, m, len, &i))
			return false;
		o->ptr = zp_delete_range(o->ptr, i, i + 1);
		return true;
	}
	x = zsl_lookup(o->ptr, m, len);
	if (!x)
		return false;
	zsl_delete_node(o->ptr, x);
	return true;
}

size_t zset_del_ranks(struct obj *o, size_t first, size_t end)
{
	size_t n = zset_len(o);

	if (end > n)
		end = n;
	if (first >= end)
		return 0;
	if (o->enc == ENC_LISTPACK) {
		o->ptr = zp_delete_range(o->ptr, first, end);
		return end - first;
	}
	return zsl_delete_ranks(o->ptr, first, end);
}

/* The span of the elements past the `before` prefix and within `within`. */
static void span_of(const struct obj *o, elem_pred *before, elem_pred *within, const void *arg1,
		    const void *arg2, size_t *first, size_t *end)
{
	if (o->enc == ENC_LISTPACK) {
		*first = zp_count_while(o->ptr, 0, before, arg1);
		*end = zp_count_while(o->ptr, *first, within, arg2);
	} else {
		*first = zsl_count_while(o->ptr, before, arg1);
		*end = zsl_count_while(o->ptr, within, arg2);
		if (*end < *first)
			*end = *first;
	}
}

void zset_score_span(const struct obj *o, const struct zscore_range *r, size_t *first, size_t *end)
{
	span_of(o, below_min_score, within_max_score, r, r, first, end);
}

void zset_lex_span(const struct obj *o, const struct zlex_range *r, size_t *first, size_t *end)
{
	span_of(o, below_min_lex, within_max_lex, &r->min, &r->max, first, end);
}

/* ---- iteration and scanning ------------------------------------------------------------------ */

void zset_iter_init(struct zset_iter *it, const struct obj *o, size_t rank, bool rev)
{
	it->o = o;
	it->rev = rev;
	if (o->enc == ENC_LISTPACK)
		it->pos = zp_seek(o->ptr, rank);
	else
		it->pos = zsl_by_rank(o->ptr, rank + 1);
}

bool zset_iter_next(struct zset_iter *it, struct zset_elem *out)
{
	if (!it->pos)
		return false;
	if (it->o->enc == ENC_LISTPACK) {
		const struct zpack *zp = it->o->ptr;

		zp_read(it->pos, out);
		it->pos = it->rev ? zp_prev(zp, it->pos) : zp_next(zp, it->pos);
	} else {
		const struct zsl_node *x = it->pos;

		node_elem(x, out);
		it->pos = it->rev ? x->backward : x->level[0].forward;
		/* Range walks of big sets (GEOSEARCH, ZRANGEBYSCORE) miss the
		 * cache on every node: start the next one's load while the
		 * caller works on this one. */
		if (it->pos)
			__builtin_prefetch(it->pos);
	}
	return true;
}

bool zset_at(const struct obj *o, size_t rank, struct zset_elem *out)
{
	struct zset_iter it;

	zset_iter_init(&it, o, rank, false);
	return zset_iter_next(&it, out);
}

struct scan_ctx {
	zset_scan_fn *fn;
	void *ctx;
	size_t seen;
};

static void scan_node(void *arg, struct dict_node *n)
{
	struct scan_ctx *sc = arg;
	struct zset_elem el;

	node_elem(node_of(n), &el);
	sc->fn(sc->ctx, &el);
	sc->seen++;
}

uint64_t zset_scan(const struct obj *o, uint64_t cursor, size_t count, zset_scan_fn *fn, void *ctx)
{
	struct scan_ctx sc = { .fn = fn, .ctx = ctx };
	struct zsl *zsl = o->ptr;
	size_t budget;

	if (o->enc == ENC_LISTPACK) {
		struct zset_iter it;
		struct zset_elem el;

		zset_iter_init(&it, o, 0, false);
		while (zset_iter_next(&it, &el))
			fn(ctx, &el);
		return 0;
	}
	if (!zsl->length)
		return 0;
	/* As Redis: at most about ten buckets per element asked for, so a
	 * sparse table cannot make one call long. */
	budget = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
	do
		cursor = dict_scan(&zsl->dict, cursor, scan_node, &sc);
	while (cursor && budget-- && sc.seen < count);
	return cursor;
}

/* ---- object operations ----------------------------------------------------------------------- */

static void zset_free(struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		xfree(o->ptr);
	else
		zsl_free(o->ptr);
}

static struct obj zset_dup(const struct obj *o)
{
	struct obj copy = *o;

	if (o->enc == ENC_LISTPACK) {
		const struct zpack *zp = o->ptr;
		size_t size = sizeof(*zp) + zp->used;

		copy.ptr = xmalloc(size);
		memcpy(copy.ptr, zp, size);
	} else {
		const struct zsl *zsl = o->ptr;
		struct zsl *dst = zsl_new();

		for (struct zsl_node *x = zsl->header->level[0].forward; x; x = x->level[0].forward)
			zsl_add(dst, x->score, node_member(x), x->len);
		copy.ptr = dst;
	}
	return copy;
}

static size_t zset_mem(const struct obj *o)
{
	const struct zsl *zsl = o->ptr;
	size_t n;

	if (o->enc == ENC_LISTPACK)
		return xusable(o->ptr);
	n = xusable(o->ptr) + xusable(zsl->header) + dict_mem(&zsl->dict);
	for (struct zsl_node *x = zsl->header->level[0].forward; x; x = x->level[0].forward)
		n += xusable(x);
	return n;
}

/* A skiplist frees a node per member. */
static size_t zset_free_effort(const struct obj *o)
{
	return o->enc == ENC_SKIPLIST ? ((const struct zsl *)o->ptr)->length : 1;
}

static const struct obj_ops zset_ops = {
	.free = zset_free,
	.dup = zset_dup,
	.mem = zset_mem,
	.free_effort = zset_free_effort,
	.items = zset_len,
};

static void __attribute__((constructor)) zset_register(void)
{
	obj_register(OBJ_ZSET, &zset_ops);
}

/* ---- self-check ------------------------------------------------------------------------------ */

static int zp_check(const struct zpack *zp)
{
	const unsigned char *p = zp->count ? zp->data : NULL, *last = NULL;
	struct zset_elem el, prev;
	size_t n = 0;

	for (; p; last = p, p = zp_next(zp, p), n++) {
		zp_read(p, &el);
		if (zp_size_at(p) != zp_encoded_size(el.score, el.len))
			return -__LINE__;
		if (last && elem_cmp(prev.score, prev.m, prev.len, el.score, el.m, el.len) >= 0)
			return -__LINE__;
		if (zp_prev(zp, p) != last)
			return -__LINE__;
		prev = el;
	}
	if (n != zp->count || (last && last + zp_size_at(last) != zp_end(zp)))
		return -__LINE__;
	return 0;
}

static int zsl_check(const struct zsl *zsl)
{
	const struct zsl_node *x, *prev = NULL;
	size_t rank = 0;

	if (zsl->dict.count != zsl->length || zsl->level < 1 || zsl->level > ZSL_MAXLEVEL)
		return -__LINE__;
	for (x = zsl->header->level[0].forward; x; prev = x, x = x->level[0].forward) {
		rank++;
		if (x->backward != prev || zsl_lookup(zsl, node_member(x), x->len) != x)
			return -__LINE__;
		if (prev && node_cmp(prev, x->score, node_member(x), x->len) >= 0)
			return -__LINE__;
		if (x->nlevel > zsl->level || x->level[0].span != 1 - !x->level[0].forward)
			return -__LINE__;
	}
	if (rank != zsl->length || zsl->tail != prev)
		return -__LINE__;
	if (zsl->level > 1 && !zsl->header->level[zsl->level - 1].forward)
		return -__LINE__;
	/* At every level, each link's span is the number of level-0 steps it
	 * jumps, and a last link spans to the end. */
	for (int i = 1; i < zsl->level; i++) {
		const struct zsl_node *y = zsl->header;

		rank = 0;
		for (x = zsl->header; x->level[i].forward; x = x->level[i].forward) {
			for (size_t s = 0; s < x->level[i].span && y; s++)
				y = y->level[0].forward;
			if (y != x->level[i].forward || y->nlevel <= i)
				return -__LINE__;
			rank += x->level[i].span;
		}
		if (rank + x->level[i].span != zsl->length)
			return -__LINE__;
	}
	return 0;
}

int zset_check(const struct obj *o)
{
	if (o->type != OBJ_ZSET)
		return -__LINE__;
	if (o->enc == ENC_LISTPACK)
		return zp_check(o->ptr);
	if (o->enc == ENC_SKIPLIST)
		return zsl_check(o->ptr);
	return -__LINE__;
}
