// SPDX-License-Identifier: BSD-3-Clause
/*
 * vset_hnsw: a hierarchical navigable small world graph (Malkov & Yashunin)
 * with undirected links, for vector sets. See vset_hnsw.h for the locking
 * rule and the storage formats.
 *
 * Each node sits at levels 0..level (level drawn with P(l+1 | l) = 1/4), has
 * up to 2*M links at level 0 and M above. A search descends greedily from
 * the entry point (the highest node) to level 1, then explores level 0 with
 * a beam of ef. Visited marks are a per-thread array of epochs indexed by a
 * node's slot, so searches share nothing but the read lock.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "vset_hnsw.h"

/* ---- distances ----------------------------------------------------------- */

size_t vhnsw_vec_bytes(const struct vhnsw *h)
{
	switch (h->quant) {
	case VHNSW_Q8:
		return ((size_t)h->dim + 7) & ~(size_t)7;
	case VHNSW_BIN:
		return ((size_t)h->dim + 63) / 64 * 8;
	default:
		return (size_t)h->dim * 4;
	}
}

/* The distance between a stored-format vector a (with its norm and range)
 * and node nb. Cosine over FP32 reads only nb's vector, not its header: in
 * a search that is one cache miss less per node. */
static inline float dist_raw(const struct vhnsw *h, const uint64_t *a, float la, float ra,
			     const struct vhnsw_node *nb)
{
	const uint64_t *b = nb->vec;

	switch (h->quant) {
	case VHNSW_Q8: {
		float rb = nb->range, d;

		/* A zero vector is 1 from everything (dot 0), as Redis has it. */
		if (ra == 0 || rb == 0)
			return 1.0f;
		d = 1.0f - (float)vhnsw_dot_q8((const int8_t *)a, (const int8_t *)b, h->dim) *
				   ((ra / 127) * (rb / 127));
		return d < 0 ? 0 : d > 2 ? 2 : d;
	}
	case VHNSW_BIN: {
		uint32_t words = (h->dim + 63) / 64, diff = 0;

		for (uint32_t i = 0; i < words; i++)
			diff += (uint32_t)__builtin_popcountll(a[i] ^ b[i]);
		return (float)diff * 2 / h->dim;
	}
	default:
		break;
	}
	if (h->metric == VHNSW_L2) {
		float lb = nb->l2;
		float d = la * la + lb * lb -
			  2 * vhnsw_dot_f32((const float *)a, (const float *)b, h->dim);

		return d < 0 ? 0 : d;
	}
	return 1.0f - vhnsw_dot_f32((const float *)a, (const float *)b, h->dim);
}

float vhnsw_distance(const struct vhnsw *h, const struct vhnsw_node *a, const struct vhnsw_node *b)
{
	return dist_raw(h, a->vec, a->l2, a->range, b);
}

float vhnsw_query_distance(const struct vhnsw *h, const struct vhnsw_query *q,
			   const struct vhnsw_node *n)
{
	return dist_raw(h, q->vec, q->l2, q->range, n);
}

int vhnsw_query_init(const struct vhnsw *h, const float *v, struct vhnsw_query *q)
{
	size_t bytes = vhnsw_vec_bytes(h);
	float *f = xmalloc(h->dim * sizeof(float));
	float ss = 0;
	uint32_t i;

	/* In float and in this order, as Redis normalises: the same bits. */
	memcpy(f, v, h->dim * sizeof(float));
	for (i = 0; i + 3 < h->dim; i += 4)
		ss += f[i] * f[i] + f[i + 1] * f[i + 1] + f[i + 2] * f[i + 2] + f[i + 3] * f[i + 3];
	for (; i < h->dim; i++)
		ss += f[i] * f[i];
	/* A zero vector keeps norm 1 (Redis's VEMB RAW says so). */
	q->l2 = ss == 0 ? 1.0f : sqrtf(ss);
	q->range = 0;
	if (h->metric == VHNSW_COSINE && ss != 0)
		for (i = 0; i < h->dim; i++)
			f[i] /= q->l2;
	q->vec = xcalloc(1, bytes);
	if (h->quant == VHNSW_Q8) {
		float max = 0;
		int8_t *o = (int8_t *)q->vec;

		for (uint32_t i = 0; i < h->dim; i++)
			if (fabsf(f[i]) > max)
				max = fabsf(f[i]);
		/* isfinite: a NaN or infinite component (a malformed blob) must
		 * not reach the int8 conversion, whose result would be undefined. */
		if (max > 0 && isfinite(max))
			for (uint32_t i = 0; i < h->dim; i++)
				o[i] = isfinite(f[i]) ? (int8_t)roundf(f[i] * (127.0f / max)) : 0;
		q->range = max;
	} else if (h->quant == VHNSW_BIN) {
		for (uint32_t i = 0; i < h->dim; i++)
			if (f[i] > 0)
				q->vec[i / 64] |= 1ull << (i & 63);
	} else {
		memcpy(q->vec, f, h->dim * sizeof(float));
	}
	xfree(f);
	return 0;
}

