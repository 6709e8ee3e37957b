// SPDX-License-Identifier: BSD-3-Clause
/*
 * latency: the latency monitor and per-command latency histograms.
 *
 * Locking: latency_lock protects the monitor's events (their sample rings
 * and maxima). It is a leaf: nothing else is taken while it is held, and
 * replies are built from a copy made under it. The histograms take no lock:
 * each worker keeps its own per command (worker.h), published with release
 * the first time the command runs there and freed only once the workers have
 * stopped. Their buckets are counters that only that worker writes;
 * readings merge the workers' histograms (a sum may be a few calls behind),
 * and CONFIG RESETSTAT records a base instead of zeroing them.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "latency.h"
#include "mem.h"
#include "text.h"
#include "util.h"
#include "worker.h"

/* ---- monitor ---------------------------------------------------------------- */

#define LATENCY_SAMPLES 160 /* per event, one per second at most */
#define LATENCY_EVENTS 8

struct latency_sample {
	long long time; /* unix seconds; 0: unused */
	unsigned long long ms;
};

struct latency_event {
	const char *name; /* NULL: unused slot */
	struct latency_sample samples[LATENCY_SAMPLES];
	unsigned next; /* where the next new-second sample goes */
	unsigned long long max;
};

static pthread_mutex_t latency_lock = PTHREAD_MUTEX_INITIALIZER;
static struct latency_event events[LATENCY_EVENTS];

static struct latency_event *do_find_event(const char *name, size_t len)
{
	for (int i = 0; i < LATENCY_EVENTS; i++)
		if (events[i].name && strlen(events[i].name) == len &&
		    !memcmp(events[i].name, name, len))
			return &events[i];
	return NULL;
}

/* One sample per second: a second spike in the same second keeps the worst. */
static void add_sample(const char *name, unsigned long long ms)
{
	long long now = now_ms() / 1000;
	struct latency_event *e;
	struct latency_sample *last;

	pthread_mutex_lock(&latency_lock);
	e = do_find_event(name, strlen(name));
	for (int i = 0; !e && i < LATENCY_EVENTS; i++) {
		if (!events[i].name) {
			e = &events[i];
			e->name = name;
		}
	}
	last = &e->samples[(e->next + LATENCY_SAMPLES - 1) % LATENCY_SAMPLES];
	if (last->time == now) {
		if (ms > last->ms)
			last->ms = ms;
	} else {
		e->samples[e->next].time = now;
		e->samples[e->next].ms = ms;
		e->next = (e->next + 1) % LATENCY_SAMPLES;
	}
	if (ms > e->max)
		e->max = ms;
	pthread_mutex_unlock(&latency_lock);
}

/* Copies the events in use into out; returns their count. */
static int snapshot(struct latency_event *out)
{
	int n = 0;

	pthread_mutex_lock(&latency_lock);
	for (int i = 0; i < LATENCY_EVENTS; i++)
		if (events[i].name)
			out[n++] = events[i];
	pthread_mutex_unlock(&latency_lock);
	return n;
}

static const struct latency_sample *last_sample(const struct latency_event *e)
{
	return &e->samples[(e->next + LATENCY_SAMPLES - 1) % LATENCY_SAMPLES];
}

void latency_reply_latest(struct client *c)
{
	struct latency_event *snap = xmalloc(sizeof(*snap) * LATENCY_EVENTS);
	int n = snapshot(snap);

	reply_array(c, n);
	for (int i = 0; i < n; i++) {
		const struct latency_sample *s = last_sample(&snap[i]);

		reply_array(c, 4);
		reply_bulk_cstr(c, snap[i].name);
		reply_int(c, s->time);
		reply_int(c, (long long)s->ms);
		reply_int(c, (long long)snap[i].max);
	}
	xfree(snap);
}

void latency_reply_history(struct client *c, const char *event, size_t len)
{
	struct latency_event *snap = xmalloc(sizeof(*snap) * LATENCY_EVENTS), *e = NULL;
	int n = snapshot(snap), count = 0;

	for (int i = 0; i < n; i++)
		if (strlen(snap[i].name) == len && !memcmp(snap[i].name, event, len))
			e = &snap[i];
	for (int i = 0; e && i < LATENCY_SAMPLES; i++)
		count += e->samples[i].time != 0;
	reply_array(c, count);
	/* Oldest first: the ring starts at the slot written next. */
	for (int i = 0; e && i < LATENCY_SAMPLES; i++) {
		const struct latency_sample *s = &e->samples[(e->next + i) % LATENCY_SAMPLES];

		if (!s->time)
			continue;
		reply_array(c, 2);
		reply_int(c, s->time);
		reply_int(c, (long long)s->ms);
	}
	xfree(snap);
}

