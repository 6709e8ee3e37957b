// SPDX-License-Identifier: BSD-3-Clause
/*
 * Clients: buffers, the input loop, and the registry of all clients.
 *
 * The registry lock protects the registry list and the name/lib fields of
 * every client (written by CLIENT SETNAME/SETINFO on the owner, read by CLIENT
 * LIST on any worker). It is a leaf lock: nothing else is taken under it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl_users.h"
#include "blocking.h"
#include "client.h"
#include "commands.h"
#include "config.h"
#include "exec_ctx.h"
#include "log.h"
#include "mem.h"
#include "monitor.h"
#include "multi.h"
#include "pause.h"
#include "pubsub.h"
#include "repl.h"
#include "reply.h"
#include "resp.h"
#include "store.h"
#include "text.h"
#include "tracking.h"
#include "util.h"
#include "worker.h"

#define QBUF_MIN_ROOM (16 * 1024)

/*
 * Each worker's reusable query buffer, as Redis's: a client with nothing
 * buffered borrows it to read into, and gives it back once everything read is
 * consumed, so an idle connection holds no query buffer at all. A client that
 * cannot give it back whole (a partial request, a command blocked or held
 * with its arguments in the buffer, a request that needs more room) keeps it
 * as its own, and the worker makes a new one when next asked. Per thread:
 * only the worker's own clients ever see it.
 */
static __thread char *reusable;
static __thread struct client *reusable_user;

void client_thread_exit(void)
{
	/* A lent buffer is its borrower's to free (client_free). */
	if (!reusable_user)
		xfree(reusable);
	reusable = NULL;
}

/* c's buffer becomes its own (it was the reusable one). */
void client_qbuf_keep(struct client *c)
{
	if (reusable_user == c) {
		reusable = NULL;
		reusable_user = NULL;
	}
}

/* After processing: hands the reusable buffer back if c used it up. */
static void qbuf_give_back(struct client *c)
{
	if (reusable_user != c)
		return;
	if (c->req_type || c->qpos != c->qlen || c->blocked || (c->flags & CLIENT_WAITING)) {
		client_qbuf_keep(c);
		return;
	}
	reusable_user = NULL;
	c->qbuf = NULL;
	c->qlen = c->qpos = 0;
	__atomic_store_n(&c->qcap, 0, __ATOMIC_RELAXED);
}

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct client *registry_head;
static uint64_t registry_n, connections_total;

void registry_lock(void)
{
	pthread_mutex_lock(&registry_mutex);
}

void registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mutex);
}

struct client *registry_first(void)
{
	return registry_head;
}

uint64_t registry_count(void)
{
	return __atomic_load_n(&registry_n, __ATOMIC_RELAXED);
}

uint64_t registry_total_connections(void)
{
	return __atomic_load_n(&connections_total, __ATOMIC_RELAXED);
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
	} else if (ss->ss_family == AF_UNIX) {
		/* As Redis: both ends are named by the server's socket path. */
		snprintf(out, len, "%s:0", config.unixsocket);
		return;
	}
	snprintf(out, len, "%s:%d", ip, port);
}

struct client *client_create(struct worker *w, int fd)
{
	struct client *c = xcalloc(1, sizeof(*c));
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);

	c->id = __atomic_add_fetch(&server.next_client_id, 1, __ATOMIC_RELAXED);
	c->fd = fd;
	c->worker = w;
	c->resp = 2;
	c->user = acl_default_user_get(&c->authenticated);
	c->mb_left = -1;
	c->bulk_len = -1;
	c->ctime_ms = c->last_ms = c->rbuf_peak_reset_ms = mono_ms();
	c->rbuf_size = REPLY_BLOCK_SIZE;
	c->last_cmd = "NULL";
	if (getpeername(fd, (struct sockaddr *)&ss, &slen) == 0) {
		format_addr(&ss, c->addr, sizeof(c->addr));
		if (ss.ss_family == AF_UNIX)
			c->flags |= CLIENT_UNIX_SOCKET;
	}
	slen = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &slen) == 0)
		format_addr(&ss, c->laddr, sizeof(c->laddr));

	registry_lock();
	c->next_in_registry = registry_head;
	if (registry_head)
		registry_head->prev_in_registry = c;
	registry_head = c;
	registry_n++;
	connections_total++;
	registry_unlock();
	return c;
}

