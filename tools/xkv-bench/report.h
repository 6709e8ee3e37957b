/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report: everything xkv-bench prints about a run. Human output (a header,
 * one block per step, the sweep table, the live progress line) and the --json
 * document. Latencies are printed in milliseconds and written to JSON in
 * microseconds. Called from the main thread only.
 */
#ifndef XKV_BENCH_REPORT_H
#define XKV_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "bench.h"

/* The percentiles every report gives, in order. */
#define REPORT_NPCT 4
extern const double report_pcts[REPORT_NPCT];

/* "closed", "open" or "sweep". */
struct report_run {
	const char *mode;
	const struct bench_opts *o;
	const struct workload *w;
	const struct bench_result *prefill; /* NULL without --prefill */
	const struct bench_result *steps;
	unsigned nsteps;
};

/* One line, redrawn in place with \r. */
void report_progress(FILE *f, const struct bench_step *step, uint64_t elapsed_ns, uint64_t requests,
		     double rate, uint64_t errors);
void report_progress_clear(FILE *f);
/* The options, before the first step. */
void report_header(FILE *f, const struct report_run *run);
/* One step: requests, rate, latency, errors. */
void report_step(FILE *f, const char *title, const struct bench_result *res);
/* The sweep's table: its header, then one row per rate as each step ends. */
void report_sweep_header(FILE *f);
void report_sweep_row(FILE *f, const struct bench_result *r);
/* The whole run as one JSON document. */
void report_json(FILE *f, const struct report_run *run);

#endif /* XKV_BENCH_REPORT_H */