void vhnsw_query_free(struct vhnsw_query *q)
{
	xfree(q->vec);
	q->vec = NULL;
}

void vhnsw_node_vector(const struct vhnsw *h, const struct vhnsw_node *n, float *out)
{
	for (uint32_t i = 0; i < h->dim; i++) {
		if (h->quant == VHNSW_Q8)
			out[i] = (((const int8_t *)n->vec)[i] * n->range) / 127;
		else if (h->quant == VHNSW_BIN)
			out[i] = (n->vec[i / 64] >> (i & 63)) & 1 ? 1.0f : -1.0f;
		else
			out[i] = ((const float *)n->vec)[i];
		/* BIN keeps no magnitude; the others are scaled back. */
		if (h->quant != VHNSW_BIN && h->metric == VHNSW_COSINE)
			out[i] *= n->l2;
	}
}

/* ---- index and nodes ----------------------------------------------------- */

struct vhnsw *vhnsw_new(uint32_t dim, enum vhnsw_quant quant, enum vhnsw_metric metric, uint32_t m)
{
	pthread_rwlockattr_t attr;
	struct vhnsw *h;

	if (!dim || m < VHNSW_MIN_M || m > VHNSW_MAX_M || quant > VHNSW_BIN ||
	    (metric != VHNSW_COSINE && quant != VHNSW_NOQUANT)) {
		errno = EINVAL;
		return NULL;
	}
	h = xcalloc(1, sizeof(*h));
	/* Writers first: a stream of searches must not starve VADD's short
	 * linking step. No thread takes the shared lock twice, so a waiting
	 * writer cannot deadlock a reader. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	h->dim = dim;
	h->quant = (uint8_t)quant;
	h->metric = (uint8_t)metric;
	h->m = m;
	return h;
}

uint32_t vhnsw_cap(const struct vhnsw *h, uint32_t level)
{
	return level ? h->m : 2 * h->m;
}

static size_t node_bytes(const struct vhnsw *h, uint32_t level)
{
	size_t links = vhnsw_cap(h, 0) + (size_t)level * h->m;

	return sizeof(struct vhnsw_node) + vhnsw_vec_bytes(h) + (level + 1) * sizeof(uint32_t) +
	       (level + 1) * sizeof(void *) + links * sizeof(void *) + 8;
}

/* A node holding vec and value, in a free slot, at the tail of the list;
 * unlinked. */
static struct vhnsw_node *node_new(struct vhnsw *h, const void *vec, float l2, float range,
				   uint64_t id, uint32_t level, void *value)
{
	size_t vb = vhnsw_vec_bytes(h), bytes = node_bytes(h, level);
	struct vhnsw_node *n = xcalloc(1, bytes);
	char *p = (char *)n->vec + vb;
	struct vhnsw_node **store;

	memcpy(n->vec, vec, vb);
	n->l2 = l2;
	n->range = range;
	n->id = id;
	n->level = level;
	n->value = value;
	n->links = (struct vhnsw_node ***)(((uintptr_t)p + 7) & ~(uintptr_t)7);
	n->nlinks = (uint32_t *)(n->links + level + 1);
	store = (struct vhnsw_node **)(((uintptr_t)(n->nlinks + level + 1) + 7) & ~(uintptr_t)7);
	for (uint32_t l = 0; l <= level; l++) {
		n->links[l] = store;
		store += vhnsw_cap(h, l);
	}
	if (h->nfree) {
		n->slot = h->free_slots[--h->nfree];
	} else {
		if (h->nslots == h->slots_cap) {
			h->slots_cap = h->slots_cap ? h->slots_cap * 2 : 64;
			h->nodes = xrealloc(h->nodes, h->slots_cap * sizeof(*h->nodes));
		}
		n->slot = h->nslots;
		__atomic_store_n(&h->nslots, h->nslots + 1, __ATOMIC_RELAXED);
	}
	h->nodes[n->slot] = n;
	n->prev = h->tail;
	/* Published last, for exact scans walking the list meanwhile. */
	if (h->tail)
		__atomic_store_n(&h->tail->next, n, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&h->head, n, __ATOMIC_RELEASE);
	h->tail = n;
	__atomic_store_n(&h->count, h->count + 1, __ATOMIC_RELAXED);
	if (id > h->last_id)
		h->last_id = id;
	h->bytes += bytes;
	return n;
}

void vhnsw_free(struct vhnsw *h, void (*free_value)(void *))
{
	struct vhnsw_node *n, *next;

	if (!h)
		return;
	for (n = h->head; n; n = next) {
		next = n->next;
		if (free_value)
			free_value(n->value);
		xfree(n);
	}
	xfree(h->nodes);
	xfree(h->free_slots);
	pthread_rwlock_destroy(&h->lock);
	xfree(h);
}

/* ---- links as readers see them ----------------------------------------- */

/*
 * Inserts link nodes while searches (and other inserts' neighbour searches)
 * walk the graph under the shared lock, so a link list can change under a
 * reader. The rule that keeps that safe: a writer stores a link before it
 * publishes the count that covers it (release), a reader loads the count
 * (acquire) and then the links below it. A slot below the count was written
 * with a live node at some point (removal moves the last link down, and no
 * node is freed without the exclusive lock), so a reader may see a list a
 * link short or with one twice, never a dangling or a NULL one. A new node
 * is complete before its first link to it is stored.
 */
static inline uint32_t nl_get(const struct vhnsw_node *n, uint32_t l)
{
	return __atomic_load_n(&n->nlinks[l], __ATOMIC_ACQUIRE);
}

static inline struct vhnsw_node *link_get(struct vhnsw_node *const *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void link_set(struct vhnsw_node **p, struct vhnsw_node *x)
{
	__atomic_store_n(p, x, __ATOMIC_RELEASE);
}

static inline void nl_set(struct vhnsw_node *n, uint32_t l, uint32_t v)
{
	__atomic_store_n(&n->nlinks[l], v, __ATOMIC_RELEASE);
}

/* The entry point (its level is the graph's top) as a reader sees it. */
static inline struct vhnsw_node *entry_get(const struct vhnsw *h)
{
	return __atomic_load_n(&h->entry, __ATOMIC_ACQUIRE);
}

/* ---- heaps of (dist, node) ----------------------------------------------- */

struct heap {
	struct vhnsw_result *v;
	uint32_t n, cap;
	bool max; /* a max-heap (the results) or a min-heap (the candidates) */
};

static inline bool heap_before(const struct heap *hp, uint32_t a, uint32_t b)
{
	return hp->max ? hp->v[a].dist > hp->v[b].dist : hp->v[a].dist < hp->v[b].dist;
}

static void heap_reserve(struct heap *hp, uint32_t n)
{
	if (n <= hp->cap)
		return;
	hp->cap = n < 64 ? 64 : n;
	hp->v = xrealloc(hp->v, hp->cap * sizeof(*hp->v));
}

static void heap_push(struct heap *hp, struct vhnsw_node *node, float dist)
{
	uint32_t i;

	if (hp->n == hp->cap)
		heap_reserve(hp, hp->cap ? hp->cap * 2 : 64);
	i = hp->n++;
	while (i) {
		uint32_t up = (i - 1) / 2;

		if (hp->max ? !(dist > hp->v[up].dist) : !(dist < hp->v[up].dist))
			break;
		hp->v[i] = hp->v[up];
		i = up;
	}
	hp->v[i].node = node;
	hp->v[i].dist = dist;
}

static struct vhnsw_result heap_pop(struct heap *hp)
{
	struct vhnsw_result top = hp->v[0], last = hp->v[--hp->n];
	uint32_t i = 0;

	/* Sift the last element down from the root: one move per level. */
	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= hp->n)
			break;
		m = l + 1 < hp->n && heap_before(hp, l + 1, l) ? l + 1 : l;
		if (hp->max ? !(hp->v[m].dist > last.dist) : !(hp->v[m].dist < last.dist))
			break;
		hp->v[i] = hp->v[m];
		i = m;
	}
	if (hp->n)
		hp->v[i] = last;
	return top;
}

