/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport: how a connection moves bytes. The connection code (conn.c)
 * builds requests and counts replies; the transport only opens a socket to
 * the server and sends and receives on it, nonblocking, so that the worker's
 * epoll loop can wait on `fd`.
 *
 * Two transports: TCP (a byte stream, replies in order) and UDP, xkvd's
 * datagram protocol (struct xkv_udp_hdr in shared/xkv_abi.h), whose GET hits
 * the kernel answers. A datagram transport differs in three ways the
 * connection must know about (ops->datagram):
 *   - each request travels alone and may be lost: expire() forgets the ones
 *     that waited too long, and the connection counts them as lost;
 *   - replies may come back in another order than their requests (the kernel
 *     answers a hit before the daemon answers an earlier miss): recv() hands
 *     back one whole reply at a time and says in t->reply which request in
 *     flight it answers, so latencies pair with the right start times;
 *   - t->reply also says whether the kernel answered it.
 * The request ids and send times this needs are kept in `priv`.
 */
#ifndef XKV_BENCH_TRANSPORT_H
#define XKV_BENCH_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The UDP payload a request is padded to by default (--udp-pad). */
#define TRANSPORT_UDP_PAD 1200
/* Largest UDP payload over IPv4. */
#define TRANSPORT_UDP_MAX 65507

struct transport;

/* Options from the command line; only the UDP transport has any. */
struct transport_opts {
	unsigned udp_pad;   /* bytes of UDP payload a request is padded to with zeros */
	uint64_t udp_token; /* xkv_udp_hdr.token: the server's fastpath-token, or 0 */
};

struct transport_ops {
	const char *name;
	bool datagram; /* see the top of this file */
	/*
	 * Connects to addr within timeout_ms and leaves t->fd nonblocking.
	 * 0 or -errno.
	 */
	int (*open)(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    const struct transport_opts *opts, int timeout_ms);
	/*
	 * Bytes sent (possibly fewer than len), or -errno (-EAGAIN: full). A
	 * datagram transport takes whole RESP commands only, one per datagram.
	 */
	ssize_t (*send)(struct transport *t, const void *buf, size_t len);
	/*
	 * Bytes received, 0 when the server closed, or -errno (-EAGAIN: none).
	 * A datagram transport returns exactly one reply and fills t->reply.
	 */
	ssize_t (*recv)(struct transport *t, void *buf, size_t len);
	/*
	 * Datagram only: forgets the requests in flight sent before `deadline`
	 * (CLOCK_MONOTONIC ns), which are always the oldest; returns how many.
	 * Their replies, if they ever come, are dropped.
	 */
	unsigned (*expire)(struct transport *t, uint64_t deadline);
	void (*close)(struct transport *t);
};

struct transport {
	const struct transport_ops *ops;
	int fd;	    /* -1 when closed */
	void *priv; /* the transport's own state, freed by close() */
	/* Datagram: what the last recv() that returned bytes received. */
	struct {
		unsigned index; /* the request in flight it answers, 0 the oldest */
		bool kernel;	/* answered by the XDP program (XKV_F_KERNEL) */
	} reply;
};

extern const struct transport_ops transport_tcp;
extern const struct transport_ops transport_udp;

/* The ops called `name` ("tcp", "udp"), or NULL. */
const struct transport_ops *transport_find(const char *name);
/*
 * Resolves host and port into *addr (the first address getaddrinfo gives).
 * 0, or -1 with *why set to getaddrinfo's message (static storage).
 */
int transport_resolve(const char *host, unsigned port, struct sockaddr_storage *addr,
		      socklen_t *addrlen, const char **why);

#endif /* XKV_BENCH_TRANSPORT_H */
