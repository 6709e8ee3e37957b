// SPDX-License-Identifier: BSD-3-Clause
/*
 * Consumer groups: XGROUP, XACK, XACKDEL, XDELEX, XPENDING, XCLAIM,
 * XAUTOCLAIM, XINFO, replying as Redis 8.8 (XREADGROUP is with XREAD in
 * cmd/stream.c).
 *
 * A change that touches only the groups (an ACK, a claim, a consumer made)
 * does not touch WATCH or tracking, as Redis's keyModified(..., 0): it is not
 * a db_changed(), and it is propagated explicitly, in Redis's replication
 * form (XCLAIM ... FORCE JUSTID LASTID, XGROUP SETID ... ENTRIESREAD).
 */
#include <string.h>

#include "blocking.h"
#include "commands.h"
#include "mem.h"
#include "notify.h"
#include "propagate.h"
#include "stream_cmd.h"
#include "t_stream_cg.h"
#include "util.h"

/* ---- propagation ---- */

void stream_cmd_prop_begin(struct stream_cmd_prop *p, struct client *c, int key, int group,
			   struct stream_group *g)
{
	p->c = c;
	p->key = key;
	p->group = group;
	p->g = g;
	p->last = g->last_id;
	p->n = 0;
	p->made = false;
}

static void sprop_id(struct arg *a, char *buf, const struct stream_id *id)
{
	a->len = (size_t)stream_id_str(buf, id);
	a->p = buf;
}

static void sprop_ll(struct arg *a, char *buf, long long v)
{
	a->len = (size_t)ll_to_str(buf, v);
	a->p = buf;
}

#define PARG(s) ((struct arg){ s, sizeof(s) - 1 })

void stream_cmd_prop_xclaim(struct stream_cmd_prop *p, const struct stream_nack *n)
{
	char idb[STREAM_ID_STR_SIZE], lastb[STREAM_ID_STR_SIZE], tb[24], cb[24];
	struct arg v[14];

	p->n++;
	if (!propagate_enabled())
		return;
	v[0] = PARG("XCLAIM");
	v[1] = p->c->argv[p->key];
	v[2] = p->c->argv[p->group];
	v[3] = (struct arg){ n->consumer->name, n->consumer->len };
	v[4] = PARG("0");
	sprop_id(&v[5], idb, &n->id);
	v[6] = PARG("TIME");
	sprop_ll(&v[7], tb, n->delivery_time);
	v[8] = PARG("RETRYCOUNT");
	sprop_ll(&v[9], cb, (long long)n->delivery_count);
	v[10] = PARG("FORCE");
	v[11] = PARG("JUSTID");
	v[12] = PARG("LASTID");
	sprop_id(&v[13], lastb, &p->last);
	propagate_rewrite(14, v);
}

static void prop_xack(struct stream_cmd_prop *p, const struct stream_id *id)
{
	char idb[STREAM_ID_STR_SIZE];
	struct arg v[4];

	p->n++;
	if (!propagate_enabled())
		return;
	v[0] = PARG("XACK");
	v[1] = p->c->argv[p->key];
	v[2] = p->c->argv[p->group];
	sprop_id(&v[3], idb, id);
	propagate_rewrite(4, v);
}

void stream_cmd_prop_setid(struct stream_cmd_prop *p)
{
	char idb[STREAM_ID_STR_SIZE], rb[24];
	struct arg v[7];

	p->n++;
	if (!propagate_enabled())
		return;
	v[0] = PARG("XGROUP");
	v[1] = PARG("SETID");
	v[2] = p->c->argv[p->key];
	v[3] = p->c->argv[p->group];
	sprop_id(&v[4], idb, &p->g->last_id);
	v[5] = PARG("ENTRIESREAD");
	sprop_ll(&v[6], rb, p->g->entries_read);
	propagate_rewrite(7, v);
}

void stream_cmd_prop_consumer(struct stream_cmd_prop *p)
{
	struct arg v[5];

	if (!propagate_enabled())
		return;
	v[0] = PARG("XGROUP");
	v[1] = PARG("CREATECONSUMER");
	v[2] = p->c->argv[p->key];
	v[3] = p->c->argv[p->group];
	v[4] = p->c->argv[p->group + 1];
	propagate_rewrite(5, v);
}