static int result_cmp(const void *a, const void *b)
{
	const struct vhnsw_result *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->node->id < y->node->id ? -1 : x->node->id > y->node->id;
}

/* Empties the max-heap out into dst nearest first, equal distances by id
 * (result_cmp's order, so replies do not depend on the heap's shape). */
static void heap_drain_sorted(struct heap *out, struct vhnsw_result *dst)
{
	uint32_t n = out->n;

	for (uint32_t i = n; i > 0; i--)
		dst[i - 1] = heap_pop(out);
	/* Sorted by distance already: only runs of ties move. */
	for (uint32_t i = 1; i < n; i++) {
		struct vhnsw_result t = dst[i];
		uint32_t j = i;

		while (j && result_cmp(&dst[j - 1], &t) > 0) {
			dst[j] = dst[j - 1];
			j--;
		}
		dst[j] = t;
	}
}

/* ---- per-thread scratch -------------------------------------------------- */

/*
 * Each thread's visited marks and the two heaps of a walk, kept from one
 * search to the next so a warm search allocates nothing. The marks are an
 * open-addressing set of node addresses stamped with the walk's epoch (a new
 * walk bumps the epoch instead of clearing): keyed by the address a link
 * holds, so testing a neighbour never touches its node, and small (twice
 * the nodes one walk visits, some thousands at ef 200) where an array by
 * node slot would span the whole graph.
 */
