/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * t_vset: Redis 8's vector-set type: named elements, each with a vector in
 * an HNSW graph (vset_hnsw.h) and optional JSON attributes.
 *
 * Locking. The element table (name -> element), the attribute count and the
 * sorted view for VRANGE are under the key's shard lock, like any value.
 * The graph has its own rwlock (vset_hnsw.h): VSIM and the search half of
 * VADD may drop the shard lock and work under the graph's lock alone,
 * holding a reference (vset_get/vset_put) so that a DEL meanwhile frees the
 * set only when they are done. Attributes are read by such searches, so
 * they change under the graph's exclusive lock too.
 */
#ifndef XKV_T_VSET_H
#define XKV_T_VSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dict.h"
#include "object.h"
#include "vset_hnsw.h"

#define VSET_MAX_DIM (1u << 16)

struct vset_elem {
	struct dict_node dnode;
	struct vhnsw_node *node;
	char *attr; /* JSON, owned; NULL: none */
	size_t alen;
	size_t len;
	char name[];
};

struct vset {
	struct vhnsw *h;
	struct dict elems; /* of vset_elem */
	float *proj;	   /* REDUCE: [dim][proj_in] (row per output), or NULL */
	uint32_t proj_in;
	uint64_t uid;
	uint64_t nattrs;
	uint32_t ef_build; /* VSIM.SET's EF_CONSTRUCTION (VSIM.CREATEINDEX) */
	int refs;	   /* the key's, plus running searches' (atomic) */
	/*
	 * VRANGE's view (see t_vset.c): sorted[nsorted] by name plus pend[npend],
	 * the adds since, also sorted; kept up to date by add/remove while
	 * sorted_ok, dropped (rebuilt on the next VRANGE) after many changes
	 * without a VRANGE so that loading after one VRANGE pays nothing.
	 */
	struct vset_elem **sorted;
	struct vset_elem **pend;
	size_t nsorted, npend;
	uint32_t unused_changes;
	bool sorted_ok;
};

/* A walk over the view in name order (vset_range_start). */
struct vset_range_it {
	struct vset_elem *const *a, *const *b;
	size_t na, nb, ia, ib;
};

static inline struct vset *vset_of(const struct obj *o)
{
	return o->ptr;
}

/* A new empty set: NULL (errno EINVAL) on bad parameters. */
struct obj vset_new(uint32_t dim, enum vhnsw_quant quant, enum vhnsw_metric metric, uint32_t m,
		    bool *ok);
void vset_get(struct vset *v);
void vset_put(struct vset *v);

struct vset_elem *vset_find(const struct vset *v, const char *name, size_t len);
/* Adds a new element (the name must be absent) with node already in v->h;
 * attr (may be NULL) copied. */
struct vset_elem *vset_elem_add(struct vset *v, const char *name, size_t len);
/* Removes and frees e (its node too). */
void vset_elem_remove(struct vset *v, struct vset_elem *e);
/* Sets (alen > 0) or clears e's attributes, under the graph's lock. */
void vset_set_attr(struct vset *v, struct vset_elem *e, const char *attr, size_t alen);
/*
 * Starts it at the first element whose name is >= (incl) or > (!incl) the
 * len bytes at p, or at the first of all (p NULL). Valid until the next
 * change of v.
 */
void vset_range_start(struct vset *v, const char *p, size_t len, bool incl,
		      struct vset_range_it *it);
/* The next element in name order, or NULL at the end. */
struct vset_elem *vset_range_next(struct vset_range_it *it);
/* Bytewise name order, shorter first on a common prefix (memcmp's sign). */
int vset_name_cmp(const char *a, size_t al, const char *b, size_t bl);
/* Drops the sorted view (rebuilt by the next VRANGE). */
void vset_changed(struct vset *v);

/* Redis's REDUCE projection: a fixed +-1/sqrt(in) Hadamard-sign matrix. */
float *vset_projection(uint32_t in, uint32_t out);
void vset_project(const struct vset *v, const float *in, float *out);

#endif
