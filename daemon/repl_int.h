/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl_int: what the master's two halves share, repl.c (the stream, PSYNC,
 * WAIT, FAILOVER) and repl_sync.c (the full sync: the fork, the file and its
 * transfer). Not an API for anything else: repl.h is.
 *
 * `repl_lock` guards every field of a struct repl_replica after `next` and
 * the list `repl_replicas` (the lock comment of repl.h says where it stands
 * in the lock order). The do_ functions below are called with it held.
 */
#ifndef XKV_REPL_INT_H
#define XKV_REPL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct worker;
struct repl_xfer;

/* The mark that ends a diskless file ($EOF:<mark>). */
#define REPL_EOF_MARK_LEN 40

enum replica_state {
	REPLICA_NONE,		   /* REPLCONF seen, no SYNC yet: not listed */
	REPLICA_WAIT_BGSAVE_START, /* waits for a fork */
	REPLICA_WAIT_BGSAVE_END,   /* its place is fixed; the child writes */
	REPLICA_SEND_BULK,	   /* the file is on its way to its worker */
	REPLICA_ONLINE,		   /* gets the stream */
};

/* A replica, or a client that said REPLCONF. Allocated and freed by its
 * client's worker; the fields after `next` are guarded by the lock, the
 * client pointer is only used by that worker. */
struct repl_replica {
	struct repl_replica *next;
	struct client *c;
	uint64_t client_id;
	struct worker *w;
	enum replica_state state;
	bool listed;	   /* in the replica list */
	bool mail_pending; /* a pump mail is on its way */
	bool pre_psync;	   /* SYNC: sends no ACKs */
	bool capa_eof, capa_psync2, rdb_only;
	bool no_data;	    /* REPLCONF rdb-filter-only: the file holds no keys */
	int port;	    /* REPLCONF listening-port */
	char ip[64];	    /* REPLCONF ip-address, or the peer's */
	uint64_t pos;	    /* next stream byte to copy into its replies */
	long long ack_off;  /* REPLCONF ACK */
	long long fack_off; /* REPLCONF ACK ... FACK: what its AOF holds */
	int64_t ack_time_s; /* of the last ACK (wall clock, s) */
	/* The streamed transfer it is a target of (repl_sync.c), or NULL:
	 * written under the lock (relaxed atomic), read by its worker. */
	struct repl_xfer *xfer;
	unsigned xfer_slot; /* its index among the transfer's targets */
};

extern pthread_mutex_t repl_lock;
extern struct repl_replica *repl_replicas;

/* Lock held: our replication ID (drawn on first use), and where the stream
 * ends now (master_repl_offset). */
const char *do_repl_id(void);
uint64_t do_repl_stream_end(void);
/* Lock held: a text for one replica, appended by its own worker. */
void do_repl_post_text(struct repl_replica *r, const char *s);
/* On w: the client of that id, NULL if gone or closing. */
struct client *repl_find_client(struct worker *w, uint64_t id);
/* On c's worker, no lock held: copies the stream c has not got yet into
 * its replies (wake: tell its engine). */
void repl_pump(struct client *c, bool wake);

/*
 * repl_sync.c: the full sync.
 */
/* Lock held: whether the replicas waiting for a fork get it now. */
bool do_repl_fork_due(int64_t now_s);
/* Starts the snapshot the waiting replicas need, unless a child runs (the
 * cron tries again). No lock held. */
void repl_sync_start_bgsave(void);
/* Lock held, its client being freed: the replica leaves the transfer it is
 * a target of, which goes on with the others. */
void do_repl_sync_leave(struct repl_replica *r);

#endif
