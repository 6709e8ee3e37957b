// SPDX-License-Identifier: BSD-3-Clause
/*
 * t_set: the set type's three encodings and the operations on them (see
 * t_set.h). The command handlers are in cmd/set.c.
 *
 * Conversions follow Redis 7.2, so OBJECT ENCODING would answer as it does:
 *  - an intset takes a non-integer by becoming a listpack if the result fits
 *    one (fewer than set-max-listpack-entries members, and the new member and
 *    the longest integer within set-max-listpack-value bytes), else a hash
 *    table; past set-max-intset-entries integers it becomes a hash table;
 *  - a listpack becomes a hash table when an addition would pass either of
 *    its limits.
 * Nothing converts back: a set that shrank keeps its encoding.
 *
 * No locking here: a set is part of its key's value, protected by the key's
 * shard lock, which every caller holds.
 */
#include <string.h>
#include <sys/random.h>
#include <xxhash.h>

#include "config.h"
#include "mem.h"
#include "t_set.h"
#include "varint.h"
#include "util.h"

/* ---- intset -------------------------------------------------------------------------------- */

/* Redis also caps intsets there, whatever set-max-intset-entries says. */
#define INTSET_MAX_ENTRIES (1u << 30)

/* Sorted distinct integers, all stored in the width of the widest. */
struct intset {
	uint32_t width; /* bytes per member: 2, 4 or 8 */
	uint32_t count;
	unsigned char data[]; /* 8-byte aligned: the header is 8 bytes */
};

static int64_t is_get_w(const unsigned char *data, uint32_t width, uint32_t i)
{
	int16_t v16;
	int32_t v32;
	int64_t v64;

	switch (width) {
	case 2:
		memcpy(&v16, data + 2 * (size_t)i, 2);
		return v16;
	case 4:
		memcpy(&v32, data + 4 * (size_t)i, 4);
		return v32;
	default:
		memcpy(&v64, data + 8 * (size_t)i, 8);
		return v64;
	}
}

static void is_put_w(unsigned char *data, uint32_t width, uint32_t i, int64_t v)
{
	int16_t v16 = (int16_t)v;
	int32_t v32 = (int32_t)v;

	switch (width) {
	case 2:
		memcpy(data + 2 * (size_t)i, &v16, 2);
		break;
	case 4:
		memcpy(data + 4 * (size_t)i, &v32, 4);
		break;
	default:
		memcpy(data + 8 * (size_t)i, &v, 8);
		break;
	}
}

static int64_t is_get(const struct intset *is, uint32_t i)
{
	return is_get_w(is->data, is->width, i);
}

static uint32_t is_width_for(int64_t v)
{
	if (v >= INT16_MIN && v <= INT16_MAX)
		return 2;
	if (v >= INT32_MIN && v <= INT32_MAX)
		return 4;
	return 8;
}

static size_t is_alloc_size(uint32_t width, uint32_t count)
{
	return sizeof(struct intset) + (size_t)width * count;
}

static struct intset *is_new(void)
{
	struct intset *is = xmalloc(sizeof(*is));

	is->width = 2;
	is->count = 0;
	return is;
}

