/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn: one connection of a worker thread. It builds requests from the
 * workload into its output buffer, remembers the start time of each request
 * in flight (a ring of `window` timestamps, oldest first), and on input
 * counts complete replies with its resp_reader, pairing them with the
 * timestamps in order to record their latencies.
 *
 * A start time is the moment the request was written (closed loop) or its
 * slot on the timetable (open loop); the caller passes it to conn_issue().
 *
 * Over a datagram transport (UDP) every reply says which request in flight it
 * answers, so a reply that overtakes an older one gets its own start time; a
 * request unanswered for CONN_DATAGRAM_TIMEOUT_MS is lost (conn_expire()) and
 * the connection carries on. Such a connection has no socket of its own: its
 * worker's transport_group sends what conn_flush() queued and hands replies
 * over in conn_read_group(); the connection is not in the epoll set itself.
 *
 * A conn and its conn_stats belong to one worker thread; only the live_*
 * counters are read by another thread (the progress line), with relaxed
 * atomics since they are only displayed.
 */
#ifndef XKV_BENCH_CONN_H
#define XKV_BENCH_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "hist.h"
#include "resp_reader.h"
#include "schedule.h"
#include "transport.h"
#include "workload.h"

/* A connection with requests in flight and nothing received for this long gives up. */
#define CONN_REPLY_TIMEOUT_S 5
/* A datagram request unanswered for this long is lost; its connection goes on. */
#define CONN_DATAGRAM_TIMEOUT_MS 1000

/* What a thread's connections record into; owned by the worker. */
struct conn_stats {
	struct hist hist;
	uint64_t requests, errors, lost, conn_errors, bytes_out, bytes_in;
	uint64_t kernel;     /* datagram replies the kernel answered (XKV_F_KERNEL) */
	uint64_t last_reply; /* ns; 0 before the first */
	char first_error[RESP_READER_ERR_MAX + 1];
	/* Written by the worker, read by the progress line. */
	_Atomic uint64_t live_requests, live_errors;
};

struct conn {
	struct transport t;
	struct resp_reader rd;
	const struct workload *w;
	int epfd;
	bool want_write; /* EPOLLOUT is armed */
	bool dead;
	char *in, *out; /* owned */
	size_t in_pos, in_len, in_cap;
	size_t out_pos, out_len, out_cap;
	uint64_t *ts; /* owned: start times of the requests in flight */
	unsigned ts_head, inflight, window;
	uint64_t wait_since; /* ns: last reply bytes, or the send into an idle window */
	struct keygen keys;
	uint64_t seq;	       /* requests built, which picks the command of a ratio */
	uint64_t budget;       /* closed loop: requests left to send */
	struct schedule sched; /* open loop */
};

/*
 * Connects (blocking for at most timeout_ms), says HELLO 3 if resp is 3,
 * and adds the socket to epfd with data.ptr = c; over a datagram transport
 * it joins `group` (open, owned by the caller) instead. Connection `index`
 * of `nconns` seeds its key generator. 0, or -errno with a message in why.
 * Release with conn_close() whatever it returned.
 */
int conn_open(struct conn *c, const struct transport_ops *ops, const struct transport_opts *topts,
	      struct transport_group *group, const struct sockaddr *addr, socklen_t addrlen,
	      int timeout_ms, unsigned resp, unsigned window, const struct workload *w,
	      unsigned index, unsigned nconns, int epfd, char *why, size_t whylen);
void conn_close(struct conn *c);

/* Builds one request with start time `start` into the output buffer. The window must have room. */
void conn_issue(struct conn *c, uint64_t start, uint64_t now);
/* Closed loop: tops the window up from the budget. Returns requests built. */
unsigned conn_fill_closed(struct conn *c, uint64_t now);
/* Open loop: builds every due slot the window has room for. Returns requests built. */
unsigned conn_fill_open(struct conn *c, uint64_t now);
/* Sends what it can, arming EPOLLOUT for the rest; counts bytes in st if given. 0 or -errno. */
int conn_flush(struct conn *c, struct conn_stats *st);
/*
 * Stream transports: reads what arrived and records the replies. 0 or -errno
 * (-ECONNRESET: closed, -EPROTO).
 */
int conn_read(struct conn *c, struct conn_stats *st);
/*
 * Datagram transports: receives what arrived on the group and records each
 * reply on its connection (a connection that gets a reply it cannot count
 * fails alone). 0, or -errno from the socket, which concerns them all.
 */
int conn_read_group(struct transport_group *g, struct conn_stats *st);
/*
 * The connection broke (err) or timed out (-ETIMEDOUT): closes it, counts
 * its requests in flight as lost and keeps the first reason in st.
 */
void conn_fail(struct conn *c, struct conn_stats *st, int err);
/*
 * Datagram transports: counts the requests sent more than
 * CONN_DATAGRAM_TIMEOUT_MS before `now` as lost and frees their places in
 * the window.
 */
void conn_expire(struct conn *c, struct conn_stats *st, uint64_t now);

#endif /* XKV_BENCH_CONN_H */