void client_free(struct client *c)
{
	blocking_unblock(c);
	repl_client_free(c);
	if (c->flags & CLIENT_MASTER)
		repl_master_client_free(c);
	pause_client_free(c);
	monitor_stop(c);
	multi_reset(c);
	multi_unwatch(c);
	pubsub_client_free(c);
	tracking_client_free(c);
	registry_lock();
	if (c->prev_in_registry)
		c->prev_in_registry->next_in_registry = c->next_in_registry;
	else
		registry_head = c->next_in_registry;
	if (c->next_in_registry)
		c->next_in_registry->prev_in_registry = c->prev_in_registry;
	registry_n--;
	registry_unlock();
	acl_user_put(c->user);

	if (c->fd >= 0)
		close(c->fd);
	while (c->reply_head) {
		struct reply_block *b = c->reply_head;

		c->reply_head = b->next;
		xfree(b);
	}
	client_qbuf_keep(c);
	xfree(c->qbuf);
	xfree(c->argv);
	xfree(c->arg_off);
	xfree(c->inline_buf);
	xfree(c->name);
	xfree(c->lib_name);
	xfree(c->lib_ver);
	xfree(c->monitor_peer);
	xfree(c);
}

char *client_read_buffer(struct client *c, size_t *len)
{
	/* While a big bulk is being read, room for exactly its remainder: the
	 * buffer was sized for it when its header arrived. */
	size_t wanted = resp_bytes_wanted(c), room = wanted ? wanted : QBUF_MIN_ROOM;

	if (!c->req_type && c->qpos == c->qlen) {
		c->qpos = c->qlen = 0;
		/* Give back a buffer that a large request grew. */
		if (c->qcap > 1024 * 1024) {
			xfree(c->qbuf);
			c->qbuf = NULL;
			c->qcap = 0;
		}
	}
	/* A borrower that went idle without processing (a read that found
	 * nothing) hands the buffer on. */
	if (!c->qbuf && reusable_user && reusable_user != c)
		qbuf_give_back(reusable_user);
	if (!c->qbuf && room <= QBUF_MIN_ROOM && !reusable_user) {
		if (!reusable)
			reusable = xmalloc(QBUF_MIN_ROOM);
		reusable_user = c;
		c->qbuf = reusable;
		__atomic_store_n(&c->qcap, QBUF_MIN_ROOM, __ATOMIC_RELAXED);
	}
	if (c->qcap - c->qlen < room) {
		/* It is about to move or grow: no longer the shared one. */
		client_qbuf_keep(c);
		/* Keep only the request being parsed, at the buffer's start. */
		size_t keep = c->req_type ? c->cmd_start : c->qpos;

		if (keep) {
			memmove(c->qbuf, c->qbuf + keep, c->qlen - keep);
			c->qlen -= keep;
			c->qpos -= keep;
			for (int i = 0; i < c->argc; i++)
				c->arg_off[i] -= keep;
			c->cmd_start -= keep;
		}
		if (c->qcap - c->qlen < room) {
			/* A big bulk gets exactly the room it needs, so it is read
			 * in place; otherwise grow geometrically. */
			size_t cap = wanted ? c->qlen + room : c->qcap * 2;

			if (cap < c->qlen + room)
				cap = c->qlen + room;
			c->qbuf = xrealloc(c->qbuf, cap);
			c->qcap = cap;
		}
	}
	*len = c->qcap - c->qlen;
	return c->qbuf + c->qlen;
}

