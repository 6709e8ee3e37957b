// SPDX-License-Identifier: BSD-3-Clause
/*
 * The list type: packs of entries, alone (listpack) or linked (quicklist).
 *
 * An entry is framed so that a pack can be walked from either end without an
 * index:  header [payload] backlen.
 *
 *   header (first byte h)
 *     0xxxxxxx            the integer 0..127
 *     10llllll            a string of 0..63 bytes
 *     1100kkkk + k bytes  an integer in k = 1..8 little-endian bytes, sign-extended
 *     1101llll + 1 byte   a string of 0..4095 bytes (12-bit length)
 *     0xe0 + 4 bytes      a string, 32-bit little-endian length
 *     0xe1 + 8 bytes      a string, 64-bit little-endian length
 *   backlen: the size of header and payload, 7 bits a byte, the least
 *   significant group last; every byte but the first has its top bit set, so
 *   it is read backwards from the entry's end.
 *
 * Only canonical integers (as Redis parses them, so they format back to the
 * same bytes) take the integer forms, and every one of them does: an integer
 * entry and a string entry are therefore never equal, which lets searches
 * compare numbers with numbers and bytes with bytes.
 *
 * A quicklist counts its elements and nodes; each node's pack counts its own
 * entries. Invariants (checked by list_validate): a quicklist has at least
 * one node and no empty one; a listpack may be empty (a new list).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "t_list.h"

/* Bound of a node's bytes when list-max-listpack-size counts entries, as
 * Redis's quicklist keeps it, so huge elements still get nodes of their own. */
#define LIST_SAFETY_BYTES 8192

size_t list_packed_threshold = LIST_PACKED_THRESHOLD_DEFAULT;

/* One word of header, so ten short elements fit the allocator's 192-byte
 * class as Redis's listpack does. A pack stays within 64 KiB (the largest
 * list-max-listpack-size bound) unless it holds one element: 2-byte entries
 * at least, so count stays far under 2^24; 2^40 bytes exceeds any element. */
struct list_pack {
	uint64_t bytes : 40; /* used bytes of data[] */
	uint64_t count : 24; /* entries */
	unsigned char data[];
};
_Static_assert(sizeof(struct list_pack) == 8, "a list pack's header is one word");

struct list_node {
	struct list_node *prev, *next;
	struct list_pack *pk; /* owned */
};

struct qlist {
	struct list_node *head, *tail;
	size_t count; /* elements, the sum of the packs' counts */
	size_t nodes;
};

/* ---- entries ---------------------------------------------------------------------------- */

/* An element encoded for storing: header, payload (strings only), backlen. */
struct enc {
	unsigned char head[9];
	unsigned char back[10];
	unsigned hlen, blen;
	const char *payload;
	size_t plen;
	size_t size; /* the whole entry */
};

/* An entry read from a pack. */
struct ent {
	bool is_int;
	long long v;
	const unsigned char *s; /* string bytes */
	size_t len;
	size_t size; /* the whole entry */
};

/* What searches compare entries with: the bytes, and their integer value
 * if they are a canonical integer (then they are stored as one). */
struct needle {
	const char *p;
	size_t len;
	bool is_int;
	long long v;
};

static unsigned backlen_len(size_t v)
{
	unsigned n = 1;

	while (v >= 128) {
		v >>= 7;
		n++;
	}
	return n;
}

static unsigned backlen_put(unsigned char *out, size_t v)
{
	unsigned n = backlen_len(v);

	for (unsigned i = 0; i < n; i++) {
		out[n - 1 - i] = (unsigned char)((v & 0x7f) | (i < n - 1 ? 0x80 : 0));
		v >>= 7;
	}
	return n;
}

/* Reads the backlen that ends at end; *n gets its length in bytes. */
static size_t backlen_get(const unsigned char *end, unsigned *n)
{
	size_t v = 0;
	unsigned i = 0;
	unsigned char b;

	do {
		b = *--end;
		v |= (size_t)(b & 0x7f) << (7 * i);
		i++;
	} while (b & 0x80);
	*n = i;
	return v;
}

