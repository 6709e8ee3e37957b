/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdbfile: whole RDB files, as Redis 8.8 writes them: "REDIS0014", the AUX
 * fields redis-ver, redis-bits, ctime, used-mem and aof-base, then for each
 * libraries of functions (FUNCTION2 records), for each
 * non-empty database SELECTDB and RESIZEDB and its keys (EXPIRETIME_MS, IDLE
 * under an LRU policy or FREQ under an LFU one, then type, key and value as
 * rdb.h writes them), EOF, and the CRC-64 of everything before it (0 with
 * rdbchecksum no).
 *
 * SAVE writes with every shard lock held. BGSAVE takes every shard lock for
 * the instant of fork(); the child walks its copy of the store without
 * locks, touches no io_uring ring and no BPF map, writes temp-<pid>.rdb,
 * renames it over `dbfilename` in `dir` and exits; a thread of the parent
 * waits for it and records the result. Loading (at start-up, before the
 * workers run) reads every version Redis 2.6 and later wrote.
 */
#ifndef XKV_RDBFILE_H
#define XKV_RDBFILE_H

#include <stdbool.h>
#include <stdint.h>

/* Loads config.dbfilename (relative to the working directory, `dir') if it
 * exists: 0 when loaded or absent, -EINVAL (logged) if it is unreadable. */
int rdbfile_load(void);
/* The same for DEBUG RELOAD, while the workers run: merge replaces the
 * libraries of functions already there (keys always are). */
int rdbfile_load_merge(bool merge);
/* SAVE: writes the file now, holding every shard lock. 0 or -errno. */
int rdbfile_save(void);
/* BGSAVE: starts a child; -EBUSY if one is running, -errno if fork fails. */
int rdbfile_bgsave(void);
bool rdbfile_bgsave_running(void);
/* Unix time (s) of the last successful save, or of start-up (LASTSAVE). */
int64_t rdbfile_lastsave(void);
/* INFO persistence: what the saves so far did. */
struct rdbfile_stats {
	bool bgsave_running;
	bool last_bgsave_ok;	  /* the last BGSAVE's outcome (true before any) */
	int64_t lastsave;	  /* as rdbfile_lastsave() */
	int64_t last_bgsave_secs; /* duration of the last BGSAVE, -1 before any */
	int64_t bgsave_start_ms;  /* of the running one */
	uint64_t saves, consecutive_failures;
	uint64_t changes_at_save; /* store_changes() when the last good save began */
};
void rdbfile_stats(struct rdbfile_stats *out);
/* At shutdown: stops a running child and removes its temporary file. */
void rdbfile_shutdown(void);

#endif
