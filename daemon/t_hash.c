// SPDX-License-Identifier: BSD-3-Clause
/*
 * The hash type: a listpack-style packed array for small hashes, a dict plus a
 * deadline heap for large ones (see t_hash.h for the contract).
 *
 * Listpack entry layout, entries back to back in insertion order:
 *
 *   varint(flen << 1 | has_deadline) field [int64 deadline] varint(vlen) value
 *
 * The deadline sits between the field and the value so that adding or removing
 * it, or replacing the value, never moves the field bytes, and toggling the low
 * bit of the first varint never changes its length. A listpack keeps a lower
 * bound of its deadlines (min_expire): exact after a reclaim, possibly early
 * after a deadline is removed, so a due check is O(1) and a stale bound costs
 * one walk that then makes it exact.
 */
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <xxhash.h>

#include "config.h"
#include "dict.h"
#include "log.h"
#include "mem.h"
#include "t_hash.h"
#include "varint.h"
#include "util.h"

/* A listpack that would outgrow this converts whatever the thresholds say
 * (Redis has the same guard): entry offsets then always fit 32 bits. */
#define LP_SAFETY_SIZE (1u << 30)

struct lp {
	uint32_t count;
	uint32_t nttl : 31; /* entries with a deadline */
	/* Redis 8.8's "listpackex": once field expiry touched it (a deadline
	 * set, or HEXPIRE/HGETEX with an option), for OBJECT ENCODING. */
	uint32_t ex : 1;
	size_t used;	    /* bytes of data[] in use */
	int64_t min_expire; /* no deadline is earlier; INT64_MAX when nttl is 0 */
	unsigned char data[];
};

/* 32 bytes before the data: the field's length in the dict node's spare
 * word (hnode_flen), the rest in u32s (fields and values are at most
 * proto-max-bulk-len, a hash's deadlines fewer than 2^32). */
struct hnode {
	struct dict_node node; /* node.aux: the field's length */
	uint32_t vlen;
	uint32_t heap_idx; /* position in the deadline heap, when expire is set */
	int64_t expire;
	char data[]; /* field bytes, then value bytes */
};

#define hnode_flen(n) ((n)->node.aux)

#define hnode_of(n) ((struct hnode *)((char *)(n) - __builtin_offsetof(struct hnode, node)))

struct ht {
	struct dict d;
	struct hnode **heap; /* min-heap of the nodes with deadlines */
	size_t nheap, heap_cap;
	size_t bytes; /* usable bytes of the nodes, for MEMORY USAGE */
};

/* Field hashes are seeded per process so clients cannot aim collisions. */
static uint64_t hash_seed;

uint64_t hash_rand(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x9e3779b97f4a7c15ull;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dull;
}

/* ---- listpack ------------------------------------------------------------------------------ */

/* A decoded entry: where its parts are (offsets into data[]) and what it holds. */
struct lp_ent {
	size_t off, size;
	size_t fend; /* just past the field bytes: where a deadline goes */
	struct hash_field hf;
};

static void lp_decode(const struct lp *lp, size_t off, struct lp_ent *e)
{
	const unsigned char *p = lp->data + off;
	uint64_t head, vlen;
	size_t n = varint_get(p, &head);

	e->off = off;
	e->hf.flen = head >> 1;
	e->hf.f = (const char *)p + n;
	n += e->hf.flen;
	e->fend = off + n;
	e->hf.expire = HASH_NO_EXPIRE;
	if (head & 1) {
		memcpy(&e->hf.expire, p + n, sizeof(int64_t));
		n += sizeof(int64_t);
	}
	n += varint_get(p + n, &vlen);
	e->hf.vlen = vlen;
	e->hf.v = (const char *)p + n;
	e->size = n + vlen;
}

static bool lp_find(const struct lp *lp, const char *f, size_t flen, struct lp_ent *e)
{
	for (size_t off = 0; off < lp->used; off += e->size) {
		lp_decode(lp, off, e);
		if (e->hf.flen == flen && memcmp(e->hf.f, f, flen) == 0)
			return true;
	}
	return false;
}

