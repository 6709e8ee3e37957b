// SPDX-License-Identifier: BSD-3-Clause
/*
 * The array commands of Redis 8.8 (AR*), on the sparse array of t_array.c.
 *
 * Indices are 0 to 2^64-2 (2^64-1 is the length's limit); every command
 * checks all of its arguments before it changes anything, so a bad index
 * late in the list leaves the array as it was. A missing key reads as an
 * array of holes; an array left empty is deleted. ARGREP's RE predicates are
 * POSIX extended expressions run by TRE (Debian's libtre), the engine Redis
 * uses, so the same patterns are accepted and refused.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <tre/tre.h>

#include "commands.h"
#include "config.h"
#include "mem.h"
#include "notify.h"
#include "t_array.h"
#include "util.h"

#define ERR_INDEX "invalid array index"
#define GETRANGE_MAX 1000000
#define GREP_MAX_PREDICATES 250
#define GREP_MAX_RE 2048

/* An index as Redis parses one: a canonical integer that is not negative, or
 * what strtoull takes whole (so " 7" and "007" too). UINT64_MAX only where
 * allow_max (ARSEEK). */
static bool parse_index(const struct arg *a, bool allow_max, uint64_t *out)
{
	long long ll;
	unsigned long long v;
	char *end = NULL;

	if (str_to_ll(a->p, a->len, &ll)) {
		if (ll < 0)
			return false;
		*out = (uint64_t)ll;
		return true;
	}
	if (strlen(a->p) != a->len || !a->p[0])
		return false;
	errno = 0;
	v = strtoull(a->p, &end, 10);
	if (errno == EINVAL || errno == ERANGE || *end)
		return false;
	if (v == UINT64_MAX && !allow_max)
		return false;
	*out = v;
	return true;
}

static bool arg_index(struct client *c, int i, uint64_t *out)
{
	if (parse_index(&c->argv[i], false, out))
		return true;
	reply_error(c, ERR_INDEX);
	return false;
}

static void reply_arity(struct client *c, const char *name)
{
	reply_errorf(c, "wrong number of arguments for '%s' command", name);
}

static void reply_value(struct client *c, ar_value v)
{
	char buf[AR_VALUE_BUF];
	size_t len;
	const char *p;

	if (!v) {
		reply_null(c);
		return;
	}
	p = ar_decode(v, buf, &len);
	reply_bulk(c, p, len);
}

/* The array at argv[1] for reading: *a NULL if the key is missing; false
 * (WRONGTYPE replied) if it holds another type. */
static bool array_read(struct client *c, struct array **a)
{
	struct entry *e = key_find_read(c, 1);

	*a = NULL;
	if (!e)
		return true;
	if (!entry_is(c, e, OBJ_ARRAY))
		return false;
	*a = array_of(&e->val);
	return true;
}

/* The array at argv[1] for writing, made if missing (NULL: WRONGTYPE). */
static struct entry *array_write(struct client *c)
{
	struct entry *e = key_find(c, 1);

	if (!e)
		return db_add(c->db, c->argv[1].p, c->argv[1].len, array_new());
	return entry_is(c, e, OBJ_ARRAY) ? e : NULL;
}

/* After a write: the change, its event, and the key gone if emptied. */
static void array_written(struct client *c, struct entry *e, const char *event)
{
	bool gone = !array_count(array_of(&e->val));

	if (gone)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	notify_arg(c, NOTIFY_ARRAY, event, 1);
	if (gone)
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
}

void cmd_arget(struct client *c)
{
	struct array *a;
	uint64_t idx;

	if (!array_read(c, &a) || !arg_index(c, 2, &idx))
		return;
	reply_value(c, a ? array_get(a, idx) : 0);
}

void cmd_armget(struct client *c)
{
	struct array *a;
	uint64_t idx;

	if (!array_read(c, &a))
		return;
	for (int i = 2; i < c->argc; i++)
		if (!arg_index(c, i, &idx))
			return;
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		parse_index(&c->argv[i], false, &idx);
		reply_value(c, a ? array_get(a, idx) : 0);
	}
}

