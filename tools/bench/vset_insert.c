// SPDX-License-Identifier: BSD-3-Clause
/*
 * vset-insert: the HNSW insert in process, without the network, to read the
 * engine's own cost and whether two threads insert in parallel.
 *
 *   .output/vset-insert DATA_DIR [N] [THREADS]
 *
 * Loads the first 5,000 rows of DATA_DIR/base.fvecs serially (so every
 * thread starts on a graph), then the next N (default 10,000) over THREADS
 * threads (default 1), each owning a contiguous slice, as vadd_apply does:
 * vhnsw_prepare() alone, vhnsw_commit() under one mutex standing for the
 * key's shard lock. NOQUANT, M 16, EF 200. Prints the wall rate, the
 * process CPU per insert and the cores kept busy (CPU / wall): 2 threads
 * that insert in parallel keep near 2 busy on an idle 2-CPU machine.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vset_hnsw.h"

#define PRELOAD 5000
#define MAX_THREADS 16

static struct vhnsw *h;
static const float *rows;
static uint32_t dim;
static pthread_mutex_t shard = PTHREAD_MUTEX_INITIALIZER;

struct slice {
	size_t from, to;
};

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *insert(void *arg)
{
	const struct slice *s = arg;

	for (size_t i = s->from; i < s->to; i++) {
		struct vhnsw_query q;
		struct vhnsw_prep *p;

		vhnsw_query_init(h, rows + i * dim, &q);
		p = __atomic_load_n(&h->count, __ATOMIC_RELAXED) ? vhnsw_prepare(h, &q, 200) : NULL;
		pthread_mutex_lock(&shard);
		vhnsw_commit(h, p, &q, 200, NULL);
		pthread_mutex_unlock(&shard);
		vhnsw_prep_free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000, total;
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	struct slice sl[MAX_THREADS], pre = { 0, PRELOAD };
	pthread_t tid[MAX_THREADS];
	char path[4096];
	float *buf;
	double w0, c0, w, c;
	FILE *f;

	if (argc < 2 || threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: vset-insert DATA_DIR [N] [THREADS]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/base.fvecs", argv[1]);
	f = fopen(path, "rb");
	if (!f || fread(&dim, 4, 1, f) != 1 || !dim) {
		fprintf(stderr, "vset-insert: cannot read %s\n", path);
		return 1;
	}
	rewind(f);
	total = PRELOAD + n;
	buf = malloc(total * dim * sizeof(float));
	for (size_t i = 0; i < total; i++) {
		uint32_t d;

		if (fread(&d, 4, 1, f) != 1 || d != dim || fread(buf + i * dim, 4, dim, f) != dim) {
			fprintf(stderr, "vset-insert: %s has fewer than %zu rows\n", path, total);
			return 1;
		}
	}
	fclose(f);
	rows = buf;
	h = vhnsw_new(dim, VHNSW_NOQUANT, VHNSW_COSINE, 16);
	insert(&pre);
	w0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	for (int t = 0; t < threads; t++) {
		sl[t].from = PRELOAD + n * (size_t)t / (size_t)threads;
		sl[t].to = PRELOAD + n * (size_t)(t + 1) / (size_t)threads;
		pthread_create(&tid[t], NULL, insert, &sl[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	w = now(CLOCK_MONOTONIC) - w0;
	c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("%d thread%s: %zu inserts (after %d) of %u-d in %.2f s: %.0f/s, CPU %.3f ms per "
	       "insert, "
	       "%.2f cores busy\n",
	       threads, threads > 1 ? "s" : "", n, PRELOAD, dim, w, (double)n / w,
	       c * 1e3 / (double)n, c / w);
	vhnsw_free(h, NULL);
	free(buf);
	return 0;
}
