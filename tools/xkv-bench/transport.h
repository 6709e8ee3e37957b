/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport: how a connection moves bytes. The connection code (conn.c)
 * builds requests and counts replies; the transport only opens a socket to
 * the server and sends and receives on it, nonblocking, so that the worker's
 * epoll loop can wait on `fd`.
 *
 * Two transports: TCP (a byte stream, replies in order) and UDP, xkvd's
 * datagram protocol (struct xkv_udp_hdr in shared/xkv_abi.h), whose GET hits
 * the kernel answers. A datagram transport differs in four ways the
 * connection and the worker must know about (ops->datagram):
 *   - each request travels alone and may be lost: expire() forgets the ones
 *     that waited too long, and the connection counts them as lost;
 *   - replies may come back in another order than their requests (the kernel
 *     answers a hit before the daemon answers an earlier miss): each reply
 *     says in t->reply which request in flight it answers, so latencies pair
 *     with the right start times;
 *   - t->reply also says whether the kernel answered it;
 *   - the connections of one worker thread share one socket, a struct
 *     transport_group, so that the requests of all of them leave in one
 *     sendmmsg() and their replies come back in one recvmmsg(): a thread pays
 *     a few system calls per turn of its loop, not two per request, and the
 *     step measures the server rather than the load generator. send() only
 *     queues; group_flush() sends; group_drain() hands each reply to its
 *     connection's transport. Such a transport has no recv() and no socket
 *     of its own: t->fd is the group's, for the worker's epoll to watch once.
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
/* UDP: most connections one thread's group serves, and most requests in flight on one. */
#define TRANSPORT_UDP_MAX_CONNS 4095
#define TRANSPORT_UDP_MAX_WINDOW (1U << 19)

struct transport;
struct transport_group;

/*
 * group_drain() calls this for each reply to a member transport t, with
 * t->reply filled in: len bytes of RESP at buf, or a negative errno in len
 * (-EPROTO: the reply is not one the connection can count). It may close
 * t, but must not send: the buffers are the group's until the drain returns.
 */
typedef void (*transport_reply_fn)(struct transport *t, const char *buf, ssize_t len, void *arg);

/* Options from the command line; only the UDP transport has any. */
struct transport_opts {
	unsigned udp_pad;   /* bytes of UDP payload a request is padded to with zeros */
	uint64_t udp_token; /* xkv_udp_hdr.token: the server's fastpath-token, or 0 */
};

struct transport_ops {
	const char *name;
	bool datagram; /* see the top of this file */
	/*
	 * Connects to addr within timeout_ms and leaves t->fd nonblocking; a
	 * datagram transport joins t->group instead, which must be open. 0 or
	 * -errno.
	 */
	int (*open)(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    const struct transport_opts *opts, int timeout_ms);
	/*
	 * Bytes sent (possibly fewer than len), or -errno (-EAGAIN: full). A
	 * datagram transport takes whole RESP commands only, one per datagram,
	 * and queues them in its group until group_flush().
	 */
	ssize_t (*send)(struct transport *t, const void *buf, size_t len);
	/*
	 * Stream only: bytes received, 0 when the server closed, or -errno
	 * (-EAGAIN: none).
	 */
	ssize_t (*recv)(struct transport *t, void *buf, size_t len);
	/*
	 * Datagram only: forgets the requests in flight sent before `deadline`
	 * (CLOCK_MONOTONIC ns), which are always the oldest; returns how many.
	 * Their replies, if they ever come, are dropped.
	 */
	unsigned (*expire)(struct transport *t, uint64_t deadline);
	void (*close)(struct transport *t);

	/* Datagram only: the socket the connections of one thread share. */
	/*
	 * Opens g->fd towards addr and checks within timeout_ms that a server
	 * answers there (PING). 0 or -errno; release with group_close() anyway.
	 */
	int (*group_open)(struct transport_group *g, const struct sockaddr *addr, socklen_t addrlen,
			  const struct transport_opts *opts, int timeout_ms);
	/*
	 * Sends every request its members queued, in as few sendmmsg() as it
	 * can. 0, -EAGAIN (the socket is full: the rest stays queued; wait for
	 * EPOLLOUT) or -errno.
	 */
	int (*group_flush)(struct transport_group *g);
	/*
	 * Receives what arrived, a batch of datagrams per recvmmsg(), and calls
	 * fn for each reply to a request in flight; the others are dropped. 0
	 * once the socket is empty (or after a bounded number of batches), or
	 * -errno from the socket.
	 */
	int (*group_drain)(struct transport_group *g, transport_reply_fn fn, void *arg);
	void (*group_close)(struct transport_group *g);
};

/* What the connections of one worker thread share (datagram transports). */
struct transport_group {
	const struct transport_ops *ops;
	int fd;	    /* -1 when closed */
	void *priv; /* the transport's own state, freed by group_close() */
};

struct transport {
	const struct transport_ops *ops;
	int fd;			       /* -1 when closed */
	void *priv;		       /* the transport's own state, freed by close() */
	struct transport_group *group; /* datagram: set before open(), not owned */
	/* Datagram: the reply group_drain() is handing over. */
	struct {
		unsigned index; /* the request in flight it answers, 0 the oldest */
		bool kernel;	/* answered by the XDP program (XKV_F_KERNEL) */
		uint64_t at;	/* ns: when the batch that carried it was received */
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
