/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vecs: TEXMEX .fvecs/.ivecs files (each record an int32 count, then that
 * many float32 or int32 values, little-endian) and the synthetic data of
 * /work/shared/vectors/README.md section 5: clustered, low-rank-plus-noise
 * Gaussian vectors, normalised, with their exact top-k ground truth.
 *
 * Everything here runs before or after a measurement, never inside one.
 */
#ifndef XKV_VBENCH_VECS_H
#define XKV_VBENCH_VECS_H

#include <stddef.h>
#include <stdint.h>

/* n rows of dim values each, packed; owned by the caller (vecs_free()). */
struct vecs {
	size_t n;
	uint32_t dim;
	void *data; /* float[n * dim] or int32_t[n * dim] */
};

/* Reads a whole file; every record must have the first one's count. */
int vecs_read(const char *path, struct vecs *v);
int vecs_write(const char *path, const struct vecs *v);
void vecs_free(struct vecs *v);

static inline const float *vecs_row(const struct vecs *v, size_t i)
{
	return (const float *)v->data + i * v->dim;
}

static inline const int32_t *vecs_irow(const struct vecs *v, size_t i)
{
	return (const int32_t *)v->data + i * v->dim;
}

struct vecs_gen_params {
	uint32_t dim, clusters, rank;
	size_t n_base, n_query;
	uint64_t seed;
};

/*
 * Draws n_base + n_query points of the mixture (the first n_base are the
 * base set) in float64, normalises them and stores float32. Deterministic
 * for a seed (own generator, independent of libc). Fills base and query.
 */
int vecs_generate(const struct vecs_gen_params *p, struct vecs *base, struct vecs *query);

/*
 * Exact top-k of every query by inner product in float64 over the stored
 * float32 values, best first, ties to the lower row; rows into gt (int32)
 * and similarities into sim (float32), each n_query x k. Uses threads.
 */
int vecs_ground_truth(const struct vecs *base, const struct vecs *query, uint32_t k,
		      unsigned threads, struct vecs *gt, struct vecs *sim);

#endif
