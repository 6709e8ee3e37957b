// SPDX-License-Identifier: BSD-3-Clause
/*
 * The list family: pushes and pops at either end, ranges, indexes, search
 * (LPOS), removal, trimming, and moves between lists (LMOVE, RPOPLPUSH,
 * LMPOP). The blocking variants are not here: they need the server to park
 * a client, which it cannot do yet.
 *
 * Replies, error strings and the order of the checks follow Redis 7.0, since
 * clients observe which error wins: most commands parse their numbers before
 * looking the key up, but LINDEX and LSET look the key up first. Reads count
 * keyspace hits and misses (key_find_read) where Redis's lookupKeyRead does.
 *
 * Locking. The dispatcher holds the shards of every key the rows' key specs
 * find (both of them for LMOVE and RPOPLPUSH, LMPOP's numkeys keys).
 * A list that loses its last element is deleted, as in Redis; every other
 * change in place is signalled with db_changed().
 */
#include <limits.h>
#include <string.h>

#include "commands.h"
#include "notify.h"
#include "mem.h"
#include "propagate.h"
#include "t_list.h"
#include "util.h"

#define ERR_INDEX_RANGE "index out of range"
#define ERR_RANK_ZERO                                                                              \
	"RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "   \
	"negative to start from the end of the list"

/* argv[i] as LEFT or RIGHT; a syntax error otherwise. */
static bool arg_where(struct client *c, int i, enum list_where *where)
{
	if (arg_is(c, i, "left")) {
		*where = LIST_HEAD;
	} else if (arg_is(c, i, "right")) {
		*where = LIST_TAIL;
	} else {
		reply_error(c, ERR_SYNTAX);
		return false;
	}
	return true;
}

/* An integer of at least min, as Redis's getRangeLongFromObjectOrReply reads
 * counts: msg is the error both for a non-integer and for one out of range. */
static bool arg_min(struct client *c, int i, long long min, const char *msg, long long *v)
{
	if (!str_to_ll(c->argv[i].p, c->argv[i].len, v) || *v < min) {
		reply_error(c, msg);
		return false;
	}
	return true;
}

/* Redis's list index: negative counts from the tail. Returns false when it
 * falls outside a list of len elements. */
static bool list_index_norm(long long index, size_t len, size_t *out)
{
	if (index < 0)
		index += (long long)len;
	if (index < 0 || (unsigned long long)index >= len)
		return false;
	*out = (size_t)index;
	return true;
}

static void reply_elem(void *ctx, const char *p, size_t len)
{
	reply_bulk(ctx, p, len);
}

/* After e's list (key argument i) lost elements: deletes the key if the
 * list is empty now, or signals the change; then Redis's events, `event`
 * and "del" for a deleted key. */
static void list_shrunk(struct client *c, struct entry *e, const char *event, int i)
{
	bool empty = list_len(&e->val) == 0;

	if (empty)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	notify_arg(c, NOTIFY_LIST, event, i);
	if (empty)
		notify_arg(c, NOTIFY_GENERIC, "del", i);
}

static const char *pop_event(enum list_where where)
{
	return where == LIST_HEAD ? "lpop" : "rpop";
}

static const char *push_event(enum list_where where)
{
	return where == LIST_HEAD ? "lpush" : "rpush";
}

/* ---- push and pop ----------------------------------------------------------------------- */

static void push_args(struct client *c, struct obj *o, enum list_where where)
{
	for (int i = 2; i < c->argc; i++)
		list_push(o, where, c->argv[i].p, c->argv[i].len);
}

/* LPUSH, RPUSH and, with only_existing, LPUSHX and RPUSHX. */
static void push_generic(struct client *c, enum list_where where, bool only_existing)
{
	struct entry *e = key_find(c, 1);

	if (e && !entry_is(c, e, OBJ_LIST))
		return;
	if (e) {
		push_args(c, &e->val, where);
		db_changed(c->db, e);
	} else if (only_existing) {
		reply_int(c, 0);
		return;
	} else {
		struct obj o = list_new();

		push_args(c, &o, where);
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, o);
	}
	command_dirty((uint64_t)(c->argc - 2)); /* one per element, as Redis */
	notify_arg(c, NOTIFY_LIST, push_event(where), 1);
	reply_int(c, (long long)list_len(&e->val));
}