static size_t lp_entry_size(size_t flen, size_t vlen, bool ttl)
{
	return varint_len((uint64_t)flen << 1 | ttl) + flen + (ttl ? sizeof(int64_t) : 0) +
	       varint_len(vlen) + vlen;
}

static void lp_write(unsigned char *p, const char *f, size_t flen, const char *v, size_t vlen,
		     int64_t expire)
{
	bool ttl = expire != HASH_NO_EXPIRE;

	p += varint_put(p, (uint64_t)flen << 1 | ttl);
	memcpy(p, f, flen);
	p += flen;
	if (ttl) {
		memcpy(p, &expire, sizeof(expire));
		p += sizeof(expire);
	}
	p += varint_put(p, vlen);
	memcpy(p, v, vlen);
}

/*
 * Makes data[off, off + oldlen) newlen bytes long, moving what follows, and
 * returns the listpack, which may have moved. The bytes of the resized range
 * are left for the caller to write.
 */
static struct lp *lp_splice(struct lp *lp, size_t off, size_t oldlen, size_t newlen)
{
	size_t tail = lp->used - off - oldlen, used = lp->used - oldlen + newlen;
	size_t need = sizeof(*lp) + used, have = xusable(lp);

	if (need > have)
		lp = xrealloc(lp, need);
	memmove(lp->data + off + newlen, lp->data + off + oldlen, tail);
	lp->used = used;
	/* Give memory back once a quarter of the allocation is slack. */
	if (need < have && have - need > have / 4 && have - need > 64)
		lp = xrealloc(lp, need);
	return lp;
}

static struct lp *lp_new(void)
{
	struct lp *lp = xmalloc(sizeof(*lp));

	lp->count = 0;
	lp->nttl = 0;
	lp->ex = 0;
	lp->used = 0;
	lp->min_expire = INT64_MAX;
	return lp;
}

static void lp_ttl_added(struct lp *lp, int64_t when)
{
	lp->nttl++;
	lp->ex = 1;
	if (when < lp->min_expire)
		lp->min_expire = when;
}

static void lp_ttl_removed(struct lp *lp)
{
	if (--lp->nttl == 0)
		lp->min_expire = INT64_MAX;
}

/* Replaces entry e with (f, v, expire), written fresh: f and v are the
 * caller's bytes, never the hash's own. */
static struct lp *lp_rewrite(struct lp *lp, const struct lp_ent *e, const char *f, size_t flen,
			     const char *v, size_t vlen, int64_t expire)
{
	size_t size = lp_entry_size(flen, vlen, expire != HASH_NO_EXPIRE);

	lp = lp_splice(lp, e->off, e->size, size);
	lp_write(lp->data + e->off, f, flen, v, vlen, expire);
	return lp;
}

static void lp_delete_entry(struct obj *o, const struct lp_ent *e)
{
	struct lp *lp = o->ptr;

	if (e->hf.expire != HASH_NO_EXPIRE)
		lp_ttl_removed(lp);
	lp->count--;
	o->ptr = lp_splice(lp, e->off, e->size, 0);
}

static void lp_set_expire(struct obj *o, const struct lp_ent *e, int64_t when)
{
	struct lp *lp = o->ptr;
	bool had = e->hf.expire != HASH_NO_EXPIRE;

	if (when == HASH_NO_EXPIRE) {
		if (!had)
			return;
		lp = lp_splice(lp, e->fend, sizeof(int64_t), 0);
		varint_put(lp->data + e->off, (uint64_t)e->hf.flen << 1);
		lp_ttl_removed(lp);
	} else {
		if (!had) {
			lp = lp_splice(lp, e->fend, 0, sizeof(int64_t));
			varint_put(lp->data + e->off, (uint64_t)e->hf.flen << 1 | 1);
			lp_ttl_added(lp, when);
		} else if (when < lp->min_expire) {
			lp->min_expire = when;
		}
		memcpy(lp->data + e->fend, &when, sizeof(when));
	}
	o->ptr = lp;
}

