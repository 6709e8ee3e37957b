// SPDX-License-Identifier: BSD-3-Clause
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "config.h"
#include "mem.h"
#include "resp.h"
#include "acl_users.h"
#include "util.h"

/* Requests from unauthenticated clients are kept small, as in Redis, so a
 * stranger cannot make the server buffer much before AUTH. */
#define UNAUTH_MAX_ARGS 10
#define UNAUTH_MAX_BULK 16384

static __thread char error_buf[96];

static bool auth_required(const struct client *c)
{
	return acl_auth_required(c);
}

/* Makes room for n arguments, doubling so that pushes stay linear. */
static void args_reserve(struct client *c, int n)
{
	if (n <= c->argv_cap)
		return;
	c->argv_cap = n < 2 * c->argv_cap ? 2 * c->argv_cap : (n < 8 ? 8 : n);
	c->argv = xrealloc(c->argv, sizeof(*c->argv) * c->argv_cap);
	c->arg_off = xrealloc(c->arg_off, sizeof(*c->arg_off) * c->argv_cap);
}

/*
 * Finds the "\r\n"-terminated line at qpos. Returns its length up to the
 * '\r', or -1 if the line is not complete yet. Like Redis, it trusts that
 * '\r' is followed by '\n' and only waits for that byte to arrive, and (as
 * Redis's strchr does) it does not look past a NUL byte.
 */
static long line_at(const struct client *c)
{
	const char *start = c->qbuf + c->qpos;
	size_t avail = c->qlen - c->qpos;
	const char *cr = memchr(start, '\r', avail);

	if (!cr || memchr(start, '\0', (size_t)(cr - start)) || (size_t)(cr - start) + 2 > avail)
		return -1;
	return cr - start;
}

/*
 * The usual "*<n>" or "$<n>" line at qpos, read in one pass: a canonical
 * number (no sign, no leading zero, at most 18 digits) right before a CR,
 * with the byte after the CR buffered. Returns the line's length as line_at()
 * would, with the number in *out, or -1 when the general path (line_at and
 * str_to_ll, which give the protocol errors) has to decide. Two memchr calls
 * and str_to_ll per line cost about a sixth of a GET's instructions.
 */
static long number_line_at(const struct client *c, long long *out)
{
	const char *start = c->qbuf + c->qpos, *end = c->qbuf + c->qlen;
	const char *p = start + 1;
	long long v = 0;

	if (end - p < 3 || *p < '0' || *p > '9' || (*p == '0' && p[1] != '\r'))
		return -1;
	while (p < end && *p >= '0' && *p <= '9' && p - start <= 18)
		v = v * 10 + (*p++ - '0');
	if (end - p < 2 || *p != '\r')
		return -1;
	*out = v;
	return p - start;
}

static int parse_multibulk(struct client *c, const char **err)
{
	long long ll;
	long line;

	if (c->mb_left < 0) {
		/* The "*<count>" line. */
		line = number_line_at(c, &ll);
		if (line >= 0 && ll <= INT_MAX)
			goto have_count;
		line = line_at(c);
		if (line < 0) {
			if (c->qlen - c->qpos > PROTO_INLINE_MAX_SIZE) {
				*err = "Protocol error: too big mbulk count string";
				return RESP_ERROR;
			}
			return RESP_NEED_MORE;
		}
		if (!str_to_ll(c->qbuf + c->qpos + 1, line - 1, &ll) || ll > INT_MAX) {
			*err = "Protocol error: invalid multibulk length";
			return RESP_ERROR;
		}
	have_count:
		if (ll > UNAUTH_MAX_ARGS && auth_required(c)) {
			*err = "Protocol error: unauthenticated multibulk length";
			return RESP_ERROR;
		}
		c->qpos += line + 2;
		if (ll <= 0) /* "*0" and "*-1" are empty requests */
			return RESP_REQUEST;
		/* Trust the count only so far before the arguments arrive. */
		args_reserve(c, ll < 1024 ? (int)ll : 1024);
		c->mb_left = ll;
	}
	while (c->mb_left > 0) {
		if (c->bulk_len < 0) {
			if (c->qpos < c->qlen && c->qbuf[c->qpos] == '$') {
				line = number_line_at(c, &ll);
				if (line >= 0)
					goto have_bulk_len;
			}
			line = line_at(c);
			if (line < 0) {
				if (c->qlen - c->qpos > PROTO_INLINE_MAX_SIZE) {
					*err = "Protocol error: too big bulk count string";
					return RESP_ERROR;
				}
				return RESP_NEED_MORE;
			}
			if (c->qbuf[c->qpos] != '$') {
				snprintf(error_buf, sizeof(error_buf),
					 "Protocol error: expected '$', got '%c'",
					 c->qbuf[c->qpos]);
				*err = error_buf;
				return RESP_ERROR;
			}
			if (!str_to_ll(c->qbuf + c->qpos + 1, line - 1, &ll) || ll < 0 ||
			    ll > config.proto_max_bulk_len) {
				*err = "Protocol error: invalid bulk length";
				return RESP_ERROR;
			}
		have_bulk_len:
			if (ll > config.proto_max_bulk_len) {
				*err = "Protocol error: invalid bulk length";
				return RESP_ERROR;
			}
			if (ll > UNAUTH_MAX_BULK && auth_required(c)) {
				*err = "Protocol error: unauthenticated bulk length";
				return RESP_ERROR;
			}
			c->qpos += line + 2;
			c->bulk_len = ll;
		}
		if (c->qlen - c->qpos < (size_t)c->bulk_len + 2)
			return RESP_NEED_MORE;
		args_reserve(c, c->argc + 1);
		c->arg_off[c->argc] = c->qpos;
		c->argv[c->argc].len = (size_t)c->bulk_len;
		c->argc++;
		/* The CR after the bulk becomes its terminating NUL. */
		c->qbuf[c->qpos + c->bulk_len] = '\0';
		c->qpos += (size_t)c->bulk_len + 2;
		c->bulk_len = -1;
		c->mb_left--;
	}
	for (int i = 0; i < c->argc; i++)
		c->argv[i].p = c->qbuf + c->arg_off[i];
	return RESP_REQUEST;
}

