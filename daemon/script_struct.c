// SPDX-License-Identifier: BSD-3-Clause
/*
 * struct for the script sandbox: binary packing as Redis's bundled
 * lua_struct (Roberto Ierusalimschy's library) does it, so scripts get the
 * same bytes and the same errors.
 *
 * Format: '<' '>' little or big endian (native by default), '![n]' the
 * maximum alignment (a power of 2; default the platform's), ' ' ignored;
 * b/B h/H l/L T i[n]/I[n] signed/unsigned integers (char, short, long,
 * size_t, n bytes up to 32, default int), f d float and double, x a pad
 * byte, c[n] n chars (c0 in pack: the whole string; in unpack: the length
 * read just before), s a zero-terminated string. Every item is aligned to
 * min(its size, the maximum alignment).
 *
 * pack(fmt, ...) gives the string; unpack(fmt, s [, pos]) the values then
 * the next position (1-based); size(fmt) the fixed size.
 */
#include <ctype.h>
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "script.h"

#define STRUCT_MAX_INT 32 /* bytes of an 'i'/'I' item at most */

/* The platform's strictest alignment that the library honours by default:
 * a double's within a struct, at least an int's. */
struct struct_align_probe {
	char c;
	double d;
};
#define STRUCT_PADDING (offsetof(struct struct_align_probe, d))
#define STRUCT_MAXALIGN (STRUCT_PADDING > sizeof(int) ? STRUCT_PADDING : sizeof(int))

struct layout {
	bool little;
	size_t align;
};

static bool native_little(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

/* A decimal count at *fmt, or def. */
static int read_count(lua_State *l, const char **fmt, int def)
{
	int a = 0;

	if (!isdigit((unsigned char)**fmt))
		return def;
	do {
		if (a > INT_MAX / 10 || a * 10 > INT_MAX - (**fmt - '0'))
			luaL_error(l, "integral size overflow");
		a = a * 10 + *(*fmt)++ - '0';
	} while (isdigit((unsigned char)**fmt));
	return a;
}

static size_t item_size(lua_State *l, char opt, const char **fmt)
{
	int n;

	switch (opt) {
	case 'B':
	case 'b':
		return sizeof(char);
	case 'H':
	case 'h':
		return sizeof(short);
	case 'L':
	case 'l':
		return sizeof(long);
	case 'T':
		return sizeof(size_t);
	case 'f':
		return sizeof(float);
	case 'd':
		return sizeof(double);
	case 'x':
		return 1;
	case 'c':
		return (size_t)read_count(l, fmt, 1);
	case 'i':
	case 'I':
		n = read_count(l, fmt, (int)sizeof(int));
		if (n > STRUCT_MAX_INT)
			luaL_error(l, "integral size %d is larger than limit of %d", n,
				   STRUCT_MAX_INT);
		return (size_t)n;
	default:
		return 0;
	}
}

/* Padding before an item of size at offset len. */
static size_t padding(size_t len, const struct layout *h, char opt, size_t size)
{
	if (size == 0 || opt == 'c')
		return 0;
	if (size > h->align)
		size = h->align;
	return (size - (len & (size - 1))) & (size - 1);
}

/* The options that are no item: endianness, alignment, spaces. */
static void control(lua_State *l, char opt, const char **fmt, struct layout *h)
{
	int a;

	switch (opt) {
	case ' ':
		return;
	case '>':
		h->little = false;
		return;
	case '<':
		h->little = true;
		return;
	case '!':
		a = read_count(l, fmt, (int)STRUCT_MAXALIGN);
		if (a <= 0 || (a & (a - 1)))
			luaL_error(l, "alignment %d is not a power of 2", a);
		h->align = (size_t)a;
		return;
	default:
		luaL_argerror(l, 1, lua_pushfstring(l, "invalid format option '%c'", opt));
	}
}

/* The size bytes of the argument, two's complement, in h's order (a
 * negative number's bytes past the eighth are zero, as the library's). */
static void put_int(lua_State *l, luaL_Buffer *b, int arg, bool little, size_t size)
{
	lua_Number n = luaL_checknumber(l, arg);
	uint64_t v = n < 0 ? (uint64_t)(int64_t)n : (uint64_t)n;
	char out[STRUCT_MAX_INT];

	for (size_t i = 0; i < size; i++) {
		out[little ? i : size - 1 - i] = (char)(v & 0xff);
		v >>= 8;
	}
	luaL_addlstring(b, out, size);
}

/* Bytes of a native float or double in h's order. */
static void order(char *p, size_t size, bool little)
{
	if (little == native_little())
		return;
	for (size_t i = 0; i < size / 2; i++) {
		char t = p[i];

		p[i] = p[size - 1 - i];
		p[size - 1 - i] = t;
	}
}

static int struct_pack(lua_State *l)
{
	const char *fmt = luaL_checkstring(l, 1);
	struct layout h = { native_little(), 1 };
	size_t total = 0;
	int arg = 2;
	luaL_Buffer b;

	lua_pushnil(l); /* keeps the arguments apart from the buffer's pieces */
	luaL_buffinit(l, &b);
	while (*fmt) {
		char opt = *fmt++;
		size_t size = item_size(l, opt, &fmt);
		size_t pad = padding(total, &h, opt, size);

		total += pad;
		while (pad-- > 0)
			luaL_addchar(&b, '\0');
		switch (opt) {
		case 'b':
		case 'B':
		case 'h':
		case 'H':
		case 'l':
		case 'L':
		case 'T':
		case 'i':
		case 'I':
			put_int(l, &b, arg++, h.little, size);
			break;
		case 'x':
			luaL_addchar(&b, '\0');
			break;
		case 'f': {
			float f = (float)luaL_checknumber(l, arg++);

			order((char *)&f, size, h.little);
			luaL_addlstring(&b, (char *)&f, size);
			break;
		}
		case 'd': {
			double d = luaL_checknumber(l, arg++);

			order((char *)&d, size, h.little);
			luaL_addlstring(&b, (char *)&d, size);
			break;
		}
		case 'c':
		case 's': {
			size_t len;
			const char *s = luaL_checklstring(l, arg++, &len);

			if (size == 0)
				size = len;
			/* The library names the argument after this one. */
			luaL_argcheck(l, len >= size, arg, "string too short");
			luaL_addlstring(&b, s, size);
			if (opt == 's') {
				luaL_addchar(&b, '\0');
				size++;
			}
			break;
		}
		default:
			control(l, opt, &fmt, &h);
		}
		total += size;
	}
	luaL_pushresult(&b);
	return 1;
}

static lua_Number get_int(const char *p, bool little, bool sign, size_t size)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v = v << 8 | (unsigned char)p[little ? size - 1 - i : i];
	if (!sign)
		return (lua_Number)v;
	/* The sign bit of the item, or of the 64 bits it was folded into (the
	 * library's shift, which x86 takes modulo 64). */
	{
		uint64_t mask = ~0ULL << ((size * 8 - 1) & 63);

		if (v & mask)
			v |= mask;
	}
	return (lua_Number)(int64_t)v;
}

