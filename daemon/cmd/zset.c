// SPDX-License-Identifier: BSD-3-Clause
/*
 * The sorted set family: ZADD and friends, ranges by rank, score and lex,
 * removals, pops, the set operations (ZUNION, ZINTER, ZDIFF and their STORE
 * forms, ZINTERCARD), ZRANDMEMBER and ZSCAN. The value itself is t_zset.c's;
 * the set operations also read plain sets (t_set.h), whose members score 1.
 *
 * Replies, error strings and the order in which arguments are checked follow
 * Redis 7.0: clients observe which error wins when several apply. Scores are
 * replied with reply_double (a bulk string in RESP2, a double in RESP3);
 * WITHSCORES replies are flat in RESP2 and arrays of [member, score] pairs in
 * RESP3, as Redis 7.0 sends them.
 *
 * Locking. Every row runs with the shards of its keys locked by the
 * dispatcher, as its key specs find them: the commands whose keys follow a
 * numkeys argument (ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD,
 * ZMPOP) included.
 * A set emptied by a command is deleted, as Redis never keeps an empty one.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "commands.h"
#include "notify.h"
#include "mem.h"
#include "propagate.h"
#include "t_set.h"
#include "t_zset.h"
#include "util.h"

#define ERR_RANGE_FLOAT "min or max is not a float"
#define ERR_RANGE_LEX "min or max not valid string range item"
#define ERR_POSITIVE "value is out of range, must be positive"

/* ---- parsing -------------------------------------------------------------------------------- */

/* A score as Redis's getDoubleFromObject reads it: the whole argument, no
 * leading space, no NaN, no overflow to infinity ("inf" itself is fine). */
static bool parse_score(const struct arg *a, double *out)
{
	return !memchr(a->p, '\0', a->len) && str_to_d(a->p, a->len, out);
}

static bool arg_score(struct client *c, int i, double *out, const char *err)
{
	if (parse_score(&c->argv[i], out))
		return true;
	reply_error(c, err);
	return false;
}

/* One end of a score range, "(" making it exclusive. Redis reads it with a
 * bare strtod up to the first NUL, so "", " 1" and "1e999" are accepted. */
static bool parse_score_bound(const struct arg *a, double *v, bool *ex)
{
	const char *p = a->p;
	char *end;

	*ex = p[0] == '(';
	if (*ex)
		p++;
	*v = strtod(p, &end);
	return *end == '\0' && !isnan(*v);
}

static bool arg_score_range(struct client *c, int imin, int imax, struct zscore_range *r)
{
	if (parse_score_bound(&c->argv[imin], &r->min, &r->minex) &&
	    parse_score_bound(&c->argv[imax], &r->max, &r->maxex))
		return true;
	reply_error(c, ERR_RANGE_FLOAT);
	return false;
}

/* "-", "+", "[member" or "(member"; "+" and "-" stand alone. */
static bool parse_lex_bound(const struct arg *a, struct zlex_bound *b)
{
	b->p = a->p + 1;
	b->len = a->len ? a->len - 1 : 0;
	switch (a->p[0]) {
	case '+':
		b->kind = ZLEX_POS_INF;
		return a->p[1] == '\0';
	case '-':
		b->kind = ZLEX_NEG_INF;
		return a->p[1] == '\0';
	case '(':
		b->kind = ZLEX_EXCL;
		return true;
	case '[':
		b->kind = ZLEX_INCL;
		return true;
	default:
		return false;
	}
}

static bool arg_lex_range(struct client *c, int imin, int imax, struct zlex_range *r)
{
	if (parse_lex_bound(&c->argv[imin], &r->min) && parse_lex_bound(&c->argv[imax], &r->max))
		return true;
	reply_error(c, ERR_RANGE_LEX);
	return false;
}

/* An integer in [min, max]; err (or Redis's generic messages when NULL)
 * answers both a bad integer and one out of range, as getRangeLong does. */
static bool arg_range_ll(struct client *c, int i, long long min, long long max, long long *v,
			 const char *err)
{
	if (!str_to_ll(c->argv[i].p, c->argv[i].len, v)) {
		reply_error(c, err ? err : ERR_NOT_INT);
		return false;
	}
	if (*v < min || *v > max) {
		if (err)
			reply_error(c, err);
		else
			reply_errorf(c, "value is out of range, value must between %lld and %lld",
				     min, max);
		return false;
	}
	return true;
}

/* ---- lookups and replies -------------------------------------------------------------------- */

/* The sorted set at argv[i] (*e NULL if missing). False, with WRONGTYPE
 * replied, if the key holds another type. */
static bool zset_lookup(struct client *c, int i, bool read, struct entry **e)
{
	*e = read ? key_find_read(c, i) : key_find(c, i);
	return !*e || entry_is(c, *e, OBJ_ZSET);
}

/* After removals from e (key argument i): deletes an emptied set, or
 * signals the change; then Redis's events, `event` and "del" for a deleted
 * key. */
static void zset_changed(struct client *c, struct entry *e, const char *event, int i)
{
	bool empty = !zset_len(&e->val);

	if (empty)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	notify_arg(c, NOTIFY_ZSET, event, i);
	if (empty)
		notify_arg(c, NOTIFY_GENERIC, "del", i);
}

/* The header of a reply of n elements, with or without their scores. */
static void reply_elems_len(struct client *c, size_t n, bool withscores)
{
	reply_array(c, (long)(withscores && c->resp < 3 ? 2 * n : n));
}

static void reply_elem(struct client *c, const struct zset_elem *el, bool withscores)
{
	if (withscores && c->resp >= 3)
		reply_array(c, 2);
	reply_bulk(c, el->m, el->len);
	if (withscores)
		reply_double(c, el->score);
}

