// SPDX-License-Identifier: BSD-3-Clause
/*
 * xkv-vbench: the vector-set benchmark client (README.md here), following
 * the method of /work/shared/vectors/README.md section 4 with a compiled
 * client, so that the client is not the ceiling:
 *
 *   load   VADD key FP32 <blob> <row> <options> over N connections, each
 *          owning a contiguous slice of the rows with P requests in flight;
 *          the clock starts when every request is built and stops at the
 *          last reply; then INFO memory.
 *   query  for each ef: recall@10 over all queries on one connection,
 *          serially; then queries/s at 1 and 2 connections, each with one
 *          request in flight (send, wait, send the next), cycling the
 *          queries, after a warm-up; p50 latency with 1 connection. With
 *          --nothread both, every ef runs with and without NOTHREAD.
 *   gen    the clustered low-rank Gaussian data of section 5 with its exact
 *          ground truth.
 *
 * Threads: the main thread prepares and reports; each connection has its
 * own thread, which touches only its own job struct until it is joined.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vconn.h"
#include "vecs.h"

#define MAX_CONNS 64
#define MAX_EFS 32
#define TOPK 10

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, const char *arg, int err)
{
	fprintf(stderr, "xkv-vbench: ");
	fprintf(stderr, fmt, arg);
	if (err)
		fprintf(stderr, ": %s", strerror(-err));
	fputc('\n', stderr);
	exit(1);
}

/* ---- options ---------------------------------------------------------------- */

struct opts {
	const char *host, *key, *data, *json, *label, *vadd;
	int port, load_conns, pipeline, nclients, clients[8], nefs, efs[MAX_EFS];
	double warmup, seconds;
	int nothread; /* 0: without, 1: with, 2: both */
	bool no_load, keep;
	size_t limit;
	int server_pid; /* > 0: report the server's CPU per request */
};

/*
 * The CPU seconds (user + system, every thread) the server process has used,
 * from /proc/PID/stat; -1 without --server-pid or when it cannot be read.
 * Timing on a shared machine says little, CPU per request says more.
 */
