// SPDX-License-Identifier: BSD-3-Clause
/*
 * The set family: SADD, SREM, membership, SMEMBERS, the algebra (SINTER,
 * SUNION, SDIFF, their STORE forms and SINTERCARD), SMOVE, SPOP, SRANDMEMBER
 * and SSCAN, on the set type of t_set.c.
 *
 * Replies, error strings and the order in which errors are checked follow
 * Redis 7.0. A set left empty is deleted; an in-place change is signalled
 * with db_changed(). Members come out in no particular order, as in Redis.
 *
 * Locking. Every row runs with the shards of its keys locked by the
 * dispatcher, SINTERCARD's numkeys keys included (its key specs find them).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "notify.h"
#include "mem.h"
#include "propagate.h"
#include "t_set.h"
#include "util.h"

/* set_member_fn that replies with the member as a bulk string. */
static void reply_member(void *ctx, const char *p, size_t len)
{
	reply_bulk(ctx, p, len);
}

/* Replies with every member of o as a set ("~" in RESP3). */
static void reply_members(struct client *c, const struct obj *o)
{
	struct set_iter it;
	const char *p;
	size_t len;

	reply_set(c, (long)set_size(o));
	set_iter_init(&it, o);
	while (set_iter_next(&it, &p, &len))
		reply_bulk(c, p, len);
}

/* After members were removed from e's set (key argument i): deletes it if
 * empty; then Redis's events, `event` and "del" for a deleted key. */
static void set_shrunk(struct client *c, struct entry *e, const char *event, int i)
{
	bool empty = set_size(&e->val) == 0;

	if (empty)
		db_delete(c->db, e);
	else
		db_changed(c->db, e);
	notify_arg(c, NOTIFY_SET, event, i);
	if (empty)
		notify_arg(c, NOTIFY_GENERIC, "del", i);
}

/* ---- SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS ------------------------------------ */

void cmd_sadd(struct client *c)
{
	const struct arg *key = &c->argv[1];
	struct entry *e = key_find(c, 1);
	long long added = 0;

	if (e && !entry_is(c, e, OBJ_SET))
		return;
	if (!e) {
		/* Built whole, then added: the key appears complete. */
		struct obj o = set_new(c->argv[2].p, c->argv[2].len, (size_t)c->argc - 2);

		for (int i = 2; i < c->argc; i++)
			added += set_add(&o, c->argv[i].p, c->argv[i].len);
		db_add(c->db, key->p, key->len, o);
	} else {
		for (int i = 2; i < c->argc; i++)
			added += set_add(&e->val, c->argv[i].p, c->argv[i].len);
		if (added)
			db_changed(c->db, e);
	}
	command_dirty((uint64_t)added);
	if (added)
		notify_arg(c, NOTIFY_SET, "sadd", 1);
	reply_int(c, added);
}

void cmd_srem(struct client *c)
{
	struct entry *e = key_find(c, 1);
	long long removed = 0;

	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_SET))
		return;
	for (int i = 2; i < c->argc && set_size(&e->val); i++)
		removed += set_remove(&e->val, c->argv[i].p, c->argv[i].len);
	command_dirty((uint64_t)removed);
	if (removed)
		set_shrunk(c, e, "srem", 1);
	reply_int(c, removed);
}

void cmd_scard(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (!e)
		reply_int(c, 0);
	else if (entry_is(c, e, OBJ_SET))
		reply_int(c, (long long)set_size(&e->val));
}

void cmd_sismember(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (!e)
		reply_int(c, 0);
	else if (entry_is(c, e, OBJ_SET))
		reply_int(c, set_contains(&e->val, c->argv[2].p, c->argv[2].len));
}

void cmd_smismember(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (e && !entry_is(c, e, OBJ_SET))
		return;
	reply_array(c, c->argc - 2);
	for (int i = 2; i < c->argc; i++)
		reply_int(c, e && set_contains(&e->val, c->argv[i].p, c->argv[i].len));
}

void cmd_smembers(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (!e)
		reply_set(c, 0);
	else if (entry_is(c, e, OBJ_SET))
		reply_members(c, &e->val);
}

/* ---- SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD ------------------------------- */

/*
 * Looks up the n keys from argv[first] into sets[] (NULL for a missing key,
 * which counts as an empty set). Every key is checked, so a key of another
 * type is an error even after a missing one, as in Redis. Sources of a
 * STORE (write) count no keyspace hits or misses, as in Redis. Returns
 * false after replying WRONGTYPE.
 */
static bool lookup_sets(struct client *c, int first, int n, bool write, const struct obj **sets)
{
	for (int i = 0; i < n; i++) {
		struct entry *e = write ? key_find(c, first + i) : key_find_read(c, first + i);

		if (e && !entry_is(c, e, OBJ_SET))
			return false;
		sets[i] = e ? &e->val : NULL;
	}
	return true;
}

