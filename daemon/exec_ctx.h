/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec_ctx: what the running command runs as. One context per command call,
 * pushed when it starts and popped when it ends, so a nested call (a queued
 * command under EXEC, a blocked client's command run again on its behalf, a
 * script's call later) gets its own context and the outer one is intact when
 * it returns: nothing a nested call sets outlives it.
 *
 * The time snapshot is taken by the outermost call and inherited by nested
 * ones, as Redis does: a transaction, or a waiter served by a write, sees the
 * one clock, so no key can expire half-way through it.
 *
 * Thread: a context lives on its thread's stack, and only that thread reads
 * exec_ctx_top; nothing here is shared.
 */
#ifndef XKV_EXEC_CTX_H
#define XKV_EXEC_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct command;

enum exec_flag {
	EXEC_NO_TOUCH = 1u << 0, /* CLIENT NO-TOUCH: lookups leave LRU/LFU alone */
	EXEC_IN_EXEC = 1u << 1,	 /* a queued command run by EXEC: nothing may block */
	EXEC_RETRY = 1u << 2,	 /* a blocked command run again for its waiter */
	EXEC_SCRIPT = 1u << 3,	 /* a script's redis.call (SORT orders sets) */
	/* A top-level SCAN or RANDOMKEY (CMD_TOUCHES_ARBITRARY_KEYS): its lazy
	 * expiry is propagated as plain DELs, not one transaction. */
	EXEC_ARBITRARY_KEYS = 1u << 4,
};

struct exec_ctx {
	struct exec_ctx *outer; /* the call this one runs inside, or NULL */
	struct client *client;	/* whom it runs for (a stand-in for a waiter); or NULL */
	const struct command *cmd;
	int db;		 /* the database it started in */
	unsigned flags;	 /* EXEC_*, inherited by nested calls but EXEC_NO_TOUCH */
	int64_t time_ms; /* Unix ms: deadlines are compared with this */
	int64_t mono_ms; /* the same instant on the monotonic clock (access times) */
	/* Propagation (propagate.h). The unit is the call whose commands this
	 * one's effects join: itself, or EXEC for its queued commands. */
	struct exec_ctx *unit;
	bool dirty; /* it changed the keyspace */
	/* Its count of changes, Redis's server.dirty += n (INFO
	 * rdb_changes_since_last_save, save points): what the command gave
	 * (command_dirty), or if it gave none (given < 0) one per key it
	 * changed (keys_changed, counted by the store). */
	int64_t given;
	uint64_t keys_changed;
	const void *last_changed; /* the entry counted last, or NULL */
	bool rewritten;		  /* its handler gave its effect (propagate_rewrite) */
	bool verbatim;		  /* a unit whose one command is its client's argv, uncopied */
	struct prop_ops *ops;	  /* a unit's commands still to emit; owned by it */
};

/* The innermost running call on this thread, or NULL outside commands. */
extern __thread struct exec_ctx *exec_ctx_top;

/* Starts a call: fills x and makes it the innermost. start_us is the
 * monotonic clock the caller read (its start), or 0 to read it here; only
 * the outermost call reads the wall clock. */
void exec_ctx_push(struct exec_ctx *x, struct client *c, const struct command *cmd, int db,
		   unsigned flags, int64_t start_us);
/* Ends x, which must be the innermost call. */
void exec_ctx_pop(struct exec_ctx *x);

static inline unsigned exec_ctx_flags(void)
{
	return exec_ctx_top ? exec_ctx_top->flags : 0;
}

static inline struct client *exec_ctx_client(void)
{
	return exec_ctx_top ? exec_ctx_top->client : NULL;
}

#endif
