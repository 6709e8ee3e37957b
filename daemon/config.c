// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "config.h"
#include "log.h"
#include "mem.h"
#include "text.h"
#include "util.h"

struct config config;

enum config_type { CFG_INT, CFG_MEMORY, CFG_STRING, CFG_ENUM, CFG_BOOL, CFG_OCTAL, CFG_OBUF };

enum config_flag {
	CFG_IMMUTABLE = 1 << 0, /* start-up only */
	CFG_SENSITIVE = 1 << 1,
	CFG_WORDS = 1 << 2, /* a space-separated list, rewritten unquoted */
	CFG_COUNT = 1 << 3, /* takes memory suffixes but is a count: rewritten as a number */
};

struct config_def {
	const char *name;
	enum config_type type;
	unsigned flags;
	void *field;
	const char *dflt;
	long long min, max;
	const char *const *names; /* CFG_ENUM: index = value */
	/* Called after a runtime change; returns 0 or -1 with *err. */
	int (*apply)(const char **err);
	const char *desc; /* one line for docs/configuration.md */
};

static const char *const loglevel_names[] = { "debug",	 "verbose", "notice",
					      "warning", "nothing", NULL };
static const char *const io_engine_names[] = { "auto", "io_uring", "epoll", NULL };
/* Persistence does not exist yet: these report what is true and refuse
 * anything else, so tools that read them (redis-benchmark) see "off". */
static const char *const save_names[] = { "", NULL };
static const char *const yes_no_names[] = { "no", "yes", NULL };
/* In the order of enum maxmemory_policy (evict.h). */
static const char *const policy_names[] = { "volatile-lru",   "volatile-lfu", "volatile-random",
					    "volatile-ttl",   "allkeys-lru",  "allkeys-lfu",
					    "allkeys-random", "noeviction",   NULL };
static const char *const fastpath_mode_names[] = { "auto", "native", "generic", NULL };
static const char *const appendonly_names[] = { "no", NULL };

static int apply_loglevel(const char **err)
{
	log_set_level((int)config.loglevel);
	return 0;
}

/* Redis's warning for a limit already exceeded, which used_memory (with the
 * fast path's slab) makes easy to set. */
static int apply_maxmemory(const char **err)
{
	size_t used = mem_used();

	(void)err;
	if (config.maxmemory && (size_t)config.maxmemory < used)
		log_warning("WARNING: the new maxmemory value set via CONFIG SET (%llu) is smaller "
			    "than the current memory usage (%zu). This will result in key eviction "
			    "and/or the inability to accept new write commands depending on the "
			    "maxmemory-policy.",
			    (unsigned long long)config.maxmemory, used);
	return 0;
}

static int apply_dir(const char **err)
{
	if (chdir(config.dir) < 0) {
		*err = strerror(errno);
		return -1;
	}
	return 0;
}

/* The UDP access rule (access.c) follows requirepass, fastpath-token and
 * protected-mode before the CONFIG SET that changes one is answered. */
static int apply_access(const char **err)
{
	access_update();
	return 0;
}

#define INT(n, f, d, lo, hi, fl, desc)                                                             \
	{                                                                                          \
		n, CFG_INT, fl, &config.f, d, lo, hi, NULL, NULL, desc                             \
	}
#define MEM(n, f, d, lo, hi, fl, desc)                                                             \
	{                                                                                          \
		n, CFG_MEMORY, fl, &config.f, d, lo, hi, NULL, NULL, desc                          \
	}
#define STR(n, f, d, fl, ap, desc)                                                                 \
	{                                                                                          \
		n, CFG_STRING, fl, &config.f, d, 0, 0, NULL, ap, desc                              \
	}
#define ENUM(n, f, d, names, fl, ap, desc)                                                         \
	{                                                                                          \
		n, CFG_ENUM, fl, &config.f, d, 0, 0, names, ap, desc                               \
	}
#define BOOL(n, f, d, fl, desc)                                                                    \
	{                                                                                          \
		n, CFG_BOOL, fl, &config.f, d, 0, 1, yes_no_names, NULL, desc                      \
	}

