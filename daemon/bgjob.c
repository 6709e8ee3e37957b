// SPDX-License-Identifier: BSD-3-Clause
/*
 * The background job pool. The pool lock protects the queue (head, tail),
 * `running` and `stopping`; it is a leaf lock, held only to link or unlink a
 * job, never while one runs, so a job may submit another. `pending` is
 * written under the lock and read without it (relaxed) by bgjob_pending().
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "bgjob.h"
#include "log.h"
#include "mem.h"

struct bgjob {
	struct bgjob *next;
	bgjob_fn *fn;
	void *arg;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct bgjob *head, *tail;
static bool running, stopping;
static uint64_t pending;
static pthread_t thread;

static void *bgjob_main(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct bgjob *j = head;

		if (!j) {
			/* Stop only once the queue is drained; from here on a
			 * submitted job runs on its caller's thread. */
			if (stopping) {
				running = false;
				break;
			}
			pthread_cond_wait(&wake, &lock);
			continue;
		}
		head = j->next;
		if (!head)
			tail = NULL;
		pthread_mutex_unlock(&lock);
		j->fn(j->arg);
		xfree(j);
		pthread_mutex_lock(&lock);
		__atomic_store_n(&pending, pending - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int bgjob_start(void)
{
	sigset_t all, old;
	int err;

	pthread_mutex_lock(&lock);
	if (running) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	running = true;
	stopping = false;
	pthread_mutex_unlock(&lock);
	/* The pool never takes a signal: the main thread handles them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&thread, NULL, bgjob_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_mutex_lock(&lock);
		running = false;
		pthread_mutex_unlock(&lock);
		log_warning("Cannot start the background job thread: %s", strerror(err));
		return -err;
	}
	pthread_setname_np(thread, "xkv-bgjob");
	return 0;
}

void bgjob_submit(bgjob_fn *fn, void *arg)
{
	struct bgjob *j;

	pthread_mutex_lock(&lock);
	if (!running) {
		pthread_mutex_unlock(&lock);
		fn(arg);
		return;
	}
	j = xmalloc(sizeof(*j));
	j->next = NULL;
	j->fn = fn;
	j->arg = arg;
	if (tail)
		tail->next = j;
	else
		head = j;
	tail = j;
	__atomic_store_n(&pending, pending + 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

uint64_t bgjob_pending(void)
{
	return __atomic_load_n(&pending, __ATOMIC_RELAXED);
}

void bgjob_stop(void)
{
	bool was_running;

	pthread_mutex_lock(&lock);
	was_running = running && !stopping;
	stopping = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	if (was_running)
		pthread_join(thread, NULL);
}
