// SPDX-License-Identifier: BSD-3-Clause
/*
 * Replication, the replica's side (repl.h): REPLICAOF, the link to the
 * master and the master client.
 *
 * A link thread (started by the first REPLICAOF, or at start-up by the
 * replicaof directive) connects to the master with blocking I/O and does
 * the handshake as a Redis replica does: PING, AUTH (masteruser,
 * masterauth), REPLCONF listening-port, REPLCONF capa eof capa psync2,
 * PSYNC <cached id> <offset + 1> or PSYNC ? -1. A full sync's file ($<len>
 * or $EOF:<mark>) is read into memory. Then worker 0 is handed the socket
 * by mail: it replaces the whole keyspace with the file under every shard
 * lock (so no client sees half of it), and adopts the socket as the master
 * client, whose commands run as anyone's with their replies muted. The
 * offset it has applied counts the bytes of whole commands (not inside a
 * MULTI), as Redis's reploff; it is acked each second and on REPLCONF
 * GETACK. When the link breaks, the thread connects again (each second)
 * and asks to continue from there. Each command the master client applies
 * goes on, as its bytes came, to our own replicas (repl_proxy_feed).
 *
 * Locks: `rlock` guards this file's state; it is a leaf lock but for the
 * mailbox lock taken under it. The master client is touched only by the
 * worker that adopted it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acl_users.h"
#include "aof.h"
#include "client.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "rdbfile.h"
#include "repl.h"
#include "store.h"
#include "text.h"
#include "util.h"
#include "worker.h"

enum link_state {
	LINK_NONE,	 /* not a replica */
	LINK_CONNECT,	 /* to (re)connect */
	LINK_CONNECTING, /* handshake */
	LINK_TRANSFER,	 /* receiving the file */
	LINK_CONNECTED,	 /* the master client runs */
};

static pthread_mutex_t rlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rcond = PTHREAD_COND_INITIALIZER;
static struct {
	bool thread_started, stop;
	pthread_t thread;
	char host[256];
	int port;
	enum link_state state;
	uint64_t gen;	    /* bumped by each REPLICAOF: a link of an older one is dropped */
	int fd;		    /* the thread's socket while it has one, or -1 */
	uint64_t master_id; /* the master client's id, 0 if none */
	struct worker *master_w;
	char replid[REPL_ID_LEN + 1]; /* the master's, "" if none yet */
	long long applied;	      /* offset applied (reploff), -1 if none */
	long long read;		      /* offset read (read_reploff) */
	int64_t down_since_s, up_since_s, last_io_s;
	long long transfer_size, transfer_read;
	int stream_db;		/* the master client's database when it last applied */
	bool failover_rejected; /* the target of our FAILOVER refused it */
} st = { .fd = -1, .applied = -1, .stream_db = -1 };

/* A diskless load (repl-diskless-load): set and cleared by the link
 * thread; the flag is read by every command (relaxed atomic), the rest
 * under rlock. */
static struct {
	bool on;
	int64_t start_s;
	long long total;
} loading;

bool repl_loading(void)
{
	return __atomic_load_n(&loading.on, __ATOMIC_RELAXED);
}

void repl_loading_info(struct repl_loading *out)
{
	pthread_mutex_lock(&rlock);
	out->loading = loading.on;
	out->start_s = loading.start_s;
	out->total = loading.total;
	out->loaded = st.transfer_read;
	pthread_mutex_unlock(&rlock);
}

/* The master's commands since the last one applied whole (a MULTI's), as
 * they came, and the applied offset last known to be in our AOF on disk
 * (FACK): touched only by the master client's worker. */
static struct text pending;
static long long fack;

int repl_replica_stream_db(void)
{
	return __atomic_load_n(&st.stream_db, __ATOMIC_RELAXED);
}

bool repl_is_replica(void)
{
	return __atomic_load_n(&st.state, __ATOMIC_RELAXED) != LINK_NONE;
}

bool repl_link_down(void)
{
	enum link_state s = __atomic_load_n(&st.state, __ATOMIC_RELAXED);

	return s != LINK_NONE && s != LINK_CONNECTED;
}

/* ---- blocking I/O of the link thread ---------------------------------------------------------- */

struct conn {
	int fd;
	char buf[16384];
	size_t len, pos;
};

static int wait_io(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n = poll(&p, 1, (int)config.repl_timeout * 1000);

	if (n == 0)
		return -ETIMEDOUT;
	return n < 0 ? -errno : 0;
}