void stream_cmd_prop_end(struct stream_cmd_prop *p, struct entry *e, bool per_item)
{
	unsigned n = p->made + (per_item ? (unsigned)p->n : p->n > 0);

	if (n)
		command_dirty(n);
}

void stream_cmd_prop_self(struct client *c, struct entry *e, unsigned n)
{
	command_dirty(n);
	if (propagate_enabled())
		propagate_rewrite(c->argc, c->argv);
}

/* ---- XGROUP ---- */

static void subcommand_syntax(struct client *c)
{
	reply_errorf(c,
		     "unknown subcommand or wrong number of arguments for '%.128s'. Try XGROUP "
		     "HELP.",
		     c->argv[1].p);
}

static void reply_nogroup(struct client *c, int group, int key)
{
	reply_errorf(c, "-NOGROUP No such consumer group '%s' for key name '%s'", c->argv[group].p,
		     c->argv[key].p);
}

/* XGROUP's shared checks (Redis's order): options, key type, key and group
 * existence. Returns false after replying. */
static bool xgroup_prepare(struct client *c, bool create, bool setid, bool need_group,
			   struct entry **e, struct stream_group **g, bool *mkstream,
			   long long *entries_read)
{
	*mkstream = false;
	*entries_read = STREAM_ENTRIES_READ_INVALID;
	for (int i = 5; i < c->argc;) {
		if (create && arg_is(c, i, "mkstream")) {
			*mkstream = true;
			i++;
		} else if ((create || setid) && arg_is(c, i, "entriesread") && i + 1 < c->argc) {
			if (!arg_ll(c, i + 1, entries_read))
				return false;
			if (*entries_read < 0 && *entries_read != STREAM_ENTRIES_READ_INVALID) {
				reply_error(c, "value for ENTRIESREAD must be positive or -1");
				return false;
			}
			i += 2;
		} else {
			subcommand_syntax(c);
			return false;
		}
	}
	*e = key_find(c, 2);
	if (*e && !entry_is(c, *e, OBJ_STREAM))
		return false;
	*g = NULL;
	if (*mkstream)
		return true;
	if (!*e) {
		reply_error(c, "The XGROUP subcommand requires the key to exist. Note that for "
			       "CREATE you may want to use the MKSTREAM option to create an empty "
			       "stream automatically.");
		return false;
	}
	*g = stream_group_find(&(*e)->val, c->argv[3].p, c->argv[3].len);
	if (!*g && need_group) {
		reply_nogroup(c, 3, 2);
		return false;
	}
	return true;
}

void cmd_xgroup_create(struct client *c)
{
	struct entry *e;
	struct stream_group *g;
	struct stream_id id = { 0, 0 };
	bool mkstream, made = false;
	long long er;

	if (c->argc > 8) {
		subcommand_syntax(c);
		return;
	}
	if (!xgroup_prepare(c, true, false, false, &e, &g, &mkstream, &er))
		return;
	if (arg_is(c, 4, "$")) {
		if (e)
			id = stream_last_id(&e->val);
	} else if (!stream_cmd_arg_id(c, 4, 0, true, &id, NULL)) {
		return;
	}
	if (!e) {
		e = db_add(c->db, c->argv[2].p, c->argv[2].len, stream_new());
		made = true;
	}
	if (er != STREAM_ENTRIES_READ_INVALID && (uint64_t)er > stream_entries_added(&e->val))
		er = (long long)stream_entries_added(&e->val);
	if (!stream_group_create(&e->val, c->argv[3].p, c->argv[3].len, &id, er)) {
		reply_error(c, "-BUSYGROUP Consumer Group name already exists");
		return;
	}
	reply_ok(c);
	notify_arg(c, NOTIFY_STREAM, "xgroup-create", 2);
	if (!made)
		stream_cmd_prop_self(c, e, 1);
}

