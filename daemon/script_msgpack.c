// SPDX-License-Identifier: BSD-3-Clause
/*
 * cmsgpack for the script sandbox: MessagePack as Redis's bundled
 * lua-cmsgpack 0.4.0 writes and reads it, so scripts get the same bytes.
 *
 * pack(v, ...) concatenates the encoding of each argument. A number that is
 * an integer in int64 range is the smallest integer form, any other number a
 * float32 when that is exact, else a float64. A table whose keys are exactly
 * 1..n is an array (the empty table too), any other a map (keys in next()
 * order); a table nested 16 deep, a function or userdata is nil. Strings use
 * fixstr, str8, str16, str32.
 *
 * unpack(s) returns every value of s; unpack_one(s [, offset]) and
 * unpack_limit(s, limit [, offset]) return the next offset first (-1 at the
 * end), then the values. Arrays decode to tables 1..n, maps to tables;
 * uint64 above INT64_MAX wraps as lua-cmsgpack's does. The lone errors are
 * lua-cmsgpack's texts.
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"

#define MSGPACK_MAX_NESTING 16

/* The output, a userdata on the stack whose __gc frees the bytes if an
 * error unwinds the encoder. */
struct mbuf {
	unsigned char *p;
	size_t len, cap;
};

static int mbuf_gc(lua_State *l)
{
	struct mbuf *b = lua_touserdata(l, 1);

	free(b->p);
	b->p = NULL;
	return 0;
}

