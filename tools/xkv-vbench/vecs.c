// SPDX-License-Identifier: BSD-3-Clause
/*
 * vecs: file formats, the clustered Gaussian generator and brute-force
 * ground truth (vecs.h).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vecs.h"

int vecs_read(const char *path, struct vecs *v)
{
	FILE *f = fopen(path, "rb");
	int32_t dim;
	long size;
	size_t rec, n;
	char *raw = NULL;
	int ret = 0;

	if (!f)
		return -errno;
	if (fread(&dim, 4, 1, f) != 1 || dim <= 0 || fseek(f, 0, SEEK_END) ||
	    (size = ftell(f)) < 0) {
		ret = -EINVAL;
		goto out;
	}
	rec = 4 + (size_t)dim * 4;
	if ((size_t)size % rec) {
		ret = -EINVAL;
		goto out;
	}
	n = (size_t)size / rec;
	raw = malloc(rec);
	v->data = malloc(n * (size_t)dim * 4);
	v->n = n;
	v->dim = (uint32_t)dim;
	rewind(f);
	for (size_t i = 0; i < n; i++) {
		if (fread(raw, rec, 1, f) != 1 || memcmp(raw, &dim, 4)) {
			ret = -EINVAL;
			break;
		}
		memcpy((char *)v->data + i * (size_t)dim * 4, raw + 4, (size_t)dim * 4);
	}
	if (ret) {
		free(v->data);
		v->data = NULL;
	}
out:
	free(raw);
	fclose(f);
	return ret;
}

int vecs_write(const char *path, const struct vecs *v)
{
	FILE *f = fopen(path, "wb");
	int32_t dim = (int32_t)v->dim;
	int ret = 0;

	if (!f)
		return -errno;
	for (size_t i = 0; i < v->n && !ret; i++)
		if (fwrite(&dim, 4, 1, f) != 1 ||
		    fwrite((char *)v->data + i * v->dim * 4, 4, v->dim, f) != v->dim)
			ret = -EIO;
	if (fclose(f) && !ret)
		ret = -EIO;
	return ret;
}

void vecs_free(struct vecs *v)
{
	free(v->data);
	v->data = NULL;
	v->n = 0;
}

/* ---- generator: xoshiro256** and Box-Muller, so a seed means the same data
 * on every libc. */