/* True if v is a member; *pos is its index, or where it would be inserted. */
static bool is_search(const struct intset *is, int64_t v, uint32_t *pos)
{
	uint32_t lo = 0, hi = is->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int64_t m = is_get(is, mid);

		if (m == v) {
			*pos = mid;
			return true;
		}
		if (m < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return false;
}

/* Adds v, which needs a wider encoding than is has: v is then smaller or
 * larger than every member, so it goes at one end. Members are moved from
 * the last down, because each one's new place is at or after its old one. */
static struct intset *is_upgrade_add(struct intset *is, int64_t v)
{
	uint32_t ow = is->width, nw = is_width_for(v), front = v < 0;

	is = xrealloc(is, is_alloc_size(nw, is->count + 1));
	for (uint32_t i = is->count; i-- > 0;)
		is_put_w(is->data, nw, i + front, is_get_w(is->data, ow, i));
	is->width = nw;
	is_put_w(is->data, nw, front ? 0 : is->count, v);
	is->count++;
	return is;
}

/* Adds v; *isp may move. Returns false if v was already a member. */
static bool is_add(struct intset **isp, int64_t v)
{
	struct intset *is = *isp;
	uint32_t pos, w = is->width;

	if (is_width_for(v) > w) {
		*isp = is_upgrade_add(is, v);
		return true;
	}
	if (is_search(is, v, &pos))
		return false;
	is = xrealloc(is, is_alloc_size(w, is->count + 1));
	memmove(is->data + (size_t)(pos + 1) * w, is->data + (size_t)pos * w,
		(size_t)(is->count - pos) * w);
	is_put_w(is->data, w, pos, v);
	is->count++;
	*isp = is;
	return true;
}

static struct intset *is_remove_at(struct intset *is, uint32_t pos)
{
	uint32_t w = is->width;

	memmove(is->data + (size_t)pos * w, is->data + (size_t)(pos + 1) * w,
		(size_t)(is->count - pos - 1) * w);
	is->count--;
	return xrealloc(is, is_alloc_size(w, is->count));
}

/* ---- listpack ------------------------------------------------------------------------------ */

/* Past this many bytes a listpack becomes a hash table whatever the
 * directives say, as Redis's lpSafeToAdd does. */
#define LP_MAX_BYTES (1u << 30)

/* Members one after another, each a varint length (7 bits a byte, low
 * first, the high bit set on all but the last byte) and then its bytes. */
struct lpset {
	uint32_t bytes; /* of data[]; at most LP_MAX_BYTES */
	uint32_t count; /* at most bytes: a member takes one byte or more */
	unsigned char data[];
};
_Static_assert(sizeof(struct lpset) == 8, "a set listpack's header is one word");

static struct lpset *lp_new(void)
{
	struct lpset *lp = xmalloc(sizeof(*lp));

	lp->bytes = 0;
	lp->count = 0;
	return lp;
}

/* The member at byte offset off; returns the offset of the next one. */
static size_t lp_entry(const struct lpset *lp, size_t off, const char **p, size_t *len)
{
	uint64_t n;

	off += varint_get(lp->data + off, &n);
	*len = (size_t)n;
	*p = (const char *)lp->data + off;
	return off + *len;
}

/* The offset of member p, or SIZE_MAX. */
static size_t lp_find(const struct lpset *lp, const char *p, size_t len)
{
	size_t off = 0;

	while (off < lp->bytes) {
		const char *m;
		size_t mlen, next = lp_entry(lp, off, &m, &mlen);

		if (mlen == len && !memcmp(m, p, len))
			return off;
		off = next;
	}
	return SIZE_MAX;
}

/* The offset of the i-th member (i < count). */
static size_t lp_offset_of(const struct lpset *lp, uint32_t i)
{
	size_t off = 0;

	while (i--) {
		const char *m;
		size_t mlen;

		off = lp_entry(lp, off, &m, &mlen);
	}
	return off;
}

static struct lpset *lp_append(struct lpset *lp, const char *p, size_t len)
{
	size_t add = varint_len(len) + len, off = lp->bytes;

	lp = xrealloc(lp, sizeof(*lp) + lp->bytes + add);
	off += varint_put(lp->data + off, len);
	memcpy(lp->data + off, p, len);
	lp->bytes += (uint32_t)add;
	lp->count++;
	return lp;
}

static struct lpset *lp_delete(struct lpset *lp, size_t off)
{
	const char *m;
	size_t mlen, next = lp_entry(lp, off, &m, &mlen);

	memmove(lp->data + off, lp->data + next, lp->bytes - next);
	lp->bytes -= (uint32_t)(next - off);
	lp->count--;
	return xrealloc(lp, sizeof(*lp) + lp->bytes);
}

/* ---- hash table ---------------------------------------------------------------------------- */

struct set_node {
	struct dict_node node;
	size_t len;
	char s[];
};

#define set_node_of(n)                                                                             \
	((struct set_node *)((char *)(n) - __builtin_offsetof(struct set_node, node)))

struct htset {
	struct dict d;
	size_t node_mem; /* usable bytes of the nodes, for MEMORY USAGE in O(1) */
};

/* Seeded per process, so that no client can choose members that all land in
 * one chain. Written once by the constructor. */
static uint64_t hash_seed;

static uint64_t member_hash(const char *p, size_t len)
{
	return XXH3_64bits_withSeed(p, len, hash_seed);
}

static bool node_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct set_node *sn = set_node_of(n);

	return sn->len == len && !memcmp(sn->s, key, len);
}

