// SPDX-License-Identifier: BSD-3-Clause
/*
 * Replication, the master's side (repl.h). Everything below the lock comment
 * of repl.h: `lock` guards every static of this file but `consumer` and
 * `stats`, which are written once at start-up or are atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "aof.h"
#include "client.h"
#include "commands.h"
#include "config.h"
#include "crc64.h"
#include "exec_ctx.h"
#include "log.h"
#include "mem.h"
#include "obuf.h"
#include "pause.h"
#include "propagate.h"
#include "rdbfile.h"
#include "repl.h"
#include "repl_int.h"
#include "text.h"
#include "util.h"
#include "worker.h"

/* The stream is kept in blocks of this size. */
#define REPL_BLOCK_SIZE (16 * 1024)

struct repl_block {
	struct repl_block *next;
	uint64_t start; /* stream offset of data[0] (0-based) */
	size_t used;
	char data[REPL_BLOCK_SIZE];
};

/* A client in WAIT: guarded by the lock, answered by its own worker. */
struct repl_waiter {
	struct repl_waiter *next;
	uint64_t client_id;
	struct worker *w;
	uint64_t target;
	long long num;
	int64_t deadline_ms; /* mono, 0: none */
	bool aof;	     /* WAITAOF: counts FACKs */
	bool local;	     /* WAITAOF 1: our own fsync too */
	uint64_t aof_target; /* the AOF's bytes that must be on disk */
};

pthread_mutex_t repl_lock = PTHREAD_MUTEX_INITIALIZER;
static char replid[REPL_ID_LEN + 1];  /* "" until first read */
static char replid2[REPL_ID_LEN + 1]; /* zeros, set with replid */
/* Up to which offset (1-based, inclusive) replid2's history is ours, -1
 * if none (Redis's second_replid_offset). */
static long long second_off = -1;
/* A replica: the stream is the master's, fed by repl_proxy_feed byte for
 * byte with the master's offsets, so that our replicas can continue with a
 * master that takes our place, or with us once promoted (Redis's
 * replicationFeedStreamFromMasterStream). The propagation stream is not
 * theirs then (a writable replica's writes are its own). */
static bool proxy;

static struct {
	bool active;
	struct repl_block *head, *tail;
	uint64_t offset;  /* master_repl_offset: bytes of stream since start */
	uint64_t histlen; /* bytes held, from head->start */
	uint64_t blocks;
	int64_t no_replicas_since_s; /* for repl-backlog-ttl */
} bl;

struct repl_replica *repl_replicas; /* listed ones */
static unsigned nlisted;
static struct repl_waiter *waiters;
static bool getack_wanted; /* a WAIT blocked since the last GETACK */
static int64_t last_ping_s, last_newline_s;
static int consumer = -1; /* our propagation consumer's id */
/* INFO stats (atomics): full syncs, partial ones accepted and refused. */
static uint64_t stats[3];
/* Replicas within min-replicas-max-lag, updated by the cron and ACKs. */
static int good_replicas;

/* FAILOVER (Redis's coordinated failover), under the lock; state also read
 * atomically. */
enum { FO_NONE, FO_WAIT_SYNC, FO_IN_PROGRESS };
static struct {
	int state;
	char host[64]; /* the target, "" for any until one is synced */
	int port;
	int64_t end_ms; /* mono, 0: no timeout */
	bool force;
} fo;

/* ---- identity --------------------------------------------------------------------------------- */

/* Caller holds the lock: a fresh primary ID, the secondary kept. */
static void draw_id(void)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[REPL_ID_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(mono_us() >> (8 * (i % 8)));
	for (size_t i = 0; i < sizeof(raw); i++) {
		replid[2 * i] = hex[raw[i] >> 4];
		replid[2 * i + 1] = hex[raw[i] & 15];
	}
	replid[REPL_ID_LEN] = '\0';
}

/* Caller holds the lock. A new history: a fresh ID, no secondary one. */
static void new_id(void)
{
	draw_id();
	memset(replid2, '0', REPL_ID_LEN);
	replid2[REPL_ID_LEN] = '\0';
	second_off = -1;
}

/* Caller holds the lock. Our history so far stays valid under its old ID up
 * to here; id (or a fresh one if NULL) goes on from here (Redis's
 * shiftReplicationId). */
static void shift_id(const char *id)
{
	memcpy(replid2, replid, sizeof(replid2));
	second_off = (long long)bl.offset + 1;
	if (id) {
		memcpy(replid, id, REPL_ID_LEN);
		replid[REPL_ID_LEN] = '\0';
	} else {
		draw_id();
	}
	log_notice("Setting secondary replication ID to %s, valid up to offset: %lld. New "
		   "replication ID is %s",
		   replid2, second_off, replid);
}

static void ensure_id(void)
{
	if (!replid[0])
		new_id();
}

const char *do_repl_id(void)
{
	ensure_id();
	return replid;
}

uint64_t do_repl_stream_end(void)
{
	return bl.offset;
}

void repl_ids(char id[REPL_ID_LEN + 1], char id2[REPL_ID_LEN + 1])
{
	pthread_mutex_lock(&repl_lock);
	ensure_id();
	memcpy(id, replid, REPL_ID_LEN + 1);
	memcpy(id2, replid2, REPL_ID_LEN + 1);
	pthread_mutex_unlock(&repl_lock);
}

void repl_change_id(void)
{
	pthread_mutex_lock(&repl_lock);
	new_id();
	pthread_mutex_unlock(&repl_lock);
}

/* ---- the shared buffer (lock held) ------------------------------------------------------------ */

