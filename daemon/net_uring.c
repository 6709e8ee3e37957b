// SPDX-License-Identifier: BSD-3-Clause
/*
 * The io_uring engine (the default): one ring per worker, multishot accept,
 * multishot recv into a ring of provided buffers, and replies sent with one
 * sendmsg per client per loop turn, all submitted in a single io_uring_enter
 * together with the wait for the next completions.
 *
 * A client being closed may still have operations in flight: it is freed only
 * once their completions have all arrived (conn->inflight reaches zero).
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "aof.h"
#include "client.h"
#include "log.h"
#include "mem.h"
#include "udp.h"
#include "util.h"
#include "worker.h"

#define RING_ENTRIES 4096
#define BUF_COUNT 64 /* the ring's entries, at most this many buffers: power of two */
#define BUF_SIZE (16 * 1024)
/*
 * The buffers are allocated BUF_CHUNK at a time: one chunk at start, one
 * more whenever a recv finds the ring empty (-ENOBUFS), up to BUF_COUNT. An
 * idle worker holds 128 KiB, one under load what its bursts of completions
 * keep in flight, at most 1 MiB; the pool never shrinks (a provided buffer
 * cannot be taken back from the kernel's ring). All of it is in used_memory
 * (and INFO memory's net_buffer_pool_bytes says how much), which is what
 * maxmemory and the OOM checks compare: Redis's idle baseline is about
 * 1 MB, and its OOM tests (unit/pubsub at maxmemory 5 MB) assume one as
 * small. 256 buffers (4 MiB a worker, what the pool once was at start)
 * were no faster: redis-benchmark -c 50 -P 16 SET and GET, 3 alternating
 * rounds, 336k-454k and 330k-529k requests/s against 502k-583k and
 * 453k-549k with 64 (the bytes a recv finds no buffer for wait in the
 * socket for the next).
 */
#define BUF_CHUNK 8
#define BUF_CHUNKS (BUF_COUNT / BUF_CHUNK)
#define BUF_CHUNK_BYTES ((size_t)BUF_CHUNK * BUF_SIZE)

/* Bytes of every worker's pool, a part of used_memory (written by the
 * workers, read by INFO). */
static size_t pool_bytes;
#define BUF_GROUP 0
#define MAX_IOV 64

/* user_data: a pointer with an operation tag in its low 3 bits. */
enum op { OP_RECV = 1, OP_SEND = 2, OP_CANCEL = 3, OP_ACCEPT = 4, OP_WAKE = 5, OP_UDP = 6 };
#define OP_MASK 7ULL

struct uring_conn {
	struct msghdr msg;
	struct iovec iov[MAX_IOV];
	unsigned inflight; /* operations whose last completion is pending */
	bool recv_armed;
	bool sending;
	bool dirty;	   /* on the worker's list to flush this turn */
	unsigned deferred; /* its completions kept aside by a busy script's turns */
	struct client *next_dirty;
	/* Group commit (aof.h): reply bytes, counted from the connection's
	 * first (net_out + reply_bytes), up to which it may send; the rest
	 * wait in the worker's held list for their AOF sync. */
	uint64_t allowed;
};

/* A turn's replies of one client waiting for the AOF sync that covers the
 * turn (target): then its bytes up to mark may leave. Each one counts as
 * an operation in flight, so a closed client outlives it. */
struct held_reply {
	struct client *c;
	uint64_t mark, target;
};

struct uring_worker {
	struct io_uring ring;
	struct io_uring_buf_ring *bufring;
	char *chunks[BUF_CHUNKS]; /* buffer bid is chunks[bid / BUF_CHUNK], slot bid % BUF_CHUNK */
	unsigned nchunks;
	struct client *dirty;	/* clients with replies or a pending close */
	struct client *closing; /* closed, waiting for their completions */
	uint64_t wake_buf;
	/* A busy script's turns (uring_poll_nested) keep aside what must wait
	 * for the command under way: its client's input and UDP requests
	 * (which would read the store the script is changing). Replayed in
	 * order by the next turn of the loop. */
	bool nested;
	struct io_uring_cqe *deferred;
	size_t ndeferred, deferred_cap;
	/* Held replies, oldest first (targets never decrease): v[head..n). */
	struct held_reply *held;
	size_t held_head, nheld, held_cap;
};

static inline struct uring_conn *conn_of(struct client *c)
{
	return c->engine_data;
}

