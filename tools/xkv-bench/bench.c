// SPDX-License-Identifier: BSD-3-Clause
/*
 * The step runner (bench.h): starts the workers, gives them a common start
 * time, shows progress while they run, and merges what they recorded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clock.h"
#include "report.h"
#include "schedule.h"
#include "worker.h"

/* The runner polls the workers this often, and redraws progress every N polls. */
#define POLL_NS (100 * NSEC_PER_MSEC)
#define PROGRESS_POLLS 10

atomic_bool bench_stop;

void bench_opts_init(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->port = 6379;
	o->transport = &transport_tcp;
	o->topts.udp_pad = TRANSPORT_UDP_PAD;
	o->threads = 4;
	o->conns = 50;
	o->pipeline = 1;
	o->test_time = 10.0;
	o->resp = 2;
	o->load.ratio_set = 1;
	o->load.ratio_get = 10;
	o->load.keys = 100000;
	o->load.key_prefix = "key:";
	o->load.pattern = KEY_UNIFORM;
	o->load.zipf_s = 0.99;
	o->load.data_size = 32;
	o->load.seed = 0x786b76; /* "xkv": runs repeat unless --seed says otherwise */
}

void bench_step_from_opts(struct bench_step *s, const struct bench_opts *o, uint64_t rate)
{
	memset(s, 0, sizeof(*s));
	s->label = rate ? "open loop" : "closed loop";
	s->rate = rate;
	s->requests = o->requests;
	s->duration_ns = (uint64_t)(o->test_time * (double)NSEC_PER_SEC);
	s->pipeline = o->pipeline;
}

bool bench_failed(const struct bench_result *res)
{
	return res->errors || res->lost || res->conn_errors;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NSEC_PER_SEC),
			       .tv_nsec = (long)(ns % NSEC_PER_SEC) };

	nanosleep(&ts, NULL);
}

/* Waits for the workers, drawing the progress line if asked to. */
static void watch(const struct bench_opts *o, const struct bench_step *step, struct worker *wks,
		  uint64_t start)
{
	uint64_t last_n = 0, last_t = start;
	unsigned polls = 0;
	bool drawn = false;

	for (;;) {
		uint64_t n = 0, errors = 0, now;
		unsigned done = 0;

		sleep_ns(POLL_NS);
		for (unsigned t = 0; t < o->threads; t++) {
			done += atomic_load_explicit(&wks[t].finished, memory_order_acquire);
			n += atomic_load_explicit(&wks[t].st.live_requests, memory_order_relaxed);
			errors +=
				atomic_load_explicit(&wks[t].st.live_errors, memory_order_relaxed);
		}
		if (done == o->threads)
			break;
		if (!o->progress || ++polls % PROGRESS_POLLS)
			continue;
		now = clock_ns();
		report_progress(stdout, step, now - start, n,
				(double)(n - last_n) * NSEC_PER_SEC / (double)(now - last_t),
				errors);
		drawn = true;
		last_n = n;
		last_t = now;
	}
	if (drawn)
		report_progress_clear(stdout);
}

static void merge(struct bench_result *res, struct worker *wks, unsigned threads, uint64_t start)
{
	uint64_t last = 0, end = start;

	for (unsigned t = 0; t < threads; t++) {
		const struct conn_stats *st = &wks[t].st;

		hist_merge(&res->hist, &st->hist);
		res->requests += st->requests;
		res->errors += st->errors;
		res->lost += st->lost;
		res->conn_errors += st->conn_errors;
		res->bytes_out += st->bytes_out;
		res->bytes_in += st->bytes_in;
		res->kernel += st->kernel;
		res->unsent += wks[t].unsent;
		if (st->last_reply > last)
			last = st->last_reply;
		if (wks[t].end > end)
			end = wks[t].end;
		if (!res->first_error[0] && st->first_error[0])
			snprintf(res->first_error, sizeof(res->first_error), "%s", st->first_error);
	}
	res->elapsed_ns = (last ? last : end) - start;
}

int bench_run(const struct bench_opts *o, const struct workload *w, const struct bench_step *step,
	      struct bench_result *res)
{
	struct run_ctl *ctl = calloc(1, sizeof(*ctl));
	struct worker *wks = calloc(o->threads, sizeof(*wks));
	const char *why;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	hist_init(&res->hist);
	res->rate = step->rate;
	res->datagram = o->transport->datagram;
	if (!ctl || !wks) {
		snprintf(res->first_error, sizeof(res->first_error), "out of memory");
		ret = -ENOMEM;
		goto end;
	}
	if (transport_resolve(o->host, o->port, &ctl->addr, &ctl->addrlen, &why)) {
		snprintf(res->first_error, sizeof(res->first_error), "%s: %s", o->host, why);
		ret = -EHOSTUNREACH;
		goto end;
	}
	ctl->o = o;
	ctl->w = w;
	ctl->step = step;
	ctl->total_conns = o->threads * o->conns;
	pthread_barrier_init(&ctl->ready, NULL, o->threads + 1);
	pthread_barrier_init(&ctl->go, NULL, o->threads + 1);
	for (unsigned t = 0; t < o->threads; t++) {
		wks[t].id = t;
		wks[t].ctl = ctl;
		wks[t].epfd = -1;
		hist_init(&wks[t].st.hist);
		ret = pthread_create(&wks[t].thread, NULL, worker_main, &wks[t]);
		if (ret) {
			/* The others wait on a barrier sized for all: no way back. */
			fprintf(stderr, "xkv-bench: pthread_create: %s\n", strerror(ret));
			abort();
		}
	}
	pthread_barrier_wait(&ctl->ready);
	ctl->start = clock_ns();
	pthread_barrier_wait(&ctl->go);
	watch(o, step, wks, ctl->start);
	for (unsigned t = 0; t < o->threads; t++)
		pthread_join(wks[t].thread, NULL);
	pthread_barrier_destroy(&ctl->ready);
	pthread_barrier_destroy(&ctl->go);

	if (atomic_load(&ctl->abort)) {
		for (unsigned t = 0; t < o->threads && !ret; t++) {
			if (!wks[t].setup_err)
				continue;
			ret = wks[t].setup_err;
			snprintf(res->first_error, sizeof(res->first_error), "%s:%u: %s", o->host,
				 o->port, wks[t].st.first_error);
		}
		goto end;
	}
	merge(res, wks, o->threads, ctl->start);
	res->interrupted = atomic_load(&bench_stop);
	/* Cut short, the step's window is not the time it ran, nor is the rest unsent. */
	if (res->interrupted) {
		res->unsent = 0;
	} else if (step->rate) {
		res->window_ns = step->duration_ns;
		if (!res->window_ns)
			res->window_ns = (uint64_t)((unsigned __int128)step->requests *
						    NSEC_PER_SEC / step->rate);
	}
	res->achieved = schedule_achieved_rate(res->requests, res->window_ns, res->elapsed_ns);
	res->sustained = step->rate && schedule_sustained(step->rate, res->achieved);
end:
	free(wks);
	free(ctl);
	return ret;
}
