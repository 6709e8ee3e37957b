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
#include "util.h"
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

/* The replica is synced: the stream from its place on follows the file
 * (or, rdb-only, it is closed once the file is out). Its own worker. */
static void went_online(struct worker *w, struct client *c)
{
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
	went_online(w, c);
}

static void rdb_drop(void *payload)
{
	rdb_put(payload);
}

static const struct mail_ops rdb_mail = { .deliver = rdb_deliver, .drop = rdb_drop };

/* ---- the streamed transfer ---------------------------------------------------------------------- */

/*
 * A diskless sync to replicas that all said capa eof streams the file: the
 * thread that reads the child's pipe hands each piece, as it comes, to every
 * target's worker, which appends it to the replica's replies. No whole copy
 * of the file is held. Back-pressure, as Redis's rdb_pipe_* logic: the
 * reader reads no more of the pipe while any target has more than
 * XFER_WINDOW bytes handed to it and not yet written to its socket, so the
 * child (blocked on the full pipe) goes at the slowest target's pace and the
 * memory held is at most XFER_WINDOW plus a piece per target. A target that
 * disconnects leaves the group and the rest go on; one that takes nothing
 * for repl-timeout seconds is closed; with none left the child is stopped.
 */
#define XFER_WINDOW (512 * 1024)

struct xfer_target {
	struct repl_replica *r; /* NULL once it left (its client was freed) */
	struct worker *w;
	uint64_t client_id;
	uint64_t queued;  /* bytes handed to its worker (the reader) */
	uint64_t sent;	  /* bytes its client wrote since (its worker) */
	int64_t moved_ms; /* mono, when sent last grew (or the start) */
};

/* Guarded by repl_lock; owned by the job, which outlives every target's
 * r->xfer pointer (cleared under the lock before the job is freed). */
struct repl_xfer {
	pthread_cond_t cv; /* a target wrote, or left; waited on with repl_lock */
	bool waiting;	   /* the reader waits on cv */
	unsigned n, live;
	char mark[REPL_EOF_MARK_LEN];
	struct xfer_target t[];
};

/* A piece of the file (or its framing) for one or more targets. */
struct xfer_piece {
	int refs;  /* atomic */
	bool last; /* the mark that ends the file: the target goes online */
	size_t len;
	char data[];
};

static struct xfer_piece *piece_new(const char *p, size_t len, bool last)
{
	struct xfer_piece *x = xmalloc(sizeof(*x) + len);

	x->refs = 1;
	x->last = last;
	x->len = len;
	memcpy(x->data, p, len);
	return x;
}

static void piece_put(struct xfer_piece *x)
{
	if (__atomic_sub_fetch(&x->refs, 1, __ATOMIC_ACQ_REL) == 0)
		xfree(x);
}

static void piece_deliver(struct worker *w, uint64_t client_id, void *payload)
{
	struct xfer_piece *x = payload;
	struct client *c = repl_find_client(w, client_id);

	if (c && c->repl) {
		/* What is in flight is bounded by the window, not by the
		 * replica class's output limit (Redis exempts the file too). */
		c->flags |= CLIENT_REPLICA_BULK;
		reply_raw(c, x->data, x->len);
		if (x->last) {
			c->flags &= ~CLIENT_REPLICA_BULK;
			went_online(w, c);
		} else {
			w->engine->wants_write(c);
		}
	}
	piece_put(x);
}

static void piece_drop(void *payload)
{
	piece_put(payload);
}

static const struct mail_ops piece_mail = { .deliver = piece_deliver, .drop = piece_drop };

/* Lock held: x to every target still there. */
static void do_xfer_post(struct repl_xfer *xf, struct xfer_piece *x)
{
	for (unsigned i = 0; i < xf->n; i++) {
		struct xfer_target *t = &xf->t[i];

		if (!t->r)
			continue;
		t->queued += x->len;
		__atomic_fetch_add(&x->refs, 1, __ATOMIC_RELAXED);
		worker_post_payload(t->w, &piece_mail, t->client_id, x);
	}
	piece_put(x);
}

