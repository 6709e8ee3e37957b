// SPDX-License-Identifier: BSD-3-Clause
/*
 * SORT and SORT_RO: the elements of a list, set or sorted set, sorted by
 * their own value or by other keys (BY pattern), optionally replaced by other
 * keys' values (GET pattern), sliced (LIMIT) and stored as a list (STORE).
 *
 * What clients can observe follows Redis 7.0:
 *  - numbers are read as Redis 8.8's string2d does: strtod of the whole
 *    string, hex and "inf" are numbers; "", a leading blank, trailing bytes
 *    (a NUL too), NaN, overflow and underflow to zero are not (subnormals
 *    are);
 *  - numeric ties are broken by comparing the elements' bytes, so the output
 *    is deterministic. ALPHA compares bytes, as strcmp does (up to the first
 *    NUL) for a reply and as memcmp does (whole strings) with STORE, since
 *    Redis uses strcoll only for replies and xkvd runs in the C locale. Other
 *    ties keep the input order, as the stable merge sort behind glibc's
 *    qsort does;
 *  - BY without a '*' means "do not sort": a list or sorted set keeps its own
 *    order (DESC reversing it, LIMIT slicing it), a set its iteration order,
 *    except with STORE, where a set is sorted ALPHA so that the stored list
 *    does not depend on the encoding. Once given, such a BY sticks even if a
 *    later BY has a '*', as in Redis;
 *  - a sorted set is converted to the skiplist encoding, as Redis 7.0 does
 *    before it sorts one (OBJECT ENCODING shows it). That is a change of
 *    representation, not of value, so it is not signalled (no WATCH abort).
 *
 * A pattern names another key: its first '*' is replaced by the element, and
 * "key->field" after the '*' reads a hash field. "#" is the element itself; a
 * pattern without '*' names nothing. A key of the wrong type, a missing key
 * or field reads as missing: it sorts as 0 (numeric) or first (ALPHA), GET
 * replies nil for it and STORE stores "" in its place. Lookups count
 * keyspace hits and misses and expire keys lazily, as Redis's lookupKeyRead,
 * and a hash field read past its deadline is reclaimed (Redis 8.8).
 *
 * Locking. The dispatcher holds the sorted key's shard and STORE's (the key
 * specs find them), or every shard of the client's database when a BY or GET
 * pattern with a '*' names other keys (command_meta_keys_from_values).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "exec_ctx.h"
#include "notify.h"
#include "mem.h"
#include "t_hash.h"
#include "t_list.h"
#include "t_set.h"
#include "t_zset.h"
#include "util.h"

#define ERR_SCORES "One or more scores can't be converted into double"

/* A BY or GET pattern, analysed once. */
struct pattern {
	const char *p;
	size_t len;
	bool self;	  /* "#": the element itself */
	const char *star; /* the first '*' (before any NUL), or NULL: names nothing */
	size_t keyend;	  /* the key part is p[0..keyend) */
	const char *field;
	size_t flen; /* the hash field after "->", if any */
};

struct sort_opts {
	bool desc, alpha, dontsort;
	long long limit_start, limit_count;
	const struct arg *by;
	const struct arg *store;
	struct pattern *gets;
	int ngets;
};

/*
 * One element to sort. Its bytes and those of its ALPHA BY value live in the
 * command's arena: offsets while it grows, resolved to pointers before the
 * sort. idx is the load order, the last tie-breaker.
 */
struct sort_item {
	union {
		size_t off;
		const char *p;
	};
	size_t len;
	union {
		size_t cmp_off;
		const char *cmp;
	};
	size_t cmp_len;
	bool has_cmp;
	double score;
	size_t idx;
};

/* Growable bytes owned by one SORT call. */
struct arena {
	char *buf;
	size_t len, cap;
};

static size_t arena_put(struct arena *a, const char *p, size_t len)
{
	size_t off = a->len;

	/* Never NULL once used, even for empty strings (memcpy's contract). */
	if (a->len + len > a->cap || !a->buf) {
		a->cap = (a->len + len) * 2 + 64;
		a->buf = xrealloc(a->buf, a->cap);
	}
	if (len)
		memcpy(a->buf + off, p, len);
	a->len += len;
	return off;
}

/* A value a pattern reads: bytes valid while that key is unchanged, or, for
 * an integer-encoded string, formatted into tmp. */