/* Removes the entries whose deadline is before now in one compacting pass and
 * makes min_expire exact. */
static void field_list_add(struct field_list *l, const char *p, size_t len, bool owned)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct field_ref){ .p = p, .len = len, .owned = owned };
}

void field_list_push(struct field_list *l, const char *p, size_t len)
{
	field_list_add(l, p, len, false);
}

void field_list_free(struct field_list *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i].owned)
			xfree((void *)l->v[i].p);
	xfree(l->v);
	*l = (struct field_list){ 0 };
}

/* Adds a copy of p to names (if any), for a field about to be freed. */
static void field_list_copy(struct field_list *names, const char *p, size_t len)
{
	char *q;

	if (!names)
		return;
	q = xmalloc(len + 1);
	memcpy(q, p, len);
	q[len] = '\0';
	field_list_add(names, q, len, true);
}

static uint64_t lp_expire_due(struct obj *o, int64_t now, struct field_list *names)
{
	struct lp *lp = o->ptr;
	size_t r = 0, w = 0;
	int64_t min = INT64_MAX;
	uint64_t removed = 0;
	struct lp_ent e;

	if (lp->min_expire >= now)
		return 0;
	while (r < lp->used) {
		lp_decode(lp, r, &e);
		if (e.hf.expire != HASH_NO_EXPIRE && e.hf.expire < now) {
			field_list_copy(names, e.hf.f, e.hf.flen);
			removed++;
		} else {
			if (w != r)
				memmove(lp->data + w, lp->data + r, e.size);
			w += e.size;
			if (e.hf.expire != HASH_NO_EXPIRE && e.hf.expire < min)
				min = e.hf.expire;
		}
		r += e.size;
	}
	lp->count -= (uint32_t)removed;
	lp->nttl -= (uint32_t)removed;
	lp->min_expire = min;
	if (removed)
		o->ptr = lp_splice(lp, w, lp->used - w, 0);
	return removed;
}

/* ---- hash table ---------------------------------------------------------------------------- */

static bool hnode_key_equal(const struct dict_node *node, const void *key, size_t len)
{
	const struct hnode *n = hnode_of(node);

	return hnode_flen(n) == len && memcmp(n->data, key, len) == 0;
}

static const struct dict_type hnode_type = { .key_equal = hnode_key_equal };

static inline uint64_t field_hash(const char *f, size_t flen)
{
	return XXH3_64bits_withSeed(f, flen, hash_seed);
}

static struct ht *ht_new(void)
{
	struct ht *ht = xcalloc(1, sizeof(*ht));

	dict_init(&ht->d, &hnode_type);
	return ht;
}

static struct hnode *ht_find(const struct ht *ht, const char *f, size_t flen)
{
	struct dict_node *n = dict_find(&ht->d, f, flen, field_hash(f, flen));

	return n ? hnode_of(n) : NULL;
}

static void heap_place(struct ht *ht, size_t i, struct hnode *n)
{
	ht->heap[i] = n;
	n->heap_idx = (uint32_t)i;
}

static void heap_up(struct ht *ht, size_t i)
{
	struct hnode *n = ht->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (ht->heap[parent]->expire <= n->expire)
			break;
		heap_place(ht, i, ht->heap[parent]);
		i = parent;
	}
	heap_place(ht, i, n);
}

static void heap_down(struct ht *ht, size_t i)
{
	struct hnode *n = ht->heap[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= ht->nheap)
			break;
		if (child + 1 < ht->nheap && ht->heap[child + 1]->expire < ht->heap[child]->expire)
			child++;
		if (ht->heap[child]->expire >= n->expire)
			break;
		heap_place(ht, i, ht->heap[child]);
		i = child;
	}
	heap_place(ht, i, n);
}

