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

/* The distance between two stored-format vectors with their norms/ranges. */
static float dist_raw(const struct vhnsw *h, const uint64_t *a, float la, float ra,
		      const uint64_t *b, float lb, float rb)
{
	switch (h->quant) {
	case VHNSW_Q8: {
		float d;

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
		float d = la * la + lb * lb -
			  2 * vhnsw_dot_f32((const float *)a, (const float *)b, h->dim);

		return d < 0 ? 0 : d;
	}
	return 1.0f - vhnsw_dot_f32((const float *)a, (const float *)b, h->dim);
}

float vhnsw_distance(const struct vhnsw *h, const struct vhnsw_node *a, const struct vhnsw_node *b)
{
	return dist_raw(h, a->vec, a->l2, a->range, b->vec, b->l2, b->range);
}

float vhnsw_query_distance(const struct vhnsw *h, const struct vhnsw_query *q,
			   const struct vhnsw_node *n)
{
	return dist_raw(h, q->vec, q->l2, q->range, n->vec, n->l2, n->range);
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

/* A node holding vec, in a free slot, at the tail of the list; unlinked. */
static struct vhnsw_node *node_new(struct vhnsw *h, const void *vec, float l2, float range,
				   uint64_t id, uint32_t level)
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
		n->slot = h->nslots++;
	}
	h->nodes[n->slot] = n;
	n->prev = h->tail;
	if (h->tail)
		h->tail->next = n;
	else
		h->head = n;
	h->tail = n;
	h->count++;
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

/* ---- per-thread scratch -------------------------------------------------- */

static __thread uint32_t *vis;
static __thread uint32_t vis_cap, vis_epoch;
/* Frees a thread's marks when it ends (a worker at shutdown). */
static pthread_key_t vis_key;
static pthread_once_t vis_once = PTHREAD_ONCE_INIT;

static void vis_key_make(void)
{
	pthread_key_create(&vis_key, xfree);
}

/* Starts a walk: every slot below nslots reads as unvisited. */
static void visit_begin(const struct vhnsw *h)
{
	if (h->nslots > vis_cap) {
		uint32_t cap = h->nslots + h->nslots / 2 + 64;

		vis = xrealloc(vis, cap * sizeof(*vis));
		pthread_once(&vis_once, vis_key_make);
		pthread_setspecific(vis_key, vis);
		memset(vis + vis_cap, 0, (cap - vis_cap) * sizeof(*vis));
		vis_cap = cap;
	}
	if (++vis_epoch == 0) {
		memset(vis, 0, vis_cap * sizeof(*vis));
		vis_epoch = 1;
	}
}

/* True the first time a slot is seen in this walk. */
static inline bool visit(uint32_t slot)
{
	if (vis[slot] == vis_epoch)
		return false;
	vis[slot] = vis_epoch;
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

static void heap_push(struct heap *hp, struct vhnsw_node *node, float dist)
{
	uint32_t i;

	if (hp->n == hp->cap) {
		hp->cap = hp->cap ? hp->cap * 2 : 64;
		hp->v = xrealloc(hp->v, hp->cap * sizeof(*hp->v));
	}
	i = hp->n++;
	hp->v[i].node = node;
	hp->v[i].dist = dist;
	while (i && heap_before(hp, i, (i - 1) / 2)) {
		struct vhnsw_result t = hp->v[i];

		hp->v[i] = hp->v[(i - 1) / 2];
		hp->v[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct vhnsw_result heap_pop(struct heap *hp)
{
	struct vhnsw_result top = hp->v[0];
	uint32_t i = 0;

	hp->v[0] = hp->v[--hp->n];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct vhnsw_result t;

		if (l < hp->n && heap_before(hp, l, m))
			m = l;
		if (r < hp->n && heap_before(hp, r, m))
			m = r;
		if (m == i)
			break;
		t = hp->v[i];
		hp->v[i] = hp->v[m];
		hp->v[m] = t;
		i = m;
	}
	return top;
}

static int result_cmp(const void *a, const void *b)
{
	const struct vhnsw_result *x = a, *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return x->node->id < y->node->id ? -1 : x->node->id > y->node->id;
}

/* ---- search -------------------------------------------------------------- */

struct walk {
	int (*accept)(void *value, void *arg); /* NULL: every node */
	void *arg;
	uint64_t max_visit; /* 0: no bound */
};

/*
 * The beam search of one level from the entries in *res (which it replaces
 * with the ef nearest found, sorted nearest first). With a filter only
 * accepted nodes enter the results, but every node can be walked through.
 */
static void search_level(const struct vhnsw *h, const uint64_t *qv, float ql, float qr,
			 uint32_t level, uint32_t ef, const struct walk *w, struct heap *res)
{
	struct heap cand = { .max = false };
	struct heap out = { .max = true };
	uint64_t visited = 0;

	visit_begin(h);
	for (uint32_t i = 0; i < res->n; i++) {
		struct vhnsw_node *n = res->v[i].node;

		visit(n->slot);
		heap_push(&cand, n, res->v[i].dist);
		if (!w || !w->accept || w->accept(n->value, w->arg))
			heap_push(&out, n, res->v[i].dist);
	}
	while (cand.n) {
		struct vhnsw_result c = heap_pop(&cand);

		if (out.n >= ef && c.dist > out.v[0].dist)
			break;
		if (w && w->max_visit && visited >= w->max_visit)
			break;
		for (uint32_t j = 0; j < c.node->nlinks[level]; j++) {
			struct vhnsw_node *nb = c.node->links[level][j];
			float d;

			if (!visit(nb->slot))
				continue;
			visited++;
			d = dist_raw(h, qv, ql, qr, nb->vec, nb->l2, nb->range);
			if (out.n < ef || d < out.v[0].dist) {
				heap_push(&cand, nb, d);
				if (w && w->accept && !w->accept(nb->value, w->arg))
					continue;
				heap_push(&out, nb, d);
				if (out.n > ef)
					heap_pop(&out);
			}
		}
	}
	xfree(cand.v);
	xfree(res->v);
	*res = out;
	res->max = false;
	qsort(res->v, res->n, sizeof(*res->v), result_cmp);
}

/* Greedy descent from the entry point to level stop + 1: *res holds the
 * one nearest node found. */
static void descend(const struct vhnsw *h, const uint64_t *qv, float ql, float qr, uint32_t stop,
		    struct heap *res)
{
	struct vhnsw_node *cur = h->entry;
	float best = dist_raw(h, qv, ql, qr, cur->vec, cur->l2, cur->range);

	for (uint32_t l = h->max_level; l > stop; l--) {
		bool moved = true;

		while (moved) {
			moved = false;
			for (uint32_t j = 0; j < cur->nlinks[l]; j++) {
				struct vhnsw_node *nb = cur->links[l][j];
				float d = dist_raw(h, qv, ql, qr, nb->vec, nb->l2, nb->range);

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

	for (struct vhnsw_node *x = h->head; x; x = x->next) {
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
	qsort(top.v, top.n, sizeof(*top.v), result_cmp);
	n = top.n;
	if (n)
		memcpy(out, top.v, n * sizeof(*out));
	xfree(top.v);
	return n;
}

uint32_t vhnsw_search_filter(struct vhnsw *h, const struct vhnsw_query *q, uint32_t k, uint32_t ef,
			     bool exact, int (*accept)(void *value, void *arg), void *arg,
			     uint64_t max_visit, struct vhnsw_result *out)
{
	struct walk w = { .accept = accept, .arg = arg, .max_visit = max_visit };
	struct heap res = { .max = false };
	uint32_t n;

	if (!h->entry || !k)
		return 0;
	if (exact)
		return exact_scan(h, q, k, &w, out);
	if (ef < k)
		ef = k;
	descend(h, q->vec, q->l2, q->range, 0, &res);
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

struct vhnsw_prep {
	uint64_t gen;
	struct vhnsw_node *entry; /* the entry point the search started from */
	uint32_t max_level;
	uint32_t level; /* the new node's */
	struct heap cand[VHNSW_MAX_LEVEL + 1];
};

void vhnsw_prep_free(struct vhnsw_prep *p)
{
	if (!p)
		return;
	for (uint32_t l = 0; l <= VHNSW_MAX_LEVEL; l++)
		xfree(p->cand[l].v);
	xfree(p);
}

/* The search of an insert, under either lock. */
static void prep_search(struct vhnsw *h, struct vhnsw_prep *p, const struct vhnsw_query *q,
			uint32_t ef)
{
	struct heap res = { .max = false };
	uint32_t top;

	p->gen = h->gen;
	p->entry = h->entry;
	p->max_level = h->max_level;
	for (uint32_t l = 0; l <= VHNSW_MAX_LEVEL; l++)
		p->cand[l].n = 0;
	if (!h->entry)
		return;
	top = p->level < h->max_level ? p->level : h->max_level;
	descend(h, q->vec, q->l2, q->range, top, &res);
	for (int l = (int)top; l >= 0; l--) {
		search_level(h, q->vec, q->l2, q->range, (uint32_t)l, ef, NULL, &res);
		/* The results seed the next level down. */
		p->cand[l].n = 0;
		for (uint32_t i = 0; i < res.n; i++)
			heap_push(&p->cand[l], res.v[i].node, res.v[i].dist);
		/* heap_push reorders: keep them sorted for selection. */
		qsort(p->cand[l].v, p->cand[l].n, sizeof(struct vhnsw_result), result_cmp);
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

static void unlink_one(struct vhnsw_node *a, const struct vhnsw_node *b, uint32_t l)
{
	for (uint32_t i = 0; i < a->nlinks[l]; i++)
		if (a->links[l][i] == b) {
			a->links[l][i] = a->links[l][--a->nlinks[l]];
			return;
		}
}

bool vhnsw_add_link(struct vhnsw *h, struct vhnsw_node *a, struct vhnsw_node *b, uint32_t level)
{
	if (a == b || level > a->level || level > b->level || linked(a, b, level))
		return false;
	if (a->nlinks[level] >= vhnsw_cap(h, level) || b->nlinks[level] >= vhnsw_cap(h, level))
		return false;
	a->links[level][a->nlinks[level]++] = b;
	b->links[level][b->nlinks[level]++] = a;
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
 * Malkov's heuristic: from candidates sorted nearest first, keep those
 * nearer to the new node than to any kept one (diverse directions), up to
 * want; then fill from the rest, so a node starts with enough links to
 * survive its neighbours' deletions.
 */
static uint32_t select_neighbours(struct vhnsw *h, const struct heap *cand, uint32_t want,
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

struct vhnsw_node *vhnsw_commit(struct vhnsw *h, struct vhnsw_prep *p, struct vhnsw_query *q,
				uint32_t ef, void *value)
{
	struct vhnsw_prep *own = NULL;
	struct vhnsw_node *n;
	struct vhnsw_result *sel;
	uint32_t top;

	vhnsw_write_lock(h);
	/* A node deleted since the search may be among the candidates, and a
	 * new entry point means levels the search did not see: search again,
	 * now that nothing can change under us. */
	if (!p || p->gen != h->gen || p->entry != h->entry || p->max_level != h->max_level) {
		if (!p) {
			own = xcalloc(1, sizeof(*own));
			own->level = random_level();
			p = own;
		}
		prep_search(h, p, q, ef);
	}
	n = node_new(h, q->vec, q->l2, q->range, ++h->last_id, p->level);
	n->value = value;
	sel = xmalloc(vhnsw_cap(h, 0) * sizeof(*sel));
	top = p->level < p->max_level ? p->level : p->max_level;
	if (p->entry)
		for (uint32_t l = 0; l <= top; l++) {
			uint32_t k = select_neighbours(h, &p->cand[l], vhnsw_cap(h, l), sel);

			for (uint32_t i = 0; i < k; i++)
				link_or_replace(h, n, sel[i].node, l, sel[i].dist, false);
			/* Every candidate full and nearer its own: take the
			 * nearest by force rather than start unreachable. */
			for (uint32_t i = 0; i < k && !n->nlinks[l]; i++)
				link_or_replace(h, n, sel[i].node, l, sel[i].dist, true);
		}
	xfree(sel);
	if (!h->entry || p->level > h->max_level) {
		h->entry = n;
		h->max_level = p->level;
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
	n = node_new(h, vec, l2, range, id, level);
	n->value = value;
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
