/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resp_reader: counts the replies in a stream of RESP2/RESP3 bytes.
 *
 * The load generator only needs to know how many complete replies arrived and
 * which of them were errors, but it must know it exactly: with pipelining, a
 * miscounted reply shifts every later latency onto the wrong request. So the
 * reader walks every type, nested aggregates included:
 *   RESP2  + - : $ *
 *   RESP3  _ , # ( ! = ~ % > | and the streamed forms $? ;N *? ~? %? >? .
 * A top-level push (>) is out of band: it is counted in `pushes`, not as a
 * reply. An attribute (|) annotates the value that follows it and is not a
 * value itself. A reply is an error if it is a top-level - or !.
 *
 * The reader is incremental: it is fed whatever bytes have arrived, consumes
 * what it can and keeps its place between calls. Bulk payloads are skipped as
 * they arrive, so a 100 MB value never needs a 100 MB buffer; only a line
 * (a type byte up to CRLF) must be complete in the buffer to be consumed.
 *
 * One reader per connection, used by the thread that owns the connection.
 */
#ifndef XKV_BENCH_RESP_READER_H
#define XKV_BENCH_RESP_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Nesting deeper than this is treated as a protocol error. */
#define RESP_READER_MAX_DEPTH 64
/* The first error message is kept, truncated to this many bytes. */
#define RESP_READER_ERR_MAX 127

struct resp_reader {
	uint64_t replies;			   /* complete top-level replies */
	uint64_t errors;			   /* replies that were errors */
	uint64_t pushes;			   /* complete top-level push messages */
	char first_error[RESP_READER_ERR_MAX + 1]; /* "" until an error */

	/* Parse state. */
	uint8_t state;
	uint8_t crlf_seen;	  /* bytes of a payload's trailing CRLF already checked */
	bool in_stream;		  /* inside a streamed string ($?) */
	bool top_error, top_push; /* what the current top-level value is */
	bool capture;		  /* copying a blob error's payload into first_error */
	uint64_t skip;		  /* payload bytes still to skip */
	unsigned depth;
	struct {
		int64_t left; /* elements still to come; -1 for a streamed aggregate */
		bool attr;    /* an attribute: completes without being a value */
	} stack[RESP_READER_MAX_DEPTH];
};

void resp_reader_init(struct resp_reader *r);
/*
 * Parses buf[0..len): returns how many bytes it consumed (the rest is an
 * incomplete line to be passed again with more bytes after it), or -EPROTO
 * if the bytes are not RESP. The counters grow by what was completed.
 */
ssize_t resp_reader_feed(struct resp_reader *r, const char *buf, size_t len);

#endif /* XKV_BENCH_RESP_READER_H */