static struct io_uring_sqe *get_sqe(struct uring_worker *uw)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&uw->ring);

	if (!sqe) {
		/* The submission queue is full: hand it to the kernel first. */
		io_uring_submit(&uw->ring);
		sqe = io_uring_get_sqe(&uw->ring);
	}
	xkv_assert(sqe);
	return sqe;
}

static void arm_accept(struct worker *w, int i)
{
	struct uring_worker *uw = w->engine_data;
	struct io_uring_sqe *sqe = get_sqe(uw);

	io_uring_prep_multishot_accept(sqe, w->listen_fds[i], NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ((uint64_t)i << 3) | OP_ACCEPT);
}

static void arm_wake(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;
	struct io_uring_sqe *sqe = get_sqe(uw);

	io_uring_prep_poll_multishot(sqe, w->wake_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, OP_WAKE);
}

/* UDP datagrams are few per wake-up and answered in batches by udp.c with
 * recvmmsg/sendmmsg: the ring only tells when a socket is readable. */
static void arm_udp(struct worker *w, int i)
{
	struct uring_worker *uw = w->engine_data;
	struct io_uring_sqe *sqe = get_sqe(uw);

	io_uring_prep_poll_multishot(sqe, w->udp_fds[i], POLLIN);
	io_uring_sqe_set_data64(sqe, ((uint64_t)i << 3) | OP_UDP);
}

static void arm_recv(struct client *c)
{
	struct uring_worker *uw = c->worker->engine_data;
	struct io_uring_sqe *sqe = get_sqe(uw);

	io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BUF_GROUP;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_RECV);
	conn_of(c)->recv_armed = true;
	conn_of(c)->inflight++;
}

static void mark_dirty(struct client *c)
{
	struct uring_worker *uw = c->worker->engine_data;
	struct uring_conn *conn = conn_of(c);

	if (conn->dirty)
		return;
	conn->dirty = true;
	conn->next_dirty = uw->dirty;
	uw->dirty = c;
}

static char *buf_addr(const struct uring_worker *uw, unsigned bid)
{
	return uw->chunks[bid / BUF_CHUNK] + (size_t)(bid % BUF_CHUNK) * BUF_SIZE;
}

size_t net_buffer_pool_bytes(void)
{
	return __atomic_load_n(&pool_bytes, __ATOMIC_RELAXED);
}

/* Gives the kernel BUF_CHUNK more buffers, unless the ring is full. */
static void buf_grow(struct uring_worker *uw)
{
	unsigned first = uw->nchunks * BUF_CHUNK;

	if (uw->nchunks == BUF_CHUNKS)
		return;
	__atomic_fetch_add(&pool_bytes, BUF_CHUNK_BYTES, __ATOMIC_RELAXED);
	uw->chunks[uw->nchunks++] = xmalloc(BUF_CHUNK_BYTES);
	for (unsigned i = 0; i < BUF_CHUNK; i++)
		io_uring_buf_ring_add(uw->bufring, buf_addr(uw, first + i), BUF_SIZE,
				      (unsigned short)(first + i),
				      io_uring_buf_ring_mask(BUF_COUNT), (int)i);
	io_uring_buf_ring_advance(uw->bufring, BUF_CHUNK);
}

static int uring_init(struct worker *w)
{
	struct uring_worker *uw = xcalloc(1, sizeof(*uw));
	struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN };
	struct io_uring_buf_reg reg = { 0 };
	size_t ring_bytes = BUF_COUNT * sizeof(struct io_uring_buf);
	int err;

	err = io_uring_queue_init_params(RING_ENTRIES, &uw->ring, &p);
	if (err == -EINVAL) {
		/* Kernels before 6.1 lack these flags. */
		memset(&p, 0, sizeof(p));
		err = io_uring_queue_init_params(RING_ENTRIES, &uw->ring, &p);
	}
	if (err < 0)
		goto fail;
	uw->bufring =
		mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (uw->bufring == MAP_FAILED) {
		err = -errno;
		goto fail_ring;
	}
	reg.ring_addr = (uint64_t)(uintptr_t)uw->bufring;
	reg.ring_entries = BUF_COUNT;
	reg.bgid = BUF_GROUP;
	err = io_uring_register_buf_ring(&uw->ring, &reg, 0);
	if (err < 0)
		goto fail_map;
	io_uring_buf_ring_init(uw->bufring);
	buf_grow(uw);

	w->engine_data = uw;
	for (int i = 0; i < w->nlisten; i++)
		arm_accept(w, i);
	for (int i = 0; i < w->nudp; i++)
		arm_udp(w, i);
	arm_wake(w);
	return 0;

