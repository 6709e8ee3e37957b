// SPDX-License-Identifier: BSD-3-Clause
/*
 * A worker's connection (conn.h): request building, the ring of start times
 * and the read path that turns replies into latencies.
 */
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "clock.h"
#include "conn.h"

/* Room the input buffer keeps free for a read. */
#define IN_ROOM 16384
/* A single reply line longer than this is not something a server sends. */
#define IN_MAX (64U << 20)
/* The output buffer starts no larger than this (or two requests). */
#define OUT_INITIAL_MAX (1U << 20)
/* Reads per readiness event before the other connections get a turn. */
#define READS_PER_EVENT 8

/* A benchmark that cannot allocate cannot measure anything: stop. */
static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "xkv-bench: out of memory\n");
		abort();
	}
	return p;
}

static void keep_first(char *dst, const char *msg)
{
	if (!dst[0])
		snprintf(dst, RESP_READER_ERR_MAX + 1, "%s", msg);
}

static int want_write(struct conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	if (c->want_write == on || c->epfd < 0)
		return 0;
	c->want_write = on;
	return epoll_ctl(c->epfd, EPOLL_CTL_MOD, c->t.fd, &ev) ? -errno : 0;
}

/* Makes room for n more output bytes. */
static void out_reserve(struct conn *c, size_t n)
{
	if (c->out_cap - c->out_len >= n)
		return;
	if (c->out_pos) {
		memmove(c->out, c->out + c->out_pos, c->out_len - c->out_pos);
		c->out_len -= c->out_pos;
		c->out_pos = 0;
		if (c->out_cap - c->out_len >= n)
			return;
	}
	c->out_cap = c->out_cap * 2 > c->out_len + n ? c->out_cap * 2 : c->out_len + n;
	c->out = xrealloc(c->out, c->out_cap);
}

/* Makes room for a read; -EPROTO if a line will not fit in IN_MAX. */
static int in_reserve(struct conn *c)
{
	if (c->in_pos == c->in_len) {
		c->in_pos = 0;
		c->in_len = 0;
	}
	if (c->in_cap - c->in_len >= IN_ROOM)
		return 0;
	if (c->in_pos) {
		memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
		c->in_len -= c->in_pos;
		c->in_pos = 0;
		if (c->in_cap - c->in_len >= IN_ROOM)
			return 0;
	}
	if (c->in_cap >= IN_MAX)
		return -EPROTO;
	c->in_cap *= 2;
	c->in = xrealloc(c->in, c->in_cap);
	return 0;
}

/* HELLO 3 before the step starts: its reply must not count as one. */
static int conn_hello(struct conn *c, int timeout_ms, char *why, size_t whylen)
{
	static const char hello[] = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
	struct pollfd pfd = { .fd = c->t.fd };
	int err = 0;

	out_reserve(c, sizeof(hello) - 1);
	memcpy(c->out + c->out_len, hello, sizeof(hello) - 1);
	c->out_len += sizeof(hello) - 1;
	while (!err && !c->rd.replies) {
		pfd.events = c->out_len > c->out_pos ? POLLOUT : POLLIN;
		if (poll(&pfd, 1, timeout_ms) <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		if (pfd.events == POLLOUT) {
			err = conn_flush(c, NULL);
			continue;
		}
		/* Not counted as a request: read by hand, not with conn_read(). */
		err = in_reserve(c);
		if (!err) {
			ssize_t n = c->t.ops->recv(&c->t, c->in + c->in_len, c->in_cap - c->in_len);

			if (n == 0)
				err = -ECONNRESET;
			else if (n < 0 && n != -EAGAIN)
				err = (int)n;
			else if (n > 0)
				c->in_len += (size_t)n;
		}
		if (!err) {
			ssize_t used =
				resp_reader_feed(&c->rd, c->in + c->in_pos, c->in_len - c->in_pos);

			if (used < 0)
				err = -EPROTO;
			else
				c->in_pos += (size_t)used;
		}
	}
	if (!err && c->rd.errors) {
		snprintf(why, whylen, "HELLO 3: %s", c->rd.first_error);
		err = -EPROTO;
	} else if (err) {
		snprintf(why, whylen, "HELLO 3: %s", strerror(-err));
	}
	resp_reader_init(&c->rd);
	c->in_pos = 0;
	c->in_len = 0;
	return err;
}

int conn_open(struct conn *c, const struct transport_ops *ops, const struct transport_opts *topts,
	      struct transport_group *group, const struct sockaddr *addr, socklen_t addrlen,
	      int timeout_ms, unsigned resp, unsigned window, const struct workload *w,
	      unsigned index, unsigned nconns, int epfd, char *why, size_t whylen)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int err;

	memset(c, 0, sizeof(*c));
	c->t.ops = ops;
	c->t.fd = -1;
	c->t.group = ops->datagram ? group : NULL;
	c->epfd = -1;
	c->w = w;
	c->window = window;
	c->budget = UINT64_MAX;
	resp_reader_init(&c->rd);
	keygen_init(&c->keys, w, index, nconns);
	c->in_cap = 4 * IN_ROOM;
	c->in = xrealloc(NULL, c->in_cap);
	/* A window's worth of requests, but grown on demand past 1 MiB. */
	c->out_cap = 4096 + (size_t)window * w->max_len;
	if (c->out_cap > OUT_INITIAL_MAX)
		c->out_cap = OUT_INITIAL_MAX > 2 * w->max_len ? OUT_INITIAL_MAX : 2 * w->max_len;
	c->out = xrealloc(NULL, c->out_cap);
	c->ts = xrealloc(NULL, (size_t)window * sizeof(*c->ts));

	err = ops->open(&c->t, addr, addrlen, topts, timeout_ms);
	if (err) {
		snprintf(why, whylen, "connect: %s", strerror(-err));
		return err;
	}
	/* The group's socket is in the epoll set once, for all its connections. */
	if (ops->datagram)
		return 0;
	if (resp == 3) {
		err = conn_hello(c, timeout_ms, why, whylen);
		if (err)
			return err;
	}
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->t.fd, &ev)) {
		err = -errno;
		snprintf(why, whylen, "epoll: %s", strerror(errno));
		return err;
	}
	c->epfd = epfd;
	return 0;
}

