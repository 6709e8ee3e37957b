/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench: runs one step of load against a server and returns what happened.
 *
 * A step is closed loop (each connection keeps `pipeline` requests in flight
 * and sends the next as soon as a reply comes back) or open loop (requests
 * leave on the timetable of schedule.h, at `rate` per second over all
 * connections, at most `pipeline` in flight per connection). It ends after
 * its duration or its request count; then the replies still in flight are
 * awaited. Every step opens its own connections: `threads` worker threads,
 * each owning `conns` connections and its own epoll loop, histogram and
 * counters, merged into the result after the threads have joined.
 *
 * main.c turns the command line into a struct bench_opts and strings steps
 * together (prefill, a run, a sweep); report.c prints the results.
 */
#ifndef XKV_BENCH_BENCH_H
#define XKV_BENCH_BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hist.h"
#include "resp_reader.h"
#include "transport.h"
#include "workload.h"

/* An open-loop step keeps sending overdue requests this long after its window. */
#define BENCH_BACKLOG_NS (5 * 1000000000ULL)

struct bench_opts {
	const char *host;
	unsigned port;
	const struct transport_ops *transport;
	struct transport_opts topts;
	unsigned threads;
	unsigned conns;	   /* per thread */
	unsigned pipeline; /* requests in flight per connection */
	uint64_t requests; /* per step; 0: bounded by test_time */
	double test_time;  /* seconds per step; 0: bounded by requests */
	unsigned resp;	   /* protocol version: 2, or 3 (HELLO 3 on connect) */
	bool progress;	   /* a live line on stdout while a step runs */
	struct workload_spec load;
};

struct bench_step {
	const char *label;    /* names the step on the progress line */
	uint64_t rate;	      /* requests per second; 0: closed loop */
	uint64_t requests;    /* 0: no limit */
	uint64_t duration_ns; /* 0: no limit */
	unsigned pipeline;
};

struct bench_result {
	uint64_t rate;	      /* the step's target; 0 for closed loop */
	double achieved;      /* replies per second, see schedule_achieved_rate() */
	bool sustained;	      /* open loop: achieved >= 97% of rate */
	uint64_t requests;    /* replies received */
	uint64_t errors;      /* error replies */
	uint64_t lost;	      /* requests sent that got no reply */
	uint64_t unsent;      /* open loop: slots of the timetable never sent */
	uint64_t conn_errors; /* connections that broke during the step */
	uint64_t bytes_out, bytes_in;
	bool datagram;	       /* over a datagram transport: `kernel` is counted */
	uint64_t kernel;       /* replies the kernel answered (XKV_F_KERNEL) */
	uint64_t window_ns;    /* the sending window (open loop), else 0 */
	uint64_t elapsed_ns;   /* from the start to the last reply */
	bool interrupted;      /* stopped early by bench_stop */
	char first_error[256]; /* first error reply or failure */
	struct hist hist;      /* latencies in ns */
};

/*
 * Set (by a signal handler) to end the running step early; the step still
 * waits for its replies in flight and reports.
 */
extern atomic_bool bench_stop;

/* Defaults for every option (the ones the README lists). */
void bench_opts_init(struct bench_opts *o);
/* The step the options describe at `rate` (0: closed loop). */
void bench_step_from_opts(struct bench_step *s, const struct bench_opts *o, uint64_t rate);
/*
 * Runs one step with workload w. 0 with *res filled (errors included), or
 * -errno if the step could not start (no connection, no thread), with the
 * reason in res->first_error.
 */
int bench_run(const struct bench_opts *o, const struct workload *w, const struct bench_step *step,
	      struct bench_result *res);
/* Whether a result shows a failure: error replies, lost requests, broken connections. */
bool bench_failed(const struct bench_result *res);

#endif /* XKV_BENCH_BENCH_H */
