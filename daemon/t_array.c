// SPDX-License-Identifier: BSD-3-Clause
/*
 * The array type (t_array.h): slices, their directory, and one-word values.
 *
 * The layout rules are Redis 8.8's (its sparsearray.c is the specification),
 * because ARINFO shows them: a new slice starts sparse with room for 4 values
 * (dense with 8 positions when kmax is 0); a sparse slice doubles its room up
 * to kmax and turns dense when a value past kmax arrives; a dense window
 * doubles rightward (or grows leftward to the next power of two) to cover
 * the offset written, never past the slice; a slice is freed with its last
 * value; the flat directory doubles to the first power of two past the slice
 * id and halves back when its upper half is empty; past slice id 2048 it
 * becomes the superdir, for good.
 *
 * Memory is counted as it is allocated (`bytes`), so MEMORY USAGE is O(1).
 */
#include <math.h>
#include <string.h>

#include "config.h"
#include "mem.h"
#include "t_array.h"
#include "util.h"

#define BLOCK_SLOTS 2048 /* slice pointers per superdir block */
#define DENSE_MIN 8	 /* the smallest dense window */

enum ar_tag { TAG_PTR = 0, TAG_INT = 1, TAG_FLOAT = 2, TAG_SMALL = 3 };
#define TAG_MASK ((uintptr_t)3)
#define SMALL_MAX 7

/* A heap string; malloc's alignment leaves the two tag bits zero. */
struct ar_string {
	uint32_t len;
	char data[];
};

struct slice {
	bool dense;
	uint32_t count; /* values held */
	/* dense: the window [offset, offset + size) and the highest offset
	 * holding a value; sparse: room for `size` pairs. */
	uint32_t offset, size, max;
	/* Then the payload: dense, size values; sparse, size offsets (uint16)
	 * padded to a word, then size values. The alignment keeps the payload's
	 * values on word boundaries. */
} __attribute__((aligned(sizeof(ar_value))));

struct block {
	uint64_t id; /* slice id / BLOCK_SLOTS */
	uint32_t count;
	struct slice **slots;
};

struct array {
	uint64_t count;
	uint64_t insert_idx;
	uint64_t highest; /* highest slice id in use (valid while count > 0) */
	uint64_t nslices;
	uint32_t slice_size, slice_bits;
	/* Flat directory, or (superdir != NULL) sorted blocks. */
	struct slice **dir;
	uint64_t dir_len;
	struct block *superdir;
	uint32_t sdir_len, sdir_cap;
	size_t bytes; /* allocations made for this array, values included */
};

/* ---- values --------------------------------------------------------------------------------- */

static bool int_fits(long long v)
{
	return v >= -(1LL << 61) && v <= (1LL << 61) - 1;
}

ar_value ar_from_int(int64_t v)
{
	return ((uintptr_t)v << 2) | TAG_INT;
}

int64_t ar_int(ar_value v)
{
	return (int64_t)(intptr_t)v >> 2;
}

ar_value ar_from_double(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	return (bits & ~(uint64_t)TAG_MASK) | TAG_FLOAT;
}