static int by_size(const void *a, const void *b)
{
	size_t x = set_size(*(const struct obj *const *)a);
	size_t y = set_size(*(const struct obj *const *)b);

	return (x > y) - (x < y);
}

/*
 * The intersection of sets[0..n): its size, stopping at limit if not 0, and
 * its members added to *out unless out is NULL. Walks the smallest set and
 * probes the others (O(1) each for hash tables), smallest first, so a
 * non-member is usually rejected early. Reorders sets[].
 */
static uint64_t set_inter(const struct obj **sets, int n, struct obj *out, uint64_t limit)
{
	struct set_iter it;
	uint64_t count = 0;
	const char *p;
	size_t len;

	for (int i = 0; i < n; i++)
		if (!sets[i] || !set_size(sets[i]))
			return 0;
	qsort(sets, (size_t)n, sizeof(*sets), by_size);
	set_iter_init(&it, sets[0]);
	while (set_iter_next(&it, &p, &len)) {
		int j = 1;

		while (j < n && (sets[j] == sets[0] || set_contains(sets[j], p, len)))
			j++;
		if (j < n)
			continue;
		if (out)
			set_add(out, p, len);
		if (++count == limit)
			break;
	}
	return count;
}

/* Adds every member of sets[0..n) to out. */
static void set_union(const struct obj **sets, int n, struct obj *out)
{
	struct set_iter it;
	const char *p;
	size_t len;

	for (int i = 0; i < n; i++) {
		if (!sets[i])
			continue;
		set_iter_init(&it, sets[i]);
		while (set_iter_next(&it, &p, &len))
			set_add(out, p, len);
	}
}

/*
 * sets[0] minus the others, into *out (which starts empty). Of Redis's two
 * ways, the cheaper for these sizes: probe the others for each member of the
 * first (first size * sets), or copy the first and remove each member of the
 * others (their total size). Probing usually stops early, hence the halving.
 */
static void set_diff(const struct obj **sets, int n, struct obj *out)
{
	uint64_t probe_cost = 0, remove_cost = 0;
	struct set_iter it;
	const char *p;
	size_t len;

	if (!sets[0] || !set_size(sets[0]))
		return;
	for (int i = 1; i < n; i++) {
		if (!sets[i])
			continue;
		probe_cost += set_size(sets[0]);
		remove_cost += set_size(sets[i]);
	}
	if (probe_cost / 2 <= remove_cost) {
		set_iter_init(&it, sets[0]);
		while (set_iter_next(&it, &p, &len)) {
			int j = 1;

			while (j < n && !(sets[j] && set_contains(sets[j], p, len)))
				j++;
			if (j == n)
				set_add(out, p, len);
		}
		return;
	}
	obj_free(out);
	*out = obj_dup(sets[0]);
	for (int i = 1; i < n && set_size(out); i++) {
		if (!sets[i])
			continue;
		set_iter_init(&it, sets[i]);
		while (set_iter_next(&it, &p, &len))
			set_remove(out, p, len);
	}
}

enum set_op { SET_OP_INTER, SET_OP_UNION, SET_OP_DIFF };

/*
 * SINTER/SUNION/SDIFF over the keys from argv[first]; with store, the result
 * replaces argv[1] whatever it held (and its deadline), or deletes it when
 * empty, and the reply is its size.
 */
static void set_op_generic(struct client *c, int first, enum set_op op, bool store)
{
	int n = c->argc - first;
	const struct obj **sets = xmalloc((size_t)n * sizeof(*sets));
	struct obj res = set_new(NULL, 0, 0);
	long long size;

	if (!lookup_sets(c, first, n, store, sets))
		goto out_res;
	if (op == SET_OP_INTER)
		set_inter(sets, n, &res, 0);
	else if (op == SET_OP_UNION)
		set_union(sets, n, &res);
	else
		set_diff(sets, n, &res);

	if (!store) {
		reply_members(c, &res);
		goto out_res;
	}
	size = (long long)set_size(&res);
	if (size) {
		db_set(c->db, c->argv[1].p, c->argv[1].len, res, false);
		notify_arg(c, NOTIFY_SET,
			   op == SET_OP_INTER	? "sinterstore"
			   : op == SET_OP_UNION ? "sunionstore"
						: "sdiffstore",
			   1);
	} else {
		struct entry *e = key_find(c, 1);

		if (e) {
			db_delete(c->db, e);
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
		}
		obj_free(&res);
	}
	reply_int(c, size);
	goto out_sets;

out_res:
	obj_free(&res);
out_sets:
	xfree(sets);
}

void cmd_sinter(struct client *c)
{
	set_op_generic(c, 1, SET_OP_INTER, false);
}

void cmd_sunion(struct client *c)
{
	set_op_generic(c, 1, SET_OP_UNION, false);
}

