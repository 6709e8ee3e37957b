// SPDX-License-Identifier: BSD-3-Clause
/*
 * Lua scripting as Redis runs it: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and
 * SCRIPT LOAD / EXISTS / FLUSH / HELP, over Lua 5.1 with cjson, bit,
 * cmsgpack and struct.
 *
 * One interpreter serves the whole server, as Redis's one script cache does:
 * a script loaded on one connection runs by its SHA1 on any other. It is
 * guarded by script_lock. A script is atomic with respect to every other
 * command and may call on keys it did not declare, in any database, as in
 * Redis outside cluster mode. Lock order, two ways (docs/architecture.md,
 * "Narrower script locks"): with every shard (the SCRIPT_WHOLE_RUNS runs
 * after one found an undeclared shard taken, EVAL in EXEC), the shards then
 * script_lock; with its declared keys'
 * shards, script_lock first, holding none, then those shards
 * (giving up for a shard holder that waits for script_lock), then any shard
 * a call reaches (call_scope: trylock, abort and rerun, a wait upwards, or
 * an escalation). SCRIPT and FUNCTION take script_lock alone.
 *
 * A script's redis.call runs the command on a stand-in client (its own
 * database, so a SELECT in a script stays in the script, and its own
 * protocol, redis.setresp) through command_call_as(EXEC_IN_EXEC): its
 * effects join EVAL's propagation unit (MULTI ... EXEC around more than one)
 * and nothing blocks. Its reply is parsed back into Lua values.
 *
 * Sandbox. Globals are read through a proxy: reading a missing one and any
 * assignment raise Redis's errors, and the libraries' tables are proxied the
 * same way, read-only. Stock Lua 5.1 has no read-only tables, so rawset on a
 * library proxy is not refused (it only changes the proxy).
 */
#include <ctype.h>
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "acl_users.h"
#include "cluster_route.h"
#include "commands.h"
#include "config.h"
#include "debug.h"
#include "exec_ctx.h"
#include "lazyfree.h"
#include "log.h"
#include "mem.h"
#include "monitor.h"
#include "reply.h"
#include "repl.h"
#include "store.h"
#include "script.h"
#include "util.h"
#include "worker.h"

int luaopen_bit(lua_State *l);

#define SCRIPT_REDIS_VERSION "7.0.15"
#define SCRIPT_REDIS_VERSION_NUM 0x07000f

static const struct {
	const char *name;
	unsigned flag;
} shebang_flags[] = {
	{ "no-writes", SF_NO_WRITES },
	{ "allow-oom", SF_ALLOW_OOM },
	{ "allow-stale", SF_ALLOW_STALE },
	{ "no-cluster", SF_NO_CLUSTER },
	{ "allow-cross-slot-keys", SF_ALLOW_CROSS_SLOT },
};

/* Recursive: a script's redis.call('info') reads the counts under it. */
static pthread_mutex_t script_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static lua_State *lua;		   /* guarded by script_lock; NULL until first use */
static struct script_run *running; /* guarded by script_lock */
static unsigned long nscripts;	   /* in the cache; guarded by script_lock */
static size_t scripts_bytes;	   /* their bodies' bytes; guarded by script_lock */
static uint32_t rand_x[3] = { 0x330E, 0xABCD, 0x1234 }; /* math.random: rand48 */

#define REG_FLAGS "__xkv_script_flags"
#define REG_GLOBALS "__xkv_globals"

/* ---- SHA1 and rand48 ---------------------------------------------------------- */

static void sha1_hex(char out[41], const char *p, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	EVP_Digest(p, len, md, &mdlen, EVP_sha1(), NULL);
	for (unsigned i = 0; i < 20; i++) {
		out[i * 2] = hex[md[i] >> 4];
		out[i * 2 + 1] = hex[md[i] & 15];
	}
	out[40] = '\0';
}

/* The 48-bit linear congruential generator of POSIX rand48, so that
 * math.random's sequence for a seed is the one Redis gives. */