struct scratch {
	const void **key;
	uint32_t *stamp;
	uint32_t cap, used, epoch; /* cap: a power of two */
	struct heap cand, out;
};

static __thread struct scratch *tls;
/* Frees a thread's scratch when it ends (a worker at shutdown). */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
	struct scratch *s = p;

	xfree(s->key);
	xfree(s->stamp);
	xfree(s->cand.v);
	xfree(s->out.v);
	xfree(s);
}

static void scratch_key_make(void)
{
	pthread_key_create(&scratch_key, scratch_free);
}

static struct scratch *scratch(void)
{
	if (!tls) {
		tls = xcalloc(1, sizeof(*tls));
		tls->out.max = true;
		pthread_once(&scratch_once, scratch_key_make);
		pthread_setspecific(scratch_key, tls);
	}
	return tls;
}

static inline uint32_t vis_hash(const void *p, uint32_t mask)
{
	/* Nodes are at least 64 bytes apart: drop the low bits, then mix. */
	return (uint32_t)(((uintptr_t)p >> 6) * 0x9e3779b97f4a7c15ull >> 32) & mask;
}

/* Doubles the set, keeping this walk's marks. */
static void vis_grow(struct scratch *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 4096, mask = cap - 1;
	const void **key = xmalloc(cap * sizeof(*key));
	uint32_t *stamp = xcalloc(cap, sizeof(*stamp));

	for (uint32_t i = 0; i < s->cap; i++) {
		uint32_t j;

		if (s->stamp[i] != s->epoch)
			continue;
		for (j = vis_hash(s->key[i], mask); stamp[j] == s->epoch; j = (j + 1) & mask)
			;
		key[j] = s->key[i];
		stamp[j] = s->epoch;
	}
	xfree(s->key);
	xfree(s->stamp);
	s->key = key;
	s->stamp = stamp;
	s->cap = cap;
}

/* Starts a walk: every node reads as unvisited. */
static void visit_begin(struct scratch *s)
{
	if (!s->cap)
		vis_grow(s);
	s->used = 0;
	if (++s->epoch == 0) {
		memset(s->stamp, 0, s->cap * sizeof(*s->stamp));
		s->epoch = 1;
	}
}

/* True the first time a node is seen in this walk. */
static inline bool visit(struct scratch *s, const void *node)
{
	uint32_t mask, i;

	/* At most half full, so probes stay short. */
	if (__builtin_expect(2 * (s->used + 1) > s->cap, 0))
		vis_grow(s);
	mask = s->cap - 1;
	for (i = vis_hash(node, mask); s->stamp[i] == s->epoch; i = (i + 1) & mask)
		if (s->key[i] == node)
			return false;
	s->key[i] = node;
	s->stamp[i] = s->epoch;
	s->used++;
	return true;
}

static uint64_t rng_next(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)(uintptr_t)&s ^ 0x9e3779b97f4a7c15ull ^ (uint64_t)pthread_self();
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static uint32_t random_level(void)
{
	uint32_t l = 0;

	while (l < VHNSW_MAX_LEVEL && (rng_next() & 3) == 0)
		l++;
	return l;
}

/* ---- search -------------------------------------------------------------- */

struct walk {
	int (*accept)(void *value, void *arg); /* NULL: every node */
	void *arg;
	uint64_t max_visit; /* 0: no bound */
};

/* Neighbours are expanded in chunks of this many: the visited test needs
 * only their addresses, then the vectors of the unvisited ones are
 * prefetched together, so the cache misses of a chunk overlap instead of
 * coming one after the other. */
#define EXPAND_CHUNK 32

/* hdr: the distance or the filter reads the node's header too (norm, Q8
 * range, value); cosine over FP32 reads only the vector. */
