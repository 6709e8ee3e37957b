// SPDX-License-Identifier: BSD-3-Clause
/*
 * vconn: blocking RESP connection (vconn.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vconn.h"

int vconn_open(struct vconn *c, const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	char ports[16];
	int one = 1, ret;

	snprintf(ports, sizeof(ports), "%d", port);
	ret = getaddrinfo(host, ports, &hints, &ai);
	if (ret)
		return -EHOSTUNREACH;
	c->fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen)) {
		ret = -errno;
		if (c->fd >= 0)
			close(c->fd);
		freeaddrinfo(ai);
		return ret;
	}
	freeaddrinfo(ai);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->cap = 1 << 16;
	c->buf = malloc(c->cap);
	c->start = c->end = 0;
	return 0;
}

void vconn_close(struct vconn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
}

int vconn_send(struct vconn *c, const void *p, size_t len)
{
	const char *q = p;

	while (len) {
		ssize_t n = send(c->fd, q, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		q += n;
		len -= (size_t)n;
	}
	return 0;
}

/* End of the value at buf[i..len): its offset past it, 0 if incomplete, -1 if
 * not RESP. Aggregates recurse (replies here are shallow). */
static long resp_end(const char *buf, size_t len, size_t i, int depth)
{
	const char *nl;
	long n, k;

	if (i >= len || depth > 16)
		return i >= len ? 0 : -1;
	nl = memchr(buf + i, '\n', len - i);
	if (!nl)
		return 0;
	k = nl - buf + 1;
	switch (buf[i]) {
	case '+':
	case '-':
	case ':':
	case '_':
	case ',':
	case '#':
	case '(':
		return k;
	case '$':
	case '!':
	case '=':
		n = strtol(buf + i + 1, NULL, 10);
		if (n < 0)
			return k;
		return (size_t)(k + n + 2) <= len ? k + n + 2 : 0;
	case '*':
	case '~':
	case '>':
	case '%':
	case '|':
		n = strtol(buf + i + 1, NULL, 10);
		if (buf[i] == '%' || buf[i] == '|')
			n *= 2;
		for (long e = 0; e < n; e++) {
			k = resp_end(buf, len, (size_t)k, depth + 1);
			if (k <= 0)
				return k;
		}
		return buf[i] == '|' ? resp_end(buf, len, (size_t)k, depth + 1) : k;
	default:
		return -1;
	}
}

int vconn_read(struct vconn *c, struct vreply *r)
{
	for (;;) {
		long end = resp_end(c->buf + c->start, c->end - c->start, 0, 0);
		ssize_t n;

		if (end < 0)
			return -EPROTO;
		if (end > 0) {
			r->buf = c->buf + c->start;
			r->len = (size_t)end;
			c->start += (size_t)end;
			return 0;
		}
		if (c->start && c->start == c->end)
			c->start = c->end = 0;
		if (c->end == c->cap) {
			if (c->start) {
				memmove(c->buf, c->buf + c->start, c->end - c->start);
				c->end -= c->start;
				c->start = 0;
			} else {
				c->cap *= 2;
				c->buf = realloc(c->buf, c->cap);
			}
		}
		n = recv(c->fd, c->buf + c->end, c->cap - c->end, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		c->end += (size_t)n;
	}
}

void vconn_format(char **out, size_t *len, size_t *cap, int argc, const char *const *argv,
		  const size_t *lens)
{
	size_t need = 16;

	for (int i = 0; i < argc; i++)
		need += lens[i] + 24;
	if (*len + need > *cap) {
		*cap = (*len + need) * 2;
		*out = realloc(*out, *cap);
	}
	*len += (size_t)sprintf(*out + *len, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++) {
		*len += (size_t)sprintf(*out + *len, "$%zu\r\n", lens[i]);
		memcpy(*out + *len, argv[i], lens[i]);
		*len += lens[i];
		memcpy(*out + *len, "\r\n", 2);
		*len += 2;
	}
}

int vconn_names(const struct vreply *r, int64_t *rows, int max)
{
	const char *p = r->buf, *end = r->buf + r->len;
	long n;
	int got = 0;

	if (r->len < 4 || (*p != '*' && *p != '%'))
		return -EPROTO;
	n = strtol(p + 1, NULL, 10);
	p = memchr(p, '\n', (size_t)(end - p)) + 1;
	for (long e = 0; e < n && p < end; e++) {
		long blen;
		const char *data;

		if (*p != '$')
			return -EPROTO;
		blen = strtol(p + 1, NULL, 10);
		data = memchr(p, '\n', (size_t)(end - p)) + 1;
		if (got < max)
			rows[got++] = strtoll(data, NULL, 10);
		p = data + blen + 2;
	}
	return got;
}
