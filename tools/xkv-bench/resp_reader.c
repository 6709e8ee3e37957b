// SPDX-License-Identifier: BSD-3-Clause
/*
 * The reply counter (resp_reader.h). A stack holds, for each open aggregate,
 * how many elements it still expects; a value completing decrements the top
 * and may complete the aggregate, and so on up to the top level, where it is
 * a reply (or a push). Lines are parsed only when their CRLF has arrived;
 * payloads are skipped byte by byte as they arrive, then their CRLF checked.
 */
#include <errno.h>
#include <string.h>

#include "resp_reader.h"

enum {
	ST_LINE,    /* a type byte and its line */
	ST_PAYLOAD, /* skipping a bulk payload */
	ST_CRLF,    /* the CRLF after a payload */
	ST_CHUNK,   /* a ";N" line of a streamed string */
};

void resp_reader_init(struct resp_reader *r)
{
	memset(r, 0, sizeof(*r));
}

/* A length: digits, or exactly "-1" (null). */
static int parse_len(const char *p, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n == 2 && p[0] == '-' && p[1] == '1') {
		*out = -1;
		return 0;
	}
	/* 18 digits cannot overflow, even doubled for a map. */
	if (!n || n > 18)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EPROTO;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

/* A value is complete: count it in its aggregate, which may complete too. */
static void value_done(struct resp_reader *r)
{
	while (r->depth) {
		int64_t *left = &r->stack[r->depth - 1].left;

		/* A streamed aggregate ends at its "." line, not by count. */
		if (*left < 0 || --*left)
			return;
		r->depth--;
		/* A complete attribute is no value: the one it annotates follows. */
		if (r->stack[r->depth].attr)
			return;
	}
	if (r->top_push) {
		r->pushes++;
	} else {
		r->replies++;
		if (r->top_error)
			r->errors++;
	}
	r->top_push = false;
	r->top_error = false;
}

static void start_payload(struct resp_reader *r, int64_t n)
{
	r->skip = (uint64_t)n;
	r->state = n ? ST_PAYLOAD : ST_CRLF;
}

static void keep_error(struct resp_reader *r, const char *p, size_t n)
{
	size_t have = strlen(r->first_error);

	if (n > RESP_READER_ERR_MAX - have)
		n = RESP_READER_ERR_MAX - have;
	memcpy(r->first_error + have, p, n);
	r->first_error[have + n] = '\0';
}

static int push_frame(struct resp_reader *r, int64_t left, bool attr)
{
	if (r->depth == RESP_READER_MAX_DEPTH)
		return -EPROTO;
	r->stack[r->depth].left = left;
	r->stack[r->depth].attr = attr;
	r->depth++;
	return 0;
}

static int aggregate(struct resp_reader *r, char type, const char *body, size_t blen)
{
	bool attr = type == '|';
	int64_t n;

	if (blen == 1 && body[0] == '?')
		return push_frame(r, -1, attr);
	if (parse_len(body, blen, &n))
		return -EPROTO;
	if (n < 0) {
		/* A RESP2 null array. */
		value_done(r);
		return 0;
	}
	if (type == '%' || attr)
		n *= 2;
	if (n)
		return push_frame(r, n, attr);
	if (!attr)
		value_done(r);
	return 0;
}

/* line[0] is the type byte; body is the rest of the line without CRLF. */
static int do_line(struct resp_reader *r, const char *line, size_t len)
{
	const char type = line[0], *body = line + 1;
	const size_t blen = len - 1;
	int64_t n;

	if (!r->depth && type != '|') {
		r->top_error = type == '-' || type == '!';
		r->top_push = type == '>';
	}
	switch (type) {
	case '-':
		if (!r->depth && !r->first_error[0])
			keep_error(r, body, blen);
		value_done(r);
		return 0;
	case '+':
	case ':':
	case '_':
	case ',':
	case '#':
	case '(':
		value_done(r);
		return 0;
	case '$':
	case '=':
	case '!':
		if (type == '$' && blen == 1 && body[0] == '?') {
			r->in_stream = true;
			r->state = ST_CHUNK;
			return 0;
		}
		if (parse_len(body, blen, &n))
			return -EPROTO;
		if (n < 0) {
			value_done(r);
			return 0;
		}
		r->capture = type == '!' && !r->depth && !r->first_error[0];
		start_payload(r, n);
		return 0;
	case '*':
	case '~':
	case '>':
	case '%':
	case '|':
		return aggregate(r, type, body, blen);
	case '.':
		if (!r->depth || r->stack[r->depth - 1].left >= 0 || blen)
			return -EPROTO;
		r->depth--;
		if (!r->stack[r->depth].attr)
			value_done(r);
		return 0;
	default:
		return -EPROTO;
	}
}

/* One ";N" line of a streamed string; ";0" ends it. */
static int do_chunk(struct resp_reader *r, const char *line, size_t len)
{
	int64_t n;

	if (line[0] != ';' || parse_len(line + 1, len - 1, &n) || n < 0)
		return -EPROTO;
	if (n) {
		start_payload(r, n);
		return 0;
	}
	r->in_stream = false;
	r->state = ST_LINE;
	value_done(r);
	return 0;
}

ssize_t resp_reader_feed(struct resp_reader *r, const char *buf, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		const char *nl;
		size_t n;
		int err;

		switch (r->state) {
		case ST_PAYLOAD:
			n = len - pos < r->skip ? len - pos : (size_t)r->skip;
			if (r->capture)
				keep_error(r, buf + pos, n);
			pos += n;
			r->skip -= n;
			if (!r->skip)
				r->state = ST_CRLF;
			break;
		case ST_CRLF:
			if (buf[pos] != "\r\n"[r->crlf_seen])
				return -EPROTO;
			pos++;
			if (++r->crlf_seen < 2)
				break;
			r->crlf_seen = 0;
			r->capture = false;
			if (r->in_stream) {
				r->state = ST_CHUNK;
			} else {
				r->state = ST_LINE;
				value_done(r);
			}
			break;
		default:
			nl = memchr(buf + pos, '\n', len - pos);
			if (!nl)
				return (ssize_t)pos;
			n = (size_t)(nl - (buf + pos));
			/* At least a type byte, then CR. */
			if (n < 2 || nl[-1] != '\r')
				return -EPROTO;
			if (r->state == ST_LINE)
				err = do_line(r, buf + pos, n - 1);
			else
				err = do_chunk(r, buf + pos, n - 1);
			if (err)
				return err;
			pos += n + 1;
			break;
		}
	}
	return (ssize_t)pos;
}
