// SPDX-License-Identifier: GPL-2.0-only
/*
 * The vector-set HNSW (vset_hnsw.h): the SIMD builds agree with the scalar
 * one, recall@10 on a small random set against a linear scan, recall after
 * deleting 30% of the nodes, and Q8/BIN distances at their fixed points.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "vset_hnsw.h"

#include "kselftest_harness.h"

#define DIM 32
#define N 3000
#define Q 100

static uint64_t seed = 88172645463325252ull;

static float frand(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (float)((seed >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

static void add(struct vhnsw *h, const float *v, uintptr_t id)
{
	struct vhnsw_query q;
	struct vhnsw_prep *p;

	vhnsw_query_init(h, v, &q);
	p = vhnsw_prepare(h, &q, 200);
	vhnsw_commit(h, p, &q, 200, (void *)id);
	vhnsw_prep_free(p);
}

/* Mean recall@10 of the graph against the exact scan over Q queries. */
static double recall(struct vhnsw *h, uint32_t ef)
{
	struct vhnsw_result a[10], b[10];
	float v[DIM];
	unsigned hit = 0, total = 0;

	for (int i = 0; i < Q; i++) {
		struct vhnsw_query q;
		uint32_t na, nb;

		for (int j = 0; j < DIM; j++)
			v[j] = frand();
		vhnsw_query_init(h, v, &q);
		vhnsw_read_lock(h);
		na = vhnsw_search(h, &q, 10, ef, false, a);
		nb = vhnsw_search(h, &q, 10, 0, true, b);
		vhnsw_unlock(h);
		for (uint32_t x = 0; x < nb; x++)
			for (uint32_t y = 0; y < na; y++)
				if (a[y].node == b[x].node)
					hit++;
		total += nb;
		vhnsw_query_free(&q);
	}
	return (double)hit / total;
}

TEST(simd_builds_agree)
{
	float a[103], b[103], ref, got;
	int8_t qa[103], qb[103];
	int32_t qref;

	for (int i = 0; i < 103; i++) {
		a[i] = frand();
		b[i] = frand();
		qa[i] = (int8_t)(frand() * 127);
		qb[i] = (int8_t)(frand() * 127);
	}
	for (uint32_t n = 1; n <= 103; n += 17) {
		vhnsw_force_isa(0);
		ref = vhnsw_dot_f32(a, b, n);
		qref = vhnsw_dot_q8(qa, qb, n);
		for (int isa = 1; isa <= 2; isa++) {
			vhnsw_force_isa(isa);
			got = vhnsw_dot_f32(a, b, n);
			ASSERT_LT(fabsf(got - ref), 1e-4f);
			ASSERT_EQ(qref, vhnsw_dot_q8(qa, qb, n));
		}
	}
	vhnsw_force_isa(2);
}

TEST(q8_bin_fixed_points)
{
	struct vhnsw *h = vhnsw_new(4, VHNSW_Q8, VHNSW_COSINE, 16);
	float v[4] = { 1, 0, 0, 0 }, w[4] = { -1, 0, 0, 0 };
	struct vhnsw_result r[2];
	struct vhnsw_query q;

	add(h, v, 1);
	add(h, w, 2);
	vhnsw_query_init(h, v, &q);
	ASSERT_EQ(2u, vhnsw_search(h, &q, 2, 10, false, r));
	ASSERT_EQ(1u, (uintptr_t)r[0].node->value);
	ASSERT_LT(fabsf(r[0].dist), 1e-6f);
	ASSERT_LT(fabsf(r[1].dist - 2), 1e-6f);
	vhnsw_query_free(&q);
	vhnsw_free(h, NULL);

	h = vhnsw_new(4, VHNSW_BIN, VHNSW_COSINE, 16);
	add(h, v, 1);
	add(h, w, 2);
	vhnsw_query_init(h, w, &q);
	ASSERT_EQ(2u, vhnsw_search(h, &q, 2, 10, false, r));
	ASSERT_EQ(2u, (uintptr_t)r[0].node->value);
	/* One sign bit of four differs: 1 * 2 / 4. */
	ASSERT_LT(fabsf(r[1].dist - 0.5f), 1e-6f);
	vhnsw_query_free(&q);
	vhnsw_free(h, NULL);
}

TEST(recall_and_deletes)
{
	static float data[N][DIM];
	struct vhnsw *h;
	struct vhnsw_node **nodes;
	double before, after;
	uint32_t i = 0;

	for (enum vhnsw_quant qt = VHNSW_NOQUANT; qt <= VHNSW_Q8; qt++) {
		h = vhnsw_new(DIM, qt, VHNSW_COSINE, 16);
		ASSERT_NE(NULL, h);
		nodes = xcalloc(N, sizeof(*nodes));
		for (int k = 0; k < N; k++) {
			for (int j = 0; j < DIM; j++)
				data[k][j] = frand();
			add(h, data[k], (uintptr_t)k);
		}
		ASSERT_EQ((uint64_t)N, h->count);
		for (struct vhnsw_node *x = h->head; x; x = x->next)
			nodes[(uintptr_t)x->value] = x;
		before = recall(h, 100);
		ASSERT_GT(before, 0.90);
		/* 30% gone, at random. */
		for (int k = 0; k < N; k++)
			if ((unsigned)(frand() * 1000 + 1000) % 10 < 3) {
				vhnsw_delete(h, nodes[k]);
				nodes[k] = NULL;
				i++;
			}
		ASSERT_EQ((uint64_t)(N - i), h->count);
		after = recall(h, 100);
		TH_LOG("quant %d: recall@10 %.3f, after 30%% deleted %.3f", qt, before, after);
		ASSERT_GT(after, before - 0.05);
		xfree(nodes);
		vhnsw_free(h, NULL);
		i = 0;
	}
}

TEST_HARNESS_MAIN
