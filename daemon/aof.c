// SPDX-License-Identifier: BSD-3-Clause
/*
 * The append-only file (aof.h).
 *
 * Locks, in order: shard locks (store_lock_all) -> the propagation lock
 * (propagate.c) -> buf_lock; shard locks -> io_lock -> buf_lock.
 *  - buf_lock: the pending bytes (buf) and `appended`, the count of bytes
 *    ever appended. Taken by the stream's consumer (aof_feed, under the
 *    propagation lock) and by whoever writes the bytes out.
 *  - io_lock: the file descriptor, the manifest (man), `written`, the sizes,
 *    the rewrite child and the statistics. Held across write(): the thread
 *    that holds it writes every worker's pending bytes at once. The AOF
 *    threads' fdatasync runs outside it on a dup of the file (group commit,
 *    fsync_main); the epoll engine's workers still sync under it.
 *  - kick_lock (a leaf): the AOF threads' wake-ups, kick_want/kick_started.
 * `state`, `synced`, `released` and `write_err` are also stored atomically,
 * for the lock-free checks of the write path.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
#include "propagate.h"
#include "rdb.h"
#include "rdbfile.h"
#include "store.h"
#include "text.h"
#include "util.h"
#include "worker.h"

enum aof_state { AOF_OFF, AOF_ON, AOF_WAIT_REWRITE };
/* appendfsync's values (config.c's table). */
enum { FSYNC_NO = 0, FSYNC_ALWAYS = 1, FSYNC_EVERYSEC = 2 };

/* Redis's names for what loading a file found. */
enum { LOAD_OK, LOAD_EMPTY, LOAD_NOT_EXIST, LOAD_TRUNCATED, LOAD_FAILED };

#define AOF_MAX_FILES 64
/* The largest written buffer kept for reuse. */
#define SPARE_MAX (1024 * 1024)

struct aof_file {
	char name[256];
	long long seq;
};

/* The manifest: a base (if has_base) and incremental files, in order. */
struct aof_manifest {
	bool has_base;
	struct aof_file base;
	int nincr;
	struct aof_file incr[AOF_MAX_FILES];
	/* Files a rewrite replaced, kept under aof-disable-auto-gc (type h). */
	int nhist;
	struct aof_file hist[AOF_MAX_FILES];
	long long base_seq, incr_seq; /* the highest used */
};

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;
static struct text buf;		 /* under buf_lock */
static struct text spare;	 /* a written buffer kept for reuse, under io_lock */
static uint64_t appended;	 /* under buf_lock, read atomically */
static int64_t last_ts;		 /* the last #TS annotation, under buf_lock */
static uint64_t written;	 /* under io_lock, read atomically */
static uint64_t synced;		 /* under io_lock, read atomically */
static int state = AOF_OFF;	 /* under io_lock and every shard lock, read atomically */
static int fd = -1;		 /* the incremental file being written, under io_lock */
static int write_err;		 /* errno of the failed write not yet recovered */
static struct aof_manifest man;	 /* under io_lock */
static uint64_t incr_size;	 /* bytes in the current incremental file */
static uint64_t older_incr_size; /* in the manifest's other incremental files */
static uint64_t base_size, rewrite_base_size;
static pid_t child;
static bool child_running, rewrite_scheduled, last_rewrite_ok = true;
static int64_t rewrite_start_ms, last_rewrite_secs = -1;
static uint64_t rewrites, consecutive_failures;
/*
 * Two AOF threads, so that under appendfsync always a sync can start while
 * the other is still in the kernel: each writes what is pending (under
 * io_lock, so the file keeps the stream's order) and fdatasyncs it outside
 * the lock. An fdatasync covers every byte written before it began, so
 * `synced` only moves up, to the end of whichever finishes. Measured on
 * this machine's ext4 (virtio disk): one thread doing append + fdatasync
 * managed 200-400 a second, two at once 1,500-3,000 between them.
 */
#define AOF_THREADS 2
static pthread_t fsync_thread[AOF_THREADS];
static int fsync_threads; /* how many run (the main thread's) */
static bool fsync_thread_up;
/* The AOF thread's wake-ups (kick_lock, a leaf lock never held with
 * another): under appendfsync always, workers ask it to write and sync up
 * to kick_want without waiting for it themselves (group commit). */
static pthread_mutex_t kick_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kick_cond = PTHREAD_COND_INITIALIZER;
static bool fsync_thread_stop; /* under kick_lock */
static int kick_sleeping;      /* threads waiting for kick_cond, under kick_lock */
/* The highest target asked for, and the highest a thread took on (every
 * byte appended when it took it is in its sync); under kick_lock. */
static uint64_t kick_want, kick_started;
/* Held replies may leave once their target is at most this: synced, or
 * bytes dropped for want of a file (stored atomically, by do_flush). */
static uint64_t released;

static void aof_feed(void *arg, int argc, const struct arg *argv);

/* ---- names and the manifest ------------------------------------------------------------------ */

static void path_in_dir(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", config.appenddirname, name);
}

static void name_incr(struct aof_file *f, long long seq)
{
	f->seq = seq;
	snprintf(f->name, sizeof(f->name), "%s.%lld.incr.aof", config.appendfilename, seq);
}

static void name_base(struct aof_file *f, long long seq, bool rdb)
{
	f->seq = seq;
	snprintf(f->name, sizeof(f->name), "%s.%lld.base.%s", config.appendfilename, seq,
		 rdb ? "rdb" : "aof");
}

static int fsync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

