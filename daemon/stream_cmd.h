/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream_cmd: what the stream command files (cmd/stream.c, cmd/stream_cg.c)
 * share: argument parsing and the entry replies, as Redis words them.
 */
#ifndef XKV_STREAM_CMD_H
#define XKV_STREAM_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "t_stream.h"

struct client;

#define STREAM_ERR_BAD_ID "Invalid stream ID specified as stream command argument"

/* A strict or lax ID at argv[i]; false after replying the error. */
bool stream_cmd_arg_id(struct client *c, int i, uint64_t missing_seq, bool strict,
		       struct stream_id *id, bool *seq_given);
/* An interval end: "(" makes it exclusive. */
bool stream_cmd_arg_interval(struct client *c, int i, uint64_t missing_seq, struct stream_id *id,
			     bool *excl);
void stream_cmd_reply_id(struct client *c, const struct stream_id *id);

/* The entries of a range, gathered to know the count before replying. */
struct range_acc {
	struct stream_entry *v;
	size_t n, cap;
};
/* stream_range's callback filling a range_acc. */
bool stream_cmd_collect(void *ctx, struct stream_entry *e);
/* An array of [id, [field, value ...]] for r. */
void stream_cmd_reply_entries(struct client *c, struct range_acc *r);
/* One entry's [id, [field, value ...]]. */
void stream_cmd_reply_entry(struct client *c, struct stream_entry *e);

/* The deletion conditions of XADD, XTRIM, XDELEX and XACKDEL. */
enum stream_cond { STREAM_COND_NONE, STREAM_COND_KEEPREF, STREAM_COND_DELREF, STREAM_COND_ACKED };
/* The trim callback for a condition (NULL for KEEPREF). */
stream_trim_fn *stream_cmd_trim_fn(enum stream_cond cond);

/*
 * What a group command propagates instead of itself, in Redis's form: an
 * XCLAIM ... TIME ms RETRYCOUNT n FORCE JUSTID LASTID id per delivery, XGROUP
 * SETID ... ENTRIESREAD n when the group's last ID moved, XGROUP
 * CREATECONSUMER when a consumer was made and nothing else went.
 */
struct stream_group;
struct stream_nack;
struct stream_cmd_prop {
	struct client *c;
	int key, group; /* argv indexes; the consumer is at group + 1 */
	struct stream_group *g;
	struct stream_id last; /* the group's last ID at the start */
	size_t n;	       /* commands propagated */
	bool made;	       /* a consumer was created */
};
void stream_cmd_prop_begin(struct stream_cmd_prop *p, struct client *c, int key, int group,
			   struct stream_group *g);
void stream_cmd_prop_xclaim(struct stream_cmd_prop *p, const struct stream_nack *n);
void stream_cmd_prop_setid(struct stream_cmd_prop *p);
void stream_cmd_prop_consumer(struct stream_cmd_prop *p);
/* Counts the changes (the consumer made, then one, or with per_item one per
 * command propagated). */
struct entry;
void stream_cmd_prop_end(struct stream_cmd_prop *p, struct entry *e, bool per_item);
/* The command itself, for n changes that signal no key modification (a
 * WATCH of the key survives, as Redis's keyModified(..., 0)). */
void stream_cmd_prop_self(struct client *c, struct entry *e, unsigned n);
/* The stream at argv[1] for a command that needs one, or NULL after the
 * error reply (no such key, wrong type). */
struct entry *stream_cmd_existing(struct client *c);

#endif
