// SPDX-License-Identifier: BSD-3-Clause
#include <math.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "errorstats.h"
#include "mem.h"
#include "obuf.h"
#include "reply.h"
#include "util.h"
#include "worker.h"

void reply_raw(struct client *c, const void *p, size_t len)
{
	struct reply_block *b = c->reply_tail;

	/* Closing, or CLIENT REPLY OFF/SKIP (which pub/sub pushes pass). */
	if (c->flags & CLIENT_MUTED &&
	    ((c->flags & CLIENT_CLOSE_ASAP) || !(c->flags & CLIENT_PUSHING)))
		return;
	c->reply_bytes += len;
	if (b) {
		size_t room = b->size - b->used, n = len < room ? len : room;

		memcpy(b->data + b->used, p, n);
		b->used += n;
		p = (const char *)p + n;
		len -= n;
	}
	if (!len)
		return;
	/* A large reply gets a block of its own size: one copy, no chain of
	 * small blocks to walk. */
	size_t want = c->rbuf_size ? c->rbuf_size : REPLY_BLOCK_SIZE;

	b = xmalloc(sizeof(*b) + (len > want ? len : want));
	b->size = xusable(b) - sizeof(*b);
	b->used = len;
	b->sent = 0;
	b->next = NULL;
	memcpy(b->data, p, len);
	if (c->reply_tail)
		c->reply_tail->next = b;
	else
		c->reply_head = b;
	c->reply_tail = b;
	/* The output limits are checked per block, off the common path. */
	obuf_check(c);
}

/* "<prefix><number>\r\n" */
static void reply_len(struct client *c, char prefix, long long n)
{
	char buf[LL_STR_SIZE + 4];
	int len;

	buf[0] = prefix;
	len = 1 + ll_to_str(buf + 1, n);
	buf[len++] = '\r';
	buf[len++] = '\n';
	reply_raw(c, buf, len);
}

void reply_ok(struct client *c)
{
	reply_raw(c, "+OK\r\n", 5);
}

void reply_status(struct client *c, const char *s)
{
	reply_raw(c, "+", 1);
	reply_raw(c, s, strlen(s));
	reply_raw(c, "\r\n", 2);
}

void reply_error(struct client *c, const char *msg)
{
	size_t len = strlen(msg);
	char *clean = NULL;

	/* A locked add: c may be a stand-in on another thread (worker.h). */
	if (c->worker)
		__atomic_fetch_add(&c->worker->stats.errors, 1, __ATOMIC_RELAXED);
	errorstats_count(msg);
	if (msg[0] != '-')
		reply_raw(c, "-ERR ", 5);
	/* An error line cannot carry CR or LF: replace them as Redis does. */
	if (memchr(msg, '\r', len) || memchr(msg, '\n', len)) {
		clean = xstrndup(msg, len);
		for (size_t i = 0; i < len; i++)
			if (clean[i] == '\r' || clean[i] == '\n')
				clean[i] = ' ';
		msg = clean;
	}
	reply_raw(c, msg, len);
	reply_raw(c, "\r\n", 2);
	xfree(clean);
}

void reply_errorf(struct client *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	reply_error(c, buf);
}

void reply_int(struct client *c, long long v)
{
	reply_len(c, ':', v);
}

void reply_uint(struct client *c, unsigned long long v)
{
	char buf[24];
	int len;

	if (v <= LLONG_MAX) {
		reply_int(c, (long long)v);
		return;
	}
	/* Past a signed 64-bit integer: a big number, or a bulk string in RESP2. */
	len = snprintf(buf, sizeof(buf), "%llu", v);
	if (c->resp >= 3) {
		reply_raw(c, "(", 1);
		reply_raw(c, buf, (size_t)len);
		reply_raw(c, "\r\n", 2);
	} else {
		reply_bulk(c, buf, (size_t)len);
	}
}

/* The decimal digits of v at d; returns the end. */
static char *put_size(char *d, size_t v)
{
	size_t digits = 1;

	for (size_t t = v; t >= 10; t /= 10)
		digits++;
	for (size_t i = digits; i-- > 0; v /= 10)
		d[i] = (char)('0' + v % 10);
	return d + digits;
}

void reply_bulk(struct client *c, const void *p, size_t len)
{
	struct reply_block *b = c->reply_tail;

	/* The usual case (a GET hit): header, bytes and CRLF straight into the
	 * tail block, one copy and no per-part calls. */
	if (b && b->size - b->used >= len + LL_STR_SIZE + 5 && !(c->flags & CLIENT_MUTED)) {
		char *start = b->data + b->used, *d = start;

		*d++ = '$';
		d = put_size(d, len);
		*d++ = '\r';
		*d++ = '\n';
		memcpy(d, p, len);
		d += len;
		*d++ = '\r';
		*d++ = '\n';
		b->used += (size_t)(d - start);
		c->reply_bytes += (size_t)(d - start);
		return;
	}
	reply_len(c, '$', (long long)len);
	reply_raw(c, p, len);
	reply_raw(c, "\r\n", 2);
}

void reply_bulk_cstr(struct client *c, const char *s)
{
	reply_bulk(c, s, strlen(s));
}

void reply_bulk_ll(struct client *c, long long v)
{
	char buf[LL_STR_SIZE + 1];

	reply_bulk(c, buf, ll_to_str(buf, v));
}

void reply_null(struct client *c)
{
	if (c->resp >= 3)
		reply_raw(c, "_\r\n", 3);
	else
		reply_raw(c, "$-1\r\n", 5);
}

void reply_null_array(struct client *c)
{
	if (c->resp >= 3)
		reply_raw(c, "_\r\n", 3);
	else
		reply_raw(c, "*-1\r\n", 5);
}

void reply_array(struct client *c, long len)
{
	reply_len(c, '*', len);
}

void reply_push(struct client *c, long len)
{
	reply_len(c, c->resp >= 3 ? '>' : '*', len);
}

void reply_map(struct client *c, long len)
{
	if (c->resp >= 3)
		reply_len(c, '%', len);
	else
		reply_len(c, '*', len * 2);
}

void reply_set(struct client *c, long len)
{
	reply_len(c, c->resp >= 3 ? '~' : '*', len);
}

void reply_double(struct client *c, double v)
{
	char buf[64];
	int len = d_to_str(buf, sizeof(buf), v);

	if (c->resp >= 3) {
		reply_raw(c, ",", 1);
		reply_raw(c, buf, (size_t)len);
		reply_raw(c, "\r\n", 2);
		return;
	}
	reply_bulk(c, buf, (size_t)len);
}

void reply_bool(struct client *c, int v)
{
	if (c->resp >= 3)
		reply_raw(c, v ? "#t\r\n" : "#f\r\n", 4);
	else
		reply_raw(c, v ? ":1\r\n" : ":0\r\n", 4);
}

void reply_verbatim(struct client *c, const char *p, size_t len)
{
	if (c->resp < 3) {
		reply_bulk(c, p, len);
		return;
	}
	reply_len(c, '=', (long long)len + 4);
	reply_raw(c, "txt:", 4);
	reply_raw(c, p, len);
	reply_raw(c, "\r\n", 2);
}

void reply_help(struct client *c, const char *const *lines)
{
	long n = 0;

	while (lines[n])
		n++;
	reply_array(c, n);
	for (long i = 0; i < n; i++)
		reply_status(c, lines[i]);
}
