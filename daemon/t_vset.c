// SPDX-License-Identifier: BSD-3-Clause
/*
 * t_vset: the vector-set value (see t_vset.h): its element table, its
 * lifetime by reference count, COPY's deep copy of the graph, and REDUCE's
 * projection matrix.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "mem.h"
#include "t_vset.h"

static uint64_t vset_next_uid; /* VINFO's vset-uid, from 0 as Redis */

static bool elem_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct vset_elem *e = (const struct vset_elem *)n;

	return e->len == len && !memcmp(e->name, key, len);
}

static const struct dict_type elem_type = { .key_equal = elem_equal };

static struct vset *vset_alloc(struct vhnsw *h)
{
	struct vset *v = xcalloc(1, sizeof(*v));

	v->h = h;
	dict_init(&v->elems, &elem_type);
	v->uid = __atomic_fetch_add(&vset_next_uid, 1, __ATOMIC_RELAXED);
	v->refs = 1;
	v->ef_build = 200;
	return v;
}

struct obj vset_new(uint32_t dim, enum vhnsw_quant quant, enum vhnsw_metric metric, uint32_t m,
		    bool *ok)
{
	struct vhnsw *h = vhnsw_new(dim, quant, metric, m);
	struct obj o = { .type = OBJ_VSET, .enc = ENC_RAW };

	*ok = h != NULL;
	if (h)
		o.ptr = vset_alloc(h);
	return o;
}

static void elem_free(void *p)
{
	struct vset_elem *e = p;

	xfree(e->attr);
	xfree(e);
}

static void vset_destroy(struct vset *v)
{
	vhnsw_free(v->h, elem_free);
	dict_destroy(&v->elems);
	xfree(v->proj);
	xfree(v->sorted);
	xfree(v->pend);
	xfree(v);
}

void vset_get(struct vset *v)
{
	__atomic_fetch_add(&v->refs, 1, __ATOMIC_RELAXED);
}

void vset_put(struct vset *v)
{
	if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0)
		vset_destroy(v);
}

struct vset_elem *vset_find(const struct vset *v, const char *name, size_t len)
{
	return (struct vset_elem *)dict_find(&v->elems, name, len, XXH3_64bits(name, len));
}

static void view_add(struct vset *v, struct vset_elem *e);
static void view_remove(struct vset *v, struct vset_elem *e);

struct vset_elem *vset_elem_add(struct vset *v, const char *name, size_t len)
{
	struct vset_elem *e = xcalloc(1, sizeof(*e) + len + 1);

	memcpy(e->name, name, len);
	e->len = len;
	e->dnode.hash = XXH3_64bits(name, len);
	dict_insert(&v->elems, &e->dnode);
	view_add(v, e);
	return e;
}

void vset_elem_remove(struct vset *v, struct vset_elem *e)
{
	dict_remove(&v->elems, &e->dnode);
	dict_maybe_shrink(&v->elems);
	if (e->attr)
		v->nattrs--;
	vhnsw_delete(v->h, e->node);
	view_remove(v, e);
	elem_free(e);
}

void vset_set_attr(struct vset *v, struct vset_elem *e, const char *attr, size_t alen)
{
	char *copy = alen ? xstrndup(attr, alen) : NULL;
	char *old;

	vhnsw_write_lock(v->h);
	old = e->attr;
	if (old && !copy)
		v->nattrs--;
	else if (!old && copy)
		v->nattrs++;
	e->attr = copy;
	e->alen = alen;
	vhnsw_unlock(v->h);
	xfree(old);
}

void vset_changed(struct vset *v)
{
	v->sorted_ok = false;
}

int vset_name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

static int elem_cmp(const void *a, const void *b)
{
	const struct vset_elem *x = *(struct vset_elem *const *)a,
			       *y = *(struct vset_elem *const *)b;

	return vset_name_cmp(x->name, x->len, y->name, y->len);
}

