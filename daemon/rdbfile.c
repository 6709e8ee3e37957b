// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdbfile: RDB files (see rdbfile.h).
 *
 * State: bg_pid, bg_running and last_save are written under bg_lock, by the
 * thread that forks (a worker running BGSAVE) and by the waiter thread that
 * reaps the child; readers take the lock too. Lock order: bg_lock is never
 * held while taking a shard lock, except in rdbfile_bgsave, which takes it
 * first and the shard locks (store_lock_all) inside it, and nothing takes
 * bg_lock with shard locks held.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "crc64.h"
#include "evict.h"
#include "log.h"
#include "mem.h"
#include "rdb.h"
#include "rdbfile.h"
#include "script.h"
#include "store.h"
#include "util.h"
#include "worker.h"

#define RDB_OPCODE_SLOT_INFO 244
#define RDB_OPCODE_FUNCTION2 245
#define RDB_OPCODE_MODULE_AUX 247
#define RDB_OPCODE_IDLE 248
#define RDB_OPCODE_FREQ 249
#define RDB_OPCODE_AUX 250
#define RDB_OPCODE_RESIZEDB 251
#define RDB_OPCODE_EXPIRETIME_MS 252
#define RDB_OPCODE_EXPIRETIME 253
#define RDB_OPCODE_SELECTDB 254
#define RDB_OPCODE_EOF 255

/* The version the AUX field names: the format is Redis 8.8's. */
#define RDBFILE_REDIS_VER "8.8.0"
/* Output is written out in chunks of about this size. */
#define RDBFILE_CHUNK (64 * 1024)

static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t bg_pid;
static bool bg_running;
static int64_t last_save = -1;
/* Under bg_lock, with bg_running and last_save. */
static struct rdbfile_stats stats = { .last_bgsave_ok = true, .last_bgsave_secs = -1 };
static uint64_t bg_changes; /* store_changes() at the running BGSAVE's fork */

/* ---- writing ---------------------------------------------------------------------------------- */

struct rdb_out {
	struct rdb_buf b;
	uint64_t crc;
	int fd;
	int err; /* first write error, -errno */
};

