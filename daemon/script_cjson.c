// SPDX-License-Identifier: BSD-3-Clause
/*
 * cjson for the script sandbox: JSON as the lua-cjson 2.1.0 that Redis 8.8
 * bundles writes and reads it, so scripts get the same text and errors.
 *
 * encode(v): strings escaped as cjson does (controls as \uXXXX but \b \t \n
 * \f \r, '"', '\\', '/' and DEL), numbers with "%.<precision>g" (14 by
 * default), a table whose keys are all integers >= 1 an array up to its
 * largest key (nil holes as null) unless it is "excessively sparse", any
 * other table (the empty one too) an object, with number keys quoted. A
 * table whose metatable has __is_cjson_array is an array of #t elements.
 * Nesting past encode_max_depth (1000) fails, which ends cyclic tables.
 *
 * decode(s): a value and nothing after it but white space; null is the
 * lightuserdata cjson.null; numbers through strtod (so hex, inf and nan are
 * accepted while decode_invalid_numbers is on, the default); with
 * decode_array_with_array_mt(true) arrays carry a shared read-only metatable
 * that marks them, so an empty one encodes back as [].
 *
 * The configuration functions (encode_sparse_array, encode_max_depth,
 * decode_max_depth, encode_number_precision, encode_keep_buffer,
 * encode_invalid_numbers, decode_invalid_numbers,
 * decode_array_with_array_mt) set and return their setting; new() gives a
 * second module with its own settings. The configuration is a userdata
 * shared as every function's upvalue.
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "script.h"

#define CJSON_REG_ARRAY_MT "xkv.cjson.array_mt"
#define CJSON_NUM_BUF 32

enum { INVALID_OFF, INVALID_ON, INVALID_NULL };

/* An output buffer; its memory is freed by the owner's __gc, so an error
 * that unwinds the encoder leaks nothing. */
struct cjson_buf {
	char *p;
	size_t len, cap;
};

struct cjson_cfg {
	struct cjson_buf keep; /* reused by encode while keep_buffer is on */
	int sparse_convert, sparse_ratio, sparse_safe;
	int encode_max_depth, decode_max_depth;
	int encode_invalid, decode_invalid;
	int precision;
	int keep_buffer;
	int array_mt;
};

static void buf_reserve(lua_State *l, struct cjson_buf *b, size_t n)
{
	size_t cap;
	char *np;

	if (b->cap - b->len >= n)
		return;
	if (n > SIZE_MAX / 2 - b->len)
		luaL_error(l, "not enough memory");
	cap = (b->len + n) * 2;
	if (cap < 64)
		cap = 64;
	np = realloc(b->p, cap);
	if (!np)
		luaL_error(l, "not enough memory");
	b->p = np;
	b->cap = cap;
}