/* Replies with n elements from ascending rank `rank`, walking up or down. */
static void reply_run(struct client *c, const struct obj *o, size_t rank, size_t n, bool rev,
		      bool withscores)
{
	struct zset_iter it;
	struct zset_elem el;

	reply_elems_len(c, n, withscores);
	zset_iter_init(&it, o, rank, rev);
	while (n-- && zset_iter_next(&it, &el))
		reply_elem(c, &el, withscores);
}

/* Sets argv[dst] to o, or deletes it when o is empty; replies with the size.
 * The event is the storing command's (Redis's name for it). */
static void store_result(struct client *c, int dst, struct obj o, const char *event)
{
	size_t n = zset_len(&o);
	struct entry *d;

	if (n) {
		db_set(c->db, c->argv[dst].p, c->argv[dst].len, o, false);
		notify_arg(c, NOTIFY_ZSET, event, dst);
	} else {
		obj_free(&o);
		d = key_find(c, dst);
		if (d) {
			db_delete(c->db, d);
			notify_arg(c, NOTIFY_GENERIC, "del", dst);
		}
	}
	reply_int(c, (long long)n);
}

/* A thread's pseudo-random numbers (xorshift64*), for ZRANDMEMBER. */
static uint64_t rand64(void)
{
	static __thread uint64_t s;

	if (!s)
		s = (uint64_t)now_us() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x2545f4914f6cdd1dull;
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return s * 0x2545f4914f6cdd1dull;
}

/* ---- ZADD, ZINCRBY, ZREM ---------------------------------------------------------------------- */

/* CH only changes ZADD's reply, so it is not one of zset_add's flags. */
#define ZADD_CH (1u << 16)

static const struct {
	const char *word;
	unsigned flag;
} zadd_options[] = {
	{ "nx", ZADD_NX }, { "xx", ZADD_XX },	  { "gt", ZADD_GT },
	{ "lt", ZADD_LT }, { "incr", ZADD_INCR }, { "ch", ZADD_CH },
};

/*
 * ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member ...; ZINCRBY is ZADD INCR
 * and shares the option scan (so "ZINCRBY k nx m" is a syntax error, as in
 * Redis). Every score is parsed before the key is touched; a NaN from INCR
 * stops the command, keeping what earlier pairs did.
 */
static void zadd_generic(struct client *c, unsigned flags)
{
	long long added = 0, updated = 0, processed = 0;
	double stack_scores[16], *scores = stack_scores, newscore = 0;
	struct entry *e;
	int i, n;

	for (i = 2; i < c->argc; i++) {
		size_t k;

		for (k = 0; k < sizeof(zadd_options) / sizeof(zadd_options[0]); k++)
			if (arg_is(c, i, zadd_options[k].word))
				break;
		if (k == sizeof(zadd_options) / sizeof(zadd_options[0]))
			break;
		flags |= zadd_options[k].flag;
	}
	n = c->argc - i;
	if (!n || n % 2) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	n /= 2;
	if ((flags & ZADD_NX) && (flags & ZADD_XX)) {
		reply_error(c, "XX and NX options at the same time are not compatible");
		return;
	}
	if (((flags & ZADD_NX) && (flags & (ZADD_GT | ZADD_LT))) ||
	    ((flags & ZADD_GT) && (flags & ZADD_LT))) {
		reply_error(c, "GT, LT, and/or NX options at the same time are not compatible");
		return;
	}
	if ((flags & ZADD_INCR) && n > 1) {
		reply_error(c, "INCR option supports a single increment-element pair");
		return;
	}
	if (n > (int)(sizeof(stack_scores) / sizeof(stack_scores[0])))
		scores = xmalloc((size_t)n * sizeof(*scores));
	for (int k = 0; k < n; k++)
		if (!arg_score(c, i + 2 * k, &scores[k], ERR_NOT_FLOAT))
			goto out;

	if (!zset_lookup(c, 1, false, &e))
		goto out;
	if (!e) {
		if (flags & ZADD_XX)
			goto reply;
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, zset_new(1, c->argv[i + 1].len));
	}
	for (int k = 0; k < n; k++) {
		const struct arg *m = &c->argv[i + 2 * k + 1];

		switch (zset_add(&e->val, scores[k], m->p, m->len, flags & ~ZADD_CH, &newscore)) {
		case ZADD_ADDED:
			added++;
			processed++;
			break;
		case ZADD_UPDATED:
			updated++;
			processed++;
			break;
		case ZADD_SAME:
			processed++;
			break;
		case ZADD_SKIPPED:
			break;
		case ZADD_NAN:
			reply_error(c, "resulting score is not a number (NaN)");
			goto changed;
		}
	}
reply:
	if (!(flags & ZADD_INCR))
		reply_int(c, flags & ZADD_CH ? added + updated : added);
	else if (processed)
		reply_double(c, newscore);
	else
		reply_null(c);
changed:
	command_dirty((uint64_t)(added + updated));
	if (added || updated) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_ZSET, (flags & ZADD_INCR) ? "zincr" : "zadd", 1);
	}
out:
	if (scores != stack_scores)
		xfree(scores);
}

void cmd_zadd(struct client *c)
{
	zadd_generic(c, 0);
}

void cmd_zincrby(struct client *c)
{
	zadd_generic(c, ZADD_INCR);
}

void cmd_zrem(struct client *c)
{
	long long n = 0;
	struct entry *e;

	if (!zset_lookup(c, 1, false, &e))
		return;
	for (int i = 2; e && i < c->argc; i++) {
		if (!zset_del(&e->val, c->argv[i].p, c->argv[i].len))
			continue;
		n++;
		if (!zset_len(&e->val))
			break;
	}
	command_dirty((uint64_t)n);
	if (n)
		zset_changed(c, e, "zrem", 1);
	reply_int(c, n);
}

