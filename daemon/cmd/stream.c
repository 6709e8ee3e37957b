// SPDX-License-Identifier: BSD-3-Clause
/*
 * XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD, replying as Redis 8.8.
 *
 * Streams have no consumer groups here yet, so the KEEPREF, DELREF and ACKED
 * trimming conditions differ only where Redis's do with no group: KEEPREF
 * (the default) lets `~` stop at the first node it cannot drop whole, while
 * DELREF and ACKED go on flagging entries inside nodes.
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "blocking.h"
#include "commands.h"
#include "config.h"
#include "exec_ctx.h"
#include "mem.h"
#include "notify.h"
#include "propagate.h"
#include "stream_cmd.h"
#include "t_stream.h"
#include "t_stream_cg.h"
#include "util.h"

#define ERR_BAD_ID STREAM_ERR_BAD_ID

bool stream_cmd_arg_id(struct client *c, int i, uint64_t missing_seq, bool strict,
		       struct stream_id *id, bool *seq_given)
{
	if (stream_id_parse(c->argv[i].p, c->argv[i].len, missing_seq, strict, id, seq_given)) {
		reply_error(c, ERR_BAD_ID);
		return false;
	}
	return true;
}

void stream_cmd_reply_id(struct client *c, const struct stream_id *id)
{
	char buf[STREAM_ID_STR_SIZE];

	reply_bulk(c, buf, (size_t)stream_id_str(buf, id));
}

struct add_args {
	bool trim, approx, nomkstream, id_given, seq_given;
	enum stream_trim_by by;
	enum stream_cond cond;
	long long maxlen, limit;
	struct stream_id minid, id;
	int pid, iid;  /* IDMP argv indexes, 0 if absent; iid 0 with pid: IDMPAUTO */
	int threshold; /* the MAXLEN/MINID value's argv index (after its ~), 0 if none */
};

/* XADD's and XTRIM's options, as Redis parses them; returns the ID's index
 * (XADD) or argc, or -1 after replying. */
static int parse_add_trim(struct client *c, struct add_args *a, bool xadd)
{
	bool limit_given = false, strategy = false;
	int i;

	memset(a, 0, sizeof(*a));
	for (i = 2; i < c->argc; i++) {
		int more = c->argc - 1 - i;
		const struct arg *o = &c->argv[i];

		if (xadd && o->len == 1 && o->p[0] == '*')
			break;
		if ((arg_is(c, i, "maxlen") || arg_is(c, i, "minid")) && more) {
			bool minid = arg_is(c, i, "minid");
			const struct arg *n = &c->argv[i + 1];

			if (strategy) {
				reply_error(c, "syntax error, MAXLEN and MINID options at the same "
					       "time are not compatible");
				return -1;
			}
			a->approx = false;
			if (more >= 2 && n->len == 1 && (n->p[0] == '~' || n->p[0] == '=')) {
				a->approx = n->p[0] == '~';
				i++;
			}
			a->threshold = i + 1;
			if (minid) {
				if (!stream_cmd_arg_id(c, i + 1, 0, true, &a->minid, NULL))
					return -1;
				a->by = STREAM_TRIM_MINID;
			} else {
				if (!arg_ll(c, i + 1, &a->maxlen))
					return -1;
				if (a->maxlen < 0) {
					reply_error(c, "The MAXLEN argument must be >= 0.");
					return -1;
				}
				a->by = STREAM_TRIM_MAXLEN;
			}
			i++;
			strategy = a->trim = true;
		} else if (arg_is(c, i, "limit") && more) {
			if (!arg_ll(c, i + 1, &a->limit))
				return -1;
			if (a->limit < 0) {
				reply_error(c, "The LIMIT argument must be >= 0.");
				return -1;
			}
			limit_given = true;
			i++;
		} else if (arg_is(c, i, "keepref") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_KEEPREF;
		} else if (arg_is(c, i, "delref") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_DELREF;
		} else if (arg_is(c, i, "acked") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_ACKED;
		} else if (xadd && arg_is(c, i, "nomkstream")) {
			a->nomkstream = true;
		} else if (xadd && arg_is(c, i, "idmpauto") && more) {
			if (a->pid) {
				reply_error(c,
					    "syntax error, IDMP/IDMPAUTO specified multiple times");
				return -1;
			}
			if (!c->argv[i + 1].len) {
				reply_error(
					c,
					"syntax error, IDMPAUTO requires a non-empty producer ID");
				return -1;
			}
			a->pid = ++i;
		} else if (xadd && arg_is(c, i, "idmp") && more >= 2) {
			if (a->pid) {
				reply_error(c,
					    "syntax error, IDMP/IDMPAUTO specified multiple times");
				return -1;
			}
			if (!c->argv[i + 1].len) {
				reply_error(c,
					    "syntax error, IDMP requires a non-empty producer ID");
				return -1;
			}
			if (!c->argv[i + 2].len) {
				reply_error(
					c, "syntax error, IDMP requires a non-empty idempotent ID");
				return -1;
			}
			a->pid = i + 1;
			a->iid = i + 2;
			i += 2;
		} else if (xadd) {
			if (!stream_cmd_arg_id(c, i, 0, true, &a->id, &a->seq_given))
				return -1;
			if (a->pid && o->p[0] != '*') {
				reply_error(c, "syntax error, IDMP/IDMPAUTO can be used only with "
					       "auto-generated IDs");
				return -1;
			}
			a->id_given = true;
			break;
		} else {
			reply_error(c, ERR_SYNTAX);
			return -1;
		}
	}
	if (a->limit && !strategy) {
		reply_error(c, "syntax error, LIMIT cannot be used without specifying a trimming "
			       "strategy");
		return -1;
	}
	if (!xadd && !strategy) {
		reply_error(c, "syntax error, XTRIM must be called with a trimming strategy");
		return -1;
	}
	if (c->flags & CLIENT_MUST_OBEY) {
		/* The trim was made exact where it ran (see propagate_trimmed). */
		a->limit = 0;
	} else if (limit_given) {
		if (!a->approx) {
			reply_error(
				c,
				"syntax error, LIMIT cannot be used without the special ~ option");
			return -1;
		}
	} else {
		/* As Redis: ~ does at most 100 nodes' worth; exact is unlimited. */
		a->limit = a->approx ? 100 * config.stream_node_max_entries : 0;
		if (a->approx && a->limit <= 0)
			a->limit = 10000;
		if (a->limit > 1000000)
			a->limit = 1000000;
	}
	if (a->cond == STREAM_COND_NONE)
		a->cond = STREAM_COND_KEEPREF;
	return i;
}