static const struct dict_type set_dict_type = { .key_equal = node_equal };

static struct htset *ht_new(void)
{
	struct htset *h = xmalloc(sizeof(*h));

	dict_init(&h->d, &set_dict_type);
	h->node_mem = 0;
	return h;
}

/* Inserts a copy of p, known to be absent, whose hash is hash. */
static void ht_insert(struct htset *h, const char *p, size_t len, uint64_t hash)
{
	struct set_node *sn = xmalloc(sizeof(*sn) + len);

	sn->node.hash = hash;
	sn->len = len;
	memcpy(sn->s, p, len);
	h->node_mem += xusable(sn);
	dict_insert(&h->d, &sn->node);
}

static bool ht_add(struct htset *h, const char *p, size_t len)
{
	uint64_t hash = member_hash(p, len);

	if (dict_find(&h->d, p, len, hash))
		return false;
	ht_insert(h, p, len, hash);
	return true;
}

static struct set_node *ht_find(const struct htset *h, const char *p, size_t len)
{
	struct dict_node *n = dict_find(&h->d, p, len, member_hash(p, len));

	return n ? set_node_of(n) : NULL;
}

static void ht_remove_node(struct htset *h, struct set_node *sn)
{
	dict_remove(&h->d, &sn->node);
	h->node_mem -= xusable(sn);
	xfree(sn);
	dict_maybe_shrink(&h->d);
}

static void ht_free_node(struct dict_node *n)
{
	xfree(set_node_of(n));
}

/* A random member of a non-empty table, fair (dict_random_fair). */
static struct set_node *ht_random(const struct htset *h)
{
	return set_node_of(dict_random_fair(&h->d, set_rand64));
}

/* ---- the set value ------------------------------------------------------------------------- */

static uint64_t intset_limit(void)
{
	uint64_t max = (uint64_t)config.set_max_intset_entries;

	return max < INTSET_MAX_ENTRIES ? max : INTSET_MAX_ENTRIES;
}

struct obj set_new(const char *first, size_t len, size_t size_hint)
{
	struct obj o = { .type = OBJ_SET };
	long long v;

	if (!first || (str_to_ll(first, len, &v) && size_hint <= intset_limit())) {
		o.enc = ENC_INTSET;
		o.ptr = is_new();
	} else if (size_hint <= (unsigned long long)config.set_max_listpack_entries) {
		o.enc = ENC_LISTPACK;
		o.ptr = lp_new();
	} else {
		o.enc = ENC_HASHTABLE;
		o.ptr = ht_new();
	}
	return o;
}

size_t set_size(const struct obj *o)
{
	switch (o->enc) {
	case ENC_INTSET:
		return ((const struct intset *)o->ptr)->count;
	case ENC_LISTPACK:
		return ((const struct lpset *)o->ptr)->count;
	default:
		return ((const struct htset *)o->ptr)->d.count;
	}
}