static void out_flush(struct rdb_out *o)
{
	size_t off = 0;

	o->crc = crc64_update(o->crc, o->b.p, o->b.len);
	while (!o->err && off < o->b.len) {
		ssize_t n = write(o->fd, o->b.p + off, o->b.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			o->err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	o->b.len = 0;
}

static void out_maybe_flush(struct rdb_out *o)
{
	if (o->b.len >= RDBFILE_CHUNK)
		out_flush(o);
}

static void out_aux(struct rdb_out *o, const char *k, const char *v)
{
	uint8_t t = RDB_OPCODE_AUX;

	rdb_buf_put(&o->b, &t, 1);
	rdb_save_string(&o->b, k, strlen(k), false);
	rdb_save_string(&o->b, v, strlen(v), false);
}

static void out_aux_ll(struct rdb_out *o, const char *k, long long v)
{
	char tmp[LL_STR_SIZE + 1];

	ll_to_str(tmp, v);
	out_aux(o, k, tmp);
}

static void out_key(struct rdb_out *o, const struct entry *e, uint32_t clock)
{
	bool compress = config.rdbcompression;
	uint8_t t;

	if (e->expire != -1) {
		t = RDB_OPCODE_EXPIRETIME_MS;
		rdb_buf_put(&o->b, &t, 1);
		for (int i = 0; i < 8; i++) {
			t = (uint64_t)e->expire >> (8 * i);
			rdb_buf_put(&o->b, &t, 1);
		}
	}
	switch (config.maxmemory_policy) {
	case POLICY_ALLKEYS_LRU:
	case POLICY_VOLATILE_LRU:
		t = RDB_OPCODE_IDLE;
		rdb_buf_put(&o->b, &t, 1);
		rdb_save_len(&o->b, (uint32_t)(clock - e->atime) / STORE_CLOCK_HZ);
		break;
	case POLICY_ALLKEYS_LFU:
	case POLICY_VOLATILE_LFU:
		t = RDB_OPCODE_FREQ;
		rdb_buf_put(&o->b, &t, 1);
		t = lfu_value(e, clock);
		rdb_buf_put(&o->b, &t, 1);
		break;
	}
	/* rdb_save_value writes the type byte first; the key goes between the
	 * type and the body, so the value is serialized aside and split. */
	{
		struct rdb_buf v = { 0 };

		rdb_save_value(&v, &e->val, compress);
		rdb_buf_put(&o->b, v.p, 1);
		rdb_save_string(&o->b, e->key, e->klen, compress);
		rdb_buf_put(&o->b, v.p + 1, v.len - 1);
		xfree(v.p);
	}
	out_maybe_flush(o);
}

static uint64_t shard_expires(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += store_shard(db, i)->nexpires;
	return n;
}

/* The whole store to fd. The caller holds every shard lock, or is the fork
 * child (whose copy nobody else touches). */
static int rdbfile_write_fd(int fd, const struct rdb_buf *funcs)
{
	struct rdb_out o = { .fd = fd };
	uint32_t clock = store_clock();
	uint8_t t;

	rdb_buf_put(&o.b, "REDIS0014", 9);
	out_aux(&o, "redis-ver", RDBFILE_REDIS_VER);
	out_aux_ll(&o, "redis-bits", 64);
	out_aux_ll(&o, "ctime", (long long)time(NULL));
	out_aux_ll(&o, "used-mem", (long long)mem_used());
	out_aux_ll(&o, "aof-base", 0);
	/* The libraries of functions, before the databases as in Redis. */
	rdb_buf_put(&o.b, funcs->p, funcs->len);
	for (int db = 0; db < store.ndbs; db++) {
		uint64_t keys = 0;

		for (unsigned i = 0; i < STORE_SHARDS; i++)
			keys += store_shard(db, i)->keys.count;
		if (!keys)
			continue;
		t = RDB_OPCODE_SELECTDB;
		rdb_buf_put(&o.b, &t, 1);
		rdb_save_len(&o.b, db);
		t = RDB_OPCODE_RESIZEDB;
		rdb_buf_put(&o.b, &t, 1);
		rdb_save_len(&o.b, keys);
		rdb_save_len(&o.b, shard_expires(db));
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			const struct dict *d = &store_shard(db, i)->keys;

			for (uint64_t b = 0; d->table && b <= d->mask; b++)
				for (struct dict_node *n = d->table[b]; n; n = n->next)
					out_key(&o, entry_of(n), clock);
		}
	}
	t = RDB_OPCODE_EOF;
	rdb_buf_put(&o.b, &t, 1);
	out_flush(&o);
	{
		uint64_t crc = config.rdbchecksum ? o.crc : 0;

		for (int i = 0; i < 8; i++) {
			t = crc >> (8 * i);
			rdb_buf_put(&o.b, &t, 1);
		}
	}
	out_flush(&o);
	xfree(o.b.p);
	if (!o.err && fsync(fd) < 0)
		o.err = -errno;
	return o.err;
}

/* Writes temp-<pid>.rdb and renames it over dbfilename. */
static int rdbfile_write_path(pid_t pid, const struct rdb_buf *funcs)
{
	char tmp[64];
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "temp-%d.rdb", (int)pid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = rdbfile_write_fd(fd, funcs);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, config.dbfilename) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int rdbfile_save(void)
{
	struct rdb_buf funcs = { 0 };
	uint64_t changes;
	int rc;

	pthread_mutex_lock(&bg_lock);
	if (bg_running) {
		pthread_mutex_unlock(&bg_lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&bg_lock);
	store_lock_all();
	changes = store_changes();
	rc = function_dump_body(&funcs);
	if (!rc)
		rc = rdbfile_write_path(getpid(), &funcs);
	store_unlock_all();
	xfree(funcs.p);
	if (rc) {
		log_warning("Failed saving the DB: %s", strerror(-rc));
		return rc;
	}
	log_notice("DB saved on disk");
	pthread_mutex_lock(&bg_lock);
	last_save = now_ms() / 1000;
	stats.saves++;
	stats.changes_at_save = changes;
	pthread_mutex_unlock(&bg_lock);
	return 0;
}

/* Reaps the child and records how it ended. */
static void *rdbfile_waiter(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&bg_lock);
	bg_running = false;
	bg_pid = 0;
	stats.last_bgsave_secs = (now_ms() - stats.bgsave_start_ms + 500) / 1000;
	stats.last_bgsave_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (stats.last_bgsave_ok) {
		last_save = now_ms() / 1000;
		stats.saves++;
		stats.consecutive_failures = 0;
		stats.changes_at_save = bg_changes;
		pthread_mutex_unlock(&bg_lock);
		log_notice("Background saving terminated with success");
		return NULL;
	}
	stats.consecutive_failures++;
	pthread_mutex_unlock(&bg_lock);
	log_warning("Background saving error");
	return NULL;
}

int rdbfile_bgsave(void)
{
	struct rdb_buf funcs = { 0 };
	pthread_attr_t attr;
	pthread_t tid;
	pid_t pid;

	pthread_mutex_lock(&bg_lock);
	if (bg_running) {
		pthread_mutex_unlock(&bg_lock);
		return -EBUSY;
	}
	/* Every shard lock for the instant of the fork: the child's copy of the
	 * store is then consistent, no shard half-way through a change. */
	store_lock_all();
	bg_changes = store_changes();
	/* The libraries are serialized here: the child may not take the
	 * script lock (another thread may have held it at the fork). */
	if (function_dump_body(&funcs) < 0) {
		store_unlock_all();
		pthread_mutex_unlock(&bg_lock);
		xfree(funcs.p);
		return -EBUSY;
	}
	pid = fork();
	if (pid == 0) {
		/* The child: only this thread exists; it writes and exits without
		 * running atexit handlers or touching the parent's rings and maps. */
		_exit(rdbfile_write_path(getpid(), &funcs) ? 1 : 0);
	}
	store_unlock_all();
	xfree(funcs.p);
	if (pid < 0) {
		int err = errno;

		pthread_mutex_unlock(&bg_lock);
		log_warning("Can't save in background: fork: %s", strerror(err));
		return -err;
	}
	bg_pid = pid;
	bg_running = true;
	stats.bgsave_start_ms = now_ms();
	pthread_mutex_unlock(&bg_lock);
	log_notice("Background saving started by pid %d", (int)pid);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, rdbfile_waiter, (void *)(intptr_t)pid))
		rdbfile_waiter((void *)(intptr_t)pid);
	pthread_attr_destroy(&attr);
	return 0;
}

