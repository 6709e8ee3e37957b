/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * propagate: the stream of effects. After a command that changed the
 * keyspace, its effect is emitted once, as commands in Redis's replication
 * form, to every registered consumer (AOF and replication later; a debug log
 * today, proplog.c):
 *  - a write command as it was sent, unless its handler rewrote it into
 *    deterministic, absolute commands (propagate_rewrite): a served BLPOP as
 *    LPOP, SET ... EX as SET ... PXAT, INCRBYFLOAT as SET ... KEEPTTL, SPOP as
 *    SREM ...;
 *  - a key expired or evicted as DEL, from the store's change choke point
 *    (inside a command, before the command's own effect);
 *  - a call whose effect is more than one command (EXEC, a write that found
 *    an expired key) wrapped in MULTI ... EXEC;
 *  - SELECT before a command of another database than the stream's.
 *
 * Order. A call's commands are emitted in one go while it still holds the
 * shard locks of everything it touched, under the propagation lock (a leaf
 * lock), so the stream has one total order, and two commands that share a
 * shard appear in the order they ran.
 *
 * Cost. Nothing here runs unless a consumer is registered and active:
 * propagate_enabled is one load. A consumer may be registered inactive and
 * switched on later (replication, once a replica attaches): a command that
 * starts after it is switched on is in the stream whole.
 */
#ifndef XKV_PROPAGATE_H
#define XKV_PROPAGATE_H

#include <stdbool.h>

#include "client.h"

struct exec_ctx;

/* Receives each command of the stream in order, under the propagation lock:
 * it must not block for long, and must copy what it keeps. */
typedef void propagate_fn(void *arg, int argc, const struct arg *argv);

/* Adds a consumer (at start-up only, before any worker runs), active or not;
 * its id (>= 0), or -ENOSPC. */
int propagate_consumer_add(propagate_fn *fn, void *arg, bool active);
/* Consumer id also gets what only replicas get (PUBLISH); at start-up. */
void propagate_consumer_set_repl(int id);
/* From a handler: the running command goes to replicas only, as itself
 * (Redis's forceCommandPropagation(c, PROPAGATE_REPL): PUBLISH). */
void propagate_repl_only(void);
/* Switches consumer id on or off (any thread). */
void propagate_consumer_set_active(int id, bool active);
/* The same by its function (AOF on and off at run time). The caller holds
 * every shard lock, so each call's effect reaches the consumer whole or not
 * at all. */
void propagate_consumer_activate(propagate_fn *fn, bool on);
/* The next command goes out after a SELECT, whatever the database (a
 * consumer that starts a new file needs one). */
void propagate_forget_db(void);
/* Is anyone consuming the stream? */
bool propagate_enabled(void);
/* Runs fn(arg) under the propagation lock, between two units of the stream
 * (so nothing fn adds can land inside a MULTI ... EXEC); with reset_db, the
 * next command carries its SELECT (a replica starting at this point knows
 * no database yet). */
void propagate_sync_point(void (*fn)(void *arg), void *arg, bool reset_db);

/* From a handler: the running command's effect is this command instead of
 * itself (call again to add more, in order). The arguments are copied. */
void propagate_rewrite(int argc, const struct arg *argv);

/* The dispatcher's side. propagate_done at the end of each call (top-level
 * or nested) notes its verbatim form if it wrote, was not rewritten and is a
 * write command (write_cmd: CMD_WRITE);
 * propagate_flush emits a unit's commands (a top-level call's, or a served
 * waiter's), with its locks still held, and says whether there were any. */
void propagate_done(struct exec_ctx *x, bool write_cmd);
bool propagate_flush(struct exec_ctx *x);

/* Propagates argv with the deadline at argv[at] made absolute (when, Unix
 * ms): argv[at - 1], the option naming its unit, becomes PXAT if word, and
 * argv[0] becomes name if not NULL (HEXPIRE key 10 ... as HPEXPIREAT key ms
 * ...; HGETEX key EX 10 ... as HGETEX key PXAT ms ...). */
void propagate_deadline(int argc, const struct arg *argv, const char *name, int at, bool word,
			int64_t when);
/* The same command with argv[0] renamed and argv[drop] left out (-1: none):
 * BLMOVE ... timeout as LMOVE .... */
void propagate_renamed(int argc, const struct arg *argv, const char *name, int drop);
/* "<name> argv[1] argv[from..]": HGETDEL key FIELDS n f... as HDEL key f.... */
void propagate_renamed_from(int argc, const struct arg *argv, const char *name, int from);
/* "<name> key count": a pop of count elements from key (LMPOP as LPOP). */
void propagate_pop(const char *name, const struct arg *key, long long count);

/* Builds an argument from a string literal or an integer (buf, LL_STR_SIZE). */
#define PROP_STR(s) ((struct arg){ (char *)(s), sizeof(s) - 1 })
struct arg prop_ll(char *buf, long long v);

#endif