static void buf_append(const void *p, size_t len)
{
	const char *s = p;

	while (len) {
		struct repl_block *b = bl.tail;
		size_t n;

		if (!b || b->used == REPL_BLOCK_SIZE) {
			b = xmalloc(sizeof(*b));
			b->next = NULL;
			b->start = bl.offset;
			b->used = 0;
			if (bl.tail)
				bl.tail->next = b;
			else
				bl.head = b;
			bl.tail = b;
			bl.blocks++;
		}
		n = REPL_BLOCK_SIZE - b->used;
		if (n > len)
			n = len;
		memcpy(b->data + b->used, s, n);
		b->used += n;
		/* Read without the lock by repl_offset(). */
		__atomic_store_n(&bl.offset, bl.offset + n, __ATOMIC_RELAXED);
		bl.histlen += n;
		s += n;
		len -= n;
	}
}

static void buf_append_command(int argc, const struct arg *argv)
{
	char hdr[32];
	int n;

	n = snprintf(hdr, sizeof(hdr), "*%d\r\n", argc);
	buf_append(hdr, (size_t)n);
	for (int i = 0; i < argc; i++) {
		n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", argv[i].len);
		buf_append(hdr, (size_t)n);
		buf_append(argv[i].p, argv[i].len);
		buf_append("\r\n", 2);
	}
}

/* Drops whole blocks past the backlog's size that no replica still needs. */
static void buf_trim(void)
{
	uint64_t need = bl.offset, size = (uint64_t)config.repl_backlog_size;

	/* A replica whose place is fixed pins the stream from there. */
	for (struct repl_replica *r = repl_replicas; r; r = r->next)
		if (r->state != REPLICA_WAIT_BGSAVE_START && r->pos < need)
			need = r->pos;
	while (bl.head && bl.head->next && bl.histlen - bl.head->used >= size &&
	       bl.head->start + bl.head->used <= need) {
		struct repl_block *b = bl.head;

		bl.head = b->next;
		bl.histlen -= b->used;
		bl.blocks--;
		xfree(b);
	}
}

static void buf_free(void)
{
	while (bl.head) {
		struct repl_block *b = bl.head;

		bl.head = b->next;
		xfree(b);
	}
	bl.tail = NULL;
	bl.histlen = 0;
	bl.blocks = 0;
	bl.active = false;
}

static const struct mail_ops pump_mail, wait_mail;

/* Tells every online replica's worker there is more (one mail in flight
 * per replica). */
static void notify_replicas(void)
{
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_ONLINE || r->mail_pending)
			continue;
		r->mail_pending = true;
		worker_post(r->w, &pump_mail, r->client_id);
	}
}

/* Appends a command that is not a keyspace effect (PING, REPLCONF GETACK):
 * no SELECT goes before it, as in Redis. */
static void feed_control(int argc, const struct arg *argv)
{
	if (!bl.active)
		return;
	buf_append_command(argc, argv);
	buf_trim();
	notify_replicas();
}

/* The propagation consumer, under the propagation lock. */
static void repl_feed(void *arg, int argc, const struct arg *argv)
{
	(void)arg;
	pthread_mutex_lock(&repl_lock);
	if (bl.active && !proxy) {
		buf_append_command(argc, argv);
		buf_trim();
		notify_replicas();
	}
	pthread_mutex_unlock(&repl_lock);
}

/* ---- replicas on their own worker ------------------------------------------------------------- */

struct client *repl_find_client(struct worker *w, uint64_t id)
{
	for (struct client *c = w->clients; c; c = c->next_in_worker)
		if (c->id == id)
			return c->closing ? NULL : c;
	return NULL;
}

/* Copies what the replica has not got yet into its replies; wake: its
 * engine is told (not needed while its own input is being handled). */
void repl_pump(struct client *c, bool wake)
{
	struct repl_replica *r = c->repl;

	pthread_mutex_lock(&repl_lock);
	r->mail_pending = false;
	if (r->state != REPLICA_ONLINE || r->pos == bl.offset) {
		pthread_mutex_unlock(&repl_lock);
		return;
	}
	for (struct repl_block *b = bl.head; b; b = b->next) {
		size_t from;

		if (b->start + b->used <= r->pos)
			continue;
		from = r->pos > b->start ? (size_t)(r->pos - b->start) : 0;
		reply_raw(c, b->data + from, b->used - from);
		r->pos = b->start + b->used;
	}
	buf_trim();
	pthread_mutex_unlock(&repl_lock);
	if (wake && !(c->flags & CLIENT_CLOSE_ASAP))
		c->worker->engine->wants_write(c);
}

static void pump_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct client *c = repl_find_client(w, client_id);

	(void)payload;
	if (c && c->repl)
		repl_pump(c, true);
}

static const struct mail_ops pump_mail = { .deliver = pump_deliver };

/* A text for one replica (+FULLRESYNC, a keep-alive newline). */
static void text_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct client *c = repl_find_client(w, client_id);
	char *s = payload;

	if (c) {
		reply_raw(c, s, strlen(s));
		w->engine->wants_write(c);
	}
	xfree(s);
}

static void text_drop(void *payload)
{
	xfree(payload);
}

static const struct mail_ops text_mail = { .deliver = text_deliver, .drop = text_drop };

void do_repl_post_text(struct repl_replica *r, const char *s)
{
	worker_post_payload(r->w, &text_mail, r->client_id, xstrndup(s, strlen(s)));
}

/* Makes our consumer's state follow the backlog's: called with no lock held
 * after either may have changed (the propagation lock is taken above ours). */
