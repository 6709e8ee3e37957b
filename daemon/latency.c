// SPDX-License-Identifier: BSD-3-Clause
/*
 * latency: the latency monitor and per-command latency histograms.
 *
 * Locking: latency_lock protects the monitor's events (their sample rings
 * and maxima). It is a leaf: nothing else is taken while it is held, and
 * replies are built from a copy made under it. The histograms are counted
 * without a lock: each worker keeps its own per command (worker.h), published
 * with release the first time the command runs there, their buckets counters
 * that only that worker writes; readings merge the workers' histograms (a
 * sum may be a few calls behind) under hist_lock, a leaf lock that the owner
 * also takes to free one (see "histograms" below).
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

/*
 * A command's latencies in microseconds (what command_call measures), kept
 * with Redis's resolution at a fraction of its hdr_histogram's 24 KiB: the
 * buckets are cut at the values where Redis's LATENCY HISTOGRAM changes
 * bucket (the top of its power-of-two bucket 2^k ns, below), so that reply
 * is exact, and each such range is split into 128 sub-buckets (Redis's two
 * significant digits: under 0.8% apart). Up to 132 us every value has a
 * bucket of its own, in the histogram itself (1.2 KiB); a longer range's
 * sub-buckets (1 KiB) are allocated when a call first lands in it. Calls
 * longer than Redis's 1 s limit count as 1 s, as there.
 */
#define HIST_K_FIRST 10 /* LATENCY HISTOGRAM's first key: 1024 ns */
#define HIST_K_EXACT 17 /* values up to top_us(17) = 132 us: exact */
#define HIST_K_LAST 30	/* the range holding 1 s */
#define HIST_EXACT 133
#define HIST_RANGES (HIST_K_LAST - HIST_K_EXACT)
#define HIST_SUB 128
#define HIST_MAX_US 1000000

/* The largest microsecond value that Redis's LATENCY HISTOGRAM shows under
 * its bucket 2^k ns: the top of hdr's sub-bucket at 2^k, in whole us. */
static uint64_t top_us(unsigned k)
{
	return ((1ULL << k) + (1ULL << (k - 7)) - 1) / 1000;
}

struct histogram {
	uint64_t gen; /* the reset it counts since (hist_gen then) */
	uint64_t exact[HIST_EXACT];
	/* Range r holds (top_us(HIST_K_EXACT + r), top_us(HIST_K_EXACT + r + 1)]. */
	uint64_t *range[HIST_RANGES];
};

/*
 * Each worker keeps its own per command (worker.h), its one writer. The
 * locking: hist_lock is taken by every reader, and by the owner whenever it
 * frees (a reset range, a stale histogram in its cron), never to count, so a
 * reader under it never sees memory go. CONFIG RESETSTAT bumps hist_gen: a
 * histogram of an older generation reads as empty, is emptied by its owner
 * at its command's next call, or freed by its owner's cron if none comes, as
 * Redis frees its histograms at a reset.
 */
static pthread_mutex_t hist_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t hist_gen = 1;

void latency_worker_init(struct worker *w)
{
	w->cmd_hists = xcalloc(command_rows(), sizeof(*w->cmd_hists));
	w->cmd_hists_gen = __atomic_load_n(&hist_gen, __ATOMIC_ACQUIRE);
}

static void histogram_free(struct histogram *h)
{
	for (unsigned r = 0; h && r < HIST_RANGES; r++)
		xfree(h->range[r]);
	xfree(h);
}

void latency_worker_free(struct worker *w)
{
	for (size_t i = 0; w->cmd_hists && i < command_rows(); i++)
		histogram_free(w->cmd_hists[i]);
	xfree(w->cmd_hists);
	w->cmd_hists = NULL;
}

/* The range of us past the exact buckets, and its sub-bucket in *sub. */
static unsigned range_of(uint64_t us, unsigned *sub)
{
	unsigned r = 0;
	uint64_t low, width;

	while (us > top_us(HIST_K_EXACT + r + 1))
		r++;
	low = top_us(HIST_K_EXACT + r);
	width = top_us(HIST_K_EXACT + r + 1) - low;
	*sub = (unsigned)((us - low - 1) * HIST_SUB / width);
	return r;
}

/* The largest value of range r's sub-bucket sub. */
static uint64_t range_top(unsigned r, unsigned sub)
{
	uint64_t low = top_us(HIST_K_EXACT + r), width = top_us(HIST_K_EXACT + r + 1) - low;

	return low + 1 + ((sub + 1) * width - 1) / HIST_SUB;
}

uint64_t latency_bucket_top_us(uint64_t us)
{
	unsigned r, sub;

	if (us > HIST_MAX_US)
		us = HIST_MAX_US;
	if (us < HIST_EXACT)
		return us;
	r = range_of(us, &sub);
	return range_top(r, sub);
}

uint64_t latency_bucket_low_us(uint64_t us)
{
	unsigned r, sub;

	if (us > HIST_MAX_US)
		us = HIST_MAX_US;
	if (us < HIST_EXACT)
		return us;
	r = range_of(us, &sub);
	return sub ? range_top(r, sub - 1) + 1 : top_us(HIST_K_EXACT + r) + 1;
}

