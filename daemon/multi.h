/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi: transactions. MULTI queues commands on the client; the dispatcher
 * locks, for EXEC, every shard the queued commands may touch and the WATCHed
 * keys' (multi_add_locks); EXEC checks the watched keys and runs the queue
 * under those locks, so no command on any worker observes a transaction half
 * done.
 */
#ifndef XKV_MULTI_H
#define XKV_MULTI_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"

struct command;
struct lockset;
struct watcher;

struct queued_command {
	struct command *cmd;
	int argc;
	struct arg *argv; /* owned copies */
};

struct watched_key {
	int db;
	struct watcher *watcher; /* in its shard's watch list (multi.c) */
	bool existed;		 /* live when watched: expiring since then counts as a change */
};

/* Sets up the watch lists: after store_init, before the workers start. */
void multi_init(void);
/* Distinct keys some client WATCHes (INFO clients: total_watched_keys); takes
 * one shard lock at a time. */
unsigned long long multi_watched_keys(void);
/* The store's hook (STORE_HOOK_WATCH): a change to a watched key breaks the
 * watch; a flush breaks the watched keys that existed, a swap those that
 * exist on either side. Under the shard locks of what changed. */
struct db_change;
void multi_on_change(const struct db_change *ch);

/* Queues c's current command (it was checked) and replies +QUEUED. */
void multi_queue(struct client *c, struct command *cmd);
/* Adds the shards of c's watched keys to ls, and if queue those its queued
 * commands may touch (EXEC locks both; DISCARD, UNWATCH and RESET the
 * watched keys). */
void multi_add_locks(struct client *c, struct lockset *ls, bool queue);
/* Forgets the queue (DISCARD, EXEC, RESET, close). */
void multi_reset(struct client *c);
/* Does c's MULTI queue hold a command with command flag `flag` (set) or
 * without it (!set)? EXEC is then a write (CMD_WRITE), may grow memory
 * (CMD_DENYOOM), or is refused by a stale replica (CMD_STALE, !set). */
bool multi_queue_any(const struct client *c, uint32_t flag, bool set);
/* Forgets every watched key: do_ with their shards held (a command locked by
 * multi_add_locks), the other takes them (a client closing). */
void do_multi_unwatch(struct client *c);
void multi_unwatch(struct client *c);

#endif
