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
 *
 * Over a datagram transport the connections' requests only queue in the
 * thread's transport_group until the turn's last step, one flush before the
 * wait, and the group's socket is the one descriptor in the epoll set for
 * all of them: a turn costs a sendmmsg(), an epoll wait and a recvmmsg()
 * however many connections had something to send or receive.
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

/* Opens the datagram group and puts its socket in the epoll set. 0 or -errno. */
static int worker_group_open(struct worker *wk)
{
	const struct run_ctl *ctl = wk->ctl;
	const struct transport_ops *ops = ctl->o->transport;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &wk->group };
	char *why = wk->st.first_error;
	const size_t whylen = sizeof(wk->st.first_error);
	int err;

	err = ops->group_open(&wk->group, (const struct sockaddr *)&ctl->addr, ctl->addrlen,
			      &ctl->o->topts, CONNECT_TIMEOUT_MS);
	/* It "connects" by asking PING: say what its failures mean. */
	if (err == -EACCES)
		snprintf(why, whylen,
			 "the server requires AUTH over UDP: pass its "
			 "fastpath-token with --udp-token");
	else if (err == -ETIMEDOUT)
		snprintf(why, whylen, "no reply to PING over UDP");
	else if (err)
		snprintf(why, whylen, "connect: %s", strerror(-err));
	if (err)
		return err;
	if (epoll_ctl(wk->epfd, EPOLL_CTL_ADD, wk->group.fd, &ev)) {
		err = -errno;
		snprintf(why, whylen, "epoll: %s", strerror(errno));
		return err;
	}
	return 0;
}

static int worker_setup(struct worker *wk)
{
	struct run_ctl *ctl = wk->ctl;
	char why[RESP_READER_ERR_MAX + 1] = "";
	int err;

	wk->group.fd = -1;
	wk->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (wk->epfd < 0) {
		err = -errno;
		snprintf(wk->st.first_error, sizeof(wk->st.first_error), "epoll: %s",
			 strerror(errno));
		return err;
	}
	if (ctl->o->transport->group_open) {
		err = worker_group_open(wk);
		if (err)
			return err;
	}
	wk->conns = calloc(ctl->o->conns, sizeof(*wk->conns));
	if (!wk->conns)
		return -ENOMEM;
	for (unsigned i = 0; i < ctl->o->conns; i++) {
		unsigned g = wk->id * ctl->o->conns + i;

		wk->nconns++;
		err = conn_open(&wk->conns[i], ctl->o->transport, &ctl->o->topts, &wk->group,
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
	if (wk->group.ops)
		wk->group.ops->group_close(&wk->group);
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

/* The group's socket broke: every connection on it goes with it. */
static void worker_group_fail(struct worker *wk, int err)
{
	for (unsigned i = 0; i < wk->nconns; i++)
		conn_fail(&wk->conns[i], &wk->st, err);
}

/* Arms or disarms EPOLLOUT on the group's socket. */
static void worker_group_want_write(struct worker *wk, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = &wk->group };

	if (wk->group_out == on)
		return;
	wk->group_out = on;
	if (epoll_ctl(wk->epfd, EPOLL_CTL_MOD, wk->group.fd, &ev))
		worker_group_fail(wk, -errno);
}

/* Sends what the connections queued this turn. */
static void worker_group_flush(struct worker *wk)
{
	int err = wk->group.ops->group_flush(&wk->group);

	if (err && err != -EAGAIN)
		worker_group_fail(wk, err);
	else
		worker_group_want_write(wk, err == -EAGAIN);
}

/*
 * Closed loop: tops connection c up after its replies, until send_end.
 * Returns false if it failed.
 */
static bool worker_refill(struct worker *wk, struct conn *c, uint64_t send_end)
{
	uint64_t t = clock_ns();
	int err = 0;

	if (t < send_end && conn_fill_closed(c, t))
		err = conn_flush(c, &wk->st);
	if (err)
		conn_fail(c, &wk->st, err);
	return !err;
}

/* An event on the group's socket: replies for any of the connections, or room to send. */
static void worker_group_event(struct worker *wk, uint32_t events, bool refill, uint64_t send_end)
{
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		int err = conn_read_group(&wk->group, &wk->st);

		if (err) {
			worker_group_fail(wk, err);
			return;
		}
	}
	for (unsigned i = 0; refill && i < wk->nconns; i++) {
		struct conn *c = &wk->conns[i];

		if (!c->dead && c->budget)
			worker_refill(wk, c, send_end);
	}
	/* EPOLLOUT: the flush before the next wait sends the rest. */
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
		if (wk->group.fd >= 0)
			worker_group_flush(wk);
		n = wait_events(wk->epfd, ev, MAX_EVENTS, wake > now ? wake - now : 0);
		for (int k = 0; k < n; k++) {
			struct conn *c = ev[k].data.ptr;
			int err = 0;

			if (ev[k].data.ptr == &wk->group) {
				worker_group_event(wk, ev[k].events, sending && !open, send_end);
				continue;
			}
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
