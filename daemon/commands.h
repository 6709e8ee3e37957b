/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * commands: the command table and what handlers share.
 *
 * Every command is described once, as a row of an X-macro list in
 * cmd/<family>.def (all included by commands.def). The rows drive dispatch,
 * arity errors, key extraction (which shards a command locks; COMMAND GETKEYS),
 * and the COMMAND introspection replies. Rows:
 *
 *   COMMAND("get", cmd_get, arity, flags, first_key, last_key, key_step,
 *           "group", "since", "summary")
 *   CONTAINER("client", arity, flags, "group", "since", "summary")
 *   SUBCOMMAND("client", "id", cmd_client_id, arity, flags, first_key,
 *              last_key, key_step, "group", "since", "summary")
 *
 * Names are lower-case string literals (dashes allowed: "no-evict").
 * arity as in Redis: N exactly, -N at least N (the command name counts).
 * last_key -1 means the last argument. first_key, last_key and key_step are
 * the legacy range COMMAND INFO reports; the key specs (command_meta.h) are
 * the truth about a command's keys, and commands_init checks that the two
 * agree.
 *
 * Handlers are `void cmd_x(struct client *)`: they read c->argv and write
 * exactly one reply, and never lock: the dispatcher has locked every shard
 * the command may touch, as its row's lock scope says (command_add_locks):
 *  - by default the shards of the keys its key specs find, in c->db;
 *  - CMD_NO_KEYS_LOCK: none (it touches no key);
 *  - CMD_LOCK_DB: every shard of c->db (KEYS, SCAN, FLUSHDB ...);
 *  - CMD_LOCK_ALL: every shard of the store (FLUSHALL, SWAPDB);
 *  - CMD_KEYS_OTHER_DB: the keys in c->db and in the database an argument
 *    names (MOVE, COPY ... DB);
 *  - CMD_LOCK_QUEUE: the client's watched keys and what its transaction's
 *    queue needs (EXEC);
 *  - CMD_LOCK_WATCHED: the client's watched keys (DISCARD, UNWATCH, RESET).
 */
#ifndef XKV_COMMANDS_H
#define XKV_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "reply.h"
#include "store.h"

enum command_flag {
	CMD_WRITE = 1u << 0,
	CMD_READONLY = 1u << 1,
	CMD_DENYOOM = 1u << 2,
	CMD_ADMIN = 1u << 3,
	CMD_PUBSUB = 1u << 4,
	CMD_NOSCRIPT = 1u << 5,
	CMD_BLOCKING = 1u << 6,
	CMD_LOADING = 1u << 7,
	CMD_STALE = 1u << 8,
	CMD_SKIP_MONITOR = 1u << 9,
	CMD_SKIP_SLOWLOG = 1u << 10,
	CMD_FAST = 1u << 11,
	CMD_NO_AUTH = 1u << 12,
	CMD_ALLOW_BUSY = 1u << 13,
	CMD_NO_MULTI = 1u << 14,
	CMD_MODULE = 1u << 20,		 /* a module's command in Redis (vector sets) */
	CMD_NO_ASYNC_LOADING = 1u << 16, /* SAVE, BGSAVE: shown by COMMAND INFO only */
	/* Not shown by COMMAND INFO (Redis hides it too). */
	CMD_MAY_REPLICATE = 1u << 15,	  /* held by CLIENT PAUSE WRITE (PUBLISH) */
	CMD_NO_MANDATORY_KEYS = 1u << 17, /* may take no key (EVAL with numkeys 0) */
	/* SCAN, RANDOMKEY: their lazy expiry is not one transaction, and
	 * lazyexpire-nested-arbitrary-keys applies. */
	CMD_TOUCHES_ARBITRARY_KEYS = 1u << 18,
	CMD_ASKING = 1u << 19, /* served on an importing node without ASKING */
	/* Internal. */
	CMD_NOT_QUEUED = 1u << 29, /* runs at once inside MULTI (EXEC, DISCARD...) */
	/* The lock scope, beyond the key specs (see above). */
	CMD_LOCK_DB = 1u << 24,
	CMD_LOCK_ALL = 1u << 25,
	CMD_KEYS_OTHER_DB = 1u << 26,
	CMD_LOCK_QUEUE = 1u << 27,
	CMD_LOCK_WATCHED = 1u << 28,
	/* EVAL's family, with CMD_LOCK_ALL: outside a transaction its handler
	 * takes its own locks into command_script_locks (cmd/script.c: the
	 * declared keys' shards when it may, else every shard); in EXEC it runs
	 * under EXEC's, which are every shard. */
	CMD_LOCK_SCRIPT = 1u << 30,
	CMD_NO_KEYS_LOCK = 1u << 31, /* touches no key */
};

