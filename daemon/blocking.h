/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blocking: clients blocked in BLPOP and its kin until a key they wait on
 * changes or their timeout passes.
 *
 * Waiters on every key of every worker sit in one FIFO under the blocking
 * lock (a leaf lock: only the mailbox lock is taken under it). When a key
 * changes (the store's choke point calls blocking_key_changed), the oldest
 * waiter not yet woken for it is sent a mailbox message; its own worker then
 * runs its command again, under the key locks as any command. If the data is
 * still there it is served and unblocked; otherwise it goes on waiting. A
 * pop's own change wakes the next waiter, so one push of several elements
 * serves several waiters, in the order they blocked.
 */
#ifndef XKV_BLOCKING_H
#define XKV_BLOCKING_H

#include <stdbool.h>
#include <stdint.h>

struct client;
struct worker;
struct command;

/* True while a blocked command is being run again (it must not re-block). */
extern __thread bool blocking_retrying;
/* Set by a command run again that found nothing: it goes on waiting. */
extern __thread bool blocking_still_waiting;

/* May the current command block? (Not inside MULTI/EXEC, not on retry.) */
bool blocking_allowed(const struct client *c);
/* Blocks c on the keys at argv indexes keys[0..n) for timeout_ms (0: for
 * ever). A timeout answers a null bulk if null_bulk, else a null array. */
void blocking_block(struct client *c, const int *keys, int n, int64_t timeout_ms, bool null_bulk);
/* The store's hook: key in db changed (its shard lock is held). */
void blocking_key_changed(int db, const char *key, size_t len);
/* On c's worker: run c's blocked command again (mailbox wake-up). */
void blocking_retry(struct client *c);
/* On w: answer the blocked clients whose timeout passed. */
void blocking_timeouts(struct worker *w);
/* Forgets c's waits (unblocked, reset, closed). */
void blocking_unblock(struct client *c);
/* CLIENT UNBLOCK, from any worker: if client id is blocked, claims it (no
 * key change serves it any more) and asks its worker to answer it with the
 * timeout reply or the UNBLOCKED error. True if it was blocked. */
bool blocking_unblock_id(uint64_t id, bool error);
/* On c's worker: the answer blocking_unblock_id() asked for. */
void blocking_unblock_requested(struct client *c, bool error);

#endif