static bool trim_delref(struct obj *o, const struct stream_id *id)
{
	stream_entry_unreference(o, id);
	return true;
}

static bool trim_acked(struct obj *o, const struct stream_id *id)
{
	return !stream_entry_referenced(o, id);
}

stream_trim_fn *stream_cmd_trim_fn(enum stream_cond cond)
{
	return cond == STREAM_COND_DELREF  ? trim_delref
	       : cond == STREAM_COND_ACKED ? trim_acked
					   : NULL;
}

/* DELREF and ACKED go entry by entry, asking the groups: ~ does not stop at
 * a node it cannot drop whole, as in Redis. */
static uint64_t do_trim(struct obj *o, const struct add_args *a)
{
	return stream_trim(o, a->by, (uint64_t)a->maxlen, &a->minid, a->approx, (uint64_t)a->limit,
			   stream_cmd_trim_fn(a->cond));
}

/* IDMPAUTO's idempotency ID: an order-independent 128-bit digest of the
 * pairs, as Redis makes one (each pair hashed, the hashes summed and xored). */
static void auto_iid(struct client *c, int first, unsigned char out[16])
{
	uint64_t sum_lo = 0, sum_hi = 0, x_lo = 0, x_hi = 0, lo, hi;
	XXH3_state_t *st = XXH3_createState();

	for (int i = first; i + 1 < c->argc; i += 2) {
		uint64_t flen = c->argv[i].len;
		XXH128_hash_t h;

		XXH3_128bits_reset(st);
		XXH3_128bits_update(st, c->argv[i].p, c->argv[i].len);
		XXH3_128bits_update(st, &flen, sizeof(flen));
		XXH3_128bits_update(st, c->argv[i + 1].p, c->argv[i + 1].len);
		h = XXH3_128bits_digest(st);
		sum_lo += h.low64;
		sum_hi += h.high64;
		x_lo ^= h.low64;
		x_hi ^= h.high64;
	}
	XXH3_freeState(st);
	lo = sum_lo ^ ((x_hi << 1) | (x_hi >> 63));
	hi = sum_hi ^ ((x_lo << 1) | (x_lo >> 63));
	memcpy(out, &lo, 8);
	memcpy(out + 8, &hi, 8);
}

static bool append_argv(struct obj *o, struct client *c, int first, const struct add_args *a,
			struct stream_id *id, int *err)
{
	uint64_t n = (uint64_t)(c->argc - first) / 2;
	const char **f = xmalloc(n * 2 * sizeof(*f));
	size_t *len = xmalloc(n * 2 * sizeof(*len));

	for (uint64_t i = 0; i < n; i++) {
		f[i] = c->argv[first + 2 * (int)i].p;
		len[i] = c->argv[first + 2 * (int)i].len;
		f[n + i] = c->argv[first + 2 * (int)i + 1].p;
		len[n + i] = c->argv[first + 2 * (int)i + 1].len;
	}
	*err = stream_append(o, f, len, f + n, len + n, n, a->id_given ? &a->id : NULL,
			     a->seq_given, now_ms(), id);
	xfree(f);
	xfree(len);
	return !*err;
}

/*
 * What XADD and XTRIM send to the AOF and replicas, decided here as Redis
 * rewrites them: XADD's ID as made (replayed, '*' would make another), and
 * an approximate trim (~, LIMIT) as the exact one it came to: "=" and the
 * stream's length for MAXLEN, its first ID for MINID (the maximum ID when
 * empty). idpos 0: no ID to rewrite (XTRIM).
 */
