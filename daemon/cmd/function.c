// SPDX-License-Identifier: BSD-3-Clause
/*
 * Redis functions: FUNCTION LOAD / LIST / DELETE / FLUSH / STATS / HELP,
 * FCALL and FCALL_RO, over a Lua interpreter of their own (SCRIPT FLUSH does
 * not touch it), built as EVAL's (script.h) and guarded by the same lock.
 *
 * A library is "#!lua name=<lib>" code; loading runs it with globals that
 * hold only redis.register_function, redis.log and the version constants,
 * as in Redis, and its registered callbacks are kept as registry
 * references. FCALL runs one like EVAL runs a script, with the same lock
 * scope (its declared keys' shards, or every shard: script_scope_*), the
 * callback getting (keys, args).
 *
 * FUNCTION DUMP / RESTORE use Redis's payload: RDB_OPCODE_FUNCTION2 and
 * the library's code per library, the RDB version and a CRC-64; the same
 * records go into RDB files. FUNCTION KILL is in script_busy.c.
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

#include "commands.h"
#include "config.h"
#include "crc64.h"
#include "dict.h"
#include "lazyfree.h"
#include "log.h"
#include "mem.h"
#include "monitor.h"
#include "rdb.h"
#include "reply.h"
#include "script.h"
#include "store.h"
#include "util.h"

struct function {
	struct dict_node node; /* in function_index, by its name in lower case */
	char *name, *desc;     /* desc may be NULL */
	unsigned flags;	       /* SF_* */
	unsigned whole_runs;   /* runs left with every shard (SCRIPT_WHOLE_RUNS) */
	int ref;	       /* the callback, in the registry */
	struct library *lib;
	struct function *next; /* in its library, in registration order */
};

struct library {
	struct dict_node node; /* in library_index, by name */
	char *name, *code;
	struct function *funcs;
	unsigned nfuncs;
	struct library *next;
};

/* All guarded by the script lock. */
static lua_State *flua;		  /* NULL until the first load */
static struct library *libraries; /* newest first */
static struct library *loading;	  /* the library FUNCTION LOAD is filling */
static unsigned long nlibs, nfuncs;
static size_t code_bytes;

/* The linked libraries and their functions by name (FCALL's lookup, and
 * FUNCTION LOAD's checks, stay O(1) with 50,000 libraries). Function names
 * are case-insensitive, hashed in lower case. */
static bool library_name_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct library *li = (const struct library *)n;

	return strlen(li->name) == len && !memcmp(li->name, key, len);
}

static bool function_name_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct function *f = (const struct function *)n;

	return strlen(f->name) == len && !strncasecmp(f->name, key, len);
}

static const struct dict_type library_index_type = { .key_equal = library_name_equal };
static const struct dict_type function_index_type = { .key_equal = function_name_equal };
static struct dict library_index = { .type = &library_index_type };
static struct dict function_index = { .type = &function_index_type };

/* FNV-1a over the name in lower case. */
static uint32_t function_name_hash(const char *name, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		h = (h ^ (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch)) * 16777619u;
	}
	return h;
}

/* Empties both indexes, whose nodes stay their libraries' (a set of
 * libraries taken away whole: FLUSH ASYNC, RESTORE's parse). */
static void indexes_reset(void)
{
	dict_destroy(&library_index);
	dict_destroy(&function_index);
	dict_init(&library_index, &library_index_type);
	dict_init(&function_index, &function_index_type);
}