void client_read_done(struct client *c, size_t n)
{
	c->qlen += n;
	if (c->flags & CLIENT_MASTER)
		repl_master_read(c, n);
	__atomic_store_n(&c->net_in, c->net_in + n, __ATOMIC_RELAXED);
	__atomic_store_n(&c->read_events, c->read_events + 1, __ATOMIC_RELAXED);
}

static size_t argv_bytes(const struct client *c)
{
	size_t n = 0;

	for (int i = 0; i < c->argc; i++)
		n += c->argv[i].len;
	return n;
}

/* Most GETs a batch is warmed for: a pipeline's worth. */
#define PREFETCH_MAX 16

/*
 * A complete "*2 $3 GET $n key" request at p (the form clients send): its
 * length, with the key through *key and *klen; 0 for anything else.
 */
static size_t match_get(const char *p, const char *end, const char **key, size_t *klen)
{
	const char *q = p + 14;
	size_t len = 0;

	if (end - p < 18 || memcmp(p, "*2\r\n$3\r\n", 8) != 0 || (p[8] | 0x20) != 'g' ||
	    (p[9] | 0x20) != 'e' || (p[10] | 0x20) != 't' || memcmp(p + 11, "\r\n$", 3) != 0)
		return 0;
	while (q < end && *q >= '0' && *q <= '9' && q - p < 14 + 6)
		len = len * 10 + (size_t)(*q++ - '0');
	if (q == p + 14 || end - q < 2 || *q != '\r')
		return 0;
	q += 2;
	if ((size_t)(end - q) < len + 2)
		return 0;
	*key = q;
	*klen = len;
	return (size_t)(q + len + 2 - p);
}

/*
 * A pipeline of GETs spends most of its time waiting for memory: the bucket,
 * the entry, the value of each key, one after another. Looking the keys of
 * the buffered GETs up in stages first (store.h, db_prefetch_*) overlaps
 * those misses. Only a hint: what the commands then do is unchanged.
 */
static void prefetch_gets(struct client *c)
{
	struct db_prefetch pf[PREFETCH_MAX];
	const char *p = c->qbuf + c->qpos, *end = c->qbuf + c->qlen, *keys[PREFETCH_MAX];
	size_t n, lens[PREFETCH_MAX];
	int count = 0;

	while (count < PREFETCH_MAX && (n = match_get(p, end, &keys[count], &lens[count]))) {
		count++;
		p += n;
	}
	/* A lone GET has nothing to overlap with. */
	if (count < 2)
		return;
	for (int i = 0; i < count; i++)
		db_prefetch_start(&pf[i], c->db, keys[i], lens[i]);
	for (int i = 0; i < count; i++)
		db_prefetch_chain(&pf[i]);
	for (int i = 0; i < count; i++)
		db_prefetch_value(&pf[i]);
}