static void propagate_decided(struct client *c, const struct add_args *a, int idpos,
			      const struct stream_id *id, const struct obj *o)
{
	char idbuf[STREAM_ID_STR_SIZE], tbuf[STREAM_ID_STR_SIZE];
	struct arg *v = xmalloc(sizeof(*v) * (size_t)c->argc);

	memcpy(v, c->argv, sizeof(*v) * (size_t)c->argc);
	if (idpos)
		v[idpos] = (struct arg){ idbuf, (size_t)stream_id_str(idbuf, id) };
	if (a->trim && a->approx) {
		struct stream_id first = { UINT64_MAX, UINT64_MAX };

		v[a->threshold - 1] = PROP_STR("=");
		if (a->by == STREAM_TRIM_MAXLEN) {
			v[a->threshold] =
				(struct arg){ tbuf,
					      (size_t)ll_to_str(tbuf, (long long)stream_len(o)) };
		} else {
			stream_first(o, &first);
			v[a->threshold] = (struct arg){ tbuf, (size_t)stream_id_str(tbuf, &first) };
		}
	}
	propagate_rewrite(c->argc, v);
	xfree(v);
}

void cmd_xadd(struct client *c)
{
	struct add_args a;
	int idpos = parse_add_trim(c, &a, true), first, err;
	struct entry *e;
	struct obj fresh = { 0 }, *o;
	struct stream_id id, last;
	bool existed;
	unsigned char autoiid[16];
	const void *iid = NULL;
	size_t ilen = 0;

	if (idpos < 0)
		return;
	first = idpos + 1;
	if (c->argc - first < 2 || (c->argc - first) % 2) {
		reply_errorf(c, "wrong number of arguments for 'xadd' command");
		return;
	}
	if (a.id_given && a.seq_given && !a.id.ms && !a.id.seq) {
		reply_error(c, "The ID specified in XADD must be greater than 0-0");
		return;
	}
	e = key_find(c, 1);
	if (e && !entry_is(c, e, OBJ_STREAM))
		return;
	if (!e && a.nomkstream) {
		reply_null(c);
		return;
	}
	/* A new stream only for a new key (one per XADD leaked before). */
	if (!e)
		fresh = stream_new();
	o = e ? &e->val : &fresh;
	if (a.pid) {
		if (a.iid) {
			iid = c->argv[a.iid].p;
			ilen = c->argv[a.iid].len;
		} else {
			auto_iid(c, first, autoiid);
			iid = autoiid;
			ilen = sizeof(autoiid);
		}
		if (stream_idmp_find(o, c->argv[a.pid].p, c->argv[a.pid].len, iid, ilen, now_ms(),
				     &id)) {
			/* A duplicate adds nothing: as in Redis, WATCH and
			 * waiters do not see it (only forgotten IDs went). */
			stream_cmd_reply_id(c, &id);
			goto out;
		}
	}
	last = stream_last_id(o);
	if (last.ms == UINT64_MAX && last.seq == UINT64_MAX) {
		reply_error(
			c,
			"The stream has exhausted the last possible ID, unable to add more items");
		goto out;
	}
	if (!append_argv(o, c, first, &a, &id, &err)) {
		reply_error(c, err == -EDOM ? "The ID specified in XADD is equal or smaller than "
					      "the target stream top item"
					    : "Elements are too large to be stored");
		goto out;
	}
	stream_cmd_reply_id(c, &id);
	if (a.pid)
		stream_idmp_insert(o, c->argv[a.pid].p, c->argv[a.pid].len, iid, ilen, &id);
	/* A new stream is added before its events, so "new" comes first, as
	 * Redis creates the key before it appends. */
	existed = e != NULL;
	if (!existed) {
		e = db_add(c->db, c->argv[1].p, c->argv[1].len, fresh);
		o = &e->val;
	}
	notify_arg(c, NOTIFY_STREAM, "xadd", 1);
	if (a.trim && do_trim(o, &a))
		notify_arg(c, NOTIFY_STREAM, "xtrim", 1);
	if (propagate_enabled())
		propagate_decided(c, &a, idpos, &id, o);
	if (existed)
		db_changed(c->db, e);
	return;
out:
	if (!e)
		obj_free(&fresh);
}

void cmd_xlen(struct client *c)
{
	struct entry *e = key_find_read(c, 1);

	if (e && !entry_is(c, e, OBJ_STREAM))
		return;
	reply_int(c, e ? (long long)stream_len(&e->val) : 0);
}

bool stream_cmd_collect(void *ctx, struct stream_entry *e)
{
	struct range_acc *r = ctx;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n++] = *e;
	return true;
}

void stream_cmd_reply_entry(struct client *c, struct stream_entry *e)
{
	const char *f, *v;
	size_t flen, vlen;

	reply_array(c, 2);
	stream_cmd_reply_id(c, &e->id);
	reply_array(c, (long)e->nfields * 2);
	while (stream_entry_next(e, &f, &flen, &v, &vlen)) {
		reply_bulk(c, f, flen);
		reply_bulk(c, v, vlen);
	}
}

void stream_cmd_reply_entries(struct client *c, struct range_acc *r)
{
	reply_array(c, (long)r->n);
	for (size_t i = 0; i < r->n; i++)
		stream_cmd_reply_entry(c, &r->v[i]);
}

