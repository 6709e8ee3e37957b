// SPDX-License-Identifier: BSD-3-Clause
/*
 * A load thread (worker.h): connect, wait for the common start, then one
 * epoll loop until the step is over and its replies are in.
 *
 * Each turn of the loop: decide whether the step is still sending; in open
 * loop, hand every connection its due slots and find the earliest slot a
 * connection with room in its window is waiting for; then sleep in
 * epoll_pwait2() until that slot or an event, whichever comes first (with
 * the timer slack at 1 ns, so the wake-up is not 50 us late). In closed loop
 * a connection is topped up right after its replies are read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "clock.h"
#include "worker.h"

#define MAX_EVENTS 256
/* The loop looks at the stop flag and the timeouts at least this often. */
#define MAX_WAIT_NS (100 * NSEC_PER_MSEC)
#define CONNECT_TIMEOUT_MS 5000

/* epoll_pwait2() for its nanosecond timeout; epoll_wait() on kernels before 5.11. */
static int wait_events(int epfd, struct epoll_event *ev, int max, uint64_t timeout_ns)
{
	static atomic_bool no_pwait2;
	int n;

	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		struct timespec ts = { .tv_sec = (time_t)(timeout_ns / NSEC_PER_SEC),
				       .tv_nsec = (long)(timeout_ns % NSEC_PER_SEC) };

		n = epoll_pwait2(epfd, ev, max, &ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n < 0 ? 0 : n;
		atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
	}
	n = epoll_wait(epfd, ev, max, (int)((timeout_ns + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC));
	return n < 0 ? 0 : n;
}

static int worker_setup(struct worker *wk)
{
	struct run_ctl *ctl = wk->ctl;
	char why[RESP_READER_ERR_MAX + 1] = "";
	int err;

	wk->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (wk->epfd < 0) {
		err = -errno;
		snprintf(wk->st.first_error, sizeof(wk->st.first_error), "epoll: %s",
			 strerror(errno));
		return err;
	}
	wk->conns = calloc(ctl->o->conns, sizeof(*wk->conns));
	if (!wk->conns)
		return -ENOMEM;
	for (unsigned i = 0; i < ctl->o->conns; i++) {
		unsigned g = wk->id * ctl->o->conns + i;

		wk->nconns++;
		err = conn_open(&wk->conns[i], ctl->o->transport, &ctl->o->topts,
				(struct sockaddr *)&ctl->addr, ctl->addrlen, CONNECT_TIMEOUT_MS,
				ctl->o->resp, ctl->step->pipeline, ctl->w, g, ctl->total_conns,
				wk->epfd, why, sizeof(why));
		if (err) {
			snprintf(wk->st.first_error, sizeof(wk->st.first_error), "%s", why);
			return err;
		}
	}
	return 0;
}

static void worker_teardown(struct worker *wk)
{
	for (unsigned i = 0; i < wk->nconns; i++)
		conn_close(&wk->conns[i]);
	free(wk->conns);
	wk->conns = NULL;
	if (wk->epfd >= 0)
		close(wk->epfd);
	wk->epfd = -1;
}

/* Gives each connection its share of the step: a timetable or a budget. */
static void worker_plan(struct worker *wk)
{
	const struct run_ctl *ctl = wk->ctl;
	const struct bench_step *step = ctl->step;
	const uint64_t total = ctl->total_conns;
	const uint64_t end = step->duration_ns ? ctl->start + step->duration_ns : SCHEDULE_NONE;
	const uint64_t limit = step->requests ? step->requests : SCHEDULE_NONE;

	for (unsigned i = 0; i < wk->nconns; i++) {
		struct conn *c = &wk->conns[i];
		uint64_t g = (uint64_t)wk->id * ctl->o->conns + i;

		if (step->rate)
			schedule_init(&c->sched, ctl->start, step->rate, (unsigned)g,
				      ctl->total_conns, end, limit);
		else if (step->requests)
			c->budget = step->requests / total + (g < step->requests % total);
	}
}

static void worker_loop(struct worker *wk)
{
	const struct run_ctl *ctl = wk->ctl;
	const struct bench_step *step = ctl->step;
	const bool open = step->rate != 0;
	uint64_t send_end = UINT64_MAX;
	struct epoll_event ev[MAX_EVENTS];
	bool sending = true;

	worker_plan(wk);
	if (step->duration_ns)
		send_end = ctl->start + step->duration_ns;
	if (open) {
		/* Overdue slots of the window still go out for a while after it. */
		uint64_t window = step->duration_ns;

		if (!window)
			window = (uint64_t)((unsigned __int128)step->requests * NSEC_PER_SEC /
					    step->rate);
		send_end = ctl->start + window + BENCH_BACKLOG_NS;
	}
	for (;;) {
		uint64_t now = clock_ns(), wake = now + MAX_WAIT_NS;
		bool more = false, busy = false;
		int n;

		if (atomic_load_explicit(&bench_stop, memory_order_relaxed) || now >= send_end)
			sending = false;
		for (unsigned i = 0; i < wk->nconns; i++) {
			struct conn *c = &wk->conns[i];

			if (c->dead)
				continue;
			if (sending && open) {
				uint64_t next;
				int err = 0;

				if (conn_fill_open(c, now))
					err = conn_flush(c, &wk->st);
				if (err) {
					conn_fail(c, &wk->st, err);
					continue;
				}
				next = schedule_next(&c->sched);
				if (next != SCHEDULE_NONE) {
					more = true;
					if (c->inflight < c->window && next < wake)
						wake = next;
				}
			} else if (sending && c->budget) {
				more = true;
				if (!c->inflight && conn_fill_closed(c, now)) {
					int err = conn_flush(c, &wk->st);

					if (err) {
						conn_fail(c, &wk->st, err);
						continue;
					}
				}
			}
			if (c->inflight && c->t.ops->datagram) {
				/* Datagrams get lost: give up on those, not on the connection. */
				conn_expire(c, &wk->st, now);
				busy |= c->inflight != 0;
			} else if (c->inflight) {
				busy = true;
				if (now > c->wait_since &&
				    now - c->wait_since > CONN_REPLY_TIMEOUT_S * NSEC_PER_SEC)
					conn_fail(c, &wk->st, -ETIMEDOUT);
			}
		}
		if (!more)
			sending = false;
		if (!sending && !busy)
			break;
		if (sending && !open && send_end < wake)
			wake = send_end;
		n = wait_events(wk->epfd, ev, MAX_EVENTS, wake > now ? wake - now : 0);
		for (int k = 0; k < n; k++) {
			struct conn *c = ev[k].data.ptr;
			int err = 0;

			if (c->dead)
				continue;
			if (ev[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				err = conn_read(c, &wk->st);
			if (!err && (ev[k].events & EPOLLOUT))
				err = conn_flush(c, &wk->st);
			if (!err && sending && !open && c->budget) {
				uint64_t t = clock_ns();

				if (t < send_end && conn_fill_closed(c, t))
					err = conn_flush(c, &wk->st);
			}
			if (err)
				conn_fail(c, &wk->st, err);
		}
	}
	wk->end = clock_ns();
	for (unsigned i = 0; open && i < wk->nconns; i++)
		wk->unsent += schedule_left(&wk->conns[i].sched);
}

void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct run_ctl *ctl = wk->ctl;

	/* Timer wake-ups on time, not up to 50 us late: this thread keeps a timetable. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	wk->setup_err = worker_setup(wk);
	if (wk->setup_err)
		atomic_store(&ctl->abort, true);
	pthread_barrier_wait(&ctl->ready);
	pthread_barrier_wait(&ctl->go);
	if (!atomic_load(&ctl->abort))
		worker_loop(wk);
	worker_teardown(wk);
	atomic_store_explicit(&wk->finished, true, memory_order_release);
	return NULL;
}