void cmd_xgroup_setid(struct client *c)
{
	struct entry *e;
	struct stream_group *g;
	struct stream_id id;
	bool mkstream;
	long long er;

	if (c->argc != 5 && c->argc != 7) {
		subcommand_syntax(c);
		return;
	}
	if (!xgroup_prepare(c, false, true, true, &e, &g, &mkstream, &er))
		return;
	if (arg_is(c, 4, "$"))
		id = stream_last_id(&e->val);
	else if (!stream_cmd_arg_id(c, 4, 0, false, &id, NULL))
		return;
	if (er != STREAM_ENTRIES_READ_INVALID && (uint64_t)er > stream_entries_added(&e->val))
		er = (long long)stream_entries_added(&e->val);
	stream_group_set_last(&e->val, g, &id);
	g->entries_read = er;
	reply_ok(c);
	notify_arg(c, NOTIFY_STREAM, "xgroup-setid", 2);
	stream_cmd_prop_self(c, e, 1);
}

/* Wakes XREADGROUP waiters on the key (they fail with NOGROUP), as Redis's
 * signalKeyAsReady, without touching WATCH. */
static void wake_readers(struct client *c, struct entry *e)
{
	struct db_change ch = { .reason = DB_CHANGE_WRITE, .db = c->db, .e = e };

	blocking_on_change(&ch);
}

void cmd_xgroup_destroy(struct client *c)
{
	struct entry *e;
	struct stream_group *g;
	bool mkstream;
	long long er;

	if (!xgroup_prepare(c, false, false, false, &e, &g, &mkstream, &er))
		return;
	if (!g) {
		reply_int(c, 0);
		return;
	}
	stream_group_destroy(&e->val, g);
	reply_int(c, 1);
	notify_arg(c, NOTIFY_STREAM, "xgroup-destroy", 2);
	stream_cmd_prop_self(c, e, 1);
	wake_readers(c, e);
}

void cmd_xgroup_createconsumer(struct client *c)
{
	struct entry *e;
	struct stream_group *g;
	bool mkstream;
	long long er;

	if (!xgroup_prepare(c, false, false, true, &e, &g, &mkstream, &er))
		return;
	if (!stream_consumer_create(g, c->argv[4].p, c->argv[4].len, now_ms())) {
		reply_int(c, 0);
		return;
	}
	reply_int(c, 1);
	notify_arg(c, NOTIFY_STREAM, "xgroup-createconsumer", 2);
	stream_cmd_prop_self(c, e, 1);
}

void cmd_xgroup_delconsumer(struct client *c)
{
	struct entry *e;
	struct stream_group *g;
	struct stream_consumer *cons;
	bool mkstream;
	long long er;

	if (!xgroup_prepare(c, false, false, true, &e, &g, &mkstream, &er))
		return;
	cons = stream_consumer_find(g, c->argv[4].p, c->argv[4].len);
	if (!cons) {
		reply_int(c, 0);
		return;
	}
	reply_int(c, (long long)stream_consumer_delete(g, cons));
	notify_arg(c, NOTIFY_STREAM, "xgroup-delconsumer", 2);
	stream_cmd_prop_self(c, e, 1);
}

void cmd_xgroup_help(struct client *c)
{
	static const char *const help[] = {
		"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CREATE <key> <groupname> <id|$> [option]",
		"    Create a new consumer group. Options are:",
		"    * MKSTREAM",
		"      Create the empty stream if it does not exist.",
		"    * ENTRIESREAD entries_read",
		"      Set the group's entries_read counter (internal use).",
		"CREATECONSUMER <key> <groupname> <consumer>",
		"    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>",
		"    Remove the specified consumer.",
		"DESTROY <key> <groupname>",
		"    Remove the specified group.",
		"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
		"    Set the current group ID and entries_read counter.",
		"HELP",
		"    Print this help.",
		NULL,
	};

	reply_help(c, help);
}

/* ---- XACK, XACKDEL, XDELEX ---- */

/* Strict IDs at argv[first..first+n); NULL after replying. */
static struct stream_id *parse_ids(struct client *c, int first, long n)
{
	struct stream_id *ids = xmalloc(sizeof(*ids) * (size_t)(n ? n : 1));

	for (long j = 0; j < n; j++) {
		if (!stream_cmd_arg_id(c, first + (int)j, 0, true, &ids[j], NULL)) {
			xfree(ids);
			return NULL;
		}
	}
	return ids;
}

