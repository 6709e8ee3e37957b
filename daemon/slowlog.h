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

/* Records c's request argv[0..argc) if it took duration_us or longer than
 * the threshold, and counts it in the slowlog metrics (INFO stats and
 * commandstats). Called on c's worker once the command is answered (a
 * blocked one when it is served or times out), with no store lock held. */
void slowlog_push_if_needed(struct client *c, const struct command *cmd, int argc,
			    const struct arg *argv, uint64_t duration_us);
/* The slowlog metrics since start or CONFIG RESETSTAT (SLOWLOG RESET keeps
 * them): entries ever logged, their total and longest time. */
struct slowlog_stats {
	unsigned long long count, sum_us, max_us;
};
/* All commands' (cmd NULL) or cmd's. */
void slowlog_stats(const struct command *cmd, struct slowlog_stats *out);
void slowlog_reset_stats(void);
/* Writes the newest count entries (all if count < 0) as SLOWLOG GET's reply. */
void slowlog_reply(struct client *c, long long count);
unsigned long long slowlog_len(void);
void slowlog_reset(void);
/* Frees every entry (at exit). */
void slowlog_free(void);

#endif