void cmd_arset(struct client *c)
{
	uint64_t start, last, before;
	struct entry *e;
	struct array *a;

	if (!arg_index(c, 2, &start))
		return;
	last = start + (uint64_t)(c->argc - 3) - 1;
	if (last < start || last == UINT64_MAX) {
		reply_error(c, "array index overflow");
		return;
	}
	if (!(e = array_write(c)))
		return;
	a = array_of(&e->val);
	before = array_count(a);
	if (c->argc > 4)
		array_prepare_range(a, start, last);
	for (int i = 3; i < c->argc; i++)
		array_set(a, start + (uint64_t)(i - 3), ar_encode(c->argv[i].p, c->argv[i].len));
	array_written(c, e, "arset");
	reply_int(c, (long long)(array_count(a) - before));
}

void cmd_armset(struct client *c)
{
	uint64_t idx, before;
	struct entry *e;
	struct array *a;

	if ((c->argc - 2) % 2) {
		reply_arity(c, "armset");
		return;
	}
	for (int i = 2; i < c->argc; i += 2)
		if (!arg_index(c, i, &idx))
			return;
	if (!(e = array_write(c)))
		return;
	a = array_of(&e->val);
	before = array_count(a);
	for (int i = 2; i < c->argc; i += 2) {
		parse_index(&c->argv[i], false, &idx);
		array_set(a, idx, ar_encode(c->argv[i + 1].p, c->argv[i + 1].len));
	}
	array_written(c, e, "armset");
	reply_int(c, (long long)(array_count(a) - before));
}

void cmd_ardel(struct client *c)
{
	struct entry *e;
	uint64_t idx;
	long long deleted = 0;

	for (int i = 2; i < c->argc; i++)
		if (!arg_index(c, i, &idx))
			return;
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_ARRAY))
		return;
	for (int i = 2; i < c->argc; i++) {
		parse_index(&c->argv[i], false, &idx);
		deleted += array_del(array_of(&e->val), idx);
	}
	if (deleted)
		array_written(c, e, "ardel");
	reply_int(c, deleted);
}

void cmd_ardelrange(struct client *c)
{
	struct entry *e;
	uint64_t lo, hi, deleted = 0;

	if ((c->argc - 2) % 2) {
		reply_arity(c, "ardelrange");
		return;
	}
	for (int i = 2; i < c->argc; i += 2)
		if (!arg_index(c, i, &lo) || !arg_index(c, i + 1, &hi))
			return;
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_ARRAY))
		return;
	for (int i = 2; i < c->argc; i += 2) {
		parse_index(&c->argv[i], false, &lo);
		parse_index(&c->argv[i + 1], false, &hi);
		deleted += lo <= hi ? array_del_range(array_of(&e->val), lo, hi)
				    : array_del_range(array_of(&e->val), hi, lo);
	}
	if (deleted)
		array_written(c, e, "ardelrange");
	reply_uint(c, deleted);
}

void cmd_arlen(struct client *c)
{
	struct array *a;

	if (array_read(c, &a))
		reply_uint(c, a ? array_len(a) : 0);
}

void cmd_arcount(struct client *c)
{
	struct array *a;

	if (array_read(c, &a))
		reply_uint(c, a ? array_count(a) : 0);
}

void cmd_argetrange(struct client *c)
{
	uint64_t start, end, lo, hi;
	struct array *a;

	if (!arg_index(c, 2, &start) || !arg_index(c, 3, &end) || !array_read(c, &a))
		return;
	lo = start < end ? start : end;
	hi = start < end ? end : start;
	if (hi - lo + 1 > GETRANGE_MAX || hi - lo + 1 == 0) {
		reply_errorf(c, "range exceeds maximum of %u items", GETRANGE_MAX);
		return;
	}
	reply_array(c, (long)(hi - lo + 1));
	for (uint64_t i = 0; i <= hi - lo; i++)
		reply_value(c, a ? array_get(a, start <= end ? lo + i : hi - i) : 0);
}