static void heap_push(struct ht *ht, struct hnode *n)
{
	if (ht->nheap == ht->heap_cap) {
		ht->heap_cap = ht->heap_cap ? ht->heap_cap * 2 : 8;
		ht->heap = xrealloc(ht->heap, ht->heap_cap * sizeof(*ht->heap));
	}
	heap_place(ht, ht->nheap++, n);
	heap_up(ht, ht->nheap - 1);
}

static void heap_remove(struct ht *ht, struct hnode *n)
{
	size_t i = n->heap_idx;
	struct hnode *last = ht->heap[--ht->nheap];

	if (i < ht->nheap) {
		heap_place(ht, i, last);
		heap_down(ht, i);
		heap_up(ht, last->heap_idx);
	}
	/* A hash whose deadlines are all gone should not keep the array. */
	if (ht->nheap == 0) {
		xfree(ht->heap);
		ht->heap = NULL;
		ht->heap_cap = 0;
	}
}

/* Changes n's deadline, keeping the heap in order. */
static void ht_node_expire(struct ht *ht, struct hnode *n, int64_t when)
{
	int64_t old = n->expire;

	n->expire = when;
	if (old == HASH_NO_EXPIRE && when != HASH_NO_EXPIRE) {
		heap_push(ht, n);
	} else if (old != HASH_NO_EXPIRE && when == HASH_NO_EXPIRE) {
		heap_remove(ht, n);
	} else if (old != HASH_NO_EXPIRE) {
		heap_down(ht, n->heap_idx);
		heap_up(ht, n->heap_idx);
	}
}

static struct hnode *hnode_new(const char *f, size_t flen, const char *v, size_t vlen,
			       int64_t expire)
{
	struct hnode *n = xmalloc(sizeof(*n) + flen + vlen);

	n->node.hash = field_hash(f, flen);
	n->expire = expire;
	hnode_flen(n) = (uint32_t)flen;
	n->vlen = (uint32_t)vlen;
	memcpy(n->data, f, flen);
	memcpy(n->data + flen, v, vlen);
	return n;
}

static void ht_add(struct ht *ht, struct hnode *n)
{
	dict_insert(&ht->d, &n->node);
	ht->bytes += xusable(n);
	if (n->expire != HASH_NO_EXPIRE)
		heap_push(ht, n);
}

static void ht_remove(struct ht *ht, struct hnode *n)
{
	if (n->expire != HASH_NO_EXPIRE)
		heap_remove(ht, n);
	dict_remove(&ht->d, &n->node);
	ht->bytes -= xusable(n);
	xfree(n);
}

/* Replaces n's value; the node is reallocated (and relinked) when the value
 * does not fit or would leave most of the allocation unused. */
static void ht_replace_value(struct ht *ht, struct hnode *n, const char *v, size_t vlen)
{
	size_t need = sizeof(*n) + hnode_flen(n) + vlen, have = xusable(n);

	if (need > have || (need < have / 2 && have - need > 64)) {
		/* The chain and the heap point at the node: unlink, move, relink.
		 * The count is unchanged, so the reinsert cannot resize. */
		dict_remove(&ht->d, &n->node);
		ht->bytes -= have;
		n = xrealloc(n, need);
		ht->bytes += xusable(n);
		dict_insert(&ht->d, &n->node);
		if (n->expire != HASH_NO_EXPIRE)
			ht->heap[n->heap_idx] = n;
	}
	memcpy(n->data + hnode_flen(n), v, vlen);
	n->vlen = (uint32_t)vlen;
}

static uint64_t ht_expire_due(struct ht *ht, int64_t now, struct field_list *names)
{
	uint64_t removed = 0;

	while (ht->nheap && ht->heap[0]->expire < now) {
		field_list_copy(names, ht->heap[0]->data, hnode_flen(ht->heap[0]));
		ht_remove(ht, ht->heap[0]);
		removed++;
	}
	if (removed)
		dict_maybe_shrink(&ht->d);
	return removed;
}