/* ---- ZCARD, ZSCORE, ZMSCORE, ZRANK, ZCOUNT, ZLEXCOUNT ------------------------------------------ */

void cmd_zcard(struct client *c)
{
	struct entry *e;

	if (zset_lookup(c, 1, true, &e))
		reply_int(c, e ? (long long)zset_len(&e->val) : 0);
}

void cmd_zscore(struct client *c)
{
	struct entry *e;
	double score;

	if (!zset_lookup(c, 1, true, &e))
		return;
	if (e && zset_score(&e->val, c->argv[2].p, c->argv[2].len, &score))
		reply_double(c, score);
	else
		reply_null(c);
}

void cmd_zmscore(struct client *c)
{
	struct entry *e;
	double score;

	if (!zset_lookup(c, 1, true, &e))
		return;
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		if (e && zset_score(&e->val, c->argv[i].p, c->argv[i].len, &score))
			reply_double(c, score);
		else
			reply_null(c);
	}
}

/* ZRANK and ZREVRANK, with Redis 7.2's WITHSCORE: [rank, score], and a null
 * array rather than a null when the member is missing. */
static void zrank_generic(struct client *c, bool rev)
{
	bool withscore = false;
	struct entry *e;
	long long rank = -1;
	double score;

	if (c->argc > 4 || (c->argc == 4 && !arg_is(c, 3, "withscore"))) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	withscore = c->argc == 4;
	if (!zset_lookup(c, 1, true, &e))
		return;
	if (e)
		rank = zset_rank(&e->val, c->argv[2].p, c->argv[2].len, &score);
	if (rank < 0) {
		if (withscore)
			reply_null_array(c);
		else
			reply_null(c);
		return;
	}
	if (rev)
		rank = (long long)zset_len(&e->val) - 1 - rank;
	if (withscore)
		reply_array(c, 2);
	reply_int(c, rank);
	if (withscore)
		reply_double(c, score);
}

void cmd_zrank(struct client *c)
{
	zrank_generic(c, false);
}

void cmd_zrevrank(struct client *c)
{
	zrank_generic(c, true);
}

void cmd_zcount(struct client *c)
{
	struct zscore_range r;
	struct entry *e;
	size_t first, end;

	if (!arg_score_range(c, 2, 3, &r) || !zset_lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_int(c, 0);
		return;
	}
	zset_score_span(&e->val, &r, &first, &end);
	reply_int(c, (long long)(end - first));
}

void cmd_zlexcount(struct client *c)
{
	struct zlex_range r;
	struct entry *e;
	size_t first, end;

	if (!arg_lex_range(c, 2, 3, &r) || !zset_lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_int(c, 0);
		return;
	}
	zset_lex_span(&e->val, &r, &first, &end);
	reply_int(c, (long long)(end - first));
}

/* ---- ZRANGE and its variants ----------------------------------------------------------------- */

enum zrange_by { BY_AUTO, BY_RANK, BY_SCORE, BY_LEX };
enum zrange_dir { DIR_AUTO, DIR_FORWARD, DIR_REVERSE };

/* A parsed range: a rank range, or a score or lex one with LIMIT. */
struct zrange_spec {
	enum zrange_by by;
	bool rev;
	long long start, stop;	 /* BY_RANK */
	long long offset, limit; /* LIMIT; limit < 0: no limit */
	struct zscore_range score;
	struct zlex_range lex;
};

/* Where the range's elements start (ascending rank), how many there are,
 * and which way to walk. */
static void zrange_select(const struct obj *o, const struct zrange_spec *s, size_t *rank,
			  size_t *count)
{
	size_t n = zset_len(o), first, end, avail;

	*count = 0;
	*rank = 0;
	if (s->by == BY_RANK) {
		size_t last;

		if (!rank_range(s->start, s->stop, n, &first, &last))
			return;
		*count = last - first + 1;
		*rank = s->rev ? n - 1 - first : first;
		return;
	}
	if (s->by == BY_SCORE)
		zset_score_span(o, &s->score, &first, &end);
	else
		zset_lex_span(o, &s->lex, &first, &end);
	/* A negative offset skips everything, as in Redis. */
	if (s->offset < 0 || (unsigned long long)s->offset >= end - first)
		return;
	avail = end - first - (size_t)s->offset;
	*count = s->limit < 0 || (unsigned long long)s->limit > avail ? avail : (size_t)s->limit;
	*rank = s->rev ? end - 1 - (size_t)s->offset : first + (size_t)s->offset;
}

/*
 * A new set holding count elements of o from rank, walking as rev says. As
 * in Redis 7.0, a rank range (whose size is known in advance) gets its final
 * encoding at once, while a score or lex range starts packed and converts as
 * it grows; the difference shows in which -0 scores survive (see zp_write).
 */
static struct obj zrange_copy(const struct obj *o, size_t rank, size_t count, bool rev, bool sized)
{
	struct zset_iter it;
	struct zset_elem el;
	size_t maxlen = 0, n;
	struct obj dst;

	if (sized) {
		zset_iter_init(&it, o, rank, rev);
		for (n = count; n-- && zset_iter_next(&it, &el);)
			maxlen = el.len > maxlen ? el.len : maxlen;
	}
	dst = zset_new(sized ? count : 0, maxlen);
	zset_iter_init(&it, o, rank, rev);
	for (n = count; n-- && zset_iter_next(&it, &el);)
		zset_add(&dst, el.score, el.m, el.len, 0, NULL);
	return dst;
}

/*
 * ZRANGE, ZRANGESTORE and the older forms. argv[src] is the source key and
 * the two range bounds follow it; dst is ZRANGESTORE's destination (0 for a
 * reply). by and dir are fixed by the older forms, and then the options
 * that would set them are syntax errors, as in Redis.
 */