/* An interval end: "(" makes it exclusive (then "-" and "+" are invalid). */
bool stream_cmd_arg_interval(struct client *c, int i, uint64_t missing_seq, struct stream_id *id,
			     bool *excl)
{
	const struct arg *a = &c->argv[i];

	*excl = a->len > 1 && a->p[0] == '(';
	if (stream_id_parse(a->p + *excl, a->len - *excl, missing_seq, *excl, id, NULL)) {
		reply_error(c, ERR_BAD_ID);
		return false;
	}
	return true;
}

static void xrange(struct client *c, bool rev)
{
	struct stream_id start, end;
	long long count = -1;
	bool sx, ex;
	struct entry *e;
	struct range_acc r = { 0 };

	if (!stream_cmd_arg_interval(c, rev ? 3 : 2, 0, &start, &sx))
		return;
	if (sx && stream_id_incr(&start)) {
		reply_error(c, "invalid start ID for the interval");
		return;
	}
	if (!stream_cmd_arg_interval(c, rev ? 2 : 3, UINT64_MAX, &end, &ex))
		return;
	if (ex && stream_id_decr(&end)) {
		reply_error(c, "invalid end ID for the interval");
		return;
	}
	for (int j = 4; j < c->argc; j++) {
		if (arg_is(c, j, "count") && j + 1 < c->argc) {
			if (!arg_ll(c, j + 1, &count))
				return;
			if (count < 0)
				count = 0;
			j++;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	e = key_find_read(c, 1);
	if (!e) {
		reply_array(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_STREAM))
		return;
	if (!count) {
		reply_null_array(c);
		return;
	}
	stream_range(&e->val, &start, &end, rev, count < 0 ? 0 : (uint64_t)count,
		     stream_cmd_collect, &r);
	stream_cmd_reply_entries(c, &r);
	xfree(r.v);
}

void cmd_xrange(struct client *c)
{
	xrange(c, false);
}

void cmd_xrevrange(struct client *c)
{
	xrange(c, true);
}

void cmd_xdel(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_id *ids;
	long long deleted = 0;

	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_STREAM))
		return;
	/* Every ID is checked before any goes, as in Redis. */
	ids = xmalloc(sizeof(*ids) * (size_t)(c->argc - 2));
	for (int j = 2; j < c->argc; j++) {
		if (!stream_cmd_arg_id(c, j, 0, true, &ids[j - 2], NULL)) {
			xfree(ids);
			return;
		}
	}
	for (int j = 2; j < c->argc; j++)
		deleted += stream_delete(&e->val, &ids[j - 2]);
	xfree(ids);
	if (deleted) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_STREAM, "xdel", 1);
	}
	reply_int(c, deleted);
}

void cmd_xtrim(struct client *c)
{
	struct add_args a;
	struct entry *e;
	uint64_t n;

	if (parse_add_trim(c, &a, false) < 0)
		return;
	e = key_find(c, 1);
	if (!e) {
		reply_int(c, 0);
		return;
	}
	if (!entry_is(c, e, OBJ_STREAM))
		return;
	n = do_trim(&e->val, &a);
	command_dirty((uint64_t)n);
	if (n) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_STREAM, "xtrim", 1);
		if (a.approx && propagate_enabled())
			propagate_decided(c, &a, 0, NULL, &e->val);
	}
	reply_int(c, (long long)n);
}

struct entry *stream_cmd_existing(struct client *c)
{
	struct entry *e = key_find(c, 1);

	if (!e) {
		reply_error(c, ERR_NO_KEY);
		return NULL;
	}
	return entry_is(c, e, OBJ_STREAM) ? e : NULL;
}

void cmd_xsetid(struct client *c)
{
	struct stream_id id, maxdel = { 0, 0 }, top;
	long long added = -1;
	struct entry *e;

	if (!stream_cmd_arg_id(c, 2, 0, true, &id, NULL))
		return;
	for (int i = 3; i < c->argc; i += 2) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "entriesadded") && more) {
			if (!arg_ll(c, i + 1, &added))
				return;
			if (added < 0) {
				reply_error(c, "entries_added must be positive");
				return;
			}
		} else if (arg_is(c, i, "maxdeletedid") && more) {
			if (!stream_cmd_arg_id(c, i + 1, 0, true, &maxdel, NULL))
				return;
			if (stream_id_cmp(&id, &maxdel) < 0) {
				reply_error(c, "The ID specified in XSETID is smaller than the "
					       "provided max_deleted_entry_id");
				return;
			}
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	e = stream_cmd_existing(c);
	if (!e)
		return;
	top = stream_max_deleted(&e->val);
	if (stream_id_cmp(&id, &top) < 0) {
		reply_error(
			c,
			"The ID specified in XSETID is smaller than current max_deleted_entry_id");
		return;
	}
	if (stream_len(&e->val)) {
		stream_last(&e->val, &top);
		if (stream_id_cmp(&id, &top) < 0) {
			reply_error(c, "The ID specified in XSETID is smaller than the target "
				       "stream top item");
			return;
		}
		if (added != -1 && stream_len(&e->val) > (uint64_t)added) {
			reply_error(c, "The entries_added specified in XSETID is smaller than the "
				       "target stream length");
			return;
		}
	}
	if (maxdel.ms == 0 && maxdel.seq == 0)
		maxdel = stream_max_deleted(&e->val);
	stream_set_ids(&e->val, &id, added != -1 ? (uint64_t)added : stream_entries_added(&e->val),
		       &maxdel);
	/* Streams are never in the kernel cache: no fast-path invalidation. */
	stream_cmd_prop_self(c, e, 1);
	notify_arg(c, NOTIFY_STREAM, "xsetid", 1);
	reply_ok(c);
}