static void buf_put(lua_State *l, struct cjson_buf *b, const char *s, size_t n)
{
	buf_reserve(l, b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_putc(lua_State *l, struct cjson_buf *b, char c)
{
	buf_reserve(l, b, 1);
	b->p[b->len++] = c;
}

static int buf_gc(lua_State *l)
{
	struct cjson_buf *b = lua_touserdata(l, 1);

	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	return 0;
}

static struct cjson_cfg *cfg_of(lua_State *l)
{
	struct cjson_cfg *cfg = lua_touserdata(l, lua_upvalueindex(1));

	if (!cfg)
		luaL_error(l, "BUG: Unable to fetch CJSON configuration");
	return cfg;
}

/* ---- configuration --------------------------------------------------------------------- */

/* At most n arguments, padded with nil. */
static struct cjson_cfg *cfg_args(lua_State *l, int n)
{
	luaL_argcheck(l, lua_gettop(l) <= n, n + 1, "found too many arguments");
	lua_settop(l, n);
	return cfg_of(l);
}

static int opt_int(lua_State *l, int idx, int *setting, int min, int max)
{
	if (!lua_isnil(l, idx)) {
		char msg[64];
		int v = luaL_checkinteger(l, idx);

		snprintf(msg, sizeof(msg), "expected integer between %d and %d", min, max);
		luaL_argcheck(l, min <= v && v <= max, 1, msg);
		*setting = v;
	}
	lua_pushinteger(l, *setting);
	return 1;
}

/* A boolean or one of names (NULL: "off", "on"); pushes the setting back as
 * a boolean when it is off or on, else as its name. */
static int opt_enum(lua_State *l, int idx, int *setting, const char *const *names)
{
	static const char *const onoff[] = { "off", "on", NULL };

	if (!names)
		names = onoff;
	if (!lua_isnil(l, idx)) {
		if (lua_isboolean(l, idx))
			*setting = lua_toboolean(l, idx);
		else
			*setting = luaL_checkoption(l, idx, NULL, names);
	}
	if (*setting <= 1)
		lua_pushboolean(l, *setting);
	else
		lua_pushstring(l, names[*setting]);
	return 1;
}

static int cjson_cfg_sparse(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 3);

	opt_enum(l, 1, &cfg->sparse_convert, NULL);
	opt_int(l, 2, &cfg->sparse_ratio, 0, INT_MAX);
	opt_int(l, 3, &cfg->sparse_safe, 0, INT_MAX);
	return 3;
}

static int cjson_cfg_encode_depth(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_int(l, 1, &cfg->encode_max_depth, 1, INT_MAX);
}

static int cjson_cfg_decode_depth(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_int(l, 1, &cfg->decode_max_depth, 1, INT_MAX);
}

static int cjson_cfg_precision(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_int(l, 1, &cfg->precision, 1, 14);
}

static int cjson_cfg_keep_buffer(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	opt_enum(l, 1, &cfg->keep_buffer, NULL);
	if (!cfg->keep_buffer) {
		free(cfg->keep.p);
		memset(&cfg->keep, 0, sizeof(cfg->keep));
	}
	return 1;
}

static int cjson_cfg_encode_invalid(lua_State *l)
{
	static const char *const names[] = { "off", "on", "null", NULL };
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_enum(l, 1, &cfg->encode_invalid, names);
}

static int cjson_cfg_decode_invalid(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_enum(l, 1, &cfg->decode_invalid, NULL);
}

static int cjson_cfg_array_mt(lua_State *l)
{
	struct cjson_cfg *cfg = cfg_args(l, 1);

	return opt_enum(l, 1, &cfg->array_mt, NULL);
}

static int cjson_cfg_gc(lua_State *l)
{
	struct cjson_cfg *cfg = lua_touserdata(l, 1);

	free(cfg->keep.p);
	cfg->keep.p = NULL;
	return 0;
}

/* ---- encoding -------------------------------------------------------------------------- */

struct cjson_enc {
	lua_State *l;
	struct cjson_cfg *cfg;
	struct cjson_buf *b;
};

static void __attribute__((noreturn)) enc_fail(struct cjson_enc *e, int idx, const char *why)
{
	luaL_error(e->l, "Cannot serialise %s: %s", luaL_typename(e->l, idx), why);
	__builtin_unreachable();
}

static void enc_string(struct cjson_enc *e, int idx)
{
	static const char hex[] = "0123456789abcdef";
	size_t len, i;
	const char *s = lua_tolstring(e->l, idx, &len);

	buf_putc(e->l, e->b, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		const char *rep = NULL;

		switch (c) {
		case '"':
			rep = "\\\"";
			break;
		case '\\':
			rep = "\\\\";
			break;
		case '/':
			rep = "\\/";
			break;
		case '\b':
			rep = "\\b";
			break;
		case '\t':
			rep = "\\t";
			break;
		case '\n':
			rep = "\\n";
			break;
		case '\f':
			rep = "\\f";
			break;
		case '\r':
			rep = "\\r";
			break;
		default:
			break;
		}
		if (rep)
			buf_put(e->l, e->b, rep, 2);
		else if (c < 0x20 || c == 0x7f)
			buf_put(e->l, e->b, esc, 6);
		else
			buf_putc(e->l, e->b, (char)c);
	}
	buf_putc(e->l, e->b, '"');
}

static void enc_number(struct cjson_enc *e, int idx)
{
	double n = lua_tonumber(e->l, idx);
	char tmp[CJSON_NUM_BUF];
	int len;

	if (isinf(n) || isnan(n)) {
		if (e->cfg->encode_invalid == INVALID_OFF)
			enc_fail(e, idx, "must not be NaN or Inf");
		if (e->cfg->encode_invalid == INVALID_NULL) {
			buf_put(e->l, e->b, "null", 4);
			return;
		}
		if (isnan(n)) { /* never "-nan" */
			buf_put(e->l, e->b, "nan", 3);
			return;
		}
	}
	len = snprintf(tmp, sizeof(tmp), "%.*g", e->cfg->precision, n);
	buf_put(e->l, e->b, tmp, (size_t)len);
}

/* The table on top as an array: its length, or -1 for an object. */
static int enc_array_length(struct cjson_enc *e)
{
	lua_State *l = e->l;
	int max = 0, items = 0;

	lua_pushnil(l);
	while (lua_next(l, -2)) {
		double k;

		if (lua_type(l, -2) == LUA_TNUMBER) {
			k = lua_tonumber(l, -2);
			if (k >= 1 && floor(k) == k) {
				/* Past INT_MAX, cjson's int conversion gives
				 * INT_MIN on x86: such a table is an object. */
				if (k > max)
					max = k > INT_MAX ? INT_MIN : (int)k;
				items++;
				lua_pop(l, 1);
				continue;
			}
		}
		lua_pop(l, 2);
		return -1;
	}
	if (e->cfg->sparse_ratio > 0 && max > (long long)items * e->cfg->sparse_ratio &&
	    max > e->cfg->sparse_safe) {
		if (!e->cfg->sparse_convert)
			enc_fail(e, -1, "excessively sparse array");
		return -1;
	}
	return max;
}

static void enc_value(struct cjson_enc *e, int depth);

static void enc_array(struct cjson_enc *e, int depth, int n)
{
	buf_putc(e->l, e->b, '[');
	for (int i = 1; i <= n; i++) {
		if (i > 1)
			buf_putc(e->l, e->b, ',');
		lua_rawgeti(e->l, -1, i);
		enc_value(e, depth);
		lua_pop(e->l, 1);
	}
	buf_putc(e->l, e->b, ']');
}

static void enc_object(struct cjson_enc *e, int depth)
{
	lua_State *l = e->l;
	bool first = true;

	buf_putc(l, e->b, '{');
	lua_pushnil(l);
	while (lua_next(l, -2)) {
		if (!first)
			buf_putc(l, e->b, ',');
		first = false;
		if (lua_type(l, -2) == LUA_TNUMBER) {
			buf_putc(l, e->b, '"');
			enc_number(e, -2);
			buf_put(l, e->b, "\":", 2);
		} else if (lua_type(l, -2) == LUA_TSTRING) {
			enc_string(e, -2);
			buf_putc(l, e->b, ':');
		} else {
			enc_fail(e, -2, "table key must be a number or string");
		}
		enc_value(e, depth);
		lua_pop(l, 1);
	}
	buf_putc(l, e->b, '}');
}

static void enc_table(struct cjson_enc *e, int depth)
{
	lua_State *l = e->l;
	bool as_array = false;
	int n;

	/* Room for a key, a value and the error message. */
	if (depth > e->cfg->encode_max_depth || !lua_checkstack(l, 3))
		luaL_error(l, "Cannot serialise, excessive nesting (%d)", depth);
	if (lua_getmetatable(l, -1)) {
		lua_getfield(l, -1, "__is_cjson_array");
		as_array = lua_toboolean(l, -1);
		lua_pop(l, 2);
	}
	if (as_array) {
		enc_array(e, depth, (int)lua_objlen(l, -1));
		return;
	}
	n = enc_array_length(e);
	if (n > 0)
		enc_array(e, depth, n);
	else
		enc_object(e, depth);
}

static void enc_value(struct cjson_enc *e, int depth)
{
	lua_State *l = e->l;

	switch (lua_type(l, -1)) {
	case LUA_TSTRING:
		enc_string(e, -1);
		break;
	case LUA_TNUMBER:
		enc_number(e, -1);
		break;
	case LUA_TBOOLEAN:
		if (lua_toboolean(l, -1))
			buf_put(l, e->b, "true", 4);
		else
			buf_put(l, e->b, "false", 5);
		break;
	case LUA_TTABLE:
		enc_table(e, depth + 1);
		break;
	case LUA_TNIL:
		buf_put(l, e->b, "null", 4);
		break;
	case LUA_TLIGHTUSERDATA:
		if (!lua_touserdata(l, -1)) {
			buf_put(l, e->b, "null", 4);
			break;
		}
		/* fallthrough */
	default:
		enc_fail(e, -1, "type not supported");
	}
}

static int cjson_encode(lua_State *l)
{
	struct cjson_enc e = { .l = l, .cfg = cfg_of(l) };

	luaL_argcheck(l, lua_gettop(l) == 1, 1, "expected 1 argument");
	if (e.cfg->keep_buffer) {
		e.b = &e.cfg->keep;
		e.b->len = 0;
	} else { /* a private buffer, freed by the collector */
		e.b = lua_newuserdata(l, sizeof(*e.b));
		memset(e.b, 0, sizeof(*e.b));
		lua_newtable(l);
		lua_pushcfunction(l, buf_gc);
		lua_setfield(l, -2, "__gc");
		lua_setmetatable(l, -2);
		lua_pushvalue(l, 1);
	}
	enc_value(&e, 0);
	lua_pushlstring(l, e.b->p ? e.b->p : "", e.b->len);
	if (!e.cfg->keep_buffer) {
		free(e.b->p);
		e.b->p = NULL;
	}
	return 1;
}

/* ---- decoding -------------------------------------------------------------------------- */

enum tok_type {
	T_OBJ_BEGIN,
	T_OBJ_END,
	T_ARR_BEGIN,
	T_ARR_END,
	T_STRING,
	T_NUMBER,
	T_BOOLEAN,
	T_NULL,
	T_COLON,
	T_COMMA,
	T_END,
	T_WHITESPACE,
	T_ERROR,
	T_UNKNOWN,
};

static const char *const tok_names[] = {
	"T_OBJ_BEGIN", "T_OBJ_END",    "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER",    "T_BOOLEAN",    "T_NULL",      "T_COLON",   "T_COMMA",
	"T_END",       "T_WHITESPACE", "T_ERROR",     "T_UNKNOWN",
};

struct cjson_dec {
	lua_State *l;
	struct cjson_cfg *cfg;
	const char *data, *p; /* NUL-terminated (a Lua string) */
	char *tmp;	      /* a decoded string; as long as the input */
	int depth;
};

struct cjson_tok {
	enum tok_type type;
	size_t index;
	const char *err; /* T_ERROR */
	const char *s;	 /* T_STRING */
	size_t slen;
	double num;
	int boolean;
};

static enum tok_type tok_of(unsigned char c)
{
	switch (c) {
	case '{':
		return T_OBJ_BEGIN;
	case '}':
		return T_OBJ_END;
	case '[':
		return T_ARR_BEGIN;
	case ']':
		return T_ARR_END;
	case ',':
		return T_COMMA;
	case ':':
		return T_COLON;
	case '\0':
		return T_END;
	case ' ':
	case '\t':
	case '\n':
	case '\r':
		return T_WHITESPACE;
	case 'f':
	case 'i':
	case 'I':
	case 'n':
	case 'N':
	case 't':
	case '"':
	case '+':
	case '-':
		return T_UNKNOWN;
	default:
		return c >= '0' && c <= '9' ? T_UNKNOWN : T_ERROR;
	}
}

static void tok_error(struct cjson_dec *d, struct cjson_tok *t, const char *why)
{
	t->type = T_ERROR;
	t->index = (size_t)(d->p - d->data);
	t->err = why;
}

static int hex4(const char *p)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)p[i], h;

		if (c >= '0' && c <= '9')
			h = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			h = (c | 0x20) - 'a' + 10;
		else
			return -1; /* the NUL at the end too */
		v = v << 4 | h;
	}
	return v;
}