void cmd_lpush(struct client *c)
{
	push_generic(c, LIST_HEAD, false);
}

void cmd_rpush(struct client *c)
{
	push_generic(c, LIST_TAIL, false);
}

void cmd_lpushx(struct client *c)
{
	push_generic(c, LIST_HEAD, true);
}

void cmd_rpushx(struct client *c)
{
	push_generic(c, LIST_TAIL, true);
}

/* LPOP and RPOP key [count]: a bulk without count, an array with one (a
 * null array for a missing key, an empty one for count 0). */
static void pop_generic(struct client *c, enum list_where where)
{
	bool has_count = c->argc == 3;
	long long count = 1;
	struct entry *e;
	size_t n;

	if (c->argc > 3) {
		reply_errorf(c, "wrong number of arguments for '%s' command",
			     where == LIST_HEAD ? "lpop" : "rpop");
		return;
	}
	if (has_count && !arg_min(c, 2, 0, "value is out of range, must be positive", &count))
		return;
	e = key_find(c, 1);
	if (!e) {
		if (has_count)
			reply_null_array(c);
		else
			reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;
	n = list_len(&e->val);
	if ((unsigned long long)count < n)
		n = (size_t)count;
	if (has_count)
		reply_array(c, (long)n);
	if (!n)
		return;
	list_pop(&e->val, where, n, reply_elem, c);
	command_dirty(n);
	list_shrunk(c, e, pop_event(where), 1);
}

void cmd_lpop(struct client *c)
{
	pop_generic(c, LIST_HEAD);
}

void cmd_rpop(struct client *c)
{
	pop_generic(c, LIST_TAIL);
}

/* ---- reads ------------------------------------------------------------------------------ */

void cmd_llen(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (entry_is(c, e, OBJ_LIST))
		reply_int(c, (long long)list_len(&e->val));
}

void cmd_lrange(struct client *c)
{
	long long start, stop;
	size_t first, last;
	struct list_iter it;
	struct list_elem el;
	struct entry *e;

	if (!arg_ll(c, 2, &start) || !arg_ll(c, 3, &stop))
		return;
	e = key_find_read(c, 1);
	if (!e) {
		reply_array(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;
	if (!rank_range(start, stop, list_len(&e->val), &first, &last)) {
		reply_array(c, 0);
		return;
	}
	reply_array(c, (long)(last - first + 1));
	list_iter_init(&it, &e->val, first, false);
	for (size_t i = first; i <= last && list_iter_next(&it, &el); i++)
		reply_bulk(c, el.p, el.len);
}

void cmd_lindex(struct client *c)
{
	struct entry *e = key_find_read(c, 1);
	struct list_elem el;
	long long index;
	size_t i;

	if (!e) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST) || !arg_ll(c, 2, &index))
		return;
	if (list_index_norm(index, list_len(&e->val), &i) && list_index(&e->val, i, &el))
		reply_bulk(c, el.p, el.len);
	else
		reply_null(c);
}

/*
 * LPOS key element [RANK rank] [COUNT n] [MAXLEN len]: the index of the
 * rank-th match (negative: counting from the tail), or with COUNT an array
 * of up to n indexes (0: all); MAXLEN bounds how many elements are compared.
 */
void cmd_lpos(struct client *c)
{
	long long rank = 1, count = -1, maxlen = 0, index = 0, matches = 0, found = -1;
	const struct arg *ele = &c->argv[2];
	size_t len, nidx = 0, cap = 0;
	long long *idx = NULL;
	struct list_iter it;
	struct list_elem el;
	struct entry *e;
	bool reverse;

	for (int j = 3; j < c->argc; j++) {
		bool more = j + 1 < c->argc;

		if (arg_is(c, j, "rank") && more) {
			if (!arg_ll(c, ++j, &rank))
				return;
			/* -LLONG_MAX..LLONG_MAX: LLONG_MIN has no positive twin. */
			if (rank == LLONG_MIN) {
				reply_errorf(
					c,
					"value is out of range, value must between %lld and %lld",
					-LLONG_MAX, LLONG_MAX);
				return;
			}
			if (rank == 0) {
				reply_error(c, ERR_RANK_ZERO);
				return;
			}
		} else if (arg_is(c, j, "count") && more) {
			if (!arg_min(c, ++j, 0, "COUNT can't be negative", &count))
				return;
		} else if (arg_is(c, j, "maxlen") && more) {
			if (!arg_min(c, ++j, 0, "MAXLEN can't be negative", &maxlen))
				return;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	e = key_find_read(c, 1);
	if (!e) {
		if (count != -1)
			reply_array(c, 0);
		else
			reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;

	reverse = rank < 0;
	if (rank == LLONG_MIN) {
		/* Redis negates LONG_MIN into itself: then every match qualifies
		 * and no COUNT ever ends the walk. */
		rank = 1;
		if (count > 0)
			count = 0;
	} else if (reverse) {
		rank = -rank;
	}
	len = list_len(&e->val);
	list_iter_init(&it, &e->val, reverse ? len - 1 : 0, reverse);
	while ((maxlen == 0 || index < maxlen) && list_iter_next(&it, &el)) {
		if (el.len == ele->len && memcmp(el.p, ele->p, el.len) == 0 && ++matches >= rank) {
			long long at = reverse ? (long long)len - index - 1 : index;

			if (count == -1) {
				found = at;
				break;
			}
			if (nidx == cap) {
				cap = cap ? cap * 2 : 16;
				idx = xrealloc(idx, cap * sizeof(*idx));
			}
			idx[nidx++] = at;
			if (count && matches - rank + 1 >= count)
				break;
		}
		index++;
	}
	if (count == -1) {
		if (found == -1)
			reply_null(c);
		else
			reply_int(c, found);
		return;
	}
	reply_array(c, (long)nidx);
	for (size_t i = 0; i < nidx; i++)
		reply_int(c, idx[i]);
	xfree(idx);
}

/* ---- changes in place ------------------------------------------------------------------- */

void cmd_lset(struct client *c)
{
	struct entry *e = key_find(c, 1);
	long long index;
	size_t i;

	if (!e) {
		reply_error(c, ERR_NO_KEY);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST) || !arg_ll(c, 2, &index))
		return;
	if (!list_index_norm(index, list_len(&e->val), &i)) {
		reply_error(c, ERR_INDEX_RANGE);
		return;
	}
	list_set(&e->val, i, c->argv[3].p, c->argv[3].len);
	db_changed(c->db, e);
	notify_arg(c, NOTIFY_LIST, "lset", 1);
	reply_ok(c);
}

void cmd_linsert(struct client *c)
{
	struct entry *e;
	bool after;

	if (arg_is(c, 2, "after")) {
		after = true;
	} else if (arg_is(c, 2, "before")) {
		after = false;
	} else {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;
	if (!list_insert(&e->val, c->argv[3].p, c->argv[3].len, after, c->argv[4].p,
			 c->argv[4].len)) {
		reply_int(c, -1);
		return;
	}
	db_changed(c->db, e);
	notify_arg(c, NOTIFY_LIST, "linsert", 1);
	reply_int(c, (long long)list_len(&e->val));
}

/* LREM key count element: count > 0 removes the first count matches, < 0
 * the last -count, 0 all of them. */
void cmd_lrem(struct client *c)
{
	unsigned long long limit;
	long long count;
	struct entry *e;
	size_t removed;

	if (!arg_ll(c, 2, &count))
		return;
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;
	limit = count < 0 ? 0ULL - (unsigned long long)count : (unsigned long long)count;
	removed = list_remove(&e->val, c->argv[3].p, c->argv[3].len, (size_t)limit, count < 0);
	command_dirty(removed);
	if (removed)
		list_shrunk(c, e, "lrem", 1);
	reply_int(c, (long long)removed);
}

void cmd_ltrim(struct client *c)
{
	long long start, stop;
	size_t len, first, last, ltrim, rtrim;
	struct entry *e;

	if (!arg_ll(c, 2, &start) || !arg_ll(c, 3, &stop))
		return;
	e = key_find(c, 1);
	if (!e) {
		reply_ok(c);
		return;
	}
	if (!entry_is(c, e, OBJ_LIST))
		return;
	len = list_len(&e->val);
	if (rank_range(start, stop, len, &first, &last)) {
		ltrim = first;
		rtrim = len - last - 1;
	} else {
		ltrim = len; /* an empty range empties the list */
		rtrim = 0;
	}
	list_delete_range(&e->val, len - rtrim, rtrim);
	list_delete_range(&e->val, 0, ltrim);
	command_dirty(ltrim + rtrim);
	/* Redis signals the key even when nothing was trimmed. */
	list_shrunk(c, e, "ltrim", 1);
	reply_ok(c);
}

/* ---- moves between lists ---------------------------------------------------------------- */

/*
 * LMOVE and RPOPLPUSH: pops from argv[1] at `from` and pushes onto argv[2]
 * at `to`, replying with the element. Both keys' shards are held. The keys
 * may be the same list (a rotation), so the element is copied out before the
 * pop and the source is deleted, if empty, only after the push.
 */
static void move_generic(struct client *c, enum list_where from, enum list_where to)
{
	struct entry *src = key_find(c, 1), *dst;
	struct list_elem el;
	char small[64], *copy;
	size_t len;

	if (!src) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, src, OBJ_LIST))
		return;
	dst = key_find(c, 2);
	if (dst && !entry_is(c, dst, OBJ_LIST))
		return;
	list_index(&src->val, from == LIST_HEAD ? 0 : list_len(&src->val) - 1, &el);
	len = el.len;
	copy = len <= sizeof(small) ? small : xmalloc(len);
	memcpy(copy, el.p, len);
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
	notify_arg(c, NOTIFY_LIST, push_event(to), 2);
	reply_bulk(c, copy, len);
	if (copy != small)
		xfree(copy);
	list_shrunk(c, src, pop_event(from), 1);
}

void cmd_lmove(struct client *c)
{
	enum list_where from, to;

	if (arg_where(c, 3, &from) && arg_where(c, 4, &to))
		move_generic(c, from, to);
}

void cmd_rpoplpush(struct client *c)
{
	move_generic(c, LIST_TAIL, LIST_HEAD);
}

/*
 * LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops up to count
 * elements from the first non-empty list among the keys and replies
 * [key, [elements]], or a null array if every key is missing.
 */
void cmd_lmpop(struct client *c)
{
	long long numkeys, count = -1;
	enum list_where where;
	int where_arg, j;

	if (!arg_min(c, 1, 1, "numkeys should be greater than 0", &numkeys))
		return;
	if (numkeys >= c->argc - 2) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	where_arg = 2 + (int)numkeys;
	if (!arg_where(c, where_arg, &where))
		return;
	for (j = where_arg + 1; j < c->argc; j++) {
		if (count == -1 && arg_is(c, j, "count") && j + 1 < c->argc) {
			if (!arg_min(c, ++j, 1, "count should be greater than 0", &count))
				return;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (count == -1)
		count = 1;

	for (j = 2; j < where_arg; j++) {
		struct entry *e = key_find(c, j);
		size_t n;

		if (!e)
			continue;
		if (!entry_is(c, e, OBJ_LIST))
			return;
		n = list_len(&e->val);
		if ((unsigned long long)count < n)
			n = (size_t)count;
		reply_array(c, 2);
		reply_bulk(c, c->argv[j].p, c->argv[j].len);
		reply_array(c, (long)n);
		list_pop(&e->val, where, n, reply_elem, c);
		command_dirty(n);
		list_shrunk(c, e, pop_event(where), j);
		propagate_pop(where == LIST_HEAD ? "LPOP" : "RPOP", &c->argv[j], (long long)n);
		return;
	}
	reply_null_array(c);
}