struct pattern_val {
	const char *p;
	size_t len;
	char tmp[LL_STR_SIZE + 1];
};

/* Scratch space for building looked-up key names, reused across lookups. */
struct keybuf {
	char *buf;
	size_t cap;
};

static void pattern_init(struct pattern *pt, const struct arg *a)
{
	size_t clen = strnlen(a->p, a->len);
	const char *after;

	memset(pt, 0, sizeof(*pt));
	pt->p = a->p;
	pt->len = a->len;
	/* Redis reads the pattern as a C string for these tests. */
	pt->self = clen == 1 && a->p[0] == '#';
	pt->star = memchr(a->p, '*', clen);
	pt->keyend = a->len;
	if (!pt->star)
		return;
	after = pt->star + 1;
	for (const char *f = after; f + 2 < a->p + clen; f++) {
		if (f[0] == '-' && f[1] == '>') {
			pt->keyend = (size_t)(f - a->p);
			pt->field = f + 2;
			pt->flen = a->len - pt->keyend - 2;
			break;
		}
	}
}

/*
 * A field a pattern read past its deadline is reclaimed, as Redis's lazy field
 * expiry does ("hexpired", or "del" for the hash's last field). Safe here: the
 * values taken so far were parsed or copied, and the sorted key is no hash.
 */
static void reclaim_field(struct client *c, struct entry *e, const char *key, size_t klen,
			  const struct pattern *pt)
{
	struct field_list fl = { 0 };

	if (__atomic_load_n(&store_allow_access_expired, __ATOMIC_RELAXED))
		return;
	hash_delete(&e->val, pt->field, pt->flen);
	db_count_expired_fields(c->db, e, 1);
	if (!hash_len(&e->val)) {
		db_delete(c->db, e);
		notify_keyspace_event(NOTIFY_GENERIC, "del", key, klen, c->db);
		return;
	}
	db_changed(c->db, e);
	field_list_push(&fl, pt->field, pt->flen);
	notify_keyspace_fields(NOTIFY_HASH, "hexpired", key, klen, c->db, &fl);
	field_list_free(&fl);
}

/*
 * The value pattern pt names for element el, in *out; false if it names
 * nothing (see the top of the file). The caller holds the database's shards.
 */
static bool pattern_lookup(struct client *c, const struct pattern *pt, const char *el, size_t elen,
			   struct keybuf *kb, struct pattern_val *out)
{
	size_t prefix, postfix, klen;
	struct hash_field hf;
	struct entry *e;

	if (pt->self) {
		out->p = el;
		out->len = elen;
		return true;
	}
	if (!pt->star)
		return false;
	prefix = (size_t)(pt->star - pt->p);
	postfix = pt->keyend - prefix - 1;
	klen = prefix + elen + postfix;
	if (klen >= kb->cap) {
		kb->cap = klen * 2 + 64;
		kb->buf = xrealloc(kb->buf, kb->cap);
	}
	memcpy(kb->buf, pt->p, prefix);
	memcpy(kb->buf + prefix, el, elen);
	memcpy(kb->buf + prefix + elen, pt->star + 1, postfix);

	e = db_find_read(c->db, kb->buf, klen);
	if (!e)
		return false;
	if (pt->field) {
		if (e->val.type != OBJ_HASH || !hash_get(&e->val, pt->field, pt->flen, &hf))
			return false;
		if (hf.expire != HASH_NO_EXPIRE && hf.expire < store_now()) {
			reclaim_field(c, e, kb->buf, klen, pt);
			return false;
		}
		out->p = hf.v;
		out->len = hf.vlen;
		return true;
	}
	if (e->val.type != OBJ_STRING)
		return false;
	out->p = obj_str(&e->val, out->tmp, &out->len);
	return true;
}

/* A score as Redis's SORT reads one with strtod (see the top of the file). */
static bool parse_score(const char *p, size_t len, double *out)
{
	char stack[128], *buf;
	char *end;
	bool ok;

	/* Redis 8.8's string2d: no empty string, no leading blank, and of the
	 * range errors only an overflow or an underflow to zero (subnormals
	 * are numbers). */
	if (!len || isspace((unsigned char)p[0]))
		return false;
	buf = len < sizeof(stack) ? stack : xmalloc(len + 1);
	memcpy(buf, p, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	ok = end == buf + len && !isnan(*out) &&
	     !(errno == ERANGE && (isinf(*out) || fpclassify(*out) == FP_ZERO));
	if (buf != stack)
		xfree(buf);
	return ok;
}

/* memcmp order, a shorter prefix first. */
static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int cmp = memcmp(a, b, alen < blen ? alen : blen);

	if (cmp)
		return cmp;
	return alen < blen ? -1 : alen > blen;
}