/* A \uXXXX escape (a surrogate pair: two) at d->p, as UTF-8 at out; the
 * bytes written, or 0 if it is invalid. */
static size_t dec_unicode(struct cjson_dec *d, char *out)
{
	int cp = hex4(d->p + 2), lo;
	size_t esc = 6;

	if (cp < 0)
		return 0;
	if ((cp & 0xf800) == 0xd800) {
		if (cp & 0x400) /* a low surrogate first */
			return 0;
		if (d->p[6] != '\\' || d->p[7] != 'u')
			return 0;
		lo = hex4(d->p + 8);
		if (lo < 0 || (lo & 0xfc00) != 0xdc00)
			return 0;
		cp = (((cp & 0x3ff) << 10) | (lo & 0x3ff)) + 0x10000;
		esc = 12;
	}
	d->p += esc;
	if (cp <= 0x7f) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp <= 0x7ff) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp <= 0xffff) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static char unescape(char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
	case 'u':
		return c;
	case 'b':
		return '\b';
	case 't':
		return '\t';
	case 'n':
		return '\n';
	case 'f':
		return '\f';
	case 'r':
		return '\r';
	default:
		return 0;
	}
}

static void dec_string(struct cjson_dec *d, struct cjson_tok *t)
{
	size_t n = 0;
	char c;

	d->p++; /* the opening quote */
	while ((c = *d->p) != '"') {
		if (!c) {
			tok_error(d, t, "unexpected end of string");
			return;
		}
		if (c == '\\') {
			c = unescape(d->p[1]);
			if (c == 'u') {
				size_t k = dec_unicode(d, d->tmp + n);

				if (!k) {
					tok_error(d, t, "invalid unicode escape code");
					return;
				}
				n += k;
				continue;
			}
			if (!c) {
				tok_error(d, t, "invalid escape code");
				return;
			}
			d->p++;
		}
		d->tmp[n++] = c;
		d->p++;
	}
	d->p++;
	t->type = T_STRING;
	t->s = d->tmp;
	t->slen = n;
}