bool client_process_input(struct client *c)
{
	uint64_t ran = 0;

	/* As Redis, on what was read, before running any of it: a request
	 * bigger than the limit is refused even if it arrived whole. Once: a
	 * client being closed may still get its last input parsed. */
	if (!(c->flags & CLIENT_CLOSE_ASAP) &&
	    (unsigned long long)(c->qlen - (c->req_type ? c->cmd_start : c->qpos)) >
		    (unsigned long long)config.client_query_buffer_limit) {
		log_warning("Closing client that reached max query buffer length: id=%llu addr=%s",
			    (unsigned long long)c->id, c->addr);
		c->flags |= CLIENT_CLOSE_ASAP;
		if (c->worker)
			stat_add(&c->worker->stats.qbuf_limit_closes, 1);
	}
	if (!c->req_type && !acl_auth_required(c) && c->qlen - c->qpos >= 64)
		prefetch_gets(c);
	/* A blocked or held client's next commands wait until it is answered. */
	while (!c->blocked &&
	       !(c->flags & (CLIENT_CLOSE_AFTER_REPLY | CLIENT_CLOSE_ASAP | CLIENT_WAITING))) {
		const char *err = NULL;
		int r = resp_parse_request(c, &err);

		if (r == RESP_NEED_MORE)
			break;
		if (r == RESP_ERROR) {
			log_verbose("Protocol error (%s) from client: id=%llu addr=%s", err,
				    (unsigned long long)c->id, c->addr);
			reply_error(c, err);
			c->flags |= CLIENT_CLOSE_AFTER_REPLY;
			break;
		}
		/* The master's command, as it came, for our replicas. */
		if (c->flags & CLIENT_MASTER)
			repl_master_command(c);
		if (c->argc > 0) {
			/* Counted before it runs, so CLIENT INFO sees itself. */
			if (!ran++)
				__atomic_store_n(&c->pipeline_cnt, c->pipeline_cnt + 1,
						 __ATOMIC_RELAXED);
			__atomic_store_n(&c->pipeline_sum, c->pipeline_sum + 1, __ATOMIC_RELAXED);
			__atomic_store_n(&c->argv_mem, argv_bytes(c), __ATOMIC_RELAXED);
			command_dispatch(c);
		}
		resp_request_done(c);
		/* The master's stream: what is applied, as Redis's reploff. */
		if (c->flags & CLIENT_MASTER)
			repl_master_applied(c);
		if (!c->blocked && !(c->flags & CLIENT_WAITING)) {
			__atomic_store_n(&c->argv_mem, 0, __ATOMIC_RELAXED);
			client_command_done(c);
		}
	}
	qbuf_give_back(c);
	resp_args_give_back(c);
	return !(c->flags & (CLIENT_CLOSE_AFTER_REPLY | CLIENT_CLOSE_ASAP));
}

int client_reply_iov(struct client *c, struct iovec *iov, int max, size_t limit)
{
	int n = 0;

	if (c->reply_head) {
		size_t used = c->reply_head->used, cap = c->rbuf_size;

		used = used < cap ? used : cap;
		if (used > c->rbuf_peak)
			c->rbuf_peak = (uint32_t)used;
	}

	for (struct reply_block *b = c->reply_head; b && n < max && limit; b = b->next) {
		size_t len = b->used - b->sent;

		if (!len)
			continue;
		len = len < limit ? len : limit;
		iov[n].iov_base = b->data + b->sent;
		iov[n].iov_len = len;
		limit -= len;
		n++;
	}
	return n;
}

void client_reply_sent(struct client *c, size_t n)
{
	c->reply_bytes -= n;
	if (c->repl)
		repl_sync_sent(c, n);
	__atomic_store_n(&c->net_out, c->net_out + n, __ATOMIC_RELAXED);
	while (n && c->reply_head) {
		struct reply_block *b = c->reply_head;
		size_t left = b->used - b->sent, step = n < left ? n : left;

		b->sent += step;
		n -= step;
		if (b->sent == b->used) {
			/* Keep the last block for the next replies. */
			if (!b->next) {
				b->sent = b->used = 0;
				if (b->size > 64 * 1024) {
					c->reply_head = c->reply_tail = NULL;
					xfree(b);
				}
				break;
			}
			c->reply_head = b->next;
			xfree(b);
		}
	}
}

long long reply_buffer_peak_reset_ms = REPLY_BUFFER_PEAK_RESET_MS;
int reply_buffer_resizing = 1;

