// SPDX-License-Identifier: BSD-3-Clause
/*
 * The UDP transport (transport.h): xkvd's datagram protocol, whose GET hits
 * the XDP program answers inside the kernel (docs/fastpath.md).
 *
 * A request datagram is a struct xkv_udp_hdr, one RESP command, then zeros up
 * to opts->udp_pad bytes of UDP payload: a reply is never larger than its
 * request, so the padding is the room a value has. send() cuts the RESP bytes
 * the connection hands it into one datagram per command and gives each a
 * fresh request id; recv() matches a reply to its request by that id, strips
 * the header and hands back the RESP reply alone, so the connection's RESP
 * reader counts it like a TCP reply.
 *
 * Requests in flight are a ring of {id, send time}, oldest first, in the order
 * the connection built them. The connection keeps its start times in the same
 * order, so the index of the answered request in the ring is the index of its
 * start time. A reply to a request that is not in flight (one expire() gave
 * up on, or a probe retried in open()) is dropped.
 *
 * One transport belongs to one connection, hence to one worker thread.
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

/* Datagrams per sendmmsg(). */
#define UDP_BATCH 32
/* open() asks PING this often until a reply comes or its timeout passes. */
#define UDP_PROBE_INTERVAL_MS 200

struct udp_inflight {
	uint32_t id;
	uint64_t sent; /* ns */
};