double latency_reported_usec(uint64_t us)
{
	/* Redis's hdr_histogram (2 significant digits, values in ns) reports
	 * the highest value of its own bucket: 2^(m-7) ns wide in [2^m, 2^m+1). */
	uint64_t ns = us * 1000, width = 1;

	if (ns >= 256)
		width = 1ULL << (63 - __builtin_clzll(ns) - 7);
	return (double)((ns & ~(width - 1)) + width - 1) / 1000.0;
}

/* On w, the owner: empties h for generation gen (a reset came). */
static void histogram_renew(struct histogram *h, uint64_t gen)
{
	pthread_mutex_lock(&hist_lock);
	for (unsigned r = 0; r < HIST_RANGES; r++) {
		xfree(h->range[r]);
		h->range[r] = NULL;
	}
	memset(h->exact, 0, sizeof(h->exact));
	__atomic_store_n(&h->gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&hist_lock);
}

/* On w, the histograms' one writer. */
static void histogram_add(struct worker *w, const struct command *cmd, uint64_t us)
{
	struct histogram **slot = &w->cmd_hists[cmd->index];
	struct histogram *h = __atomic_load_n(slot, __ATOMIC_RELAXED);
	uint64_t gen = __atomic_load_n(&hist_gen, __ATOMIC_ACQUIRE);
	uint64_t **range;
	unsigned r, sub;

	if (!h) {
		h = xcalloc(1, sizeof(*h));
		h->gen = gen;
		__atomic_store_n(slot, h, __ATOMIC_RELEASE);
	} else if (__builtin_expect(h->gen != gen, 0)) {
		histogram_renew(h, gen);
	}
	if (us > HIST_MAX_US)
		us = HIST_MAX_US;
	if (us < HIST_EXACT) {
		stat_add(&h->exact[us], 1);
		return;
	}
	r = range_of(us, &sub);
	range = &h->range[r];
	if (!*range)
		__atomic_store_n(range, xcalloc(HIST_SUB, sizeof(uint64_t)), __ATOMIC_RELEASE);
	stat_add(&(*range)[sub], 1);
}

/* On w: frees the histograms no call has renewed since the last reset. */
static void histogram_sweep(struct worker *w)
{
	uint64_t gen = __atomic_load_n(&hist_gen, __ATOMIC_ACQUIRE);

	if (w->cmd_hists_gen == gen)
		return;
	w->cmd_hists_gen = gen;
	pthread_mutex_lock(&hist_lock);
	for (size_t i = 0; i < command_rows(); i++) {
		struct histogram *h = w->cmd_hists[i];

		if (h && h->gen != gen) {
			__atomic_store_n(&w->cmd_hists[i], NULL, __ATOMIC_RELEASE);
			histogram_free(h);
		}
	}
	pthread_mutex_unlock(&hist_lock);
}

void latency_worker_cron(struct worker *w)
{
	histogram_sweep(w);
}

/* A command's buckets merged over the workers (hist_lock held). */
struct merged {
	uint64_t total;
	uint64_t exact[HIST_EXACT];
	uint64_t range[HIST_RANGES][HIST_SUB];
};

/* Merges cmd's histograms of this generation into m; returns its total
 * (0 if it has not run since start or the last reset). */
static uint64_t do_histogram_read(const struct command *cmd, struct merged *m)
{
	uint64_t gen = __atomic_load_n(&hist_gen, __ATOMIC_ACQUIRE);

	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < server.nworkers; i++) {
		const struct worker *w = &server.workers[i];
		const struct histogram *h =
			w->cmd_hists ? __atomic_load_n(&w->cmd_hists[cmd->index], __ATOMIC_ACQUIRE)
				     : NULL;

		if (!h || __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE) != gen)
			continue;
		for (unsigned b = 0; b < HIST_EXACT; b++)
			m->exact[b] += __atomic_load_n(&h->exact[b], __ATOMIC_RELAXED);
		for (unsigned r = 0; r < HIST_RANGES; r++) {
			const uint64_t *sub = __atomic_load_n(&h->range[r], __ATOMIC_ACQUIRE);

			for (unsigned j = 0; sub && j < HIST_SUB; j++)
				m->range[r][j] += __atomic_load_n(&sub[j], __ATOMIC_RELAXED);
		}
	}
	for (unsigned b = 0; b < HIST_EXACT; b++)
		m->total += m->exact[b];
	for (unsigned r = 0; r < HIST_RANGES; r++)
		for (unsigned j = 0; j < HIST_SUB; j++)
			m->total += m->range[r][j];
	return m->total;
}