/* Writes m as the manifest: a temporary file, fsynced, renamed over it. */
static int manifest_write(const struct aof_manifest *m)
{
	char tmp[512], path[512];
	struct text t = { 0 };
	int mfd, rc = 0;
	size_t off = 0;

	if (m->has_base)
		text_printf(&t, "file %s seq %lld type b\n", m->base.name, m->base.seq);
	for (int i = 0; i < m->nhist; i++)
		text_printf(&t, "file %s seq %lld type h\n", m->hist[i].name, m->hist[i].seq);
	for (int i = 0; i < m->nincr; i++)
		text_printf(&t, "file %s seq %lld type i\n", m->incr[i].name, m->incr[i].seq);
	snprintf(tmp, sizeof(tmp), "%s/temp-%s.manifest", config.appenddirname,
		 config.appendfilename);
	snprintf(path, sizeof(path), "%s/%s.manifest", config.appenddirname, config.appendfilename);
	mfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (mfd < 0) {
		rc = -errno;
		goto out;
	}
	while (off < t.len) {
		ssize_t n = write(mfd, t.p + off, t.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (!rc && fsync(mfd) < 0)
		rc = -errno;
	close(mfd);
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (!rc)
		rc = fsync_dir(config.appenddirname);
out:
	if (rc) {
		log_warning("Can't persist the AOF manifest file %s: %s", path, strerror(-rc));
		unlink(tmp);
	}
	xfree(t.p);
	return rc;
}

/* Reads the manifest into m: 0 (m empty when there is none), or -EINVAL
 * with Redis's report logged. */
static int manifest_read(struct aof_manifest *m)
{
	char path[512], line[1100];
	const char *err = NULL;
	long long maxseq = 0;
	int linenum = 0;
	FILE *f;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s/%s.manifest", config.appenddirname, config.appendfilename);
	f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		log_warning("Fatal error: can't open the AOF manifest file %s for reading: %s",
			    path, strerror(errno));
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[300] = "", type = 0, key[32], val[300];
		long long seq = 0;
		char *p = line;
		int n, pairs = 0;

		linenum++;
		if (line[0] == '#')
			continue;
		if (!strchr(line, '\n')) {
			err = "The AOF manifest file contains too long line";
			goto bad;
		}
		while (sscanf(p, " %31s %299s%n", key, val, &n) == 2) {
			pairs++;
			p += n;
			if (!strcasecmp(key, "file"))
				snprintf(name, sizeof(name), "%s", val);
			else if (!strcasecmp(key, "seq"))
				seq = atoll(val);
			else if (!strcasecmp(key, "type"))
				type = val[0];
		}
		/* Three pairs at least (startoffset, endoffset... may follow). */
		if (pairs < 3 || !name[0] || !seq || !type) {
			err = "Invalid AOF manifest file format";
			goto bad;
		}
		if (strchr(name, '/') || strlen(name) >= sizeof(m->base.name)) {
			err = "File can't be a path, just a filename";
			goto bad;
		}
		if (type == 'b') {
			if (m->has_base) {
				err = "Found duplicate base file information";
				goto bad;
			}
			m->has_base = true;
			memcpy(m->base.name, name, strlen(name) + 1);
			m->base.seq = seq;
			m->base_seq = seq;
		} else if (type == 'i') {
			if (seq <= maxseq) {
				err = "Found a non-monotonic sequence number";
				goto bad;
			}
			if (m->nincr == AOF_MAX_FILES) {
				err = "Too many incremental AOF files";
				goto bad;
			}
			memcpy(m->incr[m->nincr].name, name, strlen(name) + 1);
			m->incr[m->nincr++].seq = seq;
			m->incr_seq = maxseq = seq;
		} else if (type == 'h') {
			if (m->nhist < AOF_MAX_FILES) {
				memcpy(m->hist[m->nhist].name, name, strlen(name) + 1);
				m->hist[m->nhist++].seq = seq;
			}
		} else {
			err = "Unknown AOF file type";
			goto bad;
		}
	}
	fclose(f);
	if (!linenum) {
		log_warning("Found an empty AOF manifest");
		return -EINVAL;
	}
	return 0;
bad:
	fclose(f);
	log_warning("*** FATAL AOF MANIFEST FILE ERROR ***");
	log_warning("Reading the manifest file, at line %d", linenum);
	log_warning(">>> '%.*s'", (int)strcspn(line, "\r\n"), line);
	log_warning("%s", err);
	return -EINVAL;
}

static uint64_t file_size(const char *name)
{
	char path[512];
	struct stat st;

	path_in_dir(path, sizeof(path), name);
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* The client AOF commands run as: no connection, no worker of its own. */
struct loader {
	struct client c;
	struct worker w;
};

static void loader_drop_reply(struct client *c)
{
	while (c->reply_head) {
		struct reply_block *b = c->reply_head;

		c->reply_head = b->next;
		xfree(b);
	}
	c->reply_tail = NULL;
	c->reply_bytes = 0;
}

/* Runs one command; 0, or -1 for an unknown one (logged). */
static int loader_run(struct loader *l, int argc, struct arg *argv, const char *file)
{
	struct command *cmd = command_lookup_argv(argc, argv);

	if (!cmd) {
		log_warning("Unknown command '%.*s' reading the append only file %s",
			    (int)argv[0].len, argv[0].p, file);
		return -1;
	}
	command_call_as(&l->c, cmd, argc, argv, EXEC_RETRY);
	loader_drop_reply(&l->c);
	return 0;
}

struct cmdv {
	int argc;
	struct arg *argv;
};

static void cmdv_free(struct cmdv *v, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < v[i].argc; j++)
			xfree(v[i].argv[j].p);
		xfree(v[i].argv);
	}
}

/* Parses one "*<n>\r\n" line at *off; 1 parsed, 0 at a clean end, -1 short,
 * -2 malformed. Annotations ("#...") are skipped. */
static int parse_command(const char *p, size_t len, size_t *off, struct cmdv *out)
{
	size_t o = *off;
	long long argc;
	char *end;

	for (;;) {
		const char *nl;

		if (o == len)
			return 0;
		nl = memchr(p + o, '\n', len - o);
		if (!nl)
			return p[o] == '#' || p[o] == '*' ? -1 : -2;
		if (p[o] == '#') {
			o = (size_t)(nl - p) + 1;
			continue;
		}
		if (p[o] != '*')
			return -2;
		argc = strtoll(p + o + 1, &end, 10);
		if (argc < 1 || argc > 1024 * 1024)
			return -2;
		o = (size_t)(nl - p) + 1;
		break;
	}
	out->argc = 0;
	out->argv = xcalloc((size_t)argc, sizeof(*out->argv));
	for (long long i = 0; i < argc; i++) {
		const char *nl = memchr(p + o, '\n', len - o);
		long long n;

		if (o == len || !nl)
			goto short_read;
		if (p[o] != '$')
			goto malformed;
		n = strtoll(p + o + 1, &end, 10);
		if (n < 0)
			goto malformed;
		o = (size_t)(nl - p) + 1;
		if (len - o < (size_t)n + 2)
			goto short_read;
		out->argv[i].p = xstrndup(p + o, (size_t)n);
		out->argv[i].len = (size_t)n;
		out->argc++;
		o += (size_t)n + 2;
	}
	*off = o;
	return 1;
short_read:
	cmdv_free(out, 1);
	return -1;
malformed:
	cmdv_free(out, 1);
	return -2;
}

static bool truncate_file(const char *path, size_t at)
{
	if (truncate(path, (off_t)at) < 0) {
		log_warning("Error truncating the AOF file %s: %s", path, strerror(errno));
		return false;
	}
	return true;
}