bool rdbfile_bgsave_running(void)
{
	bool r;

	pthread_mutex_lock(&bg_lock);
	r = bg_running;
	pthread_mutex_unlock(&bg_lock);
	return r;
}

int64_t rdbfile_lastsave(void)
{
	int64_t t;

	pthread_mutex_lock(&bg_lock);
	if (last_save < 0)
		last_save = server.start_ms / 1000;
	t = last_save;
	pthread_mutex_unlock(&bg_lock);
	return t;
}

void rdbfile_shutdown(void)
{
	char tmp[64];
	pid_t pid;

	pthread_mutex_lock(&bg_lock);
	pid = bg_running ? bg_pid : 0;
	pthread_mutex_unlock(&bg_lock);
	if (!pid)
		return;
	/* SIGKILL: the child inherited the parent's handlers, which would not
	 * make it exit. */
	kill(pid, SIGKILL);
	snprintf(tmp, sizeof(tmp), "temp-%d.rdb", (int)pid);
	/* The waiter reaps it; wait (bounded) so the file is gone first. */
	for (int i = 0; i < 500 && rdbfile_bgsave_running(); i++)
		usleep(10000);
	unlink(tmp);
}

/* ---- loading ------------------------------------------------------------------------------------ */

static int read_le(struct rdb_reader *r, int n, uint64_t *out)
{
	uint64_t v = 0;

	if (r->len - r->off < (size_t)n)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	*out = v;
	return 0;
}

static int skip_string(struct rdb_reader *r)
{
	char *s;
	size_t len;

	if (rdb_read_string(r, &s, &len))
		return -EINVAL;
	xfree(s);
	return 0;
}

/* MERGE of DEBUG RELOAD: a library already there is replaced. */
static bool load_merge;

struct load_stats {
	uint64_t keys, expired;
};

/* One key: its type byte t already read. Keys past their deadline are not
 * stored, as a Redis master loads. */
static int load_key(struct rdb_reader *r, uint8_t t, int db, int64_t expire, long long idle,
		    int freq, int64_t now, struct load_stats *st)
{
	struct entry *e;
	struct obj val;
	char *key;
	size_t klen;

	if (!rdb_type_known(t) || rdb_read_string(r, &key, &klen))
		return -EINVAL;
	if (rdb_load_object(r, t, &val)) {
		xfree(key);
		return -EINVAL;
	}
	if (expire != -1 && expire < now) {
		st->expired++;
		obj_free(&val);
		xfree(key);
		return 0;
	}
	e = db_find(db, key, klen);
	if (e)
		db_delete(db, e);
	e = db_add(db, key, klen, val);
	if (expire != -1)
		db_set_expire(db, e, expire);
	if (idle >= 0 && !evict_policy_is_lfu())
		e->atime = store_clock() - (uint32_t)(idle < UINT32_MAX / 2 / STORE_CLOCK_HZ
							      ? idle * STORE_CLOCK_HZ
							      : UINT32_MAX / 2);
	if (freq >= 0 && evict_policy_is_lfu())
		e->lfu = (uint8_t)freq;
	st->keys++;
	xfree(key);
	return 0;
}