static const struct config_def defs[] = {
	INT("port", port, "6379", 0, 65535, CFG_IMMUTABLE, "TCP port to listen on; 0: no TCP."),
	STR("bind", bind, "127.0.0.1", CFG_IMMUTABLE | CFG_WORDS, NULL,
	    "Addresses to listen on, space-separated; a leading `-` makes one optional."),
	{ "protected-mode", CFG_BOOL, 0, &config.protected_mode, "yes", 0, 1, yes_no_names,
	  apply_access,
	  "With no `requirepass`, refuse TCP clients and UDP requests (kernel and daemon) that "
	  "do not come from 127.0.0.1 or ::1." },
	STR("unixsocket", unixsocket, "", CFG_IMMUTABLE, NULL,
	    "Path of a Unix socket to listen on as well; empty: none."),
	{ "unixsocketperm", CFG_OCTAL, CFG_IMMUTABLE, &config.unixsocketperm, "0", 0, 0777, NULL,
	  NULL, "Permission bits (octal) of the Unix socket file; 0: left to the umask." },
	INT("databases", databases, "16", 1, INT_MAX, CFG_IMMUTABLE,
	    "Number of logical databases (SELECT)."),
	INT("maxclients", maxclients, "10000", 1, UINT_MAX, 0,
	    "Connections beyond this many are refused."),
	INT("timeout", timeout, "0", 0, INT_MAX, 0,
	    "Close a client idle for this many seconds; 0: never."),
	INT("tcp-keepalive", tcp_keepalive, "300", 0, INT_MAX, 0,
	    "TCP keepalive idle time of new connections, in seconds; 0: off."),
	STR("requirepass", requirepass, "", CFG_SENSITIVE, apply_access,
	    "Password that AUTH must give; empty: none."),
	MEM("proto-max-bulk-len", proto_max_bulk_len, "512mb", 1024 * 1024, LLONG_MAX, 0,
	    "Largest bulk string a request may carry."),
	MEM("client-query-buffer-limit", client_query_buffer_limit, "1gb", 1024 * 1024, LLONG_MAX,
	    0, "Close a client whose unparsed input exceeds this."),
	ENUM("loglevel", loglevel, "notice", loglevel_names, 0, apply_loglevel, "Log verbosity."),
	STR("logfile", logfile, "", CFG_IMMUTABLE, NULL, "Log file; empty: standard output."),
	STR("pidfile", pidfile, "", CFG_IMMUTABLE, NULL,
	    "File to write the process id to; empty: none."),
	STR("dir", dir, "./", 0, apply_dir, "Working directory."),
	INT("threads", threads, "0", 0, 1024, CFG_IMMUTABLE,
	    "Worker threads; 0: one per online CPU."),
	ENUM("io-engine", io_engine, "auto", io_engine_names, CFG_IMMUTABLE, NULL,
	     "Network engine; auto: io_uring where available, else epoll."),
	INT("hz", hz, "10", 1, 500, 0, "Frequency of each worker's periodic work, per second."),
	{ "maxmemory", CFG_MEMORY, 0, &config.maxmemory, "0", 0, LLONG_MAX, NULL, apply_maxmemory,
	  "Memory limit for data and the fast path's slab; 0: none." },
	ENUM("maxmemory-policy", maxmemory_policy, "noeviction", policy_names, 0, NULL,
	     "What to evict when `maxmemory` is reached."),
	INT("maxmemory-samples", maxmemory_samples, "5", 1, INT_MAX, 0,
	    "Keys sampled per eviction."),
	INT("lfu-log-factor", lfu_log_factor, "10", 0, INT_MAX, 0,
	    "Logarithmic factor of the LFU access counter."),
	INT("lfu-decay-time", lfu_decay_time, "1", 0, INT_MAX, 0,
	    "Minutes after which the LFU counter decays."),
	INT("list-max-listpack-size", list_max_listpack_size, "-2", INT_MIN, INT_MAX, 0,
	    "List node size: entries if positive, -1..-5 for 4..64 KiB."),
	MEM("hash-max-listpack-entries", hash_max_listpack_entries, "128", 0, LLONG_MAX, CFG_COUNT,
	    "Most fields of a compact hash."),
	MEM("hash-max-listpack-value", hash_max_listpack_value, "64", 0, LLONG_MAX, 0,
	    "Largest field or value of a compact hash."),
	MEM("set-max-intset-entries", set_max_intset_entries, "512", 0, LLONG_MAX, CFG_COUNT,
	    "Most members of an integer set."),
	MEM("set-max-listpack-entries", set_max_listpack_entries, "128", 0, LLONG_MAX, CFG_COUNT,
	    "Most members of a compact set."),
	MEM("set-max-listpack-value", set_max_listpack_value, "64", 0, LLONG_MAX, 0,
	    "Largest member of a compact set."),
	MEM("hll-sparse-max-bytes", hll_sparse_max_bytes, "3000", 0, LLONG_MAX, 0,
	    "Largest sparse HyperLogLog; past it the value turns dense."),
	MEM("zset-max-listpack-entries", zset_max_listpack_entries, "128", 0, LLONG_MAX, CFG_COUNT,
	    "Most members of a compact sorted set."),
	MEM("zset-max-listpack-value", zset_max_listpack_value, "64", 0, LLONG_MAX, 0,
	    "Largest member of a compact sorted set."),
	BOOL("fastpath", fastpath, "yes", CFG_IMMUTABLE,
	     "Load the XDP program that answers GET hits over UDP in the kernel."),
	STR("fastpath-interfaces", fastpath_interfaces, "lo", CFG_IMMUTABLE | CFG_WORDS, NULL,
	    "Interfaces the XDP program is attached to, space-separated."),
	ENUM("fastpath-mode", fastpath_mode, "auto", fastpath_mode_names, CFG_IMMUTABLE, NULL,
	     "XDP attach mode; auto: native where the driver supports it, else generic."),
	INT("fastpath-slots", fastpath_slots, "65536", 1, 16 * 1024 * 1024, CFG_IMMUTABLE,
	    "Values the kernel cache holds (1208 bytes each, counted in used_memory)."),
	STR("fastpath-allow", fastpath_allow, "127.0.0.0/8 ::1/128", CFG_IMMUTABLE | CFG_WORDS,
	    NULL, "Source networks the kernel answers, space-separated."),
	{ "fastpath-token", CFG_INT, CFG_SENSITIVE, &config.fastpath_token, "0", 0, LLONG_MAX, NULL,
	  apply_access,
	  "Token UDP requests must carry when `requirepass` is set; 0: derived from the "
	  "password." },
	INT("fastpath-admit-threshold", fastpath_admit_threshold, "2", 1, 255, 0,
	    "Daemon-served GETs of a key before it enters the kernel cache."),
	INT("udp-port", udp_port, "-1", -1, 65535, CFG_IMMUTABLE,
	    "UDP port of the GET protocol; -1: same as `port`, 0: none."),
	ENUM("save", save, "", save_names, 0, NULL,
	     "Snapshot schedule; only \"\" (no snapshots) is supported."),
	ENUM("appendonly", appendonly, "no", appendonly_names, 0, NULL,
	     "Append-only file; only `no` is supported."),
	INT("slowlog-log-slower-than", slowlog_log_slower_than, "10000", -1, LLONG_MAX, 0,
	    "Log commands slower than this many microseconds; -1: off, 0: all."),
	INT("slowlog-max-len", slowlog_max_len, "128", 0, LONG_MAX, 0,
	    "Entries the slow log keeps."),
	INT("latency-monitor-threshold", latency_monitor_threshold, "0", 0, LLONG_MAX, 0,
	    "Record latency events of at least this many milliseconds; 0: off."),
	{ "client-output-buffer-limit", CFG_OBUF, 0, &config.obuf_limits,
	  "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60", 0, 0, NULL, NULL,
	  "Per class (normal, replica, pubsub): hard limit, soft limit and soft seconds of a "
	  "client's pending replies; 0: none. The replica class applies to nobody (no "
	  "replication)." },
};