/* What strict JSON forbids but strtod takes: a leading '+', hex, leading
 * zeros, inf and nan. */
static bool number_invalid(const char *p)
{
	if (*p == '+')
		return true;
	if (*p == '-')
		p++;
	if (*p == '0')
		return (p[1] | 0x20) == 'x' || (p[1] >= '0' && p[1] <= '9');
	if (*p <= '9')
		return false;
	return !strncasecmp(p, "inf", 3) || !strncasecmp(p, "nan", 3);
}

static void dec_number(struct cjson_dec *d, struct cjson_tok *t)
{
	char *end;

	t->type = T_NUMBER;
	t->num = strtod(d->p, &end);
	if (end == d->p)
		tok_error(d, t, "invalid number");
	else
		d->p = end;
}

static void dec_token(struct cjson_dec *d, struct cjson_tok *t)
{
	unsigned char c;

	while ((t->type = tok_of(c = (unsigned char)*d->p)) == T_WHITESPACE)
		d->p++;
	t->index = (size_t)(d->p - d->data);
	if (t->type == T_ERROR) {
		tok_error(d, t, "invalid token");
		return;
	}
	if (t->type == T_END)
		return;
	if (t->type != T_UNKNOWN) {
		d->p++;
		return;
	}
	if (c == '"') {
		dec_string(d, t);
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		if (!d->cfg->decode_invalid && number_invalid(d->p))
			tok_error(d, t, "invalid number");
		else
			dec_number(d, t);
	} else if (!strncmp(d->p, "true", 4)) {
		t->type = T_BOOLEAN;
		t->boolean = 1;
		d->p += 4;
	} else if (!strncmp(d->p, "false", 5)) {
		t->type = T_BOOLEAN;
		t->boolean = 0;
		d->p += 5;
	} else if (!strncmp(d->p, "null", 4)) {
		t->type = T_NULL;
		d->p += 4;
	} else if (d->cfg->decode_invalid && number_invalid(d->p)) {
		dec_number(d, t);
	} else {
		tok_error(d, t, "invalid token");
	}
}

