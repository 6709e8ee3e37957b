/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hotkeys: HOTKEYS (Redis 8.6+), a session that finds the keys that cost the
 * most CPU time or network bytes, command by command.
 *
 * While no session is active the dispatcher pays one relaxed load per
 * command (hotkeys_active). During one, every command with keys charges its
 * duration and its bytes in and out to its keys, split evenly, under one
 * mutex; each metric keeps the top keys in a bounded summary (space-saving,
 * ten times the keys GET lists), so memory stays fixed however many keys are
 * touched.
 */
#ifndef XKV_HOTKEYS_H
#define XKV_HOTKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topk.h"

struct client;
struct command;
struct text;

extern bool hotkeys_on; /* a session is tracking: read with hotkeys_active() */

static inline bool hotkeys_active(void)
{
	return __atomic_load_n(&hotkeys_on, __ATOMIC_RELAXED);
}

enum hotkeys_metric { HOTKEYS_CPU = 1, HOTKEYS_NET = 2 };

/* HOTKEYS START's arguments, checked by the command. */
struct hotkeys_params {
	unsigned metrics;      /* enum hotkeys_metric bits */
	int count;	       /* keys GET lists, 1..64 */
	int sample;	       /* a command counts with probability 1/sample */
	int64_t duration_ms;   /* 0: until HOTKEYS STOP */
	const uint16_t *slots; /* cluster mode: the slots tracked; nslots 0 for all */
	int nslots;
};

/* HOTKEYS GET's figures, copied out of the session. */
struct hotkeys_report {
	bool active;
	unsigned metrics;
	int sample;
	uint8_t *slots; /* CLUSTER_SLOTS flags, or NULL: every slot this node serves */
	int64_t start_ms, duration_ms, cpu_user_ms, cpu_sys_ms;
	uint64_t us_all, us_selected, us_sampled, bytes_all, bytes_selected, bytes_sampled;
	uint64_t net_total;
	struct topk_entry *cpu, *net; /* microseconds, bytes; largest first */
	int ncpu, nnet;
};

/* A new session (the stopped one's results are dropped); -EBUSY while one
 * is active. */
int hotkeys_start(const struct hotkeys_params *p);
/* -ENOENT if none is active. */
int hotkeys_stop(void);
/* Drops a stopped session's results; -EBUSY while one is active. */
int hotkeys_reset(void);
/* -ENOENT if there is no session to report; else free r with
 * hotkeys_report_free. */
int hotkeys_snapshot(struct hotkeys_report *r);
void hotkeys_report_free(struct hotkeys_report *r);

/* One call of cmd by c took usec and moved in_bytes + out_bytes. Call only
 * when hotkeys_active(). */
void hotkeys_record(struct client *c, const struct command *cmd, uint64_t usec, uint64_t in_bytes,
		    uint64_t out_bytes);
/* The request bytes of c's current command as RESP sent them. */
uint64_t hotkeys_request_bytes(const struct client *c);
/* The cron: a session with a DURATION stops when it is over. */
void hotkeys_cron(int64_t now_ms);
/* INFO hotkeys. */
void hotkeys_info(struct text *t);
/* Bytes the session's structures hold (INFO memory's overhead). */
size_t hotkeys_memory(void);

#endif