void client_resize_reply_buffer(struct client *c, int64_t now)
{
	uint32_t size = c->rbuf_size, want = 0;
	long long reset = __atomic_load_n(&reply_buffer_peak_reset_ms, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&reply_buffer_resizing, __ATOMIC_RELAXED) || !size)
		return;
	/* Redis's rule: halve toward the peak when it used under half, double
	 * (to 16 KiB at most) when it filled the buffer. */
	if (size / 2 >= REPLY_BLOCK_MIN && c->rbuf_peak < size / 2)
		want = c->rbuf_peak + 1 > REPLY_BLOCK_MIN ? c->rbuf_peak + 1 : REPLY_BLOCK_MIN;
	else if (size * 2 < 2 * REPLY_BLOCK_SIZE && c->rbuf_peak >= size)
		want = size * 2 < REPLY_BLOCK_SIZE ? size * 2 : REPLY_BLOCK_SIZE;
	if (reset >= 0 && now - c->rbuf_peak_reset_ms >= reset) {
		c->rbuf_peak = c->reply_head ? (uint32_t)c->reply_head->used : 0;
		c->rbuf_peak_reset_ms = now;
	}
	if (!want)
		return;
	__atomic_fetch_add(want < size ? &c->worker->stats.rbuf_shrinks
				       : &c->worker->stats.rbuf_expands,
			   1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->rbuf_size, want, __ATOMIC_RELAXED);
	/* The kept block, if idle, is dropped: the next reply takes one of the
	 * new size. One with replies pending is left to be sent. */
	if (c->reply_head && c->reply_head == c->reply_tail && !c->reply_head->used) {
		xfree(c->reply_head);
		c->reply_head = c->reply_tail = NULL;
	}
}

/* CLIENT LIST's flags, in Redis's order. */
static void info_flags(struct client *c, char *out, bool pubsub)
{
	unsigned f = __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
	unsigned tf = __atomic_load_n(&c->trk_flags, __ATOMIC_RELAXED);
	char *p = out;

	if (f & CLIENT_REPLICA)
		*p++ = 'S';
	if (f & CLIENT_MASTER)
		*p++ = 'M';
	if (f & CLIENT_MONITOR)
		*p++ = 'O';
	if (pubsub)
		*p++ = 'P';
	if (__atomic_load_n(&c->in_multi, __ATOMIC_RELAXED))
		*p++ = 'x';
	/* Held by CLIENT PAUSE, waiting on a FLUSH or in WAIT counts as
	 * blocked, as in Redis. */
	if (__atomic_load_n(&c->blocked, __ATOMIC_RELAXED) || (f & CLIENT_WAITING))
		*p++ = 'b';
	if (tf & TRACKING_ON)
		*p++ = 't';
	if (tf & TRACKING_BROKEN_REDIR)
		*p++ = 'R';
	if (tf & TRACKING_BCAST)
		*p++ = 'B';
	if (f & CLIENT_UNIX_SOCKET)
		*p++ = 'U';
	if (f & CLIENT_READONLY)
		*p++ = 'r';
	if (f & CLIENT_NO_EVICT)
		*p++ = 'e';
	if (f & CLIENT_NO_TOUCH)
		*p++ = 'T';
	if (p == out)
		*p++ = 'N';
	*p = '\0';
}

/* The bytes of c's queued MULTI commands, as Redis's multi-mem counts them
 * (their arguments and the queue's slots). Only the owner may walk the queue:
 * other threads see 0. */
static size_t multi_mem(const struct client *c)
{
	size_t n;

	if (c != exec_ctx_client() || !c->in_multi)
		return 0;
	n = (size_t)c->queue_cap * sizeof(*c->queue);
	for (int i = 0; i < c->nqueued; i++)
		for (int a = 0; a < c->queue[i].argc; a++)
			n += c->queue[i].argv[a].len;
	return n;
}

size_t client_mem(struct client *c)
{
	return sizeof(*c) + __atomic_load_n(&c->qcap, __ATOMIC_RELAXED) +
	       __atomic_load_n(&c->argv_mem, __ATOMIC_RELAXED) + multi_mem(c) +
	       __atomic_load_n(&c->reply_bytes, __ATOMIC_RELAXED);
}

size_t clients_mem(void)
{
	size_t sum = 0;

	registry_lock();
	for (struct client *c = registry_first(); c; c = c->next_in_registry)
		sum += client_mem(c);
	registry_unlock();
	return sum;
}