static void __attribute__((noreturn))
dec_fail(struct cjson_dec *d, const char *want, const struct cjson_tok *t)
{
	luaL_error(d->l, "Expected %s but found %s at character %d", want,
		   t->type == T_ERROR ? t->err : tok_names[t->type], (int)t->index + 1);
	__builtin_unreachable();
}

static void dec_descend(struct cjson_dec *d, int slots)
{
	d->depth++;
	if (d->depth <= d->cfg->decode_max_depth && lua_checkstack(d->l, slots))
		return;
	luaL_error(d->l, "Found too many nested data structures (%d) at character %d", d->depth,
		   (int)(d->p - d->data));
}

static void dec_value(struct cjson_dec *d, struct cjson_tok *t);

static void dec_object(struct cjson_dec *d)
{
	struct cjson_tok t;

	dec_descend(d, 3);
	lua_newtable(d->l);
	dec_token(d, &t);
	if (t.type == T_OBJ_END) {
		d->depth--;
		return;
	}
	for (;;) {
		if (t.type != T_STRING)
			dec_fail(d, "object key string", &t);
		lua_pushlstring(d->l, t.s, t.slen);
		dec_token(d, &t);
		if (t.type != T_COLON)
			dec_fail(d, "colon", &t);
		dec_token(d, &t);
		dec_value(d, &t);
		lua_rawset(d->l, -3);
		dec_token(d, &t);
		if (t.type == T_OBJ_END) {
			d->depth--;
			return;
		}
		if (t.type != T_COMMA)
			dec_fail(d, "comma or object end", &t);
		dec_token(d, &t);
	}
}

