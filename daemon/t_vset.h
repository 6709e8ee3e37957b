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
	/* VRANGE's view: the elements sorted by name, rebuilt after a change. */
	struct vset_elem **sorted;
	bool sorted_ok;
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
/* The elements sorted by name (VRANGE), valid until the next change. */
struct vset_elem **vset_sorted(struct vset *v);
void vset_changed(struct vset *v);

/* Redis's REDUCE projection: a fixed +-1/sqrt(in) Hadamard-sign matrix. */
float *vset_projection(uint32_t in, uint32_t out);
void vset_project(const struct vset *v, const float *in, float *out);

#endif
