// SPDX-License-Identifier: BSD-3-Clause
/*
 * Long scripts, as Redis handles them: after busy-reply-threshold (alias
 * lua-time-limit) milliseconds a running script or function is "timed out".
 * From then on every other client gets -BUSY but for the ALLOW_BUSY commands
 * (SCRIPT KILL, FUNCTION KILL, FUNCTION STATS, SHUTDOWN NOSAVE, the
 * connection and transaction commands); SCRIPT KILL / FUNCTION KILL stop it
 * unless it wrote (-UNKILLABLE).
 *
 * How. A Lua count hook runs every HOOK_STEP instructions of the script. It
 * notices the threshold, then publishes the busy state (busy_mode) for every
 * worker and, on each later call, gives the script's own worker a turn of its
 * event loop (engine poll_nested: its other clients are answered, the
 * script's client is CLIENT_PROTECTED and its input waits). Clients of other
 * workers do not hang behind the shard locks the script holds: command_call
 * waits for them with lockset_acquire_unless(script_busy), and the script
 * lock's waiters the same way (script_lock_acquire).
 *
 * Lock: run_lock guards cur (the running script's name, start and flags)
 * between the script's thread and KILL / STATS on any worker; it is a leaf,
 * held for a few stores. busy_mode is its published summary, read with one
 * acquire load by every command.
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "log.h"
#include "reply.h"
#include "script.h"
#include "util.h"
#include "worker.h"

/* Redis's step: a hook call costs little next to 100000 instructions. */
#define HOOK_STEP 100000

enum { BUSY_NONE, BUSY_EVAL, BUSY_FUNCTION };

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool active, eval, wrote, killed, timedout;
	int64_t start_ms;
	int64_t time_us; /* Unix time at its start: TIME in the script */
	/* The script's SHA1 or the function's name, owned by its runner and
	 * valid until script_busy_end; read only on the script's thread. */
	const char *run_name;
	/* What FUNCTION STATS shows, copied only once the script is timed out
	 * (busy_hook): a run that ends in time never formats them. */
	char name[128];
	char command[1024]; /* the calling command, its arguments cut short */
	int nargs;
	struct client *caller;
	struct worker *worker;
} cur;		      /* guarded by run_lock; written only by the script's thread */
static int busy_mode; /* BUSY_*; written by the script's thread, release */

bool script_busy(void)
{
	return __atomic_load_n(&busy_mode, __ATOMIC_ACQUIRE) != BUSY_NONE;
}

void script_reply_busy(struct client *c)
{
	if (__atomic_load_n(&busy_mode, __ATOMIC_ACQUIRE) == BUSY_FUNCTION)
		reply_error(c, "-BUSY Redis is busy running a script. You can only call FUNCTION "
			       "KILL or SHUTDOWN NOSAVE.");
	else
		reply_error(c, "-BUSY Redis is busy running a script. You can only call SCRIPT "
			       "KILL or SHUTDOWN NOSAVE.");
}

/* Under run_lock, on the script's thread: the name and the calling command
 * (its arguments cut short) that FUNCTION STATS shows. */
static void record_running(void)
{
	const struct client *c = cur.caller;
	size_t n = 0;

	snprintf(cur.name, sizeof(cur.name), "%s", cur.run_name);
	cur.nargs = 0;
	for (int i = 0; i < c->argc && n < sizeof(cur.command); i++) {
		size_t len = c->argv[i].len;

		if (len > sizeof(cur.command) - 1 - n)
			len = sizeof(cur.command) - 1 - n;
		memcpy(cur.command + n, c->argv[i].p, len);
		n += len;
		cur.command[n++] = '\0';
		cur.nargs++;
	}
}

static void busy_hook(lua_State *l, lua_Debug *ar)
{
	bool kill;

	(void)ar;
	if (!cur.timedout) {
		int64_t elapsed = mono_ms() - cur.start_ms;

		/* A shutdown (SIGTERM) stops a script before it is busy too. */
		if (elapsed < config.busy_reply_threshold && !server.shutdown)
			return;
		log_warning("Slow script detected: still in execution after %lld milliseconds. "
			    "You can try killing the script using the %s command. Script name is: "
			    "%s.",
			    (long long)elapsed, cur.eval ? "SCRIPT KILL" : "FUNCTION KILL",
			    cur.run_name);
		pthread_mutex_lock(&run_lock);
		record_running();
		cur.timedout = true;
		pthread_mutex_unlock(&run_lock);
		/* Its client's input waits until the script is done (the engines
		 * skip it), so it cannot be freed or run another command. */
		cur.caller->flags |= CLIENT_PROTECTED;
		__atomic_store_n(&busy_mode, cur.eval ? BUSY_EVAL : BUSY_FUNCTION,
				 __ATOMIC_RELEASE);
	}
	if (cur.worker && cur.worker->engine->poll_nested)
		cur.worker->engine->poll_nested(cur.worker);
	pthread_mutex_lock(&run_lock);
	kill = cur.killed;
	pthread_mutex_unlock(&run_lock);
	if (kill || server.shutdown) {
		log_notice("Lua script killed by user with SCRIPT KILL.");
		/* On every line from now on: a pcall that caught the error must
		 * not let the script go on. */
		lua_sethook(l, busy_hook, LUA_MASKLINE, 0);
		script_push_error(l, "Script killed by user with SCRIPT KILL...");
		lua_error(l);
	}
}

