/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl: replication, the master's side, speaking Redis's protocol (PSYNC2).
 *
 * Identity. A master has a replication ID (40 random hex digits, new at each
 * start and whenever the backlog is created afresh) and a secondary ID, good
 * up to second_repl_offset: the master's it replicated before it was
 * promoted, or the one its file recorded before a restart (all zeros, -1:
 * none). A replica's ID and offset are its master's (PSYNC2, below).
 * DEBUG CHANGE-REPL-ID draws a new ID.
 *
 * The stream. While a backlog exists (from the first replica's SYNC until
 * repl-backlog-ttl seconds after the last one left), repl consumes the
 * propagation stream (propagate.h) and appends each command, in RESP, to one
 * shared buffer of blocks. master_repl_offset counts its bytes since start.
 * The backlog is the buffer's last repl-backlog-size bytes (a block more at
 * most); blocks a replica has not copied yet are kept too, within
 * client-output-buffer-limit replica, which closes a replica that lags
 * further. PINGs every repl-ping-replica-period seconds and the REPLCONF
 * GETACK * that WAIT asks for go into the same stream, without SELECT.
 *
 * Replicas. A replica is a client that sent SYNC or PSYNC (flag S). A full
 * sync waits for a BGSAVE to start (one is started at once if none runs);
 * at its fork, with every shard lock held, the replica's place in the
 * stream is fixed and it is told +FULLRESYNC <replid> <offset>; when the
 * child is done the file is sent as $<len> and the bytes, then the stream
 * from that place on. A PSYNC whose ID and offset the backlog covers gets
 * +CONTINUE and the stream from there. Each replica's worker copies the
 * stream into the replica's reply blocks when told (one mail at a time per
 * replica) that there is more.
 *
 * Threads and locks. One mutex (the repl lock) guards the IDs, the buffer,
 * the list of replicas and the WAIT waiters. It is taken under the
 * propagation lock (the consumer) and under shard locks (at a fork); the
 * mailbox lock is taken under it, nothing else. A replica's client is
 * touched only by its own worker.
 */
#ifndef XKV_REPL_H
#define XKV_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPL_ID_LEN 40

struct client;
struct text;
struct worker;

/* Copies the IDs (NUL-terminated) into id and id2. */
void repl_ids(char id[REPL_ID_LEN + 1], char id2[REPL_ID_LEN + 1]);
/* A new random primary ID; the secondary one is cleared (Redis's
 * changeReplicationId + clearReplicationId2). */
void repl_change_id(void);

/* At start-up, before the workers run: the stream consumer and the BGSAVE
 * hooks. 0 or -errno. */
int repl_init(void);

/* SYNC (replid NULL) and PSYNC replid offset, on c's worker. */
void repl_sync(struct client *c, const char *replid, long long offset, bool failover);
/* FAILOVER [TO host port [FORCE]] [TIMEOUT ms] (host NULL: any replica),
 * and FAILOVER ABORT (why: the log's reason); replies as Redis 8.8. While
 * one runs, writes are paused, and once the target has the whole stream we
 * become its replica and ask it to take over (PSYNC ... FAILOVER). */
void repl_failover(struct client *c, const char *host, int port, long long timeout_ms, bool force);
void repl_failover_abort(const char *why);
/* Is our PSYNC to carry FAILOVER? It was answered (the target took over). */
bool repl_failover_in_progress(void);
void repl_failover_done(void);
/* Is a FAILOVER running (REPLICAOF is refused meanwhile)? */
bool repl_failover_running(void);
/* REPLCONF option value pairs (argv[1..]); replies as Redis. */
void repl_replconf(struct client *c);
/* WAIT numreplicas timeout (ms, 0: for ever), on c's worker: the replicas
 * that acked c's last write (c->repl_woff); aof: WAITAOF 0 numreplicas
 * timeout, the replicas whose AOF holds it (REPLCONF ACK ... FACK) and,
 * with local (WAITAOF 1), our own AOF's fsync of it (c->aof_woff). */