/* What ARSCAN and ARGREP collect before replying (the count comes first). */
struct hits {
	uint64_t *idx;
	ar_value *val;
	size_t n, cap;
	uint64_t limit;
};

static void hits_add(struct hits *h, uint64_t idx, ar_value v)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->idx = xrealloc(h->idx, h->cap * sizeof(*h->idx));
		h->val = xrealloc(h->val, h->cap * sizeof(*h->val));
	}
	h->idx[h->n] = idx;
	h->val[h->n++] = v;
}

static void hits_free(struct hits *h)
{
	xfree(h->idx);
	xfree(h->val);
}

static bool collect(void *ctx, uint64_t idx, ar_value v)
{
	struct hits *h = ctx;

	hits_add(h, idx, v);
	return h->n < h->limit;
}

void cmd_arscan(struct client *c)
{
	struct hits h = { .limit = UINT64_MAX };
	uint64_t start, end;
	struct array *a;
	long long ll;

	if (!arg_index(c, 2, &start) || !arg_index(c, 3, &end))
		return;
	if (c->argc == 6) {
		if (strcasecmp(c->argv[4].p, "LIMIT")) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		if (!arg_ll(c, 5, &ll))
			return;
		if (ll <= 0) {
			reply_error(c, "LIMIT must be positive");
			return;
		}
		h.limit = (uint64_t)ll;
	} else if (c->argc != 4) {
		reply_arity(c, "arscan");
		return;
	}
	if (!array_read(c, &a))
		return;
	if (a)
		array_walk(a, start, end, collect, &h);
	reply_array(c, (long)h.n);
	for (size_t i = 0; i < h.n; i++) {
		reply_array(c, 2);
		reply_uint(c, h.idx[i]);
		reply_value(c, h.val[i]);
	}
	hits_free(&h);
}

/* ---- ARGREP --------------------------------------------------------------------------------- */

enum pred_kind { PRED_EXACT = 1, PRED_MATCH, PRED_GLOB, PRED_RE };

struct pred {
	enum pred_kind kind;
	const struct arg *pattern;
	regex_t re;
	bool compiled;
};

struct grep {
	struct pred *preds;
	int n;
	bool all; /* AND (else OR) */
	bool withvalues, nocase;
	struct hits hits;
};

static unsigned char lower(unsigned char ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch;
}