void cmd_xidmprecord(struct client *c)
{
	struct stream_id id;
	struct entry *e;
	int r;

	if (!stream_cmd_arg_id(c, 4, 0, true, &id, NULL))
		return;
	if (!c->argv[2].len) {
		reply_error(c, "producer ID must be non-empty");
		return;
	}
	if (!c->argv[3].len) {
		reply_error(c, "idempotent ID must be non-empty");
		return;
	}
	e = stream_cmd_existing(c);
	if (!e)
		return;
	if (!stream_exists(&e->val, &id)) {
		reply_error(c, "No such message in stream");
		return;
	}
	r = stream_idmp_peek(&e->val, c->argv[2].p, c->argv[2].len, c->argv[3].p, c->argv[3].len,
			     &id);
	if (r < 0) {
		reply_error(c, "IID already exists for this producer with a different stream ID");
		return;
	}
	reply_ok(c);
	if (r)
		return;
	stream_idmp_insert(&e->val, c->argv[2].p, c->argv[2].len, c->argv[3].p, c->argv[3].len,
			   &id);
	stream_cmd_prop_self(c, e, 1);
}

void cmd_xcfgset(struct client *c)
{
	struct entry *e = stream_cmd_existing(c);
	long long duration = -1, maxsize = -1;

	if (!e)
		return;
	for (int i = 2; i < c->argc; i++) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "idmp-duration") && more) {
			if (duration != -1) {
				reply_error(c, "IDMP-DURATION specified multiple times");
				return;
			}
			if (!arg_ll(c, ++i, &duration))
				return;
			if (duration < 1 || duration > 86400) {
				reply_error(c, "IDMP-DURATION must be between 1 and 86400 seconds");
				return;
			}
		} else if (arg_is(c, i, "idmp-maxsize") && more) {
			if (maxsize != -1) {
				reply_error(c, "IDMP-MAXSIZE specified multiple times");
				return;
			}
			if (!arg_ll(c, ++i, &maxsize))
				return;
			if (maxsize < 1 || maxsize > 10000) {
				reply_error(c, "IDMP-MAXSIZE must be between 1 and 10000 entries");
				return;
			}
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (duration == -1 && maxsize == -1) {
		reply_error(c, "At least one parameter must be specified");
		return;
	}
	if (stream_idmp_configure(&e->val, duration == -1 ? 0 : (uint64_t)duration,
				  maxsize == -1 ? 0 : (uint64_t)maxsize))
		stream_cmd_prop_self(c, e, 1);
	reply_ok(c);
}

/* XREAD's and XREADGROUP's parsed request. */
struct xread_args {
	int64_t block_ms; /* -1: no BLOCK */
	long long count;
	int first, n; /* keys at argv[first..first+n), IDs after them */
	struct stream_id *ids;
	int group; /* argv index of the group name (consumer after), 0: XREAD */
	bool noack;
	struct stream_group **groups;
	long long claim;      /* CLAIM's min-idle-time, -1: none */
	int64_t min_pel_time; /* the oldest delivery among the PELs (CLAIM) */
};

/* Blocks c on the keys. "$" becomes the last ID now, so that the retry
 * reads what arrives after the block, as Redis rewrites the argument: the
 * blocking layer copies argv, and the client's own is put back after. */
static void block_resolved(struct client *c, const struct xread_args *a)
{
	char(*bufs)[STREAM_ID_STR_SIZE] = xmalloc(sizeof(*bufs) * (size_t)a->n);
	struct arg *saved = xmalloc(sizeof(*saved) * (size_t)a->n);
	int keys[256], nk = 0;

	for (int i = 0; i < a->n; i++) {
		struct arg *arg = &c->argv[a->first + a->n + i];

		saved[i] = *arg;
		if (arg->len == 1 && arg->p[0] == '$') {
			arg->len = (size_t)stream_id_str(bufs[i], &a->ids[i]);
			arg->p = bufs[i];
		}
	}
	for (int i = 0; i < a->n && nk < 256; i++)
		keys[nk++] = a->first + i;
	blocking_block_on(c, keys, nk, a->block_ms, false, OBJ_STREAM, a->group != 0);
	for (int i = 0; i < a->n; i++)
		c->argv[a->first + a->n + i] = saved[i];
	xfree(saved);
	xfree(bufs);
}

/* One entry of a stream's reply: a live entry, or (history) the ID of a
 * pending entry no longer in the stream. */