static void put_le(unsigned char *p, uint64_t v, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, unsigned k)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < k; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void enc_prepare(struct enc *e, const char *p, size_t len)
{
	long long v;

	e->payload = NULL;
	e->plen = 0;
	if (len <= LL_STR_SIZE && str_to_ll(p, len, &v)) {
		if (v >= 0 && v < 128) {
			e->head[0] = (unsigned char)v;
			e->hlen = 1;
		} else {
			unsigned k = 1;

			while (k < 8 && (v < -(1LL << (8 * k - 1)) || v >= (1LL << (8 * k - 1))))
				k++;
			e->head[0] = (unsigned char)(0xc0 | k);
			put_le(e->head + 1, (uint64_t)v, k);
			e->hlen = 1 + k;
		}
	} else {
		e->payload = p;
		e->plen = len;
		if (len < 64) {
			e->head[0] = (unsigned char)(0x80 | len);
			e->hlen = 1;
		} else if (len < 4096) {
			e->head[0] = (unsigned char)(0xd0 | (len >> 8));
			e->head[1] = (unsigned char)len;
			e->hlen = 2;
		} else if (len <= UINT32_MAX) {
			e->head[0] = 0xe0;
			put_le(e->head + 1, len, 4);
			e->hlen = 5;
		} else {
			e->head[0] = 0xe1;
			put_le(e->head + 1, len, 8);
			e->hlen = 9;
		}
	}
	e->blen = backlen_put(e->back, e->hlen + e->plen);
	e->size = e->hlen + e->plen + e->blen;
}

static void enc_write(unsigned char *dst, const struct enc *e)
{
	memcpy(dst, e->head, e->hlen);
	if (e->plen)
		memcpy(dst + e->hlen, e->payload, e->plen);
	memcpy(dst + e->hlen + e->plen, e->back, e->blen);
}

/* Size of the header and payload of the entry at p. */
static size_t ent_head_payload(const unsigned char *p)
{
	unsigned char h = p[0];

	if (h < 0x80)
		return 1;
	if (h < 0xc0)
		return 1 + (size_t)(h & 0x3f);
	if (h < 0xd0)
		return 1 + (size_t)(h & 0x0f);
	if (h < 0xe0)
		return 2 + ((size_t)(h & 0x0f) << 8 | p[1]);
	if (h == 0xe0)
		return 5 + get_le(p + 1, 4);
	return 9 + get_le(p + 1, 8);
}

static size_t ent_size(const unsigned char *p)
{
	size_t hp = ent_head_payload(p);

	return hp + backlen_len(hp);
}

static void ent_read(const unsigned char *p, struct ent *d)
{
	unsigned char h = p[0];

	d->is_int = h < 0x80 || (h >= 0xc0 && h < 0xd0);
	d->v = 0;
	d->s = NULL;
	d->len = 0;
	if (h < 0x80) {
		d->v = h;
	} else if (d->is_int) {
		unsigned k = h & 0x0f;
		uint64_t u = get_le(p + 1, k);

		if (k < 8 && (u >> (8 * k - 1)) & 1)
			u |= ~0ULL << (8 * k);
		d->v = (long long)u;
	} else if (h < 0xc0) {
		d->s = p + 1;
		d->len = h & 0x3f;
	} else if (h < 0xe0) {
		d->s = p + 2;
		d->len = (size_t)(h & 0x0f) << 8 | p[1];
	} else if (h == 0xe0) {
		d->s = p + 5;
		d->len = get_le(p + 1, 4);
	} else {
		d->s = p + 9;
		d->len = get_le(p + 1, 8);
	}
	d->size = ent_size(p);
}

/* Start of the entry that ends at offset end of data. */
static size_t ent_prev(const unsigned char *data, size_t end)
{
	unsigned n;
	size_t hp = backlen_get(data + end, &n);

	return end - n - hp;
}

static void ent_elem(const struct ent *d, struct list_elem *out)
{
	if (d->is_int) {
		out->len = (size_t)ll_to_str(out->buf, d->v);
		out->p = out->buf;
	} else {
		out->p = (const char *)d->s;
		out->len = d->len;
	}
}

static void needle_init(struct needle *nd, const char *p, size_t len)
{
	nd->p = p;
	nd->len = len;
	nd->is_int = len <= LL_STR_SIZE && str_to_ll(p, len, &nd->v);
}

static bool ent_eq(const struct ent *d, const struct needle *nd)
{
	if (d->is_int)
		return nd->is_int && d->v == nd->v;
	return !nd->is_int && d->len == nd->len && memcmp(d->s, nd->p, nd->len) == 0;
}

/* ---- packs ------------------------------------------------------------------------------ */

static struct list_pack *pk_new(void)
{
	struct list_pack *pk = xmalloc(sizeof(*pk));

	pk->bytes = 0;
	pk->count = 0;
	return pk;
}

static struct list_pack *pk_dup(const struct list_pack *pk)
{
	struct list_pack *copy = xmalloc(sizeof(*pk) + pk->bytes);

	memcpy(copy, pk, sizeof(*pk) + pk->bytes);
	return copy;
}

/* Makes room for `bytes` bytes of entries. The pack may move: every function
 * that can grow or shrink one returns where it is now. */
static struct list_pack *pk_reserve(struct list_pack *pk, size_t bytes)
{
	if (sizeof(*pk) + bytes > xusable(pk))
		pk = xrealloc(pk, sizeof(*pk) + bytes);
	return pk;
}

