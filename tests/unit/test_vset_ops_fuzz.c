// SPDX-License-Identifier: GPL-2.0-only
/*
 * Random operations on a vector set (t_vset.h over vset_hnsw.h), as VADD
 * (new and update), VREM, VSIM (graph and TRUTH), VLINKS, VSETATTR and
 * VRANGE do them, with the graph's invariants checked after every batch:
 * every link points at a live node of a level at least the link's, no node
 * links itself, link counts within the level's cap, the entry point on the
 * top level, the element table, the node list and the slot table agree on
 * the count, every node is reachable from the entry on layer 0, and
 * VRANGE's view walks the names in order. VSET_OPS_FUZZ_ITERS steps
 * (default 20000, bounded for make test; `make fuzz-vectors` runs 1M under
 * ASan), VSET_OPS_FUZZ_SEED picks the sequence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "t_vset.h"
#include "vset_hnsw.h"

#include "kselftest_harness.h"

#define DIM 6
#define NAMES 600 /* a small name space: many updates and misses */
#define BATCH 997

static uint64_t rs = 88172645463325252ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static float frand(void)
{
	return (float)((rnd() >> 11) * (1.0 / 9007199254740992.0)) * 2 - 1;
}

static void rand_name(char *buf, size_t *len)
{
	*len = (size_t)snprintf(buf, 16, "e%u", (unsigned)(rnd() % NAMES));
}

/* What VADD does for one element: an update is a remove and an add. */
static void op_add(struct vset *v, const char *name, size_t len, uint32_t ef)
{
	struct vset_elem *old = vset_find(v, name, len), *e;
	struct vhnsw_query q;
	struct vhnsw_prep *p;
	float vec[DIM];

	for (int i = 0; i < DIM; i++)
		vec[i] = (rnd() % 5) ? frand() : 0; /* some exact ties */
	vhnsw_query_init(v->h, vec, &q);
	if (old)
		vset_elem_remove(v, old);
	/* The search half runs without the table's lock, as VADD's does. */
	p = (rnd() & 1) ? vhnsw_prepare(v->h, &q, ef) : NULL;
	e = vset_elem_add(v, name, len);
	e->node = vhnsw_commit(v->h, p, &q, ef, e);
	vhnsw_prep_free(p);
	vhnsw_query_free(&q);
}

/* VSIM: results are live, distinct, in order; TRUTH's first is the best. */
static int op_sim(struct vset *v, bool exact)
{
	struct vhnsw_result out[32];
	struct vhnsw_query q;
	float vec[DIM];
	uint32_t k = 1 + rnd() % 32, n;

	for (int i = 0; i < DIM; i++)
		vec[i] = frand();
	if (vhnsw_query_init(v->h, vec, &q))
		return 0; /* a zero vector: VSIM refuses it earlier */
	vhnsw_read_lock(v->h);
	n = vhnsw_search(v->h, &q, k, 1 + rnd() % 100, exact, out);
	vhnsw_unlock(v->h);
	vhnsw_query_free(&q);
	if (n > k || n > v->h->count || (v->h->count >= k && n < (exact ? k : 1)))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		struct vhnsw_node *x = out[i].node;

		if (x->slot >= v->h->nslots || v->h->nodes[x->slot] != x)
			return -2;
		if (i && out[i].dist < out[i - 1].dist)
			return -3;
		for (uint32_t j = 0; j < i; j++)
			if (out[j].node == x)
				return -4;
	}
	return 0;
}

static bool live(const struct vhnsw *h, const struct vhnsw_node *x)
{
	return x && x->slot < h->nslots && h->nodes[x->slot] == x;
}

/* The invariants above; 0 or a code saying which failed. */
static uint64_t lost_max;  /* most nodes unreachable in one check */
static uint64_t lost_bare; /* of those seen, how many had no layer-0 link */

