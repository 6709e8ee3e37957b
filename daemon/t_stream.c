// SPDX-License-Identifier: BSD-3-Clause
/*
 * t_stream: the stream value (see t_stream.h for the layout).
 *
 * A node's bytes: the master fields (count, then each as a varint length and
 * its bytes), then the entries, each
 *   flags (1 byte: ENTRY_DELETED, ENTRY_SAMEFIELDS)
 *   varint ms delta   (ms - master.ms, never negative: IDs only grow)
 *   varint seq delta  (zigzag of seq - master.seq, which may be negative)
 *   [varint nfields, then field, value, ...]  or, with ENTRY_SAMEFIELDS,
 *   value, ...  (one per master field)
 * Against a Redis listpack entry this saves the per-element backlength and
 * encoding bytes and the trailing lp-count, so an entry costs at most what
 * Redis's does (docs/architecture.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "config.h"
#include "mem.h"
#include "t_stream.h"
#include "t_stream_cg.h"
#include "util.h"
#include "varint.h"

enum { ENTRY_DELETED = 1, ENTRY_SAMEFIELDS = 2 };

/* One allocation: header and bytes. */
struct snode {
	struct stream_id master;
	uint32_t live, deleted; /* entries by state */
	uint32_t used;		/* bytes of data[] in use */
	uint32_t first;		/* offset of the first entry (after master fields) */
	uint64_t nmaster;	/* master field count */
	/* The bytes Redis's listpack for the same entries would take, its two
	 * counters aside: Redis closes a node on those bytes, and so do we, so
	 * that nodes (and what `~` trims) end where Redis's do. */
	uint64_t lp_bytes;
	unsigned char data[];
};

/* A recent idempotency ID of a producer and the entry it made. */
struct idmp_iid {
	struct stream_id id;
	size_t len;
	char iid[];
};

struct idmp_producer {
	char *pid;
	size_t plen;
	struct idmp_iid **iids; /* oldest first */
	size_t n, cap;
};

struct stream {
	struct snode **nodes; /* by master ID */
	size_t nnodes, cap;
	uint64_t length, entries_added;
	struct stream_id last_id, first_id, max_deleted;
	struct idmp_producer **producers;
	size_t nproducers;
	uint64_t idmp_duration, idmp_maxsize; /* seconds; IDs per producer */
	uint64_t iids_added, iids_duplicates;
	struct stream_cgroups *cg; /* consumer groups, NULL if none */
};

static struct stream *S(const struct obj *o)
{
	return o->ptr;
}

struct obj stream_new(void)
{
	struct stream *s = xmalloc(sizeof(*s));

	memset(s, 0, sizeof(*s));
	s->idmp_duration = (uint64_t)config.stream_idmp_duration;
	s->idmp_maxsize = (uint64_t)config.stream_idmp_maxsize;
	return (struct obj){ .type = OBJ_STREAM, .enc = ENC_STREAM, .ptr = s };
}

uint64_t stream_len(const struct obj *o)
{
	return S(o)->length;
}

struct stream_id stream_last_id(const struct obj *o)
{
	return S(o)->last_id;
}

struct stream_id stream_max_deleted(const struct obj *o)
{
	return S(o)->max_deleted;
}

uint64_t stream_entries_added(const struct obj *o)
{
	return S(o)->entries_added;
}

struct stream_id stream_first_id(const struct obj *o)
{
	return S(o)->first_id;
}

size_t stream_node_count(const struct obj *o)
{
	return S(o)->nnodes;
}

struct stream_id stream_node_master(const struct obj *o, size_t i)
{
	return S(o)->nodes[i]->master;
}

struct stream_cgroups **stream_cg_slot(const struct obj *o)
{
	return &S(o)->cg;
}

