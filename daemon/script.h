/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script: Lua scripting (cmd/script.c: EVAL and SCRIPT, the interpreter and
 * the redis API; cmd/function.c: FUNCTION and FCALL). What they share, and
 * what INFO shows.
 */
#ifndef XKV_SCRIPT_H
#define XKV_SCRIPT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client.h"

struct lua_State;

enum script_flag {
	SF_COMPAT = 1u << 0, /* an EVAL script without shebang: the pre-7 rules */
	SF_NO_WRITES = 1u << 1,
	SF_ALLOW_OOM = 1u << 2,
	SF_ALLOW_STALE = 1u << 3,
	SF_NO_CLUSTER = 1u << 4,
	SF_ALLOW_CROSS_SLOT = 1u << 5,
};

/* A script whose run found the shard of a key it did not declare taken
 * (docs/architecture.md, "Narrower script locks") takes every shard for its
 * next SCRIPT_WHOLE_RUNS runs, then tries its declared keys again: a count
 * kept above its SF_* flags in EVAL's cache (SF_MASK), in a function's
 * entry for FCALL. */
#define SCRIPT_WHOLE_RUNS 64
#define SF_MASK 0xffffu
#define SF_WHOLE_SHIFT 16

struct lockset;

/* A script or function running now (under the script lock), for redis.*. */
struct script_run {
	struct client *caller;
	struct client proxy; /* the stand-in its calls run on */
	bool read_only;	     /* *_RO, or a no-writes script */
	bool allow_oom;
	bool oom;   /* used memory was over maxmemory when it started */
	bool wrote; /* it called a write command */
	bool eval;  /* EVAL's family (not FCALL): which KILL and BUSY text */
	/* Cluster mode: the slot its calls' keys must share (-1 none yet),
	 * unless cross-slot keys are allowed (a shebang flag, or no shebang). */
	int slot;
	bool cross_slot_ok;
	/* Narrower locks (docs/architecture.md): the shards a run of EVAL's
	 * family holds, its declared keys' and those it escalated to, owned by
	 * command_call (which releases them); NULL when an enclosing holder has
	 * every shard (EXEC, a marked script). */
	struct lockset *held;
	bool effect;	       /* a call that is not CMD_READONLY ran */
	bool undeclared;       /* a call found a shard beyond held taken */
	bool aborted;	       /* ... before any effect: unanswered, rerun */
	struct lua_State *lua; /* the state it runs on (its calls may come from a coroutine) */
};

/* The one lock of every interpreter; taken after every shard (FCALL, EVAL
 * with the whole store), before the declared keys' shards (EVAL with
 * narrower locks), or alone (SCRIPT, FUNCTION). */
/* False, without it, once a script is busy (the caller replies BUSY). */
bool script_lock_acquire(void);
void script_lock_release(void);
/*
 * The lock scope of a run of EVAL or FCALL outside a transaction, in the set
 * command_call holds for it (command_script_locks; docs/architecture.md,
 * "Narrower script locks"). script_scope_whole: every shard, before the
 * script lock: 0, or <0 after replying BUSY or closing for a shutdown.
 * script_scope_declared: under the script lock, the shards of c's numkeys
 * declared keys: 0, -EAGAIN (nothing held: run with every shard instead),
 * or -ESHUTDOWN (closing). script_scope_end: after the run, -EAGAIN (its
 * shards released) if it was aborted unanswered, to run with every shard.
 */
int script_scope_whole(struct client *c, struct lockset *scope);
int script_scope_declared(struct client *c, struct lockset *scope, int numkeys);
int script_scope_end(struct script_run *run, struct lockset *scope);
/* A sandboxed interpreter with the redis API. */
struct lua_State *script_state_new(void);
/* Pushes Redis's error table for e ("-CODE msg" or a bare message). */
void script_push_error(struct lua_State *l, const char *e);
/* Prepares run for c with the script's flags; false after replying the
 * error (a write script under *_RO, OOM). */
bool script_run_check(struct client *c, struct script_run *run, unsigned flags, bool ro);
/* Calls the function under nargs arguments on l's stack (the error handler
 * below it), replies to c with its result or error (naming it name), and
 * pops the handler. */