/* Frees the storage of o's current encoding. */
static void set_free_storage(struct obj *o)
{
	if (o->enc == ENC_HASHTABLE) {
		struct htset *h = o->ptr;

		dict_clear(&h->d, ht_free_node);
		xfree(h);
	} else {
		xfree(o->ptr);
	}
	o->ptr = NULL;
}

static void convert_to_hashtable(struct obj *o)
{
	struct htset *h = ht_new();
	struct set_iter it;
	const char *p;
	size_t len;

	set_iter_init(&it, o);
	while (set_iter_next(&it, &p, &len))
		ht_insert(h, p, len, member_hash(p, len));
	set_free_storage(o);
	o->ptr = h;
	o->enc = ENC_HASHTABLE;
}

static void convert_intset_to_listpack(struct obj *o)
{
	struct intset *is = o->ptr;
	struct lpset *lp = lp_new();
	char buf[LL_STR_SIZE + 1];

	for (uint32_t i = 0; i < is->count; i++)
		lp = lp_append(lp, buf, (size_t)ll_to_str(buf, is_get(is, i)));
	xfree(is);
	o->ptr = lp;
	o->enc = ENC_LISTPACK;
}

/* Would the intset and the non-integer member of len bytes fit a listpack? */
static bool intset_fits_listpack(const struct intset *is, size_t len)
{
	char buf[LL_STR_SIZE + 1];
	size_t longest = 0;

	if (is->count >= (unsigned long long)config.set_max_listpack_entries ||
	    len > (unsigned long long)config.set_max_listpack_value)
		return false;
	/* The longest integer is the smallest or the largest. */
	if (is->count) {
		size_t a = (size_t)ll_to_str(buf, is_get(is, 0));
		size_t b = (size_t)ll_to_str(buf, is_get(is, is->count - 1));

		longest = a > b ? a : b;
	}
	if (longest > (unsigned long long)config.set_max_listpack_value)
		return false;
	return (longest + 1) * is->count + len + varint_len(len) <= LP_MAX_BYTES;
}

static bool listpack_takes(const struct lpset *lp, size_t len)
{
	return lp->count < (unsigned long long)config.set_max_listpack_entries &&
	       len <= (unsigned long long)config.set_max_listpack_value &&
	       lp->bytes + len + varint_len(len) <= LP_MAX_BYTES;
}

int set_add(struct obj *o, const char *p, size_t len)
{
	long long v;

	switch (o->enc) {
	case ENC_INTSET:
		if (str_to_ll(p, len, &v)) {
			struct intset **isp = (struct intset **)&o->ptr;

			if (!is_add(isp, v))
				return 0;
			if ((*isp)->count > intset_limit())
				convert_to_hashtable(o);
			return 1;
		}
		if (intset_fits_listpack(o->ptr, len))
			convert_intset_to_listpack(o);
		else
			convert_to_hashtable(o);
		/* A non-integer cannot be a member yet: add it below. */
		return set_add(o, p, len);
	case ENC_LISTPACK:
		if (lp_find(o->ptr, p, len) != SIZE_MAX)
			return 0;
		if (listpack_takes(o->ptr, len)) {
			o->ptr = lp_append(o->ptr, p, len);
			return 1;
		}
		convert_to_hashtable(o);
		ht_insert(o->ptr, p, len, member_hash(p, len));
		return 1;
	default:
		return ht_add(o->ptr, p, len);
	}
}

int set_remove(struct obj *o, const char *p, size_t len)
{
	long long v;
	uint32_t pos;
	size_t off;
	struct set_node *sn;

	switch (o->enc) {
	case ENC_INTSET:
		if (!str_to_ll(p, len, &v) || !is_search(o->ptr, v, &pos))
			return 0;
		o->ptr = is_remove_at(o->ptr, pos);
		return 1;
	case ENC_LISTPACK:
		off = lp_find(o->ptr, p, len);
		if (off == SIZE_MAX)
			return 0;
		o->ptr = lp_delete(o->ptr, off);
		return 1;
	default:
		sn = ht_find(o->ptr, p, len);
		if (!sn)
			return 0;
		ht_remove_node(o->ptr, sn);
		return 1;
	}
}

