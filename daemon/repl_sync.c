// SPDX-License-Identifier: BSD-3-Clause
/*
 * Replication, the master's full sync (repl_int.h): the fork a group of
 * replicas shares, the file its child writes, and its transfer to each of
 * them. repl_lock guards what it touches of the replicas.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "client.h"
#include "config.h"
#include "crc64.h"
#include "log.h"
#include "mem.h"
#include "propagate.h"
#include "rdbfile.h"
#include "repl.h"
#include "repl_int.h"
#include "reply.h"
#include "worker.h"

/* The file of a BGSAVE, shared by the replicas it is sent to. */
struct repl_rdb {
	int refs; /* atomic */
	size_t len;
	char *data;
};

static void rdb_put(struct repl_rdb *f)
{
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		xfree(f->data);
		xfree(f);
	}
}

/* An RDB file with no keys (what a filter that keeps no data leaves):
 * the header, EOF and the CRC-64 of both. */
static void empty_rdb(char out[9 + 1 + 8])
{
	uint64_t crc;

	memcpy(out, "REDIS0010\xff", 10);
	crc = crc64_update(0, out, 10);
	for (int i = 0; i < 8; i++)
		out[10 + i] = (char)(crc >> (8 * i));
}

/* 40 random characters of [0-9a-f], as Redis's mark. */
static void eof_mark(char mark[REPL_EOF_MARK_LEN])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[REPL_EOF_MARK_LEN];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		for (size_t j = 0; j < sizeof(raw); j++)
			raw[j] = (unsigned char)rand();
	for (size_t j = 0; j < sizeof(raw); j++)
		mark[j] = hex[raw[j] & 15];
}

static void rdb_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct repl_rdb *f = payload;
	struct client *c = repl_find_client(w, client_id);
	char hdr[64]; /* $EOF:<mark>\r\n or $<len>\r\n */
	int n;

	if (!c || !c->repl) {
		rdb_put(f);
		return;
	}
	/* The file is not held against the output limit, as in Redis. */
	c->flags |= CLIENT_REPLICA_BULK;
	if (c->repl->no_data) {
		char empty[9 + 1 + 8];

		empty_rdb(empty);
		n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", sizeof(empty));
		reply_raw(c, hdr, (size_t)n);
		reply_raw(c, empty, sizeof(empty));
	} else if (config.repl_diskless_sync && c->repl->capa_eof) {
		/* Redis's diskless framing: no length, a random mark after the
		 * file, as a replica that said capa eof expects. */
		char mark[REPL_EOF_MARK_LEN];

		eof_mark(mark);
		n = snprintf(hdr, sizeof(hdr), "$EOF:%.*s\r\n", REPL_EOF_MARK_LEN, mark);
		reply_raw(c, hdr, (size_t)n);
		reply_raw(c, f->data, f->len);
		reply_raw(c, mark, sizeof(mark));
	} else {
		n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", f->len);
		reply_raw(c, hdr, (size_t)n);
		reply_raw(c, f->data, f->len);
	}
	c->flags &= ~CLIENT_REPLICA_BULK;
	rdb_put(f);
	log_notice("Synchronization with replica %s succeeded", c->addr);
	pthread_mutex_lock(&repl_lock);
	c->repl->state = REPLICA_ONLINE;
	c->repl->ack_time_s = time(NULL);
	pthread_mutex_unlock(&repl_lock);
	if (c->repl->rdb_only)
		c->flags |= CLIENT_CLOSE_AFTER_REPLY;
	else
		repl_pump(c, false);
	w->engine->wants_write(c);
}

static void rdb_drop(void *payload)
{
	rdb_put(payload);
}

static const struct mail_ops rdb_mail = { .deliver = rdb_deliver, .drop = rdb_drop };

/* ---- BGSAVE hooks ------------------------------------------------------------------------------ */

/* Under the propagation lock, every shard lock held: the snapshot is the
 * stream up to here. */
static void at_sync_point(void *arg)
{
	char buf[128];

	(void)arg;
	pthread_mutex_lock(&repl_lock);
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_WAIT_BGSAVE_START)
			continue;
		r->state = REPLICA_WAIT_BGSAVE_END;
		r->pos = do_repl_stream_end();
		if (!r->pre_psync) {
			snprintf(buf, sizeof(buf), "+FULLRESYNC %s %llu\r\n", do_repl_id(),
				 (unsigned long long)do_repl_stream_end());
			do_repl_post_text(r, buf);
		}
	}
	pthread_mutex_unlock(&repl_lock);
}

/* Under the lock: whether the replicas waiting for a fork get it now. A
 * diskless sync waits repl-diskless-sync-delay seconds from the oldest's
 * SYNC for more replicas to share the child, or until
 * repl-diskless-sync-max-replicas are there (Redis's
 * shouldStartChildForReplication); a replica without capa eof gets it now. */
bool do_repl_fork_due(int64_t now_s)
{
	long long waiting = 0;
	int64_t oldest = now_s;
	bool all_eof = true;

	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_WAIT_BGSAVE_START)
			continue;
		waiting++;
		all_eof &= r->capa_eof;
		if (r->ack_time_s < oldest)
			oldest = r->ack_time_s;
	}
	if (!waiting)
		return false;
	if (!config.repl_diskless_sync || !all_eof || config.repl_diskless_sync_delay <= 0)
		return true;
	if (config.repl_diskless_sync_max_replicas > 0 &&
	    waiting >= config.repl_diskless_sync_max_replicas)
		return true;
	return now_s - oldest >= config.repl_diskless_sync_delay;
}

static void bgsave_at_fork(void)
{
	propagate_sync_point(at_sync_point, NULL, true);
}

/* On the thread that read the child's output, no lock held. */
static void bgsave_done(char *buf, size_t len)
{
	struct repl_rdb *f = NULL;

	if (buf) {
		f = xmalloc(sizeof(*f));
		f->refs = 1;
		f->len = len;
		f->data = buf;
	}
	pthread_mutex_lock(&repl_lock);
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_WAIT_BGSAVE_END)
			continue;
		if (!f) {
			/* As Redis: a replica whose snapshot failed is dropped. */
			worker_post(r->w, &worker_mail_kill, r->client_id);
			continue;
		}
		r->state = REPLICA_SEND_BULK;
		__atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED);
		worker_post_payload(r->w, &rdb_mail, r->client_id, f);
	}
	pthread_mutex_unlock(&repl_lock);
	if (f)
		rdb_put(f);
	else
		log_warning("SYNC failed. BGSAVE child returned an error");
}

/* Starts the snapshot waiting replicas need, unless a child runs (then the
 * cron tries again). */
void repl_sync_start_bgsave(void)
{
	int rc = rdbfile_bgsave_repl(bgsave_at_fork, bgsave_done);

	if (rc < 0 && rc != -EBUSY)
		log_warning("BGSAVE for replication failed: %s", strerror(-rc));
}

