// SPDX-License-Identifier: BSD-3-Clause
/*
 * hotkeys: the HOTKEYS session and its top-key summaries (see hotkeys.h).
 */
#include "hotkeys.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "client.h"
#include "cluster.h"
#include "commands.h"
#include "mem.h"
#include "text.h"
#include "topk.h"
#include "util.h"

bool hotkeys_on;

/* The session: under lock; hotkeys_on mirrors s.active for the dispatcher. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool exists, active;
	unsigned metrics; /* HOTKEYS_CPU | HOTKEYS_NET */
	int count, sample;
	int64_t start_ms, duration_ms; /* duration: the limit while active, then the span */
	uint8_t *slots;		       /* CLUSTER_SLOTS flags, or NULL for every slot */
	struct timeval utime, stime;
	struct topk cpu, net;
	uint64_t us_all, us_selected, us_sampled;
	uint64_t bytes_all, bytes_selected, bytes_sampled;
	uint64_t cmd_cpu_ms; /* time spent updating the summaries */
	uint64_t rnd;
} s;

/* ---- the session -------------------------------------------------------------------------- */

static void session_release(void)
{
	topk_free(&s.cpu);
	topk_free(&s.net);
	xfree(s.slots);
	memset(&s, 0, sizeof(s));
}

int hotkeys_start(const struct hotkeys_params *p)
{
	struct rusage ru;

	pthread_mutex_lock(&lock);
	if (s.active) {
		pthread_mutex_unlock(&lock);
		return -EBUSY;
	}
	session_release();
	s.exists = true;
	s.metrics = p->metrics;
	s.count = p->count;
	s.sample = p->sample;
	s.duration_ms = p->duration_ms;
	s.start_ms = now_ms();
	s.rnd = (uint64_t)mono_us() | 1;
	/* Ten times the keys GET lists, for accuracy, as Redis tracks. */
	if (p->metrics & HOTKEYS_CPU)
		topk_init(&s.cpu, (uint32_t)p->count * 10);
	if (p->metrics & HOTKEYS_NET)
		topk_init(&s.net, (uint32_t)p->count * 10);
	if (p->nslots) {
		s.slots = xcalloc(CLUSTER_SLOTS, 1);
		for (int i = 0; i < p->nslots; i++)
			s.slots[p->slots[i]] = 1;
	}
	getrusage(RUSAGE_SELF, &ru);
	s.utime = ru.ru_utime;
	s.stime = ru.ru_stime;
	s.active = true;
	__atomic_store_n(&hotkeys_on, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lock);
	return 0;
}

/* Caller holds the lock. */
static void session_stop(int64_t now)
{
	s.active = false;
	s.duration_ms = now - s.start_ms;
	__atomic_store_n(&hotkeys_on, false, __ATOMIC_RELAXED);
}

int hotkeys_stop(void)
{
	int r = 0;

	pthread_mutex_lock(&lock);
	if (s.active)
		session_stop(now_ms());
	else
		r = -ENOENT;
	pthread_mutex_unlock(&lock);
	return r;
}

int hotkeys_reset(void)
{
	int r = 0;

	pthread_mutex_lock(&lock);
	if (s.active)
		r = -EBUSY;
	else
		session_release();
	pthread_mutex_unlock(&lock);
	return r;
}

void hotkeys_cron(int64_t now)
{
	if (!hotkeys_active())
		return;
	pthread_mutex_lock(&lock);
	if (s.active && s.duration_ms > 0 && now - s.start_ms >= s.duration_ms)
		session_stop(now);
	pthread_mutex_unlock(&lock);
}

static int64_t ms_between(struct timeval a, struct timeval b)
{
	return (int64_t)(a.tv_sec - b.tv_sec) * 1000 + ((int64_t)a.tv_usec - b.tv_usec) / 1000;
}

