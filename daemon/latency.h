/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * latency: the latency monitor (events slower than latency-monitor-threshold
 * milliseconds, for LATENCY LATEST / HISTORY / RESET / DOCTOR) and the
 * per-command latency histograms (LATENCY HISTOGRAM, INFO latencystats).
 */
#ifndef XKV_LATENCY_H
#define XKV_LATENCY_H

#include <stdint.h>

#include "client.h"

struct command;
struct worker;

/* Called by command_call() after every command, on w (its client's
 * worker), with no lock held. */
void latency_command_done(struct worker *w, const struct command *cmd, uint64_t duration_us);
/* Work outside commands that took duration_us: a sample of event (a static
 * name, such as Redis's "expire-cycle") if it reached
 * latency-monitor-threshold. */
void latency_event_done(const char *event, uint64_t duration_us);
/* w's histograms: set up before w starts; freed after it has stopped. */
void latency_worker_init(struct worker *w);
void latency_worker_free(struct worker *w);
/* From w's cron: frees its histograms that no call renewed since CONFIG
 * RESETSTAT, as Redis frees them at a reset. */
void latency_worker_cron(struct worker *w);

/* The histograms' buckets (see latency.c): the largest and the smallest
 * value of the bucket a call of us microseconds is counted in (a call over
 * Redis's 1 s limit counts as 1 s), and the value INFO latencystats shows
 * for a percentile landing in the bucket whose top is us (Redis's
 * hdr_histogram's top of its own bucket, in us). */
uint64_t latency_bucket_top_us(uint64_t us);
uint64_t latency_bucket_low_us(uint64_t us);
double latency_reported_usec(uint64_t us);

/* LATENCY subcommands' replies. */
void latency_reply_latest(struct client *c);
void latency_reply_history(struct client *c, const char *event, size_t len);
/* Resets the named events (all when n is 0); returns how many were reset. */
int latency_reset(const struct arg *events, int n);
void latency_reply_doctor(struct client *c);
void latency_reply_graph(struct client *c, const char *event, size_t len);
/* LATENCY HISTOGRAM for the commands named in names[0..n) (all when n is 0). */
void latency_reply_histogram(struct client *c, const struct arg *names, int n);

/* INFO latencystats: fn(ctx, "latency_percentiles_usec_<cmd>", "p50=..."). */
typedef void latency_visit_fn(void *ctx, const char *name, const char *value);
void latency_info_percentiles(latency_visit_fn *fn, void *ctx);
/* CONFIG RESETSTAT: every command's histogram starts again from empty (and
 * goes, once its worker's cron has run, if the command is not called). */
void latency_reset_histograms(void);

#endif
