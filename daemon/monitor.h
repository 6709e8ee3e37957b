/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * monitor: MONITOR. Every command that runs, on any worker, is shown to every
 * monitor as one line in Redis's format:
 *
 *   +<unix secs>.<usecs> [<db> <peer>] "cmd" "arg" ...
 *
 * The worker that ran the command formats the line once. Its own monitors get
 * it at once; every other worker with monitors gets one shared, refcounted
 * copy through its mailbox and appends it to its monitors there. A monitor is
 * a normal-class client for client-output-buffer-limit: one that does not
 * read is closed once past the limit, and nothing ever waits for it.
 *
 * Threads: a worker's monitor list is its own; its count (worker.nmonitors)
 * and the total are relaxed atomics that feeders read. With no monitor the
 * cost to a command is the one load in monitor_active().
 */
#ifndef XKV_MONITOR_H
#define XKV_MONITOR_H

#include <stdbool.h>

struct client;
struct command;
struct worker;

extern unsigned monitor_total;

static inline bool monitor_active(void)
{
	return __atomic_load_n(&monitor_total, __ATOMIC_RELAXED) != 0;
}

/* MONITOR: c (on its own worker) starts receiving lines. */
void monitor_start(struct client *c);
/* Leaves MONITOR mode (RESET, close); nothing if c is not a monitor. */
void monitor_stop(struct client *c);
/* After c ran cmd with c->argv: shows it to the monitors, unless Redis hides
 * it (admin and skip-monitor commands, blocked commands run again). */
void monitor_feed(struct client *c, const struct command *cmd);
/* EVAL and FCALL (skip-monitor) show themselves before their script runs,
 * so the script's calls come after them, as in Redis. */
void monitor_feed_script(struct client *c);
/* The running command's argument i is a secret: monitors see "(redacted)"
 * (AUTH, HELLO ... AUTH). */
void monitor_redact(struct client *c, int i);
/* True if the running command of c asked to hide argument i (SLOWLOG). */
bool monitor_arg_redacted(const struct client *c, int i);

/* A line mailed to w: hands the line to w's monitors, then drops it. */
void monitor_deliver(struct worker *w, void *payload);
void monitor_mail_free(void *payload);

#endif