static inline void prefetch_vec(const struct vhnsw *h, const struct vhnsw_node *n, bool hdr)
{
	size_t vb = vhnsw_vec_bytes(h);
	const char *p = (const char *)n->vec;

	if (hdr)
		__builtin_prefetch(n);
	/* The first KiB: past it the hardware prefetcher follows the stream. */
	if (vb > 1024)
		vb = 1024;
	for (size_t o = 0; o < vb; o += 64)
		__builtin_prefetch(p + o);
}

/*
 * The beam search of one level from the entries in *res (which it replaces
 * with the ef nearest found, sorted nearest first). With a filter only
 * accepted nodes enter the results, but every node can be walked through.
 */
static void search_level(const struct vhnsw *h, const uint64_t *qv, float ql, float qr,
			 uint32_t level, uint32_t ef, const struct walk *w, struct heap *res)
{
	struct scratch *s = scratch();
	struct heap *cand = &s->cand, *out = &s->out;
	bool filtered = w && w->accept;
	bool hdr = filtered || h->quant != VHNSW_NOQUANT || h->metric != VHNSW_COSINE;
	uint64_t visited = 0;

	cand->n = out->n = 0;
	heap_reserve(out, ef + 1);
	visit_begin(s);
	for (uint32_t i = 0; i < res->n; i++) {
		struct vhnsw_node *n = res->v[i].node;

		visit(s, n);
		heap_push(cand, n, res->v[i].dist);
		if (!filtered || w->accept(n->value, w->arg))
			heap_push(out, n, res->v[i].dist);
	}
	while (cand->n) {
		struct vhnsw_result c = heap_pop(cand);
		struct vhnsw_node *const *ls = c.node->links[level];
		uint32_t cnt;

		if (out->n >= ef && c.dist > out->v[0].dist)
			break;
		if (w && w->max_visit && visited >= w->max_visit)
			break;
		cnt = nl_get(c.node, level);
		for (uint32_t base = 0; base < cnt; base += EXPAND_CHUNK) {
			struct vhnsw_node *nbs[EXPAND_CHUNK], *todo[EXPAND_CHUNK];
			uint32_t m = cnt - base < EXPAND_CHUNK ? cnt - base : EXPAND_CHUNK, nt = 0;

			for (uint32_t j = 0; j < m; j++)
				nbs[j] = link_get(&ls[base + j]);
			for (uint32_t j = 0; j < m; j++)
				if (visit(s, nbs[j])) {
					todo[nt++] = nbs[j];
					prefetch_vec(h, nbs[j], hdr);
				}
			for (uint32_t j = 0; j < nt; j++) {
				struct vhnsw_node *nb = todo[j];
				float d = dist_raw(h, qv, ql, qr, nb);

				visited++;
				if (out->n < ef || d < out->v[0].dist) {
					heap_push(cand, nb, d);
					if (filtered && !w->accept(nb->value, w->arg))
						continue;
					heap_push(out, nb, d);
					if (out->n > ef)
						heap_pop(out);
				}
			}
		}
	}
	heap_reserve(res, out->n);
	res->n = out->n;
	heap_drain_sorted(out, res->v);
}

/* Greedy descent from entry (at its own level, the top) to level stop + 1:
 * *res holds the one nearest node found. */
static void descend(const struct vhnsw *h, struct vhnsw_node *entry, const uint64_t *qv, float ql,
		    float qr, uint32_t stop, struct heap *res)
{
	struct vhnsw_node *cur = entry;
	float best = dist_raw(h, qv, ql, qr, cur);

	for (uint32_t l = entry->level; l > stop; l--) {
		bool moved = true;

		while (moved) {
			uint32_t cnt = nl_get(cur, l);
			struct vhnsw_node *const *ls = cur->links[l];

			moved = false;
			for (uint32_t j = 0; j < cnt; j++)
				__builtin_prefetch(link_get(&ls[j]));
			for (uint32_t j = 0; j < cnt; j++) {
				struct vhnsw_node *nb = link_get(&ls[j]);
				float d = dist_raw(h, qv, ql, qr, nb);

				if (d < best) {
					best = d;
					cur = nb;
					moved = true;
				}
			}
		}
	}
	res->n = 0;
	heap_push(res, cur, best);
}

static uint32_t exact_scan(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k,
			   const struct walk *w, struct vhnsw_result *out)
{
	struct heap top = { .max = true };
	uint32_t n;

	for (struct vhnsw_node *x = link_get(&h->head); x; x = link_get(&x->next)) {
		float d;

		if (w && w->accept && !w->accept(x->value, w->arg))
			continue;
		d = vhnsw_query_distance(h, q, x);
		if (top.n < k || d < top.v[0].dist) {
			heap_push(&top, x, d);
			if (top.n > k)
				heap_pop(&top);
		}
	}
	n = top.n;
	if (n)
		heap_drain_sorted(&top, out);
	xfree(top.v);
	return n;
}