static void hnode_free(struct dict_node *node)
{
	xfree(hnode_of(node));
}

static void ht_free(struct ht *ht)
{
	dict_clear(&ht->d, hnode_free);
	xfree(ht->heap);
	xfree(ht);
}

static void hnode_fill(const struct hnode *n, struct hash_field *out)
{
	out->f = n->data;
	out->flen = hnode_flen(n);
	out->v = n->data + hnode_flen(n);
	out->vlen = n->vlen;
	out->expire = n->expire;
}

/* ---- the encoding-independent API ------------------------------------------------------------ */

struct obj hash_new(void)
{
	return (struct obj){ .type = OBJ_HASH, .enc = ENC_LISTPACK, .ptr = lp_new() };
}

uint64_t hash_len(const struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		return ((const struct lp *)o->ptr)->count;
	return ((const struct ht *)o->ptr)->d.count;
}

/* Moves a listpack's entries into a new hash table. */
static void hash_convert(struct obj *o)
{
	struct lp *lp = o->ptr;
	struct ht *ht = ht_new();
	struct lp_ent e;

	for (size_t off = 0; off < lp->used; off += e.size) {
		lp_decode(lp, off, &e);
		ht_add(ht, hnode_new(e.hf.f, e.hf.flen, e.hf.v, e.hf.vlen, e.hf.expire));
	}
	xfree(lp);
	o->ptr = ht;
	o->enc = ENC_HASHTABLE;
}

static bool too_long(size_t len)
{
	return (unsigned long long)len > (unsigned long long)config.hash_max_listpack_value;
}

bool hash_get(const struct obj *o, const char *f, size_t flen, struct hash_field *out)
{
	struct lp_ent e;
	struct hnode *n;

	if (o->enc == ENC_LISTPACK) {
		if (!lp_find(o->ptr, f, flen, &e))
			return false;
		*out = e.hf;
		return true;
	}
	n = ht_find(o->ptr, f, flen);
	if (!n)
		return false;
	hnode_fill(n, out);
	return true;
}

bool hash_exists(const struct obj *o, const char *f, size_t flen)
{
	struct hash_field hf;

	return hash_get(o, f, flen, &hf);
}

bool hash_set(struct obj *o, const char *f, size_t flen, const char *v, size_t vlen, unsigned flags)
{
	struct hnode *n;
	struct ht *ht;

	if (o->enc == ENC_LISTPACK && (too_long(flen) || too_long(vlen)))
		hash_convert(o);
	if (o->enc == ENC_LISTPACK) {
		struct lp *lp = o->ptr;
		struct lp_ent e;

		if (lp_find(lp, f, flen, &e)) {
			int64_t expire = e.hf.expire;

			if (expire != HASH_NO_EXPIRE && !(flags & HASH_SET_KEEPTTL)) {
				lp_ttl_removed(lp);
				expire = HASH_NO_EXPIRE;
			}
			o->ptr = lp_rewrite(lp, &e, f, flen, v, vlen, expire);
			return false;
		}
		if ((unsigned long long)lp->count + 1 <=
			    (unsigned long long)config.hash_max_listpack_entries &&
		    lp->used + lp_entry_size(flen, vlen, false) <= LP_SAFETY_SIZE) {
			size_t off = lp->used, size = lp_entry_size(flen, vlen, false);

			lp = lp_splice(lp, off, 0, size);
			lp_write(lp->data + off, f, flen, v, vlen, HASH_NO_EXPIRE);
			lp->count++;
			o->ptr = lp;
			return true;
		}
		hash_convert(o);
	}
	ht = o->ptr;
	n = ht_find(ht, f, flen);
	if (n) {
		if (!(flags & HASH_SET_KEEPTTL))
			ht_node_expire(ht, n, HASH_NO_EXPIRE);
		ht_replace_value(ht, n, v, vlen);
		return false;
	}
	ht_add(ht, hnode_new(f, flen, v, vlen, HASH_NO_EXPIRE));
	return true;
}