static bool name_ok(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static struct library *library_find(const char *name)
{
	size_t len = strlen(name);

	return (struct library *)dict_find(&library_index, name, len,
					   (uint32_t)XXH3_64bits(name, len));
}

static struct function *function_find(const char *name, size_t len)
{
	return (struct function *)dict_find(&function_index, name, len,
					    function_name_hash(name, len));
}

/* Frees li; its functions' references are dropped from l's registry (NULL:
 * the interpreter is gone already). */
static void library_free_in(struct library *li, lua_State *l)
{
	while (li->funcs) {
		struct function *f = li->funcs;

		li->funcs = f->next;
		if (l)
			luaL_unref(l, LUA_REGISTRYINDEX, f->ref);
		xfree(f->name);
		xfree(f->desc);
		xfree(f);
	}
	xfree(li->name);
	xfree(li->code);
	xfree(li);
}

static void library_free(struct library *li)
{
	library_free_in(li, flua);
}

static void library_link(struct library *li)
{
	li->next = libraries;
	libraries = li;
	li->node.hash = (uint32_t)XXH3_64bits(li->name, strlen(li->name));
	dict_insert(&library_index, &li->node);
	for (struct function *f = li->funcs; f; f = f->next) {
		f->node.hash = function_name_hash(f->name, strlen(f->name));
		dict_insert(&function_index, &f->node);
	}
	nlibs++;
	nfuncs += li->nfuncs;
	code_bytes += strlen(li->code);
}

static void library_unlink(struct library *li)
{
	for (struct library **p = &libraries; *p; p = &(*p)->next)
		if (*p == li) {
			*p = li->next;
			break;
		}
	dict_remove(&library_index, &li->node);
	for (struct function *f = li->funcs; f; f = f->next)
		dict_remove(&function_index, &f->node);
	dict_maybe_shrink(&library_index);
	dict_maybe_shrink(&function_index);
	nlibs--;
	nfuncs -= li->nfuncs;
	code_bytes -= strlen(li->code);
}

/* ---- redis.register_function ------------------------------------------------------ */

static int register_error(lua_State *l, char *name, char *desc, int ref, const char *e)
{
	xfree(name);
	xfree(desc);
	if (ref != LUA_NOREF)
		luaL_unref(l, LUA_REGISTRYINDEX, ref);
	script_push_error(l, e);
	return lua_error(l);
}

static char *string_arg(lua_State *l, int idx)
{
	size_t len;
	const char *s;

	if (lua_type(l, idx) != LUA_TSTRING)
		return NULL;
	s = lua_tolstring(l, idx, &len);
	return xstrndup(s, len);
}

/* A function name: string_arg, made empty (so invalid) if it holds a NUL. */
static char *name_arg(lua_State *l, int idx)
{
	char *name = string_arg(l, idx);

	if (name && strlen(name) != lua_objlen(l, idx))
		name[0] = '\0';
	return name;
}

static int lua_register_function(lua_State *l)
{
	int argc = lua_gettop(l), ref = LUA_NOREF;
	char *name = NULL, *desc = NULL;
	unsigned flags = 0;
	struct function *f, **tail;

	if (!loading) {
		script_push_error(l, "redis.register_function can only be called on FUNCTION LOAD "
				     "command");
		return lua_error(l);
	}
	if (argc < 1 || argc > 2)
		return register_error(l, NULL, NULL, ref,
				      "wrong number of arguments to redis.register_function");
	if (argc == 2) {
		if (!(name = name_arg(l, 1)))
			return register_error(l, name, desc, ref,
					      "first argument to redis.register_function must be "
					      "a string");
		if (!lua_isfunction(l, 2))
			return register_error(l, name, desc, ref,
					      "second argument to redis.register_function must be "
					      "a function");
		ref = luaL_ref(l, LUA_REGISTRYINDEX);
	} else {
		if (!lua_istable(l, 1))
			return register_error(l, name, desc, ref,
					      "calling redis.register_function with a single "
					      "argument is only applicable to Lua table "
					      "(representing named arguments).");
		lua_pushnil(l);
		while (lua_next(l, 1)) {
			const char *key;

			if (lua_type(l, -2) != LUA_TSTRING)
				return register_error(l, name, desc, ref,
						      "named argument key given to "
						      "redis.register_function is not a string");
			key = lua_tostring(l, -2);
			if (!strcasecmp(key, "function_name")) {
				xfree(name);
				if (!(name = name_arg(l, -1)))
					return register_error(
						l, name, desc, ref,
						"function_name argument given to "
						"redis.register_function must be a string");
			} else if (!strcasecmp(key, "description")) {
				xfree(desc);
				if (!(desc = string_arg(l, -1)))
					return register_error(
						l, name, desc, ref,
						"description argument given to "
						"redis.register_function must be a string");
			} else if (!strcasecmp(key, "callback")) {
				if (!lua_isfunction(l, -1))
					return register_error(
						l, name, desc, ref,
						"callback argument given to "
						"redis.register_function must be a function");
				if (ref != LUA_NOREF)
					luaL_unref(l, LUA_REGISTRYINDEX, ref);
				ref = luaL_ref(l, LUA_REGISTRYINDEX);
				continue; /* luaL_ref popped the value */
			} else if (!strcasecmp(key, "flags")) {
				if (!lua_istable(l, -1))
					return register_error(
						l, name, desc, ref,
						"flags argument to redis.register_function must "
						"be a table representing function flags");
				flags = 0;
				for (int j = 1;; j++) {
					unsigned fl;

					lua_rawgeti(l, -1, j);
					if (lua_isnil(l, -1)) {
						lua_pop(l, 1);
						break;
					}
					fl = lua_type(l, -1) == LUA_TSTRING
						     ? script_flag_named(lua_tostring(l, -1))
						     : 0;
					lua_pop(l, 1);
					if (!fl)
						return register_error(l, name, desc, ref,
								      "unknown flag given");
					flags |= fl;
				}
			} else {
				return register_error(l, name, desc, ref,
						      "unknown argument given to "
						      "redis.register_function");
			}
			lua_pop(l, 1);
		}
		if (!name)
			return register_error(l, name, desc, ref,
					      "redis.register_function must get a function name "
					      "argument");
		if (ref == LUA_NOREF)
			return register_error(l, name, desc, ref,
					      "redis.register_function must get a callback "
					      "argument");
	}
	if (!name_ok(name, strlen(name)))
		return register_error(l, name, desc, ref,
				      "Library names can only contain letters, numbers, or "
				      "underscores(_) and must be at least one character long");
	for (f = loading->funcs; f; f = f->next)
		if (!strcmp(f->name, name))
			return register_error(l, name, desc, ref,
					      "Function already exists in the library");
	f = xmalloc(sizeof(*f));
	*f = (struct function){
		.name = name, .desc = desc, .flags = flags, .ref = ref, .lib = loading
	};
	for (tail = &loading->funcs; *tail; tail = &(*tail)->next)
		;
	*tail = f;
	loading->nfuncs++;
	return 0;
}

static int load_table_readonly(lua_State *l)
{
	script_push_error(l, "Attempt to modify a readonly table");
	return lua_error(l);
}

/* FUNCTION LOAD's run stops after 500 ms, as Redis's (LOAD_TIMEOUT_MS). */
#define LOAD_TIMEOUT_MS 500
static int64_t load_start_ms;

static void load_hook(lua_State *l, lua_Debug *ar)
{
	(void)ar;
	if (mono_ms() - load_start_ms <= LOAD_TIMEOUT_MS)
		return;
	lua_sethook(l, load_hook, LUA_MASKLINE, 0);
	script_push_error(l, "FUNCTION LOAD timeout");
	lua_error(l);
}

/* The globals a library's code sees while it loads (Redis's load API). */
static void push_load_globals(lua_State *l)
{
	lua_getfield(l, LUA_REGISTRYINDEX, "__xkv_load_globals");
	if (!lua_isnil(l, -1))
		return;
	lua_pop(l, 1);
	lua_newtable(l);
	lua_newtable(l); /* redis */
	lua_pushcfunction(l, lua_register_function);
	lua_setfield(l, -2, "register_function");
	lua_getglobal(l, "redis");
	for (const char *const *k =
		     (const char *const[]){ "log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE",
					    "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM",
					    NULL };
	     *k; k++) {
		lua_getfield(l, -1, *k);
		lua_setfield(l, -3, *k);
	}
	lua_pop(l, 1);
	/* Missing names raise, in redis too, as the runtime globals do; redis
	 * takes no new field (a function that kept it as an upvalue). */
	lua_getfield(l, LUA_REGISTRYINDEX, "__xkv_globals");
	lua_getmetatable(l, -1); /* their missing-name error */
	lua_remove(l, -2);
	lua_newtable(l);
	lua_getfield(l, -2, "__index");
	lua_setfield(l, -2, "__index");
	lua_pushcfunction(l, load_table_readonly);
	lua_setfield(l, -2, "__newindex");
	lua_setmetatable(l, -3);
	lua_insert(l, -2);
	lua_setfield(l, -3, "redis");
	lua_setmetatable(l, -2);
	lua_pushvalue(l, -1);
	lua_setfield(l, LUA_REGISTRYINDEX, "__xkv_load_globals");
}

/* Points the globals proxy at the table on the top (popped). */
static void set_globals_view(lua_State *l)
{
	lua_getmetatable(l, LUA_GLOBALSINDEX);
	lua_insert(l, -2);
	lua_setfield(l, -2, "__index");
	lua_pop(l, 1);
}

#define LIBRARY_ERR_MAX 512

/* Under the script lock: creates a library from code and links it (in place
 * of the one of its name with replace); NULL with Redis's message in err
 * (LIBRARY_ERR_MAX bytes). */
static struct library *library_add(const char *code, size_t len, bool replace, char *err)
{
	const char *nl, *p, *end;
	char *name = NULL;
	const char *engine = NULL;
	size_t engine_len = 0;
	struct library *old, *li;
	int status;

	if (len < 2 || memcmp(code, "#!", 2)) {
		snprintf(err, LIBRARY_ERR_MAX, "%s", "Missing library metadata");
		return NULL;
	}
	nl = memchr(code, '\n', len);
	if (!nl) {
		snprintf(err, LIBRARY_ERR_MAX, "%s", "Invalid library metadata");
		return NULL;
	}
	p = code;
	end = nl;
	for (int part = 0;; part++) {
		size_t wl;
		const char *w = shebang_word(&p, end, &wl);

		if (!w) {
			if (part == 0) {
				snprintf(err, LIBRARY_ERR_MAX, "%s", "Invalid library metadata");
				return NULL;
			}
			break;
		}
		if (part == 0) {
			engine = w + 2; /* checked after the name, as Redis does */
			engine_len = wl - 2;
			continue;
		}
		if (wl >= 5 && !strncasecmp(w, "name=", 5)) {
			if (name) {
				xfree(name);
				snprintf(err, LIBRARY_ERR_MAX, "%s",
					 "Invalid metadata value, name argument was given "
					 "multiple times");
				return NULL;
			}
			/* Quotes group as sdssplitargs groups them (no escapes
			 * are taken: a library name cannot hold one). */
			name = xmalloc(wl - 4);
			{
				size_t n = 0;

				for (size_t j = 5; j < wl; j++)
					if (w[j] != '"' && w[j] != '\'')
						name[n++] = w[j];
				name[n] = '\0';
			}
			continue;
		}
		xfree(name);
		snprintf(err, LIBRARY_ERR_MAX, "Invalid metadata value given: %.*s", (int)wl, w);
		return NULL;
	}
	if (!name) {
		snprintf(err, LIBRARY_ERR_MAX, "%s", "Library name was not given");
		return NULL;
	}
	if (!name_ok(name, strlen(name))) {
		xfree(name);
		snprintf(err, LIBRARY_ERR_MAX, "%s",
			 "Library names can only contain letters, numbers, or underscores(_) "
			 "and must be at least one character long");
		return NULL;
	}
	if (engine_len != 3 || strncasecmp(engine, "lua", 3)) {
		snprintf(err, LIBRARY_ERR_MAX, "Engine '%.*s' not found", (int)engine_len, engine);
		xfree(name);
		return NULL;
	}
	old = library_find(name);
	if (old && !replace) {
		snprintf(err, LIBRARY_ERR_MAX, "Library '%s' already exists", name);
		xfree(name);
		return NULL;
	}
	if (!flua)
		flua = script_state_new();
	li = xmalloc(sizeof(*li));
	*li = (struct library){ .name = name, .code = xstrndup(code, len) };
	/* The shebang's line is left out, its line feed kept (line numbers). */
	if (luaL_loadbuffer(flua, nl, len - (size_t)(nl - code), "@user_function")) {
		snprintf(err, LIBRARY_ERR_MAX, "Error compiling function: %s",
			 lua_tostring(flua, -1));
		lua_pop(flua, 1);
		library_free(li);
		return NULL;
	}
	push_load_globals(flua);
	set_globals_view(flua);
	loading = li;
	load_start_ms = mono_ms();
	lua_sethook(flua, load_hook, LUA_MASKCOUNT, 100000);
	status = lua_pcall(flua, 0, 0, 0);
	lua_sethook(flua, NULL, 0, 0);
	loading = NULL;
	lua_getfield(flua, LUA_REGISTRYINDEX, "__xkv_globals");
	set_globals_view(flua);
	if (status) {
		const char *msg = "ERR unknown error";

		if (lua_isstring(flua, -1)) {
			snprintf(err, LIBRARY_ERR_MAX, "Error registering functions: ERR %s",
				 lua_tostring(flua, -1));
		} else {
			if (lua_istable(flua, -1)) {
				/* Raw: a raising __index would panic here. */
				lua_pushliteral(flua, "err");
				lua_rawget(flua, -2);
				if (lua_isstring(flua, -1))
					msg = lua_tostring(flua, -1);
				snprintf(err, LIBRARY_ERR_MAX, "Error registering functions: %s",
					 msg);
				lua_pop(flua, 1);
			} else {
				snprintf(err, LIBRARY_ERR_MAX, "Error registering functions: %s",
					 msg);
			}
		}
		lua_pop(flua, 1);
		library_free(li);
		return NULL;
	}
	if (!li->nfuncs) {
		library_free(li);
		snprintf(err, LIBRARY_ERR_MAX, "%s", "No functions registered");
		return NULL;
	}
	if (old)
		library_unlink(old);
	for (struct function *f = li->funcs; f; f = f->next)
		if (function_find(f->name, strlen(f->name))) {
			snprintf(err, LIBRARY_ERR_MAX, "Function %s already exists", f->name);
			if (old)
				library_link(old);
			library_free(li);
			return NULL;
		}
	library_link(li);
	if (old)
		library_free(old);
	script_gc(flua);
	return li;
}

/* ---- FUNCTION ---------------------------------------------------------------------- */

void cmd_function_load(struct client *c)
{
	char err[LIBRARY_ERR_MAX];
	struct library *li;
	bool replace = false;
	int i = 2;

	for (; i < c->argc - 1; i++) {
		if (!arg_is(c, i, "replace")) {
			reply_errorf(c, "Unknown option given: %s", c->argv[i].p);
			return;
		}
		replace = true;
	}
	if (i >= c->argc) {
		reply_error(c, "Function code is missing");
		return;
	}
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	li = library_add(c->argv[i].p, c->argv[i].len, replace, err);
	/* The functions are data, counted as Redis counts them: one change. */
	if (li)
		command_dirty(1);
	if (li)
		reply_bulk_cstr(c, li->name);
	else
		reply_error(c, err);
	script_lock_release();
}

void cmd_function_delete(struct client *c)
{
	struct library *li;
	char *name;

	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	name = xstrndup(c->argv[2].p, c->argv[2].len);
	li = library_find(name);
	if (li) {
		library_unlink(li);
		library_free(li);
	}
	script_lock_release();
	xfree(name);
	if (li) {
		command_dirty(1);
		reply_ok(c);
	} else {
		reply_error(c, "Library not found");
	}
}

static void functions_flush(void)
{
	while (libraries) {
		struct library *li = libraries;

		library_unlink(li);
		library_free(li);
	}
	if (flua)
		lua_close(flua);
	flua = NULL;
}

/* The libraries and interpreter of a FUNCTION FLUSH ASYNC, detached. */
struct flushed_functions {
	struct library *libraries;
	lua_State *lua;
};

/* A job of the background pool. The interpreter goes first, whole, so the
 * functions' references need no unref (flua is another interpreter's by
 * now). */
static void flushed_functions_free(void *arg)
{
	struct flushed_functions *ff = arg;

	lua_close(ff->lua);
	while (ff->libraries) {
		struct library *li = ff->libraries;

		ff->libraries = li->next;
		library_free_in(li, NULL);
	}
	xfree(ff);
}

void cmd_function_flush(struct client *c)
{
	bool lazy;

	if (c->argc > 3) {
		reply_errorf(c,
			     "unknown subcommand or wrong number of arguments for '%.128s'. Try "
			     "FUNCTION HELP.",
			     c->argv[1].p);
		return;
	}
	if (c->argc == 3 && !arg_is(c, 2, "sync") && !arg_is(c, 2, "async")) {
		reply_error(c, "FUNCTION FLUSH only supports SYNC|ASYNC option");
		return;
	}
	lazy = c->argc == 3 ? arg_is(c, 2, "async") : config.lazyfree_lazy_user_flush;
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	/* As Redis's freeFunctionsAsync: more functions than the threshold are
	 * freed on the background pool, counted as the functions and the one
	 * engine. */
	if (lazy && flua && nfuncs > LAZYFREE_THRESHOLD) {
		struct flushed_functions *ff = xmalloc(sizeof(*ff));
		uint64_t n = nfuncs + 1;

		ff->libraries = libraries;
		ff->lua = flua;
		libraries = NULL;
		indexes_reset();
		flua = NULL;
		nlibs = nfuncs = 0;
		code_bytes = 0;
		lazyfree_submit(flushed_functions_free, ff, n);
	} else {
		functions_flush();
	}
	script_lock_release();
	command_dirty(1);
	reply_ok(c);
}

static void reply_flags(struct client *c, unsigned flags)
{
	long n = 0;

	for (unsigned b = SF_NO_WRITES; b <= SF_ALLOW_CROSS_SLOT; b <<= 1)
		n += !!(flags & b);
	reply_set(c, n);
	for (unsigned b = SF_NO_WRITES; b <= SF_ALLOW_CROSS_SLOT; b <<= 1)
		if (flags & b)
			reply_status(c, script_flag_name(b));
}

void cmd_function_list(struct client *c)
{
	const char *pattern = NULL;
	size_t plen = 0;
	bool code = false;
	long n = 0;

	for (int i = 2; i < c->argc; i++) {
		if (!code && arg_is(c, i, "withcode")) {
			code = true;
			continue;
		}
		if (!pattern && arg_is(c, i, "libraryname")) {
			if (i >= c->argc - 1) {
				reply_error(c, "library name argument was not given");
				return;
			}
			i++;
			pattern = c->argv[i].p;
			plen = c->argv[i].len;
			continue;
		}
		reply_errorf(c, "Unknown argument %s", c->argv[i].p);
		return;
	}
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	for (struct library *li = libraries; li; li = li->next)
		n += !pattern || glob_match(pattern, plen, li->name, strlen(li->name), true);
	reply_array(c, n);
	for (struct library *li = libraries; li; li = li->next) {
		if (pattern && !glob_match(pattern, plen, li->name, strlen(li->name), true))
			continue;
		reply_map(c, code ? 4 : 3);
		reply_bulk_cstr(c, "library_name");
		reply_bulk_cstr(c, li->name);
		reply_bulk_cstr(c, "engine");
		reply_bulk_cstr(c, "LUA");
		reply_bulk_cstr(c, "functions");
		reply_array(c, li->nfuncs);
		for (struct function *f = li->funcs; f; f = f->next) {
			reply_map(c, 3);
			reply_bulk_cstr(c, "name");
			reply_bulk_cstr(c, f->name);
			reply_bulk_cstr(c, "description");
			if (f->desc)
				reply_bulk_cstr(c, f->desc);
			else
				reply_null(c);
			reply_bulk_cstr(c, "flags");
			reply_flags(c, f->flags);
		}
		if (code) {
			reply_bulk_cstr(c, "library_code");
			reply_bulk_cstr(c, li->code);
		}
	}
	script_lock_release();
}

void cmd_function_stats(struct client *c)
{
	unsigned long libs, funcs;

	if (script_busy_eval()) {
		script_reply_busy(c);
		return;
	}
	/* During a busy function its thread holds the script lock: the counts
	 * are read without it then (the function cannot change them). */
	if (script_lock_acquire()) {
		libs = nlibs;
		funcs = nfuncs;
		script_lock_release();
	} else {
		libs = __atomic_load_n(&nlibs, __ATOMIC_RELAXED);
		funcs = __atomic_load_n(&nfuncs, __ATOMIC_RELAXED);
	}
	reply_map(c, 2);
	reply_bulk_cstr(c, "running_script");
	script_reply_running(c);
	reply_bulk_cstr(c, "engines");
	reply_map(c, 1);
	reply_bulk_cstr(c, "LUA");
	reply_map(c, 2);
	reply_bulk_cstr(c, "libraries_count");
	reply_int(c, (long long)libs);
	reply_bulk_cstr(c, "functions_count");
	reply_int(c, (long long)funcs);
}

void cmd_function_help(struct client *c)
{
	static const char *const lines[] = {
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using "
		"LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by "
		"the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be "
		"restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to "
		"give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On "
		"collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On "
		"collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is "
		"a chance of failure",
		"      in case of functions name collision with another library).",
		"HELP",
		"    Prints this help.",
		NULL,
	};

	reply_help(c, lines);
}

/* ---- FUNCTION DUMP / RESTORE, and the RDB file ---------------------------------- */

#define RDB_OPCODE_FUNCTION_PRE_GA 246
#define RDB_OPCODE_FUNCTION2 245

int function_dump_body(struct rdb_buf *b)
{
	struct library **all;
	uint8_t t = RDB_OPCODE_FUNCTION2;
	unsigned long n = 0;

	if (!script_lock_acquire())
		return -EBUSY;
	/* Oldest first, so that loading (which prepends) keeps the order. */
	all = xmalloc(sizeof(*all) * (nlibs + 1));
	for (struct library *li = libraries; li; li = li->next)
		all[n++] = li;
	while (n--) {
		rdb_buf_put(b, &t, 1);
		rdb_save_string(b, all[n]->code, strlen(all[n]->code), config.rdbcompression);
	}
	xfree(all);
	script_lock_release();
	return 0;
}

void function_flush_all(void)
{
	if (!script_lock_acquire())
		return;
	functions_flush();
	script_lock_release();
}

int function_load_code(const char *code, size_t len, bool replace)
{
	char err[LIBRARY_ERR_MAX];
	struct library *li;

	if (!script_lock_acquire())
		return -EBUSY;
	li = library_add(code, len, replace, err);
	script_lock_release();
	if (!li) {
		log_warning("Failed creating function, %s", err);
		return -EINVAL;
	}
	return 0;
}

void cmd_function_dump(struct client *c)
{
	struct rdb_buf b = { 0 };
	uint8_t trailer[10];
	uint64_t crc;

	if (function_dump_body(&b) < 0) {
		xfree(b.p);
		script_reply_busy(c);
		return;
	}
	/* RDB version and CRC-64, little-endian, as DUMP's payloads. */
	trailer[0] = RDB_VERSION & 0xff;
	trailer[1] = (RDB_VERSION >> 8) & 0xff;
	rdb_buf_put(&b, trailer, 2);
	crc = crc64_update(0, (const uint8_t *)b.p, b.len);
	for (int i = 0; i < 8; i++)
		trailer[i] = (uint8_t)(crc >> (8 * i));
	rdb_buf_put(&b, trailer, 8);
	reply_bulk(c, b.p, b.len);
	xfree(b.p);
}

static void free_list(struct library *li)
{
	while (li) {
		struct library *next = li->next;

		library_free(li);
		li = next;
	}
}

/* Under the script lock: the payload's libraries, built against an empty
 * set (so that two of them may collide as in Redis); NULL with err. */
static struct library *restore_parse(const struct arg *pl, char *err, bool *ok)
{
	struct library *saved = libraries, *parsed;
	unsigned long saved_nlibs = nlibs, saved_nfuncs = nfuncs;
	size_t saved_bytes = code_bytes;
	struct dict saved_libs = library_index, saved_funcs = function_index;
	struct rdb_reader r = { .p = (const uint8_t *)pl->p, .len = pl->len - 10 };

	*ok = false;
	libraries = NULL;
	dict_init(&library_index, &library_index_type);
	dict_init(&function_index, &function_index_type);
	nlibs = nfuncs = 0;
	code_bytes = 0;
	while (r.off < r.len) {
		uint8_t t;
		char *code;
		size_t len;
		struct library *li;

		if (rdb_read_byte(&r, &t)) {
			snprintf(err, LIBRARY_ERR_MAX, "can not read data type");
			goto fail;
		}
		if (t == RDB_OPCODE_FUNCTION_PRE_GA) {
			snprintf(err, LIBRARY_ERR_MAX, "Pre-GA function format not supported");
			goto fail;
		}
		if (t != RDB_OPCODE_FUNCTION2) {
			snprintf(err, LIBRARY_ERR_MAX, "given type is not a function");
			goto fail;
		}
		if (rdb_read_string(&r, &code, &len)) {
			snprintf(err, LIBRARY_ERR_MAX, "Failed loading library payload");
			goto fail;
		}
		li = library_add(code, len, false, err);
		xfree(code);
		if (!li)
			goto fail;
	}
	*ok = true;
fail:
	parsed = libraries;
	libraries = saved;
	/* The parsed libraries' nodes are linked again when they join. */
	dict_destroy(&library_index);
	dict_destroy(&function_index);
	library_index = saved_libs;
	function_index = saved_funcs;
	nlibs = saved_nlibs;
	nfuncs = saved_nfuncs;
	code_bytes = saved_bytes;
	if (!*ok) {
		free_list(parsed);
		parsed = NULL;
	}
	return parsed;
}

/* Links the parsed libraries: APPEND refuses a library of an existing name,
 * REPLACE takes its place; either refuses a function name in use. */
static bool restore_join(struct library *parsed, bool replace, char *err)
{
	struct library *olds = NULL, *li, *next;

	for (li = parsed; li; li = li->next) {
		struct library *old = library_find(li->name);

		if (!old)
			continue;
		if (!replace) {
			snprintf(err, LIBRARY_ERR_MAX, "Library %s already exists", li->name);
			goto undo;
		}
		library_unlink(old);
		old->next = olds;
		olds = old;
	}
	for (li = parsed; li; li = li->next)
		for (struct function *f = li->funcs; f; f = f->next)
			if (function_find(f->name, strlen(f->name))) {
				snprintf(err, LIBRARY_ERR_MAX, "Function %s already exists",
					 f->name);
				goto undo;
			}
	for (li = parsed; li; li = next) {
		next = li->next;
		library_link(li);
	}
	free_list(olds);
	return true;
undo:
	for (li = olds; li; li = next) {
		next = li->next;
		library_link(li);
	}
	free_list(parsed);
	return false;
}

void cmd_function_restore(struct client *c)
{
	enum { APPEND, REPLACE, FLUSH } policy = APPEND;
	char err[LIBRARY_ERR_MAX];
	struct library *parsed;
	bool ok;

	if (c->argc > 4) {
		reply_errorf(c,
			     "unknown subcommand or wrong number of arguments for '%.128s'. Try "
			     "FUNCTION HELP.",
			     c->argv[1].p);
		return;
	}
	if (c->argc == 4) {
		if (arg_is(c, 3, "append")) {
			policy = APPEND;
		} else if (arg_is(c, 3, "replace")) {
			policy = REPLACE;
		} else if (arg_is(c, 3, "flush")) {
			policy = FLUSH;
		} else {
			reply_error(c, "Wrong restore policy given, value should be either FLUSH, "
				       "APPEND or REPLACE.");
			return;
		}
	}
	if (!rdb_payload_ok((const uint8_t *)c->argv[2].p, c->argv[2].len)) {
		reply_error(c, "DUMP payload version or checksum are wrong");
		return;
	}
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return;
	}
	if (!flua)
		flua = script_state_new();
	parsed = restore_parse(&c->argv[2], err, &ok);
	if (ok && policy == FLUSH) {
		while (libraries) {
			struct library *li = libraries;

			library_unlink(li);
			library_free(li);
		}
	}
	if (ok)
		ok = restore_join(parsed, policy == REPLACE, err);
	script_lock_release();
	if (ok) {
		command_dirty(1);
		reply_ok(c);
	} else {
		reply_error(c, err);
	}
}