static int32_t rand48_next(void)
{
	uint64_t x = (uint64_t)rand_x[0] | (uint64_t)rand_x[1] << 16 | (uint64_t)rand_x[2] << 32;

	x = (x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
	rand_x[0] = x & 0xffff;
	rand_x[1] = (x >> 16) & 0xffff;
	rand_x[2] = (x >> 32) & 0xffff;
	return (int32_t)(x >> 17);
}

static int lua_math_random(lua_State *l)
{
	lua_Number r = (lua_Number)(rand48_next() % 2147483647) / (lua_Number)2147483647;

	switch (lua_gettop(l)) {
	case 0:
		lua_pushnumber(l, r);
		break;
	case 1: {
		int u = luaL_checkint(l, 1);

		luaL_argcheck(l, 1 <= u, 1, "interval is empty");
		lua_pushnumber(l, floor(r * u) + 1);
		break;
	}
	case 2: {
		int lo = luaL_checkint(l, 1), up = luaL_checkint(l, 2);

		luaL_argcheck(l, lo <= up, 2, "interval is empty");
		lua_pushnumber(l, floor(r * (up - lo + 1)) + lo);
		break;
	}
	default:
		return luaL_error(l, "wrong number of arguments");
	}
	return 1;
}

static int lua_math_randomseed(lua_State *l)
{
	int32_t seed = luaL_checkint(l, 1);

	rand_x[0] = 0x330E;
	rand_x[1] = (uint32_t)seed & 0xffff;
	rand_x[2] = ((uint32_t)seed >> 16) & 0xffff;
	return 0;
}

/* ---- errors -------------------------------------------------------------------- */

/* Pushes Redis's error table {err = "CODE message"}: "-CODE msg" keeps its
 * code, a bare message gets ERR. */
void script_push_error(lua_State *l, const char *e)
{
	char buf[1024];
	size_t n;

	if (e[0] == '-') {
		const char *sp = strchr(e, ' ');

		if (!sp)
			snprintf(buf, sizeof(buf), "ERR %s", e + 1);
		else
			snprintf(buf, sizeof(buf), "%.*s %s", (int)(sp - e - 1), e + 1, sp + 1);
	} else {
		snprintf(buf, sizeof(buf), "ERR %s", e);
	}
	n = strlen(buf);
	while (n && (buf[n - 1] == '\r' || buf[n - 1] == '\n'))
		buf[--n] = '\0';
	lua_newtable(l);
	lua_pushstring(l, "err");
	lua_pushstring(l, buf);
	lua_settable(l, -3);
}

static int raise_error(lua_State *l, const char *e)
{
	script_push_error(l, e);
	return lua_error(l);
}

/* ---- Redis replies to Lua -------------------------------------------------------- */

/* Parses one RESP2/RESP3 reply at p (complete, as a handler wrote it) and
 * pushes its Lua form as Redis converts it; returns the byte after it. */
static const char *push_reply(lua_State *l, const char *p)
{
	const char *eol = strchr(p, '\r');
	char t = *p;
	long long n = 0;

	lua_checkstack(l, 6);
	if (strchr("$*%~=(>|:", t))
		str_to_ll(p + 1, (size_t)(eol - p - 1), &n);
	switch (t) {
	case '+':
	case '-':
		lua_newtable(l);
		lua_pushstring(l, t == '+' ? "ok" : "err");
		lua_pushlstring(l, p + 1, (size_t)(eol - p - 1));
		lua_settable(l, -3);
		return eol + 2;
	case ':':
		lua_pushnumber(l, (lua_Number)n);
		return eol + 2;
	case '$':
		if (n < 0) {
			lua_pushboolean(l, 0);
			return eol + 2;
		}
		lua_pushlstring(l, eol + 2, (size_t)n);
		return eol + 2 + n + 2;
	case '=':
		lua_newtable(l);
		lua_pushstring(l, "verbatim_string");
		lua_newtable(l);
		lua_pushstring(l, "format");
		lua_pushlstring(l, eol + 2, 3);
		lua_settable(l, -3);
		lua_pushstring(l, "string");
		lua_pushlstring(l, eol + 6, n > 4 ? (size_t)n - 4 : 0);
		lua_settable(l, -3);
		lua_settable(l, -3);
		return eol + 2 + n + 2;
	case '_':
		lua_pushnil(l);
		return eol + 2;
	case '#':
		lua_pushboolean(l, p[1] == 't');
		return eol + 2;
	case ',': {
		char buf[64];

		snprintf(buf, sizeof(buf), "%.*s", (int)(eol - p - 1), p + 1);
		lua_newtable(l);
		lua_pushstring(l, "double");
		lua_pushnumber(l, strtod(buf, NULL));
		lua_settable(l, -3);
		return eol + 2;
	}
	case '(':
		lua_newtable(l);
		lua_pushstring(l, "big_number");
		lua_pushlstring(l, p + 1, (size_t)(eol - p - 1));
		lua_settable(l, -3);
		return eol + 2;
	case '|': /* an attribute: dropped, the reply follows */
		p = eol + 2;
		for (long long i = 0; i < 2 * n; i++) {
			p = push_reply(l, p);
			lua_pop(l, 1);
		}
		return push_reply(l, p);
	case '*':
	case '>':
		p = eol + 2;
		if (n < 0) {
			lua_pushboolean(l, 0);
			return p;
		}
		lua_newtable(l);
		for (long long i = 1; i <= n; i++) {
			lua_pushnumber(l, (lua_Number)i);
			p = push_reply(l, p);
			lua_settable(l, -3);
		}
		return p;
	case '%':
	case '~':
		p = eol + 2;
		lua_newtable(l);
		lua_pushstring(l, t == '%' ? "map" : "set");
		lua_newtable(l);
		for (long long i = 0; i < n; i++) {
			p = push_reply(l, p);
			if (t == '%')
				p = push_reply(l, p);
			else
				lua_pushboolean(l, 1);
			if (lua_type(l, -2) == LUA_TNIL)
				lua_pop(l, 2); /* a nil key cannot be stored */
			else
				lua_settable(l, -3);
		}
		lua_settable(l, -3);
		return p;
	}
	lua_pushnil(l);
	return eol ? eol + 2 : p + strlen(p);
}

/* ---- Lua values to Redis replies ------------------------------------------------- */

/* A line of an error or status reply cannot carry CR or LF. */
static void reply_line(struct client *c, char kind, const char *s, size_t len)
{
	char *clean = xstrndup(s, len);

	for (size_t i = 0; i < len; i++)
		if (clean[i] == '\r' || clean[i] == '\n')
			clean[i] = ' ';
	reply_raw(c, &kind, 1);
	reply_raw(c, clean, len);
	reply_raw(c, "\r\n", 2);
	xfree(clean);
}

/* Pushes t[name] of the table at idx without metamethods: an __index that
 * raises would raise outside any protected call (Lua panics; Redis 8.8
 * crashes on it). */
static void raw_field(lua_State *l, int idx, const char *name)
{
	if (idx < 0 && idx > LUA_REGISTRYINDEX)
		idx = lua_gettop(l) + idx + 1;
	lua_pushstring(l, name);
	lua_rawget(l, idx);
}

/* The error table at idx: its message, and whether the error was counted
 * already (the command that replied it counted it). The strings stay valid
 * until the caller pops what this pushes: one value, three with source (a
 * number field is converted on the stack, where the string lives). */
static const char *error_info(lua_State *l, int idx, bool *counted, const char **source,
			      const char **line)
{
	if (idx < 0 && idx > LUA_REGISTRYINDEX)
		idx = lua_gettop(l) + idx + 1;
	raw_field(l, idx, "ignore_error_stats_update");
	*counted = lua_toboolean(l, -1);
	lua_pop(l, 1);
	if (source) {
		raw_field(l, idx, "source");
		*source = lua_isstring(l, -1) ? lua_tostring(l, -1) : NULL;
		raw_field(l, idx, "line");
		*line = lua_isstring(l, -1) ? lua_tostring(l, -1) : NULL;
	}
	raw_field(l, idx, "err");
	return lua_isstring(l, -1) ? lua_tostring(l, -1) : "ERR unknown error";
}

static void reply_error_msg(struct client *c, const char *msg, bool counted)
{
	if (counted) {
		reply_line(c, '-', msg, strlen(msg));
		c->worker->call_failed = true;
	} else {
		size_t n = strlen(msg);
		char *e = xmalloc(n + 2);

		e[0] = '-';
		memcpy(e + 1, msg, n + 1);
		reply_error(c, e);
		xfree(e);
	}
}

static bool field_is(lua_State *l, const char *name, int type)
{
	lua_pushstring(l, name);
	lua_rawget(l, -2);
	if (lua_type(l, -1) == type)
		return true;
	lua_pop(l, 1);
	return false;
}

/* Replies to c with the value at the top of the stack, which it pops; resp
 * is the script's protocol (redis.setresp), which decides booleans. */
static void reply_value(struct client *c, lua_State *l, int resp)
{
	if (!lua_checkstack(l, 4)) {
		reply_error(c, "reached lua stack limit");
		lua_pop(l, 1);
		return;
	}
	switch (lua_type(l, -1)) {
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(l, -1, &len);

		reply_bulk(c, s, len);
		break;
	}
	case LUA_TBOOLEAN:
		if (resp == 2) {
			if (lua_toboolean(l, -1))
				reply_int(c, 1);
			else
				reply_null(c);
		} else {
			reply_bool(c, lua_toboolean(l, -1));
		}
		break;
	case LUA_TNUMBER:
		reply_int(c, (long long)lua_tonumber(l, -1));
		break;
	case LUA_TTABLE: {
		size_t len;
		long n = 0;

		if (field_is(l, "err", LUA_TSTRING)) {
			bool counted;
			const char *msg;

			lua_pop(l, 1);
			msg = error_info(l, -1, &counted, NULL, NULL);
			reply_error_msg(c, msg, counted);
			lua_pop(l, 1);
			break;
		}
		if (field_is(l, "ok", LUA_TSTRING)) {
			const char *s = lua_tolstring(l, -1, &len);

			reply_line(c, '+', s, len);
			lua_pop(l, 1);
			break;
		}
		if (field_is(l, "double", LUA_TNUMBER)) {
			reply_double(c, lua_tonumber(l, -1));
			lua_pop(l, 1);
			break;
		}
		if (field_is(l, "big_number", LUA_TSTRING)) {
			const char *s = lua_tolstring(l, -1, &len);
			/* CR and LF become spaces, as Redis maps them. */
			char *clean = xstrndup(s, len);

			for (size_t i = 0; i < len; i++)
				if (clean[i] == '\r' || clean[i] == '\n')
					clean[i] = ' ';
			if (c->resp == 3)
				reply_line(c, '(', clean, len);
			else
				reply_bulk(c, clean, len);
			xfree(clean);
			lua_pop(l, 1);
			break;
		}
		if (field_is(l, "verbatim_string", LUA_TTABLE)) {
			raw_field(l, -1, "format");
			raw_field(l, -2, "string");
			if (lua_type(l, -2) == LUA_TSTRING && lua_type(l, -1) == LUA_TSTRING) {
				size_t flen;
				const char *f = lua_tolstring(l, -2, &flen);
				const char *s = lua_tolstring(l, -1, &len);

				if (c->resp == 3) {
					char hdr[64];

					snprintf(hdr, sizeof(hdr), "=%zu\r\n%.3s:", len + 4, f);
					reply_raw(c, hdr, strlen(hdr));
					reply_raw(c, s, len);
					reply_raw(c, "\r\n", 2);
				} else {
					reply_bulk(c, s, len);
				}
				lua_pop(l, 4);
				return;
			}
			lua_pop(l, 3);
		}
		if (field_is(l, "map", LUA_TTABLE) || field_is(l, "set", LUA_TTABLE)) {
			bool map;

			lua_pushstring(l, "map");
			lua_rawget(l, -3);
			map = lua_rawequal(l, -1, -2);
			lua_pop(l, 1);
			lua_pushnil(l);
			while (lua_next(l, -2)) {
				lua_pop(l, 1);
				n++;
			}
			if (map)
				reply_map(c, n);
			else
				reply_set(c, n);
			lua_pushnil(l);
			while (lua_next(l, -2)) {
				if (map) {
					lua_pushvalue(l, -2);
					reply_value(c, l, resp);
					reply_value(c, l, resp);
				} else {
					lua_pop(l, 1);
					lua_pushvalue(l, -1);
					reply_value(c, l, resp);
				}
			}
			lua_pop(l, 1);
			break;
		}
		for (;;) {
			lua_rawgeti(l, -1, (int)n + 1);
			if (lua_isnil(l, -1)) {
				lua_pop(l, 1);
				break;
			}
			lua_pop(l, 1);
			n++;
		}
		reply_array(c, n);
		for (long i = 1; i <= n; i++) {
			lua_rawgeti(l, -1, (int)i);
			reply_value(c, l, resp);
		}
		break;
	}
	default:
		reply_null(c);
	}
	lua_pop(l, 1);
}