void cmd_xack(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_group *g = NULL;
	struct stream_id *ids;
	long long acked = 0;

	if (e) {
		if (!entry_is(c, e, OBJ_STREAM))
			return;
		g = stream_group_find(&e->val, c->argv[2].p, c->argv[2].len);
	}
	if (!g) {
		reply_int(c, 0);
		return;
	}
	if (!(ids = parse_ids(c, 3, c->argc - 3)))
		return;
	for (int j = 0; j < c->argc - 3; j++) {
		struct stream_nack *n = stream_pel_find(&g->pel, &ids[j], NULL);

		if (n) {
			stream_nack_remove(g, n);
			acked++;
		}
	}
	xfree(ids);
	if (acked)
		stream_cmd_prop_self(c, e, (unsigned)acked);
	reply_int(c, acked);
}

/* XDELEX's and XACKDEL's [KEEPREF|DELREF|ACKED] IDS numids id ... */
struct ackdel_args {
	enum stream_cond cond;
	long numids;
	int first;
};

static bool parse_ackdel(struct client *c, int j, struct ackdel_args *a)
{
	a->cond = STREAM_COND_NONE;
	a->first = -1;
	a->numids = 0;
	while (j < c->argc) {
		long long n;

		if (arg_is(c, j, "keepref") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_KEEPREF;
			j++;
		} else if (arg_is(c, j, "delref") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_DELREF;
			j++;
		} else if (arg_is(c, j, "acked") && a->cond == STREAM_COND_NONE) {
			a->cond = STREAM_COND_ACKED;
			j++;
		} else if (arg_is(c, j, "ids") && j + 1 < c->argc) {
			if (!str_to_ll(c->argv[j + 1].p, c->argv[j + 1].len, &n) || n < 1) {
				reply_error(c, "Number of IDs must be a positive integer");
				return false;
			}
			if (n > c->argc - j - 2) {
				reply_error(c, "The `numids` parameter must match the number of "
					       "arguments");
				return false;
			}
			a->numids = (long)n;
			a->first = j + 2;
			j = a->first + (int)n;
		} else {
			reply_error(c, ERR_SYNTAX);
			return false;
		}
	}
	if (a->first < 0) {
		reply_error(c, "IDS option is required");
		return false;
	}
	if (a->cond == STREAM_COND_NONE)
		a->cond = STREAM_COND_KEEPREF;
	return true;
}

/* Deletes id under cond; -1 absent, 1 deleted, 2 still referenced. */
static int delete_cond(struct obj *o, const struct stream_id *id, enum stream_cond cond,
		       bool *deleted)
{
	if (cond == STREAM_COND_ACKED && stream_entry_referenced(o, id))
		return 2;
	if (cond == STREAM_COND_DELREF)
		stream_entry_unreference(o, id);
	if (stream_delete(o, id)) {
		*deleted = true;
		return 1;
	}
	return -1;
}

static void reply_all(struct client *c, long n, long long v)
{
	reply_array(c, n);
	for (long i = 0; i < n; i++)
		reply_int(c, v);
}

void cmd_xdelex(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct ackdel_args a;
	struct stream_id *ids;
	bool deleted = false;

	if (e && !entry_is(c, e, OBJ_STREAM))
		return;
	if (!parse_ackdel(c, 2, &a))
		return;
	if (!e) {
		reply_all(c, a.numids, -1);
		return;
	}
	if (!(ids = parse_ids(c, a.first, a.numids)))
		return;
	reply_array(c, a.numids);
	for (long j = 0; j < a.numids; j++)
		reply_int(c, delete_cond(&e->val, &ids[j], a.cond, &deleted));
	xfree(ids);
	if (deleted) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_STREAM, "xdel", 1);
	}
}

void cmd_xackdel(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_group *g = NULL;
	struct ackdel_args a;
	struct stream_id *ids;
	bool deleted = false, acked = false;

	if (e && !entry_is(c, e, OBJ_STREAM))
		return;
	if (!parse_ackdel(c, 3, &a))
		return;
	if (e)
		g = stream_group_find(&e->val, c->argv[2].p, c->argv[2].len);
	if (!g) {
		reply_all(c, a.numids, -1);
		return;
	}
	if (!(ids = parse_ids(c, a.first, a.numids)))
		return;
	reply_array(c, a.numids);
	for (long j = 0; j < a.numids; j++) {
		struct stream_nack *n = stream_pel_find(&g->pel, &ids[j], NULL);
		int r;

		if (!n) {
			reply_int(c, -1);
			continue;
		}
		stream_nack_remove(g, n);
		acked = true;
		/* In the PEL but gone from the stream counts as deleted. */
		r = delete_cond(&e->val, &ids[j], a.cond, &deleted);
		reply_int(c, r == 2 ? 2 : 1);
	}
	xfree(ids);
	if (deleted) {
		db_changed(c->db, e);
		notify_arg(c, NOTIFY_STREAM, "xdel", 1);
	} else if (acked) {
		stream_cmd_prop_self(c, e, 1);
	}
}