/* ---- FCALL ------------------------------------------------------------------------- */

static void push_args(lua_State *l, const struct arg *argv, int n)
{
	lua_newtable(l);
	for (int i = 0; i < n; i++) {
		lua_pushlstring(l, argv[i].p, argv[i].len);
		lua_rawseti(l, -2, i + 1);
	}
}

/* One try at an FCALL, as eval_once (script.c): -EAGAIN when nothing ran
 * or was answered and it must run again with every shard. */
static int fcall_once(struct client *c, bool ro, int numkeys, struct lockset *scope, bool whole)
{
	struct script_run run;
	struct function *f;

	if (scope && whole && script_scope_whole(c, scope) < 0)
		return 0;
	if (!script_lock_acquire()) {
		script_reply_busy(c);
		return 0;
	}
	f = function_find(c->argv[1].p, c->argv[1].len);
	if (!f) {
		script_lock_release();
		reply_error(c, "Function not found");
		return 0;
	}
	if (numkeys > c->argc - 3) {
		script_lock_release();
		reply_error(c, "Number of keys can't be greater than number of args");
		return 0;
	}
	if (numkeys < 0) {
		script_lock_release();
		reply_error(c, "Number of keys can't be negative");
		return 0;
	}
	if (scope && !whole) {
		int rc = -EAGAIN;

		if (f->whole_runs)
			f->whole_runs--;
		else
			rc = script_scope_declared(c, scope, numkeys);

		if (rc < 0) {
			script_lock_release();
			return rc == -EAGAIN ? -EAGAIN : 0;
		}
	}
	if (!script_run_check(c, &run, f->flags, ro)) {
		script_lock_release();
		return 0;
	}
	run.held = scope && !whole ? scope : NULL;
	lua_getfield(flua, LUA_REGISTRYINDEX, "__xkv_globals");
	lua_getfield(flua, -1, "__redis__err__handler");
	lua_remove(flua, -2);
	lua_rawgeti(flua, LUA_REGISTRYINDEX, f->ref);
	push_args(flua, c->argv + 3, numkeys);
	push_args(flua, c->argv + 3 + numkeys, c->argc - 3 - numkeys);
	script_run_function(flua, c, &run, 2, f->name);
	if (run.undeclared)
		f->whole_runs = SCRIPT_WHOLE_RUNS;
	script_lock_release();
	return script_scope_end(&run, scope);
}