static double server_cpu(const struct opts *o)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	if (o->server_pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", o->server_pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* The command name may hold spaces: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Milliseconds of server CPU per request between two server_cpu() samples. */
static double cpu_ms(double before, double after, uint64_t requests)
{
	if (before < 0 || after < 0 || !requests)
		return -1;
	return (after - before) * 1e3 / (double)requests;
}

static void parse_ints(const char *s, int *out, int *n, int max)
{
	*n = 0;
	while (*s && *n < max) {
		char *end;

		out[(*n)++] = (int)strtol(s, &end, 10);
		if (end == s)
			die("bad number list: %s", s, 0);
		s = *end == ',' ? end + 1 : end;
	}
}

/* ---- load --------------------------------------------------------------------- */

struct load_job {
	const struct opts *o;
	pthread_barrier_t *ready;
	char *reqs;
	size_t *offs; /* n + 1 offsets into reqs */
	size_t n;
	uint64_t done_ns, errors;
	char first_error[128];
	int ret;
};

static void *load_worker(void *arg)
{
	struct load_job *j = arg;
	struct vconn c;
	struct vreply r;
	size_t sent = 0, got = 0;

	j->ret = vconn_open(&c, j->o->host, j->o->port);
	pthread_barrier_wait(j->ready);
	if (j->ret)
		return NULL;
	while (sent < j->n && sent < (size_t)j->o->pipeline) {
		j->ret = vconn_send(&c, j->reqs + j->offs[sent], j->offs[sent + 1] - j->offs[sent]);
		sent++;
	}
	while (got < j->n && !j->ret) {
		j->ret = vconn_read(&c, &r);
		if (j->ret)
			break;
		got++;
		if (vconn_is_error(&r) && !j->errors++)
			snprintf(j->first_error, sizeof(j->first_error), "%.*s", (int)r.len - 2,
				 r.buf);
		if (sent < j->n) {
			j->ret = vconn_send(&c, j->reqs + j->offs[sent],
					    j->offs[sent + 1] - j->offs[sent]);
			sent++;
		}
	}
	j->done_ns = now_ns();
	vconn_close(&c);
	return NULL;
}

/* Splits "A B C" into words (modifies s). */
static int split_words(char *s, const char **w, size_t *lens, int max)
{
	int n = 0;

	for (char *t = strtok(s, " "); t && n < max; t = strtok(NULL, " ")) {
		w[n] = t;
		lens[n++] = strlen(t);
	}
	return n;
}

struct load_result {
	double seconds, rate, cpu_ms;
	uint64_t errors;
	long long used_memory, rss;
};

static long long info_field(const char *info, size_t len, const char *name)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\n%s:", name);
	p = memmem(info, len, pat, strlen(pat));
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void read_memory(const struct opts *o, struct load_result *lr)
{
	static const char *const argv[] = { "INFO", "memory" };
	static const size_t lens[] = { 4, 6 };
	char *req = NULL;
	size_t len = 0, cap = 0;
	struct vconn c;
	struct vreply r;

	lr->used_memory = lr->rss = -1;
	if (vconn_open(&c, o->host, o->port))
		return;
	vconn_format(&req, &len, &cap, 2, argv, lens);
	if (!vconn_send(&c, req, len) && !vconn_read(&c, &r)) {
		lr->used_memory = info_field(r.buf, r.len, "used_memory");
		lr->rss = info_field(r.buf, r.len, "used_memory_rss");
	}
	free(req);
	vconn_close(&c);
}

static void simple_command(const struct opts *o, int argc, const char *const *argv)
{
	size_t lens[8], len = 0, cap = 0;
	char *req = NULL;
	struct vconn c;
	struct vreply r;
	int ret;

	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	ret = vconn_open(&c, o->host, o->port);
	if (ret)
		die("cannot connect to %s", o->host, ret);
	vconn_format(&req, &len, &cap, argc, argv, lens);
	if (vconn_send(&c, req, len) || vconn_read(&c, &r))
		die("%s failed", argv[0], -EIO);
	free(req);
	vconn_close(&c);
}

static void run_load(const struct opts *o, const struct vecs *base, struct load_result *lr)
{
	struct load_job jobs[MAX_CONNS] = { 0 };
	pthread_t tid[MAX_CONNS];
	pthread_barrier_t ready;
	size_t n = o->limit && o->limit < base->n ? o->limit : base->n;
	char optbuf[512];
	const char *words[40];
	size_t wlens[40];
	int nw, conns = o->load_conns;
	uint64_t start, end = 0;
	double cpu0;

	snprintf(optbuf, sizeof(optbuf), "%s", o->vadd);
	nw = split_words(optbuf, words, wlens, 32);
	for (int t = 0; t < conns; t++) {
		struct load_job *j = &jobs[t];
		size_t from = n * t / conns, to = n * (t + 1) / conns, len = 0, cap = 0;
		char row[24];

		j->o = o;
		j->ready = &ready;
		j->n = to - from;
		j->offs = malloc((j->n + 1) * sizeof(size_t));
		for (size_t i = from; i < to; i++) {
			const char *argv[44] = { "VADD", o->key, "FP32",
						 (const char *)vecs_row(base, i), row };
			size_t lens[44] = { 4, strlen(o->key), 4, base->dim * 4 };

			lens[4] = (size_t)snprintf(row, sizeof(row), "%zu", i);
			memcpy(argv + 5, words, (size_t)nw * sizeof(*words));
			memcpy(lens + 5, wlens, (size_t)nw * sizeof(*wlens));
			j->offs[i - from] = len;
			vconn_format(&j->reqs, &len, &cap, 5 + nw, argv, lens);
		}
		j->offs[j->n] = len;
	}
	pthread_barrier_init(&ready, NULL, (unsigned)conns + 1);
	for (int t = 0; t < conns; t++)
		pthread_create(&tid[t], NULL, load_worker, &jobs[t]);
	cpu0 = server_cpu(o);
	pthread_barrier_wait(&ready);
	start = now_ns();
	lr->errors = 0;
	for (int t = 0; t < conns; t++) {
		pthread_join(tid[t], NULL);
		if (jobs[t].ret)
			die("load connection failed%s", "", jobs[t].ret);
		if (jobs[t].done_ns > end)
			end = jobs[t].done_ns;
		if (jobs[t].errors && !lr->errors)
			fprintf(stderr, "xkv-vbench: VADD error: %s\n", jobs[t].first_error);
		lr->errors += jobs[t].errors;
		free(jobs[t].reqs);
		free(jobs[t].offs);
	}
	pthread_barrier_destroy(&ready);
	lr->cpu_ms = cpu_ms(cpu0, server_cpu(o), n);
	lr->seconds = (double)(end - start) / 1e9;
	lr->rate = (double)n / lr->seconds;
	read_memory(o, lr);
}

/* ---- queries ---------------------------------------------------------------- */

struct reqset {
	char *buf;
	size_t *offs; /* nq + 1 */
	size_t n;
};

static void build_queries(const struct opts *o, const struct vecs *q, int ef, bool nothread,
			  struct reqset *rs)
{
	size_t len = 0, cap = 0;
	char efs[16], count[8];

	snprintf(efs, sizeof(efs), "%d", ef);
	snprintf(count, sizeof(count), "%d", TOPK);
	rs->n = q->n;
	rs->buf = NULL;
	rs->offs = malloc((q->n + 1) * sizeof(size_t));
	for (size_t i = 0; i < q->n; i++) {
		const char *argv[] = { "VSIM",	  o->key, "FP32", (const char *)vecs_row(q, i),
				       "COUNT",	  count,  "EF",	  efs,
				       "NOTHREAD" };
		size_t lens[] = { 4, strlen(o->key), 4, q->dim * 4, 5, strlen(count),
				  2, strlen(efs),    8 };

		rs->offs[i] = len;
		vconn_format(&rs->buf, &len, &cap, nothread ? 9 : 8, argv, lens);
	}
	rs->offs[q->n] = len;
}

static double recall(const struct opts *o, const struct reqset *rs, const struct vecs *gt)
{
	struct vconn c;
	struct vreply r;
	int64_t rows[TOPK];
	size_t hits = 0;
	int ret = vconn_open(&c, o->host, o->port);

	if (ret)
		die("cannot connect to %s", o->host, ret);
	for (size_t i = 0; i < rs->n; i++) {
		int n;

		if (vconn_send(&c, rs->buf + rs->offs[i], rs->offs[i + 1] - rs->offs[i]) ||
		    vconn_read(&c, &r))
			die("VSIM failed%s", "", -EIO);
		n = vconn_names(&r, rows, TOPK);
		if (n < 0)
			die("VSIM replied %s", r.buf, 0);
		for (int a = 0; a < n; a++)
			for (uint32_t b = 0; b < TOPK && b < gt->dim; b++)
				if (rows[a] == vecs_irow(gt, i)[b]) {
					hits++;
					break;
				}
	}
	vconn_close(&c);
	return (double)hits / (double)(rs->n * TOPK);
}

struct query_job {
	const struct opts *o;
	const struct reqset *rs;
	pthread_barrier_t *ready;
	size_t first;
	uint64_t t0, measure_from, measure_to; /* set by the main thread before the barrier */
	uint64_t done, all;		       /* answered in the window; answered in all */
	double *lat;			       /* latencies in the window, when non-NULL */
	size_t nlat, caplat;
	int ret;
};

static void *query_worker(void *arg)
{
	struct query_job *j = arg;
	struct vconn c;
	struct vreply r;
	size_t i = j->first;

	j->ret = vconn_open(&c, j->o->host, j->o->port);
	pthread_barrier_wait(j->ready);
	if (j->ret)
		return NULL;
	for (;;) {
		uint64_t s = now_ns(), e;

		if (s >= j->measure_to)
			break;
		j->ret = vconn_send(&c, j->rs->buf + j->rs->offs[i],
				    j->rs->offs[i + 1] - j->rs->offs[i]);
		if (!j->ret)
			j->ret = vconn_read(&c, &r);
		if (j->ret)
			break;
		e = now_ns();
		if (vconn_is_error(&r)) {
			j->ret = -EPROTO;
			break;
		}
		j->all++;
		if (s >= j->measure_from && e <= j->measure_to) {
			j->done++;
			if (j->lat) {
				if (j->nlat == j->caplat) {
					j->caplat = j->caplat ? j->caplat * 2 : 65536;
					j->lat = realloc(j->lat, j->caplat * sizeof(double));
				}
				j->lat[j->nlat++] = (double)(e - s) / 1e6;
			}
		}
		if (++i == j->rs->n)
			i = 0;
	}
	vconn_close(&c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* queries/s with n connections; *p50 (ms) when n == 1; *cpu the server's
 * CPU ms per query over the run, warm-up included (-1 if not known). */
static double qps(const struct opts *o, const struct reqset *rs, int n, double *p50, double *cpu)
{
	struct query_job jobs[MAX_CONNS] = { 0 };
	pthread_t tid[MAX_CONNS];
	pthread_barrier_t ready;
	uint64_t t0, total = 0, all = 0;
	double cpu0 = server_cpu(o);

	pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
	t0 = now_ns() + 100000000ULL; /* connections open within 0.1 s */
	for (int t = 0; t < n; t++) {
		jobs[t] = (struct query_job){
			.o = o,
			.rs = rs,
			.ready = &ready,
			.first = rs->n * t / n,
			.measure_from = t0 + (uint64_t)(o->warmup * 1e9),
			.measure_to = t0 + (uint64_t)((o->warmup + o->seconds) * 1e9),
			.lat = n == 1 ? malloc(65536 * sizeof(double)) : NULL,
			.caplat = n == 1 ? 65536 : 0,
		};
		pthread_create(&tid[t], NULL, query_worker, &jobs[t]);
	}
	pthread_barrier_wait(&ready);
	for (int t = 0; t < n; t++) {
		pthread_join(tid[t], NULL);
		if (jobs[t].ret)
			die("query connection failed%s", "", jobs[t].ret);
		total += jobs[t].done;
		all += jobs[t].all;
	}
	pthread_barrier_destroy(&ready);
	*cpu = cpu_ms(cpu0, server_cpu(o), all);
	if (n == 1) {
		qsort(jobs[0].lat, jobs[0].nlat, sizeof(double), cmp_double);
		*p50 = jobs[0].nlat ? jobs[0].lat[jobs[0].nlat / 2] : 0;
		free(jobs[0].lat);
	}
	return (double)total / o->seconds;
}

/* ---- run ------------------------------------------------------------------------ */

static void load_data(const char *dir, const char *name, struct vecs *v)
{
	char path[4096];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ret = vecs_read(path, v);
	if (ret)
		die("cannot read %s", path, ret);
}

static int cmd_run(const struct opts *o)
{
	struct vecs base = { 0 }, query, gt;
	struct load_result lr = { 0 };
	FILE *js = NULL;
	bool first = true;

	load_data(o->data, "query.fvecs", &query);
	load_data(o->data, "groundtruth.ivecs", &gt);
	if (o->json) {
		js = fopen(o->json, "w");
		if (!js)
			die("cannot write %s", o->json, -errno);
		fprintf(js, "{\"label\": \"%s\", \"data\": \"%s\", \"vadd\": \"%s\"", o->label,
			o->data, o->vadd);
	}
	if (!o->no_load) {
		load_data(o->data, "base.fvecs", &base);
		if (base.dim != query.dim)
			die("base and query dimensions differ in %s", o->data, 0);
		simple_command(o, 2, (const char *const[]){ "DEL", o->key });
		run_load(o, &base, &lr);
		printf("%s: loaded %zu x %u-d in %.2f s over %d connections: %.0f vectors/s, "
		       "%llu errors, used_memory %.1f MiB, RSS %.1f MiB",
		       o->label, o->limit && o->limit < base.n ? o->limit : base.n, base.dim,
		       lr.seconds, o->load_conns, lr.rate, (unsigned long long)lr.errors,
		       (double)lr.used_memory / 1048576, (double)lr.rss / 1048576);
		if (lr.cpu_ms >= 0)
			printf(", server CPU %.3f ms per VADD", lr.cpu_ms);
		printf("\n");
		if (js)
			fprintf(js,
				", \"load\": {\"vectors\": %zu, \"seconds\": %.3f, \"rate\": %.1f, "
				"\"conns\": %d, \"errors\": %llu, \"used_memory\": %lld, \"rss\": "
				"%lld, \"cpu_ms\": %.4f}",
				o->limit && o->limit < base.n ? o->limit : base.n, lr.seconds,
				lr.rate, o->load_conns, (unsigned long long)lr.errors,
				lr.used_memory, lr.rss, lr.cpu_ms);
		vecs_free(&base);
	}
	if (js)
		fprintf(js, ", \"queries\": [");
	printf("%-9s %5s %9s", "mode", "ef", "recall@10");
	for (int c = 0; c < o->nclients; c++)
		printf("  qps@%-5d", o->clients[c]);
	printf(" %7s", "p50 ms");
	if (o->server_pid > 0)
		for (int c = 0; c < o->nclients; c++)
			printf("  cpu@%d ms", o->clients[c]);
	printf("\n");
	for (int m = 0; m < 2; m++) {
		bool nothread = m == 1;

		if ((o->nothread == 0 && nothread) || (o->nothread == 1 && !nothread))
			continue;
		for (int e = 0; e < o->nefs; e++) {
			struct reqset rs;
			double rec, p50 = 0, q[8], cpu[8];

			build_queries(o, &query, o->efs[e], nothread, &rs);
			rec = recall(o, &rs, &gt);
			for (int c = 0; c < o->nclients; c++)
				q[c] = qps(o, &rs, o->clients[c], &p50, &cpu[c]);
			printf("%-9s %5d %9.4f", nothread ? "NOTHREAD" : "default", o->efs[e], rec);
			for (int c = 0; c < o->nclients; c++)
				printf("  %9.0f", q[c]);
			printf(" %7.3f", p50);
			if (o->server_pid > 0)
				for (int c = 0; c < o->nclients; c++)
					printf("  %9.4f", cpu[c]);
			printf("\n");
			fflush(stdout);
			if (js) {
				fprintf(js, "%s{\"mode\": \"%s\", \"ef\": %d, \"recall\": %.4f",
					first ? "" : ", ", nothread ? "nothread" : "default",
					o->efs[e], rec);
				for (int c = 0; c < o->nclients; c++)
					fprintf(js, ", \"qps%d\": %.1f, \"cpu%d_ms\": %.4f",
						o->clients[c], q[c], o->clients[c], cpu[c]);
				fprintf(js, ", \"p50_ms\": %.4f}", p50);
				first = false;
			}
			free(rs.buf);
			free(rs.offs);
		}
	}
	if (js) {
		fprintf(js, "]}\n");
		fclose(js);
	}
	if (!o->keep)
		simple_command(o, 2, (const char *const[]){ "DEL", o->key });
	vecs_free(&query);
	vecs_free(&gt);
	return lr.errors ? 1 : 0;
}

/* ---- gen ------------------------------------------------------------------------ */

static int cmd_gen(int argc, char **argv)
{
	struct vecs_gen_params p = { .dim = 1536,
				     .clusters = 100,
				     .rank = 32,
				     .n_base = 100000,
				     .n_query = 1000,
				     .seed = 1 };
	static const struct option longopts[] = { { "dim", required_argument, NULL, 'd' },
						  { "base", required_argument, NULL, 'n' },
						  { "query", required_argument, NULL, 'q' },
						  { "clusters", required_argument, NULL, 'K' },
						  { "rank", required_argument, NULL, 'r' },
						  { "seed", required_argument, NULL, 's' },
						  { "threads", required_argument, NULL, 't' },
						  { "out", required_argument, NULL, 'o' },
						  { NULL, 0, NULL, 0 } };
	struct vecs base, query, gt, sim;
	const char *out = NULL;
	unsigned threads = 2;
	char path[4096];
	int ch, ret;

	while ((ch = getopt_long(argc, argv, "d:n:q:K:r:s:t:o:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			p.dim = (uint32_t)atoi(optarg);
			break;
		case 'n':
			p.n_base = strtoull(optarg, NULL, 10);
			break;
		case 'q':
			p.n_query = strtoull(optarg, NULL, 10);
			break;
		case 'K':
			p.clusters = (uint32_t)atoi(optarg);
			break;
		case 'r':
			p.rank = (uint32_t)atoi(optarg);
			break;
		case 's':
			p.seed = strtoull(optarg, NULL, 10);
			break;
		case 't':
			threads = (unsigned)atoi(optarg);
			break;
		case 'o':
			out = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!out)
		die("gen needs --out DIR%s", "", 0);
	mkdir(out, 0755);
	ret = vecs_generate(&p, &base, &query);
	if (!ret)
		ret = vecs_ground_truth(&base, &query, TOPK, threads, &gt, &sim);
	if (ret)
		die("generation failed%s", "", ret);
	snprintf(path, sizeof(path), "%s/base.fvecs", out);
	ret = vecs_write(path, &base);
	snprintf(path, sizeof(path), "%s/query.fvecs", out);
	ret = ret ?: vecs_write(path, &query);
	snprintf(path, sizeof(path), "%s/groundtruth.ivecs", out);
	ret = ret ?: vecs_write(path, &gt);
	snprintf(path, sizeof(path), "%s/groundtruth.sim.fvecs", out);
	ret = ret ?: vecs_write(path, &sim);
	if (ret)
		die("cannot write into %s", out, ret);
	snprintf(path, sizeof(path), "%s/meta.json", out);
	{
		FILE *f = fopen(path, "w");
		double top1 = 0, top10 = 0;

		for (size_t i = 0; i < sim.n; i++) {
			top1 += ((float *)sim.data)[i * TOPK];
			top10 += ((float *)sim.data)[i * TOPK + TOPK - 1];
		}
		if (f) {
			fprintf(f,
				"{\"name\": \"synthetic clustered low-rank Gaussian\", \"dim\": "
				"%u, "
				"\"n_base\": %zu, \"n_query\": %zu, \"k\": %d, \"clusters\": %u, "
				"\"rank\": %u, \"seed\": %llu, \"generator\": \"tools/xkv-vbench "
				"gen\", "
				"\"gt_top1_sim_mean\": %.6f, \"gt_top10_sim_mean\": %.6f}\n",
				p.dim, p.n_base, p.n_query, TOPK, p.clusters, p.rank,
				(unsigned long long)p.seed, top1 / (double)(sim.n ? sim.n : 1),
				top10 / (double)(sim.n ? sim.n : 1));
			fclose(f);
		}
		printf("wrote %zu base + %zu query x %u-d to %s; mean top-1 similarity %.4f, "
		       "top-10 %.4f\n",
		       base.n, query.n, p.dim, out, top1 / (double)(sim.n ? sim.n : 1),
		       top10 / (double)(sim.n ? sim.n : 1));
	}
	vecs_free(&base);
	vecs_free(&query);
	vecs_free(&gt);
	vecs_free(&sim);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: xkv-vbench run --data DIR [-H host] [-p port] [-k key] [-c load_conns]\n"
		"                      [-P pipeline] [--vadd 'NOQUANT EF 200 M 16']\n"
		"                      [--ef 10,20,40,80,150,300] [--clients 1,2] [--warmup S]\n"
		"                      [--seconds S] [--nothread no|yes|both] [--no-load] "
		"[--keep]\n"
		"                      [--limit N] [--json FILE] [--label NAME] [--server-pid "
		"PID]\n"
		"       xkv-vbench gen --out DIR [--dim 1536] [--base 100000] [--query 1000]\n"
		"                      [--clusters 100] [--rank 32] [--seed 1] [--threads 2]\n");
}

int main(int argc, char **argv)
{
	struct opts o = { .host = "127.0.0.1",
			  .port = 6379,
			  .key = "vbench",
			  .label = "server",
			  .vadd = "NOQUANT EF 200 M 16",
			  .load_conns = 2,
			  .pipeline = 8,
			  .nclients = 2,
			  .clients = { 1, 2 },
			  .nefs = 6,
			  .efs = { 10, 20, 40, 80, 150, 300 },
			  .warmup = 1,
			  .seconds = 5 };
	static const struct option longopts[] = { { "data", required_argument, NULL, 'd' },
						  { "host", required_argument, NULL, 'H' },
						  { "port", required_argument, NULL, 'p' },
						  { "key", required_argument, NULL, 'k' },
						  { "conns", required_argument, NULL, 'c' },
						  { "pipeline", required_argument, NULL, 'P' },
						  { "vadd", required_argument, NULL, 'V' },
						  { "ef", required_argument, NULL, 'e' },
						  { "clients", required_argument, NULL, 'C' },
						  { "warmup", required_argument, NULL, 'w' },
						  { "seconds", required_argument, NULL, 's' },
						  { "nothread", required_argument, NULL, 'N' },
						  { "no-load", no_argument, NULL, 'L' },
						  { "keep", no_argument, NULL, 'K' },
						  { "limit", required_argument, NULL, 'l' },
						  { "json", required_argument, NULL, 'j' },
						  { "label", required_argument, NULL, 'b' },
						  { "server-pid", required_argument, NULL, 'S' },
						  { NULL, 0, NULL, 0 } };
	int ch;

	if (argc < 2) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "gen"))
		return cmd_gen(argc - 1, argv + 1);
	if (strcmp(argv[1], "run")) {
		usage();
		return 2;
	}
	argc--;
	argv++;
	while ((ch = getopt_long(argc, argv, "d:H:p:k:c:P:e:C:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			o.data = optarg;
			break;
		case 'H':
			o.host = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'k':
			o.key = optarg;
			break;
		case 'c':
			o.load_conns = atoi(optarg);
			break;
		case 'P':
			o.pipeline = atoi(optarg);
			break;
		case 'V':
			o.vadd = optarg;
			break;
		case 'e':
			parse_ints(optarg, o.efs, &o.nefs, MAX_EFS);
			break;
		case 'C':
			parse_ints(optarg, o.clients, &o.nclients, 8);
			break;
		case 'w':
			o.warmup = atof(optarg);
			break;
		case 's':
			o.seconds = atof(optarg);
			break;
		case 'N':
			o.nothread = !strcmp(optarg, "both") ? 2 : !strcmp(optarg, "yes");
			break;
		case 'L':
			o.no_load = true;
			break;
		case 'K':
			o.keep = true;
			break;
		case 'l':
			o.limit = strtoull(optarg, NULL, 10);
			break;
		case 'j':
			o.json = optarg;
			break;
		case 'b':
			o.label = optarg;
			break;
		case 'S':
			o.server_pid = atoi(optarg);
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!o.data || o.load_conns < 1 || o.load_conns > MAX_CONNS || o.pipeline < 1 ||
	    o.seconds <= 0)
		usage(), exit(2);
	for (int c = 0; c < o.nclients; c++)
		if (o.clients[c] < 1 || o.clients[c] > MAX_CONNS)
			die("bad --clients%s", "", 0);
	return cmd_run(&o);
}