void cmd_sdiff(struct client *c)
{
	set_op_generic(c, 1, SET_OP_DIFF, false);
}

void cmd_sinterstore(struct client *c)
{
	set_op_generic(c, 2, SET_OP_INTER, true);
}

void cmd_sunionstore(struct client *c)
{
	set_op_generic(c, 2, SET_OP_UNION, true);
}

void cmd_sdiffstore(struct client *c)
{
	set_op_generic(c, 2, SET_OP_DIFF, true);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
void cmd_sintercard(struct client *c)
{
	long long numkeys, limit = 0;
	const struct obj **sets;

	if (!str_to_ll(c->argv[1].p, c->argv[1].len, &numkeys) || numkeys < 1) {
		reply_error(c, "numkeys should be greater than 0");
		return;
	}
	if (numkeys > c->argc - 2) {
		reply_error(c, "Number of keys can't be greater than number of args");
		return;
	}
	for (int i = 2 + (int)numkeys; i < c->argc; i++) {
		if (arg_is(c, i, "limit") && i + 1 < c->argc) {
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &limit) || limit < 0) {
				reply_error(c, "LIMIT can't be negative");
				return;
			}
			i++;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}

	sets = xmalloc((size_t)numkeys * sizeof(*sets));
	if (lookup_sets(c, 2, (int)numkeys, false, sets))
		reply_int(c, (long long)set_inter(sets, (int)numkeys, NULL, (uint64_t)limit));
	xfree(sets);
}

/* ---- SMOVE, SPOP, SRANDMEMBER -------------------------------------------------------------- */

void cmd_smove(struct client *c)
{
	const struct arg *dkey = &c->argv[2], *m = &c->argv[3];
	struct entry *src = key_find(c, 1), *dst = key_find(c, 2);

	if (!src) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, src, OBJ_SET) || (dst && !entry_is(c, dst, OBJ_SET)))
		return;
	if (src == dst) {
		reply_int(c, set_contains(&src->val, m->p, m->len));
		return;
	}
	if (!set_remove(&src->val, m->p, m->len)) {
		reply_int(c, 0);
		return;
	}
	set_shrunk(c, src, "srem", 1);
	if (dst) {
		if (set_add(&dst->val, m->p, m->len)) {
			db_changed(c->db, dst);
			notify_arg(c, NOTIFY_SET, "sadd", 2);
		}
	} else {
		struct obj o = set_new(m->p, m->len, 1);

		set_add(&o, m->p, m->len);
		db_add(c->db, dkey->p, dkey->len, o);
		notify_arg(c, NOTIFY_SET, "sadd", 2);
	}
	reply_int(c, 1);
}

/* Popped members are replied, and noted for the stream: SPOP's choice is
 * random, so it propagates as SREM of what it took. */
struct popped {
	struct client *c;
	int n;
	struct arg *v; /* SREM key member...; NULL when nobody consumes the stream */
};

static void reply_popped(void *ctx, const char *p, size_t len)
{
	struct popped *pp = ctx;

	reply_bulk(pp->c, p, len);
	if (pp->v) {
		pp->v[pp->n].p = xstrndup(p, len);
		pp->v[pp->n++].len = len;
	}
}

/* n members popped; whole: SPOP with a count of the set's size or more,
 * which Redis 8.8 propagates as the key's deletion (UNLINK under
 * lazyfree-lazy-server-del), not as SREM. */
static void pop_members(struct client *c, struct entry *e, uint64_t n, bool whole)
{
	struct popped pp = { .c = c };

	command_dirty(n);
	if (whole && propagate_enabled()) {
		struct arg del[2] = { PROP_STR("DEL"), c->argv[1] };

		if (config.lazyfree_lazy_server_del)
			del[0] = PROP_STR("UNLINK");
		set_pop_random(&e->val, n, reply_popped, &pp);
		set_shrunk(c, e, "spop", 1);
		propagate_rewrite(2, del);
		return;
	}
	if (propagate_enabled()) {
		pp.v = xmalloc(sizeof(*pp.v) * (size_t)(n + 2));
		pp.v[0] = PROP_STR("SREM");
		pp.v[1] = c->argv[1];
		pp.n = 2;
	}
	set_pop_random(&e->val, n, reply_popped, &pp);
	set_shrunk(c, e, "spop", 1);
	if (!pp.v)
		return;
	propagate_rewrite(pp.n, pp.v);
	for (int i = 2; i < pp.n; i++)
		xfree(pp.v[i].p);
	xfree(pp.v);
}