/* Keys at fixed positions, from an index+range key spec: first..last every
 * step; last < 0 counts from the end (-1: the last argument). */
struct key_range {
	int16_t first, last, step;
};

#define KEY_RANGES_MAX 3

/* How the dispatcher finds a row's keys, decided once from its key specs. */
enum key_plan {
	KEYS_NONE,  /* no key arguments */
	KEYS_FIXED, /* ranges[0..nranges): as cheap as a fixed key position */
	KEYS_SPECS, /* a walk of the key specs (numkeys, keywords, SORT ... STORE) */
};

struct key_spec;

typedef void command_fn(struct client *c);

struct command {
	const char *name;     /* lower case; a subcommand's is "container|sub" */
	const char *sub_name; /* the part after '|', or the name */
	command_fn *fn;	      /* NULL for containers */
	int arity;
	uint32_t flags;
	int first_key, last_key, key_step;
	const char *group, *since, *summary;
	const struct command_meta *meta; /* ACL categories, tips, key specs; or NULL */
	const struct key_spec *specs;	 /* meta's, or one made from the legacy range */
	bool movable;			 /* COMMAND INFO's movablekeys */
	uint8_t key_plan;		 /* enum key_plan */
	uint8_t nranges;
	struct key_range ranges[KEY_RANGES_MAX];
	struct command *parent;
	struct command **subs; /* containers: NULL-terminated */
	unsigned nsubs;
	/* The row's place in the table, and so in every per-command array:
	 * the statistics live there, per worker, not here, so that a row only
	 * changes before the workers start. */
	unsigned index;
};

/* A command's INFO commandstats counters (each worker's own: worker.h). */
struct command_stats {
	uint64_t calls, usec; /* runs, and the microseconds they took */
	uint64_t rejected;    /* refused before running (arity, auth, context) */
	uint64_t failed;      /* ran, and replied with an error */
};

#define COMMAND(name, fn, ...) command_fn fn;
#define CONTAINER(...)
#define SUBCOMMAND(parent, name, fn, ...) command_fn fn;
#include "commands.def"
#undef COMMAND
#undef CONTAINER
#undef SUBCOMMAND

void commands_init(void);
/* Looks a command or container up by name, any case; NULL if unknown. */
struct command *command_lookup(const char *name, size_t len);
struct lockset;
/* Set by command_call for the handler of a CMD_LOCK_SCRIPT row (the set it
 * must fill and hold; command_call releases it), NULL otherwise. */
extern __thread struct lockset *command_script_locks;
/* Acquires ls for a call, giving up (-EBUSY, nothing held) once a
 * script is busy, and retrying while a script escalates (store.h). */
int command_lock_scope(struct lockset *ls);
/* The row argv names, its subcommand resolved (a container given alone);
 * NULL if unknown (scripts' calls). */
struct command *command_lookup_argv(int argc, const struct arg *argv);
/* Counts a call of cmd refused before it ran (a script's call: arity,
 * noscript, read-only, OOM) in c's worker's commandstats. */
void command_count_rejected(struct client *c, const struct command *cmd);
/* Parses, checks and runs c's current request (argv), replying to it (or
 * queues it inside MULTI). */
void command_dispatch(struct client *c);
/* Runs cmd on c->argv as a command of its own: locks what it needs, fixes
 * the clock (a new execution context), serves the clients its changes feed,
 * and counts it (INFO commandstats, SLOWLOG, LATENCY, MONITOR). */
