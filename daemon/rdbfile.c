// SPDX-License-Identifier: BSD-3-Clause
/*
 * rdbfile: RDB files (see rdbfile.h).
 *
 * State: bg_pid, bg_running, last_save and stats are written under bg_lock,
 * by the thread that forks (a worker running BGSAVE) and by the waiter
 * thread that reaps the child; readers take the lock too, except
 * stats.last_bgsave_ok, also stored atomically for the write path's MISCONF
 * check. Lock order: shard locks (store_lock_all), then bg_lock; bg_lock is
 * never held while taking a shard lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
#include "t_hash.h"
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

static void cow_sample(void);

static void out_flush(struct rdb_out *o)
{
	size_t off = 0;

	cow_sample();
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

	if (entry_expire(e) != -1) {
		t = RDB_OPCODE_EXPIRETIME_MS;
		rdb_buf_put(&o->b, &t, 1);
		for (int i = 0; i < 8; i++) {
			t = (uint64_t)entry_expire(e) >> (8 * i);
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
		rdb_save_string(&o->b, e->key, entry_klen(e), compress);
		rdb_buf_put(&o->b, v.p + 1, v.len - 1);
		xfree(v.p);
	}
	out_maybe_flush(o);
	/* rdb-key-save-delay: tests slow a save down to catch it running
	 * (Redis's debugDelay: microseconds, or nanoseconds when negative). */
	if (config.rdb_key_save_delay > 0)
		usleep((useconds_t)config.rdb_key_save_delay);
	else if (config.rdb_key_save_delay < 0)
		nanosleep(&(struct timespec){ 0, -config.rdb_key_save_delay }, NULL);
}

static uint64_t shard_expires(int db)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < STORE_SHARDS; i++)
		n += store_shard(db, i)->nexpires;
	return n;
}

/* The oldest version that holds every value of the store: 10 (Redis 7.0),
 * or 12 (Redis 7.4) if a hash has fields with deadlines. rdb_save_compat
 * makes small sets plain sets (type 2) instead of 7.2's listpacks. Only the
 * fork child calls it, on its own copy. */
static const char *compat_version(void)
{
	rdb_save_compat = true;
	for (int db = 0; db < store.ndbs; db++)
		for (unsigned i = 0; i < STORE_SHARDS; i++) {
			const struct dict *d = &store_shard(db, i)->keys;

			for (uint64_t b = 0; d->table && b <= d->mask; b++)
				for (struct dict_node *n = d->table[b]; n; n = n->next) {
					const struct obj *v = &entry_of(n)->val;

					if (v->type == OBJ_HASH && hash_has_expire(v))
						return "REDIS0012";
				}
		}
	return "REDIS0010";
}

/* The whole store to fd. The caller holds every shard lock, or is the fork
 * child (whose copy nobody else touches). aof_base: an AOF's preamble;
 * compat: the replication form (compat_version), to a pipe (no fsync). */
/* The libraries of functions as RDB records (FUNCTION2), taken by the thread
 * that writes or forks, under every shard lock: a fork child may not take
 * the script lock (another thread may have held it at the fork). */
static struct rdb_buf funcs;
/* Taken with the functions, for the same file. */
static struct rdbfile_repl_info repl_info;
void (*rdbfile_repl_info_hook)(struct rdbfile_repl_info *out);
/* Of the last load: written by the loading thread only. */
static struct rdbfile_repl_info loaded_repl = { .stream_db = -1 };

/* Two counters the children write and the parent reads (a MAP_SHARED page
 * made before the first fork, by the forking thread under every shard lock). */
static uint64_t *cow_page;

uint64_t rdbfile_cow_of(pid_t pid)
{
	char path[64], line[256];
	uint64_t kb = 0;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps_rollup");
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "Private_Dirty: %llu kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb * 1024;
}

/* The slot of the running child's sampled copy-on-write in cow_page. */
#define COW_CURRENT 8
/* In a child: when it samples next (0 in the parent: never). */
static int64_t cow_next_us;

void rdbfile_child_start(void)
{
	if (!cow_page)
		return;
	__atomic_store_n(&cow_page[COW_CURRENT], 0, __ATOMIC_RELAXED);
	cow_next_us = mono_us() + 1000000;
}

