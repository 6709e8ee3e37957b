/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config: the server's directives, from a redis.conf-style file, the command
 * line (--name value) and CONFIG GET / SET, all through one table: a row of
 * config.def each (every directive of Redis 8.8, then xkv's own), read by
 * config.c (parsing, GET, SET), config_load.c (start-up) and
 * config_rewrite.c (CONFIG REWRITE, --config-doc). A directive is read as
 * its field here, e.g. config.enable_debug_command (enum protected_action).
 *
 * Threads: fields are written at start-up and by CONFIG SET (on any worker);
 * readers on other threads may see the old or the new value of a numeric
 * field, never a torn one. A replaced string is retired, not freed, until
 * exit, so a reader holding the old pointer stays safe.
 */
#ifndef XKV_CONFIG_H
#define XKV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum io_engine_choice { IO_ENGINE_AUTO, IO_ENGINE_URING, IO_ENGINE_EPOLL };
/* client-output-buffer-limit classes, in Redis's order. */
enum obuf_class { OBUF_NORMAL, OBUF_REPLICA, OBUF_PUBSUB, OBUF_CLASSES };
/* enable-debug-command and its siblings: who may run the command. */
enum protected_action { PROTECTED_ACTION_NO, PROTECTED_ACTION_YES, PROTECTED_ACTION_LOCAL };

/* notify-keyspace-events classes (Redis's bits, so the string form matches). */
enum notify_class {
	NOTIFY_KEYSPACE = 1 << 0,	   /* K */
	NOTIFY_KEYEVENT = 1 << 1,	   /* E */
	NOTIFY_GENERIC = 1 << 2,	   /* g */
	NOTIFY_STRING = 1 << 3,		   /* $ */
	NOTIFY_LIST = 1 << 4,		   /* l */
	NOTIFY_SET = 1 << 5,		   /* s */
	NOTIFY_HASH = 1 << 6,		   /* h */
	NOTIFY_ZSET = 1 << 7,		   /* z */
	NOTIFY_EXPIRED = 1 << 8,	   /* x */
	NOTIFY_EVICTED = 1 << 9,	   /* e */
	NOTIFY_STREAM = 1 << 10,	   /* t */
	NOTIFY_KEY_MISS = 1 << 11,	   /* m: not part of A */
	NOTIFY_MODULE = 1 << 13,	   /* d */
	NOTIFY_NEW = 1 << 14,		   /* n: not part of A */
	NOTIFY_OVERWRITTEN = 1 << 15,	   /* o: not part of A */
	NOTIFY_TYPE_CHANGED = 1 << 16,	   /* c: not part of A */
	NOTIFY_SUBKEYSPACE = 1 << 19,	   /* S */
	NOTIFY_SUBKEYEVENT = 1 << 20,	   /* T */
	NOTIFY_SUBKEYSPACEITEM = 1 << 21,  /* I */
	NOTIFY_SUBKEYSPACEEVENT = 1 << 22, /* V */
	NOTIFY_ARRAY = 1 << 23,		   /* a */
	NOTIFY_ALL = NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH |
		     NOTIFY_ZSET | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE |
		     NOTIFY_ARRAY, /* A */
};

/* One field per row of config.def: long long for numbers, booleans (0/1)
 * and enums (the value of the row's names table), char * for strings (never
 * NULL: "" when unset). The special directives' fields are declared below. */
struct config {
#define CONFIG_BOOL(name, alias, field, ...) long long field;
#define CONFIG_STR(name, alias, field, ...) char *field;
#define CONFIG_ENUM(name, alias, field, ...) long long field;
#define CONFIG_NUM(name, alias, field, ...) long long field;
#define CONFIG_SPECIAL(...)
#include "config.def"
#undef CONFIG_BOOL
#undef CONFIG_STR
#undef CONFIG_ENUM
#undef CONFIG_NUM
#undef CONFIG_SPECIAL
	char *dir;  /* as given; CONFIG GET shows getcwd() */
	char *bind; /* space-separated addresses */
	char *save; /* "seconds changes ..." pairs, "" for none */
	/* client-output-buffer-limit: per class, hard bytes, soft bytes, soft
	 * seconds (0: no limit). */
	long long obuf_limits[OBUF_CLASSES][3];
	char *oom_score_adj_values;		 /* three integers */
	long long notify_keyspace_events;	 /* enum notify_class bits */
	char *replicaof;			 /* "host port", "" for none */
	char *latency_tracking_info_percentiles; /* numbers, space-separated */
	char *config_file; /* absolute path of the file read at start, or NULL */
};

extern struct config config;

/* Whether events of class type (an enum notify_class bit) go out with their
 * subkeys: the class and one of S T I V are on. One load and a test. */
static inline bool config_notify_subkeys(long long type)
{
	long long f = __atomic_load_n(&config.notify_keyspace_events, __ATOMIC_RELAXED);

	return (f & type) && (f & (NOTIFY_SUBKEYSPACE | NOTIFY_SUBKEYEVENT |
				   NOTIFY_SUBKEYSPACEITEM | NOTIFY_SUBKEYSPACEEVENT));
}

/* Sets the defaults. */
void config_init(void);
/* Reads the file (if path is not NULL) and then the command-line pairs in
 * argv ("--name" "value"...). On error prints Redis's FATAL CONFIG report to
 * stderr and returns -1. */
int config_load(const char *path, int argc, char **argv);
/* The end of config_load: what may change at run time only one way is fixed. */
void config_loaded(void);
/* CONFIG SET: pairs[0..2n) of name, value, applied all or nothing. local:
 * the client is on loopback or a Unix socket (enable-protected-configs
 * local). Returns 0, or -1 with *err set to the reply's message. */
int config_set_pairs(const char *const *pairs, const size_t *lens, int n, bool local, char *err,
		     size_t errlen);

/* CONFIG GET: calls fn for every directive (and alias) matching a glob
 * pattern, or the one named exactly (hidden directives match only so).
 * value is valid during the call only. */
typedef void config_visit_fn(void *ctx, const char *name, const char *value);
void config_get(const char *pattern, size_t len, config_visit_fn *fn, void *ctx);

/* CONFIG REWRITE: rewrites the file the server was started with, keeping its
 * comments and order, atomically (temporary file, fsync, rename). 0, or
 * -errno; -ENOENT without a config file. */
int config_rewrite(void);

/* Writes docs/configuration.md's text (xkvd --config-doc). */
void config_doc(FILE *out);

/* Frees what the config owns (at exit). */
void config_free(void);

#endif