static bool bytes_eq(const char *a, const char *b, size_t len, bool nocase)
{
	if (!nocase)
		return !memcmp(a, b, len);
	for (size_t i = 0; i < len; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return false;
	return true;
}

static bool bytes_contain(const char *h, size_t hlen, const char *n, size_t nlen, bool nocase)
{
	if (nlen > hlen)
		return false;
	for (size_t i = 0; i + nlen <= hlen; i++)
		if (bytes_eq(h + i, n, nlen, nocase))
			return true;
	return false;
}

static bool pred_match(const struct grep *g, const struct pred *p, const char *s, size_t len)
{
	switch (p->kind) {
	case PRED_EXACT:
		return len == p->pattern->len && bytes_eq(s, p->pattern->p, len, g->nocase);
	case PRED_MATCH:
		return bytes_contain(s, len, p->pattern->p, p->pattern->len, g->nocase);
	case PRED_GLOB:
		return glob_match(p->pattern->p, p->pattern->len, s, len, g->nocase);
	default:
		return tre_regnexec(&p->re, s, len, 0, NULL, 0) == REG_OK;
	}
}

static bool grep_visit(void *ctx, uint64_t idx, ar_value v)
{
	struct grep *g = ctx;
	char buf[AR_VALUE_BUF];
	size_t len;
	const char *s = ar_decode(v, buf, &len);
	bool hit = g->all;

	for (int i = 0; i < g->n; i++) {
		if (pred_match(g, &g->preds[i], s, len) != g->all) {
			hit = !g->all;
			break;
		}
	}
	if (hit)
		hits_add(&g->hits, idx, v);
	return g->hits.n < g->hits.limit;
}

static void grep_free(struct grep *g)
{
	for (int i = 0; i < g->n; i++)
		if (g->preds[i].compiled)
			tre_regfree(&g->preds[i].re);
	xfree(g->preds);
	hits_free(&g->hits);
}

static enum pred_kind pred_kind(const char *word)
{
	static const char *const names[] = { "EXACT", "MATCH", "GLOB", "RE" };

	for (int i = 0; i < 4; i++)
		if (!strcasecmp(word, names[i]))
			return (enum pred_kind)(i + 1);
	return 0;
}

/* Parses predicates and options (in any order, the last of an option
 * winning), then compiles the expressions, NOCASE being known. */
static bool grep_parse(struct client *c, struct grep *g)
{
	long long ll;

	g->preds = xcalloc((size_t)c->argc, sizeof(*g->preds));
	for (int i = 4; i < c->argc;) {
		const char *w = c->argv[i].p;
		enum pred_kind k = pred_kind(w);

		if (k) {
			if (i + 1 >= c->argc) {
				reply_error(c, ERR_SYNTAX);
				return false;
			}
			if (g->n >= GREP_MAX_PREDICATES) {
				reply_errorf(c, "too many predicates, maximum is %d",
					     GREP_MAX_PREDICATES);
				return false;
			}
			if (k == PRED_RE && c->argv[i + 1].len > GREP_MAX_RE) {
				reply_errorf(c,
					     "regular expression is too long, maximum is %d bytes",
					     GREP_MAX_RE);
				return false;
			}
			g->preds[g->n++] = (struct pred){ .kind = k, .pattern = &c->argv[i + 1] };
			i += 2;
		} else if (!strcasecmp(w, "LIMIT")) {
			if (i + 1 >= c->argc) {
				reply_error(c, ERR_SYNTAX);
				return false;
			}
			if (!arg_ll(c, i + 1, &ll))
				return false;
			if (ll <= 0) {
				reply_error(c, "LIMIT must be positive");
				return false;
			}
			g->hits.limit = (uint64_t)ll;
			i += 2;
		} else if (!strcasecmp(w, "WITHVALUES") || !strcasecmp(w, "NOCASE")) {
			*(!strcasecmp(w, "NOCASE") ? &g->nocase : &g->withvalues) = true;
			i++;
		} else if (!strcasecmp(w, "AND") || !strcasecmp(w, "OR")) {
			g->all = !strcasecmp(w, "AND");
			i++;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	if (!g->n) {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	for (int i = 0; i < g->n; i++) {
		struct pred *p = &g->preds[i];
		char msg[256];
		int err;

		if (p->kind != PRED_RE)
			continue;
		if (!p->pattern->len) {
			reply_error(c, "regular expression is empty");
			return false;
		}
		err = tre_regncomp(&p->re, p->pattern->p, p->pattern->len,
				   REG_EXTENDED | REG_NOSUB | (g->nocase ? REG_ICASE : 0));
		if (err != REG_OK) {
			tre_regerror(err, &p->re, msg, sizeof(msg));
			reply_errorf(c, "invalid regular expression: %s", msg);
			return false;
		}
		p->compiled = true;
		if (tre_have_backrefs(&p->re)) {
			reply_error(c, "regular expression backreferences are not supported");
			return false;
		}
	}
	return true;
}

/* A bound of ARGREP: an index, or "-" / "+" for the first and last. */
static bool grep_bound(struct client *c, int i, int *special, uint64_t *idx)
{
	const struct arg *a = &c->argv[i];

	*special = a->len == 1 && (a->p[0] == '-' || a->p[0] == '+') ? a->p[0] : 0;
	return *special || arg_index(c, i, idx);
}

void cmd_argrep(struct client *c)
{
	struct grep g = { .hits.limit = UINT64_MAX };
	uint64_t start = 0, end = 0, last;
	int s_special, e_special;
	struct array *a;

	if (!grep_bound(c, 2, &s_special, &start) || !grep_bound(c, 3, &e_special, &end))
		return;
	if (grep_parse(c, &g) && array_read(c, &a)) {
		if (a && array_len(a)) {
			last = array_len(a) - 1;
			start = s_special == '-' ? 0 : s_special == '+' ? last : start;
			end = e_special == '-' ? 0 : e_special == '+' ? last : end;
			array_walk(a, start, end, grep_visit, &g);
		}
		reply_array(c, (long)g.hits.n);
		for (size_t i = 0; i < g.hits.n; i++) {
			if (g.withvalues)
				reply_array(c, 2);
			reply_uint(c, g.hits.idx[i]);
			if (g.withvalues)
				reply_value(c, g.hits.val[i]);
		}
	}
	grep_free(&g);
}

/* ---- AROP ----------------------------------------------------------------------------------- */

enum op { OP_SUM = 1, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR, OP_MATCH, OP_USED };

struct opacc {
	enum op op;
	const struct arg *match;
	long double acc;
	int64_t bits;
	long long hits;
	bool seen;
};

/* A value as a number: integers exactly, others as a long double; false if
 * it is not a number (then SUM, MIN, MAX and the bit operations skip it). */
static bool numeric(ar_value v, long double *num, bool *is_int, int64_t *ival)
{
	char buf[AR_VALUE_BUF];
	size_t len;
	const char *p;
	long long ll;

	*is_int = false;
	if (ar_kind(v) == AR_KIND_INT) {
		*ival = ar_int(v);
		*num = (long double)*ival;
		*is_int = true;
		return true;
	}
	if (ar_kind(v) == AR_KIND_FLOAT) {
		*num = (long double)ar_double(v);
		return true;
	}
	p = ar_decode(v, buf, &len);
	if (str_to_ll(p, len, &ll)) {
		*ival = ll;
		*num = (long double)ll;
		*is_int = true;
		return true;
	}
	return str_to_ld(p, len, num);
}

static bool op_visit(void *ctx, uint64_t idx, ar_value v)
{
	struct opacc *o = ctx;
	long double num;
	int64_t ival = 0;
	bool is_int;

	(void)idx;
	if (o->op == OP_USED) {
		o->hits++;
		return true;
	}
	if (o->op == OP_MATCH) {
		char buf[AR_VALUE_BUF];
		size_t len;
		const char *p = ar_decode(v, buf, &len);

		o->hits += len == o->match->len && !memcmp(p, o->match->p, len);
		return true;
	}
	if (!numeric(v, &num, &is_int, &ival))
		return true;
	if (o->op == OP_AND || o->op == OP_OR || o->op == OP_XOR) {
		if (!is_int) {
			/* A float counts by its integer part, when there is one. */
			if (isnan(num) || num < (long double)INT64_MIN ||
			    num > (long double)INT64_MAX)
				return true;
			ival = (int64_t)num;
		}
		if (!o->seen)
			o->bits = ival;
		else if (o->op == OP_AND)
			o->bits &= ival;
		else if (o->op == OP_OR)
			o->bits |= ival;
		else
			o->bits ^= ival;
	} else if (!o->seen) {
		o->acc = num;
	} else if (o->op == OP_SUM) {
		o->acc += num;
	} else if (o->op == OP_MIN ? num < o->acc : num > o->acc) {
		o->acc = num;
	}
	o->seen = true;
	return true;
}

void cmd_arop(struct client *c)
{
	static const char *const names[] = { "SUM", "MIN", "MAX",   "AND",
					     "OR",  "XOR", "MATCH", "USED" };
	struct opacc o = { 0 };
	uint64_t start, end;
	struct array *a;
	struct entry *e;

	if (!arg_index(c, 2, &start) || !arg_index(c, 3, &end))
		return;
	for (int i = 0; i < 8; i++)
		if (!strcasecmp(c->argv[4].p, names[i]))
			o.op = (enum op)(i + 1);
	if (!o.op) {
		reply_error(c, "unknown operation");
		return;
	}
	if (o.op == OP_MATCH) {
		if (c->argc != 6) {
			reply_error(c, "MATCH requires a value argument");
			return;
		}
		o.match = &c->argv[5];
	} else if (c->argc != 5) {
		reply_arity(c, "arop");
		return;
	}
	e = key_find_read(c, 1);
	if (!e) {
		if (o.op == OP_MATCH || o.op == OP_USED)
			reply_int(c, 0);
		else
			reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_ARRAY))
		return;
	a = array_of(&e->val);
	array_walk(a, start, end, op_visit, &o);
	if (o.op == OP_MATCH || o.op == OP_USED) {
		reply_int(c, o.hits);
	} else if (!o.seen) {
		reply_null(c);
	} else if (o.op == OP_AND || o.op == OP_OR || o.op == OP_XOR) {
		reply_int(c, o.bits);
	} else {
		char buf[64];
		int len;

		/* As Redis's ld2string in its "auto" mode. */
		if (isinf(o.acc))
			len = snprintf(buf, sizeof(buf), o.acc > 0 ? "inf" : "-inf");
		else if (isnan(o.acc))
			len = snprintf(buf, sizeof(buf), "nan");
		else
			len = snprintf(buf, sizeof(buf), "%.17Lg", o.acc);
		reply_bulk(c, buf, (size_t)len);
	}
}

/* ---- the insert cursor: ARINSERT, ARRING, ARNEXT, ARSEEK, ARLASTITEMS ------------------------ */

void cmd_arinsert(struct client *c)
{
	uint64_t first, last, idx;
	struct entry *e;
	struct array *a;

	if (!(e = array_write(c)))
		return;
	a = array_of(&e->val);
	idx = array_insert_idx(a);
	if (idx != AR_NO_INSERT && idx >= UINT64_MAX - 1) {
		reply_error(c, "insert index overflow");
		goto fail;
	}
	first = idx == AR_NO_INSERT ? 0 : idx + 1;
	last = first + (uint64_t)(c->argc - 2) - 1;
	if (last < first || last == UINT64_MAX) {
		reply_error(c, "insert index overflow");
		goto fail;
	}
	if (c->argc > 3)
		array_prepare_range(a, first, last);
	for (int i = 2; i < c->argc; i++)
		array_set(a, first + (uint64_t)(i - 2), ar_encode(c->argv[i].p, c->argv[i].len));
	array_set_insert_idx(a, last);
	array_written(c, e, "arinsert");
	reply_uint(c, last);
	return;
fail:
	/* A key just made for this command holds nothing: it goes. */
	if (!array_count(a))
		db_delete(c->db, e);
}

void cmd_arring(struct client *c)
{
	uint64_t size, span, cursor = 0;
	struct entry *e;
	struct array *a;
	long long ll;

	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &ll)) {
		reply_error(c, "invalid size");
		return;
	}
	if (ll <= 0) {
		reply_error(c, "size must be positive");
		return;
	}
	size = (uint64_t)ll;
	if (!(e = array_write(c)))
		return;
	a = array_of(&e->val);
	/* A new size reshapes the ring once, keeping the latest values: when
	 * it shrinks, or grows after the ring has wrapped. */
	span = array_len(a);
	if (span && size < span)
		array_ring_rework(a, span, size);
	else if (span && size > span && array_insert_idx(a) != AR_NO_INSERT &&
		 array_insert_idx(a) + 1 < span)
		array_ring_rework(a, span, span);
	for (int i = 3; i < c->argc; i++) {
		uint64_t idx = array_insert_idx(a);

		cursor = idx == AR_NO_INSERT ? 0 : idx + 1;
		if (cursor >= size)
			cursor %= size;
		array_set(a, cursor, ar_encode(c->argv[i].p, c->argv[i].len));
		array_set_insert_idx(a, cursor);
	}
	array_written(c, e, "arring");
	reply_uint(c, cursor);
}

void cmd_arnext(struct client *c)
{
	struct array *a;
	uint64_t idx;

	if (!array_read(c, &a))
		return;
	idx = a ? array_insert_idx(a) : AR_NO_INSERT;
	if (idx == AR_NO_INSERT)
		reply_int(c, 0);
	else if (idx == UINT64_MAX - 1)
		reply_null(c);
	else
		reply_uint(c, idx + 1);
}

void cmd_arseek(struct client *c)
{
	struct entry *e;
	uint64_t idx;

	if (!parse_index(&c->argv[2], true, &idx)) {
		reply_error(c, ERR_INDEX);
		return;
	}
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_ARRAY))
		return;
	array_set_insert_idx(array_of(&e->val), idx ? idx - 1 : AR_NO_INSERT);
	array_written(c, e, "arseek");
	reply_int(c, 1);
}