static int check(struct vset *v)
{
	struct vhnsw *h = v->h;
	struct vhnsw_node **queue;
	struct vset_range_it it;
	struct vset_elem *prev = NULL, *el;
	uint64_t listed = 0, slotted = 0, seen = 0, walked = 0;
	uint8_t *mark;
	size_t qh = 0, qt = 0;
	int rc = 0;

	for (struct vhnsw_node *x = h->head; x; x = x->next) {
		listed++;
		if (!live(h, x) || x->level > h->max_level)
			return -10;
		if (((struct vset_elem *)x->value)->node != x)
			return -11;
		for (uint32_t l = 0; l <= x->level; l++) {
			if (x->nlinks[l] > vhnsw_cap(h, l))
				return -12;
			for (uint32_t i = 0; i < x->nlinks[l]; i++) {
				struct vhnsw_node *y = x->links[l][i];

				if (!live(h, y) || y == x || y->level < l)
					return -13;
			}
		}
	}
	for (uint32_t s = 0; s < h->nslots; s++)
		slotted += h->nodes[s] != NULL;
	if (listed != h->count || slotted != h->count || v->elems.count != h->count)
		return -14;
	if (!h->count)
		return h->entry ? -15 : 0;
	if (!live(h, h->entry) || h->entry->level != h->max_level)
		return -16;
	/* Layer 0 reachability from the entry (VCARD = what a search can find). */
	mark = xcalloc(h->nslots, 1);
	queue = xmalloc(h->count * sizeof(*queue));
	queue[qt++] = h->entry;
	mark[h->entry->slot] = 1;
	while (qh < qt) {
		struct vhnsw_node *x = queue[qh++];

		seen++;
		for (uint32_t i = 0; i < x->nlinks[0]; i++) {
			struct vhnsw_node *y = x->links[0][i];

			if (!mark[y->slot]) {
				mark[y->slot] = 1;
				queue[qt++] = y;
			}
		}
	}
	for (struct vhnsw_node *x = h->head; x && seen != h->count; x = x->next)
		if (!mark[x->slot] && !x->nlinks[0])
			lost_bare++;
	xfree(mark);
	xfree(queue);
	if (seen != h->count) {
		rc = -17;
		if (h->count - seen > lost_max)
			lost_max = h->count - seen;
	}
	vset_range_start(v, NULL, 0, true, &it);
	while ((el = vset_range_next(&it))) {
		if (prev && vset_name_cmp(prev->name, prev->len, el->name, el->len) >= 0)
			return -18;
		if (vset_find(v, el->name, el->len) != el)
			return -19;
		prev = el;
		walked++;
	}
	if (walked != h->count)
		return -20;
	return rc;
}

/* A fixture only for its timeout: 1M steps under ASan on a busy machine take
 * minutes, past the harness's default 30 s. */
FIXTURE(ops){};
FIXTURE_SETUP(ops)
{
}
FIXTURE_TEARDOWN(ops)
{
}

TEST_F_TIMEOUT(ops, random_operations, 3600)
{
	const char *iters_env = getenv("VSET_OPS_FUZZ_ITERS"),
		   *seed_env = getenv("VSET_OPS_FUZZ_SEED");
	unsigned long iters = iters_env ? strtoul(iters_env, NULL, 10) : 20000;
	unsigned long unreachable = 0, sims = 0;
	struct vset *v;
	struct obj o;
	char name[16];
	size_t len;
	bool ok;

	if (seed_env)
		rs ^= (strtoull(seed_env, NULL, 10) + 1) * 0x9e3779b97f4a7c15ull;
	/* Q8 (Redis's default); M from 4 to 16 by the seed. */
	o = vset_new(DIM, VHNSW_Q8, VHNSW_COSINE, 4 + (uint32_t)(rnd() % 13), &ok);
	ASSERT_TRUE(ok);
	v = vset_of(&o);
	for (unsigned long step = 0; step < iters; step++) {
		unsigned r = (unsigned)(rnd() % 100);
		struct vset_elem *e;

		rand_name(name, &len);
		e = vset_find(v, name, len);
		if (r < 45) {
			op_add(v, name, len, 1 + (uint32_t)(rnd() % 64));
		} else if (r < 70) {
			if (e)
				vset_elem_remove(v, e);
		} else if (r < 85) {
			ASSERT_EQ(0, op_sim(v, r < 72));
			sims++;
		} else if (r < 92) {
			/* VLINKS: every neighbour of every level is live. */
			if (e)
				for (uint32_t l = 0; l <= e->node->level; l++)
					for (uint32_t i = 0; i < e->node->nlinks[l]; i++)
						ASSERT_TRUE(live(v->h, e->node->links[l][i]));
		} else if (r < 97) {
			if (e && (rnd() & 1))
				vset_set_attr(v, e, "{\"a\":1}", 7);
			else if (e)
				vset_set_attr(v, e, "", 0);
		} else {
			struct vset_range_it it;

			vset_range_start(v, name, len, r & 1, &it);
			e = vset_range_next(&it);
			if (e)
				ASSERT_LE(0, vset_name_cmp(e->name, e->len, name, len));
		}
		if (step % BATCH == BATCH - 1 || step + 1 == iters) {
			int rc = check(v);

			if (rc == -17)
				unreachable++;
			else
				ASSERT_EQ(0, rc);
		}
	}
	/*
	 * A node with no link on layer 0 is unreachable: this fuzzer found new
	 * nodes left so when every candidate was full (vhnsw_commit now links
	 * the nearest by force), 1 to 7 checks in 51 at M 4 to 8.
	 */
	TH_LOG("%lu steps, %lu searches, %lu elements left, %lu of %lu checks found nodes "
	       "unreachable on layer 0 (at most %lu; %lu times with no link at all), M %u",
	       iters, sims, (unsigned long)v->h->count, unreachable, (iters + BATCH - 1) / BATCH,
	       (unsigned long)lost_max, (unsigned long)lost_bare, v->h->m);
	ASSERT_EQ(0, unreachable);
	vset_put(v);
}

TEST_HARNESS_MAIN