/* Gives memory back once a pack uses less than half of its allocation. */
static struct list_pack *pk_shrink(struct list_pack *pk)
{
	size_t want = sizeof(*pk) + pk->bytes, have = xusable(pk);

	if (have > 128 && have > 2 * want)
		pk = xrealloc(pk, want);
	return pk;
}

static struct list_pack *pk_insert(struct list_pack *pk, size_t off, const struct enc *e)
{
	pk = pk_reserve(pk, pk->bytes + e->size);
	memmove(pk->data + off + e->size, pk->data + off, pk->bytes - off);
	enc_write(pk->data + off, e);
	pk->bytes += e->size;
	pk->count++;
	return pk;
}

/* Removes bytes [from, to), which hold n entries. */
static struct list_pack *pk_cut(struct list_pack *pk, size_t from, size_t to, size_t n)
{
	memmove(pk->data + from, pk->data + to, pk->bytes - to);
	pk->bytes -= to - from;
	pk->count -= (uint32_t)n;
	return pk_shrink(pk);
}

static struct list_pack *pk_replace(struct list_pack *pk, size_t off, const struct enc *e)
{
	size_t old = ent_size(pk->data + off);

	if (e->size > old)
		pk = pk_reserve(pk, pk->bytes + e->size - old);
	memmove(pk->data + off + e->size, pk->data + off + old, pk->bytes - off - old);
	enc_write(pk->data + off, e);
	pk->bytes = pk->bytes - old + e->size;
	return e->size < old ? pk_shrink(pk) : pk;
}

/* The offset n entries after off. */
static size_t pk_skip(const struct list_pack *pk, size_t off, size_t n)
{
	while (n--)
		off += ent_size(pk->data + off);
	return off;
}

/* The offset of entry i (i == count: the end), walked from the nearer end. */
static size_t pk_seek(const struct list_pack *pk, size_t i)
{
	size_t off;

	if (i <= pk->count / 2)
		return pk_skip(pk, 0, i);
	off = pk->bytes;
	for (size_t j = pk->count; j > i; j--)
		off = ent_prev(pk->data, off);
	return off;
}

/* The number of entries before offset off. */
static size_t pk_rank(const struct list_pack *pk, size_t off)
{
	size_t n = 0;

	for (size_t at = 0; at < off; at += ent_size(pk->data + at))
		n++;
	return n;
}

/* Removes n entries from entry i on. */
static struct list_pack *pk_delete(struct list_pack *pk, size_t i, size_t n)
{
	size_t from = pk_seek(pk, i);
	size_t to = i + n == pk->count ? pk->bytes : pk_skip(pk, from, n);

	return pk_cut(pk, from, to, n);
}

static size_t pk_matches(const struct list_pack *pk, const struct needle *nd)
{
	size_t n = 0;
	struct ent d;

	for (size_t off = 0; off < pk->bytes; off += d.size) {
		ent_read(pk->data + off, &d);
		n += ent_eq(&d, nd);
	}
	return n;
}

/* Removes the matches of nd numbered skip .. skip + take - 1 (counting from
 * 0 at the head of the pack), compacting in place. */
static struct list_pack *pk_filter(struct list_pack *pk, const struct needle *nd, size_t skip,
				   size_t take)
{
	size_t r = 0, w = 0, seen = 0, gone = 0;
	struct ent d;

	while (r < pk->bytes) {
		ent_read(pk->data + r, &d);
		if (ent_eq(&d, nd) && seen++ >= skip && gone < take) {
			gone++;
			r += d.size;
			continue;
		}
		if (w != r)
			memmove(pk->data + w, pk->data + r, d.size);
		w += d.size;
		r += d.size;
	}
	pk->bytes = w;
	pk->count -= (uint32_t)gone;
	return pk_shrink(pk);
}

/* ---- size bounds ------------------------------------------------------------------------ */

/* list-max-listpack-size: > 0 entries per node (within LIST_SAFETY_BYTES),
 * -1..-5 a node of 4..64 KiB (below -5 counts as -5, as in Redis). */
static size_t limit_bytes(long long fill)
{
	if (fill >= 0)
		return LIST_SAFETY_BYTES;
	return (size_t)4096 << (fill < -5 ? 4 : -fill - 1);
}

static long long list_fill(void)
{
	/* 0 counts as 1, as in Redis's quicklistNodeLimit. */
	return config.list_max_listpack_size ? config.list_max_listpack_size : 1;
}

/* The bound covers the whole allocation, header included, so that a full
 * 8 KiB node fits the allocator's 8 KiB size class instead of the next one. */