bool set_contains(const struct obj *o, const char *p, size_t len)
{
	long long v;
	uint32_t pos;

	switch (o->enc) {
	case ENC_INTSET:
		return str_to_ll(p, len, &v) && is_search(o->ptr, v, &pos);
	case ENC_LISTPACK:
		return lp_find(o->ptr, p, len) != SIZE_MAX;
	default:
		return ht_find(o->ptr, p, len) != NULL;
	}
}

void set_iter_init(struct set_iter *it, const struct obj *o)
{
	it->o = o;
	it->pos = 0;
	it->bucket = 0;
	it->node = NULL;
}

bool set_iter_next(struct set_iter *it, const char **p, size_t *len)
{
	const struct intset *is;
	const struct lpset *lp;
	const struct dict *d;
	struct set_node *sn;

	switch (it->o->enc) {
	case ENC_INTSET:
		is = it->o->ptr;
		if (it->pos >= is->count)
			return false;
		*len = (size_t)ll_to_str(it->buf, is_get(is, (uint32_t)it->pos++));
		*p = it->buf;
		return true;
	case ENC_LISTPACK:
		lp = it->o->ptr;
		if (it->pos >= lp->bytes)
			return false;
		it->pos = lp_entry(lp, it->pos, p, len);
		return true;
	default:
		d = &((const struct htset *)it->o->ptr)->d;
		while (!it->node) {
			if (!d->table || it->bucket > d->mask)
				return false;
			it->node = d->table[it->bucket++];
		}
		sn = set_node_of(it->node);
		it->node = it->node->next;
		*p = sn->s;
		*len = sn->len;
		return true;
	}
}

/* ---- random members ------------------------------------------------------------------------ */

uint64_t set_rand64(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x9e3779b97f4a7c15ull;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dull;
}

/* A uniform number in [0, n), n > 0 (the modulo bias is below 2^-32 for any
 * set that fits in memory). */
static uint64_t rand_below(uint64_t n)
{
	return set_rand64() % n;
}

/*
 * Random access by index to a set's members, for commands that pick many:
 * an intset is indexed directly, a listpack through a table of its entries'
 * offsets, a hash table through an array of its nodes. Built in O(n).
 */
struct set_index {
	const struct obj *o;
	size_t n;
	size_t *off;		 /* listpack */
	struct set_node **nodes; /* hash table */
	char buf[LL_STR_SIZE + 1];
};

static void index_init(struct set_index *ix, const struct obj *o)
{
	ix->o = o;
	ix->n = set_size(o);
	ix->off = NULL;
	ix->nodes = NULL;
	if (o->enc == ENC_LISTPACK) {
		const struct lpset *lp = o->ptr;
		size_t off = 0;

		ix->off = xmalloc(ix->n * sizeof(*ix->off));
		for (size_t i = 0; i < ix->n; i++) {
			const char *m;
			size_t mlen;

			ix->off[i] = off;
			off = lp_entry(lp, off, &m, &mlen);
		}
	} else if (o->enc == ENC_HASHTABLE) {
		const struct dict *d = &((const struct htset *)o->ptr)->d;
		size_t k = 0;

		ix->nodes = xmalloc(ix->n * sizeof(*ix->nodes));
		for (uint64_t b = 0; d->table && b <= d->mask; b++)
			for (struct dict_node *n = d->table[b]; n; n = n->next)
				ix->nodes[k++] = set_node_of(n);
	}
}

static void index_get(struct set_index *ix, size_t i, const char **p, size_t *len)
{
	switch (ix->o->enc) {
	case ENC_INTSET:
		*len = (size_t)ll_to_str(ix->buf, is_get(ix->o->ptr, (uint32_t)i));
		*p = ix->buf;
		break;
	case ENC_LISTPACK:
		lp_entry(ix->o->ptr, ix->off[i], p, len);
		break;
	default:
		*p = ix->nodes[i]->s;
		*len = ix->nodes[i]->len;
		break;
	}
}