/* ---- the redis table ---------------------------------------------------------------- */

/* A number as Redis passes it to a command: an integer if it is one. */
static size_t number_arg(lua_Number v, char *buf, size_t size)
{
	if (v == floor(v) && v >= -9.2e18 && v <= 9.2e18)
		return (size_t)snprintf(buf, size, "%lld", (long long)v);
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, (double)v);
		if (strtod(buf, NULL) == (double)v)
			break;
	}
	return strlen(buf);
}

static void free_args(struct arg *argv, int argc)
{
	for (int i = 0; i < argc; i++)
		xfree(argv[i].p);
	xfree(argv);
}

/* The Lua arguments as a command's argv (freed with free_args), popped;
 * NULL after pushing Redis's error table (argc 0, a non-string). */
static struct arg *lua_args(lua_State *l, int *argcp)
{
	int argc = lua_gettop(l), i;
	struct arg *argv;

	*argcp = argc;
	if (argc == 0) {
		script_push_error(l,
				  "Please specify at least one argument for this redis lib call");
		return NULL;
	}
	argv = xmalloc(sizeof(*argv) * (size_t)argc);
	for (i = 0; i < argc; i++) {
		char num[64];
		const char *s;
		size_t len;

		if (lua_type(l, i + 1) == LUA_TNUMBER) {
			len = number_arg(lua_tonumber(l, i + 1), num, sizeof(num));
			s = num;
		} else {
			s = lua_tolstring(l, i + 1, &len);
			if (!s)
				break;
		}
		argv[i].p = xstrndup(s, len);
		argv[i].len = len;
	}
	lua_pop(l, argc);
	if (i != argc) {
		free_args(argv, i);
		script_push_error(l, "Lua redis lib command arguments must be strings or integers");
		return NULL;
	}
	return argv;
}

/* ---- a run's lock scope ------------------------------------------------------------------ */

/* An aborted run's every instruction raises, so that no pcall keeps it
 * going: it ends, unanswered, and runs again with every shard. */
static void abort_hook(lua_State *l, lua_Debug *ar)
{
	(void)ar;
	lua_pushliteral(l, "script rerun with every shard");
	lua_error(l);
}

static int abort_run(lua_State *l, struct script_run *r)
{
	r->aborted = true;
	/* A coroutine has hooks of its own: the script's too. */
	lua_sethook(l, abort_hook, LUA_MASKCOUNT, 1);
	if (r->lua && r->lua != l)
		lua_sethook(r->lua, abort_hook, LUA_MASKCOUNT, 1);
	lua_pushliteral(l, "script rerun with every shard");
	return lua_error(l);
}

/*
 * Before a call of a run with narrower locks (r->held): the shards it needs
 * beyond those held (docs/architecture.md, "Narrower script locks"). Taken
 * at once if free; else, before the run's first effect, -EAGAIN (the run
 * is aborted and redone with every shard: nothing was written, sent or
 * propagated); after it, waited for: plainly when they are all above every
 * held shard (shard waiters only wait upwards, and no holder of some but
 * not all shards waits for the script lock), else as an escalation, which
 * every multi-shard acquirer that could hold them gives up for (store.h).
 */
static int call_scope(struct script_run *r, struct command *cmd, int argc, struct arg *argv)
{
	struct lockset need;

	lockset_init(&need);
	command_add_locks(cmd, &r->proxy, r->proxy.db, argc, argv, &need);
	if (!lockset_covers(r->held, &need) && lockset_try_extend(r->held, &need)) {
		/* Taken: remembered, so that later runs take every shard. */
		r->undeclared = true;
		if (!r->effect)
			return -EAGAIN;
		if (lockset_extend_is_above(r->held, &need)) {
			lockset_extend(r->held, &need);
			return 0;
		}
		store_escalation_begin();
		lockset_extend(r->held, &need);
		store_escalation_end();
		return 0;
	}
	/* The first effect of a run that holds no shard (numkeys 0, a
	 * PUBLISH): a thread with every shard may wait for the script lock,
	 * and the run could not escalate past it. */
	if (!r->effect && !(cmd->flags & CMD_READONLY) && !lockset_count(r->held)) {
		r->undeclared = true;
		return -EAGAIN;
	}
	return 0;
}