uint32_t vhnsw_search_filter(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k, uint32_t ef,
			     bool exact, int (*accept)(void *value, void *arg), void *arg,
			     uint64_t max_visit, struct vhnsw_result *out)
{
	struct walk w = { .accept = accept, .arg = arg, .max_visit = max_visit };
	struct heap res = { .max = false };
	struct vhnsw_node *entry = entry_get(h);
	uint32_t n;

	if (!entry || !k)
		return 0;
	if (exact)
		return exact_scan(h, q, k, &w, out);
	if (ef < k)
		ef = k;
	descend(h, entry, q->vec, q->l2, q->range, 0, &res);
	search_level(h, q->vec, q->l2, q->range, 0, ef, &w, &res);
	n = res.n < k ? res.n : k;
	if (n)
		memcpy(out, res.v, n * sizeof(*out));
	xfree(res.v);
	return n;
}

uint32_t vhnsw_search(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k, uint32_t ef,
		      bool exact, struct vhnsw_result *out)
{
	return vhnsw_search_filter(h, q, k, ef, exact, NULL, NULL, 0, out);
}

/* ---- insert -------------------------------------------------------------- */

/* The neighbours chosen for a new node, per level, nearest first: found and
 * selected under the shared lock by vhnsw_prepare, linked by vhnsw_commit. */
struct vhnsw_prep {
	uint64_t gen;
	struct vhnsw_node *entry; /* the entry point the search started from */
	uint32_t level;		  /* the new node's */
	struct heap sel[VHNSW_MAX_LEVEL + 1];
};

void vhnsw_prep_free(struct vhnsw_prep *p)
{
	if (!p)
		return;
	for (uint32_t l = 0; l <= VHNSW_MAX_LEVEL; l++)
		xfree(p->sel[l].v);
	xfree(p);
}

/*
 * Malkov's heuristic: from candidates sorted nearest first, keep those
 * nearer to the new node than to any kept one (diverse directions), up to
 * want; then fill from the rest, so a node starts with enough links to
 * survive its neighbours' deletions. The candidates' vectors never change,
 * so this runs under the shared lock.
 */
static uint32_t select_neighbours(const struct vhnsw *h, const struct heap *cand, uint32_t want,
				  struct vhnsw_result *sel)
{
	uint32_t n = 0;
	bool *taken = xcalloc(cand->n ? cand->n : 1, sizeof(bool));

	for (uint32_t i = 0; i < cand->n && n < want; i++) {
		bool good = true;

		for (uint32_t j = 0; j < n && good; j++)
			if (vhnsw_distance(h, cand->v[i].node, sel[j].node) < cand->v[i].dist)
				good = false;
		if (good) {
			sel[n++] = cand->v[i];
			taken[i] = true;
		}
	}
	for (uint32_t i = 0; i < cand->n && n < want / 2; i++)
		if (!taken[i])
			sel[n++] = cand->v[i];
	xfree(taken);
	return n;
}

/* The search of an insert and the choice of its neighbours, under the
 * shared lock (held by the caller). */
static void prep_search(struct vhnsw *h, struct vhnsw_prep *p, const struct vhnsw_query *q,
			uint32_t ef)
{
	struct heap res = { .max = false };
	uint32_t top;

	p->gen = h->gen;
	p->entry = entry_get(h);
	for (uint32_t l = 0; l <= VHNSW_MAX_LEVEL; l++)
		p->sel[l].n = 0;
	if (!p->entry)
		return;
	top = p->level < p->entry->level ? p->level : p->entry->level;
	descend(h, p->entry, q->vec, q->l2, q->range, top, &res);
	for (int l = (int)top; l >= 0; l--) {
		struct heap *sel = &p->sel[l];

		/* The results (sorted) seed the next level down. */
		search_level(h, q->vec, q->l2, q->range, (uint32_t)l, ef, NULL, &res);
		heap_reserve(sel, vhnsw_cap(h, (uint32_t)l));
		sel->n = select_neighbours(h, &res, vhnsw_cap(h, (uint32_t)l), sel->v);
	}
	xfree(res.v);
}

struct vhnsw_prep *vhnsw_prepare(struct vhnsw *h, struct vhnsw_query *q, uint32_t ef)
{
	struct vhnsw_prep *p = xcalloc(1, sizeof(*p));