static void consumer_follow(void)
{
	for (;;) {
		bool on;

		pthread_mutex_lock(&repl_lock);
		on = bl.active && !proxy;
		pthread_mutex_unlock(&repl_lock);
		propagate_consumer_set_active(consumer, on);
		pthread_mutex_lock(&repl_lock);
		if ((bl.active && !proxy) == on) {
			pthread_mutex_unlock(&repl_lock);
			return;
		}
		pthread_mutex_unlock(&repl_lock);
	}
}

/* Under every shard lock, before a file is written: where it stands in
 * the stream (Redis's rdbPopulateSaveInfo), if we have a history. */
static void repl_info_hook(struct rdbfile_repl_info *out)
{
	pthread_mutex_lock(&repl_lock);
	if (bl.active || proxy) {
		ensure_id();
		memcpy(out->id, replid, sizeof(out->id));
		out->offset = (long long)bl.offset;
	}
	pthread_mutex_unlock(&repl_lock);
	/* A replica's stream goes on in its master client's database; a
	 * master's starts with SELECT after any fork or restart. */
	out->stream_db = proxy ? repl_replica_stream_db() : 0;
}

int repl_init(void)
{
	consumer = propagate_consumer_add(repl_feed, NULL, false);
	if (consumer < 0)
		return consumer;
	propagate_consumer_set_repl(consumer);
	rdbfile_repl_info_hook = repl_info_hook;
	return 0;
}

/* ---- a replica's history (repl.h) ------------------------------------------------------------- */

/* Starts the stream at offset under id with an empty backlog. Lock held. */
static void history_reset(const char *id, long long offset)
{
	buf_free();
	bl.active = true;
	__atomic_store_n(&bl.offset, (uint64_t)offset, __ATOMIC_RELAXED);
	memcpy(replid, id, REPL_ID_LEN);
	replid[REPL_ID_LEN] = '\0';
	bl.no_replicas_since_s = time(NULL);
}

void repl_restore_history(const char *id, long long offset, bool replica)
{
	pthread_mutex_lock(&repl_lock);
	if (replica) {
		history_reset(id, offset);
		memset(replid2, '0', REPL_ID_LEN);
		second_off = -1;
		proxy = true;
	} else {
		/* A master restarted from its file: replicas that had all of it
		 * may continue (Redis keeps the file's ID as the secondary). */
		ensure_id();
		history_reset(replid, offset);
		memcpy(replid2, id, REPL_ID_LEN);
		replid2[REPL_ID_LEN] = '\0';
		second_off = offset + 1;
		bl.no_replicas_since_s = time(NULL);
	}
	pthread_mutex_unlock(&repl_lock);
	consumer_follow();
}

void repl_proxy_begin(char id[REPL_ID_LEN + 1], long long *offset)
{
	pthread_mutex_lock(&repl_lock);
	ensure_id();
	proxy = true;
	memcpy(id, replid, REPL_ID_LEN + 1);
	*offset = bl.active ? (long long)bl.offset : -1;
	pthread_mutex_unlock(&repl_lock);
	consumer_follow();
}

void repl_proxy_start(const char *id, long long offset)
{
	pthread_mutex_lock(&repl_lock);
	history_reset(id, offset);
	memset(replid2, '0', REPL_ID_LEN);
	second_off = -1;
	proxy = true;
	pthread_mutex_unlock(&repl_lock);
	consumer_follow();
}

void repl_proxy_continue(const char *id)
{
	bool changed;

	pthread_mutex_lock(&repl_lock);
	ensure_id();
	bl.active = true;
	changed = strcasecmp(id, replid) != 0;
	/* The master took another's place (a failover): what we hold is
	 * still good under the old ID for our replicas. */
	if (changed) {
		log_notice("Master replication ID changed to %s", id);
		shift_id(id);
	}
	pthread_mutex_unlock(&repl_lock);
	/* They learn the new ID by syncing again (a partial resync). */
	if (changed)
		repl_drop_replicas();
}

void repl_proxy_feed(const char *p, size_t len)
{
	pthread_mutex_lock(&repl_lock);
	if (proxy && bl.active && len) {
		buf_append(p, len);
		buf_trim();
		notify_replicas();
	}
	pthread_mutex_unlock(&repl_lock);
}

void repl_promote(void)
{
	pthread_mutex_lock(&repl_lock);
	ensure_id();
	shift_id(NULL);
	proxy = false;
	pthread_mutex_unlock(&repl_lock);
	consumer_follow();
	/* Our replicas learn the new ID by a partial resync. */
	repl_drop_replicas();
}

/* ---- commands ---------------------------------------------------------------------------------- */

static struct repl_replica *replica_of(struct client *c)
{
	if (!c->repl) {
		struct repl_replica *r = xcalloc(1, sizeof(*r));

		r->c = c;
		r->client_id = c->id;
		r->w = c->worker;
		c->repl = r;
	}
	return c->repl;
}

/* Lock held. Redis's masterTryPartialResynchronization: the ID is ours (or
 * the one we inherited, up to where we took over) and the backlog holds
 * everything from offset (1-based) on. */
static bool can_continue(const char *id, long long offset)
{
	uint64_t first = bl.offset - bl.histlen + 1;

	if (!bl.active)
		return false;
	/* The ID we inherited is good up to where our own history began. */
	if (strcasecmp(id, replid) != 0 && (strcasecmp(id, replid2) != 0 || offset > second_off)) {
		if (strcasecmp(id, replid2) == 0)
			log_notice("Partial resynchronization not accepted: Requested offset "
				   "for second ID was %lld, but I can reply up to %lld",
				   offset, second_off);
		else if (id[0] != '?')
			log_notice("Partial resynchronization not accepted: Replication ID "
				   "mismatch (Replica asked for '%s', my replication IDs are '%s' "
				   "and '%s')",
				   id, replid, replid2);
		return false;
	}
	return offset >= 0 && (uint64_t)offset >= first && (uint64_t)offset <= bl.offset + 1;
}