/* Runs the command the Lua arguments name for the running script, and
 * pushes its reply; on an error with raise, raises it instead. */
static int redis_call(lua_State *l, bool raise)
{
	struct script_run *r = running;
	const char *err = NULL;
	char cluster_err[256], acl_err[600];
	struct command *cmd;
	struct arg *argv;
	char *reply, *p;
	int argc;

	if (!r)
		return raise_error(
			l, "redis.call/pcall can only be called inside a script invocation");
	if (r->aborted)
		return abort_run(l, r);
	argv = lua_args(l, &argc);
	if (!argv)
		return raise ? lua_error(l) : 1;
	cmd = command_lookup_argv(argc, argv);
	if (!cmd || (cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity)
		err = cmd ? "Wrong number of args calling Redis command from script"
			  : "Unknown Redis command called from script";
	/* The blocking commands run in scripts (never blocking), as in Redis
	 * 8; their rows keep 7.0's noscript for COMMAND INFO. */
	else if ((cmd->flags & CMD_NOSCRIPT) && !(cmd->flags & CMD_BLOCKING) &&
		 !__atomic_load_n(&debug_disable_deny_scripts, __ATOMIC_RELAXED))
		err = "This Redis command is not allowed from script";
	else if (acl_client_restricted(r->caller) &&
		 !acl_check_slow(r->caller, cmd, argc, argv, ACL_CTX_LUA, false)) {
		snprintf(acl_err, sizeof(acl_err), "ACL failure in script: %s", acl_last_deny());
		err = acl_err;
	} else if (r->read_only && (cmd->flags & (CMD_WRITE | CMD_MAY_REPLICATE)))
		err = "Write commands are not allowed from read-only scripts.";
	else if ((cmd->flags & CMD_WRITE) && !r->wrote && !repl_writes_allowed())
		err = "-NOREPLICAS Not enough good replicas to write.";
	else if (r->oom && !r->allow_oom && (cmd->flags & CMD_DENYOOM))
		err = "-OOM command not allowed when used memory > 'maxmemory'.";
	else if (__builtin_expect(config.cluster_enabled, 0) &&
		 !(r->caller->flags & CLIENT_MASTER) &&
		 !cluster_route_script(r->caller, cmd, argc, argv, &r->slot, r->cross_slot_ok,
				       cluster_err, sizeof(cluster_err)))
		err = cluster_err;
	if (!err && r->held && call_scope(r, cmd, argc, argv) < 0) {
		free_args(argv, argc);
		return abort_run(l, r);
	}
	if (err) {
		/* Counted as the command's error, and as its rejected call. */
		reply_error(&r->proxy, err);
		if (cmd)
			command_count_rejected(&r->proxy, cmd);
	} else {
		if (!(cmd->flags & CMD_READONLY))
			r->effect = true;
		/* Written or not, a write command makes the script unkillable. */
		if (cmd->flags & CMD_WRITE) {
			r->wrote = true;
			script_busy_wrote();
		}
		command_call_as(&r->proxy, cmd, argc, argv, EXEC_IN_EXEC | EXEC_SCRIPT);
	}
	free_args(argv, argc);
	reply = p = xmalloc(r->proxy.reply_bytes + 1);
	while (r->proxy.reply_head) {
		struct reply_block *b = r->proxy.reply_head;

		memcpy(p, b->data, b->used);
		p += b->used;
		r->proxy.reply_head = b->next;
		xfree(b);
	}
	*p = '\0';
	r->proxy.reply_tail = NULL;
	r->proxy.reply_bytes = 0;
	if (reply[0]) {
		push_reply(l, reply);
	} else {
		lua_pushboolean(l, 0);
	}
	if (reply[0] == '-') {
		lua_pushstring(l, "ignore_error_stats_update");
		lua_pushboolean(l, 1);
		lua_settable(l, -3);
	}
	raise = raise && reply[0] == '-';
	xfree(reply);
	return raise ? lua_error(l) : 1;
}

static int lua_redis_call(lua_State *l)
{
	return redis_call(l, true);
}

static int lua_redis_pcall(lua_State *l)
{
	return redis_call(l, false);
}

/* Whether the script's caller's user may run the command (no log, no
 * count: Redis's ACLCheckAllUserCommandPerm). */
static int lua_redis_acl_check_cmd(lua_State *l)
{
	struct acl_user *u = running ? running->caller->user : NULL;
	struct command *cmd;
	struct arg *argv;
	int argc, pos;
	bool ok = true;

	if (!running)
		return raise_error(
			l, "redis.acl_check_cmd can only be called inside a script invocation");
	argv = lua_args(l, &argc);
	if (!argv)
		return lua_error(l);
	cmd = command_lookup_argv(argc, argv);
	if (!cmd) {
		free_args(argv, argc);
		script_push_error(l, "Invalid command passed to redis.acl_check_cmd()");
		return lua_error(l);
	}
	if ((cmd->arity > 0 && argc != cmd->arity) || argc < -cmd->arity) {
		free_args(argv, argc);
		script_push_error(l, "Wrong number of args for redis.acl_check_cmd()");
		return lua_error(l);
	}
	if (u && !__atomic_load_n(&u->all, __ATOMIC_RELAXED)) {
		acl_lock_read();
		ok = !u->deleted && acl_user_check_command(u, cmd, argc, argv, &pos) == ACL_OK;
		acl_unlock();
	}
	free_args(argv, argc);
	lua_pushboolean(l, ok);
	return 1;
}

static int lua_redis_sha1hex(lua_State *l)
{
	char hex[41];
	const char *s;
	size_t len;

	if (lua_gettop(l) != 1)
		return raise_error(l, "wrong number of arguments");
	s = lua_tolstring(l, 1, &len);
	sha1_hex(hex, s ? s : "", s ? len : 0);
	lua_pushstring(l, hex);
	return 1;
}

static int lua_redis_error_reply(lua_State *l)
{
	char *e;

	if (lua_gettop(l) != 1 || lua_type(l, -1) != LUA_TSTRING) {
		script_push_error(l, "wrong number or type of arguments");
		return 1;
	}
	e = xmalloc(lua_strlen(l, -1) + 2);
	e[0] = '-';
	strcpy(e + 1, lua_tostring(l, -1) + (lua_tostring(l, -1)[0] == '-'));
	script_push_error(l, e);
	xfree(e);
	return 1;
}

static int lua_redis_status_reply(lua_State *l)
{
	if (lua_gettop(l) != 1 || lua_type(l, -1) != LUA_TSTRING) {
		script_push_error(l, "wrong number or type of arguments");
		return 1;
	}
	lua_newtable(l);
	lua_pushstring(l, "ok");
	lua_pushvalue(l, -3);
	lua_settable(l, -3);
	return 1;
}

static int lua_redis_log(lua_State *l)
{
	int argc = lua_gettop(l), level;
	char buf[4096];
	size_t n = 0;

	if (argc < 2)
		return raise_error(l, "redis.log() requires two arguments or more.");
	if (!lua_isnumber(l, 1))
		return raise_error(l, "First argument must be a number (log level).");
	level = (int)lua_tonumber(l, 1);
	if (level < LOG_DEBUG || level > LOG_WARNING)
		return raise_error(l, "Invalid log level.");
	buf[0] = '\0';
	for (int j = 2; j <= argc; j++) {
		size_t len;
		const char *s = lua_tolstring(l, j, &len);

		if (s && n < sizeof(buf) - 1)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%.*s", j > 2 ? " " : "",
					      (int)len, s);
	}
	log_msg(level, "%s", buf);
	return 0;
}