fail_map:
	munmap(uw->bufring, ring_bytes);
fail_ring:
	io_uring_queue_exit(&uw->ring);
fail:
	xfree(uw);
	return err;
}

static void recycle_buffer(struct uring_worker *uw, unsigned bid)
{
	io_uring_buf_ring_add(uw->bufring, buf_addr(uw, bid), BUF_SIZE, (unsigned short)bid,
			      io_uring_buf_ring_mask(BUF_COUNT), 0);
	io_uring_buf_ring_advance(uw->bufring, 1);
}

static void uring_close_client(struct client *c)
{
	struct uring_worker *uw = c->worker->engine_data;
	struct uring_conn *conn = conn_of(c);

	if (c->closing)
		return;
	c->closing = true;
	if (conn->recv_armed) {
		struct io_uring_sqe *sqe = get_sqe(uw);

		io_uring_prep_cancel_fd(sqe, c->fd, 0);
		io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_CANCEL);
		conn->inflight++;
	}
	/* Also ends an in-flight send quickly on a peer that stopped reading. */
	shutdown(c->fd, SHUT_RDWR);
	c->next_closing = uw->closing;
	uw->closing = c;
}

/* Every reply byte c was ever given, sent or not. */
static uint64_t reply_produced(const struct client *c)
{
	return c->net_out + c->reply_bytes;
}

static void start_send(struct client *c)
{
	struct uring_worker *uw = c->worker->engine_data;
	struct uring_conn *conn = conn_of(c);
	struct io_uring_sqe *sqe;

	conn->msg.msg_iov = conn->iov;
	conn->msg.msg_iovlen = (size_t)client_reply_iov(c, conn->iov, MAX_IOV,
							(size_t)(conn->allowed - c->net_out));
	sqe = get_sqe(uw);
	io_uring_prep_sendmsg(sqe, c->fd, &conn->msg, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | OP_SEND);
	conn->sending = true;
	conn->inflight++;
}

static void hold_reply(struct uring_worker *uw, struct client *c, uint64_t target)
{
	if (uw->nheld == uw->held_cap) {
		if (uw->held_head) {
			/* Reuse the released front before growing. */
			uw->nheld -= uw->held_head;
			memmove(uw->held, uw->held + uw->held_head, uw->nheld * sizeof(*uw->held));
			uw->held_head = 0;
		} else {
			uw->held_cap = uw->held_cap ? 2 * uw->held_cap : 64;
			uw->held = xrealloc(uw->held, uw->held_cap * sizeof(*uw->held));
		}
	}
	uw->held[uw->nheld++] = (struct held_reply){ c, reply_produced(c), target };
	conn_of(c)->inflight++;
}

/* The held replies whose sync is done may go: their clients are dirty. */
static void release_held(struct uring_worker *uw)
{
	while (uw->held_head < uw->nheld && aof_target_done(uw->held[uw->held_head].target)) {
		struct held_reply *h = &uw->held[uw->held_head++];
		struct uring_conn *conn = conn_of(h->c);

		conn->inflight--;
		if (h->mark > conn->allowed)
			conn->allowed = h->mark;
		if (!h->c->closing)
			mark_dirty(h->c);
	}
	if (uw->held_head == uw->nheld)
		uw->held_head = uw->nheld = 0;
}

/* Sends replies or closes, for every client touched this turn. The AOF has
 * the turn's writes first; under appendfsync always the replies wait for
 * their sync in the held list while the worker goes on (aof.h). */
static void flush_dirty(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;
	uint64_t target;

again:
	release_held(uw);
	target = aof_turn_target();
	while (uw->dirty) {
		struct client *c = uw->dirty;
		struct uring_conn *conn = conn_of(c);

		uw->dirty = conn->next_dirty;
		conn->dirty = false;
		if (c->closing)
			continue;
		if (c->flags & CLIENT_CLOSE_ASAP) {
			uring_close_client(c);
			continue;
		}
		if (!target)
			conn->allowed = reply_produced(c);
		else if (reply_produced(c) > conn->allowed)
			hold_reply(uw, c, target);
		if (conn->sending)
			continue;
		if (client_has_replies(c)) {
			if (conn->allowed > c->net_out)
				start_send(c);
		} else if (c->flags & CLIENT_CLOSE_AFTER_REPLY) {
			uring_close_client(c);
		}
	}
	/* Woken by the AOF thread once the oldest held turn is durable; if
	 * it is already, its replies go at once. */
	if (uw->held_head < uw->nheld && aof_target_wait(w, uw->held[uw->held_head].target))
		goto again;
}