static void index_free(struct set_index *ix)
{
	xfree(ix->off);
	xfree(ix->nodes);
}

/* count distinct members of a large hash table, count well below its size:
 * random draws, with the members already given remembered in an open-
 * addressing table keyed by their hashes, so a draw is O(1) on average. */
static void ht_random_distinct(const struct htset *h, uint64_t count, set_member_fn *fn, void *ctx)
{
	uint64_t cap = 4, got = 0;
	struct set_node **seen;

	while (cap < count * 2)
		cap *= 2;
	seen = xcalloc(cap, sizeof(*seen));
	while (got < count) {
		struct set_node *sn = ht_random(h);
		uint64_t i = sn->node.hash & (cap - 1);

		while (seen[i] && seen[i] != sn)
			i = (i + 1) & (cap - 1);
		if (seen[i])
			continue;
		seen[i] = sn;
		got++;
		fn(ctx, sn->s, sn->len);
	}
	xfree(seen);
}

void set_random_members(const struct obj *o, uint64_t count, bool unique, set_member_fn *fn,
			void *ctx)
{
	uint64_t size = set_size(o);
	struct set_index ix;
	const char *p;
	size_t len;

	if (!size || !count)
		return;
	if (!unique && o->enc == ENC_HASHTABLE) {
		while (count--) {
			struct set_node *sn = ht_random(o->ptr);

			fn(ctx, sn->s, sn->len);
		}
		return;
	}
	if (!unique) {
		index_init(&ix, o);
		while (count--) {
			index_get(&ix, rand_below(size), &p, &len);
			fn(ctx, p, len);
		}
		index_free(&ix);
		return;
	}
	if (count >= size) {
		struct set_iter it;

		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			fn(ctx, p, len);
		return;
	}
	/* As Redis: a few members of a big table by sampling; otherwise a
	 * partial Fisher-Yates shuffle of an index of all of them. */
	if (o->enc == ENC_HASHTABLE && count * 3 <= size) {
		ht_random_distinct(o->ptr, count, fn, ctx);
		return;
	}
	index_init(&ix, o);
	if (o->enc == ENC_HASHTABLE) {
		for (uint64_t i = 0; i < count; i++) {
			uint64_t j = i + rand_below(size - i);
			struct set_node *t = ix.nodes[i];

			ix.nodes[i] = ix.nodes[j];
			ix.nodes[j] = t;
			fn(ctx, ix.nodes[i]->s, ix.nodes[i]->len);
		}
	} else {
		size_t *perm = xmalloc(size * sizeof(*perm));

		for (uint64_t i = 0; i < size; i++)
			perm[i] = i;
		for (uint64_t i = 0; i < count; i++) {
			uint64_t j = i + rand_below(size - i);
			size_t t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
			index_get(&ix, perm[i], &p, &len);
			fn(ctx, p, len);
		}
		xfree(perm);
	}
	index_free(&ix);
}