void repl_wait(struct client *c, long long numreplicas, long long timeout_ms, bool aof, bool local);
/* master_repl_offset, read without the lock (the stream's end). */
uint64_t repl_offset(void);
/* ROLE's reply. */
void repl_role(struct client *c);
/* INFO replication's section. */
void repl_info(struct text *t);
/* INFO memory's mem_replication_backlog (bytes held by the buffer). */
uint64_t repl_backlog_memory(void);
/* INFO stats: sync_full, sync_partial_ok, sync_partial_err. */
void repl_sync_stats(uint64_t out[3]);
/* min-replicas-to-write: may a write run now? */
bool repl_writes_allowed(void);
/* Each cron tick of w: keep-alives, timeouts, WAIT deadlines, the BGSAVE
 * that waiting replicas need, the backlog's time to live. */
void repl_cron(struct worker *w);
/* A replica's client (c->repl set) wrote n reply bytes, on its own worker
 * with no lock held: a diskless transfer waiting for it may go on. */
void repl_sync_sent(struct client *c, size_t n);
/* c is being freed (its own worker): it leaves the replicas and waiters. */
void repl_client_free(struct client *c);
/* Closes every replica (they sync again): this server's data was replaced. */
void repl_drop_replicas(void);

/*
 * A replica's history (PSYNC2). While this server is a replica, the stream
 * its own replicas get is its master's, byte for byte, under the master's ID
 * and offsets; promoted, it keeps that ID as the secondary one, valid up to
 * where it took over, so its old siblings continue with it.
 */
/* At start-up, from the file's AUX fields: a replica continues from there;
 * a master keeps id as the secondary ID up to offset. */
void repl_restore_history(const char *id, long long offset, bool replica);
/* Becoming a replica: our own history is what we ask the master to continue
 * (Redis's replicationCacheMasterUsingMyself); offset -1 if none. */
void repl_proxy_begin(char id[REPL_ID_LEN + 1], long long *offset);
/* After a full sync: the master's ID, the stream from offset on. */
void repl_proxy_start(const char *id, long long offset);
/* After +CONTINUE id: a new ID (the master was promoted) shifts ours. */
void repl_proxy_continue(const char *id);
/* The master's stream, whole commands as the master client applied them. */
void repl_proxy_feed(const char *p, size_t len);
/* REPLICAOF NO ONE: a new ID, the old one valid up to here (Redis's
 * shiftReplicationId); our replicas sync again, partially. */
void repl_promote(void);
/* The database the master's stream is in (the master client's), -1 if
 * none yet. */
int repl_replica_stream_db(void);

/*
 * The replica's side (repl_replica.c): REPLICAOF and the master link.
 */
/* A replica loading its master's file straight from the socket
 * (repl-diskless-load): other clients' commands but those flagged loading
 * get -LOADING meanwhile. The flag is a relaxed atomic. */
bool repl_loading(void);
/* INFO persistence's loading_* fields (total -1: a file framed by a mark). */
struct repl_loading {
	bool loading;
	int64_t start_s;
	long long total, loaded;
};
void repl_loading_info(struct repl_loading *out);
/* Is this server a replica (REPLICAOF host port in force)? */
bool repl_is_replica(void);
/* A replica whose link to its master is not up (master_link_status:down)? */
bool repl_link_down(void);
/* REPLICAOF host port (host NULL: NO ONE). 1 if already replicating from
 * there, else 0. */
int repl_replica_set(const char *host, int port);
/* At start-up, after the data is loaded: the replicaof directive, and the
 * history the file recorded (a partial resync after a restart). 0 or
 * -EINVAL. */
int repl_replica_start_up(void);
/* At shutdown, before the workers are joined: stops the link thread. */
void repl_replica_stop(void);
/* The master client (CLIENT_MASTER) read n bytes; it parsed a command (its
 * bytes are kept for our replicas); it ran a whole command;
 * REPLCONF ACK <offset> to it; it is being freed. Its own worker. */
void repl_master_read(struct client *c, size_t n);
void repl_master_command(struct client *c);
void repl_master_applied(struct client *c);
void repl_master_ack(struct client *c);
void repl_master_client_free(struct client *c);
/* Each cron tick of w: the ACK each second if w has the master client. */
void repl_replica_cron(struct worker *w);
/* ROLE and INFO replication of a replica; false if this is a master. INFO
 * also gives the master's ID and the applied offset. */
bool repl_replica_role(struct client *c);
bool repl_replica_info(struct text *t, char replid[REPL_ID_LEN + 1], long long *offset);

#endif