#define NDEFS (sizeof(defs) / sizeof(defs[0]))

/* Replaced strings, freed at exit (a reader may still hold one). */
static char **retired;
static size_t nretired;
static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct config_def *find_def(const char *name, size_t len)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (str_eq_nocase(name, len, defs[i].name))
			return &defs[i];
	return NULL;
}

/* Redis's memtoll: a number with an optional k/kb/m/mb/g/gb suffix. */
static bool parse_memory(const char *p, size_t len, long long *out)
{
	static const struct {
		const char *suffix;
		long long mul;
	} units[] = {
		{ "kb", 1024LL },
		{ "k", 1000LL },
		{ "mb", 1024LL * 1024 },
		{ "m", 1000LL * 1000 },
		{ "gb", 1024LL * 1024 * 1024 },
		{ "g", 1000LL * 1000 * 1000 },
		{ "b", 1 },
	};
	long long mul = 1, v;

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t sl = strlen(units[i].suffix);

		if (len > sl && strncasecmp(p + len - sl, units[i].suffix, sl) == 0) {
			mul = units[i].mul;
			len -= sl;
			break;
		}
	}
	if (!str_to_ll(p, len, &v) || v < 0 || (mul > 1 && v > LLONG_MAX / mul))
		return false;
	*out = v * mul;
	return true;
}

struct obuf_words {
	char *v[64];
	size_t len[64];
	int n;
};

static void add_obuf_word(void *ctx, char *arg, size_t len)
{
	struct obuf_words *a = ctx;

	if (a->n < 64) {
		a->v[a->n] = arg;
		a->len[a->n] = len;
	}
	a->n++;
}

/* client-output-buffer-limit: "<class> <hard> <soft> <seconds>" groups
 * applied over the current limits into out. 0, or -1 with err. */
