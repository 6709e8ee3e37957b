// SPDX-License-Identifier: BSD-3-Clause
/*
 * migrate: MIGRATE host port key|"" db timeout [COPY] [REPLACE]
 * [AUTH pw | AUTH2 user pw] [KEYS key ...], Redis's key transfer: each key
 * goes as RESTORE (RESTORE-ASKING in cluster mode) of its DUMP payload over
 * a blocking connection to the target, and is deleted here once the target
 * has acknowledged it (atomic per key: a key is here or there). As in Redis
 * the call blocks its worker up to the timeout, holding the shards of its
 * keys (the dispatcher locks them from the key specs).
 *
 * Connections are cached per "host:port" as Redis's migrate_cached_sockets
 * (64 at most, closed after 10 s unused, the target's db remembered to
 * skip SELECT). A connection in use is taken out of the cache, so two
 * workers never share one.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../cluster.h"
#include "../commands.h"
#include "../mem.h"
#include "../monitor.h"
#include "../notify.h"
#include "../propagate.h"
#include "../rdb.h"
#include "../util.h"

#define MIGRATE_CACHE_ITEMS 64
#define MIGRATE_CACHE_TTL_MS 10000

struct migrate_sock {
	int fd;
	long long last_db; /* the target's selected db, or -1 */
	int64_t last_use;  /* mono ms */
	char name[300];	   /* "host:port" */
	char in[1024];	   /* read-ahead of the target's replies */
	size_t in_len;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct migrate_sock *cache[MIGRATE_CACHE_ITEMS]; /* under cache_lock */

static void sock_close(struct migrate_sock *s)
{
	if (!s)
		return;
	close(s->fd);
	xfree(s);
}

/* The cached connection to name, taken out of the cache; NULL if none.
 * Connections unused for longer than the TTL are closed on the way. */
static struct migrate_sock *cache_take(const char *name)
{
	struct migrate_sock *found = NULL, *old[MIGRATE_CACHE_ITEMS];
	int64_t now = mono_ms();
	int nold = 0;

	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < MIGRATE_CACHE_ITEMS; i++) {
		struct migrate_sock *s = cache[i];

		if (!s)
			continue;
		if (now - s->last_use > MIGRATE_CACHE_TTL_MS) {
			old[nold++] = s;
			cache[i] = NULL;
		} else if (!found && !strcmp(s->name, name)) {
			found = s;
			cache[i] = NULL;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	for (int i = 0; i < nold; i++)
		sock_close(old[i]);
	return found;
}

/* Back into the cache after a successful use; one of the same name already
 * there (another worker's) or a full cache drops one. */
static void cache_put(struct migrate_sock *s)
{
	struct migrate_sock *drop = NULL;
	int free_at = -1;

	s->last_use = mono_ms();
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < MIGRATE_CACHE_ITEMS && !drop; i++) {
		if (!cache[i]) {
			if (free_at < 0)
				free_at = i;
		} else if (!strcmp(cache[i]->name, s->name)) {
			drop = s;
		}
	}
	if (!drop) {
		if (free_at < 0) {
			/* Full: Redis drops one at random; the oldest slot here. */
			free_at = (int)(mono_us() % MIGRATE_CACHE_ITEMS);
			drop = cache[free_at];
		}
		cache[free_at] = s;
	}
	pthread_mutex_unlock(&cache_lock);
	sock_close(drop);
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left = deadline - mono_ms();
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	do
		r = poll(&p, 1, (int)left);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return r ? 0 : -ETIMEDOUT;
}

/* A non-blocking connect to host:port within timeout ms. */
static struct migrate_sock *sock_connect(const char *name, const char *host, const char *port,
					 long timeout)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *a;
	int64_t deadline = mono_ms() + timeout;
	struct migrate_sock *s;
	int fd = -1, one = 1;

	if (getaddrinfo(host, port, &hints, &res))
		return NULL;
	/* As Redis's connBlockingConnect: the first address whose connect is
	 * under way, connected once writable (an error shows at the write). */
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, a->ai_addr, a->ai_addrlen) || errno == EINPROGRESS)
			break;
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && wait_fd(fd, POLLOUT, deadline)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return NULL;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	s = xcalloc(1, sizeof(*s));
	s->fd = fd;
	s->last_db = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

/* Writes all of p within the deadline: 0 or -errno (-ETIMEDOUT). */
static int sock_write(struct migrate_sock *s, const char *p, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n < 0 && errno == EAGAIN) {
			int r = wait_fd(s->fd, POLLOUT, deadline);

			if (r)
				return r;
		}
	}
	return 0;
}