static int conn_fill(struct conn *k)
{
	ssize_t n;
	int rc;

	if (k->pos == k->len)
		k->pos = k->len = 0;
	rc = wait_io(k->fd, POLLIN);
	if (rc)
		return rc;
	n = recv(k->fd, k->buf + k->len, sizeof(k->buf) - k->len, 0);
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return -errno;
	k->len += (size_t)n;
	__atomic_store_n(&st.last_io_s, time(NULL), __ATOMIC_RELAXED);
	return 0;
}

/* A reply line into out (NUL-terminated, without CRLF); empty lines (the
 * master's keep-alives) are skipped. */
static int conn_line(struct conn *k, char *out, size_t cap)
{
	for (;;) {
		char *nl = memchr(k->buf + k->pos, '\n', k->len - k->pos);
		size_t n;
		int rc;

		if (!nl) {
			if (k->pos)
				memmove(k->buf, k->buf + k->pos, k->len - k->pos);
			k->len -= k->pos;
			k->pos = 0;
			if (k->len == sizeof(k->buf))
				return -EPROTO;
			rc = conn_fill(k);
			if (rc)
				return rc;
			continue;
		}
		n = (size_t)(nl - (k->buf + k->pos));
		if (n && nl[-1] == '\r')
			n--;
		if (n >= cap)
			return -EPROTO;
		memcpy(out, k->buf + k->pos, n);
		out[n] = '\0';
		k->pos = (size_t)(nl - k->buf) + 1;
		if (n)
			return 0;
	}
}

static int conn_send(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			rc = wait_io(fd, POLLOUT);
			if (rc)
				return rc;
			continue;
		}
		if (n <= 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends a command and reads its one-line reply. */
static int conn_cmd(struct conn *k, char *reply, size_t cap, int argc, const char **argv)
{
	struct text t = { 0 };
	int rc;

	text_printf(&t, "*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		text_printf(&t, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
	rc = conn_send(k->fd, t.p, t.len);
	xfree(t.p);
	return rc ? rc : conn_line(k, reply, cap);
}

/* A non-blocking connection to the master, published in st.fd while it is
 * made, so REPLICAOF and shutdown can cut a slow connect short. */
static int connect_master(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai))
		return -EHOSTUNREACH;
	for (p = ai; p; p = p->ai_next) {
		int err = 0;
		socklen_t elen = sizeof(err);

		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    p->ai_protocol);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&rlock);
		st.fd = fd;
		pthread_mutex_unlock(&rlock);
		if (connect(fd, p->ai_addr, p->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && wait_io(fd, POLLOUT) == 0 &&
		     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && !err))
			break;
		pthread_mutex_lock(&rlock);
		st.fd = -1;
		pthread_mutex_unlock(&rlock);
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd < 0 ? -ECONNREFUSED : fd;
}

/* ---- the hand-over to worker 0 ---------------------------------------------------------------- */

struct link_done {
	int fd;
	uint64_t gen;
	bool full; /* a full sync: the file is rdb, or loaded already (rdb NULL) */
	char *rdb; /* the file of a full sync read into memory, or NULL */
	size_t rdb_len;
	char *rest; /* stream bytes read past the handshake */
	size_t rest_len;
	char replid[REPL_ID_LEN + 1];
	long long offset;
};

static void link_done_free(void *payload)
{
	struct link_done *d = payload;

	if (d->fd >= 0)
		close(d->fd);
	xfree(d->rdb);
	xfree(d->rest);
	xfree(d);
}

static void link_failed(uint64_t gen)
{
	pthread_mutex_lock(&rlock);
	if (st.gen == gen && st.state != LINK_NONE) {
		st.state = LINK_CONNECT;
		if (!st.down_since_s)
			st.down_since_s = time(NULL);
	}
	pthread_cond_broadcast(&rcond);
	pthread_mutex_unlock(&rlock);
}

