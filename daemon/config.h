/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config: the server's directives, from a redis.conf-style file, the command
 * line (--name value) and CONFIG GET / SET, all through one table.
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

struct config {
	long long port;
	char *bind;		  /* space-separated addresses */
	long long protected_mode; /* 0 no, 1 yes */
	char *unixsocket;	  /* "" when none */
	long long unixsocketperm; /* 0: as the umask leaves it */
	long long databases;
	long long maxclients;
	long long timeout; /* idle seconds before a client is closed, 0 never */
	long long tcp_keepalive;
	char *requirepass; /* "" when none */
	long long proto_max_bulk_len;
	long long client_query_buffer_limit;
	long long loglevel;
	char *logfile;
	char *pidfile;
	char *dir;
	long long threads; /* 0: one per online CPU */
	long long io_engine;
	long long hz;
	long long maxmemory;	    /* bytes, 0: no limit */
	long long maxmemory_policy; /* enum maxmemory_policy (evict.h) */
	long long maxmemory_samples;
	long long lfu_log_factor;
	long long lfu_decay_time; /* minutes */
	/* Compact encodings of small aggregates, as Redis's directives. */
	long long list_max_listpack_size; /* > 0: entries per node; -1..-5: 4..64 KiB */
	long long hash_max_listpack_entries, hash_max_listpack_value;
	long long set_max_intset_entries, set_max_listpack_entries, set_max_listpack_value;
	long long zset_max_listpack_entries, zset_max_listpack_value;
	long long hll_sparse_max_bytes;
	/* The kernel fast path (fastpath.c). */
	long long fastpath;	   /* 0 no, 1 yes */
	char *fastpath_interfaces; /* space-separated */
	long long fastpath_mode;   /* enum attach_mode: auto, native, generic */
	long long fastpath_slots;
	char *fastpath_allow;	  /* source networks the kernel answers */
	long long fastpath_token; /* required in UDP headers when requirepass is set */
	long long fastpath_admit_threshold;
	long long udp_port;   /* -1: same as port; 0: no UDP */
	long long save;	      /* always 0: "" (no snapshots yet) */
	long long appendonly; /* always 0: "no" (no append-only file yet) */
	char *config_file;    /* absolute path of the file read at start, or NULL */
	/* Diagnostics (slowlog.c, latency.c). */
	long long slowlog_log_slower_than; /* microseconds; -1: off, 0: every command */
	long long slowlog_max_len;
	long long latency_monitor_threshold; /* milliseconds; 0: off */
	/* client-output-buffer-limit: per class, hard bytes, soft bytes, soft
	 * seconds (0: no limit). */
	long long obuf_limits[OBUF_CLASSES][3];
};

extern struct config config;

/* Sets the defaults. */
void config_init(void);
/* Reads the file (if path is not NULL) and then the command-line pairs in
 * argv ("--name" "value"...). On error prints Redis's FATAL CONFIG report to
 * stderr and returns -1. */
int config_load(const char *path, int argc, char **argv);
/* CONFIG SET: pairs[0..2n) of name, value, applied all or nothing. Returns 0,
 * or -1 with *err set to the reply's message. */
int config_set_pairs(const char *const *pairs, const size_t *lens, int n, char *err, size_t errlen);

/* CONFIG GET: calls fn for every directive matching a glob pattern. */
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