static int lua_redis_setresp(lua_State *l)
{
	int resp;

	if (!running)
		return raise_error(l,
				   "redis.setresp can only be called inside a script invocation");
	if (lua_gettop(l) != 1)
		return raise_error(l, "redis.setresp() requires one argument.");
	resp = (int)lua_tonumber(l, 1);
	if (resp != 2 && resp != 3)
		return raise_error(l, "RESP version must be 2 or 3.");
	running->proxy.resp = resp;
	return 0;
}

/* REPL_* are accepted; effects always propagate (no consumer distinguishes
 * AOF from replicas yet). */
static int lua_redis_set_repl(lua_State *l)
{
	int flags;

	if (!running)
		return raise_error(l,
				   "redis.set_repl can only be called inside a script invocation");
	if (lua_gettop(l) != 1)
		return raise_error(l, "redis.set_repl() requires one argument.");
	flags = (int)lua_tonumber(l, -1);
	if (flags & ~3)
		return raise_error(l, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, "
				      "REPL_ALL or REPL_NONE.");
	return 0;
}

static int lua_redis_true(lua_State *l)
{
	lua_pushboolean(l, 1);
	return 1;
}

static int lua_redis_nothing(lua_State *l)
{
	return 0;
}

static void open_lib(lua_State *l, const char *name, lua_CFunction fn)
{
	lua_pushcfunction(l, fn);
	lua_pushstring(l, name);
	lua_call(l, 1, 1);
	if (name[0] && lua_istable(l, -1))
		lua_setglobal(l, name);
	else
		lua_pop(l, 1);
}

static void set_fn(lua_State *l, const char *name, lua_CFunction fn)
{
	lua_pushcfunction(l, fn);
	lua_setfield(l, -2, name);
}

static void set_num(lua_State *l, const char *name, lua_Number v)
{
	lua_pushnumber(l, v);
	lua_setfield(l, -2, name);
}

/* The error handler adds where the error happened, as Redis's does. */
static const char err_handler[] =
	"local dbg = debug\n"
	"__redis__err__handler = function(err)\n"
	"  local i = dbg.getinfo(2, 'nSl')\n"
	"  if i and i.what == 'C' then i = dbg.getinfo(3, 'nSl') end\n"
	"  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end\n"
	"  if i then err['source'] = i.source; err['line'] = i.currentline end\n"
	"  return err\n"
	"end\n";

lua_State *script_state_new(void)
{
	static const char *const libs[] = { "redis", "string", "math",	   "table", "cjson",
					    "bit",   "os",     "cmsgpack", "struct" };
	static const char *const removed[] = { "dofile",  "loadfile", "print", "newproxy",
					       "setfenv", "getfenv",  "debug" };
	lua_State *l = luaL_newstate();

	open_lib(l, "", luaopen_base);
	open_lib(l, LUA_TABLIBNAME, luaopen_table);
	open_lib(l, LUA_STRLIBNAME, luaopen_string);
	open_lib(l, LUA_MATHLIBNAME, luaopen_math);
	open_lib(l, LUA_DBLIBNAME, luaopen_debug);
	open_lib(l, LUA_OSLIBNAME, luaopen_os);
	open_lib(l, "cjson", script_cjson_open);
	open_lib(l, "bit", luaopen_bit);
	open_lib(l, "cmsgpack", script_msgpack_open);
	open_lib(l, "struct", script_struct_open);
	/* os keeps only clock, as in Redis 8. */
	lua_getglobal(l, "os");
	lua_getfield(l, -1, "clock");
	lua_newtable(l);
	lua_pushvalue(l, -2);
	lua_setfield(l, -2, "clock");
	lua_setglobal(l, "os");
	lua_pop(l, 2);
	script_sandbox_install(l);
	lua_getglobal(l, "math");
	set_fn(l, "random", lua_math_random);
	set_fn(l, "randomseed", lua_math_randomseed);
	lua_pop(l, 1);

	lua_newtable(l);
	set_fn(l, "call", lua_redis_call);
	set_fn(l, "pcall", lua_redis_pcall);
	set_fn(l, "log", lua_redis_log);
	set_num(l, "LOG_DEBUG", LOG_DEBUG);
	set_num(l, "LOG_VERBOSE", LOG_VERBOSE);
	set_num(l, "LOG_NOTICE", LOG_NOTICE);
	set_num(l, "LOG_WARNING", LOG_WARNING);
	set_fn(l, "sha1hex", lua_redis_sha1hex);
	set_fn(l, "acl_check_cmd", lua_redis_acl_check_cmd);
	set_fn(l, "error_reply", lua_redis_error_reply);
	set_fn(l, "status_reply", lua_redis_status_reply);
	set_fn(l, "setresp", lua_redis_setresp);
	set_fn(l, "set_repl", lua_redis_set_repl);
	set_num(l, "REPL_NONE", 0);
	set_num(l, "REPL_AOF", 1);
	set_num(l, "REPL_SLAVE", 2);
	set_num(l, "REPL_REPLICA", 2);
	set_num(l, "REPL_ALL", 3);
	set_fn(l, "replicate_commands", lua_redis_true);
	set_fn(l, "breakpoint", lua_redis_nothing);
	set_fn(l, "debug", lua_redis_nothing);
	lua_pushstring(l, SCRIPT_REDIS_VERSION);
	lua_setfield(l, -2, "REDIS_VERSION");
	set_num(l, "REDIS_VERSION_NUM", SCRIPT_REDIS_VERSION_NUM);
	lua_setglobal(l, "redis");

	if (luaL_loadbuffer(l, err_handler, sizeof(err_handler) - 1, "@err_handler_def") ||
	    lua_pcall(l, 0, 0, 0))
		xkv_assert(!"the error handler compiles");
	for (size_t i = 0; i < sizeof(removed) / sizeof(*removed); i++) {
		lua_pushnil(l);
		lua_setglobal(l, removed[i]);
	}
	/* Libraries read-only, then the globals themselves. */
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		lua_getglobal(l, libs[i]);
		script_sandbox_readonly(l, false);
		lua_setglobal(l, libs[i]);
	}
	/* Strings' metatable: getmetatable('') gives a read-only proxy. */
	lua_pushliteral(l, "");
	lua_getmetatable(l, -1);
	lua_pushvalue(l, -1);
	script_sandbox_readonly(l, false);
	lua_setfield(l, -2, "__metatable");
	lua_pop(l, 2);
	lua_newtable(l);
	lua_setfield(l, LUA_REGISTRYINDEX, REG_FLAGS);
	lua_pushvalue(l, LUA_GLOBALSINDEX);
	lua_setfield(l, LUA_REGISTRYINDEX, REG_GLOBALS);
	lua_pushvalue(l, LUA_GLOBALSINDEX);
	script_sandbox_readonly(l, true);
	lua_pushvalue(l, -1);
	lua_setglobal(l, "_G"); /* in the real table */
	lua_replace(l, LUA_GLOBALSINDEX);
	return l;
}