struct xr_item {
	struct stream_entry e;
	bool missing;
	bool claim; /* CLAIM's form: [id, pairs, idle, deliveries] */
	long long idle, count;
};

struct xr_out {
	struct xr_item *v;
	size_t n, cap;
	bool served;
};

static void xr_push(struct xr_out *o, const struct stream_entry *e, bool missing)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 16;
		o->v = xrealloc(o->v, o->cap * sizeof(*o->v));
	}
	memset(&o->v[o->n], 0, sizeof(o->v[o->n]));
	o->v[o->n].e = *e;
	o->v[o->n++].missing = missing;
}

static bool xr_collect_claim(void *ctx, struct stream_entry *e)
{
	struct xr_out *o = ctx;

	xr_push(o, e, false);
	o->v[o->n - 1].claim = true;
	return true;
}

static bool xr_collect(void *ctx, struct stream_entry *e)
{
	xr_push(ctx, e, false);
	return true;
}

/* The ID arguments; false after replying (or, on a retry that must stay
 * blocked, without a reply). */
static bool xread_ids(struct client *c, struct xread_args *a)
{
	for (int i = 0; i < a->n; i++) {
		struct entry *e = key_find(c, a->first + i);
		const struct arg *arg = &c->argv[a->first + a->n + i];
		const struct arg *gn = a->group ? &c->argv[a->group] : NULL;

		/* A key that now holds another type does not wake an XREAD
		 * waiter, as in Redis (it retries only when the type matches):
		 * no reply. XREADGROUP's does, and fails. */
		if (e && e->val.type != OBJ_STREAM && (exec_ctx_flags() & EXEC_RETRY) && !a->group)
			return false;
		if (e && !entry_is(c, e, OBJ_STREAM))
			return false;
		if (gn) {
			a->groups[i] = e ? stream_group_find(&e->val, gn->p, gn->len) : NULL;
			if (!a->groups[i]) {
				reply_errorf(c,
					     "-NOGROUP No such key '%s' or consumer group '%s' in "
					     "XREADGROUP with GROUP option",
					     c->argv[a->first + i].p, gn->p);
				return false;
			}
		}
		if (arg->len == 1 && arg->p[0] == '$') {
			if (gn) {
				reply_error(c,
					    "The $ ID is meaningless in the context of XREADGROUP: "
					    "you want to read the history of this consumer by "
					    "specifying a proper ID, or use the > ID to get new "
					    "messages. The $ ID would just return an empty result "
					    "set.");
				return false;
			}
			a->ids[i] = e ? stream_last_id(&e->val) : (struct stream_id){ 0, 0 };
		} else if (arg->len == 1 && arg->p[0] == '+') {
			if (gn) {
				reply_error(c,
					    "The + ID is meaningless in the context of XREADGROUP: "
					    "you want to read the history of this consumer by "
					    "specifying a proper ID, or use the > ID to get new "
					    "messages. The + ID would just return an empty result "
					    "set.");
				return false;
			}
			/* The last live entry itself. */
			if (e && stream_last(&e->val, &a->ids[i]))
				stream_id_decr(&a->ids[i]);
			else
				a->ids[i] = (struct stream_id){ 0, 0 };
		} else if (arg->len == 1 && arg->p[0] == '>') {
			if (!gn) {
				reply_error(c, "The > ID can be specified only when calling "
					       "XREADGROUP using the GROUP <group> <consumer> "
					       "option.");
				return false;
			}
			a->ids[i] = (struct stream_id){ UINT64_MAX, UINT64_MAX };
		} else if (!stream_cmd_arg_id(c, a->first + a->n + i, 0, true, &a->ids[i], NULL)) {
			return false;
		}
	}
	return true;
}

/* CLAIM: the pending entries idle for claim ms, oldest delivery first, go to
 * cons (as XCLAIM), before any new entry. */
static void xreadgroup_claim(struct xread_args *a, struct stream_group *g,
			     struct stream_consumer *cons, struct obj *o, int64_t now,
			     struct xr_out *out, struct stream_cmd_prop *prop)
{
	struct stream_nack *tail = g->time_tail, *n = g->time_head;
	size_t done = 0;

	while (n) {
		struct stream_nack *next = n->next;
		int64_t idle = now - n->delivery_time;
		uint64_t count = n->delivery_count;

		if ((uint64_t)idle < (uint64_t)a->claim)
			break;
		if (stream_range(o, &n->id, &n->id, false, 1, xr_collect_claim, out)) {
			out->v[out->n - 1].idle = idle;
			out->v[out->n - 1].count = (long long)count;
			stream_nack_assign(n, cons);
			if (n->delivery_count != (uint64_t)INT64_MAX)
				n->delivery_count++;
			stream_nack_touch(g, n, now);
			cons->active_time = now;
			stream_cmd_prop_xclaim(prop, n);
			if (a->count && ++done >= (size_t)a->count)
				break;
		}
		n = n == tail ? NULL : next;
	}
}