/* ---- XPENDING ---- */

static void reply_pending_summary(struct client *c, struct stream_group *g)
{
	size_t with = 0;

	reply_array(c, 4);
	reply_int(c, (long long)g->pel.n);
	if (!g->pel.n) {
		reply_null(c);
		reply_null(c);
		reply_null_array(c);
		return;
	}
	stream_cmd_reply_id(c, &g->pel.v[0]->id);
	stream_cmd_reply_id(c, &g->pel.v[g->pel.n - 1]->id);
	for (size_t i = 0; i < g->nconsumers; i++)
		with += g->consumers[i]->pel.n > 0;
	reply_array(c, (long)with);
	for (size_t i = 0; i < g->nconsumers; i++) {
		struct stream_consumer *cons = g->consumers[i];

		if (!cons->pel.n)
			continue;
		reply_array(c, 2);
		reply_bulk(c, cons->name, cons->len);
		reply_bulk_ll(c, (long long)cons->pel.n);
	}
}

void cmd_xpending(struct client *c)
{
	struct stream_id start, end;
	long long count = 0, minidle = 0;
	bool sx, ex;
	int s = 3, consumer = 0;
	struct entry *e;
	struct stream_group *g = NULL;
	struct stream_pel *pel;
	size_t n = 0;
	int64_t now = now_ms();

	if (c->argc != 3 && (c->argc < 6 || c->argc > 9)) {
		reply_error(c, ERR_SYNTAX);
		return;
	}
	if (c->argc >= 6) {
		if (arg_is(c, 3, "idle")) {
			if (!arg_ll(c, 4, &minidle))
				return;
			if (c->argc < 8) {
				reply_error(c, ERR_SYNTAX);
				return;
			}
			s += 2;
		}
		if (!arg_ll(c, s + 2, &count))
			return;
		if (count < 0)
			count = 0;
		if (!stream_cmd_arg_interval(c, s, 0, &start, &sx))
			return;
		if (sx && stream_id_incr(&start)) {
			reply_error(c, "invalid start ID for the interval");
			return;
		}
		if (!stream_cmd_arg_interval(c, s + 1, UINT64_MAX, &end, &ex))
			return;
		if (ex && stream_id_decr(&end)) {
			reply_error(c, "invalid end ID for the interval");
			return;
		}
		if (s + 3 < c->argc)
			consumer = s + 3;
	}
	e = key_find_read(c, 1);
	if (e && !entry_is(c, e, OBJ_STREAM))
		return;
	if (e)
		g = stream_group_find(&e->val, c->argv[2].p, c->argv[2].len);
	if (!g) {
		reply_errorf(c, "-NOGROUP No such key '%s' or consumer group '%s'", c->argv[1].p,
			     c->argv[2].p);
		return;
	}
	if (c->argc == 3) {
		reply_pending_summary(c, g);
		return;
	}
	pel = &g->pel;
	if (consumer) {
		struct stream_consumer *cons =
			stream_consumer_find(g, c->argv[consumer].p, c->argv[consumer].len);

		if (!cons) {
			reply_array(c, 0);
			return;
		}
		pel = &cons->pel;
	}
	/* Count first, then reply. */
	for (int pass = 0; pass < 2; pass++) {
		long long left = count;

		if (pass)
			reply_array(c, (long)n);
		for (size_t i = stream_pel_seek(pel, &start); left && i < pel->n; i++) {
			struct stream_nack *k = pel->v[i];
			int64_t idle = now - k->delivery_time;

			if (stream_id_cmp(&k->id, &end) > 0)
				break;
			if (k->consumer && minidle && idle < minidle)
				continue;
			left--;
			if (!pass) {
				n++;
				continue;
			}
			reply_array(c, 4);
			stream_cmd_reply_id(c, &k->id);
			if (k->consumer)
				reply_bulk(c, k->consumer->name, k->consumer->len);
			else
				reply_bulk(c, "", 0);
			reply_int(c, k->consumer ? (idle < 0 ? 0 : idle) : -1);
			reply_int(c, (long long)k->delivery_count);
		}
	}
}