static int parse_obuf(const char *p, size_t len, long long out[OBUF_CLASSES][3], char *err,
		      size_t errlen)
{
	char *buf = xmalloc(2 * len + 1);
	struct obuf_words a = { .n = 0 };
	int ret = -1;

	memcpy(out, config.obuf_limits, sizeof(config.obuf_limits));
	if (split_args(p, len, buf, add_obuf_word, &a) < 0 || a.n % 4 || a.n > 64) {
		snprintf(err, errlen, "Wrong number of arguments in buffer limit configuration.");
		goto out;
	}
	for (int i = 0; i < a.n; i += 4) {
		int cls;
		long long hard, soft, secs;

		if (str_eq_nocase(a.v[i], a.len[i], "normal"))
			cls = OBUF_NORMAL;
		else if (str_eq_nocase(a.v[i], a.len[i], "slave") ||
			 str_eq_nocase(a.v[i], a.len[i], "replica"))
			cls = OBUF_REPLICA;
		else if (str_eq_nocase(a.v[i], a.len[i], "pubsub"))
			cls = OBUF_PUBSUB;
		else {
			snprintf(err, errlen,
				 "Invalid client class specified in buffer limit configuration.");
			goto out;
		}
		if (!parse_memory(a.v[i + 1], a.len[i + 1], &hard) ||
		    !parse_memory(a.v[i + 2], a.len[i + 2], &soft) ||
		    !str_to_ll(a.v[i + 3], a.len[i + 3], &secs) || secs < 0) {
			snprintf(err, errlen,
				 "Error in hard, soft or soft_seconds setting in buffer "
				 "limit configuration.");
			goto out;
		}
		out[cls][0] = hard;
		out[cls][1] = soft;
		out[cls][2] = secs;
	}
	ret = 0;
out:
	xfree(buf);
	return ret;
}