uint64_t set_pop_random(struct obj *o, uint64_t count, set_member_fn *fn, void *ctx)
{
	uint64_t size = set_size(o);

	if (count >= size) {
		/* Everything goes: hand it all over and leave an empty set of
		 * the same encoding, which the caller deletes. */
		struct set_iter it;
		const char *p;
		size_t len;
		enum obj_enc enc = o->enc;

		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			fn(ctx, p, len);
		set_free_storage(o);
		o->ptr = enc == ENC_INTSET     ? (void *)is_new()
			 : enc == ENC_LISTPACK ? (void *)lp_new()
					       : (void *)ht_new();
		return size;
	}
	for (uint64_t k = 0; k < count; k++) {
		char buf[LL_STR_SIZE + 1];
		const char *p;
		size_t len, off;
		uint32_t i;
		struct set_node *sn;

		switch (o->enc) {
		case ENC_INTSET:
			i = (uint32_t)rand_below(size - k);
			fn(ctx, buf, (size_t)ll_to_str(buf, is_get(o->ptr, i)));
			o->ptr = is_remove_at(o->ptr, i);
			break;
		case ENC_LISTPACK:
			off = lp_offset_of(o->ptr, (uint32_t)rand_below(size - k));
			lp_entry(o->ptr, off, &p, &len);
			fn(ctx, p, len);
			o->ptr = lp_delete(o->ptr, off);
			break;
		default:
			sn = ht_random(o->ptr);
			fn(ctx, sn->s, sn->len);
			ht_remove_node(o->ptr, sn);
			break;
		}
	}
	return count;
}

/* ---- SSCAN --------------------------------------------------------------------------------- */

struct scan_ctx {
	set_member_fn *fn;
	void *ctx;
};

static void scan_node(void *ctx, struct dict_node *n)
{
	struct scan_ctx *sc = ctx;
	struct set_node *sn = set_node_of(n);

	sc->fn(sc->ctx, sn->s, sn->len);
}

uint64_t set_scan(const struct obj *o, uint64_t cursor, set_member_fn *fn, void *ctx)
{
	struct scan_ctx sc = { fn, ctx };
	struct set_iter it;
	const char *p;
	size_t len;

	if (o->enc == ENC_HASHTABLE)
		return dict_scan(&((struct htset *)o->ptr)->d, cursor, scan_node, &sc);
	set_iter_init(&it, o);
	while (set_iter_next(&it, &p, &len))
		fn(ctx, p, len);
	return 0;
}

/* ---- generic operations (object.h) --------------------------------------------------------- */

static void set_free(struct obj *o)
{
	set_free_storage(o);
}

static struct obj set_dup(const struct obj *o)
{
	struct obj copy = *o;

	if (o->enc == ENC_INTSET) {
		const struct intset *is = o->ptr;
		size_t size = is_alloc_size(is->width, is->count);

		copy.ptr = xmalloc(size);
		memcpy(copy.ptr, is, size);
	} else if (o->enc == ENC_LISTPACK) {
		const struct lpset *lp = o->ptr;
		size_t size = sizeof(*lp) + lp->bytes;

		copy.ptr = xmalloc(size);
		memcpy(copy.ptr, lp, size);
	} else {
		const struct dict *d = &((const struct htset *)o->ptr)->d;
		struct htset *h = ht_new();

		for (uint64_t b = 0; d->table && b <= d->mask; b++) {
			for (struct dict_node *n = d->table[b]; n; n = n->next) {
				struct set_node *sn = set_node_of(n);

				ht_insert(h, sn->s, sn->len, n->hash);
			}
		}
		copy.ptr = h;
	}
	return copy;
}

static size_t set_mem(const struct obj *o)
{
	if (o->enc == ENC_HASHTABLE) {
		struct htset *h = o->ptr;

		return xusable(h) + dict_mem(&h->d) + h->node_mem;
	}
	return xusable(o->ptr);
}

/* A hash table set frees a node per member; the packed forms are one block. */
static size_t set_free_effort(const struct obj *o)
{
	return o->enc == ENC_HASHTABLE ? ((const struct htset *)o->ptr)->d.count : 1;
}

static const struct obj_ops set_ops = {
	.free = set_free,
	.dup = set_dup,
	.mem = set_mem,
	.free_effort = set_free_effort,
	.items = set_size,
};

static void __attribute__((constructor)) set_register(void)
{
	if (getrandom(&hash_seed, sizeof(hash_seed), GRND_NONBLOCK) != sizeof(hash_seed))
		hash_seed = (uint64_t)now_us() ^ (uint64_t)(uintptr_t)&hash_seed;
	obj_register(OBJ_SET, &set_ops);
}