double ar_double(ar_value v)
{
	uint64_t bits = v & ~TAG_MASK;
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

ar_value ar_from_small(const char *p, size_t len)
{
	uintptr_t v = TAG_SMALL | ((uintptr_t)len << 2);

	if (len > SMALL_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		v |= (uintptr_t)(uint8_t)p[i] << (8 * (i + 1));
	return v;
}

enum ar_kind ar_kind(ar_value v)
{
	static const enum ar_kind kinds[] = { AR_KIND_STRING, AR_KIND_INT, AR_KIND_FLOAT,
					      AR_KIND_SMALL };

	return kinds[v & TAG_MASK];
}

/* A float as arrays print it: the shortest form that reads back, with ".0"
 * on integral values, so that "1.0" written is "1.0" read. */
static int format_float(double d, char *buf)
{
	int len = d_to_str(buf, AR_VALUE_BUF - 2, d);

	if (isfinite(d) && !memchr(buf, '.', (size_t)len) && !memchr(buf, 'e', (size_t)len) &&
	    !memchr(buf, 'E', (size_t)len)) {
		buf[len++] = '.';
		buf[len++] = '0';
		buf[len] = '\0';
	}
	return len;
}

/* Only "-?digits.digits" can be an inline float, and only if the double with
 * its two low bits cleared prints back exactly as written. */
static bool float_value(const char *p, size_t len, ar_value *out)
{
	char buf[AR_VALUE_BUF];
	bool dot = false;
	double d;
	size_t i = p[0] == '-';
	ar_value v;

	if (len == 0 || len >= AR_VALUE_BUF - 2 || (p[0] == '-' && len == 1))
		return false;
	for (; i < len; i++) {
		if (p[i] == '.') {
			if (dot)
				return false;
			dot = true;
		} else if (p[i] < '0' || p[i] > '9') {
			return false;
		}
	}
	if (!dot || !str_to_d(p, len, &d) || !isfinite(d))
		return false;
	v = ar_from_double(d);
	if ((size_t)format_float(ar_double(v), buf) != len || memcmp(buf, p, len))
		return false;
	*out = v;
	return true;
}

ar_value ar_encode(const char *p, size_t len)
{
	struct ar_string *s;
	long long ll;
	ar_value v;

	if (str_to_ll(p, len, &ll) && int_fits(ll))
		return ar_from_int(ll);
	if (float_value(p, len, &v))
		return v;
	if (len <= SMALL_MAX)
		return ar_from_small(p, len);
	s = xmalloc(sizeof(*s) + len);
	s->len = (uint32_t)len;
	memcpy(s->data, p, len);
	return (ar_value)s;
}

void ar_value_free(ar_value v)
{
	if (v && (v & TAG_MASK) == TAG_PTR)
		xfree((void *)v);
}

static ar_value value_dup(ar_value v)
{
	const struct ar_string *s = (const struct ar_string *)v;
	struct ar_string *d;

	if (!v || (v & TAG_MASK) != TAG_PTR)
		return v;
	d = xmalloc(sizeof(*d) + s->len);
	memcpy(d, s, sizeof(*d) + s->len);
	return (ar_value)d;
}

static size_t value_mem(ar_value v)
{
	return v && (v & TAG_MASK) == TAG_PTR ? xusable((void *)v) : 0;
}

const char *ar_decode(ar_value v, char *buf, size_t *len)
{
	switch (v & TAG_MASK) {
	case TAG_INT:
		*len = (size_t)ll_to_str(buf, ar_int(v));
		return buf;
	case TAG_FLOAT:
		*len = (size_t)format_float(ar_double(v), buf);
		return buf;
	case TAG_SMALL:
		*len = (v >> 2) & 7;
		for (size_t i = 0; i < *len; i++)
			buf[i] = (char)(v >> (8 * (i + 1)));
		return buf;
	default: {
		const struct ar_string *s = (const struct ar_string *)v;

		*len = s->len;
		return s->data;
	}
	}
}

/* ---- allocation, counted in a->bytes ---------------------------------------------------------- */

static void *ar_alloc(struct array *a, size_t n)
{
	void *p = xmalloc(n);

	a->bytes += xusable(p);
	return p;
}

static void *ar_zalloc(struct array *a, size_t n)
{
	void *p = ar_alloc(a, n);

	memset(p, 0, n);
	return p;
}

static void *ar_realloc(struct array *a, void *p, size_t n)
{
	if (p)
		a->bytes -= xusable(p);
	p = xrealloc(p, n);
	a->bytes += xusable(p);
	return p;
}

static void ar_free(struct array *a, void *p)
{
	if (!p)
		return;
	a->bytes -= xusable(p);
	xfree(p);
}

static void put_value(struct array *a, ar_value *slot, ar_value v)
{
	a->bytes -= value_mem(*slot);
	ar_value_free(*slot);
	*slot = v;
	a->bytes += value_mem(v);
}

/* ---- slices --------------------------------------------------------------------------------- */

static size_t offsets_bytes(uint32_t cap)
{
	return (cap * sizeof(uint16_t) + sizeof(ar_value) - 1) / sizeof(ar_value) *
	       sizeof(ar_value);
}

static ar_value *dense_items(struct slice *s)
{
	return (ar_value *)(s + 1);
}

static uint16_t *sparse_offsets(struct slice *s)
{
	return (uint16_t *)(s + 1);
}

static ar_value *sparse_values(struct slice *s)
{
	return (ar_value *)((char *)(s + 1) + offsets_bytes(s->size));
}

static size_t dense_bytes(uint32_t size)
{
	return sizeof(struct slice) + size * sizeof(ar_value);
}

static size_t sparse_bytes(uint32_t cap)
{
	return sizeof(struct slice) + offsets_bytes(cap) + cap * sizeof(ar_value);
}

static uint32_t kmax(void)
{
	return (uint32_t)__atomic_load_n(&config.array_sparse_kmax, __ATOMIC_RELAXED);
}

static uint32_t kmin(void)
{
	return (uint32_t)__atomic_load_n(&config.array_sparse_kmin, __ATOMIC_RELAXED);
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static struct slice *dense_new(struct array *a, uint32_t off)
{
	struct slice *s = ar_alloc(a, dense_bytes(DENSE_MIN));

	*s = (struct slice){ .dense = true, .offset = off, .size = DENSE_MIN };
	if (s->offset + DENSE_MIN > a->slice_size)
		s->offset = a->slice_size - DENSE_MIN;
	memset(dense_items(s), 0, DENSE_MIN * sizeof(ar_value));
	return s;
}

static struct slice *sparse_new(struct array *a, uint32_t cap)
{
	struct slice *s = ar_alloc(a, sparse_bytes(cap));

	*s = (struct slice){ .dense = false, .size = cap };
	return s;
}

static void slice_free(struct array *a, struct slice *s)
{
	if (s->dense) {
		for (uint32_t i = 0; i < s->size; i++)
			put_value(a, &dense_items(s)[i], 0);
	} else {
		for (uint32_t i = 0; i < s->count; i++)
			put_value(a, &sparse_values(s)[i], 0);
	}
	ar_free(a, s);
}

/* A dense copy of s over the window [offset, offset + size) (s's values
 * move; s is freed). */
static struct slice *dense_rewindow(struct array *a, struct slice *s, uint32_t offset,
				    uint32_t size)
{
	struct slice *d = ar_alloc(a, dense_bytes(size));

	*d = (struct slice){
		.dense = true, .count = s->count, .offset = offset, .size = size, .max = s->max
	};
	memset(dense_items(d), 0, size * sizeof(ar_value));
	if (s->dense) {
		memcpy(dense_items(d) + (s->offset - offset), dense_items(s),
		       s->size * sizeof(ar_value));
	} else {
		for (uint32_t i = 0; i < s->count; i++)
			dense_items(d)[sparse_offsets(s)[i] - offset] = sparse_values(s)[i];
		d->max = s->count ? sparse_offsets(s)[s->count - 1] : 0;
	}
	ar_free(a, s);
	return d;
}

/* Grows a dense window to cover off. */
static struct slice *dense_cover(struct array *a, struct slice *s, uint32_t off)
{
	uint32_t size = s->size, offset = s->offset;

	if (off >= s->offset && off < s->offset + s->size)
		return s;
	if (off >= s->offset + s->size) {
		/* Rightward: double until it fits; realloc when it stays put. */
		while (off >= offset + size && size < a->slice_size)
			size <<= 1;
		if (size >= a->slice_size) {
			size = a->slice_size;
			offset = 0;
		} else if (offset + size > a->slice_size) {
			offset = a->slice_size - size;
		}
		if (offset == s->offset) {
			uint32_t old = s->size;

			s = ar_realloc(a, s, dense_bytes(size));
			memset(dense_items(s) + old, 0, (size - old) * sizeof(ar_value));
			s->size = size;
			return s;
		}
	} else {
		/* Leftward: the next power of two over what must be covered,
		 * the old values kept at the right. */
		uint32_t end = s->offset + s->size;

		size = pow2_at_least(end - off);
		if (size < DENSE_MIN)
			size = DENSE_MIN;
		if (size >= a->slice_size) {
			size = a->slice_size;
			offset = 0;
		} else {
			offset = end > size ? end - size : 0;
		}
	}
	return dense_rewindow(a, s, offset, size);
}

/* A sparse slice turned dense over the smallest window holding its values. */
static struct slice *sparse_promote(struct array *a, struct slice *s)
{
	uint32_t lo, hi, size, offset;

	if (!s->count) {
		ar_free(a, s);
		return dense_new(a, 0);
	}
	lo = sparse_offsets(s)[0];
	hi = sparse_offsets(s)[s->count - 1];
	size = pow2_at_least(hi - lo + 1);
	if (size < DENSE_MIN)
		size = DENSE_MIN;
	offset = lo;
	if (size >= a->slice_size) {
		size = a->slice_size;
		offset = 0;
	} else if (offset + size > a->slice_size) {
		offset = a->slice_size - size;
	}
	return dense_rewindow(a, s, offset, size);
}

/* A dense slice with few values left turns sparse, if that saves a quarter
 * of its size and the window is at least 4 kmin wide. */
static struct slice *dense_maybe_demote(struct array *a, struct slice *d)
{
	uint32_t kx = kmax(), kn = kmin();
	struct slice *s;

	if (!kx || d->count > kn || d->count > kx || d->size == DENSE_MIN || d->size < 4 * kn ||
	    dense_bytes(d->size) < sparse_bytes(kn) * 5 / 4)
		return d;
	s = sparse_new(a, kn);
	for (uint32_t i = 0; i < d->size && s->count < d->count; i++) {
		if (dense_items(d)[i]) {
			sparse_offsets(s)[s->count] = (uint16_t)(d->offset + i);
			sparse_values(s)[s->count++] = dense_items(d)[i];
		}
	}
	ar_free(a, d);
	return s;
}

static void dense_fix_max(struct slice *d)
{
	for (int64_t i = (int64_t)d->max - d->offset; i >= 0; i--) {
		if (dense_items(d)[i]) {
			d->max = d->offset + (uint32_t)i;
			return;
		}
	}
	d->max = d->offset;
}

/* Position of off in a sparse slice, or where it would go. */
static uint32_t sparse_find(struct slice *s, uint32_t off, bool *found)
{
	uint32_t lo = 0, hi = s->count;
	uint16_t *o = sparse_offsets(s);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (o[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < s->count && o[lo] == off;
	return lo;
}

static uint32_t slice_max(struct slice *s)
{
	return s->dense ? s->max : sparse_offsets(s)[s->count - 1];
}

/* ---- the directory -------------------------------------------------------------------------- */

static uint32_t block_find(const struct array *a, uint64_t id, bool *found)
{
	uint32_t lo = 0, hi = a->sdir_len;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (a->superdir[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < a->sdir_len && a->superdir[lo].id == id;
	return lo;
}

static struct slice *slice_get(const struct array *a, uint64_t sid)
{
	bool found;
	uint32_t pos;

	if (!a->superdir)
		return sid < a->dir_len ? a->dir[sid] : NULL;
	pos = block_find(a, sid / BLOCK_SLOTS, &found);
	return found ? a->superdir[pos].slots[sid % BLOCK_SLOTS] : NULL;
}

static void block_remove(struct array *a, uint32_t pos)
{
	ar_free(a, a->superdir[pos].slots);
	memmove(a->superdir + pos, a->superdir + pos + 1,
		(a->sdir_len - pos - 1) * sizeof(*a->superdir));
	a->sdir_len--;
}

static void to_superdir(struct array *a)
{
	a->sdir_cap = 4;
	a->superdir = ar_alloc(a, a->sdir_cap * sizeof(*a->superdir));
	a->sdir_len = 0;
	if (a->dir_len) {
		struct block *b = &a->superdir[a->sdir_len++];

		*b = (struct block){ .id = 0,
				     .slots = ar_zalloc(a, BLOCK_SLOTS * sizeof(struct slice *)) };
		for (uint64_t i = 0; i < a->dir_len; i++) {
			b->slots[i] = a->dir[i];
			b->count += a->dir[i] != NULL;
		}
	}
	ar_free(a, a->dir);
	a->dir = NULL;
	a->dir_len = 0;
}

/* Makes room in the directory for slice id sid. */
static void dir_grow(struct array *a, uint64_t sid)
{
	uint64_t len = a->dir_len ? a->dir_len : 1;

	if (!a->superdir && sid >= BLOCK_SLOTS)
		to_superdir(a);
	if (a->superdir || sid < a->dir_len)
		return;
	while (len <= sid)
		len <<= 1;
	a->dir = ar_realloc(a, a->dir, len * sizeof(*a->dir));
	memset(a->dir + a->dir_len, 0, (len - a->dir_len) * sizeof(*a->dir));
	a->dir_len = len;
}

static void dir_maybe_shrink(struct array *a)
{
	uint64_t len = 1;

	if (a->superdir || !a->count || a->highest >= a->dir_len * 9 / 10)
		return;
	while (len <= a->highest)
		len <<= 1;
	if (len >= a->dir_len)
		return;
	a->dir = ar_realloc(a, a->dir, len * sizeof(*a->dir));
	a->dir_len = len;
}

/* Puts s (or NULL: removes the slice) at slice id sid. */
static void slice_put(struct array *a, uint64_t sid, struct slice *s)
{
	bool found;
	uint32_t pos, off = (uint32_t)(sid % BLOCK_SLOTS);
	struct block *b;

	if (!a->superdir) {
		a->nslices += (s != NULL) - (a->dir[sid] != NULL);
		a->dir[sid] = s;
		return;
	}
	pos = block_find(a, sid / BLOCK_SLOTS, &found);
	if (!s) {
		if (!found || !a->superdir[pos].slots[off])
			return;
		b = &a->superdir[pos];
		b->slots[off] = NULL;
		b->count--;
		a->nslices--;
		if (!b->count)
			block_remove(a, pos);
		return;
	}
	if (!found) {
		if (a->sdir_len == a->sdir_cap) {
			a->sdir_cap *= 2;
			a->superdir =
				ar_realloc(a, a->superdir, a->sdir_cap * sizeof(*a->superdir));
		}
		memmove(a->superdir + pos + 1, a->superdir + pos,
			(a->sdir_len - pos) * sizeof(*a->superdir));
		a->superdir[pos] =
			(struct block){ .id = sid / BLOCK_SLOTS,
					.slots = ar_zalloc(a,
							   BLOCK_SLOTS * sizeof(struct slice *)) };
		a->sdir_len++;
	}
	b = &a->superdir[pos];
	if (!b->slots[off]) {
		b->count++;
		a->nslices++;
	}
	b->slots[off] = s;
}

/* The highest slice id in use at or below `from`. */
static void find_highest(struct array *a, uint64_t from)
{
	a->highest = 0;
	if (!a->count)
		return;
	if (a->superdir) {
		for (int64_t bi = (int64_t)a->sdir_len - 1; bi >= 0; bi--) {
			struct block *b = &a->superdir[bi];

			for (int si = BLOCK_SLOTS - 1; si >= 0; si--) {
				if (b->slots[si] && b->id * BLOCK_SLOTS + (uint64_t)si <= from) {
					a->highest = b->id * BLOCK_SLOTS + (uint64_t)si;
					return;
				}
			}
		}
		return;
	}
	for (int64_t i = (int64_t)(from < a->dir_len ? from : a->dir_len - 1); i >= 0; i--) {
		if (a->dir[i]) {
			a->highest = (uint64_t)i;
			return;
		}
	}
}

/* ---- the array ------------------------------------------------------------------------------ */

static struct array *array_alloc(uint32_t slice_size)
{
	struct array *a = xcalloc(1, sizeof(*a));

	a->insert_idx = AR_NO_INSERT;
	a->slice_size = slice_size;
	while ((1u << a->slice_bits) < slice_size)
		a->slice_bits++;
	a->bytes = xusable(a);
	return a;
}

struct obj array_new(void)
{
	struct obj o = { .type = OBJ_ARRAY, .enc = ENC_SLICED_ARRAY };

	o.ptr = array_alloc((uint32_t)config.array_slice_size);
	return o;
}

uint64_t array_count(const struct array *a)
{
	return a->count;
}

uint64_t array_len(const struct array *a)
{
	struct slice *s;

	if (!a->count || !(s = slice_get(a, a->highest)))
		return 0;
	return (a->highest << a->slice_bits) + slice_max(s) + 1;
}

uint64_t array_insert_idx(const struct array *a)
{
	return a->insert_idx;
}

void array_set_insert_idx(struct array *a, uint64_t idx)
{
	a->insert_idx = idx;
}

ar_value array_get(const struct array *a, uint64_t idx)
{
	struct slice *s = slice_get(a, idx >> a->slice_bits);
	uint32_t off = (uint32_t)(idx & (a->slice_size - 1));
	bool found;
	uint32_t pos;

	if (!s)
		return 0;
	if (s->dense)
		return off >= s->offset && off < s->offset + s->size
			       ? dense_items(s)[off - s->offset]
			       : 0;
	pos = sparse_find(s, off, &found);
	return found ? sparse_values(s)[pos] : 0;
}

static void dense_store(struct array *a, struct slice *s, uint32_t off, ar_value v)
{
	ar_value *slot = &dense_items(s)[off - s->offset];

	if (!*slot) {
		s->count++;
		a->count++;
	}
	put_value(a, slot, v);
	if (off > s->max)
		s->max = off;
}

void array_set(struct array *a, uint64_t idx, ar_value v)
{
	uint64_t sid = idx >> a->slice_bits;
	uint32_t off = (uint32_t)(idx & (a->slice_size - 1)), pos;
	struct slice *s;
	bool found;

	dir_grow(a, sid);
	s = slice_get(a, sid);
	if (!s) {
		s = kmax() ? sparse_new(a, kmax() < 4 ? kmax() : 4) : dense_new(a, off);
		slice_put(a, sid, s);
	}
	if (s->dense) {
		s = dense_cover(a, s, off);
		slice_put(a, sid, s);
		dense_store(a, s, off, v);
	} else if ((pos = sparse_find(s, off, &found)), found) {
		put_value(a, &sparse_values(s)[pos], v);
	} else if (s->count >= kmax()) {
		s = dense_cover(a, sparse_promote(a, s), off);
		slice_put(a, sid, s);
		dense_store(a, s, off, v);
	} else {
		if (s->count == s->size) {
			uint32_t cap = s->size * 2 > kmax() ? kmax() : s->size * 2;
			struct slice *n = sparse_new(a, cap);

			n->count = s->count;
			memcpy(sparse_offsets(n), sparse_offsets(s), s->count * sizeof(uint16_t));
			memcpy(sparse_values(n), sparse_values(s), s->count * sizeof(ar_value));
			ar_free(a, s);
			slice_put(a, sid, s = n);
		}
		memmove(sparse_offsets(s) + pos + 1, sparse_offsets(s) + pos,
			(s->count - pos) * sizeof(uint16_t));
		memmove(sparse_values(s) + pos + 1, sparse_values(s) + pos,
			(s->count - pos) * sizeof(ar_value));
		sparse_offsets(s)[pos] = (uint16_t)off;
		sparse_values(s)[pos] = 0;
		put_value(a, &sparse_values(s)[pos], v);
		s->count++;
		a->count++;
	}
	if (sid > a->highest || a->count == 1)
		a->highest = sid;
}

/* After values left slice sid: frees it when empty (fixing the directory),
 * else lets a dense one turn sparse. */
static void slice_settle(struct array *a, uint64_t sid, struct slice *s)
{
	if (s->count) {
		if (s->dense)
			slice_put(a, sid, dense_maybe_demote(a, s));
		return;
	}
	slice_free(a, s);
	slice_put(a, sid, NULL);
}

bool array_del(struct array *a, uint64_t idx)
{
	uint64_t sid = idx >> a->slice_bits;
	uint32_t off = (uint32_t)(idx & (a->slice_size - 1)), pos;
	struct slice *s = slice_get(a, sid);
	bool found;

	if (!s)
		return false;
	if (s->dense) {
		ar_value *slot;

		if (off < s->offset || off >= s->offset + s->size)
			return false;
		slot = &dense_items(s)[off - s->offset];
		if (!*slot)
			return false;
		put_value(a, slot, 0);
		if (off == s->max && s->count > 1)
			dense_fix_max(s);
	} else {
		pos = sparse_find(s, off, &found);
		if (!found)
			return false;
		put_value(a, &sparse_values(s)[pos], 0);
		memmove(sparse_offsets(s) + pos, sparse_offsets(s) + pos + 1,
			(s->count - pos - 1) * sizeof(uint16_t));
		memmove(sparse_values(s) + pos, sparse_values(s) + pos + 1,
			(s->count - pos - 1) * sizeof(ar_value));
	}
	s->count--;
	a->count--;
	slice_settle(a, sid, s);
	if (!slice_get(a, sid)) {
		if (sid >= a->highest)
			find_highest(a, sid);
		dir_maybe_shrink(a);
	}
	return true;
}

/* Deletes offsets [lo, hi] of slice sid; returns how many values went. */
static uint64_t slice_del_range(struct array *a, uint64_t sid, uint32_t lo, uint32_t hi)
{
	struct slice *s = slice_get(a, sid);
	uint64_t n = 0;

	if (!s)
		return 0;
	if (s->dense) {
		uint32_t from = lo > s->offset ? lo : s->offset;
		uint32_t to = hi < s->offset + s->size - 1 ? hi : s->offset + s->size - 1;

		for (uint32_t off = from; from <= to && off <= to; off++) {
			ar_value *slot = &dense_items(s)[off - s->offset];

			if (*slot) {
				put_value(a, slot, 0);
				n++;
			}
		}
		s->count -= (uint32_t)n;
		if (s->count && s->max >= from) {
			s->max = s->offset + s->size - 1;
			dense_fix_max(s);
		}
	} else {
		bool found;
		uint32_t first = sparse_find(s, lo, &found), last = sparse_find(s, hi, &found);

		last += found;
		for (uint32_t i = first; i < last; i++)
			put_value(a, &sparse_values(s)[i], 0);
		memmove(sparse_offsets(s) + first, sparse_offsets(s) + last,
			(s->count - last) * sizeof(uint16_t));
		memmove(sparse_values(s) + first, sparse_values(s) + last,
			(s->count - last) * sizeof(ar_value));
		n = last - first;
		s->count -= (uint32_t)n;
	}
	a->count -= n;
	slice_settle(a, sid, s);
	return n;
}

/* Calls fn(ctx, sid) for each slice id in use in [lo, hi], in increasing
 * order. fn may remove the slice it is given. */
static void each_slice(struct array *a, uint64_t lo, uint64_t hi,
		       void (*fn)(struct array *a, uint64_t sid, void *ctx), void *ctx)
{
	if (!a->superdir) {
		for (uint64_t sid = lo; sid <= hi && sid < a->dir_len; sid++)
			if (a->dir[sid])
				fn(a, sid, ctx);
		return;
	}
	for (uint64_t id = lo / BLOCK_SLOTS; id <= hi / BLOCK_SLOTS;) {
		bool found;
		uint32_t pos = block_find(a, id, &found);
		uint64_t base;

		if (pos == a->sdir_len)
			return;
		id = a->superdir[pos].id;
		if (id > hi / BLOCK_SLOTS)
			return;
		base = id * BLOCK_SLOTS;
		for (uint64_t si = lo > base ? lo - base : 0; si < BLOCK_SLOTS && base + si <= hi;
		     si++) {
			/* Re-find the block: removing a slice may remove it. */
			uint32_t p = block_find(a, id, &found);

			if (!found)
				break;
			if (a->superdir[p].slots[si])
				fn(a, base + si, ctx);
		}
		id++;
	}
}

struct range_del {
	uint64_t lo, hi, deleted;
};

static void del_in_slice(struct array *a, uint64_t sid, void *ctx)
{
	struct range_del *r = ctx;
	uint64_t base = sid << a->slice_bits;
	uint32_t from = r->lo > base ? (uint32_t)(r->lo - base) : 0;
	uint32_t to = r->hi - base < a->slice_size ? (uint32_t)(r->hi - base) : a->slice_size - 1;

	r->deleted += slice_del_range(a, sid, from, to);
}

uint64_t array_del_range(struct array *a, uint64_t lo, uint64_t hi)
{
	struct range_del r = { .lo = lo, .hi = hi };

	if (!a->count || lo > hi)
		return 0;
	each_slice(a, lo >> a->slice_bits, hi >> a->slice_bits, del_in_slice, &r);
	if (a->count)
		find_highest(a, UINT64_MAX);
	else
		a->highest = 0;
	dir_maybe_shrink(a);
	return r.deleted;
}

void array_prepare_range(struct array *a, uint64_t lo, uint64_t hi)
{
	uint64_t first = lo >> a->slice_bits, last = hi >> a->slice_bits;
	uint32_t kx = kmax();

	if (!kx)
		return;
	dir_grow(a, last);
	for (uint64_t sid = first; sid <= last; sid++) {
		uint64_t start = sid == first ? lo : sid << a->slice_bits;
		uint64_t end = sid == last ? hi : ((sid + 1) << a->slice_bits) - 1;
		uint32_t from = (uint32_t)(start & (a->slice_size - 1));
		uint32_t to = (uint32_t)(end & (a->slice_size - 1)), span = to - from + 1, have = 0;
		struct slice *s = slice_get(a, sid);

		if (!s) {
			if (span > kx)
				slice_put(a, sid, dense_new(a, from));
			continue;
		}
		if (s->dense)
			continue;
		for (uint32_t i = 0; i < s->count; i++)
			have += sparse_offsets(s)[i] >= from && sparse_offsets(s)[i] <= to;
		if (span > kx || s->count + span - have > kx)
			slice_put(a, sid, sparse_promote(a, s));
	}
}

/* ---- walking -------------------------------------------------------------------------------- */

/* Walks the values of slice s (id sid) with offsets in [lo, hi]; false if fn
 * asked to stop. */
static bool walk_slice(const struct array *a, uint64_t sid, struct slice *s, uint32_t lo,
		       uint32_t hi, bool rev, array_walk_fn *fn, void *ctx)
{
	uint64_t base = sid << a->slice_bits;

	if (s->dense) {
		int64_t from = lo > s->offset ? lo : s->offset;
		int64_t to = hi < s->offset + s->size - 1 ? hi : s->offset + s->size - 1;

		for (int64_t i = rev ? to : from; rev ? i >= from : i <= to; i += rev ? -1 : 1) {
			ar_value v = dense_items(s)[i - s->offset];

			if (v && !fn(ctx, base + (uint64_t)i, v))
				return false;
		}
		return true;
	}
	for (int64_t i = rev ? (int64_t)s->count - 1 : 0; rev ? i >= 0 : i < s->count;
	     i += rev ? -1 : 1) {
		uint16_t off = sparse_offsets(s)[i];

		if (off >= lo && off <= hi && !fn(ctx, base + off, sparse_values(s)[i]))
			return false;
	}
	return true;
}

/* The next slice in use from sid toward the end (or the start when rev),
 * not past `bound`; false if none. */
static bool next_slice(const struct array *a, uint64_t sid, uint64_t bound, bool rev, uint64_t *out)
{
	if (!a->superdir) {
		if (rev) {
			if (!a->dir_len)
				return false;
			for (int64_t i = (int64_t)(sid < a->dir_len ? sid : a->dir_len - 1);
			     i >= (int64_t)bound; i--)
				if (a->dir[i])
					return *out = (uint64_t)i, true;
			return false;
		}
		for (uint64_t i = sid; i <= bound && i < a->dir_len; i++)
			if (a->dir[i])
				return *out = i, true;
		return false;
	}
	for (;;) {
		bool found;
		uint32_t pos = block_find(a, sid / BLOCK_SLOTS, &found);
		const struct block *b;

		if (rev) {
			if (!found) {
				if (pos == 0)
					return false;
				b = &a->superdir[pos - 1];
				sid = b->id * BLOCK_SLOTS + BLOCK_SLOTS - 1;
			} else {
				b = &a->superdir[pos];
			}
			if (sid < bound)
				return false;
			for (int64_t si = (int64_t)(sid % BLOCK_SLOTS); si >= 0; si--) {
				uint64_t id = b->id * BLOCK_SLOTS + (uint64_t)si;

				if (id < bound)
					return false;
				if (b->slots[si])
					return *out = id, true;
			}
			if (b->id == 0)
				return false;
			sid = b->id * BLOCK_SLOTS - 1;
		} else {
			if (pos == a->sdir_len)
				return false;
			b = &a->superdir[pos];
			if (!found)
				sid = b->id * BLOCK_SLOTS;
			if (sid > bound)
				return false;
			for (uint64_t si = sid % BLOCK_SLOTS; si < BLOCK_SLOTS; si++) {
				uint64_t id = b->id * BLOCK_SLOTS + si;

				if (id > bound)
					return false;
				if (b->slots[si])
					return *out = id, true;
			}
			sid = (b->id + 1) * BLOCK_SLOTS;
		}
	}
}

void array_walk(const struct array *a, uint64_t from, uint64_t to, array_walk_fn *fn, void *ctx)
{
	bool rev = from > to;
	uint64_t lo = rev ? to : from, hi = rev ? from : to;
	uint64_t first = lo >> a->slice_bits, last = hi >> a->slice_bits, sid;

	if (!a->count)
		return;
	for (uint64_t at = rev ? last : first; next_slice(a, at, rev ? first : last, rev, &sid);) {
		uint64_t base = sid << a->slice_bits;
		uint32_t off_lo = lo > base ? (uint32_t)(lo - base) : 0;
		uint32_t off_hi =
			hi - base < a->slice_size ? (uint32_t)(hi - base) : a->slice_size - 1;

		if (!walk_slice(a, sid, slice_get(a, sid), off_lo, off_hi, rev, fn, ctx))
			return;
		if (rev ? sid == first : sid == last)
			return;
		at = rev ? sid - 1 : sid + 1;
	}
}

/* ---- ARRING's rebuild ----------------------------------------------------------------------- */

static void array_clear(struct array *a);

void array_ring_rework(struct array *a, uint64_t old_span, uint64_t keep)
{
	/* A rebuilt ring takes the configured slice size, as a new array. */
	struct array *n = array_alloc((uint32_t)config.array_slice_size);
	uint64_t anchor = a->insert_idx == AR_NO_INSERT ? old_span - 1 : a->insert_idx % old_span;
	uint64_t kept = 0, src = anchor;

	while (kept < keep && array_get(a, src)) {
		kept++;
		src = src ? src - 1 : old_span - 1;
	}
	src = src + 1 == old_span ? 0 : src + 1;
	for (uint64_t dst = 0; dst < kept; dst++) {
		array_set(n, dst, value_dup(array_get(a, src)));
		src = src + 1 == old_span ? 0 : src + 1;
	}
	if (kept)
		n->insert_idx = kept - 1;
	/* a keeps its address (the key's value points at it): swap contents. */
	array_clear(a);
	n->bytes -= xusable(n);
	a->bytes -= xusable(a);
	{
		struct array tmp = *a;

		*a = *n;
		*n = tmp;
	}
	a->bytes += xusable(a);
	n->bytes += xusable(n);
	xfree(n);
}

/* ---- whole values --------------------------------------------------------------------------- */

static void free_slice_cb(struct array *a, uint64_t sid, void *ctx)
{
	(void)ctx;
	slice_free(a, slice_get(a, sid));
	slice_put(a, sid, NULL);
}

/* Frees every slice and the directory: a is left empty. */
static void array_clear(struct array *a)
{
	each_slice(a, 0, UINT64_MAX >> a->slice_bits, free_slice_cb, NULL);
	ar_free(a, a->dir);
	a->dir = NULL;
	a->dir_len = 0;
	while (a->sdir_len)
		block_remove(a, a->sdir_len - 1);
	ar_free(a, a->superdir);
	a->superdir = NULL;
	a->sdir_cap = 0;
	a->count = a->highest = a->nslices = 0;
}

static void array_obj_free(struct obj *o)
{
	struct array *a = array_of(o);

	array_clear(a);
	xfree(a);
}

static bool copy_value(void *ctx, uint64_t idx, ar_value v)
{
	array_set(ctx, idx, value_dup(v));
	return true;
}

static struct obj array_obj_dup(const struct obj *o)
{
	const struct array *a = array_of(o);
	struct array *d = array_alloc(a->slice_size);
	struct obj out = *o;

	array_walk(a, 0, UINT64_MAX - 1, copy_value, d);
	d->insert_idx = a->insert_idx;
	out.ptr = d;
	return out;
}

static size_t array_obj_mem(const struct obj *o)
{
	return array_of(o)->bytes;
}

/* Redis's lazy-free effort for an array: its values. */
static size_t array_obj_free_effort(const struct obj *o)
{
	return array_of(o)->count;
}

static const struct obj_ops array_ops = {
	.free = array_obj_free,
	.dup = array_obj_dup,
	.mem = array_obj_mem,
	.free_effort = array_obj_free_effort,
};

static void __attribute__((constructor)) array_register(void)
{
	obj_register(OBJ_ARRAY, &array_ops);
}

/* ---- ARINFO --------------------------------------------------------------------------------- */

static void count_slice(struct array_info *in, const struct slice *s)
{
	if (s->dense) {
		in->dense++;
		in->dense_window_total += s->size;
		in->dense_count_total += s->count;
	} else {
		in->sparse++;
		in->sparse_cap_total += s->size;
	}
}

void array_info(const struct array *a, struct array_info *in)
{
	*in = (struct array_info){
		.slices = a->nslices,
		.directory_size = a->superdir ? a->sdir_cap : a->dir_len,
		.superdir_entries = a->superdir ? a->sdir_len : 0,
		.slice_size = a->slice_size,
	};
	if (a->superdir) {
		for (uint32_t b = 0; b < a->sdir_len; b++)
			for (int si = 0; si < BLOCK_SLOTS; si++)
				if (a->superdir[b].slots[si])
					count_slice(in, a->superdir[b].slots[si]);
	} else {
		for (uint64_t i = 0; i < a->dir_len; i++)
			if (a->dir[i])
				count_slice(in, a->dir[i]);
	}
}