/* Lock held. */
static void list_add(struct repl_replica *r)
{
	struct repl_replica **p = &repl_replicas;

	while (*p)
		p = &(*p)->next;
	r->next = NULL;
	*p = r;
	r->listed = true;
	/* The first PING comes a whole period after the first replica. */
	if (!nlisted++)
		last_ping_s = time(NULL);
}

void repl_sync(struct client *c, const char *id, long long offset, bool failover)
{
	struct repl_replica *r;
	bool fresh = false, due;

	if (c->flags & CLIENT_REPLICA)
		return;
	/* Our master hands over to us (its FAILOVER): we are the master now. */
	if (failover) {
		bool match;

		log_notice("Failover request received for replid %s.", id);
		if (!repl_is_replica()) {
			reply_error(c, "PSYNC FAILOVER can't be sent to a master.");
			return;
		}
		pthread_mutex_lock(&repl_lock);
		match = !strcasecmp(id, replid);
		pthread_mutex_unlock(&repl_lock);
		if (!match) {
			reply_error(c, "PSYNC FAILOVER replid must match my replid.");
			return;
		}
		repl_replica_set(NULL, 0);
		repl_promote();
		log_notice("MASTER MODE enabled (failover request from 'id=%llu addr=%s')",
			   (unsigned long long)c->id, c->addr);
	}
	if (__atomic_load_n(&fo.state, __ATOMIC_RELAXED) != FO_NONE) {
		reply_error(c, "-NOMASTERLINK Can't SYNC while failing over");
		return;
	}
	if (repl_is_replica() && repl_link_down()) {
		reply_error(c, "-NOMASTERLINK Can't SYNC while not connected with my master");
		return;
	}
	if (client_has_replies(c)) {
		reply_error(c, "SYNC and PSYNC are invalid with pending output");
		return;
	}
	r = replica_of(c);
	if (r->no_data && !r->capa_eof) {
		reply_error(c, "Filtered replica requires EOF capability");
		return;
	}
	if (!r->ip[0]) {
		const char *colon = strrchr(c->addr, ':');
		size_t n = colon ? (size_t)(colon - c->addr) : strlen(c->addr);

		if (n >= sizeof(r->ip))
			n = sizeof(r->ip) - 1;
		memcpy(r->ip, c->addr, n);
		r->ip[n] = '\0';
	}
	log_notice("Replica %s:%d asks for synchronization", r->ip, r->port);
	pthread_mutex_lock(&repl_lock);
	ensure_id();
	if (id && can_continue(id, offset)) {
		char buf[64];

		if (r->capa_psync2)
			snprintf(buf, sizeof(buf), "+CONTINUE %s\r\n", replid);
		else
			snprintf(buf, sizeof(buf), "+CONTINUE\r\n");
		reply_raw(c, buf, strlen(buf));
		r->pos = (uint64_t)offset - 1;
		r->state = REPLICA_ONLINE;
		r->ack_time_s = time(NULL);
		r->ack_off = offset - 1;
		list_add(r);
		c->flags |= CLIENT_REPLICA;
		pthread_mutex_unlock(&repl_lock);
		__atomic_fetch_add(&stats[1], 1, __ATOMIC_RELAXED);
		log_notice("Partial resynchronization request from %s:%d accepted, sending %llu "
			   "bytes of backlog starting from offset %lld.",
			   r->ip, r->port, (unsigned long long)(bl.offset + 1 - (uint64_t)offset),
			   offset);
		repl_pump(c, false);
		return;
	}
	if (id && id[0] != '?')
		__atomic_fetch_add(&stats[2], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats[0], 1, __ATOMIC_RELAXED);
	/* The first replica: a new history starts (Redis's
	 * createReplicationBacklog after changeReplicationId). */
	if (!bl.active) {
		if (!nlisted)
			new_id();
		bl.active = true;
		fresh = true;
	}
	r->pre_psync = !id;
	r->state = REPLICA_WAIT_BGSAVE_START;
	r->ack_time_s = time(NULL);
	list_add(r);
	c->flags |= CLIENT_REPLICA;
	pthread_mutex_unlock(&repl_lock);
	/* Before the fork: every command after it is in the stream whole. */
	if (fresh)
		consumer_follow();
	/* A replica forks on its master client's worker, between two of its
	 * commands, so the file and the offset agree (the cron starts it). */
	pthread_mutex_lock(&repl_lock);
	due = do_repl_fork_due(time(NULL));
	pthread_mutex_unlock(&repl_lock);
	if (!due)
		log_notice("Delay next BGSAVE for diskless SYNC");
	else if (!__atomic_load_n(&proxy, __ATOMIC_RELAXED) || c->worker->id == 0)
		repl_sync_start_bgsave();
}