/* The first index of s[n] whose name is >= (incl) or > (!incl) p. */
static size_t view_bound(struct vset_elem *const *s, size_t n, const char *p, size_t len, bool incl)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		int cmp = vset_name_cmp(s[mid]->name, s[mid]->len, p, len);

		if (cmp < 0 || (cmp == 0 && !incl))
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/*
 * The view is kept in two sorted arrays so that a change costs a bisection
 * and a short memmove of pend (at most VIEW_PEND entries) instead of the
 * O(n log n) re-sort VRANGE paid after every change. pend is folded into
 * sorted by one linear merge when full; a remove from sorted is a memmove
 * of pointers. Without a VRANGE for VIEW_IDLE changes the view is dropped,
 * so bulk loads and deletes after an old VRANGE pay nothing per change.
 */
#define VIEW_PEND 512
#define VIEW_IDLE 4096

static void view_fold(struct vset *v)
{
	size_t i = v->nsorted, j = v->npend, k = v->nsorted + v->npend;

	if (!v->npend)
		return;
	v->sorted = xrealloc(v->sorted, (k + 1) * sizeof(*v->sorted));
	/* Merge from the back, in place. */
	while (j) {
		if (i && elem_cmp(&v->sorted[i - 1], &v->pend[j - 1]) > 0)
			v->sorted[--k] = v->sorted[--i];
		else
			v->sorted[--k] = v->pend[--j];
	}
	v->nsorted += v->npend;
	v->npend = 0;
}

static bool view_live(struct vset *v)
{
	if (!v->sorted_ok)
		return false;
	if (++v->unused_changes > VIEW_IDLE) {
		v->sorted_ok = false;
		return false;
	}
	return true;
}

static void view_add(struct vset *v, struct vset_elem *e)
{
	size_t at;

	if (!view_live(v))
		return;
	if (v->npend == VIEW_PEND)
		view_fold(v);
	if (!v->pend)
		v->pend = xmalloc(VIEW_PEND * sizeof(*v->pend));
	at = view_bound(v->pend, v->npend, e->name, e->len, true);
	memmove(&v->pend[at + 1], &v->pend[at], (v->npend - at) * sizeof(*v->pend));
	v->pend[at] = e;
	v->npend++;
}

static void view_drop_at(struct vset_elem **s, size_t *n, struct vset_elem *e)
{
	size_t at = view_bound(s, *n, e->name, e->len, true);

	if (at < *n && s[at] == e) {
		memmove(&s[at], &s[at + 1], (*n - at - 1) * sizeof(*s));
		(*n)--;
	}
}

static void view_remove(struct vset *v, struct vset_elem *e)
{
	size_t n = v->npend;

	if (!view_live(v))
		return;
	view_drop_at(v->pend, &v->npend, e);
	if (v->npend == n)
		view_drop_at(v->sorted, &v->nsorted, e);
}

static void view_build(struct vset *v)
{
	size_t i = 0;

	v->sorted = xrealloc(v->sorted, (v->h->count + 1) * sizeof(*v->sorted));
	for (struct vhnsw_node *n = v->h->head; n; n = n->next)
		v->sorted[i++] = n->value;
	qsort(v->sorted, i, sizeof(*v->sorted), elem_cmp);
	v->nsorted = i;
	v->npend = 0;
	v->sorted_ok = true;
}

void vset_range_start(struct vset *v, const char *p, size_t len, bool incl,
		      struct vset_range_it *it)
{
	if (!v->sorted_ok)
		view_build(v);
	v->unused_changes = 0;
	it->a = v->sorted;
	it->na = v->nsorted;
	it->b = v->pend;
	it->nb = v->npend;
	it->ia = p ? view_bound(it->a, it->na, p, len, incl) : 0;
	it->ib = p ? view_bound(it->b, it->nb, p, len, incl) : 0;
}

struct vset_elem *vset_range_next(struct vset_range_it *it)
{
	if (it->ia < it->na && (it->ib >= it->nb || elem_cmp(&it->a[it->ia], &it->b[it->ib]) < 0))
		return it->a[it->ia++];
	if (it->ib < it->nb)
		return it->b[it->ib++];
	return NULL;
}