static void put(lua_State *l, struct mbuf *b, const void *p, size_t n)
{
	if (b->cap - b->len < n) {
		size_t cap = (b->len + n) * 2;
		unsigned char *np = realloc(b->p, cap);

		if (!np)
			luaL_error(l, "not enough memory");
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* The tag byte, then n big-endian bytes of v. */
static void put_be(lua_State *l, struct mbuf *b, unsigned char tag, uint64_t v, int n)
{
	unsigned char out[9];

	out[0] = tag;
	for (int i = 0; i < n; i++)
		out[1 + i] = (unsigned char)(v >> (8 * (n - 1 - i)));
	put(l, b, out, (size_t)n + 1);
}

static void put_byte(lua_State *l, struct mbuf *b, unsigned char c)
{
	put(l, b, &c, 1);
}

static void put_int(lua_State *l, struct mbuf *b, int64_t n)
{
	if (n >= 0) {
		if (n <= 127)
			put_byte(l, b, (unsigned char)n);
		else if (n <= 0xff)
			put_be(l, b, 0xcc, (uint64_t)n, 1);
		else if (n <= 0xffff)
			put_be(l, b, 0xcd, (uint64_t)n, 2);
		else if (n <= 0xffffffffLL)
			put_be(l, b, 0xce, (uint64_t)n, 4);
		else
			put_be(l, b, 0xcf, (uint64_t)n, 8);
	} else if (n >= -32) {
		put_byte(l, b, (unsigned char)(int8_t)n);
	} else if (n >= -128) {
		put_be(l, b, 0xd0, (uint64_t)n, 1);
	} else if (n >= -32768) {
		put_be(l, b, 0xd1, (uint64_t)n, 2);
	} else if (n >= INT32_MIN) {
		put_be(l, b, 0xd2, (uint64_t)n, 4);
	} else {
		put_be(l, b, 0xd3, (uint64_t)n, 8);
	}
}

static void put_number(lua_State *l, struct mbuf *b, lua_Number d)
{
	float f = (float)d;
	uint64_t bits;
	uint32_t fbits;

	/* A whole number in [-2^63, 2^63) is an integer. */
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
	    (lua_Number)(int64_t)d == d) {
		put_int(l, b, (int64_t)d);
	} else if ((double)f == d) {
		memcpy(&fbits, &f, 4);
		put_be(l, b, 0xca, fbits, 4);
	} else {
		memcpy(&bits, &d, 8);
		put_be(l, b, 0xcb, bits, 8);
	}
}

/* An array or map header: fix form, then 16 and 32 bits (t16 + 1). */
static void put_header(lua_State *l, struct mbuf *b, unsigned char fix, unsigned char t16, size_t n)
{
	if (n <= 15)
		put_byte(l, b, (unsigned char)(fix | n));
	else if (n <= 0xffff)
		put_be(l, b, t16, n, 2);
	else
		put_be(l, b, (unsigned char)(t16 + 1), n, 4);
}

static void put_string(lua_State *l, struct mbuf *b, const char *s, size_t len)
{
	if (len < 32)
		put_byte(l, b, (unsigned char)(0xa0 | len));
	else if (len <= 0xff)
		put_be(l, b, 0xd9, len, 1);
	else if (len <= 0xffff)
		put_be(l, b, 0xda, len, 2);
	else
		put_be(l, b, 0xdb, len, 4);
	put(l, b, s, len);
}

/* Keys exactly 1..n, each a whole number that fits an int. */
static bool table_is_array(lua_State *l, int t)
{
	lua_Number max = 0, count = 0;

	lua_pushnil(l);
	while (lua_next(l, t)) {
		lua_Number k;

		lua_pop(l, 1);
		if (lua_type(l, -1) != LUA_TNUMBER || (k = lua_tonumber(l, -1)) <= 0 ||
		    k > INT_MAX || (lua_Number)(int)k != k) {
			lua_pop(l, 1);
			return false;
		}
		if (k > max)
			max = k;
		count++;
	}
	return max == count;
}

static void encode(lua_State *l, struct mbuf *b, int idx, int level);

static void encode_table(lua_State *l, struct mbuf *b, int t, int level)
{
	size_t n = 0;

	luaL_checkstack(l, 4, "in function encode_table");
	if (table_is_array(l, t)) {
		n = lua_objlen(l, t);
		put_header(l, b, 0x90, 0xdc, n);
		for (size_t j = 1; j <= n; j++) {
			lua_pushnumber(l, (lua_Number)j);
			lua_gettable(l, t);
			encode(l, b, lua_gettop(l), level + 1);
			lua_pop(l, 1);
		}
		return;
	}
	lua_pushnil(l);
	while (lua_next(l, t)) {
		lua_pop(l, 1);
		n++;
	}
	put_header(l, b, 0x80, 0xde, n);
	lua_pushnil(l);
	while (lua_next(l, t)) {
		int top = lua_gettop(l);

		encode(l, b, top - 1, level + 1);
		encode(l, b, top, level + 1);
		lua_pop(l, 1);
	}
}

static void encode(lua_State *l, struct mbuf *b, int idx, int level)
{
	const char *s;
	size_t len;
	int t = lua_type(l, idx);

	/* The depth limit is what lets a cyclic table be packed. */
	if (t == LUA_TTABLE && level == MSGPACK_MAX_NESTING)
		t = LUA_TNIL;
	switch (t) {
	case LUA_TSTRING:
		s = lua_tolstring(l, idx, &len);
		put_string(l, b, s, len);
		break;
	case LUA_TBOOLEAN:
		put_byte(l, b, lua_toboolean(l, idx) ? 0xc3 : 0xc2);
		break;
	case LUA_TNUMBER:
		put_number(l, b, lua_tonumber(l, idx));
		break;
	case LUA_TTABLE:
		encode_table(l, b, idx, level);
		break;
	default:
		put_byte(l, b, 0xc0);
		break;
	}
}

static int msgpack_pack(lua_State *l)
{
	int nargs = lua_gettop(l);
	struct mbuf *b;

	if (nargs == 0)
		return luaL_argerror(l, 0, "MessagePack pack needs input.");
	b = lua_newuserdata(l, sizeof(*b));
	memset(b, 0, sizeof(*b));
	lua_newtable(l);
	lua_pushcfunction(l, mbuf_gc);
	lua_setfield(l, -2, "__gc");
	lua_setmetatable(l, -2);
	for (int i = 1; i <= nargs; i++)
		encode(l, b, i, 0);
	lua_pushlstring(l, (const char *)b->p, b->len);
	free(b->p);
	b->p = NULL;
	return 1;
}

/* ---- decoding ---------------------------------------------------------------------- */

struct cursor {
	const unsigned char *p;
	size_t left;
	int err; /* 0, CUR_EOF or CUR_BADFMT */
};

enum { CUR_EOF = 1, CUR_BADFMT = 2 };

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static bool need(struct cursor *c, size_t n)
{
	if (c->left < n) {
		c->err = CUR_EOF;
		return false;
	}
	return true;
}

static void eat(struct cursor *c, size_t n)
{
	c->p += n;
	c->left -= n;
}

static void decode(lua_State *l, struct cursor *c);

static void decode_array(lua_State *l, struct cursor *c, size_t n)
{
	lua_newtable(l);
	for (size_t i = 1; i <= n; i++) {
		lua_pushnumber(l, (lua_Number)i);
		decode(l, c);
		if (c->err)
			return;
		lua_settable(l, -3);
	}
}

static void decode_map(lua_State *l, struct cursor *c, size_t n)
{
	lua_newtable(l);
	while (n--) {
		decode(l, c);
		if (c->err)
			return;
		decode(l, c);
		if (c->err)
			return;
		lua_settable(l, -3);
	}
}

/* A string of the length in the n bytes after the tag. */
static void decode_str(lua_State *l, struct cursor *c, int n)
{
	size_t len;

	if (!need(c, 1 + (size_t)n))
		return;
	len = (size_t)be(c->p + 1, n);
	eat(c, 1 + (size_t)n);
	if (!need(c, len))
		return;
	lua_pushlstring(l, (const char *)c->p, len);
	eat(c, len);
}

/* A container of the size in the n bytes after the tag. */
static void decode_sized(lua_State *l, struct cursor *c, int n, bool map)
{
	size_t len;

	if (!need(c, 1 + (size_t)n))
		return;
	len = (size_t)be(c->p + 1, n);
	eat(c, 1 + (size_t)n);
	if (map)
		decode_map(l, c, len);
	else
		decode_array(l, c, len);
}

/* A number in the n bytes after the tag, signed or not. */
static void decode_int(lua_State *l, struct cursor *c, int n, bool sign)
{
	uint64_t v;

	if (!need(c, 1 + (size_t)n))
		return;
	v = be(c->p + 1, n);
	if (sign && n < 8 && (v >> (8 * n - 1)))
		v |= ~0ULL << (8 * n);
	/* uint64 goes through lua_Integer as lua-cmsgpack's (wraps). */
	if (sign || n == 8)
		lua_pushinteger(l, (lua_Integer)(int64_t)v);
	else
		lua_pushnumber(l, (lua_Number)v);
	eat(c, 1 + (size_t)n);
}

static void decode(lua_State *l, struct cursor *c)
{
	unsigned char t;

	if (!need(c, 1))
		return;
	luaL_checkstack(l, 1,
			"too many return values at once; use unpack_one or unpack_limit instead.");
	t = c->p[0];
	switch (t) {
	case 0xcc:
		decode_int(l, c, 1, false);
		return;
	case 0xcd:
		decode_int(l, c, 2, false);
		return;
	case 0xce:
		decode_int(l, c, 4, false);
		return;
	case 0xcf:
		decode_int(l, c, 8, false);
		return;
	case 0xd0:
		decode_int(l, c, 1, true);
		return;
	case 0xd1:
		decode_int(l, c, 2, true);
		return;
	case 0xd2:
		decode_int(l, c, 4, true);
		return;
	case 0xd3:
		/* Lua 5.1: int64 as a number, as lua-cmsgpack pushes it. */
		if (!need(c, 9))
			return;
		lua_pushnumber(l, (lua_Number)(int64_t)be(c->p + 1, 8));
		eat(c, 9);
		return;
	case 0xc0:
		lua_pushnil(l);
		eat(c, 1);
		return;
	case 0xc2:
	case 0xc3:
		lua_pushboolean(l, t == 0xc3);
		eat(c, 1);
		return;
	case 0xca: {
		uint32_t bits;
		float f;

		if (!need(c, 5))
			return;
		bits = (uint32_t)be(c->p + 1, 4);
		memcpy(&f, &bits, 4);
		lua_pushnumber(l, f);
		eat(c, 5);
		return;
	}
	case 0xcb: {
		uint64_t bits;
		double d;

		if (!need(c, 9))
			return;
		bits = be(c->p + 1, 8);
		memcpy(&d, &bits, 8);
		lua_pushnumber(l, d);
		eat(c, 9);
		return;
	}
	case 0xd9:
		decode_str(l, c, 1);
		return;
	case 0xda:
		decode_str(l, c, 2);
		return;
	case 0xdb:
		decode_str(l, c, 4);
		return;
	case 0xdc:
		decode_sized(l, c, 2, false);
		return;
	case 0xdd:
		decode_sized(l, c, 4, false);
		return;
	case 0xde:
		decode_sized(l, c, 2, true);
		return;
	case 0xdf:
		decode_sized(l, c, 4, true);
		return;
	}
	if (!(t & 0x80)) { /* positive fixint */
		lua_pushnumber(l, t);
		eat(c, 1);
	} else if ((t & 0xe0) == 0xe0) { /* negative fixint */
		lua_pushnumber(l, (int8_t)t);
		eat(c, 1);
	} else if ((t & 0xe0) == 0xa0) { /* fixstr */
		size_t len = t & 0x1f;

		if (!need(c, 1 + len))
			return;
		lua_pushlstring(l, (const char *)c->p + 1, len);
		eat(c, 1 + len);
	} else if ((t & 0xf0) == 0x90) {
		eat(c, 1);
		decode_array(l, c, t & 0xf);
	} else if ((t & 0xf0) == 0x80) {
		eat(c, 1);
		decode_map(l, c, t & 0xf);
	} else {
		c->err = CUR_BADFMT;
	}
}

/* limit and offset 0: every value; else at most limit values from offset,
 * the next offset (-1 at the end) first. */
static int unpack_full(lua_State *l, lua_Integer limit, lua_Integer offset)
{
	bool all = !limit && !offset;
	struct cursor c;
	const char *s;
	size_t len;
	int n;

	s = luaL_checklstring(l, 1, &len);
	/* lua-cmsgpack's text, which names the length as the limit. */
	if (offset < 0 || limit < 0)
		return luaL_error(l, "Invalid request to unpack with offset of %d and limit of %d.",
				  (int)offset, (int)len);
	if ((size_t)offset > len)
		return luaL_error(l, "Start offset %d greater than input length %d.", (int)offset,
				  (int)len);
	if (all)
		limit = INT_MAX;
	c.p = (const unsigned char *)s + offset;
	c.left = len - (size_t)offset;
	c.err = 0;
	for (n = 0; c.left > 0 && n < limit; n++) {
		decode(l, &c);
		if (c.err == CUR_EOF)
			return luaL_error(l, "Missing bytes in input.");
		if (c.err == CUR_BADFMT)
			return luaL_error(l, "Bad data format in input.");
	}
	if (all)
		return n;
	luaL_checkstack(l, 1, "in function unpack_full");
	lua_pushinteger(l, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
	lua_insert(l, 2);
	return n + 1;
}

static int msgpack_unpack(lua_State *l)
{
	return unpack_full(l, 0, 0);
}

static int msgpack_unpack_one(lua_State *l)
{
	lua_Integer offset = luaL_optinteger(l, 2, 0);

	lua_settop(l, 1);
	return unpack_full(l, 1, offset);
}

static int msgpack_unpack_limit(lua_State *l)
{
	lua_Integer limit = luaL_checkinteger(l, 2);
	lua_Integer offset = luaL_optinteger(l, 3, 0);

	lua_settop(l, 1);
	return unpack_full(l, limit, offset);
}

int script_msgpack_open(lua_State *l)
{
	static const luaL_Reg fns[] = {
		{ "pack", msgpack_pack },
		{ "unpack", msgpack_unpack },
		{ "unpack_one", msgpack_unpack_one },
		{ "unpack_limit", msgpack_unpack_limit },
	};

	lua_newtable(l);
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		lua_pushcfunction(l, fns[i].func);
		lua_setfield(l, -2, fns[i].name);
	}
	lua_pushliteral(l, "cmsgpack");
	lua_setfield(l, -2, "_NAME");
	lua_pushliteral(l, "lua-cmsgpack 0.4.0");
	lua_setfield(l, -2, "_VERSION");
	lua_pushliteral(l, "Copyright (C) 2012, Salvatore Sanfilippo");
	lua_setfield(l, -2, "_COPYRIGHT");
	lua_pushliteral(l, "MessagePack C implementation for Lua");
	lua_setfield(l, -2, "_DESCRIPTION");
	lua_pushvalue(l, -1);
	lua_setglobal(l, "cmsgpack");
	return 1;
}
