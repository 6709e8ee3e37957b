/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bgjob: the background job pool, for work that must leave the command path
 * (freeing big values and flushed databases, lazyfree.c).
 *
 * One thread and one FIFO queue, as Redis's lazyfree worker (bio.c): a job
 * runs only after every job submitted before it has run, so a job can serve
 * as a barrier ("everything queued so far is done"). A job carries its own
 * function and argument; the pool knows no kinds of job.
 *
 * Threads: bgjob_submit() may be called from any thread; the pool's thread
 * runs the jobs, each to completion, and takes no store lock (a job owns what
 * it is given). Before bgjob_start() and after bgjob_stop(), a submitted job
 * runs at once on the caller's thread, so start-up, shutdown and unit tests
 * need no pool.
 */
#ifndef XKV_BGJOB_H
#define XKV_BGJOB_H

#include <stdint.h>

/* A job: runs once, on the pool's thread, and owns arg (frees it). */
typedef void bgjob_fn(void *arg);

/* Starts the pool's thread; 0 or -errno. */
int bgjob_start(void);
/* Queues fn(arg). Never fails: the queue grows (one small allocation). */
void bgjob_submit(bgjob_fn *fn, void *arg);
/* Jobs queued or running, for INFO and tests (a racy read). */
uint64_t bgjob_pending(void);
/* Runs every job queued, then stops and joins the thread. */
void bgjob_stop(void);

#endif