static void on_accept(struct worker *w, struct io_uring_cqe *cqe)
{
	struct client *c;

	if (!(cqe->flags & IORING_CQE_F_MORE) && !server.shutdown)
		arm_accept(w, (int)(cqe->user_data >> 3));
	if (cqe->res < 0)
		return;
	c = worker_accept(w, cqe->res);
	if (!c)
		return;
	c->engine_data = xcalloc(1, sizeof(struct uring_conn));
	arm_recv(c);
}

static void on_recv(struct client *c, struct io_uring_cqe *cqe)
{
	struct uring_worker *uw = c->worker->engine_data;
	struct uring_conn *conn = conn_of(c);
	bool more = cqe->flags & IORING_CQE_F_MORE;

	if (!more) {
		conn->recv_armed = false;
		conn->inflight--;
	}
	if (cqe->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		const char *data = buf_addr(uw, bid);
		size_t left = cqe->res > 0 ? (size_t)cqe->res : 0;

		while (left && !c->closing) {
			size_t room;
			char *dst = client_read_buffer(c, &room);
			size_t n = left < room ? left : room;

			memcpy(dst, data, n);
			data += n;
			left -= n;
			if (!worker_client_input(c, n))
				break;
		}
		recycle_buffer(uw, bid);
		if (!c->closing)
			mark_dirty(c);
	}
	if (c->closing)
		return;
	if (cqe->res == 0 || (cqe->res < 0 && cqe->res != -ENOBUFS)) {
		uring_close_client(c);
		return;
	}
	/* The ring ran dry: the bytes wait in the socket for the recv
	 * re-armed below, which finds more buffers. */
	if (cqe->res == -ENOBUFS)
		buf_grow(uw);
	if (!more)
		arm_recv(c);
}

static void on_send(struct client *c, struct io_uring_cqe *cqe)
{
	struct uring_conn *conn = conn_of(c);

	conn->sending = false;
	conn->inflight--;
	if (c->closing)
		return;
	if (cqe->res < 0) {
		uring_close_client(c);
		return;
	}
	worker_client_sent(c, (size_t)cqe->res);
	mark_dirty(c);
}

static void handle_cqe(struct worker *w, struct io_uring_cqe *cqe)
{
	uint64_t ud = cqe->user_data;
	struct client *c = (struct client *)(uintptr_t)(ud & ~OP_MASK);

	switch (ud & OP_MASK) {
	case OP_ACCEPT:
		on_accept(w, cqe);
		break;
	case OP_WAKE:
		worker_drain_mail(w);
		if (!(cqe->flags & IORING_CQE_F_MORE) && !server.shutdown)
			arm_wake(w);
		break;
	case OP_UDP:
		udp_serve(w, w->udp_fds[ud >> 3]);
		if (!(cqe->flags & IORING_CQE_F_MORE) && !server.shutdown)
			arm_udp(w, (int)(ud >> 3));
		break;
	case OP_RECV:
		on_recv(c, cqe);
		break;
	case OP_SEND:
		on_send(c, cqe);
		break;
	case OP_CANCEL:
		conn_of(c)->inflight--;
		break;
	}
}

/* Frees closed clients whose operations have all completed. */
static void reap_closed(struct uring_worker *uw)
{
	struct client **pp = &uw->closing;

	while (*pp) {
		struct client *c = *pp;

		if (conn_of(c)->inflight) {
			pp = &c->next_closing;
			continue;
		}
		*pp = c->next_closing;
		xfree(c->engine_data);
		c->engine_data = NULL;
		worker_client_free(c);
	}
}

static bool must_defer(struct uring_worker *uw, const struct io_uring_cqe *cqe)
{
	struct client *c = (struct client *)(uintptr_t)(cqe->user_data & ~OP_MASK);

	switch (cqe->user_data & OP_MASK) {
	case OP_UDP:
		return uw->nested;
	case OP_RECV:
		return (c->flags & CLIENT_PROTECTED) || conn_of(c)->deferred;
	default:
		return false;
	}
}

static void defer(struct uring_worker *uw, const struct io_uring_cqe *cqe)
{
	if (uw->ndeferred == uw->deferred_cap) {
		uw->deferred_cap = uw->deferred_cap ? 2 * uw->deferred_cap : 16;
		uw->deferred = xrealloc(uw->deferred, uw->deferred_cap * sizeof(*uw->deferred));
	}
	uw->deferred[uw->ndeferred++] = *cqe;
	if ((cqe->user_data & OP_MASK) == OP_RECV)
		conn_of((struct client *)(uintptr_t)(cqe->user_data & ~OP_MASK))->deferred++;
}

