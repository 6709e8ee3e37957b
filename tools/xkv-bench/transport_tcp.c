// SPDX-License-Identifier: BSD-3-Clause
/*
 * The TCP transport (transport.h): a nonblocking stream socket with Nagle
 * off, since pipelined requests are already written in batches and a lone
 * request must not wait for an ACK.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transport.h"

static int tcp_open(struct transport *t, const struct sockaddr *addr, socklen_t addrlen,
		    const struct transport_opts *opts, int timeout_ms)
{
	struct pollfd pfd;
	int fd, one = 1, err = 0, soerr = 0;
	socklen_t errlen = sizeof(soerr);

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, addr, addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err = -errno;
			goto end_close;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		err = poll(&pfd, 1, timeout_ms);
		if (err <= 0) {
			err = err ? -errno : -ETIMEDOUT;
			goto end_close;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &errlen) < 0) {
			err = -errno;
			goto end_close;
		}
		if (soerr) {
			err = -soerr;
			goto end_close;
		}
	}
	t->fd = fd;
	t->priv = NULL;
	return 0;

end_close:
	close(fd);
	return err;
}

static ssize_t tcp_send(struct transport *t, const void *buf, size_t len)
{
	ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL);

	return n < 0 ? -errno : n;
}

static ssize_t tcp_recv(struct transport *t, void *buf, size_t len)
{
	ssize_t n = recv(t->fd, buf, len, 0);

	return n < 0 ? -errno : n;
}

static void tcp_close(struct transport *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

const struct transport_ops transport_tcp = {
	.name = "tcp",
	.open = tcp_open,
	.send = tcp_send,
	.recv = tcp_recv,
	.close = tcp_close,
};

const struct transport_ops *transport_find(const char *name)
{
	static const struct transport_ops *const all[] = { &transport_tcp, &transport_udp };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, all[i]->name))
			return all[i];
	return NULL;
}

int transport_resolve(const char *host, unsigned port, struct sockaddr_storage *addr,
		      socklen_t *addrlen, const char **why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	int err;

	snprintf(service, sizeof(service), "%u", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err) {
		*why = gai_strerror(err);
		return -1;
	}
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}