static int load_body(struct rdb_reader *r, struct load_stats *st)
{
	int64_t now = now_ms(), expire = -1;
	long long idle = -1;
	int freq = -1, db = 0;
	uint64_t u, v;
	uint8_t t;

	for (;;) {
		if (rdb_read_byte(r, &t))
			return -EINVAL;
		switch (t) {
		case RDB_OPCODE_EOF:
			return 0;
		case RDB_OPCODE_SELECTDB:
			if (rdb_read_len(r, &u))
				return -EINVAL;
			if (u >= (uint64_t)store.ndbs) {
				log_warning("FATAL: Data file was created with a Redis server "
					    "configured to handle more than %d databases. Exiting",
					    store.ndbs);
				return -EINVAL;
			}
			db = (int)u;
			continue;
		case RDB_OPCODE_RESIZEDB:
			if (rdb_read_len(r, &u) || rdb_read_len(r, &v))
				return -EINVAL;
			continue;
		case RDB_OPCODE_SLOT_INFO:
			if (rdb_read_len(r, &u) || rdb_read_len(r, &v) || rdb_read_len(r, &v))
				return -EINVAL;
			continue;
		case RDB_OPCODE_AUX:
			/* Informational only (redis-ver, ctime, used-mem, ...). */
			if (skip_string(r) || skip_string(r))
				return -EINVAL;
			continue;
		case RDB_OPCODE_EXPIRETIME_MS:
			if (read_le(r, 8, &u))
				return -EINVAL;
			expire = (int64_t)u;
			continue;
		case RDB_OPCODE_EXPIRETIME:
			if (read_le(r, 4, &u))
				return -EINVAL;
			expire = (int64_t)u * 1000;
			continue;
		case RDB_OPCODE_IDLE:
			if (rdb_read_len(r, &u))
				return -EINVAL;
			idle = (long long)(u > (uint64_t)LLONG_MAX ? LLONG_MAX : u);
			continue;
		case RDB_OPCODE_FREQ:
			if (rdb_read_byte(r, &t))
				return -EINVAL;
			freq = t;
			continue;
		case RDB_OPCODE_FUNCTION2: {
			char *code;
			size_t len;
			int rc;

			if (rdb_read_string(r, &code, &len))
				return -EINVAL;
			rc = function_load_code(code, len, load_merge);
			xfree(code);
			if (rc)
				return rc;
			continue;
		}
		case RDB_OPCODE_MODULE_AUX:
			log_warning("The RDB file holds module data, which xkv does not have");
			return -EINVAL;
		}
		if (load_key(r, t, db, expire, idle, freq, now, st))
			return -EINVAL;
		expire = -1;
		idle = -1;
		freq = -1;
	}
}

int rdbfile_load_merge(bool merge)
{
	int rc;

	load_merge = merge;
	rc = rdbfile_load();
	load_merge = false;
	return rc;
}

int rdbfile_load(void)
{
	struct load_stats st = { 0 };
	struct rdb_reader r;
	int64_t start = now_ms();
	struct stat sb;
	char *buf;
	int fd, ver = 0, rc = -EINVAL;
	size_t off = 0;

	fd = open(config.dbfilename, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		log_warning("Fatal error loading the DB, check server logs. Exiting. (%s: %s)",
			    config.dbfilename, strerror(errno));
		return -EINVAL;
	}
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return -EINVAL;
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	while (off < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)sb.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	r = (struct rdb_reader){ (const uint8_t *)buf, off, 0 };
	if (off < 9 || memcmp(buf, "REDIS", 5)) {
		log_warning("Wrong signature trying to load DB from file");
		goto out;
	}
	for (int i = 5; i < 9; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			goto bad;
		ver = ver * 10 + buf[i] - '0';
	}
	if (ver < 1 || ver > RDB_VERSION) {
		log_warning("Can't handle RDB format version %d", ver);
		goto out;
	}
	r.off = 9;
	store_lock_all();
	rc = load_body(&r, &st);
	store_unlock_all();
	if (rc)
		goto bad;
	/* Version 5 and later end with a CRC-64 of the rest; 0 means none. */
	if (ver >= 5) {
		uint64_t want;

		if (read_le(&r, 8, &want))
			goto bad;
		if (want && config.rdbchecksum && want != crc64_update(0, buf, r.off - 8)) {
			log_warning("Wrong RDB checksum. Aborting now.");
			rc = -EINVAL;
			goto out;
		}
	}
	log_notice("Done loading RDB, keys loaded: %llu, keys expired: %llu.",
		   (unsigned long long)st.keys, (unsigned long long)st.expired);
	log_notice("DB loaded from disk: %.3f seconds", (double)(now_ms() - start) / 1000);
	rc = 0;
	goto out;
bad:
	rc = -EINVAL;
	log_warning("Short read or OOM loading DB. Unrecoverable error, aborting now.");
out:
	xfree(buf);
	return rc;
}

void rdbfile_stats(struct rdbfile_stats *out)
{
	int64_t last = rdbfile_lastsave();

	pthread_mutex_lock(&bg_lock);
	*out = stats;
	out->bgsave_running = bg_running;
	out->lastsave = last;
	pthread_mutex_unlock(&bg_lock);
}
