// SPDX-License-Identifier: BSD-3-Clause
/*
 * The server: listeners, worker threads, their periodic work and mailboxes,
 * and shutdown. The mailbox lock of each worker is a leaf lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <xxhash.h>

#include "acl_users.h"
#include "bgjob.h"
#include "blocking.h"
#include "client.h"
#include "commands.h"
#include "config.h"
#include "hotkeys.h"
#include "debug.h"
#include "defrag.h"
#include "latency.h"
#include "log.h"
#include "mem.h"
#include "fastpath.h"
#include "monitor.h"
#include "pause.h"
#include "persist.h"
#include "pubsub.h"
#include "repl.h"
#include "store.h"
#include "tracking.h"
#include "udp.h"
#include "util.h"
#include "worker.h"

struct server server;

void server_request_shutdown(void)
{
	server.shutdown = 1;
	for (unsigned i = 0; i < server.nworkers; i++) {
		uint64_t one = 1;

		if (server.workers[i].wake_fd >= 0 &&
		    write(server.workers[i].wake_fd, &one, sizeof(one)) < 0)
			continue;
	}
}

static uint64_t id_hash(uint64_t id)
{
	return XXH3_64bits(&id, sizeof(id));
}

static bool client_id_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct client *c =
		(const struct client *)((const char *)n - offsetof(struct client, id_node));

	(void)len;
	return c->id == *(const uint64_t *)key;
}

static const struct dict_type client_id_type = { .key_equal = client_id_equal };

struct client *worker_find_client(struct worker *w, uint64_t id)
{
	struct dict_node *n = dict_find(&w->clients_by_id, &id, sizeof(id), id_hash(id));

	return n ? (struct client *)((char *)n - offsetof(struct client, id_node)) : NULL;
}

static void kill_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct client *c = worker_find_client(w, client_id);

	(void)payload;
	if (c)
		w->engine->close_client(c);
}

const struct mail_ops worker_mail_kill = { .deliver = kill_deliver };

void worker_post(struct worker *w, const struct mail_ops *ops, uint64_t client_id)
{
	worker_post_payload(w, ops, client_id, NULL);
}

void worker_post_payload(struct worker *w, const struct mail_ops *ops, uint64_t client_id,
			 void *payload)
{
	struct mail *m = xmalloc(sizeof(*m));
	uint64_t one = 1;

	m->next = NULL;
	m->ops = ops;
	m->client_id = client_id;
	m->payload = payload;
	pthread_mutex_lock(&w->mail_lock);
	if (w->mail_tail)
		w->mail_tail->next = m;
	else
		w->mail_head = m;
	w->mail_tail = m;
	pthread_mutex_unlock(&w->mail_lock);
	if (write(w->wake_fd, &one, sizeof(one)) < 0)
		log_warning("Cannot wake worker %u: %s", w->id, strerror(errno));
}

void worker_wake(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->wake_fd, &one, sizeof(one)) < 0)
		log_warning("Cannot wake worker %u: %s", w->id, strerror(errno));
}

void worker_drain_mail(struct worker *w)
{
	struct mail *m;
	uint64_t count;

	if (read(w->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warning("Worker %u wake-up read: %s", w->id, strerror(errno));
	pthread_mutex_lock(&w->mail_lock);
	m = w->mail_head;
	w->mail_head = w->mail_tail = NULL;
	pthread_mutex_unlock(&w->mail_lock);
	while (m) {
		struct mail *next = m->next;

		m->ops->deliver(w, m->client_id, m->payload);
		xfree(m);
		m = next;
	}
}

/* Redis's protected mode lets in only these peers (exactly: not 127.0.0.2). */
static bool peer_is_local(const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN] = "";

	if (ss->ss_family == AF_UNIX)
		return true;
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof(ip));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof(ip));
	return !strcmp(ip, "127.0.0.1") || !strcmp(ip, "::1");
}

bool worker_protected_refuses(const struct sockaddr_storage *peer)
{
	if (!__atomic_load_n(&config.protected_mode, __ATOMIC_RELAXED))
		return false;
	/* As Redis: while the default user is nopass (no requirepass, and no
	 * ACL SETUSER default >pass). */
	return acl_default_nopass() && !peer_is_local(peer);
}

