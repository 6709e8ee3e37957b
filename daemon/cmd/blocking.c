// SPDX-License-Identifier: BSD-3-Clause
/*
 * BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP: each tries
 * its non-blocking form; with nothing to pop it blocks (blocking.h) unless
 * inside a transaction, where it answers as a timeout would.
 */
#include <math.h>
#include <string.h>

#include "blocking.h"
#include "commands.h"
#include "notify.h"
#include "exec_ctx.h"
#include "mem.h"
#include "propagate.h"
#include "t_list.h"
#include "t_zset.h"
#include "util.h"

/* The timeout argument in seconds (decimals allowed) as ms, 0 for ever. */
static bool arg_timeout(struct client *c, int i, int64_t *ms)
{
	long double secs;

	if (!str_to_ld(c->argv[i].p, c->argv[i].len, &secs)) {
		reply_error(c, "timeout is not a float or out of range");
		return false;
	}
	/* Redis 8.8's checks, in its order: milliseconds past the 64-bit range,
	 * below zero, or a deadline (now + timeout) past it. */
	if (secs * 1000 > (long double)INT64_MAX) {
		reply_error(c, "timeout is out of range");
		return false;
	}
	if (secs < 0) {
		reply_error(c, "timeout is negative");
		return false;
	}
	*ms = (int64_t)ceill(secs * 1000);
	if (*ms > INT64_MAX - (exec_ctx_top ? exec_ctx_top->time_ms : now_ms())) {
		reply_error(c, "timeout is out of range");
		return false;
	}
	return true;
}

/* Nothing to pop: block, or inside a transaction answer at once (a null
 * bulk for the moves, a null array for the pops, as Redis does). */
static void wait_or_give_up(struct client *c, int first, int last, int64_t ms, bool null_bulk,
			    int type)
{
	int keys[256], n = 0;

	if (!blocking_allowed(c)) {
		if (!(exec_ctx_flags() & EXEC_RETRY)) {
			if (null_bulk)
				reply_null(c);
			else
				reply_null_array(c);
		}
		return;
	}
	for (int i = first; i <= last && n < 256; i++)
		keys[n++] = i;
	/* A timeout is a null array for every one of them, as in Redis. */
	blocking_block_on(c, keys, n, ms, false, type, false);
}

/* An emptied list or sorted set (key argument i) goes, as everywhere; then
 * Redis's events: the pop's, and "del" for a deleted key. */
static void shrunk(struct client *c, struct entry *e, size_t len, int type, const char *event,
		   int i)
{
	if (!len)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	notify_arg(c, type, event, i);
	if (!len)
		notify_arg(c, NOTIFY_GENERIC, "del", i);
}

static void reply_list_elem(void *ctx, const char *p, size_t len)
{
	reply_bulk(ctx, p, len);
}

static void bpop_list(struct client *c, enum list_where where)
{
	int64_t ms;

	if (!arg_timeout(c, c->argc - 1, &ms))
		return;
	for (int i = 1; i < c->argc - 1; i++) {
		struct entry *e = key_find(c, i);

		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_LIST))
			return;
		reply_array(c, 2);
		reply_bulk(c, c->argv[i].p, c->argv[i].len);
		list_pop(&e->val, where, 1, reply_list_elem, c);
		shrunk(c, e, list_len(&e->val), NOTIFY_LIST, where == LIST_HEAD ? "lpop" : "rpop",
		       i);
		/* Served at once or later, it is a plain pop in the stream. */
		propagate_pop(where == LIST_HEAD ? "LPOP" : "RPOP", &c->argv[i], 0);
		return;
	}
	wait_or_give_up(c, 1, c->argc - 2, ms, false, OBJ_LIST);
}

void cmd_blpop(struct client *c)
{
	bpop_list(c, LIST_HEAD);
}

void cmd_brpop(struct client *c)
{
	bpop_list(c, LIST_TAIL);
}

