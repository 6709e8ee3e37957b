// SPDX-License-Identifier: BSD-3-Clause
#include <string.h>

#include "mem.h"
#include "object.h"
#include "t_hash.h"
#include "util.h"

static const struct obj_ops *type_ops[OBJ_TYPES];

void obj_register(enum obj_type type, const struct obj_ops *ops)
{
	type_ops[type] = ops;
}

struct obj obj_string_ll(long long v)
{
	char tmp[LL_STR_SIZE + 1];

	return (struct obj){ .type = OBJ_STRING, .enc = ENC_INT, .i = v, .len = ll_to_str(tmp, v) };
}

struct obj obj_string(const void *p, size_t len)
{
	long long v;
	struct obj o = { .type = OBJ_STRING, .len = len };

	/* Canonical integers are stored as numbers, as Redis does. */
	if (len <= LL_STR_SIZE && str_to_ll(p, len, &v))
		return obj_string_ll(v);
	o.enc = len <= EMBSTR_MAX ? ENC_EMBSTR : ENC_RAW;
	o.bytes = xmalloc(len + 1);
	memcpy(o.bytes, p, len);
	o.bytes[len] = '\0';
	return o;
}

void obj_string_assign(struct obj *o, const void *p, size_t len)
{
	long long v;

	if (o->type == OBJ_STRING && o->enc != ENC_INT && !o->inl &&
	    !(len <= LL_STR_SIZE && str_to_ll(p, len, &v)) &&
	    xusable(o->bytes) == xgood_size(len + 1)) {
		/* SET of a value of about the same size, the common case: a
		 * free and a malloc saved, and with workers on several threads
		 * no block of one thread's freed by another. */
		memcpy(o->bytes, p, len);
		o->bytes[len] = '\0';
		o->len = len;
		o->enc = len <= EMBSTR_MAX ? ENC_EMBSTR : ENC_RAW;
		return;
	}
	obj_free(o);
	*o = obj_string(p, len);
}

struct obj obj_string_owned(char *p, size_t len)
{
	return (struct obj){ .type = OBJ_STRING, .enc = ENC_RAW, .bytes = p, .len = len };
}

void obj_free(struct obj *o)
{
	if (o->type != OBJ_STRING)
		type_ops[o->type]->free(o);
	else if (o->enc != ENC_INT && !o->inl)
		xfree(o->bytes);
	o->ptr = NULL;
	o->inl = 0;
}

struct obj obj_dup(const struct obj *o)
{
	struct obj copy = *o;

	if (o->type != OBJ_STRING)
		return type_ops[o->type]->dup(o);
	copy.inl = 0;
	if (o->enc != ENC_INT) {
		copy.bytes = xmalloc(o->len + 1);
		memcpy(copy.bytes, o->bytes, o->len + 1);
	}
	return copy;
}

const char *obj_str(const struct obj *o, char *tmp, size_t *len)
{
	if (o->enc == ENC_INT) {
		*len = ll_to_str(tmp, o->i);
		return tmp;
	}
	*len = o->len;
	return o->bytes;
}

bool obj_string_ll_value(const struct obj *o, long long *v)
{
	if (o->enc == ENC_INT) {
		*v = o->i;
		return true;
	}
	return o->len <= LL_STR_SIZE && str_to_ll(o->bytes, o->len, v);
}

char *obj_string_make_raw(struct obj *o, size_t cap)
{
	if (o->enc == ENC_INT) {
		char tmp[LL_STR_SIZE + 1];
		size_t len = ll_to_str(tmp, o->i);

		o->bytes = xmalloc((cap > len ? cap : len) + 1);
		memcpy(o->bytes, tmp, len + 1);
		o->len = len;
	} else if (o->inl) {
		/* Out of the entry, which cannot grow in place. */
		char *b = xmalloc((cap > o->len ? cap : o->len) + 1);

		memcpy(b, o->bytes, o->len + 1);
		o->bytes = b;
		o->inl = 0;
	} else if (cap + 1 > xusable(o->bytes)) {
		/* Grow geometrically so repeated APPENDs stay linear. */
		size_t want = cap < 1024 * 1024 ? cap * 2 : cap + 1024 * 1024;

		o->bytes = xrealloc(o->bytes, want + 1);
	}
	o->enc = ENC_RAW;
	return o->bytes;
}

const char *obj_type_name(const struct obj *o)
{
	static const char *const names[] = {
		[OBJ_STRING] = "string", [OBJ_LIST] = "list",	   [OBJ_SET] = "set",
		[OBJ_ZSET] = "zset",	 [OBJ_HASH] = "hash",	   [OBJ_STREAM] = "stream",
		[OBJ_ARRAY] = "array",	 [OBJ_VSET] = "vectorset",
	};

	return names[o->type];
}

const char *obj_encoding_name(const struct obj *o)
{
	static const char *const names[] = {
		[ENC_INT] = "int",
		[ENC_EMBSTR] = "embstr",
		[ENC_RAW] = "raw",
		[ENC_LISTPACK] = "listpack",
		[ENC_QUICKLIST] = "quicklist",
		[ENC_HASHTABLE] = "hashtable",
		[ENC_INTSET] = "intset",
		[ENC_SKIPLIST] = "skiplist",
		[ENC_STREAM] = "stream",
		[ENC_SLICED_ARRAY] = "sliced-array",
	};

	if (o->type == OBJ_HASH && hash_is_listpackex(o))
		return "listpackex";
	return names[o->enc];
}

size_t obj_items(const struct obj *o)
{
	if (o->type == OBJ_STRING)
		return o->len;
	return type_ops[o->type]->items ? type_ops[o->type]->items(o) : 0;
}

size_t obj_mem(const struct obj *o)
{
	if (o->type != OBJ_STRING)
		return type_ops[o->type]->mem(o);
	/* Inline bytes are part of the entry's allocation. */
	if (o->enc != ENC_INT && !o->inl)
		return xusable(o->bytes);
	return 0;
}

size_t obj_free_effort(const struct obj *o)
{
	if (o->type != OBJ_STRING && type_ops[o->type]->free_effort)
		return type_ops[o->type]->free_effort(o);
	return 1;
}
