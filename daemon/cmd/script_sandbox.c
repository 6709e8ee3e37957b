// SPDX-License-Identifier: BSD-3-Clause
/*
 * The script sandbox's guards (cmd/script.c builds the interpreter): the
 * read-only proxies of the globals and the library tables, the functions
 * that must see through them or refuse them (next, pairs, ipairs, rawset,
 * setmetatable), loadstring without bytecode, and bounds-checked
 * replacements for two of Debian's functions that crash on Redis's tests
 * (unpack, bit.tohex).
 *
 * A proxy is an empty table whose metatable's __index is the real table;
 * REG_PROXIES maps each proxy to it; both live as long as the interpreter.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>
#include <string.h>

#include "script.h"

#define REG_PROXIES "__xkv_proxies" /* proxy -> real table */

/* unpack with Lua 5.1.5's fixed bounds check: Debian's 5.1 overflows the
 * count of unpack({}, -2, 2147483647) and writes past the stack. */
static int lua_safe_unpack(lua_State *l)
{
	long long i, e, n;

	luaL_checktype(l, 1, LUA_TTABLE);
	i = luaL_optint(l, 2, 1);
	e = luaL_opt(l, luaL_checkint, 3, (int)lua_objlen(l, 1));
	if (i > e)
		return 0;
	n = e - i + 1;
	if (n >= 2147483647 || !lua_checkstack(l, (int)n))
		return luaL_error(l, "too many results to unpack");
	for (long long k = i; k <= e; k++)
		lua_rawgeti(l, 1, (int)k);
	return (int)n;
}

/* bit.tohex without LuaBitOp 1.0.2's overflow of -INT_MIN digits. */
static int lua_bit_tohex(lua_State *l)
{
	lua_Number d = luaL_checknumber(l, 1);
	uint32_t b = (uint32_t)(int64_t)d;
	int n = lua_isnone(l, 2) ? 8 : luaL_checkint(l, 2);
	const char *digits = "0123456789abcdef";
	char buf[8];

	if (n == INT32_MIN)
		n = INT32_MIN + 1;
	if (n < 0) {
		n = -n;
		digits = "0123456789ABCDEF";
	}
	if (n > 8)
		n = 8;
	for (int i = n - 1; i >= 0; i--) {
		buf[i] = digits[b & 15];
		b >>= 4;
	}
	lua_pushlstring(l, buf, (size_t)n);
	return 1;
}

/* A read-only proxy's real table, or the table itself. */
static void push_real(lua_State *l, int idx)
{
	lua_getfield(l, LUA_REGISTRYINDEX, REG_PROXIES);
	lua_pushvalue(l, idx);
	lua_rawget(l, -2);
	lua_remove(l, -2);
	if (lua_isnil(l, -1)) {
		lua_pop(l, 1);
		lua_pushvalue(l, idx);
	}
}

/* next, pairs and ipairs see through the read-only proxies (pairs(redis)). */
static int lua_proxy_next(lua_State *l)
{
	luaL_checktype(l, 1, LUA_TTABLE);
	lua_settop(l, 2);
	push_real(l, 1);
	lua_pushvalue(l, 2);
	if (lua_next(l, -2))
		return 2;
	lua_pushnil(l);
	return 1;
}

static int lua_proxy_pairs(lua_State *l)
{
	luaL_checktype(l, 1, LUA_TTABLE);
	lua_pushcfunction(l, lua_proxy_next);
	lua_pushvalue(l, 1);
	lua_pushnil(l);
	return 3;
}

static int lua_proxy_inext(lua_State *l)
{
	int i = luaL_checkint(l, 2) + 1;

	push_real(l, 1);
	lua_pushinteger(l, i);
	lua_rawgeti(l, -2, i);
	return lua_isnil(l, -1) ? 0 : 2;
}

static int lua_proxy_ipairs(lua_State *l)
{
	luaL_checktype(l, 1, LUA_TTABLE);
	lua_pushcfunction(l, lua_proxy_inext);
	lua_pushvalue(l, 1);
	lua_pushinteger(l, 0);
	return 3;
}

/* ---- the interpreter ------------------------------------------------------------------ */

static int global_missing(lua_State *l)
{
	return luaL_error(l, "Script attempted to access nonexistent global variable '%s'",
			  lua_tostring(l, 2));
}

static int table_readonly(lua_State *l)
{
	return luaL_error(l, "Attempt to modify a readonly table");
}

/* Replaces the table at the top with a read-only proxy of it (missing:
 * global_missing, or nil). */