/* ---- XCLAIM, XAUTOCLAIM ---- */

/* The claimed entry as XCLAIM answers it: its ID, or the whole entry. */
static void reply_claimed(struct client *c, struct obj *o, const struct stream_id *id, bool justid)
{
	struct range_acc r = { 0 };

	if (justid) {
		stream_cmd_reply_id(c, id);
		return;
	}
	stream_range(o, id, id, false, 1, stream_cmd_collect, &r);
	if (r.n)
		stream_cmd_reply_entry(c, &r.v[0]);
	else
		reply_null_array(c);
	xfree(r.v);
}

/* A consumer XCLAIM and XAUTOCLAIM name, made if new. */
static struct stream_consumer *claimer(struct client *c, struct stream_group *g, int64_t now,
				       struct stream_cmd_prop *p)
{
	struct stream_consumer *cons = stream_consumer_find(g, c->argv[3].p, c->argv[3].len);

	if (!cons) {
		cons = stream_consumer_create(g, c->argv[3].p, c->argv[3].len, now);
		notify_arg(c, NOTIFY_STREAM, "xgroup-createconsumer", 1);
		p->made = true;
	}
	cons->seen_time = now;
	return cons;
}

/* Claims n for cons; the delivery as XCLAIM sets it. */
static void claim_one(struct stream_group *g, struct stream_nack *n, struct stream_consumer *cons,
		      int64_t when, long long retrycount, bool justid, int64_t now)
{
	stream_nack_touch(g, n, when);
	if (retrycount >= 0)
		n->delivery_count = (uint64_t)retrycount;
	else if (!justid && n->delivery_count != (uint64_t)INT64_MAX)
		n->delivery_count++;
	stream_nack_assign(n, cons);
	cons->active_time = now;
}

/* A stream_group found for XCLAIM/XAUTOCLAIM, or NULL after replying. */
static struct stream_group *claim_group(struct client *c, struct entry *e)
{
	struct stream_group *g = NULL;

	if (e) {
		if (!entry_is(c, e, OBJ_STREAM))
			return NULL;
		g = stream_group_find(&e->val, c->argv[2].p, c->argv[2].len);
	}
	if (!g)
		reply_errorf(c, "-NOGROUP No such key '%s' or consumer group '%s'", c->argv[1].p,
			     c->argv[2].p);
	return g;
}