/* XREADGROUP on one stream: new entries (">") or the consumer's history. */
static void xreadgroup_one(struct client *c, struct xread_args *a, int i, struct xr_out *out)
{
	struct entry *e = key_find(c, a->first + i);
	struct obj *o = &e->val;
	struct stream_group *g = a->groups[i];
	const struct arg *cn = &c->argv[a->group + 1];
	struct stream_consumer *cons = stream_consumer_find(g, cn->p, cn->len);
	struct stream_id gt = a->ids[i], maxid;
	bool history = gt.ms != UINT64_MAX || gt.seq != UINT64_MAX, created = false;
	int64_t now = now_ms();
	static const struct stream_id max = { UINT64_MAX, UINT64_MAX };
	struct stream_cmd_prop prop;
	bool claimable = false, claimed_only = false;

	/* CLAIM: is the oldest pending entry still in the stream idle enough? */
	if (a->claim >= 0) {
		for (struct stream_nack *n = g->time_head; n; n = n->next) {
			if (!stream_exists(o, &n->id))
				continue;
			if (n->delivery_time < a->min_pel_time)
				a->min_pel_time = n->delivery_time;
			claimable = (uint64_t)(now - n->delivery_time) >= (uint64_t)a->claim;
			break;
		}
	}
	if (!history && stream_len(o) && stream_last(o, &maxid) &&
	    stream_id_cmp(&maxid, &g->last_id) > 0) {
		out->served = true;
		gt = g->last_id;
	}
	if (history) {
		out->served = true;
		/* As Redis: CLAIM is ignored from here on. */
		a->claim = -1;
	} else if (!out->served && claimable) {
		out->served = claimed_only = true;
	}
	if (!cons) {
		cons = stream_consumer_create(g, cn->p, cn->len, now);
		notify_arg(c, NOTIFY_STREAM, "xgroup-createconsumer", a->first + i);
		created = true;
	}
	cons->seen_time = now;
	stream_cmd_prop_begin(&prop, c, a->first + i, a->group, g);
	if (history) {
		struct stream_id start = gt;
		size_t k;

		stream_id_incr(&start);
		for (k = stream_pel_seek(&cons->pel, &start);
		     k < cons->pel.n && (!a->count || out->n < (size_t)a->count); k++) {
			struct stream_nack *n = cons->pel.v[k];
			struct stream_entry ent = { .id = n->id };

			if (stream_range(o, &n->id, &n->id, false, 1, xr_collect, out)) {
				if (n->delivery_count != (uint64_t)INT64_MAX)
					n->delivery_count++;
				stream_nack_touch(g, n, now);
			} else {
				xr_push(out, &ent, true);
			}
		}
	} else if (out->served) {
		struct stream_id start = gt;
		bool moved = false;
		size_t first_new;

		if (a->claim >= 0)
			xreadgroup_claim(a, g, cons, o, now, out, &prop);
		first_new = out->n;
		stream_id_incr(&start);
		if (!claimed_only && (!a->count || out->n < (size_t)a->count))
			stream_range(o, &start, &max, false,
				     a->count ? (uint64_t)a->count - out->n : 0,
				     a->claim >= 0 ? xr_collect_claim : xr_collect, out);
		for (size_t k = first_new; k < out->n; k++) {
			const struct stream_id *id = &out->v[k].e.id;

			if (stream_id_cmp(id, &g->last_id) > 0) {
				struct stream_id first = stream_first_id(o);

				if (g->entries_read != STREAM_ENTRIES_READ_INVALID &&
				    stream_id_cmp(&g->last_id, &first) >= 0 &&
				    !stream_has_tombstones_after(o, &g->last_id))
					g->entries_read++;
				else if (stream_entries_added(o))
					g->entries_read = stream_estimate_read(o, id);
				stream_group_set_last(o, g, id);
				moved = true;
			}
			if (!a->noack) {
				struct stream_nack *n = stream_pel_find(&g->pel, id, NULL);

				if (n) {
					stream_nack_assign(n, cons);
					n->delivery_count = 1;
					stream_nack_touch(g, n, now);
				} else {
					n = stream_nack_add(g, cons, id, now);
				}
				cons->active_time = now;
				stream_cmd_prop_xclaim(&prop, n);
			}
		}
		if (moved)
			stream_cmd_prop_setid(&prop);
	}
	prop.made = created;
	if (created && (a->noack || !prop.n))
		stream_cmd_prop_consumer(&prop);
	stream_cmd_prop_end(&prop, e, false);
}

