/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aof: the append-only file, as Redis 7+ lays it out. In `dir`/`appenddirname`:
 *  - a base file, `<appendfilename>.<seq>.base.rdb` (an RDB image, with
 *    aof-use-rdb-preamble yes) or `.base.aof` (commands: SELECT, and one
 *    RESTORE ... ABSTTL REPLACE per key);
 *  - incremental files, `<appendfilename>.<seq>.incr.aof`: the propagation
 *    stream (propagate.h) in RESP, as Redis's replication form, with
 *    `#TS:<unix>` annotations under aof-timestamp-enabled;
 *  - the manifest, `<appendfilename>.manifest`: one `file <name> seq <n>
 *    type b|i` line per file, base first, replaced atomically.
 *
 * A rewrite (BGREWRITEAOF, the automatic one, `appendonly yes` at run time)
 * opens the next incremental file under every shard lock and forks: the
 * child writes the new base from its copy of the store, and when it
 * succeeds the manifest names that base and the new incremental file only,
 * and the older files are removed.
 *
 * Durability (appendfsync): every write command's records are written to
 * the file before its reply is sent (aof_before_replies, once a worker's
 * turn, for every command of the turn on any worker, as Redis writes once
 * per event-loop iteration); with `always` they are also fsynced first, one
 * fsync for all of them (group commit: the AOF threads write and sync while
 * the workers go on, holding each turn's replies until the sync that covers
 * it, see aof_turn_target); with `everysec` a thread fsyncs once a second;
 * with `no` the kernel decides. Since every worker's records up to a turn's
 * end are written (and synced) before that turn's replies leave, no reply (a
 * read on the other worker included) shows a write the file does not have.
 */
#ifndef XKV_AOF_H
#define XKV_AOF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* At start-up, before any worker runs (instead of rdbfile_load): reads the
 * manifest; with appendonly yes loads the base and incremental files (the
 * RDB file is then not read), creates the first base when there is none,
 * and opens the last incremental file for appending. 0, or -1 (logged):
 * the server must not start. */
int aof_start_up(void);
/* At exit, after the workers stopped: flushes, fsyncs and closes. */
void aof_stop(void);

/* Before a worker sends replies (once a turn, and before any reply leaves):
 * writes every record appended so far, by any worker, and fsyncs them under
 * appendfsync always. Two atomic loads when nothing is pending. */
void aof_before_replies(void);

/*
 * Group commit (appendfsync always, the io_uring engine): a worker does not
 * wait for the disk. At the end of its turn aof_turn_target gives the AOF
 * position the turn's replies wait for (0: they may leave now; under
 * everysec and no it writes the records first, as aof_before_replies), and
 * the AOF thread writes and fdatasyncs every worker's records up to there
 * and beyond in one go. The worker keeps the turn's replies, goes on, and
 * sends them once aof_target_done: aof_target_wait has the AOF thread wake
 * it (worker_wake) when that happens; true if it is so already.
 */
bool aof_holds(void);
uint64_t aof_turn_target(void);
bool aof_target_done(uint64_t target);
struct worker;
bool aof_target_wait(struct worker *w, uint64_t target);

/* BGREWRITEAOF. 0 started, 1 scheduled (another child runs), -EBUSY (a
 * rewrite runs), or -errno (logged). The caller holds no shard lock. */
int aof_rewrite(void);
/* Is a rewrite child running? */
bool aof_rewrite_running(void);
/* From persist_cron: automatic and scheduled rewrites, write-error retry. */
void aof_cron(void);
/* CONFIG SET aof-disable-auto-gc no: the history files go now. */
void aof_gc_config_changed(void);
/* CONFIG SET appendonly: starts (with a rewrite) or stops the AOF. */
void aof_config_changed(void);
/* WAITAOF's local part: the AOF's bytes so far (a write's place in the
 * file, taken right after it propagated), and whether everything up to pos
 * is on disk (false while the AOF is off or its first rewrite runs). */
uint64_t aof_appended(void);
bool aof_fsynced(uint64_t pos);
/* The errno of the last failed AOF write while it is not recovered, or 0. */
int aof_write_error(void);
/* At shutdown, under every shard lock: stops a rewrite and flushes and
 * fsyncs the file. 0, or -1 while the first base is still being written
 * and force is false (logged). */
int aof_shutdown(bool force);
/* DEBUG LOADAOF, the caller holding every shard lock: empties the store
 * and loads the files the manifest names. 0 or -1 (logged). */
int do_aof_reload(void);

/* INFO persistence. */
struct aof_stats {
	bool enabled, rewrite_running, rewrite_scheduled, last_rewrite_ok, write_ok;
	int64_t last_rewrite_secs, rewrite_start_ms;
	uint64_t rewrites, consecutive_failures;
	uint64_t current_size, base_size, buffer_length;
	pid_t child_pid; /* the running rewrite's, 0 if none */
};
void aof_stats(struct aof_stats *out);

#endif