bool hash_delete(struct obj *o, const char *f, size_t flen)
{
	struct ht *ht = o->ptr;
	struct hnode *n;

	if (o->enc == ENC_LISTPACK) {
		struct lp_ent e;

		if (!lp_find(o->ptr, f, flen, &e))
			return false;
		lp_delete_entry(o, &e);
		return true;
	}
	n = ht_find(ht, f, flen);
	if (!n)
		return false;
	ht_remove(ht, n);
	dict_maybe_shrink(&ht->d);
	return true;
}

bool hash_set_expire(struct obj *o, const char *f, size_t flen, int64_t when)
{
	struct hnode *n;

	if (o->enc == ENC_LISTPACK) {
		struct lp_ent e;

		if (!lp_find(o->ptr, f, flen, &e))
			return false;
		lp_set_expire(o, &e, when);
		return true;
	}
	n = ht_find(o->ptr, f, flen);
	if (!n)
		return false;
	ht_node_expire(o->ptr, n, when);
	return true;
}

uint64_t hash_expire_due(struct obj *o, int64_t now, struct field_list *names)
{
	if (o->enc == ENC_LISTPACK)
		return lp_expire_due(o, now, names);
	return ht_expire_due(o->ptr, now, names);
}

void hash_mark_ex(struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		((struct lp *)o->ptr)->ex = 1;
}

bool hash_is_listpackex(const struct obj *o)
{
	return o->enc == ENC_LISTPACK && ((const struct lp *)o->ptr)->ex;
}

bool hash_has_expire(const struct obj *o)
{
	if (o->enc == ENC_HASHTABLE)
		return ((const struct ht *)o->ptr)->nheap != 0;
	return ((const struct lp *)o->ptr)->nttl != 0;
}

int64_t hash_next_expire(const struct obj *o)
{
	const struct ht *ht = o->ptr;
	const struct lp *lp = o->ptr;
	int64_t min = INT64_MAX;
	struct lp_ent e;

	if (o->enc == ENC_HASHTABLE)
		return ht->nheap ? ht->heap[0]->expire : HASH_NO_EXPIRE;
	/* The listpack's bound may be early: walk for the exact value. */
	if (!lp->nttl)
		return HASH_NO_EXPIRE;
	for (size_t off = 0; off < lp->used; off += e.size) {
		lp_decode(lp, off, &e);
		if (e.hf.expire != HASH_NO_EXPIRE && e.hf.expire < min)
			min = e.hf.expire;
	}
	return min;
}

void hash_iter_init(struct hash_iter *it, const struct obj *o)
{
	it->o = o;
	it->off = 0;
	it->bucket = 0;
	it->node = NULL;
}

bool hash_iter_next(struct hash_iter *it, struct hash_field *out)
{
	const struct dict *d;
	const struct dict_node *n;

	if (it->o->enc == ENC_LISTPACK) {
		const struct lp *lp = it->o->ptr;
		struct lp_ent e;

		if (it->off >= lp->used)
			return false;
		lp_decode(lp, it->off, &e);
		it->off += e.size;
		*out = e.hf;
		return true;
	}
	d = &((const struct ht *)it->o->ptr)->d;
	n = it->node;
	while (!n) {
		if (!d->table || it->bucket > d->mask)
			return false;
		n = d->table[it->bucket++];
	}
	it->node = n->next;
	hnode_fill(hnode_of(n), out);
	return true;
}

struct scan_wrap {
	hash_scan_fn *fn;
	void *ctx;
};

static void scan_node(void *ctx, struct dict_node *node)
{
	struct scan_wrap *w = ctx;
	struct hash_field hf;

	hnode_fill(hnode_of(node), &hf);
	w->fn(w->ctx, &hf);
}