static size_t pk_alloc_size(const struct list_pack *pk)
{
	/* Two words, as before the header shrank: Redis splits its nodes at
	 * the same element, so DUMP's node boundaries stay Redis's. */
	return 16 + pk->bytes;
}

/* Does pk stay within the bound with add_bytes more bytes in add_count more
 * entries? This is the listpack encoding's test: as in Redis, even a new
 * list whose first element alone exceeds the bound becomes a quicklist. */
static bool pk_fits(const struct list_pack *pk, size_t add_bytes, size_t add_count)
{
	long long fill = list_fill();

	if (pk_alloc_size(pk) + add_bytes > limit_bytes(fill))
		return false;
	return fill < 0 || pk->count + add_count <= (unsigned long long)fill;
}

/* pk_fits for a quicklist node: an element of the packed threshold or more
 * also lives alone in its node, as in Redis's plain nodes. (A listpack-encoded
 * list has no nodes: there only the bound applies, as in Redis.) */
static bool node_fits(const struct list_pack *pk, size_t add_bytes, size_t add_count)
{
	size_t large = __atomic_load_n(&list_packed_threshold, __ATOMIC_RELAXED);

	/* An empty node takes any single element, however large. */
	if (pk->count == 0)
		return true;
	if ((add_count == 1 && add_bytes >= large) || (pk->count == 1 && pk->bytes >= large))
		return false;
	return pk_fits(pk, add_bytes, add_count);
}

/* Under a quarter of the bound: worth merging into a neighbour. The gap to
 * a full node is what keeps a merge from being undone by the next insert. */
static bool pk_underfull(const struct list_pack *pk)
{
	long long fill = list_fill();

	if (pk_alloc_size(pk) * 4 >= limit_bytes(fill))
		return false;
	return fill < 0 || pk->count * 2 <= (unsigned long long)fill;
}

/* Small enough (half the bound) for a quicklist of one node to become a
 * listpack again; the other half is the hysteresis. */
static bool pk_small(const struct list_pack *pk)
{
	long long fill = list_fill();

	if (pk_alloc_size(pk) * 2 > limit_bytes(fill))
		return false;
	return fill < 0 || pk->count * 2 <= (unsigned long long)fill;
}

/* ---- quicklist -------------------------------------------------------------------------- */

static struct list_node *node_new(struct list_pack *pk)
{
	struct list_node *n = xmalloc(sizeof(*n));

	n->prev = n->next = NULL;
	n->pk = pk;
	return n;
}

/* Links n after (or before) at, or as the only node if at is NULL; n's
 * elements join the count. */
static void ql_link(struct qlist *ql, struct list_node *at, struct list_node *n, bool after)
{
	if (!at) {
		ql->head = ql->tail = n;
	} else if (after) {
		n->prev = at;
		n->next = at->next;
		if (at->next)
			at->next->prev = n;
		else
			ql->tail = n;
		at->next = n;
	} else {
		n->next = at;
		n->prev = at->prev;
		if (at->prev)
			at->prev->next = n;
		else
			ql->head = n;
		at->prev = n;
	}
	ql->nodes++;
	ql->count += n->pk->count;
}

/* Unlinks n and frees it with its pack; its elements leave the count. */
static void ql_drop(struct qlist *ql, struct list_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		ql->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		ql->tail = n->prev;
	ql->nodes--;
	ql->count -= n->pk->count;
	xfree(n->pk);
	xfree(n);
}

/* A new node holding just e, linked next to at. */
static void ql_link_new(struct qlist *ql, struct list_node *at, const struct enc *e, bool after)
{
	ql_link(ql, at, node_new(pk_insert(pk_new(), 0, e)), after);
}

/*
 * Merges a and its successor b into one node when either is underfull and
 * together they fit; the smaller pack is copied into the larger. Returns the
 * surviving node (the other is freed), or NULL if nothing was merged.
 */
static struct list_node *ql_try_merge(struct qlist *ql, struct list_node *a, struct list_node *b)
{
	struct list_pack *pa, *pb;

	if (!a || !b)
		return NULL;
	pa = a->pk;
	pb = b->pk;
	if (!(pk_underfull(pa) || pk_underfull(pb)) || !node_fits(pa, pb->bytes, pb->count))
		return NULL;
	if (pa->bytes >= pb->bytes) {
		pa = pk_reserve(pa, pa->bytes + pb->bytes);
		memcpy(pa->data + pa->bytes, pb->data, pb->bytes);
		pa->bytes += pb->bytes;
		pa->count += pb->count;
		pb->count = 0; /* moved, not removed: the list's count stays */
		a->pk = pa;
		ql_drop(ql, b);
		return a;
	}
	pb = pk_reserve(pb, pa->bytes + pb->bytes);
	memmove(pb->data + pa->bytes, pb->data, pb->bytes);
	memcpy(pb->data, pa->data, pa->bytes);
	pb->bytes += pa->bytes;
	pb->count += pa->count;
	pa->count = 0;
	b->pk = pb;
	ql_drop(ql, a);
	return b;
}