void cmd_arlastitems(struct client *c)
{
	uint64_t n, len, at;
	struct array *a;
	long long count;
	bool rev = false;
	ar_value *got;

	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &count)) {
		reply_error(c, "invalid COUNT");
		return;
	}
	if (count <= 0) {
		reply_array(c, 0);
		return;
	}
	if (c->argc == 4) {
		if (strcasecmp(c->argv[3].p, "REV")) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		rev = true;
	} else if (c->argc != 3) {
		reply_arity(c, "arlastitems");
		return;
	}
	if (!array_read(c, &a))
		return;
	if (!a || !array_count(a)) {
		reply_array(c, 0);
		return;
	}
	/* Walks back from the cursor (or the last index after ARSEEK 0),
	 * wrapping: positions, holes included. */
	len = array_len(a);
	n = (uint64_t)count < array_count(a) ? (uint64_t)count : array_count(a);
	at = array_insert_idx(a) == AR_NO_INSERT ? len - 1 : array_insert_idx(a);
	got = xmalloc(n * sizeof(*got));
	for (uint64_t i = 0; i < n; i++) {
		got[i] = array_get(a, at);
		at = at ? at - 1 : len - 1;
	}
	reply_array(c, (long)n);
	for (uint64_t i = 0; i < n; i++)
		reply_value(c, got[rev ? i : n - 1 - i]);
	xfree(got);
}