void repl_replconf(struct client *c)
{
	struct repl_replica *r;

	if (c->argc % 2 == 0) {
		reply_error(c, "syntax error");
		return;
	}
	r = replica_of(c);
	for (int j = 1; j < c->argc; j += 2) {
		const struct arg *v = &c->argv[j + 1];
		long long n;

		if (arg_is(c, j, "listening-port")) {
			if (!arg_ll(c, j + 1, &n))
				return;
			r->port = (int)n;
		} else if (arg_is(c, j, "ip-address")) {
			if (v->len >= sizeof(r->ip)) {
				reply_errorf(
					c,
					"REPLCONF ip-address provided by replica instance is too "
					"long: %zu bytes",
					v->len);
				return;
			}
			memcpy(r->ip, v->p, v->len);
			r->ip[v->len] = '\0';
		} else if (arg_is(c, j, "capa")) {
			if (arg_is(c, j + 1, "eof"))
				r->capa_eof = true;
			else if (arg_is(c, j + 1, "psync2"))
				r->capa_psync2 = true;
		} else if (arg_is(c, j, "ack")) {
			struct repl_waiter *wt;

			/* No reply, ever. */
			if (!(c->flags & CLIENT_REPLICA) || !str_to_ll(v->p, v->len, &n))
				return;
			pthread_mutex_lock(&repl_lock);
			if (n > r->ack_off)
				r->ack_off = n;
			if (c->argc > j + 3 && arg_is(c, j + 2, "fack") &&
			    str_to_ll(c->argv[j + 3].p, c->argv[j + 3].len, &n) && n > r->fack_off)
				r->fack_off = n;
			r->ack_time_s = time(NULL);
			/* Waiters learn of it on their own workers. */
			for (wt = waiters; wt; wt = wt->next)
				worker_post(wt->w, &wait_mail, wt->client_id);
			pthread_mutex_unlock(&repl_lock);
			return;
		} else if (arg_is(c, j, "getack")) {
			/* No reply; from our master, an ACK. */
			if (c->flags & CLIENT_MASTER)
				repl_master_ack(c);
			return;
		} else if (arg_is(c, j, "rdb-filter-only")) {
			/* Space-separated filters; "functions" keeps the functions
			 * (there are none in our files), nothing keeps the data. */
			size_t i = 0;

			while (i < v->len) {
				size_t k = i;

				while (k < v->len && v->p[k] != ' ')
					k++;
				if (k > i && !str_eq_nocase(v->p + i, k - i, "functions")) {
					reply_errorf(c, "Unsupported rdb-filter-only option: %.*s",
						     (int)(k - i), v->p + i);
					return;
				}
				i = k + 1;
			}
			r->no_data = true;
		} else if (arg_is(c, j, "rdb-only")) {
			if (!str_to_ll(v->p, v->len, &n) || n < 0 || n > 1) {
				reply_error(c, "value is out of range");
				return;
			}
			r->rdb_only = n == 1;
		} else {
			reply_errorf(c, "Unrecognized REPLCONF option: %s", c->argv[j].p);
			return;
		}
	}
	reply_ok(c);
}

void repl_role(struct client *c)
{
	unsigned n = 0;

	if (repl_replica_role(c))
		return;
	pthread_mutex_lock(&repl_lock);
	for (struct repl_replica *r = repl_replicas; r; r = r->next)
		n += r->state == REPLICA_ONLINE;
	reply_array(c, 3);
	reply_bulk_cstr(c, "master");
	reply_int(c, (long long)bl.offset);
	reply_array(c, n);
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_ONLINE)
			continue;
		reply_array(c, 3);
		reply_bulk_cstr(c, r->ip);
		reply_bulk_ll(c, r->port);
		reply_bulk_ll(c, r->ack_off);
	}
	pthread_mutex_unlock(&repl_lock);
}

static const char *state_name(enum replica_state s)
{
	switch (s) {
	case REPLICA_WAIT_BGSAVE_START:
	case REPLICA_WAIT_BGSAVE_END:
		return "wait_bgsave";
	case REPLICA_SEND_BULK:
		return "send_bulk";
	case REPLICA_ONLINE:
		return "online";
	default:
		return "";
	}
}

void repl_info(struct text *t)
{
	char master_id[REPL_ID_LEN + 1] = "";
	long long master_off = 0;
	bool replica = repl_replica_info(t, master_id, &master_off);
	int64_t now = time(NULL);
	int i = 0;

	pthread_mutex_lock(&repl_lock);
	ensure_id();
	if (!replica)
		text_printf(t, "# Replication\r\nrole:master\r\n");
	text_printf(t, "connected_slaves:%u\r\n", nlisted);
	if (config.min_replicas_to_write && config.min_replicas_max_lag)
		text_printf(t, "min_slaves_good_slaves:%d\r\n",
			    __atomic_load_n(&good_replicas, __ATOMIC_RELAXED));
	for (struct repl_replica *r = repl_replicas; r; r = r->next, i++)
		text_printf(t,
			    "slave%d:ip=%s,port=%d,state=%s,offset=%lld,lag=%lld,io-thread=%u\r\n",
			    i, r->ip, r->port, state_name(r->state), r->ack_off,
			    r->state == REPLICA_ONLINE ? (long long)(now - r->ack_time_s) : 0LL,
			    r->w->id);
	text_printf(t,
		    "master_failover_state:%s\r\n"
		    "master_replid:%s\r\n"
		    "master_replid2:%s\r\n"
		    "master_repl_offset:%llu\r\n"
		    "second_repl_offset:%lld\r\n"
		    "repl_backlog_active:%d\r\n"
		    "repl_backlog_size:%lld\r\n"
		    "repl_backlog_first_byte_offset:%llu\r\n"
		    "repl_backlog_histlen:%llu\r\n",
		    fo.state == FO_WAIT_SYNC	 ? "waiting-for-sync"
		    : fo.state == FO_IN_PROGRESS ? "failover-in-progress"
						 : "no-failover",
		    replica && master_id[0] ? master_id : replid, replid2,
		    replica ? (unsigned long long)master_off : (unsigned long long)bl.offset,
		    second_off, bl.active, (long long)config.repl_backlog_size,
		    bl.active ? (unsigned long long)(bl.offset - bl.histlen + 1) : 0ULL,
		    (unsigned long long)bl.histlen);
	pthread_mutex_unlock(&repl_lock);
}