/* One file of the manifest; the caller holds every shard lock. */
static int load_file(struct loader *l, const char *name, bool last)
{
	size_t len, off = 0, valid = 0, before_multi = 0;
	struct cmdv *multi = NULL;
	int nmulti = 0, cap = 0, rc = LOAD_OK, r = 0;
	bool in_multi = false;
	char path[512];
	char *p;

	path_in_dir(path, sizeof(path), name);
	p = rdbfile_read_all(path, &len);
	if (!p) {
		if (errno == ENOENT) {
			log_warning("The append log file %s doesn't exist: %s", name,
				    strerror(errno));
			return LOAD_NOT_EXIST;
		}
		log_warning("Fatal error: can't open the append log file %s for reading: %s", name,
			    strerror(errno));
		return LOAD_FAILED;
	}
	if (!len) {
		xfree(p);
		return LOAD_EMPTY;
	}
	if (len >= 5 && !memcmp(p, "REDIS", 5)) {
		log_notice("Reading RDB base file on AOF loading...");
		if (rdbfile_load_mem(p, len, &off) < 0) {
			log_warning("Error reading the RDB base file %s, AOF loading aborted",
				    name);
			xfree(p);
			return LOAD_FAILED;
		}
		valid = off;
	}
	l->c.db = 0;
	for (;;) {
		struct cmdv v;

		r = parse_command(p, len, &off, &v);
		if (r <= 0)
			break;
		if (v.argc == 1 && str_eq_nocase(v.argv[0].p, v.argv[0].len, "multi")) {
			before_multi = valid;
			in_multi = true;
			cmdv_free(&v, 1);
		} else if (v.argc == 1 && str_eq_nocase(v.argv[0].p, v.argv[0].len, "exec") &&
			   in_multi) {
			/* A transaction applies whole, or not at all. */
			for (int i = 0; i < nmulti && rc == LOAD_OK; i++)
				if (loader_run(l, multi[i].argc, multi[i].argv, name) < 0)
					rc = LOAD_FAILED;
			cmdv_free(multi, nmulti);
			nmulti = 0;
			in_multi = false;
			cmdv_free(&v, 1);
		} else if (in_multi) {
			if (nmulti == cap) {
				cap = cap ? cap * 2 : 16;
				multi = xrealloc(multi, sizeof(*multi) * (size_t)cap);
			}
			multi[nmulti++] = v;
		} else {
			if (loader_run(l, v.argc, v.argv, name) < 0)
				rc = LOAD_FAILED;
			cmdv_free(&v, 1);
		}
		if (rc != LOAD_OK)
			goto out;
		valid = off;
	}
	if (r == 0 && !in_multi)
		goto out;
	if (r == -2) {
		if (config.aof_load_corrupt_tail_max_size &&
		    len - valid < (size_t)config.aof_load_corrupt_tail_max_size && last) {
			log_warning("!!! Warning: corrupt AOF file tail!!!");
			log_warning("!!! Truncating the AOF %s at offset %llu (remaining %llu) !!!",
				    path, (unsigned long long)valid,
				    (unsigned long long)(len - valid));
			if (truncate_file(path, valid)) {
				rc = LOAD_TRUNCATED;
				goto out;
			}
		}
		log_warning("Bad file format reading the append only file %s at offset %llu. make "
			    "a backup of your AOF file, then use ./redis-check-aof --fix "
			    "<filename.manifest>. Alternatively you can set the "
			    "'aof-load-corrupt-tail-max-size' configuration option to %llu and "
			    "restart the server.",
			    path, (unsigned long long)valid, (unsigned long long)(len - valid));
		rc = LOAD_FAILED;
		goto out;
	}
	if (in_multi) {
		log_warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", name);
		valid = before_multi;
	}
	if (config.aof_load_truncated) {
		log_warning("!!! Warning: short read while loading the AOF file %s!!!", name);
		log_warning("!!! Truncating the AOF %s at offset %llu !!!", name,
			    (unsigned long long)valid);
		if (truncate_file(path, valid)) {
			log_warning("AOF %s loaded anyway because aof-load-truncated is enabled",
				    path);
			rc = LOAD_TRUNCATED;
			goto out;
		}
	}
	log_warning("Unexpected end of file reading the append only file %s. You can: 1) Make a "
		    "backup of your AOF file, then use ./redis-check-aof --fix "
		    "<filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' "
		    "configuration option to yes and restart the server.",
		    name);
	rc = LOAD_FAILED;
out:
	cmdv_free(multi, nmulti);
	xfree(multi);
	xfree(p);
	return rc;
}

/* Loads what m names; the caller holds every shard lock. 0 loaded (or
 * nothing to load: *none), -1 failed (logged). */