static void cow_sample(void)
{
	int64_t now, cost;

	if (!cow_next_us || (now = mono_us()) < cow_next_us)
		return;
	__atomic_store_n(&cow_page[COW_CURRENT], rdbfile_cow_of(0), __ATOMIC_RELAXED);
	cost = mono_us() - now;
	cow_next_us = now + (cost * 100 > 1000000 ? cost * 100 : 1000000);
}

static uint64_t fork_latest_us, forks; /* written by forking threads (atomic) */

pid_t rdbfile_fork(void)
{
	int64_t start = mono_us();
	pid_t pid = fork();

	if (pid > 0) {
		__atomic_store_n(&fork_latest_us, (uint64_t)(mono_us() - start), __ATOMIC_RELAXED);
		__atomic_fetch_add(&forks, 1, __ATOMIC_RELAXED);
	}
	return pid;
}

uint64_t rdbfile_fork_latest_us(void)
{
	return __atomic_load_n(&fork_latest_us, __ATOMIC_RELAXED);
}

uint64_t rdbfile_forks(void)
{
	return __atomic_load_n(&forks, __ATOMIC_RELAXED);
}

uint64_t rdbfile_current_cow(void)
{
	return cow_page ? __atomic_load_n(&cow_page[COW_CURRENT], __ATOMIC_RELAXED) : 0;
}

void rdbfile_child_cow(int kind)
{
	uint64_t n = rdbfile_cow_of(0);

	/* No log line here: the log's lock may have been held at the fork. */
	if (cow_page)
		__atomic_store_n(&cow_page[kind], n, __ATOMIC_RELAXED);
}

uint64_t rdbfile_last_cow(int kind)
{
	return cow_page ? __atomic_load_n(&cow_page[kind], __ATOMIC_RELAXED) : 0;
}

pid_t rdbfile_child_pid(void)
{
	pid_t pid;

	pthread_mutex_lock(&bg_lock);
	pid = bg_running ? bg_pid : 0;
	pthread_mutex_unlock(&bg_lock);
	return pid;
}

int rdbfile_functions_snapshot(void)
{
	if (!cow_page) {
		void *p =
			mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			cow_page = p;
	}
	funcs.len = 0;
	repl_info = (struct rdbfile_repl_info){ .stream_db = -1 };
	if (rdbfile_repl_info_hook)
		rdbfile_repl_info_hook(&repl_info);
	return function_dump_body(&funcs);
}

void rdbfile_loaded_repl_info(struct rdbfile_repl_info *out)
{
	*out = loaded_repl;
}

int rdbfile_functions_each(void (*fn)(void *arg, const char *code, size_t len), void *arg)
{
	struct rdb_reader r = { (const uint8_t *)funcs.p, funcs.len, 0, NULL };

	while (r.off < r.len) {
		uint8_t t;
		char *code;
		size_t len;

		if (rdb_read_byte(&r, &t) || t != RDB_OPCODE_FUNCTION2 ||
		    rdb_read_string(&r, &code, &len))
			return -EINVAL;
		fn(arg, code, len);
		xfree(code);
	}
	return 0;
}

void rdbfile_functions_release(void)
{
	xfree(funcs.p);
	funcs = (struct rdb_buf){ 0 };
}

static int rdbfile_write(int fd, bool aof_base, bool compat)
{
	struct rdb_out o = { .fd = fd };
	uint32_t clock = store_clock();
	uint8_t t;

	rdb_buf_put(&o.b, compat ? compat_version() : "REDIS0014", 9);
	out_aux(&o, "redis-ver", RDBFILE_REDIS_VER);
	out_aux_ll(&o, "redis-bits", 64);
	out_aux_ll(&o, "ctime", (long long)time(NULL));
	out_aux_ll(&o, "used-mem", (long long)mem_used());
	/* Where in the replication stream this image stands (not in an AOF's
	 * base, as Redis). */
	if (!aof_base && repl_info.id[0]) {
		out_aux_ll(&o, "repl-stream-db", repl_info.stream_db < 0 ? 0 : repl_info.stream_db);
		out_aux(&o, "repl-id", repl_info.id);
		out_aux_ll(&o, "repl-offset", repl_info.offset);
	}
	out_aux_ll(&o, "aof-base", aof_base);
	/* The libraries of functions, before the databases as in Redis. */
	rdb_buf_put(&o.b, funcs.p, funcs.len);
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
	if (!compat && !o.err && fsync(fd) < 0)
		o.err = -errno;
	return o.err;
}