/* Parses value for d into *num or *str without changing the config. */
static int parse_value(const struct config_def *d, const char *p, size_t len, long long *num,
		       char *err, size_t errlen)
{
	switch (d->type) {
	case CFG_INT:
		if (!str_to_ll(p, len, num)) {
			snprintf(err, errlen, "argument couldn't be parsed into an integer");
			return -1;
		}
		break;
	case CFG_MEMORY:
		if (!parse_memory(p, len, num)) {
			snprintf(err, errlen, "argument must be a memory value");
			return -1;
		}
		break;
	case CFG_OCTAL: {
		char buf[32], *end;

		if (len == 0 || len >= sizeof(buf)) {
			snprintf(err, errlen, "argument couldn't be parsed into an integer");
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		errno = 0;
		*num = strtoll(buf, &end, 8);
		if (*end || errno) {
			snprintf(err, errlen, "argument couldn't be parsed into an integer");
			return -1;
		}
		break;
	}
	case CFG_BOOL:
		if (str_eq_nocase(p, len, "yes")) {
			*num = 1;
		} else if (str_eq_nocase(p, len, "no")) {
			*num = 0;
		} else {
			snprintf(err, errlen, "argument must be 'yes' or 'no'");
			return -1;
		}
		return 0;
	case CFG_ENUM:
		for (long long i = 0; d->names[i]; i++) {
			if (str_eq_nocase(p, len, d->names[i])) {
				*num = i;
				return 0;
			}
		}
		{
			int n = snprintf(err, errlen, "argument(s) must be one of the following: ");

			for (int i = 0; d->names[i] && n < (int)errlen; i++)
				n += snprintf(err + n, errlen - n, "%s%s", i ? ", " : "",
					      d->names[i][0] ? d->names[i] : "\"\"");
		}
		return -1;
	case CFG_STRING:
		return 0;
	case CFG_OBUF: {
		long long limits[OBUF_CLASSES][3];

		return parse_obuf(p, len, limits, err, errlen);
	}
	}
	if (*num < d->min || *num > d->max) {
		snprintf(err, errlen, "argument must be between %lld and %lld inclusive", d->min,
			 d->max);
		return -1;
	}
	return 0;
}

static void store_value(const struct config_def *d, const char *p, size_t len, long long num)
{
	if (d->type == CFG_STRING) {
		char **field = d->field;

		if (*field) {
			pthread_mutex_lock(&retire_lock);
			retired = xrealloc(retired, sizeof(*retired) * (nretired + 1));
			retired[nretired++] = *field;
			pthread_mutex_unlock(&retire_lock);
		}
		*field = xstrndup(p, len);
	} else if (d->type == CFG_OBUF) {
		long long limits[OBUF_CLASSES][3];
		char err[128];

		/* Validated by parse_value(); each number is stored whole. */
		if (parse_obuf(p, len, limits, err, sizeof(err)) == 0)
			for (int i = 0; i < OBUF_CLASSES; i++)
				for (int j = 0; j < 3; j++)
					__atomic_store_n(&config.obuf_limits[i][j], limits[i][j],
							 __ATOMIC_RELAXED);
	} else {
		__atomic_store_n((long long *)d->field, num, __ATOMIC_RELAXED);
	}
}

void config_init(void)
{
	char err[256];

	for (size_t i = 0; i < NDEFS; i++) {
		long long num = 0;

		if (parse_value(&defs[i], defs[i].dflt, strlen(defs[i].dflt), &num, err,
				sizeof(err)) < 0)
			xkv_assert(!"bad default");
		store_value(&defs[i], defs[i].dflt, strlen(defs[i].dflt), num);
	}
}

struct line_args {
	char *v[64];
	size_t len[64];
	int n;
};

static void add_line_arg(void *ctx, char *arg, size_t len)
{
	struct line_args *a = ctx;

	if (a->n < 64) {
		a->v[a->n] = arg;
		a->len[a->n] = len;
	}
	a->n++;
}

static const char *config_path; /* the file being read, for errors */

static void fatal_config(int lineno, const char *line, const char *why)
{
	fprintf(stderr, "\n*** FATAL CONFIG FILE ERROR (xkv) ***\n");
	if (lineno > 0)
		fprintf(stderr, "Reading the configuration file %s, at line %d\n", config_path,
			lineno);
	else
		fprintf(stderr, "Reading the command line\n");
	fprintf(stderr, ">>> '%s'\n%s\n", line, why);
}

/* Applies one "name value" line; lineno 0 for the command line. */
static int load_line(const char *line, int lineno)
{
	size_t len = strlen(line);
	char *buf = xmalloc(2 * len + 1), err[256];
	struct line_args a = { .n = 0 };
	const struct config_def *d;
	long long num = 0;
	int ret = -1;

	if (split_args(line, len, buf, add_line_arg, &a) < 0) {
		fatal_config(lineno, line, "Unbalanced quotes in configuration line");
		goto out;
	}
	if (a.n == 0 || a.v[0][0] == '#') {
		ret = 0;
		goto out;
	}
	d = find_def(a.v[0], a.len[0]);
	if (!d) {
		fatal_config(lineno, line, "Bad directive or wrong number of arguments");
		goto out;
	}
	if (a.n != 2 && !((d->type == CFG_STRING || d->type == CFG_OBUF) && a.n >= 2)) {
		fatal_config(lineno, line, "wrong number of arguments");
		goto out;
	}
	if ((d->type == CFG_STRING || d->type == CFG_OBUF) && a.n > 2) {
		/* Multi-word strings (bind 127.0.0.1 ::1) are kept space-separated. */
		for (int i = 2; i < a.n && i < 64; i++)
			a.v[i][-1] = ' ';
		a.len[1] = (size_t)(a.v[a.n < 64 ? a.n - 1 : 63] + a.len[a.n < 64 ? a.n - 1 : 63] -
				    a.v[1]);
	}
	if (parse_value(d, a.v[1], a.len[1], &num, err, sizeof(err)) < 0) {
		fatal_config(lineno, line, err);
		goto out;
	}
	store_value(d, a.v[1], a.len[1], num);
	ret = 0;
out:
	xfree(buf);
	return ret;
}

int config_load(const char *path, int argc, char **argv)
{
	if (path) {
		FILE *f = fopen(path, "r");
		char line[4096];
		int lineno = 0;

		if (!f) {
			fprintf(stderr, "Fatal error, can't open config file '%s': %s\n", path,
				strerror(errno));
			return -1;
		}
		config.config_file = realpath(path, NULL);
		config_path = path;
		while (fgets(line, sizeof(line), f)) {
			lineno++;
			line[strcspn(line, "\r\n")] = '\0';
			if (load_line(line, lineno) < 0) {
				fclose(f);
				return -1;
			}
		}
		fclose(f);
	}
	/* Command-line options: "--name v1 [v2...]" read as the line "name v1 v2". */
	for (int i = 0; i < argc;) {
		char line[4096];
		int n;

		if (strncmp(argv[i], "--", 2) != 0) {
			fatal_config(0, argv[i], "options must start with --");
			return -1;
		}
		n = snprintf(line, sizeof(line), "%s", argv[i] + 2);
		for (i++; i < argc && strncmp(argv[i], "--", 2) != 0; i++) {
			bool quote = argv[i][0] == '\0' || strpbrk(argv[i], " \t\"'");

			n += snprintf(line + n, sizeof(line) - n, quote ? " \"%s\"" : " %s",
				      argv[i]);
		}
		if (load_line(line, 0) < 0)
			return -1;
	}
	return 0;
}

int config_set_pairs(const char *const *pairs, const size_t *lens, int n, char *err, size_t errlen)
{
	const struct config_def *d[64];
	long long nums[64];
	char why[256];

	if (n > 64) {
		snprintf(err, errlen, "too many parameters");
		return -1;
	}
	/* Validate everything first so the change is all or nothing. */
	for (int i = 0; i < n; i++) {
		d[i] = find_def(pairs[2 * i], lens[2 * i]);
		if (!d[i]) {
			snprintf(err, errlen,
				 "Unknown option or number of arguments for CONFIG SET - '%.*s'",
				 (int)lens[2 * i], pairs[2 * i]);
			return -1;
		}
		for (int j = 0; j < i; j++) {
			if (d[j] == d[i]) {
				snprintf(err, errlen,
					 "CONFIG SET failed (possibly related to argument '%s') - "
					 "duplicate parameter",
					 d[i]->name);
				return -1;
			}
		}
		if (d[i]->flags & CFG_IMMUTABLE) {
			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%s') - can't "
				 "set immutable config",
				 d[i]->name);
			return -1;
		}
		if (parse_value(d[i], pairs[2 * i + 1], lens[2 * i + 1], &nums[i], why,
				sizeof(why)) < 0) {
			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%s') - %s",
				 d[i]->name, why);
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		const char *apply_err = NULL;

		store_value(d[i], pairs[2 * i + 1], lens[2 * i + 1], nums[i]);
		if (d[i]->apply && d[i]->apply(&apply_err) < 0) {
			snprintf(err, errlen,
				 "CONFIG SET failed (possibly related to argument '%s') - %s",
				 d[i]->name, apply_err);
			return -1;
		}
	}
	return 0;
}