/* Merges n with its predecessor or successor if one merge is possible;
 * returns the node now holding n's elements. */
static struct list_node *ql_settle(struct qlist *ql, struct list_node *n)
{
	struct list_node *m = ql_try_merge(ql, n->prev, n);

	if (!m)
		m = ql_try_merge(ql, n, n->next);
	return m ? m : n;
}

/* Merges every pair of neighbours that can be merged (after LREM, which may
 * thin out any number of nodes). */
static void ql_compact(struct qlist *ql)
{
	struct list_node *n = ql->head;

	while (n && n->next) {
		struct list_node *m = ql_try_merge(ql, n, n->next);

		n = m ? m : n->next;
	}
}

/* The node holding element index (< count), walked from the nearer end;
 * *i gets the element's index in that node. */
static struct list_node *ql_find(const struct qlist *ql, size_t index, size_t *i)
{
	struct list_node *n;

	if (index < ql->count / 2) {
		for (n = ql->head; index >= n->pk->count; n = n->next)
			index -= n->pk->count;
		*i = index;
	} else {
		size_t back = ql->count - 1 - index;

		for (n = ql->tail; back >= n->pk->count; n = n->prev)
			back -= n->pk->count;
		*i = n->pk->count - 1 - back;
	}
	return n;
}

static void ql_push(struct qlist *ql, bool head, const struct enc *e)
{
	struct list_node *n = head ? ql->head : ql->tail;

	if (n && node_fits(n->pk, e->size, 1)) {
		n->pk = pk_insert(n->pk, head ? 0 : n->pk->bytes, e);
		ql->count++;
	} else {
		ql_link_new(ql, n, e, !head);
	}
}

/* Splits n at offset off: the entries from off on move to a new node after
 * n, which is returned. */
static struct list_node *ql_split(struct qlist *ql, struct list_node *n, size_t off)
{
	struct list_pack *pk = n->pk, *right = pk_reserve(pk_new(), pk->bytes - off);
	size_t moved = pk->count - pk_rank(pk, off);
	struct list_node *r;

	memcpy(right->data, pk->data + off, pk->bytes - off);
	right->bytes = pk->bytes - off;
	right->count = (uint32_t)moved;
	pk->bytes = off;
	pk->count -= (uint32_t)moved;
	n->pk = pk_shrink(pk);
	ql->count -= moved; /* ql_link counts them again */
	r = node_new(right);
	ql_link(ql, n, r, true);
	return r;
}

/* Inserts e before the entry at offset off of n (off at n's end: after its
 * last entry). A full node hands the element to a neighbour with room when
 * it goes at one of its ends; in the middle, the node is split. */
static void ql_insert(struct qlist *ql, struct list_node *n, size_t off, const struct enc *e)
{
	struct list_node *right;

	if (node_fits(n->pk, e->size, 1)) {
		n->pk = pk_insert(n->pk, off, e);
		ql->count++;
		return;
	}
	if (off == n->pk->bytes) {
		if (n->next && node_fits(n->next->pk, e->size, 1)) {
			n->next->pk = pk_insert(n->next->pk, 0, e);
			ql->count++;
		} else {
			ql_link_new(ql, n, e, true);
		}
		return;
	}
	if (off == 0) {
		if (n->prev && node_fits(n->prev->pk, e->size, 1)) {
			n->prev->pk = pk_insert(n->prev->pk, n->prev->pk->bytes, e);
			ql->count++;
		} else {
			ql_link_new(ql, n, e, false);
		}
		return;
	}
	right = ql_split(ql, n, off);
	if (node_fits(n->pk, e->size, 1)) {
		n->pk = pk_insert(n->pk, n->pk->bytes, e);
		ql->count++;
	} else if (node_fits(right->pk, e->size, 1)) {
		right->pk = pk_insert(right->pk, 0, e);
		ql->count++;
	} else {
		ql_link_new(ql, n, e, true);
	}
	/* A split near one end leaves a sliver: fold each half into its outer
	 * neighbour if it can take it. */
	ql_try_merge(ql, right, right->next);
	ql_try_merge(ql, n->prev, n);
}