int rdbfile_write_fd(int fd, bool aof_base)
{
	return rdbfile_write(fd, aof_base, false);
}

/* Writes temp-<pid>.rdb and renames it over dbfilename. */
static int rdbfile_write_path(pid_t pid)
{
	char tmp[64];
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "temp-%d.rdb", (int)pid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	rc = rdbfile_write_fd(fd, false);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, config.dbfilename) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* The caller holds every shard lock. */
int do_rdbfile_save(void)
{
	uint64_t changes;
	int rc;

	pthread_mutex_lock(&bg_lock);
	if (bg_running) {
		pthread_mutex_unlock(&bg_lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&bg_lock);
	changes = store_changes();
	rc = rdbfile_functions_snapshot();
	if (!rc)
		rc = rdbfile_write_path(getpid());
	rdbfile_functions_release();
	if (rc) {
		log_warning("Failed saving the DB: %s", strerror(-rc));
		return rc;
	}
	log_notice("DB saved on disk");
	pthread_mutex_lock(&bg_lock);
	last_save = now_ms() / 1000;
	stats.saves++;
	stats.changes_at_save = changes;
	/* A good SAVE clears a failed BGSAVE's MISCONF, as in Redis. */
	__atomic_store_n(&stats.last_bgsave_ok, true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&bg_lock);
	return 0;
}

int rdbfile_save(void)
{
	int rc;

	store_lock_all();
	rc = do_rdbfile_save();
	store_unlock_all();
	return rc;
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
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1) {
		/* Killed on purpose (rdbfile_kill_child): not a failure, as in
		 * Redis; the temporary file is the killer's to remove. */
		pthread_mutex_unlock(&bg_lock);
		log_warning("Background saving terminated by signal %d", SIGUSR1);
		return NULL;
	}
	__atomic_store_n(&stats.last_bgsave_ok, WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 __ATOMIC_RELAXED);
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
	pthread_attr_t attr;
	pthread_t tid;
	pid_t pid;

	/* Every shard lock for the instant of the fork: the child's copy of the
	 * store is then consistent, no shard half-way through a change. */
	store_lock_all();
	pthread_mutex_lock(&bg_lock);
	if (bg_running) {
		pthread_mutex_unlock(&bg_lock);
		store_unlock_all();
		return -EBUSY;
	}
	bg_changes = store_changes();
	stats.last_bgsave_try = now_ms() / 1000;
	if (rdbfile_functions_snapshot() < 0) {
		rdbfile_functions_release();
		pthread_mutex_unlock(&bg_lock);
		store_unlock_all();
		return -EBUSY;
	}
	pid = rdbfile_fork();
	if (pid == 0) {
		/* The child: only this thread exists; it writes and exits without
		 * running atexit handlers or touching the parent's rings and maps. */
		rdbfile_child_start();
		int rc = rdbfile_write_path(getpid());

		rdbfile_child_cow(RDBFILE_COW_RDB);
		_exit(rc ? 1 : 0);
	}
	rdbfile_functions_release();
	store_unlock_all();
	if (pid < 0) {
		int err = errno;

		__atomic_store_n(&stats.last_bgsave_ok, false, __ATOMIC_RELAXED);
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

struct repl_child {
	pid_t pid;
	int fd; /* the pipe's read end */
	const struct rdbfile_repl_sink *sink;
	void *arg;
};

/* Hands the replication child's output on as it comes, reaps the child,
 * and tells how it ended. A sink that wants no more stops the child. */
static void *rdbfile_repl_waiter(void *arg)
{
	struct repl_child *rc = arg;
	char *buf = xmalloc(RDBFILE_CHUNK);
	bool ok, stopped = false;
	int status = 0;

	for (;;) {
		ssize_t n = read(rc->fd, buf, RDBFILE_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (rc->sink->data(rc->arg, buf, (size_t)n) < 0) {
			/* As Redis when the last replica of a diskless sync
			 * is gone: the child has nobody to write for. */
			log_warning("Diskless rdb transfer, last replica dropped, killing fork "
				    "child.");
			kill(rc->pid, SIGUSR1);
			stopped = true;
			break;
		}
	}
	xfree(buf);
	close(rc->fd);
	while (waitpid(rc->pid, &status, 0) < 0 && errno == EINTR)
		;
	ok = !stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	pthread_mutex_lock(&bg_lock);
	bg_running = false;
	bg_pid = 0;
	pthread_mutex_unlock(&bg_lock);
	if (ok)
		log_notice("Background RDB transfer terminated with success");
	else if (!stopped)
		log_warning("Background transfer error");
	rc->sink->done(rc->arg, ok);
	xfree(rc);
	return NULL;
}

int rdbfile_bgsave_repl(const struct rdbfile_repl_sink *sink, void *arg)
{
	struct repl_child *rc;
	pthread_attr_t attr;
	pthread_t tid;
	int pfd[2], err;
	pid_t pid;

	pthread_mutex_lock(&bg_lock);
	if (bg_running) {
		pthread_mutex_unlock(&bg_lock);
		return -EBUSY;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		err = -errno;
		pthread_mutex_unlock(&bg_lock);
		return err;
	}
	store_lock_all();
	rdbfile_functions_snapshot();
	pid = rdbfile_fork();
	if (pid == 0) {
		close(pfd[0]);
		rdbfile_child_start();
		int rc = rdbfile_write(pfd[1], false, true);

		rdbfile_child_cow(RDBFILE_COW_RDB);
		_exit(rc ? 1 : 0);
	}
	rdbfile_functions_release();
	err = pid < 0 ? -errno : 0;
	/* Still under every shard lock: the stream's point the file is. */
	if (pid > 0)
		sink->at_fork(arg);
	store_unlock_all();
	close(pfd[1]);
	if (pid < 0) {
		pthread_mutex_unlock(&bg_lock);
		close(pfd[0]);
		log_warning("Can't save in background: fork: %s", strerror(-err));
		return err;
	}
	bg_pid = pid;
	bg_running = true;
	pthread_mutex_unlock(&bg_lock);
	log_notice("Starting BGSAVE for SYNC with target: replicas sockets (pid %d)", (int)pid);
	rc = xmalloc(sizeof(*rc));
	rc->pid = pid;
	rc->fd = pfd[0];
	rc->sink = sink;
	rc->arg = arg;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, rdbfile_repl_waiter, rc))
		rdbfile_repl_waiter(rc);
	pthread_attr_destroy(&attr);
	return 0;
}

bool rdbfile_bgsave_failed(void)
{
	return !__atomic_load_n(&stats.last_bgsave_ok, __ATOMIC_RELAXED);
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

/* Stops a running child with sig and removes its temporary file; the waiter
 * reaps it (waited for, bounded, so the file is gone first). */
static void kill_child(int sig)
{
	char tmp[64];
	pid_t pid;

	pthread_mutex_lock(&bg_lock);
	pid = bg_running ? bg_pid : 0;
	pthread_mutex_unlock(&bg_lock);
	if (!pid)
		return;
	kill(pid, sig);
	snprintf(tmp, sizeof(tmp), "temp-%d.rdb", (int)pid);
	for (int i = 0; i < 500 && rdbfile_bgsave_running(); i++)
		usleep(10000);
	unlink(tmp);
}

void rdbfile_kill_child(void)
{
	if (rdbfile_bgsave_running())
		log_warning("There is a child saving an .rdb. Killing it!");
	kill_child(SIGUSR1);
}

void rdbfile_shutdown(void)
{
	/* SIGKILL: whatever the child inherited, it goes. */
	kill_child(SIGKILL);
}

/* ---- loading ------------------------------------------------------------------------------------ */

static int read_le(struct rdb_reader *r, int n, uint64_t *out)
{
	uint64_t v = 0;

	if (rdb_need(r, (size_t)n))
		return -EINVAL;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	*out = v;
	return 0;
}

/* MERGE of DEBUG RELOAD: a library already there is replaced. */
static bool load_merge;

void rdbfile_functions_merge(bool merge)
{
	load_merge = merge;
}

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
		e = db_set_expire(db, e, expire);
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

static int load_aux(struct rdb_reader *r)
{
	char *k, *v;
	size_t kl, vl;
	long long n;

	if (rdb_read_string(r, &k, &kl))
		return -EINVAL;
	if (rdb_read_string(r, &v, &vl)) {
		xfree(k);
		return -EINVAL;
	}
	if (str_eq_nocase(k, kl, "repl-id") && vl == 40) {
		memcpy(loaded_repl.id, v, 40);
		loaded_repl.id[40] = '\0';
	} else if (str_eq_nocase(k, kl, "repl-offset") && str_to_ll(v, vl, &n)) {
		loaded_repl.offset = n;
	} else if (str_eq_nocase(k, kl, "repl-stream-db") && str_to_ll(v, vl, &n)) {
		loaded_repl.stream_db = (int)n;
	}
	xfree(k);
	xfree(v);
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
			/* Informational (redis-ver, ctime, used-mem, ...) but for
			 * where the file stands in a replication stream. */
			if (load_aux(r))
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

/* Reads a whole file into memory: a buffer the caller frees (one byte more
 * than *len, for a terminator), or NULL with errno set. */
char *rdbfile_read_all(const char *path, size_t *len)
{
	struct stat sb;
	size_t off = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return NULL;
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
	buf[off] = '\0';
	*len = off;
	return buf;
}

/* Files at least this large in memory have their checksum computed by a
 * second thread while the first parses them. */
#define CRC_THREAD_MIN (1 << 20)

/* The CRC-64 of p[0..len), computed on its own thread (crc_main). */
struct crc_job {
	pthread_t tid;
	bool running;
	const uint8_t *p;
	size_t len;
	uint64_t crc;
};

static void *crc_main(void *arg)
{
	struct crc_job *j = arg;

	j->crc = crc64_update(0, j->p, j->len);
	return NULL;
}

static void crc_job_join(struct crc_job *j)
{
	if (j->running)
		pthread_join(j->tid, NULL);
	j->running = false;
}

/* A whole file from r's cursor: signature, body, checksum. crc_base: the
 * CRC-64 of the bytes a streamed reader moved out before r->p (0 for a
 * buffer). */
static int load_reader(struct rdb_reader *r, const uint64_t *crc_base)
{
	struct load_stats st = { 0 };
	struct crc_job crc = { 0 };
	int ver = 0, rc;

	if (rdb_need(r, 9) || memcmp(r->p + r->off, "REDIS", 5)) {
		log_warning("Wrong signature trying to load DB from file");
		return -EINVAL;
	}
	for (int i = 5; i < 9; i++) {
		uint8_t ch = r->p[r->off + i];

		if (ch < '0' || ch > '9')
			goto bad;
		ver = ver * 10 + ch - '0';
	}
	if (ver < 1 || ver > RDB_VERSION) {
		log_warning("Can't handle RDB format version %d", ver);
		return -EINVAL;
	}
	r->off += 9;
	loaded_repl = (struct rdbfile_repl_info){ .stream_db = -1 };
	/* A file in memory: the checksum of everything but its last 8 bytes
	 * (where a whole file keeps it) is summed meanwhile, on another core;
	 * a buffer with more after the file is summed again below. */
	if (ver >= 5 && config.rdbchecksum && !crc_base && !r->fill && r->len >= CRC_THREAD_MIN) {
		crc.p = r->p;
		crc.len = r->len - 8;
		crc.running = !pthread_create(&crc.tid, NULL, crc_main, &crc);
	}
	rc = load_body(r, &st);
	if (rc) {
		crc_job_join(&crc);
		goto bad;
	}
	/* Version 5 and later end with a CRC-64 of the rest; 0 means none. */
	if (ver >= 5) {
		uint64_t want, got;
		bool ran = crc.running;

		crc_job_join(&crc);
		if (read_le(r, 8, &want))
			goto bad;
		if (want && config.rdbchecksum) {
			if (ran && r->off == r->len)
				got = crc.crc;
			else
				got = crc64_update(crc_base ? *crc_base : 0, r->p, r->off - 8);
			if (want != got) {
				log_warning("Wrong RDB checksum. Aborting now.");
				return -EINVAL;
			}
		}
	}
	log_notice("Done loading RDB, keys loaded: %llu, keys expired: %llu.",
		   (unsigned long long)st.keys, (unsigned long long)st.expired);
	pthread_mutex_lock(&bg_lock);
	stats.load_keys = st.keys;
	stats.load_expired = st.expired;
	pthread_mutex_unlock(&bg_lock);
	return 0;
bad:
	log_warning("Short read or OOM loading DB. Unrecoverable error, aborting now.");
	return -EINVAL;
}

int rdbfile_load_mem(const char *buf, size_t len, size_t *used)
{
	struct rdb_reader r = { (const uint8_t *)buf, len, 0, NULL };
	int rc = load_reader(&r, NULL);

	if (!rc && used)
		*used = r.off;
	return rc;
}

/* A streamed reader: r first, so that fill finds the rest. */
struct rdbfile_stream {
	struct rdb_reader r;
	ssize_t (*read)(void *arg, void *buf, size_t cap);
	void *arg;
	uint8_t *buf;
	size_t cap;
	uint64_t crc; /* of the bytes moved out before buf[0] */
};

static int stream_fill(struct rdb_reader *r, size_t n)
{
	struct rdbfile_stream *s = (struct rdbfile_stream *)r;

	/* What was read goes into the checksum, the rest to the front. */
	if (r->off) {
		s->crc = crc64_update(s->crc, s->buf, r->off);
		memmove(s->buf, s->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	/* No string of a file is longer than 4 GiB (rdb.c reads none). */
	if (n > ((size_t)1 << 32) + 64)
		return -EINVAL;
	if (n > s->cap) {
		s->cap = n > 2 * s->cap ? n : 2 * s->cap;
		s->buf = xrealloc(s->buf, s->cap);
	}
	r->p = s->buf;
	while (r->len < n) {
		ssize_t got = s->read(s->arg, s->buf + r->len, s->cap - r->len);

		if (got <= 0)
			return -EINVAL;
		r->len += (size_t)got;
	}
	return 0;
}

struct rdbfile_stream *rdbfile_stream_new(ssize_t (*read)(void *arg, void *buf, size_t cap),
					  void *arg)
{
	struct rdbfile_stream *s = xcalloc(1, sizeof(*s));

	s->read = read;
	s->arg = arg;
	s->cap = RDBFILE_CHUNK;
	s->buf = xmalloc(s->cap);
	s->r.p = s->buf;
	s->r.fill = stream_fill;
	return s;
}

int do_rdbfile_load_stream(struct rdbfile_stream *s)
{
	return load_reader(&s->r, &s->crc);
}

const char *rdbfile_stream_rest(const struct rdbfile_stream *s, size_t *len)
{
	*len = s->r.len - s->r.off;
	return (const char *)s->buf + s->r.off;
}

void rdbfile_stream_free(struct rdbfile_stream *s)
{
	if (!s)
		return;
	xfree(s->buf);
	xfree(s);
}

int do_rdbfile_load_file(const char *path)
{
	int64_t start = now_ms();
	size_t len;
	char *buf;
	int rc;

	buf = rdbfile_read_all(path, &len);
	if (!buf) {
		if (errno == ENOENT)
			return -ENOENT;
		log_warning("Fatal error loading the DB, check server logs. Exiting. (%s: %s)",
			    path, strerror(errno));
		return -EINVAL;
	}
	rc = rdbfile_load_mem(buf, len, NULL);
	if (!rc)
		log_notice("DB loaded from disk: %.3f seconds", (double)(now_ms() - start) / 1000);
	xfree(buf);
	return rc;
}

void rdbfile_loaded(void)
{
	pthread_mutex_lock(&bg_lock);
	stats.changes_at_save = store_changes();
	pthread_mutex_unlock(&bg_lock);
}

int rdbfile_load(void)
{
	int rc;

	store_lock_all();
	rc = do_rdbfile_load_file(config.dbfilename);
	rdbfile_loaded();
	store_unlock_all();
	return rc == -ENOENT ? 0 : rc;
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

int rdbfile_load_replace(const char *buf, size_t len)
{
	int rc;

	/* Emptied first, in the same hold, and again if the file is bad: no
	 * half of a file is ever served. */
	store_lock_all();
	for (int db = 0; db < store.ndbs; db++)
		db_flush(db);
	rc = rdbfile_load_mem(buf, len, NULL);
	if (rc)
		for (int db = 0; db < store.ndbs; db++)
			db_flush(db);
	store_unlock_all();
	return rc;
}