	p->level = random_level();
	vhnsw_read_lock(h);
	prep_search(h, p, q, ef);
	vhnsw_unlock(h);
	return p;
}

static bool linked(const struct vhnsw_node *a, const struct vhnsw_node *b, uint32_t l)
{
	for (uint32_t i = 0; i < a->nlinks[l]; i++)
		if (a->links[l][i] == b)
			return true;
	return false;
}

/* Writers (one per set at a time) read their own lists plainly and store
 * with link_set/nl_set, in the order the readers' rule above needs. */
static void unlink_one(struct vhnsw_node *a, const struct vhnsw_node *b, uint32_t l)
{
	for (uint32_t i = 0; i < a->nlinks[l]; i++)
		if (a->links[l][i] == b) {
			link_set(&a->links[l][i], a->links[l][a->nlinks[l] - 1]);
			nl_set(a, l, a->nlinks[l] - 1);
			return;
		}
}

bool vhnsw_add_link(struct vhnsw *h, struct vhnsw_node *a, struct vhnsw_node *b, uint32_t level)
{
	if (a == b || level > a->level || level > b->level || linked(a, b, level))
		return false;
	if (a->nlinks[level] >= vhnsw_cap(h, level) || b->nlinks[level] >= vhnsw_cap(h, level))
		return false;
	link_set(&a->links[level][a->nlinks[level]], b);
	nl_set(a, level, a->nlinks[level] + 1);
	link_set(&b->links[level][b->nlinks[level]], a);
	nl_set(b, level, b->nlinks[level] + 1);
	return true;
}

/*
 * Links a to n at level l, where n may be full: then n drops its farthest
 * neighbour w (and w drops n) if a is nearer to n than w is, and w keeps
 * at least one other link. dan is dist(a, n).
 */
static bool link_or_replace(struct vhnsw *h, struct vhnsw_node *a, struct vhnsw_node *n, uint32_t l,
			    float dan, bool force)
{
	struct vhnsw_node *w = NULL;
	float wd = -1;

	if (a->nlinks[l] >= vhnsw_cap(h, l) || linked(a, n, l))
		return false;
	if (vhnsw_add_link(h, a, n, l))
		return true;
	for (uint32_t i = 0; i < n->nlinks[l]; i++)
		__builtin_prefetch(n->links[l][i]->vec);
	for (uint32_t i = 0; i < n->nlinks[l]; i++) {
		struct vhnsw_node *x = n->links[l][i];
		float d;

		if (x->nlinks[l] < 2)
			continue;
		d = vhnsw_distance(h, n, x);
		if (d > wd) {
			wd = d;
			w = x;
		}
	}
	if (!w || (dan >= wd && !force))
		return false;
	unlink_one(n, w, l);
	unlink_one(w, n, l);
	return vhnsw_add_link(h, a, n, l);
}

/*
 * Phase two under the shared lock too: searches and other inserts' first
 * phases go on while the links are stored (see the readers' rule above);
 * the caller's shard lock keeps writers to this set one at a time.
 */
struct vhnsw_node *vhnsw_commit(struct vhnsw *h, struct vhnsw_prep *p, struct vhnsw_query *q,
				uint32_t ef, void *value)
{
	struct vhnsw_prep *own = NULL;
	struct vhnsw_node *n, *entry;
	uint32_t top;

	vhnsw_read_lock(h);
	entry = h->entry;
	/* A node deleted since the search may be among the candidates, and a
	 * new entry point means levels the search did not see: search again,
	 * now that no other writer can change the graph. */
	if (!p || p->gen != h->gen || p->entry != entry) {
		if (!p) {
			own = xcalloc(1, sizeof(*own));
			own->level = random_level();
			p = own;
		}
		prep_search(h, p, q, ef);
	}
	n = node_new(h, q->vec, q->l2, q->range, h->last_id + 1, p->level, value);
	top = entry ? (p->level < entry->level ? p->level : entry->level) : 0;
	if (entry)
		for (uint32_t l = 0; l <= top; l++) {
			const struct heap *sel = &p->sel[l];

			for (uint32_t i = 0; i < sel->n; i++)
				link_or_replace(h, n, sel->v[i].node, l, sel->v[i].dist, false);
			/* Every candidate full and nearer its own: take the
			 * nearest by force rather than start unreachable. */
			for (uint32_t i = 0; i < sel->n && !n->nlinks[l]; i++)
				link_or_replace(h, n, sel->v[i].node, l, sel->v[i].dist, true);
		}
	if (!entry || p->level > entry->level) {
		h->max_level = p->level;
		__atomic_store_n(&h->entry, n, __ATOMIC_RELEASE);
	}
	vhnsw_unlock(h);
	vhnsw_prep_free(own);
	vhnsw_query_free(q);
	return n;
}

