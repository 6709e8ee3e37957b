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
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Loads config.dbfilename (relative to the working directory, `dir') if it
 * exists: 0 when loaded or absent, -EINVAL (logged) if it is unreadable. */
int rdbfile_load(void);
/* The same for any file, the caller holding every shard lock: 0, -ENOENT
 * (not logged), or -EINVAL (logged). Keys already there are replaced. */
int do_rdbfile_load_file(const char *path);
/* An RDB image in memory (an AOF's preamble): 0 with *used (if not NULL) the
 * bytes it took, or -EINVAL (logged). The caller holds every shard lock. */
int rdbfile_load_mem(const char *buf, size_t len, size_t *used);
/* A file read as it comes (a replica's diskless load): read(arg, buf, cap)
 * gives up to cap bytes, or 0 or -errno at the end of its source (read may
 * block; the caller's). The load is as do_rdbfile_load_file's, the caller
 * holding every shard lock (its read may let go of them while it blocks, if
 * nobody else can touch the keyspace meanwhile): 0 or -EINVAL (logged).
 * What was read past the file's end is rest's (len bytes, good until the
 * stream is freed). The stream is the caller's, freed by
 * rdbfile_stream_free. */
struct rdbfile_stream;
struct rdbfile_stream *rdbfile_stream_new(ssize_t (*read)(void *arg, void *buf, size_t cap),
					  void *arg);
int do_rdbfile_load_stream(struct rdbfile_stream *s);
const char *rdbfile_stream_rest(const struct rdbfile_stream *s, size_t *len);
void rdbfile_stream_free(struct rdbfile_stream *s);
/* A whole file: a buffer of *len bytes plus a NUL that the caller frees, or
 * NULL with errno set. */
char *rdbfile_read_all(const char *path, size_t *len);
/* A replica's full sync: the keyspace becomes the file in buf (every shard
 * lock held throughout; emptied if the file is bad). 0 or -EINVAL. */
int rdbfile_load_replace(const char *buf, size_t len);
/* The libraries of functions written into the next file (taken under every
 * shard lock before a write or a fork; -EBUSY if a script is busy), and
 * released after; a load replaces libraries of the same name if merge. */
int rdbfile_functions_snapshot(void);
void rdbfile_functions_release(void);
/* fn(arg, code, len) for each library of the snapshot taken (an AOF base
 * without the RDB preamble writes FUNCTION LOAD code). 0 or -EINVAL. */
int rdbfile_functions_each(void (*fn)(void *arg, const char *code, size_t len), void *arg);
void rdbfile_functions_merge(bool merge);
/* SAVE: writes the file now, holding every shard lock. 0 or -errno. */
int rdbfile_save(void);
/* The same, the caller holding every shard lock. */
int do_rdbfile_save(void);
/* The whole store as an RDB image to fd, fsynced (aof_base: the AUX field
 * saying it is an AOF's base). The caller holds every shard lock or is a
 * fork child. 0 or -errno. */
int rdbfile_write_fd(int fd, bool aof_base);
/* BGSAVE: starts a child; -EBUSY if one is running, -errno if fork fails. */
int rdbfile_bgsave(void);
bool rdbfile_bgsave_running(void);
/* Did the last BGSAVE fail (MISCONF)? Lock-free, for the write path. */
bool rdbfile_bgsave_failed(void);
/* After a load: what is in memory now counts as saved (no change pending). */
void rdbfile_loaded(void);
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
	uint64_t changes_at_save;	  /* store_changes() when the last good save began */
	int64_t last_bgsave_try;	  /* Unix s of the last BGSAVE attempt, 0 before any */
	uint64_t load_keys, load_expired; /* what the last load kept and dropped */
};
void rdbfile_stats(struct rdbfile_stats *out);
/* A snapshot for replicas: like BGSAVE, but the child writes to a pipe in
 * the oldest RDB version that holds the data (10, Redis 7.0's, unless hash
 * fields have deadlines: 12), so older Redis replicas load it too, and no
 * file is touched. The sink's at_fork runs in the parent right after the
 * fork, with every shard lock held (the point in the propagation stream
 * the snapshot stands for); data gets the file as the child writes it, on
 * a thread of its own that reads the pipe (it may block to slow the child
 * down, and return -1 to stop it: done then says false); done, on that
 * thread with no lock held, whether the child wrote the whole file. arg is
 * the sink's, passed to each. -EBUSY if a child runs, -errno if the fork
 * fails (no callback runs then). */
struct rdbfile_repl_sink {
	void (*at_fork)(void *arg);
	int (*data)(void *arg, const char *p, size_t len);
	void (*done)(void *arg, bool ok);
};
int rdbfile_bgsave_repl(const struct rdbfile_repl_sink *sink, void *arg);
/* The replication AUX fields of a file (repl-stream-db, repl-id,
 * repl-offset), as Redis writes them so that a replica restarted from its
 * file, or fed it by its master, knows where in the stream the file
 * stands. id "" when there are none. */
struct rdbfile_repl_info {
	int stream_db;
	char id[41];
	long long offset;
};
/* Set once at start-up (repl.c): fills the fields for the next file; run
 * under every shard lock before a write or a fork. */
extern void (*rdbfile_repl_info_hook)(struct rdbfile_repl_info *out);
/* Copy-on-write of the fork children, measured as Redis does: the
 * Private_Dirty bytes of the child's /proc/<pid>/smaps_rollup. A child
 * records its own right before it exits (rdbfile_child_cow) in a page shared
 * with the parent; rdbfile_last_cow gives the last child's of that kind (0
 * before any), rdbfile_cow_of any process's now. A running child also
 * samples its own as it writes (rdbfile_child_start, then at most once a
 * second and at most 1% of its time, as Redis's child reports), which
 * rdbfile_current_cow gives (INFO's current_*): reading a child's smaps
 * walks its page tables, tens of milliseconds at a million keys, far too
 * long for a worker answering INFO. */
enum { RDBFILE_COW_RDB, RDBFILE_COW_AOF };
void rdbfile_child_start(void);
/* fork(), timed: INFO stats' latest_fork_usec and total_forks. */
pid_t rdbfile_fork(void);
uint64_t rdbfile_fork_latest_us(void);
uint64_t rdbfile_forks(void);
uint64_t rdbfile_current_cow(void);
void rdbfile_child_cow(int kind);
uint64_t rdbfile_last_cow(int kind);
uint64_t rdbfile_cow_of(pid_t pid);
/* The running BGSAVE (or replication) child, 0 if none. */
pid_t rdbfile_child_pid(void);
/* What the last file loaded had (id "" if none). */
void rdbfile_loaded_repl_info(struct rdbfile_repl_info *out);
/* At shutdown: stops a running child and removes its temporary file. */
void rdbfile_shutdown(void);
/* SHUTDOWN: the same, without counting it a failed BGSAVE (SIGUSR1). */
void rdbfile_kill_child(void);

#endif
