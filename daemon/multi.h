/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi: transactions. MULTI queues commands on the client; EXEC takes the
 * locks of every shard the queued commands touch (all of them if one of them
 * locks for itself), checks the WATCHed keys, and runs the queue under those
 * locks, so no command on any worker observes a transaction half done.
 */
#ifndef XKV_MULTI_H
#define XKV_MULTI_H

#include <stdbool.h>

#include "client.h"

struct command;
struct watcher;

struct queued_command {
	struct command *cmd;
	int argc;
	struct arg *argv; /* owned copies */
};

struct watched_key {
	int db;
	struct watcher *watcher; /* in the key's shard (store.h) */
	bool existed;		 /* live when watched: expiring since then counts as a change */
};

/* True on a worker thread while EXEC runs its queue (nothing may block). */
extern __thread bool multi_executing;

/* Queues c's current command (it was checked) and replies +QUEUED. */
void multi_queue(struct client *c, struct command *cmd);
/* Forgets the queue and every watched key (DISCARD, EXEC, RESET, close). */
void multi_reset(struct client *c);
void multi_unwatch(struct client *c);

#endif