struct vhnsw_node *vhnsw_load_node(struct vhnsw *h, const void *vec, float l2, float range,
				   uint64_t id, uint32_t level, void *value)
{
	struct vhnsw_node *n;

	if (level > VHNSW_MAX_LEVEL)
		return NULL;
	n = node_new(h, vec, l2, range, id, level, value);
	if (!h->entry || level > h->max_level) {
		h->entry = n;
		h->max_level = level;
	}
	return n;
}

/* ---- delete -------------------------------------------------------------- */

struct pair {
	struct vhnsw_node *node;
	float dist;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->dist < y->dist ? -1 : x->dist > y->dist;
}

/*
 * The neighbours of a deleted node at level l each lost one link: each is
 * offered the others, nearest first, until it has gained back two (where
 * both have room, or by replacing a farther link). One left with no link
 * at all would be unreachable (the ops fuzzer found such): it takes the
 * nearest offer by force, or, with none, a link to the entry point.
 */
static void repair(struct vhnsw *h, struct vhnsw_node *gone, struct vhnsw_node **nb, uint32_t cnt,
		   uint32_t l)
{
	struct pair *p = xmalloc((cnt ? cnt : 1) * sizeof(*p));

	for (uint32_t i = 0; i < cnt; i++) {
		uint32_t np = 0, gained = 0;
		struct vhnsw_node *e = h->entry;

		for (uint32_t j = 0; j < cnt; j++)
			if (j != i && !linked(nb[i], nb[j], l)) {
				p[np].node = nb[j];
				p[np++].dist = vhnsw_distance(h, nb[i], nb[j]);
			}
		qsort(p, np, sizeof(*p), pair_cmp);
		for (uint32_t j = 0; j < np && gained < 2; j++)
			if (link_or_replace(h, nb[i], p[j].node, l, p[j].dist, false))
				gained++;
		if (nb[i]->nlinks[l])
			continue;
		for (uint32_t j = 0; j < np; j++)
			if (link_or_replace(h, nb[i], p[j].node, l, p[j].dist, true))
				break;
		if (!nb[i]->nlinks[l] && e && e != gone && e != nb[i])
			link_or_replace(h, nb[i], e, l, vhnsw_distance(h, nb[i], e), true);
	}
	xfree(p);
}

void vhnsw_delete(struct vhnsw *h, struct vhnsw_node *node)
{
	vhnsw_write_lock(h);
	for (uint32_t l = 0; l <= node->level; l++) {
		uint32_t cnt = node->nlinks[l];
		struct vhnsw_node **nb = xmalloc((cnt ? cnt : 1) * sizeof(*nb));

		memcpy(nb, node->links[l], cnt * sizeof(*nb));
		for (uint32_t i = 0; i < cnt; i++)
			unlink_one(nb[i], node, l);
		node->nlinks[l] = 0;
		repair(h, node, nb, cnt, l);
		xfree(nb);
	}
	if (node->prev)
		node->prev->next = node->next;
	else
		h->head = node->next;
	if (node->next)
		node->next->prev = node->prev;
	else
		h->tail = node->prev;
	h->nodes[node->slot] = NULL;
	if (h->nfree == h->free_cap) {
		h->free_cap = h->free_cap ? h->free_cap * 2 : 64;
		h->free_slots = xrealloc(h->free_slots, h->free_cap * sizeof(*h->free_slots));
	}
	h->free_slots[h->nfree++] = node->slot;
	h->count--;
	h->gen++;
	h->bytes -= node_bytes(h, node->level);
	if (h->entry == node) {
		/* The highest remaining node is the new entry point. */
		h->entry = NULL;
		h->max_level = 0;
		for (struct vhnsw_node *x = h->head; x; x = x->next)
			if (!h->entry || x->level > h->max_level) {
				h->entry = x;
				h->max_level = x->level;
			}
	}
	vhnsw_unlock(h);
	xfree(node);
}

struct vhnsw_node *vhnsw_random(const struct vhnsw *h, uint64_t rnd)
{
	uint32_t s;

	if (!h->count)
		return NULL;
	/* Slots are dense but for deletion holes: a few probes find one. */
	for (int i = 0; i < 64; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		s = (uint32_t)((rnd >> 32) % h->nslots);
		if (h->nodes[s])
			return h->nodes[s];
	}
	for (uint32_t i = 0; i < h->nslots; i++)
		if (h->nodes[(s + i) % h->nslots])
			return h->nodes[(s + i) % h->nslots];
	return NULL;
}