int hotkeys_snapshot(struct hotkeys_report *r)
{
	struct rusage ru;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&lock);
	if (!s.exists) {
		pthread_mutex_unlock(&lock);
		return -ENOENT;
	}
	r->active = s.active;
	r->metrics = s.metrics;
	r->sample = s.sample;
	r->start_ms = s.start_ms;
	r->duration_ms = s.active ? now_ms() - s.start_ms : s.duration_ms;
	r->us_all = s.us_all;
	r->us_selected = s.us_selected;
	r->us_sampled = s.us_sampled;
	r->bytes_all = s.bytes_all;
	r->bytes_selected = s.bytes_selected;
	r->bytes_sampled = s.bytes_sampled;
	if (s.slots) {
		r->slots = xmalloc(CLUSTER_SLOTS);
		memcpy(r->slots, s.slots, CLUSTER_SLOTS);
	}
	if (s.metrics & HOTKEYS_CPU) {
		getrusage(RUSAGE_SELF, &ru);
		r->cpu_user_ms = ms_between(ru.ru_utime, s.utime);
		r->cpu_sys_ms = ms_between(ru.ru_stime, s.stime);
		r->cpu = xcalloc((size_t)s.count, sizeof(*r->cpu));
		r->ncpu = topk_list(&s.cpu, s.count, r->cpu);
	}
	if (s.metrics & HOTKEYS_NET) {
		r->net_total = s.net.total;
		r->net = xcalloc((size_t)s.count, sizeof(*r->net));
		r->nnet = topk_list(&s.net, s.count, r->net);
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

void hotkeys_report_free(struct hotkeys_report *r)
{
	for (int i = 0; i < r->ncpu; i++)
		xfree(r->cpu[i].key);
	for (int i = 0; i < r->nnet; i++)
		xfree(r->net[i].key);
	xfree(r->cpu);
	xfree(r->net);
	xfree(r->slots);
}

/* ---- what the dispatcher feeds ------------------------------------------------------------ */

uint64_t hotkeys_request_bytes(const struct client *c)
{
	char tmp[LL_STR_SIZE + 1];
	uint64_t n = 3 + (uint64_t)ll_to_str(tmp, c->argc);

	for (int i = 0; i < c->argc; i++)
		n += 5 + (uint64_t)ll_to_str(tmp, (long long)c->argv[i].len) + c->argv[i].len;
	return n;
}

void hotkeys_record(struct client *c, const struct command *cmd, uint64_t usec, uint64_t in_bytes,
		    uint64_t out_bytes)
{
	int few[16], *keys = c->argc <= 16 ? few : xmalloc((size_t)c->argc * sizeof(int));
	int nkeys = command_key_indexes(cmd, c->argc, c->argv, keys, NULL, c->argc);
	uint64_t bytes = in_bytes + out_bytes;
	bool selected, sampled = true;
	int64_t t0;

	if (nkeys <= 0)
		goto out;
	pthread_mutex_lock(&lock);
	if (!s.active)
		goto unlock;
	if (s.sample > 1) {
		/* xorshift64: one draw per command, as Redis's rand() per call. */
		s.rnd ^= s.rnd << 13;
		s.rnd ^= s.rnd >> 7;
		s.rnd ^= s.rnd << 17;
		sampled = s.rnd % (uint64_t)s.sample == 0;
	}
	selected = !s.slots || s.slots[key_slot(c->argv[keys[0]].p, c->argv[keys[0]].len)];
	s.us_all += usec;
	s.bytes_all += bytes;
	if (selected) {
		s.us_selected += usec;
		s.bytes_selected += bytes;
		if (sampled && s.sample > 1) {
			s.us_sampled += usec;
			s.bytes_sampled += bytes;
		}
	}
	if (!sampled || !selected)
		goto unlock;
	t0 = mono_us();
	for (int i = 0; i < nkeys; i++) {
		const struct arg *k = &c->argv[keys[i]];

		/* Each key's share, as Redis splits: integer division. */
		if (s.metrics & HOTKEYS_CPU)
			topk_add(&s.cpu, k->p, k->len, usec / (uint64_t)nkeys);
		if (s.metrics & HOTKEYS_NET)
			topk_add(&s.net, k->p, k->len, bytes / (uint64_t)nkeys);
	}
	s.cmd_cpu_ms += (uint64_t)(mono_us() - t0) / 1000;
unlock:
	pthread_mutex_unlock(&lock);
out:
	if (keys != few)
		xfree(keys);
}

void hotkeys_info(struct text *t)
{
	text_printf(t, "# Hotkeys\r\n");
	pthread_mutex_lock(&lock);
	if (s.exists)
		text_printf(t, "hotkeys-tracking-active:%d\r\nhotkeys-cmd-cpu-time:%llu\r\n",
			    s.active ? 1 : 0, (unsigned long long)s.cmd_cpu_ms);
	pthread_mutex_unlock(&lock);
}

size_t hotkeys_memory(void)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = s.exists ? sizeof(s) + topk_memory(&s.cpu) + topk_memory(&s.net) +
			       (s.slots ? CLUSTER_SLOTS : 0)
		     : 0;
	pthread_mutex_unlock(&lock);
	return n;
}
