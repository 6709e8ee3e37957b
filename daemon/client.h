/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client: one connection's state: its parsed request, its pending replies,
 * and what the connection has negotiated (database, protocol, auth, name).
 *
 * Ownership and threads. A client belongs to the worker that accepted it for
 * its whole life: only that worker reads, writes, parses or frees it. Other
 * threads see it only through the client registry (CLIENT LIST / KILL), under
 * the registry lock, and read its statistics fields as relaxed atomics; they
 * ask for changes by posting to the owner's mailbox (see worker.h).
 */
#ifndef XKV_CLIENT_H
#define XKV_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "dict.h"

struct worker;
struct command;
struct trk_client;
struct acl_user;

struct arg {
	char *p; /* NUL-terminated for convenience; may contain NULs */
	size_t len;
};

/* A block of pending reply bytes; blocks form a FIFO. */
struct reply_block {
	struct reply_block *next;
	size_t used, sent, size;
	char data[];
};

enum client_flag {
	CLIENT_CLOSE_AFTER_REPLY = 1 << 0, /* QUIT, protocol error, KILL of self */
	CLIENT_CLOSE_ASAP = 1 << 1,	   /* killed: drop without flushing */
	CLIENT_NO_MORE_INPUT = 1 << 2,	   /* stop parsing, flush and close */
	CLIENT_UNIX_SOCKET = 1 << 3,	   /* connected through the Unix socket */
	CLIENT_MONITOR = 1 << 4,	   /* in MONITOR mode (monitor.c) */
	CLIENT_HELD = 1 << 5,		   /* its command waits for CLIENT PAUSE to end (pause.c) */
	/* CLIENT REPLY: OFF mutes every reply; SKIP_NEXT (set by CLIENT REPLY
	 * SKIP) becomes SKIP, muting one command, once that command is done. */
	CLIENT_REPLY_OFF = 1 << 6,
	CLIENT_REPLY_SKIP = 1 << 7,
	CLIENT_REPLY_SKIP_NEXT = 1 << 8,
	CLIENT_PUSHING = 1 << 9,   /* writing a pub/sub push: not muted by CLIENT REPLY */
	CLIENT_NO_EVICT = 1 << 10, /* CLIENT NO-EVICT ON (only shown: no client eviction here) */
	CLIENT_NO_TOUCH = 1 << 11, /* CLIENT NO-TOUCH ON: its lookups leave LRU/LFU alone */
	/* Its command waits for the background pool (blocking_wait_jobs). */
	CLIENT_JOB_WAIT = 1 << 12,
	CLIENT_SCRIPT = 1 << 13,       /* a script's stand-in: MONITOR shows it as "lua" */
	CLIENT_REPLICA = 1 << 14,      /* sent SYNC or PSYNC: a replica (repl.c) */
	CLIENT_REPLICA_BULK = 1 << 15, /* its RDB is being queued: no output limit */
	CLIENT_WAIT_ACKS = 1 << 16,    /* in WAIT: its next commands wait (repl.c) */
	CLIENT_MASTER = 1 << 17,       /* the link to our master (repl_replica.c) */
	CLIENT_PROTECTED = 1 << 18,    /* runs a busy script: its input waits (engines) */
	/* Cluster mode (cluster_route.c): ASKING, for its next command (or
	 * transaction); READONLY, until READWRITE or RESET. */
	CLIENT_ASKING = 1 << 19,
	CLIENT_READONLY = 1 << 20,
	CLIENT_AOF_LOADER = 1 << 21, /* the AOF's replay (aof.c) */
};

/* Redis's mustObeyClient: what the master or the AOF sends is applied as
 * it was decided there (XADD's exact trim without its LIMIT check ...). */
#define CLIENT_MUST_OBEY (CLIENT_MASTER | CLIENT_AOF_LOADER)

/* A client whose command is not answered yet, apart from BLPOP & co.
 * (c->blocked): held by a pause, waiting for the pool or in WAIT. Its next
 * commands wait. */
#define CLIENT_WAITING (CLIENT_HELD | CLIENT_JOB_WAIT | CLIENT_WAIT_ACKS)