uint64_t repl_backlog_memory(void)
{
	uint64_t n;

	pthread_mutex_lock(&repl_lock);
	n = bl.blocks * sizeof(struct repl_block);
	pthread_mutex_unlock(&repl_lock);
	return n;
}

void repl_sync_stats(uint64_t out[3])
{
	for (int i = 0; i < 3; i++)
		out[i] = __atomic_load_n(&stats[i], __ATOMIC_RELAXED);
}

/* Lock held. */
static int count_good(int64_t now)
{
	int n = 0;

	for (struct repl_replica *r = repl_replicas; r; r = r->next)
		if (r->state == REPLICA_ONLINE &&
		    now - r->ack_time_s <= config.min_replicas_max_lag)
			n++;
	return n;
}

bool repl_writes_allowed(void)
{
	long long need = __atomic_load_n(&config.min_replicas_to_write, __ATOMIC_RELAXED);

	if (!need || !__atomic_load_n(&config.min_replicas_max_lag, __ATOMIC_RELAXED))
		return true;
	return __atomic_load_n(&good_replicas, __ATOMIC_RELAXED) >= need;
}

static const struct arg getack[3] = { PROP_STR("REPLCONF"), PROP_STR("GETACK"), PROP_STR("*") };

/* Under the propagation lock: the GETACK a WAIT asked for, and the PING
 * every repl-ping-replica-period seconds. */
static void cron_feed(void *arg)
{
	static const struct arg ping = PROP_STR("PING");
	int64_t now_s = *(int64_t *)arg;

	pthread_mutex_lock(&repl_lock);
	/* A replica passes its master's PINGs on, it sends none of its own. */
	if (proxy) {
		pthread_mutex_unlock(&repl_lock);
		return;
	}
	if (getack_wanted) {
		getack_wanted = false;
		if (nlisted)
			feed_control(3, getack);
	}
	/* Not while writes are paused: replicas could never catch up (a
	 * FAILOVER waits for that), as Redis. */
	if (nlisted && now_s - last_ping_s >= config.repl_ping_replica_period &&
	    pause_current() == PAUSE_OFF) {
		last_ping_s = now_s;
		feed_control(1, &ping);
	}
	pthread_mutex_unlock(&repl_lock);
}

static void wait_feed(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&repl_lock);
	if (getack_wanted && nlisted) {
		getack_wanted = false;
		feed_control(3, getack);
	}
	pthread_mutex_unlock(&repl_lock);
}

/* ---- WAIT -------------------------------------------------------------------------------------- */

/* Lock held. Online replicas whose ACK (or FACK) reached target. */
static long long count_acks(uint64_t target, bool aof)
{
	long long n = 0;

	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		long long off = aof ? r->fack_off : r->ack_off;

		if (r->state == REPLICA_ONLINE && off >= 0 && (uint64_t)off >= target)
			n++;
	}
	return n;
}

/* WAIT's reply, or WAITAOF's: [our AOF has it (0 or 1), replicas]. */
static void reply_acks(struct client *c, long long acks, bool aof, bool local)
{
	if (aof) {
		reply_array(c, 2);
		reply_int(c, local);
	}
	reply_int(c, acks);
}

uint64_t repl_offset(void)
{
	return __atomic_load_n(&bl.offset, __ATOMIC_RELAXED);
}

void repl_wait(struct client *c, long long numreplicas, long long timeout_ms, bool aof, bool local)
{
	struct repl_waiter *wt;
	long long acks;
	bool local_ok = aof && aof_fsynced(c->aof_woff);

	if (repl_is_replica()) {
		reply_error(c, aof ? "WAITAOF cannot be used with replica instances. Please also "
				     "note that writes to replicas are just local and are not "
				     "propagated."
				   : "WAIT cannot be used with replica instances. Please also note "
				     "that since Redis 4.0 if a replica is configured to be "
				     "writable (which is not the default) writes to replicas are "
				     "just local and are not propagated.");
		return;
	}
	pthread_mutex_lock(&repl_lock);
	/* The offset right after the client's own last write, as Redis. */
	acks = count_acks(c->repl_woff, aof);
	if ((acks >= numreplicas && (local_ok || !local)) ||
	    (exec_ctx_flags() & (EXEC_IN_EXEC | EXEC_SCRIPT))) {
		pthread_mutex_unlock(&repl_lock);
		reply_acks(c, acks, aof, local_ok);
		return;
	}
	wt = xcalloc(1, sizeof(*wt));
	wt->client_id = c->id;
	wt->w = c->worker;
	wt->target = c->repl_woff;
	wt->aof = aof;
	wt->local = local;
	wt->aof_target = c->aof_woff;
	wt->num = numreplicas;
	wt->deadline_ms = timeout_ms ? mono_ms() + timeout_ms : 0;
	wt->next = waiters;
	waiters = wt;
	getack_wanted = true;
	pthread_mutex_unlock(&repl_lock);
	c->flags |= CLIENT_WAIT_ACKS;
	/* Asked now, as Redis asks before its next sleep. */
	propagate_sync_point(wait_feed, NULL, false);
}