static void zrange_generic(struct client *c, int src, int dst, enum zrange_by by,
			   enum zrange_dir dir)
{
	struct zrange_spec s = { .limit = -1 };
	int imin = src + 1, imax = src + 2;
	bool withscores = false;
	size_t rank, count;
	struct entry *e;

	for (int j = src + 3; j < c->argc; j++) {
		if (!dst && arg_is(c, j, "withscores")) {
			withscores = true;
		} else if (arg_is(c, j, "limit") && c->argc - j - 1 >= 2) {
			if (!arg_ll(c, j + 1, &s.offset) || !arg_ll(c, j + 2, &s.limit))
				return;
			j += 2;
		} else if (dir == DIR_AUTO && arg_is(c, j, "rev")) {
			dir = DIR_REVERSE;
		} else if (by == BY_AUTO && arg_is(c, j, "bylex")) {
			by = BY_LEX;
		} else if (by == BY_AUTO && arg_is(c, j, "byscore")) {
			by = BY_SCORE;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	s.by = by == BY_AUTO ? BY_RANK : by;
	s.rev = dir == DIR_REVERSE;
	if (s.limit != -1 && s.by == BY_RANK) {
		reply_error(c, "syntax error, LIMIT is only supported in combination with either "
			       "BYSCORE or BYLEX");
		return;
	}
	if (withscores && s.by == BY_LEX) {
		reply_error(c, "syntax error, WITHSCORES not supported in combination with BYLEX");
		return;
	}
	/* Reverse score and lex ranges are written max first. */
	if (s.rev && s.by != BY_RANK) {
		imin = src + 2;
		imax = src + 1;
	}
	if (s.by == BY_RANK) {
		if (!arg_ll(c, imin, &s.start) || !arg_ll(c, imax, &s.stop))
			return;
	} else if (s.by == BY_SCORE) {
		if (!arg_score_range(c, imin, imax, &s.score))
			return;
	} else if (!arg_lex_range(c, imin, imax, &s.lex)) {
		return;
	}

	if (!zset_lookup(c, src, true, &e))
		return;
	if (!e) {
		if (dst)
			store_result(c, dst, zset_new(0, 0), "zrangestore");
		else
			reply_array(c, 0);
		return;
	}
	zrange_select(&e->val, &s, &rank, &count);
	if (dst)
		store_result(c, dst, zrange_copy(&e->val, rank, count, s.rev, s.by == BY_RANK),
			     "zrangestore");
	else
		reply_run(c, &e->val, rank, count, s.rev, withscores);
}

void cmd_zrange(struct client *c)
{
	zrange_generic(c, 1, 0, BY_AUTO, DIR_AUTO);
}

void cmd_zrangestore(struct client *c)
{
	zrange_generic(c, 2, 1, BY_AUTO, DIR_AUTO);
}

void cmd_zrevrange(struct client *c)
{
	zrange_generic(c, 1, 0, BY_RANK, DIR_REVERSE);
}

void cmd_zrangebyscore(struct client *c)
{
	zrange_generic(c, 1, 0, BY_SCORE, DIR_FORWARD);
}

void cmd_zrevrangebyscore(struct client *c)
{
	zrange_generic(c, 1, 0, BY_SCORE, DIR_REVERSE);
}

void cmd_zrangebylex(struct client *c)
{
	zrange_generic(c, 1, 0, BY_LEX, DIR_FORWARD);
}

void cmd_zrevrangebylex(struct client *c)
{
	zrange_generic(c, 1, 0, BY_LEX, DIR_REVERSE);
}

/* ---- ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX ---------------------------------------- */

/* The range is parsed before the key is looked up, as in Redis. */
static void zremrange_generic(struct client *c, enum zrange_by by)
{
	struct zrange_spec s = { .by = by };
	size_t first = 0, end = 0, removed;
	struct entry *e;

	if (by == BY_RANK) {
		if (!arg_ll(c, 2, &s.start) || !arg_ll(c, 3, &s.stop))
			return;
	} else if (by == BY_SCORE) {
		if (!arg_score_range(c, 2, 3, &s.score))
			return;
	} else if (!arg_lex_range(c, 2, 3, &s.lex)) {
		return;
	}
	if (!zset_lookup(c, 1, false, &e))
		return;
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (by == BY_RANK) {
		if (rank_range(s.start, s.stop, zset_len(&e->val), &first, &end))
			end++;
	} else if (by == BY_SCORE) {
		zset_score_span(&e->val, &s.score, &first, &end);
	} else {
		zset_lex_span(&e->val, &s.lex, &first, &end);
	}
	removed = zset_del_ranks(&e->val, first, end);
	command_dirty(removed);
	if (removed)
		zset_changed(c, e,
			     by == BY_RANK    ? "zremrangebyrank"
			     : by == BY_SCORE ? "zremrangebyscore"
					      : "zremrangebylex",
			     1);
	reply_int(c, (long long)removed);
}

void cmd_zremrangebyrank(struct client *c)
{
	zremrange_generic(c, BY_RANK);
}

void cmd_zremrangebyscore(struct client *c)
{
	zremrange_generic(c, BY_SCORE);
}

void cmd_zremrangebylex(struct client *c)
{
	zremrange_generic(c, BY_LEX);
}

/* ---- ZPOPMIN, ZPOPMAX, ZMPOP ----------------------------------------------------------------- */

/*
 * Pops up to count elements of e (argv[key]) from the low or high end and
 * replies with them: ZPOPMIN/ZPOPMAX flat in RESP2, and in RESP3 when no
 * count was given (single); pairs otherwise; ZMPOP ([key, pairs]) always
 * pairs, in both protocols.
 */
static void zpop_reply(struct client *c, struct entry *e, int key, bool max, size_t count,
		       bool single, bool zmpop)
{
	size_t n = zset_len(&e->val), k = count < n ? count : n;
	bool pairs = zmpop || (c->resp >= 3 && !single);
	struct zset_iter it;
	struct zset_elem el;

	if (zmpop) {
		reply_array(c, 2);
		reply_bulk(c, c->argv[key].p, c->argv[key].len);
	}
	reply_array(c, (long)(pairs ? k : 2 * k));
	zset_iter_init(&it, &e->val, max ? n - 1 : 0, max);
	for (size_t i = 0; i < k && zset_iter_next(&it, &el); i++) {
		if (pairs)
			reply_array(c, 2);
		reply_bulk(c, el.m, el.len);
		reply_double(c, el.score);
	}
	zset_del_ranks(&e->val, max ? n - k : 0, max ? n : k);
	command_dirty(k);
	zset_changed(c, e, max ? "zpopmax" : "zpopmin", key);
}

static void zpop_generic(struct client *c, bool max)
{
	long long count = 1;
	struct entry *e;

	if (c->argc > 3) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (c->argc == 3 && !arg_range_ll(c, 2, 0, LLONG_MAX, &count, ERR_POSITIVE))
		return;
	if (!zset_lookup(c, 1, false, &e))
		return;
	if (!e || !count) {
		reply_array(c, 0);
		return;
	}
	zpop_reply(c, e, 1, max, (size_t)count, c->argc == 2, false);
}

void cmd_zpopmin(struct client *c)
{
	zpop_generic(c, false);
}

void cmd_zpopmax(struct client *c)
{
	zpop_generic(c, true);
}

/* ZMPOP numkeys key ... MIN|MAX [COUNT count]: pops from the first key that
 * exists; the first existing key of another type is an error. */
void cmd_zmpop(struct client *c)
{
	long long numkeys, count = -1;
	struct entry *e = NULL;
	int where, key;
	bool max;

	if (!arg_range_ll(c, 1, 1, LLONG_MAX, &numkeys, "numkeys should be greater than 0"))
		return;
	if (numkeys >= c->argc - 2) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	where = 2 + (int)numkeys;
	if (!arg_is(c, where, "min") && !arg_is(c, where, "max")) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	max = arg_is(c, where, "max");
	for (int j = where + 1; j < c->argc; j++) {
		if (count == -1 && arg_is(c, j, "count") && j + 1 < c->argc) {
			if (!arg_range_ll(c, ++j, 1, LLONG_MAX, &count,
					  "count should be greater than 0"))
				return;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}

	for (key = 2; key < where; key++) {
		e = key_find(c, key);
		if (e)
			break;
	}
	if (!e)
		reply_null_array(c);
	else if (entry_is(c, e, OBJ_ZSET)) {
		size_t want = count == -1 ? 1 : (size_t)count, len = zset_len(&e->val);
		/* Propagated with the count it popped, as Redis 8.8. */
		long long popped = (long long)(want < len ? want : len);

		zpop_reply(c, e, key, max, want, false, true);
		propagate_pop(max ? "ZPOPMAX" : "ZPOPMIN", &c->argv[key], popped);
	}
}

/* ---- ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD ------------------------------------- */

enum setop { OP_UNION, OP_INTER, OP_DIFF };
/* AGG_COUNT (Redis 8.8): each input holding the member adds its weight. */
enum aggregate { AGG_SUM, AGG_MIN, AGG_MAX, AGG_COUNT };

/* An input of a set operation: a sorted set, or a plain set whose members
 * all score 1 (as in Redis); o is NULL for a missing key. */
struct zsrc {
	const struct obj *o;
	double weight;
	size_t len;
	int arg; /* argument order, to keep the sort by size stable */
};

static bool src_score(const struct zsrc *s, const char *m, size_t len, double *v)
{
	if (s->o->type == OBJ_ZSET)
		return zset_score(s->o, m, len, v);
	*v = 1;
	return set_contains(s->o, m, len);
}

struct src_iter {
	bool is_set;
	struct zset_iter z;
	struct set_iter s;
};

static void src_iter_init(struct src_iter *it, const struct zsrc *s)
{
	it->is_set = s->o->type == OBJ_SET;
	if (it->is_set)
		set_iter_init(&it->s, s->o);
	else
		zset_iter_init(&it->z, s->o, 0, false);
}

/* The next element; a set member may live in the iterator's own buffer. */
static bool src_iter_next(struct src_iter *it, struct zset_elem *el)
{
	if (!it->is_set)
		return zset_iter_next(&it->z, el);
	el->score = 1;
	return set_iter_next(&it->s, &el->m, &el->len);
}

/* Copies of set members kept for a result: chunks freed together. */
struct arena {
	struct arena_chunk {
		struct arena_chunk *next;
		size_t used, size;
		char data[];
	} * head;
};

static const char *arena_dup(struct arena *a, const char *p, size_t len)
{
	struct arena_chunk *ch = a->head;
	char *dst;

	if (!ch || ch->size - ch->used < len) {
		size_t size = len > 4096 ? len : 4096;

		ch = xmalloc(sizeof(*ch) + size);
		ch->next = a->head;
		ch->used = 0;
		ch->size = size;
		a->head = ch;
	}
	dst = ch->data + ch->used;
	if (len)
		memcpy(dst, p, len);
	ch->used += len;
	return dst;
}

static void arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;

		xfree(a->head);
		a->head = next;
	}
}

/* A member to keep in a result: set members are copied (see src_iter_next). */
static const char *keep_member(struct arena *a, const struct src_iter *it,
			       const struct zset_elem *el)
{
	return it->is_set ? arena_dup(a, el->m, el->len) : el->m;
}

/* A result element. The member points into an input sorted set, which
 * nothing changes until the result has been replied or copied, or into
 * the operation's arena. */
struct zres {
	struct dict_node node; /* in the union's accumulator */
	const char *m;
	size_t len;
	double score;
};

static int cmp_src_len(const void *a, const void *b)
{
	const struct zsrc *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->arg - y->arg;
}

static int cmp_res(const void *a, const void *b)
{
	const struct zres *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int r;

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	r = n ? memcmp(x->m, y->m, n) : 0;
	if (r)
		return r;
	return (x->len > y->len) - (x->len < y->len);
}

static double aggregate(double acc, double v, enum aggregate agg)
{
	switch (agg) {
	case AGG_SUM:
	case AGG_COUNT:
		acc += v;
		/* inf + -inf: Redis's convention is 0. */
		return isnan(acc) ? 0 : acc;
	case AGG_MIN:
		return v < acc ? v : acc;
	default:
		return v > acc ? v : acc;
	}
}

/* weight * score, where inf * 0 counts as 0 (Redis's convention); for
 * AGG_COUNT the weight alone (one occurrence worth it). */
static double weighted(double score, double weight, enum aggregate agg)
{
	double v = agg == AGG_COUNT ? weight : score * weight;

	return isnan(v) ? 0 : v;
}

static bool res_key_equal(const struct dict_node *n, const void *key, size_t len)
{
	const struct zres *r = (const struct zres *)n;

	return r->len == len && (!len || !memcmp(r->m, key, len));
}

static const struct dict_type res_dict_type = { .key_equal = res_key_equal };

/* Sum of the inputs' sizes: the most elements a result can have. */
static size_t total_len(const struct zsrc *src, int n)
{
	size_t total = 0;

	for (int i = 0; i < n; i++)
		total += src[i].len;
	return total;
}

/* Union: every member of every input, scores aggregated over the inputs in
 * increasing size order (Redis's order, which fixes float rounding). */
static size_t zunion(const struct zsrc *src, int n, enum aggregate agg, struct zres *res,
		     struct arena *ar)
{
	struct src_iter it;
	struct zset_elem el;
	struct dict acc;
	size_t k = 0;