/* Flags that stop reply_raw(); CLIENT_PUSHING lets pushes past the REPLY ones. */
#define CLIENT_MUTED (CLIENT_CLOSE_ASAP | CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP)

struct client {
	uint64_t id;
	int fd;
	struct worker *worker;
	unsigned flags;

	/* Negotiated state. */
	int db;
	int resp; /* 2 or 3 */
	bool authenticated;
	/* Its ACL user, referenced (acl_users.h), or NULL for the server's own
	 * stand-ins (AOF loader, master link...), which may do anything.
	 * Changed by its worker under the registry lock. */
	struct acl_user *user;
	bool kill_requested; /* CLIENT KILL matched it; guarded by the registry lock */
	char *name;	     /* CLIENT SETNAME, or NULL; guarded by the registry lock */
	char *lib_name;	     /* CLIENT SETINFO, or NULL; guarded by the registry lock */
	char *lib_ver;
	char addr[128];	 /* peer "ip:port", or "/unix/socket/path:0" */
	char laddr[128]; /* local "ip:port", or "/unix/socket/path:0" */

	/* Request parsing: bytes qbuf[qpos..qlen) are unparsed. */
	char *qbuf;
	size_t qlen, qpos, qcap;
	int req_type;	    /* 0 none yet, '*' multibulk, 'i' inline */
	long long mb_left;  /* multibulk: arguments still to read */
	long long bulk_len; /* multibulk: length of the bulk being read, or -1 */
	size_t cmd_start;   /* where the request being parsed starts */
	int argc, argv_cap;
	struct arg *argv;
	size_t *arg_off;  /* while parsing, argument offsets into qbuf */
	char *inline_buf; /* an inline request's unquoted arguments */

	struct blocked_state *blocked; /* BLPOP & co. waiting (blocking.c), or NULL */
	/* Replication (repl.c): what REPLCONF and SYNC told, or NULL; freed by
	 * repl_client_free. */
	struct repl_replica *repl;
	uint64_t repl_woff; /* the stream's end after its last write (WAIT) */
	uint64_t aof_woff;  /* the AOF's end after its last write (WAITAOF) */
	/* CLIENT PAUSE (pause.c): the held request, in the worker's FIFO. */
	struct held_request *held;
	struct client *next_held, *prev_held;
	/* MONITOR (monitor.c): the worker's list of monitors; the peer as
	 * monitor lines show it (computed once). */
	struct client *next_monitor, *prev_monitor;
	char *monitor_peer;

	/* Cluster mode: the slot of the running command's keys, as the
	 * redirect check found it (-1: none); a script's declared keys'. */
	int cluster_slot;

	/* MULTI/EXEC (multi.c): queued commands, and the keys WATCHed. */
	bool in_multi;
	bool multi_error; /* a command failed to queue: EXEC aborts */
	bool watch_dirty; /* a watched key changed; set by any worker (atomic) */
	struct queued_command *queue;
	int nqueued, queue_cap;
	struct watched_key *watched;
	int nwatched;

	/* Pub/sub (pubsub.c): subscriptions, or NULL before the first one.
	 * The counts (channels, patterns, shard channels) are written by the
	 * owner and read by CLIENT LIST on any worker (relaxed atomics). */
	struct ps_client *pubsub;
	long pubsub_counts[3];

	/* CLIENT TRACKING (tracking.c): its state, or NULL before the first
	 * CLIENT TRACKING ON; the owner's mirror of its TRACKING_* flags and
	 * redirection, read by CLIENT LIST on any worker (relaxed atomics). */
	struct trk_client *tracking;
	unsigned trk_flags;
	uint64_t trk_redir;

	/* Replies. */
	struct reply_block *reply_head, *reply_tail;
	size_t reply_bytes;
	/* Redis's adaptive reply buffer: the size a new reply block gets, 0
	 * for REPLY_BLOCK_SIZE (stand-in clients); the most of it one send
	 * found used since the peak's last reset. Resized by the cron
	 * (client_resize_reply_buffer): idle connections keep 1 KiB, not 16. */
	uint32_t rbuf_size, rbuf_peak;
	int64_t rbuf_peak_reset_ms;
	int64_t obuf_soft_since_ms; /* over the soft output limit since (obuf.c), or 0 */