/* Answers w's waiters whose replicas acked enough or whose time is up. */
static void wait_check(struct worker *w, uint64_t only_id)
{
	int64_t now = mono_ms();

	for (;;) {
		struct repl_waiter **p, *wt = NULL;
		struct client *c;
		long long acks = 0;
		bool aof = false, local_ok = false;

		pthread_mutex_lock(&repl_lock);
		for (p = &waiters; *p; p = &(*p)->next) {
			struct repl_waiter *x = *p;

			if (x->w != w || (only_id && x->client_id != only_id))
				continue;
			acks = count_acks(x->target, x->aof);
			local_ok = x->aof && aof_fsynced(x->aof_target);
			if ((acks >= x->num && (local_ok || !x->local)) ||
			    (x->deadline_ms && now >= x->deadline_ms)) {
				wt = x;
				aof = x->aof;
				*p = x->next;
				break;
			}
		}
		pthread_mutex_unlock(&repl_lock);
		if (!wt)
			return;
		c = repl_find_client(w, wt->client_id);
		xfree(wt);
		if (!c || !(c->flags & CLIENT_WAIT_ACKS))
			continue;
		c->flags &= ~CLIENT_WAIT_ACKS;
		reply_acks(c, acks, aof, local_ok);
		client_command_done(c);
		if (!client_process_input(c) && !(c->flags & CLIENT_CLOSE_ASAP))
			c->flags |= CLIENT_CLOSE_AFTER_REPLY;
		w->engine->wants_write(c);
	}
}

static void wait_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	(void)payload;
	wait_check(w, client_id);
}

static const struct mail_ops wait_mail = { .deliver = wait_deliver };

/* ---- FAILOVER ----------------------------------------------------------------------------------- */

/* Lock held. The replica that said it listens on host:port. */
static struct repl_replica *find_replica(const char *host, int port)
{
	for (struct repl_replica *r = repl_replicas; r; r = r->next)
		if (r->port == port && !strcasecmp(r->ip, host))
			return r;
	return NULL;
}

/* Lock held: no failover, writes go on (Redis's clearFailoverState). */
static void fo_clear(void)
{
	fo.host[0] = '\0';
	fo.port = 0;
	fo.end_ms = 0;
	fo.force = false;
	__atomic_store_n(&fo.state, FO_NONE, __ATOMIC_RELAXED);
	pause_failover(false);
}

bool repl_failover_running(void)
{
	return __atomic_load_n(&fo.state, __ATOMIC_RELAXED) != FO_NONE;
}

bool repl_failover_in_progress(void)
{
	return __atomic_load_n(&fo.state, __ATOMIC_RELAXED) == FO_IN_PROGRESS;
}

void repl_failover_done(void)
{
	pthread_mutex_lock(&repl_lock);
	if (fo.state == FO_IN_PROGRESS)
		fo_clear();
	pthread_mutex_unlock(&repl_lock);
}

void repl_failover_abort(const char *why)
{
	bool in_progress;

	pthread_mutex_lock(&repl_lock);
	if (fo.state == FO_NONE) {
		pthread_mutex_unlock(&repl_lock);
		return;
	}
	if (fo.host[0])
		log_notice("FAILOVER to %s:%d aborted: %s", fo.host, fo.port, why);
	else
		log_notice("FAILOVER to any replica aborted: %s", why);
	in_progress = fo.state == FO_IN_PROGRESS;
	fo_clear();
	pthread_mutex_unlock(&repl_lock);
	/* We had turned into the target's replica: a master again. */
	if (in_progress) {
		repl_replica_set(NULL, 0);
		repl_promote();
	}
}

void repl_failover(struct client *c, const char *host, int port, long long timeout_ms, bool force)
{
	struct repl_replica *r;
	bool replica = repl_is_replica();

	pthread_mutex_lock(&repl_lock);
	if (fo.state != FO_NONE) {
		pthread_mutex_unlock(&repl_lock);
		reply_error(c, "FAILOVER already in progress.");
		return;
	}
	if (replica || !nlisted || (force && (!timeout_ms || !host))) {
		pthread_mutex_unlock(&repl_lock);
		reply_error(c, replica	  ? "FAILOVER is not valid when server is a replica."
			       : !nlisted ? "FAILOVER requires connected replicas."
					  : "FAILOVER with force option requires both a timeout "
					    "and target HOST and IP.");
		return;
	}
	if (host) {
		r = find_replica(host, port);
		if (!r || r->state != REPLICA_ONLINE) {
			pthread_mutex_unlock(&repl_lock);
			reply_error(c, !r ? "FAILOVER target HOST and PORT is not a replica."
					  : "FAILOVER target replica is not online.");
			return;
		}
		snprintf(fo.host, sizeof(fo.host), "%s", host);
		fo.port = port;
		log_notice("FAILOVER requested to %s:%d.", host, port);
	} else {
		log_notice("FAILOVER requested to any replica.");
	}
	fo.end_ms = timeout_ms ? mono_ms() + timeout_ms : 0;
	fo.force = force;
	__atomic_store_n(&fo.state, FO_WAIT_SYNC, __ATOMIC_RELAXED);
	pause_failover(true);
	pthread_mutex_unlock(&repl_lock);
	reply_ok(c);
}

/* Lock held, from the cron: 1 when the target has all of the stream (or
 * the time is up under FORCE) and we turn into its replica, -1 when the
 * time is up (Redis's updateFailoverStatus). */
static int fo_check(void)
{
	struct repl_replica *r = NULL;

	if (fo.end_ms && mono_ms() >= fo.end_ms) {
		if (!fo.force)
			return -1;
		log_notice("FAILOVER to %s:%d time out exceeded, failing over.", fo.host, fo.port);
		__atomic_store_n(&fo.state, FO_IN_PROGRESS, __ATOMIC_RELAXED);
		return 1;
	}
	if (fo.host[0]) {
		r = find_replica(fo.host, fo.port);
	} else {
		for (r = repl_replicas; r; r = r->next)
			if (r->state == REPLICA_ONLINE && r->ack_off == (long long)bl.offset)
				break;
		if (r) {
			snprintf(fo.host, sizeof(fo.host), "%s", r->ip);
			fo.port = r->port;
		}
	}
	if (!r || r->ack_off != (long long)bl.offset)
		return 0;
	__atomic_store_n(&fo.state, FO_IN_PROGRESS, __ATOMIC_RELAXED);
	log_notice("Failover target %s:%d is synced, failing over.", fo.host, fo.port);
	return 1;
}