void script_run_function(struct lua_State *l, struct client *c, struct script_run *run, int nargs,
			 const char *name);
/* A collection step now and then (after a run or a load). */
void script_gc(struct lua_State *l);
/* True if the EVAL or EVALSHA of argv (argv[1] the body or the SHA1)
 * declares no-writes; FCALL's counterpart for the function argv[1] names.
 * What CLIENT PAUSE WRITE lets through, as Redis's getCommandFlags; taken
 * with no shard lock held. */
bool script_declares_no_writes(int argc, const struct arg *argv, bool by_sha);
bool function_declares_no_writes(int argc, const struct arg *argv);
/* A shebang flag by name (any case), or 0; and a flag's name. */
unsigned script_flag_named(const char *name);
const char *script_flag_name(unsigned flag);

/* Busy scripts (cmd/script_busy.c). script_busy: a script ran past
 * busy-reply-threshold and still runs (any thread); script_busy_eval: and it
 * is EVAL's. script_reply_busy: Redis's -BUSY for it. */
bool script_busy(void);
bool script_busy_eval(void);
void script_reply_busy(struct client *c);
/* Around a run under the script lock, on its thread: the timeout hook on l,
 * the state KILL and FUNCTION STATS read. */
void script_busy_begin(struct lua_State *l, struct script_run *run, const char *name);
void script_busy_end(struct lua_State *l);
/* The Unix time in microseconds when the running script started: TIME in
 * a script is frozen there, as Redis's cached time (its thread only). */
int64_t script_time_us(void);
/* The running script called a write command: SCRIPT KILL refuses. */
void script_busy_wrote(void);
/* pthread_mutex_lock of m that gives up (false) once a script is busy. */
bool script_lock_wait(pthread_mutex_t *m);
/* FUNCTION STATS's running_script: a map, or null. */
void script_reply_running(struct client *c);

/* The sandbox's guards (cmd/script_sandbox.c): install sets the guarded
 * globals (unpack, setmetatable, rawset, loadstring, next, pairs, ipairs,
 * bit.tohex) and the proxy registry; readonly replaces the table on top of
 * the stack by a read-only proxy of it (strict: reading a missing name
 * raises, as the globals do). */
void script_sandbox_install(struct lua_State *l);
void script_sandbox_readonly(struct lua_State *l, bool strict);

/* The cmsgpack, struct and cjson libraries (script_msgpack.c,
 * script_struct.c, script_cjson.c): lua_CFunctions that push the module
 * table and set its global. */
int script_msgpack_open(struct lua_State *l);
int script_cjson_open(struct lua_State *l);
int script_struct_open(struct lua_State *l);

struct rdb_buf;
/* The libraries as RDB records (RDB_OPCODE_FUNCTION2, code) appended to b,
 * for FUNCTION DUMP and RDB files; -EBUSY if a script is busy. */
int function_dump_body(struct rdb_buf *b);
/* One library read from an RDB file (replace: in place of one of its name):
 * 0, or -EINVAL (logged). */
int function_load_code(const char *code, size_t len, bool replace);
/* Deletes every library (DEBUG RELOAD). */
void function_flush_all(void);

/* For INFO memory: the interpreter's bytes, the cached scripts' bytes and
 * their number; the same for functions. */
void script_memory(long long *vm, long long *scripts, unsigned long *n);
void function_memory(long long *vm, long long *bytes, unsigned long *nfuncs, unsigned long *nlibs);

/* The next word of a shebang line [*p, end) (EVAL's "#!lua flags=..." and a
 * library's "#!lua name=..."): skips spaces, tabs and CRs, sets *len and
 * advances *p past the word; NULL at the end of the line. */
static inline const char *shebang_word(const char **p, const char *end, size_t *len)
{
	const char *w;

	while (*p < end && (**p == ' ' || **p == '\t' || **p == '\r'))
		(*p)++;
	if (*p == end)
		return NULL;
	w = *p;
	while (*p < end && **p != ' ' && **p != '\t' && **p != '\r')
		(*p)++;
	*len = (size_t)(*p - w);
	return w;
}

#endif