struct udp_state {
	unsigned pad;
	uint64_t token;
	uint32_t next_id;
	struct udp_inflight *ring; /* owned; requests in flight, oldest at head */
	unsigned head, count, cap;
	char *zeros; /* owned: pad bytes of padding */
	char dgram[TRANSPORT_UDP_MAX + 1];
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

/* Makes room for n more requests in flight. */
static int ring_reserve(struct udp_state *u, unsigned n)
{
	struct udp_inflight *ring;
	unsigned cap = u->cap ? u->cap : 16;

	if (u->count + n <= u->cap)
		return 0;
	while (cap < u->count + n)
		cap *= 2;
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

static void header_init(const struct udp_state *u, struct xkv_udp_hdr *h, uint32_t id,
			size_t cmd_len)
{
	memset(h, 0, sizeof(*h));
	h->magic = htons(XKV_UDP_MAGIC);
	h->version = XKV_UDP_VERSION;
	h->request_id = id;
	h->cmd_len = htons((uint16_t)cmd_len);
	h->token = u->token; /* raw: the server compares it as it is */
}

/* Zeros after the command, up to the padding. */
static size_t pad_after(const struct udp_state *u, size_t cmd_len)
{
	size_t used = sizeof(struct xkv_udp_hdr) + cmd_len;

	return used < u->pad ? u->pad - used : 0;
}

/*
 * Receives one datagram into u->dgram and checks it is a reply. Returns its
 * length, 0 for a datagram to ignore, or -errno.
 */
static ssize_t recv_reply(struct transport *t)
{
	struct udp_state *u = t->priv;
	const struct xkv_udp_hdr *h = (const void *)u->dgram;
	ssize_t n = recv(t->fd, u->dgram, sizeof(u->dgram), MSG_DONTWAIT);

	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(*h) || ntohs(h->magic) != XKV_UDP_MAGIC ||
	    h->version != XKV_UDP_VERSION || !(h->flags & XKV_F_REPLY) ||
	    ntohs(h->cmd_len) > (size_t)n - sizeof(*h))
		return 0;
	return n;
}

/*
 * Asks PING until a reply comes, so that a server that is not there fails
 * the connection now rather than losing every request of the step.
 */
static int udp_probe(struct transport *t, int timeout_ms)
{
	struct udp_state *u = t->priv;
	static const char ping[] = "*1\r\n$4\r\nPING\r\n";
	const uint64_t end = clock_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	uint64_t now;

	while ((now = clock_ns()) < end) {
		struct pollfd pfd = { .fd = t->fd, .events = POLLIN };
		uint64_t until = now + UDP_PROBE_INTERVAL_MS * NSEC_PER_MSEC;
		uint32_t id = u->next_id++;
		struct xkv_udp_hdr h;
		struct iovec iov[3] = {
			{ .iov_base = &h, .iov_len = sizeof(h) },
			{ .iov_base = (void *)ping, .iov_len = sizeof(ping) - 1 },
			{ .iov_base = u->zeros, .iov_len = pad_after(u, sizeof(ping) - 1) },
		};
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };

		header_init(u, &h, id, sizeof(ping) - 1);
		if (sendmsg(t->fd, &msg, MSG_NOSIGNAL) < 0 && errno != EAGAIN)
			return -errno;
		if (until > end)
			until = end;
		while ((now = clock_ns()) < until) {
			const struct xkv_udp_hdr *r = (const void *)u->dgram;
			ssize_t n;

			if (poll(&pfd, 1, (int)((until - now) / NSEC_PER_MSEC) + 1) < 0)
				return -errno;
			n = recv_reply(t);
			if (n == -EAGAIN || n == 0 || (n > 0 && r->request_id != id))
				continue;
			if (n < 0)
				return (int)n;
			/* "-NOAUTH": the server wants --udp-token. */
			if (ntohs(r->cmd_len) && u->dgram[sizeof(*r)] == '-')
				return !strncmp(u->dgram + sizeof(*r), "-NOAUTH", 7) ? -EACCES
										     : -EPROTO;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static int udp_open(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    const struct transport_opts *opts, int timeout_ms)
{
	struct udp_state *u = calloc(1, sizeof(*u));
	int fd = -1, err;

	if (!u)
		return -ENOMEM;
	u->pad = opts ? opts->udp_pad : TRANSPORT_UDP_PAD;
	u->token = opts ? opts->udp_token : 0;
	u->next_id = 1;
	u->zeros = calloc(1, u->pad + 1);
	if (!u->zeros) {
		err = -ENOMEM;
		goto end_free;
	}
	fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto end_free;
	}
	/* Connected: the kernel drops datagrams from anyone but the server. */
	if (connect(fd, addr, addrlen) < 0) {
		err = -errno;
		goto end_close;
	}
	t->fd = fd;
	t->priv = u;
	err = udp_probe(t, timeout_ms);
	if (err) {
		t->fd = -1;
		t->priv = NULL;
		goto end_close;
	}
	return 0;

end_close:
	close(fd);
end_free:
	free(u->zeros);
	free(u);
	return err;
}

static ssize_t udp_send(struct transport *t, const void *buf, size_t len)
{
	struct udp_state *u = t->priv;
	struct xkv_udp_hdr hdrs[UDP_BATCH];
	struct iovec iov[UDP_BATCH][3];
	struct mmsghdr msgs[UDP_BATCH];
	size_t lens[UDP_BATCH], done = 0;

	while (done < len) {
		unsigned n = 0;
		size_t off = done;
		uint64_t now;
		int sent;

		memset(msgs, 0, sizeof(msgs));
		while (n < UDP_BATCH && off < len) {
			size_t cl = cmd_length((const char *)buf + off, len - off);

			if (!cl)
				break;
			if (sizeof(struct xkv_udp_hdr) + cl > TRANSPORT_UDP_MAX)
				return done ? (ssize_t)done : -EMSGSIZE;
			header_init(u, &hdrs[n], u->next_id + n, cl);
			iov[n][0] =
				(struct iovec){ .iov_base = &hdrs[n], .iov_len = sizeof(hdrs[n]) };
			iov[n][1] = (struct iovec){ .iov_base = (char *)buf + off, .iov_len = cl };
			iov[n][2] =
				(struct iovec){ .iov_base = u->zeros, .iov_len = pad_after(u, cl) };
			msgs[n].msg_hdr.msg_iov = iov[n];
			msgs[n].msg_hdr.msg_iovlen = 3;
			lens[n] = cl;
			off += cl;
			n++;
		}
		/* The connection only ever hands over whole commands. */
		if (!n)
			return done ? (ssize_t)done : -EPROTO;
		if (ring_reserve(u, n))
			return done ? (ssize_t)done : -ENOMEM;
		sent = sendmmsg(t->fd, msgs, n, MSG_NOSIGNAL);
		if (sent <= 0)
			return done ? (ssize_t)done : sent < 0 ? -errno : -EAGAIN;
		now = clock_ns();
		for (int i = 0; i < sent; i++) {
			u->ring[(u->head + u->count++) % u->cap] =
				(struct udp_inflight){ .id = u->next_id++, .sent = now };
			done += lens[i];
		}
		if ((unsigned)sent < n)
			break;
	}
	return (ssize_t)done;
}

static ssize_t udp_recv(struct transport *t, void *buf, size_t len)
{
	struct udp_state *u = t->priv;
	const struct xkv_udp_hdr *h = (const void *)u->dgram;

	for (;;) {
		ssize_t n = recv_reply(t);
		size_t cl;
		int index;

		if (n < 0)
			return n;
		if (!n)
			continue;
		index = ring_take(u, h->request_id);
		if (index < 0)
			continue; /* late: already counted as lost */
		t->reply.index = (unsigned)index;
		t->reply.kernel = h->flags & XKV_F_KERNEL;
		if (h->flags & XKV_F_TRUNCATED) {
			/* No RESP comes with it: say what happened as an error reply. */
			int w = snprintf(buf, len,
					 "-TRUNCATED a %u-byte value does not fit a %u-byte "
					 "request: raise --udp-pad\r\n",
					 (unsigned)ntohl(h->value_len), u->pad);

			return w > 0 && (size_t)w < len ? w : -EMSGSIZE;
		}
		cl = ntohs(h->cmd_len);
		if (cl > len)
			return -EMSGSIZE;
		memcpy(buf, u->dgram + sizeof(*h), cl);
		/* An empty reply is not RESP: make the connection see a protocol error. */
		return cl ? (ssize_t)cl : -EPROTO;
	}
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

static void udp_close(struct transport *t)
{
	struct udp_state *u = t->priv;

	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (u) {
		free(u->ring);
		free(u->zeros);
		free(u);
	}
	t->priv = NULL;
}

const struct transport_ops transport_udp = {
	.name = "udp",
	.datagram = true,
	.open = udp_open,
	.send = udp_send,
	.recv = udp_recv,
	.expire = udp_expire,
	.close = udp_close,
};
