/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * worker: the server's threads. Each worker owns a network engine instance
 * (an io_uring ring or an epoll set), its own SO_REUSEPORT listeners, and the
 * clients the kernel hands it, for their whole life. A command runs to
 * completion on its client's worker.
 *
 * Cross-thread requests (CLIENT KILL of another worker's client, pub/sub
 * delivery, shutdown) go through the target worker's mailbox: a mutex-protected message list plus
 * an eventfd that wakes its engine. Nothing else of a worker is touched by
 * another thread; its statistics are atomics read by INFO.
 *
 * Statistics. The counters that commands bump (INFO stats, commandstats,
 * latencystats) are kept per worker and summed when read, so that no command
 * writes a cache line that another worker writes too. A worker adds to its
 * own with stat_add() (util.h), a relaxed load and store. So CONFIG RESETSTAT
 * writes none of them: a zero it stored could be overwritten by the worker
 * storing a sum it had loaded just before. It records the current sums as a
 * base instead, which readings subtract (server_counters_sum/_rebase).
 */
#ifndef XKV_WORKER_H
#define XKV_WORKER_H

#include <pthread.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

struct client;
struct command_stats;
struct histogram;
struct worker;

/* Listening sockets per worker: up to 16 bind addresses and the Unix socket. */
#define WORKER_MAX_LISTEN 17

/* A network engine: how one worker waits for and moves bytes. */
struct net_engine {
	const char *name;
	/* Sets the engine up on w (listeners are open); 0 or -errno. */
	int (*init)(struct worker *w);
	/* Serves until the server shuts down; then closes every client. */
	void (*run)(struct worker *w);
	void (*destroy)(struct worker *w);
	/* c has new replies outside of its own input handling. */
	void (*wants_write)(struct client *c);
	/* Close c now (killed, timed out): its replies are dropped. */
	void (*close_client)(struct client *c);
	/* Serves fd, a connection the server opened (a replica's link to its
	 * master), as a client of w (w's thread); NULL if it cannot (fd closed). */
	struct client *(*adopt)(struct worker *w, int fd);
	/* One turn without waiting, from inside a command that runs long (a
	 * busy script): the other clients are served (BUSY), the input of a
	 * CLIENT_PROTECTED client waits, and nothing is freed. */
	void (*poll_nested)(struct worker *w);
};

extern const struct net_engine net_engine_uring;
extern const struct net_engine net_engine_epoll;
/* The io_uring engine's receive buffers over all workers, a part of
 * used_memory that INFO memory shows (net_uring.c); 0 under epoll. */
size_t net_buffer_pool_bytes(void);

/*
 * A cross-worker message carries its own handling, defined by the module
 * that posts it (a publication, a served waiter's answer, a MONITOR line, a
 * CLIENT KILL, an UNPAUSE): deliver runs on the target worker's thread when
 * it drains its mailbox; drop frees the payload of a message that is never
 * delivered (the worker stopped first), or is NULL if there is nothing to
 * free. The mailbox knows no kinds.
 */
struct mail_ops {
	void (*deliver)(struct worker *w, uint64_t client_id, void *payload);
	void (*drop)(void *payload);
};

struct mail {
	struct mail *next;
	const struct mail_ops *ops;
	uint64_t client_id;
	void *payload; /* owned by the mail until delivered or dropped */
};

/* Closes client_id on the worker that owns it (CLIENT KILL, output limits). */
extern const struct mail_ops worker_mail_kill;

/* A worker's INFO stats counters: this worker adds to them (stat_add), INFO
 * reads them with relaxed loads, through server_stat(). */
struct worker_stats {
	uint64_t commands, net_in, net_out, connections, rejected;
	struct store_reads reads; /* keyspace hits and misses, counted by store.c */
	/* Error replies. The exception: another worker may add one for one of
	 * this worker's blocked clients, serving it or CLIENT UNBLOCK ERROR
	 * (blocking.c), so this one takes a locked add, on error replies only. */
	uint64_t errors;
	/* Reads and writes done for clients; clients closed at their query or
	 * output buffer limit (an output limit may be hit on another worker's
	 * behalf, as errors are: a locked add). */
	uint64_t read_calls, write_calls, qbuf_limit_closes, obuf_limit_closes;
	/* Adaptive reply buffers shrunk and grown (client_resize_reply_buffer). */
	uint64_t rbuf_shrinks, rbuf_expands;
};

struct worker {
	unsigned id;
	pthread_t thread;
	int listen_fds[WORKER_MAX_LISTEN]; /* bind addresses, then the Unix socket (shared) */
	int nlisten;
	int udp_fds[16]; /* the UDP protocol's sockets (udp.c) */
	int nudp;
	void *udp_buffers; /* udp.c's, from the first datagram on; this worker's thread only */
	int wake_fd;	   /* eventfd */
	const struct net_engine *engine;
	void *engine_data;

	struct client *clients;	   /* owned, doubly linked */
	struct dict clients_by_id; /* the same, by id (this worker's thread only) */
	/* Of them, blocked in BLPOP & co., or waiting for the background
	 * pool (CLIENT_JOB_WAIT). */
	unsigned nblocked;
	/* Of them, held by CLIENT PAUSE, oldest first (pause.c). */
	struct client *held_head, *held_tail;
	unsigned nheld;
	/* Its error count when it last accounted a call (its thread only): a
	 * script's nested calls own the errors before it, as in Redis. */
	uint64_t errors_mark;
	/* The call under way replied an error counted already (a script's
	 * redis.call error): it failed all the same. Its thread only. */
	bool call_failed;
	/* Of them, in MONITOR mode (monitor.c); nmonitors is read by feeders
	 * on every worker (relaxed atomic). */
	struct client *monitors;
	unsigned nmonitors;

