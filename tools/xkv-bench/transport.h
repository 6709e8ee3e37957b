/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport: how a connection moves bytes. The connection code (conn.c)
 * builds requests and counts replies; the transport only opens a socket to
 * the server and sends and receives on it, nonblocking, so that the worker's
 * epoll loop can wait on `fd`.
 *
 * TCP is the only transport today. The UDP fast path will be a second
 * struct transport_ops: its open() makes a connected datagram socket and its
 * send()/recv() frame requests in datagrams, with whatever request ids the
 * fast path's wire format needs kept in `priv`.
 */
#ifndef XKV_BENCH_TRANSPORT_H
#define XKV_BENCH_TRANSPORT_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

struct transport;

struct transport_ops {
	const char *name;
	/*
	 * Connects to addr within timeout_ms and leaves t->fd nonblocking.
	 * 0 or -errno.
	 */
	int (*open)(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    int timeout_ms);
	/* Bytes sent (possibly fewer than len), or -errno (-EAGAIN: full). */
	ssize_t (*send)(struct transport *t, const void *buf, size_t len);
	/* Bytes received, 0 when the server closed, or -errno (-EAGAIN: none). */
	ssize_t (*recv)(struct transport *t, void *buf, size_t len);
	void (*close)(struct transport *t);
};

struct transport {
	const struct transport_ops *ops;
	int fd;	    /* -1 when closed */
	void *priv; /* the transport's own state, freed by close() */
};

extern const struct transport_ops transport_tcp;

/* The ops called `name` ("tcp"), or NULL. */
const struct transport_ops *transport_find(const char *name);
/*
 * Resolves host and port into *addr (the first address getaddrinfo gives).
 * 0, or -1 with *why set to getaddrinfo's message (static storage).
 */
int transport_resolve(const char *host, unsigned port, struct sockaddr_storage *addr,
		      socklen_t *addrlen, const char **why);

#endif /* XKV_BENCH_TRANSPORT_H */