/* strcmp order: the strings end at their first NUL. */
static int cstr_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	return bytes_cmp(a, strnlen(a, alen), b, strnlen(b, blen));
}

struct sort_cmp_ctx {
	bool desc, alpha, by, binary;
};

static int sort_cmp(const void *x, const void *y, void *arg)
{
	const struct sort_item *a = *(struct sort_item *const *)x;
	const struct sort_item *b = *(struct sort_item *const *)y;
	const struct sort_cmp_ctx *k = arg;
	int (*str_cmp)(const char *, size_t, const char *, size_t) =
		k->binary ? bytes_cmp : cstr_cmp;
	int cmp;

	if (!k->alpha) {
		if (a->score != b->score)
			cmp = a->score > b->score ? 1 : -1;
		else
			cmp = bytes_cmp(a->p, a->len, b->p, b->len);
	} else if (k->by) {
		if (!a->has_cmp || !b->has_cmp)
			cmp = (int)a->has_cmp - (int)b->has_cmp;
		else
			cmp = str_cmp(a->cmp, a->cmp_len, b->cmp, b->cmp_len);
	} else {
		cmp = str_cmp(a->p, a->len, b->p, b->len);
	}
	if (k->desc)
		cmp = -cmp;
	if (!cmp)
		cmp = a->idx < b->idx ? -1 : a->idx > b->idx;
	return cmp;
}

/* Parses argv[2..]; false after replying with the error. o->gets is
 * allocated (the caller frees it) when there are GET options. */