static bool arg_side(struct client *c, int i, enum list_where *where)
{
	if (arg_is(c, i, "LEFT"))
		*where = LIST_HEAD;
	else if (arg_is(c, i, "RIGHT"))
		*where = LIST_TAIL;
	else {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	return true;
}

/* Moves one element from argv[1] to argv[2]; false if argv[1] is missing. */
static bool move_one(struct client *c, enum list_where from, enum list_where to, bool *failed)
{
	struct entry *src = key_find(c, 1), *dst;
	struct list_elem el;
	char *copy;
	size_t len;

	*failed = false;
	if (!src)
		return false;
	if (!entry_is(c, src, OBJ_LIST) ||
	    ((dst = key_find(c, 2)) && !entry_is(c, dst, OBJ_LIST))) {
		*failed = true;
		return true;
	}
	list_index(&src->val, from == LIST_HEAD ? 0 : list_len(&src->val) - 1, &el);
	len = el.len;
	copy = xstrndup(el.p, len);
	list_pop(&src->val, from, 1, NULL, NULL);
	if (dst) {
		list_push(&dst->val, to, copy, len);
		db_changed(c->db, dst);
	} else {
		struct obj o = list_new();

		list_push(&o, to, copy, len);
		dst = db_add(c->db, c->argv[2].p, c->argv[2].len, o);
	}
	command_dirty(1); /* a move is one change, as in Redis */
	notify_arg(c, NOTIFY_LIST, to == LIST_HEAD ? "lpush" : "rpush", 2);
	reply_bulk(c, copy, len);
	xfree(copy);
	/* The source may be the destination (a rotation): look it up again. */
	src = key_find(c, 1);
	if (src)
		shrunk(c, src, list_len(&src->val), NOTIFY_LIST,
		       from == LIST_HEAD ? "lpop" : "rpop", 1);
	return true;
}

static void bmove(struct client *c, enum list_where from, enum list_where to, int timeout_arg)
{
	int64_t ms;
	bool failed;

	if (!arg_timeout(c, timeout_arg, &ms))
		return;
	if (!move_one(c, from, to, &failed))
		wait_or_give_up(c, 1, 1, ms, true, OBJ_LIST);
	else if (!failed)
		propagate_renamed(c->argc, c->argv, timeout_arg == 3 ? "RPOPLPUSH" : "LMOVE",
				  timeout_arg);
}

void cmd_brpoplpush(struct client *c)
{
	bmove(c, LIST_TAIL, LIST_HEAD, 3);
}

void cmd_blmove(struct client *c)
{
	enum list_where from, to;

	if (arg_side(c, 3, &from) && arg_side(c, 4, &to))
		bmove(c, from, to, 5);
}

/* BLMPOP and BZMPOP: timeout numkeys key... SIDE [COUNT n]. */
struct mpop_args {
	int64_t ms;
	int first, last; /* key indexes */
	bool max;	 /* RIGHT / MAX */
	long long count;
};

static bool parse_mpop(struct client *c, bool zset, struct mpop_args *a)
{
	long long numkeys;
	int side;

	if (!arg_timeout(c, 1, &a->ms))
		return false;
	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &numkeys) || numkeys <= 0 ||
	    numkeys > INT32_MAX) {
		reply_error(c, "numkeys should be greater than 0");
		return false;
	}
	if (numkeys > c->argc - 4) {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	a->first = 3;
	a->last = 2 + (int)numkeys;
	side = a->last + 1;
	if (zset ? arg_is(c, side, "MIN") : arg_is(c, side, "LEFT"))
		a->max = false;
	else if (zset ? arg_is(c, side, "MAX") : arg_is(c, side, "RIGHT"))
		a->max = true;
	else {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	a->count = -1;
	for (int j = side + 1; j < c->argc; j++) {
		if (a->count == -1 && arg_is(c, j, "COUNT") && j + 1 < c->argc) {
			if (!str_to_ll(c->argv[j + 1].p, c->argv[j + 1].len, &a->count) ||
			    a->count <= 0) {
				reply_error(c, "count should be greater than 0");
				return false;
			}
			j++;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	if (a->count == -1)
		a->count = 1;
	return true;
}

static void lmpop_locked(struct client *c, const struct mpop_args *a)
{
	for (int j = a->first; j <= a->last; j++) {
		struct entry *e = key_find(c, j);
		size_t n;

		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_LIST))
			return;
		n = list_len(&e->val);
		if ((unsigned long long)a->count < n)
			n = (size_t)a->count;
		reply_array(c, 2);
		reply_bulk(c, c->argv[j].p, c->argv[j].len);
		reply_array(c, (long)n);
		list_pop(&e->val, a->max ? LIST_TAIL : LIST_HEAD, n, reply_list_elem, c);
		command_dirty(n);
		shrunk(c, e, list_len(&e->val), NOTIFY_LIST, a->max ? "rpop" : "lpop", j);
		propagate_pop(a->max ? "RPOP" : "LPOP", &c->argv[j], (long long)n);
		return;
	}
	wait_or_give_up(c, a->first, a->last, a->ms, false, OBJ_LIST);
}

void cmd_blmpop(struct client *c)
{
	struct mpop_args a;

	if (parse_mpop(c, false, &a))
		lmpop_locked(c, &a);
}

/* Pops k members of a sorted set from one end, replying with each as
 * (member, score), in pairs or flat. */
static void zpop_members(struct client *c, struct entry *e, int i, bool max, size_t k, bool pairs)
{
	size_t n = zset_len(&e->val);

	for (size_t i = 0; i < k; i++) {
		struct zset_elem el;

		zset_at(&e->val, max ? n - 1 - i : i, &el);
		if (pairs)
			reply_array(c, 2);
		reply_bulk(c, el.m, el.len);
		reply_double(c, el.score);
	}
	zset_del_ranks(&e->val, max ? n - k : 0, max ? n : k);
	command_dirty(k);
	shrunk(c, e, zset_len(&e->val), NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", i);
}

static void bzpop(struct client *c, bool max)
{
	int64_t ms;

	if (!arg_timeout(c, c->argc - 1, &ms))
		return;
	for (int i = 1; i < c->argc - 1; i++) {
		struct entry *e = key_find(c, i);

		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_ZSET))
			return;
		reply_array(c, 3);
		reply_bulk(c, c->argv[i].p, c->argv[i].len);
		zpop_members(c, e, i, max, 1, false);
		propagate_pop(max ? "ZPOPMAX" : "ZPOPMIN", &c->argv[i], 0);
		return;
	}
	wait_or_give_up(c, 1, c->argc - 2, ms, false, OBJ_ZSET);
}

void cmd_bzpopmin(struct client *c)
{
	bzpop(c, false);
}

void cmd_bzpopmax(struct client *c)
{
	bzpop(c, true);
}

static void zmpop_locked(struct client *c, const struct mpop_args *a)
{
	for (int j = a->first; j <= a->last; j++) {
		struct entry *e = key_find(c, j);
		size_t n;

		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_ZSET))
			return;
		n = zset_len(&e->val);
		if ((unsigned long long)a->count < n)
			n = (size_t)a->count;
		reply_array(c, 2);
		reply_bulk(c, c->argv[j].p, c->argv[j].len);
		reply_array(c, (long)n);
		zpop_members(c, e, j, a->max, n, true);
		propagate_pop(a->max ? "ZPOPMAX" : "ZPOPMIN", &c->argv[j], (long long)n);
		return;
	}
	wait_or_give_up(c, a->first, a->last, a->ms, false, OBJ_ZSET);
}

void cmd_bzmpop(struct client *c)
{
	struct mpop_args a;

	if (parse_mpop(c, true, &a))
		zmpop_locked(c, &a);
}