void script_sandbox_readonly(lua_State *l, bool strict)
{
	lua_newtable(l); /* proxy */
	lua_newtable(l); /* its metatable */
	lua_pushvalue(l, -3);
	lua_setfield(l, -2, "__index");
	lua_pushcfunction(l, table_readonly);
	lua_setfield(l, -2, "__newindex");
	/* getmetatable(proxy) gives a read-only view of the metatable. */
	lua_newtable(l);
	lua_newtable(l);
	lua_pushvalue(l, -3);
	lua_setfield(l, -2, "__index");
	lua_pushcfunction(l, table_readonly);
	lua_setfield(l, -2, "__newindex");
	lua_pushboolean(l, 0);
	lua_setfield(l, -2, "__metatable");
	lua_setmetatable(l, -2);
	lua_setfield(l, -2, "__metatable");
	lua_setmetatable(l, -2);
	lua_getfield(l, LUA_REGISTRYINDEX, REG_PROXIES);
	lua_pushvalue(l, -2);
	lua_pushvalue(l, -4);
	lua_rawset(l, -3);
	lua_pop(l, 1);
	if (strict) { /* the real table errs on what it lacks */
		lua_newtable(l);
		lua_pushcfunction(l, global_missing);
		lua_setfield(l, -2, "__index");
		lua_setmetatable(l, -3);
	}
	lua_remove(l, -2);
}

static bool is_proxy(lua_State *l, int idx)
{
	bool yes;

	lua_getfield(l, LUA_REGISTRYINDEX, REG_PROXIES);
	lua_pushvalue(l, idx);
	lua_rawget(l, -2);
	yes = !lua_isnil(l, -1);
	lua_pop(l, 2);
	return yes;
}

/* Raised by the C API in Redis's Lua: no position. */
static int readonly_error(lua_State *l)
{
	lua_pushliteral(l, "Attempt to modify a readonly table");
	return lua_error(l);
}

/* setmetatable and rawset refuse the read-only tables, as Redis's do. */
static int lua_guarded_setmetatable(lua_State *l)
{
	luaL_checktype(l, 1, LUA_TTABLE);
	if (is_proxy(l, 1))
		return readonly_error(l);
	lua_pushvalue(l, lua_upvalueindex(1));
	lua_insert(l, 1);
	lua_call(l, lua_gettop(l) - 1, LUA_MULTRET);
	return lua_gettop(l);
}

static int lua_guarded_rawset(lua_State *l)
{
	luaL_checktype(l, 1, LUA_TTABLE);
	if (is_proxy(l, 1))
		return readonly_error(l);
	luaL_checkany(l, 2);
	luaL_checkany(l, 3);
	lua_settop(l, 3);
	lua_rawset(l, 1);
	return 1;
}

/* loadstring refuses precompiled chunks, as Redis's Lua does (bytecode
 * can escape the sandbox); the caller gets nil and the reason. */
static int lua_guarded_loadstring(lua_State *l)
{
	size_t len;
	const char *s = luaL_checklstring(l, 1, &len);
	const char *name = luaL_optstring(l, 2, s);

	if (len && s[0] == LUA_SIGNATURE[0]) {
		lua_pushnil(l);
		lua_pushliteral(l, "binary chunks are not allowed");
		return 2;
	}
	if (luaL_loadbuffer(l, s, len, name)) {
		lua_pushnil(l);
		lua_insert(l, -2);
		return 2;
	}
	return 1;
}

void script_sandbox_install(lua_State *l)
{
	lua_pushcfunction(l, lua_safe_unpack);
	lua_setglobal(l, "unpack");
	lua_getglobal(l, "setmetatable");
	lua_pushcclosure(l, lua_guarded_setmetatable, 1);
	lua_setglobal(l, "setmetatable");
	lua_pushcfunction(l, lua_guarded_rawset);
	lua_setglobal(l, "rawset");
	lua_pushcfunction(l, lua_guarded_loadstring);
	lua_setglobal(l, "loadstring");
	lua_pushcfunction(l, lua_proxy_next);
	lua_setglobal(l, "next");
	lua_pushcfunction(l, lua_proxy_pairs);
	lua_setglobal(l, "pairs");
	lua_pushcfunction(l, lua_proxy_ipairs);
	lua_setglobal(l, "ipairs");
	lua_getglobal(l, "bit");
	lua_pushcfunction(l, lua_bit_tohex);
	lua_setfield(l, -2, "tohex");
	lua_pop(l, 1);
	lua_newtable(l);
	lua_setfield(l, LUA_REGISTRYINDEX, REG_PROXIES);
}