void config_get(const char *pattern, size_t len, config_visit_fn *fn, void *ctx)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct config_def *d = &defs[i];
		char buf[256];
		const char *value = buf;

		if (!glob_match(pattern, len, d->name, strlen(d->name), true))
			continue;
		switch (d->type) {
		case CFG_STRING:
			value = *(char **)d->field;
			break;
		case CFG_ENUM:
		case CFG_BOOL:
			value = d->names[*(long long *)d->field];
			break;
		case CFG_OCTAL:
			snprintf(buf, sizeof(buf), "%llo", *(long long *)d->field);
			break;
		case CFG_OBUF:
			snprintf(buf, sizeof(buf),
				 "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld",
				 config.obuf_limits[0][0], config.obuf_limits[0][1],
				 config.obuf_limits[0][2], config.obuf_limits[1][0],
				 config.obuf_limits[1][1], config.obuf_limits[1][2],
				 config.obuf_limits[2][0], config.obuf_limits[2][1],
				 config.obuf_limits[2][2]);
			break;
		default:
			snprintf(buf, sizeof(buf), "%lld", *(long long *)d->field);
			break;
		}
		fn(ctx, d->name, value);
	}
}

void config_free(void)
{
	for (size_t i = 0; i < NDEFS; i++) {
		if (defs[i].type == CFG_STRING) {
			xfree(*(char **)defs[i].field);
			*(char **)defs[i].field = NULL;
		}
	}
	for (size_t i = 0; i < nretired; i++)
		xfree(retired[i]);
	xfree(retired);
	retired = NULL;
	nretired = 0;
	free(config.config_file);
	config.config_file = NULL;
}

/* ---- CONFIG REWRITE ---------------------------------------------------------- */

#define REWRITE_SIGNATURE "# Generated by CONFIG REWRITE"

/* One line of the file being rewritten. def is the directive the line sets,
 * or NULL for comments, blank lines and anything else kept verbatim. */
struct rw_line {
	char *text;
	const struct config_def *def;
	bool done; /* rewritten with the current value */
};

struct rewrite {
	struct rw_line *v;
	size_t n, cap;
	bool has_signature;
};

static void rw_push(struct rewrite *rw, char *text, const struct config_def *d)
{
	if (rw->n == rw->cap) {
		rw->cap = rw->cap ? 2 * rw->cap : 64;
		rw->v = xrealloc(rw->v, rw->cap * sizeof(*rw->v));
	}
	rw->v[rw->n++] = (struct rw_line){ .text = text, .def = d };
}

static void rw_free(struct rewrite *rw)
{
	for (size_t i = 0; i < rw->n; i++)
		xfree(rw->v[i].text);
	xfree(rw->v);
}

/* Which directive a line sets, if any (split as the loader splits it). */
static const struct config_def *line_def(const char *line)
{
	size_t len = strlen(line);
	char *buf = xmalloc(2 * len + 1);
	struct line_args a = { .n = 0 };
	const struct config_def *d = NULL;

	if (split_args(line, len, buf, add_line_arg, &a) > 0)
		d = find_def(a.v[0], a.len[0]);
	xfree(buf);
	return d;
}

/* Reads the old file into lines, trimmed as Redis trims them. A missing file
 * is an empty one: the rewrite then creates it. */
static int rw_read(struct rewrite *rw, const char *path)
{
	FILE *f = fopen(path, "r");
	struct text t = { 0 };
	char chunk[4096];
	size_t n;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		text_printf(&t, "%.*s", (int)n, chunk);
	if (ferror(f)) {
		fclose(f);
		xfree(t.p);
		return -EIO;
	}
	fclose(f);
	/* Every '\n' ends a line, and what follows the last one is a line
	 * too (empty for a file that ends with a newline). */
	for (size_t start = 0; t.len && start <= t.len;) {
		char *nl = memchr(t.p + start, '\n', t.len - start);
		size_t end = nl ? (size_t)(nl - t.p) : t.len, b = start, e = end;
		char *line;

		while (b < e && strchr(" \t\r\n", t.p[b]))
			b++;
		while (e > b && strchr(" \t\r\n", t.p[e - 1]))
			e--;
		line = xstrndup(t.p + b, e - b);
		if (strcmp(line, REWRITE_SIGNATURE) == 0)
			rw->has_signature = true;
		rw_push(rw, line, line[0] == '#' ? NULL : line_def(line));
		start = end + 1;
	}
	xfree(t.p);
	return 0;
}