	dict_init(&acc, &res_dict_type);
	for (int i = 0; i < n; i++) {
		if (!src[i].o)
			continue;
		src_iter_init(&it, &src[i]);
		while (src_iter_next(&it, &el)) {
			uint64_t h = XXH3_64bits(el.m, el.len);
			struct dict_node *found = dict_find(&acc, el.m, el.len, h);
			double v = weighted(el.score, src[i].weight, agg);

			if (found) {
				struct zres *r = (struct zres *)found;

				r->score = aggregate(r->score, v, agg);
				continue;
			}
			res[k] = (struct zres){ .m = keep_member(ar, &it, &el), .len = el.len };
			res[k].score = v;
			res[k].node.hash = h;
			dict_insert(&acc, &res[k].node);
			k++;
		}
	}
	dict_destroy(&acc);
	return k;
}

/*
 * Intersection: the members of the smallest input found in all the others.
 * As in Redis, only the first input's weighted score has NaN (inf * 0) made
 * 0; MIN and MAX then ignore a NaN from the others, and SUM turns it into 0.
 * With res NULL (ZINTERCARD) only counts, up to limit (0: no limit).
 */
static size_t zinter(const struct zsrc *src, int n, enum aggregate agg, struct zres *res,
		     struct arena *ar, size_t limit)
{
	struct src_iter it;
	struct zset_elem el;
	size_t k = 0;