void script_busy_begin(lua_State *l, struct script_run *run, const char *name)
{
	struct client *c = run->caller;

	/* Only what every run needs: the rest is formatted if it times out. */
	pthread_mutex_lock(&run_lock);
	cur.active = true;
	cur.eval = run->eval;
	cur.wrote = cur.killed = cur.timedout = false;
	cur.start_ms = mono_ms();
	cur.time_us = now_us();
	cur.run_name = name;
	cur.caller = c;
	cur.worker = c->worker;
	pthread_mutex_unlock(&run_lock);
	if (config.busy_reply_threshold > 0)
		lua_sethook(l, busy_hook, LUA_MASKCOUNT, HOOK_STEP);
}

void script_busy_end(lua_State *l)
{
	lua_sethook(l, NULL, 0, 0);
	if (cur.caller)
		cur.caller->flags &= ~CLIENT_PROTECTED;
	__atomic_store_n(&busy_mode, BUSY_NONE, __ATOMIC_RELEASE);
	pthread_mutex_lock(&run_lock);
	cur.active = cur.timedout = cur.wrote = cur.killed = false;
	cur.run_name = NULL;
	cur.caller = NULL;
	cur.worker = NULL;
	pthread_mutex_unlock(&run_lock);
}

int64_t script_time_us(void)
{
	return cur.time_us;
}

void script_busy_wrote(void)
{
	pthread_mutex_lock(&run_lock);
	cur.wrote = true;
	pthread_mutex_unlock(&run_lock);
}

/* Waits for the script lock, giving up once a script turns busy (as
 * lockset_acquire_unless does for the shards). */
bool script_lock_wait(pthread_mutex_t *m)
{
	return mutex_lock_unless(m, script_busy);
}

/* SCRIPT KILL (eval) and FUNCTION KILL: Redis's checks, in its order. */
static void kill_generic(struct client *c, bool eval)
{
	const char *e = NULL;

	pthread_mutex_lock(&run_lock);
	if (!cur.active || !cur.timedout)
		e = "-NOTBUSY No scripts in execution right now.";
	else if (cur.wrote)
		e = "-UNKILLABLE Sorry the script already executed write commands against the "
		    "dataset. You can either wait the script termination or kill the server in a "
		    "hard way using the SHUTDOWN NOSAVE command.";
	else if (eval && !cur.eval)
		e = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
		    "SHUTDOWN NOSAVE.";
	else if (!eval && cur.eval)
		e = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
		    "SHUTDOWN NOSAVE.";
	else
		cur.killed = true;
	pthread_mutex_unlock(&run_lock);
	if (e)
		reply_error(c, e);
	else
		reply_ok(c);
}

void cmd_script_kill(struct client *c)
{
	kill_generic(c, true);
}

void cmd_function_kill(struct client *c)
{
	kill_generic(c, false);
}

bool script_busy_eval(void)
{
	return __atomic_load_n(&busy_mode, __ATOMIC_ACQUIRE) == BUSY_EVAL;
}

void script_reply_running(struct client *c)
{
	const char *p = cur.command;

	pthread_mutex_lock(&run_lock);
	if (!cur.active || !cur.timedout) {
		pthread_mutex_unlock(&run_lock);
		reply_null(c);
		return;
	}
	reply_map(c, 3);
	reply_bulk_cstr(c, "name");
	reply_bulk_cstr(c, cur.name);
	reply_bulk_cstr(c, "command");
	reply_array(c, cur.nargs);
	for (int i = 0; i < cur.nargs; i++) {
		reply_bulk_cstr(c, p);
		p += strlen(p) + 1;
	}
	reply_bulk_cstr(c, "duration_ms");
	reply_int(c, mono_ms() - cur.start_ms);
	pthread_mutex_unlock(&run_lock);
}