/* Under script_lock: the interpreter, made on first use. */
static lua_State *state(void)
{
	if (!lua)
		lua = script_state_new();
	return lua;
}

/* Reads a "#!lua flags=a,b" first line; its length in *skip (kept out of
 * the compiled code but for its line feed). NULL, or the error. */
static const char *shebang(const char *body, size_t len, unsigned *flags, size_t *skip, char *err,
			   size_t errlen)
{
	const char *nl, *p, *end;

	*flags = SF_COMPAT;
	*skip = 0;
	if (len < 2 || memcmp(body, "#!", 2))
		return NULL;
	nl = memchr(body, '\n', len);
	if (!nl)
		return "Invalid script shebang";
	*skip = (size_t)(nl - body);
	*flags = 0;
	p = body;
	end = nl;
	for (int part = 0;; part++) {
		size_t wl;
		const char *w = shebang_word(&p, end, &wl);

		if (!w)
			return part == 0 ? "Invalid engine in script shebang" : NULL;
		if (part == 0) {
			if (wl != 5 || memcmp(w, "#!lua", 5)) {
				snprintf(err, errlen, "Unexpected engine in script shebang: %.*s",
					 (int)wl, w);
				return err;
			}
			continue;
		}
		if (wl < 6 || memcmp(w, "flags=", 6)) {
			snprintf(err, errlen, "Unknown lua shebang option: %.*s", (int)wl, w);
			return err;
		}
		for (const char *f = w + 6; f <= p;) {
			const char *comma = memchr(f, ',', (size_t)(p - f));
			size_t fl = comma ? (size_t)(comma - f) : (size_t)(p - f);
			size_t i;

			if (!fl && !comma)
				break;
			for (i = 0; i < sizeof(shebang_flags) / sizeof(*shebang_flags); i++)
				if (strlen(shebang_flags[i].name) == fl &&
				    !memcmp(shebang_flags[i].name, f, fl))
					break;
			if (i == sizeof(shebang_flags) / sizeof(*shebang_flags)) {
				snprintf(err, errlen, "Unexpected flag in script shebang: %.*s",
					 (int)fl, f);
				return err;
			}
			*flags |= shebang_flags[i].flag;
			if (!comma)
				break;
			f = comma + 1;
		}
	}
}

/* Under script_lock: compiles body into the cache as f_<sha> unless it is
 * there; its SHA1 in sha. False after replying with the error to c. */
static bool script_create(struct client *c, const char *body, size_t len, char sha[41])
{
	lua_State *l = state();
	char fname[43], err[256];
	const char *e;
	unsigned flags;
	size_t skip;

	sha1_hex(sha, body, len);
	snprintf(fname, sizeof(fname), "f_%s", sha);
	lua_getfield(l, LUA_REGISTRYINDEX, fname);
	if (!lua_isnil(l, -1)) {
		lua_pop(l, 1);
		return true;
	}
	lua_pop(l, 1);
	e = shebang(body, len, &flags, &skip, err, sizeof(err));
	if (e) {
		reply_error(c, e);
		return false;
	}
	if (luaL_loadbuffer(l, body + skip, len - skip, "@user_script")) {
		reply_errorf(c, "Error compiling script (new function): %s", lua_tostring(l, -1));
		lua_pop(l, 1);
		return false;
	}
	lua_setfield(l, LUA_REGISTRYINDEX, fname);
	nscripts++;
	scripts_bytes += len + 40;
	/* Only a shebang's flags are kept: most scripts have none, and an
	 * entry each would cost a quarter of a small script's memory. */
	if (flags != SF_COMPAT) {
		lua_getfield(l, LUA_REGISTRYINDEX, REG_FLAGS);
		lua_pushnumber(l, flags);
		lua_setfield(l, -2, sha);
		lua_pop(l, 1);
	}
	script_gc(l);
	return true;
}

/* Sets KEYS to argv[0..nkeys) and ARGV to the rest of argv[0..n), as
 * fresh tables of the real globals (a script may keep or change them), each
 * made at its final size. */
static void set_arrays(lua_State *l, const struct arg *argv, int nkeys, int n)
{
	lua_getfield(l, LUA_REGISTRYINDEX, REG_GLOBALS);
	lua_createtable(l, nkeys, 0);
	for (int i = 0; i < nkeys; i++) {
		lua_pushlstring(l, argv[i].p, argv[i].len);
		lua_rawseti(l, -2, i + 1);
	}
	lua_setfield(l, -2, "KEYS");
	lua_createtable(l, n - nkeys, 0);
	for (int i = nkeys; i < n; i++) {
		lua_pushlstring(l, argv[i].p, argv[i].len);
		lua_rawseti(l, -2, i - nkeys + 1);
	}
	lua_setfield(l, -2, "ARGV");
	lua_pop(l, 1);
}

/* A collection step every 50 runs or loads, as Redis takes: a full cycle
 * left to Lua costs latency. Under the script lock. */
void script_gc(lua_State *l)
{
	static int gc_count;

	if (++gc_count >= 50) {
		lua_gc(l, LUA_GCSTEP, 50);
		gc_count = 0;
	}
}

/* ---- running a script or function ----------------------------------------------------- */