static bool parse_opts(struct client *c, bool ro, struct sort_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->limit_count = -1;
	for (int j = 2; j < c->argc; j++) {
		int left = c->argc - j - 1;

		if (arg_is(c, j, "asc")) {
			o->desc = false;
		} else if (arg_is(c, j, "desc")) {
			o->desc = true;
		} else if (arg_is(c, j, "alpha")) {
			o->alpha = true;
		} else if (arg_is(c, j, "limit") && left >= 2) {
			if (!arg_ll(c, j + 1, &o->limit_start) ||
			    !arg_ll(c, j + 2, &o->limit_count))
				return false;
			j += 2;
		} else if (!ro && arg_is(c, j, "store") && left >= 1) {
			o->store = &c->argv[++j];
		} else if (arg_is(c, j, "by") && left >= 1) {
			o->by = &c->argv[++j];
			if (!memchr(o->by->p, '*', strnlen(o->by->p, o->by->len)))
				o->dontsort = true;
		} else if (arg_is(c, j, "get") && left >= 1) {
			if (!o->gets)
				o->gets = xmalloc(sizeof(*o->gets) * (size_t)(c->argc / 2));
			pattern_init(&o->gets[o->ngets++], &c->argv[++j]);
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* Redis 7.0 sorts a sorted set in its skiplist form and leaves it so. */
static void zset_to_skiplist(struct obj *o)
{
	struct zset_iter it;
	struct zset_elem el;
	struct obj n;

	if (o->enc != ENC_LISTPACK)
		return;
	n = zset_new(zset_len(o), SIZE_MAX);
	zset_iter_init(&it, o, 0, false);
	while (zset_iter_next(&it, &el))
		zset_add(&n, el.score, el.m, el.len, 0, NULL);
	obj_free(o);
	*o = n;
}

/* The state of one SORT call, freed by sort_free(). */
struct sort_run {
	struct sort_item *items;
	struct sort_item **order; /* the items in output order: sorting moves pointers */
	size_t n, cap;
	struct arena arena;
	struct keybuf kb;
};

static void run_reserve(struct sort_run *r, size_t n)
{
	if (n > r->cap) {
		r->cap = n;
		r->items = xrealloc(r->items, r->cap * sizeof(*r->items));
	}
}

static void run_add(struct sort_run *r, const char *p, size_t len)
{
	struct sort_item *it;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->items = xrealloc(r->items, r->cap * sizeof(*r->items));
	}
	it = &r->items[r->n];
	memset(it, 0, sizeof(*it));
	it->off = arena_put(&r->arena, p, len);
	it->len = len;
	it->idx = r->n++;
}

/* Loads the elements of o (NULL: a missing key) that will be sorted or, when
 * not sorting a list or sorted set, only those of [start, end]. */
static void load_items(struct sort_run *r, const struct obj *o, bool dontsort, bool desc,
		       long long start, long long end)
{
	long long n = end - start + 1;

	if (!o)
		return;
	if (o->type == OBJ_LIST) {
		struct list_iter it;
		struct list_elem el;
		size_t len = list_len(o);

		run_reserve(r, dontsort ? (size_t)(n > 0 ? n : 0) : len);
		if (!dontsort) {
			list_iter_init(&it, o, 0, false);
			while (list_iter_next(&it, &el))
				run_add(r, el.p, el.len);
			return;
		}
		if (n <= 0)
			return;
		list_iter_init(&it, o, desc ? len - (size_t)start - 1 : (size_t)start, desc);
		for (long long i = 0; i < n && list_iter_next(&it, &el); i++)
			run_add(r, el.p, el.len);
	} else if (o->type == OBJ_SET) {
		struct set_iter it;
		const char *p;
		size_t len;

		run_reserve(r, set_size(o));
		set_iter_init(&it, o);
		while (set_iter_next(&it, &p, &len))
			run_add(r, p, len);
	} else {
		struct zset_iter it;
		struct zset_elem el;
		size_t len = zset_len(o);

		run_reserve(r, dontsort ? (size_t)(n > 0 ? n : 0) : len);
		if (!dontsort) {
			zset_iter_init(&it, o, 0, false);
			while (zset_iter_next(&it, &el))
				run_add(r, el.m, el.len);
			return;
		}
		if (n <= 0)
			return;
		zset_iter_init(&it, o, desc ? len - (size_t)start - 1 : (size_t)start, desc);
		for (long long i = 0; i < n && zset_iter_next(&it, &el); i++)
			run_add(r, el.m, el.len);
	}
}

/* Reads each item's sort key (its score, or its ALPHA BY value); false if
 * some score is not a number. Every item is read either way, as in Redis. */
static bool load_keys(struct client *c, struct sort_run *r, const struct sort_opts *o,
		      const struct pattern *by)
{
	bool ok = true;

	for (size_t i = 0; i < r->n; i++) {
		struct sort_item *it = &r->items[i];
		const char *el = r->arena.buf + it->off;
		struct pattern_val v;

		if (by) {
			if (!pattern_lookup(c, by, el, it->len, &r->kb, &v))
				continue;
		} else {
			v.p = el;
			v.len = it->len;
		}
		if (o->alpha) {
			if (by) {
				/* The arena may move: keep an offset for now. */
				it->cmp_off = arena_put(&r->arena, v.p, v.len);
				it->cmp_len = v.len;
				it->has_cmp = true;
			}
		} else if (!parse_score(v.p, v.len, &it->score)) {
			ok = false;
		}
	}
	return ok;
}

/* Turns the items' arena offsets into pointers, once the arena is final,
 * and lists the items in load order. */
static void resolve_items(struct sort_run *r)
{
	r->order = xmalloc((r->n ? r->n : 1) * sizeof(*r->order));
	for (size_t i = 0; i < r->n; i++) {
		struct sort_item *it = &r->items[i];

		r->order[i] = it;
		it->p = r->arena.buf + it->off;
		if (it->has_cmp)
			it->cmp = r->arena.buf + it->cmp_off;
	}
}

static void sort_free(struct sort_run *r, struct sort_opts *o)
{
	xfree(r->items);
	xfree(r->order);
	xfree(r->arena.buf);
	xfree(r->kb.buf);
	xfree(o->gets);
}

/* Replies with items [start, end] (or GET's values for them). */
static void reply_items(struct client *c, struct sort_run *r, const struct sort_opts *o,
			long long start, long long end)
{
	long long n = end - start + 1;

	reply_array(c, (long)(o->ngets ? n * o->ngets : n));
	for (long long j = start; j <= end; j++) {
		const struct sort_item *it = r->order[j];

		if (!o->ngets)
			reply_bulk(c, it->p, it->len);
		for (int g = 0; g < o->ngets; g++) {
			struct pattern_val v;

			if (pattern_lookup(c, &o->gets[g], it->p, it->len, &r->kb, &v))
				reply_bulk(c, v.p, v.len);
			else
				reply_null(c);
		}
	}
}

/* Stores items [start, end] (or GET's values, "" for missing ones) as a list
 * at the STORE key, or deletes that key if there are none; replies with the
 * list's length. */
static void store_items(struct client *c, struct sort_run *r, const struct sort_opts *o,
			long long start, long long end)
{
	const struct arg *dst = o->store;
	struct obj list = list_new();
	size_t len;

	for (long long j = start; j <= end; j++) {
		const struct sort_item *it = r->order[j];

		if (!o->ngets)
			list_push(&list, LIST_TAIL, it->p, it->len);
		for (int g = 0; g < o->ngets; g++) {
			struct pattern_val v;

			if (!pattern_lookup(c, &o->gets[g], it->p, it->len, &r->kb, &v)) {
				v.p = "";
				v.len = 0;
			}
			list_push(&list, LIST_TAIL, v.p, v.len);
		}
	}
	len = list_len(&list);
	/* Each element stored, as Redis (a deletion counts one). */
	if (len)
		command_dirty(len);
	if (len) {
		db_set(c->db, dst->p, dst->len, list, false);
		notify_keyspace_event(NOTIFY_LIST, "sortstore", dst->p, dst->len, c->db);
	} else {
		struct entry *d = db_find(c->db, dst->p, dst->len);

		obj_free(&list);
		if (d) {
			db_delete(c->db, d);
			notify_keyspace_event(NOTIFY_GENERIC, "del", dst->p, dst->len, c->db);
		}
	}
	reply_int(c, (long long)len);
}

static void sort_generic(struct client *c, bool ro)
{
	struct sort_run r = { 0 };
	struct pattern by_pat, *by = NULL;
	struct sort_opts o;
	struct entry *e;
	const struct obj *val = NULL;
	long long vlen = 0, start, end;
	bool ok = true;

	if (!parse_opts(c, ro, &o)) {
		xfree(o.gets);
		return;
	}

	e = key_find_read(c, 1);
	if (e && e->val.type != OBJ_LIST && e->val.type != OBJ_SET && e->val.type != OBJ_ZSET) {
		reply_error(c, ERR_WRONGTYPE);
		goto out;
	}
	if (e) {
		if (e->val.type == OBJ_ZSET)
			zset_to_skiplist(&e->val);
		val = &e->val;
	}

	/* A set has no order of its own to store or give a script (whose
	 * effects must not depend on it): sort it instead. */
	if (o.dontsort && val && val->type == OBJ_SET &&
	    (o.store || (exec_ctx_flags() & EXEC_SCRIPT))) {
		o.dontsort = false;
		o.alpha = true;
		o.by = NULL;
	}
	if (o.by && !o.dontsort) {
		pattern_init(&by_pat, o.by);
		by = &by_pat;
	}

	if (val)
		vlen = (long long)(val->type == OBJ_LIST  ? list_len(val)
				   : val->type == OBJ_SET ? set_size(val)
							  : zset_len(val));
	start = o.limit_start < 0 ? 0 : o.limit_start;
	if (o.limit_count < 0)
		end = vlen - 1;
	else if (o.limit_count > LLONG_MAX - start)
		end = LLONG_MAX;
	else
		end = start + o.limit_count - 1;
	if (start >= vlen) {
		start = vlen - 1;
		end = vlen - 2;
	}
	if (end >= vlen)
		end = vlen - 1;

	load_items(&r, val, o.dontsort, o.desc, start, end);
	if (val && val->type != OBJ_SET && o.dontsort) {
		/* Only the range was loaded. */
		end -= start;
		start = 0;
	}
	if (!o.dontsort)
		ok = load_keys(c, &r, &o, by);
	resolve_items(&r);
	if (!o.dontsort && r.n > 1) {
		struct sort_cmp_ctx k = { .desc = o.desc,
					  .alpha = o.alpha,
					  .by = by != NULL,
					  .binary = o.store != NULL };

		qsort_r(r.order, r.n, sizeof(*r.order), sort_cmp, &k);
	}

	if (!ok)
		reply_error(c, ERR_SCORES);
	else if (o.store)
		store_items(c, &r, &o, start, end);
	else
		reply_items(c, &r, &o, start, end);
out:
	sort_free(&r, &o);
}

void cmd_sort(struct client *c)
{
	sort_generic(c, false);
}

void cmd_sort_ro(struct client *c)
{
	sort_generic(c, true);
}
