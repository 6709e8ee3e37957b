// SPDX-License-Identifier: BSD-3-Clause
/*
 * The UDP transport (transport.h): xkvd's datagram protocol, whose GET hits
 * the XDP program answers inside the kernel (docs/fastpath.md).
 *
 * A request datagram is a struct xkv_udp_hdr, one RESP command, then zeros up
 * to opts->udp_pad bytes of UDP payload: a reply is never larger than its
 * request, so the padding is the room a value has.
 *
 * The connections (members) of one worker thread share one connected socket,
 * the group. send() cuts the RESP bytes a connection hands it into commands,
 * gives each a request id and copies header and command into the group's
 * queue; group_flush() sends the whole queue with sendmmsg(), many datagrams
 * per call; group_drain() receives with recvmmsg() and hands each reply,
 * header stripped, to the member its id names, so the connection's RESP
 * reader counts it like a TCP reply. One sendmmsg(), one epoll wait and one
 * recvmmsg() per turn of the worker's loop serve every connection of the
 * thread: with generic XDP on loopback the program runs in the sender's own
 * system call, so a request that cost two system calls of its own would
 * measure mostly the client.
 *
 * A request id is the member's index in its top UDP_MEMBER_BITS bits and the
 * member's own sequence number below: a reply finds its member without a
 * search, and a member's ids in flight never repeat (its window is below
 * 2^UDP_SEQ_BITS; main.c bounds both).
 *
 * A member's requests in flight are a ring of {id, send time}, oldest first,
 * in the order the connection built them. The connection keeps its start
 * times in the same order, so the index of the answered request in the ring
 * is the index of its start time. A reply to a request that is not in flight
 * (one expire() gave up on, one of a closed member, the probe's) is dropped.
 *
 * A group and its members belong to one worker thread.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/types.h>

#include "clock.h"
#include "transport.h"
#include "xkv_abi.h"

/* Datagrams per sendmmsg() and per recvmmsg(). */
#define UDP_BATCH 64
/* recvmmsg() calls per drain before the worker's other work gets a turn. */
#define UDP_DRAIN_BATCHES 8
/* open() asks PING this often until a reply comes or its timeout passes. */
#define UDP_PROBE_INTERVAL_MS 200
/* Request ids: member index above, the member's sequence number below. */
#define UDP_MEMBER_BITS 12
#define UDP_SEQ_BITS (32 - UDP_MEMBER_BITS)
#define UDP_SEQ_MASK ((1U << UDP_SEQ_BITS) - 1)
/* The last member index is the probe's: no member answers to it. */
#define UDP_PROBE_MEMBER ((1U << UDP_MEMBER_BITS) - 1)
/* Socket buffers asked for: room for many replies of many members at once. */
#define UDP_SOCKBUF (4 << 20)

_Static_assert(TRANSPORT_UDP_MAX_CONNS <= UDP_PROBE_MEMBER, "member ids fit");
_Static_assert(TRANSPORT_UDP_MAX_WINDOW <= UDP_SEQ_MASK, "a window's ids never repeat");

struct udp_inflight {
	uint32_t id;
	uint64_t sent; /* ns */
};

/* One member: a connection's requests in flight. */
struct udp_state {
	struct udp_group *g;
	unsigned member;
	uint32_t next_seq;
	struct udp_inflight *ring; /* owned; oldest at head */
	unsigned head, count, cap;
};

/* A request waiting for group_flush(): header and command at arena + off. */
struct udp_queued {
	size_t off, len;
};

struct udp_group {
	unsigned pad;
	uint64_t token;
	struct transport **members; /* owned array; NULL once a member closed */
	unsigned nmembers, members_cap;
	char *zeros; /* owned: pad bytes of padding */
	/* The send queue (owned), emptied by group_flush(). */
	char *arena;
	size_t arena_len, arena_cap;
	struct udp_queued *q;
	unsigned qhead, qlen, qcap;
	/* The receive batch: UDP_BATCH buffers of `slot` bytes (owned). */
	char *rbuf;
	size_t slot;
	uint32_t probe_seq;
	char text[160]; /* a TRUNCATED reply said as an error reply */
};