/* One completion at a time, each copied and consumed before it is handled:
 * a handler may run a busy script, whose turns reap the ring again. */
static unsigned process_completions(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;
	struct io_uring_cqe *cqe, copy;
	unsigned n = 0;

	while (!io_uring_peek_cqe(&uw->ring, &cqe)) {
		copy = *cqe;
		io_uring_cqe_seen(&uw->ring, cqe);
		if (must_defer(uw, &copy))
			defer(uw, &copy);
		else
			handle_cqe(w, &copy);
		n++;
	}
	return n;
}

/* The completions kept aside, in their order, once no script runs. */
static void replay_deferred(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;
	size_t i;

	for (i = 0; i < uw->ndeferred; i++) {
		struct io_uring_cqe copy = uw->deferred[i];

		if ((copy.user_data & OP_MASK) == OP_RECV)
			conn_of((struct client *)(uintptr_t)(copy.user_data & ~OP_MASK))->deferred--;
		handle_cqe(w, &copy);
	}
	uw->ndeferred = 0;
}

/* A turn from inside a busy script's command: sends, accepts, mail and the
 * other clients' commands (answered BUSY), without waiting. Closed clients
 * are not freed here: the script's own may be one. */
static void uring_poll_nested(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;
	bool outer = uw->nested;

	uw->nested = true;
	/* DEFER_TASKRUN: completions are posted only when this task asks. */
	io_uring_submit_and_get_events(&uw->ring);
	process_completions(w);
	flush_dirty(w);
	io_uring_submit(&uw->ring);
	uw->nested = outer;
}

static void uring_run(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;

	while (!server.shutdown) {
		struct __kernel_timespec ts;
		struct io_uring_cqe *cqe;
		int wait_ms = worker_wait_ms(w);

		ts.tv_sec = wait_ms / 1000;
		ts.tv_nsec = (long long)(wait_ms % 1000) * 1000000;
		io_uring_submit_and_wait_timeout(&uw->ring, &cqe, 1, &ts, NULL);
		process_completions(w);
		replay_deferred(w);
		/* Before the flush: what the cron answers (timeouts, clients a
		 * pause held) goes out this turn. */
		worker_cron(w);
		flush_dirty(w);
		reap_closed(uw);
	}
	/* Shutdown: close everyone, then wait (bounded) for the cancellations. */
	for (struct client *c = w->clients; c; c = c->next_in_worker)
		if (!c->closing)
			uring_close_client(c);
	for (int i = 0; i < 100 && uw->closing; i++) {
		struct __kernel_timespec ts = { 0, 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;

		io_uring_submit_and_wait_timeout(&uw->ring, &cqe, 1, &ts, NULL);
		process_completions(w);
		reap_closed(uw);
	}
}

static void uring_destroy(struct worker *w)
{
	struct uring_worker *uw = w->engine_data;

	/* Clients still waiting for completions go with the ring. */
	io_uring_queue_exit(&uw->ring);
	while (uw->closing) {
		struct client *c = uw->closing;

		uw->closing = c->next_closing;
		xfree(c->engine_data);
		worker_client_free(c);
	}
	munmap(uw->bufring, BUF_COUNT * sizeof(struct io_uring_buf));
	xfree(uw->deferred);
	xfree(uw->held);
	for (unsigned i = 0; i < uw->nchunks; i++)
		xfree(uw->chunks[i]);
	__atomic_fetch_sub(&pool_bytes, uw->nchunks * BUF_CHUNK_BYTES, __ATOMIC_RELAXED);
	xfree(uw);
	w->engine_data = NULL;
}

static void uring_wants_write(struct client *c)
{
	mark_dirty(c);
}

/* A socket the server opened itself (the link to a master). */
static struct client *uring_adopt(struct worker *w, int fd)
{
	struct client *c = worker_adopt(w, fd);

	c->engine_data = xcalloc(1, sizeof(struct uring_conn));
	arm_recv(c);
	return c;
}

const struct net_engine net_engine_uring = {
	.name = "io_uring",
	.init = uring_init,
	.run = uring_run,
	.destroy = uring_destroy,
	.wants_write = uring_wants_write,
	.close_client = uring_close_client,
	.adopt = uring_adopt,
	.poll_nested = uring_poll_nested,
};