/* A string as Redis quotes it in a config file. */
static void text_repr(struct text *t, const char *s)
{
	text_printf(t, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		switch (ch) {
		case '\\':
		case '"':
			text_printf(t, "\\%c", ch);
			break;
		case '\n':
			text_printf(t, "\\n");
			break;
		case '\r':
			text_printf(t, "\\r");
			break;
		case '\t':
			text_printf(t, "\\t");
			break;
		case '\a':
			text_printf(t, "\\a");
			break;
		case '\b':
			text_printf(t, "\\b");
			break;
		default:
			if (ch >= 0x20 && ch < 0x7f)
				text_printf(t, "%c", ch);
			else
				text_printf(t, "\\x%02x", ch);
		}
	}
	text_printf(t, "\"");
}

/* Bytes with the largest unit that divides them, as Redis writes memory. */
static void text_memory(struct text *t, long long v)
{
	static const struct {
		long long mul;
		const char *unit;
	} units[] = { { 1LL << 30, "gb" }, { 1LL << 20, "mb" }, { 1LL << 10, "kb" } };

	for (size_t i = 0; v && i < sizeof(units) / sizeof(units[0]); i++) {
		if (v % units[i].mul == 0) {
			text_printf(t, "%lld%s", v / units[i].mul, units[i].unit);
			return;
		}
	}
	text_printf(t, "%lld", v);
}

/* d's value (or, with num/str given, that value) as a config file writes it. */
static void text_value(struct text *t, const struct config_def *d, long long num, const char *str)
{
	switch (d->type) {
	case CFG_STRING:
		if ((d->flags & CFG_WORDS) && str[0])
			text_printf(t, "%s", str);
		else
			text_repr(t, str);
		break;
	case CFG_ENUM:
	case CFG_BOOL:
		if (d->names[num][0])
			text_printf(t, "%s", d->names[num]);
		else
			text_repr(t, "");
		break;
	case CFG_OCTAL:
		text_printf(t, "%llo", num);
		break;
	case CFG_MEMORY:
		if (!(d->flags & CFG_COUNT)) {
			text_memory(t, num);
			break;
		}
		/* fall through */
	default:
		text_printf(t, "%lld", num);
		break;
	}
}

/* Puts "line" in place of the next line of the file that sets d, or appends
 * it when force (it differs from the default). Takes line. */
static void rw_set(struct rewrite *rw, const struct config_def *d, char *line, bool force)
{
	for (size_t i = 0; i < rw->n; i++) {
		if (rw->v[i].def == d && !rw->v[i].done) {
			xfree(rw->v[i].text);
			rw->v[i].text = line;
			rw->v[i].done = true;
			return;
		}
	}
	if (!force) {
		xfree(line);
		return;
	}
	if (!rw->has_signature) {
		rw_push(rw, xstrndup(REWRITE_SIGNATURE, strlen(REWRITE_SIGNATURE)), NULL);
		rw->has_signature = true;
	}
	rw_push(rw, line, d);
	rw->v[rw->n - 1].done = true;
}

/* client-output-buffer-limit: one line per class, each written only if the
 * file has one or the class differs from its default. */
static void rw_obuf(struct rewrite *rw, const struct config_def *d)
{
	/* Redis writes the replica class by its new name, though CONFIG GET says "slave". */
	static const char *const class_names[] = { "normal", "replica", "pubsub" };
	long long dflt[OBUF_CLASSES][3];
	char err[128];

	if (parse_obuf(d->dflt, strlen(d->dflt), dflt, err, sizeof(err)) < 0)
		xkv_assert(!"bad default");
	for (int cls = 0; cls < OBUF_CLASSES; cls++) {
		struct text t = { 0 };
		long long v[3];

		for (int j = 0; j < 3; j++)
			v[j] = __atomic_load_n(&config.obuf_limits[cls][j], __ATOMIC_RELAXED);
		text_printf(&t, "%s %s ", d->name, class_names[cls]);
		text_memory(&t, v[0]);
		text_printf(&t, " ");
		text_memory(&t, v[1]);
		text_printf(&t, " %lld", v[2]);
		rw_set(rw, d, t.p, memcmp(v, dflt[cls], sizeof(v)) != 0);
	}
}

static void rw_directive(struct rewrite *rw, const struct config_def *d)
{
	struct text t = { 0 };
	long long num = 0, dnum = 0;
	const char *str = NULL;
	char err[128], cwd[PATH_MAX];
	bool force;

	if (d->type == CFG_OBUF) {
		rw_obuf(rw, d);
		return;
	}
	if (d->field == &config.dir) {
		/* As Redis: the working directory, absolute, always written. */
		if (!getcwd(cwd, sizeof(cwd)))
			return;
		str = cwd;
		force = true;
	} else if (d->type == CFG_STRING) {
		str = __atomic_load_n((char **)d->field, __ATOMIC_ACQUIRE);
		force = strcmp(str, d->dflt) != 0;
	} else {
		num = __atomic_load_n((long long *)d->field, __ATOMIC_RELAXED);
		if (parse_value(d, d->dflt, strlen(d->dflt), &dnum, err, sizeof(err)) < 0)
			xkv_assert(!"bad default");
		force = num != dnum;
	}
	text_printf(&t, "%s ", d->name);
	text_value(&t, d, num, str);
	rw_set(rw, d, t.p, force);
}