/* SPOP key count: the popped members as a set. */
static void spop_count(struct client *c)
{
	struct entry *e;
	long long count;
	uint64_t n;

	if (!str_to_ll(c->argv[2].p, c->argv[2].len, &count) || count < 0) {
		reply_error(c, "value is out of range, must be positive");
		return;
	}
	e = key_find(c, 1);
	if (e && !entry_is(c, e, OBJ_SET))
		return;
	if (!e || count == 0) {
		reply_set(c, 0);
		return;
	}
	n = set_size(&e->val);
	if ((uint64_t)count < n)
		n = (uint64_t)count;
	reply_set(c, (long)n);
	pop_members(c, e, n, n == set_size(&e->val));
}

void cmd_spop(struct client *c)
{
	struct entry *e;

	if (c->argc == 3) {
		spop_count(c);
		return;
	}
	if (c->argc > 3) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find(c, 1);
	if (!e) {
		reply_null(c);
		return;
	}
	if (!entry_is(c, e, OBJ_SET))
		return;
	pop_members(c, e, 1, false);
}

/* SRANDMEMBER key count: distinct members for a positive count, count
 * members that may repeat for a negative one; an array, not a set. */
static void srandmember_count(struct client *c)
{
	struct entry *e;
	long long v;
	uint64_t count, size;
	bool unique;

	if (!arg_ll(c, 2, &v))
		return;
	if (v == LLONG_MIN) {
		reply_errorf(c, "value is out of range, value must between %lld and %lld",
			     -LLONG_MAX, LLONG_MAX);
		return;
	}
	unique = v >= 0;
	count = (uint64_t)(unique ? v : -v);
	e = key_find_read(c, 1);
	if (e && !entry_is(c, e, OBJ_SET))
		return;
	if (!e || count == 0) {
		reply_array(c, 0);
		return;
	}
	size = set_size(&e->val);
	reply_array(c, (long)(unique && count > size ? size : count));
	set_random_members(&e->val, count, unique, reply_member, c);
}

void cmd_srandmember(struct client *c)
{
	struct entry *e;

	if (c->argc == 3) {
		srandmember_count(c);
		return;
	}
	if (c->argc > 3) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	e = key_find_read(c, 1);
	if (!e)
		reply_null(c);
	else if (entry_is(c, e, OBJ_SET))
		set_random_members(&e->val, 1, true, reply_member, c);
}

/* ---- SSCAN --------------------------------------------------------------------------------- */

/* Members collected by an SSCAN step (copies: an intset's members live in a
 * reused buffer), and the pattern they are filtered by. */
struct scan_batch {
	const char *pat; /* NULL: everything */
	size_t plen;
	uint64_t seen; /* members visited, matching or not (COUNT) */
	struct arg *v;
	size_t n, cap;
};

static void scan_collect(void *ctx, const char *p, size_t len)
{
	struct scan_batch *b = ctx;

	b->seen++;
	if (b->pat && !glob_match(b->pat, b->plen, p, len, false))
		return;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->v = xrealloc(b->v, b->cap * sizeof(*b->v));
	}
	b->v[b->n].p = xstrndup(p, len);
	b->v[b->n].len = len;
	b->n++;
}

/* SSCAN key cursor [MATCH pattern] [COUNT count] */
void cmd_sscan(struct client *c)
{
	struct scan_batch b = { 0 };
	long long count = 10;
	uint64_t cursor, budget;
	struct entry *e;
	char buf[LL_STR_SIZE + 1];

	if (!str_to_cursor(c->argv[2].p, &cursor)) {
		reply_error(c, "invalid cursor");
		return;
	}
	e = key_find_read(c, 1);
	if (!e) {
		reply_array(c, 2);
		reply_bulk(c, "0", 1);
		reply_array(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_SET))
		return;
	for (int i = 3; i < c->argc; i += 2) {
		bool has_val = i + 1 < c->argc;

		if (has_val && arg_is(c, i, "count")) {
			if (!arg_ll(c, i + 1, &count))
				return;
			if (count < 1) {
				reply_error(c, ERR_SYNTAX);
				return;
			}
		} else if (has_val && arg_is(c, i, "match")) {
			b.pat = c->argv[i + 1].p;
			b.plen = c->argv[i + 1].len;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (b.pat && b.plen == 1 && b.pat[0] == '*')
		b.pat = NULL;

	/* As Redis: about ten buckets per member asked for at most, so a
	 * sparse table cannot make one call long. */
	budget = (uint64_t)count > UINT64_MAX / 10 ? UINT64_MAX : (uint64_t)count * 10;
	do
		cursor = set_scan(&e->val, cursor, scan_collect, &b);
	while (cursor && --budget && b.seen < (uint64_t)count);

	reply_array(c, 2);
	reply_bulk(c, buf, (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)cursor));
	reply_array(c, (long)b.n);
	for (size_t i = 0; i < b.n; i++) {
		reply_bulk(c, b.v[i].p, b.v[i].len);
		xfree(b.v[i].p);
	}
	xfree(b.v);
}