bool script_run_check(struct client *c, struct script_run *run, unsigned flags, bool ro)
{
	const char *e = NULL;

	memset(run, 0, sizeof(*run));
	run->caller = c;
	run->read_only = ro || (flags & SF_NO_WRITES);
	run->allow_oom = flags & SF_ALLOW_OOM;
	run->oom = config.maxmemory && mem_used() > (size_t)config.maxmemory;
	run->slot = config.cluster_enabled ? c->cluster_slot : -1;
	run->cross_slot_ok = (flags & (SF_COMPAT | SF_ALLOW_CROSS_SLOT)) != 0;
	if (!(flags & SF_COMPAT)) {
		if ((flags & SF_NO_CLUSTER) && config.cluster_enabled)
			e = "Can not run script on cluster, 'no-cluster' flag is set.";
		else if (ro && !(flags & SF_NO_WRITES))
			e = "Can not execute a script with write flag using *_ro command.";
		else if (!(flags & SF_NO_WRITES) && !repl_writes_allowed())
			e = "-NOREPLICAS Not enough good replicas to write.";
		else if (run->oom && !(flags & (SF_ALLOW_OOM | SF_NO_WRITES)))
			e = "-OOM allow-oom flag is not set on the script, can not run it when "
			    "used "
			    "memory > 'maxmemory'";
	}
	if (e) {
		reply_error(c, e);
		return false;
	}
	run->proxy.fd = -1;
	run->proxy.flags = CLIENT_SCRIPT;
	run->proxy.worker = c->worker;
	run->proxy.db = c->db;
	run->proxy.resp = 2;
	run->proxy.authenticated = true;
	/* The caller's user, borrowed (the caller holds its reference for the
	 * script's run): CLIENT INFO from a script shows it. */
	run->proxy.user = c->user;
	return true;
}

void script_run_function(lua_State *l, struct client *c, struct script_run *run, int nargs,
			 const char *name)
{
	int failed;

	running = run;
	run->lua = l;
	script_busy_begin(l, run, name);
	failed = lua_pcall(l, nargs, 1, -2 - nargs);
	if (run->aborted) {
		lua_pop(l, 1); /* unanswered: it runs again with every shard */
	} else if (failed) {
		if (!lua_istable(l, -1)) {
			const char *msg =
				lua_isstring(l, -1) ? lua_tostring(l, -1) : "execution failure";

			reply_errorf(c, "Error running script %s, %.100s\n", name, msg);
		} else {
			const char *source, *line, *msg;
			bool counted;
			char *full;
			size_t n;

			msg = error_info(l, -1, &counted, &source, &line);
			n = strlen(msg) + strlen(name) + 128 + (source ? strlen(source) : 0);
			full = xmalloc(n);
			if (source && line)
				snprintf(full, n, "%s script: %s, on %s:%s.", msg, name, source,
					 line);
			else
				snprintf(full, n, "%s", msg);
			reply_error_msg(c, full, counted);
			xfree(full);
			lua_pop(l, 3);
		}
		lua_pop(l, 1);
	} else {
		reply_value(c, l, run->proxy.resp);
	}
	script_busy_end(l);
	running = NULL;
	/* The script's own calls count in its caller's tot-cmds, as in Redis. */
	if (!run->aborted)
		c->commands += run->proxy.commands;
	lua_pop(l, 1);			/* the error handler */
	while (run->proxy.reply_head) { /* nothing should be left; be safe */
		struct reply_block *b = run->proxy.reply_head;

		run->proxy.reply_head = b->next;
		xfree(b);
	}
	script_gc(l);
}

/* Threads that hold shards (every one: EVAL with every shard, FCALL, EXEC
 * with a script, SAVE) and wait for the script lock; atomic. A run taking
 * its declared shards under the script lock gives up for them. */
static int shard_holders_waiting;

bool script_lock_acquire(void)
{
	bool ok;

	if (!pthread_mutex_trylock(&script_lock))
		return true;
	if (!store_locks_held)
		return script_lock_wait(&script_lock);
	__atomic_add_fetch(&shard_holders_waiting, 1, __ATOMIC_SEQ_CST);
	ok = script_lock_wait(&script_lock);
	__atomic_sub_fetch(&shard_holders_waiting, 1, __ATOMIC_SEQ_CST);
	return ok;
}

static bool declared_give_up(void)
{
	return script_busy() || __atomic_load_n(&shard_holders_waiting, __ATOMIC_SEQ_CST);
}

int script_scope_whole(struct client *c, struct lockset *scope)
{
	lockset_add_all(scope);
	if (command_lock_scope(scope) < 0) {
		script_reply_busy(c);
		return -EBUSY;
	}
	/* The final save was taken while this waited: run nothing. */
	if (__builtin_expect(server.shutdown, 0)) {
		c->flags |= CLIENT_CLOSE_ASAP;
		return -ESHUTDOWN;
	}
	return 0;
}

int script_scope_declared(struct client *c, struct lockset *scope, int numkeys)
{
	for (int i = 0; i < numkeys; i++)
		lockset_add_key(scope, c->db, c->argv[3 + i].p, c->argv[3 + i].len);
	if (lockset_acquire_unless(scope, declared_give_up) < 0) {
		lockset_init(scope);
		return -EAGAIN;
	}
	if (__builtin_expect(server.shutdown, 0)) {
		c->flags |= CLIENT_CLOSE_ASAP;
		return -ESHUTDOWN;
	}
	return 0;
}

int script_scope_end(struct script_run *run, struct lockset *scope)
{
	if (!run->aborted)
		return 0;
	lockset_release(scope);
	lockset_init(scope);
	return -EAGAIN;
}

void script_lock_release(void)
{
	pthread_mutex_unlock(&script_lock);
}

unsigned script_flag_named(const char *name)
{
	for (size_t i = 0; i < sizeof(shebang_flags) / sizeof(*shebang_flags); i++)
		if (!strcasecmp(shebang_flags[i].name, name))
			return shebang_flags[i].flag;
	return 0;
}

const char *script_flag_name(unsigned flag)
{
	for (size_t i = 0; i < sizeof(shebang_flags) / sizeof(*shebang_flags); i++)
		if (shebang_flags[i].flag == flag)
			return shebang_flags[i].name;
	return NULL;
}

/* ---- EVAL ---------------------------------------------------------------------------- */

/* Sets how many more runs of the SHA's script take every shard. Under the
 * script lock. */
static void set_whole_runs(lua_State *l, const char *sha, unsigned flags, unsigned runs)
{
	lua_getfield(l, LUA_REGISTRYINDEX, REG_FLAGS);
	lua_pushnumber(l, flags | runs << SF_WHOLE_SHIFT);
	lua_setfield(l, -2, sha);
	lua_pop(l, 1);
}

/*
 * One try at an EVAL. scope: the set command_call holds for it and this
 * fills (NULL when an enclosing holder has every shard: EXEC); whole: take
 * every shard, before the script lock, as any shard holder does; else the
 * script lock first, holding nothing, then the declared keys' shards,
 * giving up for a shard holder that waits for the script lock. -EAGAIN:
 * nothing ran or was answered, try again with whole.
 */