void cmd_xclaim(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_group *g = claim_group(c, e);
	long long minidle, retrycount = -1, v;
	int64_t now = now_ms(), when = -1;
	bool force = false, justid = false, lastid_moved = false;
	struct stream_id *ids, last = { 0, 0 };
	struct stream_consumer *cons;
	struct stream_cmd_prop p;
	int j, nids;
	long n = 0;

	if (!g)
		return;
	if (!str_to_ll(c->argv[4].p, c->argv[4].len, &minidle)) {
		reply_error(c, "Invalid min-idle-time argument for XCLAIM");
		return;
	}
	if (minidle < 0)
		minidle = 0;
	ids = xmalloc(sizeof(*ids) * (size_t)(c->argc - 5));
	for (j = 5; j < c->argc; j++)
		if (stream_id_parse(c->argv[j].p, c->argv[j].len, 0, true, &ids[j - 5], NULL))
			break;
	nids = j - 5;
	for (; j < c->argc; j++) {
		bool more = j + 1 < c->argc;

		if (arg_is(c, j, "force")) {
			force = true;
		} else if (arg_is(c, j, "justid")) {
			justid = true;
		} else if (arg_is(c, j, "idle") && more) {
			j++;
			if (!str_to_ll(c->argv[j].p, c->argv[j].len, &v)) {
				reply_error(c, "Invalid IDLE option argument for XCLAIM");
				goto out;
			}
			when = now - v;
		} else if (arg_is(c, j, "time") && more) {
			j++;
			if (!str_to_ll(c->argv[j].p, c->argv[j].len, &v)) {
				reply_error(c, "Invalid TIME option argument for XCLAIM");
				goto out;
			}
			when = v;
		} else if (arg_is(c, j, "retrycount") && more) {
			j++;
			if (!str_to_ll(c->argv[j].p, c->argv[j].len, &retrycount)) {
				reply_error(c, "Invalid RETRYCOUNT option argument for XCLAIM");
				goto out;
			}
		} else if (arg_is(c, j, "lastid") && more) {
			if (!stream_cmd_arg_id(c, ++j, 0, true, &last, NULL))
				goto out;
		} else {
			reply_errorf(c, "Unrecognized XCLAIM option '%s'", c->argv[j].p);
			goto out;
		}
	}
	stream_cmd_prop_begin(&p, c, 1, 2, g);
	if (stream_id_cmp(&last, &g->last_id) > 0) {
		stream_group_set_last(&e->val, g, &last);
		lastid_moved = true;
	}
	if (when == -1 || when < 0 || when > now)
		when = now;
	cons = claimer(c, g, now, &p);
	/* Replied as the claims go: gather first to know the count. */
	{
		struct stream_nack **claimed =
			xmalloc(sizeof(*claimed) * (size_t)(nids ? nids : 1));

		for (int k = 0; k < nids; k++) {
			struct stream_nack *nk = stream_pel_find(&g->pel, &ids[k], NULL);

			if (!stream_exists(&e->val, &ids[k])) {
				/* Gone from the stream: out of the PEL too. */
				if (nk) {
					prop_xack(&p, &ids[k]);
					stream_nack_remove(g, nk);
				}
				continue;
			}
			if (force && !nk)
				nk = stream_nack_add(g, NULL, &ids[k], now);
			if (!nk)
				continue;
			if (nk->consumer && minidle && now - nk->delivery_time < minidle)
				continue;
			claim_one(g, nk, cons, when, retrycount, justid, now);
			stream_cmd_prop_xclaim(&p, nk);
			claimed[n++] = nk;
		}
		reply_array(c, n);
		for (long k = 0; k < n; k++)
			reply_claimed(c, &e->val, &claimed[k]->id, justid);
		xfree(claimed);
	}
	if (lastid_moved && !p.n)
		stream_cmd_prop_setid(&p);
	if (!p.n && p.made)
		stream_cmd_prop_consumer(&p);
	stream_cmd_prop_end(&p, e, true);
out:
	xfree(ids);
}

void cmd_xautoclaim(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_group *g;
	long long minidle, count = 100, attempts;
	struct stream_id start, endid = { 0, 0 }, *gone;
	struct stream_id *got;
	bool sx, justid = false;
	struct stream_consumer *cons;
	struct stream_cmd_prop p;
	int64_t now = now_ms();
	size_t i, ngone = 0, ngot = 0;

	if (!str_to_ll(c->argv[4].p, c->argv[4].len, &minidle)) {
		reply_error(c, "Invalid min-idle-time argument for XAUTOCLAIM");
		return;
	}
	if (minidle < 0)
		minidle = 0;
	if (!stream_cmd_arg_interval(c, 5, 0, &start, &sx))
		return;
	if (sx && stream_id_incr(&start)) {
		reply_error(c, "invalid start ID for the interval");
		return;
	}
	for (int j = 6; j < c->argc; j++) {
		if (arg_is(c, j, "count") && j + 1 < c->argc) {
			long long max = INT64_MAX / 16;

			if (!str_to_ll(c->argv[j + 1].p, c->argv[j + 1].len, &count) || count < 1 ||
			    count > max) {
				reply_error(c, "COUNT must be > 0");
				return;
			}
			j++;
		} else if (arg_is(c, j, "justid")) {
			justid = true;
		} else {
			reply_error(c, ERR_SYNTAX);
			return;
		}
	}
	if (!(g = claim_group(c, e)))
		return;
	stream_cmd_prop_begin(&p, c, 1, 2, g);
	cons = claimer(c, g, now, &p);
	attempts = count * 10;
	gone = NULL;
	got = NULL;
	i = stream_pel_seek(&g->pel, &start);
	while (attempts-- && count && i < g->pel.n) {
		struct stream_nack *n = g->pel.v[i];

		if (!stream_exists(&e->val, &n->id)) {
			gone = xrealloc(gone, sizeof(*gone) * (ngone + 1));
			gone[ngone++] = n->id;
			prop_xack(&p, &n->id);
			stream_nack_remove(g, n);
			count--;
			continue;
		}
		i++;
		if (n->consumer && minidle && now - n->delivery_time < minidle)
			continue;
		claim_one(g, n, cons, now, -1, justid, now);
		stream_cmd_prop_xclaim(&p, n);
		got = xrealloc(got, sizeof(*got) * (ngot + 1));
		got[ngot++] = n->id;
		count--;
	}
	if (i < g->pel.n)
		endid = g->pel.v[i]->id;
	reply_array(c, 3);
	stream_cmd_reply_id(c, &endid);
	reply_array(c, (long)ngot);
	for (size_t k = 0; k < ngot; k++)
		reply_claimed(c, &e->val, &got[k], justid);
	reply_array(c, (long)ngone);
	for (size_t k = 0; k < ngone; k++)
		stream_cmd_reply_id(c, &gone[k]);
	if (!p.n && p.made)
		stream_cmd_prop_consumer(&p);
	stream_cmd_prop_end(&p, e, true);
	xfree(got);
	xfree(gone);
}