/* Lock held: a target leaves (closed, or its client freed). */
static void do_xfer_leave(struct repl_xfer *xf, unsigned i)
{
	struct xfer_target *t = &xf->t[i];

	if (!t->r)
		return;
	__atomic_store_n(&t->r->xfer, NULL, __ATOMIC_RELAXED);
	t->r = NULL;
	xf->live--;
	pthread_cond_broadcast(&xf->cv);
}

void repl_sync_sent(struct client *c, size_t n)
{
	struct repl_replica *r = c->repl;
	struct repl_xfer *xf;

	if (!__atomic_load_n(&r->xfer, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&repl_lock);
	xf = r->xfer;
	if (xf) {
		struct xfer_target *t = &xf->t[r->xfer_slot];

		t->sent += n;
		t->moved_ms = mono_ms();
		if (xf->waiting &&
		    t->queued - (t->sent < t->queued ? t->sent : t->queued) <= XFER_WINDOW)
			pthread_cond_broadcast(&xf->cv);
	}
	pthread_mutex_unlock(&repl_lock);
}

void do_repl_sync_leave(struct repl_replica *r)
{
	if (r->xfer)
		do_xfer_leave(r->xfer, r->xfer_slot);
}

/* Lock held: waits until every target is within the window; closes the
 * ones that took nothing for repl-timeout seconds. The number left. */
static unsigned do_xfer_wait(struct repl_xfer *xf)
{
	for (;;) {
		struct timespec ts;
		bool full = false;
		int64_t now = mono_ms();

		for (unsigned i = 0; i < xf->n; i++) {
			struct xfer_target *t = &xf->t[i];

			if (!t->r || t->sent >= t->queued || t->queued - t->sent <= XFER_WINDOW)
				continue;
			if (now - t->moved_ms > (int64_t)config.repl_timeout * 1000) {
				log_warning("Disconnecting timedout replica (full sync): %s:%d",
					    t->r->ip, t->r->port);
				worker_post(t->w, &worker_mail_kill, t->client_id);
				do_xfer_leave(xf, i);
				continue;
			}
			full = true;
		}
		if (!full || !xf->live)
			return xf->live;
		/* Woken by a write or a leave; the time-out is only for
		 * repl-timeout's check. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		xf->waiting = true;
		pthread_cond_timedwait(&xf->cv, &repl_lock, &ts);
		xf->waiting = false;
	}
}

/* ---- the job: one fork for a group of replicas ------------------------------------------------ */

/* What a fork's group needs: its transfer if streamed, else the file as a
 * whole (collected by the reader, then handed to each replica). Owned by
 * the reader thread from the fork to done. */
struct repl_job {
	struct repl_xfer *xf; /* NULL: not streamed */
	char *buf;	      /* not streamed: the file so far */
	size_t len, cap;
};

/* Under the propagation lock, every shard lock held: the snapshot is the
 * stream up to here. The group is the replicas waiting for this fork; it is
 * streamed if the sync is diskless and all of them said capa eof. */
static void at_sync_point(void *arg)
{
	struct repl_job *job = arg;
	struct repl_xfer *xf = NULL;
	bool stream = config.repl_diskless_sync;
	unsigned n = 0;
	char buf[128];

	pthread_mutex_lock(&repl_lock);
	for (struct repl_replica *r = repl_replicas; r; r = r->next) {
		if (r->state != REPLICA_WAIT_BGSAVE_START)
			continue;
		stream &= r->capa_eof;
		n += !r->no_data;
	}
	if (stream && n) {
		xf = xcalloc(1, sizeof(*xf) + n * sizeof(xf->t[0]));
		pthread_cond_init(&xf->cv, NULL);
		eof_mark(xf->mark);
	}
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
		if (!stream)
			continue;
		r->state = REPLICA_SEND_BULK;
		if (r->no_data) {
			/* Its file, keyless, is not the child's: it goes now. */
			struct repl_rdb *f = xcalloc(1, sizeof(*f));

			f->refs = 1;
			worker_post_payload(r->w, &rdb_mail, r->client_id, f);
			continue;
		}
		struct xfer_target *t = &xf->t[xf->live];

		t->r = r;
		t->w = r->w;
		t->client_id = r->client_id;
		t->moved_ms = mono_ms();
		r->xfer_slot = xf->live++;
		__atomic_store_n(&r->xfer, xf, __ATOMIC_RELAXED);
	}
	if (xf) {
		int len;

		xf->n = xf->live;
		len = snprintf(buf, sizeof(buf), "$EOF:%.*s\r\n", REPL_EOF_MARK_LEN, xf->mark);
		do_xfer_post(xf, piece_new(buf, (size_t)len, false));
	}
	job->xf = xf;
	pthread_mutex_unlock(&repl_lock);
}

static void job_at_fork(void *arg)
{
	propagate_sync_point(at_sync_point, arg, true);
}

static int job_data(void *arg, const char *p, size_t len)
{
	struct repl_job *job = arg;
	struct repl_xfer *xf = job->xf;
	unsigned live;

	if (!xf) {
		if (job->len + len > job->cap) {
			job->cap = (job->len + len) * 2;
			job->buf = xrealloc(job->buf, job->cap);
		}
		memcpy(job->buf + job->len, p, len);
		job->len += len;
		return 0;
	}
	pthread_mutex_lock(&repl_lock);
	live = do_xfer_wait(xf);
	if (live)
		do_xfer_post(xf, piece_new(p, len, false));
	pthread_mutex_unlock(&repl_lock);
	return live ? 0 : -1;
}

/* Lock held: the targets still there get done's outcome (the mark that
 * ends their file, or a close), and leave. */
static void do_xfer_end(struct repl_xfer *xf, bool ok)
{
	unsigned live = xf->live;

	if (ok && live)
		do_xfer_post(xf, piece_new(xf->mark, sizeof(xf->mark), true));
	for (unsigned i = 0; i < xf->n; i++) {
		if (!xf->t[i].r)
			continue;
		if (!ok)
			worker_post(xf->t[i].w, &worker_mail_kill, xf->t[i].client_id);
		do_xfer_leave(xf, i);
	}
	if (ok)
		log_notice("Diskless rdb transfer, done reading from pipe, %u replicas still up.",
			   live);
}

/* The replicas of a file collected whole get it: each with the framing it
 * asked for. Lock held. */
static void do_job_hand_out(struct repl_job *job, bool ok)
{
	struct repl_rdb *f = NULL;

	if (ok) {
		f = xmalloc(sizeof(*f));
		f->refs = 1;
		f->len = job->len;
		f->data = job->buf;
		job->buf = NULL;
	}
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
	if (f)
		rdb_put(f);
}

/* On the thread that read the child's output, no lock held. */
static void job_done(void *arg, bool ok)
{
	struct repl_job *job = arg;
	bool wanted = true;

	pthread_mutex_lock(&repl_lock);
	if (job->xf) {
		/* Stopped for want of targets: nobody to tell. */
		wanted = job->xf->live > 0;
		do_xfer_end(job->xf, ok);
	} else {
		do_job_hand_out(job, ok);
	}
	pthread_mutex_unlock(&repl_lock);
	if (!ok && wanted)
		log_warning("SYNC failed. BGSAVE child returned an error");
	if (job->xf) {
		pthread_cond_destroy(&job->xf->cv);
		xfree(job->xf);
	}
	xfree(job->buf);
	xfree(job);
}

static const struct rdbfile_repl_sink job_sink = {
	.at_fork = job_at_fork,
	.data = job_data,
	.done = job_done,
};

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

/* Starts the snapshot waiting replicas need, unless a child runs (then the
 * cron tries again). */
void repl_sync_start_bgsave(void)
{
	struct repl_job *job = xcalloc(1, sizeof(*job));
	int rc = rdbfile_bgsave_repl(&job_sink, job);

	if (rc < 0) {
		xfree(job);
		if (rc != -EBUSY)
			log_warning("BGSAVE for replication failed: %s", strerror(-rc));
	}
}