/* One reply line (without CRLF) into out: its length (> 0), or -errno. */
static int sock_read_line(struct migrate_sock *s, char *out, size_t size, int64_t deadline)
{
	for (;;) {
		char *nl = memchr(s->in, '\n', s->in_len);
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - s->in), keep = len;

			if (keep && s->in[keep - 1] == '\r')
				keep--;
			if (keep >= size)
				keep = size - 1;
			memcpy(out, s->in, keep);
			out[keep] = '\0';
			memmove(s->in, nl + 1, s->in_len - len - 1);
			s->in_len -= len + 1;
			return keep ? (int)keep : -EPROTO;
		}
		if (s->in_len == sizeof(s->in))
			return -EPROTO; /* a line longer than any reply we read */
		n = read(s->fd, s->in + s->in_len, sizeof(s->in) - s->in_len);
		if (n > 0) {
			s->in_len += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EAGAIN) {
			int r = wait_fd(s->fd, POLLIN, deadline);

			if (r)
				return r;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
}

static void put_bulk(struct rdb_buf *b, const void *p, size_t len)
{
	char hdr[32];

	rdb_buf_put(b, hdr, (size_t)snprintf(hdr, sizeof(hdr), "$%zu\r\n", len));
	rdb_buf_put(b, p, len);
	rdb_buf_put(b, "\r\n", 2);
}

static void put_count(struct rdb_buf *b, int n)
{
	char hdr[32];

	rdb_buf_put(b, hdr, (size_t)snprintf(hdr, sizeof(hdr), "*%d\r\n", n));
}

static void put_ll(struct rdb_buf *b, long long v)
{
	char num[LL_STR_SIZE + 1];

	put_bulk(b, num, (size_t)snprintf(num, sizeof(num), "%lld", v));
}

struct migrate_opts {
	bool copy, replace;
	const struct arg *user, *pass;
	int first_key, nkeys;
	long timeout;
	long long db;
};