/* Digits up to CRLF at *p; advances *p past the CRLF. -1 if malformed or cut short. */
static long long parse_line_num(const char **p, const char *end)
{
	long long v = 0;
	const char *s = *p;

	if (s == end || *s < '0' || *s > '9')
		return -1;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (*s++ - '0');
		if (v > TRANSPORT_UDP_MAX)
			return -1;
	}
	if (end - s < 2 || s[0] != '\r' || s[1] != '\n')
		return -1;
	*p = s + 2;
	return v;
}

/*
 * Length of the RESP command (an array of bulk strings, as workload.c writes
 * it) at the start of buf, or 0 if it is cut short or not one.
 */
static size_t cmd_length(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	long long argc;

	if (!len || *p++ != '*')
		return 0;
	argc = parse_line_num(&p, end);
	if (argc < 1)
		return 0;
	while (argc--) {
		long long n;

		if (p == end || *p++ != '$')
			return 0;
		n = parse_line_num(&p, end);
		if (n < 0 || end - p < n + 2)
			return 0;
		p += n + 2;
	}
	return (size_t)(p - buf);
}

/* Grows *p (of *cap elements of size `size`) to hold at least `need`. 0 or -ENOMEM. */
static int grow(void **p, unsigned *cap, unsigned need, size_t size)
{
	unsigned c = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*p, (size_t)c * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

/* Makes room for one more request in flight. */
static int ring_reserve(struct udp_state *u)
{
	struct udp_inflight *ring;
	unsigned cap = u->cap ? u->cap * 2 : 16;

	if (u->count < u->cap)
		return 0;
	ring = malloc(cap * sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (unsigned i = 0; i < u->count; i++)
		ring[i] = u->ring[(u->head + i) % u->cap];
	free(u->ring);
	u->ring = ring;
	u->cap = cap;
	u->head = 0;
	return 0;
}

/* Removes the request with `id`; returns its index (0: oldest) or -1 if it is not in flight. */
static int ring_take(struct udp_state *u, uint32_t id)
{
	unsigned i;

	for (i = 0; i < u->count; i++)
		if (u->ring[(u->head + i) % u->cap].id == id)
			break;
	if (i == u->count)
		return -1;
	/* Close the gap by moving the older ones up one place. */
	for (unsigned j = i; j > 0; j--)
		u->ring[(u->head + j) % u->cap] = u->ring[(u->head + j - 1) % u->cap];
	u->head = (u->head + 1) % u->cap;
	u->count--;
	return (int)i;
}

static void header_init(const struct udp_group *g, struct xkv_udp_hdr *h, uint32_t id,
			size_t cmd_len)
{
	memset(h, 0, sizeof(*h));
	h->magic = htons(XKV_UDP_MAGIC);
	h->version = XKV_UDP_VERSION;
	h->request_id = id;
	h->cmd_len = htons((uint16_t)cmd_len);
	h->token = g->token; /* raw: the server compares it as it is */
}

/* Zeros after header and command, up to the padding. */
static size_t pad_after(const struct udp_group *g, size_t used)
{
	return used < g->pad ? g->pad - used : 0;
}

/* The receive buffers hold `bytes` each: a reply is never larger than its request. */
static int rbuf_reserve(struct udp_group *g, size_t bytes)
{
	char *n;

	if (bytes <= g->slot)
		return 0;
	n = realloc(g->rbuf, UDP_BATCH * bytes);
	if (!n)
		return -ENOMEM;
	g->rbuf = n;
	g->slot = bytes;
	return 0;
}

/* Whether a datagram of n bytes is a well-formed reply. */
static bool is_reply(const char *d, size_t n)
{
	const struct xkv_udp_hdr *h = (const void *)d;

	return n >= sizeof(*h) && ntohs(h->magic) == XKV_UDP_MAGIC &&
	       h->version == XKV_UDP_VERSION && (h->flags & XKV_F_REPLY) &&
	       ntohs(h->cmd_len) <= n - sizeof(*h);
}

/*
 * Asks PING until a reply comes, so that a server that is not there fails
 * the step now rather than losing every request of it.
 */
static int udp_probe(struct transport_group *tg, int timeout_ms)
{
	struct udp_group *g = tg->priv;
	static const char ping[] = "*1\r\n$4\r\nPING\r\n";
	const uint64_t end = clock_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	const struct xkv_udp_hdr *r = (const void *)g->rbuf;
	uint64_t now;

	while ((now = clock_ns()) < end) {
		struct pollfd pfd = { .fd = tg->fd, .events = POLLIN };
		uint64_t until = now + UDP_PROBE_INTERVAL_MS * NSEC_PER_MSEC;
		uint32_t id = UDP_PROBE_MEMBER << UDP_SEQ_BITS | (g->probe_seq++ & UDP_SEQ_MASK);
		struct xkv_udp_hdr h;
		struct iovec iov[3] = {
			{ .iov_base = &h, .iov_len = sizeof(h) },
			{ .iov_base = (void *)ping, .iov_len = sizeof(ping) - 1 },
			{ .iov_base = g->zeros,
			  .iov_len = pad_after(g, sizeof(h) + sizeof(ping) - 1) },
		};
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };

		header_init(g, &h, id, sizeof(ping) - 1);
		if (sendmsg(tg->fd, &msg, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
			return -errno;
		if (until > end)
			until = end;
		while ((now = clock_ns()) < until) {
			ssize_t n;

			if (poll(&pfd, 1, (int)((until - now) / NSEC_PER_MSEC) + 1) < 0)
				return -errno;
			n = recv(tg->fd, g->rbuf, g->slot, MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN)
				return -errno;
			if (n <= 0 || !is_reply(g->rbuf, (size_t)n) || r->request_id != id)
				continue;
			/* "-NOAUTH": the server wants --udp-token. */
			if (ntohs(r->cmd_len) && g->rbuf[sizeof(*r)] == '-')
				return !strncmp(g->rbuf + sizeof(*r), "-NOAUTH", 7) ? -EACCES
										    : -EPROTO;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static void udp_group_close(struct transport_group *tg)
{
	struct udp_group *g = tg->priv;

	if (tg->fd >= 0)
		close(tg->fd);
	tg->fd = -1;
	if (g) {
		free(g->members);
		free(g->zeros);
		free(g->arena);
		free(g->q);
		free(g->rbuf);
		free(g);
	}
	tg->priv = NULL;
}

static int udp_group_open(struct transport_group *tg, const struct sockaddr *addr,
			  socklen_t addrlen, const struct transport_opts *opts, int timeout_ms)
{
	struct udp_group *g = calloc(1, sizeof(*g));
	int bufsz = UDP_SOCKBUF;

	tg->ops = &transport_udp;
	tg->fd = -1;
	tg->priv = g;
	if (!g)
		return -ENOMEM;
	g->pad = opts ? opts->udp_pad : TRANSPORT_UDP_PAD;
	g->token = opts ? opts->udp_token : 0;
	g->zeros = calloc(1, g->pad + 1);
	if (!g->zeros || rbuf_reserve(g, g->pad > 2048 ? g->pad : 2048))
		return -ENOMEM;
	tg->fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tg->fd < 0)
		return -errno;
	/*
	 * Many members' replies queue on one socket: ask for room (forced where
	 * allowed, past rmem_max). A drop would only count as lost, but would
	 * then measure the buffer, not the server.
	 */
	if (setsockopt(tg->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)))
		setsockopt(tg->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (setsockopt(tg->fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz)))
		setsockopt(tg->fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	/* Connected: the kernel drops datagrams from anyone but the server. */
	if (connect(tg->fd, addr, addrlen) < 0)
		return -errno;
	return udp_probe(tg, timeout_ms);
}

static int udp_open(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    const struct transport_opts *opts, int timeout_ms)
{
	struct transport_group *tg = t->group;
	struct udp_group *g;
	struct udp_state *u;

	(void)addr, (void)addrlen, (void)opts, (void)timeout_ms;
	if (!tg || tg->fd < 0 || tg->ops != &transport_udp)
		return -EINVAL;
	g = tg->priv;
	if (g->nmembers >= TRANSPORT_UDP_MAX_CONNS)
		return -E2BIG;
	if (grow((void **)&g->members, &g->members_cap, g->nmembers + 1, sizeof(*g->members)))
		return -ENOMEM;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->g = g;
	u->member = g->nmembers;
	g->members[g->nmembers++] = t;
	t->fd = tg->fd;
	t->priv = u;
	return 0;
}

/* Copies one request (header and cmd_len bytes of command) into the group's queue. */
static int queue_request(struct udp_group *g, uint32_t id, const char *cmd, size_t cmd_len)
{
	const size_t len = sizeof(struct xkv_udp_hdr) + cmd_len;
	const size_t dgram = len + pad_after(g, len);
	struct xkv_udp_hdr h;

	if (grow((void **)&g->q, &g->qcap, g->qlen + 1, sizeof(*g->q)) ||
	    rbuf_reserve(g, dgram + 1))
		return -ENOMEM;
	if (g->arena_cap - g->arena_len < len) {
		size_t cap = g->arena_cap ? g->arena_cap : 4096;
		char *n;

		while (cap - g->arena_len < len)
			cap *= 2;
		n = realloc(g->arena, cap);
		if (!n)
			return -ENOMEM;
		g->arena = n;
		g->arena_cap = cap;
	}
	header_init(g, &h, id, cmd_len);
	memcpy(g->arena + g->arena_len, &h, sizeof(h));
	memcpy(g->arena + g->arena_len + sizeof(h), cmd, cmd_len);
	g->q[g->qlen++] = (struct udp_queued){ .off = g->arena_len, .len = len };
	g->arena_len += len;
	return 0;
}

static ssize_t udp_send(struct transport *t, const void *buf, size_t len)
{
	struct udp_state *u = t->priv;
	struct udp_group *g = u->g;
	const uint64_t now = clock_ns();
	size_t done = 0;

	while (done < len) {
		size_t cl = cmd_length((const char *)buf + done, len - done);
		uint32_t id;

		/* The connection only ever hands over whole commands. */
		if (!cl)
			return done ? (ssize_t)done : -EPROTO;
		if (sizeof(struct xkv_udp_hdr) + cl > TRANSPORT_UDP_MAX)
			return done ? (ssize_t)done : -EMSGSIZE;
		if (ring_reserve(u))
			return done ? (ssize_t)done : -ENOMEM;
		id = u->member << UDP_SEQ_BITS | (u->next_seq & UDP_SEQ_MASK);
		if (queue_request(g, id, (const char *)buf + done, cl))
			return done ? (ssize_t)done : -ENOMEM;
		u->next_seq++;
		/* In flight from now: the flush follows within this turn of the loop. */
		u->ring[(u->head + u->count++) % u->cap] =
			(struct udp_inflight){ .id = id, .sent = now };
		done += cl;
	}
	return (ssize_t)done;
}

static int udp_group_flush(struct transport_group *tg)
{
	struct udp_group *g = tg->priv;
	struct iovec iov[UDP_BATCH][2];
	struct mmsghdr msgs[UDP_BATCH];

	while (g->qhead < g->qlen) {
		unsigned n = g->qlen - g->qhead < UDP_BATCH ? g->qlen - g->qhead : UDP_BATCH;
		int sent;

		memset(msgs, 0, n * sizeof(msgs[0]));
		for (unsigned i = 0; i < n; i++) {
			const struct udp_queued *r = &g->q[g->qhead + i];

			iov[i][0] =
				(struct iovec){ .iov_base = g->arena + r->off, .iov_len = r->len };
			iov[i][1] = (struct iovec){ .iov_base = g->zeros,
						    .iov_len = pad_after(g, r->len) };
			msgs[i].msg_hdr.msg_iov = iov[i];
			msgs[i].msg_hdr.msg_iovlen = 2;
		}
		sent = sendmmsg(tg->fd, msgs, n, MSG_NOSIGNAL);
		if (sent < 0 && errno == EINTR)
			continue;
		if (sent < 0 && errno == EAGAIN)
			return -EAGAIN;
		if (sent < 0) {
			int err = -errno;

			/* Not sent, and the members that queued them are about to be failed. */
			g->qhead = g->qlen = 0;
			g->arena_len = 0;
			return err;
		}
		g->qhead += (unsigned)sent;
	}
	g->qhead = g->qlen = 0;
	g->arena_len = 0;
	return 0;
}

/* Hands one received datagram of n bytes (cut short if `cut`) to its member. */
static void udp_dispatch(struct udp_group *g, const char *d, size_t n, bool cut, uint64_t now,
			 transport_reply_fn fn, void *arg)
{
	const struct xkv_udp_hdr *h = (const void *)d;
	unsigned member;
	struct transport *t;
	int index;

	if (!is_reply(d, n))
		return;
	member = h->request_id >> UDP_SEQ_BITS;
	if (member >= g->nmembers || !(t = g->members[member]))
		return;
	index = ring_take(t->priv, h->request_id);
	if (index < 0)
		return; /* late: already counted as lost */
	t->reply.index = (unsigned)index;
	t->reply.kernel = h->flags & XKV_F_KERNEL;
	t->reply.at = now;
	if (h->flags & XKV_F_TRUNCATED) {
		/* No RESP comes with it: say what happened as an error reply. */
		int w = snprintf(g->text, sizeof(g->text),
				 "-TRUNCATED a %u-byte value does not fit a %u-byte "
				 "request: raise --udp-pad\r\n",
				 (unsigned)ntohl(h->value_len), g->pad);

		fn(t, g->text, w > 0 && (size_t)w < sizeof(g->text) ? w : -EMSGSIZE, arg);
		return;
	}
	/* Larger than its request, or empty: not a reply the connection can count. */
	if (cut || !h->cmd_len) {
		fn(t, NULL, -EPROTO, arg);
		return;
	}
	fn(t, d + sizeof(*h), ntohs(h->cmd_len), arg);
}

static int udp_group_drain(struct transport_group *tg, transport_reply_fn fn, void *arg)
{
	struct udp_group *g = tg->priv;
	struct iovec iov[UDP_BATCH];
	struct mmsghdr msgs[UDP_BATCH];

	for (unsigned b = 0; b < UDP_DRAIN_BATCHES; b++) {
		uint64_t now;
		int n;

		memset(msgs, 0, sizeof(msgs));
		for (unsigned i = 0; i < UDP_BATCH; i++) {
			iov[i] = (struct iovec){ .iov_base = g->rbuf + i * g->slot,
						 .iov_len = g->slot };
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(tg->fd, msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		now = clock_ns();
		for (int i = 0; i < n; i++)
			udp_dispatch(g, g->rbuf + i * g->slot, msgs[i].msg_len,
				     msgs[i].msg_hdr.msg_flags & MSG_TRUNC, now, fn, arg);
		/* A short batch emptied the socket: epoll says when more comes. */
		if (n < UDP_BATCH)
			return 0;
	}
	return 0;
}

static unsigned udp_expire(struct transport *t, uint64_t deadline)
{
	struct udp_state *u = t->priv;
	unsigned n = 0;

	while (u && u->count && u->ring[u->head].sent < deadline) {
		u->head = (u->head + 1) % u->cap;
		u->count--;
		n++;
	}
	return n;
}

/* Leaves the group; the socket is the group's. Requests still queued go out, unanswered. */
static void udp_close(struct transport *t)
{
	struct udp_state *u = t->priv;

	if (u) {
		u->g->members[u->member] = NULL;
		free(u->ring);
		free(u);
	}
	t->fd = -1;
	t->priv = NULL;
}

const struct transport_ops transport_udp = {
	.name = "udp",
	.datagram = true,
	.open = udp_open,
	.send = udp_send,
	.expire = udp_expire,
	.close = udp_close,
	.group_open = udp_group_open,
	.group_flush = udp_group_flush,
	.group_drain = udp_group_drain,
	.group_close = udp_group_close,
};