/* Refuses fd (Redis's message, then close) in protected mode; true if so. */
static bool protected_refuse(struct worker *w, int fd)
{
	static const char denied[] =
		"-DENIED Redis is running in protected mode because protected mode is enabled and "
		"no password is set for the default user. In this mode connections are only "
		"accepted from the loopback interface. If you want to connect from external "
		"computers to Redis you may adopt one of the following solutions: 1) Just disable "
		"protected mode sending the command 'CONFIG SET protected-mode no' from the "
		"loopback interface by connecting to Redis from the same host the server is "
		"running, however MAKE SURE Redis is not publicly accessible from internet if you "
		"do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can "
		"just disable the protected mode by editing the Redis configuration file, and "
		"setting the protected mode option to 'no', and then restarting the server. 3) If "
		"you started the server manually just for testing, restart it with the "
		"'--protected-mode no' option. 4) Setup a an authentication password for the "
		"default user. NOTE: You only need to do one of the above things in order for the "
		"server to start accepting connections from the outside.\r\n";
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);

	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0 || !worker_protected_refuses(&peer))
		return false;
	/* A fresh socket's buffer takes the whole line: one write, no wait. */
	if (write(fd, denied, sizeof(denied) - 1) < 0)
		log_verbose("Could not tell a refused client why");
	close(fd);
	stat_add(&w->stats.rejected, 1);
	return true;
}

struct client *worker_accept(struct worker *w, int fd)
{
	static const char too_many[] = "-ERR max number of clients reached\r\n";
	int one = 1, idle = (int)config.tcp_keepalive;
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);
	bool is_unix;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	is_unix = getsockname(fd, (struct sockaddr *)&ss, &slen) == 0 && ss.ss_family == AF_UNIX;
	if (!is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (idle > 0 && !is_unix) {
		int interval = idle / 3 ? idle / 3 : 1, count = 3;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
	}
	if (registry_count() >= (uint64_t)config.maxclients) {
		if (write(fd, too_many, sizeof(too_many) - 1) < 0)
			log_verbose("Could not tell a refused client why");
		close(fd);
		stat_add(&w->stats.rejected, 1);
		return NULL;
	}
	if (protected_refuse(w, fd))
		return NULL;
	return worker_adopt(w, fd);
}

struct client *worker_adopt(struct worker *w, int fd)
{
	struct client *c;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c = client_create(w, fd);
	c->next_in_worker = w->clients;
	if (w->clients)
		w->clients->prev_in_worker = c;
	w->clients = c;
	c->id_node.hash = id_hash(c->id);
	dict_insert(&w->clients_by_id, &c->id_node);
	stat_add(&w->stats.connections, 1);
	return c;
}

bool worker_client_input(struct client *c, size_t nread)
{
	client_read_done(c, nread);
	stat_add(&c->worker->stats.net_in, nread);
	stat_add(&c->worker->stats.read_calls, 1);
	return client_process_input(c);
}

void worker_client_sent(struct client *c, size_t n)
{
	client_reply_sent(c, n);
	stat_add(&c->worker->stats.net_out, n);
	stat_add(&c->worker->stats.write_calls, 1);
}

void worker_client_free(struct client *c)
{
	struct worker *w = c->worker;

	if (c->prev_in_worker)
		c->prev_in_worker->next_in_worker = c->next_in_worker;
	else
		w->clients = c->next_in_worker;
	if (c->next_in_worker)
		c->next_in_worker->prev_in_worker = c->prev_in_worker;
	dict_remove(&w->clients_by_id, &c->id_node);
	dict_maybe_shrink(&w->clients_by_id);
	client_free(c);
}

int worker_wait_ms(struct worker *w)
{
	int64_t left = w->next_cron_ms - mono_ms();

	/* Held clients resume at the pause's deadline, not at the next cron. */
	if (w->nheld && pause_ms_left() < left)
		left = pause_ms_left();

	return left < 0 ? 0 : (int)left;
}

/*
 * Why a reading never comes out below its base: a rebase loads the counters
 * before it stores their sums with release, and a reading loads the base with
 * acquire before it loads the counters. So a reading that sees a base also
 * sees every counter at least where that rebase saw it, and a counter only
 * grows (its one writer only adds).
 */
