// SPDX-License-Identifier: GPL-2.0-only
/*
 * The background job pool (bgjob.h) and lazy freeing on it (lazyfree.h):
 * jobs run once each, in submission order, off the caller's thread; stop
 * drains the queue; jobs submitted with no pool run inline; the effort rule
 * sends only big values to the pool, and the counters follow. The sanitizer
 * tier runs this too: nothing may leak or race.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bgjob.h"
#include "lazyfree.h"
#include "mem.h"
#include "object.h"
#include "t_set.h"

#include "kselftest_harness.h"

#define NJOBS 10000

struct order {
	pthread_mutex_t lock;
	unsigned next;	   /* the index the next job must carry */
	unsigned misorder; /* jobs that ran out of turn */
	unsigned on_caller;
	pthread_t caller;
};

struct order_job {
	struct order *o;
	unsigned index;
};

static void order_run(void *arg)
{
	struct order_job *j = arg;
	struct order *o = j->o;

	pthread_mutex_lock(&o->lock);
	if (j->index != o->next)
		o->misorder++;
	o->next++;
	if (pthread_equal(pthread_self(), o->caller))
		o->on_caller++;
	pthread_mutex_unlock(&o->lock);
	xfree(j);
}

/* Only while no job of o is queued: o->next is read once, before any. */
static void submit_in_order(struct order *o, unsigned n)
{
	unsigned base = o->next;

	for (unsigned i = 0; i < n; i++) {
		struct order_job *j = xmalloc(sizeof(*j));

		j->o = o;
		j->index = base + i;
		bgjob_submit(order_run, j);
	}
}

TEST(jobs_run_once_in_order_off_the_caller_and_stop_drains)
{
	struct order o = { .lock = PTHREAD_MUTEX_INITIALIZER, .caller = pthread_self() };
	struct order_job *first[NJOBS];

	ASSERT_EQ(0, bgjob_start());
	/* Every job allocated before any is queued, so indexes are fixed. */
	for (unsigned i = 0; i < NJOBS; i++) {
		first[i] = xmalloc(sizeof(*first[i]));
		first[i]->o = &o;
		first[i]->index = i;
	}
	for (unsigned i = 0; i < NJOBS; i++)
		bgjob_submit(order_run, first[i]);
	/* Stop runs whatever is still queued before it returns. */
	bgjob_stop();
	EXPECT_EQ(0, bgjob_pending());
	EXPECT_EQ(NJOBS, o.next);
	EXPECT_EQ(0, o.misorder);
	EXPECT_EQ(0, o.on_caller);
	/* Stopped: a job runs at once, on the caller. */
	submit_in_order(&o, 3);
	EXPECT_EQ(NJOBS + 3, o.next);
	EXPECT_EQ(3, o.on_caller);
	/* And a pool can start again. */
	ASSERT_EQ(0, bgjob_start());
	submit_in_order(&o, 100);
	bgjob_stop();
	EXPECT_EQ(NJOBS + 103, o.next);
	EXPECT_EQ(0, o.misorder);
	EXPECT_EQ(3, o.on_caller);
	bgjob_stop(); /* twice: nothing to do */
}

/* A job that submits another (a job may, the lock is not held). */
static unsigned chained;

static void chain_last(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&chained, 1, __ATOMIC_RELAXED);
}

static void chain_first(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&chained, 1, __ATOMIC_RELAXED);
	bgjob_submit(chain_last, NULL);
}

TEST(a_job_may_submit_a_job)
{
	chained = 0;
	ASSERT_EQ(0, bgjob_start());
	for (int i = 0; i < 100; i++)
		bgjob_submit(chain_first, NULL);
	bgjob_stop();
	EXPECT_EQ(200, chained);
}

/* Several threads submitting at once: each job runs exactly once. */
static unsigned counted;

static void count_run(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&counted, 1, __ATOMIC_RELAXED);
}

static void *submitter(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000; i++)
		bgjob_submit(count_run, NULL);
	return NULL;
}

TEST(concurrent_submitters)
{
	pthread_t t[4];

	counted = 0;
	ASSERT_EQ(0, bgjob_start());
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, submitter, NULL));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	bgjob_stop();
	EXPECT_EQ(8000, counted);
}

static struct obj set_of(unsigned n)
{
	/* Non-numeric members, sized for a hash table from the start. */
	struct obj o = set_new("m", 1, n + 1000);
	char buf[32];

	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(buf, sizeof(buf), "member:%u", i);

		set_add(&o, buf, (size_t)len);
	}
	return o;
}

TEST(the_effort_rule_and_the_counters)
{
	uint64_t freed0, pending0;
	struct obj small, big, str;
	size_t before;

	ASSERT_EQ(0, bgjob_start());
	lazyfree_reset_stats();
	freed0 = lazyfree_freed_objects();
	pending0 = lazyfree_pending_objects();
	EXPECT_EQ(0, freed0);

	/* One allocation, whatever its size: freed on the caller. */
	str = obj_string("x", 1);
	EXPECT_EQ(1, obj_free_effort(&str));
	lazyfree_obj(&str, true);

	small = set_of(LAZYFREE_THRESHOLD);
	big = set_of(5000);
	EXPECT_LE(obj_free_effort(&small), LAZYFREE_THRESHOLD);
	EXPECT_GT(obj_free_effort(&big), LAZYFREE_THRESHOLD);
	lazyfree_obj(&small, true);
	/* Not lazy: freed here even when big. */
	before = mem_used();
	lazyfree_obj(&big, false);
	EXPECT_LT(mem_used(), before);
	bgjob_stop();
	EXPECT_EQ(0, lazyfree_freed_objects());

	ASSERT_EQ(0, bgjob_start());
	big = set_of(5000);
	before = mem_used();
	lazyfree_obj(&big, true);
	/* Detached: the caller's struct owns nothing now. */
	EXPECT_EQ(1, obj_free_effort(&big));
	bgjob_stop();
	EXPECT_EQ(1, lazyfree_freed_objects());
	EXPECT_EQ(pending0, lazyfree_pending_objects());
	/* The other thread's frees are in the accounting. */
	EXPECT_LT(mem_used(), before);
	lazyfree_reset_stats();
	EXPECT_EQ(0, lazyfree_freed_objects());
}

TEST_HARNESS_MAIN