void command_call(struct client *c, struct command *cmd);
/* Runs cmd with argv for c (its replies go to c) inside the running call,
 * under the locks that call holds, with its clock: EXEC's queued commands
 * (EXEC_IN_EXEC, counted as commands of their own), a blocked client's
 * command run again for it on a stand-in client (EXEC_RETRY, not counted
 * here: blocking.c counts it once answered), and later scripts' calls.
 * c->argv is restored. */
void command_call_as(struct client *c, struct command *cmd, int argc, struct arg *argv,
		     unsigned flags);
/* The running command's count of changes is n more (Redis's server.dirty +=
 * n: LPUSH of 3 elements counts 3, a move 1, a no-op 0): once given, it
 * replaces the default of one per key changed. */
void command_dirty(uint64_t n);
/* Counts an answered call of cmd with argv that ran for duration_us, in
 * c's worker's commandstats, total_commands_processed and c's tot-cmds, and
 * in SLOWLOG and LATENCY; failed: it replied an error. On c's worker. A
 * blocked command is counted when it is answered, with the time its runs
 * took and not its wait, as Redis counts it when it is unblocked. */
void command_count_done(struct client *c, const struct command *cmd, int argc,
			const struct arg *argv, uint64_t duration_us, bool failed);
/* Adds to ls every shard cmd may touch when run with argv in database db,
 * as its lock scope says (see above); c is the client for CMD_LOCK_QUEUE.
 * Returns the database the command leaves the client in (SELECT's). */
int command_add_locks(const struct command *cmd, struct client *c, int db, int argc,
		      const struct arg *argv, struct lockset *ls);
/* Every top-level command, for COMMAND and COMMAND COUNT; NULL-terminated. */
struct command **command_all(void);
/* Rows in the table, subcommands and containers included (index < this). */
size_t command_rows(void);
/* cmd's counters since start or CONFIG RESETSTAT, summed over the workers. */
void command_stats(const struct command *cmd, struct command_stats *out);
/* CONFIG RESETSTAT: every command's counters start again from zero. */
void command_stats_reset(void);
/* The name COMMAND, COMMAND DOCS and INFO commandstats show: a module's
 * command in Redis (CMD_MODULE) is shown as registered, upper case. Valid
 * until this thread's next call. */
const char *command_shown_name(const struct command *cmd);
/* cmd's ACL categories, space-separated ("@read @string @fast"), in Redis's
 * order: its metadata's, or derived from its flags into buf (cmd/server.c). */
const char *command_acl_categories(const struct command *cmd, char *buf, size_t size);
/* True if cmd takes key arguments (COMMAND GETKEYS). */
bool command_has_keys(const struct command *cmd);
/* Fills keys[] with the indexes of argv's key arguments for cmd (at most max),
 * by its key specs, and specs[] (if not NULL) with the spec that found each;
 * returns the count, or -EINVAL if argv does not fit them. */
int command_key_indexes(const struct command *cmd, int argc, const struct arg *argv, int *keys,
			const struct key_spec **specs, int max);

/* May c run a command protected by action (an enum protected_action
 * setting: no, yes, local)? DEBUG's enable-debug-command, in cmd/debug.c. */
bool protected_allowed(long long action, const struct client *c);
bool debug_allowed(const struct client *c);
/* May c run cmd, if it is MODULE LOAD, LOADEX or UNLOAD
 * (enable-module-command)? In cmd/module.c. */
bool module_allowed(const struct client *c, const struct command *cmd);

/* Argument helpers: on failure they reply with Redis's error and return false. */
bool arg_ll(struct client *c, int i, long long *v);
bool arg_is(const struct client *c, int i, const char *word);
/* The entry for key argv[i] in the client's database, or NULL. */
struct entry *key_find(struct client *c, int i);
/* As key_find, counting a keyspace hit or miss. */
struct entry *key_find_read(struct client *c, int i);
/* True if e holds the given type; otherwise replies WRONGTYPE, false. */
bool entry_is(struct client *c, const struct entry *e, int type);

#endif
