// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "mem.h"
#include "util.h"

struct config config;

enum config_type { CFG_INT, CFG_MEMORY, CFG_STRING, CFG_ENUM, CFG_OBUF };

enum config_flag {
	CFG_IMMUTABLE = 1 << 0, /* start-up only */
	CFG_SENSITIVE = 1 << 1,
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

static int apply_dir(const char **err)
{
	if (chdir(config.dir) < 0) {
		*err = strerror(errno);
		return -1;
	}
	return 0;
}

#define INT(n, f, d, lo, hi, fl)                                                                   \
	{                                                                                          \
		n, CFG_INT, fl, &config.f, d, lo, hi, NULL, NULL                                   \
	}
#define MEM(n, f, d, lo, hi, fl)                                                                   \
	{                                                                                          \
		n, CFG_MEMORY, fl, &config.f, d, lo, hi, NULL, NULL                                \
	}
#define STR(n, f, d, fl, ap)                                                                       \
	{                                                                                          \
		n, CFG_STRING, fl, &config.f, d, 0, 0, NULL, ap                                    \
	}
#define ENUM(n, f, d, names, fl, ap)                                                               \
	{                                                                                          \
		n, CFG_ENUM, fl, &config.f, d, 0, 0, names, ap                                     \
	}

static const struct config_def defs[] = {
	INT("port", port, "6379", 0, 65535, CFG_IMMUTABLE),
	STR("bind", bind, "127.0.0.1", CFG_IMMUTABLE, NULL),
	INT("databases", databases, "16", 1, INT_MAX, CFG_IMMUTABLE),
	INT("maxclients", maxclients, "10000", 1, UINT_MAX, 0),
	INT("timeout", timeout, "0", 0, INT_MAX, 0),
	INT("tcp-keepalive", tcp_keepalive, "300", 0, INT_MAX, 0),
	STR("requirepass", requirepass, "", CFG_SENSITIVE, NULL),
	MEM("proto-max-bulk-len", proto_max_bulk_len, "512mb", 1024 * 1024, LLONG_MAX, 0),
	MEM("client-query-buffer-limit", client_query_buffer_limit, "1gb", 1024 * 1024, LLONG_MAX,
	    0),
	ENUM("loglevel", loglevel, "notice", loglevel_names, 0, apply_loglevel),
	STR("logfile", logfile, "", CFG_IMMUTABLE, NULL),
	STR("pidfile", pidfile, "", CFG_IMMUTABLE, NULL),
	STR("dir", dir, "./", 0, apply_dir),
	INT("threads", threads, "0", 0, 1024, CFG_IMMUTABLE),
	ENUM("io-engine", io_engine, "auto", io_engine_names, CFG_IMMUTABLE, NULL),
	INT("hz", hz, "10", 1, 500, 0),
	MEM("maxmemory", maxmemory, "0", 0, LLONG_MAX, 0),
	ENUM("maxmemory-policy", maxmemory_policy, "noeviction", policy_names, 0, NULL),
	INT("maxmemory-samples", maxmemory_samples, "5", 1, INT_MAX, 0),
	INT("lfu-log-factor", lfu_log_factor, "10", 0, INT_MAX, 0),
	INT("lfu-decay-time", lfu_decay_time, "1", 0, INT_MAX, 0),
	INT("list-max-listpack-size", list_max_listpack_size, "-2", INT_MIN, INT_MAX, 0),
	MEM("hash-max-listpack-entries", hash_max_listpack_entries, "128", 0, LLONG_MAX, 0),
	MEM("hash-max-listpack-value", hash_max_listpack_value, "64", 0, LLONG_MAX, 0),
	MEM("set-max-intset-entries", set_max_intset_entries, "512", 0, LLONG_MAX, 0),
	MEM("set-max-listpack-entries", set_max_listpack_entries, "128", 0, LLONG_MAX, 0),
	MEM("set-max-listpack-value", set_max_listpack_value, "64", 0, LLONG_MAX, 0),
	MEM("zset-max-listpack-entries", zset_max_listpack_entries, "128", 0, LLONG_MAX, 0),
	MEM("zset-max-listpack-value", zset_max_listpack_value, "64", 0, LLONG_MAX, 0),
	ENUM("fastpath", fastpath, "yes", yes_no_names, CFG_IMMUTABLE, NULL),
	STR("fastpath-interfaces", fastpath_interfaces, "lo", CFG_IMMUTABLE, NULL),
	ENUM("fastpath-mode", fastpath_mode, "auto", fastpath_mode_names, CFG_IMMUTABLE, NULL),
	INT("fastpath-slots", fastpath_slots, "65536", 1, 16 * 1024 * 1024, CFG_IMMUTABLE),
	STR("fastpath-allow", fastpath_allow, "127.0.0.0/8 ::1/128", CFG_IMMUTABLE, NULL),
	INT("fastpath-token", fastpath_token, "0", 0, LLONG_MAX, CFG_SENSITIVE),
	INT("fastpath-admit-threshold", fastpath_admit_threshold, "2", 1, 255, 0),
	INT("udp-port", udp_port, "-1", -1, 65535, CFG_IMMUTABLE),
	ENUM("save", save, "", save_names, 0, NULL),
	ENUM("appendonly", appendonly, "no", appendonly_names, 0, NULL),
	INT("slowlog-log-slower-than", slowlog_log_slower_than, "10000", -1, LLONG_MAX, 0),
	INT("slowlog-max-len", slowlog_max_len, "128", 0, LONG_MAX, 0),
	INT("latency-monitor-threshold", latency_monitor_threshold, "0", 0, LLONG_MAX, 0),
	{ "client-output-buffer-limit", CFG_OBUF, 0, &config.obuf_limits,
	  "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60", 0, 0, NULL, NULL },
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
			value = d->names[*(long long *)d->field];
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