/* ---- cron and clean-up ------------------------------------------------------------------------- */

void repl_drop_replicas(void)
{
	pthread_mutex_lock(&repl_lock);
	for (struct repl_replica *r = repl_replicas; r; r = r->next)
		worker_post(r->w, &worker_mail_kill, r->client_id);
	pthread_mutex_unlock(&repl_lock);
}

void repl_cron(struct worker *w)
{
	int64_t now_s = time(NULL);
	bool need_bgsave = false, drop_backlog = false;
	char fo_host[sizeof(fo.host)];
	int fo_go = 0, fo_port = 0;

	repl_replica_cron(w);
	if (__atomic_load_n(&waiters, __ATOMIC_RELAXED))
		wait_check(w, 0);
	if (w->id != 0)
		return;
	if (__atomic_load_n(&nlisted, __ATOMIC_RELAXED))
		propagate_sync_point(cron_feed, &now_s, false);
	pthread_mutex_lock(&repl_lock);
	/* Replicas waiting for their file get a newline a second, so their
	 * link does not time out (Redis does the same). */
	if (now_s != last_newline_s) {
		last_newline_s = now_s;
		for (struct repl_replica *r = repl_replicas; r; r = r->next)
			if (r->state == REPLICA_WAIT_BGSAVE_START ||
			    r->state == REPLICA_WAIT_BGSAVE_END)
				do_repl_post_text(r, "\n");
	}
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		long long hard = config.obuf_limits[OBUF_REPLICA][0];

		/* A replica still waiting for its file holds the stream since
		 * its fork; past the replica class's hard output limit it is
		 * dropped, as Redis counts that stream against it. */
		if ((r->state == REPLICA_WAIT_BGSAVE_END || r->state == REPLICA_SEND_BULK) &&
		    hard && bl.offset - r->pos > (uint64_t)hard && r->pos != UINT64_MAX) {
			log_warning("Client replica %s:%d scheduled to be closed ASAP for "
				    "overcoming of "
				    "output buffer limits.",
				    r->ip, r->port);
			r->pos = UINT64_MAX; /* one kill mail */
			worker_post(r->w, &worker_mail_kill, r->client_id);
		}
		/* A replica that stopped acking is gone (not SYNC ones: they never ack). */
		if (r->state == REPLICA_ONLINE && !r->pre_psync &&
		    now_s - r->ack_time_s > config.repl_timeout) {
			log_warning("Disconnecting timedout replica (streaming sync): %s:%d", r->ip,
				    r->port);
			r->ack_time_s = now_s; /* one kill mail */
			worker_post(r->w, &worker_mail_kill, r->client_id);
		}
	}
	need_bgsave = do_repl_fork_due(now_s);
	if (fo.state == FO_WAIT_SYNC) {
		fo_go = fo_check();
		memcpy(fo_host, fo.host, sizeof(fo_host));
		fo_port = fo.port;
	}
	__atomic_store_n(&good_replicas, count_good(now_s), __ATOMIC_RELAXED);
	if (nlisted)
		bl.no_replicas_since_s = now_s;
	else if (bl.active && !proxy && config.repl_backlog_ttl &&
		 now_s - bl.no_replicas_since_s > config.repl_backlog_ttl) {
		/* As Redis: a master whose replicas are gone for long enough
		 * frees its backlog and starts a new history. */
		buf_free();
		new_id();
		drop_backlog = true;
		log_notice(
			"Replication backlog freed after %lld seconds without connected replicas.",
			(long long)config.repl_backlog_ttl);
	}
	pthread_mutex_unlock(&repl_lock);
	if (drop_backlog)
		consumer_follow();
	if (fo_go < 0) {
		repl_failover_abort("Replica never caught up before timeout");
	} else if (fo_go > 0) {
		/* Our replicas follow the new master; we ask it, with PSYNC
		 * ... FAILOVER, to take over. */
		repl_drop_replicas();
		repl_replica_set(fo_host, fo_port);
	}
	if (need_bgsave && !rdbfile_bgsave_running())
		repl_sync_start_bgsave();
}

void repl_client_free(struct client *c)
{
	struct repl_replica *r = c->repl;

	if (c->flags & CLIENT_WAIT_ACKS) {
		pthread_mutex_lock(&repl_lock);
		for (struct repl_waiter **p = &waiters; *p; p = &(*p)->next) {
			if ((*p)->client_id == c->id) {
				struct repl_waiter *x = *p;

				*p = x->next;
				xfree(x);
				break;
			}
		}
		pthread_mutex_unlock(&repl_lock);
	}
	if (!r)
		return;
	pthread_mutex_lock(&repl_lock);
	if (r->listed) {
		for (struct repl_replica **p = &repl_replicas; *p; p = &(*p)->next) {
			if (*p == r) {
				*p = r->next;
				break;
			}
		}
		nlisted--;
		if (!nlisted)
			bl.no_replicas_since_s = time(NULL);
		log_notice("Connection with replica %s:%d lost.", r->ip, r->port);
	}
	do_repl_sync_leave(r);
	__atomic_store_n(&good_replicas, count_good(time(NULL)), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&repl_lock);
	xfree(r);
	c->repl = NULL;
}
