/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * debug: what DEBUG (cmd/debug.c) changes in the rest of the server, and the
 * dataset digest DEBUG DIGEST reports.
 *
 * The switches are written by DEBUG on any worker and read by the workers'
 * periodic work with relaxed atomics: a reader sees the old or the new value.
 *
 * The digest is Redis's (debug.c computeDatasetDigest / xorObjectDigest),
 * bit for bit, so DEBUG DIGEST and DEBUG DIGEST-VALUE print what a Redis
 * server holding the same data prints: test suites compare digests across
 * servers (a replica's with its master's, a dataset before and after a
 * reload). Unordered collections xor the SHA-1 of their elements, ordered
 * ones feed each element through SHA-1 in turn.
 */
#ifndef XKV_DEBUG_H
#define XKV_DEBUG_H

#include <stdbool.h>
#include <stdint.h>

#include "sha1.h"

struct entry;

/* DEBUG SET-ACTIVE-EXPIRE: 0 stops the workers' active expiry cycle. */
extern int debug_active_expire;
/* DEBUG SET-DISABLE-DENY-SCRIPTS: nonzero lets scripts call the commands
 * flagged noscript (a test hook, as in Redis). */
extern int debug_disable_deny_scripts;
/* DEBUG PAUSE-CRON: nonzero skips the workers' periodic work (timeouts,
 * active expiry, blocked-client timeouts, statistics samples). */
extern int debug_pause_cron;

static inline bool debug_cron_paused(void)
{
	return __atomic_load_n(&debug_pause_cron, __ATOMIC_RELAXED) != 0;
}

static inline bool debug_active_expire_on(void)
{
	return __atomic_load_n(&debug_active_expire, __ATOMIC_RELAXED) != 0;
}

/* Digest of one key's value and deadline (DEBUG DIGEST-VALUE); adds into d,
 * which starts at zero. The caller holds e's shard lock. */
void debug_value_digest(const struct entry *e, uint8_t d[SHA1_LEN]);
/* Digest of every database (DEBUG DIGEST); takes the shard locks itself, one
 * at a time. 20 zero bytes for an empty dataset. */
void debug_dataset_digest(uint8_t d[SHA1_LEN]);
/* A double as Redis's fpconv_dtoa writes it (the shortest digits that read
 * back the same; "1e+21", "0.001"; "inf", "nan", "-0"). Returns the length;
 * buf holds at least 32 bytes. */
int debug_fmt_double(double v, char *buf);

#endif