struct rng {
	uint64_t s[4];
	bool has_spare;
	double spare;
};

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
	r->has_spare = false;
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in (0, 1). */
static double rng_unit(struct rng *r)
{
	return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(struct rng *r)
{
	double u, v;

	if (r->has_spare) {
		r->has_spare = false;
		return r->spare;
	}
	u = rng_unit(r);
	v = rng_unit(r);
	r->spare = sqrt(-2 * log(u)) * sin(2 * M_PI * v);
	r->has_spare = true;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

int vecs_generate(const struct vecs_gen_params *p, struct vecs *base, struct vecs *query)
{
	size_t d = p->dim, r = p->rank, K = p->clusters, total = p->n_base + p->n_query;
	double *centres, *bases, *scale, *x, *z;
	double inv_sqrt_d = 1 / sqrt((double)d);
	struct rng g;

	if (!d || !K || !r || !p->n_base)
		return -EINVAL;
	rng_seed(&g, p->seed);
	centres = malloc(K * d * sizeof(double));
	bases = malloc(K * d * r * sizeof(double)); /* bases[k][i][j]: d x r per cluster */
	scale = malloc(r * sizeof(double));
	x = malloc(d * sizeof(double));
	z = malloc(r * sizeof(double));
	for (size_t i = 0; i < K * d; i++)
		centres[i] = rng_normal(&g) * inv_sqrt_d;
	for (size_t i = 0; i < K * d * r; i++)
		bases[i] = rng_normal(&g) * inv_sqrt_d;
	for (size_t j = 0; j < r; j++)
		scale[j] = 0.6 / sqrt((double)(j + 1));
	base->n = p->n_base;
	query->n = p->n_query;
	base->dim = query->dim = (uint32_t)d;
	base->data = malloc(p->n_base * d * sizeof(float));
	query->data = malloc((p->n_query ? p->n_query : 1) * d * sizeof(float));
	for (size_t n = 0; n < total; n++) {
		size_t k = (size_t)(rng_next(&g) % K);
		const double *c = centres + k * d, *b = bases + k * d * r;
		float *out = n < p->n_base ? (float *)base->data + n * d
					   : (float *)query->data + (n - p->n_base) * d;
		double norm = 0;

		for (size_t j = 0; j < r; j++)
			z[j] = rng_normal(&g) * scale[j];
		for (size_t i = 0; i < d; i++) {
			double v = c[i] + 0.05 * rng_normal(&g) * inv_sqrt_d;

			for (size_t j = 0; j < r; j++)
				v += b[i * r + j] * z[j];
			x[i] = v;
			norm += v * v;
		}
		norm = sqrt(norm);
		for (size_t i = 0; i < d; i++)
			out[i] = (float)(x[i] / norm);
	}
	free(centres);
	free(bases);
	free(scale);
	free(x);
	free(z);
	return 0;
}

/* ---- ground truth ---------------------------------------------------------------- */

struct gt_job {
	const struct vecs *base, *query;
	uint32_t k;
	size_t from, to; /* queries */
	int32_t *rows;
	float *sims;
};

static void *gt_worker(void *arg)
{
	struct gt_job *j = arg;
	size_t d = j->base->dim;
	double *q = malloc(d * sizeof(double)), *best = malloc(j->k * sizeof(double));
	int32_t *rows = malloc(j->k * sizeof(int32_t));

	for (size_t qi = j->from; qi < j->to; qi++) {
		const float *qf = vecs_row(j->query, qi);
		uint32_t have = 0;

		for (size_t i = 0; i < d; i++)
			q[i] = qf[i];
		for (size_t bi = 0; bi < j->base->n; bi++) {
			const float *b = vecs_row(j->base, bi);
			double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s;
			size_t i = 0;
			uint32_t at;

			/* Four sums for speed; float64 keeps them exact enough that
			 * only true ties could reorder. */
			for (; i + 4 <= d; i += 4) {
				s0 += q[i] * b[i];
				s1 += q[i + 1] * b[i + 1];
				s2 += q[i + 2] * b[i + 2];
				s3 += q[i + 3] * b[i + 3];
			}
			for (; i < d; i++)
				s0 += q[i] * b[i];
			s = (s0 + s1) + (s2 + s3);
			/* Sorted insert; a later row never beats an equal earlier one. */
			if (have == j->k && s <= best[have - 1])
				continue;
			at = have < j->k ? have++ : have - 1;
			while (at > 0 && best[at - 1] < s) {
				best[at] = best[at - 1];
				rows[at] = rows[at - 1];
				at--;
			}
			best[at] = s;
			rows[at] = (int32_t)bi;
		}
		for (uint32_t i = 0; i < j->k; i++) {
			j->rows[qi * j->k + i] = i < have ? rows[i] : -1;
			j->sims[qi * j->k + i] = i < have ? (float)best[i] : 0;
		}
	}
	free(q);
	free(best);
	free(rows);
	return NULL;
}

int vecs_ground_truth(const struct vecs *base, const struct vecs *query, uint32_t k,
		      unsigned threads, struct vecs *gt, struct vecs *sim)
{
	pthread_t tid[64];
	struct gt_job jobs[64];

	if (base->dim != query->dim || !k)
		return -EINVAL;
	if (threads < 1)
		threads = 1;
	if (threads > 64)
		threads = 64;
	gt->n = sim->n = query->n;
	gt->dim = sim->dim = k;
	gt->data = malloc((query->n ? query->n : 1) * k * sizeof(int32_t));
	sim->data = malloc((query->n ? query->n : 1) * k * sizeof(float));
	for (unsigned t = 0; t < threads; t++) {
		jobs[t] = (struct gt_job){ .base = base,
					   .query = query,
					   .k = k,
					   .from = query->n * t / threads,
					   .to = query->n * (t + 1) / threads,
					   .rows = gt->data,
					   .sims = sim->data };
		pthread_create(&tid[t], NULL, gt_worker, &jobs[t]);
	}
	for (unsigned t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	return 0;
}
