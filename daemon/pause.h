/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pause: CLIENT PAUSE and CLIENT UNPAUSE, for the whole server.
 *
 * A pause has a type (WRITE or ALL) and a deadline; a later CLIENT PAUSE only
 * raises the type and pushes the deadline out, as in Redis. While one is in
 * force a command it covers is not run: its client is held (its request
 * copied, no more input parsed) on its own worker's FIFO until the pause
 * ends, by UNPAUSE (every worker is woken through its mailbox) or by the
 * deadline (a worker holding clients sleeps no longer than that). Monitors
 * are never held, as Redis never holds replicas. During any pause the data
 * set stays as it is: keys past their deadline read as missing but are not
 * deleted, and nothing is evicted.
 *
 * Threads: the state is written under the pause lock (a leaf) and read with
 * relaxed atomics; pause_type_hint() is the one load the hot path pays.
 */
#ifndef XKV_PAUSE_H
#define XKV_PAUSE_H

#include <stdbool.h>
#include <stdint.h>

struct client;
struct command;
struct worker;

enum pause_type { PAUSE_OFF, PAUSE_WRITE, PAUSE_ALL };

extern int pause_type_now;
/* A FAILOVER's pause of writes, apart from CLIENT PAUSE's (UNPAUSE does not
 * end it), as Redis's PAUSE_DURING_FAILOVER. */
extern int pause_failover_now;

/* Nonzero when a pause may be in force (it may have just expired). */
static inline int pause_type_hint(void)
{
	return __atomic_load_n(&pause_type_now, __ATOMIC_RELAXED) |
	       __atomic_load_n(&pause_failover_now, __ATOMIC_RELAXED);
}

/* The pause in force now; ends one whose deadline passed. */
enum pause_type pause_current(void);
/* True while a pause freezes expiry and eviction. */
static inline bool pause_frozen(void)
{
	return pause_type_hint() && pause_current() != PAUSE_OFF;
}

/* CLIENT PAUSE: until mono ms end, at least type. */
void pause_start(int64_t end_ms, enum pause_type type);
/* CLIENT UNPAUSE. */
void pause_stop(void);
/* FAILOVER: writes paused until it ends (on false). */
void pause_failover(bool on);

/* Would the pause in force hold c's command cmd? */
bool pause_holds(const struct client *c, const struct command *cmd);
/* Holds c with its current request (c->argv) for cmd. */
void pause_hold(struct client *c, const struct command *cmd);
/* On w: runs the held requests that the pause no longer covers. */
void pause_release(struct worker *w);
/* Milliseconds until the pause's deadline (for a worker holding clients). */
int64_t pause_ms_left(void);
/* Forgets c's held request (c is being freed). */
void pause_client_free(struct client *c);

#endif