int latency_reset(const struct arg *names, int n)
{
	int reset = 0;

	pthread_mutex_lock(&latency_lock);
	for (int i = 0; i < LATENCY_EVENTS; i++) {
		bool match = n == 0;

		if (!events[i].name)
			continue;
		for (int j = 0; j < n && !match; j++)
			match = strlen(events[i].name) == names[j].len &&
				!memcmp(events[i].name, names[j].p, names[j].len);
		if (match) {
			memset(&events[i], 0, sizeof(events[i]));
			reset++;
		}
	}
	pthread_mutex_unlock(&latency_lock);
	return reset;
}

void latency_reply_doctor(struct client *c)
{
	struct latency_event *snap = xmalloc(sizeof(*snap) * LATENCY_EVENTS);
	int n = snapshot(snap);
	struct text t = { 0 };

	text_printf(&t, "%s", "");
	if (n == 0 && __atomic_load_n(&config.latency_monitor_threshold, __ATOMIC_RELAXED) == 0) {
		text_printf(&t,
			    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in "
			    "this Redis instance. You may use \"CONFIG SET "
			    "latency-monitor-threshold <milliseconds>.\" in order to enable it. "
			    "If we weren't in a deep space mission I'd suggest to take a look at "
			    "https://redis.io/topics/latency-monitor.\n");
	} else if (n == 0) {
		text_printf(&t,
			    "Dave, no latency spike was observed during the lifetime of this "
			    "Redis instance, not in the slightest bit. I honestly think you ought "
			    "to sit down calmly, take a stress pill, and think things over.\n");
	} else {
		text_printf(&t, "Dave, I have observed latency spikes in this Redis instance. You "
				"don't mind talking about it, do you Dave?\n\n");
		for (int i = 0; i < n; i++) {
			const struct latency_event *e = &snap[i];
			unsigned long long sum = 0, dev = 0, avg;
			long long first = 0, last = 0;
			int samples = 0;

			for (int j = 0; j < LATENCY_SAMPLES; j++) {
				const struct latency_sample *s = &e->samples[j];

				if (!s->time)
					continue;
				samples++;
				sum += s->ms;
				if (!first || s->time < first)
					first = s->time;
				if (s->time > last)
					last = s->time;
			}
			avg = samples ? sum / (unsigned long long)samples : 0;
			for (int j = 0; j < LATENCY_SAMPLES; j++)
				if (e->samples[j].time)
					dev += e->samples[j].ms > avg ? e->samples[j].ms - avg
								      : avg - e->samples[j].ms;
			text_printf(&t,
				    "%d. %s: %d latency spikes (average %llums, mean deviation "
				    "%llums, period %.2f sec). Worst all time event %llums.\n",
				    i + 1, e->name, samples, avg,
				    samples ? dev / (unsigned long long)samples : 0,
				    samples > 1 ? (double)(last - first) / (samples - 1) : 0.0,
				    e->max);
		}
		text_printf(&t,
			    "\nI have a few advices for you:\n\n"
			    "- Check your Redis instance for slow commands with SLOWLOG GET: "
			    "commands that work on many elements (KEYS, SORT, large ranges) block "
			    "the worker that runs them.\n"
			    "- Make sure the host is not swapping and the server's threads are not "
			    "starved of CPU by other processes.\n");
	}
	reply_verbatim(c, t.p, t.len);
	xfree(t.p);
	xfree(snap);
}

/* LATENCY GRAPH: the newest samples as columns of '#' four rows high, scaled
 * between the lowest and highest shown, each labelled below with its age
 * written downwards ("15s", "3m", "2h", "1d"). */
#define GRAPH_ROWS 4
#define GRAPH_COLS 80
#define GRAPH_LABEL 4