/* ---- XNACK ---- */

enum nack_mode { NACK_SILENT, NACK_FAIL, NACK_FATAL };

static void nack_count(struct stream_nack *n, enum nack_mode mode, long long retrycount)
{
	if (retrycount >= 0)
		n->delivery_count = (uint64_t)retrycount;
	else if (mode == NACK_SILENT && n->delivery_count > 0)
		n->delivery_count--;
	else if (mode == NACK_FATAL)
		n->delivery_count = (uint64_t)INT64_MAX;
}

void cmd_xnack(struct client *c)
{
	struct entry *e = key_find(c, 1);
	struct stream_group *g = claim_group(c, e);
	enum nack_mode mode;
	int first = 0, numids = 0;
	bool force = false;
	long long retrycount = -1, v;
	struct stream_id *ids;
	long long nacked = 0;

	if (!g)
		return;
	if (arg_is(c, 3, "silent")) {
		mode = NACK_SILENT;
	} else if (arg_is(c, 3, "fail")) {
		mode = NACK_FAIL;
	} else if (arg_is(c, 3, "fatal")) {
		mode = NACK_FATAL;
	} else {
		reply_error(c, "mode must be SILENT, FAIL, or FATAL");
		return;
	}
	for (int i = 4; i < c->argc; i++) {
		bool more = i + 1 < c->argc;

		if (arg_is(c, i, "ids") && more) {
			if (!str_to_ll(c->argv[i + 1].p, c->argv[i + 1].len, &v) || v < 1 ||
			    v > INT32_MAX) {
				reply_error(c, "numids must be a positive integer");
				return;
			}
			numids = (int)v;
			first = i + 2;
			if (numids > c->argc - first) {
				reply_error(c, "number of IDs doesn't match numids");
				return;
			}
			i = first + numids - 1;
		} else if (arg_is(c, i, "force")) {
			force = true;
		} else if (arg_is(c, i, "retrycount") && more) {
			if (!arg_ll(c, ++i, &retrycount))
				return;
			if (retrycount < 0) {
				reply_error(c, "Invalid RETRYCOUNT value, must be >= 0");
				return;
			}
		} else {
			reply_errorf(c, "Unrecognized XNACK option '%s'", c->argv[i].p);
			return;
		}
	}
	if (!first) {
		reply_error(c, "syntax error, expected IDS keyword");
		return;
	}
	if (!(ids = parse_ids(c, first, numids)))
		return;
	for (int j = 0; j < numids; j++) {
		struct stream_nack *n = stream_pel_find(&g->pel, &ids[j], NULL);

		if (!n) {
			if (!force || !stream_exists(&e->val, &ids[j]))
				continue;
			n = stream_nack_add(g, NULL, &ids[j], now_ms());
			n->delivery_count = 0;
		}
		nack_count(n, mode, retrycount);
		stream_nack_release(g, n);
		nacked++;
	}
	xfree(ids);
	if (nacked) {
		stream_cmd_prop_self(c, e, (unsigned)nacked);
		/* NACKed entries are claimable at once: wake CLAIM readers. */
		wake_readers(c, e);
	}
	reply_int(c, nacked);
}