void conn_close(struct conn *c)
{
	if (c->t.fd >= 0) {
		if (c->epfd >= 0)
			epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->t.fd, NULL);
		c->t.ops->close(&c->t);
	}
	free(c->in);
	free(c->out);
	free(c->ts);
	c->in = NULL;
	c->out = NULL;
	c->ts = NULL;
}

void conn_issue(struct conn *c, uint64_t start, uint64_t now)
{
	const struct workload *w = c->w;
	unsigned which = workload_pick(w, c->seq++);
	uint64_t key = keygen_next(&c->keys);

	out_reserve(c, w->max_len);
	c->out_len += workload_encode(w, which, key, c->out + c->out_len);
	if (!c->inflight)
		c->wait_since = now;
	c->ts[(c->ts_head + c->inflight) % c->window] = start;
	c->inflight++;
}

unsigned conn_fill_closed(struct conn *c, uint64_t now)
{
	unsigned n = 0;

	while (c->inflight < c->window && c->budget) {
		conn_issue(c, now, now);
		c->budget--;
		n++;
	}
	return n;
}

unsigned conn_fill_open(struct conn *c, uint64_t now)
{
	unsigned n = 0;
	uint64_t when;

	while (c->inflight < c->window && schedule_take(&c->sched, now, &when)) {
		conn_issue(c, when, now);
		n++;
	}
	return n;
}

int conn_flush(struct conn *c, struct conn_stats *st)
{
	while (c->out_pos < c->out_len) {
		ssize_t n = c->t.ops->send(&c->t, c->out + c->out_pos, c->out_len - c->out_pos);

		if (n == -EAGAIN)
			return want_write(c, true);
		if (n < 0)
			return (int)n;
		c->out_pos += (size_t)n;
		if (st)
			st->bytes_out += (uint64_t)n;
	}
	c->out_pos = 0;
	c->out_len = 0;
	return want_write(c, false);
}

/* got replies arrived at `now`: the oldest got start times are theirs. */
static void record(struct conn *c, struct conn_stats *st, uint64_t got, uint64_t now)
{
	for (uint64_t i = 0; i < got; i++) {
		uint64_t start = c->ts[c->ts_head];

		c->ts_head = (c->ts_head + 1) % c->window;
		hist_record(&st->hist, now > start ? now - start : 0);
	}
	c->inflight -= (unsigned)got;
	st->requests += got;
	st->last_reply = now;
	atomic_fetch_add_explicit(&st->live_requests, got, memory_order_relaxed);
}

/*
 * A datagram reply at `now` to the index-th request in flight: its start
 * time leaves the ring, the older ones move up one place.
 */
static void record_at(struct conn *c, struct conn_stats *st, unsigned index, uint64_t now)
{
	uint64_t start = c->ts[(c->ts_head + index) % c->window];

	for (unsigned j = index; j > 0; j--)
		c->ts[(c->ts_head + j) % c->window] = c->ts[(c->ts_head + j - 1) % c->window];
	c->ts_head = (c->ts_head + 1) % c->window;
	c->inflight--;
	hist_record(&st->hist, now > start ? now - start : 0);
	st->requests++;
	st->last_reply = now;
	atomic_fetch_add_explicit(&st->live_requests, 1, memory_order_relaxed);
}