static int eval_once(struct client *c, bool by_sha, bool ro, int numkeys, struct lockset *scope,
		     bool whole)
{
	struct script_run run;
	char sha[41], fname[43];
	unsigned flags, left;
	lua_State *l;

	if (scope && whole && script_scope_whole(c, scope) < 0)
		return 0;
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return 0;
	}
	l = state();
	if (by_sha) {
		size_t n = c->argv[1].len < 40 ? c->argv[1].len : 40;

		for (size_t i = 0; i < n; i++)
			sha[i] = (char)tolower((unsigned char)c->argv[1].p[i]);
		sha[n] = '\0';
	} else if (!script_create(c, c->argv[1].p, c->argv[1].len, sha)) {
		pthread_mutex_unlock(&script_lock);
		return 0;
	}
	fname[0] = 'f';
	fname[1] = '_';
	memcpy(fname + 2, sha, strlen(sha) + 1);
	lua_getglobal(l, "__redis__err__handler");
	lua_getfield(l, LUA_REGISTRYINDEX, fname);
	if (lua_isnil(l, -1)) {
		lua_pop(l, 2);
		pthread_mutex_unlock(&script_lock);
		reply_error(c, "-NOSCRIPT No matching script. Please use EVAL.");
		return 0;
	}
	lua_getfield(l, LUA_REGISTRYINDEX, REG_FLAGS);
	lua_getfield(l, -1, sha);
	flags = lua_isnil(l, -1) ? SF_COMPAT : (unsigned)lua_tonumber(l, -1);
	lua_pop(l, 2);
	left = flags >> SF_WHOLE_SHIFT;
	flags &= SF_MASK;
	if (scope && !whole) {
		int rc = -EAGAIN;

		if (left)
			set_whole_runs(l, sha, flags, left - 1);
		else
			rc = script_scope_declared(c, scope, numkeys);

		if (rc < 0) {
			lua_pop(l, 2);
			pthread_mutex_unlock(&script_lock);
			return rc == -EAGAIN ? -EAGAIN : 0;
		}
	}
	if (!script_run_check(c, &run, flags, ro)) {
		lua_pop(l, 2);
		pthread_mutex_unlock(&script_lock);
		return 0;
	}
	run.eval = true;
	run.held = scope && !whole ? scope : NULL;
	set_arrays(l, c->argv + 3, numkeys, c->argc - 3);
	script_run_function(l, c, &run, 0, sha);
	if (run.undeclared)
		set_whole_runs(l, sha, flags, SCRIPT_WHOLE_RUNS);
	pthread_mutex_unlock(&script_lock);
	return script_scope_end(&run, scope);
}

static void eval_generic(struct client *c, bool by_sha, bool ro)
{
	struct lockset *scope = command_script_locks;
	long long numkeys;

	/* Ours alone: a call this makes takes none of its own. */
	command_script_locks = NULL;
	if (!arg_ll(c, 2, &numkeys))
		return;
	if (numkeys > c->argc - 3) {
		reply_error(c, "Number of keys can't be greater than number of args");
		return;
	}
	if (numkeys < 0) {
		reply_error(c, "Number of keys can't be negative");
		return;
	}
	if (eval_once(c, by_sha, ro, (int)numkeys, scope, false) == -EAGAIN)
		eval_once(c, by_sha, ro, (int)numkeys, scope, true);
}

bool script_declares_no_writes(int argc, const struct arg *argv, bool by_sha)
{
	unsigned flags = SF_COMPAT;
	char sha[41], err[128];
	size_t skip;

	if (argc < 2)
		return false;
	if (!by_sha)
		return !shebang(argv[1].p, argv[1].len, &flags, &skip, err, sizeof(err)) &&
		       (flags & SF_NO_WRITES) && !(flags & SF_COMPAT);
	if (argv[1].len != 40)
		return false;
	for (size_t i = 0; i < 40; i++)
		sha[i] = (char)tolower((unsigned char)argv[1].p[i]);
	sha[40] = '\0';
	pthread_mutex_lock(&script_lock);
	if (lua) {
		lua_getfield(lua, LUA_REGISTRYINDEX, REG_FLAGS);
		lua_getfield(lua, -1, sha);
		if (!lua_isnil(lua, -1))
			flags = (unsigned)lua_tonumber(lua, -1);
		lua_pop(lua, 2);
	}
	pthread_mutex_unlock(&script_lock);
	return (flags & SF_NO_WRITES) && !(flags & SF_COMPAT);
}

void cmd_eval(struct client *c)
{
	monitor_feed_script(c);
	eval_generic(c, false, false);
}

void cmd_evalsha(struct client *c)
{
	monitor_feed_script(c);
	eval_generic(c, true, false);
}

void cmd_eval_ro(struct client *c)
{
	monitor_feed_script(c);
	eval_generic(c, false, true);
}

void cmd_evalsha_ro(struct client *c)
{
	monitor_feed_script(c);
	eval_generic(c, true, true);
}

/* ---- SCRIPT ---------------------------------------------------------------------------- */

void cmd_script_load(struct client *c)
{
	char sha[41];
	bool ok;

	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	ok = script_create(c, c->argv[2].p, c->argv[2].len, sha);
	pthread_mutex_unlock(&script_lock);
	if (ok)
		reply_bulk(c, sha, 40);
}

void cmd_script_exists(struct client *c)
{
	lua_State *l;

	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	l = state();
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		char fname[64];
		size_t n = c->argv[i].len;

		if (n != 40) {
			reply_int(c, 0);
			continue;
		}
		fname[0] = 'f';
		fname[1] = '_';
		for (size_t j = 0; j < n; j++)
			fname[2 + j] = (char)tolower((unsigned char)c->argv[i].p[j]);
		fname[2 + n] = '\0';
		lua_getfield(l, LUA_REGISTRYINDEX, fname);
		reply_int(c, lua_isfunction(l, -1));
		lua_pop(l, 1);
	}
	pthread_mutex_unlock(&script_lock);
}

/* A job of the background pool: the interpreter of a flushed cache. */
static void script_vm_close(void *arg)
{
	lua_close(arg);
}

void cmd_script_flush(struct client *c)
{
	lua_State *old;
	unsigned long n;
	bool lazy;

	if (c->argc > 3 || (c->argc == 3 && !arg_is(c, 2, "sync") && !arg_is(c, 2, "async"))) {
		reply_error(c, "SCRIPT FLUSH only support SYNC|ASYNC option");
		return;
	}
	lazy = c->argc == 3 ? arg_is(c, 2, "async") : config.lazyfree_lazy_user_flush;
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	old = lua;
	n = nscripts;
	lua = NULL;
	nscripts = 0;
	scripts_bytes = 0;
	pthread_mutex_unlock(&script_lock);
	/* As Redis's freeLuaScriptsAsync: a cache of more scripts than the
	 * threshold is closed on the background pool, counted as its scripts.
	 * Detached: no thread can reach the old interpreter any more. */
	if (old && lazy && n > LAZYFREE_THRESHOLD)
		lazyfree_submit(script_vm_close, old, n);
	else if (old)
		lua_close(old);
	reply_ok(c);
}

void cmd_script_help(struct client *c)
{
	static const char *const lines[] = {
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by "
		"the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, lines);
}

void script_memory(long long *vm, long long *scripts, unsigned long *n)
{
	if (!script_lock_acquire()) {
		*vm = *scripts = 0;
		*n = 0;
		return;
	}
	*vm = (long long)lua_gc(state(), LUA_GCCOUNT, 0) * 1024;
	*n = nscripts;
	*scripts = (long long)scripts_bytes;
	pthread_mutex_unlock(&script_lock);
}
