// SPDX-License-Identifier: BSD-3-Clause
/*
 * Lazy freeing: the effort rule and the counters. The counters are written
 * by the submitting thread (pending up) and the pool's thread (pending down,
 * freed up) with atomic adds; RESETSTAT stores a zero into freed, which a
 * concurrent add may follow (as in Redis, a job finishing during RESETSTAT
 * may be counted).
 */
#include "bgjob.h"
#include "lazyfree.h"
#include "mem.h"

static uint64_t pending_objects, freed_objects;

struct lazyfree_job {
	lazyfree_fn *fn;
	void *arg;
	uint64_t objects;
};

static void lazyfree_run(void *arg)
{
	struct lazyfree_job *j = arg;

	j->fn(j->arg);
	__atomic_fetch_sub(&pending_objects, j->objects, __ATOMIC_RELAXED);
	__atomic_fetch_add(&freed_objects, j->objects, __ATOMIC_RELAXED);
	xfree(j);
}

void lazyfree_submit(lazyfree_fn *fn, void *arg, uint64_t objects)
{
	struct lazyfree_job *j = xmalloc(sizeof(*j));

	j->fn = fn;
	j->arg = arg;
	j->objects = objects;
	__atomic_fetch_add(&pending_objects, objects, __ATOMIC_RELAXED);
	bgjob_submit(lazyfree_run, j);
}

/* A value handed over, boxed: its struct obj lived inside its entry. */
static void free_boxed(void *arg)
{
	struct obj *o = arg;

	obj_free(o);
	xfree(o);
}

void lazyfree_obj(struct obj *o, bool lazy)
{
	struct obj *box;

	if (!lazy || obj_free_effort(o) <= LAZYFREE_THRESHOLD) {
		obj_free(o);
		return;
	}
	box = xmalloc(sizeof(*box));
	*box = *o;
	/* o holds an integer now, which owns no memory. */
	*o = obj_string_ll(0);
	lazyfree_submit(free_boxed, box, 1);
}

uint64_t lazyfree_pending_objects(void)
{
	return __atomic_load_n(&pending_objects, __ATOMIC_RELAXED);
}

uint64_t lazyfree_freed_objects(void)
{
	return __atomic_load_n(&freed_objects, __ATOMIC_RELAXED);
}

void lazyfree_reset_stats(void)
{
	__atomic_store_n(&freed_objects, 0, __ATOMIC_RELAXED);
}