/* The shared metatable of decoded arrays: a read-only proxy, made on first
 * use (the sandbox's proxies exist by then). */
static void push_array_mt(lua_State *l)
{
	lua_getfield(l, LUA_REGISTRYINDEX, CJSON_REG_ARRAY_MT);
	if (!lua_isnil(l, -1))
		return;
	lua_pop(l, 1);
	lua_newtable(l);
	lua_pushboolean(l, 1);
	lua_setfield(l, -2, "__is_cjson_array");
	script_sandbox_readonly(l, false);
	lua_pushvalue(l, -1);
	lua_setfield(l, LUA_REGISTRYINDEX, CJSON_REG_ARRAY_MT);
}

static void dec_array(struct cjson_dec *d)
{
	struct cjson_tok t;

	dec_descend(d, 2);
	lua_newtable(d->l);
	if (d->cfg->array_mt) {
		if (!lua_checkstack(d->l, 6))
			luaL_error(d->l, "max lua stack reached");
		push_array_mt(d->l);
		lua_setmetatable(d->l, -2);
	}
	dec_token(d, &t);
	if (t.type == T_ARR_END) {
		d->depth--;
		return;
	}
	for (int i = 1;; i++) {
		dec_value(d, &t);
		lua_rawseti(d->l, -2, i);
		dec_token(d, &t);
		if (t.type == T_ARR_END) {
			d->depth--;
			return;
		}
		if (t.type != T_COMMA)
			dec_fail(d, "comma or array end", &t);
		dec_token(d, &t);
	}
}