	if (!src[0].o)
		return 0;
	src_iter_init(&it, &src[0]);
	while (src_iter_next(&it, &el)) {
		double score = weighted(el.score, src[0].weight, agg), v;
		int j;

		for (j = 1; j < n; j++) {
			if (!src[j].o)
				break;
			if (src[j].o == src[0].o)
				v = el.score;
			else if (!src_score(&src[j], el.m, el.len, &v))
				break;
			score = aggregate(
				score, agg == AGG_COUNT ? src[j].weight : v * src[j].weight, agg);
		}
		if (j < n)
			continue;
		if (res)
			res[k] = (struct zres){ .m = keep_member(ar, &it, &el),
						.len = el.len,
						.score = score };
		if (++k == limit)
			break;
	}
	return k;
}

/* Difference: the members of the first input in none of the others. */
static size_t zdiff(const struct zsrc *src, int n, struct zres *res, struct arena *ar)
{
	struct src_iter it;
	struct zset_elem el;
	size_t k = 0;
	double v;

	if (!src[0].o)
		return 0;
	src_iter_init(&it, &src[0]);
	while (src_iter_next(&it, &el)) {
		int j;

		for (j = 1; j < n; j++)
			if (src[j].o && src_score(&src[j], el.m, el.len, &v))
				break;
		if (j == n)
			res[k++] = (struct zres){ .m = keep_member(ar, &it, &el),
						  .len = el.len,
						  .score = el.score };
	}
	return k;
}

/* Parses WEIGHTS, AGGREGATE, WITHSCORES and LIMIT from argv[j] on, each
 * only where the command takes it. */
static bool setop_options(struct client *c, int j, struct zsrc *src, int n, enum setop op, int dst,
			  bool card, enum aggregate *agg, bool *withscores, long long *limit)
{
	while (j < c->argc) {
		int left = c->argc - j;

		if (op != OP_DIFF && !card && left >= n + 1 && arg_is(c, j, "weights")) {
			for (int i = 0; i < n; i++)
				if (!arg_score(c, j + 1 + i, &src[i].weight,
					       "weight value is not a float"))
					return false;
			j += n + 1;
		} else if (op != OP_DIFF && !card && left >= 2 && arg_is(c, j, "aggregate")) {
			if (arg_is(c, j + 1, "sum")) {
				*agg = AGG_SUM;
			} else if (arg_is(c, j + 1, "min")) {
				*agg = AGG_MIN;
			} else if (arg_is(c, j + 1, "max")) {
				*agg = AGG_MAX;
			} else if (arg_is(c, j + 1, "count")) {
				*agg = AGG_COUNT;
			} else {
				reply_error(c, ERR_SYNTAX);
				return false;
			}
			j += 2;
		} else if (!dst && !card && arg_is(c, j, "withscores")) {
			*withscores = true;
			j++;
		} else if (card && left >= 2 && arg_is(c, j, "limit")) {
			if (!arg_range_ll(c, j + 1, 0, LLONG_MAX, limit, "LIMIT can't be negative"))
				return false;
			j += 2;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* Replies with or stores (argv[dst]) the sorted result res[0..n). */
static void setop_output(struct client *c, int dst, struct zres *res, size_t n, bool withscores,
			 enum setop op)
{
	size_t maxlen = 0;
	struct obj o;

	qsort(res, n, sizeof(*res), cmp_res);
	if (!dst) {
		reply_elems_len(c, n, withscores);
		for (size_t i = 0; i < n; i++) {
			struct zset_elem el = { .m = res[i].m,
						.len = res[i].len,
						.score = res[i].score };

			reply_elem(c, &el, withscores);
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
		maxlen = res[i].len > maxlen ? res[i].len : maxlen;
	o = zset_new(n, maxlen);
	for (size_t i = 0; i < n; i++)
		zset_add(&o, res[i].score, res[i].m, res[i].len, 0, NULL);
	store_result(c, dst, o,
		     op == OP_UNION   ? "zunionstore"
		     : op == OP_INTER ? "zinterstore"
				      : "zdiffstore");
}

/* The body of the set operations, with the keys locked. */
static void setop_run(struct client *c, int dst, int first, int n, enum setop op, bool card)
{
	enum aggregate agg = AGG_SUM;
	bool withscores = false;
	long long limit = 0;
	struct arena ar = { 0 };
	struct zres *res = NULL;
	struct zsrc *src = xcalloc((size_t)n, sizeof(*src));
	size_t k;

	/* Inputs are checked before the options, as Redis orders its errors. */
	for (int i = 0; i < n; i++) {
		struct entry *e = key_find_read(c, first + i);

		src[i] = (struct zsrc){ .weight = 1, .arg = i };
		if (!e)
			continue;
		if (e->val.type == OBJ_ZSET) {
			src[i].len = zset_len(&e->val);
		} else if (e->val.type == OBJ_SET) {
			src[i].len = set_size(&e->val);
		} else {
			reply_error(c, ERR_WRONGTYPE);
			goto out;
		}
		src[i].o = &e->val;
	}
	if (!setop_options(c, first + n, src, n, op, dst, card, &agg, &withscores, &limit))
		goto out;

	if (op == OP_INTER || op == OP_UNION)
		qsort(src, (size_t)n, sizeof(*src), cmp_src_len);
	if (card) {
		reply_int(c, (long long)zinter(src, n, agg, NULL, &ar, (size_t)limit));
		goto out;
	}
	res = xmalloc((total_len(src, n) + 1) * sizeof(*res));
	if (op == OP_UNION)
		k = zunion(src, n, agg, res, &ar);
	else if (op == OP_INTER)
		k = zinter(src, n, agg, res, &ar, 0);
	else
		k = zdiff(src, n, res, &ar);
	setop_output(c, dst, res, k, withscores, op);
out:
	arena_free(&ar);
	xfree(res);
	xfree(src);
}

/*
 * ZUNION/ZINTER/ZDIFF[STORE] and ZINTERCARD: numkeys at argv[nk], the keys
 * after it, dst the destination argument or 0. name is the command's for
 * the numkeys error.
 */
static void setop_generic(struct client *c, int dst, int nk, enum setop op, bool card,
			  const char *name)
{
	long long n;

	if (!arg_ll(c, nk, &n))
		return;
	if (n < 1) {
		reply_errorf(c, "at least 1 input key is needed for '%s' command", name);
		return;
	}
	if (n > c->argc - (nk + 1)) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	setop_run(c, dst, nk + 1, (int)n, op, card);
}

void cmd_zunion(struct client *c)
{
	setop_generic(c, 0, 1, OP_UNION, false, "zunion");
}

void cmd_zinter(struct client *c)
{
	setop_generic(c, 0, 1, OP_INTER, false, "zinter");
}

void cmd_zdiff(struct client *c)
{
	setop_generic(c, 0, 1, OP_DIFF, false, "zdiff");
}

void cmd_zunionstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_UNION, false, "zunionstore");
}

void cmd_zinterstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_INTER, false, "zinterstore");
}

void cmd_zdiffstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_DIFF, false, "zdiffstore");
}