char *client_info_line(struct client *c)
{
	int64_t now = mono_ms();
	struct text t = { 0 };
	long sub = __atomic_load_n(&c->pubsub_counts[0], __ATOMIC_RELAXED);
	long psub = __atomic_load_n(&c->pubsub_counts[1], __ATOMIC_RELAXED);
	long ssub = __atomic_load_n(&c->pubsub_counts[2], __ATOMIC_RELAXED);
	size_t qlen = __atomic_load_n(&c->qlen, __ATOMIC_RELAXED);
	size_t qcap = __atomic_load_n(&c->qcap, __ATOMIC_RELAXED);
	/* Unparsed bytes, the request being parsed or run included: Redis
	 * without I/O threads (io-threads 1, what we report) trims a request
	 * from its buffer only after it ran, so CLIENT INFO counts its own. */
	size_t qstart = __atomic_load_n(&c->req_type, __ATOMIC_RELAXED)
				? __atomic_load_n(&c->cmd_start, __ATOMIC_RELAXED)
				: __atomic_load_n(&c->qpos, __ATOMIC_RELAXED);
	size_t omem = __atomic_load_n(&c->reply_bytes, __ATOMIC_RELAXED);
	size_t argv_mem = __atomic_load_n(&c->argv_mem, __ATOMIC_RELAXED), mmem = multi_mem(c);
	uint64_t cnt = __atomic_load_n(&c->pipeline_cnt, __ATOMIC_RELAXED);
	char flags[16];

	info_flags(c, flags, sub + psub + ssub != 0);

	/* A name, library name or version may be of any length. */
	text_printf(
		&t,
		"id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%d sub=%ld "
		"psub=%ld ssub=%ld multi=%d watch=%d qbuf=%zu qbuf-free=%zu argv-mem=%zu "
		"multi-mem=%zu rbs=%u rbp=%u obl=0 oll=0 omem=%zu omem-shared=0 omem-unshared=%zu "
		"tot-mem=%zu events=r cmd=%s user=%s redir=%lld resp=%d lib-name=%s "
		"lib-ver=%s "
		"io-thread=%u tot-net-in=%llu tot-net-out=%llu tot-cmds=%llu read-events=%llu "
		"avg-pipeline-len-sum=%llu avg-pipeline-len-cnt=%llu",
		(unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name ? c->name : "",
		(long long)(now - __atomic_load_n(&c->ctime_ms, __ATOMIC_RELAXED)) / 1000,
		(long long)(now - __atomic_load_n(&c->last_ms, __ATOMIC_RELAXED)) / 1000, flags,
		__atomic_load_n(&c->db, __ATOMIC_RELAXED), sub, psub, ssub,
		__atomic_load_n(&c->in_multi, __ATOMIC_RELAXED)
			? __atomic_load_n(&c->nqueued, __ATOMIC_RELAXED)
			: -1,
		__atomic_load_n(&c->nwatched, __ATOMIC_RELAXED), qlen - qstart, qcap - qlen,
		argv_mem, mmem, __atomic_load_n(&c->rbuf_size, __ATOMIC_RELAXED),
		__atomic_load_n(&c->rbuf_peak, __ATOMIC_RELAXED), omem, omem, client_mem(c),
		__atomic_load_n(&c->last_cmd, __ATOMIC_RELAXED),
		c->user ? c->user->name : "(superuser)",
		(__atomic_load_n(&c->trk_flags, __ATOMIC_RELAXED) & TRACKING_ON)
			? (long long)__atomic_load_n(&c->trk_redir, __ATOMIC_RELAXED)
			: -1LL,
		__atomic_load_n(&c->resp, __ATOMIC_RELAXED), c->lib_name ? c->lib_name : "",
		c->lib_ver ? c->lib_ver : "", c->worker->id,
		(unsigned long long)__atomic_load_n(&c->net_in, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->net_out, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->commands, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->read_events, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->pipeline_sum, __ATOMIC_RELAXED),
		(unsigned long long)cnt);
	return t.p;
}