int stream_id_cmp(const struct stream_id *a, const struct stream_id *b)
{
	if (a->ms != b->ms)
		return a->ms < b->ms ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

static int u64_str(char *buf, uint64_t v)
{
	char tmp[24];
	int n = 0, len;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (len = 0; len < n; len++)
		buf[len] = tmp[n - 1 - len];
	return len;
}

int stream_id_str(char *buf, const struct stream_id *id)
{
	int n = u64_str(buf, id->ms);

	buf[n++] = '-';
	n += u64_str(buf + n, id->seq);
	buf[n] = '\0';
	return n;
}

/* Redis's string2ull: the canonical integer form, else whatever strtoull(3)
 * takes whole (leading white space, a sign, leading zeros; a '-' wraps), so
 * that " 1", "+1" and "007" are IDs as they are to Redis. */
static bool parse_u64(const char *p, size_t len, uint64_t *v)
{
	char buf[128], *end;
	unsigned long long r;
	long long ll;

	if (str_to_ll(p, len, &ll)) {
		if (ll < 0)
			return false;
		*v = (uint64_t)ll;
		return true;
	}
	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	r = strtoull(buf, &end, 10);
	if (errno == EINVAL || errno == ERANGE || *end)
		return false;
	*v = r;
	return true;
}

int stream_id_parse(const char *p, size_t len, uint64_t missing_seq, bool strict,
		    struct stream_id *id, bool *seq_given)
{
	const char *dash;

	if (len > 127)
		return -EINVAL;
	/* Redis reads the argument as a C string: a NUL ends it. */
	len = strnlen(p, len);
	if (seq_given)
		*seq_given = true;
	if (len == 1 && (p[0] == '-' || p[0] == '+')) {
		if (strict)
			return -EINVAL;
		id->ms = id->seq = p[0] == '-' ? 0 : UINT64_MAX;
		return 0;
	}
	dash = memchr(p, '-', len);
	if (!parse_u64(p, dash ? (size_t)(dash - p) : len, &id->ms))
		return -EINVAL;
	if (!dash) {
		id->seq = missing_seq;
		return 0;
	}
	len -= (size_t)(dash + 1 - p);
	p = dash + 1;
	if (seq_given && len == 1 && p[0] == '*') {
		id->seq = 0;
		*seq_given = false;
		return 0;
	}
	return parse_u64(p, len, &id->seq) ? 0 : -EINVAL;
}

int stream_id_incr(struct stream_id *id)
{
	if (id->seq != UINT64_MAX) {
		id->seq++;
		return 0;
	}
	if (id->ms == UINT64_MAX) {
		id->ms = id->seq = 0;
		return -ERANGE;
	}
	id->ms++;
	id->seq = 0;
	return 0;
}

int stream_id_decr(struct stream_id *id)
{
	if (id->seq) {
		id->seq--;
		return 0;
	}
	if (!id->ms) {
		id->ms = id->seq = UINT64_MAX;
		return -ERANGE;
	}
	id->ms--;
	id->seq = UINT64_MAX;
	return 0;
}

/* ---- node encoding ---- */

static size_t put_str(unsigned char *p, const char *s, size_t len)
{
	size_t n = varint_put(p, len);

	memcpy(p + n, s, len);
	return n + len;
}

static const unsigned char *skip_str(const unsigned char *p)
{
	uint64_t len;

	p += varint_get(p, &len);
	return p + len;
}

static uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Decodes the entry at off into *e (cursor set) and *flags; returns the
 * offset just past it. */
static uint32_t node_entry(const struct snode *n, uint32_t off, struct stream_entry *e,
			   unsigned *flags)
{
	const unsigned char *p = n->data + off;
	uint64_t d;

	*flags = *p++;
	p += varint_get(p, &d);
	e->id.ms = n->master.ms + d;
	p += varint_get(p, &d);
	e->id.seq = n->master.seq + unzigzag(d);
	if (*flags & ENTRY_SAMEFIELDS) {
		e->nfields = n->nmaster;
		e->fields = n->data + varint_len(n->nmaster);
	} else {
		p += varint_get(p, &e->nfields);
		e->fields = NULL;
	}
	e->p = p;
	e->left = e->nfields;
	for (uint64_t i = 0; i < e->nfields; i++) {
		if (!e->fields)
			p = skip_str(p);
		p = skip_str(p);
	}
	return (uint32_t)(p - n->data);
}

bool stream_entry_next(struct stream_entry *e, const char **f, size_t *flen, const char **v,
		       size_t *vlen)
{
	uint64_t len;
	const unsigned char **fp = e->fields ? &e->fields : &e->p;

	if (!e->left)
		return false;
	e->left--;
	*fp += varint_get(*fp, &len);
	*f = (const char *)*fp;
	*flen = len;
	*fp += len;
	e->p += varint_get(e->p, &len);
	*v = (const char *)e->p;
	*vlen = len;
	e->p += len;
	return true;
}

/* Do the pairs match the node's master fields? */
static bool same_fields(const struct snode *n, const char *const *f, const size_t *flen,
			uint64_t nf)
{
	const unsigned char *p = n->data;
	uint64_t cnt, len;

	p += varint_get(p, &cnt);
	if (cnt != nf)
		return false;
	for (uint64_t i = 0; i < nf; i++) {
		p += varint_get(p, &len);
		if (len != flen[i] || memcmp(p, f[i], len))
			return false;
		p += len;
	}
	return true;
}

/* Bytes of one listpack element: its encoding and data, then its
 * back-length. */
static size_t lp_elem(size_t enclen)
{
	size_t back = enclen <= 127	    ? 1
		      : enclen <= 16383	    ? 2
		      : enclen <= 2097151   ? 3
		      : enclen <= 268435455 ? 4
					    : 5;

	return enclen + back;
}

static size_t lp_int(int64_t v)
{
	if (v >= 0 && v <= 127)
		return lp_elem(1);
	if (v >= -4096 && v <= 4095)
		return lp_elem(2);
	if (v >= INT16_MIN && v <= INT16_MAX)
		return lp_elem(3);
	if (v >= -(1 << 23) && v <= (1 << 23) - 1)
		return lp_elem(4);
	if (v >= INT32_MIN && v <= INT32_MAX)
		return lp_elem(5);
	return lp_elem(9);
}

/* A string element: stored as an integer when it is a canonical one. */
static size_t lp_str(const char *p, size_t len)
{
	long long v;

	if (len && len < 21 && str_to_ll(p, len, &v))
		return lp_int(v);
	return lp_elem(len < 64 ? 1 + len : len < 4096 ? 2 + len : 5 + len);
}

/* Redis's lpBytes for node n: header, counters, elements, end byte. */
static uint64_t node_lp_bytes(const struct snode *n)
{
	return 6 + lp_int(n->live) + lp_int(n->deleted) + n->lp_bytes + 1;
}

static struct snode *node_new(const struct stream_id *master, const char *const *f,
			      const size_t *flen, uint64_t nf)
{
	size_t bytes = varint_len(nf);
	struct snode *n;
	unsigned char *p;

	for (uint64_t i = 0; i < nf; i++)
		bytes += varint_len(flen[i]) + flen[i];
	n = xmalloc(sizeof(*n) + bytes);
	n->master = *master;
	n->live = n->deleted = 0;
	n->nmaster = nf;
	p = n->data;
	p += varint_put(p, nf);
	n->lp_bytes = lp_int((int64_t)nf) + lp_int(0);
	for (uint64_t i = 0; i < nf; i++) {
		p += put_str(p, f[i], flen[i]);
		n->lp_bytes += lp_str(f[i], flen[i]);
	}
	n->used = n->first = (uint32_t)bytes;
	return n;
}

static void nodes_insert_tail(struct stream *s, struct snode *n)
{
	if (s->nnodes == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->nodes = xrealloc(s->nodes, s->cap * sizeof(*s->nodes));
	}
	s->nodes[s->nnodes++] = n;
}

static void nodes_remove(struct stream *s, size_t i)
{
	xfree(s->nodes[i]);
	memmove(&s->nodes[i], &s->nodes[i + 1], (s->nnodes - i - 1) * sizeof(*s->nodes));
	s->nnodes--;
}

static int node_write(struct stream *s, const struct stream_id *idp, const char *const *f,
		      const size_t *flen, const char *const *v, const size_t *vlen, uint64_t nf,
		      unsigned flags);

int stream_append(struct obj *o, const char *const *f, const size_t *flen, const char *const *v,
		  const size_t *vlen, uint64_t nf, const struct stream_id *use_id, bool seq_given,
		  int64_t now, struct stream_id *added)
{
	struct stream *s = S(o);
	struct snode *n = s->nnodes ? s->nodes[s->nnodes - 1] : NULL;
	struct stream_id id;
	size_t total = 0;

	if (!use_id) {
		if ((uint64_t)now > s->last_id.ms) {
			id.ms = (uint64_t)now;
			id.seq = 0;
		} else {
			id = s->last_id;
			stream_id_incr(&id);
		}
	} else if (!seq_given && use_id->ms == s->last_id.ms) {
		if (s->last_id.seq == UINT64_MAX)
			return -EDOM;
		id = s->last_id;
		id.seq++;
	} else {
		id = *use_id;
	}
	if (stream_id_cmp(&id, &s->last_id) <= 0)
		return -EDOM;
	for (uint64_t i = 0; i < nf; i++)
		total += flen[i] + vlen[i];
	/* Redis's STREAM_LISTPACK_MAX_SIZE. */
	if (total > (1u << 30))
		return -ERANGE;

	/* A new node when the tail one is full, as Redis starts a new listpack. */
	if (n) {
		size_t max_bytes = (size_t)config.stream_node_max_bytes;
		long long max_entries = config.stream_node_max_entries;

		if (!max_bytes || max_bytes > (1u << 30))
			max_bytes = 1u << 30;
		if (node_lp_bytes(n) + total >= max_bytes ||
		    (max_entries && (long long)n->live + n->deleted >= max_entries))
			n = NULL;
	}
	if (!n) {
		n = node_new(&id, f, flen, nf);
		nodes_insert_tail(s, n);
	}
	if (node_write(s, &id, f, flen, v, vlen, nf, 0))
		return -ERANGE;
	n = s->nodes[s->nnodes - 1];
	n->live++;
	if (!s->length++)
		s->first_id = id;
	s->entries_added++;
	s->last_id = id;
	*added = id;
	return 0;
}

/* Writes an entry at the end of the tail node (its counters aside). */
static int node_write(struct stream *s, const struct stream_id *idp, const char *const *f,
		      const size_t *flen, const char *const *v, const size_t *vlen, uint64_t nf,
		      unsigned flags)
{
	struct snode *n = s->nodes[s->nnodes - 1];
	struct stream_id id = *idp;
	size_t need;
	bool same;
	unsigned char *p;

	same = same_fields(n, f, flen, nf);
	need = 1 + varint_len(id.ms - n->master.ms) + varint_len(zigzag(id.seq - n->master.seq));
	if (!same)
		need += varint_len(nf);
	for (uint64_t i = 0; i < nf; i++) {
		if (!same)
			need += varint_len(flen[i]) + flen[i];
		need += varint_len(vlen[i]) + vlen[i];
	}
	if ((size_t)n->used + need > UINT32_MAX)
		return -ERANGE;
	n = xrealloc(n, sizeof(*n) + n->used + need);
	s->nodes[s->nnodes - 1] = n;
	p = n->data + n->used;
	*p++ = (unsigned char)((same ? ENTRY_SAMEFIELDS : 0) | flags);
	p += varint_put(p, id.ms - n->master.ms);
	p += varint_put(p, zigzag(id.seq - n->master.seq));
	if (!same)
		p += varint_put(p, nf);
	for (uint64_t i = 0; i < nf; i++) {
		if (!same)
			p += put_str(p, f[i], flen[i]);
		p += put_str(p, v[i], vlen[i]);
	}
	n->used += (uint32_t)need;
	n->lp_bytes += lp_int((same ? ENTRY_SAMEFIELDS : 0) | flags) +
		       lp_int((int64_t)(id.ms - n->master.ms)) +
		       lp_int((int64_t)(id.seq - n->master.seq)) +
		       lp_int((int64_t)(same ? nf + 3 : 2 * nf + 4));
	if (!same)
		n->lp_bytes += lp_int((int64_t)nf);
	for (uint64_t i = 0; i < nf; i++) {
		if (!same)
			n->lp_bytes += lp_str(f[i], flen[i]);
		n->lp_bytes += lp_str(v[i], vlen[i]);
	}
	return 0;
}

/* The first node whose entries may reach id: the last with master <= id. */
static size_t node_seek(const struct stream *s, const struct stream_id *id)
{
	size_t lo = 0, hi = s->nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (stream_id_cmp(&s->nodes[mid]->master, id) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* Offsets of node n's entries, in order, in a new array the caller frees;
 * *k is how many. */
static uint32_t *node_offsets(const struct snode *n, unsigned *k)
{
	uint32_t *offs = xmalloc(sizeof(*offs) * ((size_t)n->live + n->deleted));
	struct stream_entry e;
	unsigned flags;

	*k = 0;
	for (uint32_t off = n->first; off < n->used; (*k)++) {
		offs[*k] = off;
		off = node_entry(n, off, &e, &flags);
	}
	return offs;
}

/* The offset of node n's last entry. */
static uint32_t node_last(const struct snode *n)
{
	struct stream_entry e;
	unsigned flags;
	uint32_t last = n->first;

	for (uint32_t off = n->first; off < n->used;) {
		last = off;
		off = node_entry(n, off, &e, &flags);
	}
	return last;
}

uint64_t stream_range(const struct obj *o, const struct stream_id *start,
		      const struct stream_id *end, bool rev, uint64_t count, stream_entry_fn *fn,
		      void *ctx)
{
	const struct stream *s = S(o);
	struct stream_entry e;
	uint64_t done = 0;
	unsigned flags;

	if (!s->nnodes || stream_id_cmp(start, end) > 0)
		return 0;
	if (!rev) {
		for (size_t i = node_seek(s, start); i < s->nnodes; i++) {
			const struct snode *n = s->nodes[i];

			for (uint32_t off = n->first; off < n->used;) {
				off = node_entry(n, off, &e, &flags);
				if (stream_id_cmp(&e.id, end) > 0)
					return done;
				if ((flags & ENTRY_DELETED) || stream_id_cmp(&e.id, start) < 0)
					continue;
				done++;
				if (!fn(ctx, &e) || done == count)
					return done;
			}
		}
		return done;
	}
	for (size_t i = node_seek(s, end) + 1; i-- > 0;) {
		const struct snode *n = s->nodes[i];
		unsigned k;
		uint32_t *offs = node_offsets(n, &k);
		bool stop = false;

		while (!stop && k-- > 0) {
			node_entry(n, offs[k], &e, &flags);
			if (stream_id_cmp(&e.id, start) < 0)
				stop = true;
			else if (!(flags & ENTRY_DELETED) && stream_id_cmp(&e.id, end) <= 0) {
				done++;
				stop = !fn(ctx, &e) || done == count;
			}
		}
		xfree(offs);
		if (stop)
			return done;
	}
	return done;
}

static bool take_first(void *ctx, struct stream_entry *e)
{
	*(struct stream_id *)ctx = e->id;
	return false;
}

bool stream_first(const struct obj *o, struct stream_id *id)
{
	static const struct stream_id min = { 0, 0 }, max = { UINT64_MAX, UINT64_MAX };

	return stream_range(o, &min, &max, false, 1, take_first, id) == 1;
}

bool stream_last(const struct obj *o, struct stream_id *id)
{
	static const struct stream_id min = { 0, 0 }, max = { UINT64_MAX, UINT64_MAX };

	return stream_range(o, &min, &max, true, 1, take_first, id) == 1;
}

static void refresh_first(struct stream *s, const struct obj *o)
{
	if (!s->length)
		s->first_id = (struct stream_id){ 0, 0 };
	else
		stream_first(o, &s->first_id);
}

bool stream_exists(const struct obj *o, const struct stream_id *id)
{
	struct stream_id found;

	return stream_range(o, id, id, false, 1, take_first, &found) == 1;
}

bool stream_delete(struct obj *o, const struct stream_id *id)
{
	struct stream *s = S(o);
	struct stream_entry e;
	unsigned flags;
	size_t i;

	if (!s->nnodes)
		return false;
	i = node_seek(s, id);
	for (uint32_t off = s->nodes[i]->first; off < s->nodes[i]->used;) {
		struct snode *n = s->nodes[i];
		uint32_t at = off;

		off = node_entry(n, off, &e, &flags);
		if (stream_id_cmp(&e.id, id) < 0)
			continue;
		if (stream_id_cmp(&e.id, id) > 0 || (flags & ENTRY_DELETED))
			return false;
		n->data[at] |= ENTRY_DELETED;
		s->length--;
		if (!--n->live)
			nodes_remove(s, i);
		else
			n->deleted++;
		if (stream_id_cmp(id, &s->max_deleted) > 0)
			s->max_deleted = *id;
		if (!stream_id_cmp(id, &s->first_id) || !s->length)
			refresh_first(s, o);
		return true;
	}
	return false;
}

uint64_t stream_trim(struct obj *o, enum stream_trim_by by, uint64_t maxlen,
		     const struct stream_id *minid, bool approx, uint64_t limit,
		     stream_trim_fn *can_delete)
{
	struct stream *s = S(o);
	uint64_t deleted = 0;
	size_t i = 0;

	while (i < s->nnodes) {
		struct snode *n = s->nodes[i];
		uint64_t entries = n->live, from_node = 0;
		bool whole;

		if (by == STREAM_TRIM_MAXLEN && s->length <= maxlen)
			break;
		if (limit && deleted + entries > limit)
			break;
		if (by == STREAM_TRIM_MAXLEN) {
			whole = s->length - entries >= maxlen;
		} else {
			/* The node's last entry, deleted or not, as Redis reads
			 * the listpack's last ID. */
			struct stream_entry e;
			unsigned flags;

			node_entry(n, node_last(n), &e, &flags);
			whole = stream_id_cmp(&e.id, minid) < 0;
		}
		if (whole && !can_delete) {
			nodes_remove(s, i);
			s->length -= entries;
			deleted += entries;
			continue;
		}
		if (approx && !can_delete)
			break;
		/* Flag entries from the node's head; the rest stays. */
		for (uint32_t off = n->first; off < n->used;) {
			struct stream_entry e;
			unsigned flags;
			uint32_t at = off;

			off = node_entry(n, off, &e, &flags);
			if (by == STREAM_TRIM_MAXLEN ? s->length <= maxlen
						     : stream_id_cmp(&e.id, minid) >= 0)
				break;
			if (flags & ENTRY_DELETED)
				continue;
			if (can_delete && !can_delete(o, &e.id))
				continue;
			n->data[at] |= ENTRY_DELETED;
			n->live--;
			n->deleted++;
			s->length--;
			from_node++;
		}
		deleted += from_node;
		if (!n->live) {
			nodes_remove(s, i);
			continue;
		}
		/* A node that could have gone whole but kept referenced entries:
		 * on to the next, as Redis does. */
		if (whole) {
			i++;
			continue;
		}
		break;
	}
	if (deleted)
		refresh_first(s, o);
	return deleted;
}

void stream_set_ids(struct obj *o, const struct stream_id *last, uint64_t entries_added,
		    const struct stream_id *max_deleted)
{
	struct stream *s = S(o);

	s->last_id = *last;
	s->entries_added = entries_added;
	s->max_deleted = *max_deleted;
}

/* ---- RDB's view ---- */

void stream_walk_nodes(const struct obj *o, stream_node_fn *node_fn, stream_item_fn *item_fn,
		       void *ctx)
{
	const struct stream *s = S(o);

	for (size_t i = 0; i < s->nnodes; i++) {
		const struct snode *n = s->nodes[i];
		const char **mf = xmalloc(sizeof(*mf) * (n->nmaster ? n->nmaster : 1));
		size_t *mflen = xmalloc(sizeof(*mflen) * (n->nmaster ? n->nmaster : 1));
		const unsigned char *p = n->data + varint_len(n->nmaster);
		struct stream_entry e;
		unsigned flags;

		for (uint64_t k = 0; k < n->nmaster; k++) {
			uint64_t len;

			p += varint_get(p, &len);
			mf[k] = (const char *)p;
			mflen[k] = len;
			p += len;
		}
		node_fn(ctx, &n->master, n->live, n->deleted, n->nmaster, mf, mflen);
		xfree(mf);
		xfree(mflen);
		for (uint32_t off = n->first; off < n->used;) {
			off = node_entry(n, off, &e, &flags);
			item_fn(ctx, flags, &e);
		}
	}
}

int stream_load_node(struct obj *o, const struct stream_id *master, const char *const *mf,
		     const size_t *mflen, uint64_t nmf)
{
	struct stream *s = S(o);

	if (s->nnodes && stream_id_cmp(&s->nodes[s->nnodes - 1]->master, master) >= 0)
		return -EINVAL;
	nodes_insert_tail(s, node_new(master, mf, mflen, nmf));
	return 0;
}

int stream_load_entry(struct obj *o, const struct stream_id *id, bool deleted, const char *const *f,
		      const size_t *flen, const char *const *v, const size_t *vlen, uint64_t nf)
{
	struct stream *s = S(o);
	struct snode *n;
	struct stream_entry e;
	unsigned flags;

	if (!s->nnodes)
		return -EINVAL;
	n = s->nodes[s->nnodes - 1];
	if (stream_id_cmp(id, &n->master) < 0)
		return -EINVAL;
	if (n->used > n->first) {
		node_entry(n, node_last(n), &e, &flags);
		if (stream_id_cmp(id, &e.id) <= 0)
			return -EINVAL;
	}
	if (node_write(s, id, f, flen, v, vlen, nf, deleted ? ENTRY_DELETED : 0))
		return -EINVAL;
	n = s->nodes[s->nnodes - 1];
	if (deleted)
		n->deleted++;
	else
		n->live++;
	return 0;
}

int stream_load_done(struct obj *o, uint64_t length, const struct stream_id *last,
		     const struct stream_id *first, const struct stream_id *max_deleted,
		     uint64_t entries_added)
{
	struct stream *s = S(o);
	uint64_t live = 0;
	size_t k = 0;

	/* A node with no live entry is dropped (Redis refuses one). */
	for (size_t i = 0; i < s->nnodes; i++) {
		if (!s->nodes[i]->live)
			return -EINVAL;
		live += s->nodes[i]->live;
		s->nodes[k++] = s->nodes[i];
	}
	s->nnodes = k;
	if (live != length)
		return -EINVAL;
	s->length = length;
	s->last_id = *last;
	s->first_id = *first;
	s->max_deleted = *max_deleted;
	s->entries_added = entries_added;
	return 0;
}

/* ---- IDMP ---- */

static struct idmp_producer *producer_find(struct stream *s, const char *pid, size_t plen,
					   size_t *at)
{
	for (size_t i = 0; i < s->nproducers; i++) {
		struct idmp_producer *p = s->producers[i];

		if (p->plen == plen && !memcmp(p->pid, pid, plen)) {
			*at = i;
			return p;
		}
	}
	return NULL;
}

static void producer_free(struct idmp_producer *p)
{
	for (size_t i = 0; i < p->n; i++)
		xfree(p->iids[i]);
	xfree(p->iids);
	xfree(p->pid);
	xfree(p);
}

/* Drops the producer's entries older than the duration (a producer left
 * with none goes), as Redis's cron does. */
static void producer_expire(struct stream *s, size_t at, int64_t now)
{
	struct idmp_producer *p = s->producers[at];
	int64_t horizon = now - (int64_t)s->idmp_duration * 1000;
	size_t k = 0;

	while (k < p->n && (int64_t)p->iids[k]->id.ms <= horizon)
		xfree(p->iids[k++]);
	memmove(p->iids, p->iids + k, (p->n - k) * sizeof(*p->iids));
	p->n -= k;
	if (!p->n) {
		producer_free(p);
		memmove(&s->producers[at], &s->producers[at + 1],
			(s->nproducers - at - 1) * sizeof(*s->producers));
		s->nproducers--;
	}
}

bool stream_idmp_find(struct obj *o, const char *pid, size_t plen, const void *iid, size_t ilen,
		      int64_t now, struct stream_id *id)
{
	struct stream *s = S(o);
	size_t at;
	struct idmp_producer *p = producer_find(s, pid, plen, &at);

	if (!p)
		return false;
	producer_expire(s, at, now);
	if (!(p = producer_find(s, pid, plen, &at)))
		return false;
	for (size_t i = 0; i < p->n; i++) {
		if (p->iids[i]->len == ilen && !memcmp(p->iids[i]->iid, iid, ilen)) {
			*id = p->iids[i]->id;
			s->iids_duplicates++;
			return true;
		}
	}
	return false;
}

void stream_idmp_insert(struct obj *o, const char *pid, size_t plen, const void *iid, size_t ilen,
			const struct stream_id *id)
{
	struct stream *s = S(o);
	size_t at;
	struct idmp_producer *p = producer_find(s, pid, plen, &at);
	struct idmp_iid *e;

	if (!p) {
		p = xmalloc(sizeof(*p));
		memset(p, 0, sizeof(*p));
		p->pid = xstrndup(pid, plen);
		p->plen = plen;
		s->producers = xrealloc(s->producers, (s->nproducers + 1) * sizeof(*s->producers));
		s->producers[s->nproducers++] = p;
	}
	s->iids_added++;
	e = xmalloc(sizeof(*e) + ilen);
	e->id = *id;
	e->len = ilen;
	memcpy(e->iid, iid, ilen);
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 4;
		p->iids = xrealloc(p->iids, p->cap * sizeof(*p->iids));
	}
	p->iids[p->n++] = e;
	if (p->n > s->idmp_maxsize) {
		xfree(p->iids[0]);
		memmove(p->iids, p->iids + 1, (p->n - 1) * sizeof(*p->iids));
		p->n--;
	}
}

int stream_idmp_peek(const struct obj *o, const char *pid, size_t plen, const void *iid,
		     size_t ilen, const struct stream_id *id)
{
	struct stream *s = S(o);
	size_t at;
	struct idmp_producer *p = producer_find(s, pid, plen, &at);

	if (!p)
		return 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->iids[i]->len == ilen && !memcmp(p->iids[i]->iid, iid, ilen))
			return stream_id_cmp(&p->iids[i]->id, id) ? -1 : 1;
	return 0;
}

bool stream_idmp_configure(struct obj *o, uint64_t duration, uint64_t maxsize)
{
	struct stream *s = S(o);
	bool changed = false;

	if (duration && duration != s->idmp_duration) {
		s->idmp_duration = duration;
		changed = true;
	}
	if (maxsize && maxsize != s->idmp_maxsize) {
		s->idmp_maxsize = maxsize;
		changed = true;
	}
	if (changed) {
		for (size_t i = 0; i < s->nproducers; i++)
			producer_free(s->producers[i]);
		xfree(s->producers);
		s->producers = NULL;
		s->nproducers = 0;
	}
	return changed;
}

void stream_idmp_info(const struct obj *o, struct stream_idmp_info *info)
{
	const struct stream *s = S(o);

	int64_t horizon = now_ms() - (int64_t)s->idmp_duration * 1000;

	info->duration = s->idmp_duration;
	info->maxsize = s->idmp_maxsize;
	info->pids = info->iids = 0;
	/* Expired IDs do not count, as if Redis's cron had dropped them. */
	for (size_t i = 0; i < s->nproducers; i++) {
		const struct idmp_producer *p = s->producers[i];
		size_t k = 0;

		while (k < p->n && (int64_t)p->iids[k]->id.ms <= horizon)
			k++;
		info->iids += p->n - k;
		info->pids += p->n > k;
	}
	info->added = s->iids_added;
	info->duplicates = s->iids_duplicates;
}

void stream_idmp_load(struct obj *o, uint64_t duration, uint64_t maxsize, uint64_t added,
		      uint64_t duplicates)
{
	struct stream *s = S(o);

	s->idmp_duration = duration;
	s->idmp_maxsize = maxsize;
	s->iids_added = added;
	s->iids_duplicates = duplicates;
}

static int idmp_pid_cmp(const void *a, const void *b, void *arg)
{
	const struct stream *s = arg;
	const struct idmp_producer *x = s->producers[*(const size_t *)a];
	const struct idmp_producer *y = s->producers[*(const size_t *)b];
	int r = memcmp(x->pid, y->pid, x->plen < y->plen ? x->plen : y->plen);

	return r ? r : (x->plen > y->plen) - (x->plen < y->plen);
}

void stream_idmp_walk(const struct obj *o, int64_t now, stream_idmp_fn *fn, void *ctx)
{
	const struct stream *s = S(o);
	size_t *order = xmalloc(sizeof(*order) * (s->nproducers ? s->nproducers : 1));
	int64_t horizon = now - (int64_t)s->idmp_duration * 1000;

	for (size_t i = 0; i < s->nproducers; i++)
		order[i] = i;
	qsort_r(order, s->nproducers, sizeof(*order), idmp_pid_cmp, (void *)s);
	for (size_t i = 0; i < s->nproducers; i++) {
		const struct idmp_producer *p = s->producers[order[i]];
		size_t k = 0, n;
		const struct stream_id **ids;
		const char **iids;
		size_t *ilens;

		while (k < p->n && (int64_t)p->iids[k]->id.ms <= horizon)
			k++;
		n = p->n - k;
		ids = xmalloc(sizeof(*ids) * (n ? n : 1));
		iids = xmalloc(sizeof(*iids) * (n ? n : 1));
		ilens = xmalloc(sizeof(*ilens) * (n ? n : 1));
		for (size_t j = 0; j < n; j++) {
			ids[j] = &p->iids[k + j]->id;
			iids[j] = p->iids[k + j]->iid;
			ilens[j] = p->iids[k + j]->len;
		}
		fn(ctx, p->pid, p->plen, n, ids, iids, ilens);
		xfree(ids);
		xfree(iids);
		xfree(ilens);
	}
	xfree(order);
}

/* ---- the generic operations ---- */

static void stream_free(struct obj *o)
{
	struct stream *s = S(o);

	for (size_t i = 0; i < s->nnodes; i++)
		xfree(s->nodes[i]);
	xfree(s->nodes);
	for (size_t i = 0; i < s->nproducers; i++)
		producer_free(s->producers[i]);
	xfree(s->producers);
	stream_cg_free(s->cg);
	xfree(s);
}

static struct obj stream_dup(const struct obj *o)
{
	const struct stream *s = S(o);
	struct obj copy = stream_new();
	struct stream *d = copy.ptr;

	*d = *s;
	d->cap = s->nnodes;
	d->nodes = s->nnodes ? xmalloc(s->nnodes * sizeof(*d->nodes)) : NULL;
	for (size_t i = 0; i < s->nnodes; i++) {
		size_t bytes = sizeof(struct snode) + s->nodes[i]->used;

		d->nodes[i] = xmalloc(bytes);
		memcpy(d->nodes[i], s->nodes[i], bytes);
	}
	d->producers = NULL;
	d->nproducers = 0;
	d->iids_added = 0;
	d->cg = stream_cg_dup(s->cg);
	for (size_t i = 0; i < s->nproducers; i++) {
		const struct idmp_producer *p = s->producers[i];

		for (size_t k = 0; k < p->n; k++)
			stream_idmp_insert(&copy, p->pid, p->plen, p->iids[k]->iid, p->iids[k]->len,
					   &p->iids[k]->id);
	}
	d->iids_added = s->iids_added;
	return copy;
}

static size_t stream_mem(const struct obj *o)
{
	const struct stream *s = S(o);
	size_t bytes = xusable(o->ptr) + (s->nodes ? xusable(s->nodes) : 0);

	for (size_t i = 0; i < s->nnodes; i++)
		bytes += xusable(s->nodes[i]);
	for (size_t i = 0; i < s->nproducers; i++) {
		const struct idmp_producer *p = s->producers[i];

		bytes += xusable((void *)p) + xusable(p->pid) + (p->iids ? xusable(p->iids) : 0);
		for (size_t k = 0; k < p->n; k++)
			bytes += xusable(p->iids[k]);
	}
	if (s->producers)
		bytes += xusable(s->producers);
	return bytes + stream_cg_mem(s->cg);
}

/* Redis counts a stream's radix tree nodes, one per listpack at least; here
 * each node is one allocation, and so is each IDMP producer. */
static size_t stream_free_effort(const struct obj *o)
{
	return S(o)->nnodes + S(o)->nproducers;
}

static const struct obj_ops stream_ops = {
	.free = stream_free,
	.dup = stream_dup,
	.mem = stream_mem,
	.free_effort = stream_free_effort,
};

static void __attribute__((constructor)) stream_register(void)
{
	obj_register(OBJ_STREAM, &stream_ops);
}
