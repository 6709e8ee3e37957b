/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp: the request parser, RESP multibulk and inline, with Redis's limits
 * and protocol error messages.
 *
 * It works on a client's query buffer incrementally: a request may arrive one
 * byte at a time, and parsing resumes where it stopped. While a request is
 * incomplete its arguments are kept as offsets into the buffer (which may be
 * moved or grown by the next read); once complete they become pointers in
 * c->argv, each NUL-terminated, valid until resp_request_done().
 */
#ifndef XKV_RESP_H
#define XKV_RESP_H

#include <stddef.h>

struct client;

/* Longest inline request, count line or bulk-length line (as Redis). */
#define PROTO_INLINE_MAX_SIZE (64 * 1024)
/* A bulk this large is read in place into a buffer sized for it. */
#define PROTO_BIG_ARG (32 * 1024)

enum resp_result {
	RESP_ERROR = -1,    /* *err says why; the client is to be closed */
	RESP_NEED_MORE = 0, /* the buffer holds no complete request */
	RESP_REQUEST = 1,   /* c->argc / c->argv hold one (argc may be 0) */
};

int resp_parse_request(struct client *c, const char **err);
/* Forgets the current request's arguments; the next parse starts anew. */
void resp_request_done(struct client *c);
/* After a client's input is run: frees argument arrays grown past a few
 * thousand slots, when no request holds them. */
void resp_args_give_back(struct client *c);
/* Bytes the request being parsed still needs beyond what is buffered (a
 * large bulk's remainder), so the reader can make room for it at once. */
size_t resp_bytes_wanted(const struct client *c);

#endif