uint64_t hash_scan(const struct obj *o, uint64_t cursor, hash_scan_fn *fn, void *ctx)
{
	struct scan_wrap w = { fn, ctx };

	if (o->enc == ENC_LISTPACK) {
		struct hash_iter it;
		struct hash_field hf;

		hash_iter_init(&it, o);
		while (hash_iter_next(&it, &hf))
			fn(ctx, &hf);
		return 0;
	}
	/* dict_scan only changes the table through its callback, and ours
	 * does not. */
	return dict_scan(&((struct ht *)o->ptr)->d, cursor, scan_node, &w);
}

void hash_sampler_init(struct hash_sampler *s, const struct obj *o)
{
	s->o = o;
	s->offs = NULL;
	if (o->enc == ENC_LISTPACK) {
		const struct lp *lp = o->ptr;
		struct lp_ent e;
		size_t i = 0;

		s->offs = xmalloc(sizeof(*s->offs) * (lp->count ? lp->count : 1));
		for (size_t off = 0; off < lp->used; off += e.size) {
			lp_decode(lp, off, &e);
			s->offs[i++] = (uint32_t)off;
		}
	}
}

void hash_sampler_pick(const struct hash_sampler *s, uint64_t r, struct hash_field *out)
{
	if (s->o->enc == ENC_LISTPACK) {
		const struct lp *lp = s->o->ptr;
		struct lp_ent e;

		lp_decode(lp, s->offs[r % lp->count], &e);
		*out = e.hf;
		return;
	}
	/* Fair, not r's bucket: HRANDFIELD -count must be uniform (hash.tcl's
	 * chi-square check); r only decides listpack picks. */
	hnode_fill(hnode_of(dict_random_fair(&((const struct ht *)s->o->ptr)->d, hash_rand)), out);
}

void hash_sampler_free(struct hash_sampler *s)
{
	xfree(s->offs);
	s->offs = NULL;
}

/* ---- object operations ------------------------------------------------------------------------ */

static void hash_free(struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		xfree(o->ptr);
	else
		ht_free(o->ptr);
}

static struct obj hash_dup(const struct obj *o)
{
	struct obj copy = *o;

	if (o->enc == ENC_LISTPACK) {
		const struct lp *lp = o->ptr;
		struct lp *dup = xmalloc(sizeof(*lp) + lp->used);

		memcpy(dup, lp, sizeof(*lp) + lp->used);
		copy.ptr = dup;
	} else {
		struct ht *ht = ht_new();
		struct hash_iter it;
		struct hash_field hf;

		hash_iter_init(&it, o);
		while (hash_iter_next(&it, &hf))
			ht_add(ht, hnode_new(hf.f, hf.flen, hf.v, hf.vlen, hf.expire));
		copy.ptr = ht;
	}
	return copy;
}

static size_t hash_mem(const struct obj *o)
{
	const struct ht *ht = o->ptr;

	if (o->enc == ENC_LISTPACK)
		return xusable(o->ptr);
	return xusable(o->ptr) + dict_mem(&ht->d) + ht->bytes + (ht->heap ? xusable(ht->heap) : 0);
}

/* A hash table frees a node per field. */
static size_t hash_free_effort(const struct obj *o)
{
	return o->enc == ENC_HASHTABLE ? ((const struct ht *)o->ptr)->d.count : 1;
}

static const struct obj_ops hash_ops = {
	.free = hash_free,
	.dup = hash_dup,
	.mem = hash_mem,
	.free_effort = hash_free_effort,
	.items = hash_len,
};

static void __attribute__((constructor)) hash_register(void)
{
	if (getrandom(&hash_seed, sizeof(hash_seed), GRND_NONBLOCK) != sizeof(hash_seed))
		hash_seed = (uint64_t)now_us() * 0x9e3779b97f4a7c15ull;
	obj_register(OBJ_HASH, &hash_ops);
}