/* On worker 0: load the file, adopt the socket. */
static void link_deliver(struct worker *w, uint64_t unused, void *payload)
{
	struct link_done *d = payload;
	struct client *c;
	bool current;

	(void)unused;
	pthread_mutex_lock(&rlock);
	current = st.gen == d->gen && st.state == LINK_TRANSFER;
	pthread_mutex_unlock(&rlock);
	if (!current) {
		link_done_free(d);
		return;
	}
	if (d->rdb && rdbfile_load_replace(d->rdb, d->rdb_len) < 0) {
		log_warning("Failed trying to load the MASTER synchronization DB from memory");
		link_done_free(d);
		link_failed(d->gen);
		return;
	}
	/* Our own replicas hold the old data: they sync again. */
	if (d->full) {
		struct rdbfile_repl_info ri;

		repl_drop_replicas();
		repl_proxy_start(d->replid, d->offset);
		fack = 0;
		/* The stream goes on in the database the file says (a
		 * master that is itself a replica sends no SELECT first). */
		rdbfile_loaded_repl_info(&ri);
		__atomic_store_n(&st.stream_db, ri.id[0] && ri.stream_db >= 0 ? ri.stream_db : 0,
				 __ATOMIC_RELAXED);
	} else {
		repl_proxy_continue(d->replid);
	}
	pending.len = 0;
	c = w->engine->adopt(w, d->fd);
	if (!c) {
		d->fd = -1;
		link_done_free(d);
		link_failed(d->gen);
		return;
	}
	d->fd = -1;
	c->flags |= CLIENT_MASTER | CLIENT_REPLY_OFF;
	/* Our master's stream is obeyed whatever the ACL rules (Redis's master
	 * client has no user). */
	acl_client_set_user(c, NULL, true);
	if (st.stream_db >= 0 && st.stream_db < store.ndbs)
		c->db = st.stream_db;
	pthread_mutex_lock(&rlock);
	memcpy(st.replid, d->replid, sizeof(st.replid));
	st.applied = st.read = d->offset;
	st.master_id = c->id;
	st.master_w = w;
	st.state = LINK_CONNECTED;
	st.up_since_s = st.last_io_s = time(NULL);
	st.down_since_s = 0;
	pthread_mutex_unlock(&rlock);
	log_notice("MASTER <-> REPLICA sync: %s",
		   d->full ? "Finished with success"
			   : "Master accepted a Partial Resynchronization.");
	if (d->rest_len) {
		size_t off = 0;

		while (off < d->rest_len) {
			size_t room, n;
			char *dst = client_read_buffer(c, &room);

			n = d->rest_len - off < room ? d->rest_len - off : room;
			memcpy(dst, d->rest + off, n);
			client_read_done(c, n);
			off += n;
		}
		if (!client_process_input(c))
			c->flags |= CLIENT_CLOSE_AFTER_REPLY;
	}
	w->engine->wants_write(c);
	link_done_free(d);
}

static const struct mail_ops link_mail = { .deliver = link_deliver, .drop = link_done_free };

/* ---- the link thread ---------------------------------------------------------------------------- */

/* The file's body into memory (repl-diskless-load disabled, or on-empty-db
 * with data): want bytes, or up to the mark. */