void server_counters_sum(counters_fn *fn, const void *arg, const uint64_t *base, uint64_t *out,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = base ? -__atomic_load_n(&base[i], __ATOMIC_ACQUIRE) : 0;
	for (unsigned w = 0; w < server.nworkers; w++) {
		const uint64_t *counters = fn(&server.workers[w], arg);

		for (size_t i = 0; counters && i < n; i++)
			out[i] += __atomic_load_n(&counters[i], __ATOMIC_RELAXED);
	}
}

void server_counters_rebase(counters_fn *fn, const void *arg, uint64_t *base, uint64_t *scratch,
			    size_t n)
{
	server_counters_sum(fn, arg, NULL, scratch, n);
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&base[i], scratch[i], __ATOMIC_RELEASE);
}

#define NSTATS (sizeof(struct worker_stats) / sizeof(uint64_t))

/* The worker_stats sums at the last CONFIG RESETSTAT, field by field. */
static uint64_t stats_base[NSTATS];

/* arg: a byte offset into struct worker_stats. */
static const uint64_t *stats_at(const struct worker *w, const void *arg)
{
	return (const uint64_t *)((const char *)&w->stats + *(const size_t *)arg);
}

uint64_t server_stat(size_t offset)
{
	uint64_t sum;

	server_counters_sum(stats_at, &offset, &stats_base[offset / sizeof(uint64_t)], &sum, 1);
	return sum;
}

void server_reset_stats(void)
{
	uint64_t scratch[NSTATS];
	size_t start = 0;

	server_counters_rebase(stats_at, &start, stats_base, scratch, NSTATS);
}

static void sample_rate(struct rate_sampler *r, uint64_t total, int64_t now)
{
	int64_t dt = now - r->last_ms;

	if (dt <= 0)
		return;
	r->samples[r->idx++ % 16] =
		total >= r->last_total ? (total - r->last_total) * 1000 / (uint64_t)dt : 0;
	r->last_total = total;
	r->last_ms = now;
}

static uint64_t rate_of(const struct rate_sampler *r)
{
	uint64_t sum = 0;

	for (int i = 0; i < 16; i++)
		sum += r->samples[i];
	return sum / 16;
}

static void sample_rates(int64_t now)
{
	sample_rate(&server.ops_rate, server_stat(offsetof(struct worker_stats, commands)), now);
	sample_rate(&server.net_in_rate, server_stat(offsetof(struct worker_stats, net_in)), now);
	sample_rate(&server.net_out_rate, server_stat(offsetof(struct worker_stats, net_out)), now);
}

uint64_t server_ops_per_sec(void)
{
	return rate_of(&server.ops_rate);
}

uint64_t server_net_in_per_sec(void)
{
	return rate_of(&server.net_in_rate);
}

uint64_t server_net_out_per_sec(void)
{
	return rate_of(&server.net_out_rate);
}