float *vset_projection(uint32_t in, uint32_t out)
{
	float *m = xmalloc(sizeof(float) * in * out);
	const float scale = 1.0f / sqrtf((float)in);

	/* Sign by the parity of i & j: deterministic, so replicas agree. */
	for (uint32_t i = 0; i < out; i++)
		for (uint32_t j = 0; j < in; j++)
			m[(size_t)i * in + j] = (__builtin_popcount(i & j) & 1) ? -scale : scale;
	return m;
}

void vset_project(const struct vset *v, const float *in, float *out)
{
	for (uint32_t i = 0; i < v->h->dim; i++) {
		const float *row = v->proj + (size_t)i * v->proj_in;
		float s = 0;

		for (uint32_t j = 0; j < v->proj_in; j++)
			s += row[j] * in[j];
		out[i] = s;
	}
}

/* ---- the type's operations ----------------------------------------------- */

static void vset_obj_free(struct obj *o)
{
	vset_put(vset_of(o));
}

/* COPY: the same graph, node for node (ids, levels and links kept). */
static struct obj vset_obj_dup(const struct obj *o)
{
	struct vset *s = vset_of(o), *d;
	struct vhnsw *h = vhnsw_new(s->h->dim, s->h->quant, s->h->metric, s->h->m);
	struct vhnsw_node **map = xcalloc(s->h->nslots ? s->h->nslots : 1, sizeof(*map));
	struct obj out = *o;

	d = vset_alloc(h);
	d->ef_build = s->ef_build;
	vhnsw_read_lock(s->h);
	for (struct vhnsw_node *n = s->h->head; n; n = n->next) {
		const struct vset_elem *se = n->value;
		struct vset_elem *de = vset_elem_add(d, se->name, se->len);

		if (se->attr) {
			de->attr = xstrndup(se->attr, se->alen);
			de->alen = se->alen;
			d->nattrs++;
		}
		de->node = vhnsw_load_node(h, n->vec, n->l2, n->range, n->id, n->level, de);
		map[n->slot] = de->node;
	}
	for (struct vhnsw_node *n = s->h->head; n; n = n->next)
		for (uint32_t l = 0; l <= n->level; l++)
			for (uint32_t i = 0; i < n->nlinks[l]; i++)
				vhnsw_add_link(h, map[n->slot], map[n->links[l][i]->slot], l);
	h->entry = s->h->entry ? map[s->h->entry->slot] : NULL;
	h->max_level = s->h->max_level;
	h->last_id = s->h->last_id;
	vhnsw_unlock(s->h);
	if (s->proj) {
		size_t bytes = sizeof(float) * s->proj_in * s->h->dim;

		d->proj = xmalloc(bytes);
		memcpy(d->proj, s->proj, bytes);
		d->proj_in = s->proj_in;
	}
	xfree(map);
	out.ptr = d;
	return out;
}

static size_t vset_obj_mem(const struct obj *o)
{
	const struct vset *v = vset_of(o);
	size_t n = sizeof(*v) + sizeof(*v->h) + v->h->bytes + dict_mem(&v->elems) +
		   (size_t)v->h->slots_cap * sizeof(void *) + (size_t)v->h->free_cap * 4;

	for (const struct vhnsw_node *x = v->h->head; x; x = x->next) {
		const struct vset_elem *e = x->value;

		n += sizeof(*e) + e->len + 1 + e->alen;
	}
	if (v->proj)
		n += sizeof(float) * v->proj_in * v->h->dim;
	return n;
}

static size_t vset_obj_items(const struct obj *o)
{
	return vset_of(o)->h->count;
}

static size_t vset_obj_free_effort(const struct obj *o)
{
	return vset_of(o)->h->count;
}

static const struct obj_ops vset_ops = {
	.free = vset_obj_free,
	.dup = vset_obj_dup,
	.mem = vset_obj_mem,
	.free_effort = vset_obj_free_effort,
	.items = vset_obj_items,
};

static void __attribute__((constructor)) vset_register(void)
{
	obj_register(OBJ_VSET, &vset_ops);
}