void cmd_zintercard(struct client *c)
{
	setop_generic(c, 0, 1, OP_INTER, true, "zintercard");
}

/* ---- ZRANDMEMBER ----------------------------------------------------------------------------- */

/* Elements by rank: an array for a packed set (whose lookups by rank are
 * linear walks), rank lookups in the skiplist otherwise. */
struct picker {
	const struct obj *o;
	struct zset_elem *all;
};

static void picker_init(struct picker *pk, const struct obj *o)
{
	size_t n = zset_len(o), i = 0;
	struct zset_iter it;

	pk->o = o;
	pk->all = NULL;
	if (o->enc != ENC_LISTPACK)
		return;
	pk->all = xmalloc(n * sizeof(*pk->all));
	zset_iter_init(&it, o, 0, false);
	while (i < n && zset_iter_next(&it, &pk->all[i]))
		i++;
}

static void picker_get(const struct picker *pk, size_t rank, struct zset_elem *el)
{
	if (pk->all)
		*el = pk->all[rank];
	else
		zset_at(pk->o, rank, el);
}

/*
 * ZRANDMEMBER key count [WITHSCORES]. A negative count allows repeats; a
 * positive one returns distinct members, the whole set (from the highest
 * score down, as Redis) when it asks for at least that many, otherwise count ranks drawn with
 * Floyd's algorithm and shuffled.
 */