static void sample_cpu(struct worker *w)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) != 0)
		return;
	__atomic_store_n(&w->cpu_sys_us,
			 (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&w->cpu_user_us,
			 (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec,
			 __ATOMIC_RELAXED);
}

void server_workers_cpu(uint64_t *sys_us, uint64_t *user_us)
{
	*sys_us = *user_us = 0;
	for (unsigned i = 0; i < server.nworkers; i++) {
		*sys_us += __atomic_load_n(&server.workers[i].cpu_sys_us, __ATOMIC_RELAXED);
		*user_us += __atomic_load_n(&server.workers[i].cpu_user_us, __ATOMIC_RELAXED);
	}
}

void worker_cron(struct worker *w)
{
	int64_t now = mono_ms(), period = 1000 / config.hz;

	if (w->nheld)
		pause_release(w);
	if (now < w->next_cron_ms)
		return;
	w->next_cron_ms = now + period;
	/* DEBUG PAUSE-CRON: the periodic work stops; blocked clients' timeouts
	 * and the fast path's heartbeat do not (a stale one would only turn the
	 * kernel cache off). */
	if (debug_cron_paused()) {
		/* Redis times blocked clients out outside its cron too. */
		if (w->nblocked)
			blocking_timeouts(w);
		if (w->id == 0)
			fastpath_heartbeat();
		return;
	}
	for (struct client *c = w->clients; c; c = c->next_in_worker)
		if (!c->closing)
			client_resize_reply_buffer(c, now);
	if (config.timeout > 0) {
		for (struct client *c = w->clients, *next; c; c = next) {
			next = c->next_in_worker;
			/* As Redis: no idle timeout for monitors and for clients
			 * that wait (blocked, held, subscribed). */
			if (c->closing ||
			    (c->flags &
			     (CLIENT_MONITOR | CLIENT_WAITING | CLIENT_REPLICA | CLIENT_MASTER)) ||
			    c->blocked || pubsub_client_subscribed(c))
				continue;
			if (now - c->last_ms > config.timeout * 1000) {
				log_verbose("Closing idle client id=%llu",
					    (unsigned long long)c->id);
				w->engine->close_client(c);
			}
		}
	}
	/* A quarter of each period at most, as Redis's slow expiry cycle. */
	if (debug_active_expire_on()) {
		int64_t start = mono_us();

		store_active_expire(w->id, server.nworkers, period * 1000 / 4);
		latency_event_done("expire-cycle", (uint64_t)(mono_us() - start));
	}
	defrag_cron(w->id, server.nworkers, period * 1000);
	blocking_serve_ready(); /* a key expiry deleted can feed no one; SWAPDB's can */
	tracking_cron(w);
	repl_cron(w);
	if (w->nblocked)
		blocking_timeouts(w);
	sample_cpu(w);
	latency_worker_cron(w);
	if (w->id == 0) {
		persist_cron();
		hotkeys_cron(now_ms());
		mem_sample_peak();
		sample_rates(now);
		fastpath_heartbeat();
		fastpath_collect_hits();
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int err = w->engine->init(w);

	if (err < 0) {
		log_warning("Worker %u: cannot start the %s engine: %s", w->id, w->engine->name,
			    strerror(-err));
		server_request_shutdown();
		return NULL;
	}
	/* Keyspace hits and misses are counted by the store into the thread's own. */
	store_reads = &w->stats.reads;
	pubsub_thread_worker = w->id;
	w->next_cron_ms = mono_ms();
	w->engine->run(w);
	w->engine->destroy(w);
	client_thread_exit();
	return NULL;
}

/* Opens one listener on addr:port with SO_REUSEPORT; fd or -1 (logged). */
static int open_listener(const char *addr, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
	struct addrinfo *ai;
	char service[16];
	int fd, one = 1, rc;

	if (strcmp(addr, "*") == 0)
		addr = "0.0.0.0";
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(addr, service, &hints, &ai);
	if (rc) {
		log_warning("Invalid bind address '%s': %s", addr, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, (int)config.tcp_backlog) < 0)
		goto fail;
	freeaddrinfo(ai);
	return fd;
fail:
	log_warning("Could not create server TCP listening socket %s:%d: %s", addr, port,
		    strerror(errno));
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return -1;
}

/*
 * SO_REUSEPORT would let a second server share the port silently: first
 * check, with a plain socket, that nobody else listens there.
 */
static bool port_taken(const char *addr, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
	struct addrinfo *ai;
	char service[16];
	bool taken = false;
	int fd, one = 1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(strcmp(addr, "*") == 0 ? "0.0.0.0" : addr, service, &hints, &ai))
		return false;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		taken = bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno == EADDRINUSE;
		close(fd);
	}
	freeaddrinfo(ai);
	return taken;
}

/* Every worker listens on every bind address: the kernel spreads the
 * connections over the workers' sockets. */
static int open_listeners(struct worker *w)
{
	char *copy = xstrndup(config.bind, strlen(config.bind)), *save = NULL;
	int ret = 0;

	/* port 0: no TCP at all, as in Redis (the Unix socket only). */
	for (char *a = config.port ? strtok_r(copy, " ", &save) : NULL; a;
	     a = strtok_r(NULL, " ", &save)) {
		/* "-addr" means optional, as in Redis: skip it if unavailable. */
		bool optional = a[0] == '-';
		int fd;

		/* The last slot is the Unix socket's. */
		if (w->nlisten == WORKER_MAX_LISTEN - 1)
			break;
		if (w->id == 0 && config.port &&
		    port_taken(optional ? a + 1 : a, (int)config.port)) {
			log_warning("Could not create server TCP listening socket %s:%lld: bind: "
				    "Address already in use",
				    optional ? a + 1 : a, config.port);
			if (optional)
				continue;
			ret = -1;
			break;
		}
		fd = open_listener(optional ? a + 1 : a, (int)config.port);
		if (fd < 0) {
			if (optional)
				continue;
			ret = -1;
			break;
		}
		w->listen_fds[w->nlisten++] = fd;
	}
	xfree(copy);
	if (ret == 0 && w->nlisten == 0 && server.unix_fd < 0) {
		if (w->id == 0)
			log_warning("Configured to not listen anywhere, exiting.");
		ret = -1;
	}
	return ret;
}