void latency_reply_graph(struct client *c, const char *event, size_t len)
{
	struct latency_event *snap = xmalloc(sizeof(*snap) * LATENCY_EVENTS), *e = NULL;
	const struct latency_sample *shown[GRAPH_COLS];
	char labels[GRAPH_COLS][GRAPH_LABEL + 1];
	unsigned long long high = 0, low = ~0ULL;
	long long now = now_ms() / 1000;
	int n = snapshot(snap), cols = 0;
	struct text t = { 0 };

	for (int i = 0; i < n; i++)
		if (strlen(snap[i].name) == len && !memcmp(snap[i].name, event, len))
			e = &snap[i];
	if (!e) {
		reply_errorf(c, "No samples available for event '%.*s'", (int)len, event);
		goto out;
	}
	/* Oldest to newest, keeping the newest GRAPH_COLS. */
	for (int i = 0; i < LATENCY_SAMPLES; i++) {
		const struct latency_sample *smp = &e->samples[(e->next + i) % LATENCY_SAMPLES];

		if (!smp->time)
			continue;
		if (cols == GRAPH_COLS) {
			memmove(shown, shown + 1, sizeof(shown[0]) * (GRAPH_COLS - 1));
			cols--;
		}
		shown[cols++] = smp;
	}
	for (int i = 0; i < cols; i++) {
		long long age = now - shown[i]->time;

		if (shown[i]->ms > high)
			high = shown[i]->ms;
		if (shown[i]->ms < low)
			low = shown[i]->ms;
		if (age < 0)
			age = 0;
		if (age < 60)
			snprintf(labels[i], sizeof(labels[i]), "%llds", age);
		else if (age < 3600)
			snprintf(labels[i], sizeof(labels[i]), "%lldm", age / 60);
		else if (age < 86400)
			snprintf(labels[i], sizeof(labels[i]), "%lldh", age / 3600);
		else
			snprintf(labels[i], sizeof(labels[i]), "%lldd",
				 age / 86400 > 999 ? 999 : age / 86400);
	}
	text_printf(&t, "%s - high %llu ms, low %llu ms (all time high %llu ms)\n", e->name, high,
		    cols ? low : 0, e->max);
	for (int i = 0; i < GRAPH_COLS; i++)
		text_printf(&t, "-");
	text_printf(&t, "\n");
	for (int row = GRAPH_ROWS; row >= 1; row--) {
		for (int i = 0; i < cols; i++) {
			/* Level 1..GRAPH_ROWS: every sample shows at least one mark. */
			unsigned long long level = high == low ? GRAPH_ROWS
							       : 1 + (shown[i]->ms - low) *
										 (GRAPH_ROWS - 1) /
										 (high - low);

			text_printf(&t, "%c", level >= (unsigned long long)row ? '#' : ' ');
		}
		text_printf(&t, "\n");
	}
	text_printf(&t, "\n");
	for (int row = 0; row < GRAPH_LABEL; row++) {
		for (int i = 0; i < cols; i++)
			text_printf(&t, "%c", row < (int)strlen(labels[i]) ? labels[i][row] : ' ');
		text_printf(&t, "\n");
	}
	reply_verbatim(c, t.p, t.len);
	xfree(t.p);
out:
	xfree(snap);
}

/* ---- histograms --------------------------------------------------------------- */

/* Log-linear buckets over nanoseconds: values below 64 one each, then 64
 * sub-buckets per power of two (under 2% error, near Redis's two significant
 * digits), up to 2^30 ns; longer calls count in the last bucket. */
#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_LOG2 30
#define HIST_BUCKETS (HIST_SUB + (HIST_MAX_LOG2 - HIST_SUB_BITS) * HIST_SUB)

struct histogram {
	uint64_t buckets[HIST_BUCKETS];
};

/* CONFIG RESETSTAT's base for each command's histogram (see worker.h), by
 * command index; NULL until the first reset after the command ran. Created
 * by whichever reset comes first (compare-and-swap), never freed. */
static struct histogram **bases;
static pthread_once_t bases_once = PTHREAD_ONCE_INIT;

static void bases_alloc(void)
{
	bases = xcalloc(command_rows(), sizeof(*bases));
}

void latency_worker_init(struct worker *w)
{
	w->cmd_hists = xcalloc(command_rows(), sizeof(*w->cmd_hists));
}

void latency_worker_free(struct worker *w)
{
	for (size_t i = 0; w->cmd_hists && i < command_rows(); i++)
		xfree(w->cmd_hists[i]);
	xfree(w->cmd_hists);
	w->cmd_hists = NULL;
}