void cmd_arinfo(struct client *c)
{
	struct array_info in;
	struct array *a;
	struct entry *e;
	bool full = false;

	if (c->argc > 2) {
		if (c->argc != 3 || strcasecmp(c->argv[2].p, "FULL")) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		full = true;
	}
	e = key_find_read(c, 1);
	if (!e) {
		reply_error(c, ERR_NO_KEY);
		return;
	}
	if (!entry_is(c, e, OBJ_ARRAY))
		return;
	a = array_of(&e->val);
	array_info(a, &in);
	reply_map(c, full ? 12 : 7);
	reply_bulk_cstr(c, "count");
	reply_uint(c, array_count(a));
	reply_bulk_cstr(c, "len");
	reply_uint(c, array_len(a));
	reply_bulk_cstr(c, "next-insert-index");
	reply_uint(c, array_insert_idx(a) >= UINT64_MAX - 1 ? 0 : array_insert_idx(a) + 1);
	reply_bulk_cstr(c, "slices");
	reply_int(c, (long long)in.slices);
	reply_bulk_cstr(c, "directory-size");
	reply_int(c, (long long)in.directory_size);
	reply_bulk_cstr(c, "super-dir-entries");
	reply_int(c, (long long)in.superdir_entries);
	reply_bulk_cstr(c, "slice-size");
	reply_int(c, (long long)in.slice_size);
	if (!full)
		return;
	reply_bulk_cstr(c, "dense-slices");
	reply_int(c, (long long)in.dense);
	reply_bulk_cstr(c, "sparse-slices");
	reply_int(c, (long long)in.sparse);
	reply_bulk_cstr(c, "avg-dense-size");
	reply_double(c, in.dense ? (double)in.dense_window_total / (double)in.dense : 0);
	reply_bulk_cstr(c, "avg-dense-fill");
	reply_double(c, in.dense_window_total
				? (double)in.dense_count_total / (double)in.dense_window_total
				: 0);
	reply_bulk_cstr(c, "avg-sparse-size");
	reply_double(c, in.sparse ? (double)in.sparse_cap_total / (double)in.sparse : 0);
}