static void dec_value(struct cjson_dec *d, struct cjson_tok *t)
{
	switch (t->type) {
	case T_STRING:
		lua_pushlstring(d->l, t->s, t->slen);
		break;
	case T_NUMBER:
		lua_pushnumber(d->l, t->num);
		break;
	case T_BOOLEAN:
		lua_pushboolean(d->l, t->boolean);
		break;
	case T_OBJ_BEGIN:
		dec_object(d);
		break;
	case T_ARR_BEGIN:
		dec_array(d);
		break;
	case T_NULL: /* nil would delete the key: cjson.null instead */
		lua_pushlightuserdata(d->l, NULL);
		break;
	default:
		dec_fail(d, "value", t);
	}
}

static int cjson_decode(lua_State *l)
{
	struct cjson_dec d = { .l = l };
	struct cjson_tok t;
	size_t len;

	luaL_argcheck(l, lua_gettop(l) == 1, 1, "expected 1 argument");
	d.cfg = cfg_of(l);
	d.data = d.p = luaL_checklstring(l, 1, &len);
	if (len >= 2 && (!d.data[0] || !d.data[1]))
		luaL_error(l, "JSON parser does not support UTF-16 or UTF-32");
	/* Decoded strings are never longer than the input; the collector owns
	 * this scratch space. */
	d.tmp = lua_newuserdata(l, len + 1);
	dec_token(&d, &t);
	dec_value(&d, &t);
	dec_token(&d, &t);
	if (t.type != T_END)
		dec_fail(&d, "the end", &t);
	return 1;
}

/* ---- the module ------------------------------------------------------------------------ */

static int cjson_new(lua_State *l)
{
	static const luaL_Reg fns[] = {
		{ "encode", cjson_encode },
		{ "decode", cjson_decode },
		{ "decode_array_with_array_mt", cjson_cfg_array_mt },
		{ "encode_sparse_array", cjson_cfg_sparse },
		{ "encode_max_depth", cjson_cfg_encode_depth },
		{ "decode_max_depth", cjson_cfg_decode_depth },
		{ "encode_number_precision", cjson_cfg_precision },
		{ "encode_keep_buffer", cjson_cfg_keep_buffer },
		{ "encode_invalid_numbers", cjson_cfg_encode_invalid },
		{ "decode_invalid_numbers", cjson_cfg_decode_invalid },
		{ "new", cjson_new },
	};
	struct cjson_cfg *cfg;

	lua_newtable(l);
	cfg = lua_newuserdata(l, sizeof(*cfg));
	*cfg = (struct cjson_cfg){
		.sparse_ratio = 2,
		.sparse_safe = 10,
		.encode_max_depth = 1000,
		.decode_max_depth = 1000,
		.decode_invalid = 1,
		.precision = 14,
		.keep_buffer = 1,
	};
	lua_newtable(l);
	lua_pushcfunction(l, cjson_cfg_gc);
	lua_setfield(l, -2, "__gc");
	lua_setmetatable(l, -2);
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		lua_pushvalue(l, -1);
		lua_pushcclosure(l, fns[i].func, 1);
		lua_setfield(l, -3, fns[i].name);
	}
	lua_pop(l, 1);
	lua_pushlightuserdata(l, NULL);
	lua_setfield(l, -2, "null");
	lua_pushliteral(l, "cjson");
	lua_setfield(l, -2, "_NAME");
	lua_pushliteral(l, "2.1.0");
	lua_setfield(l, -2, "_VERSION");
	return 1;
}

int script_cjson_open(lua_State *l)
{
	cjson_new(l);
	lua_pushvalue(l, -1);
	lua_setglobal(l, "cjson");
	return 1;
}
