/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tracking: client-side caching (CLIENT TRACKING) as Redis 8.8 does it.
 *
 * Keys read by a tracking client's read commands are remembered in one
 * table (key name -> client ids, all databases together, as in Redis); a
 * change to a key (the store's TRACKING hook) removes it from the table and
 * sends each remembered client an `invalidate` message: a RESP3 push on its
 * own connection, or on the connection it redirects to (a RESP2 one gets it
 * as a message of the `__redis__:invalidate` channel if it is subscribed).
 * BCAST clients get every changed key under their prefixes instead, batched
 * per command. A flush sends every tracking client a null ("all keys").
 *
 * Threads. Hooks run on the writer's thread, under its shard locks. A
 * message for a client of the same worker is written at once (for the
 * writer's own connection, after its reply); one for another worker goes to
 * that worker's tracking inbox before the writer is answered, and a worker
 * empties its inbox before it runs any command, so no command issued after
 * the writer's reply is answered before the invalidation.
 */
#ifndef XKV_TRACKING_H
#define XKV_TRACKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arg;
struct client;
struct command;
struct db_change;
struct worker;

/* CLIENT TRACKING options and state, as CLIENT TRACKINGINFO names them. */
enum tracking_flag {
	TRACKING_ON = 1 << 0,
	TRACKING_BCAST = 1 << 1,
	TRACKING_OPTIN = 1 << 2,
	TRACKING_OPTOUT = 1 << 3,
	TRACKING_CACHING = 1 << 4, /* CLIENT CACHING given for the next command */
	TRACKING_NOLOOP = 1 << 5,
	TRACKING_BROKEN_REDIR = 1 << 6, /* the redirection's client is gone */
};

/* Clients with tracking on (any thread may read it: relaxed). */
extern unsigned long tracking_nclients;

/* The store hook (STORE_HOOK_TRACKING). */
void tracking_on_change(const struct db_change *ch);

/* After each command call's handler, under its locks: remembers the keys a
 * read command read for the tracking client it runs for, and sends a
 * pending flush invalidation. */
void tracking_call_done(struct client *c, const struct command *cmd);
/* After a client's command is done (its reply written): sends what had to
 * wait for it (its own invalidations, BCAST batches); CLIENT CACHING lasts
 * one command (or one transaction). */
void tracking_command_end(struct client *c, const struct command *cmd);
/* Before a client's command is dispatched: empties the worker's inbox and
 * keeps the table within tracking-table-max-keys. */
void tracking_before_command(struct client *c);
/* Periodic work on a worker: the same, without a client. */
void tracking_cron(struct worker *w);

/* CLIENT TRACKING ON: the options were checked by the caller (prefixes are
 * arguments, n of them; redir 0 for none). */
void tracking_enable(struct client *c, uint64_t redir, struct worker *redir_worker, unsigned opts,
		     const struct arg *prefixes, int n);
void tracking_disable(struct client *c);
/* c's TRACKING_* flags and redirection (owner only). */
unsigned tracking_flags(const struct client *c);
uint64_t tracking_redirect(const struct client *c);
/* CLIENT CACHING YES|NO (the caller checked the mode). */
void tracking_set_caching(struct client *c);
/* If prefix p (of the n given, at index i) overlaps one c already has or a
 * later one given, returns that one (and *own says whether it is c's) and
 * its length; NULL if none. */
const char *tracking_prefix_overlap(const struct client *c, const struct arg *p, int n, int i,
				    size_t *len, bool *own);
/* Replies c's BCAST prefixes as an array. */
void tracking_reply_prefixes(struct client *c);
/* Client gone (client_free, on its worker). */
void tracking_client_free(struct client *c);

/* INFO stats: keys in the table, client ids in it, BCAST prefixes. */
uint64_t tracking_total_keys(void);
uint64_t tracking_total_items(void);
uint64_t tracking_total_prefixes(void);

#endif
