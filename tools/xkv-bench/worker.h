/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * worker: one load thread. It owns its connections, its epoll instance and
 * its conn_stats; nothing of it is shared but the run_ctl it reads and the
 * live counters the progress line reads.
 *
 * Start-up handshake with the runner (bench.c), so that every thread starts
 * on the same timetable: each worker connects, then waits on `ready`; the
 * runner, once past `ready` itself, writes `start` (or sets `abort` if a
 * worker failed to connect) and waits on `go`, which publishes it. Workers
 * past `go` read `start` and `abort` and never write them.
 */
#ifndef XKV_BENCH_WORKER_H
#define XKV_BENCH_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "bench.h"
#include "conn.h"

struct run_ctl {
	const struct bench_opts *o;
	const struct workload *w;
	const struct bench_step *step;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	unsigned total_conns;
	pthread_barrier_t ready, go;
	uint64_t start;	   /* written by the runner before `go` */
	atomic_bool abort; /* a worker could not connect: nobody runs */
};

struct worker {
	pthread_t thread;
	unsigned id;
	struct run_ctl *ctl;
	struct conn *conns; /* owned */
	unsigned nconns;
	int epfd;
	/* Datagram transports: the socket its connections share; fd -1 otherwise. */
	struct transport_group group;
	bool group_out;	 /* EPOLLOUT is armed on the group: its queue is waiting for room */
	int setup_err;	 /* -errno from connecting, reason in st.first_error */
	uint64_t unsent; /* open loop: slots left at the end */
	uint64_t end;	 /* ns: when the loop ended */
	struct conn_stats st;
	atomic_bool finished; /* release: st is final */
};

/* The thread function; arg is the struct worker. */
void *worker_main(void *arg);

#endif /* XKV_BENCH_WORKER_H */