static uint64_t histogram_read(const struct command *cmd, struct merged *m)
{
	uint64_t total;

	pthread_mutex_lock(&hist_lock);
	total = do_histogram_read(cmd, m);
	pthread_mutex_unlock(&hist_lock);
	return total;
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

/* Redis's power-of-two buckets from 1024 ns, keyed by the largest
 * microsecond value each holds; counts are cumulative, a bucket shown only
 * when its count grows. */
static void reply_histogram(struct client *c, const struct command *cmd, const struct merged *m)
{
	unsigned long long keys[HIST_K_LAST + 1], counts[HIST_K_LAST + 1];
	uint64_t cum = 0, prev = 0, v = 0;
	int n = 0;

	for (unsigned k = HIST_K_FIRST; k <= HIST_K_LAST; k++) {
		if (k <= HIST_K_EXACT)
			for (; v < HIST_EXACT && v <= top_us(k); v++)
				cum += m->exact[v];
		else
			for (unsigned j = 0; j < HIST_SUB; j++)
				cum += m->range[k - HIST_K_EXACT - 1][j];
		if (cum > prev) {
			keys[n] = top_us(k);
			counts[n++] = cum;
		}
		prev = cum;
	}
	reply_bulk_cstr(c, cmd->name);
	reply_map(c, 2);
	reply_bulk_cstr(c, "calls");
	reply_int(c, (long long)m->total);
	reply_bulk_cstr(c, "histogram_usec");
	reply_map(c, n);
	for (int i = 0; i < n; i++) {
		reply_int(c, (long long)keys[i]);
		reply_int(c, (long long)counts[i]);
	}
}

/* Adds cmd (and a container's subcommands) to list if they ran. */
static int collect(const struct command *cmd, const struct command **list, int n, int max,
		   struct merged *m)
{
	if (n < max && histogram_read(cmd, m))
		list[n++] = cmd;
	for (unsigned i = 0; i < cmd->nsubs; i++)
		if (n < max && histogram_read(cmd->subs[i], m))
			list[n++] = cmd->subs[i];
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
	struct merged *m = xmalloc(sizeof(*m));

	if (nnames == 0) {
		for (struct command **all = command_all(); *all; all++)
			n = collect(*all, list, n, max, m);
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
			if (!dup && n < max && histogram_read(sub, m))
				list[n++] = sub;
			continue;
		}
		if (!cmd)
			continue;
		for (int j = 0; j < n; j++)
			dup |= list[j] == cmd;
		if (!dup)
			n = collect(cmd, list, n, max, m);
	}
	reply_map(c, n);
	for (int i = 0; i < n; i++) {
		histogram_read(list[i], m);
		reply_histogram(c, list[i], m);
	}
	xfree(m);
	xfree(list);
}

/* The value at percentile p in microseconds, as Redis's
 * hdr_value_at_percentile: the rank rounded, then the top of the bucket
 * holding it (its bottom for p = 0), as Redis prints it. */
static double percentile(const struct merged *m, double p)
{
	uint64_t want = (uint64_t)((p < 100 ? p : 100) / 100 * (double)m->total + 0.5), cum = 0;
	uint64_t us = HIST_MAX_US;

	if (want == 0)
		want = 1;
	for (unsigned b = 0; b < HIST_EXACT && cum < want; b++) {
		cum += m->exact[b];
		us = b;
	}
	for (unsigned r = 0; r < HIST_RANGES && cum < want; r++)
		for (unsigned j = 0; j < HIST_SUB && cum < want; j++) {
			cum += m->range[r][j];
			us = range_top(r, j);
		}
	if (p == 0)
		return (double)latency_bucket_low_us(us);
	return latency_reported_usec(us);
}

static void info_one(const struct command *cmd, struct merged *m, latency_visit_fn *fn, void *ctx)
{
	/* latency-tracking-info-percentiles, stored as Redis prints each one. */
	const char *list =
		__atomic_load_n(&config.latency_tracking_info_percentiles, __ATOMIC_ACQUIRE);
	char name[160], value[1024];
	size_t n = 0;

	if (!histogram_read(cmd, m))
		return;
	snprintf(name, sizeof(name), "latency_percentiles_usec_%s", cmd->name);
	value[0] = '\0';
	for (const char *p = list; *p && n < sizeof(value);) {
		size_t len = strcspn(p, " ");

		n += (size_t)snprintf(value + n, sizeof(value) - n, "%sp%.*s=%.3f", n ? "," : "",
				      (int)len, p, percentile(m, strtod(p, NULL)));
		p += len;
		p += *p == ' ';
	}
	fn(ctx, name, value);
}

void latency_info_percentiles(latency_visit_fn *fn, void *ctx)
{
	struct merged *m = xmalloc(sizeof(*m));

	for (struct command **all = command_all(); *all; all++) {
		info_one(*all, m, fn, ctx);
		for (unsigned i = 0; i < (*all)->nsubs; i++)
			info_one((*all)->subs[i], m, fn, ctx);
	}
	xfree(m);
}

void latency_reset_histograms(void)
{
	/* Every histogram reads as empty from now on; their owners empty or
	 * free them (histogram_add, histogram_sweep). */
	pthread_mutex_lock(&hist_lock);
	__atomic_add_fetch(&hist_gen, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&hist_lock);
}
