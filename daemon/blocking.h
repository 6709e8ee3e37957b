/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blocking: clients blocked in BLPOP and its kin until a key they wait on
 * changes or their timeout passes.
 *
 * Waiters on every key of every worker sit in one FIFO under the blocking
 * lock (a leaf lock: only the mailbox lock is taken under it). As in Redis, a
 * change that feeds a waiter serves it before anything else can take the
 * data: the store's choke point (blocking_key_changed) notes the key, and the
 * thread that made the change, at the end of its command, runs each waiter's
 * command again on the waiter's behalf, oldest first, while it can be served.
 * When the waiter's keys lie in shards that command already holds, this
 * happens under those same locks, so no other command can come between; else
 * right after they are released, before the writer's reply is sent.
 *
 * The reply travels to the waiter's own worker by mailbox (a mail that carries its own handler),
 * which answers the client and carries on with its pipelined input. A waiter
 * being served is "claimed": its timeout and its client's closing leave it to
 * the serving thread, which frees what nobody will receive.
 */
#ifndef XKV_BLOCKING_H
#define XKV_BLOCKING_H

#include <stdbool.h>
#include <stdint.h>

struct client;
struct lockset;
struct worker;

/* May the current command block? (Not inside MULTI/EXEC, not on retry.) */
bool blocking_allowed(const struct client *c);
/* Blocks c on the keys at argv indexes keys[0..n) for timeout_ms (0: for
 * ever). A timeout answers a null bulk if null_bulk, else a null array. */
void blocking_block(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk);
/* As blocking_block; type (an OBJ_*, or -1 for any) is what a key must hold
 * for its change to run the command again, as Redis wakes a list waiter only
 * for a list; with on_nokey, any change and a key's removal run it again
 * (XREADGROUP, which fails when its group went). */
void blocking_block_on(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk,
		       int type, bool on_nokey);
/* Adds us to the time c's blocked command has run (its first run's, from
 * command_call): its answer is counted with it. */
void blocking_add_time(struct client *c, uint64_t us);
/* Right after blocking c: run its command again at at_ms (mono), then every
 * every_ms while it waits (XREADGROUP CLAIM: pending entries come of age
 * without any key changing). Checked by its worker's cron. */
void blocking_wake_at(struct client *c, int64_t at_ms, int64_t every_ms);
/* INFO's total_blocking_keys and total_blocking_keys_on_nokey: keys with
 * waiters, and those with a waiter that a removal wakes. */
void blocking_key_counts(uint64_t *keys, uint64_t *nokey);
/* The store's hook (STORE_HOOK_BLOCKING): a key written may feed waiters
 * (its shard lock is held). */
struct db_change;
void blocking_on_change(const struct db_change *ch);
/* Has this thread's command fed waiters that blocking_serve_* will serve? */
bool blocking_serve_pending(void);
/* At the end of a command, with its locks (held) still taken: serves the
 * waiters whose keys all lie in held. */
void blocking_serve_held(const struct lockset *held);
/* With no store lock taken: serves every waiter the changes so far can feed. */
void blocking_serve_ready(void);
/* On the waiter's worker: the mail of a served client (payload). */
void blocking_deliver(struct worker *w, void *payload);
/* On w: answer the blocked clients whose timeout passed. */
void blocking_timeouts(struct worker *w);
/* Takes c out of waiting, unanswered; false if it was not blocked or a
 * thread is serving it already (then its answer is on the way). */
bool blocking_cancel(struct client *c);
/*
 * Blocks c until the background pool (bgjob.h) has run every job queued
 * before this call, then answers +OK: a FLUSH without ASYNC, run as a
 * blocking ASYNC as in Redis 8.8, so the worker's other clients and the
 * other workers go on while the keys are freed. Only where
 * blocking_jobs_allowed(c). The answer is a mail to c's worker, posted by the
 * pool's thread; a client gone meanwhile is not answered.
 */
bool blocking_jobs_allowed(const struct client *c);
void blocking_wait_jobs(struct client *c);
/* Forgets c's waits (reset, closed); an answer on the way is dropped. */
void blocking_unblock(struct client *c);
/* CLIENT UNBLOCK, from any worker: if client id waits, claims it (no key
 * change serves it any more) and sends its worker the timeout reply or the
 * UNBLOCKED error, as an answer. True if it was waiting. */
bool blocking_unblock_id(uint64_t id, bool error);

#endif