static void fcall_generic(struct client *c, bool ro)
{
	struct lockset *scope = command_script_locks;
	long long numkeys;

	/* Ours alone: a call this makes takes none of its own. */
	command_script_locks = NULL;
	monitor_feed_script(c);
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &numkeys)) {
		reply_error(c, "Bad number of keys provided");
		return;
	}
	/* Out of range: fcall_once answers the error (after the lookup, as
	 * Redis orders them) and takes no shard. */
	if (numkeys < 0 || numkeys > c->argc - 3)
		scope = NULL;
	if (fcall_once(c, ro, (int)numkeys, scope, false) == -EAGAIN)
		fcall_once(c, ro, (int)numkeys, scope, true);
}

bool function_declares_no_writes(int argc, const struct arg *argv)
{
	const struct function *f;
	bool no_writes;

	if (argc < 2)
		return false;
	script_lock_acquire();
	f = function_find(argv[1].p, argv[1].len);
	no_writes = f && (f->flags & SF_NO_WRITES);
	script_lock_release();
	return no_writes;
}

void cmd_fcall(struct client *c)
{
	fcall_generic(c, false);
}

void cmd_fcall_ro(struct client *c)
{
	fcall_generic(c, true);
}

void function_memory(long long *vm, long long *bytes, unsigned long *funcs, unsigned long *libs)
{
	if (!script_lock_acquire()) {
		*vm = *bytes = 0;
		*funcs = *libs = 0;
		return;
	}
	*vm = flua ? (long long)lua_gc(flua, LUA_GCCOUNT, 0) * 1024 : 0;
	*bytes = (long long)code_bytes;
	*funcs = nfuncs;
	*libs = nlibs;
	script_lock_release();
}