/* One datagram reply the group hands over (transport_reply_fn); arg is the conn_stats. */
static void conn_on_datagram(struct transport *t, const char *buf, ssize_t len, void *arg)
{
	struct conn *c = (struct conn *)((char *)t - offsetof(struct conn, t));
	struct conn_stats *st = arg;
	uint64_t replies = c->rd.replies, errors = c->rd.errors;
	ssize_t used;

	if (c->dead)
		return;
	if (len < 0) {
		conn_fail(c, st, (int)len);
		return;
	}
	c->wait_since = t->reply.at;
	st->bytes_in += (uint64_t)len;
	/* Every datagram is parsed whole: the reader holds nothing between them. */
	used = resp_reader_feed(&c->rd, buf, (size_t)len);
	/* Exactly one reply, to a request in flight. */
	if (used != len || c->rd.replies - replies != 1 || t->reply.index >= c->inflight) {
		conn_fail(c, st, -EPROTO);
		return;
	}
	record_at(c, st, t->reply.index, t->reply.at);
	if (t->reply.kernel)
		st->kernel++;
	errors = c->rd.errors - errors;
	if (errors) {
		st->errors += errors;
		keep_first(st->first_error, c->rd.first_error);
		atomic_fetch_add_explicit(&st->live_errors, errors, memory_order_relaxed);
	}
}

int conn_read_group(struct transport_group *g, struct conn_stats *st)
{
	return g->ops->group_drain(g, conn_on_datagram, st);
}

int conn_read(struct conn *c, struct conn_stats *st)
{
	for (int i = 0; i < READS_PER_EVENT; i++) {
		uint64_t replies = c->rd.replies, errors = c->rd.errors, now;
		ssize_t n, used;
		size_t room;
		int err = in_reserve(c);

		if (err)
			return err;
		room = c->in_cap - c->in_len;
		n = c->t.ops->recv(&c->t, c->in + c->in_len, room);
		if (n == -EAGAIN)
			return 0;
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return (int)n;
		now = clock_ns();
		c->in_len += (size_t)n;
		c->wait_since = now;
		st->bytes_in += (uint64_t)n;
		used = resp_reader_feed(&c->rd, c->in + c->in_pos, c->in_len - c->in_pos);
		if (used < 0)
			return -EPROTO;
		c->in_pos += (size_t)used;
		replies = c->rd.replies - replies;
		errors = c->rd.errors - errors;
		/* A reply to nothing: the counts are off, every latency would be. */
		if (replies > c->inflight)
			return -EPROTO;
		if (replies)
			record(c, st, replies, now);
		if (errors) {
			st->errors += errors;
			keep_first(st->first_error, c->rd.first_error);
			atomic_fetch_add_explicit(&st->live_errors, errors, memory_order_relaxed);
		}
		if ((size_t)n < room)
			return 0;
	}
	return 0;
}

void conn_fail(struct conn *c, struct conn_stats *st, int err)
{
	char msg[RESP_READER_ERR_MAX + 1];

	if (c->dead)
		return;
	if (err == -ECONNRESET || err == -EPIPE)
		snprintf(msg, sizeof(msg), "connection closed by the server");
	else if (err == -EPROTO)
		snprintf(msg, sizeof(msg),
			 "protocol error: a reply is not valid RESP or answers nothing");
	else if (err == -ETIMEDOUT)
		snprintf(msg, sizeof(msg), "no reply for %d s", CONN_REPLY_TIMEOUT_S);
	else
		snprintf(msg, sizeof(msg), "connection: %s", strerror(-err));
	keep_first(st->first_error, msg);
	st->conn_errors++;
	st->lost += c->inflight;
	c->inflight = 0;
	c->dead = true;
	if (c->t.fd >= 0) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->t.fd, NULL);
		c->t.ops->close(&c->t);
	}
}

void conn_expire(struct conn *c, struct conn_stats *st, uint64_t now)
{
	const uint64_t timeout = CONN_DATAGRAM_TIMEOUT_MS * NSEC_PER_MSEC;
	unsigned n;

	if (c->dead || now < timeout)
		return;
	n = c->t.ops->expire(&c->t, now - timeout);
	if (!n)
		return;
	/* The transport forgot the oldest n: so do the start times. */
	c->ts_head = (c->ts_head + n) % c->window;
	c->inflight -= n;
	st->lost += n;
	keep_first(st->first_error, "no reply to a datagram within 1 s: lost");
}
