/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slowlog: the commands that ran longer than slowlog-log-slower-than
 * microseconds, newest first, at most slowlog-max-len of them (SLOWLOG GET /
 * LEN / RESET).
 */
#ifndef XKV_SLOWLOG_H
#define XKV_SLOWLOG_H

#include <stdint.h>

#include "client.h"

struct command;

/* Records c's current request (c->argv) if it took duration_us or longer
 * than the threshold. Called by command_call() on c's worker, after the
 * handler and with no store lock held. */
void slowlog_push_if_needed(struct client *c, const struct command *cmd, uint64_t duration_us);
/* Writes the newest count entries (all if count < 0) as SLOWLOG GET's reply. */
void slowlog_reply(struct client *c, long long count);
unsigned long long slowlog_len(void);
void slowlog_reset(void);
/* Frees every entry (at exit). */
void slowlog_free(void);

#endif