/* Removes n elements from index start on (start + n <= count). */
static void ql_delete(struct qlist *ql, size_t start, size_t n)
{
	struct list_node *node, *first = NULL, *last = NULL, *m;
	size_t i;

	node = ql_find(ql, start, &i);
	while (n) {
		struct list_node *next = node->next;
		size_t cnt = node->pk->count, take = cnt - i < n ? cnt - i : n;

		if (take == cnt) {
			ql_drop(ql, node);
		} else {
			node->pk = pk_delete(node->pk, i, take);
			ql->count -= take;
			if (!first)
				first = node;
			else
				last = node;
		}
		n -= take;
		i = 0;
		node = next;
	}
	/* At most two nodes were cut short, and they are neighbours now. */
	if (first && last && (m = ql_try_merge(ql, first, last))) {
		first = m;
		last = NULL;
	}
	if (last)
		ql_try_merge(ql, last, last->next); /* first is last->prev: untouched */
	if (first)
		ql_settle(ql, first);
}

static void ql_free(struct qlist *ql)
{
	struct list_node *n = ql->head;

	while (n) {
		struct list_node *next = n->next;

		xfree(n->pk);
		xfree(n);
		n = next;
	}
	xfree(ql);
}

/* ---- encodings -------------------------------------------------------------------------- */

/* Turns a listpack into a quicklist whose only node holds the same pack, so
 * offsets found in the listpack stay valid; returns that node. */
static struct list_node *to_quicklist(struct obj *o)
{
	struct qlist *ql = xmalloc(sizeof(*ql));
	struct list_node *n = node_new(o->ptr);

	ql->head = ql->tail = NULL;
	ql->count = ql->nodes = 0;
	ql_link(ql, NULL, n, true);
	o->ptr = ql;
	o->enc = ENC_QUICKLIST;
	return n;
}

/* After a quicklist lost elements: one small node (or none) becomes a
 * listpack again. */
static void maybe_to_listpack(struct obj *o)
{
	struct qlist *ql = o->ptr;
	struct list_pack *pk;

	if (ql->nodes > 1)
		return;
	if (ql->nodes == 1) {
		pk = ql->head->pk;
		if (!pk_small(pk))
			return;
		xfree(ql->head);
	} else {
		pk = pk_new();
	}
	xfree(ql);
	o->ptr = pk;
	o->enc = ENC_LISTPACK;
}

/* Finds element index (< length): its pack, the node holding it (NULL for
 * a listpack) and its offset. */
static struct list_pack *seek(const struct obj *o, size_t index, struct list_node **node,
			      size_t *off)
{
	struct list_node *n = NULL;
	struct list_pack *pk;

	if (o->enc == ENC_QUICKLIST) {
		n = ql_find(o->ptr, index, &index);
		pk = n->pk;
	} else {
		pk = o->ptr;
	}
	*node = n;
	*off = pk_seek(pk, index);
	return pk;
}

/* Inserts e at offset off of node n (NULL: the listpack). */
static void insert_at(struct obj *o, struct list_node *n, size_t off, const struct enc *e)
{
	if (o->enc == ENC_LISTPACK) {
		struct list_pack *pk = o->ptr;

		if (pk_fits(pk, e->size, 1)) {
			o->ptr = pk_insert(pk, off, e);
			return;
		}
		n = to_quicklist(o);
	}
	ql_insert(o->ptr, n, off, e);
}

/* ---- the API ---------------------------------------------------------------------------- */

struct obj list_new(void)
{
	return (struct obj){ .type = OBJ_LIST, .enc = ENC_LISTPACK, .ptr = pk_new() };
}

size_t list_len(const struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		return ((const struct list_pack *)o->ptr)->count;
	return ((const struct qlist *)o->ptr)->count;
}

void list_push(struct obj *o, enum list_where where, const char *p, size_t len)
{
	struct enc e;

	enc_prepare(&e, p, len);
	if (o->enc == ENC_LISTPACK) {
		struct list_pack *pk = o->ptr;

		if (pk_fits(pk, e.size, 1)) {
			o->ptr = pk_insert(pk, where == LIST_HEAD ? 0 : pk->bytes, &e);
			return;
		}
		to_quicklist(o);
	}
	ql_push(o->ptr, where == LIST_HEAD, &e);
}

void list_delete_range(struct obj *o, size_t start, size_t n)
{
	if (!n)
		return;
	if (o->enc == ENC_LISTPACK) {
		o->ptr = pk_delete(o->ptr, start, n);
		return;
	}
	ql_delete(o->ptr, start, n);
	maybe_to_listpack(o);
}

size_t list_pop(struct obj *o, enum list_where where, size_t n, list_elem_fn *fn, void *ctx)
{
	size_t len = list_len(o);
	struct list_iter it;
	struct list_elem el;

	if (n > len)
		n = len;
	if (!n)
		return 0;
	if (fn) {
		list_iter_init(&it, o, where == LIST_HEAD ? 0 : len - 1, where == LIST_TAIL);
		for (size_t i = 0; i < n && list_iter_next(&it, &el); i++)
			fn(ctx, el.p, el.len);
	}
	list_delete_range(o, where == LIST_HEAD ? 0 : len - n, n);
	return n;
}