	pthread_mutex_t mail_lock;
	struct mail *mail_head, *mail_tail;

	int64_t next_cron_ms;
	/* The AOF position its held replies wait for (aof_target_wait), 0 for
	 * none: stored by this worker, cleared by the AOF thread as it wakes it. */
	uint64_t aof_wait;

	/* Per command, by struct command.index, written by this worker only
	 * (stat_add) and read by INFO from any thread: INFO commandstats'
	 * counts, and latency.c's histograms, each published (release) when its
	 * command first runs here. Allocated before the worker starts. */
	struct command_stats *cmd_stats;
	struct histogram **cmd_hists;
	uint64_t cmd_hists_gen; /* the reset its cron last swept after (latency.c) */
	/* This thread's CPU time, from its cron (relaxed; read by INFO). */
	uint64_t cpu_sys_us, cpu_user_us;

	/* Last, and aligned: so what other threads write (the mailbox lock
	 * above, the next worker's fields) never shares their cache line. */
	struct worker_stats stats __attribute__((aligned(64)));
};

struct server {
	unsigned nworkers;
	struct worker *workers;
	const struct net_engine *engine;
	int64_t start_ms;
	uint64_t next_client_id; /* atomic */
	volatile int shutdown;	 /* set once; workers leave their loops */
	int shutdown_signal;
	char run_id[41];
	/* Commands and network bytes per second, sampled by worker 0's cron. */
	struct rate_sampler {
		uint64_t samples[16]; /* a ring of per-second rates */
		unsigned idx;
		uint64_t last_total;
		int64_t last_ms;
	} ops_rate, net_in_rate, net_out_rate;
	char executable[4096];
	int unix_fd; /* the Unix socket listener, in every worker's listen_fds; or -1 */
};

extern struct server server;

/* Opens listeners, starts the workers, waits for shutdown. 0 or -1. */
int server_run(void);
/* Asks every worker to stop (from any thread or a signal handler). */
void server_request_shutdown(void);

/* One worker_stats counter since start or CONFIG RESETSTAT, summed over the
 * workers (e.g. offsetof(struct worker_stats, commands)). */
uint64_t server_stat(size_t offset);
/* Commands per second over the last samples. */
uint64_t server_ops_per_sec(void);
/* Network bytes per second received and sent (INFO's instantaneous_*_kbps). */
uint64_t server_net_in_per_sec(void);
uint64_t server_net_out_per_sec(void);
/* CPU time of the worker threads (which run the commands), sampled by each
 * at its cron: INFO's used_cpu_*_main_thread. Microseconds. */
void server_workers_cpu(uint64_t *sys_us, uint64_t *user_us);
/* CONFIG RESETSTAT of the worker_stats counters. */
void server_reset_stats(void);

/*
 * Counters that each worker keeps a copy of (see Statistics above). fn
 * returns worker w's copy of the n counters that arg names, or NULL if w has
 * none yet. server_counters_sum sets out[i] to counter i summed over the
 * workers, less base[i] if base is not NULL; server_counters_rebase makes the
 * current sums the base (scratch: room for n counters). Safe from any thread
 * while the workers count; a reading never comes out below its base.
 */
typedef const uint64_t *counters_fn(const struct worker *w, const void *arg);
void server_counters_sum(counters_fn *fn, const void *arg, const uint64_t *base, uint64_t *out,
			 size_t n);
void server_counters_rebase(counters_fn *fn, const void *arg, uint64_t *base, uint64_t *scratch,
			    size_t n);

/* For engines. */
struct client *worker_accept(struct worker *w, int fd);
/* The same for a connection the server opened: no limit or protected mode. */
struct client *worker_adopt(struct worker *w, int fd);
/* After the engine stored new bytes with client_read_done(): runs what is
 * complete. Returns false when the client is to be closed after flushing. */
bool worker_client_input(struct client *c, size_t nread);
void worker_client_sent(struct client *c, size_t n);
/* Unlinks and frees c; the engine has released its fd and buffers. */
void worker_client_free(struct client *c);
/* Periodic work (timeouts, active expiry): call when now >= next_cron_ms. */
void worker_cron(struct worker *w);
/* Milliseconds until the next cron, for the engine's wait. */
int worker_wait_ms(struct worker *w);
/* Handles every message in w's mailbox (after its eventfd fired). */
void worker_drain_mail(struct worker *w);
/* Makes w's engine run a turn soon (any thread). */
void worker_wake(struct worker *w);
/* The client of w with this id, or NULL (on w's own thread only). */
struct client *worker_find_client(struct worker *w, uint64_t id);
/* Posts a message to w and wakes it. */
/* Protected mode (no password set) refuses this peer: not loopback or a Unix socket. */
bool worker_protected_refuses(const struct sockaddr_storage *peer);
void worker_post(struct worker *w, const struct mail_ops *ops, uint64_t client_id);
/* The same with a payload for ops->deliver (or ops->drop if never delivered). */
void worker_post_payload(struct worker *w, const struct mail_ops *ops, uint64_t client_id,
			 void *payload);

#endif