static int read_to_memory(struct conn *k, bool eof, const char *mark, long long want, char **out,
			  size_t *out_len)
{
	size_t len = 0, cap = eof ? 1 << 20 : (size_t)want + 1;
	char *buf = xmalloc(cap);
	int rc;

	while (eof || len < (size_t)want) {
		size_t avail = k->len - k->pos, take;

		if (!avail) {
			rc = conn_fill(k);
			if (rc) {
				xfree(buf);
				return rc;
			}
			continue;
		}
		take = eof ? avail : ((size_t)want - len < avail ? (size_t)want - len : avail);
		if (len + take >= cap) {
			cap = (len + take) * 2;
			buf = xrealloc(buf, cap);
		}
		memcpy(buf + len, k->buf + k->pos, take);
		len += take;
		k->pos += take;
		pthread_mutex_lock(&rlock);
		st.transfer_read = (long long)len;
		pthread_mutex_unlock(&rlock);
		if (eof) {
			/* The mark ends in what just came: what follows it is the
			 * stream, given back to the buffer. */
			for (size_t s = len - take >= 39 ? len - take - 39 : 0; s + 40 <= len;
			     s++) {
				if (!memcmp(buf + s, mark, 40)) {
					k->pos -= len - (s + 40);
					len = s;
					eof = false;
					want = (long long)len;
					break;
				}
			}
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* The socket as the source of a streamed load: the link thread holds every
 * shard lock while it parses, and lets go of them while it waits for the
 * master (clients get -LOADING meanwhile, so nobody else touches keys). */
struct sock_src {
	struct conn *k;
	bool eof;
	long long left; /* $<len>: bytes of the file not read yet */
};

static ssize_t sock_read(void *arg, void *buf, size_t cap)
{
	struct sock_src *src = arg;
	struct conn *k = src->k;
	size_t n;

	if (!src->eof && src->left == 0)
		return 0;
	if (k->pos == k->len) {
		int rc;

		store_unlock_all();
		rc = conn_fill(k);
		store_lock_all();
		if (rc)
			return rc;
	}
	n = k->len - k->pos;
	if (n > cap)
		n = cap;
	if (!src->eof && (long long)n > src->left)
		n = (size_t)src->left;
	memcpy(buf, k->buf + k->pos, n);
	k->pos += n;
	src->left -= (long long)n;
	pthread_mutex_lock(&rlock);
	st.transfer_read += (long long)n;
	pthread_mutex_unlock(&rlock);
	return (ssize_t)n;
}

static bool keyspace_empty(void)
{
	for (int db = 0; db < store.ndbs; db++)
		if (db_size(db))
			return false;
	return true;
}

enum { LOAD_DISABLED, LOAD_ON_EMPTY_DB, LOAD_SWAPDB, LOAD_FLUSHDB };

/* The file loaded straight from the socket (Redis's diskless load). With
 * swapdb the data there is set aside, and comes back if the file is bad or
 * cut short; else it is flushed first, and a bad file leaves an empty
 * keyspace. What came after the file is left in d->rest. */
static int load_from_socket(struct conn *k, bool eof, const char *mark, long long want,
			    struct link_done *d)
{
	bool swap = config.repl_diskless_load == LOAD_SWAPDB;
	struct sock_src src = { k, eof, want };
	struct store_aside *aside = NULL;
	struct rdbfile_stream *s;
	char *tail = NULL;
	size_t tail_len = 0, rest_len;
	const char *rest;
	int rc;

	pthread_mutex_lock(&rlock);
	loading.start_s = time(NULL);
	loading.total = eof ? -1 : want;
	__atomic_store_n(&loading.on, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rlock);
	log_notice("MASTER <-> REPLICA sync: Loading DB in memory");
	store_lock_all();
	if (swap) {
		aside = do_store_set_aside();
	} else {
		log_notice("MASTER <-> REPLICA sync: Flushing old data");
		for (int db = 0; db < store.ndbs; db++)
			db_flush(db);
	}
	s = rdbfile_stream_new(sock_read, &src);
	rc = do_rdbfile_load_stream(s);
	if (!rc && !eof && src.left) {
		log_warning("The master's file ended %lld bytes before its length", src.left);
		rc = -EPROTO;
	}
	if (!rc) {
		/* What the parser read past the file, then what the socket
		 * buffer holds: the mark (if any), then the stream. */
		rest = rdbfile_stream_rest(s, &rest_len);
		tail_len = rest_len + (k->len - k->pos);
		tail = xmalloc(tail_len + 1);
		memcpy(tail, rest, rest_len);
		memcpy(tail + rest_len, k->buf + k->pos, k->len - k->pos);
		k->pos = k->len;
		while (eof && tail_len < REPL_ID_LEN && !rc) {
			store_unlock_all();
			rc = conn_fill(k);
			store_lock_all();
			if (rc)
				break;
			tail = xrealloc(tail, tail_len + (k->len - k->pos) + 1);
			memcpy(tail + tail_len, k->buf + k->pos, k->len - k->pos);
			tail_len += k->len - k->pos;
			k->pos = k->len;
		}
		if (!rc && eof && memcmp(tail, mark, REPL_ID_LEN)) {
			log_warning("Replication stream EOF marker is broken");
			rc = -EPROTO;
		}
	}
	if (rc) {
		log_warning("Failed trying to load the MASTER synchronization DB from socket, "
			    "check server logs.");
		if (aside) {
			log_notice(
				"MASTER <-> REPLICA sync: Discarding temporary DB in background");
			do_store_restore_aside(aside);
			aside = NULL;
		} else {
			for (int db = 0; db < store.ndbs; db++)
				db_flush(db);
		}
	} else if (aside) {
		log_notice("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
	}
	store_unlock_all();
	rdbfile_stream_free(s);
	if (aside) {
		log_notice("MASTER <-> REPLICA sync: Discarding old DB in background");
		store_aside_free(aside);
	}
	pthread_mutex_lock(&rlock);
	__atomic_store_n(&loading.on, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rlock);
	if (rc) {
		xfree(tail);
		return rc;
	}
	/* The stream after the file (past its mark) goes with the socket. */
	if (eof) {
		memmove(tail, tail + REPL_ID_LEN, tail_len - REPL_ID_LEN);
		tail_len -= REPL_ID_LEN;
	}
	d->rest = tail;
	d->rest_len = tail_len;
	return 0;
}

/* The file after +FULLRESYNC: $<len> or $EOF:<40-byte mark>, read into
 * memory for worker 0 to load, or loaded from the socket here as
 * repl-diskless-load says (Redis's useDisklessLoad). */
static int read_payload(struct conn *k, struct link_done *d)
{
	char line[128], mark[40];
	long long want = 0;
	bool eof = false, diskless;
	int rc = conn_line(k, line, sizeof(line));

	if (rc)
		return rc;
	if (line[0] == '-') {
		log_warning("MASTER aborted replication with an error: %s", line + 1);
		return -EPROTO;
	}
	if (line[0] != '$') {
		log_warning("Bad protocol from MASTER, the first byte is not '$' (we received "
			    "'%s'), are you sure the host and port are right?",
			    line);
		return -EPROTO;
	}
	if (!strncmp(line + 1, "EOF:", 4) && strlen(line + 5) == 40) {
		eof = true;
		memcpy(mark, line + 5, 40);
	} else if (!str_to_ll(line + 1, strlen(line + 1), &want) || want < 0) {
		log_warning("Bad protocol from MASTER, the file's length is not a number: '%s'",
			    line);
		return -EPROTO;
	}
	pthread_mutex_lock(&rlock);
	st.transfer_size = eof ? -1 : want;
	st.transfer_read = 0;
	pthread_mutex_unlock(&rlock);
	diskless = config.repl_diskless_load == LOAD_SWAPDB ||
		   config.repl_diskless_load == LOAD_FLUSHDB ||
		   (config.repl_diskless_load == LOAD_ON_EMPTY_DB && keyspace_empty());
	d->full = true;
	if (diskless)
		return load_from_socket(k, eof, mark, want, d);
	rc = read_to_memory(k, eof, mark, want, &d->rdb, &d->rdb_len);
	if (!rc)
		log_notice("MASTER <-> REPLICA sync: receiving %zu bytes from master to memory",
			   d->rdb_len);
	return rc;
}

/* One attempt: connect, handshake, PSYNC, the file. 0 when handed over. */
static int link_attempt(const char *host, int port, uint64_t gen)
{
	struct conn *k = xcalloc(1, sizeof(*k));
	char reply[256], portbuf[16], offbuf[32], id[REPL_ID_LEN + 1];
	struct link_done *d = NULL;
	bool failover;
	long long offset;
	int rc;

	k->fd = connect_master(host, port);
	if (k->fd < 0) {
		rc = k->fd;
		log_warning("Error condition on socket for SYNC: %s", strerror(-rc));
		xfree(k);
		return rc;
	}
	pthread_mutex_lock(&rlock);
	if (st.gen != gen || st.stop) {
		st.fd = -1;
		pthread_mutex_unlock(&rlock);
		rc = -ECANCELED;
		goto fail_unlisted;
	}
	memcpy(id, st.replid, sizeof(id));
	offset = st.applied;
	pthread_mutex_unlock(&rlock);
	log_notice("MASTER <-> REPLICA sync started");
	rc = conn_cmd(k, reply, sizeof(reply), 1, (const char *[]){ "PING" });
	if (rc)
		goto fail;
	if (reply[0] == '-' && strncmp(reply, "-NOAUTH", 7) && strncmp(reply, "-NOPERM", 7) &&
	    strncmp(reply, "-ERR operation not permitted", 28)) {
		log_warning("Error reply to PING from master: '%s'", reply);
		rc = -EPROTO;
		goto fail;
	}
	log_notice("Master replied to PING, replication can continue...");
	if (config.masterauth[0]) {
		if (config.masteruser[0])
			rc = conn_cmd(
				k, reply, sizeof(reply), 3,
				(const char *[]){ "AUTH", config.masteruser, config.masterauth });
		else
			rc = conn_cmd(k, reply, sizeof(reply), 2,
				      (const char *[]){ "AUTH", config.masterauth });
		if (rc)
			goto fail;
		if (reply[0] == '-') {
			log_warning("Unable to AUTH to MASTER: %s", reply);
			rc = -EACCES;
			goto fail;
		}
	}
	snprintf(portbuf, sizeof(portbuf), "%lld",
		 config.replica_announce_port ? (long long)config.replica_announce_port
					      : (long long)config.port);
	rc = conn_cmd(k, reply, sizeof(reply), 3,
		      (const char *[]){ "REPLCONF", "listening-port", portbuf });
	if (rc)
		goto fail;
	if (config.replica_announce_ip[0]) {
		rc = conn_cmd(
			k, reply, sizeof(reply), 3,
			(const char *[]){ "REPLCONF", "ip-address", config.replica_announce_ip });
		if (rc)
			goto fail;
	}
	rc = conn_cmd(k, reply, sizeof(reply), 5,
		      (const char *[]){ "REPLCONF", "capa", "eof", "capa", "psync2" });
	if (rc)
		goto fail;
	/* A FAILOVER of ours: the target is to take over (Redis's PSYNC ...
	 * FAILOVER), and it refusing ends the failover. */
	failover = repl_failover_in_progress();
	if (id[0] && offset >= 0) {
		snprintf(offbuf, sizeof(offbuf), "%lld", offset + 1);
		log_notice("Trying a partial resynchronization (request %s:%s).", id, offbuf);
	} else {
		log_notice("Partial resynchronization not possible (no cached master)");
		snprintf(id, sizeof(id), "?");
		snprintf(offbuf, sizeof(offbuf), "-1");
	}
	rc = conn_cmd(k, reply, sizeof(reply), failover ? 4 : 3,
		      (const char *[]){ "PSYNC", id, offbuf, "FAILOVER" });
	if (rc)
		goto fail;
	if (failover && reply[0] == '-') {
		log_warning("Unexpected reply to PSYNC from master: %s", reply);
		rc = -EPROTO;
		pthread_mutex_lock(&rlock);
		st.failover_rejected = st.gen == gen;
		pthread_mutex_unlock(&rlock);
		goto fail;
	}
	d = xcalloc(1, sizeof(*d));
	d->fd = -1;
	d->gen = gen;
	if (!strncmp(reply, "+FULLRESYNC ", 12)) {
		char *sp = strchr(reply + 12, ' ');

		if (!sp || sp - (reply + 12) != REPL_ID_LEN ||
		    !str_to_ll(sp + 1, strlen(sp + 1), &d->offset)) {
			rc = -EPROTO;
			goto fail;
		}
		memcpy(d->replid, reply + 12, REPL_ID_LEN);
		log_notice("Full resync from master: %s:%lld", d->replid, d->offset);
		pthread_mutex_lock(&rlock);
		if (st.gen == gen)
			st.state = LINK_TRANSFER;
		pthread_mutex_unlock(&rlock);
		rc = read_payload(k, d);
		if (rc)
			goto fail;
	} else if (!strncmp(reply, "+CONTINUE", 9)) {
		const char *nid = reply[9] == ' ' ? reply + 10 : id;

		if (strlen(nid) != REPL_ID_LEN) {
			rc = -EPROTO;
			goto fail;
		}
		memcpy(d->replid, nid, REPL_ID_LEN);
		d->offset = offset;
		log_notice("Successful partial resynchronization with master.");
		pthread_mutex_lock(&rlock);
		if (st.gen == gen)
			st.state = LINK_TRANSFER;
		pthread_mutex_unlock(&rlock);
	} else {
		log_warning("Unexpected reply to PSYNC from master: %s", reply);
		rc = -EPROTO;
		goto fail;
	}
	/* The target took over: our FAILOVER is done, writes go on (as a
	 * replica's, refused). */
	if (failover)
		repl_failover_done();
	/* What followed (a loaded file's tail is there already). */
	d->rest = xrealloc(d->rest, d->rest_len + (k->len - k->pos) + 1);
	memcpy(d->rest + d->rest_len, k->buf + k->pos, k->len - k->pos);
	d->rest_len += k->len - k->pos;
	pthread_mutex_lock(&rlock);
	st.fd = -1;
	if (st.gen != gen || st.stop) {
		pthread_mutex_unlock(&rlock);
		rc = -ECANCELED;
		goto fail_unlisted;
	}
	d->fd = k->fd;
	xfree(k);
	worker_post_payload(&server.workers[0], &link_mail, 0, d);
	pthread_mutex_unlock(&rlock);
	return 0;
fail:
	pthread_mutex_lock(&rlock);
	st.fd = -1;
	pthread_mutex_unlock(&rlock);
fail_unlisted:
	close(k->fd);
	xfree(k);
	if (d) {
		d->fd = -1;
		link_done_free(d);
	}
	return rc;
}

static void *link_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rlock);
	while (!st.stop) {
		char host[sizeof(st.host)];
		uint64_t gen;
		int port;

		if (st.state != LINK_CONNECT) {
			pthread_cond_wait(&rcond, &rlock);
			continue;
		}
		st.state = LINK_CONNECTING;
		gen = st.gen;
		port = st.port;
		memcpy(host, st.host, sizeof(host));
		pthread_mutex_unlock(&rlock);
		log_notice("Connecting to MASTER %s:%d", host, port);
		if (link_attempt(host, port, gen) < 0) {
			struct timespec ts;
			bool rejected;

			link_failed(gen);
			pthread_mutex_lock(&rlock);
			rejected = st.failover_rejected;
			st.failover_rejected = false;
			pthread_mutex_unlock(&rlock);
			if (rejected)
				repl_failover_abort("Failover target rejected psync request");
			/* Again in a second, as Redis's replication cron. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_mutex_lock(&rlock);
			if (!st.stop && st.gen == gen)
				pthread_cond_timedwait(&rcond, &rlock, &ts);
			continue;
		}
		pthread_mutex_lock(&rlock);
	}
	pthread_mutex_unlock(&rlock);
	return NULL;
}

/* ---- commands and hooks ------------------------------------------------------------------------- */

/* Lock held: drops the current link (its socket, or its master client). */
static void drop_link(void)
{
	if (st.fd >= 0)
		shutdown(st.fd, SHUT_RDWR);
	if (st.master_id)
		worker_post(st.master_w, &worker_mail_kill, st.master_id);
	st.master_id = 0;
	st.master_w = NULL;
}

int repl_replica_set(const char *host, int port)
{
	char id[REPL_ID_LEN + 1];
	long long offset = -1;

	if (host)
		repl_proxy_begin(id, &offset);
	pthread_mutex_lock(&rlock);
	if (host && st.state != LINK_NONE && !strcmp(st.host, host) && st.port == port) {
		pthread_mutex_unlock(&rlock);
		return 1; /* already */
	}
	drop_link();
	st.gen++;
	if (!host) {
		st.state = LINK_NONE;
		st.replid[0] = '\0';
		st.applied = -1;
		pthread_mutex_unlock(&rlock);
		return 0;
	}
	snprintf(st.host, sizeof(st.host), "%s", host);
	st.port = port;
	st.state = LINK_CONNECT;
	st.down_since_s = time(NULL);
	/* What we ask the new master to continue: our own history (which is
	 * the old master's if we were a replica). */
	memcpy(st.replid, id, sizeof(st.replid));
	st.applied = offset;
	if (offset < 0)
		st.replid[0] = '\0';
	if (!st.thread_started) {
		if (pthread_create(&st.thread, NULL, link_main, NULL) == 0)
			st.thread_started = true;
	}
	pthread_cond_broadcast(&rcond);
	pthread_mutex_unlock(&rlock);
	return 0;
}

int repl_replica_start_up(void)
{
	struct rdbfile_repl_info ri;
	bool valid;
	char host[256];
	int port;

	rdbfile_loaded_repl_info(&ri);
	/* As Redis: only a file that says all three (older servers could
	 * write a stream db of -1). */
	valid = ri.id[0] && ri.offset >= 0 && ri.stream_db >= 0;
	if (!config.replicaof || !config.replicaof[0]) {
		if (valid)
			repl_restore_history(ri.id, ri.offset, false);
		return 0;
	}
	if (sscanf(config.replicaof, "%255s %d", host, &port) != 2)
		return -EINVAL;
	if (valid) {
		repl_restore_history(ri.id, ri.offset, true);
		st.stream_db = ri.stream_db;
	}
	repl_replica_set(host, port);
	return 0;
}

void repl_replica_stop(void)
{
	bool join;

	pthread_mutex_lock(&rlock);
	st.stop = true;
	if (st.fd >= 0)
		shutdown(st.fd, SHUT_RDWR);
	join = st.thread_started;
	st.thread_started = false;
	pthread_cond_broadcast(&rcond);
	pthread_mutex_unlock(&rlock);
	if (join)
		pthread_join(st.thread, NULL);
}

void repl_master_command(struct client *c)
{
	size_t at = pending.len;

	text_append(&pending, c->qbuf + c->cmd_start, c->qpos - c->cmd_start);
	/* The parser made each bulk's CR its NUL: the bytes as they came. */
	if (c->req_type == '*')
		for (int i = 0; i < c->argc; i++)
			pending.p[at + (c->arg_off[i] - c->cmd_start) + c->argv[i].len] = '\r';
}

void repl_master_applied(struct client *c)
{
	long long unread = (long long)(c->qlen - c->qpos);
	bool ours = false;

	if (c->in_multi)
		return;
	pthread_mutex_lock(&rlock);
	if (st.master_id == c->id) {
		st.applied = st.read - unread;
		ours = true;
	}
	pthread_mutex_unlock(&rlock);
	if (ours) {
		__atomic_store_n(&st.stream_db, c->db, __ATOMIC_RELAXED);
		repl_proxy_feed(pending.p, pending.len);
	}
	pending.len = 0;
}

void repl_master_read(struct client *c, size_t n)
{
	pthread_mutex_lock(&rlock);
	if (st.master_id == c->id) {
		st.read += (long long)n;
		st.last_io_s = time(NULL);
	}
	pthread_mutex_unlock(&rlock);
}

/* REPLCONF ACK <applied>, written past the master client's muted replies;
 * with an AOF, FACK <the applied offset our AOF has on disk> too, for the
 * master's WAITAOF (on the master client's worker, between its commands:
 * everything applied is in the AOF's bytes then). */
void repl_master_ack(struct client *c)
{
	char buf[160];
	long long off;
	int n;

	pthread_mutex_lock(&rlock);
	off = st.master_id == c->id ? st.applied : -1;
	pthread_mutex_unlock(&rlock);
	if (off < 0)
		return;
	if (!config.appendonly) {
		n = snprintf(buf, sizeof(buf),
			     "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%lld\r\n",
			     snprintf(NULL, 0, "%lld", off), off);
	} else {
		if (aof_fsynced(aof_appended()) && off > fack)
			fack = off;
		n = snprintf(buf, sizeof(buf),
			     "*5\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%lld\r\n"
			     "$4\r\nFACK\r\n$%d\r\n%lld\r\n",
			     snprintf(NULL, 0, "%lld", off), off, snprintf(NULL, 0, "%lld", fack),
			     fack);
	}
	c->flags |= CLIENT_PUSHING;
	reply_raw(c, buf, (size_t)n);
	c->flags &= ~CLIENT_PUSHING;
}

void repl_master_client_free(struct client *c)
{
	pthread_mutex_lock(&rlock);
	if (st.master_id == c->id) {
		st.master_id = 0;
		st.master_w = NULL;
		if (st.state == LINK_CONNECTED) {
			st.state = LINK_CONNECT;
			st.down_since_s = time(NULL);
			log_warning("Connection with master lost.");
		}
		pthread_cond_broadcast(&rcond);
	}
	pthread_mutex_unlock(&rlock);
}

void repl_replica_cron(struct worker *w)
{
	static __thread int64_t last_ack_s;
	int64_t now = time(NULL);
	uint64_t id = 0;

	pthread_mutex_lock(&rlock);
	if (st.master_w == w)
		id = st.master_id;
	pthread_mutex_unlock(&rlock);
	if (!id || now == last_ack_s)
		return;
	last_ack_s = now;
	for (struct client *c = w->clients; c; c = c->next_in_worker) {
		if (c->id == id && !c->closing) {
			repl_master_ack(c);
			w->engine->wants_write(c);
			break;
		}
	}
}

static const char *link_state_name(enum link_state s)
{
	switch (s) {
	case LINK_CONNECT:
		return "connect";
	case LINK_CONNECTING:
		return "connecting";
	case LINK_TRANSFER:
		return "sync";
	case LINK_CONNECTED:
		return "connected";
	default:
		return "none";
	}
}

bool repl_replica_role(struct client *c)
{
	pthread_mutex_lock(&rlock);
	if (st.state == LINK_NONE) {
		pthread_mutex_unlock(&rlock);
		return false;
	}
	reply_array(c, 5);
	reply_bulk_cstr(c, "slave");
	reply_bulk_cstr(c, st.host);
	reply_int(c, st.port);
	reply_bulk_cstr(c, link_state_name(st.state));
	reply_int(c, st.state == LINK_CONNECTED ? st.applied : -1);
	pthread_mutex_unlock(&rlock);
	return true;
}

bool repl_replica_info(struct text *t, char replid[REPL_ID_LEN + 1], long long *offset)
{
	int64_t now = time(NULL);
	long long applied, read;

	pthread_mutex_lock(&rlock);
	if (st.state == LINK_NONE) {
		pthread_mutex_unlock(&rlock);
		return false;
	}
	applied = st.applied >= 0 ? st.applied : 1;
	read = st.applied >= 0 ? st.read : 1;
	text_printf(t,
		    "# Replication\r\nrole:slave\r\nmaster_host:%s\r\nmaster_port:%d\r\n"
		    "master_link_status:%s\r\nmaster_last_io_seconds_ago:%d\r\n"
		    "master_sync_in_progress:%d\r\nslave_read_repl_offset:%lld\r\n"
		    "slave_repl_offset:%lld\r\n",
		    st.host, st.port, st.state == LINK_CONNECTED ? "up" : "down",
		    st.state == LINK_CONNECTED ? (int)(now - st.last_io_s) : -1,
		    st.state == LINK_TRANSFER, read, applied);
	if (st.state == LINK_TRANSFER && st.transfer_size >= 0)
		text_printf(t,
			    "master_sync_total_bytes:%lld\r\nmaster_sync_read_bytes:%lld\r\n"
			    "master_sync_left_bytes:%lld\r\n",
			    st.transfer_size, st.transfer_read,
			    st.transfer_size - st.transfer_read);
	if (st.state != LINK_CONNECTED)
		text_printf(t, "master_link_down_since_seconds:%lld\r\n",
			    st.down_since_s ? (long long)(now - st.down_since_s) : -1LL);
	else
		text_printf(t,
			    "master_link_up_since_seconds:%lld\r\nmaster_client_io_thread:%u\r\n",
			    (long long)(now - st.up_since_s), st.master_w ? st.master_w->id : 0);
	text_printf(t, "slave_priority:%lld\r\nslave_read_only:%d\r\nreplica_announced:%d\r\n",
		    (long long)config.replica_priority, config.replica_read_only ? 1 : 0,
		    config.replica_announced ? 1 : 0);
	if (st.replid[0])
		memcpy(replid, st.replid, REPL_ID_LEN + 1);
	*offset = st.applied >= 0 ? st.applied : 0;
	pthread_mutex_unlock(&rlock);
	return true;
}