static void xread_locked(struct client *c, struct xread_args *a)
{
	int served = 0;
	struct xr_out *r = xmalloc(sizeof(*r) * (size_t)a->n);
	static const struct stream_id max = { UINT64_MAX, UINT64_MAX };

	memset(r, 0, sizeof(*r) * (size_t)a->n);
	if (!xread_ids(c, a))
		goto out;
	for (int i = 0; i < a->n; i++) {
		struct entry *e = key_find(c, a->first + i);
		struct stream_id start = a->ids[i], last;

		if (!e)
			continue;
		if (a->group) {
			xreadgroup_one(c, a, i, &r[i]);
		} else if (stream_last(&e->val, &last) && stream_id_cmp(&last, &a->ids[i]) > 0) {
			stream_id_incr(&start);
			stream_range(&e->val, &start, &max, false, (uint64_t)a->count, xr_collect,
				     &r[i]);
			r[i].served = true;
		}
		served += r[i].served;
	}
	if (served) {
		if (c->resp >= 3)
			reply_map(c, served);
		else
			reply_array(c, served);
		for (int i = 0; i < a->n; i++) {
			if (!r[i].served)
				continue;
			if (c->resp < 3)
				reply_array(c, 2);
			reply_bulk(c, c->argv[a->first + i].p, c->argv[a->first + i].len);
			reply_array(c, (long)r[i].n);
			for (size_t k = 0; k < r[i].n; k++) {
				if (r[i].v[k].claim) {
					const char *f, *v;
					size_t flen, vlen;
					struct stream_entry *en = &r[i].v[k].e;

					reply_array(c, 4);
					stream_cmd_reply_id(c, &en->id);
					reply_array(c, (long)en->nfields * 2);
					while (stream_entry_next(en, &f, &flen, &v, &vlen)) {
						reply_bulk(c, f, flen);
						reply_bulk(c, v, vlen);
					}
					reply_int(c, r[i].v[k].idle);
					reply_int(c, r[i].v[k].count);
					continue;
				}
				if (!r[i].v[k].missing) {
					stream_cmd_reply_entry(c, &r[i].v[k].e);
					continue;
				}
				reply_array(c, 2);
				stream_cmd_reply_id(c, &r[i].v[k].e.id);
				reply_null_array(c);
			}
		}
		goto out;
	}
	if (a->block_ms < 0 || !blocking_allowed(c)) {
		if (!(exec_ctx_flags() & EXEC_RETRY))
			reply_null_array(c);
		goto out;
	}
	block_resolved(c, a);
	if (a->claim >= 0) {
		/* Run again when the oldest pending entry comes of age (or
		 * claim ms from now), then every claim ms. */
		int64_t due =
			a->claim + (a->min_pel_time != INT64_MAX ? a->min_pel_time : now_ms());

		blocking_wake_at(c, mono_ms() + (due > now_ms() ? due - now_ms() : 0),
				 a->claim < 10	   ? 10
				 : a->claim > 1000 ? 1000
						   : a->claim);
	}
out:
	for (int i = 0; i < a->n; i++)
		xfree(r[i].v);
	xfree(r);
}

static void xread(struct client *c, bool group)
{
	struct xread_args a = { .block_ms = -1, .claim = -1, .min_pel_time = INT64_MAX };
	const char *name = group ? "xreadgroup" : "xread";
	long long v;

	for (int i = 1; i < c->argc; i++) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "claim") && more) {
			if (!group) {
				reply_error(c, "The CLAIM option is only supported by XREADGROUP. "
					       "You called XREAD instead.");
				return;
			}
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &v)) {
				reply_error(c, "min-idle-time is not an integer or out of range");
				return;
			}
			if (v < 0) {
				reply_error(c, "min-idle-time must be a positive integer");
				return;
			}
			a.claim = v;
			i++;
		} else if (arg_is(c, i, "block") && more) {
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &v)) {
				reply_error(c, "timeout is not an integer or out of range");
				return;
			}
			if (v < 0) {
				reply_error(c, "timeout is negative");
				return;
			}
			if (v > 0 && v > INT64_MAX - now_ms()) {
				reply_error(c, "timeout is out of range");
				return;
			}
			a.block_ms = v;
			i++;
		} else if (arg_is(c, i, "count") && more) {
			if (!arg_ll(c, i + 1, &a.count))
				return;
			if (a.count < 0)
				a.count = 0;
			i++;
		} else if (arg_is(c, i, "streams") && more) {
			a.first = i + 1;
			if ((c->argc - a.first) % 2) {
				reply_errorf(c,
					     "Unbalanced '%s' list of streams: for each stream key "
					     "an %s must be specified.",
					     name, group ? "ID or '>'" : "ID, '+', or '$'");
				return;
			}
			a.n = (c->argc - a.first) / 2;
			break;
		} else if (arg_is(c, i, "group") && i + 2 < c->argc) {
			if (!group) {
				reply_error(c, "The GROUP option is only supported by XREADGROUP. "
					       "You called XREAD instead.");
				return;
			}
			a.group = i + 1;
			i += 2;
		} else if (arg_is(c, i, "noack")) {
			if (!group) {
				reply_error(c, "The NOACK option is only supported by XREADGROUP. "
					       "You called XREAD instead.");
				return;
			}
			a.noack = true;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (!a.first) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (group && !a.group) {
		reply_error(c, "Missing GROUP option for XREADGROUP");
		return;
	}
	/* The dispatcher holds the streams' shards: the key spec finds them
	 * after STREAMS, as Redis's movablekeys. */
	a.ids = xmalloc(sizeof(*a.ids) * (size_t)a.n);
	a.groups = group ? xmalloc(sizeof(*a.groups) * (size_t)a.n) : NULL;
	xread_locked(c, &a);
	xfree(a.ids);
	xfree(a.groups);
}

void cmd_xread(struct client *c)
{
	xread(c, false);
}

void cmd_xreadgroup(struct client *c)
{
	xread(c, true);
}