static int struct_unpack(lua_State *l)
{
	struct layout h = { native_little(), 1 };
	const char *fmt = luaL_checkstring(l, 1);
	size_t ld;
	const char *data = luaL_checklstring(l, 2, &ld);
	size_t pos = (size_t)luaL_optinteger(l, 3, 1);
	int n = 0;

	luaL_argcheck(l, pos > 0, 3, "offset must be 1 or greater");
	pos--;
	while (*fmt) {
		char opt = *fmt++;
		size_t size = item_size(l, opt, &fmt);

		pos += padding(pos, &h, opt, size);
		luaL_argcheck(l, size <= ld && pos <= ld - size, 2, "data string too short");
		luaL_checkstack(l, 2, "too many results");
		switch (opt) {
		case 'b':
		case 'B':
		case 'h':
		case 'H':
		case 'l':
		case 'L':
		case 'T':
		case 'i':
		case 'I':
			lua_pushnumber(l, get_int(data + pos, h.little, islower((unsigned char)opt),
						  size));
			n++;
			break;
		case 'x':
			break;
		case 'f': {
			float f;

			memcpy(&f, data + pos, size);
			order((char *)&f, sizeof(f), h.little);
			lua_pushnumber(l, f);
			n++;
			break;
		}
		case 'd': {
			double d;

			memcpy(&d, data + pos, size);
			order((char *)&d, sizeof(d), h.little);
			lua_pushnumber(l, d);
			n++;
			break;
		}
		case 'c':
			if (size == 0) {
				if (n == 0 || !lua_isnumber(l, -1))
					luaL_error(l, "format 'c0' needs a previous size");
				size = (size_t)lua_tonumber(l, -1);
				lua_pop(l, 1);
				n--;
				luaL_argcheck(l, size <= ld && pos <= ld - size, 2,
					      "data string too short");
			}
			lua_pushlstring(l, data + pos, size);
			n++;
			break;
		case 's': {
			const char *e = memchr(data + pos, '\0', ld - pos);

			if (!e)
				luaL_error(l, "unfinished string in data");
			size = (size_t)(e - (data + pos)) + 1;
			lua_pushlstring(l, data + pos, size - 1);
			n++;
			break;
		}
		default:
			control(l, opt, &fmt, &h);
		}
		pos += size;
	}
	lua_pushinteger(l, (lua_Integer)pos + 1);
	return n + 1;
}

static int struct_size(lua_State *l)
{
	struct layout h = { native_little(), 1 };
	const char *fmt = luaL_checkstring(l, 1);
	size_t pos = 0;

	while (*fmt) {
		char opt = *fmt++;
		size_t size = item_size(l, opt, &fmt);

		pos += padding(pos, &h, opt, size);
		if (opt == 's')
			luaL_argerror(l, 1, "option 's' has no fixed size");
		else if (opt == 'c' && size == 0)
			luaL_argerror(l, 1, "option 'c0' has no fixed size");
		if (!isalnum((unsigned char)opt))
			control(l, opt, &fmt, &h);
		pos += size;
	}
	lua_pushinteger(l, (lua_Integer)pos);
	return 1;
}

int script_struct_open(lua_State *l)
{
	static const luaL_Reg fns[] = {
		{ "pack", struct_pack },
		{ "unpack", struct_unpack },
		{ "size", struct_size },
		{ NULL, NULL },
	};

	luaL_register(l, "struct", fns);
	return 1;
}