bool list_index(const struct obj *o, size_t index, struct list_elem *out)
{
	struct list_node *n;
	struct list_pack *pk;
	size_t off;
	struct ent d;

	if (index >= list_len(o))
		return false;
	pk = seek(o, index, &n, &off);
	ent_read(pk->data + off, &d);
	ent_elem(&d, out);
	return true;
}

void list_set(struct obj *o, size_t index, const char *p, size_t len)
{
	struct list_node *n;
	struct list_pack *pk;
	struct enc e;
	size_t off, old;

	enc_prepare(&e, p, len);
	/* As Redis's LSET: a listpack that could not take the new element as one
	 * more entry becomes a quicklist first, whatever the old element's size. */
	if (o->enc == ENC_LISTPACK && !pk_fits(o->ptr, e.size, 1))
		to_quicklist(o);
	pk = seek(o, index, &n, &off);
	old = ent_size(pk->data + off);
	if (pk->count == 1 || e.size <= old || (n ? node_fits : pk_fits)(pk, e.size - old, 0)) {
		pk = pk_replace(pk, off, &e);
		if (n)
			n->pk = pk;
		else
			o->ptr = pk;
	} else {
		/* The node would outgrow its bound: take the old element out and
		 * insert the new one in its place, which may split the node. */
		n->pk = pk_cut(n->pk, off, off + old, 1);
		((struct qlist *)o->ptr)->count--;
		ql_insert(o->ptr, n, off, &e);
	}
	/* A smaller element may have made a one-node quicklist small enough. */
	if (o->enc == ENC_QUICKLIST)
		maybe_to_listpack(o);
}

bool list_insert(struct obj *o, const char *pivot, size_t plen, bool after, const char *p,
		 size_t len)
{
	struct list_node *n = o->enc == ENC_QUICKLIST ? ((struct qlist *)o->ptr)->head : NULL;
	struct list_pack *pk = n ? n->pk : o->ptr;
	struct needle nd;
	struct enc e;
	struct ent d;
	size_t off;

	needle_init(&nd, pivot, plen);
	for (;;) {
		for (off = 0; off < pk->bytes; off += d.size) {
			ent_read(pk->data + off, &d);
			if (ent_eq(&d, &nd))
				goto found;
		}
		if (!n || !n->next)
			return false;
		n = n->next;
		pk = n->pk;
	}
found:
	if (after)
		off += d.size;
	enc_prepare(&e, p, len);
	insert_at(o, n, off, &e);
	return true;
}

size_t list_remove(struct obj *o, const char *p, size_t len, size_t limit, bool from_tail)
{
	struct needle nd;
	struct qlist *ql;
	struct list_node *n;
	size_t removed = 0;

	needle_init(&nd, p, len);
	if (o->enc == ENC_LISTPACK) {
		struct list_pack *pk = o->ptr;
		size_t m = pk_matches(pk, &nd);

		removed = limit && limit < m ? limit : m;
		if (removed)
			o->ptr = pk_filter(pk, &nd, from_tail ? m - removed : 0, removed);
		return removed;
	}
	ql = o->ptr;
	for (n = from_tail ? ql->tail : ql->head; n && (!limit || removed < limit);) {
		struct list_node *next = from_tail ? n->prev : n->next;
		size_t m = pk_matches(n->pk, &nd), take;

		if (m) {
			take = limit && limit - removed < m ? limit - removed : m;
			n->pk = pk_filter(n->pk, &nd, from_tail ? m - take : 0, take);
			ql->count -= take;
			removed += take;
			if (!n->pk->count)
				ql_drop(ql, n);
		}
		n = next;
	}
	if (removed) {
		ql_compact(ql);
		maybe_to_listpack(o);
	}
	return removed;
}

void list_iter_init(struct list_iter *it, const struct obj *o, size_t index, bool reverse)
{
	size_t len = list_len(o), off;
	struct list_node *n;
	const struct list_pack *pk;

	it->reverse = reverse;
	it->left = index < len ? (reverse ? index + 1 : len - index) : 0;
	it->node = NULL;
	it->pk = NULL;
	it->off = 0;
	if (!it->left)
		return;
	pk = seek(o, index, &n, &off);
	it->node = n;
	it->pk = pk;
	it->off = reverse ? off + ent_size(pk->data + off) : off;
}