static unsigned bucket_of(uint64_t ns)
{
	unsigned k;

	if (ns >= 1ULL << HIST_MAX_LOG2)
		return HIST_BUCKETS - 1;
	if (ns < HIST_SUB)
		return (unsigned)ns;
	k = 63 - (unsigned)__builtin_clzll(ns);
	return HIST_SUB + (k - HIST_SUB_BITS) * HIST_SUB +
	       (unsigned)((ns >> (k - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

/* The largest value bucket b holds, in nanoseconds. */
static uint64_t bucket_top(unsigned b)
{
	unsigned k, sub;

	if (b < HIST_SUB)
		return b;
	k = HIST_SUB_BITS + (b - HIST_SUB) / HIST_SUB;
	sub = (b - HIST_SUB) % HIST_SUB;
	return ((uint64_t)(HIST_SUB + sub) << (k - HIST_SUB_BITS)) + (1ULL << (k - HIST_SUB_BITS)) -
	       1;
}

/* On w, the histograms' one writer. */
static void histogram_add(struct worker *w, const struct command *cmd, uint64_t duration_us)
{
	struct histogram **slot = &w->cmd_hists[cmd->index];
	struct histogram *h = __atomic_load_n(slot, __ATOMIC_RELAXED);

	if (!h) {
		h = xcalloc(1, sizeof(*h));
		__atomic_store_n(slot, h, __ATOMIC_RELEASE);
	}
	stat_add(&h->buckets[bucket_of(duration_us * 1000)], 1);
}

void latency_command_done(struct worker *w, const struct command *cmd, uint64_t duration_us)
{
	long long threshold = __atomic_load_n(&config.latency_monitor_threshold, __ATOMIC_RELAXED);

	/* latency-tracking no: no per-command histograms (LATENCY HISTOGRAM,
	 * INFO latencystats), as Redis. */
	if (__atomic_load_n(&config.latency_tracking, __ATOMIC_RELAXED))
		histogram_add(w, cmd, duration_us);
	if (threshold > 0 && duration_us / 1000 >= (uint64_t)threshold)
		add_sample(cmd->flags & CMD_FAST ? "fast-command" : "command", duration_us / 1000);
}

void latency_event_done(const char *event, uint64_t duration_us)
{
	long long threshold = __atomic_load_n(&config.latency_monitor_threshold, __ATOMIC_RELAXED);

	if (threshold > 0 && duration_us / 1000 >= (uint64_t)threshold)
		add_sample(event, duration_us / 1000);
}

/* arg: the command; w's histogram of it, if it ran there. */
static const uint64_t *histogram_at(const struct worker *w, const void *arg)
{
	const struct histogram *h = __atomic_load_n(
		&w->cmd_hists[((const struct command *)arg)->index], __ATOMIC_ACQUIRE);

	return h ? h->buckets : NULL;
}

/* cmd's buckets since start or the last reset, merged over the workers into
 * out; returns their total (0 if it never ran since). */
static uint64_t histogram_read(const struct command *cmd, uint64_t *out)
{
	struct histogram *base;
	uint64_t total = 0;

	pthread_once(&bases_once, bases_alloc);
	base = __atomic_load_n(&bases[cmd->index], __ATOMIC_ACQUIRE);
	server_counters_sum(histogram_at, cmd, base ? base->buckets : NULL, out, HIST_BUCKETS);
	for (unsigned b = 0; b < HIST_BUCKETS; b++)
		total += out[b];
	return total;
}

/* Power-of-two buckets from 1024 ns, keyed as Redis does by the largest
 * microsecond value each holds; counts are cumulative, a bucket shown only
 * when its count grows. */
static void reply_histogram(struct client *c, const struct command *cmd, const uint64_t *b,
			    uint64_t total)
{
	unsigned long long keys[HIST_MAX_LOG2 + 1], counts[HIST_MAX_LOG2 + 1];
	uint64_t cum = 0, prev = 0;
	unsigned bucket = 0;
	int n = 0;

	for (unsigned k = 10; k <= HIST_MAX_LOG2; k++) {
		for (; bucket < HIST_BUCKETS &&
		       (k == HIST_MAX_LOG2 || bucket_top(bucket) < 1ULL << k);
		     bucket++)
			cum += b[bucket];
		if (cum > prev) {
			keys[n] = ((1ULL << k) + (1ULL << (k - 7)) - 1) / 1000;
			counts[n++] = cum;
		}
		prev = cum;
	}
	reply_bulk_cstr(c, cmd->name);
	reply_map(c, 2);
	reply_bulk_cstr(c, "calls");
	reply_int(c, (long long)total);
	reply_bulk_cstr(c, "histogram_usec");
	reply_map(c, n);
	for (int i = 0; i < n; i++) {
		reply_int(c, (long long)keys[i]);
		reply_int(c, (long long)counts[i]);
	}
}

/* Adds cmd (and a container's subcommands) to list if they ran. */
static int collect(const struct command *cmd, const struct command **list, int n, int max)
{
	uint64_t *b = xmalloc(sizeof(uint64_t) * HIST_BUCKETS);

	if (n < max && histogram_read(cmd, b))
		list[n++] = cmd;
	for (unsigned i = 0; i < cmd->nsubs; i++)
		if (n < max && histogram_read(cmd->subs[i], b))
			list[n++] = cmd->subs[i];
	xfree(b);
	return n;
}

static int count_commands(void)
{
	int n = 0;

	for (struct command **all = command_all(); *all; all++)
		n += 1 + (int)(*all)->nsubs;
	return n;
}

void latency_reply_histogram(struct client *c, const struct arg *names, int nnames)
{
	int max = count_commands(), n = 0;
	const struct command **list = xcalloc((size_t)max, sizeof(*list));
	uint64_t *b = xmalloc(sizeof(uint64_t) * HIST_BUCKETS);

	if (nnames == 0) {
		for (struct command **all = command_all(); *all; all++)
			n = collect(*all, list, n, max);
	}
	for (int i = 0; i < nnames; i++) {
		const char *bar = memchr(names[i].p, '|', names[i].len);
		struct command *cmd =
			command_lookup(names[i].p, bar ? (size_t)(bar - names[i].p) : names[i].len);
		bool dup = false;

		if (cmd && bar) {
			struct command *sub = NULL;

			for (unsigned j = 0; j < cmd->nsubs; j++)
				if (str_eq_nocase(bar + 1,
						  names[i].len - (size_t)(bar + 1 - names[i].p),
						  cmd->subs[j]->sub_name))
					sub = cmd->subs[j];
			if (!sub)
				continue;
			for (int j = 0; j < n; j++)
				dup |= list[j] == sub;
			if (!dup && n < max && histogram_read(sub, b))
				list[n++] = sub;
			continue;
		}
		if (!cmd)
			continue;
		for (int j = 0; j < n; j++)
			dup |= list[j] == cmd;
		if (!dup)
			n = collect(cmd, list, n, max);
	}
	reply_map(c, n);
	for (int i = 0; i < n; i++) {
		uint64_t total = histogram_read(list[i], b);

		reply_histogram(c, list[i], b, total);
	}
	xfree(b);
	xfree(list);
}

/* The value at percentile p in microseconds (the top of its bucket). */
static double percentile(const uint64_t *b, uint64_t total, double p)
{
	uint64_t want = (uint64_t)((double)total * p / 100.0 + 0.999999), cum = 0;

	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		cum += b[i];
		if (cum >= want)
			return (double)bucket_top(i) / 1000.0;
	}
	return (double)bucket_top(HIST_BUCKETS - 1) / 1000.0;
}

static void info_one(const struct command *cmd, uint64_t *b, latency_visit_fn *fn, void *ctx)
{
	uint64_t total = histogram_read(cmd, b);
	/* latency-tracking-info-percentiles, stored as Redis prints each one. */
	const char *list =
		__atomic_load_n(&config.latency_tracking_info_percentiles, __ATOMIC_ACQUIRE);
	char name[160], value[1024];
	size_t n = 0;

	if (!total)
		return;
	snprintf(name, sizeof(name), "latency_percentiles_usec_%s", cmd->name);
	value[0] = '\0';
	for (const char *p = list; *p && n < sizeof(value);) {
		size_t len = strcspn(p, " ");

		n += (size_t)snprintf(value + n, sizeof(value) - n, "%sp%.*s=%.3f", n ? "," : "",
				      (int)len, p, percentile(b, total, strtod(p, NULL)));
		p += len;
		p += *p == ' ';
	}
	fn(ctx, name, value);
}

void latency_info_percentiles(latency_visit_fn *fn, void *ctx)
{
	uint64_t *b = xmalloc(sizeof(uint64_t) * HIST_BUCKETS);

	for (struct command **all = command_all(); *all; all++) {
		info_one(*all, b, fn, ctx);
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			info_one((*all)->subs[i], b, fn, ctx);
	}
	xfree(b);
}

/* Makes cmd's current buckets its base, creating the base if it ran. */
static void histogram_rebase(const struct command *cmd, uint64_t *scratch)
{
	struct histogram **slot = &bases[cmd->index];
	struct histogram *base = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *fresh;

	if (!base) {
		if (!histogram_read(cmd, scratch))
			return;
		/* Another reset may create it at the same time: one wins. */
		fresh = xcalloc(1, sizeof(*fresh));
		if (__atomic_compare_exchange_n(slot, &base, fresh, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			base = fresh;
		else
			xfree(fresh);
	}
	server_counters_rebase(histogram_at, cmd, base->buckets, scratch, HIST_BUCKETS);
}

void latency_reset_histograms(void)
{
	uint64_t *scratch = xmalloc(sizeof(uint64_t) * HIST_BUCKETS);

	pthread_once(&bases_once, bases_alloc);
	for (struct command **all = command_all(); *all; all++) {
		histogram_rebase(*all, scratch);
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			histogram_rebase((*all)->subs[i], scratch);
	}
	xfree(scratch);
}