static int load_manifest(const struct aof_manifest *m, bool *none)
{
	static struct loader l;
	int total = m->nincr + m->has_base, n = 0, rc;
	int64_t start = now_ms(), t;
	uint64_t size = 0;

	*none = !total;
	if (!total)
		return 0;
	if (m->has_base)
		size += file_size(m->base.name);
	for (int i = 0; i < m->nincr; i++)
		size += file_size(m->incr[i].name);
	memset(&l, 0, sizeof(l));
	l.c.fd = -1;
	l.c.worker = &l.w;
	l.c.resp = 2;
	l.c.authenticated = true;
	l.c.flags = CLIENT_AOF_LOADER;
	for (int i = -1; i < m->nincr; i++) {
		const char *name = i < 0 ? m->base.name : m->incr[i].name;
		bool last;

		if (i < 0 && !m->has_base)
			continue;
		last = ++n == total;
		t = now_ms();
		rc = load_file(&l, name, last);
		if (rc == LOAD_NOT_EXIST) {
			loader_drop_reply(&l.c);
			return -1;
		}
		if (rc == LOAD_TRUNCATED && !last) {
			log_warning("Fatal error: the truncated file is not the last file");
			return -1;
		}
		if (rc == LOAD_FAILED)
			return -1;
		if (rc != LOAD_EMPTY || i < 0)
			log_notice("DB loaded from %s file %s: %.3f seconds",
				   i < 0 ? "base" : "incr", name, (double)(now_ms() - t) / 1000);
	}
	log_notice("DB loaded from append only file: %.3f seconds",
		   (double)(now_ms() - start) / 1000);
	(void)size;
	return 0;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* Room for n more bytes (and the NUL text keeps) in buf: it grows by
 * doubling, so a turn's records cost amortised O(1) reallocations. */
static char *buf_reserve(size_t n)
{
	if (buf.len + n + 1 > buf.cap) {
		size_t cap = buf.cap ? buf.cap * 2 : 4096;

		while (cap < buf.len + n + 1)
			cap *= 2;
		buf.p = xrealloc(buf.p, cap);
		buf.cap = cap;
	}
	return buf.p + buf.len;
}

/* "*<argc>\r\n", then "$<len>\r\n<arg>\r\n" per argument, formatted by
 * hand: this runs once per write command, and printf was a tenth of the
 * CPU of a SET with the AOF on. */
static void buf_append_command(int argc, const struct arg *argv)
{
	size_t need = 1 + LL_STR_SIZE + 2;
	char *p;

	for (int i = 0; i < argc; i++)
		need += 1 + LL_STR_SIZE + 2 + argv[i].len + 2;
	p = buf_reserve(need);
	*p++ = '*';
	p += ll_to_str(p, argc);
	*p++ = '\r';
	*p++ = '\n';
	for (int i = 0; i < argc; i++) {
		*p++ = '$';
		p += ll_to_str(p, (long long)argv[i].len);
		*p++ = '\r';
		*p++ = '\n';
		memcpy(p, argv[i].p, argv[i].len);
		p += argv[i].len;
		*p++ = '\r';
		*p++ = '\n';
	}
	buf.len = (size_t)(p - buf.p);
	buf.p[buf.len] = '\0';
}

/* The propagation stream's consumer, under the propagation lock. */
static void aof_feed(void *arg, int argc, const struct arg *argv)
{
	size_t before;

	(void)arg;
	pthread_mutex_lock(&buf_lock);
	before = buf.len;
	if (config.aof_timestamp_enabled) {
		int64_t now = time(NULL);

		if (now != last_ts) {
			text_printf(&buf, "#TS:%lld\r\n", (long long)now);
			last_ts = now;
		}
	}
	buf_append_command(argc, argv);
	__atomic_store_n(&appended, appended + (buf.len - before), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&buf_lock);
}

uint64_t aof_appended(void)
{
	return __atomic_load_n(&appended, __ATOMIC_ACQUIRE);
}

bool aof_fsynced(uint64_t pos)
{
	return __atomic_load_n(&state, __ATOMIC_RELAXED) == AOF_ON &&
	       __atomic_load_n(&synced, __ATOMIC_ACQUIRE) >= pos;
}

static int write_all(int wfd, const char *p, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(wfd, p + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOSPC;
		off += (size_t)n;
	}
	return 0;
}

/* Writes the pending bytes (and fsyncs them if sync); under io_lock. */
static void do_flush(bool sync)
{
	struct text out;
	uint64_t upto;
	int rc;

	pthread_mutex_lock(&buf_lock);
	out = buf;
	buf = spare;
	upto = appended;
	pthread_mutex_unlock(&buf_lock);
	spare = (struct text){ 0 };
	if (out.len && fd >= 0) {
		rc = write_all(fd, out.p, out.len);
		if (rc) {
			/* Nothing half-written stays: the file goes back to its
			 * last whole record, and the bytes wait for a retry. */
			if (ftruncate(fd, (off_t)incr_size) < 0)
				log_warning("Could not remove the partial AOF write: %s",
					    strerror(errno));
			if (!__atomic_load_n(&write_err, __ATOMIC_RELAXED))
				log_warning("Error writing to the AOF file: %s", strerror(-rc));
			__atomic_store_n(&write_err, -rc, __ATOMIC_RELAXED);
			pthread_mutex_lock(&buf_lock);
			if (buf.len)
				text_append(&out, buf.p, buf.len);
			xfree(buf.p);
			buf = out;
			pthread_mutex_unlock(&buf_lock);
			if (config.appendfsync == FSYNC_ALWAYS) {
				log_warning("Can't recover from AOF write error when the AOF fsync "
					    "policy is 'always'. Exiting...");
				_exit(1);
			}
			return;
		}
		incr_size += out.len;
		if (__atomic_load_n(&write_err, __ATOMIC_RELAXED)) {
			log_warning("AOF write error looks solved, Redis can write again.");
			__atomic_store_n(&write_err, 0, __ATOMIC_RELAXED);
		}
	} else if (out.len) {
		/* No file (a failed start): the bytes are dropped, and the
		 * replies that waited for them go. */
		__atomic_store_n(&released, upto, __ATOMIC_SEQ_CST);
	}
	/* The buffer comes back for the next turn's records (no reallocation
	 * and no fresh pages each turn), unless a burst made it large. */
	if (out.cap <= SPARE_MAX) {
		out.len = 0;
		spare = out;
	} else {
		xfree(out.p);
	}
	__atomic_store_n(&written, upto, __ATOMIC_RELEASE);
	if (sync && fd >= 0 && __atomic_load_n(&synced, __ATOMIC_RELAXED) < written) {
		if (fdatasync(fd) < 0) {
			log_warning("Can't persist the AOF: fdatasync: %s", strerror(errno));
			if (config.appendfsync == FSYNC_ALWAYS) {
				log_warning("Can't recover from AOF write error when the AOF fsync "
					    "policy is 'always'. Exiting...");
				_exit(1);
			}
			__atomic_store_n(&write_err, errno, __ATOMIC_RELAXED);
			return;
		}
		__atomic_store_n(&synced, written, __ATOMIC_RELEASE);
		__atomic_store_n(&released, written, __ATOMIC_SEQ_CST);
	}
}

void aof_before_replies(void)
{
	uint64_t target;
	bool always;

	if (__builtin_expect(__atomic_load_n(&state, __ATOMIC_RELAXED) == AOF_OFF, 1))
		return;
	target = __atomic_load_n(&appended, __ATOMIC_ACQUIRE);
	always = config.appendfsync == FSYNC_ALWAYS;
	/* Nothing of anyone's left to write (or, under always, to sync). */
	if (target == __atomic_load_n(always ? &synced : &written, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&io_lock);
	/* Another thread may have written (and synced) this one's bytes while it
	 * waited: then there is nothing left to do (group commit). */
	if (written < target || (always && __atomic_load_n(&synced, __ATOMIC_RELAXED) < target))
		do_flush(always);
	pthread_mutex_unlock(&io_lock);
}

/* Wakes the workers whose held replies are now durable (aof_target_wait). */
static void wake_waiters(void)
{
	uint64_t upto = __atomic_load_n(&released, __ATOMIC_SEQ_CST);

	for (unsigned i = 0; i < server.nworkers; i++) {
		struct worker *w = &server.workers[i];
		uint64_t want = __atomic_load_n(&w->aof_wait, __ATOMIC_SEQ_CST);

		if (want && (want <= upto || !aof_holds()) &&
		    __atomic_compare_exchange_n(&w->aof_wait, &want, 0, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			worker_wake(w);
	}
}

/* The once-a-second work: everysec fsyncs out of the write path (a dup of
 * the file, so writers do not wait for the disk); no writes out what is
 * pending. */
static void second_tick(void)
{
	uint64_t upto;
	int dfd;

	pthread_mutex_lock(&io_lock);
	if (state == AOF_OFF || fd < 0) {
		pthread_mutex_unlock(&io_lock);
		return;
	}
	do_flush(false);
	if (config.appendfsync != FSYNC_EVERYSEC || synced >= written) {
		pthread_mutex_unlock(&io_lock);
		return;
	}
	upto = written;
	dfd = dup(fd);
	pthread_mutex_unlock(&io_lock);
	if (dfd < 0)
		return;
	if (fdatasync(dfd) == 0) {
		pthread_mutex_lock(&io_lock);
		if (upto > synced)
			__atomic_store_n(&synced, upto, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&io_lock);
	}
	close(dfd);
}

/*
 * The AOF thread. Under appendfsync always it is the group commit: while it
 * writes and fdatasyncs one batch, the workers go on running commands and
 * appending records, holding their turns' replies (aof_turn_target); the
 * next sync covers everything appended meanwhile, by both workers, and each
 * worker whose oldest held turn it covers is woken to send. Otherwise it
 * does the once-a-second work.
 */
/* Atomically raises *p to v. */
static void store_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);

	while (cur < v &&
	       !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* One group commit: writes everything appended so far and fdatasyncs it,
 * the disk wait outside io_lock (a dup of the file: a rewrite may switch
 * files meanwhile, and closes the old one only after syncing it). */
static void sync_batch(void)
{
	uint64_t upto;
	int dfd = -1;

	pthread_mutex_lock(&io_lock);
	if (state != AOF_OFF) {
		do_flush(false);
		if (fd >= 0 && synced < written)
			dfd = dup(fd);
	}
	upto = written;
	pthread_mutex_unlock(&io_lock);
	if (dfd < 0)
		return;
	if (fdatasync(dfd) < 0) {
		log_warning("Can't persist the AOF: fdatasync: %s", strerror(errno));
		log_warning("Can't recover from AOF write error when the AOF fsync policy is "
			    "'always'. Exiting...");
		_exit(1);
	}
	close(dfd);
	store_max(&synced, upto);
	store_max(&released, upto);
}

static void *fsync_main(void *arg)
{
	bool ticks = !arg; /* the first thread also does the once-a-second work */
	int64_t next_tick = mono_ms() + 1000;

	pthread_mutex_lock(&kick_lock);
	while (!fsync_thread_stop) {
		int64_t now;

		if (kick_want > kick_started) {
			kick_started = kick_want;
			pthread_mutex_unlock(&kick_lock);
			sync_batch();
			wake_waiters();
			pthread_mutex_lock(&kick_lock);
			/* The AOF stopped or the policy changed: nothing more to sync. */
			if (!aof_holds())
				kick_want = kick_started = 0;
			continue;
		}
		now = mono_ms();
		if (ticks && now >= next_tick) {
			pthread_mutex_unlock(&kick_lock);
			second_tick();
			/* Held replies whose wait stopped mattering (the AOF off,
			 * the policy changed) go at the latest now. */
			wake_waiters();
			pthread_mutex_lock(&kick_lock);
			next_tick = mono_ms() + 1000;
			continue;
		}
		struct timespec ts;
		int64_t wait = ticks ? next_tick - now : 1000;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (long)(wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		kick_sleeping++;
		pthread_cond_timedwait(&kick_cond, &kick_lock, &ts);
		kick_sleeping--;
	}
	pthread_mutex_unlock(&kick_lock);
	return NULL;
}

bool aof_holds(void)
{
	return __atomic_load_n(&state, __ATOMIC_RELAXED) != AOF_OFF &&
	       config.appendfsync == FSYNC_ALWAYS &&
	       __atomic_load_n(&fsync_thread_up, __ATOMIC_ACQUIRE);
}

uint64_t aof_turn_target(void)
{
	uint64_t target;

	if (__builtin_expect(__atomic_load_n(&state, __ATOMIC_RELAXED) == AOF_OFF, 1))
		return 0;
	if (!aof_holds()) {
		aof_before_replies();
		return 0;
	}
	target = __atomic_load_n(&appended, __ATOMIC_SEQ_CST);
	if (target <= __atomic_load_n(&released, __ATOMIC_SEQ_CST))
		return 0;
	pthread_mutex_lock(&kick_lock);
	if (target > kick_want) {
		kick_want = target;
		if (kick_sleeping)
			pthread_cond_signal(&kick_cond);
	}
	pthread_mutex_unlock(&kick_lock);
	return target;
}

bool aof_target_done(uint64_t target)
{
	return __atomic_load_n(&released, __ATOMIC_SEQ_CST) >= target || !aof_holds();
}

bool aof_target_wait(struct worker *w, uint64_t target)
{
	/* Stored before the check, as the AOF thread stores released before
	 * it reads aof_wait: one of the two sees the other (no lost wake-up). */
	__atomic_store_n(&w->aof_wait, target, __ATOMIC_SEQ_CST);
	if (!aof_target_done(target))
		return false;
	__atomic_store_n(&w->aof_wait, 0, __ATOMIC_SEQ_CST);
	return true;
}

static void fsync_thread_start(void)
{
	if (fsync_thread_up)
		return;
	pthread_mutex_lock(&kick_lock);
	fsync_thread_stop = false;
	pthread_mutex_unlock(&kick_lock);
	/* Without any, the workers write and sync themselves
	 * (aof_before_replies); with one, syncs do not overlap. */
	for (intptr_t i = 0; i < AOF_THREADS; i++) {
		if (pthread_create(&fsync_thread[i], NULL, fsync_main, (void *)i)) {
			log_warning("Can't start an AOF thread: %s", strerror(errno));
			break;
		}
		fsync_threads = (int)i + 1;
	}
	if (fsync_threads)
		__atomic_store_n(&fsync_thread_up, true, __ATOMIC_RELEASE);
}

/* Opens incr (create or append) as the file being written; under io_lock. */
static int open_incr(const struct aof_file *f, bool append)
{
	char path[512];
	int nfd;

	path_in_dir(path, sizeof(path), f->name);
	/* O_APPEND always: after a failed write is cut off (ftruncate), the next
	 * one lands at the new end, leaving no hole. */
	nfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | (append ? 0 : O_TRUNC), 0644);
	if (nfd < 0) {
		int err = errno;

		log_warning("Can't open the append-only file %s: %s", f->name, strerror(err));
		return -err;
	}
	if (fd >= 0) {
		if (fdatasync(fd) < 0)
			log_warning("Fail to fsync the AOF file: %s.", strerror(errno));
		close(fd);
	}
	fd = nfd;
	incr_size = append ? file_size(f->name) : 0;
	__atomic_store_n(&synced, written, __ATOMIC_RELEASE);
	if (written > __atomic_load_n(&released, __ATOMIC_RELAXED))
		__atomic_store_n(&released, written, __ATOMIC_SEQ_CST);
	return 0;
}

/* The dataset as commands (aof-use-rdb-preamble no): SELECT per database,
 * and per key a RESTORE of its DUMP payload with its absolute deadline. */
/* FUNCTION LOAD <code> into the text at arg, as Redis's rewriteFunctions. */
static void function_load_line(void *arg, const char *code, size_t len)
{
	struct text *t = arg;

	text_printf(t, "*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n$%zu\r\n", len);
	text_append(t, code, len);
	text_append(t, "\r\n", 2);
}

static int write_commands(int wfd)
{
	struct text t = { 0 };
	int rc = 0;

	if (config.aof_timestamp_enabled)
		text_printf(&t, "#TS:%lld\r\n", (long long)time(NULL));
	/* The libraries first, as Redis (from the snapshot the forking thread
	 * took: a child may not take the script lock). */
	if (rdbfile_functions_each(function_load_line, &t) < 0) {
		xfree(t.p);
		return -EINVAL;
	}

	for (int db = 0; db < store.ndbs && !rc; db++) {
		bool selected = false;

		for (unsigned i = 0; i < STORE_SHARDS && !rc; i++) {
			const struct dict *d = &store_shard(db, i)->keys;

			for (uint64_t b = 0; d->table && b <= d->mask && !rc; b++) {
				for (struct dict_node *n = d->table[b]; n; n = n->next) {
					const struct entry *e = entry_of(n);
					struct rdb_buf v = { 0 };
					char dbs[LL_STR_SIZE + 1], ttl[LL_STR_SIZE + 1];
					struct arg a[6];

					if (!selected) {
						a[0] = PROP_STR("SELECT");
						a[1] = prop_ll(dbs, db);
						text_printf(&t,
							    "*2\r\n$6\r\nSELECT\r\n$%zu\r\n%s\r\n",
							    a[1].len, dbs);
						selected = true;
					}
					rdb_dump_payload(&v, &e->val);
					a[0] = PROP_STR("RESTORE");
					a[1] = (struct arg){ (char *)e->key, entry_klen(e) };
					a[2] = prop_ll(ttl,
						       entry_expire(e) == -1 ? 0 : entry_expire(e));
					a[3] = (struct arg){ (char *)v.p, v.len };
					a[4] = PROP_STR("REPLACE");
					a[5] = PROP_STR("ABSTTL");
					{
						struct text save = buf;

						buf = t;
						buf_append_command(entry_expire(e) == -1 ? 5 : 6,
								   a);
						t = buf;
						buf = save;
					}
					xfree(v.p);
					if (t.len >= 64 * 1024) {
						rc = write_all(wfd, t.p, t.len);
						t.len = 0;
					}
				}
			}
		}
	}
	if (!rc && t.len)
		rc = write_all(wfd, t.p, t.len);
	xfree(t.p);
	if (!rc && fsync(wfd) < 0)
		rc = -errno;
	return rc;
}

/* Writes a base file at path from the store (held locked or a child's). */
static int write_base(const char *path)
{
	int bfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc;

	if (bfd < 0)
		return -errno;
	rc = config.aof_use_rdb_preamble ? rdbfile_write_fd(bfd, true) : write_commands(bfd);
	if (close(bfd) < 0 && !rc)
		rc = -errno;
	return rc;
}

static int ensure_dir(void)
{
	if (mkdir(config.appenddirname, 0755) < 0 && errno != EEXIST) {
		log_warning("Can't open or create append-only dir %s: %s", config.appenddirname,
			    strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- rewriting ------------------------------------------------------------------------------ */

static void temp_base_path(char *out, size_t n, pid_t pid)
{
	snprintf(out, n, "%s/temp-rewriteaof-bg-%d.aof", config.appenddirname, (int)pid);
}

static void remove_file(const char *name)
{
	char path[512];

	path_in_dir(path, sizeof(path), name);
	unlink(path);
}

/* The child ended (status); under io_lock. */
/* Removes the history files and drops them from the manifest, unless
 * aof-disable-auto-gc (Redis's aofDelHistoryFiles). io_lock held. */
static void gc_history(void)
{
	if (config.aof_disable_auto_gc || !man.nhist)
		return;
	for (int i = 0; i < man.nhist; i++)
		remove_file(man.hist[i].name);
	man.nhist = 0;
	manifest_write(&man);
}

void aof_gc_config_changed(void)
{
	pthread_mutex_lock(&io_lock);
	gc_history();
	pthread_mutex_unlock(&io_lock);
}

static void rewrite_done(pid_t pid, int status)
{
	char tmp[512], path[512];
	struct aof_manifest m = man;
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	/* Killed and reaped already (kill_child). */
	if (!child_running || pid != child)
		return;
	child_running = false;
	child = 0;
	last_rewrite_secs = (now_ms() - rewrite_start_ms + 500) / 1000;
	temp_base_path(tmp, sizeof(tmp), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1) {
		unlink(tmp);
		log_warning("Background AOF rewrite terminated by signal %d", SIGUSR1);
		return;
	}
	if (!ok) {
		unlink(tmp);
		log_warning("Background AOF rewrite terminated with error");
		goto failed;
	}
	log_notice("Background AOF rewrite terminated with success");
	m.has_base = true;
	name_base(&m.base, ++m.base_seq, config.aof_use_rdb_preamble);
	path_in_dir(path, sizeof(path), m.base.name);
	if (rename(tmp, path) < 0) {
		log_warning("Error trying to rename the temporary AOF base file %s into %s: %s",
			    tmp, m.base.name, strerror(errno));
		unlink(tmp);
		goto failed;
	}
	log_notice("Successfully renamed the temporary AOF base file %s into %s", tmp, m.base.name);
	/* The files the new base replaces: every incremental one but the one
	 * being written, the last opened (none when the AOF is off). They are
	 * history now, removed at once unless aof-disable-auto-gc keeps them. */
	m.nincr = 0;
	if (state != AOF_OFF && fd >= 0) {
		name_incr(&m.incr[0], man.incr_seq);
		m.nincr = 1;
	}
	/* In Redis 8.8's order: the incremental files, then the old base. */
	for (int i = 0; i < man.nincr; i++)
		if ((!m.nincr || strcmp(man.incr[i].name, m.incr[0].name)) &&
		    m.nhist < AOF_MAX_FILES)
			m.hist[m.nhist++] = man.incr[i];
	if (man.has_base && strcmp(man.base.name, m.base.name) && m.nhist < AOF_MAX_FILES)
		m.hist[m.nhist++] = man.base;
	if (manifest_write(&m) < 0) {
		unlink(path);
		goto failed;
	}
	man = m;
	gc_history();
	if (state == AOF_WAIT_REWRITE) {
		__atomic_store_n(&state, AOF_ON, __ATOMIC_RELAXED);
		log_notice("Background AOF rewrite finished successfully");
	} else {
		log_notice("Background AOF rewrite finished successfully");
	}
	base_size = file_size(m.base.name);
	older_incr_size = 0;
	rewrite_base_size = base_size + incr_size;
	rewrites++;
	consecutive_failures = 0;
	last_rewrite_ok = true;
	rewrite_scheduled = false;
	return;
failed:
	consecutive_failures++;
	last_rewrite_ok = false;
	/* The first base must exist: try again from the cron. */
	if (state == AOF_WAIT_REWRITE)
		rewrite_scheduled = true;
}

static void *rewrite_waiter(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&io_lock);
	rewrite_done(pid, status);
	pthread_mutex_unlock(&io_lock);
	return NULL;
}

/* Under every shard lock and io_lock: the next incremental file becomes
 * the one written (in the manifest at once when the AOF is on), then the
 * child forks. */
static int do_rewrite_start(void)
{
	pthread_attr_t attr;
	pthread_t tid;
	pid_t pid;

	if (ensure_dir() < 0)
		return -EIO;
	/* While waiting for the first base, the file being written stays. */
	if (state == AOF_ON) {
		struct aof_manifest m = man;
		uint64_t prev = incr_size;
		struct aof_file f;

		do_flush(true);
		name_incr(&f, m.incr_seq + 1);
		if (m.nincr == AOF_MAX_FILES)
			return -ENOSPC;
		m.incr[m.nincr++] = f;
		m.incr_seq = f.seq;
		if (open_incr(&f, false) < 0)
			return -EIO;
		if (manifest_write(&m) < 0)
			return -EIO;
		older_incr_size += prev;
		man = m;
		log_notice("Creating AOF incr file %s on background rewrite", f.name);
		propagate_forget_db();
		/* A new file opens with its own annotation. */
		pthread_mutex_lock(&buf_lock);
		last_ts = 0;
		pthread_mutex_unlock(&buf_lock);
	}
	rewrite_start_ms = now_ms();
	/* The libraries go into an RDB base; the child may not take the
	 * script lock. */
	rdbfile_functions_snapshot();
	pid = rdbfile_fork();
	if (pid == 0) {
		char tmp[512];

		int rc;

		rdbfile_child_start();
		temp_base_path(tmp, sizeof(tmp), getpid());
		rc = write_base(tmp);
		rdbfile_child_cow(RDBFILE_COW_AOF);
		_exit(rc ? 1 : 0);
	}
	rdbfile_functions_release();
	if (pid < 0) {
		int err = errno;

		log_warning("Can't rewrite append only file in background: fork: %s",
			    strerror(err));
		last_rewrite_ok = false;
		consecutive_failures++;
		return -err;
	}
	child = pid;
	child_running = true;
	rewrite_scheduled = false;
	log_notice("Background append only file rewriting started by pid %d", (int)pid);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &attr, rewrite_waiter, (void *)(intptr_t)pid)) {
		int status = 0;

		waitpid(pid, &status, 0);
		rewrite_done(pid, status);
	}
	pthread_attr_destroy(&attr);
	return 0;
}

int aof_rewrite(void)
{
	int rc;

	if (aof_rewrite_running())
		return -EBUSY;
	if (rdbfile_bgsave_running()) {
		pthread_mutex_lock(&io_lock);
		rewrite_scheduled = true;
		consecutive_failures = 0;
		pthread_mutex_unlock(&io_lock);
		return 1;
	}
	store_lock_all();
	pthread_mutex_lock(&io_lock);
	rc = child_running ? -EBUSY : do_rewrite_start();
	pthread_mutex_unlock(&io_lock);
	store_unlock_all();
	return rc;
}

bool aof_rewrite_running(void)
{
	bool r;

	pthread_mutex_lock(&io_lock);
	r = child_running;
	pthread_mutex_unlock(&io_lock);
	return r;
}

/* Stops a running child (SIGUSR1: not counted a failure); under io_lock,
 * which the waiter needs: so the child is reaped here. */
static void kill_child(void)
{
	char tmp[512];
	int status;

	if (!child_running)
		return;
	log_warning("There is a child rewriting the AOF. Killing it!");
	kill(child, SIGUSR1);
	temp_base_path(tmp, sizeof(tmp), child);
	/* The waiter thread reaps it once io_lock is free; wait here so the
	 * temporary file is gone before returning. */
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	unlink(tmp);
	child_running = false;
	child = 0;
}

void aof_cron(void)
{
	bool start = false;
	int st = __atomic_load_n(&state, __ATOMIC_RELAXED);

	pthread_mutex_lock(&io_lock);
	if (!child_running && !rdbfile_bgsave_running()) {
		if (rewrite_scheduled) {
			start = true;
		} else if (st == AOF_ON && config.auto_aof_rewrite_percentage &&
			   base_size + older_incr_size + incr_size >
				   (uint64_t)config.auto_aof_rewrite_min_size) {
			uint64_t base = rewrite_base_size ? rewrite_base_size : 1;
			long long growth = (long long)((base_size + older_incr_size + incr_size) *
						       100 / base) -
					   100;

			if (growth >= config.auto_aof_rewrite_percentage) {
				log_notice("Starting automatic rewriting of AOF on %lld%% growth",
					   growth);
				start = true;
			}
		}
	}
	/* A failed write is retried here too (Redis's cron does). */
	if (st != AOF_OFF && __atomic_load_n(&write_err, __ATOMIC_RELAXED))
		do_flush(config.appendfsync == FSYNC_ALWAYS);
	pthread_mutex_unlock(&io_lock);
	if (start)
		aof_rewrite();
}

/* ---- on and off ----------------------------------------------------------------------------- */

/* Under every shard lock. */
static void do_stop(void)
{
	pthread_mutex_lock(&io_lock);
	kill_child();
	do_flush(true);
	if (state == AOF_WAIT_REWRITE && fd >= 0) {
		/* Not in the manifest yet: nothing refers to it. */
		struct aof_file f;

		name_incr(&f, man.incr_seq);
		remove_file(f.name);
	}
	if (fd >= 0)
		close(fd);
	fd = -1;
	__atomic_store_n(&state, AOF_OFF, __ATOMIC_RELAXED);
	propagate_consumer_activate(aof_feed, false);
	pthread_mutex_unlock(&io_lock);
}

/* Under every shard lock: the stream feeds the next incremental file, and a
 * child writes the first base; the manifest names both once it is done. */
static int do_start(void)
{
	struct aof_file f;
	int rc;

	pthread_mutex_lock(&io_lock);
	if (ensure_dir() < 0) {
		pthread_mutex_unlock(&io_lock);
		return -EIO;
	}
	kill_child();
	name_incr(&f, man.incr_seq + 1);
	rc = open_incr(&f, false);
	if (rc) {
		pthread_mutex_unlock(&io_lock);
		return rc;
	}
	man.incr_seq = f.seq;
	__atomic_store_n(&written, __atomic_load_n(&appended, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
	__atomic_store_n(&synced, written, __ATOMIC_RELEASE);
	__atomic_store_n(&released, written, __ATOMIC_SEQ_CST);
	__atomic_store_n(&state, AOF_WAIT_REWRITE, __ATOMIC_RELAXED);
	propagate_forget_db();
	propagate_consumer_activate(aof_feed, true);
	if (rdbfile_bgsave_running())
		rewrite_scheduled = true;
	else if (do_rewrite_start() < 0)
		rewrite_scheduled = true;
	pthread_mutex_unlock(&io_lock);
	fsync_thread_start();
	return 0;
}

void aof_config_changed(void)
{
	int st = __atomic_load_n(&state, __ATOMIC_RELAXED);

	store_lock_all();
	if (config.appendonly && st == AOF_OFF) {
		if (do_start() < 0)
			log_warning("Redis needs to enable the AOF but can't trigger a background "
				    "AOF rewrite operation. Check the above logs for more info "
				    "about the error.");
	} else if (!config.appendonly && st != AOF_OFF) {
		do_stop();
	}
	store_unlock_all();
}

int aof_write_error(void)
{
	if (__builtin_expect(__atomic_load_n(&state, __ATOMIC_RELAXED) == AOF_OFF, 1))
		return 0;
	return __atomic_load_n(&write_err, __ATOMIC_RELAXED);
}

int aof_shutdown(bool force)
{
	pthread_mutex_lock(&io_lock);
	if (state == AOF_WAIT_REWRITE) {
		if (!force) {
			log_warning("Writing initial AOF, can't exit.");
			pthread_mutex_unlock(&io_lock);
			return -1;
		}
		log_warning("Writing initial AOF. Exit anyway.");
	}
	kill_child();
	if (state != AOF_OFF) {
		log_notice("Calling fsync() on the AOF file.");
		do_flush(true);
	}
	pthread_mutex_unlock(&io_lock);
	return 0;
}

void aof_stop(void)
{
	pthread_mutex_lock(&kick_lock);
	fsync_thread_stop = true;
	pthread_cond_broadcast(&kick_cond);
	pthread_mutex_unlock(&kick_lock);
	for (int i = 0; i < fsync_threads; i++)
		pthread_join(fsync_thread[i], NULL);
	fsync_threads = 0;
	__atomic_store_n(&fsync_thread_up, false, __ATOMIC_RELEASE);
	pthread_mutex_lock(&io_lock);
	kill_child();
	if (state != AOF_OFF)
		do_flush(true);
	if (fd >= 0)
		close(fd);
	fd = -1;
	pthread_mutex_unlock(&io_lock);
	xfree(buf.p);
	buf = (struct text){ 0 };
	xfree(spare.p);
	spare = (struct text){ 0 };
}

/* ---- start-up ------------------------------------------------------------------------------- */

/* An appendonly.aof in `dir` from before Redis 7 (one file): it becomes
 * the base of the multi-part layout under its own name, as Redis 7+ does
 * (aofUpgradePrepare): the manifest first, then the file moved in, so a
 * crash between the two is retried at the next start. 0 or -1 (logged). */
static int upgrade_single_file(struct aof_manifest *m)
{
	char path[512];
	struct stat sb;
	bool dir = stat(config.appenddirname, &sb) == 0 && S_ISDIR(sb.st_mode);

	path_in_dir(path, sizeof(path), config.appendfilename);
	if (stat(config.appendfilename, &sb) < 0 ||
	    !(!dir || (!m->has_base && !m->nincr) ||
	      (m->has_base && !m->nincr && !strcmp(m->base.name, config.appendfilename) &&
	       stat(path, &sb) < 0)))
		return 0;
	if (ensure_dir() < 0)
		return -1;
	m->has_base = true;
	snprintf(m->base.name, sizeof(m->base.name), "%s", config.appendfilename);
	m->base.seq = 1;
	if (m->base_seq < 1)
		m->base_seq = 1;
	if (manifest_write(m) < 0)
		return -1;
	if (rename(config.appendfilename, path) < 0) {
		log_warning("Error trying to move the old AOF file %s into dir %s: %s",
			    config.appendfilename, config.appenddirname, strerror(errno));
		return -1;
	}
	log_notice("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s).",
		   config.appendfilename, config.appenddirname);
	return 0;
}

int aof_start_up(void)
{
	struct aof_file f;
	bool none;
	int rc;

	if (propagate_consumer_add(aof_feed, NULL, false) < 0)
		return -1;
	/* The manifest is read even with the AOF off: its numbers go on. */
	if (manifest_read(&man) < 0)
		return -1;
	if (!config.appendonly)
		return rdbfile_load() < 0 ? -1 : 0;
	if (upgrade_single_file(&man) < 0)
		return -1;
	store_lock_all();
	rc = load_manifest(&man, &none);
	if (!rc)
		rdbfile_loaded();
	store_unlock_all();
	if (rc < 0)
		return -1;
	if (ensure_dir() < 0)
		return -1;
	/* Before any worker: the locks only keep the order of the others. */
	store_lock_all();
	pthread_mutex_lock(&io_lock);
	if (!man.has_base && !man.nincr) {
		char path[512];

		man.has_base = true;
		name_base(&man.base, ++man.base_seq, config.aof_use_rdb_preamble);
		path_in_dir(path, sizeof(path), man.base.name);
		rdbfile_functions_snapshot();
		rc = write_base(path);
		rdbfile_functions_release();
		if (rc) {
			log_warning("Error writing the AOF base file %s: %s", man.base.name,
				    strerror(-rc));
			goto fail;
		}
		log_notice("Creating AOF base file %s on server start", man.base.name);
	}
	if (man.nincr) {
		f = man.incr[man.nincr - 1];
		rc = open_incr(&f, true);
		if (!rc)
			log_notice("Opening AOF incr file %s on server start", f.name);
	} else {
		name_incr(&f, ++man.incr_seq);
		man.incr[man.nincr++] = f;
		rc = open_incr(&f, false);
		if (!rc)
			log_notice("Creating AOF incr file %s on server start", f.name);
	}
	if (rc || manifest_write(&man) < 0)
		goto fail;
	base_size = man.has_base ? file_size(man.base.name) : 0;
	older_incr_size = 0;
	for (int i = 0; i + 1 < man.nincr; i++)
		older_incr_size += file_size(man.incr[i].name);
	rewrite_base_size = base_size;
	__atomic_store_n(&state, AOF_ON, __ATOMIC_RELAXED);
	propagate_consumer_activate(aof_feed, true);
	pthread_mutex_unlock(&io_lock);
	store_unlock_all();
	fsync_thread_start();
	return 0;
fail:
	pthread_mutex_unlock(&io_lock);
	store_unlock_all();
	return -1;
}

int do_aof_reload(void)
{
	struct aof_manifest m;
	bool none;
	int rc;

	pthread_mutex_lock(&io_lock);
	if (state != AOF_OFF)
		do_flush(true);
	rc = manifest_read(&m);
	pthread_mutex_unlock(&io_lock);
	if (rc < 0)
		return -1;
	for (int db = 0; db < store.ndbs; db++)
		db_flush(db);
	/* Replaying must not feed the file it reads. */
	propagate_consumer_activate(aof_feed, false);
	rc = load_manifest(&m, &none);
	if (__atomic_load_n(&state, __ATOMIC_RELAXED) != AOF_OFF)
		propagate_consumer_activate(aof_feed, true);
	if (!rc && none)
		rc = -1;
	if (!rc)
		rdbfile_loaded();
	return rc;
}

void aof_stats(struct aof_stats *out)
{
	pthread_mutex_lock(&io_lock);
	out->enabled = state != AOF_OFF;
	out->rewrite_running = child_running;
	out->child_pid = child_running ? child : 0;
	out->rewrite_scheduled = rewrite_scheduled;
	out->last_rewrite_ok = last_rewrite_ok;
	out->write_ok = !write_err;
	out->last_rewrite_secs = last_rewrite_secs;
	out->rewrite_start_ms = rewrite_start_ms;
	out->rewrites = rewrites;
	out->consecutive_failures = consecutive_failures;
	out->current_size = base_size + older_incr_size + incr_size;
	out->base_size = rewrite_base_size;
	pthread_mutex_lock(&buf_lock);
	out->buffer_length = buf.len;
	pthread_mutex_unlock(&buf_lock);
	pthread_mutex_unlock(&io_lock);
}