/* Writes content next to path, syncs it, and renames it over path. */
static int rw_write_atomic(const char *path, const char *content, size_t len)
{
	char *tmp, *dir, *slash;
	struct stat st;
	mode_t mode = 0644;
	int fd, dfd, err = 0;
	size_t off = 0;

	if (stat(path, &st) == 0)
		mode = st.st_mode & 07777;
	if (asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, content + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		goto out;
	}
	/* The rename itself is durable once the directory is synced. */
	dir = xstrndup(path, strlen(path));
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	xfree(dir);
out:
	free(tmp);
	return err;
}

int config_rewrite(void)
{
	static pthread_mutex_t rewrite_lock = PTHREAD_MUTEX_INITIALIZER;
	struct rewrite rw = { 0 };
	struct text out = { 0 };
	bool was_empty = false;
	int err;

	if (!config.config_file)
		return -ENOENT;
	/* Two workers rewriting at once would share the temporary file. */
	pthread_mutex_lock(&rewrite_lock);
	err = rw_read(&rw, config.config_file);
	if (err)
		goto out;
	for (size_t i = 0; i < NDEFS; i++)
		rw_directive(&rw, &defs[i]);
	/* Lines of a directive that the value no longer needs (a duplicate of
	 * one set once) are blanked; runs of blank lines become one. */
	for (size_t i = 0; i < rw.n; i++) {
		const char *line = rw.v[i].def && !rw.v[i].done ? "" : rw.v[i].text;

		if (!line[0] && was_empty)
			continue;
		was_empty = !line[0];
		text_printf(&out, "%s\n", line);
	}
	err = rw_write_atomic(config.config_file, out.p ? out.p : "", out.len);
out:
	pthread_mutex_unlock(&rewrite_lock);
	xfree(out.p);
	rw_free(&rw);
	return err;
}

/* ---- docs/configuration.md ---------------------------------------------------- */

static void doc_type(FILE *out, const struct config_def *d)
{
	switch (d->type) {
	case CFG_INT:
		if (d->min > INT_MIN && d->max < INT_MAX)
			fprintf(out, "integer, %lld to %lld", d->min, d->max);
		else if (d->min > INT_MIN)
			fprintf(out, "integer, at least %lld", d->min);
		else
			fprintf(out, "integer");
		break;
	case CFG_MEMORY:
		fprintf(out, (d->flags & CFG_COUNT) ? "count (k/kb/m/mb/g/gb suffixes)"
						    : "bytes (k/kb/m/mb/g/gb suffixes)");
		break;
	case CFG_STRING:
		fprintf(out, (d->flags & CFG_WORDS) ? "list" : "string");
		break;
	case CFG_ENUM:
		fprintf(out, "one of ");
		for (int i = 0; d->names[i]; i++)
			fprintf(out, "%s`%s`", i ? ", " : "",
				d->names[i][0] ? d->names[i] : "\"\"");
		break;
	case CFG_BOOL:
		fprintf(out, "`yes` or `no`");
		break;
	case CFG_OCTAL:
		fprintf(out, "octal, 0 to %llo", d->max);
		break;
	case CFG_OBUF:
		fprintf(out, "`<class> <hard> <soft> <seconds>`...");
		break;
	}
}

void config_doc(FILE *out)
{
	fprintf(out,
		"<!-- Generated by `make docs` (xkvd --config-doc) from the table in "
		"daemon/config.c: do not edit. -->\n"
		"# Configuration\n\n"
		"xkvd reads its directives as redis-server does: from a configuration file named "
		"as the first\nargument (`name value` per line, `#` comments, quoting as in "
		"redis.conf), then from\n`--name value` arguments, which win. `CONFIG GET` reads "
		"them all, `CONFIG SET` changes\nthose marked below, and `CONFIG REWRITE` writes "
		"the current values back into the file,\nkeeping its comments and order.\n\n"
		"| Directive | Type | Default | CONFIG SET | Description |\n"
		"|---|---|---|---|---|\n");
	for (size_t i = 0; i < NDEFS; i++) {
		const struct config_def *d = &defs[i];

		fprintf(out, "| `%s` | ", d->name);
		doc_type(out, d);
		fprintf(out, d->dflt[0] ? " | `%s` | %s | %s |\n" : " | `\"\"`%s | %s | %s |\n",
			d->dflt, (d->flags & CFG_IMMUTABLE) ? "no" : "yes", d->desc);
	}
}