/* The options after the fixed arguments; false after replying the error. */
static bool parse_opts(struct client *c, struct migrate_opts *o)
{
	long long v;

	o->first_key = 3;
	o->nkeys = 1;
	for (int j = 6; j < c->argc; j++) {
		int more = c->argc - 1 - j;

		if (arg_is(c, j, "copy")) {
			o->copy = true;
		} else if (arg_is(c, j, "replace")) {
			o->replace = true;
		} else if (arg_is(c, j, "auth")) {
			if (!more) {
				reply_error(c, ERR_SYNTAX);
				return false;
			}
			o->user = NULL;
			o->pass = &c->argv[++j];
			monitor_redact(c, j); /* MONITOR and SLOWLOG hide it */
		} else if (arg_is(c, j, "auth2")) {
			if (more < 2) {
				reply_error(c, ERR_SYNTAX);
				return false;
			}
			o->user = &c->argv[++j];
			o->pass = &c->argv[++j];
			monitor_redact(c, j - 1);
			monitor_redact(c, j);
		} else if (arg_is(c, j, "keys")) {
			if (c->argv[3].len) {
				reply_error(c,
					    "When using MIGRATE KEYS option, the key argument must "
					    "be set to the empty string");
				return false;
			}
			o->first_key = j + 1;
			o->nkeys = c->argc - j - 1;
			break;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	if (!arg_ll(c, 5, &v))
		return false;
	o->timeout = v <= 0 ? 1000 : (long)v;
	if (!arg_ll(c, 4, &o->db))
		return false;
	return true;
}

/* The request: AUTH, SELECT when the target's db differs, one RESTORE per
 * live key (keys[] and n compacted to those sent). */
static void build_request(struct client *c, const struct migrate_opts *o, bool select,
			  struct entry **es, const struct arg **keys, int *n, struct rdb_buf *out)
{
	int sent = 0;

	if (o->pass) {
		put_count(out, o->user ? 3 : 2);
		put_bulk(out, "AUTH", 4);
		if (o->user)
			put_bulk(out, o->user->p, o->user->len);
		put_bulk(out, o->pass->p, o->pass->len);
	}
	if (select) {
		put_count(out, 2);
		put_bulk(out, "SELECT", 6);
		put_ll(out, o->db);
	}
	for (int j = 0; j < *n; j++) {
		long long ttl = 0;
		struct rdb_buf pl = { 0 };

		if (entry_expire(es[j]) >= 0) {
			ttl = entry_expire(es[j]) - store_now();
			if (ttl < 0)
				continue;
			if (ttl < 1)
				ttl = 1;
		}
		es[sent] = es[j];
		keys[sent++] = keys[j];
		put_count(out, o->replace ? 5 : 4);
		if (cluster_enabled())
			put_bulk(out, "RESTORE-ASKING", 14);
		else
			put_bulk(out, "RESTORE", 7);
		put_bulk(out, keys[j]->p, keys[j]->len);
		put_ll(out, ttl);
		rdb_dump_payload(&pl, &es[j]->val);
		put_bulk(out, pl.p, pl.len);
		xfree(pl.p);
		if (o->replace)
			put_bulk(out, "REPLACE", 7);
	}
	*n = sent;
}

void cmd_migrate(struct client *c)
{
	struct migrate_opts o = { 0 };
	struct entry **es;
	const struct arg **keys;
	struct arg *dels = NULL;
	struct migrate_sock *s;
	char name[300], line[1024], err_line[1024];
	bool may_retry = true;
	int n = 0;

	if (!parse_opts(c, &o))
		return;
	es = xmalloc(sizeof(*es) * (size_t)o.nkeys);
	keys = xmalloc(sizeof(*keys) * (size_t)o.nkeys);
	for (int j = 0; j < o.nkeys; j++) {
		struct entry *e = key_find_read(c, o.first_key + j);

		if (e) {
			es[n] = e;
			keys[n++] = &c->argv[o.first_key + j];
		}
	}
	if (!n) {
		reply_status(c, "NOKEY");
		goto out;
	}
	snprintf(name, sizeof(name), "%.*s:%.*s", (int)c->argv[1].len, c->argv[1].p,
		 (int)c->argv[2].len, c->argv[2].p);
	for (;;) {
		int64_t deadline = mono_ms() + o.timeout;
		struct rdb_buf req = { 0 };
		bool select, target_error = false, write_error = false;
		int r = 0, j = 0, ndel = 0;

		s = cache_take(name);
		if (!s)
			s = sock_connect(name, c->argv[1].p, c->argv[2].p, o.timeout);
		if (!s) {
			reply_error(c, "-IOERR error or timeout connecting to the client");
			goto out;
		}
		select = s->last_db != o.db;
		build_request(c, &o, select, es, keys, &n, &req);
		r = sock_write(s, req.p, req.len, deadline);
		xfree(req.p);
		if (r) {
			write_error = true;
			goto socket_err;
		}
		err_line[0] = '\0';
		if (o.pass) {
			if ((r = sock_read_line(s, line, sizeof(line), deadline)) < 0)
				goto socket_err;
			if (line[0] == '-')
				snprintf(err_line, sizeof(err_line), "%s", line);
		}
		if (select) {
			if ((r = sock_read_line(s, line, sizeof(line), deadline)) < 0)
				goto socket_err;
			if (line[0] == '-' && !err_line[0])
				snprintf(err_line, sizeof(err_line), "%s", line);
		}
		if (!o.copy)
			dels = xmalloc(sizeof(*dels) * (size_t)(n + 1));
		for (j = 0; j < n; j++) {
			if ((r = sock_read_line(s, line, sizeof(line), deadline)) < 0)
				break;
			if (err_line[0] || line[0] == '-') {
				if (!target_error) {
					s->last_db = -1;
					target_error = true;
					reply_errorf(c, "Target instance replied with error: %s",
						     (err_line[0] ? err_line : line) + 1);
				}
				continue;
			}
			if (!o.copy) {
				/* Here or there, never both: the key goes once the
				 * target has it. */
				db_delete(c->db, es[j]);
				notify_keyspace_event(NOTIFY_GENERIC, "del", keys[j]->p,
						      keys[j]->len, c->db);
				dels[++ndel] = *keys[j];
			}
		}
		/* Nothing acknowledged, the first reply unread: try once more
		 * on a fresh connection (a cached one may have been closed). */
		if (!target_error && r < 0 && j == 0 && may_retry && r != -ETIMEDOUT) {
			xfree(dels);
			dels = NULL;
			goto socket_err;
		}
		if (ndel) {
			dels[0] = PROP_STR("DEL");
			propagate_rewrite(ndel + 1, dels);
		}
		xfree(dels);
		dels = NULL;
		if (r < 0) {
			sock_close(s);
			if (!target_error)
				reply_error(c,
					    "-IOERR error or timeout reading to target instance");
			goto out;
		}
		if (!target_error) {
			s->last_db = o.db;
			reply_ok(c);
		}
		cache_put(s);
		goto out;
	socket_err:
		sock_close(s);
		if (r != -ETIMEDOUT && may_retry) {
			may_retry = false;
			continue;
		}
		reply_errorf(c, "-IOERR error or timeout %s to target instance",
			     write_error ? "writing" : "reading");
		goto out;
	}
out:
	xfree(es);
	xfree(keys);
}

/* RESTORE-ASKING: RESTORE, which the redirect check lets through on a node
 * importing the slot (as Redis's CMD_ASKING). */
void cmd_restore_asking(struct client *c)
{
	cmd_restore(c);
}