bool list_iter_next(struct list_iter *it, struct list_elem *out)
{
	struct ent d;

	if (!it->left)
		return false;
	if (!it->reverse) {
		if (it->off == it->pk->bytes) {
			it->node = it->node->next;
			it->pk = it->node->pk;
			it->off = 0;
		}
		ent_read(it->pk->data + it->off, &d);
		it->off += d.size;
	} else {
		if (it->off == 0) {
			it->node = it->node->prev;
			it->pk = it->node->pk;
			it->off = it->pk->bytes;
		}
		it->off = ent_prev(it->pk->data, it->off);
		ent_read(it->pk->data + it->off, &d);
	}
	it->left--;
	ent_elem(&d, out);
	return true;
}

size_t list_nodes(const struct obj *o)
{
	return o->enc == ENC_LISTPACK ? 1 : ((const struct qlist *)o->ptr)->nodes;
}

size_t list_node_len(const struct obj *o, size_t i)
{
	const struct list_node *n;

	if (o->enc == ENC_LISTPACK)
		return ((const struct list_pack *)o->ptr)->count;
	for (n = ((const struct qlist *)o->ptr)->head; i--; n = n->next)
		;
	return n->pk->count;
}

size_t list_pack_bytes(const struct obj *o)
{
	size_t sum = 0;

	if (o->enc == ENC_LISTPACK)
		return ((const struct list_pack *)o->ptr)->bytes;
	for (const struct list_node *n = ((const struct qlist *)o->ptr)->head; n; n = n->next)
		sum += n->pk->bytes;
	return sum;
}

static int pk_validate(const struct list_pack *pk)
{
	size_t off = 0, n = 0;

	while (off < pk->bytes) {
		size_t hp = ent_head_payload(pk->data + off), size = hp + backlen_len(hp);
		unsigned nb;
		struct ent d;
		long long v;

		if (size > pk->bytes - off || backlen_get(pk->data + off + size, &nb) != hp ||
		    nb != backlen_len(hp) || ent_prev(pk->data, off + size) != off)
			return -EINVAL;
		ent_read(pk->data + off, &d);
		/* Equality tests rely on canonical integers never being strings. */
		if (!d.is_int && d.len <= LL_STR_SIZE && str_to_ll((const char *)d.s, d.len, &v))
			return -EINVAL;
		off += size;
		n++;
	}
	return n == pk->count ? 0 : -EINVAL;
}

int list_validate(const struct obj *o)
{
	const struct qlist *ql;
	const struct list_node *n, *prev = NULL;
	size_t count = 0, nodes = 0;

	if (o->type != OBJ_LIST)
		return -EINVAL;
	if (o->enc == ENC_LISTPACK)
		return pk_validate(o->ptr);
	if (o->enc != ENC_QUICKLIST)
		return -EINVAL;
	ql = o->ptr;
	for (n = ql->head; n; prev = n, n = n->next) {
		if (n->prev != prev || !n->pk->count || pk_validate(n->pk))
			return -EINVAL;
		count += n->pk->count;
		nodes++;
	}
	if (ql->tail != prev || !nodes || nodes != ql->nodes || count != ql->count)
		return -EINVAL;
	return 0;
}

/* ---- generic operations (object.h) ------------------------------------------------------ */

static void list_free(struct obj *o)
{
	if (o->enc == ENC_LISTPACK)
		xfree(o->ptr);
	else
		ql_free(o->ptr);
}

static struct obj list_dup(const struct obj *o)
{
	struct obj copy = *o;
	const struct list_node *n;
	struct qlist *ql;

	if (o->enc == ENC_LISTPACK) {
		copy.ptr = pk_dup(o->ptr);
		return copy;
	}
	ql = xmalloc(sizeof(*ql));
	ql->head = ql->tail = NULL;
	ql->count = ql->nodes = 0;
	for (n = ((const struct qlist *)o->ptr)->head; n; n = n->next)
		ql_link(ql, ql->tail, node_new(pk_dup(n->pk)), true);
	copy.ptr = ql;
	return copy;
}

static size_t list_mem(const struct obj *o)
{
	const struct list_node *n;
	size_t mem;

	if (o->enc == ENC_LISTPACK)
		return xusable(o->ptr);
	mem = xusable(o->ptr);
	for (n = ((const struct qlist *)o->ptr)->head; n; n = n->next)
		mem += xusable((void *)n) + xusable(n->pk);
	return mem;
}

/* Redis counts a quicklist's nodes: each is one pack to free. */
static size_t list_free_effort(const struct obj *o)
{
	return o->enc == ENC_QUICKLIST ? ((const struct qlist *)o->ptr)->nodes : 1;
}

static const struct obj_ops list_ops = {
	.free = list_free,
	.dup = list_dup,
	.mem = list_mem,
	.free_effort = list_free_effort,
	.items = list_len,
};

static void __attribute__((constructor)) list_register(void)
{
	obj_register(OBJ_LIST, &list_ops);
}