static void add_inline_arg(void *ctx, char *arg, size_t len)
{
	struct client *c = ctx;

	args_reserve(c, c->argc + 1);
	c->argv[c->argc].p = arg;
	c->argv[c->argc].len = len;
	c->argc++;
}

static int parse_inline(struct client *c, const char **err)
{
	const char *start = c->qbuf + c->qpos;
	size_t avail = c->qlen - c->qpos;
	const char *nl = memchr(start, '\n', avail), *end;

	/* Redis looks for the newline with strchr: a NUL before it hides it. */
	if (nl && memchr(start, '\0', (size_t)(nl - start)))
		nl = NULL;
	if (!nl) {
		if (avail > PROTO_INLINE_MAX_SIZE) {
			*err = "Protocol error: too big inline request";
			return RESP_ERROR;
		}
		return RESP_NEED_MORE;
	}
	end = nl;
	if (end != start && end[-1] == '\r')
		end--;
	xfree(c->inline_buf);
	c->inline_buf = xmalloc(2 * (size_t)(end - start) + 1);
	c->argc = 0;
	if (split_args(start, (size_t)(end - start), c->inline_buf, add_inline_arg, c) < 0) {
		*err = "Protocol error: unbalanced quotes in request";
		return RESP_ERROR;
	}
	c->qpos = (size_t)(nl - c->qbuf) + 1;
	return RESP_REQUEST;
}

int resp_parse_request(struct client *c, const char **err)
{
	if (!c->req_type) {
		if (c->qpos == c->qlen)
			return RESP_NEED_MORE;
		c->cmd_start = c->qpos;
		c->req_type = c->qbuf[c->qpos] == '*' ? '*' : 'i';
		c->mb_left = -1;
		c->bulk_len = -1;
		c->argc = 0;
	}
	return c->req_type == '*' ? parse_multibulk(c, err) : parse_inline(c, err);
}

/* Argument arrays past this many slots (a request of thousands of
 * arguments: SADD of 100k members) are not kept between requests: Redis
 * allocates a command's argv for it alone, and used_memory should come back
 * after it (the 8.8.0 suite's "UNLINK can reclaim memory"). */
#define ARGS_KEEP 1024

void resp_args_give_back(struct client *c)
{
	if (c->argv_cap <= ARGS_KEEP || c->req_type || c->argc || c->blocked ||
	    (c->flags & CLIENT_WAITING))
		return;
	xfree(c->argv);
	xfree(c->arg_off);
	c->argv = NULL;
	c->arg_off = NULL;
	c->argv_cap = 0;
}

void resp_request_done(struct client *c)
{
	c->req_type = 0;
	c->argc = 0;
	c->mb_left = -1;
	c->bulk_len = -1;
	if (c->inline_buf) {
		xfree(c->inline_buf);
		c->inline_buf = NULL;
	}
}

size_t resp_bytes_wanted(const struct client *c)
{
	size_t have;

	if (c->req_type != '*' || c->bulk_len < PROTO_BIG_ARG)
		return 0;
	have = c->qlen - c->qpos;
	return (size_t)c->bulk_len + 2 > have ? (size_t)c->bulk_len + 2 - have : 0;
}