/* The Unix socket, shared by every worker (no SO_REUSEPORT for AF_UNIX: the
 * workers' engines all accept on the one socket). fd or -1 (logged). */
static int open_unix_listener(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = config.unixsocket;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_warning("Failed opening Unix socket: unix socket path too long (%zu), must be "
			    "under %zu",
			    strlen(path), sizeof(sa.sun_path));
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket file left by a previous run would make bind fail. */
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, (int)config.tcp_backlog) < 0 ||
	    (config.unixsocketperm && chmod(path, (mode_t)config.unixsocketperm) < 0)) {
		log_warning("Failed opening Unix socket: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	log_notice("The server is now ready to accept connections at %s", path);
	return fd;
}

/* Frees the workers (stopped, or never started) and what they counted in. */
static void free_workers(void)
{
	for (unsigned i = 0; i < server.nworkers; i++) {
		latency_worker_free(&server.workers[i]);
		xfree(server.workers[i].cmd_stats);
		dict_destroy(&server.workers[i].clients_by_id);
	}
	xfree(server.workers);
	server.workers = NULL;
	server.nworkers = 0;
}

static const struct net_engine *choose_engine(void)
{
	struct io_uring ring;
	int err;

	if (config.io_engine == IO_ENGINE_EPOLL)
		return &net_engine_epoll;
	err = io_uring_queue_init(8, &ring, 0);
	if (err == 0) {
		io_uring_queue_exit(&ring);
		return &net_engine_uring;
	}
	if (config.io_engine == IO_ENGINE_URING) {
		log_warning("io_uring is unavailable (%s) and io-engine is io_uring",
			    strerror(-err));
		return NULL;
	}
	log_notice("io_uring is unavailable (%s): using the epoll engine", strerror(-err));
	return &net_engine_epoll;
}

static void close_listeners(void)
{
	for (unsigned i = 0; i < server.nworkers; i++) {
		struct worker *w = &server.workers[i];

		for (int j = 0; j < w->nlisten; j++)
			if (w->listen_fds[j] != server.unix_fd)
				close(w->listen_fds[j]);
		w->nlisten = 0;
		udp_close(w);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		w->wake_fd = -1;
		/* Mail that arrived after the worker stopped is never delivered. */
		while (w->mail_head) {
			struct mail *m = w->mail_head;

			w->mail_head = m->next;
			if (m->ops->drop)
				m->ops->drop(m->payload);
			xfree(m);
		}
		w->mail_tail = NULL;
		pthread_mutex_destroy(&w->mail_lock);
	}
	if (server.unix_fd >= 0) {
		close(server.unix_fd);
		server.unix_fd = -1;
		log_notice("Removing the unix socket file.");
		if (unlink(config.unixsocket) < 0)
			log_warning("Error removing the unix socket file: %s", strerror(errno));
	}
}

/* Set while the main thread saves at shutdown: a SIGINT then ends the
 * process at once, as Redis's ("You insist... exiting now."), leaving no
 * temporary file of ours. Written by the main thread, read by the watcher. */
static bool insist_armed;

static void *insist_main(void *arg)
{
	sigset_t only_int;

	(void)arg;
	sigemptyset(&only_int);
	sigaddset(&only_int, SIGINT);
	while (__atomic_load_n(&insist_armed, __ATOMIC_ACQUIRE)) {
		struct timespec tick = { 0, 50 * 1000 * 1000 };
		char tmp[64];

		if (sigtimedwait(&only_int, NULL, &tick) != SIGINT)
			continue;
		log_warning("You insist... exiting now.");
		snprintf(tmp, sizeof(tmp), "temp-%d.rdb", (int)getpid());
		unlink(tmp);
		/* Not a clean shutdown: an error status, as Redis. */
		_exit(1);
	}
	return NULL;
}

/* persist_shutdown(flags) with the watcher above running meanwhile. */
static int shutdown_insistable(unsigned flags)
{
	pthread_t tid;
	bool watching;
	int rc;

	__atomic_store_n(&insist_armed, true, __ATOMIC_RELEASE);
	watching = pthread_create(&tid, NULL, insist_main, NULL) == 0;
	rc = persist_shutdown(flags);
	__atomic_store_n(&insist_armed, false, __ATOMIC_RELEASE);
	if (watching)
		pthread_join(tid, NULL);
	return rc;
}

int server_run(void)
{
	sigset_t signals;
	unsigned started = 0;
	bool ok;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	server.engine = choose_engine();
	if (!server.engine)
		return -1;
	server.nworkers =
		config.threads > 0 ? (unsigned)config.threads : (unsigned)(cpus > 0 ? cpus : 1);
	server.workers =
		xcalloc_aligned(server.nworkers, sizeof(*server.workers), _Alignof(struct worker));
	server.unix_fd = -1;
	if (config.unixsocket[0]) {
		server.unix_fd = open_unix_listener();
		if (server.unix_fd < 0) {
			free_workers();
			return -1;
		}
	}
	for (unsigned i = 0; i < server.nworkers; i++) {
		struct worker *w = &server.workers[i];

		w->id = i;
		w->engine = server.engine;
		w->cmd_stats = xcalloc(command_rows(), sizeof(*w->cmd_stats));
		latency_worker_init(w);
		w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		pthread_mutex_init(&w->mail_lock, NULL);
		dict_init(&w->clients_by_id, &client_id_type);
		if (w->wake_fd < 0 || open_listeners(w) < 0 || udp_open(w) < 0) {
			server.nworkers = i + 1;
			close_listeners();
			free_workers();
			return -1;
		}
		if (server.unix_fd >= 0)
			w->listen_fds[w->nlisten++] = server.unix_fd;
	}

	/* Workers inherit a mask with the shutdown signals blocked; the main
	 * thread waits for them synchronously (and insist_main during the final
	 * save). */
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* The background pool lives while the workers do (bgjob.h); without it
	 * lazy frees run inline, so a failure to start it is only logged. */
	bgjob_start();
	for (; started < server.nworkers; started++)
		if (pthread_create(&server.workers[started].thread, NULL, worker_main,
				   &server.workers[started]) != 0)
			break;
	if (started < server.nworkers)
		server_request_shutdown();
	else if (config.port)
		log_notice("Ready to accept connections tcp (%u workers, %s engine, port %lld)",
			   server.nworkers, server.engine->name, config.port);
	else
		log_notice("Ready to accept connections unix (%u workers, %s engine, %s)",
			   server.nworkers, server.engine->name, config.unixsocket);

	while (!server.shutdown) {
		struct timespec tick = { 0, 100 * 1000 * 1000 };
		int sig = sigtimedwait(&signals, NULL, &tick);

		if (sig > 0) {
			log_warning("Received %s scheduling shutdown...",
				    sig == SIGTERM ? "SIGTERM" : "SIGINT");
			server.shutdown_signal = sig;
			/* shutdown-on-sigterm/-sigint's flags; a failed final save
			 * keeps the server running, as Redis's cron does. */
			if (started < server.nworkers)
				server_request_shutdown();
			else if (shutdown_insistable((
					 unsigned)(sig == SIGTERM ? config.shutdown_on_sigterm
								  : config.shutdown_on_sigint)) < 0)
				server.shutdown_signal = 0;
		}
	}
	/* The replica's link thread posts to worker 0: it stops first. */
	repl_replica_stop();
	ok = started == server.nworkers;
	for (unsigned i = 0; i < started; i++)
		pthread_join(server.workers[i].thread, NULL);
	/* Its last jobs may post to the workers' mailboxes: drained before the
	 * mailboxes go. */
	bgjob_stop();
	close_listeners();
	free_workers();
	return ok ? 0 : -1;
}