	/* Statistics, read by other threads through the registry. */
	int64_t ctime_ms; /* connected at */
	int64_t last_ms;  /* last command at */
	const char *last_cmd;
	uint64_t commands;
	/* CLIENT LIST's per-connection totals: bytes read and written, reads,
	 * and commands run per read that ran any (pipeline sum and count);
	 * argv_mem is the argument bytes of the command running or waiting
	 * (blocked, held). Written by the owner, read as relaxed atomics. */
	uint64_t net_in, net_out, read_events, pipeline_sum, pipeline_cnt;
	size_t argv_mem;

	/* Owned by the worker's network engine. */
	void *engine_data;
	bool closing;		     /* being closed: no more input or replies */
	struct client *next_closing; /* the engine's list of clients to free */

	struct client *next_in_worker, *prev_in_worker;
	struct dict_node id_node; /* in its worker's clients_by_id */
	struct client *next_in_registry, *prev_in_registry;
};

/* Creates a client for an accepted socket; registers it. */
struct client *client_create(struct worker *w, int fd);
/* Unregisters, closes the socket and frees everything. */
void client_free(struct client *c);

/* Where the engine may put up to *len fresh bytes (at least min_len of room
 * is made), then client_read_done() with the count it stored. */
char *client_read_buffer(struct client *c, size_t *len);
void client_read_done(struct client *c, size_t n);
/* c's query buffer becomes its own if it had borrowed its worker's reusable
 * one: client_free() does this; code that frees a client by hand (tests) must
 * call it before freeing c->qbuf. */
void client_qbuf_keep(struct client *c);
/* Frees the calling worker's reusable query buffer (at its exit, after its
 * clients are freed). */
void client_thread_exit(void);
/* Parses and runs every complete command in the query buffer. Returns false
 * when the client must be closed once its replies are flushed. */
bool client_process_input(struct client *c);

/* Fills iov with the pending reply bytes, at most limit of them (SIZE_MAX:
 * all); returns the count of entries. */
int client_reply_iov(struct client *c, struct iovec *iov, int max, size_t limit);
/* Marks n reply bytes as sent and frees finished blocks. */
void client_reply_sent(struct client *c, size_t n);

/* The adaptive reply buffer (rbuf_size): the owner's cron calls this for
 * each of its clients. DEBUG REPLYBUFFER sets how often the peak is reset
 * (ms, -1 never; Redis's default 5 s) and whether resizing happens. */
#define REPLY_BUFFER_PEAK_RESET_MS 5000
extern long long reply_buffer_peak_reset_ms;
extern int reply_buffer_resizing;
void client_resize_reply_buffer(struct client *c, int64_t now);
static inline bool client_has_replies(const struct client *c)
{
	return c->reply_bytes > 0;
}

/* A command (with its reply) is complete: CLIENT REPLY SKIP moves on. */
static inline void client_command_done(struct client *c)
{
	if (c->flags & (CLIENT_REPLY_SKIP | CLIENT_REPLY_SKIP_NEXT)) {
		c->flags &= ~CLIENT_REPLY_SKIP;
		if (c->flags & CLIENT_REPLY_SKIP_NEXT)
			c->flags = (c->flags & ~CLIENT_REPLY_SKIP_NEXT) | CLIENT_REPLY_SKIP;
	}
}

/* Formats the CLIENT LIST / CLIENT INFO line of c (registry lock held, or c is
 * the caller's own). Returns a heap string the caller frees. */
char *client_info_line(struct client *c);

/* What c holds: the struct, query buffer, arguments, queued MULTI commands
 * and pending replies (CLIENT LIST's tot-mem). Any thread. */
size_t client_mem(struct client *c);
/* client_mem summed over every client (takes the registry lock). */
size_t clients_mem(void);

/* The registry of every client on every worker. */
void registry_lock(void);
void registry_unlock(void);
struct client *registry_first(void); /* then c->next_in_registry */
uint64_t registry_count(void);
/* Total number of connections accepted since start. */
uint64_t registry_total_connections(void);

#endif