static void zrandmember_count(struct client *c, long long l, bool withscores)
{
	size_t n, count = l < 0 ? (size_t)-l : (size_t)l, k = 0;
	uint64_t *seen = NULL;
	size_t *ranks = NULL;
	struct zset_elem el;
	struct picker pk;
	struct entry *e;

	if (!zset_lookup(c, 1, true, &e))
		return;
	if (!e || !count) {
		reply_array(c, 0);
		return;
	}
	n = zset_len(&e->val);
	if (l > 0 && count >= n) {
		/* Redis walks the whole set from the top here. */
		reply_run(c, &e->val, n - 1, n, true, withscores);
		return;
	}
	picker_init(&pk, &e->val);
	reply_elems_len(c, count, withscores);
	if (l < 0) {
		while (count--) {
			picker_get(&pk, rand64() % n, &el);
			reply_elem(c, &el, withscores);
		}
		goto out;
	}
	seen = xcalloc((n + 63) / 64, sizeof(*seen));
	ranks = xmalloc(count * sizeof(*ranks));
	for (size_t j = n - count; j < n; j++) {
		size_t t = rand64() % (j + 1);

		if (seen[t / 64] & (1ull << (t % 64)))
			t = j;
		seen[t / 64] |= 1ull << (t % 64);
		ranks[k++] = t;
	}
	for (size_t j = count - 1; j > 0; j--) {
		size_t t = rand64() % (j + 1), tmp = ranks[j];

		ranks[j] = ranks[t];
		ranks[t] = tmp;
	}
	for (size_t j = 0; j < count; j++) {
		picker_get(&pk, ranks[j], &el);
		reply_elem(c, &el, withscores);
	}
out:
	xfree(ranks);
	xfree(seen);
	xfree(pk.all);
}

void cmd_zrandmember(struct client *c)
{
	struct zset_elem el;
	struct entry *e;
	long long l;

	if (c->argc >= 3) {
		bool withscores = c->argc == 4 && arg_is(c, 3, "withscores");

		if (!arg_range_ll(c, 2, -LLONG_MAX, LLONG_MAX, &l, NULL))
			return;
		if (c->argc >= 4 && !withscores) {
			reply_error(c, ERR_SYNTAX);
			return;
		}
		/* Twice the count must fit the reply's length. */
		if (withscores && (l < -LLONG_MAX / 2 || l > LLONG_MAX / 2)) {
			reply_error(c, "value is out of range");
			return;
		}
		zrandmember_count(c, l, withscores);
		return;
	}
	if (!zset_lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_null(c);
		return;
	}
	zset_at(&e->val, rand64() % zset_len(&e->val), &el);
	reply_bulk(c, el.m, el.len);
}

/* ---- ZSCAN ----------------------------------------------------------------------------------- */

struct scan_out {
	const struct arg *pat; /* NULL: every member */
	struct zset_elem *v;
	size_t n, cap;
};

static void scan_collect(void *ctx, const struct zset_elem *el)
{
	struct scan_out *so = ctx;

	if (so->pat && !glob_match(so->pat->p, so->pat->len, el->m, el->len, false))
		return;
	if (so->n == so->cap) {
		so->cap = so->cap ? 2 * so->cap : 16;
		so->v = xrealloc(so->v, so->cap * sizeof(*so->v));
	}
	so->v[so->n++] = *el;
}

/* ZSCAN key cursor [MATCH pattern] [COUNT count]: scores are sent as
 * strings in both protocols, as Redis's SCAN family sends them. */
void cmd_zscan(struct client *c)
{
	struct scan_out so = { 0 };
	char buf[64];
	long long count = 10;
	uint64_t cursor;
	struct entry *e;

	if (!str_to_cursor(c->argv[2].p, &cursor)) {
		reply_error(c, "invalid cursor");
		return;
	}
	if (!zset_lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_array(c, 2);
		reply_bulk(c, "0", 1);
		reply_array(c, 0);
		return;
	}
	for (int i = 3; i < c->argc; i += 2) {
		if (arg_is(c, i, "count") && i + 1 < c->argc) {
			if (!arg_ll(c, i + 1, &count))
				return;
			if (count < 1) {
				reply_error(c, ERR_SYNTAX);
				return;
			}
		} else if (arg_is(c, i, "match") && i + 1 < c->argc) {
			so.pat = &c->argv[i + 1];
			if (so.pat->len == 1 && so.pat->p[0] == '*')
				so.pat = NULL;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	cursor = zset_scan(&e->val, cursor, (size_t)count, scan_collect, &so);

	reply_array(c, 2);
	reply_bulk(c, buf, (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cursor));
	reply_array(c, (long)(2 * so.n));
	for (size_t i = 0; i < so.n; i++) {
		reply_bulk(c, so.v[i].m, so.v[i].len);
		/* As Redis 8.8: a listpack holds d2string's text, a skiplist's
		 * score is printed with "%.17Lg" (ld2string's auto mode). */
		if (e->val.enc == ENC_LISTPACK)
			reply_bulk(c, buf, (size_t)d_to_str(buf, sizeof(buf), so.v[i].score));
		else
			reply_bulk(c, buf,
				   (size_t)snprintf(buf, sizeof(buf), "%.17Lg",
						    (long double)so.v[i].score));
	}
	xfree(so.v);
}
